//! Ping-pong GEMMs: a persistent TMA pipeline with turns (`turn j in
//! ...`), each of one to three consumer warpgroups taking whole tiles of
//! its own in rotation (an MMA of one warpgroup over 64 or 128 rows,
//! partitioned by `thread.x % 128`), each turn closed by its `after`: the
//! epilogue straight to global memory, or through a shared tile of the
//! warpgroup's own between barriers of its turn (16-byte vectors of C in
//! and out); now and then on clusters of two blocks along M, B's boxes
//! multicast. These check the turns' checker, lowering and executor (its
//! warpgroups' barriers and races); on a GPU, with `FUZZ_KEEP=1` and
//! `tilec run --check-cpu`, codegen's ring, order barriers and releases.

use super::{Program, Rng, compact};

pub(super) fn generate_pingpong_gemm(rng: &mut Rng) -> Program {
    let (elem, types) = rng.pick(&[("bf16", "BF16BF16"), ("f16", "F16F16")]);
    let reps = rng.pick(&[1, 2]);
    let n = rng.pick(&[32, 64, 128]);
    let (bm, bn, bk) = (64 * reps, n, 64);
    let groups = rng.pick(&[1, 2, 2, 3]);
    let through_shared = rng.chance(40);
    let c_elem = match through_shared {
        true => elem,
        false => rng.pick(&[elem, "f32"]),
    };
    let c_bytes = if c_elem == "f32" { 4 } else { 2 };
    let c_tiles = if through_shared {
        groups * bm * bn * c_bytes
    } else {
        0
    };
    let stages = (2..=6)
        .rev()
        .filter(|s| (bm + bn) * bk * 2 * s + c_tiles <= 200 * 1024)
        .nth(rng.below(3) as usize)
        .unwrap_or(2);
    let c_row_major = !through_shared && rng.chance(50);
    let lc = compact(&["M".to_string(), "N".to_string()], c_row_major);
    let cm = if rng.chance(30) { 2 } else { 1 };
    let stage = |rows: i64| {
        format!(
            "composition(Swizzle(3, 3, 3), tile_to_shape((8, 64):(64, 1), ({rows}, {bk}, {stages})))"
        )
    };
    let (turns, tile) = match cm {
        1 => (
            "ceil_div(tiles - block.x, grid)",
            "        let t = block.x + j * grid;\n        let m = t % tm;\n        let n = t / tm;\n",
        ),
        _ => (
            "ceil_div(tiles - block.y, grid)",
            "        let t = block.y + j * grid;\n        let m = t % tm * 2 + block.x;\n        let n = t / tm;\n",
        ),
    };
    let (declare, epilogue) = match through_shared {
        false => (
            String::new(),
            "axpby(alpha, tCrC, beta, partition_C(mma, gC, thread.x % 128));".to_string(),
        ),
        true => {
            let along_m = bm / 8;
            let across = 128 / along_m;
            (
                format!(
                    "    let sC = shared<{c_elem}>(composition(Swizzle(3, 3, 3), ((64, {reps}), {bn}, {groups}):((1, {}), 64, {})));
    layout tv = (({along_m}, {across}), (8, {})):((8, {bm}), (1, {}));
",
                    64 * bn,
                    bm * bn,
                    bn / across,
                    bm * across
                ),
                "let sCw = sC[_, _, thread.x / 128];
            copy(composition(gC, tv)[thread.x % 128, _], composition(sCw, tv)[thread.x % 128, _]);
            sync();
            let tCsC = partition_C(mma, sCw, thread.x % 128);
            tCsC = alpha * tCrC + beta * tCsC;
            sync();
            copy(composition(sCw, tv)[thread.x % 128, _], composition(gC, tv)[thread.x % 128, _]);"
                    .to_string(),
            )
        }
    };
    let source = format!(
        "kernel fz(A: tensor<{elem}, (M, K):(K, 1)>, B: tensor<{elem}, (N, K):(K, 1)>, C: tensor<{c_elem}, {lc}>, alpha: f32, beta: f32)
{{
    tiler cta = ({bm}, {bn}, {bk});
    let mma = make_tiled_mma(SM90_64x{n}x16_F32{types}_SS, (1, 1));
    let tm = ceil_div(M, {bm} * {cm});
    let kt = ceil_div(K, {bk});
    let tiles = tm * ceil_div(N, {bn});
    let grid = min(tiles, max(sm_count / {cm}, 1));
    reference gemm(A, B, C, alpha, beta);
    launch {launch};
    let smA = shared<{elem}>({sa});
    let smB = shared<{elem}>({sb});
{declare}    let tCsA = partition_A(mma, smA, thread.x % 128);
    let tCsB = partition_B(mma, smB, thread.x % 128);
    let tCrC = registers<f32>(shape(partition_C(mma, local_tile(C, cta, (0, 0, _), step(1, 1, X)), thread.x % 128)), 0.0);
    pipeline k in 0..kt, turn j in 0..{turns}, stage s in 0..{stages} {{
{tile}        load {{
            copy_tma(local_tile(A, cta, (m, n, _), step(1, X, 1))[_, _, k], smA[_, _, s]);
            copy_tma(local_tile(B, cta, (m, n, _), step(X, 1, 1))[_, _, k], smB[_, _, s]);
        }}
        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);
        after {{
{tile_after}            let gC = local_tile(C, cta, (m, n, _), step(1, 1, X));
            {epilogue}
            tCrC = 0.0;
        }}
    }}
}}
",
        sa = stage(bm),
        sb = stage(bn),
        tile_after = tile.replace("        let", "            let"),
        launch = match cm {
            1 => format!("grid(grid), block({})", 128 * groups),
            _ => format!("grid(2, grid), block({}), cluster(2, 1)", 128 * groups),
        },
    );
    // Rows of whole 16 bytes (TMA reads them in place), a tile or a few
    // and now and then a partial one; on clusters M whole cluster tiles
    // (a rank's tile past M would be written from the registers).
    let whole = 2 * bm * (1 + rng.below(2) as i64);
    let mut extent = |t: i64| match rng.below(3) {
        0 => 8 * (1 + rng.below(8) as i64),
        1 => t * (1 + rng.below(3) as i64),
        _ => (t * (1 + rng.below(3) as i64) + rng.pick(&[-8, 8, 24])).max(8),
    };
    let m = match cm {
        1 => extent(bm),
        _ => whole,
    };
    let dims = vec![
        format!("M={m}"),
        format!("N={}", extent(bn)),
        format!("K={}", extent(bk)),
        format!("sm_count={}", 1 + rng.below(7)),
    ];
    Program { source, dims }
}
