//! Evaluation of algebra expressions: the calculator (`tilec algebra`) and
//! the layout declarations of `.tile` programs.
//!
//! In: a syntax tree and the values of names in scope. Out: a [`Value`], the
//! run-time conditions the algebra needed (for dynamic values), or a
//! diagnostic at the span of the call that failed, with a help line.

use super::program::View;
use super::value::{Major, Value};
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{Expr, ExprKind, Span};
use tilec_layout as alg;
use tilec_layout::{
    AlgebraError, Conditions, Grouping, Int, IntTuple, Interleave, Layout, Swizzle, Tiler,
};

/// Looks up a name in scope.
pub type Scope<'a> = dyn Fn(&str) -> Option<Value> + 'a;

/// Where a name is defined further down, if it is.
pub type DefinedLater<'a> = dyn Fn(&str) -> Option<Span> + 'a;

/// Functions beyond the algebra (a kernel's tensor operations); tried
/// before the algebra's own. `None` means "not mine".
pub trait Functions {
    fn call(&mut self, args: &Args, conds: &mut Conditions) -> Option<Result<Value, Diagnostic>>;
}

/// No functions beyond the algebra: the calculator.
pub struct AlgebraOnly;

impl Functions for AlgebraOnly {
    fn call(&mut self, _: &Args, _: &mut Conditions) -> Option<Result<Value, Diagnostic>> {
        None
    }
}

/// Evaluates expressions, collecting the conditions that remain for run time.
pub struct Evaluator<'a> {
    scope: &'a Scope<'a>,
    functions: &'a mut dyn Functions,
    /// Where a name that is not yet in scope is defined later, for a better message.
    defined_later: Option<&'a DefinedLater<'a>>,
    pub conditions: Conditions,
    /// Names reported as undefined, so a caller can report each only once.
    pub undefined: Vec<String>,
}

/// The functions `tilec algebra` knows, with their argument forms, for help lines.
pub const FUNCTIONS: &[(&str, &str)] = &[
    (
        "make_layout",
        "make_layout(SHAPE) | make_layout(SHAPE, STRIDE) | make_layout(SHAPE, LayoutRight) | make_layout(L0, L1, ...)",
    ),
    ("make_ordered_layout", "make_ordered_layout(SHAPE, ORDER)"),
    ("size", "size(X)"),
    ("cosize", "cosize(L)"),
    ("rank", "rank(X)"),
    ("depth", "depth(X)"),
    ("shape", "shape(L)"),
    ("stride", "stride(L)"),
    ("get", "get(X, i, ...)"),
    ("eval", "eval(L, COORD)"),
    ("idx2crd", "idx2crd(INDEX, SHAPE)"),
    (
        "crd2idx",
        "crd2idx(COORD, SHAPE) | crd2idx(COORD, SHAPE, STRIDE)",
    ),
    ("flatten", "flatten(L)"),
    ("coalesce", "coalesce(L) | coalesce(L, PROFILE)"),
    ("filter", "filter(L) | filter(L, PROFILE)"),
    (
        "composition",
        "composition(A, B) with B a layout, tiler, shape or integer; A may be a swizzle",
    ),
    ("complement", "complement(A) | complement(A, COTARGET)"),
    ("right_inverse", "right_inverse(L)"),
    ("left_inverse", "left_inverse(L)"),
    ("logical_divide", "logical_divide(L, TILER)"),
    ("zipped_divide", "zipped_divide(L, TILER)"),
    ("tiled_divide", "tiled_divide(L, TILER)"),
    ("flat_divide", "flat_divide(L, TILER)"),
    ("logical_product", "logical_product(L, TILER)"),
    ("zipped_product", "zipped_product(L, TILER)"),
    ("tiled_product", "tiled_product(L, TILER)"),
    ("flat_product", "flat_product(L, TILER)"),
    ("blocked_product", "blocked_product(BLOCK, TILER_LAYOUT)"),
    ("raked_product", "raked_product(BLOCK, TILER_LAYOUT)"),
    (
        "tile_to_shape",
        "tile_to_shape(BLOCK, SHAPE) | tile_to_shape(BLOCK, SHAPE, ORDER)",
    ),
    ("max_common_vector", "max_common_vector(A, B)"),
    ("max_common_layout", "max_common_layout(A, B)"),
    ("Swizzle", "Swizzle(B, M, S)"),
    ("ceil_div", "ceil_div(A, B) with A, B integers or tuples"),
    ("min", "min(a, b) of integers"),
    ("max", "max(a, b) of integers"),
    (
        "step",
        "step(1, X, 1): which modes a local_tile or local_partition keeps",
    ),
];

