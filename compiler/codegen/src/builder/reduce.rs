//! `reduce_blocks` (split-K, stream-K): in: the IR's register array,
//! group, count and index (across parts, checked against the launch's
//! bounds); out: each thread's partials stored to the workspace, the
//! arrivals counted, and the sum in index order run by run
//! (`ir::REDUCE_RUN` parts): where a group is one run, its last block to
//! arrive (the only one that can see every partial) sums it; otherwise
//! each run's last block sums the run into the run's row, and the last of
//! those sums the runs. Then the body, in the block that holds the sum.
//! Nothing waits for another block, so the grid's scheduling cannot
//! deadlock it, and the sum's bits do not depend on which block is last.
//! Each arrival counter wraps to 0 at its last arrival, so each launch
//! leaves it at 0 for the next (a launch that fails midway leaves the
//! CUDA context unusable, counters and all).

use super::{IntDivision, KernelBuilder, constant};
use crate::Result;
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::types::BasicType;
use inkwell::values::{BasicValue, BasicValueEnum, FloatValue, IntValue, PointerValue};
use tilec::check::program::Elem;
use tilec::ir::{Inst, REDUCE_RUN};
use tilec_layout::int::Op as IntOp;

/// How the workspace's sizes divide: not negative, in 64 bits.
const WHOLE: IntDivision = IntDivision {
    unsigned: true,
    narrow: false,
};

