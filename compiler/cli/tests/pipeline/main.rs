//! The whole pipeline on the built crates: every example to PTX that ptxas
//! accepts; snapshots of a small kernel's IR and PTX showing the folding;
//! the runtime's checks before a launch; GPU runs when a GPU is present;
//! launch plans of the pipelines, split-K and branches (`plans.rs`) and
//! the launch proof checked against every access (`proof.rs`);
//! the launch proof under ifs (`ifs.rs`); Hopper's pipelines (`hopper.rs`),
//! wgmma groups (`wgmma_groups.rs`) and clusters (`clusters.rs`). (One test binary,
//! so LLVM is linked once.)

use std::path::{Path, PathBuf};
use std::process::Command;
use tilec_runtime::plan::{Dims, Launch, plan};
use tilec_runtime::reference::Arg;
use tilec_runtime::{Inputs, RuntimeError, check_args};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    v.sort();
    v
}

fn tilec(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A build is the same every time: a `--checked` build's variants call
/// `vprintf` from their threads, and NVPTX numbers the call sequences from
/// one counter of the process; their comments are renumbered in order.
#[test]
fn a_checked_build_is_the_same_every_time() {
    let f = root().join("examples/sgemm_nt_sm80.tile");
    let build = || {
        let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx", "--checked"]);
        assert_eq!(code, 0, "{err}");
        ptx
    };
    let first = build();
    assert!(first.contains("// callseq 0, 0"), "{first}");
    for _ in 0..3 {
        assert!(build() == first, "two --checked builds differ");
    }
}

/// `tilec build FILE --emit FORM` of a file of the repository, which must
/// succeed.
fn emitted(file: &str, form: &str) -> String {
    emitted_with(file, form, &[])
}

/// [`emitted`], with more arguments to `tilec build` (`--set`, say).
fn emitted_with(file: &str, form: &str, more: &[&str]) -> String {
    let f = root().join(file);
    let mut args = vec!["build", f.to_str().unwrap(), "--emit", form];
    args.extend_from_slice(more);
    let (code, out, err) = tilec(&args);
    assert_eq!(code, 0, "{file}: {err}");
    out
}

/// What `tilec check --perf` says of `file`.
fn perf_notes(file: &str) -> String {
    let f = root().join(file);
    let (code, perf, err) = tilec(&["check", "--perf", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    perf
}

/// Where `needle` first stands in `text`.
fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("no {needle} in:\n{text}"))
}

/// One entry of PTX or one kernel of IR text: from its header (`.entry NAME(`,
/// `kernel NAME(`) to the next `.entry ` or `kernel `.
fn part<'a>(text: &'a str, header: &str) -> &'a str {
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("no {header}:\n{text}"));
    let kind = &header[..=header.find(' ').unwrap_or(0)];
    let body = start + header.len();
    let end = text[body..].find(kind).map_or(text.len(), |e| body + e);
    &text[start..end]
}

