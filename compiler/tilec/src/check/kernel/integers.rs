//! Integers in element-wise statements: arithmetic and comparisons of
//! run-time integers (loop counters, `thread.x`, extents), `coord(t, m)`,
//! and their quotients, which lower to integer operations (exact past
//! 2^24, truncating as indices divide) rather than f32 ones.

use super::KernelChecker;
use super::elementwise::Target;
use super::operations::mode_sizes;
use crate::arith::Binary;
use crate::check::program::Elementwise;
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{BinOp, Expr, ExprKind};
use tilec_layout::int::{Op, Sym};
use tilec_layout::{Conditions, Fact, Int};

/// What the launch condition that a divisor's product of extents fits 64
/// bits is needed by.
const A_DIVISOR: &str = "a divisor, which must fit 64 bits";

/// Whether `d` multiplies run-time values.
fn has_product(d: &Int) -> bool {
    match d {
        Int::Static(_) => false,
        Int::Dynamic(s) => match &**s {
            Sym::Var(_) => false,
            Sym::Bin(Op::Mul, a, b) => {
                !a.is_static() || !b.is_static() || has_product(a) || has_product(b)
            }
            Sym::Bin(_, a, b) => has_product(a) || has_product(b),
        },
    }
}

impl KernelChecker {
    /// Whether `d` is above 0 at any extents: a whole number above 0, an
    /// extent (the runtime refuses one below 1), and sums, products,
    /// maxima and rounded-up quotients of such (`2 * N`, `ceil_div(N, 64)`).
    fn known_positive(&self, d: &Int) -> bool {
        match d {
            Int::Static(v) => *v > 0,
            Int::Dynamic(s) => match &**s {
                Sym::Var(n) => self.extents.iter().any(|x| x == n),
                Sym::Bin(Op::Add | Op::Mul | Op::CeilDiv, a, b) => {
                    self.known_positive(a) && self.known_positive(b)
                }
                Sym::Bin(Op::Max, a, b) => self.known_positive(a) || self.known_positive(b),
                Sym::Bin(..) => false,
            },
        }
    }

    /// Arithmetic, `min`, `max`, `abs` and comparisons of run-time integers (loop
    /// counters, `thread.x`, extents) as integer ones, one operand, as in
    /// an index: `t / 32` truncates, and `i < M * N` does not round past
    /// 2^24 as f32 would. `None` where an operand is no integer.
    pub(super) fn integers(
        &mut self,
        e: &Expr,
        to: &Target,
    ) -> Result<Option<Elementwise>, Diagnostic> {
        // `(i + 1)` groups an integer too.
        let int = |v: Result<Value, Diagnostic>| v.ok().and_then(|v| v.to_int());
        // `abs(i)` is `max(i, -i)`.
        if let ExprKind::Call(f, args) = &e.kind
            && matches!(&f.kind, ExprKind::Name(n) if n == "abs")
            && let [a] = args.as_slice()
            && let Some(x) = int(self.eval(a))
        {
            let magnitude = x.max(&Int::Static(0).sub(&x));
            return Ok(Some(self.leaf_value(Value::Int(magnitude), e, to)?));
        }
        let (a, b) = match &e.kind {
            ExprKind::Binary(_, a, b) => (&**a, &**b),
            ExprKind::Call(f, args) if matches!(&f.kind, ExprKind::Name(n) if n == "min" || n == "max") =>
            {
                let [a, b] = args.as_slice() else {
                    return Ok(None);
                };
                (a, b)
            }
            _ => return Ok(None),
        };
        let (Some(x), Some(y)) = (int(self.eval(a)), int(self.eval(b))) else {
            return Ok(None);
        };
        let value = match &e.kind {
            ExprKind::Binary(op, ..) if let Some(c) = super::predication::comparison(*op) => {
                integer_comparison(c, &x, &y)
            }
            ExprKind::Binary(
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem,
                ..,
            )
            | ExprKind::Call(..) => {
                // The evaluator's own refusal (a divisor of 0) stands, but
                // for a negative constant divisor in an i32 statement: an
                // integer divides there as its values do, truncating (`7 /
                // -2` is -3, `thread.x / -2` too), where an index quotient
                // takes none.
                let v = match self.eval(e) {
                    Ok(v) => v,
                    Err(_)
                        if to.integers
                            && matches!(e.kind, ExprKind::Binary(BinOp::Div | BinOp::Rem, ..))
                            && y.as_static().is_some_and(|d| d < 0) =>
                    {
                        return Ok(None);
                    }
                    Err(d) => return Err(d),
                };
                let Some(v) = v.to_int() else {
                    return Ok(None);
                };
                if !to.integers {
                    self.no_truncating_quotient(e)?;
                }
                v
            }
            _ => return Ok(None),
        };
        Ok(Some(self.leaf_value(Value::Int(value), e, to)?))
    }

    /// A quotient of two numbers anywhere in the integer expression `e`
    /// that truncates, in a float statement: `x * (1 / 2 + 1)` means a
    /// fraction and would get 1.
    fn no_truncating_quotient(&mut self, e: &Expr) -> Result<(), Diagnostic> {
        match &e.kind {
            ExprKind::Binary(op, a, b) => {
                if *op == BinOp::Div
                    && let (Some(p), Some(q)) = (
                        self.eval(a)?.to_int().and_then(|i| i.as_static()),
                        self.eval(b)?.to_int().and_then(|i| i.as_static()),
                    )
                    && q != 0
                    && p % q != 0
                {
                    return Err(Diagnostic::new(
                        format!("`{p} / {q}` of integers truncates to {}", p / q),
                        e.span,
                    )
                    .with_help(format!(
                        "for the fraction write `{p}.0 / {q}`; integers divide as in an index"
                    )));
                }
                self.no_truncating_quotient(a)?;
                self.no_truncating_quotient(b)
            }
            ExprKind::Neg(x) => self.no_truncating_quotient(x),
            ExprKind::Tuple(v) | ExprKind::Call(_, v) => {
                v.iter().try_for_each(|x| self.no_truncating_quotient(x))
            }
            _ => Ok(()),
        }
    }

