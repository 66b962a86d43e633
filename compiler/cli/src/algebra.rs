//! `tilec algebra`: the calculator.
//!
//! One expression: its value on stdout, exit 0; or a diagnostic on stderr,
//! exit 1. `--batch`: one line of output per line of stdin, the value or
//! `error: <message>`, exit 0.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use tilec::check::algebra::eval_static;

#[derive(clap::Args)]
pub struct Args {
    /// The expression (omit with --batch).
    expr: Option<String>,
    /// Read one expression per line from stdin.
    #[arg(long)]
    batch: bool,
}

pub fn run(args: Args) -> ExitCode {
    if args.batch {
        return batch();
    }
    let Some(src) = args.expr else {
        eprintln!(
            "error: give an expression, e.g. tilec algebra 'coalesce(((2,3),4):((1,2),6))', or --batch"
        );
        return ExitCode::from(2);
    };
    match eval_static(&src) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(d) => {
            eprintln!("{:?}", d.report("expression", &src));
            ExitCode::FAILURE
        }
    }
}

fn batch() -> ExitCode {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
        };
        let answer = match eval_static(&line) {
            Ok(v) => v.to_string(),
            Err(d) => format!("error: {}", d.message.replace('\n', " ")),
        };
        if writeln!(out, "{answer}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
