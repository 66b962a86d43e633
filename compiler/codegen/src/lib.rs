//! Codegen: kernel IR -> LLVM IR for `nvptx64-nvidia-cuda` -> PTX.
//!
//! In: a verified [`KernelIr`]. Out: LLVM IR text (`--emit llvm`) or PTX
//! text, after a sinking pass and the NVPTX back end. Global tensors are
//! `addrspace(1)` pointers, shared buffers `addrspace(3)` arrays, register
//! arrays SSA values (phis around loops); FMAs are `llvm.fma` (contraction
//! on purpose); the kernel has the `ptx_kernel` calling convention and its
//! block size as `maxntidx`. Invariant: the PTX is what LLVM made of a module
//! that passed LLVM's verifier; nothing is emitted by hand.

use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple,
};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate, OptimizationLevel};
use std::collections::HashMap;
use tilec::check::program::Elem;
use tilec::lower::ir::{
    Addr, CopyAtom, Inst, InstKind, IntDef, KernelIr, MmaAtom, Param, ScalarRef, Space,
    for_each_atom,
};
use tilec_layout::int::Op as IntOp;

/// Static shared memory a block may declare; beyond it, it must be dynamic.
pub const STATIC_SHARED_LIMIT: i64 = 48 * 1024;

/// The dynamic shared memory a kernel needs at launch: 0 when its buffers
/// fit in static shared memory, else their total (each 16-byte aligned).
pub fn dynamic_shared_bytes(ir: &KernelIr) -> i64 {
    let total: i64 = ir
        .shared
        .iter()
        .map(|b| (b.len * b.elem.bytes() + 15) / 16 * 16)
        .sum();
    if total > STATIC_SHARED_LIMIT {
        total
    } else {
        0
    }
}

/// The PTX ISA version requested from LLVM 19 (`.version 8.5`).
const PTX_FEATURES: &str = "+ptx85";
/// The `ptx_kernel` calling convention.
const PTX_KERNEL_CC: u32 = 71;

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("LLVM: {0}")]
    Llvm(String),
    #[error("unknown GPU architecture `{0}`; use sm_80, sm_90, sm_90a, ...")]
    Arch(String),
    #[error("`{kernel}` uses {feature}, which needs sm_{needs} or newer, not {arch}")]
    Feature {
        kernel: String,
        feature: &'static str,
        needs: u32,
        arch: String,
    },
}

/// The compute capability of `sm_90a` and friends: 90.
fn arch_number(arch: &str) -> Option<u32> {
    let digits: String = arch
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether any instruction of `insts` is a cp.async.
fn uses_cp_async(insts: &[Inst]) -> bool {
    let mut any = false;
    tilec::lower::ir::for_each_atom(insts, &mut |i| {
        any |= matches!(
            i.kind,
            InstKind::Copy {
                atom: CopyAtom::Async(..),
                ..
            }
        );
    });
    any
}

impl From<inkwell::builder::BuilderError> for CodegenError {
    fn from(e: inkwell::builder::BuilderError) -> Self {
        CodegenError::Llvm(e.to_string())
    }
}

type Result<T> = std::result::Result<T, CodegenError>;

/// What to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// LLVM IR after optimization.
    LlvmIr,
    Ptx,
}

/// Compiles one kernel variant for `arch` (e.g. `sm_90`) into a module of
/// its own, with one entry point named by its IR. Modules share nothing, so
/// a caller compiles a kernel's variants side by side, on threads, and
/// [`join`]s the texts.
pub fn compile_variant(ir: &KernelIr, arch: &str, output: Output) -> Result<String> {
    let Some(number) = arch_number(arch) else {
        return Err(CodegenError::Arch(arch.to_string()));
    };
    if uses_cp_async(&ir.body) && number < 80 {
        return Err(CodegenError::Feature {
            kernel: ir.name.clone(),
            feature: "copy_async (cp.async)",
            needs: 80,
            arch: arch.to_string(),
        });
    }
    Target::initialize_nvptx(&InitializationConfig::default());
    compile_one(ir, arch, output)
}

/// The texts of one kernel's variants as one: PTX modules under one header,
/// LLVM modules one after the other.
pub fn join(texts: &[String], output: Output) -> String {
    match output {
        Output::LlvmIr => texts.join("\n"),
        Output::Ptx => join_ptx(texts),
    }
}

