//! The program fuzzer's tensor-core GEMMs: mma.sync over ldmatrix
//! fragments, wgmma from shared tiles, and TMA pipelines (with epilogues
//! through TMA now and then), each written by [`TensorCoreGemm`].

use super::{Program, Rng, compact, gemm_dims, thread_split};

/// A tensor-core GEMM: a tiled MMA of random warps over random block
/// tiles, A and B of either major in bf16 or f16, through shared tiles
/// that are compact or swizzled (CuTe's K- or MN-major atoms of 32, 64 or
/// 128 bytes), fragments copied from shared memory (ldmatrix where the
/// layouts allow), C in the input type or f32, of either major.
pub(super) fn generate_mma_gemm(rng: &mut Rng) -> Program {
    let (elem, atom) = rng.pick(&[
        ("bf16", "SM80_16x8x16_F32BF16BF16F32_TN"),
        ("f16", "SM80_16x8x16_F32F16F16F32_TN"),
    ]);
    let (wm, wn) = rng.pick(&[(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (2, 4)]);
    let threads = 32 * wm * wn;
    let (bm, bn, bk) = (
        // Four m-repeats make a thread's epilogue large enough for the
        // guarded entries to roll it into a loop (`lower/rolled.rs`).
        16 * wm * rng.pick(&[1, 2, 4]),
        8 * wn * rng.pick(&[1, 2, 4]),
        16 * rng.pick(&[1, 2, 4]),
    );
    // A shared tile (rows, bk): compact either way, or a swizzle atom of
    // 2^b 16-byte chunks tiled over it, when it fits.
    let tile = |rng: &mut Rng, rows: i64| -> String {
        let b: i64 = rng.pick(&[1, 2, 3]);
        let width = 8 << b;
        match rng.below(4) {
            0 if bk % width == 0 => format!(
                "composition(Swizzle({b}, 3, 3), tile_to_shape((8, {width}):({width}, 1), ({rows}, {bk})))"
            ),
            1 if rows % width == 0 => format!(
                "composition(Swizzle({b}, 3, 3), tile_to_shape(({width}, 8):(1, {width}), ({rows}, {bk})))"
            ),
            _ => compact(&[rows.to_string(), bk.to_string()], rng.chance(50)),
        }
    };
    let (sa, sb) = (tile(rng, bm), tile(rng, bn));
    let gemm = TensorCoreGemm {
        elem,
        atom: atom.to_string(),
        warps: [wm, wn],
        threads,
        tile: [bm, bn, bk],
        shared: [sa, sb],
        splits: 1,
        cluster: String::new(),
    };
    // Fragments copied from shared memory into registers (ldmatrix where
    // the layouts allow), then multiplied.
    gemm.program(
        rng,
        90,
        &format!(
            "    let tCrA = registers<{elem}>(shape(tCsA));
    let tCrB = registers<{elem}>(shape(tCsB));"
        ),
        "        copy(tCsA, tCrA);
        copy(tCsB, tCrB);
        gemm(mma, tCrA, tCrB, tCrC);",
    )
}

/// A wgmma GEMM: SM90 `_SS` atoms of random N over one or two
/// warpgroups, A and B read by the atom straight from shared tiles that
/// are CuTe's K- or MN-major GMMA atoms (32, 64 or 128 bytes) or compact
/// (which wgmma's descriptors describe only by chance: mostly refused at
/// the gemm), C in the input type or f32, of either major. A third of them
/// `_RS`: A copied from its shared tile into the threads' registers in
/// wgmma's A fragment first, each wgmma then fenced on its own.
pub(super) fn generate_wgmma_gemm(rng: &mut Rng) -> Program {
    let (elem, types) = rng.pick(&[("bf16", "BF16BF16"), ("f16", "F16F16")]);
    let n = rng.pick(&[8, 16, 24, 32, 64, 128]);
    let (wm, wn) = rng.pick(&[(1, 1), (2, 1), (1, 2)]);
    let threads = 128 * wm * wn;
    let (bm, bn, bk) = (
        64 * wm * rng.pick(&[1, 2]),
        n * wn * rng.pick(&[1, 2]),
        16 * rng.pick(&[1, 2, 4]),
    );
    // Every canonical form that fits (K- or MN-major; 32-, 64- or 128-byte
    // swizzle atoms tiled over the tile, or 8x8 core matrices without a
    // swizzle), and now and then a compact tile.
    let tile = |rng: &mut Rng, rows: i64| -> String {
        let mut forms = vec![
            format!(
                "((8, {}), (8, {})):((8, 64), (1, {}))",
                rows / 8,
                bk / 8,
                8 * rows
            ),
            format!(
                "((8, {}), (8, {})):((1, 64), (8, {}))",
                rows / 8,
                bk / 8,
                8 * rows
            ),
        ];
        for b in 1..=3 {
            let width = 8 << b;
            if bk % width == 0 {
                forms.push(format!(
                    "composition(Swizzle({b}, 3, 3), tile_to_shape((8, {width}):({width}, 1), ({rows}, {bk})))"
                ));
            }
            if rows % width == 0 {
                forms.push(format!(
                    "composition(Swizzle({b}, 3, 3), tile_to_shape(({width}, 8):(1, {width}), ({rows}, {bk})))"
                ));
            }
        }
        if rng.chance(15) {
            compact(&[rows.to_string(), bk.to_string()], rng.chance(50))
        } else {
            forms.swap_remove(rng.below(forms.len() as u64) as usize)
        }
    };
    let (sa, sb) = (tile(rng, bm), tile(rng, bn));
    let registers_a = rng.chance(33);
    let gemm = TensorCoreGemm {
        elem,
        atom: format!(
            "SM90_64x{n}x16_F32{types}_{}",
            if registers_a { "RS" } else { "SS" }
        ),
        warps: [wm, wn],
        threads,
        tile: [bm, bn, bk],
        shared: [sa, sb],
        splits: 1,
        cluster: String::new(),
    };
    match registers_a {
        // A through the threads' registers, B from shared memory.
        true => gemm.program(
            rng,
            100,
            &format!("    let tCrA = registers<{elem}>(shape(tCsA));"),
            "        copy(tCsA, tCrA);
        gemm(mma, tCrA, tCsB, tCrC);",
        ),
        // The atom reads A and B from shared memory itself.
        false => gemm.program(rng, 100, "", "        gemm(mma, tCsA, tCsB, tCrC);"),
    }
}

/// A TMA pipeline GEMM: wgmma atoms of random N over one or two consumer
/// warpgroups, A and B loaded as TMA boxes into one to four stages of
/// CuTe's GMMA atoms (K-major 32-, 64- or 128-byte rows, the k-tile one
/// row wide; or MN-major, the tile one swizzle span tall), A and B of
/// random majors (a major the stage does not match is no box: refused at
/// the copy), sometimes a barrier among the consumers, and extents of
/// any size.
pub(super) fn generate_tma_gemm(rng: &mut Rng) -> Program {
    let (elem, types) = rng.pick(&[("bf16", "BF16BF16"), ("f16", "F16F16")]);
    let n = rng.pick(&[8, 16, 32, 64, 128]);
    let (wm, wn) = rng.pick(&[(1, 1), (2, 1), (1, 2)]);
    let threads = 128 * wm * wn;
    let (bm, bn) = (64 * wm * rng.pick(&[1, 2]), n * wn * rng.pick(&[1, 2]));
    let swizzle = rng.pick(&[1i64, 2, 3]);
    let width = 8 << swizzle;
    // K-major stages need the k-tile one row wide; MN-major ones, the
    // tile one swizzle span tall.
    let k_major = rng.chance(70) || (bm != width && bn != width);
    let bk = if k_major {
        width
    } else {
        16 * rng.pick(&[1, 2, 4])
    };
    let stages = rng.pick(&[1, 2, 3, 4]);
    let splits = if rng.chance(30) {
        rng.pick(&[2, 3, 4])
    } else {
        1
    };
    let stage = |rows: i64| {
        if k_major {
            format!(
                "composition(Swizzle({swizzle}, 3, 3), tile_to_shape((8, {width}):({width}, 1), ({rows}, {bk}, {stages})))"
            )
        } else {
            format!(
                "composition(Swizzle({swizzle}, 3, 3), tile_to_shape(({width}, 8):(1, {width}), ({rows}, {bk}, {stages})))"
            )
        }
    };
    let tensor = |rng: &mut Rng, m: &str| {
        let matches = rng.chance(90);
        compact(&[m.to_string(), "K".to_string()], k_major == matches)
    };
    let (la, lb) = (tensor(rng, "M"), tensor(rng, "N"));
    let c_row_major = rng.chance(50);
    let lc = compact(&["M".to_string(), "N".to_string()], c_row_major);
    let c_elem = if rng.chance(50) { "f32" } else { elem };
    let sync = if rng.chance(20) {
        "\n        sync();"
    } else {
        ""
    };
    let gemm = TensorCoreGemm {
        elem,
        atom: format!("SM90_64x{n}x16_F32{types}_SS"),
        warps: [wm, wn],
        threads,
        tile: [bm, bn, bk],
        shared: [stage(bm), stage(bn)],
        splits,
        // Now and then a cluster along M (the blocks share B's boxes),
        // along N (A's) or of four: multicast where the parts fit.
        cluster: match rng.below(10) {
            0 => ", cluster(2, 1)".to_string(),
            1 => ", cluster(1, 2)".to_string(),
            2 => ", cluster(4, 1)".to_string(),
            _ => String::new(),
        },
    };
    let head = gemm.head([&la, &lb, &lc], c_elem, "");
    // Split-K now and then: each block.z's pipeline runs its slice of the
    // k-tiles from a run-time start (some slices empty), and the group's
    // last block writes C.
    // Now and then the epilogue goes through a shared tile of C by TMA
    // (C's tile loaded before or after the main loop, stored after it),
    // where the tile fits beside the stages.
    let c_bytes = if c_elem == "f32" { 4 } else { 2 };
    let tma_epilogue = splits == 1
        && bm * bn * c_bytes + (bm + bn) * bk * 2 * stages <= 160 * 1024
        && rng.chance(30);
    // Or, without a cluster (whose pad blocks may write nothing in the
    // pipeline), in the body at the last k-tile: C's tile loaded in one
    // `if` before the gemm and waited for in the next on the same test.
    let in_body = tma_epilogue && gemm.cluster.is_empty() && rng.chance(35);
    let (mut prologue, mut before) = (String::new(), String::new());
    if tma_epilogue {
        let sc = match c_row_major {
            true => format!("({bm}, {bn}):({bn}, 1)"),
            false => format!("({bm}, {bn}):(1, {bm})"),
        };
        prologue = format!(
            "    let sC = shared<{c_elem}>({sc});\n    let tCsC = partition_C(mma, sC, thread.x);\n"
        );
        if !in_body && rng.chance(50) {
            before = "    copy_tma(gC, sC);\n".to_string();
        }
    }
    let (load_c, store_c) = match in_body {
        true => (
            "
        if k == size(gA, 2) - 1 {
            copy_tma(gC, sC);
        }",
            "
        if k == size(gA, 2) - 1 {
            tCsC = alpha * tCrC + beta * tCsC;
            copy_tma(sC, gC);
        }",
        ),
        false => ("", ""),
    };
    // Now and then in two steps, the first into the accumulators (C's
    // tile read into registers by ldmatrix where it is 16-bit), then the
    // tile written from them.
    let update = match tma_epilogue && rng.chance(40) {
        true => "tCrC = alpha * tCrC + beta * tCsC;\n    tCsC = tCrC;",
        false => "tCsC = alpha * tCrC + beta * tCsC;",
    };
    let tma_tail = format!(
        "{}{update}\n    copy_tma(sC, gC);",
        if before.is_empty() {
            "copy_tma(gC, sC);\n    "
        } else {
            ""
        }
    );
    // Half the split-K reduces add by atomics.
    let how = match rng.chance(50) {
        true => " atomic",
        false => "",
    };
    let reduce = format!(
        "reduce tCrC across block.z{how} {{
        axpby(alpha, tCrC, beta, tCgC);
    }}"
    );
    let (slice, range, epilogue) = match splits {
        1 if in_body => (prologue, "0..size(gA, 2)", ""),
        1 if tma_epilogue => (prologue + &before, "0..size(gA, 2)", tma_tail.as_str()),
        1 => (
            String::new(),
            "0..size(gA, 2)",
            "axpby(alpha, tCrC, beta, tCgC);",
        ),
        n => (
            format!(
                "    let per = ceil_div(size(gA, 2), {n});
    let k0 = block.z * per;
    let n = min(per, max(size(gA, 2) - k0, 0));
"
            ),
            "k0..k0 + n",
            reduce.as_str(),
        ),
    };
    let source = format!(
        "{head}
    let tCsA = partition_A(mma, smA, thread.x);
    let tCsB = partition_B(mma, smB, thread.x);
    let tCgC = partition_C(mma, gC, thread.x);
    let tCrC = registers<f32>(shape(tCgC), 0.0);
{slice}    pipeline k in {range}, stage s in 0..{stages} {{
        load {{
            copy_tma(gA[_, _, k], smA[_, _, s]);
            copy_tma(gB[_, _, k], smB[_, _, s]);
        }}{load_c}
        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);{sync}{store_c}
    }}
    {epilogue}
}}
"
    );
    // A single tile or several, now and then a partial one; mostly
    // multiples of 8 (rows of whole 16 bytes, which TMA reads in place),
    // sometimes not (the runtime's plan reads those through an aligned
    // copy, and a partial k-tile read by TMA alone keeps the full entry).
    let mut extent = |t: i64| match rng.below(4) {
        0 => 8 * (1 + rng.below(4) as i64),
        1 => t * (1 + rng.below(2) as i64),
        2 => (t * (1 + rng.below(2) as i64) + rng.pick(&[-8, 8])).max(8),
        _ => (t * (1 + rng.below(2) as i64) + rng.pick(&[-3, 1, 5])).max(1),
    };
    let dims = vec![
        format!("M={}", extent(bm)),
        format!("N={}", extent(bn)),
        format!("K={}", extent(bk)),
    ];
    Program { source, dims }
}

