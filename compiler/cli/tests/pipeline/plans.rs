//! Launch plans: what the runtime proves and sizes before a launch of a
//! pipeline, a split-K reduce, a persistent or branching kernel (the proof
//! itself, checked against every access, is `proof.rs`'s).

use super::*;

/// A pipeline's producer warpgroup joins the block (384 threads here) but
/// runs none of the listed accesses: the plan bounds them over the
/// consumer threads, 0..127, and proves this epilogue in bounds (over
/// 0..255 its rows would pass the end of C, so that the full-tile entry
/// steps aside for the guarded one).
#[test]
fn the_plan_bounds_a_pipeline_over_its_consumer_threads() {
    let m = manifest_of("tests/run/tma_pipeline_smem_epilogue.tile");
    assert_eq!(
        (m.block.clone(), m.producer_threads),
        (vec![tilec_layout::Int::Static(256)], 128)
    );
    plan(&m, &Dims::parse("M=128,N=128,K=128").unwrap()).expect("in bounds");
    let wrong = tilec_runtime::manifest::Manifest {
        producer_threads: 0,
        ..m
    };
    let p = plan(&wrong, &Dims::parse("M=128,N=128,K=128").unwrap()).expect("guarded");
    assert!(p.launches.iter().all(|l| l.variant != 0), "{p:?}");
    assert!(
        p.unproved[0].0 == 0 && p.unproved[0].1.contains("C would be accessed"),
        "{p:?}"
    );
}

/// `tilec build FILE`'s manifest of `kernel`.
pub(crate) fn built_manifest(file: &str, kernel: &str) -> tilec_runtime::manifest::Manifest {
    manifest_in(&built(file, &[]), kernel)
}

/// The folder `tilec build FILE ARGS..` wrote its PTX and manifests to.
fn built(file: &str, args: &[&str]) -> PathBuf {
    let name = Path::new(file).file_stem().unwrap().to_str().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "tilec-manifest-{name}-{}-{}",
        args.join(""),
        std::process::id()
    ));
    let f = root().join(file);
    let out = ["-o", dir.to_str().unwrap()];
    let build = [&["build", f.to_str().unwrap()], args, &out].concat();
    let (code, _, err) = tilec(&build);
    assert_eq!(code, 0, "{file}: {err}");
    dir
}

/// The manifest of `kernel` in a build's folder.
fn manifest_in(dir: &Path, kernel: &str) -> tilec_runtime::manifest::Manifest {
    let json = std::fs::read_to_string(dir.join(format!("{kernel}.json"))).unwrap();
    tilec_runtime::manifest::Manifest::from_json(&json).unwrap()
}

#[test]
fn tma_reads_rows_that_are_not_whole_16_bytes_through_one_aligned_copy() {
    use tilec_runtime::plan::MapSource;
    let m = built_manifest("examples/bgemm_tn_sm90_tma.tile", "bgemm_tn_sm90_tma");
    // K = 100 bf16: rows of 200 bytes. One launch (nothing is guarded),
    // four maps (A, B, C loaded and C stored), two copies: A's and B's,
    // rows of 256 bytes; C's columns of 304 bf16 are read in place.
    let p = plan(&m, &Dims::parse("M=304,N=600,K=100").unwrap()).unwrap();
    assert_eq!(p.launches.len(), 1, "{:?}", p.launches);
    assert_eq!(p.staged.len(), 2, "{:?}", p.staged);
    for s in &p.staged {
        assert_eq!((s.row_bytes, s.dims[0].to), (200, 256), "{s:?}");
    }
    for maps in &p.maps {
        let sources: Vec<MapSource> = maps.iter().map(|x| x.source).collect();
        assert_eq!(
            sources,
            [
                MapSource::Staged(0),
                MapSource::Staged(1),
                MapSource::Tensor,
                MapSource::Tensor
            ]
        );
        assert!(
            maps[..2]
                .iter()
                .all(|x| x.strides.iter().all(|b| b % 128 == 0))
        );
    }
    // K = 104: rows of 208 bytes, read in place.
    let p = plan(&m, &Dims::parse("M=304,N=600,K=104").unwrap()).unwrap();
    assert!(p.staged.is_empty());
    assert!(
        p.maps
            .iter()
            .flatten()
            .all(|x| x.source == MapSource::Tensor)
    );
}

