//! `tilec algebra`: the calculator.
//!
//! One expression: its value on stdout, exit 0; or a diagnostic on stderr,
//! exit 1. `--batch`: one line of output per expression of stdin, the value
//! or `error: <message>` in its place, so that the answers line up with the
//! questions; blank lines and `#` comments are echoed as they are (a file of
//! expressions with their answers reads the same as its input); exit 1 when
//! any line failed.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use tilec::check::algebra::eval_static;

#[derive(clap::Args)]
pub struct Args {
    /// The expression (omit with --batch).
    expr: Option<String>,
    /// Read one expression per line from stdin and answer each on its own
    /// line (blank lines and `#` comments are echoed); exit 1 if any failed.
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
    let mut failed = 0;
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
        };
        let trimmed = line.trim();
        let answer = if trimmed.is_empty() || trimmed.starts_with('#') {
            line
        } else {
            match eval_static(&line) {
                Ok(v) => v.to_string(),
                Err(d) => {
                    failed += 1;
                    // One line an answer: the span as the column it starts at.
                    let column = line.get(..d.span.start).map_or(0, |p| p.chars().count()) + 1;
                    format!("error: {} (column {column})", d.message.replace('\n', " "))
                }
            }
        };
        if writeln!(out, "{answer}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    if failed > 0 {
        eprintln!("error: {failed} line(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
