//! The whole pipeline for one file: source -> typed program -> kernel IR ->
//! PTX (or LLVM IR), with the manifest the runtime needs.

use tilec::check::program::{self, Kernel, ParamKind, Settings};
use tilec::diagnostic::Diagnostic;
use tilec::lower::Lowered;
use tilec_codegen::Output;
use tilec_runtime::manifest as m;

/// A compiled kernel: its variants (full tiles first, then guarded), one
/// module holding an entry point for each (PTX, or the LLVM modules one
/// after the other), and the manifest.
pub struct Compiled {
    pub kernel: Kernel,
    pub lowered: Vec<Lowered>,
    pub code: String,
    pub manifest: m::Manifest,
    /// The manifest's JSON as `tilec build` writes it: sealed with the
    /// PTX (unsealed for LLVM IR); empty where no module was built (a
    /// CPU run).
    pub json: String,
}

/// Why a file did not compile: diagnostics of the source, or a back-end error.
pub enum Failure {
    Source(Vec<Diagnostic>),
    Backend(String),
}

/// Checks every kernel of a source and lowers its variants.
pub fn lower_source(src: &str, opts: Options) -> Result<Vec<(Kernel, Vec<Lowered>)>, Failure> {
    tilec::pipeline::lower_source_with(src, opts.checked, opts.settings).map_err(Failure::Source)
}

/// What a build asks for besides the source and the target: `--checked`
/// (every access bound-checked, reporting lines of the named file) and
/// the values of tunables (`--set`, the tune cache, `tilec tune`).
#[derive(Clone, Copy)]
pub struct Options<'a> {
    pub checked: Option<&'a str>,
    pub settings: &'a Settings,
}

/// Checks, lowers and compiles every kernel of a source to PTX.
pub fn compile(src: &str, arch: &str, opts: Options) -> Result<Vec<Compiled>, Failure> {
    compile_as(src, arch, Output::Ptx, opts)
}

