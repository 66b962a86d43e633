//! Composition `A o B`: the layout `R` with `R(c) = A(B(c))` for every `c`
//! in the domain of `B`, compatible with `B`.
//!
//! In: two layouts, or a layout and a tiler. Out: C++ CuTe's result
//! (`composition_impl` in `layout.hpp`), but only after it is shown to be the
//! composition: CuTe checks a weak divisibility condition on static values
//! only, and can return a layout that is not `A o B`. Static results are
//! checked point by point; facts about dynamic values come back as conditions.

use crate::condition::{Conditions, Fact};
use crate::error::{AlgebraError, Result};
use crate::int::Int;
use crate::layout::Layout;
use crate::tiler::Tiler;
use crate::tuple::IntTuple;

/// Static compositions with at most this many points are verified point by
/// point; larger ones by the per-mode divisibility facts.
const ENUMERATION_LIMIT: i64 = 1 << 20;

/// `a o b` for two layouts.
pub fn composition(a: &Layout, b: &Layout, conds: &mut Conditions) -> Result<Layout> {
    let flat_a = a.coalesce_x();
    let modes = flat_a.shape().leaves();
    let mut facts = Vec::new();
    let mut spans = vec![Int::Static(0); modes.len().saturating_sub(1)];
    let walk = Walk { a, b };
    let r = walk.compose(&flat_a, b.shape(), b.stride(), &mut facts, &mut spans)?;
    // Each mode of `b` is walked apart and the results are added, which is
    // `a`'s function only if their coordinates in a mode of `flat_a` (but
    // the last, which is open-ended) never carry into the next one.
    for (span, s) in spans.iter().zip(&modes) {
        facts.push(Fact::Le(span.add(&Int::Static(1)), s.clone()));
    }
    // With a negative stride in `b` a carry can be a borrow, which the
    // spans do not bound: the facts prove nothing then (enumeration may).
    for d in b.stride().leaves() {
        if d.as_static().is_none_or(|v| v < 0) {
            facts.push(Fact::Le(Int::Static(0), d));
        }
    }
    verify(a, b, &r, facts, conds)?;
    Ok(r)
}

/// `a o tiler`: a layout tiler composes whole; a tuple composes mode by mode
/// and drops the modes of `a` that it does not reach (as C++ CuTe does).
pub fn composition_tiler(a: &Layout, tiler: &Tiler, conds: &mut Conditions) -> Result<Layout> {
    match tiler {
        Tiler::Layout(b) => composition(a, b, conds),
        Tiler::Int(n) => composition(a, &Layout::int(n.clone(), Int::Static(1)), conds),
        Tiler::Under => Ok(a.clone()),
        Tiler::Tuple(ts) => {
            if ts.len() > a.rank() {
                return Err(AlgebraError::TooManyModes {
                    what: "tiler",
                    op: "composition",
                    layout: a.clone(),
                    tiler: ts.len(),
                    modes: a.rank(),
                });
            }
            let modes = a.modes();
            let parts = ts
                .iter()
                .zip(&modes)
                .map(|(t, m)| composition_tiler(m, t, conds))
                .collect::<Result<Vec<_>>>()?;
            Ok(Layout::concat(&parts))
        }
    }
}

/// The two operands, kept for error messages.
struct Walk<'a> {
    a: &'a Layout,
    b: &'a Layout,
}

