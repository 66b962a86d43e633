//! A differential fuzzer of whole programs: random well-typed kernels,
//! copies (tensor layouts with run-time or static extents, tilers, thread
//! layouts that may or may not divide the tile, a path through shared
//! memory or registers, a loop over a k mode), GEMMs (random block
//! tiles, thread layouts and majors, through shared memory) and
//! tensor-core GEMMs (random warps, tiles, majors, swizzles, element
//! types; TMA pipelines, some split over block.z with a reduce, some on
//! clusters), are checked, then run on the CPU executor at random extents (1, primes, tile
//! multiples, off by one) against their reference. A kernel the checker refuses is fine; one it
//! accepts must run with no out-of-bounds access, no race, no unwritten
//! read and the reference's result (`tilec run` exits 0).
//!
//! CI runs `FUZZ_CASES` programs (default 120); off-line, e.g.
//! `FUZZ_CASES=20000 FUZZ_SEED=7 cargo test --release -p tilec-cli --test program_gen`.
//! A failing program is written to `target/fuzz/program_gen/` with its extents
//! (with `FUZZ_KEEP=1`, every program that ran, to run again on a GPU).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A small deterministic generator (xorshift64*), so a seed reproduces a run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One mode of a tensor: a run-time extent (`Some` name) or a static one.
#[derive(Clone, Copy)]
enum Extent {
    Named(&'static str),
    Static(i64),
}

impl Extent {
    fn text(self) -> String {
        match self {
            Extent::Named(n) => n.to_string(),
            Extent::Static(s) => s.to_string(),
        }
    }
}

/// A generated program and the extents it runs at.
struct Program {
    source: String,
    dims: Vec<String>,
}

/// The strides of a compact `(m, n)` or `(m, n, k)` layout, column- or row-major.
fn compact(modes: &[String], row_major: bool) -> String {
    let mut strides = vec![String::new(); modes.len()];
    let mut acc = "1".to_string();
    let order: Vec<usize> = if row_major {
        (0..modes.len()).rev().collect()
    } else {
        (0..modes.len()).collect()
    };
    for i in order {
        strides[i] = acc.clone();
        acc = if acc == "1" {
            modes[i].clone()
        } else {
            format!("{acc} * {}", modes[i])
        };
    }
    format!("({}):({})", modes.join(", "), strides.join(", "))
}

/// A GEMM in the style of CuTe's sgemm_1 with random block tiles, thread
/// layouts and majors: `C = alpha * A * B^T + beta * C` through shared
/// memory, a k loop with barriers, a register accumulator.
fn generate_gemm(rng: &mut Rng) -> Program {
    let (bm, bn, bk) = (
        rng.pick(&[8, 16, 32, 64]),
        rng.pick(&[8, 16, 32, 64]),
        rng.pick(&[1, 2, 4, 8]),
    );
    // Mostly a thread count every tile can hold, one element a thread or more.
    let fits: Vec<i64> = [32, 64, 128, 256]
        .into_iter()
        .filter(|&t| t <= (bm * bk).min(bn * bk))
        .collect();
    let threads: i64 = if !fits.is_empty() && rng.chance(85) {
        rng.pick(&fits)
    } else {
        rng.pick(&[32, 64, 128, 256])
    };
    let split = |rng: &mut Rng, m: i64, n: i64| thread_split(rng, threads, m, n, 85);
    let (ta, tb, tc) = (split(rng, bm, bk), split(rng, bn, bk), split(rng, bm, bn));
    let major =
        |rng: &mut Rng, m: &str, n: &str| compact(&[m.to_string(), n.to_string()], rng.chance(40));
    let (la, lb, lc) = (
        major(rng, "M", "K"),
        major(rng, "N", "K"),
        major(rng, "M", "N"),
    );
    let (sa, sb) = (
        compact(&[bm.to_string(), bk.to_string()], rng.chance(30)),
        compact(&[bn.to_string(), bk.to_string()], rng.chance(30)),
    );
    let source = format!(
        "kernel fz(A: tensor<f32, {la}>, B: tensor<f32, {lb}>, C: tensor<f32, {lc}>, alpha: f32, beta: f32)
{{
    tiler cta = ({bm}, {bn}, {bk});
    layout sA = {sa};
    layout sB = {sb};
    layout tA = {ta};
    layout tB = {tb};
    layout tC = {tc};
    reference gemm(A, B, C, alpha, beta);
    launch grid(ceil_div(M, {bm}), ceil_div(N, {bn})), block(size(tC));
    let gA = local_tile(A, cta, (block.x, block.y, _), step(1, X, 1));
    let gB = local_tile(B, cta, (block.x, block.y, _), step(X, 1, 1));
    let gC = local_tile(C, cta, (block.x, block.y, _), step(1, 1, X));
    let smA = shared<f32>(sA);
    let smB = shared<f32>(sB);
    let tAgA = local_partition(gA, tA, thread.x);
    let tAsA = local_partition(smA, tA, thread.x);
    let tBgB = local_partition(gB, tB, thread.x);
    let tBsB = local_partition(smB, tB, thread.x);
    let tCsA = local_partition(smA, tC, thread.x, step(1, X));
    let tCsB = local_partition(smB, tC, thread.x, step(X, 1));
    let tCgC = local_partition(gC, tC, thread.x, step(1, 1));
    let tCrC = registers<f32>(shape(tCgC), 0.0);
    for k in 0..size(gA, 2) {{
        copy(tAgA[_, _, k], tAsA);
        copy(tBgB[_, _, k], tBsB);
        sync();
        gemm(tCsA, tCsB, tCrC);
        sync();
    }}
    axpby(alpha, tCrC, beta, tCgC);
}}
"
    );
    let dims = gemm_dims(rng, [bm, bn, bk], 3);
    Program { source, dims }
}

/// A tensor-core GEMM: a tiled MMA of random warps over random block
/// tiles, A and B of either major in bf16 or f16, through shared tiles
/// that are compact or swizzled (CuTe's K- or MN-major atoms of 32, 64 or
/// 128 bytes), fragments copied from shared memory (ldmatrix where the
/// layouts allow), C in the input type or f32, of either major.
fn generate_mma_gemm(rng: &mut Rng) -> Program {
    let (elem, atom) = rng.pick(&[
        ("bf16", "SM80_16x8x16_F32BF16BF16F32_TN"),
        ("f16", "SM80_16x8x16_F32F16F16F32_TN"),
    ]);
    let (wm, wn) = rng.pick(&[(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (2, 4)]);
    let threads = 32 * wm * wn;
    let (bm, bn, bk) = (
        16 * wm * rng.pick(&[1, 2]),
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
/// the gemm), C in the input type or f32, of either major.
fn generate_wgmma_gemm(rng: &mut Rng) -> Program {
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
    let gemm = TensorCoreGemm {
        elem,
        atom: format!("SM90_64x{n}x16_F32{types}_SS"),
        warps: [wm, wn],
        threads,
        tile: [bm, bn, bk],
        shared: [sa, sb],
        splits: 1,
        cluster: String::new(),
    };
    // The atom reads A and B from shared memory itself.
    gemm.program(rng, 100, "", "        gemm(mma, tCsA, tCsB, tCrC);")
}

/// A TMA pipeline GEMM: wgmma atoms of random N over one or two consumer
/// warpgroups, A and B loaded as TMA boxes into one to four stages of
/// CuTe's GMMA atoms (K-major 32-, 64- or 128-byte rows, the k-tile one
/// row wide; or MN-major, the tile one swizzle span tall), A and B of
/// random majors (a major the stage does not match is no box: refused at
/// the copy), sometimes a barrier among the consumers, and extents of
/// any size.
fn generate_tma_gemm(rng: &mut Rng) -> Program {
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
    let (mut prologue, mut before) = (String::new(), String::new());
    if tma_epilogue {
        let sc = match c_row_major {
            true => format!("({bm}, {bn}):({bn}, 1)"),
            false => format!("({bm}, {bn}):(1, {bm})"),
        };
        prologue = format!(
            "    let sC = shared<{c_elem}>({sc});\n    let tCsC = partition_C(mma, sC, thread.x);\n"
        );
        if rng.chance(50) {
            before = "    copy_tma(gC, sC);\n".to_string();
        }
    }
    let tma_tail = format!(
        "{}tCsC = alpha * tCrC + beta * tCsC;\n    copy_tma(sC, gC);",
        if before.is_empty() {
            "copy_tma(gC, sC);\n    "
        } else {
            ""
        }
    );
    let (slice, range, epilogue) = match splits {
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
            "reduce tCrC across block.z {
        axpby(alpha, tCrC, beta, tCgC);
    }",
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
        }}
        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);{sync}
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

/// A column-major thread layout `(a, threads / a)` over an (m, n) tile:
/// `percent` of the time one that divides it, when there is one.
fn thread_split(rng: &mut Rng, threads: i64, m: i64, n: i64, percent: u64) -> String {
    let all: Vec<i64> = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        .into_iter()
        .filter(|x| threads % x == 0)
        .collect();
    let even: Vec<i64> = all
        .iter()
        .copied()
        .filter(|a| m % a == 0 && n % (threads / a) == 0)
        .collect();
    let a = if !even.is_empty() && rng.chance(percent) {
        rng.pick(&even)
    } else {
        rng.pick(&all)
    };
    format!("({a}, {}):(1, {a})", threads / a)
}

/// Random M, N, K for a GEMM of block tiles `tile`: 1, a prime, up to
/// `multiples` whole tiles, or that off by one.
fn gemm_dims(rng: &mut Rng, tile: [i64; 3], multiples: u64) -> Vec<String> {
    let mut extent = |t: i64| {
        match rng.below(4) {
            0 => 1,
            1 => rng.pick(&[3, 7, 13, 31, 61]),
            2 => t * (1 + rng.below(multiples) as i64),
            _ => t * (1 + rng.below(multiples) as i64) + rng.pick(&[-1, 1]),
        }
        .max(1)
    };
    ["M", "N", "K"]
        .iter()
        .zip(tile)
        .map(|(n, t)| format!("{n}={}", extent(t)))
        .collect()
}

fn generate(rng: &mut Rng) -> Program {
    match rng.below(100) {
        0..25 => generate_gemm(rng),
        25..37 => generate_mma_gemm(rng),
        37..42 => generate_wgmma_gemm(rng),
        42..47 => generate_tma_gemm(rng),
        47..57 => generate_row_sums(rng),
        _ => generate_copy(rng),
    }
}

/// Row sums of an (M, N) matrix of either major in the row kernels' form
/// (examples/softmax.tile): `rows` rows a block of whole warps, each
/// thread `vecs` runs of `run` consecutive columns a chunk, summed in
/// registers (`inside` keeping what lies past the matrix out), then across
/// a warp's lanes by shuffles and across a row's warps through shared
/// memory (one element where a warp holds the row).
fn generate_row_sums(rng: &mut Rng) -> Program {
    let warps = rng.pick(&[1, 2, 4, 8]);
    let rows = rng.pick(&[1, 2, 4, 8].map(|r| r.min(warps)));
    let (tpr, run, vecs) = (
        32 * warps / rows,
        rng.pick(&[1, 2, 4]),
        rng.pick(&[1, 2, 4]),
    );
    let cols = tpr * run * vecs;
    let lx = compact(&["M".to_string(), "N".to_string()], rng.chance(70));
    let shuffles: String = [16, 8, 4, 2, 1]
        .iter()
        .map(|m| format!("    s = s + shfl_xor(s, {m});\n"))
        .collect();
    let source = format!(
        "kernel fz(X: tensor<f32, {lx}>, Y: tensor<f32, (M):(1)>)
{{
    tiler tile = ({rows}, {cols});
    layout tv = (({tpr}, {rows}), ({run}, {vecs})):(({run} * {rows}, 1), ({rows}, {run} * {rows} * {tpr}));
    layout wl = (32, {w}, {rows}):(1, 32, {tpr});
    reference reduce_sum(X, Y);
    launch grid(ceil_div(M, {rows})), block({threads});
    let gX = local_tile(X, tile, (block.x, _));
    let gY = local_tile(Y, ({rows}), (block.x));
    let row = thread.x / {tpr};
    let r = registers<f32>(({run}, {vecs}));
    let s = registers<f32>(1, 0.0);
    let sh = shared<f32>(wl);
    for k in 0..size(gX, 2) {{
        let tX = composition(gX[_, _, k], tv)[thread.x, _];
        copy(tX, r);
        s = s + reduce_sum(reduce_sum(select(inside(tX), r, 0.0), 1), 0);
    }}
{shuffles}    local_partition(sh, wl, thread.x) = s;
    sync();
    if thread.x % {tpr} == 0 {{
        gY[row] = reduce_sum(sh[0, _, row], 0);
    }}
}}
",
        w = tpr / 32,
        threads = 32 * warps
    );
    let dims = vec![
        format!("M={}", rng.pick(&[1, 2, 3, 7, rows, 2 * rows, 37, 64 + 1])),
        format!(
            "N={}",
            rng.pick(&[1, 3, cols - 1, cols, cols + 4, 2 * cols, 3 * cols + 1, 100])
        ),
    ];
    Program { source, dims }
}

/// A copy `B = A` of matrices with run-time or small static extents, tiled,
/// partitioned over threads, through registers or shared memory.
fn generate_copy(rng: &mut Rng) -> Program {
    const SIZES: &[i64] = &[1, 2, 3, 4, 8, 16, 32];
    let extents = [
        if rng.chance(80) {
            Extent::Named("M")
        } else {
            Extent::Static(rng.pick(&[1, 5, 8]))
        },
        if rng.chance(80) {
            Extent::Named("N")
        } else {
            Extent::Static(rng.pick(&[1, 3, 32]))
        },
    ];
    let modes: Vec<String> = extents.iter().map(|e| e.text()).collect();
    let (la, lb) = (
        compact(&modes, rng.chance(40)),
        compact(&modes, rng.chance(40)),
    );
    let (tm, tn) = (rng.pick(SIZES), rng.pick(SIZES));
    // Thread layouts: mostly dividing the tile, sometimes not.
    let thread_mode = |rng: &mut Rng, tile: i64| {
        if rng.chance(75) {
            let d: Vec<i64> = SIZES.iter().copied().filter(|s| tile % s == 0).collect();
            rng.pick(&d)
        } else {
            rng.pick(SIZES)
        }
    };
    let (pm, pn) = (thread_mode(rng, tm), thread_mode(rng, tn));
    let thr = if rng.chance(50) {
        format!("({pm}, {pn}):(1, {pm})")
    } else {
        format!("({pm}, {pn}):({pn}, 1)")
    };
    let grid = |e: Extent, t: i64| match e {
        Extent::Named(n) => format!("ceil_div({n}, {t})"),
        Extent::Static(v) => ((v + t - 1) / t).to_string(),
    };
    let body = if rng.chance(40) {
        format!(
            "    let sA = shared<f32>(make_layout(({tm}, {tn})));
    let tAsA = local_partition(sA, thr, thread.x);
    copy(local_partition(gA, thr, thread.x), tAsA);
    sync();
    let r = registers<f32>(shape(tAsA));
    copy(tAsA, r);
    copy(r, local_partition(gB, thr, thread.x));
"
        )
    } else {
        "    let tA = local_partition(gA, thr, thread.x);
    let r = registers<f32>(shape(tA));
    copy(tA, r);
    copy(r, local_partition(gB, thr, thread.x));
"
        .to_string()
    };
    let source = format!(
        "kernel fz(A: tensor<f32, {la}>, B: tensor<f32, {lb}>)
{{
    tiler tile = ({tm}, {tn});
    layout thr = {thr};
    reference copy(A, B);
    launch grid({}, {}), block(size(thr));
    let gA = local_tile(A, tile, (block.x, block.y));
    let gB = local_tile(B, tile, (block.x, block.y));
{body}}}
",
        grid(extents[0], tm),
        grid(extents[1], tn)
    );
    let mut dims = Vec::new();
    for (e, t) in extents.iter().zip([tm, tn]) {
        if let Extent::Named(n) = e {
            let v = match rng.below(5) {
                0 => 1,
                1 => rng.pick(&[2, 3, 5, 7, 13, 31, 37, 61, 97]),
                2 => t * (1 + rng.below(4) as i64),
                3 => t * (1 + rng.below(4) as i64) + rng.pick(&[-1, 1]),
                _ => 1 + rng.below(100) as i64,
            };
            dims.push(format!("{n}={}", v.max(1)));
        }
    }
    Program { source, dims }
}

fn tilec(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(args)
        .output()
        .expect("tilec runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz/program_gen");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn generated_programs_run_as_their_reference_or_are_refused() {
    let cases: u64 = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x1000_0000_01B3));
    // FUZZ_KIND=mma, wgmma, tma or rows: one kind only (off-line runs).
    let kind = std::env::var("FUZZ_KIND").unwrap_or_default();
    let dir = scratch();
    let (mut ran, mut refused, mut failures) = (0, 0, Vec::new());
    let (mut residues, mut unaligned, mut clustered) = (0, 0, 0);
    for case in 0..cases {
        let p = match kind.as_str() {
            "mma" => generate_mma_gemm(&mut rng),
            "wgmma" => generate_wgmma_gemm(&mut rng),
            "tma" => generate_tma_gemm(&mut rng),
            "rows" => generate_row_sums(&mut rng),
            _ => generate(&mut rng),
        };
        let file = dir.join(format!("case{case}.tile"));
        std::fs::write(&file, &p.source).unwrap();
        let f = file.to_str().unwrap();
        let (code, text) = tilec(&["check", f]);
        match code {
            0 => {}
            // A refusal is a diagnostic about the program, never tilec's own error.
            1 if !text.contains("internal error") => {
                refused += 1;
                if std::env::var_os("FUZZ_VERBOSE").is_some() {
                    let why = text.lines().find(|l| l.contains('×')).unwrap_or("");
                    eprintln!("refused: {}", why.trim());
                }
                std::fs::remove_file(&file).unwrap();
                continue;
            }
            _ => {
                failures.push(format!("{f}: check exited {code}:\n{text}"));
                continue;
            }
        }
        let dims = p.dims.join(",");
        let mut args = vec!["run", "--cpu", f, "--seed", "3"];
        if !dims.is_empty() {
            args.extend(["--dims", &dims]);
        }
        let (code, text) = tilec(&args);
        if code == 0 && text.contains("(ok)") {
            ran += 1;
            // The full blocks of a partial k-tile, where the guarded
            // entry copies element by element.
            residues += usize::from(text.contains("_k_residue"));
            // And those of an odd extent that the vectors' alignment needs.
            unaligned += usize::from(text.contains("_unaligned"));
            clustered += usize::from(p.source.contains("cluster("));
            // FUZZ_KEEP: keep the programs that ran, each with its extents
            // in `caseN.dims`, to run them again elsewhere (on a GPU with
            // `tilec run --check-cpu`).
            match std::env::var_os("FUZZ_KEEP") {
                Some(_) => std::fs::write(file.with_extension("dims"), &dims).unwrap(),
                None => std::fs::remove_file(&file).unwrap(),
            }
        } else {
            failures.push(format!("{f} --dims {dims}: exit {code}:\n{text}"));
        }
    }
    eprintln!(
        "{cases} programs: {ran} ran and matched ({residues} through a `_k_residue` entry, {unaligned} through an `_unaligned` one, {clustered} on clusters), {refused} refused by the checker"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The generator must mostly make programs the checker accepts.
    assert!(ran * 2 >= cases, "only {ran} of {cases} ran");
}
