//! A pipeline's turns (sm_90a; CUTLASS's ping-pong): the consumer
//! warpgroups take the turns in rotation, each running the pipeline's loop
//! on its own tile and then the turn's `after` (its epilogue), while the
//! next warpgroup's turn keeps the tensor cores busy; the producer walks
//! every turn's trips as one sequence of the ring's stages.
//!
//! In: a `Pipeline` with `turn`. A trip's stage and phase come from its
//! number across the turns (`trip_base`, the earlier turns' trips, plus the
//! loop's own), the same on both sides; a stage is released by the one
//! warpgroup whose turn it serves (the empty barriers count 128 arrivals).
//! Lagged, the turn's last group is waited for at the head of `after`,
//! and its stage released right then.
//!
//! A wait on an mbarrier's parity cannot tell a phase from the one two
//! phases later, so a warpgroup must not wait on a stage two phases ahead
//! of it: one that skips the other warpgroups' trips might, and read a
//! stage from an old trip. So the turns wait in order: each warpgroup's
//! threads arrive on the next warpgroup's barrier of turns once their
//! turn's trips have all landed, and a warpgroup starts its turn's waits
//! only once the turn before it has arrived (CUTLASS's ordered sequence
//! barrier). Every trip before a turn's has then landed when it begins.

use super::KernelBuilder;
use super::control::written_registers;
use super::pipeline::Ring;
use crate::Result;
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use tilec::ir::{Inst, InstKind, IntDef, Turn, WARPGROUP};

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// The consumers' side of pipeline `pipeline`, which has turns:
    /// warpgroup `w` takes turns `start + w`, `start + w + G`, ...
    pub(super) fn consumer_turns(&mut self, pipeline: &Inst) -> Result<()> {
        let InstKind::Pipeline {
            id,
            name,
            start,
            end,
            lag,
            turn: Some(t),
            body,
            after,
            ..
        } = &pipeline.kind
        else {
            unreachable!("a pipeline with turns")
        };
        let i64t = self.ctx.i64_type();
        // The warpgroup, as lane 0 of the warp has it: ptxas then knows
        // that a warp agrees on it, and so on the turns it runs (wgmma's
        // `.sync.aligned` needs the warp converged).
        let tid = self.special("llvm.nvvm.read.ptx.sreg.tid.x")?;
        let w = self
            .b
            .build_int_unsigned_div(tid, i64t.const_int(WARPGROUP as u64, false), "")?;
        let w = self.b.build_int_truncate(w, self.ctx.i32_type(), "")?;
        let w = self
            .shuffle(w.into(), 0, "llvm.nvvm.shfl.sync.idx.i32")?
            .into_int_value();
        let w = self.b.build_int_z_extend(w, i64t, "warpgroup")?;
        let first = self.b.build_int_nsw_add(self.ints[&t.start], w, "")?;
        let step = i64t.const_int(u64::from(t.groups), false);
        let trips = self
            .b
            .build_int_nsw_sub(self.ints[end], self.ints[start], "")?;
        let (wait, rest) = after.split_at(*lag as usize);
        let i32t = self.ctx.i32_type();
        let groups = i32t.const_int(u64::from(t.groups), false);
        let w32 = self.b.build_int_truncate(w, i32t, "")?;
        let own = self.order_barrier(w32)?;
        let next = self.b.build_int_add(w32, i32t.const_int(1, false), "")?;
        let next = self.b.build_int_unsigned_rem(next, groups, "")?;
        let next = self.order_barrier(next)?;
        // Barriers 0 and 1 are the block's and the consumers'.
        self.turn_barrier = Some(self.b.build_int_add(w32, i32t.const_int(2, false), "")?);
        // A turn's TMA loads wait on its warpgroup's barrier, after the
        // block's.
        let block_loads = self.loads_barrier;
        if let (Some((base, _)), Some(phase)) = (block_loads, self.turn_loads_phase) {
            let own = self.b.build_int_add(w32, i32t.const_int(1, false), "")?;
            let offset = self.b.build_int_mul(own, i32t.const_int(8, false), "")?;
            let at = self.b.build_int_add(base, offset, "")?;
            self.loads_barrier = Some((at, phase));
        }
        let turns = self.turn_loop(t, [first, step], &[body, after], &mut |k, done| {
            let base = k.b.build_int_nsw_mul(done, trips, "")?;
            // The turn before this one has seen its trips land: its
            // ((done - 1) / G)-th arrival here.
            if t.groups > 1 {
                let later =
                    k.b.build_int_compare(IntPredicate::SGT, done, i64t.const_zero(), "")?;
                k.when(later, "turn.wait", |k| {
                    let before = k.b.build_int_nsw_sub(done, i64t.const_int(1, false), "")?;
                    let n = k.b.build_int_unsigned_div(before, step, "")?;
                    let n = k.b.build_int_truncate(n, i32t, "")?;
                    let parity = k.b.build_and(n, i32t.const_int(1, false), "")?;
                    k.ptx(super::pipeline::WAIT, "r,r", &[own, parity])
                })?;
            }
            k.values_for(body)?;
            k.trip_base = Some(base);
            k.loop_(
                *id,
                name,
                *start,
                *end,
                body,
                Some(super::pipeline::Role::Consumer),
            )?;
            k.trip_base = None;
            if t.groups > 1 {
                k.ptx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", &[next])?;
            }
            // Lagged: the last group retires, and with it the last stage.
            k.insts(wait)?;
            if !wait.is_empty() {
                let last = k.b.build_int_nsw_add(base, trips, "")?;
                let last = k.b.build_int_nsw_sub(last, i64t.const_int(1, false), "")?;
                k.release_last(last, trips)?;
            }
            k.values_for(rest)?;
            k.insts(rest)
        });
        self.turn_barrier = None;
        self.loads_barrier = block_loads;
        turns
    }

    /// A loop over turns `j = first, first + step, ...` below `t.end`:
    /// `each` emits a turn, given the turns before it, `j - t.start`; the
    /// registers that `writes` write are carried from turn to turn.
    pub(super) fn turn_loop(
        &mut self,
        t: &Turn,
        [first, step]: [IntValue<'ctx>; 2],
        writes: &[&[Inst]],
        each: &mut dyn FnMut(&mut Self, IntValue<'ctx>) -> Result<()>,
    ) -> Result<()> {
        let i64t = self.ctx.i64_type();
        let ir = self.ir;
        let last = self.ints[&t.end];
        let pre = self.b.get_insert_block().expect("positioned");
        let body = self
            .ctx
            .append_basic_block(self.func, &format!("{}.turn", t.name));
        let exit = self
            .ctx
            .append_basic_block(self.func, &format!("{}.turns.exit", t.name));
        let any = self
            .b
            .build_int_compare(IntPredicate::SLT, first, last, "")?;
        self.b.build_conditional_branch(any, body, exit)?;
        self.b.position_at_end(body);
        let j = self.b.build_phi(i64t, &t.name)?;
        j.add_incoming(&[(&first, pre)]);
        let mut slots = Vec::new();
        for list in writes {
            for slot in written_registers(ir, list) {
                if !slots.contains(&slot) {
                    slots.push(slot);
                }
            }
        }
        let carried = self.carry(slots, pre)?;
        self.shared_loads.clear();
        self.tests.clear();
        let entry: Vec<usize> = self.ints.keys().copied().collect();
        let counter = j.as_basic_value().into_int_value();
        if let Some(v) = ir.ints.iter().position(|v| v.def == IntDef::LoopVar(t.id)) {
            self.ints.insert(v, counter);
        }
        self.open_loops.push(t.id);
        let done = self.b.build_int_nsw_sub(counter, self.ints[&t.start], "")?;
        each(self, done)?;
        let next = self.b.build_int_nsw_add(counter, step, "")?;
        let latch = self.b.get_insert_block().expect("positioned");
        j.add_incoming(&[(&next, latch)]);
        let again = self
            .b
            .build_int_compare(IntPredicate::SLT, next, last, "")?;
        self.b.build_conditional_branch(again, body, exit)?;
        self.open_loops.pop();
        self.b.position_at_end(exit);
        // What a turn computed does not reach past the loop.
        self.ints.retain(|k, _| entry.contains(k));
        self.close_carried(carried, [pre, latch])?;
        self.shared_loads.clear();
        self.tests.clear();
        Ok(())
    }
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// At a lagged turn's end, after the wait for its last group: the stage
    /// of its last trip (`trip` from the first turn's first, i64) is free,
    /// if it had trips (`trips` > 0).
    pub(super) fn release_last(
        &mut self,
        trip: IntValue<'ctx>,
        trips: IntValue<'ctx>,
    ) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let stages = self.ring.expect("a pipeline kernel").stages;
        let trip = self.b.build_int_truncate(trip, i32t, "")?;
        // Signed: an empty range may be reversed.
        let any = self.b.build_int_compare(
            IntPredicate::SGT,
            trips,
            trips.get_type().const_zero(),
            "",
        )?;
        let trips = self.b.build_int_z_extend(any, i32t, "")?;
        let n = i32t.const_int(stages as u64, false);
        let stage = self.b.build_int_unsigned_rem(trip, n, "released")?;
        let empty = self.barrier(false, stage)?;
        self.release(empty, Some([trips, i32t.const_int(1, false)]))
    }

    /// The 32-bit shared address of warpgroup `w`'s barrier of turns.
    pub(super) fn order_barrier(&self, w: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let Ring { base, stages, .. } = self.ring.expect("a pipeline kernel");
        let base = self.b.build_ptr_to_int(base, i32t, "")?;
        let slot = self
            .b
            .build_int_add(w, i32t.const_int(2 * stages as u64, false), "")?;
        let offset = self.b.build_int_mul(slot, i32t.const_int(8, false), "")?;
        Ok(self.b.build_int_add(base, offset, "")?)
    }
}
