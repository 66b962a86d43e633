//! Partition evenness: a tile or thread layout cuts a tensor evenly,
//! statically or by a launch condition, or (global tensors) into tiles
//! whose fullness is a [`FULL_TILES`] fact; and the step and coordinate
//! helpers of `local_tile` and `local_partition`.

use super::{EVEN_PARTITION, FULL_TILES};
use crate::check::algebra::Args;
use crate::check::program::{Base, CoordFn, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use tilec_layout::{Builtin, Conditions, Coord, Fact, Int, IntTuple, Layout};

/// `step(1, X, 1)` as which modes to keep.
pub(super) fn step_mask(
    a: &Args,
    i: usize,
    step: &Value,
    rank: usize,
) -> Result<Vec<bool>, Diagnostic> {
    let items = match step {
        Value::Tuple(v) => v.clone(),
        other => vec![other.clone()],
    };
    let mask: Option<Vec<bool>> = items
        .iter()
        .map(|v| match v {
            Value::Skip => Some(false),
            Value::Int(Int::Static(1)) => Some(true),
            _ => None,
        })
        .collect();
    let mask = mask.ok_or_else(|| a.wrong(i, "a step of 1s and Xs, e.g. step(1, X, 1)"))?;
    if mask.len() != rank {
        return Err(Diagnostic::new(
            format!(
                "the step has {} modes but it selects from {rank}",
                mask.len()
            ),
            a.spans[i],
        )
        .with_help(format!("give one 1 or X per mode: {rank} in all")));
    }
    Ok(mask)
}

/// The modes of `l` that the mask keeps.
pub(super) fn dice_layout(l: &Layout, keep: &[bool]) -> Layout {
    let modes: Vec<Layout> = l
        .modes()
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(m, _)| m)
        .collect();
    if modes.len() == 1 {
        modes.into_iter().next().expect("one mode")
    } else {
        Layout::concat(&modes)
    }
}

/// A thread's 1-D coordinate within mode `m` of its thread layout (CuTe's
/// `get_flat_coord`): per leaf `(index / stride) % shape`, combined colexicographically.
pub(super) fn flat_coord(m: &Layout, index: &Int) -> Int {
    let mut c = Int::Static(0);
    let mut scale = Int::Static(1);
    for (s, d) in m.shape().leaves().iter().zip(m.stride().leaves()) {
        let leaf = if d.is_const(0) {
            Int::Static(0)
        } else {
            index.div(&d).rem(s)
        };
        c = c.add(&leaf.mul(&scale));
        scale = scale.mul(s);
    }
    c
}

