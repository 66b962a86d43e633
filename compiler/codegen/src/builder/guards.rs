//! A guard's tests in few registers. In: a guard, `min`s of tests `0 <= a
//! < e`. Out: one i1 per test, made once per loop body and branch.
//!
//! A guard's coordinate is mostly a part the whole block shares (its
//! tile's corner, a k-tile's start) plus a part of `thread.x` and constants
//! alone (the thread's place in the tile): `128 * block.x + 4 * (t % 16) +
//! 64`. Tested as it is written, each coordinate is a 64-bit value per
//! thread that lives as long as its test (through a main loop, for the
//! loads' row tests); a guarded GEMM's tests then held the registers that
//! made it spill inside its loop (sgemm_tn_sm80's guarded entry: 128 bytes,
//! 10 reloads a k-tile). Tested as `t < e - u`, the block's part `u` goes
//! to the limit, which is the same for every thread (ptxas keeps it in a
//! uniform register), and the thread's part `t`, bounded by the block size,
//! is a 32-bit value: a fragment's 8 rows of C are one limit and 8 small
//! sums of one register and a constant. Only in entries with a gemm, whose
//! accumulators hold the registers; elsewhere the tests are as written.

use super::KernelBuilder;
use crate::Result;
use foldhash::{HashMap, HashMapExt};
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use tilec::ir::{InstKind, IntDef, IntId, KernelIr};
use tilec_layout::int::Op as IntOp;

/// The tests made so far in the current loop body or branch (one made in
/// a branch does not dominate what follows it, and one made before a loop
/// would live through it), and what the kernel's values are made of.
pub(super) struct Tests<'ctx> {
    /// `value > 0` as an i1, by value.
    predicates: HashMap<IntId, IntValue<'ctx>>,
    /// A sum of thread parts in 32 bits, by its terms.
    thread_sums: HashMap<Vec<IntId>, IntValue<'ctx>>,
    /// A test's limit, by the block's parts and the extent.
    limits: HashMap<(Vec<IntId>, IntId), IntValue<'ctx>>,
    /// The parts of the kernel's values where its tests are split: only
    /// where the entry holds accumulators (a gemm on FMAs or tensor
    /// cores). A kernel without them has registers to spare, and the split
    /// cost the row kernels' guarded and unaligned entries time (gemv at
    /// 8191 x 8191 0.096 -> 0.111 ms, reduce_rows and softmax 2%;
    /// docs/performance.md, version 56).
    parts: Option<Parts>,
}

/// What each value of a kernel is made of.
struct Parts {
    /// Whether it names `thread.x` (a loop counter does not, whatever its
    /// bounds: a part of the block's that varies by thread only makes the
    /// limit vary by thread too).
    on_thread: Vec<bool>,
    /// Whether it divides by a run-time value, or its operands do (a call
    /// in SASS, whose results ptxas keeps per thread).
    divides: Vec<bool>,
    /// For a value of `thread.x` and constants alone: its range over the
    /// block's threads, where it lies within `0..2^31` (and its operands'
    /// too), and it is at most [`MAX_DEPTH`] operations deep.
    thread_range: Vec<Option<(i64, i64)>>,
}

impl Parts {
    /// The parts of `ints` (each operand before the values it makes, as
    /// the IR's verifier holds), in a block of `threads` threads.
    fn of(ints: &[tilec::ir::IntValue], threads: i64) -> Parts {
        let n = ints.len();
        let (mut on_thread, mut range) = (vec![false; n], vec![None; n]);
        // A thread part is emitted recursively: its depth is bounded.
        let mut depth = vec![0u32; n];
        let mut divides = vec![false; n];
        for (i, v) in ints.iter().enumerate() {
            let (thread, r) = match v.def {
                IntDef::ThreadIdx => (true, Some((0, threads - 1))),
                IntDef::Const(c) => (false, Some((c, c))),
                IntDef::BlockIdx(_) | IntDef::Extent(_) | IntDef::LoopVar(_) => (false, None),
                IntDef::Bin(op, a, b) => {
                    depth[i] = 1 + depth[a].max(depth[b]);
                    let by_value = !matches!(ints[b].def, IntDef::Const(_));
                    let divide = matches!(op, IntOp::Div | IntOp::Mod | IntOp::CeilDiv);
                    divides[i] = divide && by_value || divides[a] || divides[b];
                    let r = range[a]
                        .zip(range[b])
                        .and_then(|(x, y)| bin_range(op, x, y));
                    (on_thread[a] || on_thread[b], r)
                }
                IntDef::Below(a, b) | IntDef::Compare(_, a, b) => {
                    (on_thread[a] || on_thread[b], None)
                }
                IntDef::Swizzle(a, _) => (on_thread[a], None),
            };
            on_thread[i] = thread;
            range[i] = r.filter(|&(lo, hi)| lo >= 0 && hi < 1 << 31 && depth[i] <= MAX_DEPTH);
        }
        Parts {
            on_thread,
            divides,
            thread_range: range,
        }
    }

