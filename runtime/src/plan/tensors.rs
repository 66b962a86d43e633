//! A launch's tensors at its extents, checked before anything is planned
//! from them. In: the manifest's parameters and the extents. Out: each
//! tensor's elements, or why the extents give it none, a negative
//! stride, an extent past 64 bits, or (for a written one) two elements in
//! one place.

use super::Dims;
use super::overlap::{self, Overlap};
use crate::RuntimeError;
use crate::manifest::{Manifest, ParamKind};

/// Each tensor parameter's elements (its layout's cosize) at these
/// extents, after its extents are checked at least 1 and its strides at
/// least 0 (and a written one's elements distinct): checked before the
/// grid, so that a tensor of no elements (`M / 2` at M = 1) is named
/// rather than the grid it leaves empty.
pub(super) fn tensor_lens(
    m: &Manifest,
    env: &dyn Fn(&str) -> Option<i64>,
    dims: &Dims,
) -> Result<Vec<Option<usize>>, RuntimeError> {
    let mut lens = Vec::new();
    for p in &m.params {
        lens.push(match &p.kind {
            ParamKind::Tensor { layout, .. } => {
                // Extents and strides from expressions (`N - 2`) may leave
                // the ranges that guards and offsets assume: a guard
                // compares coordinates unsigned, and a negative stride
                // reaches below the tensor's base.
                // A leaf that cannot be computed (a quotient by zero, or
                // past 64 bits) is refused too: a mode of stride 0 folds
                // its extent out of the cosize, and the GPU would compute
                // a wrapped or undefined extent for its guards.
                let at_least = |t: &tilec_layout::IntTuple, min: i64, what: &str| {
                    for x in t.leaves() {
                        match x.eval(&env) {
                            None => {
                                return Err(RuntimeError::Condition(format!(
                                    "{} {layout}: the {what} {x} cannot be computed for {dims} (a quotient by zero, or past 64 bits)",
                                    p.name
                                )));
                            }
                            Some(v) if v < min => {
                                return Err(RuntimeError::Condition(format!(
                                    "{} {layout}: the {what} {x} is {v} for {dims}; {what}s are at least {min}",
                                    p.name
                                )));
                            }
                            Some(_) => {}
                        }
                    }
                    Ok(())
                };
                at_least(layout.shape(), 1, "extent")?;
                at_least(layout.stride(), 0, "stride")?;
                if let ParamKind::Tensor { written: true, .. } = p.kind {
                    let found = match overlap::overlap(layout, &env) {
                        Overlap::None => None,
                        Overlap::At(why) => Some(("puts", why, "race")),
                        Overlap::Undecided(why) => Some(("may put", why, "would race")),
                    };
                    if let Some((puts, why, race)) = found {
                        return Err(RuntimeError::Condition(format!(
                            "{} {layout} {puts} two of its elements in one place for {dims} ({why}); the kernel writes it, and two writers of one element {race}",
                            p.name
                        )));
                    }
                }
                let n = layout.cosize().eval(&env).ok_or_else(|| {
                    RuntimeError::Condition(format!(
                        "{} {layout} spans more elements than 64 bits count for {dims}",
                        p.name
                    ))
                })?;
                Some(
                    usize::try_from(n).map_err(|_| {
                        RuntimeError::Condition(format!("{} has {n} elements", p.name))
                    })?,
                )
            }
            ParamKind::Scalar { .. } => None,
        });
    }
    Ok(lens)
}