/// A TMA store writes C in place where its rows are whole 16 bytes, else
/// through an aligned copy that is copied back (`written`), one copy for
/// all of C's maps.
#[test]
fn tma_stores_write_rows_that_are_not_whole_16_bytes_through_a_copy_copied_back() {
    use tilec_runtime::plan::MapSource;
    let m = built_manifest("tests/run/tma_store_gemm.tile", "tma_store_gemm");
    let stores = |p: &tilec_runtime::plan::LaunchPlan| -> Vec<MapSource> {
        p.maps
            .iter()
            .flatten()
            .filter(|x| x.param == 2)
            .map(|x| x.source)
            .collect()
    };
    // M = 200 bf16: columns of C of 400 bytes, written in place.
    let p = plan(&m, &Dims::parse("M=200,N=300,K=136").unwrap()).unwrap();
    assert!(p.staged.is_empty(), "{:?}", p.staged);
    assert!(stores(&p).iter().all(|s| *s == MapSource::Tensor));
    // M = 201: columns of 402 bytes, through a copy of 512-byte columns.
    let p = plan(&m, &Dims::parse("M=201,N=300,K=136").unwrap()).unwrap();
    assert_eq!(p.staged.len(), 1, "{:?}", p.staged);
    let s = &p.staged[0];
    assert!(s.written && s.param == 2, "{s:?}");
    assert_eq!((s.row_bytes, s.dims[0].to), (402, 512));
    assert!(stores(&p).iter().all(|s| *s == MapSource::Staged(0)));
    assert!(
        p.entries(&m)
            .contains("TMA writes an aligned copy of C, copied back")
    );
}

/// A reduce across blocks (split-K): each block stores its partials and
/// fences them, thread 0 counts the arrival, the block learns whether it
/// was the last through the barrier's reduction, and that block sums the
/// partials with loads that bypass L1, several partials' at once. The
/// runtime sizes the workspace for the whole grid and each group's runs,
/// and a counter per group and run.
#[test]
fn a_reduce_across_blocks_fences_counts_and_sums() {
    let ptx = emitted("tests/run/split_k.tile", "ptx");
    let full = part(&ptx, ".entry split_k(");
    for needed in [
        "fence.acq_rel.gpu",
        "atom.relaxed.gpu.global.inc.u32",
        "bar.red.or.pred",
        "ld.volatile.global.f32",
    ] {
        assert!(full.contains(needed), "no {needed}");
    }
    // Four values a thread: eight partials' loads go out a trip (32), then
    // those left one at a time (4), so the last block does not wait out an
    // L2 round trip per partial. Four parts are one run: no runs' sums.
    assert_eq!(full.matches("ld.volatile.global.f32").count(), 8 * 4 + 4);
    let m = built_manifest("tests/run/split_k.tile", "split_k");
    let r = m.block_reduce.as_ref().expect("a block reduction");
    assert_eq!(
        (&r.groups, r.values),
        (&tilec_runtime::manifest::ReduceGroups::Dim(2), 4)
    );
    // Grid (2, 3, 4) of 256 threads: 24 blocks of 256 x 4 values, then a
    // run's sum for each of the 6 groups; a counter per group and run.
    let p = plan(&m, &Dims::parse("M=64,N=96,K=100").unwrap()).unwrap();
    assert_eq!(
        p.block_reduce_sizes(m.block_reduce.as_ref()),
        Some(((24 + 6) * 256 * 4, 6 * 2))
    );
    // The split-K example's every access is bounded at a skinny size: 16
    // tiles of C, eight slices of K each.
    let m = built_manifest("examples/sgemm_splitk.tile", "sgemm_splitk");
    let p = plan(&m, &Dims::parse("M=512,N=512,K=8192").unwrap()).unwrap();
    assert_eq!(p.grid, [4, 4, 8]);
    assert_eq!(
        p.block_reduce_sizes(m.block_reduce.as_ref()),
        Some(((128 + 16) * 256 * 64, 16 * 2))
    );
    // Sixty-four slices are eight runs a tile: their sums' rows after each
    // tile's partials, their counters after the tile's own. No row is
    // placed by the launch's grid (`nctaid`): a plan may launch the grid
    // in parts, each its own grid.
    let dir = built("examples/sgemm_splitk.tile", &["--set", "splits=64"]);
    let ptx = std::fs::read_to_string(dir.join("sgemm_splitk.ptx")).unwrap();
    assert!(ptx.contains("atom.relaxed.gpu.global.inc.u32") && !ptx.contains("nctaid"));
    let m = manifest_in(&dir, "sgemm_splitk");
    let p = plan(&m, &Dims::parse("M=512,N=512,K=8192").unwrap()).unwrap();
    assert_eq!(
        p.block_reduce_sizes(m.block_reduce.as_ref()),
        Some(((16 * 64 + 16 * 8) * 256 * 64, 16 * 9))
    );
}

