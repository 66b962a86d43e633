//! `if` statements, and which threads agree on a condition.
//!
//! A condition is a comparison of run-time integers (`&&`, `||` join
//! them). Threads of a block may disagree on it (`thread.x < 4`) or not
//! (`block.x == 0`, `k + 1 < kt`); a statement that needs a whole warp
//! (a shuffle, an mma.sync, ldmatrix), a whole warpgroup (a wgmma) or the
//! whole block (`sync()`) may stand only under conditions, and loops, on
//! which those threads agree. Agreement is measured as a granule: the
//! largest power of two `g` such that the value is the same for the
//! threads of every aligned group of `g` (`thread.x` 1, `thread.x / 64`
//! 64, a value of the block alone [`UNIFORM`]).

use super::KernelChecker;
use crate::arith::Binary;
use crate::check::program::{Op, Predicate, Stmt};
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, Expr, ExprKind};
use tilec_layout::int::{Op as IntOp, Sym};
use tilec_layout::{Builtin, Int};

/// The granule of a value every thread of the block agrees on.
pub const UNIFORM: i64 = i64::MAX;

/// A condition around the statement being checked: an `if`, or a loop
/// whose bounds differ between threads.
pub(super) struct Enclosing {
    pub granule: i64,
    pub span: Span,
    /// A pipeline's turn clause, which is no condition: each turn runs on
    /// one warpgroup.
    pub turn: bool,
}

const USAGE: &str = "a condition compares integers: `if thread.x < 32 { ... }`, `if block.x == 0 && k + 1 < kt { ... }`";

impl KernelChecker {
    pub(super) fn if_stmt(
        &mut self,
        cond: &Expr,
        then: &[ast::Stmt],
        otherwise: &[ast::Stmt],
        span: Span,
    ) -> Option<Stmt> {
        let cond_span = cond.span;
        let cond = match self.predicate(cond, 0) {
            Ok(c) => c,
            Err(d) => {
                self.diags.push(d);
                return None;
            }
        };
        let granule = self.predicate_granule(&cond);
        self.enclosing.push(Enclosing {
            granule,
            span: cond_span,
            turn: false,
        });
        self.facts.push(cond.clone());
        let then = self.scoped_block(then);
        self.facts.pop();
        self.facts.push(cond.negated());
        let otherwise = self.scoped_block(otherwise);
        self.facts.pop();
        self.enclosing.pop();
        Some(Stmt {
            op: Op::If {
                cond,
                then,
                otherwise,
            },
            span,
        })
    }

    fn predicate(&mut self, e: &Expr, depth: usize) -> Result<Predicate, Diagnostic> {
        if depth > super::elementwise::MAX_DEPTH {
            return Err(Diagnostic::new("this condition nests too deeply", e.span)
                .with_help("split it into nested `if` statements"));
        }
        // `(a || b)`: parentheses group conditions too.
        if let ExprKind::Tuple(v) = &e.kind
            && let [inner] = v.as_slice()
        {
            return self.predicate(inner, depth + 1);
        }
        let ExprKind::Binary(op, a, b) = &e.kind else {
            return Err(match self.eval(e) {
                Ok(v) => Diagnostic::new("an `if` needs a comparison", e.span)
                    .with_label(format!("this is {}", v.kind()))
                    .with_help(USAGE),
                Err(d) => d,
            });
        };
        let cmp = match op {
            BinOp::And | BinOp::Or => {
                let (x, y) = (self.predicate(a, depth + 1)?, self.predicate(b, depth + 1)?);
                return Ok(match op {
                    BinOp::And => Predicate::And(Box::new(x), Box::new(y)),
                    _ => Predicate::Or(Box::new(x), Box::new(y)),
                });
            }
            op if let Some(c) = comparison(*op) => c,
            _ => {
                return Err(Diagnostic::new("an `if` needs a comparison", e.span)
                    .with_label("this is arithmetic")
                    .with_help(USAGE));
            }
        };
        let mut int = |x: &Expr| -> Result<Int, Diagnostic> {
            let v = self.eval(x)?;
            v.to_int().ok_or_else(|| {
                Diagnostic::new("a condition compares integers", x.span)
                    .with_label(format!("this is {}", v.kind()))
                    .with_help("element values are compared element by element: `y = select(x > 0.0, x, 0.0);`")
            })
        };
        Ok(Predicate::Compare(cmp, int(a)?, int(b)?))
    }

