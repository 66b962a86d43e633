//! The launch proof itself: every kernel planned in bounds at whole and
//! partial extents, checked against a brute-force walk of every block,
//! thread and trip; loops, ifs and the planted out-of-bounds kernels.

use super::*;
use plans::built_manifest;

#[test]
fn every_kernel_plans_in_bounds_at_whole_and_partial_extents() {
    // What a GPU's runtime proves before a launch (`tilec check --dims`),
    // for every example and run or codegen test: extents that are whole
    // tiles, primes, an odd count of tile rows, few multiprocessors.
    let sets: [&[(&str, i64)]; 4] = [
        &[("L", 4), ("sm_count", 7), ("*", 4096)],
        &[("L", 3), ("M", 1000), ("N", 1037), ("K", 999), ("*", 1001)],
        &[
            ("L", 2),
            ("M", 192),
            ("N", 512),
            ("K", 128),
            ("sm_count", 5),
            ("*", 256),
        ],
        &[("L", 2), ("M", 4224), ("sm_count", 132), ("*", 4096)],
    ];
    for dir in ["examples", "tests/run", "tests/codegen"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "tile"))
            .collect();
        files.sort();
        for f in files {
            let src = std::fs::read_to_string(&f).unwrap();
            let lowered = tilec::pipeline::lower_source_with(&src, None, &Default::default())
                .unwrap_or_else(|_| panic!("{}", f.display()));
            let mut extents: Vec<&str> = Vec::new();
            for (k, _) in &lowered {
                for e in k.dims() {
                    if !extents.contains(&e.as_str()) {
                        extents.push(e);
                    }
                }
            }
            for set in sets {
                let value = |e: &str| {
                    let given = set.iter().find(|(n, _)| *n == e);
                    given.or(set.iter().find(|(n, _)| *n == "*")).unwrap().1
                };
                let dims: Vec<String> = extents
                    .iter()
                    .map(|e| format!("{e}={}", value(e)))
                    .collect();
                let dims = dims.join(",");
                let (code, out, err) = tilec(&["check", f.to_str().unwrap(), "--dims", &dims]);
                assert_eq!(code, 0, "{} at {dims}: {err}", f.display());
                assert!(
                    out.contains("; every access in bounds"),
                    "{}: {out}",
                    f.display()
                );
            }
        }
    }
}

/// Whether every access of every launch of `p` (or `only` access `a` of
/// variant `v`) stays inside its buffer, by evaluating each at every
/// block, thread and trip (the loops each access names, and those their
/// bounds name, enumerated outer first).
fn in_bounds(
    m: &tilec_runtime::manifest::Manifest,
    p: &tilec_runtime::plan::LaunchPlan,
    only: Option<(usize, usize)>,
) -> bool {
    use std::collections::HashMap;
    let threads = p.block.iter().map(|&b| b as i64).product::<i64>() - m.producer_threads;
    let mut env: HashMap<String, i64> = m
        .run_time_names()
        .cloned()
        .zip(p.extents.iter().copied())
        .collect();
    p.launches.iter().all(|l| {
        let v = &m.variants[l.variant];
        let chosen = |i: usize| only.is_none_or(|o| o == (l.variant, i));
        v.accesses
            .iter()
            .enumerate()
            .filter(|&(i, _)| chosen(i))
            .all(|(_, a)| {
                let len = p.lens[a.param].unwrap() as i64;
                let mut names = Vec::new();
                a.index.names(&mut names);
                for [x, y] in &a.when {
                    x.names(&mut names);
                    y.names(&mut names);
                }
                // The loops the access needs, with those their bounds need.
                let mut needed: Vec<&tilec_runtime::manifest::LoopSpec> = Vec::new();
                for lp in v.loops.iter().rev() {
                    if names.contains(&lp.name) {
                        lp.start.names(&mut names);
                        lp.end.names(&mut names);
                        needed.insert(0, lp);
                    }
                }
                fn walk(
                    loops: &[&tilec_runtime::manifest::LoopSpec],
                    env: &mut HashMap<String, i64>,
                    at: &dyn Fn(&HashMap<String, i64>) -> bool,
                ) -> bool {
                    let Some((lp, rest)) = loops.split_first() else {
                        return at(env);
                    };
                    let lookup = |n: &str| env.get(n).copied();
                    let (s, e) = (
                        lp.start.eval(&lookup).unwrap(),
                        lp.end.eval(&lookup).unwrap(),
                    );
                    (s..e).all(|i| {
                        env.insert(lp.name.clone(), i);
                        walk(rest, env, at)
                    })
                }
                // Where one of its ifs fails, the access does not run.
                let inside = |e: &HashMap<String, i64>| {
                    let value =
                        |v: &tilec_layout::Int| v.eval(&|n: &str| e.get(n).copied()).unwrap();
                    a.when.iter().any(|[x, y]| value(x) > value(y))
                        || (0..len).contains(&value(&a.index))
                };
                (0..l.grid[0] as i64).all(|bx| {
                    (0..l.grid[1] as i64).all(|by| {
                        (0..threads).all(|t| {
                            env.insert("block.x".into(), bx + l.offset[0] as i64);
                            env.insert("block.y".into(), by + l.offset[1] as i64);
                            env.insert("block.z".into(), l.offset[2] as i64);
                            env.insert("thread.x".into(), t);
                            walk(&needed, &mut env, &inside)
                        })
                    })
                })
            })
    })
}