/// Arguments of a call, evaluated, with their spans.
pub struct Args<'e> {
    pub name: &'e str,
    pub call: Span,
    pub values: Vec<Value>,
    pub spans: Vec<Span>,
    /// The argument's name where it was written as a plain name, for messages.
    pub names: Vec<Option<String>>,
}

impl Args<'_> {
    pub fn usage(&self) -> String {
        let form = FUNCTIONS
            .iter()
            .find(|(n, _)| *n == self.name)
            .map_or("", |(_, f)| f);
        format!("usage: {form}")
    }

    pub fn arity(&self, allowed: &[usize]) -> Result<(), Diagnostic> {
        if allowed.contains(&self.values.len()) {
            return Ok(());
        }
        Err(Diagnostic::new(
            format!(
                "`{}` takes {} argument(s), not {}",
                self.name,
                join_counts(allowed),
                self.values.len()
            ),
            self.call,
        )
        .with_help(self.usage()))
    }

    pub fn wrong(&self, i: usize, wanted: &str) -> Diagnostic {
        Diagnostic::new(
            format!("argument {} of `{}` must be {wanted}", i + 1, self.name),
            self.spans[i],
        )
        .with_label(format!(
            "this is {}: {}",
            self.values[i].kind(),
            self.values[i]
        ))
        .with_help(self.usage())
    }

    pub fn layout(&self, i: usize) -> Result<Layout, Diagnostic> {
        self.values[i]
            .to_layout()
            .ok_or_else(|| self.wrong(i, "a layout"))
    }

    pub fn int_tuple(&self, i: usize) -> Result<IntTuple, Diagnostic> {
        self.values[i]
            .to_int_tuple()
            .ok_or_else(|| self.wrong(i, "an integer or integer tuple"))
    }

    /// Argument `i` as a shape: every static extent at least 1.
    pub fn shape(&self, i: usize) -> Result<IntTuple, Diagnostic> {
        let s = self.int_tuple(i)?;
        positive_extents(&s, self.spans[i])?;
        Ok(s)
    }

    /// Argument `i` as strides: none negative (indices are never below 0).
    pub fn strides(&self, i: usize) -> Result<IntTuple, Diagnostic> {
        let s = self.int_tuple(i)?;
        non_negative_strides(&s, self.spans[i])?;
        Ok(s)
    }

    pub fn int(&self, i: usize) -> Result<Int, Diagnostic> {
        self.values[i]
            .to_int()
            .ok_or_else(|| self.wrong(i, "an integer"))
    }

    pub fn static_int(&self, i: usize) -> Result<i64, Diagnostic> {
        self.int(i)?
            .as_static()
            .ok_or_else(|| self.wrong(i, "a static integer"))
    }

    pub fn tiler(&self, i: usize) -> Result<Tiler, Diagnostic> {
        self.values[i]
            .to_tiler()
            .ok_or_else(|| self.wrong(i, "a tiler: a layout, a shape, or [L0, L1, ...]"))
    }

    pub fn coord(&self, i: usize) -> Result<alg::Coord, Diagnostic> {
        self.values[i]
            .to_coord()
            .ok_or_else(|| self.wrong(i, "a coordinate: an integer, `_`, or a tuple of them"))
    }
}

