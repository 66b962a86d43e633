//! Codegen: kernel IR -> LLVM IR for `nvptx64-nvidia-cuda` -> PTX.
//!
//! In: a verified [`KernelIr`]. Out: LLVM IR text (`--emit llvm`) or PTX
//! text, after LLVM's O3 pipeline. Global tensors are `addrspace(1)`
//! pointers, shared buffers `addrspace(3)` arrays, register arrays allocas
//! that SROA turns into registers; FMAs are `llvm.fma` (contraction on
//! purpose); the kernel has the `ptx_kernel` calling convention and its
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

/// Compiles kernels for `arch` (e.g. `sm_90`): one entry point each, named
/// by its IR, in one PTX module. Each kernel is its own LLVM module, built
/// and optimized on its own thread (a kernel's variants compile side by
/// side); the PTX modules are then joined under one header. LLVM IR output
/// lists the modules one after the other.
pub fn compile(irs: &[&KernelIr], arch: &str, output: Output) -> Result<String> {
    let Some(number) = arch_number(arch) else {
        return Err(CodegenError::Arch(arch.to_string()));
    };
    if let Some(ir) = irs.iter().find(|ir| uses_cp_async(&ir.body))
        && number < 80
    {
        return Err(CodegenError::Feature {
            kernel: ir.name.clone(),
            feature: "copy_async (cp.async)",
            needs: 80,
            arch: arch.to_string(),
        });
    }
    Target::initialize_nvptx(&InitializationConfig::default());
    let texts: Vec<Result<String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = irs
            .iter()
            .map(|ir| scope.spawn(move || compile_one(ir, arch, output)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(CodegenError::Llvm("a codegen thread panicked".into())))
            })
            .collect()
    });
    let texts = texts.into_iter().collect::<Result<Vec<String>>>()?;
    Ok(match output {
        Output::LlvmIr => texts.join("\n"),
        Output::Ptx => join_ptx(&texts),
    })
}

