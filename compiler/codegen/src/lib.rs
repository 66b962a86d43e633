//! Codegen: kernel IR -> LLVM IR for `nvptx64-nvidia-cuda` -> PTX.
//!
//! In: a verified [`KernelIr`]. Out: LLVM IR text (`--emit llvm`) or PTX
//! text, after a sinking pass and the NVPTX back end. Global tensors are
//! `addrspace(1)` pointers, shared buffers `addrspace(3)` arrays, register
//! arrays SSA values (phis around loops); FMAs are `llvm.fma` (contraction
//! on purpose); the kernel has the `ptx_kernel` calling convention and its
//! block size as `maxntidx`. Invariant: the PTX is what LLVM made of a module
//! that passed LLVM's verifier; nothing is emitted by hand.
//!
//! This file is the crate's surface: what to compile for which architecture,
//! the passes and the back end, and joining the variants' texts. `builder`
//! turns one kernel's IR into the instructions of an LLVM function.

mod builder;

use builder::KernelBuilder;
use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple,
};
use tilec::ir::{Addr, CopyAtom, Inst, InstKind, IntDef, IntId, KernelIr, Space, for_each_atom};

/// Static shared memory a block may declare; beyond it, it must be dynamic.
pub const STATIC_SHARED_LIMIT: i64 = 48 * 1024;

/// The dynamic shared memory a kernel needs at launch: 0 when its buffers
/// fit in static shared memory, else their total (each 16-byte aligned).
pub fn dynamic_shared_bytes(ir: &KernelIr) -> i64 {
    let (_, total) = ir.shared_offsets();
    if total + ring_bytes(ir) > STATIC_SHARED_LIMIT {
        total
    } else {
        0
    }
}

/// The static shared memory of the kernel's mbarriers: two of 8 bytes a
/// pipeline stage and one a warpgroup taking turns, and 8 for each of its
/// barriers for TMA loads outside a pipeline's load block
/// ([`block_load_barriers`]).
pub fn ring_bytes(ir: &KernelIr) -> i64 {
    let ring = match ir.pipeline().map(|p| &p.kind) {
        Some(InstKind::Pipeline { stages, turn, .. }) => {
            16 * *stages as i64 + 8 * i64::from(turn.as_ref().map_or(0, |t| t.groups))
        }
        _ => 0,
    };
    ring + 8 * block_load_barriers(ir) as i64
}

/// The kernel's own mbarriers for TMA loads outside a pipeline's load
/// block: none without such loads; one for the block's, and where a
/// pipeline's turns load, one more a warpgroup taking turns (each counts
/// its own warpgroup's phases).
pub(crate) fn block_load_barriers(ir: &KernelIr) -> usize {
    let loads = |body: &[tilec::ir::Inst]| {
        let mut any = false;
        tilec::ir::for_each_inst(body, &mut |i| {
            any |= matches!(i.kind, InstKind::TmaLoads { .. });
        });
        any
    };
    if !loads(&ir.body) {
        return 0;
    }
    match ir.pipeline().map(|p| &p.kind) {
        Some(InstKind::Pipeline {
            turn: Some(t),
            body,
            after,
            ..
        }) if loads(body) || loads(after) => 1 + t.groups as usize,
        _ => 1,
    }
}

