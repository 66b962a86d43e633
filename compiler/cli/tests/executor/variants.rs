//! The entry the runtime picks for the extents: full tiles, guarded with
//! vectors, guarded per element, and TMA's partial k-tiles and aligned copies.

use super::*;

#[test]
fn a_block_without_a_tile_runs_guarded_and_touches_nothing() {
    let (code, out, err) = run_cpu("tests/run/a_block_too_many.tile", "M=256,N=384,K=32");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("sgemm_nt + sgemm_nt_guarded ") && out.contains("(ok)"),
        "{out}"
    );
}

#[test]
fn any_size_runs_through_the_guarded_variant() {
    // Sizes that are not multiples of the tiles, down to a single row: the
    // executor checks every access, so an unguarded partial tile would fail.
    for (file, dims) in [
        ("examples/sgemm_nt.tile", "M=127,N=129,K=5"),
        ("examples/sgemm_tn.tile", "M=1,N=130,K=17"),
        ("examples/sgemm_nt_tv.tile", "M=200,N=33,K=9"),
        ("examples/sgemm_tn_tv.tile", "M=129,N=127,K=3"),
        ("examples/copy.tile", "M=127,N=33"),
        ("examples/transpose.tile", "M=33,N=1"),
        ("tests/codegen/prefetch.tile", "M=200,N=33,K=9"),
        ("examples/sgemm_nt_sm80.tile", "M=130,N=100,K=33"),
        ("examples/sgemm_tn_sm80.tile", "M=1,N=129,K=19"),
        ("tests/codegen/cp_async.tile", "M=100,K=13"),
        ("tests/run/size_one_mode.tile", "N=1"),
        ("tests/run/size_one_mode.tile", "N=40"),
        ("tests/run/size_one_mode.tile", "N=1000"),
        ("tests/run/eight_rows.tile", "N=40"),
        ("tests/run/eight_rows.tile", "N=1000"),
        ("tests/run/threads_past_a_tile_mode.tile", "M=64,N=3"),
        ("tests/run/threads_past_a_tile_mode.tile", "M=31,N=2"),
        ("examples/bgemm_tn_sm80.tile", "M=127,N=129,K=77"),
        ("examples/hgemm_tn_sm80.tile", "M=1,N=200,K=5"),
        ("examples/bgemm_nt_sm80.tile", "M=130,N=7,K=70"),
        ("examples/bgemm_tn_sm90.tile", "M=130,N=200,K=72"),
        ("examples/bgemm_nt_sm90.tile", "M=1,N=260,K=5"),
        ("examples/bgemm_tn_sm90_tma.tile", "M=130,N=200,K=72"),
        ("examples/bgemm_nt_sm90_tma.tile", "M=136,N=264,K=72"),
        ("tests/run/tma_pipeline.tile", "M=1,N=65,K=8"),
        ("tests/run/tma_pipeline_mn.tile", "M=136,N=72,K=40"),
        ("tests/run/tma_pipeline_sw64.tile", "M=64,N=130,K=200"),
        (
            "tests/run/tma_pipeline_smem_epilogue.tile",
            "M=130,N=70,K=72",
        ),
        ("tests/run/tma_store_gemm.tile", "M=201,N=300,K=136"),
        ("tests/run/tma_store_copy.tile", "M=100,N=77"),
        ("tests/run/tma_copy.tile", "M=100,N=77"),
        ("tests/run/tma_copy_unswizzled.tile", "M=100,N=77"),
        ("tests/run/tma_coordinates_wrap.tile", "M=130,N=70"),
        (
            "tests/run/tma_stores_one_box_round_the_coordinates.tile",
            "M=130,N=70",
        ),
        ("tests/run/shared_reuse.tile", "M=100,N=77"),
        ("tests/run/mma_f32_out.tile", "M=33,N=17,K=20"),
        ("tests/run/swizzled_transpose.tile", "M=100,N=77"),
        ("tests/run/negative_shift_swizzle.tile", "M=100,N=77"),
        ("tests/run/ldmatrix_x2.tile", "M=33,N=17,K=20"),
        ("tests/run/convert.tile", "M=300,N=1"),
        ("tests/run/fma_bf16_to_f32.tile", "M=127,N=129,K=33"),
    ] {
        let (code, out, err) = run_cpu(file, dims);
        assert_eq!(code, 0, "{file} {dims}: {out}{err}");
        assert!(out.contains("(ok)"), "{out}");
    }
}