/// Checks, lowers and compiles every kernel of a source to `output`. Each
/// variant goes to the back end on a thread of its own as soon as it is
/// lowered, while the next ones are lowered: the variants share nothing
/// after lowering.
pub fn compile_as(
    src: &str,
    arch: &str,
    output: Output,
    opts: Options,
) -> Result<Vec<Compiled>, Failure> {
    let source = tilec_runtime::tuning::fingerprint(src);
    std::thread::scope(|s| {
        let mut backends = Backends::new(s);
        // Per kernel, its variants' names and back ends.
        let mut started: Vec<Vec<(String, usize)>> = Vec::new();
        let lowered = tilec::pipeline::lower_source_each(
            src,
            opts.checked,
            opts.settings,
            &mut |kernel, l| {
                let ir = l.ir.clone();
                started.resize_with(started.len().max(kernel + 1), Vec::new);
                let name = ir.name.clone();
                let at = backends.start(move || compile_variant(&ir, arch, output));
                started[kernel].push((name, at));
            },
        );
        // The manifests while the back ends run.
        let described: Vec<Described> = match &lowered {
            Ok(ks) => ks
                .iter()
                .map(|(k, l)| describe(k, l, arch, opts, &source))
                .collect(),
            Err(_) => Vec::new(),
        };
        // Every thread joined before anything is returned, whatever failed.
        let mut results: Vec<Option<Result<String, Failure>>> =
            backends.results().into_iter().map(Some).collect();
        let lowered = lowered.map_err(Failure::Source)?;
        debug_assert_eq!(lowered.len(), started.len(), "a back-end list per kernel");
        lowered
            .into_iter()
            .zip(started)
            .zip(described)
            .map(|(((kernel, lowered), mut mine), described)| {
                // The back ends started in the order lowering kept the
                // variants; their texts go in the variants' order.
                mine.sort_by_key(|(name, _)| lowered.iter().position(|l| &l.ir.name == name));
                let texts = mine
                    .iter()
                    .map(|&(_, at)| {
                        results[at].take().unwrap_or_else(|| {
                            Err(Failure::Backend("a back end's text taken twice".into()))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(assemble(kernel, lowered, described, texts, output))
            })
            .collect()
    })
}

/// Compiles a kernel's lowered variants to `output`, with its manifest
/// (`source`: the source file's fingerprint), each variant on a thread of
/// its own.
pub fn codegen(
    kernel: Kernel,
    lowered: Vec<Lowered>,
    arch: &str,
    output: Output,
    opts: Options,
    source: &str,
) -> Result<Compiled, Failure> {
    let (described, texts) = std::thread::scope(|s| {
        let mut backends = Backends::new(s);
        for l in &lowered {
            backends.start(move || compile_variant(&l.ir, arch, output));
        }
        let described = describe(&kernel, &lowered, arch, opts, source);
        let texts = backends
            .results()
            .into_iter()
            .collect::<Result<Vec<_>, _>>();
        (described, texts)
    });
    Ok(assemble(kernel, lowered, described, texts?, output))
}

/// Back ends running at once, at most: a file of thousands of kernels
/// would otherwise start a thread each, past what the system gives.
const MAX_BACKEND_THREADS: usize = 64;

/// The back ends of a build, each on a thread of its own, at most
/// [`MAX_BACKEND_THREADS`] running at once: past it, the oldest is waited
/// for before the next starts.
struct Backends<'s, 'e> {
    scope: &'s std::thread::Scope<'s, 'e>,
    work: Vec<Work<'s>>,
    running: std::collections::VecDeque<usize>,
}

impl<'s, 'e> Backends<'s, 'e> {
    fn new(scope: &'s std::thread::Scope<'s, 'e>) -> Self {
        Backends {
            scope,
            work: Vec::new(),
            running: std::collections::VecDeque::new(),
        }
    }

    /// Starts `job`; its index among the results.
    fn start<F>(&mut self, job: F) -> usize
    where
        F: FnOnce() -> Result<String, Failure> + Send + 's,
    {
        if self.running.len() >= MAX_BACKEND_THREADS
            && let Some(oldest) = self.running.pop_front()
        {
            self.work[oldest].finish();
        }
        self.running.push_back(self.work.len());
        self.work.push(Work::start(self.scope, job));
        self.work.len() - 1
    }

    /// Every back end's text, in the order started, once every thread is
    /// done (a panicked thread left to the scope would panic the process).
    fn results(self) -> Vec<Result<String, Failure>> {
        self.work.into_iter().map(Work::result).collect()
    }
}

/// A variant's back end: running on its own thread, or done.
enum Work<'s> {
    Running(std::thread::ScopedJoinHandle<'s, Result<String, Failure>>),
    Done(Result<String, Failure>),
}

impl<'s> Work<'s> {
    /// `job` on a thread of its own; a thread the system refuses is a
    /// failure of this variant, not a panic.
    fn start<'e, F>(s: &'s std::thread::Scope<'s, 'e>, job: F) -> Work<'s>
    where
        F: FnOnce() -> Result<String, Failure> + Send + 's,
    {
        match std::thread::Builder::new().spawn_scoped(s, job) {
            Ok(h) => Work::Running(h),
            Err(e) => Work::Done(Err(Failure::Backend(format!(
                "could not start a thread: {e}"
            )))),
        }
    }

    /// Waits for the thread, keeping its result.
    fn finish(&mut self) {
        let placeholder = Work::Done(Ok(String::new()));
        *self = match std::mem::replace(self, placeholder) {
            Work::Running(h) => Work::Done(
                h.join()
                    .unwrap_or_else(|_| Err(Failure::Backend("a compile thread panicked".into()))),
            ),
            done => done,
        };
    }

    fn result(mut self) -> Result<String, Failure> {
        self.finish();
        match self {
            Work::Done(r) => r,
            Work::Running(_) => Err(Failure::Backend("a compile thread was not joined".into())),
        }
    }
}

/// A kernel's manifest with its seal empty, and that manifest's JSON:
/// made while the back ends run.
struct Described {
    manifest: m::Manifest,
    json: String,
}

/// The manifest of `kernel`'s `lowered` variants (`source`: the source
/// file's fingerprint), before its seal.
fn describe(
    kernel: &Kernel,
    lowered: &[Lowered],
    arch: &str,
    opts: Options,
    source: &str,
) -> Described {
    let mut manifest = manifest(kernel, lowered, arch);
    manifest.checked = opts.checked.is_some();
    manifest.source = source.to_string();
    let json = manifest.to_json();
    Described { manifest, json }
}

/// A kernel's module (its variants' texts joined) and its manifest,
/// sealed with a PTX module.
fn assemble(
    kernel: Kernel,
    lowered: Vec<Lowered>,
    described: Described,
    texts: Vec<String>,
    output: Output,
) -> Compiled {
    let code = tilec_codegen::join(&texts, output);
    let Described { mut manifest, json } = described;
    let json = match output {
        Output::Ptx => manifest.seal_json(&code, &json),
        _ => json,
    };
    Compiled {
        kernel,
        lowered,
        code,
        manifest,
        json,
    }
}

/// One variant through the back end; what the arch lacks is refused at
/// the statement.
fn compile_variant(
    ir: &tilec::ir::KernelIr,
    arch: &str,
    output: Output,
) -> Result<String, Failure> {
    tilec_codegen::compile_variant(ir, arch, output).map_err(failure)
}

/// What a variant needs that `arch` lacks, as `build` would refuse it
/// (`tilec check --arch`).
pub fn check_arch(ir: &tilec::ir::KernelIr, arch: &str) -> Result<(), Failure> {
    tilec_codegen::supported(ir, arch)
        .map(|_| ())
        .map_err(failure)
}

/// The back end's error: at the statement where it is the source's.
fn failure(e: tilec_codegen::CodegenError) -> Failure {
    match e {
        tilec_codegen::CodegenError::Feature { span, .. } => Failure::Source(vec![
            tilec::diagnostic::Diagnostic::new(e.to_string(), span)
                .with_label("this needs a newer GPU")
                .with_help("build for a newer --arch, e.g. sm_80 or sm_90"),
        ]),
        tilec_codegen::CodegenError::ArchSpecific { span, .. } => Failure::Source(vec![
            tilec::diagnostic::Diagnostic::new(e.to_string(), span)
                .with_label("this needs Hopper's own instructions")
                .with_help("build with --arch sm_90 (tilec targets sm_90a for it)"),
        ]),
        e => Failure::Backend(e.to_string()),
    }
}

pub fn manifest(k: &Kernel, variants: &[Lowered], arch: &str) -> m::Manifest {
    // A tensor any variant writes: one walk of each variant's IR.
    let written = variants
        .iter()
        .map(|l| l.ir.written_params())
        .fold(vec![false; k.params.len()], |all, w| {
            all.iter().zip(w).map(|(a, b)| *a || b).collect()
        });
    m::Manifest {
        kernel: k.name.clone(),
        // What the PTX targets (sm_90a for wgmma), as the code generator decides.
        arch: variants
            .first()
            .and_then(|l| tilec_codegen::target_arch(&l.ir, arch).ok())
            .unwrap_or(arch)
            .to_string(),
        params: k
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| m::ParamSpec {
                name: p.name.clone(),
                kind: match &p.kind {
                    ParamKind::Tensor { elem: e, layout } => m::ParamKind::Tensor {
                        elem: *e,
                        layout: layout.clone(),
                        written: written[i],
                    },
                    ParamKind::Scalar(e) => m::ParamKind::Scalar { elem: *e },
                },
            })
            .collect(),
        extents: k.dims().to_vec(),
        strides: k
            .strides
            .iter()
            .filter(|s| !s.in_place)
            .map(|s| m::StrideSpec {
                name: s.name.clone(),
                param: s.param,
                leaf: s.leaf,
                declared: s.declared.clone(),
                padded: s.padded,
            })
            .collect(),
        // A grid computed from an in-place tensor's strides reads them as
        // declared (a copied tensor's strides are never in it).
        grid: k.launch.grid.iter().map(|g| k.in_place_int(g)).collect(),
        // A pipeline's producer warpgroup joins the block's threads, and
        // its mbarriers (two per stage) the shared memory.
        block: match variants.first().and_then(|l| l.ir.pipeline()) {
            Some(_) => {
                let extra = tilec_layout::Int::Static(tilec::ir::PRODUCER_THREADS);
                k.launch.block.iter().map(|b| b.add(&extra)).collect()
            }
            None => k.launch.block.clone(),
        },
        producer_threads: variants
            .first()
            .filter(|l| l.ir.pipeline().is_some())
            .map_or(0, |_| tilec::ir::PRODUCER_THREADS),
        min_blocks: k.launch.min_blocks.unwrap_or(1),
        tensor_cores: variants.first().is_some_and(|l| l.ir.tensor_cores()),
        shared_bytes: k.shared_bytes()
            + variants
                .first()
                .map_or(0, |l| tilec_codegen::ring_bytes(&l.ir)),
        dynamic_shared_bytes: variants
            .first()
            .map_or(0, |l| tilec_codegen::dynamic_shared_bytes(&l.ir)),
        variants: variants
            .iter()
            .map(|l| m::VariantSpec {
                entry: l.ir.name.clone(),
                conditions: launch_conditions(&l.conditions),
                block_conditions: launch_conditions(&l.block_conditions),
                block_offset: l.ir.block_offset,
                accesses: l
                    .global_accesses
                    .iter()
                    .map(|a| m::Access {
                        param: a.param,
                        index: a.index.clone(),
                        below: a.below.clone(),
                        when: a.when.iter().map(|(x, y)| [x.clone(), y.clone()]).collect(),
                        line: a.line,
                    })
                    .collect(),
                loops: l
                    .loops
                    .iter()
                    .map(|r| m::LoopSpec {
                        name: r.name.clone(),
                        start: r.start.clone(),
                        end: r.end.clone(),
                    })
                    .collect(),
                narrowed: l
                    .narrowed
                    .iter()
                    .map(|n| m::Narrowed {
                        dividend: n.dividend.clone(),
                        divisor: n.divisor.clone(),
                    })
                    .collect(),
                tensor_maps: l.tensor_maps.clone(),
                cluster: l.ir.cluster,
                pads: l.ir.pads,
            })
            .collect(),
        reference: k.reference.as_ref().map(|r| m::Reference {
            kind: match r.kind {
                program::ReferenceKind::Gemm => m::ReferenceKind::Gemm,
                program::ReferenceKind::Copy => m::ReferenceKind::Copy,
                program::ReferenceKind::Transpose => m::ReferenceKind::Transpose,
                program::ReferenceKind::Kernel => m::ReferenceKind::Kernel,
                program::ReferenceKind::Gemv => m::ReferenceKind::Gemv,
                program::ReferenceKind::ReduceSum => m::ReferenceKind::ReduceSum,
                program::ReferenceKind::Softmax => m::ReferenceKind::Softmax,
                program::ReferenceKind::LayerNorm => m::ReferenceKind::LayerNorm,
            },
            operands: r.operands.clone(),
            kernel: r.kernel.clone(),
        }),
        block_reduce: variants.first().and_then(|l| {
            let tilec::ir::InstKind::ReduceBlocks {
                registers,
                across,
                atomic,
                ..
            } = l.ir.block_reduction()?.kind
            else {
                return None;
            };
            Some(m::BlockReduce {
                groups: match across {
                    tilec::ir::Groups::Dim(d) => m::ReduceGroups::Dim(d),
                    tilec::ir::Groups::Parts { .. } => m::ReduceGroups::Parts(
                        reduce_parts(&k.body).expect("a reduce across parts lowers from one"),
                    ),
                },
                values: l.ir.registers[registers].len,
                runs: tilec::ir::REDUCE_RUN as i64,
                atomic,
            })
        }),
        checked: false,
        approximation: variants
            .iter()
            .map(|l| l.ir.approximation())
            .fold(0.0, f64::max),
        rounded_approximation: variants
            .iter()
            .map(|l| l.ir.rounded_approximation())
            .fold(0.0, f64::max),
        rounded_to: tilec::ir::coarsest_rounding(variants.iter().filter_map(|l| l.ir.rounded_to())),
        tunables: k
            .tunables
            .iter()
            .map(|t| m::TunableSpec {
                name: t.name.clone(),
                value: t.value,
                candidates: t.candidates.clone(),
            })
            .collect(),
        source: String::new(),
        seal: String::new(),
    }
}

fn launch_conditions(cs: &[tilec_layout::Condition]) -> Vec<m::LaunchCondition> {
    cs.iter()
        .map(|c| m::LaunchCondition {
            fact: c.fact.clone(),
            needed_by: c.needed_by.to_string(),
        })
        .collect()
}

/// Prints a failure against its source; returns the exit code.
pub fn report(name: &str, src: &str, f: Failure) -> std::process::ExitCode {
    match f {
        Failure::Source(diags) => {
            for d in &diags {
                eprintln!("{:?}", d.report(name, src));
            }
            eprintln!("{} error(s) in {name}", diags.len());
        }
        Failure::Backend(e) => eprintln!("error: code generation failed: {e}"),
    }
    std::process::ExitCode::FAILURE
}

/// A usage or environment error: the message, exit 2.
pub fn fail(msg: &str) -> std::process::ExitCode {
    eprintln!("error: {msg}");
    std::process::ExitCode::from(2)
}

/// A launch's failure, with what to do where the runtime could not prove
/// every access in bounds.
pub fn fail_launch(kernel: &str, e: &tilec_runtime::RuntimeError) -> std::process::ExitCode {
    eprintln!("error: {kernel}: {e}");
    refused_hint(e);
    std::process::ExitCode::from(2)
}

/// Where `e` refused a launch for want of a proof of its bounds: how to
/// run the kernel anyway.
pub fn refused_hint(e: &tilec_runtime::RuntimeError) {
    match e {
        tilec_runtime::RuntimeError::Bounds(_) => eprintln!(
            "  help: `tilec run --checked` builds the kernel with a bound check before every access and runs it without this proof, stopping at the first access outside its tensor with the line"
        ),
        // A --checked build bounds each address by the tensor's buffer:
        // an element of another row passes it.
        tilec_runtime::RuntimeError::PastAMode(_) => eprintln!(
            "  help: the element lies past its row or column, where the tensor's buffer may hold another one's (a --checked build, which bounds addresses by the buffer, would not stop it): keep the coordinate inside its mode with an `if` (`if i + 1 < M` where it passes the end, `if i >= 1` where it comes before the start), or give a partial tile to local_tile, whose views are guarded"
        ),
        _ => {}
    }
}

/// Whether a kernel of `kernels` names kernel `name` as its reference:
/// that one runs on the CPU executor alone, as part of checking the other.
pub fn is_reference<'a>(mut kernels: impl Iterator<Item = &'a Kernel>, name: &str) -> bool {
    kernels.any(|k| {
        k.reference
            .as_ref()
            .is_some_and(|r| r.kernel.as_deref() == Some(name))
    })
}

/// What `run` and `bench` take: a file, its extents, the inputs' seed, the target.
#[derive(clap::Args)]
pub struct LaunchArgs {
    /// The .tile file.
    pub file: std::path::PathBuf,
    /// Extents, comma-separated, e.g. M=4096,N=4096,K=4096.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub dims: String,
    /// Values of scalar parameters, comma-separated, e.g. eps=1e-5,window=64.
    /// The others are seeded random values in [0.5, 1.5) (an i32's: 1).
    #[arg(long, default_value = "", hide_default_value = true)]
    pub scalars: String,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// GPU architecture of the PTX.
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    pub arch: String,
    /// Build with a bound check before every global and shared access: an
    /// access outside its tensor stops the kernel and names its `.tile`
    /// line (slower; for finding bugs).
    #[arg(long)]
    pub checked: bool,
    /// Run only this kernel of the file. Without it, every kernel runs but
    /// those another kernel names as its reference (they run as part of
    /// checking it).
    #[arg(long)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub tuning: TuneArgs,
}

/// `--set NAME=VALUE,...`: values for a kernel's `tune` parameters.
#[derive(clap::Args)]
pub struct TuneArgs {
    /// Values for `tune` parameters, comma-separated, e.g. --set splits=16
    /// (`KERNEL.NAME=V` for one kernel of the file). They override the tune
    /// cache and the defaults.
    #[arg(long = "set", value_name = "NAME=VALUE", value_delimiter = ',')]
    pub set: Vec<String>,
}

impl LaunchArgs {
    /// The kernels of `all` to run: the one asked for, or every kernel no
    /// other names as its reference.
    pub fn selected<'a>(
        &self,
        all: &'a [Compiled],
    ) -> Result<Vec<&'a Compiled>, std::process::ExitCode> {
        if let Some(k) = &self.kernel {
            return match all.iter().find(|c| &c.kernel.name == k) {
                Some(c) => Ok(vec![c]),
                None => {
                    let names: Vec<&str> = all.iter().map(|c| c.kernel.name.as_str()).collect();
                    Err(fail(&format!(
                        "no kernel {k} in {}; its kernels are {}",
                        self.file.display(),
                        names.join(", ")
                    )))
                }
            };
        }
        let kernels = || all.iter().map(|c| &c.kernel);
        Ok(all
            .iter()
            .filter(|c| !is_reference(kernels(), &c.kernel.name))
            .collect())
    }

    /// The file's name and source, and the parsed extents.
    pub fn read(
        &self,
    ) -> Result<(String, String, tilec_runtime::plan::Dims), std::process::ExitCode> {
        let src = read(&self.file)?;
        let dims =
            tilec_runtime::plan::Dims::parse(&self.dims).map_err(|e| fail(&e.to_string()))?;
        Ok((self.file.display().to_string(), src, dims))
    }

    /// The inputs' seed and the scalars' values.
    pub fn inputs(&self) -> Result<tilec_runtime::Inputs, std::process::ExitCode> {
        let scalars = tilec_runtime::Inputs::parse_scalars(&self.scalars)
            .map_err(|e| fail(&e.to_string()))?;
        Ok(tilec_runtime::Inputs {
            seed: self.seed,
            scalars,
        })
    }

    /// The build options: `--checked` naming this file, and `settings`.
    pub fn options<'a>(&self, name: &'a str, settings: &'a Settings) -> Options<'a> {
        Options {
            checked: self.checked.then_some(name),
            settings,
        }
    }
}

