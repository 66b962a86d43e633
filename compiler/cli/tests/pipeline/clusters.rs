//! Clusters in the PTX, the IR and the plans: boxes the blocks of a
//! cluster share are multicast, launches run on whole clusters (padded
//! past the grid where the kernel allows it, refused where it was built
//! for a grid of whole clusters), and a stage's release to a peer is
//! unfenced where the pipeline's body reads the stages through wgmma alone.

use super::*;

/// The IR of kernel `name` of `file`, on clusters of two along x that the
/// runtime may pad, with one box multicast to both blocks.
fn padded_cluster_ir(file: &str, name: &str) -> String {
    let ir = emitted(file, "ir");
    let kernel = part(&ir, &format!("kernel {name}(")).to_string();
    assert!(
        kernel
            .lines()
            .next()
            .unwrap()
            .ends_with(" cluster 2x1x1 pads"),
        "{kernel}"
    );
    assert_eq!(kernel.matches(" multicast 2").count(), 1, "{kernel}");
    kernel
}

/// On a cluster of two blocks along M, B's k-tiles (the same for both)
/// are multicast, each block issuing one half; A's stay per block. The
/// empty barriers count a warp's release from each block; a warp's lanes
/// 0 and 1 release ranks 0 and 1; the cluster meets after the barriers
/// are initialised and before the blocks leave; a launch without the
/// cluster traps; the epilogue runs below the grid's extent (not in pad
/// blocks, which a grid of M / 128 blocks along the cluster may need);
/// the manifest asks for the cluster. Without `cluster`, nothing of it.
#[test]
fn a_cluster_multicasts_the_boxes_its_blocks_share() {
    let kernel = padded_cluster_ir("tests/run/tma_multicast.tile", "tma_multicast");
    // The pad blocks past the grid skip the epilogue.
    assert!(kernel.contains("\n  }\n  if %"), "{kernel}");
    let ptx = emitted("tests/run/tma_multicast.tile", "ptx");
    let entry = part(&ptx, ".entry tma_multicast(");
    let at = |needle: &str| position(entry, needle);
    assert!(at("%cluster_nctaid.z") < at("trap;"));
    assert!(at("fence.mbarrier_init.release.cluster;") < at("barrier.cluster.arrive;"));
    assert_eq!(entry.matches("barrier.cluster.wait;").count(), 2);
    assert_eq!(entry.matches(".multicast::cluster").count(), 1);
    assert!(at("%cluster_ctarank") < at(".multicast::cluster"));
    assert!(at("mov.u32 l, %laneid;") < at("mapa.shared::cluster.u32 r, "));
    assert!(entry.contains("@q mbarrier.arrive.shared::cluster.b64 _, [r];"));
    // Four stages, each an empty barrier of 8 warps x 2 blocks.
    assert!(
        entry
            .lines()
            .any(|l| l.trim_start().starts_with("mov.b32") && l.ends_with(", 16;")),
        "{entry}"
    );
    let m = manifest_of("tests/run/tma_multicast.tile");
    assert!(m.variants.iter().all(|v| v.cluster == [2, 1, 1]));
    let plain = emitted("examples/bgemm_tn_sm90_tma.tile", "ptx");
    for needle in ["cluster_nctaid", "multicast", "mapa", "barrier.cluster"] {
        assert!(!plain.contains(needle), "{needle}");
    }
    let perf = perf_notes("tests/run/tma_multicast.tile");
    assert!(
        perf.contains("shared by the 2 blocks of the cluster"),
        "{perf}"
    );
    assert!(
        perf.contains("each block of the cluster loads its own"),
        "{perf}"
    );
}

/// Split-K on clusters along M, the slices along block.z: B's boxes are
/// multicast, the grid may be padded, and the reduce across block.z lies
/// inside the test that keeps the pad blocks out (`if block.x < extent`
/// after the pipeline), so that no pad block joins a group; in the PTX the
/// arrival's atomic follows the multicast.
#[test]
fn split_k_on_clusters_reduces_where_no_pad_block_runs() {
    let kernel = padded_cluster_ir("tests/run/split_k_cluster.tile", "split_k_cluster");
    let pipeline_end = kernel.find("\n  }\n").expect("the pipeline");
    let test = pipeline_end
        + kernel[pipeline_end..]
            .find("\n  if %")
            .expect("the grid's test");
    let reduce = kernel.find("reduce_blocks").expect("a reduce");
    assert!(test < reduce, "{kernel}");
    assert!(kernel[reduce..].contains("across block.z"), "{kernel}");
    let ptx = emitted("tests/run/split_k_cluster.tile", "ptx");
    let entry = part(&ptx, ".entry split_k_cluster(");
    assert!(
        position(entry, ".multicast::cluster") < position(entry, "atom.relaxed.gpu.global.inc.u32")
    );
}