    /// `value / b` or `value % b` (`rem`) of an integer element-wise value
    /// (a coordinate, say): an integer quotient, truncating as indices
    /// divide, by a divisor known positive, so that no element divides by
    /// zero on the GPU (where nothing traps) or differs from the executor.
    /// `value / 2.0` is a fraction (a float divisor), as are quotients of
    /// floats.
    pub(super) fn quotient(
        &mut self,
        rem: bool,
        value: Elementwise,
        b: &Expr,
    ) -> Result<Elementwise, Diagnostic> {
        let op = if rem { "%" } else { "/" };
        let fraction = if rem {
            String::new()
        } else {
            "; for a fraction, divide by a float (`coord(t, 0) / 2.0`, `f32(coord(t, 0)) / x`)"
                .to_string()
        };
        let divisor = self.eval(b).ok().and_then(|v| v.to_int());
        match divisor {
            Some(d) if self.known_positive(&d) => {
                // A product of extents may pass 64 bits (two of 2^32 are
                // 0 there): the runtime, which evaluates it without
                // wrapping, refuses a launch where it is not at least 1.
                if has_product(&d) {
                    let mut conds = Conditions::new();
                    conds.record(Fact::Le(Int::Static(1), d.clone()), A_DIVISOR);
                    self.take_conditions(conds, b.span);
                }
                Ok(Elementwise::Quotient {
                    rem,
                    value: Box::new(value),
                    divisor: d,
                })
            }
            Some(d) => Err(Diagnostic::new(
                match d.as_static() {
                    Some(_) => format!("`{op}` of integers by {d}, which is not positive"),
                    None => format!("`{op}` of integers by {d}, which may not be positive"),
                },
                b.span,
            )
            .with_help(format!(
                "an element-wise integer divides by a whole number above 0 or an extent (`coord(tS, 1) {op} 64`, `{op} N`){fraction}"
            ))),
            None => Err(Diagnostic::new(format!("`{op}` of an integer by this"), b.span)
                .with_label("not a whole number or an extent")
                .with_help(format!(
                    "an element-wise integer (a coordinate, a counter) divides by a whole number above 0 or an extent (`coord(tS, 1) {op} 64`){fraction}"
                ))),
        }
    }

    /// A tensor, a scalar parameter or a number.
    /// `coord(t, m)`: where the element of `t`, a view of a global tensor,
    /// sits along mode `m` of that tensor (CuTe's identity tensor): masks by
    /// position, such as a causal one (`coord(tK, 0) <= coord(tQ, 0)`).
    pub(super) fn coordinate(
        &mut self,
        args: &[Expr],
        e: &Expr,
        to: &Target,
    ) -> Result<Elementwise, Diagnostic> {
        let usage = "`coord(t, m)` is where t's element sits along mode m of t's tensor (a view of a kernel parameter): e.g. `select(coord(tS, 1) <= coord(tS, 0), s, -3.0e38)` for a causal mask";
        let [t, m] = args else {
            return Err(Diagnostic::new(
                format!("`coord` takes 2 operands, not {}", args.len()),
                e.span,
            )
            .with_help(usage));
        };
        let view = match self.eval(t)? {
            Value::Tensor(v) if !v.coords.is_empty() => v,
            Value::Tensor(_) => {
                return Err(Diagnostic::new(
                    "`coord` asks where an element of a kernel parameter is",
                    t.span,
                )
                .with_label("a tile of shared memory or registers: no place in a parameter")
                .with_help("ask it of the global view whose elements these are, partitioned alike: `let tCgC = partition_C(mma, gC, thread.x);` then `select(coord(tCgC, 1) <= coord(tCgC, 0), ...)` in the statement that writes the shared tile"));
            }
            _ => {
                return Err(Diagnostic::new(
                    "`coord` asks where an element of a kernel parameter is",
                    t.span,
                )
                .with_label("not a view of a tensor parameter")
                .with_help(usage));
            }
        };
        if mode_sizes(&view) != to.modes && view.layout.size().as_static() != Some(1) {
            return Err(to
                .shape_mismatch(t, view.layout.shape().to_string())
                .with_help(usage));
        }
        let mode = self.eval(m)?.to_int().and_then(|i| i.as_static());
        let Some(mode) = mode.filter(|&i| (0..view.coords.len() as i64).contains(&i)) else {
            return Err(Diagnostic::new(
                format!("the tensor has modes 0 to {}", view.coords.len() - 1),
                m.span,
            )
            .with_help(usage));
        };
        Ok(Elementwise::Coord(view, mode as usize))
    }
}

/// `x op y` of integers as an integer, 1 or 0, in integer arithmetic alone:
/// `x < y` is `min(max(y - x, 0), 1)`.
fn integer_comparison(op: Binary, x: &Int, y: &Int) -> Int {
    let (zero, one) = (Int::Static(0), Int::Static(1));
    let lt = |a: &Int, b: &Int| b.sub(a).max(&zero).min(&one);
    let le = |a: &Int, b: &Int| b.sub(a).add(&one).max(&zero).min(&one);
    match op {
        Binary::Lt => lt(x, y),
        Binary::Le => le(x, y),
        Binary::Gt => lt(y, x),
        Binary::Ge => le(y, x),
        Binary::Eq => le(x, y).mul(&le(y, x)),
        Binary::Ne => one.sub(&le(x, y).mul(&le(y, x))),
        _ => unreachable!("a comparison"),
    }
}
