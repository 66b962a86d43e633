//! Control flow on the CPU: loops (each thread its own trip count, run
//! together, a thread sitting out the iterations it does not have), ifs
//! (each branch on the threads that take it), the integer values of each
//! scope, and the checks that a group issues its instructions together.

use super::{Block, ExecError, Result};
use crate::ir::{Inst, IntDef};
use crate::span::Span;
use tilec_layout::NARROW_MAX;
use tilec_layout::int::{Op, apply};

impl<'a> Block<'a> {
    /// Computes, for every thread, the integer values of `scope`. One
    /// that is undefined (a quotient by zero, an overflow), or computed
    /// from one, is marked so: an error where a thread runs an
    /// instruction that uses it ([`Self::defined_for`]), as the GPU
    /// computes it where it is used.
    pub(super) fn scope_ints(&mut self, scope: Option<usize>) {
        for t in 0..self.threads {
            for (id, v) in self.ir.ints.iter().enumerate() {
                if v.scope != scope {
                    continue;
                }
                let ints = &self.ints[t];
                let value = match &v.def {
                    IntDef::Const(c) => Some(*c),
                    IntDef::ThreadIdx => Some(t as i64),
                    IntDef::BlockIdx(d) => Some(self.block[*d as usize] as i64),
                    IntDef::Extent(e) => self.launch.extents.get(*e).copied(),
                    IntDef::LoopVar(l) => self.counters.get(l).copied(),
                    IntDef::Bin(op, a, b) if v.narrow => narrowed(*op, ints[*a], ints[*b]),
                    IntDef::Bin(op, a, b) => apply(*op, ints[*a], ints[*b]),
                    IntDef::Below(a, b) => Some(i64::from((0..ints[*b]).contains(&ints[*a]))),
                    IntDef::Swizzle(a, sw) => Some(sw.apply(ints[*a])),
                    IntDef::Compare(op, a, b) => Some(i64::from(op.compare(ints[*a], ints[*b]))),
                };
                let from_undefined = self.undefined.count > 0
                    && v.def
                        .operands()
                        .into_iter()
                        .flatten()
                        .any(|a| self.undefined.is(t, a));
                if let Some(value) = value {
                    self.ints[t][id] = value;
                }
                self.undefined.set(t, id, value.is_none() || from_undefined);
            }
        }
    }

    /// Whether every value `inst` itself uses is defined in each thread
    /// running it (the instructions nested in it check theirs as they run).
    pub(super) fn defined_for(&self, inst: &Inst) -> Result<()> {
        if self.undefined.count == 0 {
            return Ok(());
        }
        let mut used = Vec::new();
        inst.ints_own(&mut used);
        let Some((t, id)) = (0..self.threads).filter(|&t| self.active[t]).find_map(|t| {
            used.iter()
                .find(|&&id| self.undefined.is(t, id))
                .map(|&id| (t, id))
        }) else {
            return Ok(());
        };
        Err(ExecError {
            message: match self.ir.ints[id].narrow {
                true => format!(
                    "integer %{id} is undefined in thread {t}: a quotient by zero, or one the entry computes in 32 bits (`div.i32`) of operands past them"
                ),
                false => format!(
                    "integer %{id} is undefined in thread {t}: a quotient by zero or a value past 64 bits"
                ),
            },
            span: inst.span,
            label: "used here".into(),
            other: None,
            help: Some(
                "`--emit ir` shows how %N is computed; a quotient whose divisor may be 0 belongs under an `if` that excludes it",
            ),
        })
    }

    /// `then` on the running threads where `cond` is not 0, `otherwise` on
    /// the others.
    pub(super) fn branch(&mut self, cond: usize, [then, otherwise]: [&'a [Inst]; 2]) -> Result<()> {
        let outer = self.active.clone();
        for (insts, taken) in [(then, true), (otherwise, false)] {
            self.active = (0..self.threads)
                .map(|t| outer[t] && (self.ints[t][cond] != 0) == taken)
                .collect();
            if self.active.contains(&true) {
                self.insts(insts)?;
            }
        }
        self.active = outer;
        Ok(())
    }

    /// `for` over `[start, end)`, which may differ between threads: the
    /// iterations from the lowest start to the highest end, each on the
    /// threads whose own range holds it.
    pub(super) fn loop_(
        &mut self,
        id: usize,
        [start, end]: [usize; 2],
        body: &'a [Inst],
        span: Span,
    ) -> Result<()> {
        let outer = self.active.clone();
        let running: Vec<usize> = (0..self.threads).filter(|&t| outer[t]).collect();
        let lo = running.iter().map(|&t| self.ints[t][start]).min();
        let hi = running.iter().map(|&t| self.ints[t][end]).max();
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(());
        };
        for k in lo..hi {
            self.active = (0..self.threads)
                .map(|t| outer[t] && (self.ints[t][start]..self.ints[t][end]).contains(&k))
                .collect();
            self.counters.insert(id, k);
            self.stopped(span)?;
            self.scope_ints(Some(id));
            self.insts(body)?;
        }
        self.active = outer;
        Ok(())
    }

