//! The integer work of a TMA producer's trip: in: the pipeline's loop and
//! its load block; out: the block's coordinates computed with few
//! divisions. The producer is one thread, and every trip's coordinates
//! lie on its way from one stage's release to the next load: on the H200
//! the divisions of a persistent GEMM's tile walk kept it busy 70-90% of
//! each trip, and it fell behind the consumers wherever a kernel added to
//! them (docs/performance.md, version 38). Two ways out, for any
//! expression:
//! - values of the counter's quotient alone (`i / kt`: a tile's row and
//!   column) are computed where the remainder is 0 and carried in phis;
//! - every other division by a run-time value fixed across the loop
//!   remembers its last quotient and remainder: the same dividend reuses
//!   them, the next one steps the remainder (a stream-K k-tile running on
//!   through its tile), and only a jump divides. (Not by a divisor that
//!   changes, such as a grouped walk's rows in the last group: a third
//!   value carried made stream-K's producer spill in its 40 registers.)
//!
//! Not the consumers': the remembered divisions in their trips (phis and
//! a branch in the loop of wgmmas) took a kernel with stream-K's
//! arithmetic from 0.9 to 0.75 of cuBLAS on the H200.

use super::{IntDivision, KernelBuilder};
use crate::Result;
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{IntValue, PhiValue};
use tilec::ir::{Inst, IntDef, KernelIr};
use tilec_layout::int::Op as IntOp;

/// What a trip carries from the last: the phis made at the top of the
/// loop's body, before its first instruction.
pub(super) struct TripPlan<'ctx> {
    per_tile: Vec<PerTile<'ctx>>,
    divisions: Vec<Division<'ctx>>,
}

/// The values of one quotient, recomputed where remainder `r` is 0.
struct PerTile<'ctx> {
    r: IntValue<'ctx>,
    /// Every value of the quotient alone, in definition order.
    computed: Vec<usize>,
    /// Those the rest of the trip reads, each with its carried value.
    read: Vec<(usize, PhiValue<'ctx>)>,
}

