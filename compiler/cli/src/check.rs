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
