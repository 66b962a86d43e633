//! wgmma's groups in the PTX: sm_90a alone, each gemm one fenced,
//! committed group waited for (gemms in a row one group), and a lone
//! group kept in flight across k-tiles.

use super::*;

/// wgmma exists on sm_90a alone: `--arch sm_90` builds an sm_90a module
/// for a kernel that uses it; another arch is refused at the gemm.
#[test]
fn wgmma_targets_sm_90a_and_other_arches_are_refused() {
    let f = root().join("examples/bgemm_tn_sm90.tile");
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    assert!(ptx.contains(".target sm_90a"), "{ptx}");
    // Four k-blocks of m64n128k16 per gemm, in each of the two entries
    // (full, guarded with vectors), each group fenced, committed and
    // waited for.
    assert_eq!(
        ptx.matches("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")
            .count(),
        8
    );
    assert_eq!(ptx.matches("wgmma.fence.sync.aligned").count(), 2);
    assert_eq!(ptx.matches("wgmma.commit_group.sync.aligned").count(), 2);
    assert_eq!(ptx.matches("wgmma.wait_group.sync.aligned 0").count(), 2);
    // The group's accumulators (64 f32s a thread here) are tied through an
    // empty statement just after the wait, so that no use of them can
    // move above it, and a copy LLVM makes of one reads it after the wait.
    let tie = tie_after_the_wait(&f);
    assert!(tie.contains("asm sideeffect \"\", \"=f,"), "{tie}");
    assert_eq!(tie.matches("=f,").count(), 64, "{tie}");
    for arch in ["sm_80", "sm_89"] {
        let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", arch]);
        assert_eq!(code, 1);
        assert!(
            err.contains("only sm_90a") && err.contains(arch) && err.contains("gemm(mma,"),
            "{err}"
        );
    }
    // Past what LLVM 19's PTX reaches: refused before anything is built.
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_100"]);
    assert_eq!(code, 2);
    assert!(err.contains("tilec writes PTX for sm_60"), "{err}");
}

/// A pipeline of one consumer warpgroup whose body is one wgmma group
/// keeps it in flight into the next k-tile (`wait_group 1`), hands each
/// stage back one trip late, and waits for the last group after the loop;
/// two consumer warpgroups, or a body that also touches the accumulators
/// (persistent_gemm's epilogue under an `if`), wait in each trip.
#[test]
fn a_lone_wgmma_group_stays_in_flight_across_k_tiles() {
    let ir = emitted("tests/run/tma_pipeline.tile", "ir");
    let kernel = part(&ir, "kernel tma_pipeline(");
    assert!(kernel.contains(" lag 1 {"), "{kernel}");
    let ptx = emitted("tests/run/tma_pipeline.tile", "ptx");
    let entry = part(&ptx, ".entry tma_pipeline(");
    let at = |needle: &str| position(entry, needle);
    let (one, release, all) = (
        at("wgmma.wait_group.sync.aligned 1;"),
        at("@p mbarrier.arrive.shared::cta.b64 _,"),
        at("wgmma.wait_group.sync.aligned 0;"),
    );
    assert!(
        one < release && release < all,
        "wait 1, the late release, then wait 0"
    );
    assert_eq!(entry.matches("wgmma.wait_group").count(), 2);
    assert!(!emitted("examples/bgemm_tn_sm90_tma.tile", "ir").contains(" lag "));
    let perf = perf_notes("tests/run/tma_pipeline.tile");
    assert!(
        perf.contains("one wgmma group in flight across iterations"),
        "{perf}"
    );
    let persistent = emitted("tests/run/persistent_gemm.tile", "ptx");
    assert!(!persistent.contains("wgmma.wait_group.sync.aligned 1;"));
    assert!(!emitted("tests/run/persistent_gemm.tile", "ir").contains(" lag "));
    // A prefetch into L2 before the group touches neither registers nor
    // shared memory: the turn's group stays in flight.
    let prefetching = emitted("tests/run/pingpong_prefetch.tile", "ir");
    assert!(
        prefetching.contains(" lag 1 turn ") && prefetching.contains("-> L2"),
        "{prefetching}"
    );
}

/// The LLVM IR statement just after the first wait for all wgmma groups
/// of `f`'s build: the empty statement that ties the accumulators.
fn tie_after_the_wait(f: &Path) -> String {
    let (code, llvm, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "llvm"]);
    assert_eq!(code, 0, "{err}");
    let mut lines = llvm
        .lines()
        .skip_while(|l| !l.contains("wgmma.wait_group.sync.aligned 0;"));
    assert!(lines.next().is_some(), "no wait in {llvm}");
    lines.next().unwrap_or_default().to_string()
}

/// Two gemms in a row (SwiGLU's gate and up products of one k-tile) are
/// one wgmma group: one fence, one commit and one wait, after which both
/// accumulators (64 f32s a thread each) are tied, so the tensor cores do
/// not drain between the two.
#[test]
fn consecutive_gemms_are_one_wgmma_group() {
    let f = root().join("tests/run/dual_gemm_swiglu.tile");
    let (code, ptx, err) = tilec(&["build", f.to_str().unwrap(), "--emit", "ptx"]);
    assert_eq!(code, 0, "{err}");
    // One entry runs every extent (TMA clips the edges); the reference's
    // entries have no wgmma.
    assert_eq!(ptx.matches(".entry dual_gemm_swiglu(").count(), 1);
    assert_eq!(ptx.matches("wgmma.fence.sync.aligned").count(), 1);
    assert_eq!(ptx.matches("wgmma.commit_group.sync.aligned").count(), 1);
    assert_eq!(ptx.matches("wgmma.wait_group.sync.aligned 0").count(), 1);
    let tie = tie_after_the_wait(&f);
    assert_eq!(tie.matches("=f,").count(), 128, "{tie}");
    // One consumer warpgroup: the joined group stays in flight into the
    // next k-tile (a wait for all but one ends the body).
    let (code, ptx, err) = tilec(&[
        "build",
        f.to_str().unwrap(),
        "--set",
        "wgs=1",
        "--emit",
        "ptx",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ptx.matches("wgmma.commit_group.sync.aligned").count(), 1);
    assert_eq!(ptx.matches("wgmma.wait_group.sync.aligned 1").count(), 1);
}