    /// The granule of the threads that agree on `p`.
    fn predicate_granule(&self, p: &Predicate) -> i64 {
        match p {
            Predicate::Compare(op, a, b) => {
                let plain = self.granule(a).min(self.granule(b));
                let threshold = match (thread_divisor(a), b.as_static()) {
                    (Some(d), Some(k)) => threshold_granule(*op, d, k),
                    _ => match (a.as_static(), thread_divisor(b)) {
                        (Some(k), Some(d)) => threshold_granule(mirror(*op), d, k),
                        _ => 1,
                    },
                };
                plain.max(threshold)
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                self.predicate_granule(a).min(self.predicate_granule(b))
            }
        }
    }

    /// The largest power of two `g` such that `v` is the same for the
    /// threads of every aligned group of `g` threads.
    pub(super) fn granule(&self, v: &Int) -> i64 {
        if let Some(d) = thread_divisor(v) {
            // `thread.x / d` is the same across an aligned group of g threads
            // when g divides d.
            return 1 << d.trailing_zeros().min(62);
        }
        match v {
            Int::Static(_) => UNIFORM,
            Int::Dynamic(s) => match &**s {
                Sym::Var(n) => self.loop_granules.get(n).copied().unwrap_or(UNIFORM),
                Sym::Bin(_, a, b) => self.granule(a).min(self.granule(b)),
            },
        }
    }

    /// Whether `op` may stand here: the threads that must issue it together
    /// agree on every enclosing condition.
    pub(super) fn check_agreement(&self, op: &Op, span: Span) -> Result<(), Diagnostic> {
        let in_turn = self.enclosing.iter().any(|c| c.turn);
        if let (Op::Mma { mma, .. }, Some(turn)) = (op, self.enclosing.iter().find(|c| c.turn))
            && mma.threads() != 128
        {
            return Err(Diagnostic::new(
                format!("a gemm of a tiled MMA of {} threads, in a pipeline's turn", mma.threads()),
                span,
            )
            .with_related(turn.span, "each turn runs on one warpgroup of 128 threads")
            .with_help("a turn's warpgroup computes its tile alone: tile the MMA over one warpgroup's 128 threads (e.g. make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS, (1, 1)) over more rows) and partition by thread.x % 128"));
        }
        let (need, what) = match op {
            // In a pipeline's turn, the turn's warpgroup's barrier.
            Op::Sync if in_turn => (
                128,
                "a barrier, which every thread of the turn's warpgroup must reach",
            ),
            Op::Sync => (
                UNIFORM,
                "a barrier, which every thread of the block must reach",
            ),
            // In a pipeline's turn, the turn's warpgroup's: its first
            // thread issues the boxes, between its warpgroup's barriers.
            Op::CopyTma { tma, .. } if in_turn && tma.map.store => (
                128,
                "a TMA store, which every thread of the turn's warpgroup takes part in (its barrier before it and after)",
            ),
            Op::CopyTma { stage: false, .. } if in_turn => (
                128,
                "a TMA load by the turn's warpgroup, which every thread of it takes part in (its barrier before it, a wait after)",
            ),
            Op::CopyTma { tma, .. } if tma.map.store => (
                UNIFORM,
                "a TMA store, which every thread of the block takes part in (a barrier before it and after)",
            ),
            Op::CopyTma { stage: false, .. } => (
                UNIFORM,
                "a TMA load by the block, which every thread of it takes part in (a barrier before it, a wait after)",
            ),
            Op::Prefetch { .. } if in_turn => (
                128,
                "a prefetch, which the first thread of the turn's warpgroup issues for it",
            ),
            Op::Prefetch { .. } => (
                UNIFORM,
                "a prefetch, which thread 0 of the block issues for it",
            ),
            Op::ReduceBlocks { .. } => (
                UNIFORM,
                "a reduce across blocks, which every thread of the block takes part in",
            ),
            Op::Mma { mma, .. } if mma.atom.threads == 128 => {
                (128, "a wgmma, which a whole warpgroup issues")
            }
            Op::Mma { .. } => (32, "an mma.sync, which a whole warp issues"),
            Op::Assign { value, .. } if value.shuffles() => {
                (32, "a shuffle, which a whole warp takes part in")
            }
            Op::Copy {
                demand: Some(_), ..
            } => (32, "ldmatrix, which a whole warp issues"),
            _ => return Ok(()),
        };
        let Some(c) = self.enclosing.iter().find(|c| c.granule < need) else {
            return Ok(());
        };
        if c.turn {
            return Err(
                Diagnostic::new(format!("{what}, in a pipeline's turn"), span)
                    .with_related(c.span, "each turn runs on one warpgroup of the block")
                    .with_help("a turn's warpgroup runs beside the others, which meet nowhere in it: move the statement out of the pipeline, or do the warpgroup's part with copies through a shared tile of its own between sync()s, its warpgroup's barrier there (tests/run/pingpong_smem_epilogue.tile)"),
            );
        }
        let agree = match c.granule {
            1 => "differs from thread to thread".to_string(),
            g => format!("is the same only across groups of {g} threads"),
        };
        let help = match need {
            UNIFORM => "move it out of the condition, or make the condition one of the block (`block.x`, extents, loop counters)".to_string(),
            n => format!("make the condition the same for aligned groups of {n} threads (`thread.x / {n}`, `thread.x < {n}`), or move the statement out of it"),
        };
        Err(
            Diagnostic::new(format!("{what}, under a condition that {agree}"), span)
                .with_related(c.span, "this condition")
                .with_help(help),
        )
    }
}

