//! The kernel builder: one kernel's IR -> the instructions of one LLVM
//! function in a module of its own.
//!
//! In: a verified [`KernelIr`] and an empty module. Out: the kernel's
//! function, with its parameters (read-only tensors `noalias` and
//! `readonly`), launch bounds and shared buffers. This file sets the
//! function up and emits integer values and the instruction sequence;
//! `control` emits loops and ifs, `memory` loads and stores (vectors,
//! registers), `guards` the tests of their guards,
//! `arith` the accumulation arithmetic, `cp_async` the asynchronous copies,
//! `tensor_core` mma.sync, `reduce` a reduce across blocks and `checked`
//! the `--checked` bound checks.

mod arith;
use arith::{constant, elem_type};
mod checked;
mod compute;
mod control;
mod cp_async;
mod guards;
mod inline_ptx;
mod memory;
mod operands;
pub(crate) use operands::linear;
mod pipeline;
mod reduce;
mod tensor_core;
mod trip;
mod turns;
mod warpgroup;

use crate::{CodegenError, Result, block_load_barriers, dynamic_shared_bytes};
use foldhash::{HashMap, HashMapExt};
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use tilec::ir::{CopyAtom, Inst, InstKind, IntDef, KernelIr, MmaAtom, Param};
use tilec_layout::int::Op as IntOp;

/// How a quotient or remainder divides (`KernelBuilder::divide`).
#[derive(Clone, Copy)]
pub(super) struct IntDivision {
    /// Both operands proved not negative.
    pub unsigned: bool,
    /// In 32 bits ([`tilec::ir::IntValue::narrow`]).
    pub narrow: bool,
}

/// The `ptx_kernel` calling convention.
const PTX_KERNEL_CC: u32 = 71;

/// Builds one kernel's function: the values and memory state that live
/// while its body is emitted, instruction by instruction.
pub(crate) struct KernelBuilder<'a, 'ctx> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    ir: &'a KernelIr,
    /// The architecture's number (90 for sm_90a): what instructions
    /// that only newer ones have (`red.add.v4.f32`, sm_90) may be used.
    sm: u32,
    b: Builder<'ctx>,
    func: FunctionValue<'ctx>,
    /// Integer values emitted so far.
    ints: HashMap<usize, IntValue<'ctx>>,
    /// Per value of the IR, whether it is proved not negative.
    pub(super) non_negative: Vec<bool>,
    /// A power of two each integer value is a multiple of.
    divisors: Vec<i64>,
    shared: Vec<PointerValue<'ctx>>,
    /// The current value of every register element: registers are SSA
    /// values (their indices are constants), carried around loops by phis.
    registers: Vec<Vec<Option<BasicValueEnum<'ctx>>>>,
    /// Shared-memory elements this thread has loaded since the last
    /// barrier, wait or shared store, by (buffer, index): another thread
    /// writing them meanwhile would be a race, so a second read reuses the
    /// first (a gemm reads each operand element once per k, not once per FMA).
    shared_loads: HashMap<(usize, usize), BasicValueEnum<'ctx>>,
    /// The gemm operands the instruction list being emitted reads from
    /// shared memory ([`operands::operands`]).
    operands: HashMap<operands::Operand, usize>,
    /// The guards' tests made so far in the current loop body or branch.
    tests: guards::Tests<'ctx>,
    /// The `--checked` messages made so far, one global each.
    messages: HashMap<String, PointerValue<'ctx>>,
    /// The kernel has wgmmas, which read shared memory through the async proxy.
    reads_async_proxy: bool,
    /// The registers (array, index) the wgmmas issued since the last wait
    /// for all groups write, which every wait pins (a wait that leaves a
    /// group in flight keeps them).
    in_flight: Vec<(usize, usize)>,
    /// Whether the wgmmas after the last `wgmma.fence` take A from
    /// registers, each then fenced on its own (see [`Self::wgmma_fence`]).
    fence_each: bool,
    /// A pipeline kernel's mbarrier ring.
    ring: Option<pipeline::Ring<'ctx>>,
    /// The 32-bit shared address of the kernel's own mbarrier for its TMA
    /// loads outside a pipeline, if it has any, and the thread's parity of
    /// the phase it waits for next; in a pipeline's turn, the turn's
    /// warpgroup's own.
    loads_barrier: Option<(IntValue<'ctx>, PointerValue<'ctx>)>,
    /// Where a pipeline's turns load: the thread's parity of its
    /// warpgroup's loads barrier.
    turn_loads_phase: Option<PointerValue<'ctx>>,
    /// In a pipeline iteration: its stage's barriers and its trip.
    stage: Option<pipeline::Stage<'ctx>>,
    /// In a pipeline's turn: the trips of the turns before it (i64), which
    /// its own trips count on from.
    trip_base: Option<IntValue<'ctx>>,
    /// In a pipeline's turns: the named barrier of the consumer's
    /// warpgroup (`2 + w`), at which a barrier there meets.
    turn_barrier: Option<IntValue<'ctx>>,
    /// The index of the first tensor-map parameter (after the block offset).
    first_map: usize,
    /// The loops around the instructions being emitted, whose values may be
    /// computed here.
    open_loops: Vec<usize>,
}

