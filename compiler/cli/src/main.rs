//! The `tilec` command: parses arguments with clap and runs one subcommand,
//! each in its own module.

mod algebra;
mod bench;
mod build;
mod check;
mod compile;
mod run;
mod show;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tilec",
    version,
    about = "A tile language with CuTe's layout algebra, compiled to PTX"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a layout-algebra expression, e.g. 'composition((6,2):(8,2), (4,3):(3,1))'.
    Algebra(algebra::Args),
    /// Check a .tile file: shapes, partitions, launch; `--shapes` prints what each `let` is.
    Check(check::Args),
    /// Compile a .tile file to PTX and a manifest, or print an intermediate form (--emit).
    Build(build::Args),
    /// Compile and run against the kernel's reference: on the GPU, or the CPU executor without one.
    Run(run::Args),
    /// Check against the reference, then time the kernel and cuBLAS, interleaved.
    Bench(bench::Args),
    /// Draw a layout as a grid of offsets, or a thread-value layout as who owns each cell.
    Show(show::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Algebra(a) => algebra::run(a),
        Command::Show(a) => show::run(a),
        Command::Check(a) => check::run(a),
        Command::Build(a) => build::run(a),
        Command::Run(a) => run::run(a),
        Command::Bench(a) => bench::run(a),
    }
}