/// TMA fills zeros past a tensor's edge, so the full-tile entry of a
/// pipeline that reads A and B by TMA alone takes a partial last k-tile
/// (K = 200, k-tiles of 64): it runs, right, on every block.
#[test]
fn a_partial_k_tile_read_by_tma_keeps_the_full_tile_entry() {
    let (code, out, err) = run_cpu("examples/bgemm_tn_sm90_tma.tile", "M=128,N=256,K=200");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("bgemm_tn_sm90_tma M=128"), "{out}");
    assert!(out.contains("(ok)"), "{out}");
}

/// TMA needs a tensor's rows 16-byte aligned: with K = 100 bf16 (rows of
/// 200 bytes) the plan reads A and B through aligned copies, and says so.
#[test]
fn a_tma_stride_that_is_not_16_bytes_reads_an_aligned_copy() {
    let (code, out, err) = run_cpu("examples/bgemm_tn_sm90_tma.tile", "M=64,N=72,K=100");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(ok)"), "{out}");
    assert!(out.contains("TMA reads an aligned copy of A, B"), "{out}");
}

#[test]
fn the_runtime_picks_the_variant_the_extents_allow() {
    // All tiles full: the full-tile entry; some blocks partial but the
    // vectors aligned: the full-tile entry on the full blocks, the guarded
    // one with vectors on the others (one launch to the executor, which
    // checks that no two blocks write one element); a partial k-tile with
    // aligned extents: the guarded entry with vectors alone; a misaligned
    // extent: the per-element guarded entry alone (and where a kernel's
    // guarded copies cannot be vectors, it has no such entry). The executor
    // checks every access.
    for (file, dims, entry) in [
        (
            "examples/sgemm_nt_sm80.tile",
            "M=256,N=384,K=32",
            "sgemm_nt_sm80 M",
        ),
        (
            "examples/sgemm_nt_sm80.tile",
            "M=260,N=384,K=32",
            "sgemm_nt_sm80 + sgemm_nt_sm80_guarded_vec ",
        ),
        (
            "examples/sgemm_nt.tile",
            "M=260,N=132,K=48",
            "sgemm_nt + sgemm_nt_guarded ",
        ),
        (
            "examples/sgemm_tn_splitk.tile",
            "M=260,N=132,K=48",
            "sgemm_tn_splitk + sgemm_tn_splitk_guarded_vec ",
        ),
        (
            "examples/sgemm_nt_sm80.tile",
            "M=259,N=384,K=32",
            "sgemm_nt_sm80 + sgemm_nt_sm80_guarded_vec (reads aligned copies of A) ",
        ),
        (
            "examples/sgemm_nt_sm80.tile",
            "M=260,N=384,K=40",
            "sgemm_nt_sm80_guarded_vec ",
        ),
        (
            "examples/bgemm_tn_sm90.tile",
            "M=130,N=136,K=128",
            "bgemm_tn_sm90 + bgemm_tn_sm90_guarded_vec ",
        ),
        (
            "examples/bgemm_tn_sm90.tile",
            "M=130,N=136,K=70",
            "bgemm_tn_sm90 + bgemm_tn_sm90_guarded_vec (reads aligned copies of A, B) ",
        ),
        ("examples/copy.tile", "M=260,N=96", "copy + copy_guarded "),
    ] {
        let (code, out, err) = run_cpu(file, dims);
        assert_eq!(code, 0, "{file} {dims}: {out}{err}");
        assert!(
            out.starts_with(entry) && out.contains("(ok)"),
            "{dims}: {out}"
        );
    }
}