/// The PTX ISA version requested from LLVM 19 (`.version 8.5`).
const PTX_FEATURES: &str = "+ptx85";

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("LLVM: {0}")]
    Llvm(String),
    #[error("unknown GPU architecture `{0}`; use sm_80, sm_90, sm_90a, ...")]
    Arch(String),
    /// More shared memory a block than the architecture gives one.
    #[error(
        "`{kernel}` needs {bytes} bytes of shared memory a block; {arch} gives a block at most {limit} ({} KB)",
        limit / 1024
    )]
    SharedMemory {
        kernel: String,
        bytes: i64,
        limit: i64,
        arch: String,
    },
    #[error("`{kernel}` uses {feature}, which needs sm_{needs} or newer, not {arch}")]
    Feature {
        kernel: String,
        feature: &'static str,
        needs: u32,
        arch: String,
        /// The statement that needs it.
        span: tilec::span::Span,
    },
    /// A feature of one architecture only (`sm_90a`'s), which newer ones lack.
    #[error("`{kernel}` uses {feature}, which only sm_90a has, not {arch}")]
    ArchSpecific {
        kernel: String,
        feature: &'static str,
        arch: String,
        span: tilec::span::Span,
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

/// The instructions that need a newer GPU than some: what each is called
/// in messages and the compute capability it needs.
fn needs(kind: &InstKind) -> Option<(&'static str, u32)> {
    match kind {
        InstKind::Copy {
            atom: CopyAtom::Async(..),
            ..
        } => Some(("copy_async (cp.async)", 80)),
        InstKind::MmaSync { .. } => Some(("the tensor-core gemm (mma.sync m16n8k16)", 80)),
        InstKind::Matrix { store: false, .. } => Some(("ldmatrix", 75)),
        InstKind::Matrix { store: true, .. } => Some(("stmatrix", 90)),
        InstKind::TmaStore { .. } => Some(("a TMA store (cp.async.bulk.tensor)", 90)),
        InstKind::TmaLoad { .. } => Some(("a TMA load (cp.async.bulk.tensor)", 90)),
        InstKind::TmaPrefetch { .. } => {
            Some(("a TMA prefetch (cp.async.bulk.prefetch.tensor)", 90))
        }
        // A failing check waits for another thread of its warp to print,
        // which needs independent thread scheduling (Volta, sm_70).
        InstKind::Assert { .. } => Some(("--checked", 70)),
        InstKind::Compute { value, .. } => {
            let mut ops = Vec::new();
            value.unaries(&mut ops);
            ops.iter()
                .find(|u| u.approx() == Some(tilec::arith::Approx::Tanh))
                .map(|u| match u {
                    tilec::arith::Unary::FastGeluTanh => ("fast_gelu_tanh (tanh.approx.f32)", 75),
                    _ => ("fast_tanh (tanh.approx.f32)", 75),
                })
        }
        // Its bound check reports as an assert does.
        InstKind::ReduceBlocks {
            across: tilec::ir::Groups::Parts { .. },
            ..
        } => Some(("a reduce across parts", 70)),
        _ => None,
    }
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
    let arch = supported(ir, arch)?;
    Target::initialize_nvptx(&InitializationConfig::default());
    set_backend_options();
    compile_one(ir, arch, output)
}

/// The architecture the kernel's PTX targets when `arch` is asked for
/// ([`target_arch`]), or what in it `arch` lacks, at its statement: the
/// back end's first step, which `tilec check` takes too (no LLVM in it).
pub fn supported<'a>(ir: &KernelIr, arch: &'a str) -> Result<&'a str> {
    let Some(number) = arch_number(arch) else {
        return Err(CodegenError::Arch(arch.to_string()));
    };
    // sm_90a's own features first: a pipeline's TMA loads are refused as
    // the pipeline's, not as loads that sm_90 would have.
    let arch = target_arch(ir, arch)?;
    let mut missing = None;
    // for_each_inst: a reduce across parts (which has a body) needs sm_70 too.
    tilec::ir::for_each_inst(&ir.body, &mut |i| {
        if let Some((feature, needs)) = needs(&i.kind)
            && number < needs
            && missing.is_none()
        {
            missing = Some(CodegenError::Feature {
                kernel: ir.name.clone(),
                feature,
                needs,
                arch: arch.to_string(),
                span: i.span,
            });
        }
    });
    if let Some(e) = missing {
        return Err(e);
    }
    // The checker holds shared memory to sm_90's 227 KB; older parts give
    // a block less, and a kernel past it would build and never launch.
    let bytes = ir.shared_offsets().1 + ring_bytes(ir);
    match shared_limit(number) {
        Some(limit) if bytes > limit => Err(CodegenError::SharedMemory {
            kernel: ir.name.clone(),
            bytes,
            limit,
            arch: arch.to_string(),
        }),
        _ => Ok(arch),
    }
}

