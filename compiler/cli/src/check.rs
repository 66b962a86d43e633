//! `tilec check FILE.tile`: diagnostics on stderr and exit 1, or exit 0 when
//! clean; `--shapes` prints each `let` with its inferred shape and layout,
//! and the entry points each kernel compiles to, with when each runs.

use std::path::PathBuf;
use std::process::ExitCode;
use tilec::check::report::shapes_report;

#[derive(clap::Args)]
pub struct Args {
    /// The .tile file.
    file: PathBuf,
    /// Print every `let` with its shape and layout, the launch conditions,
    /// and the entry points with when each runs.
    #[arg(long)]
    shapes: bool,
    /// Print what each access costs a warp: sectors per global request
    /// (coalescing) and wavefronts per shared request (bank conflicts).
    #[arg(long)]
    perf: bool,
    /// Extents: plan the launch there as on an H200 (which entries run on
    /// how many blocks; every access proved in bounds, or the refusal),
    /// and the extents for --perf (default 4096 each, sm_count 132), e.g. M=4096,N=4096,K=4096.
    #[arg(long, default_value = "", hide_default_value = true)]
    dims: String,
    /// GPU architecture the launch is planned for.
    #[arg(long, default_value = "sm_90", value_parser = crate::compile::parse_arch)]
    arch: String,
    #[command(flatten)]
    tuning: crate::compile::TuneArgs,
}