/// `a / d` and `a % d` (their ids, where the kernel has them) with the
/// last trip's quotient and remainder (its dividend is `q * d + r`).
struct Division<'ctx> {
    a: usize,
    d: usize,
    /// Operands not proved not negative: divided signed, as the executor
    /// does, and stepped only from a dividend not negative.
    signed: bool,
    /// Divided in 32 bits: the quotient and the remainder both are.
    narrow: bool,
    div: Option<usize>,
    rem: Option<usize>,
    last: [PhiValue<'ctx>; 2],
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// The phis of loop `id`'s producer trip over `load`, whose counter's
    /// quotients (with their remainders' phis) are `quotients`; `pre` is
    /// the block the loop is entered from.
    pub(super) fn plan_trip(
        &mut self,
        id: usize,
        load: &[Inst],
        quotients: &[(Option<usize>, PhiValue<'ctx>)],
        pre: BasicBlock<'ctx>,
    ) -> Result<TripPlan<'ctx>> {
        let i64t = self.ctx.i64_type();
        let reads = TripReads::of(self.ir, load);
        let mut per_tile = Vec::new();
        let mut quotiented = vec![false; self.ir.ints.len()];
        for (q, r) in quotients {
            let Some(q) = *q else { continue };
            let (computed, read) = per_quotient(self.ir, id, q, &reads);
            computed.iter().for_each(|&k| quotiented[k] = true);
            let read = read
                .into_iter()
                .map(|k| {
                    let p = self.b.build_phi(i64t, "")?;
                    p.add_incoming(&[(&i64t.get_poison(), pre)]);
                    Ok((k, p))
                })
                .collect::<Result<Vec<_>>>()?;
            if !read.is_empty() {
                let r = r.as_basic_value().into_int_value();
                per_tile.push(PerTile { r, computed, read });
            }
        }
        let mut divisions: Vec<Division> = Vec::new();
        for (k, a, d, op) in divisions_of(self.ir, id, &reads) {
            if quotiented[k] {
                continue;
            }
            let at = match divisions.iter().position(|v| v.a == a && v.d == d) {
                Some(at) => at,
                None => {
                    // Quotient and remainder -1: their dividend is -d - 1
                    // and the next -d, which no index is, so the first
                    // trip divides.
                    let start = i64t.const_all_ones();
                    let mut last = [None, None];
                    for l in &mut last {
                        let p = self.b.build_phi(i64t, "")?;
                        p.add_incoming(&[(&start, pre)]);
                        *l = Some(p);
                    }
                    let last = last.map(|l| l.expect("made"));
                    divisions.push(Division {
                        a,
                        d,
                        signed: !(self.non_negative[a] && self.non_negative[d]),
                        narrow: true,
                        div: None,
                        rem: None,
                        last,
                    });
                    divisions.len() - 1
                }
            };
            divisions[at].narrow &= self.ir.ints[k].narrow;
            match op {
                IntOp::Div => divisions[at].div = Some(k),
                _ => divisions[at].rem = Some(k),
            }
        }
        Ok(TripPlan {
            per_tile,
            divisions,
        })
    }

    /// Emits the plan's values at the top of a trip; returns each phi with
    /// the value it carries to the next trip.
    pub(super) fn trip_values(
        &mut self,
        plan: TripPlan<'ctx>,
    ) -> Result<Vec<(PhiValue<'ctx>, IntValue<'ctx>)>> {
        let mut carried = Vec::new();
        for t in plan.per_tile {
            carried.extend(self.per_tile(t)?);
        }
        for d in plan.divisions {
            carried.extend(self.remembered_division(d)?);
        }
        Ok(carried)
    }

    fn per_tile(&mut self, t: PerTile<'ctx>) -> Result<Vec<(PhiValue<'ctx>, IntValue<'ctx>)>> {
        let i64t = self.ctx.i64_type();
        // What they are computed from, emitted ahead of the branch so that
        // it dominates the rest of the trip.
        let from = t
            .computed
            .iter()
            .flat_map(|&k| self.ir.operands(k))
            .filter(|o| !t.computed.contains(o))
            .collect();
        self.values(from)?;
        let fresh = self
            .b
            .build_int_compare(IntPredicate::EQ, t.r, i64t.const_zero(), "")?;
        let [compute_end, before] = self.when(fresh, "per_tile", |k| {
            for &id in &t.computed {
                let v = k.int_value(&k.ir.ints[id])?;
                k.ints.insert(id, v);
            }
            Ok(())
        })?;
        let mut out = Vec::new();
        for (id, carried) in &t.read {
            let now = self.b.build_phi(i64t, "")?;
            let old = carried.as_basic_value().into_int_value();
            now.add_incoming(&[(&self.ints[id], compute_end), (&old, before)]);
            out.push((*carried, now.as_basic_value().into_int_value()));
        }
        // Only the phis dominate the rest of the trip.
        for id in &t.computed {
            self.ints.remove(id);
        }
        for ((id, _), (_, now)) in t.read.iter().zip(&out) {
            self.ints.insert(*id, *now);
        }
        Ok(out)
    }

    fn remembered_division(
        &mut self,
        v: Division<'ctx>,
    ) -> Result<Vec<(PhiValue<'ctx>, IntValue<'ctx>)>> {
        let i64t = self.ctx.i64_type();
        let one = i64t.const_int(1, false);
        self.values(vec![v.a, v.d])?;
        let (a, d) = (self.ints[&v.a], self.ints[&v.d]);
        let [lq, lr] = v.last.map(|p| p.as_basic_value().into_int_value());
        let b = &self.b;
        // Wrapping arithmetic: the first trip's -1, -1 is no index.
        let la = b.build_int_add(b.build_int_mul(lq, d, "")?, lr, "")?;
        let mut same = b.build_int_compare(IntPredicate::EQ, a, la, "")?;
        let la1 = b.build_int_add(la, one, "")?;
        let mut next = b.build_int_compare(IntPredicate::EQ, a, la1, "")?;
        // Stepping is exact from a dividend not negative: where that is not
        // proved, it is tested (signed quotients and remainders do not step
        // across zero, nor is the first trip's -1, -1 one of them).
        if v.signed {
            let known = b.build_int_compare(IntPredicate::SGE, la, i64t.const_zero(), "")?;
            same = b.build_and(same, known, "")?;
            next = b.build_and(next, known, "")?;
        }
        let r1 = b.build_int_add(lr, one, "")?;
        let wrap = b.build_int_compare(IntPredicate::EQ, r1, d, "")?;
        let stepped_q = b.build_select(wrap, b.build_int_add(lq, one, "")?, lq, "")?;
        let stepped_r = b.build_select(wrap, i64t.const_zero(), r1, "")?;
        let q_known = b.build_select(same, lq, stepped_q.into_int_value(), "")?;
        let r_known = b.build_select(same, lr, stepped_r.into_int_value(), "")?;
        let jump = b.build_not(b.build_or(same, next, "")?, "")?;
        let mut divided = None;
        let [divide_end, before] = self.when(jump, "divide", |k| {
            let how = IntDivision {
                unsigned: !v.signed,
                narrow: v.narrow,
            };
            let q = k.divide(IntOp::Div, a, d, how)?;
            let r =
                k.b.build_int_nsw_sub(a, k.b.build_int_nsw_mul(q, d, "")?, "")?;
            divided = Some((q, r));
            Ok(())
        })?;
        let (q, r) = divided.expect("emitted");
        let meet =
            |k: &Self, new: IntValue<'ctx>, known: IntValue<'ctx>| -> Result<IntValue<'ctx>> {
                let p = k.b.build_phi(i64t, "")?;
                p.add_incoming(&[(&new, divide_end), (&known, before)]);
                Ok(p.as_basic_value().into_int_value())
            };
        let q = meet(self, q, q_known.into_int_value())?;
        let r = meet(self, r, r_known.into_int_value())?;
        for (id, value) in [(v.div, q), (v.rem, r)] {
            if let Some(id) = id {
                self.ints.insert(id, value);
            }
        }
        Ok(v.last.into_iter().zip([q, r]).collect())
    }
}

