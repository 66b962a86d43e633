//! The kernel IR: what is left of a kernel once the layout algebra has run.
//!
//! Every tensor access is a base (a global parameter, a shared buffer, a
//! register array) plus an element index, and every index is an integer
//! value of a hash-consed table ([`KernelIr::ints`]): static parts are
//! constants, dynamic parts the fewest operations on thread and block
//! indices, extents and loop counters. A value sits in the outermost scope
//! where its operands exist, so everything loop-invariant is computed once,
//! before the loop. Operations on static shapes are unrolled into atoms
//! (CuTe's Copy_Atom and MMA_Atom): per-element, vector and cp.async
//! copies and an FMA today; mma.sync would be a new atom kind.
//!
//! Lowering makes it; the executor, `perf` and codegen take it. Between
//! them it can be printed (`to_text`, `tilec build --emit ir`), read back
//! ([`parse`]) and checked ([`verify`]).

mod approximation;
mod arith;
mod operands;
pub mod parse;
mod print;
pub mod shared;
mod sign;
pub mod stores;
mod uses;
pub mod verify;
mod walk;

use crate::check::program::Elem;
use crate::span::Span;
pub use approximation::coarsest_rounding;
pub use arith::Arith;
pub use operands::{Fragment, SmemOperand, WgmmaA};
pub use print::{NARROW_SUFFIX, op_name};
use std::fmt::{self, Write};
use tilec_layout::int::Op as IntOp;
use tilec_layout::{Builtin, Swizzle};
pub use uses::granules;
pub use walk::{for_each_atom, for_each_inst};

pub type IntId = usize;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntDef {
    Const(i64),
    /// `thread.x`.
    ThreadIdx,
    /// `block.x`, `block.y`, `block.z` (0, 1, 2).
    BlockIdx(u8),
    /// Run-time extent `i` of the kernel (its name is `KernelIr::extents[i]`).
    Extent(usize),
    /// The counter of loop `i`.
    LoopVar(usize),
    Bin(IntOp, IntId, IntId),
    /// 1 when `0 <= a < b`, else 0: one mode of a guard, coordinate `a`
    /// against extent `b`. Guards are built from these (joined by `min`)
    /// and never from symbolic differences, whose folding assumes dynamic
    /// values positive.
    Below(IntId, IntId),
    /// CuTe's `Swizzle<B,M,S>` of a shared-memory index: the element a
    /// swizzled buffer really holds at logical index `a` (an XOR of bits).
    Swizzle(IntId, Swizzle),
    /// 1 when the comparison (`Binary::Lt`, ... `Binary::Ne`) of `a` and `b`
    /// holds, else 0: an `if` condition (`min` is `&&`, `max` is `||`).
    Compare(crate::arith::Binary, IntId, IntId),
}

impl From<Builtin> for IntDef {
    fn from(b: Builtin) -> IntDef {
        match b {
            Builtin::Thread => IntDef::ThreadIdx,
            Builtin::Block(d) => IntDef::BlockIdx(d),
        }
    }
}

/// An integer value and the loop it belongs to (`None`: the kernel's entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntValue {
    pub def: IntDef,
    pub scope: Option<usize>,
    /// A quotient or remainder (a `Bin` of `Div`, `CeilDiv` or `Mod`) the
    /// entry computes in 32 bits (`div.i32`): its launches are proved to
    /// keep the dividend (for `CeilDiv`, `a + b - 1`) and the divisor
    /// within `-(2^31 - 1)..2^31`, where the result is the 64-bit one.
    /// A 64-bit division by a run-time divisor is a subroutine call on the
    /// GPU, whose registers spill in a main loop (docs/performance.md,
    /// version 52); lowering narrows those of the entries that have
    /// another to fall back on ([`crate::lower`]'s `narrow`).
    pub narrow: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Tensor parameter `i`, in global memory.
    Global(usize),
    Shared(usize),
    Registers(usize),
}

/// An element: `space[index]`; with a guard, only while the guard's value
/// is positive (a `min` of [`IntDef::Below`] tests): a guarded load outside
/// gives 0, a guarded store there does nothing (CuTe's predicated copy, with
/// clearing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addr {
    pub space: Space,
    pub index: IntId,
    pub guard: Option<IntId>,
}