#[test]
fn a_small_kernel_folds_its_offsets() {
    let f = root().join("tests/codegen/fold.tile");
    let (code, ir, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ir"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("fold_ir", ir);
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("fold_ptx", ptx);
    // Shared accesses are one base register plus immediates (in the full-tile entry).
    let full = part(&ptx, ".entry fold(");
    let shared: Vec<&str> = full.lines().filter(|l| l.contains(".shared.f32")).collect();
    assert_eq!(shared.len(), 16, "8 stores and 8 loads:\n{ptx}");
    assert!(
        shared.iter().filter(|l| l.contains('+')).count() >= 14,
        "immediate offsets:\n{}",
        shared.join("\n")
    );
    // The only multiplications left involve the run-time extent (a row's
    // offset, M times a constant) and the block index.
    let muls = full
        .lines()
        .filter(|l| l.trim_start().starts_with("mul"))
        .count();
    assert!(muls <= 10, "{muls} multiplications:\n{full}");
}

/// `exp` as IEEE operations (`arith/math.rs`, the executor's too): in the
/// full entry's PTX, 21 instructions an element (a NaN-keeping clamp, the
/// reduction by ln 2, a polynomial of degree 6, two exact scalings, the
/// second a selected constant); `exp(alpha)`, the same for both of a
/// thread's elements, computed once.
#[test]
fn an_exponential_is_21_instructions_and_a_common_value_is_computed_once() {
    let ir = emitted("tests/codegen/exp.tile", "ir");
    let full_ir = part(&ir, "kernel exp_scale(");
    insta::assert_snapshot!("exp_ir", full_ir);
    assert_eq!(full_ir.matches("exp(").count(), 3, "{full_ir}");
    let ptx = emitted("tests/codegen/exp.tile", "ptx");
    let full = part(&ptx, ".entry exp_scale(");
    insta::assert_snapshot!("exp_ptx", full);
    // Three exponentials: one per element and the common one.
    assert_eq!(full.matches("max.NaN.f32").count(), 3, "{full}");
    assert_eq!(full.matches("min.NaN.f32").count(), 3, "{full}");
    assert!(
        !full.contains("setp.nan"),
        "no test for NaN after the clamp:\n{full}"
    );
    // Each: 2 fmas of the reduction, 6 of the polynomial, 1 of the power of
    // two; one comparison for both scalings, no shifts.
    assert_eq!(full.matches("fma.rn.f32").count(), 27, "{full}");
    assert_eq!(full.matches("setp.ge.f32").count(), 3, "{full}");
    assert!(!full.contains("shl.b32"), "{full}");
}

/// The k residue in the full blocks (`lower/residue.rs`): a kernel whose
/// copies go element by element gets a `_k_residue` entry, whose copies of
/// a k-tile stand under one test of the thread's whole copy (its row below
/// M, its last k below K), unguarded in the branch where it holds and
/// guarded per element in the other. The runtime runs it on the full
/// blocks where K is not a multiple of the k-tile.
#[test]
fn the_k_residue_entry_tests_each_copy_as_a_whole() {
    let ir = emitted("tests/codegen/k_residue.tile", "ir");
    let entries: Vec<&str> = ir.lines().filter(|l| l.starts_with("kernel ")).collect();
    assert_eq!(entries.len(), 3, "full, k residue and guarded: {entries:?}");
    insta::assert_snapshot!("k_residue_ir", part(&ir, "kernel k_residue_k_residue("));
    let m = manifest_of("tests/codegen/k_residue.tile");
    let facts = |v: usize| -> Vec<String> {
        m.variants[v]
            .conditions
            .iter()
            .map(|c| c.fact.to_string())
            .collect()
    };
    assert_eq!(m.variants[1].entry, "k_residue_k_residue");
    assert_eq!(
        (facts(0), facts(1)),
        (vec!["K % 4 == 0".to_string()], vec![])
    );
    // M = 128: two full blocks, K = 6: a partial second k-tile.
    let p = plan(&m, &Dims::parse("M=128,K=6").unwrap()).unwrap();
    assert_eq!(p.entries(&m), "k_residue_k_residue");
}

#[test]
fn async_copies_become_cp_async() {
    let f = root().join("tests/codegen/cp_async.tile");
    let (code, ir, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ir"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("cp_async_ir", ir);
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("cp_async_ptx", ptx);
    // The full-tile entry: one 16-byte cp.async per k-tile through L2 only,
    // a fence after each, a wait for all but the newest group (LLVM unrolls
    // the loop by the stage count).
    let full = part(&ptx, ".entry cp_async(");
    let copies = full.matches("cp.async.cg.shared.global").count();
    assert!(copies >= 2, "{full}");
    assert_eq!(full.matches("], 16;").count(), copies, "{full}");
    assert_eq!(
        full.matches("cp.async.commit_group").count(),
        copies,
        "{full}"
    );
    assert_eq!(
        full.matches("cp.async.wait_group 1;").count(),
        copies - 1,
        "{full}"
    );
    // The guarded entry copies 4 bytes at a time, zero-filling outside A.
    let guarded = part(&ptx, ".entry cp_async_guarded(");
    assert!(guarded.contains("cp.async.ca.shared.global") && guarded.contains("], 4, %r"));
    // Where M is a multiple of 4, the guarded entry with vectors copies 16
    // bytes under one guard, zero-filling whole vectors outside A.
    let vectors = part(&ptx, ".entry cp_async_guarded_vec(");
    assert!(vectors.contains("cp.async.cg.shared.global") && vectors.contains("], 16, %r"));
    // Before sm_80 there is no cp.async: a clear error, not an LLVM crash.
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_75"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("needs sm_80 or newer")
            && err.contains("sm_75")
            && err.contains("copy_async("),
        "{err}"
    );
}

fn manifest_of(file: &str) -> tilec_runtime::manifest::Manifest {
    let f = root().join(file);
    kernel_manifest(file, f.file_stem().unwrap().to_str().unwrap())
}

/// A full-tile fact that the grid makes hold on every block (`block.x + 1
/// <= M` under `grid(M, N)`) is no condition: a reference of a block per
/// element builds its full entry alone, and rmsnorm's guarded entries take
/// no block offset. With one block past the rows the fact stays, and the
/// guarded entry runs the last one.
#[test]
fn full_tiles_the_grid_makes_hold_are_no_condition() {
    let entries = |m: &tilec_runtime::manifest::Manifest| -> Vec<String> {
        m.variants.iter().map(|v| v.entry.clone()).collect()
    };
    let m = kernel_manifest("examples/add.tile", "add_reference");
    assert_eq!(entries(&m), ["add_reference"]);
    assert!(m.variants[0].block_conditions.is_empty());
    let m = manifest_of("examples/rmsnorm.tile");
    assert!(m.variants.len() > 1);
    assert!(
        m.variants
            .iter()
            .all(|v| v.block_conditions.is_empty() && !v.block_offset)
    );
    let src = std::fs::read_to_string(root().join("examples/add.tile"))
        .unwrap()
        .replace(
            "launch grid(M, N), block(1)",
            "launch grid(M + 1, N), block(1)",
        );
    let f = std::env::temp_dir().join(format!("tilec-grid-{}.tile", std::process::id()));
    std::fs::write(&f, src).unwrap();
    let m = kernel_manifest(f.to_str().unwrap(), "add_reference");
    std::fs::remove_file(&f).ok();
    assert_eq!(entries(&m), ["add_reference", "add_reference_guarded"]);
    let facts: Vec<String> = m.variants[0]
        .block_conditions
        .iter()
        .map(|c| c.fact.to_string())
        .collect();
    assert_eq!(facts, ["(block.x+1) <= M"]);
}

/// The manifest of kernel `name` of `file`.
fn kernel_manifest(file: &str, name: &str) -> tilec_runtime::manifest::Manifest {
    let dir = std::env::temp_dir().join(format!("tilec-manifest-{}", std::process::id()));
    let f = root().join(file);
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "-o", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let json = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
    let m = tilec_runtime::manifest::Manifest::from_json(&json).unwrap();
    assert_eq!(
        tilec_runtime::manifest::Manifest::from_json(&m.to_json()).unwrap(),
        m,
        "round trip"
    );
    m
}

/// docs/design/strides.md, stage 1: a GEMM's operands index through stride
/// symbols, run-time integers after the extents that the runtime binds to
/// the declared strides; a tensor no copy could pay for (written, or each
/// element read by one block) keeps its declared stride, and its kernel's
/// entries take no more parameters.
#[test]
fn a_stride_symbol_is_the_declared_stride_on_the_callers_buffers() {
    let m = manifest_of("examples/gemm_batched.tile");
    let symbols: Vec<(&str, usize, String)> = m
        .strides
        .iter()
        .map(|s| (s.name.as_str(), s.param, s.declared.to_string()))
        .collect();
    assert_eq!(
        symbols,
        [
            ("A.stride.0", 0, "K".to_string()),
            ("A.stride.2", 0, "(M*K)".to_string()),
            ("A.padded.1", 0, "K".to_string()),
            ("B.stride.0", 1, "K".to_string()),
            ("B.stride.2", 1, "(N*K)".to_string()),
            ("B.padded.1", 1, "K".to_string()),
        ],
        "C is written: no symbol"
    );
    let p =
        tilec_runtime::plan::plan_sizes(&m, &Dims::parse("M=136,N=264,K=72,L=3").unwrap()).unwrap();
    assert_eq!(
        p.extents,
        [136, 72, 3, 264, 72, 136 * 72, 72, 72, 264 * 72, 72]
    );
    // Every condition of bgemm_tn_sm80's guarded entry with vectors holds
    // on aligned copies of A and B: it runs every extent, and no
    // per-element entry is made (docs/design/strides.md, stage 4).
    let m = manifest_of("examples/bgemm_tn_sm80.tile");
    let entries: Vec<&str> = m.variants.iter().map(|v| v.entry.as_str()).collect();
    assert_eq!(entries, ["bgemm_tn_sm80", "bgemm_tn_sm80_guarded_vec"]);
    for (file, entry) in [
        ("examples/add.tile", "add"),
        ("tests/codegen/fold.tile", "fold"),
    ] {
        let m = manifest_of(file);
        assert!(m.strides.is_empty(), "{file}: {:?}", m.strides);
        let ptx = emitted(file, "ptx");
        let head = part(&ptx, &format!(".entry {entry}("));
        let params = head[..head.find(')').unwrap()].matches(".param").count();
        assert_eq!(params, m.params.len() + m.extents.len(), "{file}");
    }
}

/// An FMA gemm's operands come from shared memory element by element in
/// the IR, with their proved alignment; codegen loads each aligned group
/// that the gemm reads whole as one 128-bit read (64 in sgemm_nt_sm80's
/// full entry). The tensor-core GEMMs read shared memory through ldmatrix.
#[test]
fn an_fma_gemm_reads_its_shared_operands_128_bits_at_a_time() {
    let ptx = emitted("examples/sgemm_nt_sm80.tile", "ptx");
    let full = part(&ptx, ".entry sgemm_nt_sm80(");
    assert_eq!(full.matches("ld.shared.v4.f32").count(), 64);
    let ptx = emitted("examples/bgemm_tn_sm80.tile", "ptx");
    assert!(part(&ptx, ".entry bgemm_tn_sm80(").contains("ldmatrix"));
    // A gemm at the kernel's top level (one k-tile, no loop): its 16
    // operands a thread, four vectors of A and four of B, per k of 8.
    let ptx = emitted("tests/codegen/one_k_tile.tile", "ptx");
    let full = part(&ptx, ".entry one_k_tile(");
    assert_eq!(full.matches("ld.shared.v4.f32").count(), 32);
    assert!(!full.contains("ld.shared.f32"), "{full}");
}

/// Read-only tensors are `noalias readonly` (their loads `ld.global.nc`);
/// a written one is neither (the same PTX, and a cheaper build: see
/// `builder/mod.rs`).
#[test]
fn only_read_only_tensors_are_noalias() {
    let ll = emitted("examples/sgemm_nt.tile", "llvm");
    for t in ["A", "B"] {
        assert!(
            ll.contains(&format!("ptr addrspace(1) noalias readonly %{t}")),
            "{ll}"
        );
    }
    assert!(ll.contains("ptr addrspace(1) %C,"), "{ll}");
}

/// A copy between bf16 memory and f32 registers moves bf16 vectors
/// through registers of their own and converts there; the computed rows
/// go out as vectors too (element by element before, 2 bytes an access).
#[test]
fn converting_copies_move_vectors_of_the_memory_s_type() {
    let ptx = emitted("tests/run/rmsnorm_bf16.tile", "ptx");
    let full = part(&ptx, ".entry rmsnorm_bf16(");
    // Four vectors of 8 columns a thread of X and of gamma in the loop over
    // the earlier chunks and again for the last, X's in the first pass.
    assert_eq!(full.matches("ld.global.nc.v4.u32").count(), 16, "{full}");
    assert_eq!(full.matches("st.global.v4.b32").count(), 8, "{full}");
    assert!(!full.contains("ld.global.nc.u16"), "{full}");
    // A row-major tile into column-major registers and back out: its two
    // rows of 8 as two 16-byte loads and two stores, walked along the rows.
    let ptx = emitted("tests/run/row_major_bf16_tile.tile", "ptx");
    let full = part(&ptx, ".entry row_major_bf16_tile(");
    assert_eq!(full.matches("ld.global.nc.v4.u32").count(), 2, "{full}");
    assert_eq!(full.matches("st.global.v4.b32").count(), 2, "{full}");
    assert!(!full.contains("ld.global.nc.u16"), "{full}");
}

#[test]
fn copies_vectorize_where_the_layouts_allow() {
    let f = root().join("examples/sgemm_nt_tv.tile");
    let (code, ir, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ir"]);
    assert_eq!(code, 0, "{err}");
    // Two vector copies of A and B in the full-tile entry (and the
    // epilogue's of C); the guarded entry keeps them, one guard a vector
    // (on aligned copies of A and B it runs every extent: there is no
    // per-element entry).
    let full = part(&ir, "kernel sgemm_nt_tv(");
    assert_eq!(full.matches("copy.f32x4 A[").count(), 1);
    assert_eq!(full.matches("copy.f32x4 B[").count(), 1);
    let guarded = part(&ir, "kernel sgemm_nt_tv_guarded_vec(");
    assert_eq!(guarded.matches("copy.f32x4 A[").count(), 1);
    assert!(!ir.contains("kernel sgemm_nt_tv_guarded("));
    let (_, ptx, _) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    let full = part(&ptx, ".entry sgemm_nt_tv(");
    assert_eq!(full.matches("ld.global.nc.v4.f32").count(), 2);
    assert_eq!(full.matches("st.shared.v4.f32").count(), 2);
    // sgemm_nt's copy threads hold elements 32 apart: nothing to vectorize.
    let f = root().join("examples/sgemm_nt.tile");
    let (_, ir, _) = tilec(&["build", f.to_str().unwrap(), "--emit", "ir"]);
    assert!(!ir.contains("copy.f32x"), "{ir}");
    // The alignment the vectors need is a launch condition.
    let m = manifest_of("examples/sgemm_nt_tv.tile");
    assert!(
        m.variants[0]
            .conditions
            .iter()
            .any(|c| c.needed_by == "a vectorized copy"
                && c.fact.to_string() == "A.stride.1 % 4 == 0")
    );
}

#[test]
fn shared_memory_beyond_48_kb_is_dynamic() {
    let ptx = emitted("tests/codegen/big_shared.tile", "ptx");
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 big_shared_smem[];"),
        "{ptx}"
    );
    assert_eq!(
        manifest_of("tests/codegen/big_shared.tile").dynamic_shared_bytes,
        65536
    );
    // Small kernels keep static shared memory.
    assert_eq!(
        manifest_of("examples/sgemm_nt.tile").dynamic_shared_bytes,
        0
    );
}

#[test]
fn launch_bounds_reach_the_ptx() {
    // `min_blocks(2)` asks for two blocks per multiprocessor: ptxas then caps registers at 128.
    let ptx = emitted("tests/codegen/prefetch.tile", "ptx");
    let entries = ptx.matches(".entry").count();
    assert_eq!(entries, 2, "full and guarded vectors");
    assert_eq!(
        ptx.matches(".minnctapersm 2").count(),
        entries,
        "every entry"
    );
    assert_eq!(ptx.matches(".maxntid 256, 1, 1").count(), entries);
    // `min_blocks(1)` reaches the PTX too: without `.minnctapersm 1` ptxas
    // aims at more blocks than the kernel can hold (sgemm_streamk 184
    // registers against 255, 25% slower at 4096^3: version 60).
    let ptx = emitted_with(
        "examples/sgemm_streamk.tile",
        "ptx",
        &["--set", "blocks_per_sm=1"],
    );
    assert_eq!(
        ptx.matches(".minnctapersm 1\n").count(),
        ptx.matches(".entry").count()
    );
}

/// The ABI both sides rely on, stated once and checked on every example:
/// an entry's parameters are the manifest's parameters in order (a tensor
/// as a 64-bit pointer, a scalar as its type), then each extent as a u64,
/// then, for a variant with a block offset, three u32s, then its tensor
/// maps, 128 bytes each, by value, 64-byte aligned.
#[test]
fn every_entry_takes_the_parameters_its_manifest_declares() {
    use tilec_runtime::manifest::{Elem, ParamKind};
    for f in examples() {
        let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
        assert_eq!(code, 0, "{err}");
        let m = manifest_of(f.strip_prefix(root()).unwrap().to_str().unwrap());
        for v in &m.variants {
            let mut want: Vec<&str> = m
                .params
                .iter()
                .map(|p| match p.kind {
                    ParamKind::Tensor { .. } => ".u64",
                    ParamKind::Scalar { elem: Elem::F32 } => ".f32",
                    ParamKind::Scalar { elem } => panic!("state the ABI of a {elem} scalar here"),
                })
                .collect();
            want.extend(m.run_time_names().map(|_| ".u64"));
            if v.block_offset {
                want.extend([".u32"; 3]);
            }
            want.extend(v.tensor_maps.iter().map(|_| ".align 64 .b8"));
            // A reduce across blocks' workspace and counters, last; across
            // parts, then its groups and most.
            if let Some(r) = &m.block_reduce {
                want.extend([".u64"; 2]);
                if let tilec_runtime::manifest::ReduceGroups::Parts(_) = r.groups {
                    want.extend([".u64"; 2]);
                }
            }
            let entry = part(&ptx, &format!(".entry {}(", v.entry));
            let head = &entry[..entry.find(')').unwrap()];
            let got: Vec<&str> = head
                .lines()
                .filter_map(|l| l.trim().strip_prefix(".param "))
                .map(|l| match l.strip_prefix(".align 64 .b8 ") {
                    Some(map) if map.ends_with("[128],") || map.ends_with("[128]") => {
                        ".align 64 .b8"
                    }
                    _ => l.split_whitespace().next().unwrap(),
                })
                .collect();
            assert_eq!(got, want, "{}: {}", f.display(), v.entry);
        }
    }
}

mod clusters;
mod fast_forms;
mod hopper;
mod ifs;
mod plans;
mod proof;
mod ptxas;
mod runtime;
mod turns;
mod wgmma_groups;

use ptxas::assembled;