    /// `a`'s terms split into those of the block (`u`) and those of the
    /// thread alone (`t`), where every term of `t` has a range within 32
    /// bits and there is one; `None` otherwise, or past [`MAX_TERMS`].
    fn split(&self, ints: &[tilec::ir::IntValue], a: IntId) -> Option<(Vec<IntId>, Vec<IntId>)> {
        let (mut u, mut t, mut open) = (Vec::new(), Vec::new(), vec![a]);
        while let Some(x) = open.pop() {
            if u.len() + t.len() + open.len() > MAX_TERMS {
                return None;
            }
            match ints[x].def {
                IntDef::Bin(IntOp::Add, p, q) if self.on_thread[x] => open.extend([p, q]),
                // A constant joins the thread's part, so that the tests of
                // a fragment's rows (`r + 1`, `r + 64`) share one limit.
                IntDef::Const(c) if c >= 0 => t.push(x),
                _ if !self.on_thread[x] => u.push(x),
                _ => {
                    self.thread_range[x]?;
                    t.push(x);
                }
            }
        }
        t.sort_unstable();
        // The sum's range within 32 bits too.
        let hi = t
            .iter()
            .try_fold(0i64, |s, &x| s.checked_add(self.thread_range[x]?.1))?;
        let thread = t.iter().any(|&x| self.on_thread[x]);
        (thread && hi < 1 << 31).then_some((u, t))
    }
}

impl<'ctx> Tests<'ctx> {
    pub(super) fn new(ir: &KernelIr) -> Tests<'ctx> {
        Tests {
            predicates: HashMap::new(),
            thread_sums: HashMap::new(),
            limits: HashMap::new(),
            // A pipeline's producer warpgroup comes after the block's
            // threads: `thread.x` ranges over all that are launched.
            parts: accumulates(&ir.body).then(|| Parts::of(&ir.ints, ir.launched_threads())),
        }
    }

    /// Forgets the tests made: the code that follows is not dominated by them.
    pub(super) fn clear(&mut self) {
        self.predicates.clear();
        self.thread_sums.clear();
        self.limits.clear();
    }
}

/// Whether `body` has a gemm (FMAs, mma.sync or wgmma).
fn accumulates(body: &[tilec::ir::Inst]) -> bool {
    let mut found = false;
    tilec::ir::for_each_atom(body, &mut |i| {
        found |= matches!(
            i.kind,
            InstKind::Mma { .. } | InstKind::MmaSync { .. } | InstKind::Wgmma { .. }
        );
    });
    found
}

/// The most terms a split coordinate has (a sum of shared sums has as many
/// as it has paths; index coordinates have a handful).
const MAX_TERMS: usize = 64;

/// The deepest thread part a test computes in 32 bits (deeper ones are
/// tested as they are written); index expressions are a few levels deep.
const MAX_DEPTH: u32 = 32;

