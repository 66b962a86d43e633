//! `if` statements: a condition as a value of the IR, the branches lowered
//! under the range of `thread.x` the condition bounds (`if thread.x < 32`:
//! shared indices are checked, and global accesses recorded for the
//! runtime, for threads 0 to 31 only), and whether whole warps run them.

use super::{LoopRange, Lowerer};
use crate::arith::Binary;
use crate::check::program::{Predicate, Stmt};
use crate::diagnostic::Diagnostic;
use crate::ir::{Inst, IntDef, IntId};
use tilec_layout::int::{Op as IntOp, Sym};
use tilec_layout::{Builtin, Int};

impl Lowerer<'_> {
    /// An `if` condition as a value, 1 where it holds (`&&` a `min`, `||`
    /// a `max` of such values).
    pub(super) fn predicate(&mut self, p: &Predicate) -> Result<IntId, String> {
        Ok(match p {
            Predicate::Compare(op, a, b) => {
                let (a, b) = (self.int(a)?, self.int(b)?);
                self.def(IntDef::Compare(*op, a, b))
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                let (x, y) = (self.predicate(a)?, self.predicate(b)?);
                let op = match p {
                    Predicate::And(..) => IntOp::Min,
                    _ => IntOp::Max,
                };
                self.def(IntDef::Bin(op, x, y))
            }
        })
    }

    /// A branch of an if, taken where `cond` is `holds`: under the range of
    /// `thread.x` the condition bounds, for the bound checks of its
    /// accesses.
    pub(super) fn branch(
        &mut self,
        cond: &Predicate,
        holds: bool,
        stmts: &[Stmt],
    ) -> Result<Vec<Inst>, Diagnostic> {
        let before = self.caps.len();
        // A part of extents alone is one value at launch: capping it would
        // only widen its range.
        let varies = |v: &Int| {
            let mut names = Vec::new();
            v.names(&mut names);
            names
                .iter()
                .any(|n| !self.k.dims().contains(n) && !self.k.strides.iter().any(|s| &s.name == n))
        };
        let caps = caps(cond, holds)
            .into_iter()
            .filter(|(part, _)| varies(part))
            .map(|(part, capped)| (self.fix(&part), self.fix(&capped)))
            .collect::<Vec<_>>();
        self.caps.extend(caps);
        let required = self.when.len();
        let when: Vec<(Int, Int)> = requirements(cond, holds)
            .into_iter()
            .filter(|(a, b)| !(a.is_static() && b.is_static()))
            .map(|(a, b)| (self.fix(&a), self.fix(&b)))
            .collect();
        self.when.extend(when);
        let body = self.bounded_branch(cond, holds, stmts);
        self.caps.truncate(before);
        self.when.truncate(required);
        body
    }

    /// [`Lowerer::when`] as a global access records it: in the names its
    /// index takes ([`Lowerer::by_loop`]).
    pub(super) fn when_here(&self) -> Vec<(Int, Int)> {
        self.when
            .iter()
            .map(|(a, b)| (self.by_loop(a), self.by_loop(b)))
            .collect()
    }

    /// A value as the bound checks see it under the ifs around the
    /// statement: each part an if compares (`i` of `if i < M`) capped by
    /// the comparison (`min(i, M - 1)`), which where the statement runs is
    /// the same value, so that a guarded access's bound is the guard's.
    pub(super) fn capped(&self, v: &Int) -> Int {
        if self.caps.is_empty() {
            return v.clone();
        }
        // Caps of one part, from two sides (`i >= 0 && i < M`) or nested
        // ifs, compose: `min(max(i, 0), M - 1)`.
        let mut caps: Vec<(Int, Int)> = Vec::with_capacity(self.caps.len());
        for (part, cap) in &self.caps {
            match caps.iter_mut().find(|(p, _)| p.same_value(part)) {
                Some((_, before)) => *before = cap.replace_parts(&[(part.clone(), before.clone())]),
                None => caps.push((part.clone(), cap.clone())),
            }
        }
        v.replace_parts(&caps)
    }

    /// The range of `v` where the statement runs: each of the ranges of
    /// `v`, of `v` capped by all the ifs around it, and of `v` capped by
    /// each alone bounds it there, so their intersection does. A cap from
    /// below by a run-time value (`max(c, N)` under `c >= N`) reaches as
    /// far as the value may, where `c`'s own range does not; a cap of a
    /// part (`c < N`, `c = 64 j + thread.x`) hides the caps of what is
    /// inside it (`j == 0`) when all apply at once.
    /// `capped` is [`Self::capped`]`(v)`, which the caller has already.
    pub(super) fn range_here(&self, v: &Int, capped: &Int) -> Option<(i64, i64)> {
        if self.caps.is_empty() {
            return self.range_with_extents(v);
        }
        let alone = self
            .caps
            .iter()
            .map(|cap| v.replace_parts(std::slice::from_ref(cap)));
        [v.clone(), capped.clone()]
            .into_iter()
            .chain(alone)
            .filter_map(|c| self.range_with_extents(&c))
            .reduce(|a, b| (a.0.max(b.0), a.1.min(b.1)))
    }

    fn bounded_branch(
        &mut self,
        cond: &Predicate,
        holds: bool,
        stmts: &[Stmt],
    ) -> Result<Vec<Inst>, Diagnostic> {
        let (lo, hi) = self.name_range(Builtin::Thread.name()).unwrap_or((0, 0));
        let Some((l, h)) = thread_bounds(cond, holds) else {
            return self.stmts(stmts);
        };
        let range = (lo.max(l), hi.min(h));
        let name = format!("{}.if{}", Builtin::Thread.name(), self.loops.len());
        self.loops.push(LoopRange {
            name: name.clone(),
            start: Int::Static(range.0),
            end: Int::Static(range.1.saturating_add(1)),
        });
        self.threads.push((name, range));
        let body = self.stmts(stmts);
        self.threads.pop();
        body
    }

    /// Whether the threads of each warp agree on every condition around
    /// the statement being lowered.
    pub(super) fn warps_agree(&self) -> bool {
        if self.under.is_empty() {
            return true;
        }
        let g = crate::ir::granules(&self.ints);
        self.under.iter().all(|&c| g[c] >= 32)
    }
}

