//! Diagnostics for CuTe atom names tilec does not have: the atoms there
//! are, the closest first.

use super::edit_distance;
use crate::diagnostic::Diagnostic;
use crate::span::Span;

/// The error for `n` where it names an MMA or ldmatrix atom tilec lacks.
pub(super) fn unknown_atom(n: &str, span: Span) -> Option<Diagnostic> {
    if n.starts_with("SM90_64x") {
        return Some(
            Diagnostic::new(format!("`{n}` is not a wgmma atom"), span)
                .with_label("no such atom")
                .with_help(format!(
                    "the SM90 atoms are {}, N a multiple of 8 from 8 to 256 (SM90_64x256x16_F32BF16BF16_SS); _SS reads A and B from shared memory, _RS A from registers",
                    tilec_layout::MmaAtom::WARPGROUP_NAMES.join(", ")
                )),
        );
    }
    if !(n.starts_with("SM80_") || n.starts_with("SM75_")) {
        return None;
    }
    let mut atoms: Vec<&str> = tilec_layout::MmaAtom::WARP_NAMES
        .iter()
        .copied()
        .chain(tilec_layout::LdMatrixAtom::ALL.iter().map(|a| a.name))
        .collect();
    atoms.sort_by_key(|a| (edit_distance(a, n), *a));
    Some(
        Diagnostic::new(format!("`{n}` is not an atom tilec has"), span)
            .with_label("no such atom")
            .with_help(format!(
                "the closest: `{}`; the mma.sync atoms are {}, the ldmatrix ones {}",
                atoms[0],
                tilec_layout::MmaAtom::WARP_NAMES.join(", "),
                tilec_layout::LdMatrixAtom::ALL
                    .iter()
                    .map(|a| a.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
    )
}
