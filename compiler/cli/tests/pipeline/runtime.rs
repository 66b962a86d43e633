//! The runtime's side of a build: the launches it refuses (unsafe
//! extents, short buffers, an edited manifest or PTX), its references
//! against a direct computation, and every example run where a GPU is.

use super::*;

#[test]
fn the_runtime_refuses_unsafe_launches() {
    let m = manifest_of("examples/sgemm_nt.tile");
    let d = |s: &str| Dims::parse(s).unwrap();
    let p = plan(&m, &d("M=256,N=128,K=64")).expect("a valid launch");
    assert_eq!((p.grid, p.block), ([2, 1, 1], [256, 1, 1]));
    assert_eq!(
        p.lens,
        vec![Some(256 * 64), Some(128 * 64), Some(256 * 128), None, None]
    );
    // Every tile full: the full-tile entry on the whole grid.
    let launch = |variant, grid, offset| Launch {
        variant,
        grid,
        offset,
    };
    assert_eq!(p.launches, [launch(0, [2, 1, 1], [0, 0, 0])]);
    assert_eq!(p.entries(&m), "sgemm_nt");
    // Its conditions: every k-tile full (the same for all blocks); its
    // block conditions: the block's M and N tiles inside the tensors.
    let facts = |cs: &[tilec_runtime::manifest::LaunchCondition]| -> Vec<String> {
        cs.iter().map(|c| c.fact.to_string()).collect()
    };
    assert_eq!(facts(&m.variants[0].conditions), ["K % 8 == 0"]);
    assert_eq!(
        facts(&m.variants[0].block_conditions),
        ["(128*(block.x+1)) <= M", "(128*(block.y+1)) <= N"]
    );
    // Then the full blocks at any K (`_k_residue`), and any block.
    assert_eq!(m.variants[1].entry, "sgemm_nt_k_residue");
    assert!(m.variants[1].conditions.is_empty() && !m.variants[1].block_offset);
    assert_eq!(m.variants[2].entry, "sgemm_nt_guarded");
    assert!(m.variants[2].conditions.is_empty() && m.variants[2].block_offset);
    assert!(
        m.variants[2].accesses.is_empty(),
        "guarded accesses need no launch-time bounds"
    );
    // Partial tiles at the edges: the full blocks unguarded, the rest guarded
    // from its block offset on: past the full box in x, then below it in y.
    let g = plan(&m, &d("M=200,N=128,K=64")).unwrap();
    assert_eq!(
        g.launches,
        [
            launch(0, [1, 1, 1], [0, 0, 0]),
            launch(2, [1, 1, 1], [1, 0, 0])
        ]
    );
    assert_eq!(g.entries(&m), "sgemm_nt + sgemm_nt_guarded");
    let g = plan(&m, &d("M=300,N=300,K=64")).unwrap();
    assert_eq!(
        g.launches,
        [
            launch(0, [2, 2, 1], [0, 0, 0]),
            launch(2, [1, 3, 1], [2, 0, 0]),
            launch(2, [2, 1, 1], [0, 2, 0])
        ]
    );
    // A partial k-tile: the k-residue entry on the full blocks.
    let g = plan(&m, &d("M=300,N=300,K=60")).unwrap();
    assert_eq!(g.entries(&m), "sgemm_nt_k_residue + sgemm_nt_guarded");
    assert_eq!(g.launches[0], launch(1, [2, 2, 1], [0, 0, 0]));
    // No full block: the guarded entry on everything.
    let g = plan(&m, &d("M=100,N=300,K=64")).unwrap();
    assert_eq!(g.launches, [launch(2, [1, 3, 1], [0, 0, 0])]);
    // With only the full-tile variant, the edge blocks cannot run.
    let mut full_only = m.clone();
    full_only.variants.truncate(1);
    let e = plan(&full_only, &d("M=200,N=128,K=64")).unwrap_err();
    assert!(
        matches!(e, RuntimeError::Condition(_)) && e.to_string().contains("partial tiles"),
        "{e}"
    );
    // A missing and an unknown extent.
    assert!(
        plan(&m, &d("M=256,N=128"))
            .unwrap_err()
            .to_string()
            .contains("needs the extent K")
    );
    assert!(
        plan(&m, &d("M=256,N=128,K=64,Q=1"))
            .unwrap_err()
            .to_string()
            .contains("no extent Q")
    );
    // Extents whose tensors or grid count past 64 bits: a launch
    // condition naming them, not a broken manifest.
    let e = plan(&m, &d("M=270000000000,N=128,K=40000000000")).unwrap_err();
    assert!(
        matches!(e, RuntimeError::Condition(_)) && e.to_string().contains("64 bits"),
        "{e}"
    );
    // A grid past CUDA's 65535 blocks along y: refused by name, on the
    // CPU executor as on the GPU.
    let e = plan(&m, &d("M=128,N=8960000,K=64")).unwrap_err();
    assert!(
        matches!(e, RuntimeError::Condition(_))
            && e.to_string()
                .contains("70000 blocks along y; CUDA takes at most 65535"),
        "{e}"
    );
    // Past 32 bits along x, the same words (it said "grid size ... = N").
    let e = plan(&m, &d("M=549755813888,N=128,K=64")).unwrap_err();
    assert!(
        e.to_string()
            .contains("4294967296 blocks along x (ceil_div(M,128)); CUDA takes at most 2147483647"),
        "{e}"
    );
    // A grid too large for the tensors: the global bounds check refuses it
    // (with only the unguarded variant and no block conditions, as a
    // hand-edited manifest might have).
    let mut wide = m.clone();
    wide.variants.truncate(1);
    wide.variants[0].block_conditions.clear();
    wide.grid[0] = wide.grid[0].mul(&tilec_layout::Int::from(2));
    let e = plan(&wide, &d("M=256,N=128,K=64")).unwrap_err();
    assert!(matches!(e, RuntimeError::Bounds(_)), "{e}");
    // A buffer of the wrong length.
    let mut args = Inputs {
        seed: 7,
        scalars: vec![],
    }
    .args(&m, &p, 0)
    .unwrap();
    assert!(check_args(&m, &p, &args).is_ok());
    if let Arg::Tensor(tilec_runtime::host::HostBuffer::F32(v)) = &mut args[1] {
        v.pop();
    }
    let e = check_args(&m, &p, &args).unwrap_err();
    assert!(e.to_string().contains("buffer B has 8191 elements"), "{e}");
}