/// The most shared memory a block of compute capability `number` may
/// have (opted in to, past the static 48 KB), where known.
fn shared_limit(number: u32) -> Option<i64> {
    let kb = match number {
        70 | 72 => 96,
        75 => 64,
        80 | 87 => 163,
        86 | 89 | 120 | 121 => 99,
        90 | 100 | 101 | 103 => 227,
        _ => return None,
    };
    Some(kb * 1024)
}

/// The architecture a kernel's PTX targets when `arch` is asked for:
/// wgmma exists on sm_90a alone, so a kernel that uses it is built for
/// sm_90a when sm_90 is asked for, and refused for any other target (LLVM
/// would abort the process, or ptxas reject the PTX).
pub fn target_arch<'a>(ir: &KernelIr, arch: &'a str) -> Result<&'a str> {
    let pipeline = ir
        .pipeline()
        .map(|p| (p.span, "a pipeline (TMA, mbarriers and setmaxnreg of SM90)"));
    let wgmma = first_wgmma(ir).map(|s| (s, "wgmma (the SM90 tensor-core gemm)"));
    match pipeline.or(wgmma) {
        Some(_) if arch == "sm_90" || arch == "sm_90a" => Ok("sm_90a"),
        Some((span, feature)) => Err(CodegenError::ArchSpecific {
            kernel: ir.name.clone(),
            feature,
            arch: arch.to_string(),
            span,
        }),
        None => Ok(arch),
    }
}

/// The span of the kernel's first wgmma, if it has one.
fn first_wgmma(ir: &KernelIr) -> Option<tilec::span::Span> {
    let mut first = None;
    for_each_atom(&ir.body, &mut |i| {
        if matches!(i.kind, InstKind::Wgmma { .. }) && first.is_none() {
            first = Some(i.span);
        }
    });
    first
}

/// LLVM's back-end options, set once per process (LLVM parses them into
/// globals). `-disable-lsr`: lowering already strength-reduces addresses
/// (each index computed once, loop-invariant parts hoisted); LLVM's loop
/// strength reduction then gives each of a GEMM's row addresses an
/// induction variable of its own, which took 40% of the back end's time on
/// the tensor-core GEMMs and spilled registers in one of them
/// (docs/performance.md, version 8). `-disable-nvptx-load-store-vectorizer`:
/// the vectorizer runs among the IR passes instead, for the modules that
/// have something for it ([`ir_passes`]).
fn set_backend_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let args: [&std::ffi::CStr; 3] = [
            c"tilec",
            c"-disable-lsr",
            c"-disable-nvptx-load-store-vectorizer",
        ];
        let argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: `argv` holds `argv.len()` NUL-terminated strings that
        // outlive the call; LLVM copies what it keeps.
        unsafe {
            llvm_sys::support::LLVMParseCommandLineOptions(
                argv.len() as i32,
                argv.as_ptr(),
                std::ptr::null(),
            );
        }
    });
}

/// The texts of one kernel's variants as one: PTX modules under one header,
/// LLVM modules one after the other.
pub fn join(texts: &[String], output: Output) -> String {
    match output {
        Output::LlvmIr => texts.join("\n"),
        Output::Ptx => join_ptx(texts),
    }
}

/// The IR passes a module goes through before the back end, after
/// [`sink`]. The builder emits IR that needs no general optimization:
/// registers are SSA values, each shared element is loaded once between
/// barriers, integer arithmetic is hash-consed and hoisted by lowering,
/// shared accesses carry their proved alignment, loops are rotated; LLVM's
/// O3 pipeline made no better PTX and took 10 times as long. What is left
/// is the load-store vectorizer, which merges element accesses of shared
/// memory into 128-bit ones, where a kernel has some that it can merge
/// ([`mergeable_shared_accesses`]).
fn ir_passes(ir: &KernelIr) -> Option<&'static str> {
    mergeable_shared_accesses(ir, &ir.body).then_some("function(load-store-vectorizer)")
}