/// The IR passes a module goes through before the back end. The builder
/// emits IR that needs no general optimization: registers are SSA values,
/// each shared element is loaded once between barriers, integer arithmetic
/// is hash-consed and hoisted by lowering, shared accesses carry their
/// proved alignment (so the back end's load-store vectorizer merges them),
/// loops are rotated. What is left is to sink the hoisted arithmetic next
/// to its uses, which keeps ptxas's register pressure down (the guarded
/// sm80 GEMMs: 155 registers, no spills; 255 and 500 bytes of spills
/// without it). LLVM's O3 pipeline made no better PTX and took 10 times as long.
const IR_PASSES: &str = "function(sink)";

/// One kernel, in a module of its own, through [`IR_PASSES`] and the NVPTX back end.
fn compile_one(ir: &KernelIr, arch: &str, output: Output) -> Result<String> {
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    let tm = target
        .create_target_machine(
            &triple,
            arch,
            PTX_FEATURES,
            // -O2: the back end's own IR passes (the load-store vectorizer
            // among them) and instruction selection; -O3 only adds a second
            // round of GVN, which finds nothing here.
            OptimizationLevel::Default,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError::Arch(arch.to_string()))?;
    let ctx = Context::create();
    let module = ctx.create_module(&ir.name);
    module.set_triple(&triple);
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    KernelBuilder::new(&ctx, &module, ir)?.build()?;
    module
        .verify()
        .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    module
        .run_passes(IR_PASSES, &tm, PassBuilderOptions::create())
        .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    match output {
        Output::LlvmIr => Ok(module.print_to_string().to_string()),
        Output::Ptx => {
            let buf = tm
                .write_to_memory_buffer(&module, FileType::Assembly)
                .map_err(|e| CodegenError::Llvm(e.to_string()))?;
            Ok(String::from_utf8_lossy(buf.as_slice()).into_owned())
        }
    }
}

/// PTX modules of one target as one: the first whole, the others from the
/// line after their header's `.address_size` on. Their names cannot clash:
/// every global a kernel declares carries the kernel's name.
fn join_ptx(modules: &[String]) -> String {
    let mut out = String::new();
    for (i, m) in modules.iter().enumerate() {
        let body = match m.find(".address_size") {
            Some(at) if i > 0 => m[at..].split_once('\n').map_or("", |(_, rest)| rest),
            _ => m.as_str(),
        };
        out.push_str(body);
    }
    out
}

struct KernelBuilder<'a, 'ctx> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    ir: &'a KernelIr,
    b: Builder<'ctx>,
    func: FunctionValue<'ctx>,
    /// Integer values emitted so far.
    ints: HashMap<usize, IntValue<'ctx>>,
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
    /// The tests `value > 0` made so far in the current loop body.
    predicates: HashMap<usize, IntValue<'ctx>>,
    /// The `--checked` messages made so far, one global each.
    messages: HashMap<String, PointerValue<'ctx>>,
}

