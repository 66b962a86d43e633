//! Docs that cannot lie: every `tilec` command of README.md and docs/*.md
//! (in code blocks, and inline in backticks when it names a file or an
//! expression) runs here as written, from the
//! repository's root, and must exit 0; a comment `# => VALUE` after it is
//! its exact output. What a CPU machine cannot run as written is adapted,
//! never skipped silently:
//!
//! - extents above 256 in `--dims` become 128 (the CPU executor would take
//!   hours at GPU sizes), and `run` gets `--cpu` when there is no GPU;
//! - `bench` and `tilec-run` need a GPU: skipped without one;
//! - synopsis lines run with an example in each placeholder (`FILE.tile`,
//!   `DIR/`, `M=..`, `'EXPR'`); one with a placeholder left is skipped.
//!
//! `cargo run --release -p PACKAGE -- ARGS` runs the built binary with ARGS,
//! after checking that PACKAGE is the one that has it.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// A command found in a document.
#[derive(Debug)]
struct Doc {
    at: String,
    command: String,
    /// The output the document says it prints.
    expected: Option<String>,
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Whether `text` is a command of ours: `tilec ...`, `$t ...`,
/// `target/release/tilec-run ...`, or `cargo run ... -- ...`.
fn is_command(text: &str) -> bool {
    ["tilec ", "$t ", "target/release/tilec-run ", "cargo run "]
        .iter()
        .any(|p| text.starts_with(p))
}

/// Splits `cmd   # comment` into the command and the comment's text.
fn split_comment(line: &str) -> (String, Option<String>) {
    match line.find("  #") {
        Some(i) => (
            line[..i].trim().to_string(),
            Some(line[i..].trim().trim_start_matches('#').trim().to_string()),
        ),
        None => (line.trim().to_string(), None),
    }
}

fn commands_of(path: &Path) -> Vec<Doc> {
    let text = std::fs::read_to_string(path).expect("a readable document");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut found = Vec::new();
    let mut fenced = false;
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let at = format!("{name}:{}", i + 1);
        if fenced || line.starts_with("    ") {
            let mut full = line.trim().to_string();
            // A command continued with `\` on the next lines.
            while full.ends_with('\\') {
                full.pop();
                match lines.next() {
                    Some((_, next)) => full.push_str(next.trim()),
                    None => break,
                }
            }
            let (command, comment) = split_comment(&full);
            if is_command(&command) {
                found.push(Doc {
                    at,
                    command,
                    expected: comment
                        .and_then(|c| c.strip_prefix("=>").map(|v| v.trim().to_string())),
                });
            }
        } else {
            // Inline: `tilec ...` between backticks in prose, when it names
            // what to work on (`tilec run` alone is the command's name).
            for (k, span) in line.split('`').enumerate() {
                let operand = span.split_whitespace().skip(2).any(|w| !w.starts_with('-'));
                if k % 2 == 1 && is_command(span) && operand {
                    found.push(Doc {
                        at: at.clone(),
                        command: span.to_string(),
                        expected: None,
                    });
                }
            }
        }
    }
    found
}

