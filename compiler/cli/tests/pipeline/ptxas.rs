//! ptxas on the built PTX: every example and a few test kernels assemble,
//! with no advisory from ptxas; the runtime's hand-written stage kernel
//! assembles. Skipped without a ptxas (`TILEC_REQUIRE_PTXAS=1` makes that
//! a failure in CI).

use super::*;

/// ptxas from $TILEC_PTXAS, the PATH, or the pip package in .venv-cuda
/// (looked for once a test run).
pub(super) fn ptxas() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let found = FOUND.get_or_init(find_ptxas).clone();
    // CI asks for it: a skipped check there would pass unseen.
    if found.is_none() && std::env::var_os("TILEC_REQUIRE_PTXAS").is_some() {
        panic!("TILEC_REQUIRE_PTXAS is set and no ptxas was found");
    }
    found
}

fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TILEC_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(PathBuf::from("ptxas"));
    }
    let venv = root().join(".venv-cuda/lib");
    std::fs::read_dir(venv)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/nvidia/cu13/bin/ptxas"))
        .find(|p| p.exists())
}

#[test]
fn every_example_builds_to_ptx_that_ptxas_accepts() {
    let out = std::env::temp_dir().join(format!("tilec-build-{}", std::process::id()));
    if ptxas().is_none() {
        eprintln!(
            "SKIPPED ptxas acceptance: no ptxas (set TILEC_PTXAS or install nvidia-cuda-nvcc in .venv-cuda)"
        );
    }
    for f in examples().into_iter().chain([
        root().join("tests/codegen/fold.tile"),
        root().join("tests/codegen/cp_async.tile"),
        root().join("tests/run/split_k.tile"),
        root().join("tests/run/tma_multicast.tile"),
        root().join("tests/run/persistent_gemm.tile"),
        root().join("tests/run/persistent_one_warpgroup.tile"),
        root().join("tests/run/silu.tile"),
    ]) {
        let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {err}", f.display());
        let name = f.file_stem().unwrap().to_str().unwrap().to_string();
        let ptx = out.join(format!("{name}.ptx"));
        let text = std::fs::read_to_string(&ptx).unwrap();
        assert!(
            text.contains(".target sm_90") && text.contains(&format!(".entry {name}(")),
            "{name}"
        );
        // sm_90a for kernels with wgmma, which plain sm_90 lacks.
        let arch = if text.contains(".target sm_90a") {
            "sm_90a"
        } else {
            "sm_90"
        };
        if let Some((ok, log)) = assembled(&text, arch) {
            assert!(ok, "ptxas rejects {name}: {log}");
            // No advisory (C7xxx): each has been a wgmma serialized or a
            // wait ptxas added (C7510 a call, C7517 / C7518 an
            // accumulator read before its wait).
            assert!(!log.contains("(C7"), "ptxas advises on {name}: {log}");
        }
    }
}

