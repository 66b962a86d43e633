//! Persistent TMA GEMMs: one block a multiprocessor (`sm_count`, drawn
//! small) walking the tiles of C as one pipeline over all its k-tiles,
//! in raster order or in groups of rows, and now and then stream-K (whole
//! tiles, then an even share of the k-tiles of the tiles left over, their
//! pieces summed by a `reduce` across parts in the pipeline's body). Their
//! trips divide by run-time values (`i / kt`, `t / (group * tn)`, `at %
//! kt`), which code generation computes once a tile or steps from the last
//! trip's. Now and then the walk is on clusters of two blocks along M
//! (`grid(2, n), cluster(2, 1)`, a grid of whole clusters: `block.x` the
//! rank, the two blocks the two row tiles of a cluster tile, sharing B's
//! boxes), whose epilogue writes C in the pipeline's body. Now and then
//! C's tile goes out in column subtiles through two or four buffers, the
//! store waits keeping the newest store in flight.
//! These programs are the ones that reach that code, on a GPU with
//! `FUZZ_KEEP=1` and `tilec run --check-cpu`; here they check the checker,
//! lowering and the executor.

use super::{Program, Rng, compact};

pub(super) fn generate_persistent_gemm(rng: &mut Rng) -> Program {
    let (elem, types) = rng.pick(&[("bf16", "BF16BF16"), ("f16", "F16F16")]);
    let (wm, wn) = rng.pick(&[(1, 1), (2, 1), (1, 2)]);
    let n = rng.pick(&[32, 64, 128]);
    let (bm, bn, bk) = (64 * wm, n * wn, 64);
    let threads = 128 * wm * wn;
    let streamk = rng.chance(40);
    // Stream-K sums its pieces in f32 and writes the tile through a
    // shared tile of C by TMA; the walk alone may also write C from the
    // registers.
    let through_shared = streamk || rng.chance(40);
    let c_elem = match through_shared {
        true => elem,
        false => rng.pick(&[elem, "f32"]),
    };
    // A reduce across blocks is refused on clusters: stream-K never is.
    // The rank's row tile may lie past M (a cluster tile's second half):
    // TMA clips its stores there, where a write from the registers would
    // be out of bounds (the runtime's proof refuses that launch).
    let cm = if !streamk && through_shared && rng.chance(40) {
        2
    } else {
        1
    };
    let c_bytes = if c_elem == "f32" { 4 } else { 2 };
    let c_tile = if through_shared { bm * bn * c_bytes } else { 0 };
    let stages = (1..=4)
        .rev()
        .filter(|s| (bm + bn) * bk * 2 * s + c_tile <= 200 * 1024)
        .nth(rng.below(2) as usize)
        .unwrap_or(1);
    let c_row_major = rng.chance(50);
    let lc = compact(&["M".to_string(), "N".to_string()], c_row_major);
    let sc = match c_row_major {
        true => format!("({bm}, {bn}):({bn}, 1)"),
        false => format!("({bm}, {bn}):(1, {bm})"),
    };
    let stage = |rows: i64| {
        format!(
            "composition(Swizzle(3, 3, 3), tile_to_shape((8, 64):(64, 1), ({rows}, {bk}, {stages})))"
        )
    };
    // Tile t's row and column of tiles: in raster order down the columns,
    // or `group` rows of tiles at a time (the last group has the rows
    // that are left).
    let group = rng.pick(&[0, 1, 2, 3]);
    let mut walk = match group {
        0 => "        let m = t % tm;\n        let n = t / tm;\n".to_string(),
        g => format!(
            "        let g = t / ({g} * tn);
        let rows = min({g}, tm - g * {g});
        let m = g * {g} + (t - g * {g} * tn) % rows;
        let n = (t - g * {g} * tn) / rows;
"
        ),
    };
    // On clusters, the walk's row is the cluster tile's, and the block's
    // row tile is the rank's within it.
    if cm > 1 {
        walk = walk.replace("let m = ", "let mc = ");
        walk += &format!("        let m = mc * {cm} + block.x;\n");
    }
    // (A prefetch is a TMA copy: C is then written by TMA too.)
    let prefetch = match through_shared && rng.chance(40) {
        true => format!(
            "
        if k == max(kt - {}, 0) {{
            prefetch(local_tile(C, cta, (m, n, _), step(1, 1, X)));
        }}",
            rng.pick(&[1, 2, 4])
        ),
        false => String::new(),
    };
    // Now and then C's tile goes out in column subtiles through a few
    // buffers, each reloaded once its store is read while the next
    // subtile's store drains (a wait that keeps one store in flight).
    let subtiles = match through_shared && !streamk && !c_row_major && wn == 1 && rng.chance(50) {
        true => {
            let parts = rng.pick(&[2, 4]);
            Some((parts, rng.pick(&[2, parts])))
        }
        false => None,
    };
    let (write, shared_c) = match (through_shared, subtiles) {
        (true, Some((parts, buffers))) => subtiled_epilogue(c_elem, bm, n, parts, buffers),
        (true, None) => (
            "let gC = local_tile(C, cta, (m, n, _), step(1, 1, X));
            copy_tma(gC, sC);
            tCsC = alpha * tCrC + beta * tCsC;
            copy_tma(sC, gC);"
                .to_string(),
            format!("    let sC = shared<{c_elem}>({sc});\n    let tCsC = partition_C(mma, sC, thread.x);\n"),
        ),
        (false, _) => (
            "axpby(alpha, tCrC, beta, partition_C(mma, local_tile(C, cta, (m, n, _), step(1, 1, X)), thread.x));"
                .to_string(),
            String::new(),
        ),
    };
    // The block's k-tiles, and the step's k-tile `k` of tile `t`.
    let (grid, before, trips, step, last, epilogue) = match streamk {
        false if cm > 1 => (
            "min(tiles, max(sm_count / 2, 1))",
            String::new(),
            "ceil_div(tiles - block.y, grid) * kt",
            "        let t = block.y + i / kt * grid;\n        let k = i % kt;\n",
            "k == kt - 1",
            format!("{write}\n            tCrC = 0.0;"),
        ),
        false => (
            "min(tiles, sm_count)",
            String::new(),
            "ceil_div(tiles - block.x, grid) * kt",
            "        let t = block.x + i / kt * grid;\n        let k = i % kt;\n",
            "k == kt - 1",
            format!("{write}\n            tCrC = 0.0;"),
        ),
        true => (
            "min(tiles * kt, sm_count)",
            "    let sk = tiles % grid;
    let dp = tiles - sk;
    let sw = sk * kt;
    let sg = max(min(grid, sw), 1);
    let most = kt / max(sw / sg, 1) + 2;
    let steps = dp / grid * kt;
    let w0 = min(block.x, sg) * sw / sg;
    let w1 = min(block.x + 1, sg) * sw / sg;
"
            .to_string(),
            "steps + w1 - w0",
            // The step's tile and k-tile from a running k-tile number
            // divided again, or from the counter's stepped quotient and
            // remainder (tests/run/streamk_persistent.tile's form).
            match rng.chance(50) {
                true => {
                    "        let sk_ = 1 - min(max(steps - i, 0), 1);
        let at = (1 - sk_) * ((block.x + i / kt * grid) * kt + i % kt) + sk_ * (dp * kt + w0 + i - steps);
        let t = at / kt;
        let k = at % kt;
"
                }
                false => {
                    "        let sk_ = 1 - min(max(steps - i, 0), 1);
        let rc = i % kt + sk_ * (w0 % kt);
        let wrap = min(max(rc - kt + 1, 0), 1);
        let k = rc - kt * wrap;
        let t = (1 - sk_) * (block.x + i / kt * grid) + sk_ * (dp + w0 / kt - steps / kt + i / kt + wrap);
"
                }
            },
            "k == kt - 1 || i == steps + w1 - w0 - 1",
            format!(
                "let ts = max(t - dp, 0);
            let first = (1 - sk_) * block.x + sk_ * (((ts * kt + 1) * sg - 1) / max(sw, 1));
            let last = (1 - sk_) * block.x + sk_ * (((ts * kt + kt) * sg - 1) / max(sw, 1));
            reduce tCrC across parts(t < tiles, block.x - first < last - first + 1, last - first + 1 <= most){} {{
                {}
            }}
            tCrC = 0.0;",
                // Half the stream-K reduces add by atomics.
                if rng.chance(50) { " atomic" } else { "" },
                write.replace("\n            ", "\n                ")
            ),
        ),
    };
    let source = format!(
        "kernel fz(A: tensor<{elem}, (M, K):(K, 1)>, B: tensor<{elem}, (N, K):(K, 1)>, C: tensor<{c_elem}, {lc}>, alpha: f32, beta: f32)
{{
    tiler cta = ({bm}, {bn}, {bk});
    let mma = make_tiled_mma(SM90_64x{n}x16_F32{types}_SS, ({wm}, {wn}));
    let tm = ceil_div(M, {bm} * {cm});
    let tn = ceil_div(N, {bn});
    let kt = ceil_div(K, {bk});
    let tiles = tm * tn;
    let grid = {grid};
{before}    reference gemm(A, B, C, alpha, beta);
    launch {launch};
    let smA = shared<{elem}>({sa});
    let smB = shared<{elem}>({sb});
{shared_c}    let tCsA = partition_A(mma, smA, thread.x);
    let tCsB = partition_B(mma, smB, thread.x);
    let tCrC = registers<f32>(shape(partition_C(mma, local_tile(C, cta, (0, 0, _), step(1, 1, X)), thread.x)), 0.0);
    pipeline i in 0..{trips}, stage s in 0..{stages} {{
{step}{walk}        load {{
            copy_tma(local_tile(A, cta, (m, n, _), step(1, X, 1))[_, _, k], smA[_, _, s]);
            copy_tma(local_tile(B, cta, (m, n, _), step(X, 1, 1))[_, _, k], smB[_, _, s]);
        }}
        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);{prefetch}
        if {last} {{
            {epilogue}
        }}
    }}
}}
",
        sa = stage(bm),
        sb = stage(bn),
        launch = match cm {
            1 => format!("grid(grid), block({threads})"),
            _ => format!("grid({cm}, grid), block({threads}), cluster({cm}, 1)"),
        },
    );
    // Rows of whole 16 bytes (TMA reads them in place), a tile or a few
    // and now and then a partial one, on a few multiprocessors.
    let mut extent = |t: i64| match rng.below(3) {
        0 => 8 * (1 + rng.below(8) as i64),
        1 => t * (1 + rng.below(3) as i64),
        _ => (t * (1 + rng.below(3) as i64) + rng.pick(&[-8, 8, 24])).max(8),
    };
    let dims = vec![
        format!("M={}", extent(bm)),
        format!("N={}", extent(bn)),
        format!("K={}", extent(bk)),
        format!("sm_count={}", 1 + rng.below(7)),
    ];
    Program { source, dims }
}