fn join_counts(allowed: &[usize]) -> String {
    allowed
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

impl<'a> Evaluator<'a> {
    pub fn new(scope: &'a Scope<'a>, functions: &'a mut dyn Functions) -> Self {
        Evaluator {
            scope,
            functions,
            defined_later: None,
            conditions: Conditions::new(),
            undefined: Vec::new(),
        }
    }

    pub fn with_defined_later(mut self, later: &'a DefinedLater<'a>) -> Self {
        self.defined_later = Some(later);
        self
    }

    /// The value of `e`; an integer that overflows 64 bits on the way is
    /// an error at the smallest expression that overflowed.
    pub fn eval(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let v = self.eval_node(e)?;
        if v.overflowed() {
            return Err(Diagnostic::new("integer overflow", e.span)
                .with_label("this value does not fit in 64 bits")
                .with_help("use smaller extents, strides or tile sizes"));
        }
        Ok(v)
    }

    fn eval_node(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(Int::Static(*v))),
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                let int = |v: &Value, span: Span| {
                    v.to_int().ok_or_else(|| {
                        Diagnostic::new("arithmetic works on integers", span)
                            .with_label(format!("this is {}", v.kind()))
                            .with_help(
                                "+, -, * and % combine integers such as loop counters and sizes",
                            )
                    })
                };
                let (x, y) = (int(&x, a.span)?, int(&y, b.span)?);
                Ok(Value::Int(match op {
                    crate::syntax::ast::BinOp::Add => x.add(&y),
                    crate::syntax::ast::BinOp::Sub => x.sub(&y),
                    crate::syntax::ast::BinOp::Mul => x.mul(&y),
                    crate::syntax::ast::BinOp::Rem => {
                        if y.as_static().is_some_and(|d| d <= 0) {
                            return Err(Diagnostic::new(
                                format!("`% {y}` has no remainder: the divisor must be positive"),
                                b.span,
                            )
                            .with_help("e.g. k % 3 cycles through 3 pipeline stages"));
                        }
                        x.rem(&y)
                    }
                }))
            }
            ExprKind::Float(text) => text
                .parse()
                .map(Value::Float)
                .map_err(|_| Diagnostic::new(format!("`{text}` is not a number"), e.span)),
            ExprKind::Index(t, args) => {
                let callee = self.eval(t)?;
                if !matches!(callee, Value::Tensor(_)) {
                    return Err(
                        Diagnostic::new("only a tensor can be indexed with [...]", t.span)
                            .with_label(format!("this is {}", callee.kind()))
                            .with_help(
                                "evaluate a layout with L(COORD); slice a tensor with t[_, k]",
                            ),
                    );
                }
                self.apply_to_args(&callee, args, t.span, e.span)
            }
            ExprKind::Under => Ok(Value::Under),
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Tuple(items) => Ok(Value::Tuple(self.eval_all(items)?)),
            ExprKind::Tiler(items) => Ok(Value::Tiler(self.eval_all(items)?)),
            // `(4,3):(3,1)(2,1)` reads as the layout at (2,1): a stride
            // literal cannot be applied to anything else.
            ExprKind::Layout(s, d) if matches!(&d.kind, ExprKind::Call(f, _) if !matches!(f.kind, ExprKind::Name(_))) =>
            {
                let ExprKind::Call(stride, args) = &d.kind else {
                    unreachable!("matched above")
                };
                let layout = Expr {
                    kind: ExprKind::Layout(s.clone(), stride.clone()),
                    span: Span {
                        start: e.span.start,
                        end: stride.span.end,
                    },
                };
                let callee = self.eval(&layout)?;
                self.apply_to_args(&callee, args, layout.span, e.span)
            }
            ExprKind::Layout(s, d) => {
                let shape = self.eval(s)?;
                let stride = self.eval(d)?;
                let not_tuple = |v: &Value, span: Span, what: &str| {
                    Diagnostic::new(
                        format!("the {what} of a layout must be an integer tuple"),
                        span,
                    )
                    .with_label(format!("this is {}", v.kind()))
                    .with_help("write a layout as SHAPE:STRIDE, e.g. (4,3):(3,1)")
                };
                let st = shape
                    .to_int_tuple()
                    .ok_or_else(|| not_tuple(&shape, s.span, "shape"))?;
                positive_extents(&st, s.span)?;
                let dt = stride
                    .to_int_tuple()
                    .ok_or_else(|| not_tuple(&stride, d.span, "stride"))?;
                non_negative_strides(&dt, d.span)?;
                Layout::new(st.clone(), dt.clone())
                    .map(Value::Layout)
                    .map_err(|_| {
                        Diagnostic::new(
                            format!("shape {st} and stride {dt} do not have the same profile"),
                            s.span,
                        )
                        .with_label(format!("shape {st}"))
                        .with_related(d.span, format!("stride {dt}"))
                        .with_help("give every extent exactly one stride, nested the same way")
                    })
            }
            ExprKind::Call(f, args) => match &f.kind {
                ExprKind::Name(n) if (self.scope)(n).is_none() => self.call(n, e.span, args),
                _ => {
                    let callee = self.eval(f)?;
                    self.apply_to_args(&callee, args, f.span, e.span)
                }
            },
        }
    }

    fn eval_all(&mut self, items: &[Expr]) -> Result<Vec<Value>, Diagnostic> {
        items.iter().map(|x| self.eval(x)).collect()
    }

    fn name(&mut self, n: &str, span: Span) -> Result<Value, Diagnostic> {
        if let Some(v) = (self.scope)(n) {
            return Ok(v);
        }
        if !matches!(
            n,
            "LayoutLeft" | "GenColMajor" | "LayoutRight" | "GenRowMajor" | "X"
        ) {
            self.undefined.push(n.to_string());
        }
        match n {
            "LayoutLeft" | "GenColMajor" => Ok(Value::Major(Major::Left)),
            "LayoutRight" | "GenRowMajor" => Ok(Value::Major(Major::Right)),
            "X" => Ok(Value::Skip),
            _ => match self.defined_later.and_then(|f| f(n)) {
                Some(def) => Err(Diagnostic::new(
                    format!("`{n}` is used before its definition"),
                    span,
                )
                .with_label("used here")
                .with_related(def, "defined here")
                .with_help(format!("move the definition of `{n}` above its first use"))),
                None => Err(Diagnostic::new(format!("`{n}` is not defined"), span)
                    .with_label("unknown name")),
            },
        }
    }

    /// `L(a, b, ...)` is `L((a, b, ...))`; `L(c)` is `L` at `c`.
    fn apply_to_args(
        &mut self,
        callee: &Value,
        args: &[Expr],
        fspan: Span,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let mut values = self.eval_all(args)?;
        let coord = if values.len() == 1 {
            values.remove(0)
        } else {
            Value::Tuple(values)
        };
        self.apply(callee, &coord, fspan, span)
    }

    /// `L(coord)`: an offset, or a sliced layout when `coord` has `_`.
    fn apply(
        &mut self,
        callee: &Value,
        coord: &Value,
        fspan: Span,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let c = coord.to_coord().ok_or_else(|| {
            Diagnostic::new("a layout is evaluated at a coordinate", span)
                .with_label(format!("this is {}", coord.kind()))
                .with_help(
                    "a coordinate is an integer, `_`, or a tuple of them, e.g. L(2,1) or L(_,1)",
                )
        })?;
        let fail = |err: AlgebraError| algebra_error(err, span);
        if let Value::Tensor(t) = callee {
            return t.slice(&c).map(Value::Tensor).map_err(fail);
        }
        if let Some(l) = callee.as_layout() {
            if c.has_underscore() {
                return l.slice(&c).map(Value::Layout).map_err(fail);
            }
            return l.eval(&c).map(Value::Int).map_err(fail);
        }
        if let Value::Composed(cl) = callee {
            return cl.eval(&c).map(Value::Int).map_err(fail);
        }
        Err(Diagnostic::new("only a layout can be evaluated at a coordinate", fspan)
            .with_label(format!("this is {}", callee.kind()))
            .with_help("to evaluate a layout literal, parenthesize it: ((4,3):(3,1))(2,1), or use eval(L, COORD)"))
    }

    fn call(&mut self, name: &str, span: Span, args: &[Expr]) -> Result<Value, Diagnostic> {
        let values = self.eval_all(args)?;
        let spans = args.iter().map(|a| a.span).collect();
        let names = args
            .iter()
            .map(|a| match &a.kind {
                ExprKind::Name(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        self.call_values(name, span, values, spans, names)
    }

    /// A named function applied to evaluated arguments.
    pub fn call_values(
        &mut self,
        name: &str,
        span: Span,
        values: Vec<Value>,
        spans: Vec<Span>,
        names: Vec<Option<String>>,
    ) -> Result<Value, Diagnostic> {
        let a = Args {
            names,
            name,
            call: span,
            values,
            spans,
        };
        if let Some(r) = self.functions.call(&a, &mut self.conditions) {
            return r;
        }
        if let Some(Value::Tensor(t)) = a.values.first()
            && TENSOR_TRANSFORMS.contains(&name)
        {
            return self.transform_tensor(t.clone(), a);
        }
        let conds = &mut self.conditions;
        let fail = |err: AlgebraError| algebra_error(err, span);
        let v: Value = match name {
            "step" => Value::Tuple(a.values),
            "min" | "max" => {
                a.arity(&[2])?;
                let (x, y) = (a.int(0)?, a.int(1)?);
                Value::Int(if name == "min" { x.min(&y) } else { x.max(&y) })
            }
            "ceil_div" => {
                a.arity(&[2])?;
                let (x, y) = (a.int_tuple(0)?, a.int_tuple(1)?);
                if y.leaves()
                    .iter()
                    .any(|v| v.as_static().is_some_and(|v| v < 1))
                {
                    return Err(a.wrong(1, "positive"));
                }
                x.ceil_div(&y)
                    .ok_or_else(|| a.wrong(1, "a tuple of at most as many modes"))?
                    .into()
            }
            "make_layout" => make_layout(&a)?,
            "make_ordered_layout" => {
                a.arity(&[2])?;
                alg::ordered_layout(&a.shape(0)?, &a.int_tuple(1)?)
                    .map_err(fail)?
                    .into()
            }
            "size" if a.values.len() > 1 => {
                let mode = get(&a)?;
                let inner = Args {
                    name,
                    call: span,
                    values: vec![mode],
                    spans: vec![a.spans[0]],
                    names: vec![None],
                };
                measure(&inner, name)?
            }
            "size" | "rank" | "depth" => {
                a.arity(&[1])?;
                measure(&a, name)?
            }
            "cosize" => {
                a.arity(&[1])?;
                a.layout(0)?.cosize().into()
            }
            "shape" | "stride" => {
                a.arity(&[1])?;
                let l = a.values[0]
                    .as_layout()
                    .ok_or_else(|| a.wrong(0, "a layout"))?;
                if name == "shape" {
                    l.shape().clone().into()
                } else {
                    l.stride().clone().into()
                }
            }
            "get" => get(&a)?,
            "eval" => {
                a.arity(&[2])?;
                return self.apply(&a.values[0], &a.values[1], a.spans[0], span);
            }
            "idx2crd" => {
                a.arity(&[2])?;
                coord_value(&alg::idx2crd(&a.int(0)?, &a.shape(1)?))
            }
            "crd2idx" => {
                a.arity(&[2, 3])?;
                let shape = a.shape(1)?;
                let stride = if a.values.len() == 3 {
                    a.strides(2)?
                } else {
                    shape.compact_col_major(&Int::Static(1))
                };
                let l = Layout::new(shape, stride).map_err(fail)?;
                l.eval(&a.coord(0)?).map_err(fail)?.into()
            }
            "flatten" => {
                a.arity(&[1])?;
                a.layout(0)?.flatten().into()
            }
            "coalesce" | "filter" => {
                a.arity(&[1, 2])?;
                let l = a.layout(0)?;
                let whole = name == "coalesce";
                match a.values.len() {
                    1 if whole => l.coalesce().into(),
                    1 => l.filter().into(),
                    _ if whole => l.coalesce_by(&a.int_tuple(1)?).map_err(fail)?.into(),
                    _ => l.filter_by(&a.int_tuple(1)?).map_err(fail)?.into(),
                }
            }
            "composition" => {
                a.arity(&[2])?;
                composition(&a, conds).map_err(fail)?
            }
            "complement" => {
                a.arity(&[1, 2])?;
                let l = a.layout(0)?;
                match a.values.len() {
                    1 => alg::complement_full(&l, conds),
                    _ => {
                        let cotarget = match a.values[1].as_layout() {
                            Some(m) => m.shape().clone(),
                            None => a.shape(1)?,
                        };
                        alg::complement(&l, &cotarget, conds)
                    }
                }
                .map_err(fail)?
                .into()
            }
            "right_inverse" => {
                a.arity(&[1])?;
                alg::right_inverse(&a.layout(0)?).into()
            }
            "left_inverse" => {
                a.arity(&[1])?;
                alg::left_inverse(&a.layout(0)?).map_err(fail)?.into()
            }
            "logical_divide" | "zipped_divide" | "tiled_divide" | "flat_divide" => {
                a.arity(&[2])?;
                let g = grouping(name);
                alg::divide(&a.layout(0)?, &a.tiler(1)?, g, conds)
                    .map_err(fail)?
                    .into()
            }
            "logical_product" | "zipped_product" | "tiled_product" | "flat_product" => {
                a.arity(&[2])?;
                let g = grouping(name);
                alg::product(&a.layout(0)?, &a.tiler(1)?, g, conds)
                    .map_err(fail)?
                    .into()
            }
            "blocked_product" | "raked_product" => {
                a.arity(&[2])?;
                let how = if name == "blocked_product" {
                    Interleave::Blocked
                } else {
                    Interleave::Raked
                };
                alg::rank_product(&a.layout(0)?, &a.layout(1)?, how, conds)
                    .map_err(fail)?
                    .into()
            }
            "tile_to_shape" => {
                a.arity(&[2, 3])?;
                let order = if a.values.len() == 3 {
                    Some(a.int_tuple(2)?)
                } else {
                    None
                };
                alg::tile_to_shape(&a.layout(0)?, &a.shape(1)?, order.as_ref(), conds)
                    .map_err(fail)?
                    .into()
            }
            "max_common_vector" => {
                a.arity(&[2])?;
                alg::max_common_vector(&a.layout(0)?, &a.layout(1)?, conds)
                    .map_err(fail)?
                    .into()
            }
            "max_common_layout" => {
                a.arity(&[2])?;
                alg::max_common_layout(&a.layout(0)?, &a.layout(1)?, conds)
                    .map_err(fail)?
                    .into()
            }
            "Swizzle" | "Sw" => {
                a.arity(&[3])?;
                let s = Swizzle::new(a.static_int(0)?, a.static_int(1)?, a.static_int(2)?)
                    .map_err(fail)?;
                Value::Swizzle(s)
            }
            _ => return Err(unknown_function(name, span)),
        };
        Ok(v)
    }
}

/// Algebra functions that, applied to a tensor, transform its layout and
/// keep its memory: `logical_divide(gA, tiler)` is a tensor.
const TENSOR_TRANSFORMS: &[&str] = &[
    "coalesce",
    "filter",
    "flatten",
    "composition",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
];

impl Evaluator<'_> {
    /// The algebra function applied to the tensor's layout, and to its
    /// coordinate functions, over the same memory.
    fn transform_tensor(&mut self, t: View, a: Args) -> Result<Value, Diagnostic> {
        let (name, span, spans, names) = (a.name, a.call, a.spans, a.names);
        let rest = &a.values[1..];
        let mut apply = |l: &Layout| -> Result<Layout, Diagnostic> {
            let mut values = vec![Value::Layout(l.clone())];
            values.extend(rest.iter().cloned());
            match self.call_values(name, span, values, spans.clone(), names.clone())? {
                Value::Layout(out) => Ok(out),
                other => Err(Diagnostic::new(
                    format!("`{name}` of a tensor gave {}, not a layout", other.kind()),
                    span,
                )),
            }
        };
        t.map_layout(&mut apply).map(Value::Tensor)
    }
}

fn grouping(name: &str) -> Grouping {
    match name.split('_').next() {
        Some("zipped") => Grouping::Zipped,
        Some("tiled") => Grouping::Tiled,
        Some("flat") => Grouping::Flat,
        _ => Grouping::Logical,
    }
}

fn make_layout(a: &Args) -> Result<Value, Diagnostic> {
    if a.values.is_empty() {
        return Err(a.arity(&[1, 2]).expect_err("no arguments"));
    }
    if a.values.iter().all(|v| v.as_layout().is_some()) {
        let parts: Vec<Layout> = a.values.iter().filter_map(Value::as_layout).collect();
        return Ok(Layout::concat(&parts).into());
    }
    a.arity(&[1, 2])?;
    let shape = a.shape(0)?;
    let layout = match a.values.get(1) {
        None | Some(Value::Major(Major::Left)) => Layout::col_major(&shape),
        Some(Value::Major(Major::Right)) => Layout::row_major(&shape),
        Some(_) => Layout::new(shape, a.strides(1)?).map_err(|e| algebra_error(e, a.call))?,
    };
    Ok(layout.into())
}

/// Extents are at least 1: a zero or negative extent has no coordinates.
fn positive_extents(shape: &IntTuple, span: Span) -> Result<(), Diagnostic> {
    match shape
        .leaves()
        .iter()
        .find(|e| e.as_static().is_some_and(|v| v < 1))
    {
        None => Ok(()),
        Some(e) => Err(
            Diagnostic::new(format!("the shape {shape} has the extent {e}"), span)
                .with_label("extents must be at least 1")
                .with_help("use 1 for a mode with a single coordinate"),
        ),
    }
}

/// Strides are at least 0: tilec's indices never go below a tensor's base.
fn non_negative_strides(stride: &IntTuple, span: Span) -> Result<(), Diagnostic> {
    match stride
        .leaves()
        .iter()
        .find(|e| e.as_static().is_some_and(|v| v < 0))
    {
        None => Ok(()),
        Some(e) => Err(
            Diagnostic::new(format!("negative stride {e} in {stride}"), span)
                .with_label("strides must be at least 0")
                .with_help("tilec's layouts map coordinates to offsets from the start of a tensor; reverse a mode by its coordinates instead"),
        ),
    }
}

fn measure(a: &Args, name: &str) -> Result<Value, Diagnostic> {
    let v = &a.values[0];
    let (size, rank, depth) = match (v.as_layout(), &a.values[0]) {
        (Some(l), _) => (l.size(), l.rank(), l.depth()),
        (None, Value::Composed(c)) => (c.size(), c.layout.rank(), c.layout.depth()),
        _ => {
            let t = a.int_tuple(0)?;
            (t.product(), t.rank(), t.depth())
        }
    };
    Ok(match name {
        "size" => size.into(),
        "rank" => Value::Int(Int::Static(rank as i64)),
        _ => Value::Int(Int::Static(depth as i64)),
    })
}

fn get(a: &Args) -> Result<Value, Diagnostic> {
    if a.values.len() < 2 {
        return Err(a.arity(&[2]).expect_err("too few"));
    }
    let mut cur = a.values[0].clone();
    for i in 1..a.values.len() {
        let k = a.static_int(i)?;
        let next = match &cur {
            Value::Layout(l) => usize::try_from(k)
                .ok()
                .and_then(|k| l.mode(k).ok())
                .map(Value::Layout),
            Value::Tensor(t) => usize::try_from(k)
                .ok()
                .and_then(|k| t.layout.mode(k).ok())
                .map(Value::Layout),
            Value::Tuple(v) | Value::Tiler(v) => {
                usize::try_from(k).ok().and_then(|k| v.get(k).cloned())
            }
            Value::Int(_) if k == 0 => Some(cur.clone()),
            _ => None,
        };
        cur = next.ok_or_else(|| {
            Diagnostic::new(format!("{cur} has no mode {k}"), a.spans[i])
                .with_help("modes count from 0")
        })?;
    }
    Ok(cur)
}

fn composition(a: &Args, conds: &mut Conditions) -> Result<Value, AlgebraError> {
    let rhs = &a.values[1];
    let as_rhs_layout = || {
        rhs.as_layout()
            .or_else(|| rhs.to_int().map(|n| Layout::int(n, Int::Static(1))))
    };
    match &a.values[0] {
        Value::Swizzle(s) => {
            let b = as_rhs_layout().ok_or_else(|| not_layout("composition with a swizzle", rhs))?;
            Ok(Value::Composed(alg::ComposedLayout::new(*s, b)))
        }
        Value::Composed(c) => {
            let b = as_rhs_layout()
                .ok_or_else(|| not_layout("composition of a swizzled layout", rhs))?;
            Ok(Value::Composed(c.compose(&b, conds)?))
        }
        lhs => {
            let l = lhs
                .to_layout()
                .ok_or_else(|| not_layout("composition", lhs))?;
            match rhs.as_layout() {
                Some(b) => alg::composition(&l, &b, conds).map(Value::Layout),
                None => {
                    let t = rhs
                        .to_tiler()
                        .ok_or_else(|| not_layout("composition", rhs))?;
                    alg::composition_tiler(&l, &t, conds).map(Value::Layout)
                }
            }
        }
    }
}

fn not_layout(op: &'static str, v: &Value) -> AlgebraError {
    AlgebraError::Invalid {
        op,
        why: format!("{v} is {}, not a layout", v.kind()),
    }
}

fn coord_value(c: &alg::Coord) -> Value {
    match c {
        alg::Coord::Int(i) => Value::Int(i.clone()),
        alg::Coord::Under => Value::Under,
        alg::Coord::Tuple(v) => Value::Tuple(v.iter().map(coord_value).collect()),
    }
}

fn unknown_function(name: &str, span: Span) -> Diagnostic {
    let close: Vec<&str> = FUNCTIONS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.contains(name) || name.contains(n) || edit_distance(n, name) <= 2)
        .collect();
    let help = if close.is_empty() {
        let all: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
        format!("known functions: {}", all.join(", "))
    } else {
        format!("did you mean {}?", close.join(" or "))
    };
    Diagnostic::new(format!("unknown function `{name}`"), span).with_help(help)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// An algebra error as a diagnostic at the call that raised it.
pub fn algebra_error(err: AlgebraError, span: Span) -> Diagnostic {
    let help = match &err {
        AlgebraError::StrideDivisibility { .. }
        | AlgebraError::ShapeDivisibility { .. }
        | AlgebraError::NotAComposition { .. } => {
            "choose a right operand whose strides and extents divide the left layout's modes, or coalesce the left layout first"
        }
        AlgebraError::NotInjective { .. } | AlgebraError::ComplementGap { .. } => {
            "a complement exists only for an injective layout whose strides grow by whole multiples; filter out stride-0 modes"
        }
        AlgebraError::TooManyModes { .. } => {
            "give the tiler at most as many modes as the layout has"
        }
        AlgebraError::BadCoordinate { .. } => {
            "give one coordinate per mode; `_` keeps a whole mode"
        }
        AlgebraError::NotCongruent { .. } => {
            "give every extent exactly one stride, nested the same way"
        }
        _ => "see docs/layout-algebra.md for what each operation admits",
    };
    Diagnostic::new(err.to_string(), span).with_help(help)
}

/// Evaluates one calculator line: every integer is static, and so must be the value.
pub fn eval_static(src: &str) -> Result<Value, Diagnostic> {
    let expr = crate::syntax::parse_expr(src)?;
    let no_names = |_: &str| None;
    let mut none = AlgebraOnly;
    let mut ev = Evaluator::new(&no_names, &mut none);
    let v = ev.eval(&expr)?;
    if !v.is_static() {
        return Err(algebra_error(
            AlgebraError::Overflow { op: "evaluation" },
            expr.span,
        ));
    }
    Ok(v)
}