/// The range of `op` over operands in ranges `a..=b` and `c..=d`, all
/// within `0..2^31`, where it is one.
fn bin_range(op: IntOp, (a, b): (i64, i64), (c, d): (i64, i64)) -> Option<(i64, i64)> {
    Some(match op {
        IntOp::Add => (a + c, b + d),
        IntOp::Sub if a >= d => (a - d, b - c),
        IntOp::Mul => (a * c, b.checked_mul(d)?),
        IntOp::Div if c > 0 => (a / d, b / c),
        IntOp::Mod if c > 0 => (0, b.min(d - 1)),
        IntOp::Min => (a.min(c), b.min(d)),
        IntOp::Max => (a.max(c), b.max(d)),
        _ => return None,
    })
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// `value > 0` as an i1, made once per value and loop body. A guard is
    /// a `min` of per-mode tests (`below m, M` and `below n, N`): its test
    /// is the tests joined, each made once, so an 8x8 fragment needs 16
    /// comparisons, not 64.
    pub(super) fn positive(&mut self, id: IntId) -> Result<IntValue<'ctx>> {
        if let Some(p) = self.tests.predicates.get(&id) {
            return Ok(*p);
        }
        let p = match self.ir.ints[id].def {
            IntDef::Bin(IntOp::Min, x, y) => {
                let (px, py) = (self.positive(x)?, self.positive(y)?);
                self.b.build_and(px, py, "")?
            }
            IntDef::Below(a, e) => self.below_test(a, e)?,
            _ => {
                let zero = self.ctx.i64_type().const_zero();
                self.b
                    .build_int_compare(IntPredicate::SGT, self.ints[&id], zero, "")?
            }
        };
        self.tests.predicates.insert(id, p);
        Ok(p)
    }

    /// `0 <= a < e` as an i1: `t < e - u` where `a` is a block's part `u`
    /// and a thread's part `t` (both proved not negative, `e` too), else
    /// one unsigned comparison of `a`, which a negative `a` fails too.
    fn below_test(&mut self, a: IntId, e: IntId) -> Result<IntValue<'ctx>> {
        let split = self.tests.parts.as_ref().and_then(|parts| {
            let (u, t) = parts.split(&self.ir.ints, a)?;
            let fit = u
                .iter()
                .chain([&e])
                .all(|&x| self.non_negative[x] && !parts.divides[x]);
            (fit && !parts.on_thread[e]).then_some((u, t))
        });
        let Some((u, t)) = split else {
            self.values(vec![a, e])?;
            return self.below(a, e);
        };
        let limit = self.limit(u, e)?;
        let t = self.thread_sum(t)?;
        let t = self.b.build_int_z_extend(t, self.ctx.i64_type(), "")?;
        Ok(self.b.build_int_compare(IntPredicate::SLT, t, limit, "")?)
    }

    /// `e` less the block's parts `u`, made once per loop body. (Clamped
    /// into 32 bits for a 32-bit comparison, its values made ptxas spill in
    /// sgemm_tn_sm80's main loop again.)
    fn limit(&mut self, mut u: Vec<IntId>, e: IntId) -> Result<IntValue<'ctx>> {
        u.sort_unstable();
        let key = (u, e);
        if let Some(v) = self.tests.limits.get(&key) {
            return Ok(*v);
        }
        self.values(key.0.iter().copied().chain([e]).collect())?;
        let mut limit = self.ints[&e];
        for x in &key.0 {
            limit = self.b.build_int_sub(limit, self.ints[x], "")?;
        }
        self.tests.limits.insert(key, limit);
        Ok(limit)
    }

    /// The sum of thread parts `terms` in 32 bits (each term and the sum
    /// proved within `0..2^31`).
    fn thread_sum(&mut self, terms: Vec<IntId>) -> Result<IntValue<'ctx>> {
        if let Some(v) = self.tests.thread_sums.get(&terms) {
            return Ok(*v);
        }
        let mut sum = None;
        for &x in &terms {
            let v = self.thread_value(x)?;
            sum = Some(match sum {
                Some(s) => self.b.build_int_nuw_add(s, v, "")?,
                None => v,
            });
        }
        let sum = sum.expect("a thread part has terms");
        self.tests.thread_sums.insert(terms, sum);
        Ok(sum)
    }

    /// Value `x` of `thread.x` and constants in 32 bits (its range and its
    /// operands' proved within `0..2^31`, so no operation wraps), by the
    /// builder's own integer operations.
    fn thread_value(&mut self, x: IntId) -> Result<IntValue<'ctx>> {
        if let Some(v) = self.tests.thread_sums.get(&vec![x]) {
            return Ok(*v);
        }
        let i32t = self.ctx.i32_type();
        let v = match self.ir.ints[x].def {
            IntDef::Const(c) => i32t.const_int(c as u64, false),
            IntDef::ThreadIdx => {
                let tid = self.thread_index()?;
                self.b.build_int_truncate(tid, i32t, "")?
            }
            IntDef::Bin(op, p, q) => {
                let (p, q) = (self.thread_value(p)?, self.thread_value(q)?);
                // Every operand not negative: quotients unsigned. (No
                // rounded-up quotient is given a range.)
                let how = super::IntDivision {
                    unsigned: true,
                    narrow: false,
                };
                self.int_bin(op, p, q, how)?
            }
            _ => unreachable!("a thread part is of thread.x and constants"),
        };
        self.tests.thread_sums.insert(vec![x], v);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tilec::ir::IntValue;

    fn value(def: IntDef) -> IntValue {
        IntValue {
            def,
            scope: None,
            narrow: false,
        }
    }

    proptest! {
        /// Every value given a range lies in it for every thread of the
        /// block (its operands too, as they have ranges), so that its 32-bit
        /// unsigned computation is the value.
        #[test]
        fn a_thread_part_lies_in_its_range_for_every_thread(
            threads in 1i64..600,
            steps in proptest::collection::vec((0usize..10, any::<u16>(), any::<u16>(), -3i64..300), 1..24),
        ) {
            let mut ints = vec![value(IntDef::ThreadIdx)];
            for (pick, a, b, c) in steps {
                let n = ints.len();
                let def = match pick {
                    0 => IntDef::Const(c),
                    1 => IntDef::ThreadIdx,
                    k => IntDef::Bin(IntOp::ALL[k - 2], a as usize % n, b as usize % n),
                };
                ints.push(value(def));
            }
            let parts = Parts::of(&ints, threads);
            for t in 0..threads {
                let at = values(&ints, t, 0, 1);
                for (i, r) in parts.thread_range.iter().enumerate() {
                    if let Some((lo, hi)) = r {
                        let x = at[i].expect("a value with a range is defined");
                        prop_assert!(*lo <= x && x <= *hi, "value {i} = {x} outside {lo}..={hi}");
                    }
                }
            }
            prop_assert!(parts.on_thread[0] && !parts.divides[0]);
        }
    }

    /// The value of each of `ints` in thread `t` of block `b`, extent 0
    /// being `n` (`None` where an operation has none).
    fn values(ints: &[IntValue], t: i64, b: i64, n: i64) -> Vec<Option<i64>> {
        let mut at: Vec<Option<i64>> = Vec::new();
        for v in ints {
            let x = match v.def {
                IntDef::ThreadIdx => Some(t),
                IntDef::BlockIdx(_) => Some(b),
                IntDef::Extent(_) => Some(n),
                IntDef::Const(c) => Some(c),
                IntDef::Bin(op, p, q) => at[p]
                    .zip(at[q])
                    .and_then(|(x, y)| tilec_layout::int::apply(op, x, y)),
                _ => None,
            };
            at.push(x);
        }
        at
    }

    proptest! {
        /// A split coordinate is the sum of its block's and its thread's
        /// terms, every thread term in its range, in every thread.
        #[test]
        fn a_split_coordinate_is_its_terms_sum(
            threads in 1i64..300,
            block in 0i64..1000,
            extent in 1i64..100_000,
            steps in proptest::collection::vec((0usize..12, any::<u16>(), any::<u16>(), -3i64..300), 1..24),
        ) {
            let mut ints = vec![value(IntDef::ThreadIdx), value(IntDef::BlockIdx(0))];
            for (pick, a, b, c) in steps {
                let n = ints.len();
                let def = match pick {
                    0 => IntDef::Const(c),
                    1 => IntDef::Extent(0),
                    // Sums most often: a coordinate is one.
                    2..=4 => IntDef::Bin(IntOp::Add, a as usize % n, b as usize % n),
                    k => IntDef::Bin(IntOp::ALL[k - 4], a as usize % n, b as usize % n),
                };
                ints.push(value(def));
            }
            let parts = Parts::of(&ints, threads);
            for a in 0..ints.len() {
                let Some((u, t)) = parts.split(&ints, a) else { continue };
                prop_assert!(t.iter().any(|&x| parts.on_thread[x]));
                prop_assert!(u.iter().all(|&x| !parts.on_thread[x]));
                for thread in [0, threads / 2, threads - 1] {
                    let at = values(&ints, thread, block, extent);
                    let terms: Option<Vec<i64>> = u.iter().chain(&t).map(|&x| at[x]).collect();
                    let (Some(whole), Some(terms)) = (at[a], terms) else { continue };
                    prop_assert_eq!(whole, terms.iter().sum::<i64>());
                    for &x in &t {
                        let (lo, hi) = parts.thread_range[x].unwrap();
                        prop_assert!((lo..=hi).contains(&at[x].unwrap()));
                    }
                }
            }
        }
    }

    /// A quotient by a value that is no constant divides at run time, and
    /// so does what is made of it; a quotient by a constant does not.
    #[test]
    fn a_quotient_by_a_run_time_value_is_marked_as_dividing() {
        let ints = [
            value(IntDef::BlockIdx(0)),
            value(IntDef::Extent(0)),
            value(IntDef::Const(4)),
            value(IntDef::Bin(IntOp::Div, 0, 2)),
            value(IntDef::Bin(IntOp::Mod, 0, 1)),
            value(IntDef::Bin(IntOp::Add, 4, 3)),
        ];
        let parts = Parts::of(&ints, 128);
        assert_eq!(parts.divides, [false, false, false, false, true, true]);
        assert!(parts.on_thread.iter().all(|&t| !t));
    }
}