impl<'a, 'ctx> KernelBuilder<'a, 'ctx> {
    fn new(ctx: &'ctx Context, module: &'a Module<'ctx>, ir: &'a KernelIr) -> Result<Self> {
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
        let func = module.add_function(&ir.name, ctx.void_type().fn_type(&types, false), None);
        func.set_call_conventions(PTX_KERNEL_CC);
        // Tensor parameters never overlap (the runtime allocates each); this
        // lets LLVM keep loads of read-only tensors in the read-only path.
        let noalias = ctx.create_enum_attribute(
            inkwell::attributes::Attribute::get_named_enum_kind_id("noalias"),
            0,
        );
        // A tensor the kernel never writes is read-only too: its loads then
        // go through the non-coherent cache (`ld.global.nc`).
        let readonly = ctx.create_enum_attribute(
            inkwell::attributes::Attribute::get_named_enum_kind_id("readonly"),
            0,
        );
        let mut written = Vec::new();
        for_each_atom(&ir.body, &mut |i| {
            if let Some((dst, _)) = i.written()
                && let Space::Global(p) = dst.space
            {
                written.push(p);
            }
        });
        for (i, p) in ir.params.iter().enumerate() {
            if let Param::Tensor { name, .. } = p {
                let at = inkwell::attributes::AttributeLoc::Param(i as u32);
                func.add_attribute(at, noalias);
                if !written.contains(&i) {
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
        launch_bounds(ctx, module, func, "maxntidx", ir.block_threads)?;
        if let Some(n) = ir.min_blocks {
            launch_bounds(ctx, module, func, "minctasm", n)?;
        }
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(func, "entry");
        b.position_at_end(entry);
        Ok(KernelBuilder {
            ctx,
            module,
            ir,
            b,
            func,
            ints: HashMap::new(),
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
            predicates: HashMap::new(),
            messages: HashMap::new(),
        })
    }

    fn build(mut self) -> Result<()> {
        if dynamic_shared_bytes(self.ir) > 0 {
            // Beyond 48 KB a block's shared memory must be dynamic: one extern
            // array, each buffer at its 16-byte-aligned offset in it.
            let bytes = self.ctx.i8_type();
            let g = self.module.add_global(
                bytes.array_type(0),
                Some(AddressSpace::from(3)),
                &format!("{}_smem", self.ir.name),
            );
            g.set_linkage(inkwell::module::Linkage::External);
            g.set_alignment(16);
            let mut offset = 0u64;
            for buf in &self.ir.shared {
                let at = self.ctx.i64_type().const_int(offset, false);
                // Safety: the offset lies inside the dynamic allocation the runtime makes.
                let p = unsafe {
                    self.b
                        .build_in_bounds_gep(bytes, g.as_pointer_value(), &[at], "")?
                };
                self.shared.push(p);
                offset += (buf.len as u64 * buf.elem.bytes() as u64).div_ceil(16) * 16;
            }
        } else {
            for (i, buf) in self.ir.shared.iter().enumerate() {
                let ty = elem_type(self.ctx, buf.elem).array_type(buf.len as u32);
                let g = self.module.add_global(
                    ty,
                    Some(AddressSpace::from(3)),
                    &format!("{}_s{i}", self.ir.name),
                );
                g.set_linkage(inkwell::module::Linkage::Internal);
                g.set_initializer(&ty.get_undef());
                g.set_alignment(16);
                self.shared.push(g.as_pointer_value());
            }
        }
        self.scope_ints(None)?;
        let body = &self.ir.body;
        self.insts(body)?;
        self.b.build_return(None)?;
        Ok(())
    }

    /// Emits the integer values that live in `scope`, in order.
    fn scope_ints(&mut self, scope: Option<usize>) -> Result<()> {
        for (id, v) in self.ir.ints.iter().enumerate() {
            if v.scope == scope && !matches!(v.def, IntDef::LoopVar(_)) {
                let value = self.int_value(&v.def)?;
                self.ints.insert(id, value);
            }
        }
        Ok(())
    }

    fn int_value(&self, def: &IntDef) -> Result<IntValue<'ctx>> {
        let i64t = self.ctx.i64_type();
        Ok(match def {
            IntDef::Const(c) => i64t.const_int(*c as u64, true),
            IntDef::ThreadIdx => self.special("llvm.nvvm.read.ptx.sreg.tid.x")?,
            IntDef::BlockIdx(d) => {
                let hardware = self.special(
                    [
                        "llvm.nvvm.read.ptx.sreg.ctaid.x",
                        "llvm.nvvm.read.ptx.sreg.ctaid.y",
                        "llvm.nvvm.read.ptx.sreg.ctaid.z",
                    ][*d as usize],
                )?;
                if !self.ir.block_offset {
                    return Ok(hardware);
                }
                let at = self.ir.params.len() + self.ir.extents.len() + *d as usize;
                let offset = self
                    .func
                    .get_nth_param(at as u32)
                    .expect("declared")
                    .into_int_value();
                let offset = self.b.build_int_z_extend(offset, i64t, "")?;
                self.b.build_int_nuw_add(hardware, offset, "")?
            }
            IntDef::Extent(e) => self
                .func
                .get_nth_param((self.ir.params.len() + e) as u32)
                .expect("declared")
                .into_int_value(),
            IntDef::LoopVar(_) => unreachable!("loop counters are phis, made by the loop"),
            IntDef::Below(a, e) => self.b.build_int_z_extend(self.below(*a, *e)?, i64t, "")?,
            IntDef::Bin(op, a, c) => {
                let (x, y) = (self.ints[a], self.ints[c]);
                // Index values are non-negative (extents >= 1, indices >= 0): unsigned division is exact.
                match op {
                    IntOp::Add => self.b.build_int_nsw_add(x, y, "")?,
                    IntOp::Sub => self.b.build_int_nsw_sub(x, y, "")?,
                    IntOp::Mul => self.b.build_int_nsw_mul(x, y, "")?,
                    IntOp::Div => self.b.build_int_unsigned_div(x, y, "")?,
                    IntOp::Mod => self.b.build_int_unsigned_rem(x, y, "")?,
                    IntOp::CeilDiv => {
                        let one = i64t.const_int(1, false);
                        let t = self.b.build_int_nsw_add(
                            x,
                            self.b.build_int_nsw_sub(y, one, "")?,
                            "",
                        )?;
                        self.b.build_int_unsigned_div(t, y, "")?
                    }
                    IntOp::Min | IntOp::Max => {
                        let pred = if *op == IntOp::Min {
                            IntPredicate::SLT
                        } else {
                            IntPredicate::SGT
                        };
                        let c = self.b.build_int_compare(pred, x, y, "")?;
                        self.b.build_select(c, x, y, "")?.into_int_value()
                    }
                }
            }
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

    fn intrinsic(&self, name: &str, types: &[BasicTypeEnum<'ctx>]) -> Result<FunctionValue<'ctx>> {
        inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, types))
            .ok_or_else(|| CodegenError::Llvm(format!("no intrinsic {name}")))
    }

    fn insts(&mut self, insts: &[Inst]) -> Result<()> {
        for inst in insts {
            match &inst.kind {
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
                InstKind::AsyncFence => {
                    let f = self.intrinsic("llvm.nvvm.cp.async.commit.group", &[])?;
                    self.b.build_call(f, &[], "")?;
                }
                InstKind::AsyncWait(n) => {
                    self.shared_loads.clear();
                    let f = self.intrinsic("llvm.nvvm.cp.async.wait.group", &[])?;
                    let n = self.ctx.i32_type().const_int(*n as u64, false);
                    self.b.build_call(f, &[n.into()], "")?;
                }
                InstKind::Mma {
                    atom: MmaAtom::Fma(elem),
                    a,
                    b,
                    c,
                } => {
                    let (x, y, z) = (
                        self.load_acc(a, *elem)?,
                        self.load_acc(b, *elem)?,
                        self.load_acc(c, *elem)?,
                    );
                    let r = self.fma(*elem, x, y, z)?;
                    self.store_acc(c, *elem, r)?;
                }
                InstKind::Axpby {
                    elem,
                    alpha,
                    x,
                    beta,
                    y,
                } => {
                    let (xv, yv) = (self.load_acc(x, *elem)?, self.load_acc(y, *elem)?);
                    let (al, be) = (self.scalar(alpha, *elem)?, self.scalar(beta, *elem)?);
                    let ax = self.mul(*elem, al, xv)?;
                    let r = self.fma(*elem, be, yv, ax)?;
                    self.store_acc(y, *elem, r)?;
                }
                InstKind::Fill { elem, dst, value } => {
                    let c = constant(self.ctx, *elem, *value);
                    self.store(dst, *elem, c)?;
                }
                InstKind::Barrier => {
                    self.shared_loads.clear();
                    let f = self.intrinsic("llvm.nvvm.barrier0", &[])?;
                    self.b.build_call(f, &[], "")?;
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
                } => self.loop_(*id, name, *start, *end, body)?,
            }
        }
        Ok(())
    }

    /// A `--checked` bound check: when `cond` is 0, the thread prints
    /// `what` with its block and thread (CUDA's `printf`, which the driver
    /// flushes when the launch fails) and traps, which fails the launch.
    fn assert(&mut self, cond: usize, what: &str) -> Result<()> {
        let ok = self.positive(cond)?;
        let (fail, fine) = (
            self.ctx.append_basic_block(self.func, "check_failed"),
            self.ctx.append_basic_block(self.func, "checked"),
        );
        self.b.build_conditional_branch(ok, fine, fail)?;
        self.b.position_at_end(fail);
        let ptr = self.ctx.ptr_type(AddressSpace::default());
        let i32t = self.ctx.i32_type();
        let vprintf = self.module.get_function("vprintf").unwrap_or_else(|| {
            let ty = i32t.fn_type(&[ptr.into(), ptr.into()], false);
            self.module.add_function("vprintf", ty, None)
        });
        let fmt = match self.messages.get(what) {
            Some(p) => *p,
            None => {
                // Named after the entry: the variants' modules share one PTX file.
                let text = format!("{what} by block (%d,%d,%d) thread %d (tilec --checked)\n");
                let name = format!("{}_check{}", self.ir.name, self.messages.len());
                let p = self
                    .b
                    .build_global_string_ptr(&text, &name)?
                    .as_pointer_value();
                self.messages.insert(what.to_string(), p);
                p
            }
        };
        let args_ty = self.ctx.struct_type(&[i32t.into(); 4], false);
        // In the entry block: an alloca elsewhere would be a dynamic one.
        let here = self.b.get_insert_block();
        let entry = self.func.get_first_basic_block().expect("a body");
        match entry.get_first_instruction() {
            Some(first) => self.b.position_before(&first),
            None => self.b.position_at_end(entry),
        }
        let args = self.b.build_alloca(args_ty, "")?;
        if let Some(b) = here {
            self.b.position_at_end(b);
        }
        let who = [
            "llvm.nvvm.read.ptx.sreg.ctaid.x",
            "llvm.nvvm.read.ptx.sreg.ctaid.y",
            "llvm.nvvm.read.ptx.sreg.ctaid.z",
            "llvm.nvvm.read.ptx.sreg.tid.x",
        ];
        for (i, name) in who.iter().enumerate() {
            let v = self.special(name)?;
            let v = self.b.build_int_truncate(v, i32t, "")?;
            let at = self.b.build_struct_gep(args_ty, args, i as u32, "")?;
            self.b.build_store(at, v)?;
        }
        self.b.build_call(vprintf, &[fmt.into(), args.into()], "")?;
        let trap = self.intrinsic("llvm.trap", &[])?;
        self.b.build_call(trap, &[], "")?;
        self.b.build_unreachable()?;
        self.b.position_at_end(fine);
        Ok(())
    }

    /// One cp.async of `width` elements (4, 8 or 16 bytes, aligned, as the
    /// verifier checked). 16 bytes go through L2 only (`.cg`): the data is
    /// bound for shared memory, so L1 would only hold a second copy. A
    /// guarded source outside its tensor reads 0 bytes from element 0 and
    /// fills the destination with zeros.
    fn cp_async(&mut self, elem: Elem, width: u32, src: &Addr, dst: &Addr) -> Result<()> {
        let bytes = elem.bytes() as u64 * width as u64;
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let to = self.addr_ptr(dst, elem)?;
        match self.inside(src)? {
            None => {
                let f = self.intrinsic(
                    &format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}"),
                    &[],
                )?;
                let from = self.addr_ptr(src, elem)?;
                self.b.build_call(f, &[to.into(), from.into()], "")?;
            }
            Some(ok) => {
                let f = self.intrinsic(
                    &format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}.s"),
                    &[],
                )?;
                let from = self.read_ptr(src, ok, elem)?;
                let i32t = self.ctx.i32_type();
                let size =
                    self.b
                        .build_select(ok, i32t.const_int(bytes, false), i32t.const_zero(), "")?;
                self.b
                    .build_call(f, &[to.into(), from.into(), size.into()], "")?;
            }
        }
        Ok(())
    }

    /// A loop in rotated form (a test before it, then one at the end of
    /// each iteration), which ptxas schedules best. The counter and the
    /// registers the body writes are phis in the body, and again at the
    /// exit, reached from before the loop (no iteration) or from its end.
    fn loop_(
        &mut self,
        id: usize,
        name: &str,
        start: usize,
        end: usize,
        body: &[Inst],
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
        let any = self
            .b
            .build_int_compare(IntPredicate::SLT, first, last, "")?;
        self.b.build_conditional_branch(any, bodyb, exit)?;
        self.b.position_at_end(bodyb);
        let phi = self.b.build_phi(i64t, name)?;
        phi.add_incoming(&[(&first, pre)]);
        let mut carried = Vec::new();
        for (r, k) in written_registers(self.ir, body) {
            let elem = self.ir.registers[r].elem;
            let before = self.registers[r][k].unwrap_or_else(|| constant(self.ctx, elem, 0.0));
            let p = self.b.build_phi(elem_type(self.ctx, elem), "")?;
            p.add_incoming(&[(&before, pre)]);
            self.registers[r][k] = Some(p.as_basic_value());
            carried.push((r, k, before, p));
        }
        self.shared_loads.clear();
        self.predicates.clear();
        let counter = phi.as_basic_value().into_int_value();
        let var = self
            .ir
            .ints
            .iter()
            .position(|v| v.def == IntDef::LoopVar(id));
        if let Some(v) = var {
            self.ints.insert(v, counter);
        }
        self.scope_ints(Some(id))?;
        self.insts(body)?;
        let next = self
            .b
            .build_int_nsw_add(counter, i64t.const_int(1, false), "")?;
        let latch = self.b.get_insert_block().expect("positioned");
        phi.add_incoming(&[(&next, latch)]);
        let again = self
            .b
            .build_int_compare(IntPredicate::SLT, next, last, "")?;
        self.b.build_conditional_branch(again, bodyb, exit)?;
        self.b.position_at_end(exit);
        for (r, k, before, p) in carried {
            let after = self.registers[r][k].expect("set in the body");
            p.add_incoming(&[(&after, latch)]);
            let out = self.b.build_phi(after.get_type(), "")?;
            out.add_incoming(&[(&before, pre), (&after, latch)]);
            self.registers[r][k] = Some(out.as_basic_value());
        }
        self.shared_loads.clear();
        self.predicates.clear();
        Ok(())
    }

    fn element_ptr(
        &self,
        space: Space,
        index: IntValue<'ctx>,
        elem: Elem,
    ) -> Result<PointerValue<'ctx>> {
        let ty = elem_type(self.ctx, elem);
        let base = match space {
            Space::Global(p) => self
                .func
                .get_nth_param(p as u32)
                .expect("declared")
                .into_pointer_value(),
            Space::Shared(s) => self.shared[s],
            Space::Registers(_) => {
                return Err(CodegenError::Llvm(
                    "registers are values, not memory".into(),
                ));
            }
        };
        // Safety: indices are in bounds: registers and shared by the verifier
        // and lowering, global ones by the runtime's launch-time bound check.
        Ok(unsafe { self.b.build_in_bounds_gep(ty, base, &[index], "")? })
    }

    fn addr_ptr(&self, a: &Addr, elem: Elem) -> Result<PointerValue<'ctx>> {
        self.element_ptr(a.space, self.ints[&a.index], elem)
    }

    /// `guard > 0`, for a guarded access.
    fn inside(&mut self, a: &Addr) -> Result<Option<IntValue<'ctx>>> {
        a.guard.map(|g| self.positive(g)).transpose()
    }