#[test]
fn the_proof_never_accepts_an_access_outside_its_buffer() {
    // Each access moved by a few elements either way: wherever the proof
    // accepts the launch, evaluating every access at every block, thread
    // and trip finds it inside its buffer. The proof must refuse the
    // moves that leave it, and at least the unmoved kernels it accepts.
    for (file, kernel, dims) in [
        (
            "tests/run/persistent_gemm.tile",
            "persistent_gemm",
            "M=256,N=512,K=128,sm_count=3",
        ),
        (
            "tests/run/persistent_one_warpgroup.tile",
            "persistent_one_warpgroup",
            "M=192,N=512,K=128,sm_count=3",
        ),
        ("examples/sgemm_nt.tile", "sgemm_nt", "M=256,N=128,K=24"),
        ("examples/reduce_rows.tile", "reduce_rows", "M=64,N=256"),
        // Accesses under ifs: capped indices and loop bounds, and ifs
        // that some regions fail throughout.
        (
            "tests/run/guarded_from_both_sides.tile",
            "guarded_from_both_sides",
            "M=37",
        ),
        ("tests/run/guarded_loop_bound.tile", "trmv", "M=37"),
        (
            "tests/run/guarded_by_either_side.tile",
            "either_side",
            "M=37,N=37",
        ),
    ] {
        let m = built_manifest(file, kernel);
        let dims = Dims::parse(dims).unwrap();
        let p = plan(&m, &dims).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(in_bounds(&m, &p, None), "{file}");
        let (mut accepted, mut refused) = (0, 0);
        // Every fifth access of each entry that runs, and its last; each
        // moved access alone is evaluated (the others are those above).
        let launched: Vec<usize> = p.launches.iter().map(|l| l.variant).collect();
        let moves = m
            .variants
            .iter()
            .enumerate()
            .filter(|(v, _)| launched.contains(v))
            .flat_map(|(v, s)| {
                let n = s.accesses.len();
                (0..n)
                    .filter(move |a| a % 5 == 0 || *a + 1 == n)
                    .map(move |a| (v, a))
            });
        for (v, a) in moves {
            for delta in [-1i64, 1, 7] {
                let mut moved = m.clone();
                let index = &mut moved.variants[v].accesses[a].index;
                *index = index.add(&tilec_layout::Int::from(delta));
                // Refused, or the moved entry passed over for a later one.
                match plan(&moved, &dims) {
                    Ok(p) if p.launches.iter().any(|l| l.variant == v) => {
                        accepted += 1;
                        assert!(
                            in_bounds(&moved, &p, Some((v, a))),
                            "{file}: access {a} of variant {v} moved by {delta}"
                        );
                    }
                    Ok(p) => {
                        assert!(in_bounds(&moved, &p, None), "{file}: {p:?}");
                        refused += 1;
                    }
                    Err(_) => refused += 1,
                }
            }
        }
        assert!(refused > 0, "{file}: {accepted} accepted, none refused");
    }
}

