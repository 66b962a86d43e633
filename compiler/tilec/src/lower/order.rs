//! Walking a view in the order of its strides: a copy or a statement whose
//! target lies in another order than its index (a row-major tile in a
//! column-major register tile's shape) goes through its views with their
//! leaves permuted alike, so that consecutive indices are consecutive in
//! memory and the accesses become vectors.

use crate::check::program::{Base, Elementwise, View};
use tilec_layout::{Int, IntTuple, Layout};

/// `l`'s leaves, smallest stride first (run-time strides last, ties in
/// their modes' order).
pub(super) fn stride_order(l: &Layout) -> Vec<usize> {
    let strides = l.stride().leaves();
    let mut order: Vec<usize> = (0..strides.len()).collect();
    order.sort_by_key(|&i| strides[i].as_static().map_or(i64::MAX, i64::abs));
    order
}

/// A compact layout of `l`'s shape whose elements lie in the order of
/// `l`'s strides (CuTe's `make_fragment_like`): a run consecutive in `l`
/// is consecutive here.
pub(super) fn compact_like(l: &Layout) -> Layout {
    let sizes = l.shape().leaves();
    let mut compact = vec![Int::Static(0); sizes.len()];
    let mut next = Int::Static(1);
    for i in stride_order(l) {
        compact[i] = next.clone();
        next = next.mul(&sizes[i]);
    }
    let stride = l.shape().unflatten_like(&mut compact.into_iter());
    Layout::new(l.shape().clone(), stride).expect("the shape's own profile")
}

/// `v` walked leaf by leaf in `order`: the same elements, its layout and
/// coordinate functions flat with their leaves permuted, so that
/// consecutive indices follow `order` (two views of one shape's leaves
/// permuted alike pair the same elements). `None` where a coordinate
/// function has other leaves than the layout.
pub(super) fn by_leaves(v: &View, order: &[usize]) -> Option<View> {
    let leaves = v.layout.shape().leaves();
    v.map_layout(&mut |l: &Layout| {
        let (sizes, strides) = (l.shape().leaves(), l.stride().leaves());
        if sizes != leaves {
            return Err(());
        }
        let pick = |x: &[Int]| {
            IntTuple::Tuple(order.iter().map(|&i| IntTuple::Int(x[i].clone())).collect())
        };
        Layout::new(pick(&sizes), pick(&strides)).map_err(|_| ())
    })
    .ok()
}

/// `dst = value` walked in the order of a global target's strides, where
/// that is not its index's: every operand permuted alike (tensors and
/// `inside`'s of the target's leaves; those of one element stay, as every
/// element shares them). `None` where the order is the index's, or an
/// operand has other leaves, or a fold reads more than the target's
/// elements.
pub(super) fn in_memory_order(dst: &View, value: &Elementwise) -> Option<(View, Elementwise)> {
    if !matches!(dst.base, Base::Param(_)) {
        return None;
    }
    // Only to bring a run of consecutive elements first: another order
    // vectorizes nothing.
    let order = stride_order(&dst.layout);
    let strides = dst.layout.stride().leaves();
    let leaves = dst.layout.shape().leaves();
    let run = |i: usize| strides[i].is_const(1) && !leaves[i].is_const(1);
    if order.first().is_none_or(|&i| i == 0 || !run(i)) {
        return None;
    }
    let one = |v: &View| v.layout.size().is_const(1);
    let mut fits = !folds(value);
    value.for_each_view(&mut |v| fits &= one(v) || v.layout.shape().leaves() == leaves);
    if !fits {
        return None;
    }
    let mut failed = false;
    let value = value.map_views(&mut |v| match one(v) {
        true => v.clone(),
        false => by_leaves(v, &order).unwrap_or_else(|| {
            failed = true;
            v.clone()
        }),
    });
    let dst = by_leaves(dst, &order)?;
    (!failed).then_some((dst, value))
}

/// Whether `e` folds a mode anywhere.
fn folds(e: &Elementwise) -> bool {
    let mut found = matches!(e, Elementwise::Reduce { .. });
    e.for_each_operand(&mut |x| found |= folds(x));
    found
}
