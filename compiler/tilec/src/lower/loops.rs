//! Loop counters in lowering: each loop's name, depth and the values its
//! counter takes, for the compile-time bounds of shared accesses
//! ([`Lowerer::name_range`]), and the counter's name in the runtime's
//! bound checks ([`Lowerer::by_loop`]).

use super::{LoopRange, Lowerer, Problem};
use crate::check::algebra::MAX_INT_NODES;
use crate::check::program::{Base, Op, Stmt, View};
use crate::ir::IntId;
use tilec_layout::{Builtin, Int};

/// One loop, by id.
pub(super) struct Counter {
    pub name: String,
    /// How many loops enclose it, itself included.
    pub depth: usize,
    /// The values the counter takes, where known at compile time.
    pub range: Option<(i64, i64)>,
    pub start: Int,
    /// The last iteration counted from the start (`COUNTER_MAX` where the
    /// extents decide), for [`Lowerer::range`].
    pub iterations: i64,
}

/// The upper bound of a counter that runs to a run-time end, and of its
/// iterations: large, yet far enough from overflow for the interval
/// arithmetic on it, and proved by the runtime at launch for every loop.
const UNBOUNDED: i64 = tilec_layout::COUNTER_MAX;

/// The prefix of the names [`Lowerer::range`] gives iterations
/// (no identifier starts so).
const ITERATION: &str = "#iteration";

impl Lowerer<'_> {
    /// Opens a run-time loop over `start..end`: its id, bounds and range,
    /// and the runtime's record of it; the caller lowers the body, then
    /// pops [`Lowerer::active`].
    pub(super) fn open_loop(
        &mut self,
        var: &str,
        start: &Int,
        end: &Int,
    ) -> Result<(usize, IntId, IntId), Problem> {
        let id = self.counters.len();
        // Under an if, bounds capped as its accesses are (`for j in
        // 0..i + 1` in `if i < M` runs to `min(i, M - 1) + 1`, the same
        // wherever the loop runs): the runtime's proof of `L[i, j]`.
        self.loops.push(LoopRange {
            name: loop_counter(var, id),
            start: self.by_loop(&self.capped(start)),
            end: self.by_loop(&self.capped(end)),
        });
        let (s_id, e_id) = (self.int(start)?, self.int(end)?);
        let env = |n: &str| self.name_range(n);
        let range = start.range(&env).map(|(lo, _)| {
            let hi = self.last_below(end).unwrap_or(UNBOUNDED);
            (lo, hi)
        });
        let iterations = self.last_below(&end.sub(start)).unwrap_or(UNBOUNDED);
        self.counters.push(Counter {
            name: var.to_string(),
            depth: self.active.len() + 1,
            range,
            start: start.clone(),
            iterations,
        });
        self.active.push(id);
        Ok((id, s_id, e_id))
    }

    /// The largest value below `end`, where intervals bound it: by the
    /// names' ranges, or under the ifs around the loop (`0..a + 2` in `if
    /// a < 30` ends by 31) where that is tighter than the extents' reach.
    fn last_below(&self, end: &Int) -> Option<i64> {
        let plain = end.range(&|n: &str| self.name_range(n)).map(|r| r.1);
        let here = self
            .range_here(end, &self.capped(end))
            .map(|r| r.1)
            .filter(|&hi| hi < tilec_layout::EXTENT_END - 1);
        let hi = match (plain, here) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        hi.checked_sub(1)
    }

    /// `v` for the runtime's bound check: the counters of the enclosing
    /// loops named by loop ([`loop_counter`]), since two loops may share a
    /// name and each has its own range.
    pub(super) fn by_loop(&self, v: &Int) -> Int {
        let v = match self.threads.last() {
            Some((name, _)) => v.rename(Builtin::Thread.name(), name),
            None => v.clone(),
        };
        self.active.iter().fold(v, |v, &l| {
            let name = &self.counters[l].name;
            v.rename(name, &loop_counter(name, l))
        })
    }

    /// The values `thread.x` and the counters of the active loops take. A
    /// counter whose end is known only at run time reaches `COUNTER_MAX` at
    /// most (the runtime's launch proof holds it to that), which still
    /// bounds `k % 3`; a loop's iteration counted from its start (the
    /// names [`Self::counted_from_starts`] makes) runs from 0.
    pub(super) fn name_range(&self, n: &str) -> Option<(i64, i64)> {
        if let Some(l) = n.strip_prefix(ITERATION) {
            let l: usize = l.parse().ok()?;
            return Some((0, self.counters.get(l)?.iterations));
        }
        if let Some((_, v)) = self.unrolled.iter().rev().find(|(u, _)| u == n) {
            return Some((*v, *v));
        }
        if Builtin::parse(n) == Some(Builtin::Thread) {
            return Some(
                self.threads
                    .last()
                    .map_or((0, self.block_threads - 1), |t| t.1),
            );
        }
        let l = *self
            .active
            .iter()
            .rev()
            .find(|&&l| self.counters[l].name == n)?;
        self.counters[l].range
    }

    /// The values `v` takes over the threads and the active loops: the
    /// intersection of two sound ranges, with the counters as they are and
    /// counted from their starts (which bounds `(k - k0) % stages`, but
    /// widens a triangular `j in i..8`).
    pub(super) fn range(&self, v: &Int) -> Option<(i64, i64)> {
        self.range_within(v, &|n| self.name_range(n))
    }

    /// [`Self::range`] with the kernel's extents (not its stride symbols)
    /// bounded as the runtime takes them (1 to [`tilec_layout::EXTENT_END`]), for bound proofs:
    /// `(thread.x + M) % 256` is within 256 elements. (Lowering's other
    /// choices keep to [`Self::range`], which leaves extents unbounded.)
    pub(super) fn range_with_extents(&self, v: &Int) -> Option<(i64, i64)> {
        self.range_within(v, &|n| {
            self.name_range(n).or_else(|| {
                self.k
                    .dims()
                    .iter()
                    .any(|e| e == n)
                    .then_some((1, tilec_layout::EXTENT_END - 1))
            })
        })
    }

    fn range_within(
        &self,
        v: &Int,
        env: &dyn Fn(&str) -> Option<(i64, i64)>,
    ) -> Option<(i64, i64)> {
        let counted = self.counted_from_starts(v).and_then(|c| c.range(env));
        match (v.range(env), counted) {
            (Some((a, b)), Some((c, d))) => Some((a.max(c), b.min(d))),
            (x, y) => x.or(y),
        }
    }

    /// `v` with the counter of each enclosing loop that starts at a run-time
    /// value written as that start plus the iteration (a name that only
    /// [`Self::name_range`] knows), innermost first, so that an inner
    /// start naming an outer counter is rewritten too. (The checker
    /// refuses a counter that shadows another, so each name is one loop's.)
    /// `None` where the rewriting would grow `v` past the checker's bound
    /// on integer expressions: each use of a counter takes its start, so
    /// nested loops whose starts use the outer counters several times
    /// multiply it; the plain range then stands alone.
    fn counted_from_starts(&self, v: &Int) -> Option<Int> {
        let mut v = v.clone();
        for &l in self.active.iter().rev() {
            let Counter { name, start, .. } = &self.counters[l];
            if !start.is_static() {
                let from = start.add(&Int::var(&format!("{ITERATION}{l}")));
                let uses = v.uses_within(name, MAX_INT_NODES)?;
                if uses > 0 && from.larger_than(MAX_INT_NODES / uses) {
                    return None;
                }
                v = v.replace(name, &from);
            }
        }
        Some(v)
    }
}