/// How one element, or one vector of consecutive elements, moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyAtom {
    /// One element load and store.
    Scalar(Elem),
    /// `width` consecutive elements in one load and one store (up to 128
    /// bits), both addresses aligned to the vector's size.
    Vector(Elem, u32),
    /// `width` consecutive elements from global to shared memory by
    /// `cp.async` (4, 8 or 16 bytes, aligned): issued now, landed once a
    /// [`InstKind::AsyncWait`] retires its group. A guarded source outside
    /// its tensor fills zeros.
    Async(Elem, u32),
    /// One element converted between float types: to f16 and bf16 with
    /// round-to-nearest-even (exact to f32).
    Convert(Elem, Elem),
}

impl CopyAtom {
    /// Elements per copy.
    pub fn width(self) -> i64 {
        match self {
            CopyAtom::Scalar(_) | CopyAtom::Convert(..) => 1,
            CopyAtom::Vector(_, w) | CopyAtom::Async(_, w) => w as i64,
        }
    }
}

/// How one multiply-accumulate happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaAtom {
    /// `c = fma(a, b, c)` on one element, in f32 for floats (i32 for
    /// i32): a and b of type `ab` (f16 or bf16 widen exactly), c of `c`.
    Fma { ab: Elem, c: Elem },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarRef {
    /// Scalar parameter `i`.
    Param(usize),
    Literal(f64),
}

/// An instruction and the span of the `.tile` statement it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    pub span: Span,
}

impl Inst {
    pub fn at(span: Span, kind: InstKind) -> Inst {
        Inst { kind, span }
    }

