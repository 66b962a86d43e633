//! `tilec check FILE.tile`: diagnostics on stderr and exit 1, or exit 0 when
//! clean; `--shapes` prints each `let` with its inferred shape and layout.

use crate::check::kernel::check_source;
use crate::check::program::Kernel;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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

/// Each binding with its shape and layout, the way CuTe users annotate code.
pub fn shapes_report(kernels: &[Kernel]) -> String {
    let mut out = String::new();
    for k in kernels {
        let _ = writeln!(out, "kernel {}", k.name);
        let grid: Vec<String> = k.launch.grid.iter().map(ToString::to_string).collect();
        let block: Vec<String> = k.launch.block.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "  launch grid({}) block({})",
            grid.join(", "),
            block.join(", ")
        );
        let _ = writeln!(out, "  shared memory {} bytes", k.shared_bytes());
        let width = k.bindings.iter().map(|b| b.name.len()).max().unwrap_or(0);
        for b in &k.bindings {
            let _ = writeln!(
                out,
                "  {:width$}  {:<24} {} {}, layout {}, offset {}",
                b.name,
                b.view.layout.shape().to_string(),
                b.view.base.space(),
                b.view.elem,
                b.view.layout,
                b.view.offset
            );
        }
        for c in &k.conditions {
            let _ = writeln!(out, "  requires {c}");
        }
    }
    out
}