/// The name of loop `id`'s counter in the runtime's manifest: `k.1`, one
/// name a loop even where the source reuses `k`.
pub(super) fn loop_counter(var: &str, id: usize) -> String {
    format!("{var}.{id}")
}

/// The most copies of a loop body that unrolling makes.
pub(super) const MAX_UNROLL: i64 = 256;

/// Whether a statement of `body` (nested loops included) indexes registers
/// by the counter `var`.
pub(super) fn indexes_registers(body: &[Stmt], var: &str) -> bool {
    let by_var = |v: &View| {
        let mut names = Vec::new();
        v.offset.names(&mut names);
        matches!(v.base, Base::Registers(_)) && names.iter().any(|n| n == var)
    };
    body.iter().any(|s| match &s.op {
        Op::Copy { src, dst, .. } => by_var(src) || by_var(dst),
        Op::Gemm { a, b, c } | Op::Mma { a, b, c, .. } => by_var(a) || by_var(b) || by_var(c),
        Op::Assign { dst, value } => {
            let mut views = vec![dst];
            value.tensors(&mut views);
            views.into_iter().any(by_var)
        }
        Op::Fill { dst, .. } => by_var(dst),
        Op::For { body, .. } => indexes_registers(body, var),
        Op::If {
            then, otherwise, ..
        } => indexes_registers(then, var) || indexes_registers(otherwise, var),
        Op::Pipeline {
            load, body, turn, ..
        } => {
            indexes_registers(load, var)
                || indexes_registers(body, var)
                || turn
                    .as_ref()
                    .is_some_and(|t| indexes_registers(&t.after, var))
        }
        Op::ReduceBlocks { body, .. } => indexes_registers(body, var),
        Op::Sync | Op::AsyncFence | Op::AsyncWait(_) | Op::CopyTma { .. } | Op::Prefetch { .. } => {
            false
        }
    })
}
