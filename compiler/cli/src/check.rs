//! `tilec check FILE.tile`: diagnostics on stderr and exit 1, or exit 0 when
//! clean; `--shapes` prints each `let` with its inferred shape and layout.

use std::path::PathBuf;
use std::process::ExitCode;
use tilec::check::report::shapes_report;

#[derive(clap::Args)]
pub struct Args {
    /// The .tile file.
    file: PathBuf,
    /// Print every `let` with its shape and layout, and the launch conditions.
    #[arg(long)]
    shapes: bool,
    /// Print what each access costs a warp: sectors per global request
    /// (coalescing) and wavefronts per shared request (bank conflicts).
    #[arg(long)]
    perf: bool,
    /// Extents for --perf (default 4096 each), e.g. M=4096,N=4096,K=4096.
    #[arg(long, default_value = "", hide_default_value = true)]
    dims: String,
    #[command(flatten)]
    tuning: crate::compile::TuneArgs,
}

pub fn run(args: Args) -> ExitCode {
    let name = args.file.display().to_string();
    let src = match std::fs::read_to_string(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read {name}: {e}");
            return ExitCode::from(2);
        }
    };
    let settings = match crate::settings::parse_set(&args.tuning, &name, &src) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // Lowered too: whatever `build` would refuse, `check` refuses.
    match tilec::pipeline::lower_source_with(&src, None, &settings) {
        Ok(lowered) => {
            let kernels: Vec<_> = lowered.iter().map(|(k, _)| k.clone()).collect();
            if args.shapes {
                print!("{}", shapes_report(&kernels));
            }
            if args.perf {
                let dims = match tilec_runtime::plan::Dims::parse(&args.dims) {
                    Ok(d) => d,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(2);
                    }
                };
                for (k, _) in &lowered {
                    let problems = crate::run::dims_problems(&k.name, &k.extents, &dims, false);
                    if !problems.is_empty() {
                        problems.iter().for_each(|p| eprintln!("error: {p}"));
                        return ExitCode::from(2);
                    }
                }
                for (_, variants) in &lowered {
                    // The full-tile variant: the code that runs on most blocks.
                    let full = &variants[0];
                    print!("{}", tilec::perf::report(full, &dims.0, &src, &name));
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
