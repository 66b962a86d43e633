//! The values a run-time integer takes at a statement, for the slices'
//! coordinate check ([`crate::check::algebra`]): `thread.x` below the
//! block's threads, `block.*` below static grid dimensions, loop counters
//! from a static start to their end (to 2^40 where it is known at run
//! time alone), each narrowed by the `if` conditions around the
//! statement. In: the launch, the loops and the conditions. Out: an
//! interval for a name, or none where it is not known; a condition that
//! constrains a name in a form not read into an interval (`if
//! block.x * 32 + thread.x < M`) leaves the interval wider, and is
//! evaluated at each point the check would refuse, the names it needs
//! beyond the point's at a witness (a range's first value, block indices
//! 0, extents 2^14): the check refuses only where the statement runs.
//! Also a loop's bounds as integers and what the check knows of its counter.

use super::KernelChecker;
use super::predication::mirror;
use crate::arith::Binary;
use crate::check::program::{Launch, Predicate};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::Expr;
use std::collections::HashMap;
use tilec_layout::{Builtin, COUNTER_MAX, EXTENT_END, Int};

/// What is known around a statement.
pub(super) struct Ranges<'a> {
    pub launch: Option<&'a Launch>,
    /// Loop counters with a static start: first and last value (to
    /// [`COUNTER_MAX`] where the end is known at run time alone).
    pub loops: &'a HashMap<String, (i64, i64)>,
    /// Conditions that hold around the statement.
    pub facts: &'a [Predicate],
    /// In a pipeline's load block, run by the producer warpgroup that
    /// the pipeline adds past the block's threads.
    pub producer: bool,
    /// The kernel's extents, which a witness takes at [`EXTENT`].
    pub extents: &'a HashMap<String, Span>,
}

/// The value an extent takes in a witness (here, and in the stage-read
/// and write checks'): any extent is one a launch may give, large enough
/// that a pipeline's first trips exist.
pub(super) const EXTENT: i64 = 1 << 14;

impl Ranges<'_> {
    /// The threads of the block that run the statement, whatever the
    /// conditions around it: the launch's, but none known in a producer.
    pub fn block_threads(&self) -> Option<i64> {
        match self.producer {
            true => None,
            false => self.launch?.static_threads(),
        }
    }

    pub fn of(&self, name: &str) -> Option<(i64, i64)> {
        let mut r = match Builtin::parse(name) {
            Some(Builtin::Thread) if !self.producer => (0, self.block_threads()? - 1),
            Some(Builtin::Block(d)) => (0, self.launch?.grid.get(d as usize)?.as_static()? - 1),
            Some(Builtin::Thread) => return None,
            None => *self.loops.get(name)?,
        };
        for f in self.facts {
            // A condition in another form is `holds`'s, at the points.
            if let Some(narrowed) = narrow(f, name, r) {
                r = narrowed;
            }
        }
        (r.0 <= r.1).then_some(r)
    }

    /// A value `name` may take where the statement runs, for a point's
    /// conditions: its range's first, a block index 0, an extent large.
    fn witness(&self, name: &str) -> Option<i64> {
        if let Some((lo, _)) = self.of(name) {
            return Some(lo);
        }
        match Builtin::parse(name) {
            Some(Builtin::Block(_)) => Some(0),
            Some(Builtin::Thread) => None,
            None => self.extents.contains_key(name).then_some(EXTENT),
        }
    }
}

