//! `tilec build FILE.tile [-o FILE.ptx | -o DIR] [--emit tokens|ast|shapes|ir|llvm|ptx]
//! [--arch sm_90]`: writes KERNEL.ptx and KERNEL.json (the manifest) per
//! kernel, or prints one intermediate form.

use crate::compile::{
    Compiled, Failure, Options, TuneArgs, compile, compile_as, lower_source, read, report,
};
use std::io::Write;
use std::path::{Path, PathBuf};
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
    /// The PTX that `tilec build` writes.
    Ptx,
}

#[derive(clap::Args)]
pub struct Args {
    /// The .tile file.
    file: PathBuf,
    /// Where to write: a file ending in .ptx (`k.ptx`, the manifest beside
    /// it as `k.json`; one kernel only), or any other name, a directory for
    /// KERNEL.ptx and KERNEL.json of every kernel [default: .]
    #[arg(short, long, value_name = "FILE|DIR")]
    out: Option<PathBuf>,
    /// Print one intermediate form instead of writing files.
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// GPU architecture of the PTX.
    #[arg(long, default_value = "sm_90", value_parser = crate::compile::parse_arch)]
    arch: String,
    /// Build with a bound check before every global and shared access: an
    /// access outside its tensor stops the kernel and names its `.tile`
    /// line (slower; for finding bugs).
    #[arg(long)]
    checked: bool,
    #[command(flatten)]
    tuning: TuneArgs,
}

pub fn run(a: Args) -> ExitCode {
    let name = a.file.display().to_string();
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let settings = match crate::settings::parse_set(&a.tuning, &name, &src) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let checked = Options {
        checked: a.checked.then_some(name.as_str()),
        settings: &settings,
    };
    if a.emit.is_some() && a.out.is_some() {
        eprintln!(
            "error: --emit prints to standard output, and -o names where a build's PTX and manifest go; give one of them (--emit ptx > FILE)"
        );
        return ExitCode::from(2);
    }
    match a.emit {
        Some(Emit::Tokens) => {
            let mut lexed = true;
            for t in tilec::syntax::lexer::tokens(&src) {
                match t {
                    Ok((l, tok, r)) => println!("{l}..{r} {tok:?}"),
                    Err((e, span)) => {
                        println!("{}..{} error: {e}", span.start, span.end);
                        lexed = false;
                    }
                }
            }
            if !lexed {
                return ExitCode::FAILURE;
            }
        }
        Some(Emit::Ast) => match tilec::syntax::parse_program(&src) {
            Ok(p) => println!("{p:#?}"),
            Err(d) => return report(&name, &src, Failure::Source(vec![d])),
        },
        Some(Emit::Shapes) => match tilec::check::kernel::check_source_with(&src, &settings) {
            Ok(k) => print!("{}", tilec::check::report::shapes_report(&k)),
            Err(d) => return report(&name, &src, Failure::Source(d)),
        },
        Some(Emit::Ir) => match lower_source(&src, checked) {
            Ok(ks) => ks
                .iter()
                .flat_map(|(_, vs)| vs)
                .for_each(|l| print!("{}", l.ir)),
            Err(f) => return report(&name, &src, f),
        },
        Some(Emit::Llvm) => match compile_as(&src, &a.arch, tilec_codegen::Output::LlvmIr, checked)
        {
            Ok(cs) => cs.iter().for_each(|c| print!("{}", c.code)),
            Err(f) => return report(&name, &src, f),
        },
        Some(Emit::Ptx) => match compile(&src, &a.arch, checked) {
            Ok(cs) => cs.iter().for_each(|c| print!("{}", c.code)),
            Err(f) => return report(&name, &src, f),
        },
        None => match compile(&src, &a.arch, checked) {
            Ok(cs) => return write_all(&cs, a.out.as_deref(), &a.file),
            Err(f) => return report(&name, &src, f),
        },
    }
    ExitCode::SUCCESS
}

