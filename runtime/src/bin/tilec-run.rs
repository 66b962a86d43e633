//! `tilec-run KERNEL.json --dims M=..,N=..,K=..`: runs a kernel that
//! `tilec build` compiled (KERNEL.ptx beside its manifest) on the GPU, checks
//! it against its reference, prints error and speed. Needs no LLVM.

use std::process::ExitCode;
use tilec_runtime::{Inputs, gpu::Gpu, manifest::Manifest, plan::Dims, run_gpu};

fn main() -> ExitCode {
    tilec_runtime::output::exit_on_output_errors();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: tilec-run KERNEL.json --dims M=4096,N=4096,K=4096 [--scalars eps=1e-5,..] [--seed S] [--iters N]";
    let mut manifest = None;
    let (mut dims, mut scalars, mut seed, mut iters) =
        (String::new(), String::new(), 1u64, 20usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            // A flag without its value, or a number that is not one, is a
            // usage error, not a default taken silently.
            flag @ ("--dims" | "--scalars" | "--seed" | "--iters") => {
                let value = it.next().filter(|v| !v.starts_with("--"));
                let taken = match (flag, value) {
                    ("--dims", Some(v)) => {
                        dims = v.clone();
                        true
                    }
                    ("--scalars", Some(v)) => {
                        scalars = v.clone();
                        true
                    }
                    ("--seed", Some(v)) => v.parse().map(|v| seed = v).is_ok(),
                    ("--iters", Some(v)) => v.parse().map(|v| iters = v).is_ok(),
                    _ => false,
                };
                if !taken {
                    eprintln!(
                        "error: {flag} takes a value (a whole number for --seed and --iters)\n{usage}"
                    );
                    return ExitCode::from(2);
                }
            }
            "-h" | "--help" => {
                println!("{usage}");
                return ExitCode::SUCCESS;
            }
            flag if flag.starts_with('-') => {
                eprintln!("error: unknown option {flag}\n{usage}");
                return ExitCode::from(2);
            }
            _ if manifest.is_some() => {
                eprintln!("error: one manifest a run, and {a} is a second\n{usage}");
                return ExitCode::from(2);
            }
            _ => manifest = Some(a.clone()),
        }
    }
    let Some(path) = manifest else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    match run(&path, &dims, &scalars, seed, iters) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str, dims: &str, scalars: &str, seed: u64, iters: usize) -> Result<bool, String> {
    let m =
        Manifest::from_json(&std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?)
            .map_err(|e| format!("{path}: {e}"))?;
    let ptx_path = std::path::Path::new(path).with_extension("ptx");
    let ptx =
        std::fs::read_to_string(&ptx_path).map_err(|e| format!("{}: {e}", ptx_path.display()))?;
    m.check_seal(&ptx).map_err(|e| format!("{path}: {e}"))?;
    let dims = Dims::parse(dims).map_err(|e| e.to_string())?;
    let scalars = Inputs::parse_scalars(scalars).map_err(|e| e.to_string())?;
    let inputs = Inputs { seed, scalars };
    let gpu = Gpu::open()
        .map_err(|e| e.to_string())?
        .ok_or("no GPU on this machine (no CUDA driver or no device); `tilec run --cpu FILE.tile` runs the kernel's source on the CPU executor")?;
    if let Some(note) = tilec_runtime::tuning::default_path()
        .and_then(|path| tilec_runtime::tuning::advice(&path, &m, &gpu.name, &dims))
    {
        eprintln!("{note}");
    }
    let expect = |p: &_, a: &[_]| tilec_runtime::reference::builtin(&m, p, a);
    let (r, _) =
        run_gpu(&gpu, &ptx, &m, &dims, &inputs, iters, &expect).map_err(|e| e.to_string())?;
    println!("{}", r.line());
    Ok(r.passed())
}
