//! Control flow: loops (rotated, registers and a counter's quotient and
//! remainder carried in phis), ifs (a branch each, registers meeting in
//! phis), and the values each computes where it is first needed.

use super::{KernelBuilder, constant, elem_type, pipeline, trip};
use crate::{CodegenError, Result};
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{BasicValueEnum, PhiValue};
use tilec::ir::{Inst, InstKind, IntDef, KernelIr, Space, for_each_atom};
use tilec_layout::int::Op as IntOp;

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// Emits the values `insts` use before any branch (with their
    /// operands) that live in the open loops, or at the entry, and are not
    /// emitted yet. A value only a branch needs is computed in that branch,
    /// not on every iteration (a loop's), nor held through the loop (an
    /// entry value: `KernelIr::entry_values_of` leaves it to the branch).
    pub(super) fn values_for(&mut self, insts: &[Inst]) -> Result<()> {
        let mut used = Vec::new();
        insts
            .iter()
            .for_each(|i| i.ints_used_before_branches(&mut used));
        self.values(used)
    }

    /// Emits the values `used` (with their operands) that live in the open
    /// loops, or at the entry, and are not emitted yet; an emitted value's
    /// operands are not looked at (a trip's carried tile coordinates stand
    /// for what they were computed from: an emitter that reads a value's
    /// operands, as a guard's test does, emits them itself).
    pub(super) fn values(&mut self, used: Vec<usize>) -> Result<()> {
        let ints = &self.ints;
        for id in self.ir.operands_beyond(used, |k| ints.contains_key(&k)) {
            let v = &self.ir.ints[id];
            let open = v.scope.is_none_or(|l| self.open_loops.contains(&l));
            if open && !matches!(v.def, IntDef::LoopVar(_)) {
                let value = self.int_value(v)?;
                self.ints.insert(id, value);
            }
        }
        Ok(())
    }

    /// `then` where `cond` is not 0, else `otherwise`; the registers
    /// either branch writes meet in phis after them.
    pub(super) fn if_(&mut self, cond: usize, then: &[Inst], otherwise: &[Inst]) -> Result<()> {
        let zero = self.ctx.i64_type().const_zero();
        let holds = self
            .b
            .build_int_compare(IntPredicate::NE, self.ints[&cond], zero, "")?;
        self.branches(holds, &mut |b, taken| {
            let insts = if taken { then } else { otherwise };
            b.values_for(insts)?;
            b.insts(insts)
        })
    }

    /// A branch on `holds` (an i1), each side emitted by `emit` (told
    /// which), the registers either side writes meeting in phis after.
    pub(super) fn branches(
        &mut self,
        holds: inkwell::values::IntValue<'ctx>,
        emit: &mut dyn FnMut(&mut Self, bool) -> Result<()>,
    ) -> Result<()> {
        let then_b = self.ctx.append_basic_block(self.func, "if.then");
        let else_b = self.ctx.append_basic_block(self.func, "if.else");
        let join = self.ctx.append_basic_block(self.func, "if.end");
        self.b.build_conditional_branch(holds, then_b, else_b)?;
        let before = self.registers.clone();
        let mut ends = Vec::new();
        // Values a branch computes do not dominate the other, nor the join.
        let known: std::collections::HashSet<usize> = self.ints.keys().copied().collect();
        for (block, taken) in [(then_b, true), (else_b, false)] {
            self.registers = before.clone();
            // Loads and tests of the other branch (or before) may not dominate here.
            self.shared_loads.clear();
            self.tests.clear();
            self.ints.retain(|k, _| known.contains(k));
            self.b.position_at_end(block);
            emit(self, taken)?;
            self.b.build_unconditional_branch(join)?;
            let end = self.b.get_insert_block().expect("positioned");
            ends.push((end, std::mem::take(&mut self.registers)));
        }
        self.b.position_at_end(join);
        self.ints.retain(|k, _| known.contains(k));
        let ends = <[_; 2]>::try_from(ends)
            .map_err(|_| CodegenError::Llvm("an if has two branches".into()))?;
        self.merge_registers(ends)?;
        self.shared_loads.clear();
        self.tests.clear();
        Ok(())
    }

    /// At a join of two ways in (each its last block and its registers):
    /// the registers, a phi where the two differ.
    fn merge_registers(
        &mut self,
        [(a_end, a_regs), (b_end, b_regs)]: [(
            inkwell::basic_block::BasicBlock<'ctx>,
            Vec<Vec<Option<inkwell::values::BasicValueEnum<'ctx>>>>,
        ); 2],
    ) -> Result<()> {
        self.registers = a_regs.clone();
        for (r, (a, b)) in a_regs.iter().zip(&b_regs).enumerate() {
            for (k, (x, y)) in a.iter().zip(b).enumerate() {
                if x == y {
                    continue;
                }
                let elem = self.ir.registers[r].elem;
                let unset = constant(self.ctx, elem, 0.0);
                let (x, y) = (x.unwrap_or(unset), y.unwrap_or(unset));
                let p = self.b.build_phi(x.get_type(), "")?;
                p.add_incoming(&[(&x, a_end), (&y, b_end)]);
                self.registers[r][k] = Some(p.as_basic_value());
            }
        }
        Ok(())
    }

    /// `emit` from the block the builder is at, then a block `name` that
    /// joins it with `other` (a block with no terminator yet, whose way in
    /// left the registers `other_regs`), the registers the two ways wrote
    /// meeting in phis there. The integers computed so far dominate both
    /// ways; those `emit` computes, not the join.
    pub(super) fn join_after(
        &mut self,
        other: inkwell::basic_block::BasicBlock<'ctx>,
        other_regs: Vec<Vec<Option<inkwell::values::BasicValueEnum<'ctx>>>>,
        name: &str,
        emit: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let known: std::collections::HashSet<usize> = self.ints.keys().copied().collect();
        let join = self.ctx.append_basic_block(self.func, name);
        self.shared_loads.clear();
        self.tests.clear();
        emit(self)?;
        self.b.build_unconditional_branch(join)?;
        let end = self.b.get_insert_block().expect("positioned");
        self.b.position_at_end(other);
        self.b.build_unconditional_branch(join)?;
        self.b.position_at_end(join);
        self.ints.retain(|k, _| known.contains(k));
        self.merge_registers([(end, self.registers.clone()), (other, other_regs)])?;
        self.shared_loads.clear();
        self.tests.clear();
        Ok(())
    }

    /// A loop in rotated form (a test before it, then one at the end of
    /// each iteration), which ptxas schedules best. The counter and the
    /// registers the body writes are phis in the body, and again at the
    /// exit, reached from before the loop (no iteration) or from its end.
    /// A pipeline's loop waits for its stage before the body (`role`).
    pub(super) fn loop_(
        &mut self,
        id: usize,
        name: &str,
        start: usize,
        end: usize,
        body: &[Inst],
        role: Option<pipeline::Role>,
    ) -> Result<()> {
        let i64t = self.ctx.i64_type();
        let (first, last) = (self.ints[&start], self.ints[&end]);
        let pre = self.b.get_insert_block().expect("positioned");
        let bodyb = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.body"));
        let exit = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.exit"));
        // The counter's quotient and remainder by a value fixed across the
        // loop (`i / kt`, `i % kt`): carried as phis, an add and a compare an
        // iteration instead of a division; for a loop from 0, where both
        // start at 0 (no division ahead of the trip test, nothing negative).
        let mut steps = Vec::new();
        if self.ir.ints[start].def == IntDef::Const(0) {
            for (q, r, d) in counter_divisions(self.ir, id) {
                if let Some(&dv) = self.ints.get(&d) {
                    steps.push((q, r, dv, i64t.const_zero(), i64t.const_zero()));
                }
            }
        }
        let any = self
            .b
            .build_int_compare(IntPredicate::SLT, first, last, "")?;
        self.b.build_conditional_branch(any, bodyb, exit)?;
        self.b.position_at_end(bodyb);
        let phi = self.b.build_phi(i64t, name)?;
        phi.add_incoming(&[(&first, pre)]);
        let mut stepped = Vec::new();
        for (q, r, dv, q0, r0) in steps {
            let (pq, pr) = (self.b.build_phi(i64t, "")?, self.b.build_phi(i64t, "")?);
            pq.add_incoming(&[(&q0, pre)]);
            pr.add_incoming(&[(&r0, pre)]);
            stepped.push((q, r, dv, pq, pr));
        }
        // The producer's trip computes its coordinates with few divisions
        // (`trip`).
        let quotients: Vec<_> = stepped.iter().map(|(q, _, _, _, pr)| (*q, *pr)).collect();
        let trip_plan = match role {
            Some(pipeline::Role::Producer { .. }) => {
                Some(self.plan_trip(id, body, &quotients, pre)?)
            }
            _ => None,
        };
        let carried = self.carry(written_registers(self.ir, body), pre)?;
        self.shared_loads.clear();
        self.tests.clear();
        let counter = phi.as_basic_value().into_int_value();
        let var = self
            .ir
            .ints
            .iter()
            .position(|v| v.def == IntDef::LoopVar(id));
        if let Some(v) = var {
            self.ints.insert(v, counter);
        }
        // The loop's values are computed anew in its body (a pipeline's id
        // is the producer's loop and the consumers' too).
        let ir = self.ir;
        self.ints
            .retain(|k, _| ir.ints[*k].scope != Some(id) || Some(*k) == var);
        for (q, r, _, pq, pr) in &stepped {
            for (v, p) in [(q, pq), (r, pr)] {
                if let Some(v) = v {
                    self.ints.insert(*v, p.as_basic_value().into_int_value());
                }
            }
        }
        self.open_loops.push(id);
        // An entry value first computed in the body does not dominate the
        // exit: forgotten there (the enclosing statement computes the
        // entry's before the loop, so none is expected).
        let entry_before: std::collections::HashSet<usize> = self
            .ints
            .keys()
            .filter(|k| ir.ints[**k].scope.is_none())
            .copied()
            .collect();
        let trip_carried = match trip_plan {
            Some(plan) => self.trip_values(plan)?,
            None => Vec::new(),
        };
        self.values_for(body)?;
        if let Some(role) = role {
            let trip = self.b.build_int_nsw_sub(counter, first, "")?;
            self.stage_begin(role, trip)?;
        }
        self.insts(body)?;
        if let Some(role) = role {
            self.stage_end(role)?;
        }
        let next = self
            .b
            .build_int_nsw_add(counter, i64t.const_int(1, false), "")?;
        let latch = self.b.get_insert_block().expect("positioned");
        phi.add_incoming(&[(&next, latch)]);
        for (p, v) in trip_carried {
            p.add_incoming(&[(&v, latch)]);
        }
        let one = i64t.const_int(1, false);
        for (_, _, dv, pq, pr) in stepped {
            let (q, r) = (
                pq.as_basic_value().into_int_value(),
                pr.as_basic_value().into_int_value(),
            );
            let r1 = self.b.build_int_nuw_add(r, one, "")?;
            let wrap = self.b.build_int_compare(IntPredicate::EQ, r1, dv, "")?;
            let q1 = self.b.build_int_nuw_add(q, one, "")?;
            let qn = self.b.build_select(wrap, q1, q, "")?;
            let rn = self.b.build_select(wrap, i64t.const_zero(), r1, "")?;
            pq.add_incoming(&[(&qn, latch)]);
            pr.add_incoming(&[(&rn, latch)]);
        }
        let again = self
            .b
            .build_int_compare(IntPredicate::SLT, next, last, "")?;
        self.b.build_conditional_branch(again, bodyb, exit)?;
        self.open_loops.pop();
        self.b.position_at_end(exit);
        self.ints
            .retain(|k, _| ir.ints[*k].scope.is_some() || entry_before.contains(k));
        self.close_carried(carried, [pre, latch])?;
        self.shared_loads.clear();
        self.tests.clear();
        Ok(())
    }

    /// At a loop's head, entered from `pre`: a phi for each register
    /// element of `slots`, its value there the one before the loop (0
    /// where none was set).
    pub(super) fn carry(
        &mut self,
        slots: Vec<(usize, usize)>,
        pre: BasicBlock<'ctx>,
    ) -> Result<Vec<Carried<'ctx>>> {
        let mut carried = Vec::new();
        for (r, k) in slots {
            let elem = self.ir.registers[r].elem;
            let before = self.registers[r][k].unwrap_or_else(|| constant(self.ctx, elem, 0.0));
            let p = self.b.build_phi(elem_type(self.ctx, elem), "")?;
            p.add_incoming(&[(&before, pre)]);
            self.registers[r][k] = Some(p.as_basic_value());
            carried.push((r, k, before, p));
        }
        Ok(carried)
    }

    /// At a loop's exit, reached from `pre` (no trip) and from the end of
    /// its body `latch`: each carried element's phi takes the body's value,
    /// and a phi after the loop holds whichever arrived.
    pub(super) fn close_carried(
        &mut self,
        carried: Vec<Carried<'ctx>>,
        [pre, latch]: [BasicBlock<'ctx>; 2],
    ) -> Result<()> {
        for (r, k, before, p) in carried {
            let after = self.registers[r][k].expect("set in the loop's body");
            p.add_incoming(&[(&after, latch)]);
            let out = self.b.build_phi(after.get_type(), "")?;
            out.add_incoming(&[(&before, pre), (&after, latch)]);
            self.registers[r][k] = Some(out.as_basic_value());
        }
        Ok(())
    }
}

