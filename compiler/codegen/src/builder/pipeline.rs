//! A pipeline (sm_90a): the mbarrier ring, the producer warpgroup's TMA
//! loop and the consumers' waits, as inline PTX (LLVM 19 has intrinsics
//! for none of `try_wait.parity`, `expect_tx`, the bulk tensor copy or
//! `setmaxnreg` on sm_90).
//!
//! Per stage `s`: `full[s]` (one arrival, the producer's `expect_tx` of the
//! stage's bytes, completed by the TMA transactions) and `empty[s]` (one
//! arrival per consumer thread, after its body; in a lagged pipeline after
//! the next iteration's body, whose wait retires the wgmmas that read the
//! stage, so the last iteration's stage is never released: no load waits
//! for it). Iteration `i` (counted
//! from the loop's start) uses stage `i % S` in phase `(i / S) & 1`; the
//! producer waits on `empty` with the other parity, so its first round
//! passes at once. The producer warpgroup is threads `block_threads..`; it
//! leaves once its loads are issued, so barriers among consumers are
//! named barriers of the consumer threads.
//!
//! On a cluster, a multicast load lands in every block of it, so a stage
//! is free once every block's consumers are done with it: `empty[s]`
//! counts one arrival per warp of each block (lane `r` of a warp arrives
//! at rank `r`'s barrier), and the cluster meets after the barriers are
//! initialised (no box or arrival may reach one before) and before its
//! blocks leave (a peer's last arrivals may still be on their way).

use super::KernelBuilder;
use crate::{CodegenError, Result};
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{IntValue, PointerValue};
use tilec::ir::{Inst, InstKind, PRODUCER_THREADS, WARPGROUP, registers_at_launch};

/// Waits until the mbarrier at `$0` completes phase `$1`.
pub(super) const WAIT: &str = "{\n.reg .pred p;\nwait:\nmbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n@!p bra wait;\n}";

/// Which side of a pipeline a loop runs.
#[derive(Clone, Copy)]
pub(super) enum Role {
    Producer { bytes: i64 },
    Consumer,
}

/// The registers the producer keeps: it only counts and issues copies.
const PRODUCER_REGISTERS: i64 = 40;