    /// Where an atom writes, and how many consecutive elements (for a
    /// stmatrix, the row this lane gives); `None` for barriers, fences,
    /// waits and loops, and for warp instructions into registers.
    pub fn written(&self) -> Option<(&Addr, i64)> {
        match &self.kind {
            InstKind::Copy { atom, dst, .. } => Some((dst, atom.width())),
            InstKind::Matrix {
                store: true,
                shared,
                ..
            } => Some((shared, 8)),
            InstKind::MmaSync { .. } | InstKind::Matrix { .. } | InstKind::Wgmma { .. } => None,
            InstKind::Fill { dst, .. } => Some((dst, 1)),
            InstKind::Mma { c, .. } => Some((c, 1)),
            InstKind::Compute { dst, .. } => Some((dst, 1)),
            InstKind::Barrier
            | InstKind::AsyncFence
            | InstKind::AsyncWait(_)
            | InstKind::WgmmaFence
            | InstKind::ProxyFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_)
            | InstKind::Assert { .. }
            | InstKind::TmaLoad { .. }
            | InstKind::TmaPrefetch { .. }
            | InstKind::TmaLoads { .. }
            | InstKind::TmaWait
            | InstKind::TmaStores { .. }
            | InstKind::TmaStoreWait { .. }
            | InstKind::TmaStore { .. }
            | InstKind::Loop { .. }
            | InstKind::If { .. }
            | InstKind::ReduceBlocks { .. }
            | InstKind::Pipeline { .. } => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    /// A `--checked` build's bound check: when `cond` is 0, the thread
    /// reports `message` with the `.tile` line and stops the kernel.
    Assert {
        cond: IntId,
        message: String,
        file: String,
        line: u32,
    },
    Copy {
        atom: CopyAtom,
        src: Addr,
        dst: Addr,
    },
    Mma {
        atom: MmaAtom,
        a: Addr,
        b: Addr,
        c: Addr,
    },
    /// A warp's `c += a * b^T` on the tensor cores (PTX `mma.sync`): each
    /// lane gives its fragments' values in the atom's value order; the
    /// atom's layouts say which element of A, B and C each one is.
    MmaSync {
        atom: tilec_layout::MmaAtom,
        a: Fragment,
        b: Fragment,
        c: Fragment,
    },
    /// A warpgroup's `c += a * b^T` on the tensor cores (PTX
    /// `wgmma.mma_async` m64nNk16): B is read from shared memory through a
    /// descriptor, A too or from registers; each thread gives its
    /// accumulators in the atom's C value order. Asynchronous: it must
    /// stand between a [`InstKind::WgmmaFence`] and a
    /// [`InstKind::WgmmaCommit`], and its accumulators are not touched
    /// until a [`InstKind::WgmmaWait`].
    Wgmma {
        atom: tilec_layout::MmaAtom,
        a: WgmmaA,
        b: SmemOperand,
        c: Fragment,
    },
    /// Orders the warpgroup's earlier register writes before the wgmmas
    /// that follow (`wgmma.fence`).
    WgmmaFence,
    /// Orders the shared-memory writes of the generic proxy (stores,
    /// `cp.async`; the block's, after a barrier) before the async proxy's
    /// reads (`fence.proxy.async`): lowering puts one before each wgmma
    /// group whose operands' bytes such a write may have touched, and
    /// none where only TMA wrote them (`ir::shared::proxy_fences`).
    ProxyFence,
    /// Closes the thread's wgmmas issued so far into a group.
    WgmmaCommit,
    /// Waits until at most this many of the thread's wgmma groups are in flight.
    WgmmaWait(u32),
    /// A warp's `ldmatrix.sync.aligned.m8n8.x{count}[.trans].b16`, or with
    /// `store` its twin `stmatrix` (sm_90), which moves the same elements the
    /// other way: lane `8q + r` gives, in `shared`, the address of row `r`
    /// of 8x8 matrix `q` (16 consecutive bytes); each lane holds two 16-bit
    /// values of each matrix in `regs` (`2q`, `2q + 1`): row `l/4`, columns
    /// `2(l%4)` and `+1`, or with `trans` rows `2(l%4)` and `+1` of column
    /// `l/4`.
    Matrix {
        store: bool,
        elem: Elem,
        count: u32,
        trans: bool,
        shared: Addr,
        regs: Fragment,
    },
    /// `dst = value`, one element: in f32 when `elem` (dst's type) is a
    /// float, the result rounded to `elem` (nearest even); in wrapping i32
    /// arithmetic when it is i32.
    Compute {
        elem: Elem,
        value: Arith,
        dst: Addr,
    },
    Fill {
        elem: Elem,
        dst: Addr,
        value: f64,
    },
    Barrier,
    /// Closes this thread's group of async copies issued so far.
    AsyncFence,
    /// Waits until at most this many of the thread's fenced groups are in flight.
    AsyncWait(u32),
    /// `for var in start..end`, `var` being `IntDef::LoopVar(id)`.
    Loop {
        id: usize,
        name: String,
        start: IntId,
        end: IntId,
        body: Vec<Inst>,
    },
    /// `then` on the threads where `cond` is not 0, `otherwise` on the
    /// others. Instructions a whole warp, warpgroup or block issues stand
    /// only under conditions those threads agree on.
    If {
        cond: IntId,
        then: Vec<Inst>,
        otherwise: Vec<Inst>,
    },
    /// `reduce` across blocks (split-K, stream-K): each thread's register
    /// array `registers` (f32, whole) is added up over the `count` blocks
    /// of its `group` (this one part `index` of them), in `index` order
    /// by runs ([`REDUCE_RUN`]); the block that finishes the group's sum
    /// holds it and runs `body`, the others skip it. Every thread of the
    /// block reaches it (the kernel's top level across a grid dimension;
    /// across parts, in uniform loops and branches too, its group, part and
    /// count checked against the launch's bounds where it runs).
    /// `atomic`: each block adds its array into the group's one sum by
    /// atomics instead, in the order the blocks arrive; the last to
    /// arrive reads the sum (and leaves zeros for the next launch).
    ReduceBlocks {
        registers: usize,
        across: Groups,
        atomic: bool,
        group: IntId,
        count: IntId,
        index: IntId,
        body: Vec<Inst>,
    },
    /// A loop whose `load` runs on the producer warpgroup (threads
    /// `block_threads..block_threads + 128`, one of them issuing) into
    /// stage `(var - start) % stages` once the consumers have released it,
    /// and whose `body` runs on the block's threads once the stage's
    /// `bytes` have landed. Codegen makes the ring: per stage a full
    /// barrier (one arrival with the bytes expected, completed by the TMA
    /// transactions) and an empty one (an arrival per consumer thread; on a
    /// cluster, per warp of every block of it).
    /// At the top of a kernel, once; `load` holds only [`InstKind::TmaLoad`].
    ///
    /// With `lag` 1 the body is one wgmma group that stays in flight into
    /// the next trip (it ends in `wgmma.wait 1`): trip `t`'s stage is
    /// released at the end of trip `t + 1`, once that trip's wait has
    /// retired `t`'s group, and the pipeline is followed by `wgmma.wait 0`.
    /// The tensor cores then never drain between k-tiles.
    ///
    /// `prefetch` ([`InstKind::TmaPrefetch`] alone) is what the producer
    /// fetches into L2 once its last load is issued: the boxes of the
    /// block's TMA loads after the pipeline (the tile of C an epilogue
    /// reads), so that they come from L2, not DRAM, when the consumers
    /// get there.
    ///
    /// With `turn`, the loop runs once for each value of the turn's
    /// counter, on one consumer warpgroup in rotation, and `after` closes
    /// each turn on it (lagged: after a wait for the turn's last group);
    /// the trip is counted across the turns, so the producer walks them all
    /// as one loop, and a stage is released by its turn's warpgroup alone.
    Pipeline {
        id: usize,
        name: String,
        start: IntId,
        end: IntId,
        stages: u32,
        bytes: i64,
        lag: u32,
        turn: Option<Turn>,
        load: Vec<Inst>,
        prefetch: Vec<Inst>,
        body: Vec<Inst>,
        after: Vec<Inst>,
    },
    /// `parts` TMA boxes of tensor map `map`, stacked along its
    /// [`TensorMapIr::stacking_dim`], whose first element is at `origin` (per map dimension),
    /// into shared memory from `dst` on (the first box's first element,
    /// each box after the one before; the map's swizzle applies at byte
    /// addresses), completing on the enclosing pipeline stage's full
    /// barrier. Outside the tensor it fills zeros. With `parts` > 1 the
    /// blocks of the kernel's cluster (as many) load the same boxes, and
    /// the block of cluster rank `r` issues box `r` alone, multicast to
    /// them all.
    TmaLoad {
        map: usize,
        origin: Vec<IntId>,
        dst: Addr,
        parts: u32,
    },
    /// The box of tensor map `map` whose first element is at `origin`,
    /// fetched from global memory into L2 (`cp.async.bulk.prefetch`): a
    /// hint that touches no shared memory and that nothing waits for; a
    /// box past the tensor's edges fetches what lies inside.
    TmaPrefetch {
        map: usize,
        origin: Vec<IntId>,
    },
    /// A TMA load outside a pipeline, by the whole block: the threads'
    /// accesses to shared memory finished (a proxy fence and a barrier),
    /// then one thread expects `bytes` on the kernel's own mbarrier and
    /// issues `loads` (each an [`InstKind::TmaLoad`] of one box), which
    /// complete the barrier's next phase. Nothing touches their tiles
    /// until its [`InstKind::TmaWait`], which stands in the same list,
    /// before the next such load: so loads and waits alternate on every
    /// path, in a loop's body too, and the phase a wait waits for is the
    /// number of waits before it, mod 2 (a bit the threads flip at each).
    /// `after_stores`: thread 0 first waits until its TMA stores have
    /// written global memory (`cp.async.bulk.wait_group 0`), as a store
    /// does, where a store in flight may have written what the boxes read
    /// ([`stores`]).
    TmaLoads {
        bytes: i64,
        after_stores: bool,
        loads: Vec<Inst>,
    },
    /// Every thread waits for the kernel's own barrier to complete the
    /// phase of the [`InstKind::TmaLoads`] before it: they have landed.
    TmaWait,
    /// A TMA store, by the whole block: the threads' writes to shared
    /// memory made visible to TMA (`fence.proxy.async`) and finished (a
    /// barrier), then thread 0 issues `stores` (each an
    /// [`InstKind::TmaStore`]) as one bulk group: `ordered`, after the
    /// groups before it have written global memory (no box overtakes an
    /// earlier one); otherwise at once, its boxes missing those of every
    /// group that may be in flight ([`stores`]). TMA reads the buffers on
    /// its own time: an [`InstKind::TmaStoreWait`] stands before anything
    /// touches them again.
    TmaStores {
        stores: Vec<Inst>,
        ordered: bool,
    },
    /// Thread 0 waits until TMA has read the buffers of every TMA store it
    /// issued but the newest `keep` bulk groups, and the block (in a
    /// pipeline, its consumers) meets at a barrier: the buffers of the
    /// older stores may be written again. Lowering puts one before the
    /// first instruction after a store that touches its buffers (keeping
    /// the stores issued after it in flight), around a loop's back edge
    /// too, and before the next top-level instruction at the latest
    /// (`tma_store_waits`).
    TmaStoreWait {
        keep: usize,
    },
    /// One box of tensor map `map`, whose first element is at `origin` (per
    /// map dimension), from shared memory at `src` on (through the map's
    /// swizzle at byte addresses). Elements outside the tensor are not
    /// written.
    TmaStore {
        map: usize,
        origin: Vec<IntId>,
        src: Addr,
    },
}

/// A tensor map the kernel takes, encoded by the runtime at launch.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMapIr {
    /// The tensor parameter.
    pub param: usize,
    /// Per dimension, innermost first: the tensor's extent and stride in
    /// elements (entry-scope values) and the box's size.
    pub dims: Vec<(IntId, IntId, i64)>,
    pub swizzle_bytes: i64,
}