/// One kernel, in a module of its own, through LLVM's O3 pipeline.
fn compile_one(ir: &KernelIr, arch: &str, output: Output) -> Result<String> {
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    let tm = target
        .create_target_machine(
            &triple,
            arch,
            PTX_FEATURES,
            // The IR has been through O3 already; instruction selection at
            // -O2 makes the same PTX (checked on every example) and skips
            // the second round of GVN that -O3 adds: 40% less time on the
            // largest modules.
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
    if let Ok(d) = std::env::var("TILEC_RAW") {
        module.print_to_file(format!("{d}/{}.ll", ir.name)).unwrap();
    }
    let t0 = std::time::Instant::now();
    module
        .run_passes(
            &std::env::var("TILEC_PIPE").unwrap_or("default<O3>".into()),
            &tm,
            PassBuilderOptions::create(),
        )
        .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    match output {
        Output::LlvmIr => Ok(module.print_to_string().to_string()),
        Output::Ptx => {
            let t1 = std::time::Instant::now();
            let buf = tm
                .write_to_memory_buffer(&module, FileType::Assembly)
                .map_err(|e| CodegenError::Llvm(e.to_string()))?;
            eprintln!("{} opt {:?} isel {:?}", ir.name, t1 - t0, t1.elapsed());
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
    shared: Vec<PointerValue<'ctx>>,
    registers: Vec<PointerValue<'ctx>>,
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
        for (i, p) in ir.params.iter().enumerate() {
            if let Param::Tensor { name, .. } = p {
                func.add_attribute(inkwell::attributes::AttributeLoc::Param(i as u32), noalias);
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
            shared: Vec::new(),
            registers: Vec::new(),
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
                offset += (buf.len as u64 * elem_bytes(buf.elem) as u64).div_ceil(16) * 16;
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
        for (i, buf) in self.ir.registers.iter().enumerate() {
            let ty = elem_type(self.ctx, buf.elem).array_type(buf.len as u32);
            let p = self.b.build_alloca(ty, &format!("r{i}"))?;
            self.registers.push(p);
        }
        for (i, buf) in self.ir.registers.iter().enumerate() {
            if let Some(v) = buf.init {
                for k in 0..buf.len {
                    let at = self.element_ptr(
                        Space::Registers(i),
                        self.ctx.i64_type().const_int(k as u64, false),
                        buf.elem,
                    )?;
                    let c = self.constant(buf.elem, v);
                    self.b.build_store(at, c)?;
                }
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
                    // Lowering proved both addresses aligned to the vector's size.
                    let ty = vector_type(self.ctx, *elem, *width);
                    let align = (*width as i64 * elem_bytes(*elem)) as u32;
                    let v = self.b.build_load(ty, self.addr_ptr(src, *elem)?, "")?;
                    let load =
                        inkwell::values::BasicValue::as_instruction_value(&v).ok_or_else(|| {
                            CodegenError::Llvm("a load that is no instruction".into())
                        })?;
                    set_alignment(load, align)?;
                    let st = self.b.build_store(self.addr_ptr(dst, *elem)?, v)?;
                    set_alignment(st, align)?;
                }
                InstKind::Copy {
                    atom: CopyAtom::Async(elem, width),
                    src,
                    dst,
                } => self.cp_async(*elem, *width, src, dst)?,
                InstKind::AsyncFence => {
                    let f = self.intrinsic("llvm.nvvm.cp.async.commit.group", &[])?;
                    self.b.build_call(f, &[], "")?;
                }
                InstKind::AsyncWait(n) => {
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
                    let c = self.constant(*elem, *value);
                    self.store(dst, *elem, c)?;
                }
                InstKind::Barrier => {
                    let f = self.intrinsic("llvm.nvvm.barrier0", &[])?;
                    self.b.build_call(f, &[], "")?;
                }
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

    /// One cp.async of `width` elements (4, 8 or 16 bytes, aligned, as the
    /// verifier checked). 16 bytes go through L2 only (`.cg`): the data is
    /// bound for shared memory, so L1 would only hold a second copy. A
    /// guarded source outside its tensor reads 0 bytes from element 0 and
    /// fills the destination with zeros.
    fn cp_async(&self, elem: Elem, width: u32, src: &Addr, dst: &Addr) -> Result<()> {
        let bytes = elem_bytes(elem) as u64 * width as u64;
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

    fn loop_(
        &mut self,
        id: usize,
        name: &str,
        start: usize,
        end: usize,
        body: &[Inst],
    ) -> Result<()> {
        let i64t = self.ctx.i64_type();
        let pre = self.b.get_insert_block().expect("positioned");
        let head = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.head"));
        let bodyb = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.body"));
        let exit = self
            .ctx
            .append_basic_block(self.func, &format!("{name}.exit"));
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(i64t, name)?;
        phi.add_incoming(&[(&self.ints[&start], pre)]);
        let counter = phi.as_basic_value().into_int_value();
        let go = self
            .b
            .build_int_compare(IntPredicate::SLT, counter, self.ints[&end], "")?;
        self.b.build_conditional_branch(go, bodyb, exit)?;
        self.b.position_at_end(bodyb);
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
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(exit);
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
            Space::Registers(r) => self.registers[r],
        };
        // Safety: indices are in bounds: registers and shared by the verifier
        // and lowering, global ones by the runtime's launch-time bound check.
        Ok(unsafe { self.b.build_in_bounds_gep(ty, base, &[index], "")? })
    }

    fn addr_ptr(&self, a: &Addr, elem: Elem) -> Result<PointerValue<'ctx>> {
        self.element_ptr(a.space, self.ints[&a.index], elem)
    }

    /// `guard > 0`, for a guarded access.
    fn inside(&self, a: &Addr) -> Result<Option<IntValue<'ctx>>> {
        let Some(g) = a.guard else { return Ok(None) };
        let zero = self.ctx.i64_type().const_zero();
        Ok(Some(self.b.build_int_compare(
            IntPredicate::SGT,
            self.ints[&g],
            zero,
            "",
        )?))
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

    /// A load; a guarded one reads element 0 (always there) when outside
    /// and yields zero, so that no branch is needed.
    fn load(&self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let ty = elem_type(self.ctx, elem);
        match self.inside(a)? {
            None => Ok(self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?),
            Some(ok) => {
                let v = self.b.build_load(ty, self.read_ptr(a, ok, elem)?, "")?;
                Ok(self.b.build_select(ok, v, ty.const_zero(), "")?)
            }
        }
    }

    /// A store; a guarded one is skipped when outside.
    fn store(&self, a: &Addr, elem: Elem, v: BasicValueEnum<'ctx>) -> Result<()> {
        let p = self.addr_ptr(a, elem)?;
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
    fn load_acc(&self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let v = self.load(a, elem)?;
        Ok(match elem {
            Elem::F16 | Elem::Bf16 => self
                .b
                .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
                .into(),
            _ => v,
        })
    }

    fn store_acc(&self, a: &Addr, elem: Elem, v: BasicValueEnum<'ctx>) -> Result<()> {
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

    fn constant(&self, elem: Elem, v: f64) -> BasicValueEnum<'ctx> {
        match elem {
            Elem::I32 => self.ctx.i32_type().const_int(v as i64 as u64, true).into(),
            _ => elem_type(self.ctx, elem)
                .into_float_type()
                .const_float(v)
                .into(),
        }
    }
}

fn elem_bytes(e: Elem) -> i64 {
    e.bytes()
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