/// A register element carried around a loop: (array, index, its value
/// before the loop, its phi at the loop's head).
pub(super) type Carried<'ctx> = (usize, usize, BasicValueEnum<'ctx>, PhiValue<'ctx>);

/// The values `counter / d` and `counter % d` of loop `id`'s counter by a
/// run-time value `d` from outside the loop, by divisor: (quotient,
/// remainder, d).
fn counter_divisions(ir: &KernelIr, id: usize) -> Vec<(Option<usize>, Option<usize>, usize)> {
    let mut out: Vec<(Option<usize>, Option<usize>, usize)> = Vec::new();
    for (k, v) in ir.ints.iter().enumerate() {
        let IntDef::Bin(op @ (IntOp::Div | IntOp::Mod), a, d) = v.def else {
            continue;
        };
        if ir.ints[a].def != IntDef::LoopVar(id) || !trip::fixed_divisor(ir, id, d) {
            continue;
        }
        let at = match out.iter().position(|e| e.2 == d) {
            Some(i) => i,
            None => {
                out.push((None, None, d));
                out.len() - 1
            }
        };
        match op {
            IntOp::Div => out[at].0 = Some(k),
            _ => out[at].1 = Some(k),
        }
    }
    out
}

/// The register elements `insts` write, by (array, index), loops included.
pub(super) fn written_registers(ir: &KernelIr, insts: &[Inst]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for_each_atom(insts, &mut |i| {
        if let InstKind::MmaSync { c: f, .. }
        | InstKind::Wgmma { c: f, .. }
        | InstKind::Matrix {
            store: false,
            regs: f,
            ..
        } = &i.kind
        {
            for &k in &f.index {
                if !out.contains(&(f.array, k as usize)) {
                    out.push((f.array, k as usize));
                }
            }
        }
        let Some((dst, width)) = i.written() else {
            return;
        };
        if let (Space::Registers(r), IntDef::Const(at)) = (dst.space, &ir.ints[dst.index].def) {
            for k in 0..width as usize {
                let slot = (r, *at as usize + k);
                if !out.contains(&slot) {
                    out.push(slot);
                }
            }
        }
    });
    out
}
