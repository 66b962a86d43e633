//! A differential fuzzer of whole programs: random well-typed kernels,
//! copies (tensor layouts with run-time or static extents, tilers, thread
//! layouts that may or may not divide the tile, a path through shared
//! memory or registers, a loop over a k mode), GEMMs (random block
//! tiles, thread layouts and majors, through shared memory) and
//! tensor-core GEMMs (random warps, tiles, majors, swizzles, element
//! types; TMA pipelines, some split over block.z with a reduce, some on
//! clusters; persistent ones walking the tiles, some stream-K:
//! `persistent.rs`; ping-pong ones taking them in turns: `turns.rs`), reductions across threads (`threads.rs`) and run-time
//! integers in statements against loops and conditions (`ints.rs`), are checked, then run on the CPU executor at random extents (1, primes, tile
//! multiples, off by one) against their reference. A kernel the checker refuses is fine; one it
//! accepts must run with no out-of-bounds access, no race, no unwritten
//! read and the reference's result (`tilec run` exits 0).
//!
//! CI runs `FUZZ_CASES` programs (default 120); off-line, e.g.
//! `FUZZ_CASES=20000 FUZZ_SEED=7 cargo test --release -p tilec-cli --test program_gen`.
//! A failing program is written to `target/fuzz/program_gen/` with its extents
//! (with `FUZZ_KEEP=1`, every program that ran, to run again on a GPU).

use ints::generate_integers;
use persistent::generate_persistent_gemm;
use std::path::{Path, PathBuf};
use std::process::Command;
use tensor_core::{generate_mma_gemm, generate_tma_gemm, generate_wgmma_gemm};
use threads::generate_thread_reduction;
use turns::generate_pingpong_gemm;

mod ints;
mod persistent;
mod tensor_core;
mod threads;
mod turns;

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
    // Now and then the epilogue as an element-wise statement whose factor
    // `alpha * 2.0` is the same for every element (computed once, before
    // them), the result the same as `axpby`'s: the scalings are exact.
    let epilogue = if rng.chance(30) {
        "tCgC = (alpha * 2.0) * (tCrC * 0.5) + beta * tCgC;"
    } else {
        "axpby(alpha, tCrC, beta, tCgC);"
    };
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
    {epilogue}
}}
"
    );
    let dims = gemm_dims(rng, [bm, bn, bk], 3);
    Program { source, dims }
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
        42..46 => generate_tma_gemm(rng),
        46..48 => generate_persistent_gemm(rng),
        48..49 => generate_pingpong_gemm(rng),
        49..57 => generate_row_sums(rng),
        57..62 => generate_thread_reduction(rng),
        62..65 => generate_integers(rng),
        _ => generate_copy(rng),
    }
}