pub fn run(args: Args) -> ExitCode {
    let name = args.file.display().to_string();
    let src = match crate::compile::read(&args.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let settings = match crate::settings::parse_set(&args.tuning, &name, &src) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // Lowered too: whatever `build` would refuse, `check` refuses, what
    // `--arch` lacks included.
    match tilec::pipeline::lower_source_with(&src, None, &settings) {
        Ok(lowered) => {
            let unsupported = lowered
                .iter()
                .flat_map(|(_, variants)| variants)
                .find_map(|v| crate::compile::check_arch(&v.ir, &args.arch).err());
            if let Some(f) = unsupported {
                return crate::compile::report(&name, &src, f);
            }
            let kernels: Vec<_> = lowered.iter().map(|(k, _)| k.clone()).collect();
            if args.shapes {
                print!("{}", shapes_report(&kernels));
                for (k, variants) in &lowered {
                    print!("{}", entries_report(k, variants));
                }
            }
            let dims = match tilec_runtime::plan::Dims::parse(&args.dims) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            if args.perf || !args.dims.is_empty() {
                // --perf defaults the extents --dims leaves out; a launch
                // is planned where --dims gives every one.
                let mut whole = !args.dims.is_empty();
                for (k, _) in &lowered {
                    let problems = crate::run::dims_problems(
                        &k.name,
                        k.dims(),
                        &k.scalar_names(),
                        &dims,
                        !args.perf,
                    );
                    if !problems.is_empty() {
                        problems.iter().for_each(|p| eprintln!("error: {p}"));
                        return ExitCode::from(2);
                    }
                    whole &= crate::run::dims_problems(
                        &k.name,
                        k.dims(),
                        &k.scalar_names(),
                        &dims,
                        true,
                    )
                    .is_empty();
                }
                if whole && let Some(code) = launches(&lowered, &dims, &args.arch) {
                    return code;
                }
                if !whole && !args.dims.is_empty() {
                    eprintln!(
                        "note: no launch planned or proved: --dims does not give every extent (--perf takes defaults for the others)"
                    );
                }
            }
            if args.perf {
                for (k, variants) in &lowered {
                    // The full-tile variant: the code that runs on most blocks.
                    let full = &variants[0];
                    print!(
                        "{}",
                        tilec::perf::report(full, &k.strides, &dims.0, &src, &name)
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(diags) => {
            for d in &diags {
                eprintln!("{:?}", d.report(&name, &src));
            }
            eprintln!("{} error(s) in {name}", diags.len());
            ExitCode::FAILURE
        }
    }
}

/// Each kernel's launch at `dims`, planned as on a GPU (the runtime's
/// checks and its proof that every access is in bounds): prints the
/// entries and their blocks, or why the launch would be refused; false if
/// any would be.
fn launches(
    lowered: &[(tilec::check::program::Kernel, Vec<tilec::lower::Lowered>)],
    dims: &tilec_runtime::plan::Dims,
    arch: &str,
) -> Option<ExitCode> {
    // As `tilec run` exits: 1 where the bound proof refuses a launch, 2
    // where the extents break a launch condition.
    let mut code = None;
    let kernels = || lowered.iter().map(|(k, _)| k);
    for (k, l) in lowered
        .iter()
        .filter(|(k, _)| !crate::compile::is_reference(kernels(), &k.name))
    {
        let m = crate::compile::manifest(k, l, arch);
        match tilec_runtime::plan::plan_for_gpu(&m, dims) {
            // Planned as on the H200: tensors past its memory would not
            // allocate there.
            Ok(p)
                if let bytes = device_bytes(&m, &p)
                    && bytes > H200_BYTES =>
            {
                eprintln!(
                    "error: {} at {dims}: its tensors take {:.0} GB, more than an H200's {:.0} GB of device memory",
                    k.name,
                    bytes as f64 / 1e9,
                    H200_BYTES as f64 / 1e9
                );
                code = Some(2);
            }
            Ok(p) => {
                // Blocks per entry, in launch order.
                let mut blocks: Vec<(&str, u64)> = Vec::new();
                for l in &p.launches {
                    let entry = m.variants[l.variant].entry.as_str();
                    let n: u64 = l.grid.iter().map(|&g| g as u64).product();
                    match blocks.iter_mut().find(|(e, _)| *e == entry) {
                        Some((_, total)) => *total += n,
                        None => blocks.push((entry, n)),
                    }
                }
                let blocks: Vec<String> = blocks
                    .iter()
                    .map(|(e, n)| match n {
                        1 => format!("{e} on 1 block"),
                        n => format!("{e} on {n} blocks"),
                    })
                    .collect();
                // A GPU's plan: the CPU executor keeps every entry's own
                // blocks at any grid, so that small runs test each.
                println!(
                    "{} at {dims}: on a GPU, {}{}; every access in bounds",
                    k.name,
                    blocks.join(", "),
                    p.notes(&m)
                );
                for (entry, why) in p.passed_over(&m) {
                    println!("  not {entry}: {why}");
                }
            }
            Err(e) => {
                eprintln!("error: {} at {dims}: {e}", k.name);
                crate::compile::refused_hint(&e);
                code = match (&e, code) {
                    (
                        tilec_runtime::RuntimeError::Bounds(_)
                        | tilec_runtime::RuntimeError::PastAMode(_),
                        None,
                    ) => Some(1),
                    (
                        tilec_runtime::RuntimeError::Bounds(_)
                        | tilec_runtime::RuntimeError::PastAMode(_),
                        c,
                    ) => c,
                    _ => Some(2),
                };
            }
        }
    }
    code.map(ExitCode::from)
}

/// An H200's device memory (141 GB), which `check --dims` plans for.
const H200_BYTES: u128 = 141_000_000_000;

/// The bytes a launch's tensors and aligned copies take on the device.
fn device_bytes(
    m: &tilec_runtime::manifest::Manifest,
    p: &tilec_runtime::plan::LaunchPlan,
) -> u128 {
    let tensors: u128 = (m.params.iter().zip(&p.lens))
        .filter_map(|(param, len)| Some(*len.as_ref()? as u128 * param.elem().bytes() as u128))
        .sum();
    tensors + p.staged.iter().map(|s| s.bytes() as u128).sum::<u128>()
}

/// The entry points a kernel compiles to, in the order the runtime tries
/// them: the first whose conditions hold runs the blocks its block
/// conditions allow, the last (any block) the others.
fn entries_report(k: &tilec::check::program::Kernel, variants: &[tilec::lower::Lowered]) -> String {
    let kernel = &k.name;
    use tilec::lower::Variant;
    let facts = |cs: &[tilec_layout::Condition]| -> String {
        let all: Vec<String> = cs.iter().map(|c| c.fact.to_string()).collect();
        all.join(", ")
    };
    let width = variants.iter().map(|l| l.ir.name.len()).max().unwrap_or(0);
    let mut out = format!("kernel {kernel}: entry points, tried in this order\n");
    for l in variants {
        let what = match l.variant {
            Variant::Full => "full tiles, unguarded, the widest copies",
            Variant::KResidue => "full tiles at any K, each k-tile's copy tested as a whole",
            Variant::GuardedVectors => "any block, guarded, the copies' vectors kept",
            Variant::Unaligned => {
                "full tiles, each copy tested as a whole, no vector that needs a condition"
            }
            Variant::Guarded => "any block, every global access guarded",
        };
        let mut line = format!("  {:width$}  {what}", l.ir.name);
        if !l.conditions.is_empty() {
            line += &format!("; when {}", facts(&l.conditions));
        }
        if !l.block_conditions.is_empty() {
            line += &format!("; on the blocks where {}", facts(&l.block_conditions));
        }
        if l.rolls() {
            line += "; its epilogue a loop over groups of elements, the registers through shared memory";
        }
        out += &line;
        out.push('\n');
    }
    if variants.iter().any(|l| !l.block_conditions.is_empty()) {
        out += "  (on a GPU, a grid with edge blocks and at most two blocks a multiprocessor runs the last alone, unless a kernel without tensor cores has min_blocks(2) or more and its blocks share multiprocessors)\n";
    }
    // What the stride symbols are on the caller's buffers, and that a
    // launch may read copies instead (docs/language.md, aligned copies).
    let symbols: Vec<String> = k
        .strides
        .iter()
        .filter(|s| !s.in_place)
        .map(|s| format!("{} = {}", s.name, s.declared))
        .collect();
    if !symbols.is_empty() {
        let mut copied: Vec<&str> = Vec::new();
        for s in k.strides.iter().filter(|s| s.padded && !s.in_place) {
            copied.push(&k.params[s.param].name);
        }
        out += &format!("  ({} on the caller's buffers", symbols.join(", "));
        if !copied.is_empty() {
            out += &format!(
                "; where that leaves a worse entry, the launch reads aligned copies of {} instead: rows 128 bytes apart or more, zero past their end up to the padded extent",
                copied.join(", ")
            );
        }
        out += ")\n";
    }
    out
}