/// A synopsis names what to put where (`tilec check FILE.tile`): it runs
/// with an example in each place.
fn instantiate(command: &str) -> String {
    command
        .split(' ')
        .map(|word| match word {
            "FILE.tile" => "examples/sgemm_nt.tile",
            "DIR" | "DIR/" => "target/docs/out/",
            "K.ptx" => "target/docs/k.ptx",
            "'EXPR'" => "'composition((6,2):(8,2), (4,3):(3,1))'",
            "'LAYOUT'" => "'(4,3):(3,1)'",
            "M=.." | ".." => "M=128,N=128,K=128",
            w => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A synopsis left with a placeholder [`instantiate`] does not fill.
fn is_synopsis(command: &str) -> bool {
    ["FILE", "DIR", "EXPR", "LAYOUT", "KERNEL", "..", "PACKAGE"]
        .iter()
        .any(|p| command.contains(p))
}

/// Extents above 256 become 128, so that the CPU executor runs them in a
/// second; `check` runs nothing and keeps them.
fn cpu_sized(command: &str) -> String {
    if command.split(' ').nth(1) == Some("check") {
        return command.to_string();
    }
    command
        .split(' ')
        .map(|word| {
            if !word.contains('=') || word.starts_with('-') {
                return word.to_string();
            }
            word.split(',')
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) if v.parse::<i64>().is_ok_and(|v| v > 256) => format!("{k}=128"),
                    _ => kv.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What runs for a documented command, or why it does not run here.
fn adapt(command: &str, gpu: bool) -> Result<String, String> {
    let mut c = command.to_string();
    if let Some(rest) = c.strip_prefix("cargo run ") {
        let (opts, args) = rest.split_once(" -- ").ok_or("cargo run without -- ARGS")?;
        assert!(
            opts.split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| w == ["-p", "tilec-cli"]),
            "`{command}`: the tilec binary is in package tilec-cli"
        );
        c = format!("tilec {args}");
    }
    let words: Vec<&str> = c.split_whitespace().collect();
    let sub = words.get(1).copied().unwrap_or("");
    let needs_gpu = c.starts_with("target/release/tilec-run") || sub == "bench";
    if needs_gpu && !gpu {
        return Err("needs a GPU".into());
    }
    if c.starts_with("target/release/tilec-run") && !Path::new(ROOT).join(words[0]).exists() {
        return Err("tilec-run is not built: cargo build --release -p tilec-runtime".into());
    }
    let mut c = cpu_sized(&c);
    if sub == "run" && !gpu && !c.contains("--cpu") {
        c = c.replacen(" run ", " run --cpu ", 1);
    }
    Ok(c)
}

#[test]
fn every_documented_command_runs_as_written() {
    let bin = env!("CARGO_BIN_EXE_tilec");
    let gpu = tilec_runtime::gpu::Gpu::open().is_ok_and(|g| g.is_some());
    let mut ran = 0;
    let mut failures = Vec::new();
    for path in documents() {
        for doc in commands_of(&path) {
            let command = match adapt(&instantiate(&doc.command), gpu) {
                Ok(c) if is_synopsis(&c) => {
                    eprintln!("{}: skipped (a synopsis): {}", doc.at, doc.command);
                    continue;
                }
                Ok(c) => c,
                Err(why) => {
                    eprintln!("{}: skipped ({why}): {}", doc.at, doc.command);
                    continue;
                }
            };
            // bash reads the line as a reader would type it: quotes,
            // redirections, `$t`.
            let script = format!("t={bin}; tilec() {{ {bin} \"$@\"; }}; {command}");
            let out = Command::new("bash")
                .args(["-c", &script])
                .current_dir(ROOT)
                .output()
                .expect("bash runs");
            ran += 1;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            eprintln!("{}: {command} -> {}", doc.at, out.status);
            if !out.status.success() {
                failures.push(format!(
                    "{}: `{command}` exited {}:\n{stderr}",
                    doc.at, out.status
                ));
            } else if let Some(want) = &doc.expected
                && stdout.trim() != want
            {
                failures.push(format!(
                    "{}: `{command}` printed\n{stdout}\nbut the document says {want}",
                    doc.at
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The extraction itself must not silently find nothing.
    assert!(ran >= 12, "only {ran} commands found");
}

#[test]
fn extraction_reads_comments_continuations_and_sizes() {
    assert_eq!(
        split_comment("$t algebra 'x'   # => 12"),
        ("$t algebra 'x'".to_string(), Some("=> 12".to_string()))
    );
    assert_eq!(
        cpu_sized("$t run k.tile --dims M=4096,N=64,K=8192"),
        "$t run k.tile --dims M=128,N=64,K=128"
    );
    assert_eq!(
        adapt("$t run k.tile --dims M=4096", false).unwrap(),
        "$t run --cpu k.tile --dims M=128"
    );
    assert_eq!(
        adapt("cargo run --release -p tilec-cli -- algebra '4:1'", false).unwrap(),
        "tilec algebra '4:1'"
    );
    assert!(adapt("$t bench k.tile --dims M=4096", false).is_err());
    assert_eq!(
        instantiate("tilec run FILE.tile --dims M=.."),
        "tilec run examples/sgemm_nt.tile --dims M=128,N=128,K=128"
    );
    assert!(is_synopsis("tilec check KERNEL.json"));
}