/// The values of loop `id` that its trip computes (`reads`) from the
/// counter's quotient `q` and values fixed across the loop alone: (all of
/// them, in definition order; those an instruction or another value reads).
fn per_quotient(ir: &KernelIr, id: usize, q: usize, reads: &TripReads) -> (Vec<usize>, Vec<usize>) {
    let TripReads { used, all } = reads;
    let mut inside = vec![false; ir.ints.len()];
    let mut computed = Vec::new();
    for &k in all {
        let v = &ir.ints[k];
        if v.scope != Some(id) || k == q || matches!(v.def, IntDef::LoopVar(_)) {
            continue;
        }
        let fixed = |o: usize| o == q || inside[o] || fixed_across(ir, id, o);
        if ir.operands(k).into_iter().all(fixed) {
            inside[k] = true;
            computed.push(k);
        }
    }
    let read = computed
        .iter()
        .copied()
        .filter(|&k| {
            used.contains(&k)
                || all
                    .iter()
                    .any(|&u| !inside[u] && ir.operands(u).contains(&k))
        })
        .collect();
    (computed, read)
}

/// The divisions and remainders loop `id`'s trip computes (`reads`) of a
/// value of the loop by a run-time value fixed across it: (the value,
/// dividend, divisor, operation), in definition order. The counter's own
/// are carried by the loop already.
fn divisions_of(ir: &KernelIr, id: usize, reads: &TripReads) -> Vec<(usize, usize, usize, IntOp)> {
    reads
        .all
        .iter()
        .copied()
        .filter(|&k| ir.ints[k].scope == Some(id))
        .filter_map(|k| match ir.ints[k].def {
            IntDef::Bin(op @ (IntOp::Div | IntOp::Mod), a, d)
                if !matches!(ir.ints[a].def, IntDef::LoopVar(_)) && fixed_divisor(ir, id, d) =>
            {
                Some((k, a, d, op))
            }
            _ => None,
        })
        .collect()
}

/// The values a trip's instructions read before their branches (`used`),
/// and those with every value they are computed from (`all`, in
/// definition order).
struct TripReads {
    used: Vec<usize>,
    all: Vec<usize>,
}

impl TripReads {
    fn of(ir: &KernelIr, body: &[Inst]) -> Self {
        let mut used = Vec::new();
        body.iter()
            .for_each(|i| i.ints_used_before_branches(&mut used));
        let all = ir.with_operands(used.clone());
        TripReads { used, all }
    }
}

/// Whether value `o` is the same on every trip of loop `id` (its own
/// counter, scoped to it, is not).
fn fixed_across(ir: &KernelIr, id: usize, o: usize) -> bool {
    ir.ints[o].scope != Some(id)
}

/// Whether `d` is a divisor the loop steps or remembers rather than LLVM
/// (which divides by a constant with a multiply and shifts): a run-time
/// value fixed across loop `id`.
pub(super) fn fixed_divisor(ir: &KernelIr, id: usize, d: usize) -> bool {
    fixed_across(ir, id, d) && !matches!(ir.ints[d].def, IntDef::Const(_))
}
