//! `tilec run FILE.tile --dims M=..,N=..,K=.. [--seed S]`: compiles, fills
//! the inputs with seeded random values, runs on the GPU, compares with the
//! kernel's reference; prints the error, the time and the throughput. Exits
//! 1 when the result does not match.

use crate::compile::{compile, read, report};
use std::path::PathBuf;
use std::process::ExitCode;
use tilec_runtime::gpu::Gpu;
use tilec_runtime::plan::Dims;

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// Extents, e.g. M=4096,N=4096,K=4096.
    #[arg(long, default_value = "")]
    dims: String,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed runs (after warm-up); the median is reported.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    #[arg(long, default_value = "sm_90")]
    arch: String,
}

pub fn run(a: Args) -> ExitCode {
    let name = a.file.display().to_string();
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let compiled = match compile(&src, &a.arch) {
        Ok(c) => c,
        Err(f) => return report(&name, &src, f),
    };
    let dims = match Dims::parse(&a.dims) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let gpu = match Gpu::open() {
        Ok(Some(g)) => g,
        Ok(None) => {
            eprintln!(
                "error: no GPU on this machine (no CUDA driver or no device); `tilec build` still writes the PTX"
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut all_ok = true;
    for c in &compiled {
        match tilec_runtime::run_gpu(&gpu, &c.ptx, &c.manifest, &dims, a.seed, a.iters) {
            Ok(r) => {
                println!("{}", r.line());
                all_ok &= r.passed();
            }
            Err(e) => {
                eprintln!("error: {}: {e}", c.kernel.name);
                return ExitCode::from(2);
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