impl<'a, 'ctx> KernelBuilder<'a, 'ctx> {
    pub(crate) fn new(
        ctx: &'ctx Context,
        module: &'a Module<'ctx>,
        ir: &'a KernelIr,
        sm: u32,
    ) -> Result<Self> {
        let global_ptr = ctx.ptr_type(AddressSpace::from(1));
        let mut types: Vec<BasicMetadataTypeEnum> = Vec::new();
        for p in &ir.params {
            types.push(match p {
                Param::Tensor { .. } => global_ptr.into(),
                Param::Scalar { elem, .. } => elem_type(ctx, *elem).into(),
            });
        }
        types.extend(
            ir.extents
                .iter()
                .map(|_| BasicMetadataTypeEnum::from(ctx.i64_type())),
        );
        if ir.block_offset {
            types.extend([BasicMetadataTypeEnum::from(ctx.i32_type()); 3]);
        }
        let first_map = types.len();
        // Tensor maps: 128-byte structures passed by value, which TMA reads
        // in the parameter space (a grid constant; a copy in local memory
        // it could not read).
        types.extend(
            ir.tensor_maps
                .iter()
                .map(|_| BasicMetadataTypeEnum::from(ctx.ptr_type(AddressSpace::default()))),
        );
        // A reduce across blocks: its workspace and arrival counters, last;
        // across parts, then the runtime's `groups` and `most` (what it
        // sized them by, which the kernel checks its parts against).
        if let Some(r) = ir.block_reduction() {
            types.extend([BasicMetadataTypeEnum::from(global_ptr); 2]);
            if let InstKind::ReduceBlocks {
                across: tilec::ir::Groups::Parts { .. },
                ..
            } = r.kind
            {
                types.extend([BasicMetadataTypeEnum::from(ctx.i64_type()); 2]);
            }
        }
        let func = module.add_function(&ir.name, ctx.void_type().fn_type(&types, false), None);
        func.set_call_conventions(PTX_KERNEL_CC);
        for m in 0..ir.tensor_maps.len() {
            let at = inkwell::attributes::AttributeLoc::Param((first_map + m) as u32);
            let map_ty = ctx.i64_type().array_type(16);
            func.add_attribute(
                at,
                ctx.create_type_attribute(
                    inkwell::attributes::Attribute::get_named_enum_kind_id("byval"),
                    inkwell::types::AnyTypeEnum::ArrayType(map_ty),
                ),
            );
            func.add_attribute(
                at,
                ctx.create_enum_attribute(
                    inkwell::attributes::Attribute::get_named_enum_kind_id("align"),
                    64,
                ),
            );
            func.get_nth_param((first_map + m) as u32)
                .expect("declared")
                .set_name(&format!("map{m}"));
            let node = ctx.metadata_node(&[
                func.as_global_value().as_pointer_value().into(),
                ctx.metadata_string("grid_constant").into(),
                ctx.metadata_node(&[ctx
                    .i32_type()
                    .const_int((first_map + m + 1) as u64, false)
                    .into()])
                    .into(),
            ]);
            module
                .add_global_metadata("nvvm.annotations", &node)
                .map_err(|e| CodegenError::Llvm(e.to_string()))?;
        }
        // A tensor the kernel never writes is read-only and `noalias` (the
        // runtime allocates each tensor apart): its loads then go through
        // the non-coherent cache (`ld.global.nc`). A written tensor is not
        // marked `noalias`: it gave the same PTX for every example and test
        // kernel, while LLVM's sinking pass, for each arithmetic call (an
        // epilogue's fma) above a store to such a tensor, walked every use
        // of the tensor's pointer to prove it not captured, afresh for each
        // pair: 8% of bgemm_nt_sm80's build (160 of 1930 million
        // instructions).
        let noalias = ctx.create_enum_attribute(
            inkwell::attributes::Attribute::get_named_enum_kind_id("noalias"),
            0,
        );
        let readonly = ctx.create_enum_attribute(
            inkwell::attributes::Attribute::get_named_enum_kind_id("readonly"),
            0,
        );
        let written = ir.written_params();
        for (i, p) in ir.params.iter().enumerate() {
            if let Param::Tensor { name, .. } = p {
                let at = inkwell::attributes::AttributeLoc::Param(i as u32);
                if !written[i] {
                    func.add_attribute(at, noalias);
                    func.add_attribute(at, readonly);
                }
                func.get_nth_param(i as u32)
                    .expect("declared")
                    .set_name(name);
            }
        }
        for (i, e) in ir.extents.iter().enumerate() {
            func.get_nth_param((ir.params.len() + i) as u32)
                .expect("declared")
                .set_name(e);
        }
        if ir.block_offset {
            for (d, name) in ["offset.x", "offset.y", "offset.z"].iter().enumerate() {
                func.get_nth_param((ir.params.len() + ir.extents.len() + d) as u32)
                    .expect("declared")
                    .set_name(name);
            }
        }
        launch_bounds(ctx, module, func, "maxntidx", ir.launched_threads())?;
        // A pipeline's register split assumes the block's allocation at
        // launch is what these bounds give (one block a multiprocessor
        // unless asked otherwise). `min_blocks(1)` is said too, though one
        // block always fits: ptxas then takes the registers it likes, where
        // unasked it aims at more blocks (sgemm_streamk: 255 registers, not
        // 184; 1.01 of cuBLAS at 4096^3 with, 0.75 without, on an H100,
        // docs/performance.md version 60).
        let min_blocks = ir.min_blocks.or(ir.pipeline().map(|_| 1));
        if let Some(n) = min_blocks {
            launch_bounds(ctx, module, func, "minctasm", n)?;
        }
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(func, "entry");
        b.position_at_end(entry);
        Ok(KernelBuilder {
            ctx,
            module,
            ir,
            sm,
            b,
            func,
            ints: HashMap::new(),
            non_negative: ir.non_negative(),
            divisors: ir.divisors(),
            shared: Vec::new(),
            registers: ir
                .registers
                .iter()
                .map(|r| {
                    let init = r.init.map(|v| constant(ctx, r.elem, v));
                    vec![init; r.len as usize]
                })
                .collect(),
            shared_loads: HashMap::new(),
            operands: HashMap::new(),
            tests: guards::Tests::new(ir),
            messages: HashMap::new(),
            in_flight: Vec::new(),
            fence_each: false,
            reads_async_proxy: crate::first_wgmma(ir).is_some(),
            ring: None,
            loads_barrier: None,
            turn_loads_phase: None,
            stage: None,
            trip_base: None,
            turn_barrier: None,
            first_map,
            open_loops: Vec::new(),
        })
    }

