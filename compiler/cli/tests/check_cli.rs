//! The command-line contract of `tilec check`: diagnostics and exit codes,
//! `--dims` (extents checked, the launch planned and proved in bounds),
//! `--shapes`, `--perf` and `--arch`, run on the built binary.

mod support;
use support::{ROOT, scratch, tilec};

/// `tilec check --shapes` of an example, which must pass: what it prints.
fn shapes_of(example: &str) -> String {
    let file = format!("{ROOT}/examples/{example}.tile");
    let (code, out, err) = tilec(&["check", "--shapes", &file], "");
    assert_eq!(code, 0, "{example}: {err}");
    out
}

#[test]
fn check_exits_0_on_examples_and_1_with_diagnostics() {
    let out = shapes_of("sgemm_nt");
    assert!(out.contains("tAgA  (4,1,ceil_div(K,8))"), "{out}");
    assert!(
        out.contains("fast path where (128*(block.x+1)) <= M"),
        "{out}"
    );
    // The entry points, in the runtime's order, with when each runs.
    let entries: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("entry points, tried in this order"))
        .skip(1)
        .collect();
    assert_eq!(
        entries.len(),
        5,
        "three, the GPU's small grids and the stride symbols: {out}"
    );
    assert!(
        entries[4].contains("A.stride.1 = M, A.padded.0 = M")
            && entries[4].contains("aligned copies of A, B"),
        "{out}"
    );
    assert!(
        entries[0].contains("sgemm_nt ") && entries[0].contains("when K % 8 == 0"),
        "{out}"
    );
    assert!(
        entries[1].contains("sgemm_nt_k_residue  full tiles at any K"),
        "{out}"
    );
    assert!(
        entries[1].contains("on the blocks where (128*(block.x+1)) <= M"),
        "{out}"
    );
    assert!(
        entries[2].contains("sgemm_nt_guarded") && !entries[2].contains("when"),
        "{out}"
    );
    let (code, _, err) = tilec(
        &[
            "check",
            &format!("{ROOT}/tests/check/errors/several_errors_at_once.tile"),
        ],
        "",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("`tCgc` is not defined") && err.contains("5 error(s)"),
        "{err}"
    );
    let (code, _, err) = tilec(&["check", "no/such/file.tile"], "");
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn extents_are_checked_at_once_with_suggestions() {
    let k = format!("{ROOT}/examples/sgemm_nt.tile");
    let (code, _, err) = tilec(&["run", "--cpu", &k, "--dims", "m=64,K=8,K=16"], "");
    assert_eq!(code, 2);
    assert!(err.contains("no extent m; did you mean M?"), "{err}");
    assert!(err.contains("gives K twice"), "{err}");
    assert!(err.contains("needs the extents M, N"), "{err}");
    // check --perf defaults missing extents, but not misspelt ones.
    let (code, _, err) = tilec(&["check", "--perf", &k, "--dims", "m=64"], "");
    assert_eq!(code, 2);
    assert!(err.contains("no extent m; did you mean M?"), "{err}");
    let (code, _, err) = tilec(&["run", "--cpu", &k, "--dims", "M=64", "N=64"], "");
    assert_eq!(code, 2);
    assert!(err.contains("separate extents with commas"), "{err}");
    let (code, _, err) = tilec(
        &["run", "--cpu", &k, "--dims", "M=4294967297,N=128,K=8"],
        "",
    );
    assert_eq!(code, 2);
    assert!(err.contains("of host memory"), "{err}");
    // A name or a value left out is said so, not read as a number.
    for (dims, says) in [
        ("M=,N=8,K=8", "`M=` has no value"),
        ("=5", "`=5` names no extent"),
    ] {
        let (code, _, err) = tilec(&["run", "--cpu", &k, "--dims", dims], "");
        assert_ne!(code, 0);
        assert!(err.contains(says), "{err}");
    }
    // A tune parameter given twice is refused, as an extent is.
    let s = format!("{ROOT}/examples/softmax.tile");
    let (code, _, err) = tilec(
        &[
            "run",
            "--cpu",
            &s,
            "--dims",
            "M=4,N=64",
            "--set",
            "rows=2,rows=4",
        ],
        "",
    );
    assert_ne!(code, 0);
    assert!(err.contains("`rows` is given twice (2, then 4)"), "{err}");
}