/// Each tile extent divides the tensor's extent in its mode: statically, or
/// as a launch condition.
///
/// For a global tensor, partial tiles are allowed: what makes this block's
/// tile full is a [`FULL_TILES`] fact, `(c + 1) * tile <= extent` for a mode
/// cut at the block-uniform coordinate `c` (`at`), else the tile dividing it.
/// A mode that the tiles may overrun also bounds the view's own coordinate
/// in it: elements past a tile's edge (four threads over a mode of one) are
/// guarded by the tile, not only by the tensor, whose extent lies further.
/// A mode a layout tiler cuts whose tiles are not whole runs of the mode
/// (`(32):(2)`: block `c` takes every other element from `c % 2`) is given
/// in `spread` (by mode): its tile is full where its last element is in.
/// Returns the view with those coordinate functions added. `what` names
/// the tiler in messages, and which of the call's arguments are the
/// tensor and the tiler (`local_tile(A, cta, ..)`: 0 and 1;
/// `partition_A(mma, sA, ..)`: 1 and 0).
pub(super) fn even(
    mut t: View,
    tiles: &[IntTuple],
    spread: &[Option<Layout>],
    at: Option<&[Coord]>,
    a: &Args,
    conds: &mut Conditions,
    (what, [tensor, tiler]): (&str, [usize; 2]),
) -> Result<View, Diagnostic> {
    let modes = t.layout.shape().modes();
    // The view's own coordinates, for global views (the only ones guarded).
    let own = (!t.coords.is_empty()).then(|| CoordFn::of_param(&t.layout));
    for (i, (tile, mode)) in tiles.iter().zip(&modes).enumerate() {
        let (tile, extent) = (tile.product(), mode.product());
        let fact = Fact::divides(&tile, &extent);
        if !t.coords.is_empty() {
            // A parameter's own mode is there already, perhaps bounded by
            // its padded extent (`A.padded.1`): on a copy zero up to it, a
            // full tile may reach past the extent as far.
            let own_mode = own.as_ref().map(|o| &o[i]);
            let padded = |e: &Int| e.as_var().is_some_and(|n| n.contains(".padded."));
            let mine = own_mode.and_then(|f| {
                t.coords.iter().find(|c| {
                    c.layout == f.layout
                        && c.offset == f.offset
                        && (c.extent == f.extent || padded(&c.extent))
                })
            });
            let bound = mine.map_or(&extent, |c| &c.extent);
            let here = match at.and_then(|c| c.get(i)) {
                Some(Coord::Int(c)) if Builtin::of_the_block(c) => {
                    // A coordinate that may be below 0 (`block.x - 1`)
                    // names a tile before the tensor's start: full only
                    // where it is not.
                    if Int::Static(0).known_le(c) != Some(true) {
                        let from_start = Fact::Le(Int::Static(0), c.clone());
                        conds.record_for(from_start, FULL_TILES, tensor_of(&t));
                    }
                    match spread.get(i).and_then(Option::as_ref) {
                        Some(l) => spread_tile_inside(l, c, bound),
                        None => Fact::Le(c.add(&Int::Static(1)).mul(&tile), bound.clone()),
                    }
                }
                _ => Fact::divides(&tile, bound),
            };
            if let Some(f) = own_mode
                && fact.decide() != Some(true)
                && mine.is_none()
            {
                t.coords.push(f.clone());
            }
            conds.record_for(here, FULL_TILES, tensor_of(&t));
            continue;
        }
        conds
            .require(fact, EVEN_PARTITION, || {
                tilec_layout::AlgebraError::Invalid {
                    op: "partition",
                    why: String::new(),
                }
            })
            .map_err(|_| {
                Diagnostic::new(
                    format!(
                        "{what} does not divide the tensor evenly: {tile} into {extent} in mode {i}"
                    ),
                    a.spans[tiler],
                )
                .with_label(format!("{tile} in mode {i}"))
                .with_related(a.spans[tensor], format!("shape {}", t.layout.shape()))
                .with_help(format!(
                    "make mode {i} of {what} divide {extent}, or pad the tensor to a multiple of {tile} in mode {i}"
                ))
            })?;
    }
    Ok(t)
}

/// Whether tile `c` of a mode of extent `bound`, cut by tiler `l` whose
/// tiles are spread out (CuTe's logical divide: the tile's first element
/// at the complement's `c`, its last `cosize(l) - 1` further), is whole:
/// its last element below `bound`. Where the complement needs a condition
/// of its own, no tile is taken to be whole (the guarded entry runs).
fn spread_tile_inside(l: &Layout, c: &Int, bound: &Int) -> Fact {
    let mut own = Conditions::default();
    let first = tilec_layout::complement(l, &IntTuple::Int(bound.clone()), &mut own)
        .ok()
        .filter(|_| own.is_empty())
        .and_then(|rest| rest.eval(&Coord::Int(c.clone())).ok());
    match first {
        Some(first) => Fact::Le(first.add(&l.cosize()), bound.clone()),
        None => Fact::Any(Vec::new()),
    }
}

/// Layout tiler `l` where its tile `c` may not be the run `[c n, (c + 1) n)`
/// of its mode (`(32):(2)`, or a permutation such as `(4, 8):(8, 1)`, whose
/// fact the complement gives alike); `None` for a run `(n):(1)`, whose fact
/// `even` writes directly.
pub(super) fn spread_of(l: &Layout) -> Option<Layout> {
    let (size, cosize) = (l.size().as_static(), l.cosize().as_static());
    match (size, cosize) {
        (Some(n), Some(c)) if n == c && l.coalesce().stride().product().as_static() == Some(1) => {
            None
        }
        _ => Some(l.clone()),
    }
}

/// The kernel parameter a view is of, if it is one's.
fn tensor_of(t: &View) -> Option<usize> {
    match t.base {
        Base::Param(p) => Some(p),
        _ => None,
    }
}
