//! Blocks that add their parts across the grid: split-K by `reduce ...
//! across block.z`, with plain loads and with TMA, and stream-K's pieces of
//! a tile; a reduce across fewer parts than it says stops at its bound.

use super::*;

/// Split-K: each block.z sums its quarter of K, `reduce r across block.z`
/// adds the four partials in block.z order and the group's last block
/// writes C (K = 8: one k-tile, three blocks of each group add nothing).
#[test]
fn a_split_k_gemm_reduces_across_blocks() {
    for dims in ["M=64,N=96,K=100", "M=33,N=17,K=8"] {
        let (code, out, err) = run_cpu("tests/run/split_k.tile", dims);
        assert_eq!(code, 0, "{dims}: {out}{err}");
        assert!(out.contains("(ok)"), "{dims}: {out}");
    }
}

/// Split-K beside a TMA pipeline: each block.z's pipeline runs its slice
/// of k-tiles (from a run-time start, its stages counted from there; K =
/// 300 is five k-tiles, two a slice: the last of 4 slices has none), the
/// consumers alone reduce (the
/// producer warpgroup has left), at every tile width the wgmma atom
/// `SM90_64xNx16_F32BF16BF16_SS(bn)` takes.
#[test]
fn a_split_k_tma_gemm_reduces_across_blocks() {
    for set in [
        "splits=4",
        "splits=4,bm=64,bn=64,stages=5",
        "splits=2,bn=128,stages=3",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
            .current_dir(root())
            .args(["run", "--cpu", "examples/bgemm_tn_sm90_splitk.tile"])
            .args(["--dims", "M=130,N=270,K=300", "--seed", "5", "--set", set])
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{set}: {stdout}{stderr}");
        assert!(stdout.contains("(ok)"), "{set}: {stdout}");
    }
}

/// Stream-K: every block takes the same number of k-tiles along all the
/// tiles' k-tiles in a row, and the pieces of a tile meet in a reduce
/// across parts inside the block's loop over its tiles. At shapes where
/// tiles have pieces on one, two and three blocks (one block a
/// multiprocessor: grids of 5 and 7), with partial tiles and a partial
/// k-tile, at each tile width; the kernels with a `stages` tunable also at
/// three stages.
#[test]
fn stream_k_adds_each_tiles_pieces_across_blocks() {
    for (dims, set, stages) in [
        ("M=200,N=136,K=99,sm_count=5", "bm=128,blocks_per_sm=1", ""),
        ("M=256,N=256,K=64,sm_count=7", "bm=128,blocks_per_sm=1", ""),
        (
            "M=127,N=129,K=40,sm_count=3",
            "bm=64,bn=64,least=8",
            ",stages=3",
        ),
        (
            "M=130,N=70,K=300,sm_count=4",
            "bm=64,bn=128,blocks_per_sm=2",
            "",
        ),
    ] {
        for (file, has_stages) in [
            ("examples/sgemm_streamk.tile", true),
            ("examples/sgemm_tn_streamk.tile", false),
            ("tests/run/streamk_transposing_copies.tile", true),
        ] {
            let set = match has_stages {
                true => format!("{set}{stages}"),
                false => set.to_string(),
            };
            let (code, stdout, stderr) = run_cpu_with(file, dims, &["--set", &set]);
            assert_eq!(code, 0, "{file} {dims}: {stdout}{stderr}");
            assert!(stdout.contains("(ok)"), "{file} {dims}: {stdout}");
        }
    }
}

/// A reduce across parts whose count is past its bound stops at the
/// statement, before its partial is stored past the workspace (the
/// executor's check; the GPU's, against the bounds the runtime passes,
/// reports the same statement's kernel).
#[test]
fn a_reduce_across_too_few_parts_stops_at_its_bound() {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .current_dir(root())
        .args([
            "run",
            "--cpu",
            "tests/run/too_few_parts.tile",
            "--dims",
            "M=64,N=16",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("(groups 4, most 1)") && err.contains("too_few_parts.tile:17:5"),
        "{err}"
    );
}