/// `ptx` through ptxas `-v` for `arch`: whether it assembled, and what
/// ptxas said (its resource report among it); `None` without a ptxas.
pub(super) fn assembled(ptx: &str, arch: &str) -> Option<(bool, String)> {
    let p = ptxas()?;
    let file = std::env::temp_dir().join(format!(
        "tilec-assemble-{}-{:?}.ptx",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&file, ptx).unwrap();
    let o = Command::new(p)
        .args([&format!("-arch={arch}"), "-v", file.to_str().unwrap(), "-o"])
        .arg(file.with_extension("cubin"))
        .output()
        .unwrap();
    let _ = std::fs::remove_file(file.with_extension("cubin"));
    let _ = std::fs::remove_file(&file);
    Some((
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into(),
    ))
}

/// The runtime's stage kernel (PTX written by hand, which fills the aligned
/// copies TMA reads) assembles for the H200.
#[test]
fn the_runtime_stage_kernel_assembles() {
    let Some((ok, log)) = assembled(&tilec_runtime::stage::ptx(), "sm_90") else {
        eprintln!("SKIPPED stage kernel assembly: no ptxas");
        return;
    };
    assert!(ok, "ptxas rejects the stage kernel: {log}");
}

/// An atomic reduce of four values a thread adds them by `red.add.v4.f32`
/// on sm_90, where that exists, and value by value on sm_80; both
/// assemble (tests/run/column_sums_split.tile's reduce made atomic).
#[test]
fn an_atomic_reduce_adds_by_vectors_where_the_gpu_has_them() {
    let src = std::fs::read_to_string(root().join("tests/run/column_sums_split.tile"))
        .unwrap()
        .replace(
            "reduce acc across block.y {",
            "reduce acc across block.y atomic {",
        );
    let dir = std::env::temp_dir().join(format!("tilec-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("colsum_split.tile");
    std::fs::write(&file, src).unwrap();
    for (arch, red) in [
        ("sm_90", "red.relaxed.gpu.global.add.v4.f32"),
        ("sm_80", "red.relaxed.gpu.global.add.f32"),
    ] {
        let (f, out) = (file.to_str().unwrap(), dir.to_str().unwrap());
        let (code, _, err) = tilec(&["build", f, "--arch", arch, "-o", out]);
        assert_eq!(code, 0, "{arch}: {err}");
        let ptx = std::fs::read_to_string(dir.join("colsum_split.ptx")).unwrap();
        assert!(ptx.contains(red), "{arch}: no {red}");
        assert!(
            arch == "sm_90" || !ptx.contains(".v4.f32 ["),
            "{arch}: a vector red"
        );
        if let Some((ok, log)) = assembled(&ptx, arch) {
            assert!(ok, "ptxas rejects the atomic reduce for {arch}: {log}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// What ptxas `-v` reports of entry `entry` in `log`: bytes of spill
/// stores and registers (the lines after its own "Function properties",
/// not a subroutine's).
fn resources(log: &str, entry: &str) -> (u32, u32) {
    let at = log
        .find(&format!("Function properties for {entry}\n"))
        .unwrap_or_else(|| panic!("no entry {entry} in:\n{log}"));
    let number_before = |what: &str| -> u32 {
        let text = &log[at..];
        let end = text
            .find(what)
            .unwrap_or_else(|| panic!("no {what} in:\n{text}"));
        text[..end]
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    (
        number_before(" bytes spill stores"),
        number_before(" registers"),
    )
}

/// A guard's test in a kernel with a gemm compares the thread's part of its
/// coordinate, in 32 bits and shared by the tests that differ by a
/// constant, against a limit the block shares (codegen's
/// `builder/guards.rs`). With the 64-bit coordinates tested as they are
/// written, sgemm_tn_sm80's guarded entry spilled 128 bytes (10 reloads a
/// k-tile in its main loop: 0.81 of cuBLAS at 2039 x 2039 x 2048, where
/// its full entry runs 0.97 at 2048^3; docs/performance.md, version 56),
/// and sgemm_tn's guarded entry held 226 registers.
#[test]
fn guarded_gemms_keep_their_tests_in_few_registers() {
    // (sgemm_tn_sm80's entry is capped at 128 registers by its two blocks
    // a multiprocessor: its spills tell.)
    for (file, entry, most_spilled, most_registers) in [
        (
            "examples/sgemm_tn_sm80.tile",
            "sgemm_tn_sm80_guarded_vec",
            64,
            128,
        ),
        ("examples/sgemm_tn.tile", "sgemm_tn_guarded", 0, 200),
    ] {
        let ptx = emitted(file, "ptx");
        let Some((ok, log)) = assembled(&ptx, "sm_90") else {
            eprintln!("SKIPPED register counts: no ptxas");
            return;
        };
        assert!(ok, "{log}");
        let (spilled, registers) = resources(&log, entry);
        assert!(
            spilled <= most_spilled && registers <= most_registers,
            "{entry}: {spilled} bytes of spills, {registers} registers:\n{log}"
        );
    }
}