/// The epilogue of an M-major tile of C (`bm` x `n`, one warpgroup along
/// N) in `parts` column subtiles through `buffers` shared buffers: the
/// first subtiles loaded at once, each computed in place and stored, and
/// the buffer of the one before reloaded with the next subtile it takes
/// (examples/bgemm_tn_sm90_persistent.tile's form). Returns the statements
/// and the buffers' declarations.
fn subtiled_epilogue(elem: &str, bm: i64, n: i64, parts: i64, buffers: i64) -> (String, String) {
    let w = n / parts;
    // A thread's values of subtile j: the accumulators' column groups of
    // 8, four values each, w / 8 of them a subtile.
    let byj = format!("((2, 2, {}), {parts}):((1, 2, 4), {})", w / 8, w / 2);
    let mut declared = String::new();
    for b in 0..buffers {
        declared += &format!(
            "    let s{b} = shared<{elem}>(composition(Swizzle(3, 3, 3), ((64, {}), {w}):((1, {}), 64)));
    let t{b} = partition_C(mma, composition(s{b}, ({bm}, ({w}, {parts})):(1, ({bm}, 0))), thread.x);\n",
            bm / 64,
            64 * w
        );
    }
    let load = |j: i64| {
        format!(
            "copy_tma(local_tile(C, ({bm}, {w}), (m, {parts} * n + {j})), s{});\n            ",
            j % buffers
        )
    };
    let mut out = String::new();
    for j in 0..buffers {
        out += &load(j);
    }
    for j in 0..parts {
        let b = j % buffers;
        out += &format!(
            "composition(t{b}, byj)[_, {j}] = alpha * composition(tCrC, byj)[_, {j}] + beta * composition(t{b}, byj)[_, {j}];
            copy_tma(s{b}, local_tile(C, ({bm}, {w}), (m, {parts} * n + {j})));\n            "
        );
        if j >= 1 && j - 1 + buffers < parts {
            out += &load(j - 1 + buffers);
        }
    }
    declared += &format!("    layout byj = {byj};\n");
    (out.trim_end().to_string(), declared)
}