impl TensorMapIr {
    /// The dimension a multicast load stacks its boxes along: the
    /// outermost whose box is more than one element wide (a batch's
    /// dimension of 1 outside it changes no element's place in the box).
    pub fn stacking_dim(&self) -> usize {
        self.dims.iter().rposition(|d| d.2 > 1).unwrap_or(0)
    }

    /// The element swizzle TMA applies to a box landing in a buffer of
    /// `elem` aligned to its repeat (`Sw<B,4,3>` on bytes).
    pub fn swizzle(&self, elem: Elem) -> Option<Swizzle> {
        let bits = match self.swizzle_bytes {
            32 => 1,
            64 => 2,
            128 => 3,
            _ => return None,
        };
        Swizzle::new(bits, 4 - elem.bytes().trailing_zeros() as i64, 3).ok()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Tensor { name: String, elem: Elem },
    Scalar { name: String, elem: Elem },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub elem: Elem,
    pub len: i64,
    pub init: Option<f64>,
    /// Bytes the buffer's start is aligned to (shared memory): 16, or a
    /// swizzle's repeat, whose XOR pattern is defined on aligned blocks.
    pub align: i64,
    /// Its byte offset in the block's shared memory (shared memory; 0 for
    /// registers): buffers whose lifetimes do not meet share bytes
    /// ([`shared`]).
    pub at: i64,
    /// The `.tile` name of the buffer (`smA`, `tCrC`), for messages;
    /// empty for one the lowering adds.
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KernelIr {
    pub name: String,
    /// Tensors and scalars in source order; the extents follow them in the ABI.
    pub params: Vec<Param>,
    pub extents: Vec<String>,
    /// Whether the entry takes a block offset after the extents (three
    /// u32s): `block.*` is then the hardware block index plus the offset,
    /// so that the runtime can launch it on part of the grid.
    pub block_offset: bool,
    /// The static block size, for the kernel's launch bounds.
    pub block_threads: i64,
    /// Blocks that must fit on a multiprocessor at once, if the source asks.
    pub min_blocks: Option<i64>,
    /// Blocks per cluster along each grid dimension (1s: no cluster).
    pub cluster: [u32; 3],
    /// Whether the grid may end inside a cluster, where the runtime adds
    /// pad blocks past its end (a grid of whole clusters has none): they
    /// run the pipeline and write nothing.
    pub pads: bool,
    pub shared: Vec<Buffer>,
    pub registers: Vec<Buffer>,
    pub ints: Vec<IntValue>,
    /// The tensor maps its TMA loads use, passed after the block offset.
    pub tensor_maps: Vec<TensorMapIr>,
    pub body: Vec<Inst>,
}

pub use crate::check::kernel::pipeline::{
    MAX_STAGES, PRODUCER_THREADS, WARPGROUP, registers_at_launch,
};

impl KernelIr {
    /// Shared buffer `s` in messages: its `.tile` name, else `s0`.
    pub fn shared_label(&self, s: usize) -> String {
        label(&self.shared, 's', s)
    }

    /// Register array `r` in messages: its `.tile` name, else `r0`.
    pub fn register_label(&self, r: usize) -> String {
        label(&self.registers, 'r', r)
    }
}

fn label(all: &[Buffer], prefix: char, i: usize) -> String {
    buffer_label(all.iter().map(|b| b.name.as_str()), prefix, i)
}

/// A pipeline's turns: loop `id`'s counter `name` runs from `start` to
/// `end`, turn `j` on consumer warpgroup `(j - start) % groups` (the
/// block's threads `128 w ..`), each turn the pipeline's own loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub id: usize,
    pub name: String,
    pub start: IntId,
    pub end: IntId,
    pub groups: u32,
}

/// Buffer `i` of those named `names` ("" for none) by its name, with its
/// label too where another buffer has the name (`let tmp` in two loops):
/// `tmp/r3`; unnamed, `r3`. Lowering's checked builds name shared
/// buffers by it before the IR exists, so messages agree.
pub fn buffer_label<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    prefix: char,
    i: usize,
) -> String {
    let own = format!("{prefix}{i}");
    match names.clone().nth(i).filter(|n| !n.is_empty()) {
        Some(n) if names.filter(|o| *o == n).count() > 1 => format!("{n}/{own}"),
        Some(n) => n.to_string(),
        None => own,
    }
}

