//! A tensor's slice coordinates against its modes' extents. A coordinate
//! past its mode reaches another tile's elements, or past a register
//! array, and no guard sees it (guards bound the tensor, not the tile).
//! In: the tensor's shape, the coordinate, and intervals for run-time
//! names (what is known at the statement). Out: the first coordinate that
//! can leave its mode, as a diagnostic at its argument.

use super::{Args, Ranges};
use crate::check::program::{Base, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use tilec_layout::{Builtin, Conditions, Coord, Fact, Int, IntTuple, Layout};

/// Refuses a coordinate of `coord` that can leave its mode of `shape`;
/// `spans` are the arguments' (one a mode) and `span` the slice's.
pub fn check_slice(
    shape: &IntTuple,
    coord: &Coord,
    ranges: &dyn Ranges,
    block_threads: Option<i64>,
    registers: bool,
    spans: &[Span],
    span: Span,
) -> Result<(), Diagnostic> {
    let outside = match (shape, coord) {
        (IntTuple::Tuple(modes), Coord::Tuple(cs)) if modes.len() == cs.len() => modes
            .iter()
            .zip(cs)
            .enumerate()
            .find_map(|(i, (m, c))| Some((i, first_outside(m, c, ranges)?))),
        _ => first_outside(shape, coord, ranges).map(|o| (0, o)),
    };
    let Some((i, (c, size, reach))) = outside else {
        return threads_cover(shape, coord, block_threads, spans, span);
    };
    let at = argument_span(spans, coord, i, span);
    // The guard that keeps the coordinate inside, where it moves with the
    // run-time values (a thread's, a counter's).
    let guard = match (&reach, c.as_static()) {
        (Reach::At(v, _), None) if *v < 0 => format!(" (`if {c} >= 0 {{ ... }}`)"),
        (Reach::At(..), None) => format!(" (`if {c} < {size} {{ ... }}`)"),
        _ => String::new(),
    };
    let (message, label) = match (reach, c.as_static()) {
        (Reach::PastBy(d), _) => (
            format!("the coordinate `{c}` is outside its mode's 0..{size}"),
            format!(
                "{} past the mode's last coordinate, `{size} - 1`",
                d.saturating_add(1)
            ),
        ),
        (_, Some(v)) => (
            format!("the coordinate {v} is outside its mode's 0..{size}"),
            format!("its mode has {size} coordinates"),
        ),
        (Reach::At(v, at), None) => {
            let at: Vec<String> = at.iter().map(|(n, x)| format!("{n} = {x}")).collect();
            (
                format!("the coordinate `{c}` reaches {v}, outside its mode's 0..{size}"),
                format!("{v} where {}", at.join(", ")),
            )
        }
    };
    // A register array's coordinates are constants wherever it runs (its
    // loops unroll): a guard around a counter to a run-time end (taken up
    // to 2^40; no unrolled loop comes near 2^30) does not make that one.
    let run_time = c
        .range(&|x: &str| ranges.range(x))
        .is_none_or(|(_, hi)| hi >= 1 << 30);
    // A remainder by more than the mode has (a pipeline's stages past its
    // buffer's stage mode): the two counts disagree, which no guard mends.
    let remainder = match &c {
        Int::Dynamic(sym) => match &**sym {
            tilec_layout::int::Sym::Bin(tilec_layout::int::Op::Mod, _, d) => d.as_static(),
            _ => None,
        },
        Int::Static(_) => None,
    };
    let help = match (registers && run_time, remainder) {
        (_, Some(d)) if size.as_static().is_some_and(|n| d > n) => format!(
            "`{c}` takes {d} values and the mode has {size}: make the two agree (a remainder by \
             {size}, or a mode of {d}; in a pipeline, `stage s in 0..{size}` or {d} stages in its \
             buffers)"
        ),
        (true, _) => format!(
            "a register array is sliced by constants: loop to its size (`for k in 0..{size} {{ \
             if k < N {{ ... }} }}`), which unrolls, rather than to a run-time end"
        ),
        (false, _) => format!(
            "a coordinate past its mode reaches another tile's elements (or past a register \
             array), which no guard sees: guard the statement{guard}, launch fewer threads, \
             loop fewer times, or slice a larger mode"
        ),
    };
    Err(Diagnostic::new(message, at)
        .with_label(label)
        .with_help(help))
}

/// A partial tile's view sliced at a coordinate of the block alone
/// (`gA[_, _, block.x - block.y]`, a tile of the `_` mode of a
/// `local_tile`): the tile it names is full only where the coordinate is
/// one of the mode's, `0 <= c < size`, a fact of the block's like the
/// `local_tile` ones, so that the blocks where it is not run the guarded
/// entry (the launch proof refused the full entry there: its elements lie
/// in another row or column of the buffer).
pub fn full_slice(t: &View, coord: &Coord, conds: &mut Conditions) {
    let (Base::Param(p), false) = (&t.base, t.coords.is_empty()) else {
        return;
    };
    let (IntTuple::Tuple(modes), Coord::Tuple(cs)) = (t.layout.shape(), coord) else {
        return;
    };
    for (m, c) in modes.iter().zip(cs) {
        let Coord::Int(c) = c else { continue };
        // A constant is checked against the mode already (`check_slice`).
        if c.is_static() || !Builtin::of_the_block(c) {
            continue;
        }
        let full = crate::check::kernel::FULL_TILES;
        if Int::Static(0).known_le(c) != Some(true) {
            conds.record_for(Fact::Le(Int::Static(0), c.clone()), full, Some(*p));
        }
        conds.record_for(
            Fact::Le(c.add(&Int::Static(1)), m.product()),
            full,
            Some(*p),
        );
    }
}

/// The span of mode `i`'s argument where the slice has one a mode, else
/// the slice's.
fn argument_span(spans: &[Span], coord: &Coord, i: usize, span: Span) -> Span {
    match spans.len() == coord_count(coord) {
        true => spans[i],
        false => span,
    }
}

/// Refuses a mode sliced by `thread.x` alone that has more coordinates
/// than the block has threads: the rest are never taken, and the tile's
/// elements there never copied or written (as a thread layout of more
/// threads than the block is refused where it partitions). The block's
/// threads, not those a condition around the slice lets through: under
/// `if thread.x < 32` a slice of 128 coordinates is the program's choice.
fn threads_cover(
    shape: &IntTuple,
    coord: &Coord,
    block_threads: Option<i64>,
    spans: &[Span],
    span: Span,
) -> Result<(), Diagnostic> {
    let (IntTuple::Tuple(modes), Coord::Tuple(cs)) = (shape, coord) else {
        return Ok(());
    };
    let thread = tilec_layout::Builtin::Thread.name();
    for (i, (m, c)) in modes.iter().zip(cs).enumerate() {
        let (Coord::Int(c), Some(size)) = (c, m.product().as_static()) else {
            continue;
        };
        if c.as_var() != Some(thread) {
            continue;
        }
        let Some(threads) = block_threads else {
            continue;
        };
        let hi = threads - 1;
        if hi + 1 < size {
            let at = argument_span(spans, coord, i, span);
            return Err(Diagnostic::new(
                format!("mode {i} has {size} coordinates but the block only {} threads", hi + 1),
                at,
            )
            .with_label(format!("coordinates {} to {} are never taken", hi + 1, size - 1))
            .with_help(format!("launch block({size}) (`block(size(get(tv, 0)))` for a thread-value layout tv), or slice a mode of {} coordinates", hi + 1)));
        }
    }
    Ok(())
}

/// Where a coordinate goes: to a value outside a static size, at the
/// values of its names given, or past a run-time size by a constant.
enum Reach {
    At(i64, Vec<(String, i64)>),
    PastBy(i64),
}

/// The most points of the names' ranges a coordinate is evaluated at.
const MAX_POINTS: usize = 1 << 16;

/// A value of `c` outside `0..n` and the names' values that give it,
/// searched at points of the names' ranges where the conditions around
/// the statement hold (at witness values for the names they need beyond,
/// which are given too): intervals alone would refuse
/// `x - x % 32 + x % 32`. Every point where the ranges hold at most
/// [`MAX_POINTS`]; else (a counter to a run-time end, taken up to 2^40)
/// [`samples`] of the widest names, where a coordinate under a guard such
/// as `if k < 64` leaves a mode of 32. `None` where none is found: a
/// sampled search may miss one, never refuses a coordinate that stays
/// inside.
fn outside_at(c: &Int, n: i64, ranges: &dyn Ranges) -> Option<(i64, Vec<(String, i64)>)> {
    let mut names = Vec::new();
    c.names(&mut names);
    // With the names the conditions tie to them, the closure of them.
    let mut i = 0;
    while i < names.len() {
        for t in ranges.tied(&names[i]) {
            if !names.contains(&t) {
                names.push(t);
            }
        }
        i += 1;
    }
    let spans: Vec<(i64, i64)> = names
        .iter()
        .map(|x| ranges.searched(x))
        .collect::<Option<_>>()?;
    // Where intervals keep every value of `c` inside, no point leaves it
    // (the common case, a thread's coordinate in a mode of its threads):
    // the walk below, up to 2^16 evaluations, is for the rest.
    let span_of = |x: &str| names.iter().position(|m| m == x).map(|i| spans[i]);
    if c.range(&span_of).is_some_and(|(lo, hi)| 0 <= lo && hi < n) {
        return None;
    }
    // Every value of each name where the points fit; else the widest
    // name's samples, then its first value alone (which it takes wherever
    // the statement runs), until they fit.
    let mut values: Vec<Vec<i64>> = Vec::with_capacity(spans.len());
    for &(lo, hi) in &spans {
        let len = hi.checked_sub(lo)?.checked_add(1)?;
        values.push(match usize::try_from(len).ok()? <= MAX_POINTS {
            true => (lo..=hi).collect(),
            false => samples(lo, hi, n),
        });
    }
    let fits = |vals: &[Vec<i64>]| {
        vals.iter()
            .try_fold(1usize, |p, v| {
                p.checked_mul(v.len()).filter(|&p| p <= MAX_POINTS)
            })
            .is_some()
    };
    while !fits(&values) {
        let (i, widest) = values.iter().enumerate().max_by_key(|(_, v)| v.len())?;
        let (lo, hi) = spans[i];
        let fewer = samples(lo, hi, n);
        values[i] = match (fewer.len() < widest.len(), widest.len() > 1) {
            (true, _) => fewer,
            (false, true) => vec![lo],
            (false, false) => return None,
        };
    }
    let mut at = vec![0usize; names.len()];
    loop {
        let point: Vec<i64> = at.iter().zip(&values).map(|(&i, v)| v[i]).collect();
        let value = |x: &str| names.iter().position(|m| m == x).map(|i| point[i]);
        if let Some(v) = c.eval(&value).filter(|v| !(0..n).contains(v))
            && let Some(witness) = ranges.holds(&value)
        {
            // An extent's witness (2^14) is one value of many: not named.
            let mut given: Vec<(String, i64)> = names.iter().cloned().zip(point).collect();
            given.extend(
                witness
                    .into_iter()
                    .filter(|(n, _)| ranges.range(n).is_some() || Builtin::parse(n).is_some()),
            );
            return Some((v, given));
        }
        // The next point, the first name fastest.
        let mut i = 0;
        loop {
            if i == at.len() {
                return None;
            }
            at[i] += 1;
            if at[i] < values[i].len() {
                break;
            }
            at[i] = 0;
            i += 1;
        }
    }
}

/// Values of a name in `lo..=hi` too wide to walk, where coordinates of
/// it cross a mode's end `n`: the range's first and last few, its first
/// value past each power of two, and `n / a` for small factors `a` (a
/// coordinate `a * k + b` leaves the mode near there), each with its
/// neighbours; sorted, without repeats.
fn samples(lo: i64, hi: i64, n: i64) -> Vec<i64> {
    let mut near: Vec<i64> = (0..8)
        .flat_map(|d| [lo.saturating_add(d), hi.saturating_sub(d)])
        .collect();
    near.extend((0..63).map(|j| lo.saturating_add(1i64 << j)));
    near.extend((1..=16).map(|a| n / a));
    let mut out: Vec<i64> = near
        .iter()
        .flat_map(|&v| [v.saturating_sub(1), v, v.saturating_add(1)])
        .filter(|v| (lo..=hi).contains(v))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// How many arguments a slice of `coord` was written with.
fn coord_count(coord: &Coord) -> usize {
    match coord {
        Coord::Tuple(cs) => cs.len(),
        _ => 1,
    }
}

/// The first integer coordinate whose values can leave its mode, with the
/// mode's size and where the coordinate goes; where a mode's size or a
/// coordinate's values are not known, nothing is reported. Of a run-time
/// size, a coordinate past it by a constant (`K`, `K + 1`) is reported.
fn first_outside(
    shape: &IntTuple,
    coord: &Coord,
    ranges: &dyn Ranges,
) -> Option<(Int, Int, Reach)> {
    match coord {
        Coord::Under => None,
        Coord::Int(c) => {
            let size = shape.product();
            let Some(n) = size.as_static() else {
                if let Some(past) = c.sub(&size).as_static().filter(|&d| d >= 0) {
                    return Some((c.clone(), size, Reach::PastBy(past)));
                }
                // Below 0 is outside whatever the run-time size.
                let (v, at) = outside_at(c, i64::MAX, ranges)?;
                return Some((c.clone(), size, Reach::At(v, at)));
            };
            // Intervals first: within them, nothing to search (a range
            // past 64 bits searched at points).
            if let Some((lo, hi)) = c.range(&|x: &str| ranges.range(x))
                && lo >= 0
                && hi < n
            {
                return None;
            }
            let (v, at) = outside_at(c, n, ranges)?;
            Some((c.clone(), size, Reach::At(v, at)))
        }
        Coord::Tuple(cs) => match shape {
            IntTuple::Tuple(ms) if ms.len() == cs.len() => ms
                .iter()
                .zip(cs)
                .find_map(|(m, c)| first_outside(m, c, ranges)),
            _ => None,
        },
    }
}

/// Refuses `composition(tensor, B)` where B reaches past the tensor's
/// elements (or, for a tiler, a mode's): CuTe extends the tensor's last
/// mode there, and the elements reached belong to another tile.
pub fn check_composition(tensor: &Layout, a: &Args) -> Result<(), Diagnostic> {
    let over = |t: &Layout, b: &Value| -> Option<(i64, i64)> {
        let b = match b {
            Value::Layout(l) => l.clone(),
            Value::Int(n) => {
                Layout::new(IntTuple::Int(n.clone()), IntTuple::Int(Int::Static(1))).ok()?
            }
            _ => return None,
        };
        let (reach, size) = (b.cosize().as_static()?, t.size().as_static()?);
        (reach > size).then_some((reach, size))
    };
    let Some(b) = a.values.get(1) else {
        return Ok(());
    };
    let found = match b {
        Value::Tiler(modes) => modes
            .iter()
            .enumerate()
            .find_map(|(i, b)| over(&tensor.mode(i).ok()?, b).map(|o| (Some(i), o))),
        b => over(tensor, b).map(|o| (None, o)),
    };
    let Some((mode, (reach, size))) = found else {
        return Ok(());
    };
    let of = match mode {
        Some(i) => format!("mode {i} of the tensor, {size} elements"),
        None => format!("the tensor's {size} elements"),
    };
    Err(Diagnostic::new(
        format!("this layout reaches {reach} elements, past {of}"),
        a.spans.get(1).copied().unwrap_or(a.call),
    )
    .with_label(format!("its cosize is {reach}"))
    .with_help(
        "the elements past the tensor's own belong to another tile, which no guard sees: \
         compose with a layout whose offsets stay below the tensor's size",
    ))
}

#[cfg(test)]
mod tests {
    use super::samples;

    #[test]
    fn a_wide_range_is_sampled_where_a_mode_ends() {
        let s = samples(0, (1 << 40) - 1, 96);
        // A mode of 96 left by k, 2 * k, 3 * k at 96, 48, 32; the ends.
        for v in [0, 1, 95, 96, 97, 47, 48, 32, 64, 65, (1 << 40) - 1] {
            assert!(s.contains(&v), "{v} not sampled");
        }
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.len() < 256);
        // Every sample inside the range, even one past the ends' neighbours.
        assert!(samples(5, 9, 100).iter().all(|v| (5..=9).contains(v)));
    }
}
