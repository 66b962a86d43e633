//! Divides and products: tiling as composition with a complement.
//!
//! In: a layout and a tiler. Out: CuTe's `logical_divide` (`A o (B, B*)`,
//! where `B*` is the complement of `B` against the coalesced shape of `A`, so
//! a tiler that does not divide `A` rounds up), `logical_product`
//! (`(A, B* o T)`), their zipped, tiled and flat regroupings, the
//! rank-sensitive `blocked_product` and `raked_product`, and `tile_to_shape`.
//! Divides and products keep the modes of `A` that the tiler does not reach.

use crate::complement::complement;
use crate::composition::composition;
use crate::condition::Conditions;
use crate::error::{AlgebraError, Result};
use crate::layout::{Coord, Layout};
use crate::tiler::Tiler;
use crate::tuple::IntTuple;

/// How a divide or product regroups its rank-2 result.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Grouping {
    /// `((tile modes), (rest modes))` kept per mode of the tiler.
    Logical,
    /// `((tile modes), (rest modes))`.
    Zipped,
    /// `((tile modes), rest modes...)`.
    Tiled,
    /// `(tile modes..., rest modes...)`.
    Flat,
}

/// `logical_divide(a, tiler)` and its regroupings.
pub fn divide(
    a: &Layout,
    tiler: &Tiler,
    grouping: Grouping,
    conds: &mut Conditions,
) -> Result<Layout> {
    let r = logical_divide(a, tiler, conds)?;
    regroup(&r, tiler, grouping)
}

/// `logical_product(a, tiler)` and its regroupings.
pub fn product(
    a: &Layout,
    tiler: &Tiler,
    grouping: Grouping,
    conds: &mut Conditions,
) -> Result<Layout> {
    let r = logical_product(a, tiler, conds)?;
    regroup(&r, tiler, grouping)
}

fn logical_divide(a: &Layout, tiler: &Tiler, conds: &mut Conditions) -> Result<Layout> {
    by_mode(a, tiler, "logical_divide", conds, &|a, b, conds| {
        let rest = complement(b, &a.coalesce().shape().clone(), conds)?;
        composition(a, &Layout::concat(&[b.clone(), rest]), conds)
    })
}

fn logical_product(a: &Layout, tiler: &Tiler, conds: &mut Conditions) -> Result<Layout> {
    by_mode(a, tiler, "logical_product", conds, &|a, b, conds| {
        let cotarget = IntTuple::Int(a.size().mul(&b.cosize()));
        let rest = complement(a, &cotarget, conds)?;
        Ok(Layout::concat(&[a.clone(), composition(&rest, b, conds)?]))
    })
}

type LayoutOp = dyn Fn(&Layout, &Layout, &mut Conditions) -> Result<Layout>;

/// Applies `op` with a layout tiler, or mode by mode with a tuple tiler,
/// keeping the modes of `a` past the tiler. An integer `n` is `make_layout(n)`.
fn by_mode(
    a: &Layout,
    tiler: &Tiler,
    name: &'static str,
    conds: &mut Conditions,
    op: &LayoutOp,
) -> Result<Layout> {
    match tiler {
        Tiler::Layout(b) => op(a, b, conds),
        Tiler::Int(n) => op(a, &Layout::col_major(&IntTuple::Int(n.clone())), conds),
        Tiler::Under => Ok(a.clone()),
        Tiler::Tuple(ts) => {
            if ts.len() > a.rank() {
                return Err(AlgebraError::TooManyModes {
                    what: "tiler",
                    op: name,
                    layout: a.clone(),
                    tiler: ts.len(),
                    modes: a.rank(),
                });
            }
            let mut parts = Vec::with_capacity(a.rank());
            for (i, m) in a.modes().into_iter().enumerate() {
                parts.push(match ts.get(i) {
                    Some(t) => by_mode(&m, t, name, conds, op)?,
                    None => m,
                });
            }
            Ok(Layout::concat(&parts))
        }
    }
}

