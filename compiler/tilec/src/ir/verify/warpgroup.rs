//! The verifier's rules for Hopper's warpgroup MMA: the asynchronous
//! protocol of each instruction list (fence, wgmmas, commit, wait) and a
//! wgmma's register operands (accumulators, an `_RS` atom's A).

use super::fragment;
use crate::ir::{Fragment, Inst, InstKind, KernelIr, one_wgmma_group};

/// wgmma's protocol, as lowering places it: in each instruction list,
/// wgmmas stand between a fence and a commit, and the commit is followed by
/// a wait for all groups before anything else, so nothing touches an
/// accumulator in flight (ptxas would serialize the wgmmas, or read stale
/// registers) and no group outlives its list. Two exceptions make one
/// group in flight across a lagged pipeline's trips (`lag` 1 is the list's
/// own): that body is one group and nothing else, ending in a wait for all
/// but it; and a lagged pipeline leaves its last group in flight, so a
/// wait for all follows it (with turns, heads each turn's `after`).
pub(super) fn wgmma_windows(body: &[Inst], lag: u32) -> Result<(), String> {
    if lag == 1 {
        // Anything beside the group would run beside the last trip's.
        return match (one_wgmma_group(body, 1), one_wgmma_group(body, 0)) {
            (true, _) => Ok(()),
            (false, true) => Err(
                "wgmma protocol: a lagged pipeline's body ends in a wait for all but its group (wait 1)"
                    .into(),
            ),
            (false, false) => {
                Err("wgmma protocol: a lagged pipeline's body is one wgmma group".into())
            }
        };
    }
    #[derive(PartialEq)]
    enum State {
        Outside,
        Issuing,
        Committed,
    }
    let mut state = State::Outside;
    for inst in body {
        state = match (&inst.kind, state) {
            (InstKind::WgmmaFence, State::Outside) => State::Issuing,
            (InstKind::Wgmma { .. }, State::Issuing) => State::Issuing,
            (InstKind::WgmmaCommit, State::Issuing) => State::Committed,
            (InstKind::WgmmaWait(0), State::Committed) => State::Outside,
            // A turn's last group is waited for in its `after`.
            (
                InstKind::Pipeline {
                    lag, turn: None, ..
                },
                State::Outside,
            ) if *lag > 0 => State::Committed,
            (_, State::Outside)
                if !matches!(
                    inst.kind,
                    InstKind::Wgmma { .. } | InstKind::WgmmaCommit | InstKind::WgmmaWait(_)
                ) =>
            {
                State::Outside
            }
            (kind, _) => {
                return Err(format!(
                    "wgmma protocol: {} out of place (fence, wgmmas, commit, wait 0)",
                    match kind {
                        InstKind::Wgmma { .. } => "a wgmma",
                        InstKind::WgmmaFence => "a fence",
                        InstKind::WgmmaCommit => "a commit",
                        InstKind::WgmmaWait(_) => "a wait",
                        _ => "an instruction",
                    }
                ));
            }
        };
    }
    if state != State::Outside {
        return Err("wgmma protocol: a group is not waited for".into());
    }
    Ok(())
}

/// A wgmma's register operand: its accumulators (`C`) or an `_RS` atom's
/// A, of the atom's size and element type.
pub(super) fn wgmma_fragment(
    ir: &KernelIr,
    atom: &tilec_layout::MmaAtom,
    f: &Fragment,
    op: tilec_layout::Operand,
) -> Result<(), String> {
    fragment(ir, f, atom.values(op))?;
    let (want, role) = match op {
        tilec_layout::Operand::C => (atom.c, "accumulates into"),
        _ => (atom.ab, "reads A from"),
    };
    let have = ir.registers[f.array].elem;
    match have == want {
        true => Ok(()),
        false => Err(format!(
            "{} {role} r{} of {have}",
            atom.full_name(),
            f.array
        )),
    }
}