/// The comparisons that hold where `p` is `holds` (joined by `&&` where it
/// holds, `||` where it does not; negated where it does not hold), each
/// as the operator that holds: nothing of an `||` that holds.
fn comparisons(p: &Predicate, holds: bool) -> Vec<(Binary, &Int, &Int)> {
    match (p, holds) {
        (Predicate::Compare(op, a, b), _) => {
            let op = if holds { *op } else { op.negation() };
            vec![(op, a, b)]
        }
        (Predicate::And(a, b), true) | (Predicate::Or(a, b), false) => {
            let mut v = comparisons(a, holds);
            v.extend(comparisons(b, holds));
            v
        }
        _ => Vec::new(),
    }
}

/// The parts of the values `p` compares and what they equal where `p` is
/// `holds`: `a < b` caps `a` by `min(a, b - 1)` and `b` by `max(b, a + 1)`;
/// `a == b` caps each from both sides by the other (`j == 0`: `j` is 0).
fn caps(p: &Predicate, holds: bool) -> Vec<(Int, Int)> {
    bounds(p, holds)
        .into_iter()
        .filter(|(part, ..)| !part.is_static())
        .map(|(part, upper, b)| {
            let capped = match upper {
                true => part.min(&b),
                false => part.max(&b),
            };
            (part, capped)
        })
        .collect()
}

/// The bounds `p` being `holds` puts on the parts of what it compares:
/// `(part, true, b)` for `part <= b`, `(part, false, b)` for `part >= b`.
/// Where either of two sides may hold (`||` holding, `&&` failing), a
/// part bounded alike by both is bounded by the looser of the two
/// (`i < M - 1 || i == M - 1` bounds `i` by `max(M - 2, M - 1)`), so that
/// its cap is still the part wherever one side holds; what one side alone
/// bounds is not bounded.
fn bounds(p: &Predicate, holds: bool) -> Vec<(Int, bool, Int)> {
    match (p, holds) {
        (Predicate::Compare(op, a, b), _) => {
            let op = if holds { *op } else { op.negation() };
            compare_bounds(op, a, b)
        }
        (Predicate::And(a, b), true) | (Predicate::Or(a, b), false) => {
            let mut v = bounds(a, holds);
            v.extend(bounds(b, holds));
            v
        }
        (Predicate::Or(a, b), true) | (Predicate::And(a, b), false) => {
            let (x, y) = (tightest(bounds(a, holds)), tightest(bounds(b, holds)));
            x.into_iter()
                .filter_map(|(part, upper, bx)| {
                    let (_, _, by) = y
                        .iter()
                        .find(|(q, u, _)| *u == upper && q.same_value(&part))?;
                    let looser = match upper {
                        true => bx.max(by),
                        false => bx.min(by),
                    };
                    Some((part, upper, looser))
                })
                .collect()
        }
    }
}

/// Each part's bounds of one direction joined into the tightest.
fn tightest(bounds: Vec<(Int, bool, Int)>) -> Vec<(Int, bool, Int)> {
    let mut out: Vec<(Int, bool, Int)> = Vec::new();
    for (part, upper, b) in bounds {
        match out
            .iter_mut()
            .find(|(q, u, _)| *u == upper && q.same_value(&part))
        {
            Some((_, _, before)) => {
                *before = match upper {
                    true => before.min(&b),
                    false => before.max(&b),
                }
            }
            None => out.push((part, upper, b)),
        }
    }
    out
}

