//! The command-line contract of `tilec algebra` and `tilec show`, run on the
//! built binary.

use std::io::Write;
use std::process::{Command, Stdio};

fn tilec(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tilec runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn one_expression_prints_its_value() {
    let (code, out, _) = tilec(&["algebra", "composition((6,2):(8,2), (4,3):(3,1))"], "");
    assert_eq!((code, out.as_str()), (0, "((2,2),3):((24,2),8)\n"));
    let (code, out, _) = tilec(&["algebra", "coalesce(((_2,_3),_4):((_1,_2),_6))"], "");
    assert_eq!((code, out.as_str()), (0, "24:1\n"));
}

#[test]
fn an_inadmissible_expression_exits_1_with_a_diagnostic() {
    let (code, out, err) = tilec(&["algebra", "complement((2,2):(1,1))"], "");
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.contains("not injective"), "{err}");
    assert!(err.contains("help:"), "{err}");
}

#[test]
fn batch_answers_every_line_in_place_and_exits_1_if_one_failed() {
    let input = "size((4,3):(3,1))\ncomposition((4,3):(1,8), (3,4):(1,3))\nnot an expression(\nlogical_divide(12:1, 4)\n";
    let (code, out, err) = tilec(&["algebra", "--batch"], input);
    assert_eq!(code, 1);
    assert!(err.contains("2 line(s) failed"), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], "12");
    assert!(lines[1].starts_with("error: "), "{}", lines[1]);
    assert!(lines[2].starts_with("error: "), "{}", lines[2]);
    assert_eq!(lines[3], "(4,3):(1,4)");
}

#[test]
fn batch_echoes_blank_lines_and_comments_and_exits_0() {
    let input = "# a comment\n\nsize((4,3):(3,1))\n   # indented\n";
    let (code, out, err) = tilec(&["algebra", "--batch"], input);
    assert_eq!((code, out.as_str()), (0, "# a comment\n\n12\n   # indented\n"), "{err}");
}

#[test]
fn show_writes_an_svg() {
    let dir = std::env::temp_dir().join(format!("tilec-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("tv.svg");
    let (code, out, _) = tilec(
        &[
            "show",
            "--tv",
            "(8,4)",
            "(8,4):(1,8)",
            "--svg",
            svg.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("T7V3"));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains(">T7V3<") && text.trim_end().ends_with("</svg>")
    );
}

#[test]
fn check_exits_0_on_examples_and_1_with_diagnostics() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let (code, out, _) = tilec(
        &[
            "check",
            "--shapes",
            &format!("{root}/examples/sgemm_nt.tile"),
        ],
        "",
    );
    assert_eq!(code, 0);
    assert!(out.contains("tAgA  (4,1,ceil_div(K,8))"), "{out}");
    assert!(
        out.contains("fast path where (128*(block.x+1)) <= M"),
        "{out}"
    );
    let (code, _, err) = tilec(
        &[
            "check",
            &format!("{root}/tests/check/errors/several_errors_at_once.tile"),
        ],
        "",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("`tCgc` is not defined") && err.contains("5 error(s)"),
        "{err}"
    );
    let (code, _, err) = tilec(&["check", "no/such/file.tile"], "");
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn every_intermediate_form_prints() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/codegen/fold.tile");
    for (form, needle) in [
        ("tokens", "Kernel"),
        ("ast", "Kernel {"),
        ("shapes", "kernel fold"),
        ("ir", "kernel fold_guarded("),
        ("llvm", "define ptx_kernel void @fold("),
        ("ptx", ".entry fold("),
    ] {
        let (code, out, err) = tilec(&["build", f, "--emit", form], "");
        assert_eq!(code, 0, "{form}: {err}");
        assert!(out.contains(needle), "{form} lacks {needle}:\n{out}");
    }
}
