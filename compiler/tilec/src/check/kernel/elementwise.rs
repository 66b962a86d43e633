//! Element-wise statements: `dst = value;`, where `value` combines tensors
//! of the target's mode sizes (or of one element), scalar parameters and
//! numbers with `+ - * /`, comparisons, `-x` and the element-wise
//! functions. `axpby` is one of them.

use super::KernelChecker;
use super::operations::{mode_sizes, reads_no_element_it_wrote, writable};
use crate::arith::{Binary, Unary};
use crate::check::program::{Base, Elem, Elementwise, Op, Scalar, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{BinOp, Expr, ExprKind};
use tilec_layout::Int;

/// Nesting past this is refused: the stages after the checker walk the
/// tree recursively, on the executor's threads too.
pub(super) const MAX_DEPTH: usize = 64;

/// The element-wise functions and their forms, as help lines list them.
pub(super) const FUNCTIONS: &str = "abs exp exp2 log sqrt rsqrt tanh erf gelu gelu_tanh sigmoid silu (x), the hardware's approximations fast_exp fast_exp2 fast_log fast_sqrt fast_rsqrt fast_tanh fast_gelu_tanh (x), min max (a, b), select(cond, a, b), bf16 f16 f32 i32 (x), reduce_sum reduce_max reduce_min (x, mode) or (x, threads(L, mode)), shfl_xor(x, mask), inside(t), coord(t, mode)";

/// Where an operand's elements go: the statement's target (for messages
/// and its type) and the mode sizes operands must have here (the target's,
/// or more inside a reduction).
pub(super) struct Target<'a> {
    pub(super) view: &'a View,
    pub(super) expr: &'a Expr,
    pub(super) modes: Vec<Int>,
    /// The operand is computed in i32 (an i32 target's, outside `i32(...)`).
    pub(super) integers: bool,
    /// Inside a reduction: the reduced operand, whose first tensor gives
    /// `modes` (its other tensors must match that one, not the statement's
    /// target).
    pub(super) folded: Option<Span>,
}

impl Target<'_> {
    /// An operand's shape that is not this target's: the error, and what
    /// the shape is compared with, where it is: the statement's target, or
    /// inside a reduction its operand's first tensor.
    pub(super) fn shape_mismatch(&self, operand: &Expr, shape: String) -> Diagnostic {
        let (message, span, what) = match self.folded {
            Some(span) => (
                "this operand's shape is not the first tensor's it is reduced with",
                span,
                format!(
                    "the reduced operand, whose first tensor has modes {}",
                    show_modes(&self.modes)
                ),
            ),
            None => (
                "this operand's shape is not the target's",
                self.expr.span,
                format!("the target, shape {}", self.view.layout.shape()),
            ),
        };
        Diagnostic::new(message, operand.span)
            .with_label(format!("shape {shape}"))
            .with_related(span, what)
    }
}

impl KernelChecker {
    /// `target = value;`.
    pub(super) fn assign_stmt(&mut self, target: &Expr, value: &Expr) -> Result<Op, Diagnostic> {
        let dst = match self.eval(target)? {
            Value::Tensor(t) => t,
            // A number bound by `let` does not change: what accumulates
            // is a register tensor.
            v @ (Value::Float(_) | Value::Int(_)) => {
                return Err(Diagnostic::new("an element-wise statement assigns to a tensor", target.span)
                    .with_label(format!("this is {}, bound by `let`, which does not change", v.kind()))
                    .with_help("a value that changes (an accumulator) lives in registers: `let acc = registers<f32>(1, 0.0);`, then `acc = acc + ...;`"));
            }
            v => {
                return Err(Diagnostic::new("an element-wise statement assigns to a tensor", target.span)
                    .with_label(format!("this is {}", v.kind()))
                    .with_help("name a tensor view on the left, such as tCgC or tCrC[_, 0]; bind values with `let`"));
            }
        };
        writable(&dst, target, "=")?;
        self.not_by_every_thread(&dst, target, "=")?;
        let to = Target {
            view: &dst,
            expr: target,
            modes: mode_sizes(&dst),
            integers: dst.elem == Elem::I32,
            folded: None,
        };
        let value = self.elementwise(value, &to, 0)?;
        let mut read = Vec::new();
        value.tensors_outside_reductions(&mut read);
        for src in read {
            reads_no_element_it_wrote(&dst, src, target)?;
        }
        // `dst = src` of one type and shape is a copy, which vectorizes.
        if let Elementwise::Tensor(src) = &value
            && src.elem == dst.elem
            && mode_sizes(src) == to.modes
        {
            return Ok(Op::Copy {
                src: src.clone(),
                dst,
                asynchronous: false,
                demand: None,
            });
        }
        Ok(Op::Assign { dst, value })
    }

