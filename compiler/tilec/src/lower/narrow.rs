//! Quotients in 32 bits. In: a lowered entry's IR and its loops' names in
//! the runtime's terms. Out: the IR with each quotient and remainder by a
//! run-time divisor marked [`IntValue::narrow`] where its operands are
//! integers the runtime can bound (of `thread.x`, `block.*`, loop
//! counters, extents and constants), and those operands, which the
//! runtime bounds within 32 bits before it launches the entry; where it
//! cannot, it launches a later entry (the kernel's last divides in 64 bits).
//!
//! Why: a 64-bit division by a run-time value is a subroutine call in
//! SASS, whose calling convention takes registers that a main loop then
//! spills (TN stream-K's walk: 108 bytes of spills at 4096^3, none with
//! its divisions in 32 bits, 0.789 -> 0.838 of cuBLAS; docs/performance.md,
//! version 52). A division by a constant is a multiplication already.

use crate::ir::{IntDef, IntValue, KernelIr};
use tilec_layout::int::{Op, bin};
use tilec_layout::{Builtin, Int};

/// A quotient an entry computes in 32 bits: its dividend (for a quotient
/// rounded up, `a + b - 1`) and divisor, symbolic in the names of the
/// runtime's bound proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NarrowedDivision {
    pub dividend: Int,
    pub divisor: Int,
}

/// Marks the quotients of `ir` to compute in 32 bits and returns what the
/// runtime must bound for them; `counter` names loop `l`'s counter as the
/// runtime's loops do.
pub(super) fn narrow(
    ir: &mut KernelIr,
    counter: &dyn Fn(usize) -> String,
) -> Vec<NarrowedDivision> {
    let terms = runtime_terms(ir, counter);
    let mut out = Vec::new();
    for id in 0..ir.ints.len() {
        let IntDef::Bin(op @ (Op::Div | Op::CeilDiv | Op::Mod), a, d) = ir.ints[id].def else {
            continue;
        };
        if matches!(ir.ints[d].def, IntDef::Const(_)) {
            continue;
        }
        let (Some(x), Some(y)) = (&terms[a], &terms[d]) else {
            continue;
        };
        let dividend = match op {
            Op::CeilDiv => bin(Op::Sub, &bin(Op::Add, x, y), &Int::Static(1)),
            _ => x.clone(),
        };
        ir.ints[id].narrow = true;
        let n = NarrowedDivision {
            dividend,
            divisor: y.clone(),
        };
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Undoes [`narrow`]: an entry the runtime has nothing to fall back from.
pub(super) fn widen(ints: &mut [IntValue]) {
    ints.iter_mut().for_each(|v| v.narrow = false);
}

/// The most nodes of an operand the runtime bounds (shared values counted
/// once a use: it evaluates a tree); a tile walk's take a few dozen.
const MAX_NODES: usize = 256;

/// Each value of `ir` as a symbolic integer in the runtime's names, where
/// it is one of at most [`MAX_NODES`] nodes.
fn runtime_terms(ir: &KernelIr, counter: &dyn Fn(usize) -> String) -> Vec<Option<Int>> {
    let mut terms: Vec<Option<(Int, usize)>> = Vec::with_capacity(ir.ints.len());
    for v in &ir.ints {
        let leaf = |name: &str| Some((Int::var(name), 1));
        let term = match &v.def {
            IntDef::Const(c) => Some((Int::Static(*c), 1)),
            IntDef::ThreadIdx => leaf(Builtin::Thread.name()),
            IntDef::BlockIdx(d) => leaf(Builtin::Block(*d).name()),
            IntDef::Extent(e) => leaf(&ir.extents[*e]),
            IntDef::LoopVar(l) => leaf(&counter(*l)),
            IntDef::Bin(op, a, b) => match (&terms[*a], &terms[*b]) {
                (Some((x, n)), Some((y, m))) if n + m < MAX_NODES => {
                    Some((bin(*op, x, y), n + m + 1))
                }
                _ => None,
            },
            // Guards, swizzles and comparisons: not in the runtime's terms.
            IntDef::Below(..) | IntDef::Swizzle(..) | IntDef::Compare(..) => None,
        };
        terms.push(term);
    }
    terms.into_iter().map(|t| t.map(|t| t.0)).collect()
}