#[test]
fn check_plans_the_launch_at_the_extents_given() {
    // `check --dims` plans the launch and proves every access in bounds.
    let proved = |file: &str, dims: &str| {
        let (code, out, err) = tilec(&["check", file, "--dims", dims], "");
        assert_eq!(code, 0, "{file} {dims}: {out}{err}");
        assert!(out.contains("every access in bounds"), "{out}");
    };
    // Which entries run where, every access proved in bounds as a GPU's
    // runtime proves it before a launch.
    let k = format!("{ROOT}/tests/run/persistent_one_warpgroup.tile");
    let (code, out, err) = tilec(&["check", &k, "--dims", "M=192,N=512,K=128,sm_count=3"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "persistent_one_warpgroup at M=192,N=512,K=128,sm_count=3: on a GPU, \
         persistent_one_warpgroup on 3 blocks; every access in bounds"
    );
    // A tiler of spread-out tiles: full where a tile's last element is in
    // (the fact was `32 * (block.x + 1) <= M`, and the proof refused the
    // full entry's last blocks at M=100000).
    let k = format!("{ROOT}/tests/run/strided_tiler.tile");
    let (code, out, err) = tilec(&["check", &k, "--dims", "M=100000"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("strided_tiler on 3124 blocks, strided_tiler_guarded on 2 blocks"),
        "{out}"
    );
    let (code, out, _) = tilec(&["check", "--shapes", &k], "");
    assert_eq!(code, 0);
    assert!(
        out.contains("fast path where (((block.x%2)+(64*(block.x/2)))+63) <= M"),
        "{out}"
    );
    let k = format!("{ROOT}/examples/sgemm_nt_sm80.tile");
    let (code, out, _) = tilec(&["check", &k, "--dims", "M=1000,N=1037,K=999"], "");
    assert_eq!(code, 0);
    assert!(
        out.contains("sgemm_nt_sm80_guarded_vec on 72 blocks"),
        "{out}"
    );
    // `run` says the same as a note.
    let (code, _, err) = tilec(&["run", "--cpu", &k, "--dims", "M=128,N=128,K=100"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("note: sgemm_nt_sm80 does not run: K % 16 == 0 does not hold"),
        "{err}"
    );
    // A k residue: every block in the guarded entry, and why.
    let (code, out, _) = tilec(&["check", &k, "--dims", "M=4096,N=4096,K=4095"], "");
    assert_eq!(code, 0);
    assert!(
        out.contains("sgemm_nt_sm80_guarded_vec on 1024 blocks")
            && out.contains("  not sgemm_nt_sm80: K % 16 == 0 does not hold"),
        "{out}"
    );
    // Refused where no entry runs on the tensors as given nor on aligned
    // copies: the copies' refusal names the cause (the grid), and the
    // kernel's conditions read in the caller's extents, not as symbols.
    let k = format!("{ROOT}/examples/sgemm_nt_small.tile");
    let (code, _, err) = tilec(
        &[
            "check",
            &k,
            "--dims",
            "M=1,N=4194304,K=8",
            "--set",
            "bm=64,bn=64",
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(err.contains("a grid of 65536 blocks along y"), "{err}");
    let (code, _, err) = tilec(&["check", &k, "--dims", "M=1099511627775,N=1,K=1"], "");
    assert_eq!(code, 2);
    assert!(
        err.contains("M % 4 == 0 does not hold (a vectorized copy)")
            && err.contains("no aligned copy of the tensors meets it"),
        "{err}"
    );
    // The planted bug: its full-tile entry is passed over, with the blocks
    // and trips where its proof fails, for the entry that tests each k-tile.
    let k = format!("{ROOT}/tests/checked/one_k_tile_too_many.tile");
    let (code, out, err) = tilec(&["check", &k, "--dims", "M=256,N=256,K=64"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("sgemm_nt_k_residue on 4 blocks")
            && out.contains("not sgemm_nt: its accesses are not proved in bounds here (line 36: A would be accessed")
            && out.contains("(where block.x = 1, k.0 = 8, thread.x = 255)"),
        "{out}"
    );
    // In bounds, but past what the proof reaches in its budget of regions:
    // the CPU executor runs it and agrees, and `run` fails all the same, as
    // a GPU would refuse it; with fewer blocks it is proved.
    let k = format!("{ROOT}/tests/checked/unprovable_in_bounds.tile");
    let (code, out, err) = tilec(&["run", "--cpu", &k, "--dims", "M=20000"], "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("(ok)"), "{out}");
    assert!(
        err.contains("on a GPU, refusing to launch: the proof that every access is in bounds gave up after 16384 regions")
            && err.contains("help: `tilec run --checked`"),
        "{err}"
    );
    let (code, _, err) = tilec(&["check", &k, "--dims", "M=20000"], "");
    assert_eq!(code, 1);
    assert!(err.contains("help: `tilec run --checked`"), "{err}");
    // As the help says, a checked build needs no proof ahead (its accesses
    // are bounded on the device): the CPU run passes.
    let (code, out, err) = tilec(&["run", "--cpu", "--checked", &k, "--dims", "M=20000"], "");
    assert_eq!(code, 0, "{out}{err}");
    // An unguarded element inside A's buffer but at a tile coordinate
    // below 0 (another column's rows) is not proved by its coordinate: the
    // full-tile entry steps aside for the one that tests each copy, and
    // the result is the reference's (0 where the row is below 0).
    let t = format!("{ROOT}/tests/checked/tile_coordinate_past_the_tiles.tile");
    let (code, out, err) = tilec(&["check", &t, "--dims", "M=64,N=16"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("its accesses are not proved in bounds here (line 19: A would be accessed at coordinate -1..=-1 of a mode of 64"),
        "{out}"
    );
    let (code, out, err) = tilec(&["run", "--cpu", &t, "--dims", "M=64,N=16"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(ok)"), "{out}");
    // Accesses under `if i < M && j < N` (and a shared row under `c < 32`
    // in a loop to N) are bounded by their guards.
    proved(
        &format!("{ROOT}/tests/run/guarded_by_an_if.tile"),
        "M=40,N=33",
    );
    // The executor's own plan is proved too: a pipeline a k-tile past
    // the tiles would read past A's row inside its aligned copy, so the
    // full-tile entry on the copy steps aside, and the guarded entry runs
    // on the caller's buffers.
    let p = format!("{ROOT}/tests/checked/pipeline_past_its_tiles.tile");
    let (code, out, err) = tilec(&["run", "--cpu", &p, "--dims", "M=100,N=77,K=130"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("posk_guarded_vec") && out.contains("(ok)"),
        "{out}"
    );
    // A block's tile coordinate through a slice, below 0 at some blocks:
    // those run the guarded entry, and the launch is proved.
    proved(
        &format!("{ROOT}/tests/run/tile_coordinate_through_a_slice.tile"),
        "M=64,N=16",
    );
    // A loop of no trips on the blocks past M (`ceil_div(M - block.x, G)`).
    proved(
        &format!("{ROOT}/tests/run/loop_of_no_trips.tile"),
        "M=5,N=128",
    );
    proved(&k, "M=1000");
    // Without every extent, nothing to plan.
    let k = format!("{ROOT}/tests/checked/one_k_tile_too_many.tile");
    let (code, _, err) = tilec(&["check", &k, "--dims", "M=256"], "");
    assert_eq!(code, 2);
    assert!(err.contains("needs the extents"), "{err}");
}

#[test]
fn perf_counts_the_lanes_an_if_runs() {
    // gemv's store of y runs on lane 0 alone (`if thread.x % 32 == 0`): one
    // sector for its one element, not the 32 lanes' scattered stores.
    let k = format!("{ROOT}/examples/gemv.tile");
    let (code, out, err) = tilec(&["check", "--perf", &k], "");
    assert_eq!(code, 0, "{err}");
    let store = out
        .lines()
        .find(|l| l.contains("store y"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        store.contains("1.0 sectors/request (ideal 1, worst 1)"),
        "{store}"
    );
}

/// A stencil whose warp 0 takes no branch (its row j = 0 is the border):
/// its accesses are costed as the first warp that runs them makes them
/// (the report had listed none).
#[test]
fn perf_looks_past_a_warp_that_runs_nothing() {
    let dir = std::env::temp_dir().join(format!("tilec-perf-warps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("stencil.tile");
    std::fs::write(
        &k,
        "kernel stencil(A: tensor<f32, (M, N):(1, M)>, C: tensor<f32, (M, N):(1, M)>)
{
    launch grid(ceil_div(M, 32), ceil_div(N, 8)), block(256);
    let i = block.x * 32 + thread.x % 32;
    let j = block.y * 8 + thread.x / 32;
    if i >= 1 && i < M - 1 && j >= 1 && j < N - 1 {
        C[i, j] = A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1];
    }
}
",
    )
    .unwrap();
    let (code, out, err) = tilec(&["check", "--perf", k.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("element-wise load  A"), "{out}");
    assert!(out.contains("store C"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `check --arch` refuses what `build --arch` would: a pipeline for sm_80,
/// a `fast_gelu_tanh` for sm_70, each at its statement.
#[test]
fn check_refuses_what_the_arch_lacks_as_build_does() {
    for (file, arch, says) in [
        (
            "examples/attention_sm90.tile",
            "sm_80",
            "a pipeline (TMA, mbarriers and setmaxnreg of SM90)",
        ),
        (
            "tests/run/gelu.tile",
            "sm_70",
            "fast_gelu_tanh (tanh.approx.f32), which needs sm_75",
        ),
    ] {
        let f = format!("{ROOT}/{file}");
        let out = std::env::temp_dir().join(format!("tilec-arch-{}", std::process::id()));
        let out = out.to_str().unwrap();
        for command in [vec!["check"], vec!["build", "-o", out]] {
            let args = [command.as_slice(), &[f.as_str(), "--arch", arch]].concat();
            let (code, _, err) = tilec(&args, "");
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }
    let f = format!("{ROOT}/examples/attention_sm90.tile");
    let (code, _, err) = tilec(&["check", &f, "--arch", "sm_90"], "");
    assert_eq!(code, 0, "{err}");
    // 128 KB of shared memory a block: sm_80 gives 163, sm_86 99 (the
    // checker holds kernels to sm_90's 227 alone, and this built for sm_86
    // and could never launch there).
    let big = scratch("big_shared").join("k.tile");
    std::fs::write(
        &big,
        "kernel k(A: tensor<f32, (M, N):(1, M)>) { launch grid(1), block(128);\n\
         let s = shared<f32>((128, 256):(1, 128));\n\
         for c in 0..256 { s[thread.x, c] = 1.0; }\n\
         sync();\n\
         if thread.x < M { A[thread.x, 0] = s[thread.x, 255]; } }\n",
    )
    .unwrap();
    let big = big.to_str().unwrap();
    let (code, _, err) = tilec(&["check", big, "--arch", "sm_80"], "");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = tilec(&["check", big, "--arch", "sm_86"], "");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("needs 131072 bytes of shared memory a block; sm_86 gives a block at most 101376 (99 KB)"),
        "{err}"
    );
}

/// `check --shapes` says which entries roll their epilogue into a loop
/// (the guarded one of a tensor-core GEMM; never the full one).
#[test]
fn check_shapes_names_the_entries_that_roll_their_epilogue() {
    let out = shapes_of("bgemm_tn_sm80");
    let rolled = |entry: &str| {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{entry} ")));
        line.unwrap_or_else(|| panic!("no entry {entry}: {out}"))
            .contains("its epilogue a loop over groups")
    };
    assert!(rolled("bgemm_tn_sm80_guarded_vec"), "{out}");
    assert!(!rolled("bgemm_tn_sm80"), "{out}");
}

/// Promises a helper broke by trying: each now refused with a message.
#[test]
fn launches_the_runtime_cannot_bound_are_refused_by_name() {
    // An extent or a stride from an expression that goes negative: the
    // guards compare unsigned and the offsets reach below the base. The
    // extents are refused: status 2, as `tilec run` gives.
    let negative = scratch("negative_extent").join("k.tile");
    std::fs::write(
        &negative,
        "kernel k(A: tensor<f32, (N - 2):(M - 2)>) { launch grid(1), block(32);\n\
         let gA = local_tile(A, (32), (block.x)); gA[thread.x] = 7.0; }\n",
    )
    .unwrap();
    let file = negative.to_str().unwrap();
    let (code, out, err) = tilec(&["check", file, "--dims", "M=1,N=1"], "");
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("the extent (N-2) is -1 for M=1,N=1; extents are at least 1"),
        "{err}"
    );
    let (code, _, err) = tilec(&["check", file, "--dims", "M=1,N=3"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the stride (M-2) is -1"), "{err}");
    // A tensor of no elements whose extent also sizes the grid: the tensor
    // is named, not the empty grid it leaves.
    let halved = scratch("halved_extent").join("k.tile");
    std::fs::write(
        &halved,
        "kernel k(A: tensor<f32, (M / 2):(1)>) { launch grid(ceil_div(M / 2, 32)), block(32);\n\
         let gA = local_tile(A, (32), (block.x)); gA[thread.x] = 7.0; }\n",
    )
    .unwrap();
    let (code, _, err) = tilec(&["check", halved.to_str().unwrap(), "--dims", "M=1"], "");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("A ((M/2)):(1): the extent (M/2) is 0 for M=1"),
        "{err}"
    );
    // Past 2^40, where the compiler's bounds on expressions of extents end.
    let (code, _, err) = tilec(&["check", file, "--dims", "M=1099511627776,N=3"], "");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("extents are at least 1 and below 2^40"),
        "{err}"
    );
    // A grid past what the CPU executor can record: refused, not an abort.
    let huge = scratch("huge_grid").join("k.tile");
    std::fs::write(
        &huge,
        "kernel k(A: tensor<f32, (M):(1)>) { launch grid(2147483647), block(1); }\n",
    )
    .unwrap();
    let (code, _, err) = tilec(&["run", huge.to_str().unwrap(), "--dims", "M=1"], "");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the CPU executor runs at most 67108864"),
        "{err}"
    );
    // Tensors past an H200's memory, which `check` plans for (12 TB here).
    let add = format!("{ROOT}/examples/add.tile");
    let (code, _, err) = tilec(&["check", &add, "--dims", "M=1000000,N=1000000"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than an H200's 141 GB"), "{err}");
    // `sm_count` describes the device: any kernel takes it.
    let (code, out, err) = tilec(&["check", &add, "--dims", "M=100,N=37,sm_count=4"], "");
    assert_eq!(code, 0, "{out}{err}");
}