/// Whether one instruction list holds two element accesses of shared
/// memory that the load-store vectorizer could merge into a vector: in one
/// buffer, at indices a constant apart, within 16 bytes of each other
/// (element copies and conversions into or out of shared memory, an
/// expression's loads and its store, fills). It merges within a basic
/// block only, and an `if`'s or a loop's body is a list of its own (an
/// over-approximation: a guard or a check inside a list splits it too, and
/// then the pass runs for nothing). Nor can it see through a swizzle's XOR.
/// Elsewhere it found nothing but work: on bgemm_nt_sm80's guarded entries
/// (element copies into swizzled stages) 30% of that kernel's build (2.75
/// billion instructions, 1.93 without it), on sgemm_nt's copies (a
/// thread's elements 32 apart) 14%, for the same PTX. A gemm's FMA
/// operands the builder loads as vectors itself (`builder/operands.rs`);
/// copies choose their own vector atoms in lowering; ldmatrix and wgmma
/// read shared memory themselves. What is left for it: a guarded entry's
/// element copies into unswizzled stages, staged epilogues.
fn mergeable_shared_accesses(ir: &KernelIr, insts: &[Inst]) -> bool {
    // (buffer, the index's non-constant terms, its constant in bytes)
    let mut here: Vec<(usize, Vec<IntId>, i64)> = Vec::new();
    let mut add = |a: &Addr| {
        if let Space::Shared(b) = a.space
            && !through_swizzle(ir, a.index)
        {
            let (terms, offset) = builder::linear(ir, a.index);
            here.push((b, terms, offset * ir.shared[b].elem.bytes()));
        }
    };
    for i in insts {
        if i.kind
            .bodies()
            .into_iter()
            .any(|body| mergeable_shared_accesses(ir, body))
        {
            return true;
        }
        match &i.kind {
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                loads.into_iter().chain([dst]).for_each(&mut add);
            }
            InstKind::Copy {
                atom: CopyAtom::Scalar(_) | CopyAtom::Convert(..),
                src,
                dst,
            } => {
                add(src);
                add(dst);
            }
            InstKind::Fill { dst, .. } => add(dst),
            _ => {}
        }
    }
    here.sort_unstable();
    here.windows(2)
        .any(|w| (w[0].0, &w[0].1) == (w[1].0, &w[1].1) && (1..16).contains(&(w[1].2 - w[0].2)))
}

/// Whether integer `id` is computed through a swizzle.
fn through_swizzle(ir: &KernelIr, id: IntId) -> bool {
    let mut seen = foldhash::HashSet::from_iter([id]);
    let mut todo = vec![id];
    while let Some(v) = todo.pop() {
        if matches!(ir.ints[v].def, IntDef::Swizzle(..)) {
            return true;
        }
        todo.extend(ir.operands(v).into_iter().filter(|&o| seen.insert(o)));
    }
    false
}

/// One kernel, in a module of its own, through [`ir_passes`] and the NVPTX back end.
fn compile_one(ir: &KernelIr, arch: &str, output: Output) -> Result<String> {
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    let tm = target
        .create_target_machine(
            &triple,
            arch,
            PTX_FEATURES,
            // -O2: the back end's own IR passes (the straight-line scalar
            // optimizations NVPTX adds) and instruction selection; -O3 only
            // adds a second round of GVN, which finds nothing here.
            OptimizationLevel::Default,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| CodegenError::Arch(arch.to_string()))?;
    let ctx = Context::create();
    skip_straight_line_passes(&ctx);
    let module = ctx.create_module(&ir.name);
    module.set_triple(&triple);
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    let sm = arch_number(arch).ok_or_else(|| CodegenError::Arch(arch.to_string()))?;
    KernelBuilder::new(&ctx, &module, ir, sm)?.build()?;
    sink(&module);
    // The builder's module, as tilec's own pass left it.
    module
        .verify()
        .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    if let Some(passes) = ir_passes(ir) {
        module
            .run_passes(passes, &tm, PassBuilderOptions::create())
            .map_err(|e| CodegenError::Llvm(e.to_string()))?;
    }
    match output {
        Output::LlvmIr => Ok(module.print_to_string().to_string()),
        Output::Ptx => {
            let buf = tm
                .write_to_memory_buffer(&module, FileType::Assembly)
                .map_err(|e| CodegenError::Llvm(e.to_string()))?;
            Ok(call_sequences_in_order(&String::from_utf8_lossy(
                buf.as_slice(),
            )))
        }
    }
}