impl crate::check::algebra::Ranges for Ranges<'_> {
    fn range(&self, name: &str) -> Option<(i64, i64)> {
        self.of(name)
    }

    fn searched(&self, name: &str) -> Option<(i64, i64)> {
        self.of(name).or_else(|| {
            let extent = Builtin::parse(name).is_none() && self.extents.contains_key(name);
            extent.then_some((1, EXTENT_END - 1))
        })
    }

    fn holds(&self, point: &dyn Fn(&str) -> Option<i64>) -> Option<Vec<(String, i64)>> {
        let mut needed = Vec::new();
        for f in self.facts {
            f.names(&mut needed);
        }
        let mut witness = Vec::new();
        for n in needed {
            if point(&n).is_none() {
                let v = self.witness(&n)?;
                witness.push((n, v));
            }
        }
        let value =
            |n: &str| point(n).or_else(|| witness.iter().find(|(m, _)| m == n).map(|w| w.1));
        let all = self.facts.iter().all(|f| f.at(&value) == Some(true));
        all.then_some(witness)
    }

    fn tied(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.facts {
            let mut names = Vec::new();
            f.names(&mut names);
            if names.iter().any(|n| n == name) {
                out.extend(
                    names
                        .into_iter()
                        .filter(|n| n != name && self.of(n).is_some()),
                );
            }
        }
        out
    }
}

/// `r` narrowed to the values of `name` for which `p` can hold; `None`
/// where `p` constrains `name` in another form than `name op constant`.
fn narrow(p: &Predicate, name: &str, r: (i64, i64)) -> Option<(i64, i64)> {
    match p {
        Predicate::Compare(op, a, b) => {
            if !a.mentions(name) && !b.mentions(name) {
                return Some(r);
            }
            match (a.as_var(), b.as_static(), a.as_static(), b.as_var()) {
                (Some(n), Some(k), _, _) if n == name => compare(*op, k, r),
                (_, _, Some(k), Some(n)) if n == name => compare(mirror(*op), k, r),
                _ => None,
            }
        }
        Predicate::And(p, q) => narrow(q, name, narrow(p, name, r)?),
        // Either side may hold: the hull of the two, a side that holds
        // for no value left out (`thread.x >= 64` in a block of 64).
        Predicate::Or(p, q) => {
            let (x, y) = (narrow(p, name, r)?, narrow(q, name, r)?);
            Some(match (x.0 <= x.1, y.0 <= y.1) {
                (true, false) => x,
                (false, true) => y,
                _ => (x.0.min(y.0), x.1.max(y.1)),
            })
        }
    }
}

/// The values in `r` of `v` with `v op k`.
fn compare(op: Binary, k: i64, (lo, hi): (i64, i64)) -> Option<(i64, i64)> {
    Some(match op {
        Binary::Lt => (lo, hi.min(k.checked_sub(1)?)),
        Binary::Le => (lo, hi.min(k)),
        Binary::Gt => (lo.max(k.checked_add(1)?), hi),
        Binary::Ge => (lo.max(k), hi),
        Binary::Eq => (lo.max(k), hi.min(k)),
        _ => (lo, hi),
    })
}

impl KernelChecker {
    /// What the slices' check knows of a counter from `start` to `end`:
    /// its first and last values, where the end is known at run time alone
    /// up to [`COUNTER_MAX`] (the runtime proves each loop within it), a
    /// range the check samples (`if k < 64` around `s[k, 0]` of a mode
    /// of 32 is refused; `s[k % 32, 0]` is not).
    pub(super) fn counter_range(&self, start: &Int, end: &Int) -> Option<(i64, i64)> {
        let first = start.as_static()?;
        match end.as_static() {
            Some(end) => Some((first, end.checked_sub(1)?)),
            None => {
                // Below an end that intervals bound (`min(N, 16)`, and
                // `thread.x + 1` under the launch's threads and the ifs).
                let around = Ranges {
                    launch: self.launch.as_ref().map(|(l, _)| l),
                    loops: &self.loop_ranges,
                    facts: &self.facts,
                    producer: self.in_load,
                    extents: &self.extent_spans,
                };
                let known = |n: &str| match Builtin::parse(n) {
                    None if self.extent_spans.contains_key(n) => Some((1, EXTENT_END - 1)),
                    _ => around.of(n),
                };
                let last = end
                    .range(&known)
                    .map_or(COUNTER_MAX, |r| r.1.min(COUNTER_MAX));
                Some((first, last.checked_sub(1)?))
            }
        }
    }