    /// `value > 0` as an i1, made once per value and loop body. A guard is
    /// a `min` of per-mode tests (`below m, M` and `below n, N`): its test
    /// is the tests joined, each made once, so an 8x8 fragment needs 16
    /// comparisons, not 64.
    fn positive(&mut self, id: usize) -> Result<IntValue<'ctx>> {
        if let Some(p) = self.predicates.get(&id) {
            return Ok(*p);
        }
        let p = match self.ir.ints[id].def {
            IntDef::Bin(IntOp::Min, x, y) => {
                let (px, py) = (self.positive(x)?, self.positive(y)?);
                self.b.build_and(px, py, "")?
            }
            IntDef::Below(a, e) => self.below(a, e)?,
            _ => {
                let zero = self.ctx.i64_type().const_zero();
                self.b
                    .build_int_compare(IntPredicate::SGT, self.ints[&id], zero, "")?
            }
        };
        self.predicates.insert(id, p);
        Ok(p)
    }

    /// `0 <= a < e` as an i1: one unsigned comparison, which a negative
    /// `a` fails too.
    fn below(&self, a: usize, e: usize) -> Result<IntValue<'ctx>> {
        Ok(self
            .b
            .build_int_compare(IntPredicate::ULT, self.ints[&a], self.ints[&e], "")?)
    }

    /// Where a guarded read reads: its element while `ok`, else element 0,
    /// which is always there, so that no branch is needed.
    fn read_ptr(&self, a: &Addr, ok: IntValue<'ctx>, elem: Elem) -> Result<PointerValue<'ctx>> {
        let zero = self.ctx.i64_type().const_zero();
        let index = self
            .b
            .build_select(ok, self.ints[&a.index], zero, "")?
            .into_int_value();
        self.element_ptr(a.space, index, elem)
    }

    /// Register element `k` of the array at `a`'s index (a constant, as
    /// the verifier checked), plus `k`.
    fn register_slot(&self, a: &Addr, k: usize) -> Result<(usize, usize)> {
        match (a.space, &self.ir.ints[a.index].def) {
            (Space::Registers(r), IntDef::Const(at)) => Ok((r, *at as usize + k)),
            _ => Err(CodegenError::Llvm(
                "a register index that is no constant".into(),
            )),
        }
    }

    /// The alignment in bytes a shared access at `a` has for every thread:
    /// its index's known divisor, within the buffer's 16-byte alignment.
    fn shared_align(&self, a: &Addr, elem: Elem) -> u32 {
        (self.divisors[a.index] * elem.bytes()).clamp(1, 16) as u32
    }

    /// A load; a guarded one reads element 0 (always there) when outside
    /// and yields zero, so that no branch is needed. Registers are values;
    /// a shared element already loaded is reused.
    fn load(&mut self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let ty = elem_type(self.ctx, elem);
        if let Space::Registers(_) = a.space {
            let (r, k) = self.register_slot(a, 0)?;
            // Never written: the CPU executor reports such a read.
            return Ok(self.registers[r][k].unwrap_or_else(|| ty.const_zero()));
        }
        if let (Space::Shared(s), None) = (a.space, a.guard) {
            if let Some(v) = self.shared_loads.get(&(s, a.index)) {
                return Ok(*v);
            }
            let v = self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?;
            set_alignment(instruction(&v)?, self.shared_align(a, elem))?;
            self.shared_loads.insert((s, a.index), v);
            return Ok(v);
        }
        match self.inside(a)? {
            None => Ok(self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?),
            Some(ok) => {
                let v = self.b.build_load(ty, self.read_ptr(a, ok, elem)?, "")?;
                Ok(self.b.build_select(ok, v, ty.const_zero(), "")?)
            }
        }
    }

    /// `width` consecutive elements as one vector (lowering proved a
    /// memory address aligned to the vector's size).
    fn load_vector(&mut self, a: &Addr, elem: Elem, width: u32) -> Result<BasicValueEnum<'ctx>> {
        let ty = vector_type(self.ctx, elem, width);
        if let Space::Registers(_) = a.space {
            let mut v = ty.into_vector_type().get_undef();
            for k in 0..width {
                let (r, slot) = self.register_slot(a, k as usize)?;
                let x = self.registers[r][slot]
                    .unwrap_or_else(|| elem_type(self.ctx, elem).const_zero());
                let at = self.ctx.i32_type().const_int(k as u64, false);
                v = self.b.build_insert_element(v, x, at, "")?;
            }
            return Ok(v.into());
        }
        let v = self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?;
        set_alignment(instruction(&v)?, width * elem.bytes() as u32)?;
        Ok(v)
    }

    fn store_vector(
        &mut self,
        a: &Addr,
        elem: Elem,
        width: u32,
        v: BasicValueEnum<'ctx>,
    ) -> Result<()> {
        if let Space::Registers(_) = a.space {
            for k in 0..width {
                let (r, slot) = self.register_slot(a, k as usize)?;
                let at = self.ctx.i32_type().const_int(k as u64, false);
                let x = self
                    .b
                    .build_extract_element(v.into_vector_value(), at, "")?;
                self.registers[r][slot] = Some(x);
            }
            return Ok(());
        }
        if let Space::Shared(_) = a.space {
            self.shared_loads.clear();
        }
        let st = self.b.build_store(self.addr_ptr(a, elem)?, v)?;
        set_alignment(st, width * elem.bytes() as u32)
    }

    /// A store; a guarded one is skipped when outside.
    fn store(&mut self, a: &Addr, elem: Elem, v: BasicValueEnum<'ctx>) -> Result<()> {
        if let Space::Registers(_) = a.space {
            let (r, k) = self.register_slot(a, 0)?;
            self.registers[r][k] = Some(v);
            return Ok(());
        }
        let p = self.addr_ptr(a, elem)?;
        if let Space::Shared(_) = a.space {
            self.shared_loads.clear();
            let st = self.b.build_store(p, v)?;
            return set_alignment(st, self.shared_align(a, elem));
        }
        match self.inside(a)? {
            None => {
                self.b.build_store(p, v)?;
            }
            Some(ok) => {
                let (then, done) = (
                    self.ctx.append_basic_block(self.func, "store"),
                    self.ctx.append_basic_block(self.func, "stored"),
                );
                self.b.build_conditional_branch(ok, then, done)?;
                self.b.position_at_end(then);
                self.b.build_store(p, v)?;
                self.b.build_unconditional_branch(done)?;
                self.b.position_at_end(done);
            }
        }
        Ok(())
    }

    /// Loads in the accumulation type: f32 for every float type, i32 for i32.
    fn load_acc(&mut self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let v = self.load(a, elem)?;
        Ok(match elem {
            Elem::F16 | Elem::Bf16 => self
                .b
                .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
                .into(),
            _ => v,
        })
    }

    fn store_acc(&mut self, a: &Addr, elem: Elem, v: BasicValueEnum<'ctx>) -> Result<()> {
        let v = match elem {
            Elem::F16 | Elem::Bf16 => {
                let t = elem_type(self.ctx, elem).into_float_type();
                self.b
                    .build_float_trunc(v.into_float_value(), t, "")?
                    .into()
            }
            _ => v,
        };
        self.store(a, elem, v)
    }

    fn fma(
        &self,
        elem: Elem,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if elem == Elem::I32 {
            let p = self
                .b
                .build_int_mul(a.into_int_value(), b.into_int_value(), "")?;
            return Ok(self.b.build_int_add(p, c.into_int_value(), "")?.into());
        }
        let f32t = self.ctx.f32_type();
        let f = self.intrinsic("llvm.fma", &[f32t.into()])?;
        let r = self
            .b
            .build_call(f, &[a.into(), b.into(), c.into()], "")?
            .try_as_basic_value();
        match r {
            inkwell::values::ValueKind::Basic(v) => Ok(v),
            inkwell::values::ValueKind::Instruction(_) => {
                Err(CodegenError::Llvm("llvm.fma returned nothing".into()))
            }
        }
    }

    fn mul(
        &self,
        elem: Elem,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        Ok(if elem == Elem::I32 {
            self.b
                .build_int_mul(a.into_int_value(), b.into_int_value(), "")?
                .into()
        } else {
            self.b
                .build_float_mul(a.into_float_value(), b.into_float_value(), "")?
                .into()
        })
    }

    /// A scalar operand in the accumulation type of `elem`.
    fn scalar(&self, s: &ScalarRef, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        match s {
            ScalarRef::Literal(v) => Ok(match elem {
                Elem::I32 => self.ctx.i32_type().const_int(*v as i64 as u64, true).into(),
                _ => self.ctx.f32_type().const_float(*v).into(),
            }),
            ScalarRef::Param(p) => {
                let v = self.func.get_nth_param(*p as u32).expect("declared");
                let pelem = match &self.ir.params[*p] {
                    Param::Scalar { elem, .. } => *elem,
                    Param::Tensor { .. } => {
                        return Err(CodegenError::Llvm("a tensor used as a scalar".into()));
                    }
                };
                self.convert(v, pelem, elem)
            }
        }
    }

    /// Converts a scalar parameter of type `from` to the accumulation type of `to`.
    fn convert(
        &self,
        v: BasicValueEnum<'ctx>,
        from: Elem,
        to: Elem,
    ) -> Result<BasicValueEnum<'ctx>> {
        let f32t = self.ctx.f32_type();
        Ok(match (from, to) {
            (Elem::I32, Elem::I32) => v,
            (Elem::I32, _) => self
                .b
                .build_signed_int_to_float(v.into_int_value(), f32t, "")?
                .into(),
            (_, Elem::I32) => {
                let f: FloatValue = self.to_f32(v, from)?;
                self.b
                    .build_float_to_signed_int(f, self.ctx.i32_type(), "")?
                    .into()
            }
            _ => self.to_f32(v, from)?.into(),
        })
    }

    fn to_f32(&self, v: BasicValueEnum<'ctx>, from: Elem) -> Result<FloatValue<'ctx>> {
        Ok(match from {
            Elem::F16 | Elem::Bf16 => {
                self.b
                    .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
            }
            _ => v.into_float_value(),
        })
    }
}

