//! `tilec show`: pictures of layouts.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The layout, e.g. '(4,3):(3,1)'.
    layout: String,
}

pub fn run(_args: Args) -> ExitCode {
    ExitCode::FAILURE
}
