//! The `tilec` command line; each subcommand lives in `tilec::cli`.

fn main() -> std::process::ExitCode {
    tilec::cli::main()
}