/// Split-K beside a TMA pipeline: the producer warpgroup leaves once its
/// loads are issued, so the reduce's barriers are the consumers' (named
/// barrier 1, 256 threads: a `bar.sync 0` there would wait for threads
/// that never come), and the workspace holds the consumers' partials alone.
#[test]
fn a_reduce_beside_a_pipeline_synchronizes_the_consumers_alone() {
    let ptx = emitted_with(
        "examples/bgemm_tn_sm90_splitk.tile",
        "ptx",
        &["--set", "splits=4"],
    );
    let full = part(&ptx, ".entry bgemm_tn_sm90_splitk(");
    // The block's one barrier 0 publishes the ring before the roles split.
    let consumers = &full[full.find("setmaxnreg.inc").expect("the consumers' code")..];
    assert!(
        consumers.contains("bar.red.or.pred q, 1, 256, p;"),
        "{consumers}"
    );
    assert!(consumers.contains("barrier.sync \t1, 256;"));
    assert!(!consumers.contains("bar.sync \t0;") && !consumers.contains("barrier0"));
    let m = built_manifest("examples/bgemm_tn_sm90_splitk.tile", "bgemm_tn_sm90_splitk");
    assert_eq!(m.producer_threads, 128);
    let p = plan(&m, &Dims::parse("M=512,N=512,K=8192").unwrap()).unwrap();
    // The defaults: 128 x 256 tiles of 256 consumers (384 threads a
    // block), one slice: no workspace is launched with, but its size is
    // the consumers' 128 values each.
    assert_eq!(
        (p.grid, p.block[0], p.reducing_threads),
        ([4, 2, 1], 384, 256)
    );
}

#[test]
fn a_persistent_kernel_is_bounded_over_fewer_blocks_at_a_time() {
    // Its trip count depends on block.x, and so do the tiles it reaches:
    // bounded over the whole grid at once, the last tile would seem to pass
    // the end of C; over regions of fewer blocks, each region's counts
    // bound its tiles.
    let m = built_manifest("tests/run/persistent_gemm.tile", "persistent_gemm");
    assert!(m.extents.iter().any(|e| e == "sm_count"), "{:?}", m.extents);
    // One block per multiprocessor (132 without a GPU), fewer if the tiles are.
    for (dims, blocks) in [
        ("M=4096,N=4096,K=4096", 132),
        ("M=4096,N=4096,K=4096,sm_count=7", 7),
        ("M=1000,N=1037,K=1000", 8 * 5),
    ] {
        let p = plan(&m, &Dims::parse(dims).unwrap()).unwrap_or_else(|e| panic!("{dims}: {e}"));
        let grid: u32 = p.launches.iter().map(|l| l.grid[0]).sum();
        assert_eq!(grid, blocks, "{dims}");
    }
}

#[test]
fn a_grouped_tile_walk_is_bounded_region_by_region() {
    // Tiles walked two rows at a time, the last group of one row where the
    // rows of tiles are odd, C written from the registers. Over whole
    // ranges, the column in the group (`t - t / (2 * tn) * 2 * tn`) would
    // seem to go below zero, and the last group's row past the end of C.
    let m = built_manifest(
        "tests/run/persistent_one_warpgroup.tile",
        "persistent_one_warpgroup",
    );
    for dims in [
        "M=256,N=512,K=128,sm_count=3",
        "M=192,N=512,K=128,sm_count=3",
        "M=192,N=512,K=128",
        "M=4096,N=4096,K=4096",
        "M=4160,N=4096,K=4096",
        "M=8192,N=8192,K=8192,sm_count=131",
    ] {
        let p = plan(&m, &Dims::parse(dims).unwrap()).unwrap_or_else(|e| panic!("{dims}: {e}"));
        // Whole tiles: the full-tile entry runs every block.
        assert_eq!(p.launches.len(), 1, "{dims}");
        assert!(
            !m.variants[p.launches[0].variant]
                .entry
                .ends_with("_guarded"),
            "{dims}"
        );
    }
}

