//! `tilec build FILE.tile [-o DIR] [--emit tokens|ast|shapes|ir|llvm|ptx]
//! [--arch sm_90]`: writes KERNEL.ptx and KERNEL.json (the manifest) per
//! kernel, or prints one intermediate form.

use crate::compile::{Failure, compile, compile_as, lower_source, read, report};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The tokens, one a line with their byte spans.
    Tokens,
    /// The syntax tree.
    Ast,
    /// The typed program: every tensor's shape and layout.
    Shapes,
    /// The kernel IR.
    Ir,
    /// LLVM IR after optimization.
    Llvm,
    Ptx,
}

#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    /// Directory for KERNEL.ptx and KERNEL.json.
    #[arg(short, long, default_value = ".")]
    out: PathBuf,
    /// Print one intermediate form instead of writing files.
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// GPU architecture.
    #[arg(long, default_value = "sm_90")]
    arch: String,
}

pub fn run(a: Args) -> ExitCode {
    let name = a.file.display().to_string();
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match a.emit {
        Some(Emit::Tokens) => {
            for t in tilec::syntax::lexer::tokens(&src) {
                match t {
                    Ok((l, tok, r)) => println!("{l}..{r} {tok:?}"),
                    Err((e, span)) => println!("{}..{} error: {e}", span.start, span.end),
                }
            }
        }
        Some(Emit::Ast) => match tilec::syntax::parse_program(&src) {
            Ok(p) => println!("{p:#?}"),
            Err(d) => return report(&name, &src, Failure::Source(vec![d])),
        },
        Some(Emit::Shapes) => match tilec::check::kernel::check_source(&src) {
            Ok(k) => print!("{}", tilec::check::report::shapes_report(&k)),
            Err(d) => return report(&name, &src, Failure::Source(d)),
        },
        Some(Emit::Ir) => match lower_source(&src) {
            Ok(ks) => ks
                .iter()
                .flat_map(|(_, vs)| vs)
                .for_each(|l| print!("{}", l.ir)),
            Err(f) => return report(&name, &src, f),
        },
        Some(Emit::Llvm) => match compile_as(&src, &a.arch, tilec_codegen::Output::LlvmIr) {
            Ok(cs) => cs.iter().for_each(|c| print!("{}", c.code)),
            Err(f) => return report(&name, &src, f),
        },
        Some(Emit::Ptx) => match compile(&src, &a.arch) {
            Ok(cs) => cs.iter().for_each(|c| print!("{}", c.code)),
            Err(f) => return report(&name, &src, f),
        },
        None => match compile(&src, &a.arch) {
            Ok(cs) => {
                if let Err(e) = std::fs::create_dir_all(&a.out) {
                    eprintln!("error: cannot create {}: {e}", a.out.display());
                    return ExitCode::from(2);
                }
                for c in cs {
                    let base = a.out.join(&c.kernel.name);
                    let (ptx, json) = (base.with_extension("ptx"), base.with_extension("json"));
                    if let Err(e) = std::fs::write(&ptx, &c.code)
                        .and_then(|_| std::fs::write(&json, c.manifest.to_json()))
                    {
                        eprintln!("error: cannot write {}: {e}", base.display());
                        return ExitCode::from(2);
                    }
                    println!("{} -> {} {}", c.kernel.name, ptx.display(), json.display());
                }
            }
            Err(f) => return report(&name, &src, f),
        },
    }
    ExitCode::SUCCESS
}