/// What the tensor-core GEMM generators choose; `program` writes the rest
/// alike: A, B and C of random majors, C in the input type or f32, copies
/// through shared memory by thread layouts that divide the tiles
/// `percent` of the time, and the extents.
struct TensorCoreGemm {
    elem: &'static str,
    atom: String,
    warps: [i64; 2],
    threads: i64,
    tile: [i64; 3],
    shared: [String; 2],
    /// Slices of K, one per `block.z` (split-K); 1: none.
    splits: i64,
    /// The launch's `cluster(...)` part, if any (with its comma).
    cluster: String,
}

impl TensorCoreGemm {
    /// The kernel's first lines, to its shared stages: A, B and C of the
    /// given layouts (C of `c_elem`), the tile, the tiled MMA, `extra`
    /// declarations, the reference, the launch and the block's tiles.
    fn head(&self, [la, lb, lc]: [&str; 3], c_elem: &str, extra: &str) -> String {
        let Self {
            elem,
            atom,
            warps: [wm, wn],
            threads,
            tile: [bm, bn, bk],
            shared: [sa, sb],
            splits,
            cluster,
        } = self;
        let z = match splits {
            1 => String::new(),
            n => format!(", {n}"),
        };
        format!(
            "kernel fz(A: tensor<{elem}, {la}>, B: tensor<{elem}, {lb}>, C: tensor<{c_elem}, {lc}>, alpha: f32, beta: f32)
{{
    tiler cta = ({bm}, {bn}, {bk});
    let mma = make_tiled_mma({atom}, ({wm}, {wn}));
{extra}    reference gemm(A, B, C, alpha, beta);
    launch grid(ceil_div(M, {bm}), ceil_div(N, {bn}){z}), block({threads}){cluster};
    let gA = local_tile(A, cta, (block.x, block.y, _), step(1, X, 1));
    let gB = local_tile(B, cta, (block.x, block.y, _), step(X, 1, 1));
    let gC = local_tile(C, cta, (block.x, block.y, _), step(1, 1, X));
    let smA = shared<{elem}>({sa});
    let smB = shared<{elem}>({sb});"
        )
    }

    fn program(&self, rng: &mut Rng, percent: u64, registers: &str, multiply: &str) -> Program {
        let Self {
            elem,
            threads,
            tile: [bm, bn, bk],
            ..
        } = self;
        let (ta, tb) = (
            thread_split(rng, *threads, *bm, *bk, percent),
            thread_split(rng, *threads, *bn, *bk, percent),
        );
        let major = |rng: &mut Rng, m: &str, n: &str| {
            compact(&[m.to_string(), n.to_string()], rng.chance(50))
        };
        let (la, lb, lc) = (
            major(rng, "M", "K"),
            major(rng, "N", "K"),
            major(rng, "M", "N"),
        );
        let c_elem = if rng.chance(50) { "f32" } else { elem };
        let head = self.head(
            [&la, &lb, &lc],
            c_elem,
            &format!("    layout tA = {ta};\n    layout tB = {tb};\n"),
        );
        let source = format!(
            "{head}
    let tAgA = local_partition(gA, tA, thread.x);
    let tAsA = local_partition(smA, tA, thread.x);
    let tBgB = local_partition(gB, tB, thread.x);
    let tBsB = local_partition(smB, tB, thread.x);
    let tCsA = partition_A(mma, smA, thread.x);
    let tCsB = partition_B(mma, smB, thread.x);
    let tCgC = partition_C(mma, gC, thread.x);
{registers}
    let tCrC = registers<f32>(shape(tCgC), 0.0);
    for k in 0..size(gA, 2) {{
        copy(tAgA[_, _, k], tAsA);
        copy(tBgB[_, _, k], tBsB);
        sync();
{multiply}
        sync();
    }}
    axpby(alpha, tCrC, beta, tCgC);
}}
"
        );
        let dims = gemm_dims(rng, [*bm, *bn, *bk], 2);
        Program { source, dims }
    }
}
