//! `tune` parameters from the command line: `--set`, and `tilec tune`
//! without a GPU (every variant built and checked, the defaults kept).
//! What it measures on a GPU is in scripts/shape-sweep and
//! docs/performance.md; the cache itself is tested in the runtime.

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn tilec(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(args)
        // A cache of this test's own: never the user's.
        .env(
            "TILEC_TUNE_CACHE",
            std::env::temp_dir().join("tilec-tune-test.json"),
        )
        .output()
        .expect("tilec runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn gpu() -> bool {
    tilec_runtime::gpu::Gpu::open().is_ok_and(|g| g.is_some())
}

fn splitk() -> String {
    format!("{ROOT}/examples/sgemm_splitk.tile")
}

#[test]
fn set_changes_what_is_checked_and_built() {
    let (code, out, err) = tilec(&["check", "--shapes", &splitk(), "--set", "splits=2,bm=64"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tune splits = 2 (default 8"), "{out}");
    assert!(
        out.contains("grid(ceil_div(M,64), ceil_div(N,128), 2)"),
        "{out}"
    );
    // KERNEL.NAME sets one kernel's; it wins over NAME.
    let (code, out, err) = tilec(&[
        "check",
        "--shapes",
        &splitk(),
        "--set",
        "splits=2,sgemm_splitk.splits=16",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tune splits = 16"), "{out}");
}

#[test]
fn set_names_a_declared_tunable_and_an_integer() {
    let (code, _, err) = tilec(&["check", &splitk(), "--set", "split=4"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no kernel of") && err.contains("sgemm_splitk.splits"),
        "{err}"
    );
    let (code, _, err) = tilec(&["check", &splitk(), "--set", "splits=many"]);
    assert_eq!(code, 2);
    assert!(err.contains("`many` is not an integer"), "{err}");
    let nt = format!("{ROOT}/examples/sgemm_nt.tile");
    let (code, _, err) = tilec(&["check", &nt, "--set", "splits=4"]);
    assert_eq!(code, 2);
    assert!(err.contains("declares no `tune` parameter"), "{err}");
}

#[test]
fn a_set_value_outside_the_candidates_is_checked_like_any_other() {
    // 96 is no candidate, and (96, 16) tiles are no even split of the
    // 256 copying threads' work: the checker says so, at the layout.
    // The error points at the `tune` too, with the value that was set.
    let (code, _, err) = tilec(&["check", &splitk(), "--set", "bm=96"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("sgemm_splitk.tile"), "{err}");
    assert!(
        err.contains("built with bm = 96, set from outside the candidates (64, 128)"),
        "{err}"
    );
}

#[test]
fn tune_refuses_a_file_without_tunables() {
    let nt = format!("{ROOT}/examples/sgemm_nt.tile");
    let (code, _, err) = tilec(&["tune", &nt, "--dims", "M=64,N=64,K=64"]);
    assert_eq!(code, 2);
    assert!(err.contains("declares a `tune` parameter"), "{err}");
}

#[test]
fn tune_without_a_gpu_builds_every_variant_and_keeps_the_defaults() {
    if gpu() {
        eprintln!("SKIPPED: a GPU is present (tilec tune times the variants there)");
        return;
    }
    // --set fixes four of the five tunables: the eight splits remain.
    let (code, out, err) = tilec(&[
        "tune",
        &splitk(),
        "--dims",
        "M=512,N=512,K=8192",
        "--set",
        "bm=128,bn=128,stages=4,blocks_per_sm=1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("built").count(), 8, "{out}");
    assert!(err.contains("8 variants, 8 built"), "{err}");
    assert!(
        out.contains("no GPU on this machine") && out.contains("keeps its defaults (splits=8)"),
        "{out}"
    );
}

#[test]
fn tune_says_why_a_variant_is_refused() {
    if gpu() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tilec-tune-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("copy.tile");
    // A (tile, tile) f32 tile in shared memory: 512 x 512 needs 1 MiB.
    std::fs::write(
        &file,
        "kernel copy(A: tensor<f32, (M, N):(1, M)>, B: tensor<f32, (M, N):(1, M)>) {
    tune tile = 32 in (32, 512);
    reference copy(A, B);
    launch grid(ceil_div(M, tile), ceil_div(N, tile)), block(256);
    let gA = local_tile(A, (tile, tile), (block.x, block.y));
    let gB = local_tile(B, (tile, tile), (block.x, block.y));
    let s = shared<f32>((tile, tile):(1, tile));
    copy(local_partition(gA, (32, 8):(1, 32), thread.x), local_partition(s, (32, 8):(1, 32), thread.x));
    sync();
    copy(local_partition(s, (32, 8):(1, 32), thread.x), local_partition(gB, (32, 8):(1, 32), thread.x));
}
",
    )
    .unwrap();
    let (code, out, err) = tilec(&["tune", file.to_str().unwrap(), "--dims", "M=1024,N=1024"]);
    // Where no variant builds at all (an extent of 0), the extents are
    // wrong: status 2, as `run` gives (it kept its defaults with 0).
    let (zero, zero_out, zero_err) =
        tilec(&["tune", file.to_str().unwrap(), "--dims", "M=0,N=1024"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(zero, 2, "{zero_out}{zero_err}");
    assert!(
        zero_err.contains("no variant of copy builds at M=0,N=1024"),
        "{zero_err}"
    );
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows.iter().any(|r| r.contains("32   built")), "{out}");
    assert!(
        rows.iter()
            .any(|r| r.contains("512   refused:") && r.contains("shared memory")),
        "{out}"
    );
}

#[test]
fn tilec_run_is_told_when_the_cache_prefers_other_values() {
    use tilec_runtime::manifest::Manifest;
    use tilec_runtime::plan::Dims;
    use tilec_runtime::tuning::{Entry, TuneCache, advice, fingerprint, shape_class};
    let dir = std::env::temp_dir().join(format!("tilec-advice-{}", std::process::id()));
    let out = dir.join("out");
    let (code, _, err) = tilec(&["build", &splitk(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let json = std::fs::read_to_string(out.join("sgemm_splitk.json")).unwrap();
    let m = Manifest::from_json(&json).unwrap();
    assert_eq!(
        m.source,
        fingerprint(&std::fs::read_to_string(splitk()).unwrap())
    );
    let dims = Dims::parse("M=256,N=256,K=16384").unwrap();
    let path = dir.join("tune.json");
    let entry = |splits: i64| Entry {
        device: "H200".into(),
        kernel: "sgemm_splitk".into(),
        source: m.source.clone(),
        class: shape_class(&dims),
        dims: dims.to_string(),
        values: [("splits".to_string(), splits)].into(),
        best_ms: 0.1,
        default_ms: None,
    };
    let mut cache = TuneCache::load(&path).unwrap();
    assert_eq!(advice(&path, &m, "H200", &dims), None, "an empty cache");
    cache.record(entry(32)).unwrap();
    let note = advice(&path, &m, "H200", &dims).expect("a note");
    assert!(
        note.contains("prefers splits=32") && note.contains("--set sgemm_splitk.splits=32"),
        "{note}"
    );
    assert_eq!(advice(&path, &m, "another GPU", &dims), None);
    // The build's own value, or one that is no candidate: nothing to say.
    cache.record(entry(8)).unwrap();
    assert_eq!(advice(&path, &m, "H200", &dims), None);
    cache.record(entry(5)).unwrap();
    assert_eq!(advice(&path, &m, "H200", &dims), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
