//! `reduce R across block.z { ... }` or `across parts(...)`: a register
//! tensor summed over a group of blocks (split-K's slices, stream-K's
//! pieces of a tile), the body run by the one block of each group that
//! holds the sum. In: the statement. Out: [`Op::ReduceBlocks`], and the
//! rules that keep it well defined: every thread of every block reaches
//! it (across a grid dimension: the kernel's top level; across parts: a
//! loop's or a pipeline's body too), one per kernel, on a whole
//! register array of f32; a group's parts and count are the kernel's to
//! get right, and their bounds are launch values the workspace is sized
//! by.

use super::KernelChecker;
use crate::check::program::{Across, Base, Elem, Op, Stmt, walk};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, Expr, ExprKind};
use tilec_layout::Builtin;

const USAGE: &str = "reduce tCrC across block.z { axpby(alpha, tCrC, beta, tCgC); }";
const PARTS: &str = "reduce tCrC across parts(t < tiles, p < n, n <= most) { ... }: block holds part p of the n partials of group t";

impl KernelChecker {
    pub(super) fn reduce_blocks_stmt(
        &mut self,
        target: &Expr,
        dim: &Expr,
        mode: Option<&ast::ReduceMode>,
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
        let across = self.across(dim);
        let atomic = self.atomic(mode);
        let body = self.scoped_block(body);
        let op = Op::ReduceBlocks {
            registers: registers?,
            across: across?,
            atomic: atomic?,
            body,
        };
        if let Err(d) = self.check_agreement(&op, span) {
            self.diags.push(d);
            return None;
        }
        Some(Stmt { op, span })
    }