    /// Whether the `lanes` threads from `first` run the instruction at
    /// hand that they issue together: all of them, or none (an error if
    /// they disagree).
    pub(super) fn group_runs(&self, first: usize, lanes: usize, span: Span) -> Result<bool> {
        let group = &self.active[first..(first + lanes).min(self.threads)];
        match group.iter().position(|a| !a) {
            None => Ok(true),
            Some(_) if !group.contains(&true) => Ok(false),
            Some(i) => Err(self.err(
                first + i,
                span,
                format!("sits out an instruction the other threads of its {lanes}-thread group issue together"),
            )),
        }
    }

    /// A value every running thread agrees on (loop bounds), or an error.
    pub(super) fn uniform(&self, id: usize, span: Span, what: &str) -> Result<i64> {
        let running = || (0..self.threads).filter(|&t| self.active[t]);
        let v = running().next().map_or(0, |t| self.ints[t][id]);
        if running().any(|t| self.ints[t][id] != v) {
            return Err(ExecError {
                message: format!("{what} between the threads of a block"),
                span,
                label: "here".into(),
                other: None,
                help: None,
            });
        }
        Ok(v)
    }

    /// A barrier: every thread of the block reaches it, and what they did
    /// before it happens before what any does after. In a pipeline's turn,
    /// the turn's warpgroup's threads alone, and what they did before it
    /// happens before what they do after.
    pub(super) fn meet(&mut self, span: Span) -> Result<()> {
        if self.in_turns {
            let first = self.active.iter().position(|a| *a).unwrap_or(0);
            let group = super::warpgroup(first);
            let whole = (0..self.threads)
                .filter(|&t| super::warpgroup(t) == group)
                .find(|&t| !self.active[t]);
            if let Some(t) = whole {
                return Err(self.err(
                    t,
                    span,
                    "does not reach a barrier the other threads of its warpgroup wait at in their turn".into(),
                ));
            }
            self.turn_barriers[group] += 1;
            return Ok(());
        }
        if let Some(t) = self.active.iter().position(|a| !a) {
            return Err(self.err(
                t,
                span,
                "does not reach a barrier the block's other threads wait at".into(),
            ));
        }
        self.epoch += 1;
        Ok(())
    }
}

/// `a op b` as an entry computes it in 32 bits: undefined where the
/// divisor or the dividend it divides (for a rounded-up quotient,
/// `a + b - 1`, computed in 64 bits first) is past them, which the
/// runtime's launch proof rules out.
fn narrowed(op: Op, a: i64, b: i64) -> Option<i64> {
    let dividend = match op {
        Op::CeilDiv => a.checked_add(b)?.checked_sub(1)?,
        _ => a,
    };
    let fits = |x: i64| (-NARROW_MAX..=NARROW_MAX).contains(&x);
    (fits(b) && fits(dividend))
        .then(|| apply(op, a, b))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quotient_in_32_bits_is_defined_only_within_them() {
        let most = NARROW_MAX;
        assert_eq!(narrowed(Op::Div, most, 7), Some(most / 7));
        assert_eq!(narrowed(Op::Mod, -most, 7), Some(-most % 7));
        assert_eq!(narrowed(Op::Div, most + 1, 7), None);
        assert_eq!(narrowed(Op::Div, 7, -most - 1), None);
        assert_eq!(narrowed(Op::Div, i64::MIN, 7), None);
        assert_eq!(narrowed(Op::Div, 7, 0), None);
        // A quotient rounded up divides `a + b - 1`, which must fit, and
        // only it (`a` may pass 32 bits where a negative `b` brings it back).
        assert_eq!(narrowed(Op::CeilDiv, most - 6, 7), Some(most / 7));
        assert_eq!(narrowed(Op::CeilDiv, most - 5, 7), None);
        assert_eq!(narrowed(Op::CeilDiv, most + 3, -3), Some((most - 1) / -3));
    }
}
