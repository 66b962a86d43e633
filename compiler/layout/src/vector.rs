//! Common vectors of two layouts: how many consecutive elements correspond
//! in both, which bounds the width of a vectorized copy between them.
//!
//! In: a source and a destination layout over the same logical domain. Out:
//! CuTe's `max_common_layout` (the layout of that contiguous run) and
//! `max_common_vector` (its length).

use crate::complement::right_inverse;
use crate::composition::composition;
use crate::condition::Conditions;
use crate::error::Result;
use crate::int::Int;
use crate::layout::Layout;

/// `coalesce(a o right_inverse(b))` and the right inverse used.
fn common(a: &Layout, b: &Layout, conds: &mut Conditions) -> Result<(Layout, Layout)> {
    let inv_b = right_inverse(b);
    let c = composition(a, &inv_b, conds)?.coalesce();
    Ok((c, inv_b))
}

/// The first mode of `common` when it is a static stride-1 run.
fn leading_run(common: &Layout) -> Result<Option<Layout>> {
    let first = common.mode(0)?;
    let run = first.shape().as_int().is_some_and(Int::is_static)
        && first.stride().as_int().is_some_and(|d| d.is_const(1));
    Ok(run.then_some(first))
}

/// The largest `n` such that `a` and `b` agree on `n` contiguous elements.
pub fn max_common_vector(a: &Layout, b: &Layout, conds: &mut Conditions) -> Result<Int> {
    let (c, _) = common(a, b, conds)?;
    Ok(leading_run(&c)?.map_or(Int::Static(1), |l| l.size()))
}

/// The layout of those elements in the domain of `b`.
pub fn max_common_layout(a: &Layout, b: &Layout, conds: &mut Conditions) -> Result<Layout> {
    let (c, inv_b) = common(a, b, conds)?;
    match leading_run(&c)? {
        Some(run) => composition(&inv_b, &run, conds),
        None => Ok(Layout::unit()),
    }
}