    /// Whether the reduce adds by atomics: `atomic`, or `atomic(e)` with
    /// `e` a static integer (a `tune` parameter's value), atomic where not 0.
    fn atomic(&mut self, mode: Option<&ast::ReduceMode>) -> Option<bool> {
        let Some(m) = mode else {
            return Some(false);
        };
        if m.name.name != "atomic" {
            let what = format!("`{}` is not a way a reduce adds", m.name.name);
            self.diags.push(
                Diagnostic::new(what, m.name.span)
                    .with_label("after the groups: nothing (in index order) or `atomic`")
                    .with_help(
                        "reduce tCrC across block.z atomic { ... }: the partials added by atomics, in the order the blocks arrive",
                    ),
            );
            return None;
        }
        let Some(e) = &m.when else {
            return Some(true);
        };
        match self.eval(e) {
            Ok(Value::Int(i)) if i.as_static().is_some() => i.as_static().map(|v| v != 0),
            Ok(other) => {
                let what = match other {
                    Value::Int(_) => "known at run time alone".to_string(),
                    v => format!("this is {}", v.kind()),
                };
                self.diags.push(
                    Diagnostic::new("`atomic(...)` takes a static integer", e.span)
                        .with_label(what)
                        .with_help(
                            "tune unordered = 0 in (0, 1); ... reduce tCrC across block.z atomic(unordered) { ... }",
                        ),
                );
                None
            }
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }

    /// What a `reduce` runs across: `block.x`, `block.y`, `block.z`, or
    /// `parts(t < groups, p < n, n <= most)`.
    fn across(&mut self, e: &Expr) -> Option<Across> {
        if let ExprKind::Call(f, args) = &e.kind
            && matches!(&f.kind, ExprKind::Name(n) if n == "parts")
        {
            return self.parts(e.span, args);
        }
        let dim = match self.eval(e) {
            Ok(Value::Int(i)) => (0..3u8).find(|&d| Builtin::Block(d).int() == i),
            _ => None,
        };
        if dim.is_none() {
            self.diags.push(
                Diagnostic::new(
                    "`reduce` runs across `block.x`, `block.y`, `block.z` or `parts(...)`",
                    e.span,
                )
                .with_label("the blocks of a group differ in this index alone")
                .with_help(USAGE),
            );
        }
        dim.map(Across::Dim)
    }

    /// `parts(t < groups, p < n, n <= most)`: three bounds, the second's
    /// right side the third's left (the count), `groups` and `most` values
    /// of the launch.
    fn parts(&mut self, span: Span, args: &[Expr]) -> Option<Across> {
        fn bound(e: &Expr, op: BinOp) -> Option<(&Expr, &Expr)> {
            match &e.kind {
                ExprKind::Binary(o, a, b) if *o == op => Some((a, b)),
                _ => None,
            }
        }
        let (3, Some((t, groups)), Some((p, n)), Some((n2, most))) = (
            args.len(),
            args.first().and_then(|a| bound(a, BinOp::Lt)),
            args.get(1).and_then(|a| bound(a, BinOp::Lt)),
            args.get(2).and_then(|a| bound(a, BinOp::Le)),
        ) else {
            self.diags.push(
                Diagnostic::new(
                    "`parts` takes three bounds: the group, the part and the count",
                    span,
                )
                .with_help(PARTS),
            );
            return None;
        };
        let mut int = |e: &Expr| match self.eval(e) {
            Ok(v) => match v.to_int() {
                Some(i) => Some(i),
                None => {
                    self.diags.push(
                        Diagnostic::new("a bound of `parts` is an integer", e.span)
                            .with_label(format!("this is {}", v.kind()))
                            .with_help(PARTS),
                    );
                    None
                }
            },
            Err(d) => {
                self.diags.push(d);
                None
            }
        };
        let (group, groups, part, count, count2, most) =
            (int(t), int(groups), int(p), int(n), int(n2), int(most));
        let (group, groups, part, count, count2, most) =
            (group?, groups?, part?, count?, count2?, most?);
        if count != count2 {
            self.diags.push(
                Diagnostic::new("the count of parts is bounded by the third bound", n2.span)
                    .with_related(n.span, "the count")
                    .with_label(format!("this is {count2}, the count {count}"))
                    .with_help(PARTS),
            );
            return None;
        }
        // The workspace holds `groups * most` partials: the runtime sizes
        // it before the launch, from the extents alone.
        for (bound, e) in [(&groups, args[0].span), (&most, args[2].span)] {
            let mut names = Vec::new();
            bound.names(&mut names);
            if let Some(n) = names.iter().find(|n| !self.extents.contains(n)) {
                self.diags.push(
                    Diagnostic::new(
                        format!("this bound depends on `{n}`, which the launch does not know"),
                        e,
                    )
                    .with_label("the workspace is sized by it before the kernel runs")
                    .with_help("bound it by extents (M, N, K, sm_count) and constants"),
                );
                return None;
            }
        }
        Some(Across::Parts {
            group,
            groups,
            part,
            count,
            most,
        })
    }

    /// Where the kernel's `reduce` statements stand: one at most; across
    /// a grid dimension at the top level; across parts in loops, branches
    /// and a pipeline's body too (the consumers reduce, at a barrier of
    /// theirs, while the producer loads ahead; a load block holds TMA
    /// copies alone), but not in a reduce's body.
    pub(super) fn check_block_reductions(&mut self, body: &[Stmt]) {
        let mut found = Vec::new();
        reductions(body, None, &mut found);
        for &(span, across, within) in &found {
            let why = match (across, within) {
                (Across::Dim(_), Some((_, a))) => Some(format!(
                    "`reduce` across a grid dimension stands at the kernel's top level, not in {}",
                    a.name()
                )),
                (Across::Parts { .. }, Some((_, a @ Around::Reduce))) => {
                    Some(format!("`reduce` across parts stands outside {}", a.name()))
                }
                _ => None,
            };
            if let (Some(why), Some((at, _))) = (why, within) {
                self.diags.push(
                    Diagnostic::new(why, span)
                        .with_related(at, "around it")
                        .with_label("every thread of every block must reach it")
                        .with_help("move it out; across parts(...) it may stand in a loop"),
                );
            }
        }
        if let [(first, ..), (second, ..), ..] = found.as_slice() {
            self.diags.push(
                Diagnostic::new("a kernel has one `reduce` across blocks", *second)
                    .with_related(*first, "the first one")
                    .with_help("put both epilogues in the first one's body"),
            );
        }
        let diags = &mut self.diags;
        for s in body {
            let Op::ReduceBlocks { body, .. } = &s.op else {
                continue;
            };
            // A reduce's body runs on one block of each group, after the
            // others have left: a pipeline there would have no producer.
            walk(body, &mut |inner| {
                if let Op::Pipeline { .. } = inner.op {
                    diags.push(
                        Diagnostic::new(
                            "a pipeline stands at the top of a kernel, not inside a reduce's body",
                            inner.span,
                        )
                        .with_related(s.span, "the reduce")
                        .with_help(
                            "put the pipeline before the reduce, and the epilogue in its body",
                        ),
                    );
                }
            });
        }
    }
}

/// What a `reduce` can stand in.
#[derive(Clone, Copy, PartialEq)]
enum Around {
    Loop,
    Branch,
    Pipeline,
    Reduce,
}

impl Around {
    fn of(op: &Op) -> Option<Around> {
        match op {
            Op::For { .. } => Some(Around::Loop),
            Op::If { .. } => Some(Around::Branch),
            Op::Pipeline { .. } => Some(Around::Pipeline),
            Op::ReduceBlocks { .. } => Some(Around::Reduce),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Around::Loop => "a loop",
            Around::Branch => "an if",
            Around::Pipeline => "a pipeline",
            Around::Reduce => "a reduce",
        }
    }
}

/// What a statement stands in: the span of the statement around it, and
/// what that is.
type Within = Option<(Span, Around)>;

/// The `reduce` statements of `body`, in order: each with what it stands
/// in (the innermost reduce around it, else the outermost pipeline, else
/// the innermost statement), if anything.
fn reductions<'a>(body: &'a [Stmt], within: Within, out: &mut Vec<(Span, &'a Across, Within)>) {
    for s in body {
        if let Op::ReduceBlocks { across, .. } = &s.op {
            out.push((s.span, across, within));
        }
        let Some(here) = Around::of(&s.op) else {
            continue;
        };
        // A pipeline or reduce around it outranks what stands between,
        // and a reduce the pipeline around it.
        let next = match (within, here) {
            (Some((_, Around::Pipeline)), Around::Reduce) => Some((s.span, here)),
            (Some((_, Around::Pipeline | Around::Reduce)), _) => within,
            _ => Some((s.span, here)),
        };
        for b in s.op.bodies() {
            reductions(b, next, out);
        }
    }
}