fn regroup(r: &Layout, tiler: &Tiler, grouping: Grouping) -> Result<Layout> {
    if grouping == Grouping::Logical {
        return Ok(r.clone());
    }
    let zipped = Layout::new(zip2_by(r.shape(), tiler)?, zip2_by(r.stride(), tiler)?)?;
    let unpack = |mode: usize, yes: bool| {
        let rank = zipped.shape().get(mode).map_or(1, IntTuple::rank);
        if yes && rank > 1 {
            Coord::Tuple(vec![Coord::Under; rank])
        } else {
            Coord::Under
        }
    };
    match grouping {
        Grouping::Zipped => Ok(zipped),
        Grouping::Tiled => zipped.slice(&Coord::Tuple(vec![unpack(0, false), unpack(1, true)])),
        Grouping::Flat => zipped.slice(&Coord::Tuple(vec![unpack(0, true), unpack(1, true)])),
        Grouping::Logical => unreachable!("returned above"),
    }
}

/// CuTe's `zip2_by`: gathers the rank-2 modes found at the tiler's leaves
/// into `((firsts...), (seconds..., untouched modes...))`.
fn zip2_by(t: &IntTuple, guide: &Tiler) -> Result<IntTuple> {
    let mismatch = || AlgebraError::Invalid {
        op: "zip2_by",
        why: format!("{t} does not have the rank-2 modes that the tiler {guide} expects"),
    };
    let IntTuple::Tuple(ts) = t else {
        return Err(mismatch());
    };
    match guide {
        Tiler::Tuple(gs) => {
            if ts.len() < gs.len() {
                return Err(mismatch());
            }
            let mut firsts = Vec::new();
            let mut seconds = Vec::new();
            for (ti, gi) in ts.iter().zip(gs) {
                let split = zip2_by(ti, gi)?;
                let IntTuple::Tuple(pair) = split else {
                    return Err(mismatch());
                };
                firsts.push(pair[0].clone());
                seconds.push(pair[1].clone());
            }
            seconds.extend(ts[gs.len()..].iter().cloned());
            Ok(IntTuple::Tuple(vec![
                IntTuple::Tuple(firsts),
                IntTuple::Tuple(seconds),
            ]))
        }
        _ if ts.len() == 2 => Ok(t.clone()),
        _ => Err(mismatch()),
    }
}

/// Which operand comes first in a rank-sensitive product's modes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Interleave {
    /// `blocked_product`: each mode is `(block, repeat)`.
    Blocked,
    /// `raked_product`: each mode is `(repeat, block)`.
    Raked,
}

/// `blocked_product(block, tiler)` / `raked_product(block, tiler)`:
/// rank = max of the two ranks, each mode pairs the block with its repeats.
pub fn rank_product(
    block: &Layout,
    tiler: &Layout,
    how: Interleave,
    conds: &mut Conditions,
) -> Result<Layout> {
    let r = block.rank().max(tiler.rank());
    let p = logical_product(
        &block.append_to_rank(r),
        &Tiler::Layout(tiler.append_to_rank(r)),
        conds,
    )?;
    let (first, second) = (p.mode(0)?, p.mode(1)?);
    let (x, y) = match how {
        Interleave::Blocked => (first, second),
        Interleave::Raked => (second, first),
    };
    Layout::new(zip(x.shape(), y.shape())?, zip(x.stride(), y.stride())?)
}

/// CuTe's `zip(t0, t1)`: pairs the modes of two tuples of equal rank; two
/// integers become `((a,b))`.
fn zip(a: &IntTuple, b: &IntTuple) -> Result<IntTuple> {
    match (a, b) {
        (IntTuple::Tuple(xs), IntTuple::Tuple(ys)) if xs.len() == ys.len() => Ok(IntTuple::Tuple(
            xs.iter()
                .zip(ys)
                .map(|(x, y)| IntTuple::Tuple(vec![x.clone(), y.clone()]))
                .collect(),
        )),
        (IntTuple::Int(_), _) => Ok(IntTuple::Tuple(vec![IntTuple::Tuple(vec![
            a.clone(),
            b.clone(),
        ])])),
        _ => Err(AlgebraError::Invalid {
            op: "zip",
            why: format!("{a} and {b} have different ranks"),
        }),
    }
}