    /// `var < end` for the body of a loop whose end is not a constant, so
    /// that a point the slices' check samples is one where the body runs
    /// (`for b in 0..a + 2` reaches 32 only at a = 31). Only where a point
    /// can be told of it: the counter has a range and every name of the
    /// end a witness (an extent, a counter with a range, a block index).
    /// A fact whose names had none would make [`Ranges::holds`] refuse
    /// every point, and the body's coordinates go unchecked.
    pub(super) fn bound_fact(&self, var: &str, end: &Int) -> Option<Predicate> {
        if end.is_static() || !self.loop_ranges.contains_key(var) {
            return None;
        }
        let mut names = Vec::new();
        end.names(&mut names);
        let witnessed = |n: &String| match Builtin::parse(n) {
            Some(Builtin::Block(_)) => true,
            Some(Builtin::Thread) => false,
            None => self.extent_spans.contains_key(n) || self.loop_ranges.contains_key(n),
        };
        names
            .iter()
            .all(witnessed)
            .then(|| Predicate::Compare(Binary::Lt, Int::var(var), end.clone()))
    }

    /// A loop's bounds, as integers; `None` with the error reported.
    pub(super) fn loop_bounds(&mut self, start: &Expr, end: &Expr) -> Option<(Int, Int)> {
        let bounds = self.eval(start).and_then(|a| Ok((a, self.eval(end)?)));
        match bounds {
            Ok((a, b)) => match (a.to_int(), b.to_int()) {
                (Some(a), Some(b)) => Some((a, b)),
                _ => {
                    // A scalar parameter (an i32 too) is an element value,
                    // not a count: say so.
                    let scalar = [&a, &b].iter().any(|v| matches!(v, Value::Scalar { .. }));
                    let d = Diagnostic::new(
                        "loop bounds must be integers",
                        Span {
                            start: start.span.start,
                            end: end.span.end,
                        },
                    );
                    self.diags.push(match scalar {
                        true => d
                            .with_label("a scalar parameter is an element value, not a count a loop can take")
                            .with_help("bound loops by extents (the tensors' M, N, K, or a parameter `w: extent`, passed by --dims) and integers: `for i in 0..N`, `for k in 0..size(gA, 2)`"),
                        false => d.with_help("e.g. for k in 0..size(gA, 2)"),
                    });
                    None
                }
            },
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_layout::Int;

    fn lt(n: &str, k: i64) -> Predicate {
        Predicate::Compare(Binary::Lt, Int::var(n), Int::Static(k))
    }

    #[test]
    fn conditions_narrow_a_name_or_leave_it_unknown() {
        let r = (0, 255);
        assert_eq!(narrow(&lt("thread.x", 9), "thread.x", r), Some((0, 8)));
        let ge = Predicate::Compare(Binary::Ge, Int::Static(4), Int::var("v"));
        assert_eq!(narrow(&ge, "v", r), Some((0, 4)));
        assert_eq!(narrow(&lt("k", 9), "thread.x", r), Some(r));
        let either = Predicate::Or(Box::new(lt("v", 2)), Box::new(ge));
        assert_eq!(narrow(&either, "v", r), Some((0, 4)));
        // `thread.x / 32 < 2`: not read here, so nothing is known.
        let quotient = Predicate::Compare(
            Binary::Lt,
            Int::var("thread.x").div(&Int::Static(32)),
            Int::Static(2),
        );
        assert_eq!(narrow(&quotient, "thread.x", r), None);
        assert_eq!(
            narrow(&lt("thread.x", 9).negated(), "thread.x", r),
            Some((9, 255))
        );
        // A side of `||` that holds for no value in the range adds none.
        let never = lt("thread.x", 300).negated();
        let either = Predicate::Or(Box::new(lt("thread.x", 16)), Box::new(never));
        assert_eq!(narrow(&either, "thread.x", r), Some((0, 15)));
    }
}