    pub(crate) fn build(mut self) -> Result<()> {
        let dynamic = dynamic_shared_bytes(self.ir) > 0;
        if dynamic || self.ir.shared_aliases() {
            // Beyond 48 KB a block's shared memory must be dynamic: one extern
            // array, each buffer at its offset in it. Buffers that share
            // bytes lie in one array too (a static one).
            let bytes = self.ctx.i8_type();
            let (offsets, total) = self.ir.shared_offsets();
            let align = self.ir.shared.iter().map(|b| b.align).max().unwrap_or(16);
            let g = match dynamic {
                true => {
                    let g = self.module.add_global(
                        bytes.array_type(0),
                        Some(AddressSpace::from(3)),
                        &format!("{}_smem", self.ir.name),
                    );
                    g.set_linkage(inkwell::module::Linkage::External);
                    g.set_alignment(align as u32);
                    g.as_pointer_value()
                }
                false => {
                    let ty = bytes.array_type(total as u32);
                    self.shared_global(ty.into(), "smem", align as u32)
                }
            };
            for offset in offsets {
                let at = self.ctx.i64_type().const_int(offset as u64, false);
                // Safety: the offset lies inside the block's shared memory.
                let p = unsafe { self.b.build_in_bounds_gep(bytes, g, &[at], "")? };
                self.shared.push(p);
            }
        } else {
            for (i, buf) in self.ir.shared.iter().enumerate() {
                let ty = elem_type(self.ctx, buf.elem).array_type(buf.len as u32);
                let g = self.shared_global(ty.into(), &format!("s{i}"), buf.align as u32);
                self.shared.push(g);
            }
        }
        // Entry values are computed where the top-level statement that
        // first needs them begins, not all at the start: one the epilogue
        // alone needs (a guard) would otherwise stay live, in a register,
        // through the main loop. Those only an if's `otherwise` branch (or
        // a block reduction's body) needs are computed in it. The tensor
        // maps' are computed at once.
        let maps: Vec<usize> = self
            .ir
            .tensor_maps
            .iter()
            .flat_map(|m| m.dims.iter().flat_map(|d| [d.0, d.1]))
            .collect();
        self.entry_values(&maps)?;
        let barriers = block_load_barriers(self.ir);
        if barriers > 0 {
            self.init_block_loads(barriers)?;
        }
        if let Some(p) = self.ir.pipeline() {
            self.require_cluster()?;
            let ids = self.ir.entry_values_of(std::slice::from_ref(p));
            self.entry_values(&ids)?;
            self.split_roles(p)?;
        }
        let body = &self.ir.body;
        // The body's gemm operands are one list's, though its statements
        // are emitted one at a time (only entry-scope integers come between).
        self.operands = operands::operands(self.ir, body);
        for inst in body {
            let ids = self
                .ir
                .entry_values_beyond(std::slice::from_ref(inst), |v| self.ints.contains_key(&v));
            self.entry_values(&ids)?;
            self.insts_of(std::slice::from_ref(inst))?;
        }
        if self.peers() > 1 {
            // A peer's last releases land in this block's barriers: it
            // stays until every consumer of the cluster is done with them.
            self.cluster_barrier()?;
        }
        self.b.build_return(None)?;
        Ok(())
    }

