//! The `reference` statement: the computation a kernel states (gemm, copy,
//! transpose) over its parameters, whose extents must agree.

use super::KernelChecker;
use crate::check::program::{ParamKind, Reference, ReferenceKind};
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{Expr, ExprKind};

impl KernelChecker {
    /// `reference gemm(A, B, C, alpha, beta)` and friends: the operands are
    /// parameters, with the shapes the computation needs.
    pub(super) fn reference_stmt(&mut self, e: &Expr) -> Result<Reference, Diagnostic> {
        let usage = "reference gemm(A, B, C, alpha, beta) | reference copy(A, B) | reference transpose(A, B)";
        let (name, args) = match &e.kind {
            ExprKind::Call(f, args) => match &f.kind {
                ExprKind::Name(n) => (n.as_str(), args),
                _ => {
                    return Err(
                        Diagnostic::new("a reference names a computation", e.span).with_help(usage)
                    );
                }
            },
            _ => {
                return Err(
                    Diagnostic::new("a reference names a computation", e.span).with_help(usage)
                );
            }
        };
        let (kind, tensors, scalars) = match name {
            "gemm" => (ReferenceKind::Gemm, 3, 2),
            "copy" => (ReferenceKind::Copy, 2, 0),
            "transpose" => (ReferenceKind::Transpose, 2, 0),
            _ => {
                return Err(
                    Diagnostic::new(format!("no reference computation `{name}`"), e.span)
                        .with_help(usage),
                );
            }
        };
        if args.len() != tensors + scalars {
            return Err(Diagnostic::new(
                format!("reference {name} takes {} operands", tensors + scalars),
                e.span,
            )
            .with_help(usage));
        }
        let mut operands = Vec::new();
        let mut shapes = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let p = match &a.kind {
                ExprKind::Name(n) => self.params.iter().position(|p| &p.name == n),
                _ => None,
            };
            let Some(p) = p else {
                return Err(
                    Diagnostic::new("a reference operand is a kernel parameter", a.span)
                        .with_help(usage),
                );
            };
            match (&self.params[p].kind, i < tensors) {
                (ParamKind::Tensor { layout, .. }, true) if layout.rank() == 2 => {
                    shapes.push((
                        layout.mode(0).map(|m| m.size()).ok(),
                        layout.mode(1).map(|m| m.size()).ok(),
                        a.span,
                    ));
                }
                (ParamKind::Scalar(_), false) => {}
                _ => {
                    let want = if i < tensors {
                        "a matrix parameter (two modes)"
                    } else {
                        "a scalar parameter"
                    };
                    return Err(Diagnostic::new(
                        format!("operand {} of reference {name} must be {want}", i + 1),
                        a.span,
                    )
                    .with_help(usage));
                }
            }
            operands.push(p);
        }
        // Which extents must agree: (operand, mode) pairs.
        type Mode = (usize, usize);
        let agree: &[(Mode, Mode)] = match kind {
            ReferenceKind::Gemm => &[((0, 0), (2, 0)), ((1, 0), (2, 1)), ((0, 1), (1, 1))],
            ReferenceKind::Copy => &[((0, 0), (1, 0)), ((0, 1), (1, 1))],
            ReferenceKind::Transpose => &[((0, 0), (1, 1)), ((0, 1), (1, 0))],
        };
        for &((x, xm), (y, ym)) in agree {
            let get = |o: usize, m: usize| {
                if m == 0 {
                    shapes[o].0.clone()
                } else {
                    shapes[o].1.clone()
                }
            };
            if get(x, xm) != get(y, ym) {
                return Err(Diagnostic::new(
                    format!("reference {name}: extents disagree, mode {xm} of operand {} vs mode {ym} of operand {}", x + 1, y + 1),
                    shapes[x].2,
                )
                .with_related(shapes[y].2, "this operand")
                .with_help(usage));
            }
        }
        Ok(Reference { kind, operands })
    }
}