/// The bounds of `a op b`: the side below capped from above (and what is
/// inside it, [`at_most`]), the side above from below.
fn compare_bounds(op: Binary, a: &Int, b: &Int) -> Vec<(Int, bool, Int)> {
    let one = Int::Static(1);
    let pairs = match op {
        Binary::Lt => vec![((a, b.sub(&one)), (b, a.add(&one)))],
        Binary::Le => vec![((a, b.clone()), (b, a.clone()))],
        Binary::Gt => vec![((b, a.sub(&one)), (a, b.add(&one)))],
        Binary::Ge => vec![((b, a.clone()), (a, b.clone()))],
        Binary::Eq => vec![
            ((a, b.clone()), (b, a.clone())),
            ((b, a.clone()), (a, b.clone())),
        ],
        _ => Vec::new(),
    };
    pairs
        .into_iter()
        .flat_map(|(below, above)| {
            let mut out = vec![(above.0.clone(), false, above.1)];
            for (part, most) in at_most(below.0, below.1) {
                out.push((part.clone(), true, most));
            }
            out
        })
        .collect()
}

/// `part <= most`, and what it says of the value inside `part` where that
/// is `x / c`, `c * x` or `x + k` (`j / 32 < 1` bounds `j` by 31, `2 * j <
/// 64` by 31, `j - 32 < 0` by 31), on down: sound for truncating division
/// by a positive constant at any sign (`x / c <= m` gives `x <= c * m + c -
/// 1`; `c * x <= m` gives `x <= m / c`, at or above the floor).
fn at_most(part: &Int, most: Int) -> Vec<(&Int, Int)> {
    let mut out = Vec::new();
    let (mut part, mut most) = (part, most);
    loop {
        out.push((part, most.clone()));
        let Int::Dynamic(sym) = part else { break };
        let Sym::Bin(op, a, b) = &**sym else { break };
        let positive = |c: &Int| c.as_static().filter(|&c| c > 0);
        (part, most) = match (op, positive(a), positive(b)) {
            (IntOp::Div, _, Some(c)) => (a, most.mul(&Int::Static(c)).add(&Int::Static(c - 1))),
            (IntOp::Mul, Some(c), _) => (b, most.div(&Int::Static(c))),
            (IntOp::Mul, _, Some(c)) => (a, most.div(&Int::Static(c))),
            (IntOp::Add, _, _) if b.is_static() => (a, most.sub(b)),
            (IntOp::Add, _, _) if a.is_static() => (b, most.sub(a)),
            (IntOp::Sub, _, _) if b.is_static() => (a, most.add(b)),
            _ => break,
        };
    }
    out
}

/// What `p` being `holds` requires, as pairs `(a, b)` for `a <= b`
/// (nothing of `!=`).
fn requirements(p: &Predicate, holds: bool) -> Vec<(Int, Int)> {
    let one = Int::Static(1);
    comparisons(p, holds)
        .into_iter()
        .flat_map(|(op, a, b)| match op {
            Binary::Lt => vec![(a.clone(), b.sub(&one))],
            Binary::Le => vec![(a.clone(), b.clone())],
            Binary::Gt => vec![(b.clone(), a.sub(&one))],
            Binary::Ge => vec![(b.clone(), a.clone())],
            Binary::Eq => vec![(a.clone(), b.clone()), (b.clone(), a.clone())],
            _ => Vec::new(),
        })
        .collect()
}

/// The range `[lo, hi]` of `thread.x` where `p` is `holds`, when `p` bounds
/// it by comparisons with numbers (joined by `&&` where it holds, `||`
/// where it does not); `None` when it says nothing about it.
fn thread_bounds(p: &Predicate, holds: bool) -> Option<(i64, i64)> {
    comparisons(p, holds)
        .into_iter()
        .filter_map(|(op, a, b)| thread_range(op, a, b))
        .reduce(|x, y| (x.0.max(y.0), x.1.min(y.1)))
}

/// The threads where `a op b` holds, when one side is `thread.x` itself
/// (a divisor of 1) or `thread.x / c` (a warp's or a group's index) and
/// the other a number.
fn thread_range(op: Binary, a: &Int, b: &Int) -> Option<(i64, i64)> {
    let thread = Builtin::Thread.int();
    let divisor = |x: &Int| match x {
        _ if *x == thread => Some(1),
        Int::Dynamic(sym) => match &**sym {
            Sym::Bin(IntOp::Div, t, c) if *t == thread => c.as_static().filter(|&c| c > 0),
            _ => None,
        },
        Int::Static(_) => None,
    };
    let (op, c, k) = if let Some(c) = divisor(a) {
        (op, c, b.as_static()?)
    } else if let Some(c) = divisor(b) {
        (
            crate::check::kernel::predication::mirror(op),
            c,
            a.as_static()?,
        )
    } else {
        return None;
    };
    // The quotient's range, then the threads' (thread.x >= 0, so the
    // quotient rounds down: q = thread.x / c for thread.x in c q .. c q +
    // c - 1).
    let (lo, hi) = match op {
        Binary::Lt => (i64::MIN, k.checked_sub(1)?),
        Binary::Le => (i64::MIN, k),
        Binary::Gt => (k.checked_add(1)?, i64::MAX),
        Binary::Ge => (k, i64::MAX),
        Binary::Eq => (k, k),
        _ => return None,
    };
    let lo = match lo {
        i64::MIN => i64::MIN,
        q => q.max(0).checked_mul(c)?,
    };
    let hi = match hi {
        i64::MAX => i64::MAX,
        q => q.checked_mul(c)?.checked_add(c - 1)?,
    };
    Some((lo, hi))
}