/// The registers a thread has at launch and those each side asks for,
/// when the consumers gain (CUTLASS's 40 / 232 for 2 + 1 warpgroups):
/// the block's allocation is its threads times the launch count, the
/// producer gives back down to 40, the consumers share the rest.
pub(crate) fn register_split(block_threads: i64, min_blocks: i64) -> Option<(i64, i64)> {
    let threads = block_threads + PRODUCER_THREADS;
    let at_launch = registers_at_launch(threads, min_blocks);
    let consumers = ((at_launch * threads - PRODUCER_REGISTERS * PRODUCER_THREADS) / block_threads)
        .min(240)
        / 8
        * 8;
    (consumers > at_launch && at_launch >= PRODUCER_REGISTERS)
        .then_some((PRODUCER_REGISTERS, consumers))
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// Before the kernel's body: the ring's barriers initialised, then the
    /// producer warpgroup split off to run its loop and leave. Returns
    /// with the builder in the consumers' code.
    pub(super) fn split_roles(&mut self, pipeline: &Inst) -> Result<()> {
        let InstKind::Pipeline {
            id,
            name,
            start,
            end,
            stages,
            bytes,
            lag,
            turn,
            load,
            prefetch,
            body,
            ..
        } = &pipeline.kind
        else {
            unreachable!("a pipeline")
        };
        let i64t = self.ctx.i64_type();
        let i32t = self.ctx.i32_type();
        // Per stage a full and an empty barrier; with turns, then one a
        // warpgroup, which orders the turns' waits (`turns.rs`).
        let groups = turn.as_ref().map_or(0, |t| t.groups);
        let ring = self.shared_global(i64t.array_type(2 * stages + groups).into(), "ring", 8);
        self.ring = Some(Ring {
            base: ring,
            stages: *stages,
            lag: *lag,
            async_reads: async_reads(&self.ir.shared, load, body),
        });
        let tid = self.special("llvm.nvvm.read.ptx.sreg.tid.x")?;
        let consumers = i64t.const_int(self.ir.block_threads as u64, false);
        // Thread 0 initialises every barrier; the block's barrier publishes them.
        let first = self
            .b
            .build_int_compare(IntPredicate::EQ, tid, i64t.const_zero(), "")?;
        self.when(first, "ring.init", |k| {
            for s in 0..*stages {
                let (full, empty) = (
                    k.barrier(true, i32t.const_int(s as u64, false))?,
                    k.barrier(false, i32t.const_int(s as u64, false))?,
                );
                k.ptx(
                    "mbarrier.init.shared::cta.b64 [$0], $1;",
                    "r,r",
                    &[full, i32t.const_int(1, false)],
                )?;
                // A release per consumer thread; in a cluster, per warp
                // of every block of it: the producer writes its part into
                // each of their stages.
                // A turn's stages are its warpgroup's alone.
                let consumers = match turn {
                    Some(_) => WARPGROUP as u64,
                    None => k.ir.block_threads as u64,
                };
                let releases = match k.peers() {
                    1 => consumers,
                    peers => consumers / 32 * peers as u64,
                };
                k.ptx(
                    "mbarrier.init.shared::cta.b64 [$0], $1;",
                    "r,r",
                    &[empty, i32t.const_int(releases, false)],
                )?;
            }
            for w in 0..groups {
                // Each thread of a warpgroup arrives once its turn's trips
                // have landed.
                let order = k.order_barrier(i32t.const_int(u64::from(w), false))?;
                k.ptx(
                    "mbarrier.init.shared::cta.b64 [$0], $1;",
                    "r,r",
                    &[order, i32t.const_int(WARPGROUP as u64, false)],
                )?;
            }
            k.ptx_statement("fence.mbarrier_init.release.cluster;")
        })?;
        match self.peers() {
            1 => {
                let f = self.intrinsic("llvm.nvvm.barrier0", &[])?;
                self.b.build_call(f, &[], "")?;
            }
            // No peer's box or release may reach a barrier before it is
            // initialised: the whole cluster meets first.
            _ => self.cluster_barrier()?,
        }
        let split = register_split(self.ir.block_threads, self.ir.min_blocks.unwrap_or(1));
        let producer = self
            .b
            .build_int_compare(IntPredicate::UGE, tid, consumers, "")?;
        let producer_block = self.ctx.append_basic_block(self.func, "producer");
        let consumer_block = self.ctx.append_basic_block(self.func, "consumers");
        self.b
            .build_conditional_branch(producer, producer_block, consumer_block)?;
        self.b.position_at_end(producer_block);
        if let Some((p, _)) = split {
            self.ptx_statement(&format!("setmaxnreg.dec.sync.aligned.u32 {p};"))?;
        }
        // One thread issues every copy.
        let issuer = self
            .b
            .build_int_compare(IntPredicate::EQ, tid, consumers, "")?;
        let role = Some(Role::Producer { bytes: *bytes });
        self.when(issuer, "producer.loop", |k| {
            match turn {
                None => k.loop_(*id, name, *start, *end, load, role)?,
                // Every turn's trips, one after the other.
                Some(t) => {
                    let one = k.ctx.i64_type().const_int(1, false);
                    let trips = k.b.build_int_nsw_sub(k.ints[end], k.ints[start], "")?;
                    let first = k.ints[&t.start];
                    k.turn_loop(t, [first, one], &[], &mut |k, done| {
                        let base = k.b.build_int_nsw_mul(done, trips, "")?;
                        k.values_for(load)?;
                        k.trip_base = Some(base);
                        k.loop_(*id, name, *start, *end, load, role)?;
                        k.trip_base = None;
                        Ok(())
                    })?
                }
            }
            for p in prefetch {
                if let InstKind::TmaPrefetch { map, origin } = &p.kind {
                    k.tma_prefetch(*map, origin)?;
                }
            }
            Ok(())
        })?;
        self.b.build_return(None)?;
        self.b.position_at_end(consumer_block);
        if let Some((_, c)) = split {
            self.ptx_statement(&format!("setmaxnreg.inc.sync.aligned.u32 {c};"))?;
        }
        Ok(())
    }

    /// At the top of a pipeline iteration (`local` counted from the loop's
    /// start; in a turn, the turns' trips before it come first): the
    /// consumers wait for the stage to land; the producer waits for it to
    /// be free, then expects its bytes.
    pub(super) fn stage_begin(&mut self, role: Role, local: IntValue<'ctx>) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let stages = self.ring.expect("a pipeline kernel").stages;
        let trip = match self.trip_base {
            Some(base) => self.b.build_int_nsw_add(base, local, "trip")?,
            None => local,
        };
        let trip = self.b.build_int_truncate(trip, i32t, "")?;
        let local = self.b.build_int_truncate(local, i32t, "")?;
        let n = i32t.const_int(stages as u64, false);
        let stage = self.b.build_int_unsigned_rem(trip, n, "stage")?;
        let round = self.b.build_int_unsigned_div(trip, n, "")?;
        let phase = self.b.build_and(round, i32t.const_int(1, false), "phase")?;
        let (full, empty) = (self.barrier(true, stage)?, self.barrier(false, stage)?);
        match role {
            Role::Consumer => self.ptx(WAIT, "r,r", &[full, phase])?,
            Role::Producer { bytes } => {
                let free = self.b.build_xor(phase, i32t.const_int(1, false), "")?;
                self.ptx(WAIT, "r,r", &[empty, free])?;
                self.ptx(
                    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                    "r,r",
                    &[full, i32t.const_int(bytes as u64, false)],
                )?;
            }
        }
        self.stage = Some(Stage {
            full,
            empty,
            trip,
            local,
        });
        Ok(())
    }

    /// At the end of a consumer iteration: its stage is free again, or in
    /// a lagged pipeline the previous iteration's (none in the first).
    pub(super) fn stage_end(&mut self, role: Role) -> Result<()> {
        let Stage {
            empty, trip, local, ..
        } = self.stage.take().expect("in a pipeline iteration");
        let ring = self.ring.expect("a pipeline kernel");
        match (role, ring.lag) {
            (Role::Producer { .. }, _) => Ok(()),
            (Role::Consumer, 0) => self.release(empty, None),
            (Role::Consumer, lag) => {
                let i32t = self.ctx.i32_type();
                let n = i32t.const_int(ring.stages as u64, false);
                // (trip - lag) mod stages, kept non-negative.
                let back = i32t.const_int((ring.stages - lag) as u64, false);
                let stage = self.b.build_int_add(trip, back, "")?;
                let stage = self.b.build_int_unsigned_rem(stage, n, "released")?;
                let empty = self.barrier(false, stage)?;
                // Not before the loop's (the turn's) own trips: the one
                // before is another warpgroup's.
                let lag = i32t.const_int(lag as u64, false);
                self.release(empty, Some([local, lag]))
            }
        }
    }

    /// The thread's release of empty barrier `empty`: its arrival, or in a
    /// cluster its warp's, once all its lanes are done (`bar.warp.sync`),
    /// at the same offset in every block of the cluster (lane `r` arrives
    /// at rank `r`'s, its own included). Where wgmma alone reads the
    /// stages, the arrival has the default semantics, as CUTLASS's: the
    /// reads are done at the group's wait. On the H200 a remote arrival
    /// per thread made the cluster kernels 40% slower, and
    /// `.release.cluster` 35% (docs/performance.md, version 19), which
    /// other bodies pay. `when`: only if `[a, b]` has a >= b.
    pub(super) fn release(
        &mut self,
        empty: IntValue<'ctx>,
        when: Option<[IntValue<'ctx>; 2]>,
    ) -> Result<()> {
        let text = match (self.peers(), when) {
            (1, None) => "mbarrier.arrive.shared::cta.b64 _, [$0];".to_string(),
            (1, Some(_)) => "{\n.reg .pred p;\nsetp.ge.u32 p, $1, $2;\n@p mbarrier.arrive.shared::cta.b64 _, [$0];\n}".to_string(),
            (peers, when) => {
                // A thread's own reads of the stage, ordered before a peer's
                // TMA write: a wgmma's are done at its wait; generic loads'
                // need the release at the peer's scope, the cluster's.
                let scope = match self.ring.expect("a pipeline kernel").async_reads {
                    true => "",
                    false => ".release.cluster",
                };
                let test = match when {
                    Some(_) => format!("setp.ge.u32 p, $1, $2;\nsetp.lt.and.u32 q, l, {peers}, p;"),
                    None => format!("setp.lt.u32 q, l, {peers};"),
                };
                format!(
                    "{{\n.reg .pred p, q;\n.reg .b32 r, l;\nbar.warp.sync -1;\nmov.u32 l, %laneid;\n{test}\nmapa.shared::cluster.u32 r, $0, l;\n@q mbarrier.arrive{scope}.shared::cluster.b64 _, [r];\n}}"
                )
            }
        };
        match when {
            Some([a, b]) => self.ptx(&text, "r,r,r", &[empty, a, b]),
            None => self.ptx(&text, "r", &[empty]),
        }
    }

    /// How many blocks a pipeline's loads are shared among: the cluster's.
    pub(super) fn peers(&self) -> u32 {
        self.ir.cluster.iter().product()
    }

    /// Every thread of the cluster meets here (those that have exited
    /// excepted), its memory operations before made visible to all: a
    /// cluster barrier's arrival releases, its wait acquires.
    pub(super) fn cluster_barrier(&mut self) -> Result<()> {
        for name in [
            "llvm.nvvm.barrier.cluster.arrive",
            "llvm.nvvm.barrier.cluster.wait",
        ] {
            let f = self.intrinsic(name, &[])?;
            self.b.build_call(f, &[], "")?;
        }
        Ok(())
    }

    /// In a cluster kernel, at its entry: a launch without the cluster, or
    /// with another shape, would wait forever for peers that do not exist
    /// or share boxes that differ, so it traps.
    pub(super) fn require_cluster(&mut self) -> Result<()> {
        if self.peers() == 1 {
            return Ok(());
        }
        let i64t = self.ctx.i64_type();
        let mut wrong = self.ctx.bool_type().const_zero();
        for (d, n) in ["x", "y", "z"].into_iter().zip(self.ir.cluster) {
            let size = self.special(&format!("llvm.nvvm.read.ptx.sreg.cluster.nctaid.{d}"))?;
            let off = self.b.build_int_compare(
                IntPredicate::NE,
                size,
                i64t.const_int(n as u64, false),
                "",
            )?;
            wrong = self.b.build_or(wrong, off, "")?;
        }
        self.when(wrong, "no.cluster", |k| {
            let f = k.intrinsic("llvm.trap", &[])?;
            k.b.build_call(f, &[], "")?;
            Ok(())
        })?;
        Ok(())
    }

    /// One TMA box into shared memory, completing on barrier `full` (a
    /// pipeline stage's, or the kernel's own for its block loads).
    /// With `parts` > 1, the block of cluster rank `r` issues box `r` (that
    /// many boxes further along the map's stacking dimension and in shared
    /// memory) to every block of the cluster, at the same offset in each,
    /// completing on each one's barrier at the same offset as `full`.
    pub(super) fn tma_load(
        &mut self,
        map: usize,
        origin: &[usize],
        dst: &tilec::ir::Addr,
        parts: u32,
        full: IntValue<'ctx>,
    ) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let tilec::ir::Space::Shared(s) = dst.space else {
            return Err(CodegenError::Llvm("a TMA box outside shared memory".into()));
        };
        let elem = self.ir.shared[s].elem;
        let ptr = self.addr_ptr(dst, elem)?;
        let mut smem = self.b.build_ptr_to_int(ptr, i32t, "")?;
        let map_addr = self.map_address(map)?;
        let mut coords: Vec<IntValue<'ctx>> = origin
            .iter()
            .map(|o| self.b.build_int_truncate(self.ints[o], i32t, ""))
            .collect::<std::result::Result<_, _>>()?;
        let multicast = parts > 1;
        if multicast {
            let m = &self.ir.tensor_maps[map];
            let stack = m.stacking_dim();
            let outer = m.dims[stack].2;
            let box_bytes = m.dims.iter().map(|d| d.2).product::<i64>() * elem.bytes();
            let rank = self.special("llvm.nvvm.read.ptx.sreg.cluster.ctarank")?;
            let rank = self.b.build_int_truncate(rank, i32t, "rank")?;
            let last = &mut coords[stack];
            let step = self
                .b
                .build_int_mul(rank, i32t.const_int(outer as u64, false), "")?;
            *last = self.b.build_int_add(*last, step, "")?;
            let skip = self
                .b
                .build_int_mul(rank, i32t.const_int(box_bytes as u64, false), "")?;
            smem = self.b.build_int_add(smem, skip, "")?;
        }
        let r = coords.len();
        let mut args: Vec<IntValue<'ctx>> = vec![smem, map_addr];
        args.extend(coords);
        args.push(full);
        let mut constraints: Vec<&str> = ["r", "l"]
            .into_iter()
            .chain(std::iter::repeat_n("r", r + 1))
            .collect();
        let (suffix, mask) = match multicast {
            true => {
                // Bit i: cluster rank i (16 bits).
                let mask = (1u64 << parts) - 1;
                args.push(self.ctx.i16_type().const_int(mask, false));
                constraints.push("h");
                (".multicast::cluster", format!(", ${}", r + 3))
            }
            false => ("", String::new()),
        };
        let coords: Vec<String> = (0..r).map(|i| format!("${}", i + 2)).collect();
        let text = format!(
            "cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes{suffix} [$0], [$1, {{{}}}], [${}]{mask};",
            coords.join(", "),
            r + 2
        );
        self.ptx(&text, &constraints.join(","), &args)
    }

    /// A barrier of the block's threads (its consumers' in a pipeline
    /// kernel: the producer warpgroup has left; in a pipeline's turn, the
    /// turn's warpgroup's, named barrier `2 + w`), after `fence.proxy.async`
    /// where TMA or wgmma will read what the threads wrote to shared
    /// memory before it.
    pub(super) fn block_barrier(&mut self, fence: bool) -> Result<()> {
        if fence {
            self.ptx_statement("fence.proxy.async.shared::cta;")?;
        }
        if let Some(id) = self.turn_barrier {
            // In a turn: its warpgroup's threads alone.
            let i32t = self.ctx.i32_type();
            let f = self.intrinsic("llvm.nvvm.barrier.sync.cnt", &[])?;
            self.b.build_call(
                f,
                &[id.into(), i32t.const_int(WARPGROUP as u64, false).into()],
                "",
            )?;
            Ok(())
        } else if self.ring.is_some() {
            self.consumer_barrier()
        } else {
            let f = self.intrinsic("llvm.nvvm.barrier0", &[])?;
            self.b.build_call(f, &[], "")?;
            Ok(())
        }
    }

    /// The kernel's own mbarriers for its TMA loads outside a pipeline
    /// (`count`: the block's, then one a warpgroup taking turns),
    /// initialised by thread 0 at the start (one arrival each: its issuer's
    /// `expect_tx`), before the block splits into roles; and each thread's
    /// parity of the phase it waits for next, 0.
    pub(super) fn init_block_loads(&mut self, count: usize) -> Result<()> {
        let i64t = self.ctx.i64_type();
        let i32t = self.ctx.i32_type();
        // One barrier as a plain integer (the PTX of kernels without
        // loads in turns as before).
        let ty = match count {
            1 => i64t.into(),
            n => i64t.array_type(n as u32).into(),
        };
        let bar = self.shared_global(ty, "loads", 8);
        let addr = self.b.build_ptr_to_int(bar, i32t, "")?;
        let slot = self.entry_alloca(i32t.into())?;
        self.b.build_store(slot, i32t.const_zero())?;
        self.loads_barrier = Some((addr, slot));
        if count > 1 {
            let turns = self.entry_alloca(i32t.into())?;
            self.b.build_store(turns, i32t.const_zero())?;
            self.turn_loads_phase = Some(turns);
        }
        let tid = self.special("llvm.nvvm.read.ptx.sreg.tid.x")?;
        let first = self
            .b
            .build_int_compare(IntPredicate::EQ, tid, i64t.const_zero(), "")?;
        self.when(first, "loads.init", |k| {
            for i in 0..count as u64 {
                let at = k.b.build_int_add(addr, i32t.const_int(8 * i, false), "")?;
                k.ptx(
                    "mbarrier.init.shared::cta.b64 [$0], $1;",
                    "r,r",
                    &[at, i32t.const_int(1, false)],
                )?;
            }
            k.ptx_statement("fence.mbarrier_init.release.cluster;")
        })?;
        let f = self.intrinsic("llvm.nvvm.barrier0", &[])?;
        self.b.build_call(f, &[], "")?;
        Ok(())
    }

    /// TMA loads outside a pipeline ([`InstKind::TmaLoads`]): the block is
    /// done with the tiles (its accesses fenced for the async proxy, a
    /// barrier); thread 0 expects the bytes on the kernel's own barrier
    /// and issues the boxes. Their [`InstKind::TmaWait`] comes later.
    pub(super) fn tma_block_loads(
        &mut self,
        bytes: i64,
        after_stores: bool,
        loads: &[Inst],
    ) -> Result<()> {
        let (bar, _) = self.loads_barrier.expect("initialised at the start");
        let bytes = self.ctx.i32_type().const_int(bytes as u64, false);
        self.by_thread_zero(loads, &mut |b| {
            // A store's global writes, which the boxes may read.
            if after_stores {
                b.ptx_statement("cp.async.bulk.wait_group 0;")?;
            }
            b.ptx(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                "r,r",
                &[bar, bytes],
            )?;
            for l in loads {
                if let InstKind::TmaLoad {
                    map, origin, dst, ..
                } = &l.kind
                {
                    b.tma_load(*map, origin, dst, 1, bar)?;
                }
            }
            Ok(())
        })
    }

    /// Every thread waits for the kernel's own barrier to complete the
    /// phase it holds, then flips it ([`InstKind::TmaWait`]): loads and
    /// waits alternate on every path (the verifier's rule), so the waits
    /// before are the phases completed.
    pub(super) fn tma_wait(&mut self) -> Result<()> {
        let (bar, slot) = self.loads_barrier.expect("initialised at the start");
        let i32t = self.ctx.i32_type();
        let phase = self.b.build_load(i32t, slot, "phase")?.into_int_value();
        self.ptx(WAIT, "r,r", &[bar, phase])?;
        let next = self.b.build_xor(phase, i32t.const_int(1, false), "")?;
        self.b.build_store(slot, next)?;
        Ok(())
    }

    /// A TMA store ([`InstKind::TmaStores`]): the tile's writes fenced for
    /// the async proxy and finished; thread 0 waits for its earlier stores
    /// to complete where they may overlap (`ordered`) and issues the boxes
    /// as one bulk group. TMA reads the tile on its own time, until the
    /// store's [`InstKind::TmaStoreWait`].
    pub(super) fn tma_stores(&mut self, stores: &[Inst], ordered: bool) -> Result<()> {
        self.by_thread_zero(stores, &mut |b| {
            // An earlier store's global writes, which this one may not
            // overtake.
            if ordered {
                b.ptx_statement("cp.async.bulk.wait_group 0;")?;
            }
            for s in stores {
                if let InstKind::TmaStore { map, origin, src } = &s.kind {
                    b.tma_store(*map, origin, src)?;
                }
            }
            b.ptx_statement("cp.async.bulk.commit_group;")
        })
    }

    /// [`InstKind::TmaStoreWait`]: thread 0 waits until TMA has read every
    /// tile it stored but those of the newest `keep` bulk groups (`.read`:
    /// their writes to global memory complete on their own, before the
    /// kernel's end makes them visible); then the block may rewrite them.
    pub(super) fn tma_store_wait(&mut self, keep: usize) -> Result<()> {
        let wait = format!("cp.async.bulk.wait_group.read {keep};");
        self.on_thread_zero(&mut |b| b.ptx_statement(&wait))?;
        // A barrier: shared values loaded before it may be rewritten after.
        self.shared_loads.clear();
        self.block_barrier(false)
    }

    /// A block's own TMA copy: the threads' accesses to shared memory
    /// fenced for the async proxy and finished at a barrier, then `issue`
    /// on thread 0, with the values `boxes` need.
    fn by_thread_zero(
        &mut self,
        boxes: &[Inst],
        issue: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        self.block_barrier(true)?;
        self.on_thread_zero(&mut |b| {
            b.values_for(boxes)?;
            issue(b)
        })
    }

    /// `then` on thread 0 alone; in a pipeline's turn, on the first thread
    /// of the turn's warpgroup.
    fn on_thread_zero(&mut self, then: &mut dyn FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let i64t = self.ctx.i64_type();
        let mut tid = self.thread_index()?;
        if self.turn_barrier.is_some() {
            let lanes = i64t.const_int(WARPGROUP as u64 - 1, false);
            tid = self.b.build_and(tid, lanes, "")?;
        }
        let first = self
            .b
            .build_int_compare(IntPredicate::EQ, tid, i64t.const_zero(), "")?;
        self.branches(first, &mut |b, taken| if taken { then(b) } else { Ok(()) })
    }

    /// One box of tensor map `map` at `origin` from shared memory at `src`.
    fn tma_store(&mut self, map: usize, origin: &[usize], src: &tilec::ir::Addr) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let tilec::ir::Space::Shared(s) = src.space else {
            return Err(CodegenError::Llvm("a TMA box outside shared memory".into()));
        };
        let ptr = self.addr_ptr(src, self.ir.shared[s].elem)?;
        let smem = self.b.build_ptr_to_int(ptr, i32t, "")?;
        let map_addr = self.map_address(map)?;
        let mut args: Vec<IntValue<'ctx>> = vec![map_addr, smem];
        for o in origin {
            args.push(self.b.build_int_truncate(self.ints[o], i32t, "")?);
        }
        let r = origin.len();
        let coords: Vec<String> = (0..r).map(|i| format!("${}", i + 2)).collect();
        let text = format!(
            "cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];",
            coords.join(", ")
        );
        let constraints: Vec<&str> = ["l", "r"]
            .into_iter()
            .chain(std::iter::repeat_n("r", r))
            .collect();
        self.ptx(&text, &constraints.join(","), &args)
    }

    /// `prefetch(tile)`'s box ([`InstKind::TmaPrefetch`] `inst`) outside a
    /// pipeline's prefetch block: thread 0 issues it, no barrier (it
    /// touches no shared memory).
    pub(super) fn tma_prefetch_by_thread_zero(
        &mut self,
        inst: &Inst,
        map: usize,
        origin: &[usize],
    ) -> Result<()> {
        self.on_thread_zero(&mut |b| {
            b.values_for(std::slice::from_ref(inst))?;
            b.tma_prefetch(map, origin)
        })
    }

    /// The box of tensor map `map` at `origin` fetched into L2.
    fn tma_prefetch(&mut self, map: usize, origin: &[usize]) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let mut args: Vec<IntValue<'ctx>> = vec![self.map_address(map)?];
        for o in origin {
            args.push(self.b.build_int_truncate(self.ints[o], i32t, "")?);
        }
        let r = origin.len();
        let coords: Vec<String> = (1..=r).map(|i| format!("${i}")).collect();
        let text = format!(
            "cp.async.bulk.prefetch.tensor.{r}d.L2.global.tile [$0, {{{}}}];",
            coords.join(", ")
        );
        let constraints: Vec<&str> = std::iter::once("l")
            .chain(std::iter::repeat_n("r", r))
            .collect();
        self.ptx(&text, &constraints.join(","), &args)
    }

    /// The generic address of tensor map `map`, a `__grid_constant__`
    /// parameter.
    fn map_address(&mut self, map: usize) -> Result<IntValue<'ctx>> {
        let param = self
            .func
            .get_nth_param((self.first_map + map) as u32)
            .expect("declared")
            .into_pointer_value();
        Ok(self.b.build_ptr_to_int(param, self.ctx.i64_type(), "")?)
    }

    /// A barrier of the consumer threads alone (named barrier 1): the
    /// producer warpgroup has left. LLVM's intrinsic, which it knows to be
    /// convergent (inline PTX it would not).
    pub(super) fn consumer_barrier(&mut self) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let f = self.intrinsic("llvm.nvvm.barrier.sync.cnt", &[])?;
        let threads = i32t.const_int(self.ir.block_threads as u64, false);
        self.b
            .build_call(f, &[i32t.const_int(1, false).into(), threads.into()], "")?;
        Ok(())
    }

    /// The 32-bit shared address of stage `s`'s full or empty barrier.
    pub(super) fn barrier(&self, full: bool, s: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let Ring { base, stages, .. } = self.ring.expect("a pipeline kernel");
        let base = self.b.build_ptr_to_int(base, i32t, "")?;
        let slot = if full {
            s
        } else {
            self.b
                .build_int_add(s, i32t.const_int(stages as u64, false), "")?
        };
        let offset = self.b.build_int_mul(slot, i32t.const_int(8, false), "")?;
        Ok(self.b.build_int_add(base, offset, "")?)
    }

    /// Runs `f` in a block of its own where `cond` holds, then joins;
    /// returns (the end of that block, the block before it), for phis
    /// where they meet.
    pub(super) fn when(
        &mut self,
        cond: IntValue<'ctx>,
        name: &str,
        f: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<[BasicBlock<'ctx>; 2]> {
        let before = self.b.get_insert_block().expect("positioned");
        let then = self.ctx.append_basic_block(self.func, name);
        let join = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.done"));
        self.b.build_conditional_branch(cond, then, join)?;
        self.b.position_at_end(then);
        f(self)?;
        let end = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(join)?;
        self.b.position_at_end(join);
        Ok([end, before])
    }
}