impl KernelIr {
    /// The kernel's pipeline, if it has one (at the top, by the verifier).
    pub fn pipeline(&self) -> Option<&Inst> {
        self.body
            .iter()
            .find(|i| matches!(i.kind, InstKind::Pipeline { .. }))
    }

    /// The threads a block is launched with: the block's, plus a
    /// pipeline's producer warpgroup.
    pub fn launched_threads(&self) -> i64 {
        self.block_threads
            + if self.pipeline().is_some() {
                PRODUCER_THREADS
            } else {
                0
            }
    }

    /// Each shared buffer's byte offset in the block's shared memory, and
    /// the bytes all of them take (each rounded up to 16).
    pub fn shared_offsets(&self) -> (Vec<i64>, i64) {
        let total = self
            .shared
            .iter()
            .map(|b| b.at + (b.len * b.elem.bytes() + 15) / 16 * 16)
            .max()
            .unwrap_or(0);
        (self.shared.iter().map(|b| b.at).collect(), total)
    }

    /// Whether two shared buffers share bytes.
    pub fn shared_aliases(&self) -> bool {
        let span = |b: &Buffer| (b.at, b.at + (b.len * b.elem.bytes() + 15) / 16 * 16);
        self.shared.iter().enumerate().any(|(i, a)| {
            self.shared[..i].iter().any(|b| {
                let ((a0, a1), (b0, b1)) = (span(a), span(b));
                a0 < b1 && b0 < a1
            })
        })
    }

