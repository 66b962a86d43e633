//! `tilec check FILE.tile`: diagnostics on stderr and exit 1, or exit 0 when
//! clean; `--shapes` prints each `let` with its inferred shape and layout.

use std::path::PathBuf;
use std::process::ExitCode;
use tilec::check::kernel::check_source;
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
    match check_source(&src) {
        Ok(kernels) => {
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
                for k in &kernels {
                    match tilec::lower::lower(k) {
                        Ok(l) => print!("{}", tilec::perf::report(&l.ir, &dims.0, &src, &name)),
                        Err(d) => {
                            eprintln!("{:?}", d.report(&name, &src));
                            return ExitCode::FAILURE;
                        }
                    }
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