/// The ring of a pipeline kernel: its barriers' base, the stage count,
/// the pipeline's lag (how many iterations after its own a stage is
/// released), and whether only wgmma reads the stages.
#[derive(Clone, Copy)]
pub(super) struct Ring<'ctx> {
    pub(super) base: PointerValue<'ctx>,
    pub(super) stages: u32,
    lag: u32,
    async_reads: bool,
}

/// Whether a pipeline's body reads its stages through wgmma alone: no
/// other instruction of it addresses a shared buffer whose bytes meet
/// those the `load` writes (an epilogue's own buffers of C may be read
/// and written in any way).
fn async_reads(shared: &[tilec::ir::Buffer], load: &[Inst], body: &[Inst]) -> bool {
    let sharers = tilec::ir::shared::byte_sharers(shared);
    let staged: Vec<usize> = tilec::ir::stores::stages(load)
        .iter()
        .flat_map(|&s| sharers[s].clone())
        .collect();
    let mut only = true;
    tilec::ir::for_each_atom(body, &mut |i| {
        if matches!(i.kind, InstKind::Wgmma { .. }) {
            return;
        }
        let mut touched = Vec::new();
        i.shared_buffers(&mut touched);
        only &= !touched.iter().any(|b| staged.contains(b));
    });
    only
}

/// In a pipeline iteration: its stage's full and empty barriers, the trip
/// (from the pipeline's first, across turns) and the loop's own (from its
/// start), 32 bits.
#[derive(Clone, Copy)]
pub(super) struct Stage<'ctx> {
    pub(super) full: IntValue<'ctx>,
    empty: IntValue<'ctx>,
    trip: IntValue<'ctx>,
    local: IntValue<'ctx>,
}
