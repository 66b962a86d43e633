//! A differential fuzzer of whole programs: random well-typed copy kernels
//! (tensor layouts with run-time or static extents, tilers, thread layouts
//! that may or may not divide the tile, a path through shared memory or
//! registers, a loop over a k mode) are checked, then run on the CPU
//! executor at random extents (1, primes, tile multiples, off by one)
//! against their reference. A kernel the checker refuses is fine; one it
//! accepts must run with no out-of-bounds access, no race, no unwritten
//! read and the reference's result (`tilec run` exits 0).
//!
//! CI runs `FUZZ_CASES` programs (default 120); off-line, e.g.
//! `FUZZ_CASES=20000 FUZZ_SEED=7 cargo test --release -p tilec-cli --test program_gen`.
//! A failing program is written to `target/fuzz/program_gen/` with its extents.

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

fn generate(rng: &mut Rng) -> Program {
    const SIZES: &[i64] = &[1, 2, 3, 4, 8, 16, 32];
    let with_k = rng.chance(30);
    // Each mode: a run-time extent, or now and then a small static one.
    let mut extents = vec![
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
    if with_k {
        extents.push(Extent::Named("K"));
    }
    let modes: Vec<String> = extents.iter().map(|e| e.text()).collect();
    let (la, lb) = (
        compact(&modes, rng.chance(40)),
        compact(&modes, rng.chance(40)),
    );
    let (tm, tn) = (rng.pick(SIZES), rng.pick(SIZES));
    let tk = rng.pick(&[1, 2, 4]);
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
    let shared = rng.chance(40);
    let mut s = String::new();
    s += &format!("kernel fz(A: tensor<f32, {la}>, B: tensor<f32, {lb}>)\n{{\n");
    if with_k {
        s += &format!("    tiler tile = ({tm}, {tn}, {tk});\n");
    } else {
        s += &format!("    tiler tile = ({tm}, {tn});\n");
    }
    s += &format!("    layout thr = {thr};\n    reference copy(A, B);\n");
    let grid = |e: Extent, t: i64| match e {
        Extent::Named(n) => format!("ceil_div({n}, {t})"),
        Extent::Static(v) => ((v + t - 1) / t).to_string(),
    };
    s += &format!(
        "    launch grid({}, {}), block(size(thr));\n",
        grid(extents[0], tm),
        grid(extents[1], tn)
    );
    let at = if with_k {
        "(block.x, block.y, _)"
    } else {
        "(block.x, block.y)"
    };
    s += &format!("    let gA = local_tile(A, tile, {at});\n");
    s += &format!("    let gB = local_tile(B, tile, {at});\n");
    let slice = |v: &str| {
        if with_k {
            format!("{v}[_, _, k]")
        } else {
            v.to_string()
        }
    };
    let mut body = String::new();
    if shared {
        body += &format!("let sA = shared<f32>(make_layout(({tm}, {tn})));\n");
        body += "let tAsA = local_partition(sA, thr, thread.x);\n";
        body += &format!(
            "copy(local_partition({}, thr, thread.x), tAsA);\n",
            slice("gA")
        );
        body += "sync();\n";
        body += "let r = registers<f32>(shape(tAsA));\n";
        body += "copy(tAsA, r);\n";
        body += &format!(
            "copy(r, local_partition({}, thr, thread.x));\n",
            slice("gB")
        );
    } else {
        body += &format!(
            "let tA = local_partition({}, thr, thread.x);\n",
            slice("gA")
        );
        body += "let r = registers<f32>(shape(tA));\n";
        body += "copy(tA, r);\n";
        body += &format!(
            "copy(r, local_partition({}, thr, thread.x));\n",
            slice("gB")
        );
    }
    let indent = if with_k { "        " } else { "    " };
    let body: String = body.lines().map(|l| format!("{indent}{l}\n")).collect();
    if with_k {
        s += &format!("    for k in 0..size(gA, 2) {{\n{body}        sync();\n    }}\n}}\n");
    } else {
        s += &body;
        s += "}\n";
    }
    let mut dims = Vec::new();
    for (e, t) in extents.iter().zip([tm, tn, tk]) {
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
    Program { source: s, dims }
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
    let dir = scratch();
    let (mut ran, mut refused, mut failures) = (0, 0, Vec::new());
    for case in 0..cases {
        let p = generate(&mut rng);
        let file = dir.join(format!("case{case}.tile"));
        std::fs::write(&file, &p.source).unwrap();
        let f = file.to_str().unwrap();
        let (code, text) = tilec(&["check", f]);
        match code {
            0 => {}
            1 => {
                refused += 1;
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
            std::fs::remove_file(&file).unwrap();
        } else {
            failures.push(format!("{f} --dims {dims}: exit {code}:\n{text}"));
        }
    }
    eprintln!("{cases} programs: {ran} ran and matched, {refused} refused by the checker");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The generator must mostly make programs the checker accepts.
    assert!(ran * 2 >= cases, "only {ran} of {cases} ran");
}