/// On a GPU of 132 multiprocessors, a grid with edge blocks and up to two
/// blocks for each multiprocessor is one launch of the entry that runs any
/// block (in one wave the slowest
/// block, a partial tile's, sets the time; in two the split's waves are
/// ragged), unless its blocks share multiprocessors in one wave; a larger
/// grid keeps the full-tile entry on its full blocks.
/// The CPU executor's plan keeps the split at any size, so that small runs
/// test every entry.
/// An index past a tensor's end (`sums[block.x]` with fewer sums than
/// blocks) keeps the full entry off, and the reason given is that, not
/// the small grid's one launch that would have replaced it anyway: the
/// entry that runs writes nothing there. With enough sums, the waves.
#[test]
fn an_entry_not_proved_is_said_so_where_one_launch_replaced_it() {
    use tilec_runtime::plan::plan_sizes_for;
    let m = built_manifest("tests/run/block_sums_past_their_tensor.tile", "block_sums");
    let why = |dims: &str| {
        plan_sizes_for(&m, &Dims::parse(dims).unwrap(), Some(132))
            .unwrap()
            .passed_over(&m)
    };
    let short = why("M=1000,T=4");
    assert_eq!(short.len(), 1, "{short:?}");
    assert!(
        short[0].1.contains("sums would be accessed at")
            && short[0].1.contains("writing nothing past the tensor's end"),
        "{short:?}"
    );
    let enough = why("M=1000,T=8");
    assert!(
        enough[0].1.contains("8 blocks are at most 2 waves"),
        "{enough:?}"
    );
}

