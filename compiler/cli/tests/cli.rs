//! The command-line contract of `tilec algebra`, `tilec show`, `build`'s
//! files and the flags every subcommand shares, run on the built binary.

mod support;
use std::process::{Command, Stdio};
use support::{ROOT, scratch, tilec};

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

/// Outside a kernel the block and thread indices are not names: an
/// expression that uses one is told so, never offered the same name.
#[test]
fn an_index_outside_a_kernel_is_not_offered_as_its_own_spelling() {
    for e in ["size(block.x)", "size(thread.x)"] {
        let (code, _, err) = tilec(&["algebra", e], "");
        assert_eq!(code, 1, "{e}");
        assert!(err.contains("is not defined"), "{e}: {err}");
        assert!(
            !err.contains("similar name") && !err.contains("one-dimensional"),
            "{e}: {err}"
        );
    }
}

/// A tile of no cells for `show --tv` is an extent error that names the
/// tile and the fix, not a picture-size limit.
#[test]
fn a_tv_tile_of_extent_zero_says_extents_start_at_one() {
    let (code, out, err) = tilec(&["show", "--tv", "(0,4)", "(8,4):(1,8)"], "");
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("the shape (0,4) has the extent 0")
            && err.contains("extents must be at least 1"),
        "{err}"
    );
    assert!(!err.contains("pictures are drawn"), "{err}");
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
    assert_eq!(
        (code, out.as_str()),
        (0, "# a comment\n\n12\n   # indented\n"),
        "{err}"
    );
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