impl Walk<'_> {
    /// CuTe's `composition_impl`: distribute over the modes of `b`, then walk
    /// one integral mode `bs:bd` of `b` across the flat modes of `flat_a`.
    fn compose(
        &self,
        flat_a: &Layout,
        bs: &IntTuple,
        bd: &IntTuple,
        facts: &mut Vec<Fact>,
        spans: &mut [Int],
    ) -> Result<Layout> {
        let (bs, bd) = match (bs, bd) {
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
                let parts = ss
                    .iter()
                    .zip(ds)
                    .map(|(s, d)| self.compose(flat_a, s, d, facts, spans))
                    .collect::<Result<Vec<_>>>()?;
                return Ok(Layout::concat(&parts));
            }
            (IntTuple::Int(s), IntTuple::Int(d)) => (s, d),
            _ => unreachable!("layouts are congruent"),
        };
        if bd.is_const(0) {
            return Ok(Layout::int(bs.clone(), bd.clone()));
        }
        let (a_s, a_d) = match (flat_a.shape(), flat_a.stride()) {
            (IntTuple::Int(_), IntTuple::Int(ad)) => {
                return Ok(Layout::int(bs.clone(), bd.mul(ad)));
            }
            (s, d) => (s.leaves(), d.leaves()),
        };
        let last = a_s.len() - 1;
        let mut shapes = Vec::new();
        let mut strides = Vec::new();
        let mut rest_shape = bs.clone();
        let mut rest_stride = bd.clone();
        let modes = a_s[..last].iter().zip(&a_d[..last]);
        for (k, (curr_shape, curr_stride)) in modes.enumerate() {
            let r = rest_stride.abs();
            // CuTe's weak stride divisibility condition, on static values.
            if let (Some(rs), Some(cs)) = (rest_stride.as_static(), curr_shape.as_static())
                && !(cs != 0 && (rs % cs == 0 || rs < cs))
            {
                return Err(AlgebraError::StrideDivisibility {
                    a: self.a.clone(),
                    b: self.b.clone(),
                    stride: rest_stride.clone(),
                    shape: curr_shape.clone(),
                });
            }
            facts.push(walk_fact(curr_shape, &r, &rest_shape));
            let next_shape = curr_shape.ceil_div(&r);
            let next_stride = r.ceil_div(curr_shape).mul(&rest_stride.signum());
            if !(next_shape.is_const(1) || rest_shape.is_const(1)) {
                let new_shape = next_shape.min(&rest_shape);
                // CuTe's weak shape divisibility condition, on static values.
                if let (Some(n), Some(k)) = (rest_shape.as_static(), new_shape.as_static())
                    && (k == 0 || n % k != 0)
                {
                    return Err(AlgebraError::ShapeDivisibility {
                        a: self.a.clone(),
                        b: self.b.clone(),
                        rest: rest_shape.clone(),
                        part: new_shape.clone(),
                    });
                }
                // This mode of `b` reaches coordinates up to (new - 1) * r
                // of mode k: what the no-carry facts add up.
                spans[k] = spans[k].add(&new_shape.sub(&Int::Static(1)).mul(&r));
                strides.push(rest_stride.mul(curr_stride));
                rest_shape = rest_shape.div(&new_shape);
                shapes.push(new_shape);
            }
            rest_stride = next_stride;
        }
        let tail_stride = rest_stride.mul(&a_d[last]);
        if shapes.is_empty() {
            return Ok(Layout::int(rest_shape, tail_stride));
        }
        if !rest_shape.is_const(1) {
            shapes.push(rest_shape);
            strides.push(tail_stride);
        }
        if shapes.len() == 1 {
            return Ok(Layout::int(shapes.remove(0), strides.remove(0)));
        }
        Ok(Layout::new(
            IntTuple::Tuple(shapes.into_iter().map(IntTuple::Int).collect()),
            IntTuple::Tuple(strides.into_iter().map(IntTuple::Int).collect()),
        )
        .expect("built congruent"))
    }
}

/// When a walk of `n` steps of stride `r` across a mode of extent `s` is
/// exact: it skips the mode whole (`s | r`), stays inside it
/// (`(n-1)*r < s`), or fills it exactly and continues in whole repeats
/// (`r | s` and `s/r | n`).
fn walk_fact(s: &Int, r: &Int, n: &Int) -> Fact {
    let one = Int::Static(1);
    let inside = Fact::Le(n.sub(&one).mul(r).add(&one), s.clone());
    let fills = Fact::All(vec![Fact::divides(r, s), Fact::divides(&s.ceil_div(r), n)]);
    Fact::Any(vec![Fact::divides(s, r), inside, fills])
}

/// Checks CuTe's post-condition: `r` is compatible with `b` and
/// `r(i) = a(b(i))` for every `i` in the domain of `b`.
fn verify(
    a: &Layout,
    b: &Layout,
    r: &Layout,
    facts: Vec<Fact>,
    conds: &mut Conditions,
) -> Result<()> {
    let invalid = |why: String| AlgebraError::Invalid {
        op: "composition",
        why,
    };
    if !b.shape().compatible(r.shape()) {
        return Err(invalid(format!("result {r} is not compatible with {b}")));
    }
    // The walk, no-carry and stride facts prove the result, as they do
    // for symbolic layouts; where they hold statically, enumerating it
    // would only repeat the proof (and cost the checker most of its time
    // on large thread-value layouts).
    if facts.iter().all(|f| f.decide() == Some(true)) {
        return Ok(());
    }
    let size = b.size().as_static().filter(|&n| n <= ENUMERATION_LIMIT);
    if let (Some(n), Some(sa), Some(sb), Some(sr)) =
        (size, a.to_static(), b.to_static(), r.to_static())
    {
        // Where B's offsets are few, A is tabulated over them once: a
        // thread-value layout repeats each of them for every thread.
        let table: Option<Vec<Option<i64>>> = sb
            .range()
            .filter(|&(lo, hi)| lo >= 0 && hi < ENUMERATION_LIMIT && hi < n)
            .map(|(_, hi)| sa.offsets().take(hi as usize + 1).collect());
        for ((i, b_i), got) in (0..n).zip(sb.offsets()).zip(sr.offsets()) {
            let expected = b_i.and_then(|x| match &table {
                Some(t) => t[x as usize],
                None => sa.at(x),
            });
            if expected != got {
                return Err(AlgebraError::NotAComposition {
                    a: a.clone(),
                    b: b.clone(),
                    result: r.clone(),
                    index: i,
                    got: got.unwrap_or(i64::MIN),
                    expected: expected.unwrap_or(i64::MIN),
                });
            }
        }
        return Ok(());
    }
    for fact in facts {
        conds.require(fact, "composition", || {
            invalid(format!(
                "{r} is not {a} o {b}: a mode of {b} does not walk {a} in whole steps"
            ))
        })?;
    }
    Ok(())
}
