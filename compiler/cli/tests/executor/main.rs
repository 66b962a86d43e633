//! The CPU executor: every example against its reference, and planted bugs
//! caught with the right message at the right line (snapshots); the entry
//! the runtime picks for the extents (`variants.rs`); blocks that add their
//! parts across the grid, split-K and stream-K (`across_blocks.rs`).

mod across_blocks;
mod variants;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run_cpu(file: &str, dims: &str) -> (i32, String, String) {
    run_cpu_with(file, dims, &[])
}

fn run_cpu_with(file: &str, dims: &str, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .current_dir(root())
        .args(["run", "--cpu", file, "--dims", dims, "--seed", "5"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn every_example_runs_on_the_cpu_against_its_reference() {
    for (file, dims) in [
        ("examples/sgemm_nt.tile", "M=256,N=128,K=40"),
        ("examples/sgemm_tn.tile", "M=128,N=256,K=24"),
        ("examples/sgemm_nt_tv.tile", "M=256,N=128,K=16"),
        ("examples/sgemm_tn_tv.tile", "M=128,N=256,K=16"),
        ("examples/sgemm_nt_sm80.tile", "M=128,N=256,K=48"),
        ("examples/sgemm_tn_sm80.tile", "M=256,N=128,K=32"),
        ("examples/sgemm_nt_small.tile", "M=97,N=65,K=23"),
        ("examples/sgemm_nt_small.tile", "M=64,N=96,K=16"),
        ("examples/sgemm_tn_small.tile", "M=97,N=65,K=23"),
        ("examples/sgemm_tn_small.tile", "M=64,N=96,K=16"),
        ("examples/copy.tile", "M=256,N=96"),
        ("examples/transpose.tile", "M=96,N=64"),
        ("examples/bgemm_tn_sm80.tile", "M=256,N=128,K=128"),
        ("examples/hgemm_tn_sm80.tile", "M=128,N=256,K=192"),
        ("examples/bgemm_nt_sm80.tile", "M=128,N=128,K=64"),
        // Partial tiles: the guarded entries' epilogues, rolled into loops.
        ("examples/bgemm_tn_sm80.tile", "M=130,N=72,K=40"),
        ("examples/hgemm_tn_sm80.tile", "M=67,N=129,K=24"),
        ("examples/bgemm_nt_sm80.tile", "M=200,N=140,K=72"),
        ("examples/bgemm_tn_sm90.tile", "M=128,N=256,K=128"),
        ("examples/hgemm_tn_sm90.tile", "M=128,N=256,K=64"),
        ("examples/bgemm_nt_sm90.tile", "M=128,N=256,K=128"),
        ("examples/bgemm_tn_sm90_tma.tile", "M=128,N=256,K=128"),
        ("examples/hgemm_tn_sm90_tma.tile", "M=128,N=256,K=64"),
        ("examples/bgemm_nt_sm90_tma.tile", "M=128,N=256,K=128"),
        ("examples/add.tile", "M=1000,N=37"),
        ("examples/gemm_bias_relu.tile", "M=136,N=200,K=72"),
        ("tests/run/gemm_bias_gelu.tile", "M=136,N=200,K=72"),
        (
            "tests/run/persistent_gelu.tile",
            "M=256,N=512,K=128,sm_count=3",
        ),
        ("examples/attention.tile", "S=64"),
        ("examples/attention.tile", "S=200"),
        ("examples/attention_sm90.tile", "S=200,H=2"),
        ("examples/attention_sm90.tile", "S=256,H=1"),
        ("tests/run/attention_sm90_p_in_shared.tile", "S=200,H=2"),
        ("tests/run/attention_sm90_causal.tile", "S=200,H=2"),
        ("tests/run/attention_sm90_causal.tile", "S=256,H=1"),
        ("tests/run/tma_loads_then_gemm.tile", "M=200,N=130,K=200"),
        ("tests/run/wgmma_rs.tile", "M=200,N=50,K=72"),
        ("tests/run/wgmma_rs.tile", "M=256,N=48,K=64"),
        ("tests/run/guarded_by_either_side.tile", "M=5,N=37"),
        ("tests/run/window_sum.tile", "M=100,W=7"),
        ("tests/run/window_sum.tile", "M=33,W=64"),
        ("tests/run/negative_tile_coordinate.tile", "M=64,N=16"),
        ("tests/run/negative_tile_coordinate.tile", "M=70,N=17"),
        (
            "tests/run/tile_coordinate_through_a_slice.tile",
            "M=64,N=16",
        ),
        (
            "tests/run/tile_coordinate_through_a_slice.tile",
            "M=70,N=17",
        ),
        ("tests/run/guarded_by_an_if.tile", "M=40,N=33"),
        ("tests/run/remainder_of_a_negative.tile", "M=100"),
        ("tests/run/guarded_from_both_sides.tile", "M=100"),
        ("tests/run/guarded_from_both_sides.tile", "M=33"),
        // Shared zeros past a row under `c >= N` and the else of `c < N`.
        ("tests/run/padded_row.tile", "M=3,N=100"),
        ("tests/run/padded_row.tile", "M=2,N=256"),
        ("tests/run/padded_row.tile", "M=1,N=1"),
        // A reduce across blocks by atomics.
        ("tests/run/row_sums_atomic.tile", "M=300,N=1000"),
        ("tests/run/row_sums_atomic.tile", "M=1,N=3"),
        ("tests/run/warp_index_bounds_threads.tile", "M=300"),
        ("tests/run/remainder_of_a_negative.tile", "M=7"),
        ("tests/run/loop_of_no_trips.tile", "M=5,N=100"),
        ("tests/run/attention_causal.tile", "S=200"),
        ("tests/run/coordinates.tile", "M=100,N=37"),
        ("tests/run/quotients_past_32_bits.tile", "M=100,N=37"),
        // Full entry in 32 bits below 2^31, guarded entry past it.
        ("tests/run/quotients_near_32_bits.tile", "M=2144,N=8"),
        ("tests/run/quotients_near_32_bits.tile", "M=2176,N=8"),
        ("tests/run/stride_in_another_index.tile", "M=64,K=5,L=2,P=2"),
        ("tests/run/quotient_under_if.tile", "M=8"),
        ("tests/run/quotient_under_if.tile", "M=100"),
        ("tests/run/ragged_quotient.tile", "M=64"),
        ("tests/run/elementwise_math.tile", "M=100,N=37"),
        ("tests/run/fast_math.tile", "M=100,N=37"),
        ("tests/run/gelu.tile", "M=100,N=37"),
        ("tests/run/non_finite.tile", "M=300"),
        ("examples/reduce_rows.tile", "M=1000,N=37"),
        ("examples/softmax.tile", "M=100,N=300"),
        ("examples/softmax.tile", "M=2,N=20000"),
        ("examples/layernorm.tile", "M=10,N=300"),
        ("examples/layernorm.tile", "M=2,N=20000"),
        ("examples/rmsnorm.tile", "M=10,N=300"),
        ("examples/rmsnorm.tile", "M=2,N=20000"),
        ("tests/run/rmsnorm_bf16.tile", "M=3,N=20000"),
        ("tests/run/row_major_bf16_tile.tile", "M=7,N=13"),
        ("tests/run/reduce_threads.tile", "M=37,N=200"),
        ("tests/run/reduce_threads_groups.tile", "M=500"),
        ("tests/run/reduce_threads_odd.tile", "M=100"),
        ("tests/run/softmax_across_threads.tile", "M=3,N=5000"),
        ("tests/run/warp_sum.tile", "M=4096"),
        ("examples/gemv.tile", "M=100,N=1000"),
        ("examples/gemv.tile", "M=16,N=2048"),
        ("examples/gemm_batched.tile", "M=100,N=130,K=72,L=2"),
        ("tests/run/branches.tile", "M=1000"),
        ("tests/run/conversions.tile", "M=100,N=37"),
        ("tests/run/integer_division.tile", "M=1000"),
        ("tests/run/integer_division.tile", "M=37"),
        ("tests/run/negative_divisors.tile", "M=300"),
        (
            "tests/run/pipeline_stage_read_under_an_if.tile",
            "M=130,K=200",
        ),
        (
            "tests/run/shared_neighbour_under_a_guard.tile",
            "M=100,N=37",
        ),
        (
            "tests/run/persistent_gemm.tile",
            "M=256,N=512,K=128,sm_count=3",
        ),
        ("tests/run/persistent_gemm.tile", "M=200,N=300,K=72"),
        // Turns: four on one block (two each), then five on two blocks
        // (three and two), partial tiles.
        (
            "tests/run/pingpong_gemm.tile",
            "M=256,N=512,K=128,sm_count=1",
        ),
        (
            "tests/run/pingpong_gemm.tile",
            "M=200,N=520,K=72,sm_count=2",
        ),
        // Barriers of a turn's warpgroup order its epilogue's accesses.
        (
            "tests/run/pingpong_smem_epilogue.tile",
            "M=256,N=512,K=128,sm_count=1",
        ),
        (
            "tests/run/pingpong_smem_epilogue.tile",
            "M=200,N=520,K=72,sm_count=2",
        ),
        // Turns across batch entries: twelve tiles of three entries (nine partial) on two blocks.
        (
            "examples/gemm_batched_pingpong.tile",
            "M=136,N=200,K=72,L=3,sm_count=2",
        ),
        // Its C prefetched into L2 in each turn, the group still lagged.
        (
            "tests/run/pingpong_prefetch.tile",
            "M=136,N=200,K=72,L=3,sm_count=2",
        ),
        (
            "tests/run/persistent_one_warpgroup.tile",
            "M=200,N=300,K=136,sm_count=3",
        ),
        (
            "tests/run/persistent_cluster.tile",
            "M=300,N=600,K=136,sm_count=6",
        ),
        (
            "tests/run/persistent_shared_epilogue.tile",
            "M=256,N=512,K=128,sm_count=3",
        ),
        (
            "tests/run/persistent_shared_epilogue.tile",
            "M=200,N=300,K=72",
        ),
        (
            "tests/run/persistent_subtile_epilogue.tile",
            "M=256,N=512,K=72,sm_count=3",
        ),
        (
            "tests/run/persistent_subtile_epilogue.tile",
            "M=200,N=300,K=72",
        ),
        (
            "tests/run/persistent_four_buffers.tile",
            "M=300,N=520,K=136,sm_count=3",
        ),
        (
            "tests/run/batched_four_buffers.tile",
            "M=136,N=264,K=72,L=2,sm_count=3",
        ),
        ("tests/run/tma_copy_loop.tile", "M=200,N=300"),
        ("tests/run/tma_load_in_a_reduce.tile", "M=136,N=200,K=264"),
        ("tests/run/strided_tiler.tile", "M=1000"),
        ("tests/run/silu.tile", "M=37,N=1000"),
        ("tests/run/strided_tiler.tile", "M=37"),
        // Split-K on clusters: M / 64 odd, a pad block past the grid.
        ("tests/run/split_k_cluster.tile", "M=136,N=72,K=200"),
        // Tiles of the algebra's divides, partial and whole.
        ("tests/run/divided_tiles.tile", "M=40,N=10"),
        ("tests/run/divided_tiles.tile", "M=64,N=8"),
        (
            "tests/run/streamk_pipeline.tile",
            "M=200,N=300,K=264,sm_count=6",
        ),
        ("tests/run/streamk_pipeline.tile", "M=130,N=70,K=72"),
        (
            "tests/run/streamk_persistent.tile",
            "M=400,N=300,K=200,sm_count=3",
        ),
        (
            "tests/run/tma_load_across_ifs.tile",
            "M=200,N=300,K=136,sm_count=5",
        ),
        (
            "examples/bgemm_tn_sm90_persistent.tile",
            "M=200,N=300,K=72,sm_count=2",
        ),
        (
            "examples/gemm_batched_persistent.tile",
            "M=136,N=300,K=72,L=3,sm_count=5",
        ),
        (
            "examples/hgemm_tn_sm90_persistent.tile",
            "M=200,N=300,K=72,sm_count=2",
        ),
        ("tests/run/global_to_global.tile", "M=1000,N=36"),
        ("tests/run/vector_copy.tile", "N=1001"),
        ("tests/run/wgmma_core_matrices.tile", "M=130,N=70,K=40"),
        ("tests/run/wgmma_swizzle_32_64.tile", "M=130,N=70,K=40"),
        ("tests/run/wgmma_swizzle_64_32.tile", "M=130,N=70,K=40"),
        ("tests/run/mma_f32_out.tile", "M=64,N=32,K=48"),
        ("tests/run/swizzled_transpose.tile", "M=128,N=64"),
        ("tests/run/convert.tile", "M=256,N=64"),
        ("tests/run/fma_bf16_to_f32.tile", "M=128,N=256,K=24"),
        ("tests/codegen/fold.tile", "M=24"),
        ("tests/codegen/exp.tile", "M=1000"),
        ("tests/codegen/prefetch.tile", "M=128,N=256,K=24"),
        ("tests/codegen/big_shared.tile", "M=256,N=200"),
        ("tests/codegen/cp_async.tile", "M=128,K=12"),
    ] {
        let (code, out, err) = run_cpu(file, dims);
        assert_eq!(code, 0, "{file}: {out}{err}");
        // `(ok)`, or `(ok, ...)` with what the check adds (a sample, the
        // reference's non-finite values).
        assert!(out.contains("(ok") && out.contains("CPU executor"), "{out}");
    }
}

/// The row kernels' tiles, from a block per row to a warp per row: every
/// one right at a partial last block and a row shorter than a chunk, and
/// with the copies' vectors where N allows (a block of one row too, whose
/// size-1 row mode must not hide the alignment).
#[test]
fn every_row_tile_of_the_row_kernels_runs_on_the_cpu() {
    for kernel in ["softmax", "layernorm", "rmsnorm"] {
        let file = format!("examples/{kernel}.tile");
        for set in [
            "rows=1,vecs=8",
            "rows=2,vecs=4",
            "rows=4,vecs=1",
            "rows=8,vecs=2",
        ] {
            let (code, out, err) = run_cpu_with(&file, "M=37,N=1000", &["--set", set]);
            assert_eq!(code, 0, "{file} {set}: {out}{err}");
            assert!(
                out.starts_with(&format!("{kernel}_guarded_vec ")) && out.contains("(ok)"),
                "{file} {set}: {out}"
            );
        }
        // The full-tile entry's vectors, every row a block's own (rows=1)
        // and two rows a block with an edge row (the executor checks each
        // vector's alignment).
        for (dims, set, entries) in [
            ("M=3,N=8192", "rows=1,vecs=8", format!("{kernel} [")),
            (
                "M=5,N=4096",
                "rows=2,vecs=8",
                format!("{kernel} + {kernel}_guarded_vec ["),
            ),
        ] {
            let (code, out, err) = run_cpu_with(&file, dims, &["--set", set]);
            assert_eq!(code, 0, "{file} {set}: {out}{err}");
            assert!(
                out.starts_with(&entries) && out.contains("(ok)"),
                "{file} {set}: {out}"
            );
        }
    }
}

/// A dual GEMM whose two gemms of a k-tile are one wgmma group, on one
/// consumer warpgroup (the group in flight into the next k-tile) and on
/// two, right at a partial tile and a partial k-tile.
#[test]
fn a_dual_gemm_runs_as_one_group_on_one_and_two_warpgroups() {
    for set in ["wgs=1", "wgs=2"] {
        let file = "tests/run/dual_gemm_swiglu.tile";
        let (code, out, err) = run_cpu_with(file, "M=70,N=130,K=100", &["--set", set]);
        assert_eq!(code, 0, "{set}: {out}{err}");
        assert!(out.contains("(ok)"), "{set}: {out}");
    }
}

/// reduce_rows' tiles, from 32 rows a block by 256 columns a step to 128
/// rows by 128 columns: each right with a partial last block and fewer
/// columns than a step, and the full-tile entry alone where the blocks'
/// rows and a step's columns divide the matrix (the column groups' sums are
/// added by the first `rows` threads).
#[test]
fn every_row_tile_of_reduce_rows_runs_on_the_cpu() {
    for (set, full) in [
        ("rows=32,columns=8", false),
        ("rows=64,columns=4", true),
        ("rows=128,columns=8", true),
        ("rows=128,columns=16", false),
    ] {
        for dims in ["M=333,N=70", "M=512,N=64"] {
            let file = "examples/reduce_rows.tile";
            let (code, out, err) = run_cpu_with(file, dims, &["--set", set]);
            assert_eq!(code, 0, "{set} {dims}: {out}{err}");
            let alone = out.starts_with("reduce_rows [");
            assert_eq!(alone, full && dims == "M=512,N=64", "{set} {dims}: {out}");
            assert!(out.contains("(ok)"), "{set} {dims}: {out}");
        }
    }
}

/// The small GEMMs' tiles, k-tiles and depths: a thread makes bm * bk / 256
/// copies of A; 64 a side takes two rows of the math's pattern; at a
/// k-tile of 32 TN's lanes have a mode of size 1; two stages wait for
/// every copy.
#[test]
fn every_tile_of_the_small_gemms_runs_on_the_cpu() {
    for file in [
        "examples/sgemm_nt_small.tile",
        "examples/sgemm_tn_small.tile",
    ] {
        for set in [
            "bm=64,bn=32,bk=8,stages=2",
            "bm=32,bn=64,bk=16,stages=4",
            "bm=64,bn=64,bk=32,stages=3",
            "bm=32,bn=32,bk=32,stages=2",
        ] {
            for dims in ["M=128,N=192,K=40", "M=97,N=70,K=29"] {
                let (code, out, err) = run_cpu_with(file, dims, &["--set", set]);
                assert_eq!(code, 0, "{file} {set} {dims}: {out}{err}");
                assert!(out.contains("(ok)"), "{file} {set} {dims}: {out}");
            }
        }
    }
}

#[test]
fn a_wrong_result_exits_1() {
    for (file, dims) in [
        ("tests/run/skips_a_k_tile.tile", "M=256,N=384,K=32"),
        (
            "tests/run/swapped_tile_coordinates.tile",
            "M=256,N=384,K=32",
        ),
        ("tests/run/bias_of_the_wrong_row.tile", "M=256,N=384"),
        // The border its reference leaves as it was, overwritten.
        ("tests/run/border_the_reference_leaves.tile", "M=37,N=20"),
    ] {
        let (code, out, err) = run_cpu(file, dims);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("MISMATCH"), "{out}");
    }
    // A kernel that changes a tensor its reference does not write fails
    // too, though what the reference checks is right.
    let (code, out, err) = run_cpu("tests/run/clobbers_an_input.tile", "M=256,N=64");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("(ok); but it changed B, which the reference does not write"),
        "{out}"
    );
}

/// The batched GEMM at a tile of each tunable shape, every entry of a
/// batch of three with partial tiles.
#[test]
fn the_batched_gemm_runs_at_its_tunable_tiles() {
    for set in ["bm=64,bn=128,stages=3,blocks_per_sm=2", "bn=64"] {
        let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
            .current_dir(root())
            .args(["run", "--cpu", "examples/gemm_batched.tile"])
            .args([
                "--dims",
                "M=100,N=130,K=72,L=3",
                "--seed",
                "5",
                "--set",
                set,
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{set}: {stdout}{stderr}");
        assert!(stdout.contains("(ok)"), "{set}: {stdout}");
    }
}

#[test]
fn planted_bugs_are_caught_at_their_line() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("tests/exec"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    assert!(files.len() >= 5);
    for f in files {
        let rel = format!("tests/exec/{}", f.file_name().unwrap().to_string_lossy());
        // A `// dims: ...` first line names the extents of a kernel that is no GEMM.
        let text = std::fs::read_to_string(&f).unwrap();
        let dims = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// dims: "))
            .unwrap_or("M=256,N=384,K=64");
        let (code, out, err) = run_cpu(&rel, dims);
        assert_eq!(code, 1, "{rel} should fail: {out}{err}");
        insta::assert_snapshot!(f.file_stem().unwrap().to_string_lossy().into_owned(), err);
    }
}

#[test]
fn a_checked_build_stops_at_the_first_access_outside_and_names_its_line() {
    let file = "tests/checked/one_k_tile_too_many.tile";
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .current_dir(root())
        .args([
            "run",
            "--cpu",
            "--checked",
            file,
            "--dims",
            "M=256,N=256,K=64",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("fails its bound check")
            && err.contains("read of")
            && err.contains("`A`")
            && err.contains("one_k_tile_too_many.tile:36:9"),
        "{err}"
    );
    // Every global and shared access of the IR has its assert, with the line.
    let ir = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .current_dir(root())
        .args(["build", "--checked", file, "--emit", "ir"])
        .output()
        .unwrap();
    let ir = String::from_utf8_lossy(&ir.stdout);
    assert!(
        ir.contains("\"out-of-bounds read of `A`\" at tests/checked/one_k_tile_too_many.tile:36")
    );
    assert!(ir.contains(
        "\"out-of-bounds write of shared buffer `smA`\" at tests/checked/one_k_tile_too_many.tile:36"
    ));
    assert!(
        ir.contains("\"out-of-bounds write of `C`\" at tests/checked/one_k_tile_too_many.tile:42")
    );
}

/// A tensor broadcast along a mode (stride 0: one B for every batch
/// entry) cannot be a TMA map, whose strides are at least 16 bytes: the
/// plan reads it through an aligned copy that repeats the entry, and says
/// so. A broadcast C, which every batch entry's blocks would write, is
/// refused at launch.
#[test]
fn a_broadcast_tma_operand_reads_a_copy_and_a_broadcast_output_is_refused() {
    let src =
        std::fs::read_to_string(root().join("examples/gemm_batched_persistent.tile")).unwrap();
    let dir = std::env::temp_dir().join(format!("tilec-broadcast-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (from, to, ok) in [
        (
            "B: tensor<bf16, (N, K, L):(K, 1, N * K)>",
            "B: tensor<bf16, (N, K, L):(K, 1, 0)>",
            true,
        ),
        (
            "C: tensor<bf16, (M, N, L):(1, M, M * N)>",
            "C: tensor<bf16, (M, N, L):(1, M, 0)>",
            false,
        ),
    ] {
        assert!(src.contains(from), "the example's declaration of {from}");
        let file = dir.join(if ok { "shared_b.tile" } else { "shared_c.tile" });
        std::fs::write(&file, src.replace(from, to)).unwrap();
        let (code, out, err) = run_cpu(file.to_str().unwrap(), "L=3,M=136,N=300,K=72,sm_count=5");
        if ok {
            assert_eq!(code, 0, "{out}{err}");
            assert!(
                out.contains("TMA reads an aligned copy of B") && out.contains("(ok)"),
                "{out}"
            );
        } else {
            assert_ne!(code, 0, "{out}{err}");
            assert!(
                err.contains("C (M,N,L):(1,M,0) puts two of its elements in one place"),
                "{err}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A reference whose values are NaN or infinite is met exactly, and the
/// check says how many there were: an output of NaN everywhere against a
/// reference of NaN everywhere (attention at a scale of inf) is `ok`, but
/// not silently.
#[test]
fn a_non_finite_reference_is_said_beside_ok() {
    let (code, out, err) = run_cpu("tests/run/non_finite.tile", "M=300");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("of the reference's values NaN or infinite, met exactly"),
        "{out}"
    );
    let (code, out, err) = run_cpu_with(
        "examples/attention_sm90.tile",
        "S=64,H=1",
        &["--scalars", "scale=inf"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("(ok, 4096 of the reference's values NaN or infinite, met exactly)"),
        "{out}"
    );
}