/// The architectures whose PTX LLVM 19 writes and ptxas of CUDA 12.x and
/// 13 reads (PTX 8.5 stops at sm_90a: `--arch sm_100` wrote PTX that
/// ptxas refused).
const ARCHES: &[&str] = &[
    "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
    "sm_90", "sm_90a",
];

/// `--arch`: one of [`ARCHES`].
pub fn parse_arch(s: &str) -> Result<String, String> {
    match ARCHES.contains(&s) {
        true => Ok(s.to_string()),
        false => Err(format!("tilec writes PTX for {}", ARCHES.join(", "))),
    }
}

/// The largest source file read: past it (`/dev/zero`, a runaway
/// generator) reading stops with an error instead of taking the memory.
const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// A `.tile` file's text, or an error on stderr and exit code 2.
pub fn read(path: &std::path::Path) -> Result<String, std::process::ExitCode> {
    use std::io::Read;
    let fail = |e: String| {
        eprintln!("error: cannot read {}: {e}", path.display());
        std::process::ExitCode::from(2)
    };
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut src = String::new();
    file.take(MAX_SOURCE_BYTES + 1)
        .read_to_string(&mut src)
        .map_err(|e| fail(e.to_string()))?;
    if src.len() as u64 > MAX_SOURCE_BYTES {
        return Err(fail(format!(
            "it is larger than {} MB",
            MAX_SOURCE_BYTES >> 20
        )));
    }
    Ok(src)
}

/// The launch bounds `[groups, most]` of the kernel's `reduce` across
/// parts, if it has one (in its extents: the checker's rule).
fn reduce_parts(body: &[program::Stmt]) -> Option<[tilec_layout::Int; 2]> {
    let mut found = None;
    program::walk(body, &mut |s| {
        if let program::Op::ReduceBlocks {
            across: program::Across::Parts { groups, most, .. },
            ..
        } = &s.op
        {
            found = Some([groups.clone(), most.clone()]);
        }
    });
    found
}