/// Row sums of an (M, N) matrix (f32, bf16 or f16) of either major in the row kernels' form
/// (examples/softmax.tile): `rows` rows a block of whole warps, each
/// thread `vecs` runs of `run` consecutive columns a chunk, summed in
/// registers (`inside` keeping what lies past the matrix out), then across
/// a warp's lanes by shuffles and across a row's warps through shared
/// memory (one element where a warp holds the row), written out or as one
/// reduction across the row's threads.
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
    // 16-bit rows come into f32 registers through a converting copy.
    let elem = rng.pick(&["f32", "f32", "bf16", "f16"]);
    let shuffles: String = [16, 8, 4, 2, 1]
        .iter()
        .map(|m| format!("    s = s + shfl_xor(s, {m});\n"))
        .collect();
    // Half the programs fold the row in one reduction across its threads,
    // their levels (a random factoring of the row's threads) in a random
    // order: the same threads, folded by shuffles and shared memory in
    // whichever order the layout names them.
    let mut levels = Vec::new();
    let (mut left, mut stride) = (tpr, 1);
    while left > 1 {
        let f = rng.pick(&[2, 4, 8, 16, 32, 64]).min(left);
        levels.push((f, stride));
        stride *= f;
        left /= f;
    }
    for i in (1..levels.len()).rev() {
        levels.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let list = |f: fn(&(i64, i64)) -> i64| -> String {
        let v: Vec<String> = levels.iter().map(|l| f(l).to_string()).collect();
        format!("({})", v.join(", "))
    };
    let across = match rng.chance(50) {
        true => format!(
            "    s = reduce_sum(s, threads(({}, {rows}):({}, {tpr}), 0));\n    if thread.x % {tpr} == 0 {{\n        gY[row] = s;\n    }}\n",
            list(|l| l.0),
            list(|l| l.1)
        ),
        false => format!(
            "{shuffles}    local_partition(sh, wl, thread.x) = s;\n    sync();\n    if thread.x % {tpr} == 0 {{\n        gY[row] = reduce_sum(sh[0, _, row], 0);\n    }}\n"
        ),
    };
    let source = format!(
        "kernel fz(X: tensor<{elem}, {lx}>, Y: tensor<f32, (M):(1)>)
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
{across}}}
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
/// partitioned over threads, through registers or shared memory, each
/// tensor f32, bf16 or f16 (converted on the way through f32 registers).
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
    // 16-bit tensors go through f32 registers by converting copies.
    let (ea, eb) = (
        rng.pick(&["f32", "f32", "bf16", "f16"]),
        rng.pick(&["f32", "f32", "bf16", "f16"]),
    );
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
            "    let sA = shared<{ea}>(make_layout(({tm}, {tn})));
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
        "kernel fz(A: tensor<{ea}, {la}>, B: tensor<{eb}, {lb}>)
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
    // FUZZ_KIND=mma, wgmma, tma, persistent, turns, rows, threads or ints: one kind only (off-line runs).
    let kind = std::env::var("FUZZ_KIND").unwrap_or_default();
    let dir = scratch();
    let (mut ran, mut refused, mut failures) = (0, 0, Vec::new());
    let (mut residues, mut unaligned, mut clustered, mut copied, mut rolled) = (0, 0, 0, 0, 0);
    let mut scaled_proved = 0;
    for case in 0..cases {
        let p = match kind.as_str() {
            "mma" => generate_mma_gemm(&mut rng),
            "wgmma" => generate_wgmma_gemm(&mut rng),
            "tma" => generate_tma_gemm(&mut rng),
            "persistent" => generate_persistent_gemm(&mut rng),
            "turns" => generate_pingpong_gemm(&mut rng),
            "rows" => generate_row_sums(&mut rng),
            "threads" => generate_thread_reduction(&mut rng),
            "ints" => generate_integers(&mut rng),
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
            // And those that read aligned copies of their operands.
            copied += usize::from(text.contains("reads aligned copies"));
            // And those whose guarded entry rolls its epilogue into a loop.
            let (_, ir) = tilec(&["build", f, "--emit", "ir"]);
            rolled += usize::from(ir.contains("rolled.group"));
            // The launch at extents the CPU executor could not run (61
            // times larger, on an H200's 132 multiprocessors): the proof
            // a GPU's runtime runs must not refuse it (a launch condition
            // that fails there, a grid past CUDA's limits, is no finding).
            let scaled: Vec<String> = p
                .dims
                .iter()
                .map(|d| match d.split_once('=') {
                    Some(("sm_count", _)) => "sm_count=132".to_string(),
                    Some((n, v)) => format!("{n}={}", v.parse::<i64>().unwrap() * 61),
                    None => d.clone(),
                })
                .collect();
            if !scaled.is_empty() {
                let scaled = scaled.join(",");
                let (_, text) = tilec(&["check", f, "--dims", &scaled]);
                if text.contains("refusing to launch") {
                    failures.push(format!("{f} --dims {scaled}: {text}"));
                }
                scaled_proved += usize::from(text.contains("every access in bounds"));
            }
            // A pipeline through code generation too, to a module LLVM's
            // verifier accepts (a producer's trip there has branches of
            // its own: `builder/trip.rs`).
            if p.source.contains("pipeline") {
                let (code, text) = tilec(&["build", f, "--emit", "llvm"]);
                if code != 0 {
                    failures.push(format!("{f}: --emit llvm exited {code}:\n{text}"));
                }
            }
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
        "{cases} programs: {ran} ran and matched ({residues} through a `_k_residue` entry, {unaligned} through an `_unaligned` one, {copied} on aligned copies, {clustered} on clusters, {rolled} with a rolled epilogue; {scaled_proved} proved at 61 times their extents), {refused} refused by the checker"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The generator must mostly make programs the checker accepts.
    assert!(ran * 2 >= cases, "only {ran} of {cases} ran");
}