    /// The address of a new shared-memory variable of the kernel, internal
    /// and uninitialised, named after it (`KERNEL_name`).
    fn shared_global(&self, ty: BasicTypeEnum<'ctx>, name: &str, align: u32) -> PointerValue<'ctx> {
        let g = self.module.add_global(
            ty,
            Some(AddressSpace::from(3)),
            &format!("{}_{name}", self.ir.name),
        );
        g.set_linkage(inkwell::module::Linkage::Internal);
        // Shared memory has no initial value in PTX.
        let undef: BasicValueEnum = match ty {
            BasicTypeEnum::ArrayType(t) => t.get_undef().into(),
            BasicTypeEnum::IntType(t) => t.get_undef().into(),
            _ => unreachable!("shared variables are arrays or integers"),
        };
        g.set_initializer(&undef);
        g.set_alignment(align);
        g.as_pointer_value()
    }

    /// Emits the entry-scope values `ids` (in definition order, operands
    /// first) that are not emitted yet, here.
    fn entry_values(&mut self, ids: &[usize]) -> Result<()> {
        for &id in ids {
            let v = &self.ir.ints[id];
            if v.scope.is_none() && !self.ints.contains_key(&id) {
                let value = self.int_value(v)?;
                self.ints.insert(id, value);
            }
        }
        Ok(())
    }

    /// `thread.x`, widened to i64.
    pub(super) fn thread_index(&self) -> Result<IntValue<'ctx>> {
        self.special("llvm.nvvm.read.ptx.sreg.tid.x")
    }