unsafe extern "C" {
    /// cpp/pass_gate.cpp: the context's pass gate refuses straight-line
    /// strength reduction, n-ary reassociation and the rounds of early
    /// CSE that follow it.
    fn tilec_skip_straight_line_passes(context: llvm_sys::prelude::LLVMContextRef);
    /// cpp/sink.cpp: moves values into the later blocks that alone use them.
    fn tilec_sink(module: llvm_sys::prelude::LLVMModuleRef);
}

/// Moves each value that only a later block uses (a guarded store's
/// address and value, behind its branch) into that block, which keeps
/// ptxas's register pressure down: bgemm_tn_sm90's `_guarded` and
/// `_guarded_vec` entries spill 52 and 4 bytes with it, 112 and 88
/// without (`ptxas -v`, 2026-12-03; the mma.sync GEMMs' are the same
/// either way). LLVM's `sink` pass did this before, asking alias
/// analysis about every load and every store below it (5% of a
/// tensor-core GEMM's build); cpp/sink.cpp moves the same values without
/// asking.
fn sink(module: &inkwell::module::Module) {
    // SAFETY: the module is alive and not used elsewhere meanwhile.
    unsafe { tilec_sink(module.as_mut_ptr()) }
}

/// Leaves three of NVPTX's straight-line scalar passes out of the back
/// end for modules of `ctx`; lowering has already hash-consed the integer
/// arithmetic, hoisted it and stepped addresses through loops, which is
/// what they look for. N-ary reassociation looks for sums that share terms
/// with one computed before and asks scalar evolution about every add,
/// multiply and address on the way: left out, a build of the wgmma and
/// mma.sync GEMMs does 14-16% less work, and the few instructions of PTX
/// it saved cost no kernel measured on the H200 any speed
/// (docs/performance.md, version 22). The rounds of early CSE after it
/// found nothing the round before it had not (the same PTX; 2-4% of a
/// build), and straight-line strength reduction changed one address
/// computation or two outside the main loops of the TMA kernels and
/// nothing elsewhere (7% of an mma.sync GEMM's build; version 23).
fn skip_straight_line_passes(ctx: &Context) {
    // SAFETY: the context is alive; the gate is a static that outlives it.
    unsafe { tilec_skip_straight_line_passes(ctx.raw()) }
}

