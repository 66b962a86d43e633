//! A pipeline's turns, once every statement is checked: what one
//! warpgroup's turn may touch. Two warpgroups' turns run beside each other
//! and meet nowhere, so the shared memory a turn writes is its
//! warpgroup's own (its place told apart by `thread.x / 128` or the turn),
//! and `after` reads no stage (the turn has handed its stages back).

use super::KernelChecker;
use super::pipeline::WARPGROUP;
use crate::check::program::{Base, Op, Stmt, walk};
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use tilec_layout::int::{Op as IntOp, Sym};
use tilec_layout::{Builtin, Int};

impl KernelChecker {
    /// The rules above for the turns of the pipeline in `body` (at `span`),
    /// whose stage buffers are `stages`, in a block of `threads`.
    pub(super) fn check_turns(
        &mut self,
        body: &[Stmt],
        stages: &[usize],
        span: Span,
        threads: Option<i64>,
    ) {
        // The pipeline stands at the kernel's top level.
        let Some((t, trips)) = body.iter().find_map(|s| match &s.op {
            Op::Pipeline {
                turn: Some(t),
                body,
                ..
            } => Some((t, body)),
            _ => None,
        }) else {
            return;
        };
        // Two warpgroups' turns meet nowhere: shared memory one writes
        // must be its own, its place told apart by the warpgroup
        // (`thread.x / 128`) or the turn.
        if threads.is_some_and(|t| t / WARPGROUP >= 2) {
            for list in [&trips[..], &t.after[..]] {
                walk(list, &mut |w| {
                    if let Some(v) = w.op.written()
                        && let Base::Shared(b) = v.base
                        && !stages.contains(&b)
                        && !tells_warpgroups(&v.offset, &t.var)
                    {
                        self.diags.push(
                            Diagnostic::new("every warpgroup's turns write these elements of shared memory", w.span)
                                .with_label("the place does not depend on the warpgroup or the turn")
                                .with_related(span, "the turns of two warpgroups run beside each other and meet nowhere")
                                .with_help("give each warpgroup a slice of its own, e.g. sC[_, _, thread.x / 128] of a buffer with a mode of one slice a warpgroup"),
                        );
                    }
                });
            }
        }
        // A turn hands its last stage back before `after` runs, and the
        // producer fills it for a later turn meanwhile. (A write to a
        // stage is refused anywhere, by `check_pipeline`.)
        walk(&t.after, &mut |a| {
            if a.op
                .read()
                .iter()
                .any(|v| matches!(v.base, Base::Shared(b) if stages.contains(&b)))
            {
                self.diags.push(
                    Diagnostic::new("this reads a pipeline's stage buffer in `after`", a.span)
                        .with_related(span, "the turn has handed its stages back by then; the producer fills them for later turns")
                        .with_help("read the stages in the body, where a trip's stage has landed and is the turn's"),
                );
            }
        });
    }
}

/// Whether an offset tells a thread's warpgroup apart: it names the turn's
/// counter `turn`, or `thread.x` other than in `thread.x % d`, d dividing
/// 128 (the same for thread t and t + 128).
fn tells_warpgroups(v: &Int, turn: &str) -> bool {
    let Int::Dynamic(s) = v else { return false };
    match &**s {
        Sym::Var(n) => n == Builtin::Thread.name() || n == turn,
        Sym::Bin(IntOp::Mod, a, Int::Static(d))
            if *d > 0 && WARPGROUP % d == 0 && *a == Int::var(Builtin::Thread.name()) =>
        {
            false
        }
        Sym::Bin(_, a, b) => tells_warpgroups(a, turn) || tells_warpgroups(b, turn),
    }
}