    /// `block.x`, `.y` or `.z` (`d`) as the kernel sees it: the hardware's,
    /// plus the launch's block offset where the entry takes one.
    pub(super) fn block_index(&self, d: u8) -> Result<IntValue<'ctx>> {
        let hardware = self.special(
            [
                "llvm.nvvm.read.ptx.sreg.ctaid.x",
                "llvm.nvvm.read.ptx.sreg.ctaid.y",
                "llvm.nvvm.read.ptx.sreg.ctaid.z",
            ][d as usize],
        )?;
        if !self.ir.block_offset {
            return Ok(hardware);
        }
        let at = self.ir.params.len() + self.ir.extents.len() + d as usize;
        let offset = self
            .func
            .get_nth_param(at as u32)
            .expect("declared")
            .into_int_value();
        let offset = self.b.build_int_z_extend(offset, self.ctx.i64_type(), "")?;
        Ok(self.b.build_int_nuw_add(hardware, offset, "")?)
    }

    fn int_value(&self, v: &tilec::ir::IntValue) -> Result<IntValue<'ctx>> {
        let i64t = self.ctx.i64_type();
        Ok(match &v.def {
            IntDef::Const(c) => i64t.const_int(*c as u64, true),
            IntDef::ThreadIdx => self.thread_index()?,
            IntDef::BlockIdx(d) => self.block_index(*d)?,
            IntDef::Extent(e) => self
                .func
                .get_nth_param((self.ir.params.len() + e) as u32)
                .expect("declared")
                .into_int_value(),
            IntDef::LoopVar(_) => unreachable!("loop counters are phis, made by the loop"),
            IntDef::Below(a, e) => self.b.build_int_z_extend(self.below(*a, *e)?, i64t, "")?,
            IntDef::Compare(op, a, c) => {
                let p = compute::int_predicate(*op);
                let holds = self
                    .b
                    .build_int_compare(p, self.ints[a], self.ints[c], "")?;
                self.b.build_int_z_extend(holds, i64t, "")?
            }
            IntDef::Swizzle(a, sw) => {
                // x ^ ((x & source_mask) shifted onto the target bits).
                let x = self.ints[a];
                let mask = i64t.const_int(sw.source_mask() as u64, false);
                let bits = self.b.build_and(x, mask, "")?;
                let by = i64t.const_int(sw.shift.unsigned_abs() as u64, false);
                let moved = if sw.shift >= 0 {
                    self.b.build_right_shift(bits, by, false, "")?
                } else {
                    self.b.build_left_shift(bits, by, "")?
                };
                self.b.build_xor(x, moved, "")?
            }
            IntDef::Bin(op, a, c) => {
                let how = IntDivision {
                    unsigned: self.non_negative[*a] && self.non_negative[*c],
                    narrow: v.narrow,
                };
                self.int_bin(*op, self.ints[a], self.ints[c], how)?
            }
        })
    }

    /// A stack slot of type `ty` in the entry block, where LLVM promotes
    /// it to registers (an alloca elsewhere would be a dynamic one).
    pub(super) fn entry_alloca(&mut self, ty: BasicTypeEnum<'ctx>) -> Result<PointerValue<'ctx>> {
        let here = self.b.get_insert_block();
        let entry = self.func.get_first_basic_block().expect("a body");
        match entry.get_first_instruction() {
            Some(first) => self.b.position_before(&first),
            None => self.b.position_at_end(entry),
        }
        let slot = self.b.build_alloca(ty, "")?;
        if let Some(b) = here {
            self.b.position_at_end(b);
        }
        Ok(slot)
    }

    /// The IR's integer operation `op` on two i64 values, a quotient or
    /// remainder divided as `how` says.
    pub(super) fn int_bin(
        &self,
        op: IntOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        how: IntDivision,
    ) -> Result<IntValue<'ctx>> {
        let i64t = self.ctx.i64_type();
        Ok(match op {
            IntOp::Add => self.b.build_int_nsw_add(x, y, "")?,
            IntOp::Sub => self.b.build_int_nsw_sub(x, y, "")?,
            IntOp::Mul => self.b.build_int_nsw_mul(x, y, "")?,
            IntOp::Div | IntOp::Mod => self.divide(op, x, y, how)?,
            IntOp::CeilDiv => {
                let one = i64t.const_int(1, false);
                let up = self
                    .b
                    .build_int_nsw_add(x, self.b.build_int_nsw_sub(y, one, "")?, "")?;
                self.divide(IntOp::Div, up, y, how)?
            }
            IntOp::Min | IntOp::Max => {
                let pred = if op == IntOp::Min {
                    IntPredicate::SLT
                } else {
                    IntPredicate::SGT
                };
                let c = self.b.build_int_compare(pred, x, y, "")?;
                self.b.build_select(c, x, y, "")?.into_int_value()
            }
        })
    }

    /// `x / y` or `x % y` (`op`) of two i64 values: unsigned where both
    /// are proved not negative (a shift or a mask by a power of two), else
    /// signed, as the CPU executor divides (truncating: `(block.x - 1) / 2`
    /// in block 0 is 0 on both); in 32 bits where the launch is proved to
    /// keep both within them (`narrow`), extended back.
    pub(super) fn divide(
        &self,
        op: IntOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        how: IntDivision,
    ) -> Result<IntValue<'ctx>> {
        let b = &self.b;
        let (x, y) = match how.narrow {
            true => {
                let i32t = self.ctx.i32_type();
                (
                    b.build_int_truncate(x, i32t, "")?,
                    b.build_int_truncate(y, i32t, "")?,
                )
            }
            false => (x, y),
        };
        let v = match (op, how.unsigned) {
            (IntOp::Div, true) => b.build_int_unsigned_div(x, y, "")?,
            (IntOp::Div, false) => b.build_int_signed_div(x, y, "")?,
            (_, true) => b.build_int_unsigned_rem(x, y, "")?,
            (_, false) => b.build_int_signed_rem(x, y, "")?,
        };
        let i64t = self.ctx.i64_type();
        Ok(match (how.narrow, how.unsigned) {
            (false, _) => v,
            (true, true) => b.build_int_z_extend(v, i64t, "")?,
            (true, false) => b.build_int_s_extend(v, i64t, "")?,
        })
    }

    /// A special register, widened to i64.
    fn special(&self, name: &str) -> Result<IntValue<'ctx>> {
        let f = self.intrinsic(name, &[])?;
        let v = self.b.build_call(f, &[], "")?.try_as_basic_value();
        let v = match v {
            inkwell::values::ValueKind::Basic(v) => v.into_int_value(),
            inkwell::values::ValueKind::Instruction(_) => {
                return Err(CodegenError::Llvm(format!("{name} returned nothing")));
            }
        };
        Ok(self.b.build_int_z_extend(v, self.ctx.i64_type(), "")?)
    }

    /// A call of `f` that returns a value.
    fn call_value(
        &self,
        f: FunctionValue<'ctx>,
        args: &[inkwell::values::BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        match self.b.build_call(f, args, "")?.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => Ok(v),
            inkwell::values::ValueKind::Instruction(_) => Err(CodegenError::Llvm(format!(
                "{} returned nothing",
                f.get_name().to_string_lossy()
            ))),
        }
    }

    fn intrinsic(&self, name: &str, types: &[BasicTypeEnum<'ctx>]) -> Result<FunctionValue<'ctx>> {
        inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, types))
            .ok_or_else(|| CodegenError::Llvm(format!("no intrinsic {name}")))
    }

    fn insts(&mut self, insts: &[Inst]) -> Result<()> {
        let outer = std::mem::replace(&mut self.operands, operands::operands(self.ir, insts));
        self.insts_of(insts)?;
        self.operands = outer;
        Ok(())
    }

    fn insts_of(&mut self, insts: &[Inst]) -> Result<()> {
        for (at, inst) in insts.iter().enumerate() {
            match &inst.kind {
                InstKind::ReduceBlocks {
                    registers,
                    across,
                    atomic,
                    group,
                    count,
                    index,
                    body,
                } => self.reduce_blocks(
                    *registers,
                    matches!(across, tilec::ir::Groups::Parts { .. }),
                    *atomic,
                    [*group, *count, *index],
                    body,
                )?,
                InstKind::Copy {
                    atom: CopyAtom::Scalar(elem),
                    src,
                    dst,
                } => {
                    let v = self.load(src, *elem)?;
                    self.store(dst, *elem, v)?;
                }
                InstKind::Copy {
                    atom: CopyAtom::Vector(elem, width),
                    src,
                    dst,
                } => {
                    let v = self.load_vector(src, *elem, *width)?;
                    self.store_vector(dst, *elem, *width, v)?;
                }
                InstKind::Copy {
                    atom: CopyAtom::Async(elem, width),
                    src,
                    dst,
                } => {
                    self.shared_loads.clear();
                    self.cp_async(*elem, *width, src, dst)?
                }
                InstKind::AsyncFence => self.cp_async_fence()?,
                InstKind::AsyncWait(n) => self.cp_async_wait(*n)?,
                InstKind::Mma {
                    atom: MmaAtom::Fma { ab, c: elem },
                    a,
                    b,
                    c,
                } => {
                    let (x, y, z) = (
                        self.load_acc(a, *ab)?,
                        self.load_acc(b, *ab)?,
                        self.load_acc(c, *elem)?,
                    );
                    let r = self.fma(*elem, x, y, z)?;
                    self.store_acc(c, *elem, r)?;
                }
                InstKind::MmaSync { atom, a, b, c } => self.mma_sync(atom, a, b, c)?,
                InstKind::Wgmma { atom, a, b, c } => self.wgmma(atom, a, b, c)?,
                InstKind::WgmmaFence => self.wgmma_fence(&insts[at + 1..])?,
                InstKind::ProxyFence => self.ptx_statement("fence.proxy.async.shared::cta;")?,
                InstKind::WgmmaCommit => {
                    self.fence_each = false;
                    self.ptx_statement("wgmma.commit_group.sync.aligned;")?
                }
                InstKind::WgmmaWait(n) => self.wgmma_wait(*n)?,
                InstKind::Matrix {
                    store,
                    elem,
                    count,
                    trans,
                    shared,
                    regs,
                } => match store {
                    false => self.ldmatrix(*elem, *count, *trans, shared, regs)?,
                    true => {
                        self.shared_loads.clear();
                        self.stmatrix(*elem, *count, *trans, shared, regs)?
                    }
                },
                InstKind::Copy {
                    atom: CopyAtom::Convert(from, to),
                    src,
                    dst,
                } => {
                    let v = self.load(src, *from)?;
                    let v = self.convert_float(v, *from, *to)?;
                    self.store(dst, *to, v)?;
                }
                InstKind::Compute { elem, value, dst } => self.compute(*elem, value, dst)?,
                InstKind::Fill { elem, dst, value } => {
                    let c = constant(self.ctx, *elem, *value);
                    self.store(dst, *elem, c)?;
                }
                InstKind::Barrier => {
                    self.shared_loads.clear();
                    // Each thread's generic-proxy shared writes (stores,
                    // landed cp.asyncs), fenced for the async proxy before
                    // the barrier that publishes them to the wgmmas after it.
                    self.block_barrier(self.reads_async_proxy)?
                }
                InstKind::Assert {
                    cond,
                    message,
                    file,
                    line,
                } => self.assert(*cond, &format!("{file}:{line}: {message}"))?,
                InstKind::Loop {
                    id,
                    start,
                    end,
                    body,
                    name,
                } => self.loop_(*id, name, *start, *end, body, None)?,
                InstKind::If {
                    cond,
                    then,
                    otherwise,
                } => self.if_(*cond, then, otherwise)?,
                InstKind::Pipeline {
                    id,
                    name,
                    start,
                    end,
                    body,
                    turn: None,
                    ..
                } => self.loop_(
                    *id,
                    name,
                    *start,
                    *end,
                    body,
                    Some(pipeline::Role::Consumer),
                )?,
                InstKind::Pipeline { turn: Some(_), .. } => self.consumer_turns(inst)?,
                InstKind::TmaLoad {
                    map,
                    origin,
                    dst,
                    parts,
                } => {
                    let full = self.stage.expect("in a pipeline iteration").full;
                    self.tma_load(*map, origin, dst, *parts, full)?
                }
                InstKind::TmaLoads {
                    bytes,
                    after_stores,
                    loads,
                } => self.tma_block_loads(*bytes, *after_stores, loads)?,
                InstKind::TmaWait => self.tma_wait()?,
                InstKind::TmaStores { stores, ordered } => self.tma_stores(stores, *ordered)?,
                InstKind::TmaStoreWait { keep } => self.tma_store_wait(*keep)?,
                InstKind::TmaStore { .. } => {
                    return Err(CodegenError::Llvm(
                        "a TMA store's box outside its block (the verifier's rule)".into(),
                    ));
                }
                InstKind::TmaPrefetch { map, origin } => {
                    self.tma_prefetch_by_thread_zero(inst, *map, origin)?
                }
            }
        }
        Ok(())
    }
}

/// `!nvvm.annotations = !{!{ptr @kernel, !"maxntidx", i32 N}}` (the block
/// size) or `"minctasm"` (blocks per multiprocessor): both bound the
/// registers a thread may use.
fn launch_bounds<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    f: FunctionValue<'ctx>,
    key: &str,
    value: i64,
) -> Result<()> {
    if value <= 0 {
        return Ok(());
    }
    let node = ctx.metadata_node(&[
        f.as_global_value().as_pointer_value().into(),
        ctx.metadata_string(key).into(),
        ctx.i32_type().const_int(value as u64, false).into(),
    ]);
    module
        .add_global_metadata("nvvm.annotations", &node)
        .map_err(|e| CodegenError::Llvm(e.to_string()))
}