    /// `axpby(alpha, x, beta, y)`: `y = alpha * x + beta * y`.
    pub(super) fn axpby(&mut self, args: &[Expr]) -> Result<Op, Diagnostic> {
        let y = self.tensor_operand(&args[3], "axpby")?;
        writable(&y, &args[3], "axpby")?;
        self.not_by_every_thread(&y, &args[3], "axpby")?;
        let to = Target {
            view: &y,
            expr: &args[3],
            modes: mode_sizes(&y),
            integers: y.elem == Elem::I32,
            folded: None,
        };
        let mut part = |s: &Expr, t: &Expr| -> Result<Elementwise, Diagnostic> {
            let s = self.elementwise(s, &to, 0)?;
            let t = self.elementwise(t, &to, 0)?;
            Ok(Elementwise::Binary(Binary::Mul, Box::new(s), Box::new(t)))
        };
        let ax = part(&args[0], &args[1])?;
        let by = part(&args[2], &args[3])?;
        Ok(Op::Assign {
            dst: y,
            value: Elementwise::Binary(Binary::Add, Box::new(ax), Box::new(by)),
        })
    }

    /// One operand of an element-wise statement into `to`.
    pub(super) fn elementwise(
        &mut self,
        e: &Expr,
        to: &Target,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        if depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                format!("this element-wise expression nests deeper than {MAX_DEPTH} levels"),
                e.span,
            )
            .with_label("each operator of a chain (`a + b + c + ...`) nests one level")
            .with_help("compute a part into a register tensor first: `tmp = ...; dst = f(tmp);`"));
        }
        let integers = to.integers;
        if let ExprKind::Call(f, _) = &e.kind
            && let ExprKind::Name(name) = &f.kind
            && !self.callable(name)
        {
            return Err(unknown_elementwise(name, f.span));
        }
        if let ExprKind::Call(f, args) = &e.kind
            && let ExprKind::Name(name) = &f.kind
            && let Some(op) = reduction(name)
        {
            if args.len() == 2 && super::threads::is_threads(&args[1]) {
                return self.reduce_threads(op, name, args, e, to, depth);
            }
            return self.reduce(op, name, args, e, to, depth);
        }
        if let ExprKind::Call(f, args) = &e.kind
            && let ExprKind::Name(name) = &f.kind
            && let Some(to_elem) = Elem::parse(name)
        {
            return self.convert(to_elem, args, e, to, depth);
        }
        if let ExprKind::Call(f, args) = &e.kind
            && matches!(&f.kind, ExprKind::Name(n) if n == "shfl_xor")
        {
            return self.shuffle(args, e, to, depth);
        }
        if let ExprKind::Call(f, args) = &e.kind
            && matches!(&f.kind, ExprKind::Name(n) if n == "inside")
        {
            let usage = "`inside(t)` is 1 where t's element lies inside its tensor, 0 past the edge of a partial tile: e.g. `select(inside(tX), x, 0.0)`";
            let [a] = args.as_slice() else {
                return Err(Diagnostic::new(
                    format!("`inside` takes 1 operand, not {}", args.len()),
                    e.span,
                )
                .with_help(usage));
            };
            return match self.leaf(a, to)? {
                // A tile of shared memory or registers has no place in a
                // parameter: every element would be "inside".
                Elementwise::Tensor(v) if !matches!(v.base, Base::Param(_)) => Err(
                    Diagnostic::new("`inside` asks where an element of a kernel parameter is", a.span)
                        .with_label(format!("a tile of {}: no place in a parameter", v.base.space()))
                        .with_help("ask it of the global view whose elements these are, partitioned alike: `select(inside(tXgX), x, 0.0)` where `tXgX` is the thread's part of the global tile"),
                ),
                Elementwise::Tensor(v) => Ok(Elementwise::Inside(v)),
                _ => Err(
                    Diagnostic::new("`inside` asks where a tensor's element is", a.span)
                        .with_help(usage),
                ),
            };
        }
        if let ExprKind::Call(f, args) = &e.kind
            && matches!(&f.kind, ExprKind::Name(n) if n == "coord")
        {
            return self.coordinate(args, e, to);
        }
        if let Some(value) = self.integers(e, to)? {
            return Ok(value);
        }
        let mut sub = |x: &Expr| self.elementwise(x, to, depth + 1);
        match &e.kind {
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (sub(a)?, sub(b)?);
                let rem = *op == BinOp::Rem;
                let op = match op {
                    BinOp::Add => Binary::Add,
                    BinOp::Sub => Binary::Sub,
                    BinOp::Mul => Binary::Mul,
                    // An integer over an integer divides as indices do; over
                    // a float (`2.0`, a tensor), as floats do.
                    BinOp::Div | BinOp::Rem if x.integral() && (rem || y.integral()) => {
                        let zero =
                            self.eval(b).ok().and_then(|v| v.to_int()) == Some(Int::Static(0));
                        match self.quotient(rem, x.clone(), b) {
                            Ok(q) => return Ok(q),
                            // In an i32 statement a divisor an index quotient
                            // cannot take (a tensor's value, a negative
                            // number; not 0) divides as i32 values do.
                            Err(_) if integers && !zero && rem => Binary::Rem,
                            Err(_) if integers && !zero => Binary::Div,
                            Err(e) => return Err(e),
                        }
                    }
                    BinOp::Div => Binary::Div,
                    // i32 values' remainder; of floats, none.
                    BinOp::Rem if integers => Binary::Rem,
                    op if let Some(c) = super::predication::comparison(*op) => c,
                    // `a && b` is `select(a, b != 0, 0)`, `a || b` `select(a, 1,
                    // b != 0)`: 1 or 0, as comparisons give.
                    BinOp::And | BinOp::Or => {
                        let number = |v: i64| Box::new(Elementwise::Scalar(Scalar::Whole(v)));
                        let y = Box::new(Elementwise::Binary(Binary::Ne, Box::new(y), number(0)));
                        return Ok(match op {
                            BinOp::And => Elementwise::Select(Box::new(x), y, number(0)),
                            _ => Elementwise::Select(Box::new(x), number(1), y),
                        });
                    }
                    // `%` of indices is one (above), of i32 values another;
                    // what is left is `%` in a float statement.
                    _ => {
                        return Err(Diagnostic::new("`%` of floats", e.span)
                            .with_related(to.expr.span, format!("the target holds {}: the statement computes in f32", to.view.elem))
                            .with_help("`%` takes the remainder of integers: indices (loop counters, `coord(t, m)`, extents, whole numbers: `coord(tS, 1) % 64`), and i32 values in a statement whose target holds i32 (`tR = tP % 5`)"));
                    }
                };
                Ok(Elementwise::Binary(op, Box::new(x), Box::new(y)))
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
                            return Err(integer_statement(e, &format!("`{name}`"), to));
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
            _ => self.leaf(e, to),
        }
    }

    /// `bf16(x)`, `f16(x)`, `f32(x)`: x rounded to that type (nearest even);
    /// `i32(x)`: x, computed in f32, truncated toward zero (saturating; NaN
    /// is 0), the way an i32 target takes a float.
    fn convert(
        &mut self,
        elem: Elem,
        args: &[Expr],
        e: &Expr,
        to: &Target,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        let usage = "conversions: `bf16(x)`, `f16(x)`, `f32(x)` round to nearest even; `i32(x)` truncates toward zero";
        let [x] = args else {
            return Err(Diagnostic::new(
                format!("`{elem}` takes 1 operand, not {}", args.len()),
                e.span,
            )
            .with_help(usage));
        };
        if to.integers && elem != Elem::I32 {
            return Err(integer_statement(e, &format!("`{elem}(...)`"), to));
        }
        let inner = Target {
            view: to.view,
            expr: to.expr,
            modes: to.modes.clone(),
            integers: false,
            folded: to.folded,
        };
        let value = self.elementwise(x, &inner, depth + 1)?;
        if to.integers && value.shuffles() {
            return Err(Diagnostic::new(
                "a shuffle inside `i32(...)` of an integer statement",
                e.span,
            )
            .with_help("shuffle the converted value instead: `t = i32(x); y = shfl_xor(t, 16);`"));
        }
        Ok(Elementwise::Convert(elem, Box::new(value)))
    }

    /// `shfl_xor(x, mask)`: lane `lane ^ mask`'s value of `x`, the butterfly
    /// step of a warp reduction.
    fn shuffle(
        &mut self,
        args: &[Expr],
        e: &Expr,
        to: &Target,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        let usage = "`shfl_xor(x, mask)` is x of the lane whose index is this lane's XOR mask (1 to 31); e.g. `m = max(m, shfl_xor(m, 16));` then 8, 4, 2, 1 reduces m over a warp";
        if args.len() != 2 {
            return Err(Diagnostic::new(
                format!("`shfl_xor` takes 2 operands, not {}", args.len()),
                e.span,
            )
            .with_help(usage));
        }
        let mask = match self.eval(&args[1])? {
            Value::Int(Int::Static(m)) if (1..32).contains(&m) => m as u32,
            v => {
                return Err(Diagnostic::new(
                    "the lane mask is a number from 1 to 31",
                    args[1].span,
                )
                .with_label(format!("this is {v}"))
                .with_help(usage));
            }
        };
        if let Some(threads) = self.block_threads()
            && let Some((_, at)) = &self.launch
            && threads % 32 != 0
        {
            return Err(Diagnostic::new(
                format!("a shuffle in a block of {threads} threads"),
                e.span,
            )
            .with_related(*at, "the block")
            .with_help("shuffles exchange values within whole warps: make the block a multiple of 32 threads"));
        }
        let value = self.elementwise(&args[0], to, depth + 1)?;
        if value.shuffles() {
            return Err(
                Diagnostic::new("a shuffle of a shuffle", args[0].span).with_help(
                    "shuffle once per statement: `t = shfl_xor(x, 16); y = shfl_xor(t, 8);`",
                ),
            );
        }
        Ok(Elementwise::Shuffle(Box::new(value), mask))
    }

    /// `reduce_sum(x, mode)`: `x` has the modes here plus `mode`, which it
    /// is folded over (pairwise, so that a sum's rounding error grows with
    /// the log of the extent).
    fn reduce(
        &mut self,
        op: Binary,
        name: &str,
        args: &[Expr],
        e: &Expr,
        to: &Target,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        let usage = || {
            format!(
                "`{name}(x, mode)` folds x over its mode `mode` (0 first); x has the target's modes plus that one"
            )
        };
        if args.len() != 2 {
            return Err(Diagnostic::new(
                format!("`{name}` takes 2 operands, not {}", args.len()),
                e.span,
            )
            .with_help(usage()));
        }
        let mode = match self.eval(&args[1])? {
            Value::Int(Int::Static(m)) if m >= 0 => m as usize,
            v => {
                return Err(
                    Diagnostic::new("the mode to fold over is a number", args[1].span)
                        .with_label(format!("this is {}", v.kind()))
                        .with_help(usage()),
                );
            }
        };
        // The operand's modes: those of its first tensor of more than one
        // element, less what reductions inside fold.
        let Some(modes) = self.operand_modes(&args[0])? else {
            // One element folds into itself: a row's one warp, say, where
            // the kernel is written for several (`s[lane, _, row]` of shape
            // (1)). Into a target of one element too, as any fold's result.
            let rank = self.modes_of(&args[0], true)?.map_or(1, |m| m.len());
            let one = to.modes.iter().all(|m| m.is_const(1));
            if mode < rank && one {
                return self.elementwise(&args[0], to, depth + 1);
            }
            let what = match one {
                false => "gives one element, not a value per element of the target".to_string(),
                true => format!("folds mode {mode}; it has {rank} mode(s)"),
            };
            return Err(Diagnostic::new(
                format!("`{name}` of a single element {what}"),
                args[1].span,
            )
            .with_related(args[0].span, "one element")
            .with_related(to.expr.span, "the target")
            .with_help(usage()));
        };
        let first = &args[0];
        let statics: Option<Vec<i64>> = modes.iter().map(Int::as_static).collect();
        let (Some(statics), true) = (statics, mode < modes.len()) else {
            return Err(Diagnostic::new(
                format!(
                    "`{name}` folds over mode {mode} of a tensor of {} mode(s)",
                    modes.len()
                ),
                args[1].span,
            )
            .with_related(first.span, "a tensor of static shape, to unroll")
            .with_help(usage()));
        };
        let mut rest = modes.clone();
        rest.remove(mode);
        // Modes of one element do not count: a (4) tile folds into a (1).
        if nontrivial(&rest) != nontrivial(&to.modes) {
            return Err(Diagnostic::new(
                format!(
                    "folding mode {mode} leaves modes {}, not those of the target {}",
                    show_modes(&rest),
                    show_modes(&to.modes)
                ),
                e.span,
            )
            .with_related(to.expr.span, "the target")
            .with_help(usage()));
        }
        let inner = Target {
            view: to.view,
            expr: to.expr,
            modes,
            integers: to.integers,
            folded: Some(args[0].span),
        };
        let value = self.elementwise(&args[0], &inner, depth + 1)?;
        Ok(Elementwise::Reduce {
            op,
            mode,
            modes: statics,
            value: Box::new(value),
        })
    }

    /// The mode sizes of an element-wise expression: those of its first
    /// tensor of more than one element (others share its modes or are
    /// broadcast), less the modes reductions fold; `None` if it has none.
    pub(super) fn operand_modes(&mut self, e: &Expr) -> Result<Option<Vec<Int>>, Diagnostic> {
        self.modes_of(e, false)
    }

    /// [`Self::operand_modes`], or with `single`, those of the first tensor
    /// of one element too (a fold's modes where every operand is one).
    fn modes_of(&mut self, e: &Expr, single: bool) -> Result<Option<Vec<Int>>, Diagnostic> {
        match &e.kind {
            ExprKind::Binary(_, a, b) => match self.modes_of(a, single)? {
                Some(m) => Ok(Some(m)),
                None => self.modes_of(b, single),
            },
            ExprKind::Neg(x) => self.modes_of(x, single),
            ExprKind::Tuple(v) if v.len() == 1 => self.modes_of(&v[0], single),
            ExprKind::Call(f, args) if matches!(&f.kind, ExprKind::Name(n) if reduction(n).is_some()) =>
            {
                // Across threads, each element folds with its own kind.
                if let [x, t] = args.as_slice()
                    && super::threads::is_threads(t)
                {
                    return self.modes_of(x, single);
                }
                let mode = match args.get(1).map(|a| self.eval(a)).transpose()? {
                    Some(Value::Int(Int::Static(m))) if m >= 0 => m as usize,
                    _ => return Ok(None),
                };
                Ok(match args.first() {
                    Some(x) => self
                        .modes_of(x, single)?
                        .filter(|m| mode < m.len())
                        .map(|mut m| {
                            m.remove(mode);
                            m
                        }),
                    None => None,
                })
            }
            ExprKind::Call(f, args) if matches!(&f.kind, ExprKind::Name(n) if is_function(n) || CONVERSIONS.contains(&n.as_str()) || n == "shfl_xor" || n == "inside" || n == "coord") =>
            {
                for a in args {
                    if let Some(m) = self.modes_of(a, single)? {
                        return Ok(Some(m));
                    }
                }
                Ok(None)
            }
            ExprKind::Name(_) | ExprKind::Index(..) | ExprKind::Call(..) => match self.eval(e)? {
                Value::Tensor(v) if single || v.layout.size().as_static() != Some(1) => {
                    Ok(Some(mode_sizes(&v)))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn leaf(&mut self, e: &Expr, to: &Target) -> Result<Elementwise, Diagnostic> {
        let v = self.eval(e)?;
        self.leaf_value(v, e, to)
    }

    /// [`Self::leaf`] of `e`'s value `v`.
    pub(super) fn leaf_value(
        &mut self,
        v: Value,
        e: &Expr,
        to: &Target,
    ) -> Result<Elementwise, Diagnostic> {
        let integers = to.integers;
        match v {
            Value::Tensor(v) => {
                if mode_sizes(&v) != to.modes && v.layout.size().as_static() != Some(1) {
                    return Err(to
                    .shape_mismatch(e, v.layout.shape().to_string())
                    .with_help(match to.folded {
                        Some(_) => "the tensors a reduction folds have one extent in every mode, or are one element (t[i, j]); check the thread layouts and tilers that made them",
                        None => "an operand has the target's extent in every mode, or is one element (t[i, j]); check the thread layouts and tilers that made them",
                    }));
                }
                if integers && v.elem != Elem::I32 {
                    return Err(integer_statement(e, &format!("a tensor of {}", v.elem), to));
                }
                Ok(Elementwise::Tensor(v))
            }
            Value::Scalar { index, elem } => {
                if integers && elem != Elem::I32 {
                    return Err(integer_statement(e, &format!("a scalar of {elem}"), to));
                }
                Ok(Elementwise::Scalar(Scalar::Param(index)))
            }
            Value::Float(v) => {
                if integers && v.fract() != 0.0 {
                    return Err(integer_statement(e, "a fraction", to));
                }
                if integers && !(i32::MIN as f64..=i32::MAX as f64).contains(&v) {
                    return Err(integer_statement(e, "a number past i32's range", to));
                }
                Ok(Elementwise::Scalar(Scalar::Literal(v)))
            }
            Value::Int(Int::Static(v)) => {
                if integers && i32::try_from(v).is_err() {
                    return Err(integer_statement(e, "a number past i32's range", to));
                }
                if v.unsigned_abs() > crate::check::elementwise_tree::WHOLE_MAX as u64 {
                    return Err(Diagnostic::new(format!("{v} is past 2^53"), e.span).with_help(
                        "element-wise integers are exact to 2^53 (past it a float skips whole numbers); write such a number as a float (`1.0e17`) if a float's rounding will do",
                    ));
                }
                Ok(Elementwise::Scalar(Scalar::Whole(v)))
            }
            Value::Int(i) => Ok(Elementwise::Int(i)),
            v => Err(Diagnostic::new("not an element-wise operand", e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help(format!("operands are tensors, scalar parameters and numbers, combined with + - * / < <= > >= == != and the functions {FUNCTIONS}"))),
        }
    }
}

/// The element-wise functions of two or three operands.
const COMBINING: [&str; 3] = ["min", "max", "select"];

/// The reductions along a mode, and their folds.
const REDUCTIONS: [(&str, Binary); 3] = [
    ("reduce_sum", Binary::Add),
    ("reduce_max", Binary::Max),
    ("reduce_min", Binary::Min),
];

/// The conversions, one an element type.
const CONVERSIONS: [&str; 4] = ["bf16", "f16", "f32", "i32"];

/// Every function an element-wise expression may call by name.
pub(super) fn elementwise_names() -> Vec<&'static str> {
    let unary = Unary::ALL
        .into_iter()
        .filter(|u| *u != Unary::Neg)
        .map(Unary::name);
    unary
        .chain(COMBINING)
        .chain(CONVERSIONS)
        .chain(REDUCTIONS.map(|(n, _)| n))
        .chain(["shfl_xor", "inside", "coord"])
        .collect()
}

/// A call in an element-wise expression of a name nothing defines:
/// "did you mean" among the element-wise functions: a name a letter or two
/// away (`erff` is `erf`), in any case (`GELU`), or one that starts the
/// other (`fast_gelu` is `fast_gelu_tanh`, `gelu_erf` is `gelu`).
fn unknown_elementwise(name: &str, span: crate::span::Span) -> Diagnostic {
    let typed = name.to_lowercase();
    let close: Vec<&str> = elementwise_names()
        .into_iter()
        .filter(|n| {
            let near = crate::check::algebra::edit_distance(n, &typed) <= 2 && n.len() > 2;
            let starts = n.len() > 3
                && typed.len() > 3
                && (n.starts_with(typed.as_str()) || typed.starts_with(n));
            near || starts
        })
        .collect();
    let d = Diagnostic::new(format!("unknown function `{name}`"), span);
    match close.is_empty() {
        true => d.with_help(format!("element-wise functions: {FUNCTIONS}")),
        false => d.with_help(format!(
            "did you mean {}? element-wise functions: {FUNCTIONS}",
            close.join(" or ")
        )),
    }
}

impl KernelChecker {
    /// Whether `name` is a function an expression can call here: an
    /// element-wise one, the algebra's or the kernel's (`local_tile`).
    fn callable(&self, name: &str) -> bool {
        // A name in scope: a tensor sliced with call syntax, `tA(0)`.
        self.scope.contains_key(name) || self.names_a_function(name)
    }
}

fn is_function(name: &str) -> bool {
    COMBINING.contains(&name)
        || Unary::ALL
            .iter()
            .any(|u| u.name() == name && *u != Unary::Neg)
}

/// The fold of `reduce_sum`, `reduce_max`, `reduce_min`.
fn reduction(name: &str) -> Option<Binary> {
    REDUCTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, op)| op)
}

/// Mode sizes less those of one element, which do not count in a fold.
pub(super) fn nontrivial(modes: &[Int]) -> Vec<Int> {
    modes.iter().filter(|x| !x.is_const(1)).cloned().collect()
}

/// Mode sizes as a message writes them: `(4, 8)`.
pub(super) fn show_modes(modes: &[Int]) -> String {
    let parts: Vec<String> = modes.iter().map(|x| x.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// `what` in a statement into an i32 tensor, which computes in i32.
pub(super) fn integer_statement(e: &Expr, what: &str, to: &Target) -> Diagnostic {
    Diagnostic::new(format!("{what} in an element-wise statement on integers"), e.span)
        .with_related(to.expr.span, format!("the target holds {}: the statement computes in i32", to.view.elem))
        .with_help("integer statements take + - * / % min max abs select and comparisons of i32 tensors, i32 scalars and whole numbers; `i32(x)` converts a float computation, a comparison of floats too: `select(i32(x > 0.0), 1, -1)`")
}