#[test]
fn a_small_grid_is_one_launch_on_the_gpu_unless_its_blocks_share_multiprocessors() {
    use tilec_runtime::plan::plan_sizes_for;
    let m = built_manifest("examples/sgemm_tn_sm80.tile", "sgemm_tn_sm80");
    let plan = |dims: &str, sms: Option<i64>| {
        plan_sizes_for(&m, &Dims::parse(dims).unwrap(), sms).unwrap()
    };
    let entries = |dims: &str, sms: Option<i64>| -> Vec<String> {
        plan(dims, sms)
            .launches
            .iter()
            .map(|l| m.variants[l.variant].entry.clone())
            .collect()
    };
    // 8 x 9 blocks of 128 x 128, as one launch: the guarded entry with
    // vectors, on copies of A and B whose rows are zero from K = 999 to
    // their pitch of 1024.
    let small = "M=1000,N=1037,K=999";
    assert_eq!(entries(small, Some(132)), ["sgemm_tn_sm80_guarded_vec"]);
    let copied = |sms: Option<i64>| -> Vec<usize> {
        plan(small, sms).staged.iter().map(|s| s.param).collect()
    };
    assert_eq!(copied(Some(132)), [0, 1]);
    // Split, the full entry on the same copies.
    assert_eq!(
        entries(small, Some(35)),
        [
            "sgemm_tn_sm80",
            "sgemm_tn_sm80_guarded_vec",
            "sgemm_tn_sm80_guarded_vec"
        ]
    );
    assert_eq!(copied(Some(35)), [0, 1]);
    assert_eq!(entries(small, None), entries(small, Some(35)));
    // `tilec check --dims` says why the full entry does not run there.
    let why = plan(small, Some(132)).passed_over(&m);
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].0, "sgemm_tn_sm80");
    assert!(
        why[0]
            .1
            .contains("72 blocks are at most 2 waves on 132 multiprocessors"),
        "{why:?}"
    );
    // `sm_count` in the dims stands for the device's multiprocessors, at
    // least one.
    assert_eq!(
        entries(&format!("{small},sm_count=35"), Some(132)),
        entries(small, Some(35))
    );
    for bad in ["0", "-3", "1099511627776"] {
        let refused = Dims::parse(&format!("{small},sm_count={bad}"))
            .map_or(true, |d| plan_sizes_for(&m, &d, Some(132)).is_err());
        assert!(refused, "sm_count={bad}");
    }
    assert_eq!(
        entries("M=4000,N=4000,K=4000", Some(132))[0],
        "sgemm_tn_sm80"
    );
    // Full tiles only: the full-tile entry, however few.
    assert_eq!(entries("M=512,N=512,K=512", Some(132)), ["sgemm_tn_sm80"]);
    // Two blocks a multiprocessor (`min_blocks(2)`) and more blocks than
    // multiprocessors: the blocks share them in one wave, and split, a
    // full block beside each edge block, on the buffers one launch takes.
    let split = [
        "sgemm_tn_sm80",
        "sgemm_tn_sm80_guarded_vec",
        "sgemm_tn_sm80_guarded_vec",
    ];
    assert_eq!(entries("M=2039,N=2039,K=2048", Some(132)), split);
    assert!(plan("M=2039,N=2039,K=2048", Some(132)).staged.is_empty());
    assert_eq!(entries("M=2039,N=2039,K=2039", Some(132)), split);
    // Its 256 blocks: alone on 256 multiprocessors, one launch; on 255 or
    // on 128 (two each), split.
    let sms = |n: i64| plan("M=2039,N=2039,K=2048", Some(n)).launches.len();
    assert_eq!((sms(256), sms(255), sms(128)), (1, 3, 3));
    // A kernel whose launch promises no second block stays one launch
    // (sgemm_nt_sm80, on FMAs, its full entry usable in place here).
    let nt = built_manifest("examples/sgemm_nt_sm80.tile", "sgemm_nt_sm80");
    let nt_plan = plan_sizes_for(
        &nt,
        &Dims::parse("M=2039,N=2039,K=2048").unwrap(),
        Some(132),
    );
    assert_eq!(nt_plan.unwrap().launches.len(), 1);
    // Nor does a kernel that reduces across blocks (split-K, here as if
    // it held two blocks a multiprocessor: 8 x 9 tiles of 8 splits on 300).
    let splitk = built_manifest("examples/sgemm_tn_splitk.tile", "sgemm_tn_splitk");
    let two = tilec_runtime::manifest::Manifest {
        min_blocks: 2,
        ..splitk
    };
    let dims = Dims::parse("M=1000,N=1037,K=999").unwrap();
    assert!(two.block_reduce.is_some());
    assert_eq!(
        plan_sizes_for(&two, &dims, Some(300))
            .unwrap()
            .launches
            .len(),
        1
    );
    let no_reduce = tilec_runtime::manifest::Manifest {
        block_reduce: None,
        ..two.clone()
    };
    assert!(
        plan_sizes_for(&no_reduce, &dims, Some(300))
            .unwrap()
            .launches
            .len()
            > 1
    );
    // Not where the full-tile entry would need copies that one launch
    // does not (K = 996: whole 16-byte rows, but not whole k-tiles).
    let at_996 = plan("M=2039,N=2039,K=996", Some(132));
    assert_eq!(at_996.launches.len(), 1);
    assert!(at_996.staged.is_empty());
    // Nor on tensor cores, whose waves are short (bgemm_tn_sm90 holds two
    // blocks a multiprocessor too, and its full entry runs in place here).
    let bf16 = built_manifest("examples/bgemm_tn_sm90.tile", "bgemm_tn_sm90");
    assert!(bf16.tensor_cores && bf16.min_blocks == 2 && !m.tensor_cores);
    let dims = Dims::parse("M=2000,N=2000,K=2048").unwrap();
    assert_eq!(
        plan_sizes_for(&bf16, &dims, Some(132))
            .unwrap()
            .launches
            .len(),
        1
    );
    assert_eq!(
        plan_sizes_for(&bf16, &dims, Some(66))
            .unwrap()
            .launches
            .len(),
        3
    );
}