fn constant(ctx: &Context, elem: Elem, v: f64) -> BasicValueEnum<'_> {
    match elem {
        Elem::I32 => ctx.i32_type().const_int(v as i64 as u64, true).into(),
        _ => elem_type(ctx, elem).into_float_type().const_float(v).into(),
    }
}

/// The register elements `insts` write, by (array, index), loops included.
fn written_registers(ir: &KernelIr, insts: &[Inst]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for_each_atom(insts, &mut |i| {
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

/// The instruction behind a value a builder call just made.
fn instruction<'ctx>(v: &BasicValueEnum<'ctx>) -> Result<inkwell::values::InstructionValue<'ctx>> {
    inkwell::values::BasicValue::as_instruction_value(v)
        .ok_or_else(|| CodegenError::Llvm("a load that is no instruction".into()))
}

fn set_alignment(i: inkwell::values::InstructionValue<'_>, align: u32) -> Result<()> {
    i.set_alignment(align)
        .map_err(|e| CodegenError::Llvm(e.to_string()))
}

fn vector_type(ctx: &Context, e: Elem, width: u32) -> BasicTypeEnum<'_> {
    match e {
        Elem::F32 => ctx.f32_type().vec_type(width).into(),
        Elem::F16 => ctx.f16_type().vec_type(width).into(),
        Elem::Bf16 => ctx.bf16_type().vec_type(width).into(),
        Elem::I32 => ctx.i32_type().vec_type(width).into(),
    }
}

fn elem_type(ctx: &Context, e: Elem) -> BasicTypeEnum<'_> {
    match e {
        Elem::F32 => ctx.f32_type().as_basic_type_enum(),
        Elem::F16 => ctx.f16_type().as_basic_type_enum(),
        Elem::Bf16 => ctx.bf16_type().as_basic_type_enum(),
        Elem::I32 => ctx.i32_type().as_basic_type_enum(),
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
