//! Element-wise statements: `dst = value;`, where `value` combines tensors
//! of the target's mode sizes (or of one element), scalar parameters and
//! numbers with `+ - * /`, comparisons, `-x` and the element-wise
//! functions. `axpby` is one of them.

use super::KernelChecker;
use super::operations::{mode_sizes, writable};
use crate::arith::{Binary, Unary};
use crate::check::program::{Elem, Elementwise, Op, Scalar, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{BinOp, Expr, ExprKind};
use tilec_layout::Int;

/// Nesting past this is refused: the stages after the checker walk the
/// tree recursively, on the executor's threads too.
const MAX_DEPTH: usize = 64;

/// The element-wise functions and their forms, as help lines list them.
pub(super) const FUNCTIONS: &str =
    "abs exp exp2 log sqrt rsqrt tanh erf (x), min max (a, b), select(cond, a, b)";

impl KernelChecker {
    /// `target = value;`.
    pub(super) fn assign_stmt(&mut self, target: &Expr, value: &Expr) -> Result<Op, Diagnostic> {
        let dst = match self.eval(target)? {
            Value::Tensor(t) => t,
            v => {
                return Err(Diagnostic::new("an element-wise statement assigns to a tensor", target.span)
                    .with_label(format!("this is {}", v.kind()))
                    .with_help("name a tensor view on the left, such as tCgC or tCrC[_, 0]; bind values with `let`"));
            }
        };
        writable(&dst, target, "=")?;
        let value = self.elementwise(value, &dst, target, 0)?;
        Ok(Op::Assign { dst, value })
    }

    /// `axpby(alpha, x, beta, y)`: `y = alpha * x + beta * y`.
    pub(super) fn axpby(&mut self, args: &[Expr]) -> Result<Op, Diagnostic> {
        let y = self.tensor_operand(&args[3], "axpby")?;
        writable(&y, &args[3], "axpby")?;
        let mut part = |s: &Expr, t: &Expr| -> Result<Elementwise, Diagnostic> {
            let s = self.elementwise(s, &y, &args[3], 0)?;
            let t = self.elementwise(t, &y, &args[3], 0)?;
            Ok(Elementwise::Binary(Binary::Mul, Box::new(s), Box::new(t)))
        };
        let ax = part(&args[0], &args[1])?;
        let by = part(&args[2], &args[3])?;
        Ok(Op::Assign {
            dst: y,
            value: Elementwise::Binary(Binary::Add, Box::new(ax), Box::new(by)),
        })
    }

    /// One operand of an element-wise statement into `dst` (written as `de`).
    fn elementwise(
        &mut self,
        e: &Expr,
        dst: &View,
        de: &Expr,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        if depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                format!("this element-wise expression nests deeper than {MAX_DEPTH} levels"),
                e.span,
            )
            .with_help("compute a part into a register tensor first: `tmp = ...; dst = f(tmp);`"));
        }
        let integers = dst.elem == Elem::I32;
        let mut sub = |x: &Expr| self.elementwise(x, dst, de, depth + 1);
        match &e.kind {
            ExprKind::Binary(op, a, b) => {
                let op = match op {
                    BinOp::Add => Binary::Add,
                    BinOp::Sub => Binary::Sub,
                    BinOp::Mul => Binary::Mul,
                    BinOp::Div => Binary::Div,
                    BinOp::Lt => Binary::Lt,
                    BinOp::Le => Binary::Le,
                    BinOp::Gt => Binary::Gt,
                    BinOp::Ge => Binary::Ge,
                    BinOp::Eq => Binary::Eq,
                    BinOp::Ne => Binary::Ne,
                    BinOp::Rem => {
                        return Err(Diagnostic::new("`%` is not an element-wise operation", e.span)
                            .with_help("`%` takes the remainder of integers such as loop counters; element-wise operations are + - * / and comparisons"));
                    }
                };
                if integers && !op.on_integers() {
                    return Err(integer_statement(e, "`/`", dst, de));
                }
                let (a, b) = (sub(a)?, sub(b)?);
                Ok(Elementwise::Binary(op, Box::new(a), Box::new(b)))
            }
            ExprKind::Neg(x) => Ok(Elementwise::Unary(Unary::Neg, Box::new(sub(x)?))),
            // `(a + b)`: grouping.
            ExprKind::Tuple(v) if v.len() == 1 => sub(&v[0]),
            ExprKind::Call(f, args) if matches!(&f.kind, ExprKind::Name(n) if is_function(n)) => {
                let ExprKind::Name(name) = &f.kind else {
                    unreachable!("matched a name")
                };
                let unary = Unary::ALL
                    .into_iter()
                    .find(|u| u.name() == name && *u != Unary::Neg);
                let arity = match (unary, name.as_str()) {
                    (Some(_), _) => 1,
                    (None, "select") => 3,
                    _ => 2,
                };
                if args.len() != arity {
                    return Err(Diagnostic::new(
                        format!("`{name}` takes {arity} operand(s), not {}", args.len()),
                        e.span,
                    )
                    .with_help(format!("element-wise functions: {FUNCTIONS}")));
                }
                let mut ops = Vec::new();
                for a in args {
                    ops.push(Box::new(sub(a)?));
                }
                Ok(match (unary, name.as_str()) {
                    (Some(u), _) => {
                        if integers && !u.on_integers() {
                            return Err(integer_statement(e, &format!("`{name}`"), dst, de));
                        }
                        Elementwise::Unary(u, ops.remove(0))
                    }
                    (None, "select") => {
                        let (c, a) = (ops.remove(0), ops.remove(0));
                        Elementwise::Select(c, a, ops.remove(0))
                    }
                    (None, m) => {
                        let op = if m == "min" { Binary::Min } else { Binary::Max };
                        let a = ops.remove(0);
                        Elementwise::Binary(op, a, ops.remove(0))
                    }
                })
            }
            _ => self.leaf(e, dst, de),
        }
    }

    /// A tensor, a scalar parameter or a number.
    fn leaf(&mut self, e: &Expr, dst: &View, de: &Expr) -> Result<Elementwise, Diagnostic> {
        let integers = dst.elem == Elem::I32;
        match self.eval(e)? {
            Value::Tensor(v) => {
                let (sv, sd) = (mode_sizes(&v), mode_sizes(dst));
                if sv != sd && v.layout.size().as_static() != Some(1) {
                    return Err(Diagnostic::new(
                        "this operand's shape is not the target's",
                        e.span,
                    )
                    .with_label(format!("shape {}", v.layout.shape()))
                    .with_related(de.span, format!("the target, shape {}", dst.layout.shape()))
                    .with_help("an operand has the target's extent in every mode, or is one element (t[i, j]); check the thread layouts and tilers that made them"));
                }
                if integers && v.elem != Elem::I32 {
                    return Err(integer_statement(e, &format!("a tensor of {}", v.elem), dst, de));
                }
                Ok(Elementwise::Tensor(v))
            }
            Value::Scalar { index, elem } => {
                if integers && elem != Elem::I32 {
                    return Err(integer_statement(e, &format!("a scalar of {elem}"), dst, de));
                }
                Ok(Elementwise::Scalar(Scalar::Param(index)))
            }
            Value::Float(v) => {
                if integers && v.fract() != 0.0 {
                    return Err(integer_statement(e, "a fraction", dst, de));
                }
                Ok(Elementwise::Scalar(Scalar::Literal(v)))
            }
            Value::Int(Int::Static(v)) => Ok(Elementwise::Scalar(Scalar::Literal(v as f64))),
            v => Err(Diagnostic::new("not an element-wise operand", e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help(format!("operands are tensors, scalar parameters and numbers, combined with + - * / < <= > >= == != and the functions {FUNCTIONS}"))),
        }
    }
}

fn is_function(name: &str) -> bool {
    matches!(name, "min" | "max" | "select")
        || Unary::ALL
            .iter()
            .any(|u| u.name() == name && *u != Unary::Neg)
}

/// `what` in a statement into an i32 tensor, which computes in i32.
fn integer_statement(e: &Expr, what: &str, dst: &View, de: &Expr) -> Diagnostic {
    Diagnostic::new(format!("{what} in an element-wise statement on integers"), e.span)
        .with_related(de.span, format!("the target holds {}: the statement computes in i32", dst.elem))
        .with_help("integer statements take + - * min max abs select and comparisons of i32 tensors, i32 scalars and whole numbers")
}
