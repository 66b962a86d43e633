//! Which integer values are never negative, for the back end's choice of
//! unsigned division and remainder (a shift or a mask by a power of two)
//! where they give the CPU executor's signed values, and signed ones
//! elsewhere (`(block.x - 1) / 2` in block 0 is 0 on both).
//!
//! In: a kernel's IR. Out: per value, whether it is proved not negative,
//! from a lower bound of each value: indices 0, extents 1 (the runtime
//! refuses less), a loop counter its start's, and sums, products,
//! quotients, remainders, minima and maxima of bounded values; a
//! difference by a constant or a loop counter less its start. Other
//! differences have no bound.

use super::{Inst, InstKind, IntDef, IntOp, KernelIr};
use std::collections::HashMap;

impl KernelIr {
    pub fn non_negative(&self) -> Vec<bool> {
        self.lower_bounds()
            .into_iter()
            .map(|lo| lo.is_some_and(|lo| lo >= 0))
            .collect()
    }

    /// A lower bound of each value, where one is known.
    fn lower_bounds(&self) -> Vec<Option<i64>> {
        let mut starts = HashMap::new();
        loop_starts(&self.body, &mut starts);
        let mut lo: Vec<Option<i64>> = vec![None; self.ints.len()];
        // Values may name later ones (a loop counter its start): repeat
        // until nothing new is bounded; a bound, once found, is final.
        loop {
            let mut changed = false;
            for (i, v) in self.ints.iter().enumerate() {
                if lo[i].is_some() {
                    continue;
                }
                let bound = match &v.def {
                    IntDef::Const(c) => Some(*c),
                    IntDef::ThreadIdx
                    | IntDef::BlockIdx(_)
                    | IntDef::Below(..)
                    | IntDef::Compare(..) => Some(0),
                    IntDef::Extent(_) => Some(1),
                    IntDef::LoopVar(l) => starts.get(l).and_then(|&s| lo[s]),
                    // An XOR of bits below the highest of a value not negative.
                    IntDef::Swizzle(a, _) => lo[*a].filter(|&a| a >= 0).map(|_| 0),
                    IntDef::Bin(op, a, b) => {
                        let (x, y) = (lo[*a], lo[*b]);
                        let both = x.zip(y).filter(|&(x, y)| x >= 0 && y >= 0);
                        match op {
                            IntOp::Add => x.zip(y).and_then(|(x, y)| x.checked_add(y)),
                            IntOp::Sub => match (&self.ints[*a].def, &self.ints[*b].def) {
                                // A loop counter less its start: the iteration.
                                (IntDef::LoopVar(l), _) if starts.get(l) == Some(b) => Some(0),
                                // `x - x % d`: the multiple of d at or below x.
                                (_, IntDef::Bin(IntOp::Mod, m, _)) if m == a => {
                                    x.filter(|&x| x >= 0).map(|_| 0)
                                }
                                (_, IntDef::Const(c)) => x.and_then(|x| x.checked_sub(*c)),
                                _ => None,
                            },
                            IntOp::Mul => both.and_then(|(x, y)| x.checked_mul(y)),
                            IntOp::Div | IntOp::CeilDiv | IntOp::Mod => both.map(|_| 0),
                            IntOp::Min => x.zip(y).map(|(x, y)| x.min(y)),
                            IntOp::Max => match (x, y) {
                                (Some(x), Some(y)) => Some(x.max(y)),
                                (one, other) => one.or(other),
                            },
                        }
                    }
                };
                if bound.is_some() {
                    lo[i] = bound;
                    changed = true;
                }
            }
            if !changed {
                return lo;
            }
        }
    }
}

/// Each loop's and pipeline's first counter value, by loop id.
fn loop_starts(insts: &[Inst], out: &mut HashMap<usize, usize>) {
    for inst in insts {
        if let InstKind::Loop { id, start, .. } | InstKind::Pipeline { id, start, .. } = &inst.kind
        {
            out.insert(*id, *start);
        }
        if let InstKind::Pipeline { turn: Some(t), .. } = &inst.kind {
            out.insert(t.id, t.start);
        }
        for body in inst.kind.bodies() {
            loop_starts(body, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::parse::parse;

    /// Whether the last value of `lines` (after `%1 = block.x`, `%2 =
    /// thread.x`, `%3 = extent M`) is proved not negative.
    fn last_not_negative(lines: &str) -> bool {
        let ir = parse(&format!(
            "kernel k(A: global f32*, M: i64) block 32\n  %1 = block.x\n  %2 = thread.x\n  %3 = extent M\n{lines}"
        ))
        .unwrap();
        *ir.non_negative().last().unwrap()
    }

    #[test]
    fn differences_are_not_negative_only_where_proved() {
        // block.x - 1 is -1 in block 0, and so its half is signed.
        assert!(!last_not_negative("  %4 = sub %1, 1\n"));
        assert!(!last_not_negative("  %4 = sub %1, 1\n  %5 = div %4, 2\n"));
        assert!(!last_not_negative("  %4 = sub %3, %1\n"));
        assert!(!last_not_negative("  %4 = sub %3, %1\n  %5 = min %4, %2\n"));
        // thread.x + 3 - 1, x - x % 32, max(M - block.x, 0), M / 32.
        assert!(last_not_negative("  %4 = add %2, 3\n  %5 = sub %4, 1\n"));
        assert!(last_not_negative("  %4 = rem %1, 32\n  %5 = sub %1, %4\n"));
        assert!(last_not_negative("  %4 = sub %3, %1\n  %5 = max %4, 0\n"));
        assert!(last_not_negative("  %4 = div %3, 32\n"));
    }
}