#[test]
fn show_sizes_cells_to_their_labels_and_writes_a_png() {
    let dir = scratch("png");
    let (svg, png) = (dir.join("t.svg"), dir.join("t.png"));
    let (code, _, err) = tilec(
        &[
            "show",
            "--tv",
            "(128,8)",
            "((32,8),4):((1,128),32)",
            "--svg",
            svg.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&svg).unwrap();
    // The widest label, T255V3, is 6 characters of 7.2 px: a cell leaves
    // room on both sides.
    let width: usize = text
        .split(r#"<rect x="36" y="60" width=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|w| w.parse().ok())
        .expect("the first cell's width");
    assert!(width as f64 >= 6.0 * 7.2 + 8.0, "{width}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
}

/// A picture past the PNG's pixel budget is drawn scaled down to fit, and
/// the command says so (the SVG keeps its full size).
#[test]
fn a_large_picture_becomes_a_png_within_the_pixel_budget() {
    let png = scratch("png_large").join("t.png");
    let (code, _, err) = tilec(
        &["show", "(64,64):(1,64)", "--png", png.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("note: the PNG is drawn at"), "{err}");
    let bytes = std::fs::read(&png).unwrap();
    let dim = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as u64;
    let (w, h) = (dim(16), dim(20));
    assert!(w * h <= 2048 * 2048 + w + h, "{w} x {h}");
}

#[test]
fn build_o_takes_a_file_or_a_directory_and_never_writes_through_a_symlink() {
    let dir = scratch("build");
    let k = format!("{ROOT}/examples/sgemm_nt.tile");
    let ptx = dir.join("k.ptx");
    let (code, out, err) = tilec(&["build", &k, "-o", ptx.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("k.ptx") && out.contains("k.json"), "{out}");
    assert!(
        std::fs::read_to_string(&ptx)
            .unwrap()
            .contains(".entry sgemm_nt(")
    );
    assert!(
        std::fs::read_to_string(dir.join("k.json"))
            .unwrap()
            .contains("\"kernel\"")
    );
    // Any other name is a directory.
    let (code, _, err) = tilec(&["build", &k, "-o", dir.join("o").to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(dir.join("o/sgemm_nt.ptx").is_file() && dir.join("o/sgemm_nt.json").is_file());
    let sub = format!("{}/out/", dir.display());
    assert_eq!(tilec(&["build", &k, "-o", &sub], "").0, 0);
    assert!(dir.join("out/sgemm_nt.ptx").is_file());
    // A symlink in the folder is replaced, not written through.
    let outside = dir.join("outside.txt");
    std::fs::write(&outside, "untouched").unwrap();
    std::fs::remove_file(dir.join("out/sgemm_nt.json")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("out/sgemm_nt.json")).unwrap();
    assert_eq!(tilec(&["build", &k, "-o", &sub], "").0, 0);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "untouched");
    assert!(!dir.join("out/sgemm_nt.json").is_symlink());
    // One file for two kernels cannot be: a directory is asked for.
    let two = dir.join("two.tile");
    let sources = ["copy", "transpose"]
        .map(|k| std::fs::read_to_string(format!("{ROOT}/examples/{k}.tile")).unwrap());
    std::fs::write(&two, sources.concat()).unwrap();
    let (code, _, err) = tilec(
        &[
            "build",
            two.to_str().unwrap(),
            "-o",
            dir.join("two.ptx").to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(err.contains("give -o a directory"), "{err}");
    // No temporary files left behind.
    let names: Vec<String> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let (code, _, err) = tilec(&["rn"], "");
    assert_eq!(code, 2);
    assert!(err.contains("'run'"), "{err}");
}

#[test]
fn completions_and_help_describe_every_argument() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, _) = tilec(&["completions", shell], "");
        assert_eq!(code, 0);
        assert!(out.contains("algebra") && out.contains("dims"), "{shell}");
    }
    for sub in [
        "algebra",
        "check",
        "build",
        "run",
        "bench",
        "show",
        "completions",
    ] {
        let (code, out, _) = tilec(&[sub, "-h"], "");
        assert_eq!(code, 0);
        assert!(!out.contains(r#"[default: ""]"#), "{sub}:\n{out}");
        // Every argument and option line has a description after its name.
        for line in out.lines().filter(|l| l.starts_with("  ")) {
            let words: Vec<&str> = line.split("  ").filter(|w| !w.trim().is_empty()).collect();
            assert!(words.len() >= 2, "{sub}: `{line}` has no description");
        }
    }
}

/// Without a GPU, the README's 4096^3 line answers at once with an
/// estimate of the CPU executor's time instead of running for hours.
#[test]
fn run_without_a_gpu_refuses_hours_of_cpu_work_with_an_estimate() {
    if tilec_runtime::gpu::Gpu::open().is_ok_and(|g| g.is_some()) {
        return;
    }
    let k = format!("{ROOT}/examples/sgemm_nt.tile");
    let start = std::time::Instant::now();
    let (code, _, err) = tilec(&["run", &k, "--dims", "M=4096,N=4096,K=4096"], "");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the CPU executor would take about") && err.contains("--cpu"),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}

/// Output that cannot be written (a full disk) is an error line and status
/// 1, not a panic with a backtrace (a probe's `> /dev/full`).
#[test]
fn output_that_cannot_be_written_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::File::create("/dev/full") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["algebra", "(4,3):(3,1)"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("tilec runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: cannot write the output") && !err.contains("panicked"),
        "{err}"
    );
}

/// `build` never writes over its own source (a source named like the
/// manifest it would write), nor where a directory stands (a probe's).
#[test]
fn build_writes_neither_over_its_source_nor_where_a_directory_is() {
    let dir = std::env::temp_dir().join(format!("tilec-overwrite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("o/sgemm_nt.ptx")).unwrap();
    let source = std::fs::read_to_string(format!("{ROOT}/examples/sgemm_nt.tile")).unwrap();
    let k = dir.join("k.json");
    std::fs::write(&k, &source).unwrap();
    let ptx = dir.join("k.ptx");
    let (code, _, err) = tilec(
        &["build", k.to_str().unwrap(), "-o", ptx.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is the source being built"), "{err}");
    assert_eq!(std::fs::read_to_string(&k).unwrap(), source);
    let out = format!("{}/", dir.join("o").display());
    let file = format!("{ROOT}/examples/sgemm_nt.tile");
    let (code, _, err) = tilec(&["build", &file, "-o", &out], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a directory stands there"), "{err}");
    assert!(!dir.join("o/sgemm_nt.json").exists());
    // A file's folder is made, as a folder -o names is.
    let nested = dir.join("new/k.ptx");
    let (code, _, err) = tilec(&["build", &file, "-o", nested.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(nested.exists() && dir.join("new/k.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// What would have been ignored without a word is said (a probe's): `-o`
/// beside `--emit`, a lexing error under `--emit tokens`, an unknown
/// `--kernel` to `tune`.
#[test]
fn flags_that_would_be_ignored_are_refused() {
    let add = format!("{ROOT}/examples/add.tile");
    let (code, _, err) = tilec(&["build", &add, "--emit", "ptx", "-o", "elsewhere/"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--emit prints to standard output"), "{err}");
    let dollar = scratch("dollar").join("k.tile");
    std::fs::write(&dollar, "kernel $ k").unwrap();
    let (code, out, _) = tilec(&["build", dollar.to_str().unwrap(), "--emit", "tokens"], "");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error: unexpected character"), "{out}");
    let splitk = format!("{ROOT}/examples/sgemm_splitk.tile");
    let (code, _, err) = tilec(
        &[
            "tune",
            &splitk,
            "--dims",
            "M=64,N=64,K=64",
            "--kernel",
            "nope",
        ],
        "",
    );
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("has no kernel nope; its kernels are sgemm_splitk"),
        "{err}"
    );
}
