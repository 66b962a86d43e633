//! A pipeline's turns in the IR and the PTX: each consumer warpgroup takes
//! its turns in rotation, waits for the turn before its own to have seen
//! its trips land (a parity wait cannot tell a phase from the one two
//! later), releases the stages of its own trips (128 arrivals a stage),
//! and closes each turn with the wait for its last wgmma group, the release
//! of its last stage, then `after`.

use super::*;

#[test]
fn turns_wait_in_order_and_release_their_own_stages() {
    let ir = emitted("tests/run/pingpong_gemm.tile", "ir");
    let kernel = part(&ir, "kernel pingpong_gemm(");
    assert!(
        kernel.contains(" lag 1 turn ") && kernel.contains(" groups 2 {"),
        "{kernel}"
    );
    assert!(
        kernel.contains("  } after {\n    wgmma.wait 0\n"),
        "{kernel}"
    );
    let ptx = emitted("tests/run/pingpong_gemm.tile", "ptx");
    let entry = part(&ptx, ".entry pingpong_gemm(");
    let entry = &entry[..entry
        .find(".entry pingpong_gemm_guarded(")
        .unwrap_or(entry.len())];
    // The warpgroup as lane 0 has it; three parity waits: the producer's
    // for a free stage, a turn's for the turn before it, a trip's for its
    // stage; one unpredicated arrival (for the next turn) beside the
    // predicated late releases (in the trips, and at the turn's end).
    assert_eq!(entry.matches("shfl.sync.idx.b32").count(), 1, "{entry}");
    assert_eq!(
        entry.matches("mbarrier.try_wait.parity").count(),
        3,
        "{entry}"
    );
    assert_eq!(
        entry
            .matches("\tmbarrier.arrive.shared::cta.b64 _,")
            .count(),
        1,
        "{entry}"
    );
    assert_eq!(
        entry
            .matches("@p mbarrier.arrive.shared::cta.b64 _,")
            .count(),
        2,
        "{entry}"
    );
    for wait in ["1", "0"] {
        let w = format!("wgmma.wait_group.sync.aligned {wait};");
        assert_eq!(entry.matches(&w).count(), 1, "{entry}");
    }
    let perf = perf_notes("tests/run/pingpong_gemm.tile");
    assert!(
        perf.contains("turns on 2 consumer warpgroup(s) in rotation"),
        "{perf}"
    );
}