#[test]
fn a_loop_divides_only_in_the_branch_that_needs_it() {
    // The persistent GEMM's consumers test `i % kt` every k-tile and find
    // their tile (`t % tm`, `t / tm`) only in the epilogue's branch: the
    // remainder is carried as a phi, the tile's divisions stay in the
    // branch. (Computed at the loop's top, they cost 20% at 4096^3.)
    let llvm = emitted("tests/run/persistent_gemm.tile", "llvm");
    let full: Vec<&str> = llvm
        .lines()
        .skip_while(|l| !l.starts_with("define") || !l.contains("@persistent_gemm("))
        .take_while(|l| *l != "}")
        .collect();
    // The consumers' loop body: the block the consumers' entry leads to.
    let consumers = full
        .iter()
        .position(|l| l.starts_with("i.body") && l.contains("%consumers"))
        .unwrap();
    let branch = full.iter().position(|l| l.starts_with("if.then")).unwrap();
    // A division by a run-time value: `udiv i64 %a, %b`, or in 32 bits
    // where the runtime proves its operands within them.
    let by_value = |l: &&&str| {
        ["udiv i64", "urem i64", "udiv i32", "urem i32"]
            .iter()
            .any(|d| l.contains(d))
            && l.rsplit(", ").next().is_some_and(|d| d.starts_with('%'))
    };
    let in_loop: Vec<&&str> = full[consumers..branch].iter().filter(by_value).collect();
    assert!(in_loop.is_empty(), "{in_loop:?}");
    assert!(
        full[branch..].iter().any(|l| by_value(&l)),
        "no division in the branch"
    );
}

#[test]
fn an_if_on_the_thread_bounds_the_accesses_under_it() {
    // reduce_rows writes `gY[thread.x]` under `if thread.x < 32`: 32 rows a
    // block, 256 threads. Bounded with every thread, the last block would
    // pass the end of Y; under the condition, threads 0 to 31 only.
    let m = built_manifest("examples/reduce_rows.tile", "reduce_rows");
    for dims in ["M=8192,N=8192", "M=1024,N=37"] {
        plan(&m, &Dims::parse(dims).unwrap()).unwrap_or_else(|e| panic!("{dims}: {e}"));
    }
}

#[test]
fn the_plan_refuses_the_planted_out_of_bounds_kernels() {
    for file in [
        "tests/checked/one_k_tile_too_many.tile",
        "tests/checked/empty_loop_of_the_same_name.tile",
    ] {
        let m = built_manifest(file, "sgemm_nt");
        let dims = Dims::parse("M=256,N=256,K=64").unwrap();
        // The full-tile entry's reads past A are not proved: it steps aside
        // for the entry that tests each k-tile, which is proved.
        let p = plan(&m, &dims).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(p.launches.iter().all(|l| l.variant != 0), "{file}: {p:?}");
        assert!(
            p.unproved[0].1.contains("A would be accessed"),
            "{file}: {p:?}"
        );
        // With no later entry to step aside for, the launch is refused.
        let alone = tilec_runtime::manifest::Manifest {
            variants: m.variants[..1].to_vec(),
            ..m
        };
        match plan(&alone, &dims) {
            Err(RuntimeError::Bounds(why)) => assert!(why.contains("A would be accessed"), "{why}"),
            other => panic!("{file}: {other:?}"),
        }
    }
}

/// Lowering bounds a counter whose end it cannot bound by 2^40 (for shared
/// indices and alignments); the plan holds every loop to it, so a start
/// past it is refused, and an ordinary loop to an extent is not.
#[test]
fn the_plan_holds_every_loop_to_the_counters_bound() {
    let m = built_manifest(
        "tests/checked/counter_past_its_bound.tile",
        "counter_past_its_bound",
    );
    match plan(&m, &Dims::parse("M=100").unwrap()) {
        Err(RuntimeError::Bounds(why)) => {
            assert!(
                why.contains("loop i.0 would count from 1099511627776"),
                "{why}"
            )
        }
        other => panic!("{other:?}"),
    }
    let m = built_manifest("examples/softmax.tile", "softmax");
    plan(&m, &Dims::parse("M=3,N=1000000").unwrap()).expect("in bounds");
}