    /// For every value of the table, a power of two it is always a
    /// multiple of (capped at 2^20): what the address alignment of an
    /// access at that index can rely on.
    pub fn divisors(&self) -> Vec<i64> {
        const CAP: i64 = 1 << 20;
        let pow2 = |c: i64| {
            if c == 0 {
                CAP
            } else {
                (1i64 << c.trailing_zeros()).min(CAP)
            }
        };
        let mut d: Vec<i64> = Vec::with_capacity(self.ints.len());
        for v in &self.ints {
            let x = match v.def {
                IntDef::Const(c) => pow2(c),
                IntDef::Bin(op, a, b) => {
                    let (da, db) = (d[a], d[b]);
                    match op {
                        // A sum, a remainder (a - q*b), or either operand.
                        IntOp::Add | IntOp::Sub | IntOp::Mod | IntOp::Min | IntOp::Max => {
                            da.min(db)
                        }
                        IntOp::Mul => (da * db).min(CAP),
                        IntOp::Div | IntOp::CeilDiv => 1,
                    }
                }
                IntDef::Below(..) | IntDef::Compare(..) => 1,
                // The swizzle flips no bit below its target field; Sw<0,M,S>
                // flips none (and its empty mask has no lowest bit to shift by).
                IntDef::Swizzle(a, sw) if sw.bits == 0 => d[a],
                IntDef::Swizzle(a, sw) => d[a].min(1 << sw.target_mask().trailing_zeros()),
                IntDef::ThreadIdx
                | IntDef::BlockIdx(_)
                | IntDef::Extent(_)
                | IntDef::LoopVar(_) => 1,
            };
            d.push(x);
        }
        d
    }
}

