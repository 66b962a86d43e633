//! What TMA asks of a `copy_tma`'s tiles beyond the box algebra: who
//! issues the boxes (one thread, or in a pipeline's turn the first of the
//! turn's warpgroup), and the swizzles a box's rows may have, for the
//! diagnostics. In: a copy's views. Out: an error at the copy, or nothing.

use super::KernelChecker;
use crate::check::program::View;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::Expr;
use tilec_layout::Int;

impl KernelChecker {
    /// A TMA box is issued by one thread, so its tile must not depend on
    /// `thread.x`; in a pipeline's turn by the first thread of the turn's
    /// warpgroup, so it may depend on the warpgroup (`thread.x / 128`: a
    /// buffer of each warpgroup's own), which every thread of it agrees on.
    pub(super) fn issued_by_one_thread(&self, v: &View, e: &Expr) -> Result<(), Diagnostic> {
        if !v.depends_on_thread() {
            return Ok(());
        }
        let in_turn = self.enclosing.iter().any(|c| c.turn);
        let agreed = |i: &Int| self.granule(i) >= 128;
        if in_turn && agreed(&v.offset) && v.coords.iter().all(|c| agreed(&c.offset)) {
            return Ok(());
        }
        let (message, help) = match in_turn {
            true => (
                "a TMA box in a pipeline's turn is issued by the first thread of the turn's warpgroup: its tiles may depend on the warpgroup (thread.x / 128), not on the thread",
                "copy the warpgroup's whole tile (a buffer sliced by thread.x / 128, local_tile by the turn's counter), not per-thread partitions",
            ),
            false => (
                "a TMA box is issued by one thread: its tiles cannot depend on thread.x",
                "copy whole tiles (local_tile, slices by the loop counter and the stage), not per-thread partitions",
            ),
        };
        Err(Diagnostic::new(message, e.span).with_help(help))
    }
}

/// What TMA's swizzles ask of a box's rows, for a copy that is not TMA
/// boxes. TMA swizzles 16-byte units in rows of 32, 64 or 128 bytes: on
/// bf16, `Swizzle(1|2|3, 3, 3)`. A buffer that has one of them needs boxes
/// of its rows; one that has another is told TMA's for its rows (or for
/// rows of 128 bytes).
pub(super) fn swizzle_rows(sw: tilec_layout::Swizzle, elem: crate::check::program::Elem) -> String {
    let bytes = elem.bytes().max(1);
    let row = (1i64 << sw.bits) * (1i64 << sw.base) * bytes;
    let base = (16 / bytes).max(1).trailing_zeros();
    let tma = |row: i64| format!("Swizzle({}, {base}, 3)", (row / 16).trailing_zeros());
    let others = [32, 64, 128]
        .into_iter()
        .filter(|&r| r != row)
        .map(|r| format!("rows of {r} bytes take {}", tma(r)))
        .collect::<Vec<_>>()
        .join(", ");
    let own = format!("Swizzle({}, {}, {})", sw.bits, sw.base, sw.shift);
    if [32, 64, 128].contains(&row) && own == tma(row) {
        format!(
            ". This buffer's {own} is TMA's for rows of {row} bytes ({} {elem}): the box's rows must be that wide; {others}",
            row / bytes
        )
    } else {
        let fit = if [32, 64, 128].contains(&row) {
            row
        } else {
            128
        };
        format!(
            ". This buffer's {own} is none of TMA's ({} for rows of 32, 64 and 128 bytes of {elem}); rows of {fit} bytes ({} {elem}) take {}",
            [32, 64, 128].map(tma).join(", "),
            fit / bytes,
            tma(fit)
        )
    }
}