/// Writes each kernel's PTX and manifest where `-o` says, and names them;
/// never over the source itself, nor where a directory stands.
fn write_all(cs: &[Compiled], out: Option<&Path>, source: &Path) -> ExitCode {
    let out = out.unwrap_or(Path::new("."));
    // A name ending in .ptx is the one file wanted (as nvcc's and clang's
    // -o), unless it is an existing directory; any other name is a
    // directory for every kernel's pair, as before.
    let is_dir = out.is_dir() || out.extension().is_none_or(|e| e != "ptx");
    let targets: Vec<(PathBuf, PathBuf)> = if is_dir {
        if let Err(e) = std::fs::create_dir_all(out) {
            let why = match out.exists() {
                // `-o /dev/null`, `-o notes.txt`: a file, where a directory goes.
                true => "it exists and is not a directory; `-o` takes a directory, or a file ending in .ptx for one kernel".to_string(),
                false => e.to_string(),
            };
            eprintln!(
                "error: cannot create the directory {}: {why}",
                out.display()
            );
            return ExitCode::from(2);
        }
        cs.iter()
            .map(|c| {
                let base = out.join(&c.kernel.name);
                (base.with_extension("ptx"), base.with_extension("json"))
            })
            .collect()
    } else {
        if cs.len() != 1 {
            let names: Vec<&str> = cs.iter().map(|c| c.kernel.name.as_str()).collect();
            eprintln!(
                "error: the file has {} kernels ({}), each with its own PTX and manifest: give -o a directory, e.g. -o out/",
                cs.len(),
                names.join(", ")
            );
            return ExitCode::from(2);
        }
        // Its folder made as a folder `-o` names is (`-o new/k.ptx`).
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty())
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            eprintln!(
                "error: cannot create the directory {}: {e}",
                parent.display()
            );
            return ExitCode::from(2);
        }
        vec![(out.to_path_buf(), out.with_extension("json"))]
    };
    let same = |p: &Path| match (p.canonicalize(), source.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    for p in targets.iter().flat_map(|(ptx, json)| [ptx, json]) {
        let why = match () {
            _ if same(p) => "it is the source being built",
            _ if p.is_dir() => "a directory stands there",
            _ => continue,
        };
        eprintln!(
            "error: will not write {}: {why}; give -o another place",
            p.display()
        );
        return ExitCode::from(2);
    }
    for (c, (ptx, json)) in cs.iter().zip(&targets) {
        if let Err(e) = write_pair(ptx, &c.code, json, &c.json) {
            eprintln!("error: cannot write {}: {e}", ptx.display());
            return ExitCode::from(2);
        }
        println!("{} -> {} {}", c.kernel.name, ptx.display(), json.display());
    }
    ExitCode::SUCCESS
}

/// Writes the PTX and its manifest together: both go to fresh temporary
/// files beside their targets and are renamed over them only once both are
/// written, so that a failed write leaves the old pair, never a new PTX
/// beside a stale manifest. A rename replaces a symlink at the target
/// rather than writing through it, so nothing outside the folder changes.
fn write_pair(ptx: &Path, ptx_text: &str, json: &Path, json_text: &str) -> std::io::Result<()> {
    let temp = |p: &Path| {
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        p.with_file_name(name)
    };
    let (ptx_tmp, json_tmp) = (temp(ptx), temp(json));
    let written = write_new(&ptx_tmp, ptx_text)
        .and_then(|_| write_new(&json_tmp, json_text))
        .and_then(|_| std::fs::rename(&json_tmp, json))
        .and_then(|_| std::fs::rename(&ptx_tmp, ptx));
    if written.is_err() {
        let _ = std::fs::remove_file(&ptx_tmp);
        let _ = std::fs::remove_file(&json_tmp);
    }
    written
}

/// Creates `path`, which must not exist (not even as a symlink), with `text`.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}
