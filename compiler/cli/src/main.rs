//! The `tilec` command: parses arguments with clap and runs one subcommand,
//! each in its own module.

mod agree;
mod algebra;
mod bench;
mod build;
mod check;
mod compile;
mod expect;
mod run;
mod settings;
mod show;
mod tune;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Search a kernel's `tune` parameters at a shape: compile every variant, check and time them against each other, keep the fastest in the tune cache.
    Tune(tune::Args),
    /// Draw a layout as a grid of offsets, or a thread-value layout as who owns each cell.
    Show(show::Args),
    /// Print a completion script for a shell, e.g. `tilec completions bash > ~/.local/share/bash-completion/completions/tilec`.
    Completions { shell: clap_complete::Shell },
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a closed pipe (`| head`) would make the next
    // print panic; a command-line tool should end quietly instead.
    // Safety: setting a signal's disposition to its default, before any
    // thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tilec_runtime::output::exit_on_output_errors();
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => explain(e).exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Algebra(a) => algebra::run(a),
        Command::Show(a) => show::run(a),
        Command::Check(a) => check::run(a),
        Command::Build(a) => build::run(a),
        Command::Run(a) => run::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Completions { shell } => {
            // Into a buffer first: clap_complete panics on a failed write
            // (`tilec completions bash | head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tilec", &mut script);
            match std::io::stdout().write_all(&script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
    }
}

/// Adds what clap does not say to its usage errors: the subcommand meant by
/// a near miss (clap suggests only close spellings of long names, not `rn`),
/// and that extents are one comma-separated argument.
fn explain(mut e: clap::Error) -> clap::Error {
    let invalid = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match e.kind() {
        ErrorKind::InvalidSubcommand if e.get(ContextKind::SuggestedSubcommand).is_none() => {
            let typed = invalid(ContextKind::InvalidSubcommand).unwrap_or_default();
            let names: Vec<String> = Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            if let Some(best) = names
                .into_iter()
                .filter(|n| strsim::damerau_levenshtein(&typed, n) <= 2)
                .min_by_key(|n| strsim::damerau_levenshtein(&typed, n))
            {
                e.insert(
                    ContextKind::SuggestedSubcommand,
                    ContextValue::Strings(vec![best]),
                );
            }
        }
        ErrorKind::UnknownArgument => {
            let arg = invalid(ContextKind::InvalidArg).unwrap_or_default();
            let dims_given = std::env::args().any(|a| a == "--dims" || a.starts_with("--dims="));
            if dims_given && !arg.starts_with('-') && arg.contains('=') {
                e.insert(
                    ContextKind::Suggested,
                    ContextValue::StyledStrs(vec![
                        format!("separate extents with commas, e.g. --dims M=64,N=64 (`{arg}` is a second word)")
                            .into(),
                    ]),
                );
            }
        }
        _ => {}
    }
    e
}
