//! `reduce R across block.z { ... }`: a register tensor summed over the
//! blocks that differ only in one grid dimension (split-K's partial
//! accumulators), the body run by the one block of each group that holds
//! the sum. In: the statement. Out: [`Op::ReduceBlocks`], and the rules
//! that keep it well defined: every thread of every block reaches it (the
//! kernel's top level, not in a loop or a branch; beside a pipeline, not
//! around one), at most one per kernel, on a whole register array of f32.

use super::KernelChecker;
use crate::check::program::{Base, Elem, Op, Stmt, walk};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, Expr};
use tilec_layout::Builtin;

const USAGE: &str = "reduce tCrC across block.z { axpby(alpha, tCrC, beta, tCgC); }";

impl KernelChecker {
    pub(super) fn reduce_blocks_stmt(
        &mut self,
        target: &Expr,
        dim: &Expr,
        body: &[ast::Stmt],
        span: Span,
    ) -> Option<Stmt> {
        let registers = match self.eval(target) {
            Ok(Value::Tensor(v)) => match v.base {
                Base::Registers(r)
                    if v.elem == Elem::F32
                        && v.offset.as_static() == Some(0)
                        && v.layout.size().as_static() == Some(self.state.registers[r].len) =>
                {
                    Some(r)
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new("`reduce` sums a whole register array of f32", target.span)
                            .with_label(format!(
                                "this is {} {} of {}",
                                v.base.space(),
                                v.elem,
                                v.layout
                            ))
                            .with_help(USAGE),
                    );
                    None
                }
            },
            Ok(other) => {
                self.diags.push(
                    Diagnostic::new("`reduce` sums a register tensor", target.span)
                        .with_label(format!("this is {}", other.kind()))
                        .with_help(USAGE),
                );
                None
            }
            Err(d) => {
                self.diags.push(d);
                None
            }
        };
        let dim_span = dim.span;
        let dim = match self.eval(dim) {
            Ok(Value::Int(i)) => (0..3u8).find(|&d| Builtin::Block(d).int() == i),
            _ => None,
        };
        if dim.is_none() {
            self.diags.push(
                Diagnostic::new(
                    "`reduce` runs across `block.x`, `block.y` or `block.z`",
                    dim_span,
                )
                .with_label("the blocks of a group differ in this index alone")
                .with_help(USAGE),
            );
        }
        let body = self.scoped_block(body);
        Some(Stmt {
            op: Op::ReduceBlocks {
                registers: registers?,
                dim: dim?,
                body,
            },
            span,
        })
    }

    /// Where the kernel's `reduce` statements stand: each at the top level,
    /// one at most.
    pub(super) fn check_block_reductions(&mut self, body: &[Stmt]) {
        let top: Vec<Span> = body
            .iter()
            .filter(|s| matches!(s.op, Op::ReduceBlocks { .. }))
            .map(|s| s.span)
            .collect();
        let diags = &mut self.diags;
        for s in body {
            for b in s.op.bodies() {
                walk(b, &mut |inner| {
                    if let Op::ReduceBlocks { .. } = inner.op {
                        diags.push(
                            Diagnostic::new(
                                "`reduce` across blocks stands at the kernel's top level",
                                inner.span,
                            )
                            .with_label("every thread of every block must reach it")
                            .with_help("move it out of the loop, branch or reduce around it"),
                        );
                    }
                    // A reduce's body runs on one block of each group, after
                    // the others have left: a pipeline there would have no
                    // producer to feed it.
                    if let (Op::ReduceBlocks { .. }, Op::Pipeline { .. }) = (&s.op, &inner.op) {
                        diags.push(
                            Diagnostic::new(
                                "a pipeline stands at the top of a kernel, not inside a reduce's body",
                                inner.span,
                            )
                            .with_related(s.span, "the reduce")
                            .with_help("put the pipeline before the reduce, and the epilogue in its body"),
                        );
                    }
                });
            }
        }
        if let [first, second, ..] = top.as_slice() {
            self.diags.push(
                Diagnostic::new("a kernel has one `reduce` across blocks", *second)
                    .with_related(*first, "the first one")
                    .with_help("put both epilogues in the first one's body"),
            );
        }
    }
}