/// A persistent kernel on a grid of whole clusters (`grid(2, n),
/// cluster(2, 1)`): no pad blocks, so the IR's header says nothing of them
/// and the epilogue writes C in the pipeline's body; B's boxes are
/// multicast, A's each block's own; and since the body reads the stages
/// through wgmma alone (its ldmatrix reads the buffers of C), a warp's
/// release to a peer's barrier has the default semantics, not
/// `.release.cluster`, which a body that reads a stage otherwise keeps.
#[test]
fn a_grid_of_whole_clusters_writes_in_the_body_and_releases_stages_unfenced() {
    let ir = emitted("tests/run/persistent_cluster.tile", "ir");
    let kernel = part(&ir, "kernel persistent_cluster(");
    assert!(
        kernel.lines().next().unwrap().ends_with(" cluster 2x1x1"),
        "{kernel}"
    );
    assert_eq!(kernel.matches(" multicast 2").count(), 1, "{kernel}");
    let ptx = emitted("tests/run/persistent_cluster.tile", "ptx");
    let entry = part(&ptx, ".entry persistent_cluster(");
    assert!(entry.contains("@q mbarrier.arrive.shared::cluster.b64 _, [r];"));
    assert!(
        !entry.contains("mbarrier.arrive.release.cluster"),
        "{entry}"
    );
    assert!(entry.contains("stmatrix") && entry.contains("ldmatrix"));
    let src = std::fs::read_to_string(root().join("tests/run/persistent_cluster.tile")).unwrap();
    let dir = std::env::temp_dir().join(format!("tilec-cluster-release-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The same kernel with a stage read by a plain copy in its body.
    let f = dir.join("k.tile");
    std::fs::write(
        &f,
        src.replace(
            "        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);\n",
            "        gemm(mma, tCsA[_, _, _, s], tCsB[_, _, _, s], tCrC);\n        sD[thread.x % 128, thread.x / 128] = smA[thread.x % 128, 0, s];\n",
        ),
    )
    .unwrap();
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        ptx.contains("@q mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r];"),
        "{ptx}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A cluster entry runs on whole clusters: the full-tile launch keeps
/// whole clusters of full blocks, the edges' is padded past the grid with
/// blocks whose accesses are all guarded (the bound check passes them).
#[test]
fn cluster_launches_run_whole_clusters() {
    let m = manifest_of("tests/run/tma_multicast.tile");
    let launches = |dims: &str| -> Vec<([u32; 3], [u32; 3])> {
        plan(&m, &Dims::parse(dims).unwrap())
            .unwrap()
            .launches
            .iter()
            .map(|l| (l.grid, l.offset))
            .collect()
    };
    // Three M tiles: two full in a cluster, the third with a pad block.
    assert_eq!(
        launches("M=384,N=256,K=128"),
        [([2, 1, 1], [0; 3]), ([2, 1, 1], [2, 0, 0])]
    );
    // Five, the last partial: four full, then the partial one and a pad.
    assert_eq!(
        launches("M=600,N=512,K=64"),
        [([4, 2, 1], [0; 3]), ([2, 2, 1], [4, 0, 0])]
    );
    // One block: no whole cluster of full ones.
    assert_eq!(launches("M=128,N=256,K=64"), [([2, 1, 1], [0; 3])]);
    // The same kernel on a grid of whole clusters (two blocks along M,
    // M at most 256) is compiled without pad blocks: its boxes stay whole
    // clusters (the full one rounded down to them), and where a box would
    // need a pad block (here a full-tile entry made to run without the
    // cluster, so that its box ends inside one) the launch is refused.
    let src = std::fs::read_to_string(root().join("tests/run/tma_multicast.tile")).unwrap();
    let dir = std::env::temp_dir().join(format!("tilec-whole-clusters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("tma_multicast.tile");
    let grid = "launch grid(ceil_div(M, 128), ceil_div(N, 256))";
    assert!(src.contains(grid));
    std::fs::write(&f, src.replace(grid, "launch grid(2, ceil_div(N, 256))")).unwrap();
    let whole = manifest_of(f.to_str().unwrap());
    assert!(
        whole
            .variants
            .iter()
            .all(|v| v.cluster == [2, 1, 1] && !v.pads)
    );
    assert!(m.variants.iter().all(|v| v.pads));
    let boxes = |m: &tilec_runtime::manifest::Manifest, dims: &str| {
        plan(m, &Dims::parse(dims).unwrap()).map(|p| {
            p.launches
                .iter()
                .map(|l| (l.grid, l.offset))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        boxes(&whole, "M=256,N=512,K=64").unwrap(),
        [([2, 2, 1], [0; 3])]
    );
    assert_eq!(
        boxes(&whole, "M=256,N=76900,K=64").unwrap(),
        [([2, 300, 1], [0; 3]), ([2, 1, 1], [0, 300, 0])]
    );
    let mut mixed = whole.clone();
    mixed.variants[0].cluster = [1, 1, 1];
    let err = boxes(&mixed, "M=200,N=76800,K=64").expect_err("a launch that needs pad blocks");
    assert!(err.to_string().contains("with no pad blocks"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