/// A [`InstKind::ReduceBlocks`] adds a group's parts in runs of this many
/// (in index order, each from 0.0), and the runs' sums after them (in
/// order, from 0.0) where there is more than one run; a group of at most
/// this many parts is one run. The last block of each run sums it, so the
/// sum's tail reads a run's partials, not a hundred: the order the CPU
/// executor adds in and the runtime sizes the workspace by.
pub const REDUCE_RUN: u64 = 8;

/// Which blocks a [`InstKind::ReduceBlocks`] adds up, and so how its
/// workspace is laid out: a group's parts lie its count (across a grid
/// dimension) or `most` (across parts) partials apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Groups {
    /// Those that differ only in grid dimension `0..3` (`block.z`: 2): one
    /// group per place in the other two, as many parts as the dimension's
    /// extent (the group's count).
    Dim(u8),
    /// `groups` groups of at most `most` parts each, launch values the
    /// runtime sizes the workspace and counters by.
    Parts { groups: IntId, most: IntId },
}

impl KernelIr {
    /// The kernel's first `reduce_blocks`, if it has one (across parts, a
    /// loop unrolled by lowering makes copies of one statement, all of the
    /// same groups: the verifier's rule): its launch takes a workspace and
    /// counters.
    pub fn block_reduction(&self) -> Option<&Inst> {
        fn find(insts: &[Inst]) -> Option<&Inst> {
            insts.iter().find_map(|i| match i.kind {
                InstKind::ReduceBlocks { .. } => Some(i),
                _ => i.kind.bodies().into_iter().find_map(find),
            })
        }
        find(&self.body)
    }

    /// Whether the kernel has a `reduce_blocks`.
    pub fn reduces_across_blocks(&self) -> bool {
        self.block_reduction().is_some()
    }
}

/// Whether `body` is one wgmma group and nothing else: a fence (after a
/// proxy fence, where one is needed), wgmmas, a commit, and a wait for
/// all but `wait` groups; before them, at most prefetches into L2 (under
/// `if`s or not), which touch neither registers nor shared memory. No other
/// instruction then touches the group's accumulators or operands, so it
/// may stay in flight into the next trip of a pipeline (lowering makes a
/// body of wait 0 lagged, with wait 1; the verifier holds a lagged body to
/// that form).
pub fn one_wgmma_group(body: &[Inst], wait: u32) -> bool {
    fn prefetches(i: &Inst) -> bool {
        match &i.kind {
            InstKind::TmaPrefetch { .. } => true,
            InstKind::If {
                then, otherwise, ..
            } => then.iter().chain(otherwise).all(prefetches),
            _ => false,
        }
    }
    let body = &body[body.iter().take_while(|i| prefetches(i)).count()..];
    let body = match body.first().map(|i| &i.kind) {
        Some(InstKind::ProxyFence) => &body[1..],
        _ => body,
    };
    let kinds: Vec<&InstKind> = body.iter().map(|i| &i.kind).collect();
    let [
        InstKind::WgmmaFence,
        wgmmas @ ..,
        InstKind::WgmmaCommit,
        InstKind::WgmmaWait(w),
    ] = &kinds[..]
    else {
        return false;
    };
    *w == wait && !wgmmas.is_empty() && wgmmas.iter().all(|k| matches!(k, InstKind::Wgmma { .. }))
}