/// `ptx` with the numbers of its call sequences' comments (`{ // callseq
/// 7, 0` ... `} // callseq 7`) counted from 0 in order. NVPTX draws them
/// from one counter for the whole process, which the variants' threads
/// share, so they came out in a different order from build to build (a
/// `--checked` build's calls to `vprintf`): the same source now gives the
/// same PTX, and the same seal. Nothing but these comments names them.
fn call_sequences_in_order(ptx: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::with_capacity(ptx.len());
    for line in ptx.split_inclusive('\n') {
        let Some(at) = line.find("// callseq ") else {
            out.push_str(line);
            continue;
        };
        let (head, rest) = line.split_at(at + "// callseq ".len());
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (n, tail) = rest.split_at(digits);
        let i = seen.iter().position(|&m| m == n).unwrap_or_else(|| {
            seen.push(n);
            seen.len() - 1
        });
        out.push_str(head);
        out.push_str(&i.to_string());
        out.push_str(tail);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn variants(example: &str) -> Vec<KernelIr> {
        let path = format!("{}/../../examples/{example}", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(path).expect("example");
        let kernels = tilec::pipeline::lower_source(&src).expect("lowers");
        kernels
            .into_iter()
            .flat_map(|(_, variants)| variants.into_iter().map(|l| l.ir))
            .collect()
    }

    /// cpp/sink.cpp moves what only a guarded store uses behind the
    /// store's branch, a load too when nothing below it in its block
    /// writes memory: copy's guarded entry loads its first element where
    /// it stores it, not before every thread's branch.
    #[test]
    fn values_only_a_guarded_store_uses_sink_behind_its_branch() {
        let copy = variants("copy.tile");
        let guarded = copy.iter().find(|ir| ir.name == "copy_guarded");
        // compile_variant, not compile_one: it registers the NVPTX target
        // first, which this test's thread may be the first to need.
        let llvm = compile_variant(guarded.expect("a guarded entry"), "sm_90", Output::LlvmIr);
        let llvm = llvm.expect("compiles");
        let (_, block) = llvm
            .split_once("\nstore:")
            .expect("a guarded store's block");
        let block = &block[..block.find("\n\n").unwrap_or(block.len())];
        for moved in [
            "load float",
            "getelementptr inbounds float, ptr addrspace(1) %B",
        ] {
            assert!(block.contains(moved), "{moved} not in\n{block}");
        }
    }

    /// The load-store vectorizer runs where it has something to merge: the
    /// per-element guarded variant of sgemm_nt_tv (which its build leaves
    /// out: aligned copies let the one with vectors run every extent)
    /// loads A's and B's elements under their guards and stores them into
    /// unswizzled shared memory four in a row (`st.shared.v4`). Not where
    /// no two element accesses of shared memory can be neighbours in a
    /// vector.
    #[test]
    fn the_vectorizer_runs_where_it_can_merge() {
        let path = format!(
            "{}/../../examples/sgemm_nt_tv.tile",
            env!("CARGO_MANIFEST_DIR")
        );
        let src = std::fs::read_to_string(path).expect("example");
        let k = tilec::check::kernel::check_source(&src)
            .expect("checks")
            .remove(0);
        let guarded = &tilec::lower::lower_variant(&k, tilec::lower::Variant::Guarded)
            .expect("lowers")
            .ir;
        assert!(mergeable_shared_accesses(guarded, &guarded.body));
        assert_eq!(ir_passes(guarded), Some("function(load-store-vectorizer)"));
        // Swizzled stages; a thread's elements 32 apart in sgemm_nt's.
        for ir in variants("bgemm_nt_sm80.tile")
            .into_iter()
            .chain(variants("sgemm_nt.tile"))
        {
            assert!(!mergeable_shared_accesses(&ir, &ir.body), "{}", ir.name);
            assert_eq!(ir_passes(&ir), None);
        }
    }

    /// An mma.sync takes the words ldmatrix loaded: of the six pairs of
    /// 16-bit values an m16n8k16 reads, only those carried around the
    /// k-loop (through phis) are repacked, a quarter here.
    #[test]
    fn mma_operands_are_the_words_ldmatrix_loaded() {
        for (example, pair) in [
            ("bgemm_tn_sm80.tile", "insertelement <2 x bfloat>"),
            ("hgemm_tn_sm80.tile", "insertelement <2 x half>"),
        ] {
            for ir in variants(example) {
                let ll = compile_variant(&ir, "sm_80", Output::LlvmIr).expect("compiles");
                let mmas = ll
                    .matches("call { float, float, float, float } @llvm.nvvm.mma")
                    .count();
                let packed = ll.matches(pair).count();
                assert!(
                    mmas > 0 && packed <= 3 * mmas,
                    "{example}: {packed} for {mmas}"
                );
            }
        }
    }
}