#[test]
fn references_match_a_direct_computation() {
    // The GEMM reference on a small problem, against a direct triple loop.
    let m = manifest_of("examples/sgemm_tn.tile");
    let p = plan(&m, &Dims::parse("M=128,N=256,K=16").unwrap()).unwrap();
    let args = Inputs {
        seed: 3,
        scalars: vec![],
    }
    .args(&m, &p, 0)
    .unwrap();
    let e = tilec_runtime::reference::expected(&m, &p, &args).unwrap();
    let get = |i: usize| match &args[i] {
        Arg::Tensor(t) => t.clone(),
        Arg::Scalar(_) => unreachable!(),
    };
    let (a, b, c) = (get(0), get(1), get(2));
    let s = |i: usize| match args[i] {
        Arg::Scalar(v) => v,
        Arg::Tensor(_) => unreachable!(),
    };
    let (alpha, beta) = (s(3), s(4));
    assert!(alpha != 0.0 && alpha != 1.0 && beta != 0.0 && beta != 1.0);
    for (idx, (&off, &v)) in e.offsets.iter().zip(&e.values).enumerate().step_by(97) {
        let (mi, ni) = (idx / 256, idx % 256);
        assert_eq!(off, mi + ni * 128, "C is M-major");
        // A (M,K):(K,1), B (N,K):(K,1)
        let dot: f64 = (0..16)
            .map(|k| a.get(mi * 16 + k) * b.get(ni * 16 + k))
            .sum();
        assert!((alpha * dot + beta * c.get(off) - v).abs() < 1e-12);
    }
}

#[test]
fn gpu_runs_every_example_when_a_gpu_is_present() {
    match tilec_runtime::gpu::Gpu::open() {
        Ok(Some(_)) => {}
        _ => {
            eprintln!("SKIPPED: no GPU on this machine");
            return;
        }
    }
    for (f, dims) in [
        ("examples/sgemm_nt.tile", "M=256,N=384,K=64"),
        ("examples/sgemm_tn.tile", "M=256,N=384,K=64"),
        ("examples/sgemm_nt_tv.tile", "M=256,N=384,K=64"),
        ("examples/sgemm_tn_tv.tile", "M=256,N=384,K=64"),
        ("examples/sgemm_nt_sm80.tile", "M=256,N=384,K=64"),
        ("examples/sgemm_tn_sm80.tile", "M=200,N=130,K=33"),
        ("examples/copy.tile", "M=256,N=96"),
        ("examples/transpose.tile", "M=96,N=64"),
        ("tests/codegen/fold.tile", "M=40"),
        ("tests/codegen/cp_async.tile", "M=100,K=13"),
        ("tests/codegen/big_shared.tile", "M=256,N=200"),
    ] {
        let (code, out, err) = tilec(&[
            "run",
            root().join(f).to_str().unwrap(),
            "--dims",
            dims,
            "--iters",
            "3",
        ]);
        assert_eq!(code, 0, "{f}: {out}{err}");
        assert!(out.contains("(ok)"), "{out}");
    }
}