/// The partial a sum has reached, and its values so far.
type Sums<'ctx> = (IntValue<'ctx>, Vec<FloatValue<'ctx>>);

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// The workspace (f32, a thread's values per partial and per run's
    /// sum) and the arrival counters (u32, per group one and one a run),
    /// then across parts the runtime's
    /// `groups` and `most`: the kernel's last parameters.
    fn reduction_params(
        &self,
        parts: bool,
    ) -> (
        PointerValue<'ctx>,
        PointerValue<'ctx>,
        Option<[IntValue<'ctx>; 2]>,
    ) {
        let n = self.func.count_params();
        let p = |i: u32| self.func.get_nth_param(i).expect("declared");
        match parts {
            false => (
                p(n - 2).into_pointer_value(),
                p(n - 1).into_pointer_value(),
                None,
            ),
            true => (
                p(n - 4).into_pointer_value(),
                p(n - 3).into_pointer_value(),
                Some([p(n - 2).into_int_value(), p(n - 1).into_int_value()]),
            ),
        }
    }

    /// `parts`: across parts, whose group, part and count the kernel
    /// computes (the IR's `groups` and `most` unused here: the runtime's,
    /// which sized the workspace, are the ones that keep it in bounds).
    pub(super) fn reduce_blocks(
        &mut self,
        r: usize,
        parts: bool,
        atomic: bool,
        [group, count, index]: [usize; 3],
        body: &[Inst],
    ) -> Result<()> {
        let (i64t, i32t, f32t) = (
            self.ctx.i64_type(),
            self.ctx.i32_type(),
            self.ctx.f32_type(),
        );
        let (ws, counters, bounds) = self.reduction_params(parts);
        let tid = self.thread_index()?;
        let (g, s, z) = (self.ints[&group], self.ints[&count], self.ints[&index]);
        // Across a grid dimension a group's parts are its count apart;
        // across parts, `most` apart, once group < groups, part < count
        // and 1 <= count <= most hold (unsigned compares, no wrapping
        // arithmetic), else the kernel stops here.
        let stride = match bounds {
            None => s,
            Some([groups, most]) => {
                let one = i64t.const_int(1, false);
                let last = self.b.build_int_sub(s, one, "")?;
                let tests = [(g, groups), (z, s), (last, most)]
                    .into_iter()
                    .map(|(v, n)| self.b.build_int_compare(IntPredicate::ULT, v, n, ""))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let ok = self.b.build_and(tests[0], tests[1], "")?;
                let ok = self.b.build_and(ok, tests[2], "")?;
                // In a pipeline's body the kernel traps without a report:
                // the report's printf, a call inside the loop of wgmmas,
                // made ptxas serialize every wgmma of the entry (C7510;
                // after the pipeline, as in bgemm_tn_sm90_splitk, it does
                // not).
                if self.stage.is_some() {
                    self.traps_unless(ok)?;
                } else {
                    let what = format!(
                        "{}: a reduce across parts(t < groups, p < n, n <= most) whose group, part or count breaks the launch's bounds",
                        self.ir.name
                    );
                    self.holds(ok, &what, "tilec")?;
                }
                most
            }
        };
        let len = self.ir.registers[r].len as u64;
        let threads = self.ir.block_threads.max(1) as u64;
        let int = |v: u64| i64t.const_int(v, false);
        // The workspace: rows of a thread's values, per group its parts'
        // rows then its runs' (part z of group g: row g * (stride +
        // run_stride) + z; run c: row g * (stride + run_stride) + stride +
        // c), so that no row depends on the launch's grid (a plan may
        // launch the grid in parts). The counters: per group, one for its
        // runs' sums, then one per run.
        let run = int(REDUCE_RUN);
        let run_stride = self.int_bin(IntOp::CeilDiv, stride, run, WHOLE)?;
        let runs = self.int_bin(IntOp::CeilDiv, s, run, WHOLE)?;
        let group_rows = {
            let per = self.b.build_int_add(stride, run_stride, "")?;
            self.b.build_int_mul(g, per, "")?
        };
        let c = self.b.build_int_unsigned_div(z, run, "")?;
        let run_first = self.b.build_int_mul(c, run, "")?;
        let in_run = self.b.build_int_sub(s, run_first, "")?;
        let in_run = self.int_bin(IntOp::Min, in_run, run, WHOLE)?;
        let counters_at = {
            let per = self.b.build_int_add(run_stride, int(1), "")?;
            self.b.build_int_mul(g, per, "")?
        };
        // Value i of this thread in workspace row `at` is element
        // at * len * threads + i * threads + tid: one address for the row,
        // constant offsets i * threads from it (an address chain per value
        // made NVPTX's n-ary reassociation the back end's slowest pass).
        let row_at = |b: &Self, at: IntValue<'ctx>| -> Result<PointerValue<'ctx>> {
            let at = b.b.build_int_mul(at, int(len * threads), "")?;
            let at = b.b.build_int_add(at, tid, "")?;
            // Safety (of the address): the runtime sizes the workspace for
            // every group of the grid (across parts, `groups` of them, whose
            // bounds are checked above), `stride + run_stride` rows each.
            Ok(unsafe { b.b.build_in_bounds_gep(f32t, ws, &[at], "")? })
        };
        let slot = |b: &Self, row: PointerValue<'ctx>, i: u64| -> Result<PointerValue<'ctx>> {
            Ok(unsafe {
                b.b.build_in_bounds_gep(f32t, row, &[int(i * threads)], "")?
            })
        };
        let counter = |b: &Self, at: IntValue<'ctx>| -> Result<PointerValue<'ctx>> {
            let at = b.b.build_int_add(counters_at, at, "")?;
            Ok(unsafe { b.b.build_in_bounds_gep(i32t, counters, &[at], "")? })
        };
        let bool_t = self.ctx.bool_type();
        let (yes, no) = (bool_t.const_all_ones(), bool_t.const_zero());
        let mine: Vec<BasicValueEnum> = (0..len as usize)
            .map(|i| self.registers[r][i].unwrap_or(constant(self.ctx, Elem::F32, 0.0)))
            .collect();
        // A group of one part (stream-K's whole tiles) holds its sum
        // already: no store, arrival or read back.
        let alone = self
            .b
            .build_int_compare(IntPredicate::EQ, s, int(1), "alone")?;
        if atomic {
            // The group's sum: row g of the workspace (from its first
            // value, not this thread's), and its runs' counter.
            let at = self.b.build_int_mul(g, int(len * threads), "")?;
            // Safety: the runtime sizes an atomic reduce's workspace for a
            // row a group, g below the groups (across parts, checked above).
            let sum = unsafe { self.b.build_in_bounds_gep(f32t, ws, &[at], "")? };
            let arrivals = counter(self, int(0))?;
            return self.add_atomically(r, &mine, alone, [sum, arrivals], s, body);
        }
        let several = self
            .b
            .build_int_compare(IntPredicate::UGT, runs, int(1), "")?;
        let before = self.b.get_insert_block().expect("positioned");
        let arrive = self.ctx.append_basic_block(self.func, "reduce.arrive");
        let sum = self.ctx.append_basic_block(self.func, "reduce.sum.rows");
        let up = self.ctx.append_basic_block(self.func, "reduce.run");
        let ready = self.ctx.append_basic_block(self.func, "reduce.ready");
        let skip = self.ctx.append_basic_block(self.func, "reduce.skip");
        self.b.build_conditional_branch(alone, ready, arrive)?;
        self.b.position_at_end(arrive);
        let row = row_at(self, self.b.build_int_add(group_rows, z, "")?)?;
        for (i, v) in mine.iter().enumerate() {
            self.b.build_store(slot(self, row, i as u64)?, *v)?;
        }
        let run_counter = counter(self, self.b.build_int_add(c, int(1), "")?)?;
        let last_of_run = self.arrival(run_counter, in_run)?;
        // The rows the run's last block sums: its run's partials where
        // the group has several runs, else all of the group's.
        let first = self.b.build_select(several, run_first, int(0), "")?;
        let first = self
            .b
            .build_int_add(group_rows, first.into_int_value(), "")?;
        let n = self
            .b
            .build_select(several, in_run, s, "")?
            .into_int_value();
        let arrive_end = self.b.get_insert_block().expect("positioned");
        self.b.build_conditional_branch(last_of_run, sum, skip)?;
        // One loop sums rows first..first + n, once for the run and, where
        // there are several, again for the runs' rows in the group's last
        // run-summing block: one copy of the loads in the kernel.
        self.b.position_at_end(sum);
        let second = self.b.build_phi(bool_t, "")?;
        let from = self.b.build_phi(i64t, "")?;
        let count = self.b.build_phi(i64t, "")?;
        let from_v = from.as_basic_value().into_int_value();
        let sums = self.sum_partials(
            len,
            count.as_basic_value().into_int_value(),
            &|b, k| row_at(b, b.b.build_int_add(from_v, k, "")?),
            &slot,
        )?;
        let second_v = second.as_basic_value().into_int_value();
        let first_pass = self.b.build_not(second_v, "")?;
        let store_run = self.b.build_and(several, first_pass, "")?;
        let sum_end = self.b.get_insert_block().expect("positioned");
        self.b.build_conditional_branch(store_run, up, ready)?;
        self.b.position_at_end(up);
        let runs_from = self.b.build_int_add(group_rows, stride, "")?;
        let row = row_at(self, self.b.build_int_add(runs_from, c, "")?)?;
        for (i, v) in sums.iter().enumerate() {
            self.b.build_store(slot(self, row, i as u64)?, *v)?;
        }
        let last_of_runs = self.arrival(counter(self, int(0))?, runs)?;
        let up_end = self.b.get_insert_block().expect("positioned");
        self.b.build_conditional_branch(last_of_runs, sum, skip)?;
        second.add_incoming(&[(&no, arrive_end), (&yes, up_end)]);
        from.add_incoming(&[(&first, arrive_end), (&runs_from, up_end)]);
        count.add_incoming(&[(&n, arrive_end), (&runs, up_end)]);
        // The block holds the sum where it stood alone or finished a sum
        // with nothing left to store, and runs the body; elsewhere it
        // keeps its own partial (as on the executor) and skips the body.
        // Two ways in, not one joined by a flag: the body's registers then
        // meet nothing but the sum (with the flag, ptxas held a 128 x 256
        // tile's partial beside its sum and spilled in the main loop
        // around a reduce in a pipeline's body).
        self.body_on_the_sum(r, (&mine, before), (&sums, sum_end), [ready, skip], body)
    }

    /// Block `ready`: the registers hold `mine` where the block came from
    /// `own.1` (a group of one) and `sums` from `summed.1`, and the body
    /// runs; from `skip` it does not, the registers as they were.
    fn body_on_the_sum(
        &mut self,
        r: usize,
        own: (&[BasicValueEnum<'ctx>], BasicBlock<'ctx>),
        summed: (&[BasicValueEnum<'ctx>], BasicBlock<'ctx>),
        [ready, skip]: [BasicBlock<'ctx>; 2],
        body: &[Inst],
    ) -> Result<()> {
        let kept = self.registers.clone();
        self.b.position_at_end(ready);
        for (i, v) in own.0.iter().enumerate() {
            let phi = self.b.build_phi(self.ctx.f32_type(), "")?;
            phi.add_incoming(&[(v, own.1), (&summed.0[i], summed.1)]);
            self.registers[r][i] = Some(phi.as_basic_value());
        }
        self.join_after(skip, kept, "reduce.end", &mut |b| {
            b.values_for(body)?;
            b.insts(body)
        })
    }

    /// An atomic reduce: each block of a group of `s` adds its values
    /// `mine` into the group's row `sum` by atomics and arrives at
    /// `arrivals`; the last to arrive reads the sum, leaves the row at
    /// zero for the next launch (the runtime zeroes it before the first)
    /// and runs the body. A group of one (`alone`) runs it on its own
    /// values. The sum's order is the order the atomics land in. Where a
    /// thread's values come in fours, on sm_90 and newer, each four lie
    /// together (`red.v4`, 16-byte loads and stores: a quarter of the
    /// atomics, which the L2 performs one by one), the warp's fours side
    /// by side.
    fn add_atomically(
        &mut self,
        r: usize,
        mine: &[BasicValueEnum<'ctx>],
        alone: IntValue<'ctx>,
        [sum, arrivals]: [PointerValue<'ctx>; 2],
        s: IntValue<'ctx>,
        body: &[Inst],
    ) -> Result<()> {
        let (i64t, f32t) = (self.ctx.i64_type(), self.ctx.f32_type());
        let threads = self.ir.block_threads.max(1) as u64;
        let width: u64 = match mine.len().is_multiple_of(4) && self.sm >= 90 {
            true => 4,
            false => 1,
        };
        let tid = self.thread_index()?;
        // Value group j (`width` values) of this thread: element
        // j * width * threads + tid * width of the row.
        let mine_at = {
            let at = self
                .b
                .build_int_mul(tid, i64t.const_int(width, false), "")?;
            // Safety: thread tid's values lie within the row, which holds
            // every thread's.
            unsafe { self.b.build_in_bounds_gep(f32t, sum, &[at], "")? }
        };
        let group = |b: &Self, j: u64| -> Result<PointerValue<'ctx>> {
            let at = i64t.const_int(j * width * threads, false);
            // Safety: group j of the thread's values, j < len / width, lies
            // within the row (its last element len * threads - 1 at most).
            Ok(unsafe { b.b.build_in_bounds_gep(f32t, mine_at, &[at], "")? })
        };
        let groups = mine.len() as u64 / width;
        let before = self.b.get_insert_block().expect("positioned");
        let add = self.ctx.append_basic_block(self.func, "reduce.add");
        let read = self.ctx.append_basic_block(self.func, "reduce.read");
        let ready = self.ctx.append_basic_block(self.func, "reduce.ready");
        let skip = self.ctx.append_basic_block(self.func, "reduce.skip");
        self.b.build_conditional_branch(alone, ready, add)?;
        self.b.position_at_end(add);
        // `red`, which returns nothing and which nothing waits for until
        // the arrival's fence (inkwell's atomicrmw takes integers alone).
        let (text, operands) = match width {
            4 => (
                "red.relaxed.gpu.global.add.v4.f32 [$0], {$1, $2, $3, $4};",
                "l,f,f,f,f",
            ),
            _ => ("red.relaxed.gpu.global.add.f32 [$0], $1;", "l,f"),
        };
        for (j, values) in mine.chunks(width as usize).enumerate() {
            let at = self.b.build_ptr_to_int(group(self, j as u64)?, i64t, "")?;
            let mut args: Vec<BasicValueEnum> = vec![at.into()];
            args.extend(values);
            self.inline_ptx(text, operands, &args, false)?;
        }
        let last = self.arrival(arrivals, s)?;
        self.b.build_conditional_branch(last, read, skip)?;
        self.b.position_at_end(read);
        let ty = match width {
            4 => f32t.vec_type(4).as_basic_type_enum(),
            _ => f32t.as_basic_type_enum(),
        };
        let mut sums = Vec::with_capacity(mine.len());
        for j in 0..groups {
            let at = group(self, j)?;
            let v = self.b.build_load(ty, at, "")?;
            let zero = self.b.build_store(at, ty.const_zero())?;
            for inst in [v.as_instruction_value().expect("a load"), zero] {
                inst.set_volatile(true)
                    .map_err(|e| crate::CodegenError::Llvm(e.to_string()))?;
                inst.set_alignment(4 * width as u32)
                    .map_err(|e| crate::CodegenError::Llvm(e.to_string()))?;
            }
            match width {
                4 => {
                    let v = v.into_vector_value();
                    for k in 0..4 {
                        let k = i64t.const_int(k, false);
                        sums.push(self.b.build_extract_element(v, k, "")?);
                    }
                }
                _ => sums.push(v),
            }
        }
        let read_end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(ready)?;
        self.body_on_the_sum(r, (mine, before), (&sums, read_end), [ready, skip], body)
    }

    /// This block's arrival at `counter`, one of `parts` (thread 0's, for
    /// the block: CUTLASS's semaphore): whether it was the last, on every
    /// thread that reduces. The block's stores first (a barrier), then on
    /// thread 0 a fence that releases them all (fences are cumulative over
    /// what the barrier ordered before), the arrival, a fence that acquires
    /// the other blocks' stores for the threads the barrier that answers
    /// orders after it. `atom.inc` wraps at parts - 1: the last arrival
    /// leaves the counter at 0 for the next launch, whatever became of the
    /// last.
    fn arrival(
        &mut self,
        counter: PointerValue<'ctx>,
        parts: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let (i64t, i32t) = (self.ctx.i64_type(), self.ctx.i32_type());
        self.block_barrier(false)?;
        let tid = self.thread_index()?;
        let first = self
            .b
            .build_int_compare(IntPredicate::EQ, tid, i64t.const_zero(), "")?;
        let last = self.on_first_thread(first, |b| {
            let s1 = b.b.build_int_sub(parts, i64t.const_int(1, false), "")?;
            let limit = b.b.build_int_truncate(s1, i32t, "")?;
            let at = b.b.build_ptr_to_int(counter, i64t, "")?;
            let old = b.asm_u32(
                "fence.acq_rel.gpu;\n\tatom.relaxed.gpu.global.inc.u32 $0, [$1], $2;\n\tfence.acq_rel.gpu;",
                "=r,l,r",
                &[at, limit],
                false,
            )?;
            Ok(b.b.build_int_compare(IntPredicate::EQ, old, limit, "")?)
        })?;
        let last = self.b.build_int_z_extend(last, i32t, "")?;
        let any = self.block_any(last)?;
        Ok(self
            .b
            .build_int_compare(IntPredicate::NE, any, i32t.const_zero(), "")?)
    }

    /// Whether `v` (an i32) is non-zero on any of the threads that reduce,
    /// at a barrier of theirs (as `block_barrier`).
    fn block_any(&mut self, v: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        if self.ring.is_none() {
            let or = self.intrinsic("llvm.nvvm.barrier0.or", &[])?;
            return Ok(self.call_value(or, &[v.into()])?.into_int_value());
        }
        // LLVM 19's only `bar.red` intrinsics take the whole block.
        // `bar.red` is `.aligned`: every thread runs this one instruction.
        let text = format!(
            "{{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, $1, 0;\n\tbar.red.or.pred q, 1, {}, p;\n\tselp.u32 $0, 1, 0, q;\n\t}}",
            self.ir.block_threads
        );
        self.asm_u32(&text, "=r,r", &[v], true)
    }

    /// `emit` on thread 0 alone; its value there, `false` (0) elsewhere.
    fn on_first_thread(
        &mut self,
        first: IntValue<'ctx>,
        emit: impl FnOnce(&mut Self) -> Result<IntValue<'ctx>>,
    ) -> Result<IntValue<'ctx>> {
        let before = self.b.get_insert_block().expect("positioned");
        let then_b = self.ctx.append_basic_block(self.func, "first.thread");
        let join = self.ctx.append_basic_block(self.func, "first.thread.end");
        self.b.build_conditional_branch(first, then_b, join)?;
        self.b.position_at_end(then_b);
        let v = emit(self)?;
        let end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(join)?;
        self.b.position_at_end(join);
        let phi = self.b.build_phi(v.get_type(), "")?;
        phi.add_incoming(&[(&v, end), (&v.get_type().const_zero(), before)]);
        Ok(phi.as_basic_value().into_int_value())
    }

    /// The `len` values' sums over the `s` rows `row(0..s)`, in order from
    /// 0.0 (as the executor adds them), read past the L1 cache: other
    /// multiprocessors wrote them. A partial a trip would wait out one
    /// L2 round trip per partial (split-K of a small tile over a long K
    /// sums a hundred of them), so the loads of up to 64 values a thread
    /// go out together, several partials' at once, and their adds follow
    /// in order; the partials left over go one at a time.
    fn sum_partials(
        &mut self,
        len: u64,
        s: IntValue<'ctx>,
        row: &dyn Fn(&Self, IntValue<'ctx>) -> Result<PointerValue<'ctx>>,
        slot: &dyn Fn(&Self, PointerValue<'ctx>, u64) -> Result<PointerValue<'ctx>>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f32t = self.ctx.f32_type();
        let together = (64 / len.max(1)).clamp(1, 8);
        let start = (
            self.ctx.i64_type().const_zero(),
            vec![f32t.const_zero(); len as usize],
        );
        let (zz, sums) = self.sum_trips(together, start, len, s, row, slot)?;
        let (_, sums) = match together {
            1 => (zz, sums),
            _ => self.sum_trips(1, (zz, sums), len, s, row, slot)?,
        };
        Ok(sums.into_iter().map(Into::into).collect())
    }

    /// A loop adding `per` partials a trip to the sums `from.1`, from
    /// partial `from.0` while `per` are left: the partial it stops at and
    /// the sums.
    fn sum_trips(
        &mut self,
        per: u64,
        from: Sums<'ctx>,
        len: u64,
        s: IntValue<'ctx>,
        row: &dyn Fn(&Self, IntValue<'ctx>) -> Result<PointerValue<'ctx>>,
        slot: &dyn Fn(&Self, PointerValue<'ctx>, u64) -> Result<PointerValue<'ctx>>,
    ) -> Result<Sums<'ctx>> {
        let (i64t, f32t) = (self.ctx.i64_type(), self.ctx.f32_type());
        let before = self.b.get_insert_block().expect("positioned");
        let head = self.ctx.append_basic_block(self.func, "reduce.sum");
        let body = self.ctx.append_basic_block(self.func, "reduce.sum.trip");
        let done = self.ctx.append_basic_block(self.func, "reduce.sum.end");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let zz = self.b.build_phi(i64t, "")?;
        let accs = (0..len)
            .map(|_| self.b.build_phi(f32t, ""))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let at = zz.as_basic_value().into_int_value();
        // zz <= s always, so zz + per <= s has no wrap.
        let past = self.b.build_int_add(at, i64t.const_int(per, false), "")?;
        let more = self.b.build_int_compare(IntPredicate::ULE, past, s, "")?;
        self.b.build_conditional_branch(more, body, done)?;
        self.b.position_at_end(body);
        let mut loaded = Vec::new();
        for u in 0..per {
            let zu = self.b.build_int_add(at, i64t.const_int(u, false), "")?;
            let theirs = row(self, zu)?;
            for i in 0..len {
                let v = self.b.build_load(f32t, slot(self, theirs, i)?, "")?;
                v.as_instruction_value()
                    .expect("a load")
                    .set_volatile(true)
                    .map_err(|e| crate::CodegenError::Llvm(e.to_string()))?;
                loaded.push(v.into_float_value());
            }
        }
        let mut next: Vec<FloatValue> = accs
            .iter()
            .map(|a| a.as_basic_value().into_float_value())
            .collect();
        for part in loaded.chunks(len as usize) {
            for (acc, v) in next.iter_mut().zip(part) {
                *acc = self.b.build_float_add(*acc, *v, "")?;
            }
        }
        let end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(head)?;
        zz.add_incoming(&[(&from.0, before), (&past, end)]);
        for ((acc, first), sum) in accs.iter().zip(&from.1).zip(&next) {
            acc.add_incoming(&[(first, before), (sum, end)]);
        }
        self.b.position_at_end(done);
        let sums = accs
            .iter()
            .map(|a| a.as_basic_value().into_float_value())
            .collect();
        Ok((at, sums))
    }
}