/// The comparison `op` writes, if it is one.
pub(super) fn comparison(op: BinOp) -> Option<Binary> {
    Some(match op {
        BinOp::Lt => Binary::Lt,
        BinOp::Le => Binary::Le,
        BinOp::Gt => Binary::Gt,
        BinOp::Ge => Binary::Ge,
        BinOp::Eq => Binary::Eq,
        BinOp::Ne => Binary::Ne,
        _ => return None,
    })
}

/// `d` when `v` is `thread.x / d` (nested divisions multiply).
fn thread_divisor(v: &Int) -> Option<i64> {
    let Int::Dynamic(s) = v else { return None };
    match &**s {
        Sym::Var(n) if n == Builtin::Thread.name() => Some(1),
        Sym::Bin(IntOp::Div, a, Int::Static(c)) if *c > 0 => thread_divisor(a)?.checked_mul(*c),
        _ => None,
    }
}

/// The granule of `thread.x / d OP k`: `thread.x / d < k` is
/// `thread.x < k * d`, the same across aligned groups of any power of two
/// dividing `k * d` (`thread.x < 64`: 64). 1 for `==` and `!=`.
pub fn threshold_granule(op: Binary, d: i64, k: i64) -> i64 {
    let edge = match op {
        Binary::Lt | Binary::Ge => k,
        Binary::Le | Binary::Gt => k.saturating_add(1),
        _ => return 1,
    };
    match edge.saturating_mul(d) {
        // No thread index is below it: every thread agrees.
        e if e <= 0 => UNIFORM,
        e => 1 << e.trailing_zeros().min(62),
    }
}

/// `b OP a` for `a op b`.
pub fn mirror(op: Binary) -> Binary {
    match op {
        Binary::Lt => Binary::Gt,
        Binary::Le => Binary::Ge,
        Binary::Gt => Binary::Lt,
        Binary::Ge => Binary::Le,
        other => other,
    }
}