/// `tile_to_shape(block, target, order)`: repeats `block` until it has the
/// target shape, the repeats laid out in `order` (column-major by default).
pub fn tile_to_shape(
    block: &Layout,
    target: &IntTuple,
    order: Option<&IntTuple>,
    conds: &mut Conditions,
) -> Result<Layout> {
    let r = target.rank();
    if block.rank() > r {
        return Err(AlgebraError::Invalid {
            op: "tile_to_shape",
            why: format!(
                "the block {block} has {} modes but the target shape {target} has {r}: the block has at most the target's modes (CuTe's rule)",
                block.rank()
            ),
        });
    }
    // The order ranks the repeats, one a mode of the target.
    if let Some(o) = order
        && o.rank() != r
    {
        return Err(AlgebraError::Invalid {
            op: "tile_to_shape",
            why: format!(
                "the order {o} has {} modes but the target shape {target} has {r}: one a mode",
                o.rank()
            ),
        });
    }
    let padded = block.append_to_rank(r);
    let block_shape = padded.shape().product_each().modes();
    let target_shape = target.product_each().modes();
    let mut repeats = Vec::with_capacity(r);
    for (mode, (t, b)) in target_shape.iter().zip(&block_shape).enumerate() {
        let (t, b) = (t.product(), b.product());
        if let Some(rem) = t.rem(&b).as_static()
            && rem != 0
        {
            return Err(AlgebraError::TileToShape {
                block: block.clone(),
                target: target.clone(),
                mode,
            });
        }
        repeats.push(IntTuple::Int(t.ceil_div(&b)));
    }
    // CuTe's `product_each` wraps an integer target, so the repeats are always a tuple.
    let repeat_shape = IntTuple::Tuple(repeats);
    let repeat = match order {
        Some(o) => ordered_layout(&repeat_shape, o)?,
        None => Layout::col_major(&repeat_shape),
    };
    rank_product(&padded, &repeat, Interleave::Blocked, conds)
}

/// CuTe's `make_ordered_layout(shape, order)`: a compact layout whose
/// modes are laid out by increasing `order`, one integer a mode (a nested
/// mode column-major within), or an order shaped like the shape, one a
/// leaf: `make_ordered_layout((2,(3,4)), (2,(0,1)))` is `(2,(3,4)):(12,(1,3))`.
pub fn ordered_layout(shape: &IntTuple, order: &IntTuple) -> Result<Layout> {
    let modes = shape.modes();
    let orders = order.modes();
    if orders.iter().any(IntTuple::is_tuple) && shape.congruent(order) {
        let (leaves, keys) = (shape.leaves(), order.leaves());
        if let Some(keys) = keys
            .iter()
            .map(crate::Int::as_static)
            .collect::<Option<Vec<i64>>>()
        {
            let mut strides = keys.iter().map(|k| {
                (leaves.iter().zip(&keys))
                    .filter(|(_, kj)| *kj < k)
                    .fold(crate::Int::Static(1), |acc, (l, _)| acc.mul(l))
            });
            return Layout::new(shape.clone(), shape.unflatten_like(&mut strides));
        }
    }
    if modes.len() != orders.len()
        || orders
            .iter()
            .any(|o| !o.as_int().is_some_and(|i| i.is_static()))
    {
        return Err(AlgebraError::Invalid {
            op: "make_ordered_layout",
            why: format!(
                "the order {order} needs one static integer per mode of {shape}, or one per leaf shaped like it"
            ),
        });
    }
    let key = |o: &IntTuple| o.as_int().and_then(|i| i.as_static()).unwrap_or(0);
    let strides: Vec<IntTuple> = modes
        .iter()
        .zip(&orders)
        .map(|(m, o)| {
            let start = modes
                .iter()
                .zip(&orders)
                .filter(|(_, oj)| key(oj) < key(o))
                .fold(crate::Int::Static(1), |acc, (mj, _)| acc.mul(&mj.product()));
            m.compact_col_major(&start)
        })
        .collect();
    let stride = if shape.is_tuple() {
        IntTuple::Tuple(strides)
    } else {
        strides.into_iter().next().expect("one mode")
    };
    Layout::new(shape.clone(), stride)
}