/// CUDA's grid limits hold for a kernel, on the executor as on the GPU,
/// and not for a reference kernel, which runs on the executor alone: a
/// naive `grid(M, N)` reference checks a kernel whose grid fits.
#[test]
fn a_reference_kernel_is_planned_past_cudas_grid_limits() {
    use tilec_runtime::plan::{plan_reference, plan_sizes};
    let m = built_manifest("examples/add.tile", "add_reference");
    let d = Dims::parse("M=2,N=70000").unwrap();
    let e = plan_sizes(&m, &d).unwrap_err();
    assert!(e.to_string().contains("70000 blocks along y"), "{e}");
    assert_eq!(plan_reference(&m, &d).unwrap().grid, [2, 70000, 1]);
    let k = built_manifest("examples/add.tile", "add");
    assert!(plan_sizes(&k, &d).is_ok());
}

/// Stream-K's walk divides by run-time values (the grid, a tile's
/// k-tiles). Its full entry divides in 32 bits, which ptxas does inline
/// where a 64-bit quotient is a subroutine call whose registers spill in
/// the main loop; the runtime launches that entry only where it proves
/// every such quotient's operands within 32 bits over the launch: its
/// walk keeps every product within the problem's k-tiles. Where those
/// reach 2^31 (65536 x 65536 x 131072) the entry with guarded vectors,
/// which divides in 64 bits, runs the whole grid.
#[test]
fn stream_k_divides_in_32_bits_where_the_launch_keeps_it_within_them() {
    let file = "examples/sgemm_tn_streamk.tile";
    let m = manifest_of(file);
    let (full, last) = (&m.variants[0], m.variants.last().unwrap());
    assert!(!full.narrowed.is_empty() && last.narrowed.is_empty());
    let entries = |dims: &str| -> Vec<&str> {
        let p = plan(&m, &Dims::parse(dims).unwrap()).unwrap();
        p.launches
            .iter()
            .map(|l| m.variants[l.variant].entry.as_str())
            .collect()
    };
    assert_eq!(entries("M=4096,N=4096,K=4096"), [full.entry.as_str()]);
    assert_eq!(entries("M=12288,N=12288,K=12288"), [full.entry.as_str()]);
    assert_eq!(entries("M=16384,N=16384,K=16384"), [full.entry.as_str()]);
    assert_eq!(entries("M=65536,N=65536,K=131072"), [last.entry.as_str()]);
    // And `tilec check --dims` / `run` say why the faster entry does not run.
    let huge = plan(&m, &Dims::parse("M=65536,N=65536,K=131072").unwrap()).unwrap();
    let why = huge.passed_over(&m);
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].1.contains("divides in 32 bits"), "{why:?}");
    // 62 tiles a block: the bound proof cuts the blocks before the tiles
    // each one walks (cut by tiles first, it gave up after 16384 regions).
    assert_eq!(entries("M=16384,N=16384,K=512"), [full.entry.as_str()]);
    let ptx = emitted(file, "ptx");
    let wide = |entry: &str| {
        let text = part(&ptx, &format!(".entry {entry}("));
        ["div.u64", "div.s64", "rem.u64", "rem.s64"]
            .iter()
            .any(|d| text.contains(d))
    };
    assert!(!wide(&full.entry), "a 64-bit quotient in {}", full.entry);
    assert!(wide(&last.entry), "no 64-bit quotient in {}", last.entry);
}

/// A dividend near 2^31 (tests/run/quotients_near_32_bits.tile): the proof
/// is tight enough to keep the full entry's 32-bit quotient where the
/// largest dividend is 2143 * 10^6 + 7, and sends the launch to the
/// guarded entry where it is 2175 * 10^6 + 7.
#[test]
fn a_dividend_near_2_to_the_31_keeps_its_entry_below_and_falls_back_above() {
    let m = manifest_of("tests/run/quotients_near_32_bits.tile");
    let entry = |dims: &str| {
        let p = plan(&m, &Dims::parse(dims).unwrap()).unwrap();
        let v: Vec<&str> = p
            .launches
            .iter()
            .map(|l| m.variants[l.variant].entry.as_str())
            .collect();
        v.join(" + ")
    };
    assert_eq!(entry("M=2144,N=8"), "quotients_near_32_bits");
    assert_eq!(entry("M=2176,N=8"), "quotients_near_32_bits_guarded");
    // `tilec check --dims` and `run` say why.
    let p = plan(&m, &Dims::parse("M=2176,N=8").unwrap()).unwrap();
    let why = p.passed_over(&m);
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].0, "quotients_near_32_bits");
    assert!(why[0].1.contains("divides in 32 bits"), "{why:?}");
}
