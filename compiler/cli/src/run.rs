//! `tilec run FILE.tile --dims M=..,N=..,K=.. [--seed S] [--cpu]`: compiles,
//! fills the inputs with seeded random values, runs on the GPU when there is
//! one (else, or with `--cpu`, on the CPU executor), compares with the
//! kernel's reference; prints the error, the time and the throughput. Exits
//! 1 when the result does not match or the CPU executor finds a bug.

use crate::compile::{
    Compiled, Failure, LaunchArgs, compile, fail, lower_source, manifest, report,
};
use std::process::ExitCode;
use std::time::Instant;
use tilec::exec;
use tilec_runtime::gpu::Gpu;
use tilec_runtime::host::{HostBuffer, relative_error};
use tilec_runtime::plan::Dims;
use tilec_runtime::reference::{Arg, expected, work};
use tilec_runtime::{Report, check_args, random_args, tolerance};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Timed runs on the GPU (after warm-up); the median is reported.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// Run on the CPU executor even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// After a GPU run, run the CPU executor on the same inputs and compare
    /// the two outputs element by element.
    #[arg(long)]
    check_cpu: bool,
}

pub fn run(a: Args) -> ExitCode {
    let (name, src, dims) = match a.launch.read() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let gpu = if a.cpu {
        None
    } else {
        match Gpu::open() {
            Ok(g) => g,
            Err(e) => return fail(&e.to_string()),
        }
    };
    let mut all_ok = true;
    match gpu {
        Some(gpu) => {
            let compiled = match compile(&src, &a.launch.arch) {
                Ok(c) => c,
                Err(f) => return report(&name, &src, f),
            };
            for c in &compiled {
                match tilec_runtime::run_gpu(
                    &gpu,
                    &c.code,
                    &c.manifest,
                    &dims,
                    a.launch.seed,
                    a.iters,
                ) {
                    Ok((r, gpu_out)) => {
                        println!("{}", r.line());
                        all_ok &= r.passed();
                        if a.check_cpu {
                            match run_cpu(c, &dims, a.launch.seed) {
                                Ok((_, cpu_out)) => {
                                    let differ = (0..gpu_out.len())
                                        .filter(|&i| {
                                            gpu_out.get(i).to_bits() != cpu_out.get(i).to_bits()
                                        })
                                        .count();
                                    println!(
                                        "  CPU executor vs GPU on the same inputs: {differ} of {} elements differ",
                                        gpu_out.len()
                                    );
                                    all_ok &= differ == 0;
                                }
                                Err(CpuFailure::Runtime(e)) => return fail(&e.to_string()),
                                Err(CpuFailure::Kernel(e)) => {
                                    return report(
                                        &name,
                                        &src,
                                        Failure::Source(vec![e.diagnostic()]),
                                    );
                                }
                            }
                        }
                    }
                    Err(e) => return fail(&format!("{}: {e}", c.kernel.name)),
                }
            }
        }
        None => {
            if !a.cpu {
                eprintln!("note: no GPU on this machine; running on the CPU executor");
            }
            let lowered = match lower_source(&src) {
                Ok(l) => l,
                Err(f) => return report(&name, &src, f),
            };
            for (kernel, l) in lowered {
                let m = manifest(&kernel, &l, &a.launch.arch);
                let c = Compiled {
                    kernel,
                    lowered: l,
                    code: String::new(),
                    manifest: m,
                };
                match run_cpu(&c, &dims, a.launch.seed) {
                    Ok((r, _)) => {
                        println!("{}", r.line());
                        all_ok &= r.passed();
                    }
                    Err(CpuFailure::Runtime(e)) => return fail(&format!("{}: {e}", c.kernel.name)),
                    Err(CpuFailure::Kernel(e)) => {
                        return report(&name, &src, Failure::Source(vec![e.diagnostic()]));
                    }
                }
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub enum CpuFailure {
    Runtime(tilec_runtime::RuntimeError),
    /// A bug the executor found in the kernel, with its span.
    Kernel(exec::ExecError),
}

impl From<tilec_runtime::RuntimeError> for CpuFailure {
    fn from(e: tilec_runtime::RuntimeError) -> Self {
        CpuFailure::Runtime(e)
    }
}

/// Runs one kernel on the CPU executor against its reference; returns the
/// report and the output tensor.
pub fn run_cpu(c: &Compiled, dims: &Dims, seed: u64) -> Result<(Report, HostBuffer), CpuFailure> {
    let m = &c.manifest;
    let plan = tilec_runtime::plan::plan_sizes(m, dims)?;
    let args = random_args(m, &plan, seed);
    check_args(m, &plan, &args)?;
    let want = expected(m, &plan, &args)?;
    let mut tensors: Vec<Option<exec::Tensor>> = args
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => Some(exec::Tensor {
                elem: t.elem(),
                data: (0..t.len()).map(|i| t.get(i)).collect(),
            }),
            Arg::Scalar(_) => None,
        })
        .collect();
    let scalars = args
        .iter()
        .map(|a| if let Arg::Scalar(v) = a { *v } else { 0.0 })
        .collect();
    let launch = exec::Launch {
        parts: plan
            .launches
            .iter()
            .map(|l| exec::Part {
                ir: &c.lowered[l.variant].ir,
                grid: l.grid,
                offset: l.offset,
            })
            .collect(),
        extents: plan.extents.clone(),
        scalars,
    };
    let start = Instant::now();
    exec::execute(&launch, &mut tensors).map_err(CpuFailure::Kernel)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let out = tensors[want.output]
        .as_ref()
        .ok_or_else(|| tilec_runtime::RuntimeError::Manifest("output".into()))?;
    let out = HostBuffer::from_f64(out.elem, out.data.iter().copied());
    let error = relative_error(&out, &want.values, &want.offsets);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report = Report {
        device: format!("the CPU executor ({threads} threads)"),
        kernel: plan.entries(m),
        dims: dims.to_string(),
        error,
        tolerance: tolerance(m.params[want.output].elem()),
        ms_median: ms,
        ms_min: ms,
        ms_max: ms,
        runs: 1,
        work: work(m, &plan),
    };
    Ok((report, out))
}