#[test]
fn the_runtime_refuses_an_edited_manifest_or_ptx() {
    use tilec_runtime::manifest::Manifest;
    let dir = std::env::temp_dir().join(format!("tilec-seal-{}", std::process::id()));
    let f = root().join("examples/copy.tile");
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "-o", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let json = std::fs::read_to_string(dir.join("copy.json")).unwrap();
    let ptx = std::fs::read_to_string(dir.join("copy.ptx")).unwrap();
    let m = Manifest::from_json(&json).unwrap();
    m.check_seal(&ptx).unwrap();
    // The seal written into the JSON made before it: the sealed manifest's.
    assert_eq!(json, m.to_json());
    // A shrunk layout, an emptied access list, an edited PTX: refused.
    let shrunk = Manifest::from_json(&json.replacen(
        "\"shape\": [\n              \"M\"",
        "\"shape\": [\n              \"1\"",
        1,
    ))
    .unwrap();
    assert_ne!(shrunk, m);
    let mut no_accesses = m.clone();
    no_accesses.variants[0].accesses.clear();
    let edited_ptx = ptx.replacen("ld.global", "ld.global ", 1);
    for (edited, text) in [(&shrunk, &ptx), (&no_accesses, &ptx), (&m, &edited_ptx)] {
        assert!(
            edited
                .check_seal(text)
                .unwrap_err()
                .contains("do not match")
        );
    }
    // What the manifest says is checked against its own declarations: its
    // accesses and extents (copy's), its stride symbols (gemm_batched's).
    let (code, _, err) = tilec(&[
        "build",
        root().join("examples/gemm_batched.tile").to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let batched = std::fs::read_to_string(dir.join("gemm_batched.json")).unwrap();
    for (json, from, to, why) in [
        (
            &json,
            "\"accesses\": [\n        {\n          \"param\": 0",
            "\"accesses\": [\n        {\n          \"param\": 7",
            "names parameter 7",
        ),
        (
            &json,
            "\"extents\": [\n    \"M\",\n    \"N\"\n  ]",
            "\"extents\": [\n    \"M\"\n  ]",
            "no extent",
        ),
        // The stride symbols' list comes before the variants' accesses.
        (
            &batched,
            "\"param\": 0",
            "\"param\": 7",
            "not leaf 0 of parameter 7",
        ),
        (
            &batched,
            "\"declared\": \"K\"",
            "\"declared\": \"M\"",
            "declared strides",
        ),
    ] {
        let bad = json.replacen(from, to, 1);
        assert_ne!(&bad, json, "{from}");
        assert!(
            Manifest::from_json(&bad).unwrap_err().contains(why),
            "{from}"
        );
    }
    // A loop counter listed twice (the compiler names each loop its own:
    // `k.0`, `k.1`), which the bound proof would take for one loop.
    let mut twice = Manifest::from_json(&batched).unwrap();
    let v = twice
        .variants
        .iter_mut()
        .find(|v| !v.loops.is_empty())
        .unwrap();
    v.loops.push(v.loops[0].clone());
    assert!(
        Manifest::from_json(&twice.to_json())
            .unwrap_err()
            .contains("is listed twice")
    );
    // A last entry that divides in 32 bits: nothing left to fall back on
    // where its quotients pass them.
    let mut narrow_last = Manifest::from_json(&batched).unwrap();
    narrow_last
        .variants
        .last_mut()
        .unwrap()
        .narrowed
        .push(tilec_runtime::manifest::Narrowed {
            dividend: tilec_layout::Int::var("M"),
            divisor: tilec_layout::Int::var("N"),
        });
    assert!(
        Manifest::from_json(&narrow_last.to_json())
            .unwrap_err()
            .contains("none is left to fall back on")
    );
    // Two symbols swapped, each with its name, leaf and declared value: the
    // entries would bind A's padded extent to M*K. Refused by their order.
    let mut swapped = Manifest::from_json(&batched).unwrap();
    swapped.strides.swap(1, 2);
    assert!(
        Manifest::from_json(&swapped.to_json())
            .unwrap_err()
            .contains("declared strides")
    );
    let deep = json.replacen(
        "\"M\"",
        &format!("\"{}M{}\"", "(".repeat(50_000), "+1)".repeat(50_000)),
        1,
    );
    // Refused (serde's untagged tuple hides the depth message), not a stack overflow.
    assert!(
        Manifest::from_json(&deep)
            .unwrap_err()
            .contains("not a tilec manifest")
    );
}
