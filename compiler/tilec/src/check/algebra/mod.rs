//! Evaluation of algebra expressions: the calculator (`tilec algebra`) and
//! the layout declarations of `.tile` programs.
//!
//! In: a syntax tree and the values of names in scope. Out: a [`Value`], the
//! run-time conditions the algebra needed (for dynamic values), or a
//! diagnostic at the span of the call that failed, with a help line.
//!
//! This file evaluates expressions; `functions` is the table of the
//! algebra's functions, from which dispatch, usage lines and "did you
//! mean" all come.

mod atoms;
mod coordinates;
mod extents;
mod functions;
mod names;

pub use coordinates::check_slice;
use extents::non_negative_strides;
pub use extents::positive_extents;
pub(crate) use extents::positive_tiler;
pub(crate) use functions::grouping;
pub use functions::{FUNCTIONS, Function};
pub use names::edit_distance;
use names::{function_name, unknown_function};

use super::program::View;
use super::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind};
use tilec_layout as alg;
use tilec_layout::{AlgebraError, ComposedLayout, Conditions, Int, IntTuple, Layout, Tiler};

/// Why an i32 scalar parameter cannot be an index or a count, and what can.
const SCALAR_IS_NO_COUNT: &str = "a scalar parameter is an element value; a run-time integer that bounds a loop or an index is an extent: declare it `w: extent` and pass it with --dims w=64";

/// The most terms (names, numbers and operations) an integer expression
/// may hold, a shared part counted at each use: every later stage walks
/// it (the largest in the examples and tests hold a few hundred), and a
/// chain of definitions that each use the one before twice would
/// otherwise double it at every step.
pub const MAX_INT_NODES: usize = 4096;

/// The most integers (extents, strides, tuple entries) one value may hold.
pub const MAX_VALUE_INTS: usize = 1 << 16;

/// Looks up a name in scope.
pub type Scope<'a> = dyn Fn(&str) -> Option<Value> + 'a;

/// Where a name is defined further down, if it is.
pub type DefinedLater<'a> = dyn Fn(&str) -> Option<Span> + 'a;

/// What a slice's coordinate check knows of the run-time names at the
/// statement being checked (check/kernel/ranges.rs).
pub trait Ranges {
    /// The values `name` takes there, where known: a condition around the
    /// statement in a form not read into an interval leaves it wider, and
    /// [`Ranges::holds`] has it.
    fn range(&self, name: &str) -> Option<(i64, i64)>;

    /// The values the slices' search takes `name` through: its range, or
    /// for an extent every value a launch may give it (`(thread.x + M) %
    /// 64` leaves a mode of 32 at M = 32).
    fn searched(&self, name: &str) -> Option<(i64, i64)>;

    /// Whether the statement runs at a point (the values `point` gives;
    /// the names the conditions around it need beyond those at a witness
    /// value: a range's first, block indices 0, extents large): the
    /// witness values taken, or `None` where a condition does not hold or
    /// cannot be told.
    fn holds(&self, point: &dyn Fn(&str) -> Option<i64>) -> Option<Vec<(String, i64)>>;

    /// The names with a range that a condition around the statement ties
    /// to `name` (`b < a + 2` ties `a` to `b`): searched with it, so that
    /// a point found is one where the statement runs, not one at `a`'s
    /// witness alone.
    fn tied(&self, name: &str) -> Vec<String>;
}

/// Every name a kernel's scope defines.
pub type KnownNames<'a> = dyn Fn() -> Vec<String> + 'a;

/// A name a program may call beyond the algebra's, and its argument forms.
pub type Known = (&'static str, &'static str);

/// Functions beyond the algebra (a kernel's tensor operations); tried
/// before the algebra's own. `None` means "not mine".
pub trait Functions {
    fn call(&mut self, args: &Args, conds: &mut Conditions) -> Option<Result<Value, Diagnostic>>;

    /// Every name this context knows beyond the algebra's, with its
    /// argument forms: for usage lines, and for "did you mean" when a
    /// call names no function at all.
    fn known(&self) -> Vec<Known>;
}

/// No functions beyond the algebra: the calculator.
pub struct AlgebraOnly;

impl Functions for AlgebraOnly {
    fn call(&mut self, _: &Args, _: &mut Conditions) -> Option<Result<Value, Diagnostic>> {
        None
    }

    fn known(&self) -> Vec<Known> {
        Vec::new()
    }
}

/// Evaluates expressions, collecting the conditions that remain for run time.
pub struct Evaluator<'a> {
    scope: &'a Scope<'a>,
    functions: &'a mut dyn Functions,
    /// Where a name that is not yet in scope is defined later, for a better message.
    defined_later: Option<&'a DefinedLater<'a>>,
    /// The names in scope, for "a similar name exists".
    known_names: Option<&'a KnownNames<'a>>,
    /// Where given, a tensor's slice coordinates are checked against its
    /// modes with these values.
    ranges: Option<&'a dyn Ranges>,
    /// The block's threads, for a mode sliced by `thread.x` that has more
    /// coordinates than them (whatever conditions narrow `thread.x`).
    block_threads: Option<i64>,
    pub conditions: Conditions,
    /// Names reported as undefined, so a caller can report each only once.
    pub undefined: Vec<String>,
}

/// Arguments of a call, evaluated, with their spans.
pub struct Args<'e> {
    pub name: &'e str,
    /// The function's argument forms, for help lines.
    pub usage: &'static str,
    pub call: Span,
    pub values: Vec<Value>,
    pub spans: Vec<Span>,
    /// The argument's name where it was written as a plain name, for messages.
    pub names: Vec<Option<String>>,
    /// What is known of the run-time names at the call, for the
    /// coordinates a function takes (`local_tile`'s tile of a shared
    /// tensor); none outside a kernel's statements.
    pub ranges: Option<&'e dyn Ranges>,
}

impl Args<'_> {
    pub fn usage(&self) -> String {
        format!("usage: {}", self.usage)
    }

    /// An algebra error as a diagnostic at the call.
    pub fn fail(&self, err: AlgebraError) -> Diagnostic {
        algebra_error(err, self.call)
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
        let d = Diagnostic::new(
            format!("argument {} of `{}` must be {wanted}", i + 1, self.name),
            self.spans[i],
        )
        .with_label(format!(
            "this is {}: {}",
            self.values[i].kind(),
            self.values[i]
        ));
        match self.values[i] {
            Value::Scalar { .. } if wanted.contains("integer") => {
                d.with_help(format!("{}; {SCALAR_IS_NO_COUNT}", self.usage()))
            }
            _ => d.with_help(self.usage()),
        }
    }

    /// Argument `i` as a layout (a shape is one, with its compact
    /// strides): every static extent at least 1.
    pub fn layout(&self, i: usize) -> Result<Layout, Diagnostic> {
        let l = self.values[i]
            .to_layout()
            .ok_or_else(|| self.wrong(i, "a layout"))?;
        positive_extents(l.shape(), self.spans[i])?;
        Ok(l)
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

    /// Argument `i` as a tiler: every static extent in it at least 1.
    pub fn tiler(&self, i: usize) -> Result<Tiler, Diagnostic> {
        let t = self.values[i]
            .to_tiler()
            .ok_or_else(|| self.wrong(i, "a tiler: a layout, a shape, or [L0, L1, ...]"))?;
        positive_tiler(&t, self.spans[i])?;
        Ok(t)
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
            known_names: None,
            ranges: None,
            block_threads: None,
            conditions: Conditions::new(),
            undefined: Vec::new(),
        }
    }

    pub fn with_defined_later(mut self, later: &'a DefinedLater<'a>) -> Self {
        self.defined_later = Some(later);
        self
    }

    pub fn with_known_names(mut self, names: &'a KnownNames<'a>) -> Self {
        self.known_names = Some(names);
        self
    }

    pub fn with_ranges(mut self, ranges: &'a dyn Ranges, block_threads: Option<i64>) -> Self {
        self.ranges = Some(ranges);
        self.block_threads = block_threads;
        self
    }

    /// The value of `e`; an integer that overflows 64 bits on the way is
    /// an error at the smallest expression that overflowed, and so is one
    /// whose expression grows past [`MAX_INT_NODES`].
    pub fn eval(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let v = self.eval_node(e)?;
        // Before the overflow test, which walks the whole expression.
        if v.any_int(&|i| i.larger_than(MAX_INT_NODES)) {
            return Err(Diagnostic::new("integer expression too large", e.span)
                .with_label(format!("more than {MAX_INT_NODES} names, numbers and operations once its names are expanded"))
                .with_help("a name used twice in the next definition doubles its size: write `2 * n` rather than `n + n`, or compute the value in fewer steps"));
        }
        // A value's integers counted, stopping past the limit: each
        // definition may double the one before (`make_layout(l, l)`).
        let count = std::cell::Cell::new(0usize);
        if v.any_int(&|_| {
            count.set(count.get() + 1);
            count.get() > MAX_VALUE_INTS
        }) {
            return Err(Diagnostic::new("value too large", e.span)
                .with_label(format!("more than {MAX_VALUE_INTS} extents and strides"))
                .with_help("a layout built from itself twice doubles at every step: build it from smaller parts"));
        }
        if v.overflowed() {
            return Err(
                Diagnostic::new("integer overflow or division by zero", e.span)
                    .with_label("this value does not fit in 64 bits, or divides by zero")
                    .with_help("use smaller extents, strides or tile sizes"),
            );
        }
        Ok(v)
    }

    fn eval_node(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(Int::Static(*v))),
            ExprKind::Binary(op, a, b) => {
                use crate::syntax::ast::BinOp;
                if !matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
                ) {
                    return Err(Diagnostic::new(
                        format!(
                            "`{}` compares, in an `if` condition or an element-wise statement",
                            op.symbol()
                        ),
                        e.span,
                    )
                    .with_help(
                        "e.g. `if thread.x < 32 { ... }`, `tD = select(tC > 0.0, tC, 0.0);`",
                    ));
                }
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                let int = |v: &Value, span: Span| {
                    v.to_int().ok_or_else(|| {
                        let d = Diagnostic::new("arithmetic here works on integers", span)
                            .with_label(format!("this is {}", v.kind()));
                        match v {
                            // An i32 parameter is an element, converted
                            // in statements; a count is an extent.
                            Value::Scalar { .. } => d.with_help(SCALAR_IS_NO_COUNT),
                            _ => d.with_help(
                                "+, -, *, / and % combine integers such as loop counters and sizes; on tensors, write an element-wise statement: `dst = a + b;`",
                            ),
                        }
                    })
                };
                let (x, y) = (int(&x, a.span)?, int(&y, b.span)?);
                let positive = |what: &str| -> Result<(), Diagnostic> {
                    if y.as_static().is_some_and(|d| d <= 0) {
                        return Err(Diagnostic::new(
                            format!(
                                "`{} {y}` has no {what}: the divisor must be positive",
                                op.symbol()
                            ),
                            b.span,
                        )
                        .with_help(match &b.kind {
                            ExprKind::Int(_) => "integer / and % take a positive divisor (k % 3 cycles through three stages)".to_string(),
                            // A name: a `tune` value set so, or a `let`.
                            _ => format!("the divisor is {y} here; a `tune` value passed with --set, or a `let` it comes from, may have made it so"),
                        }));
                    }
                    Ok(())
                };
                Ok(Value::Int(match op {
                    BinOp::Add => x.add(&y),
                    BinOp::Sub => x.sub(&y),
                    BinOp::Mul => x.mul(&y),
                    BinOp::Div => {
                        positive("quotient")?;
                        x.div(&y)
                    }
                    _ => {
                        positive("remainder")?;
                        x.rem(&y)
                    }
                }))
            }
            ExprKind::Neg(x) => match self.eval(x)? {
                Value::Float(v) => Ok(Value::Float(-v)),
                v => match v.to_int() {
                    Some(i) => Ok(Value::Int(Int::Static(0).sub(&i))),
                    None => Err(Diagnostic::new("`-` negates a number", x.span)
                        .with_label(format!("this is {}", v.kind()))
                        .with_help("on tensors, write an element-wise statement: `dst = -src;`")),
                },
            },
            ExprKind::Float(text) => match text.parse::<f64>() {
                // The widest element type is f32: a number past its range
                // (or past f64's, which parses as an infinity) would be an
                // infinity there, silently.
                Ok(v) if (v as f32).is_infinite() => Err(Diagnostic::new(
                    format!("`{text}` is past f32's largest value"),
                    e.span,
                )
                .with_label(format!("f32 reaches {:e}", f32::MAX))
                .with_help("element values are f32 at the widest; write `inf` for an infinity, or `-3.0e38` for a value below every other")),
                Ok(v) => Ok(Value::Float(v)),
                Err(_) => Err(Diagnostic::new(format!("`{text}` is not a number"), e.span)),
            },
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

    /// `L(a, b, ...)` is `L((a, b, ...))`; `L(c)` is `L` at `c`.
    fn apply_to_args(
        &mut self,
        callee: &Value,
        args: &[Expr],
        fspan: Span,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let mut values = self.eval_all(args)?;
        // The argument that is not a coordinate, at its own span (a
        // tensor's element used to pick a tile: data indexes nothing here).
        if let Some((a, v)) = args
            .iter()
            .zip(&values)
            .find(|(_, v)| v.to_coord().is_none())
        {
            return Err(Diagnostic::new("a coordinate is an integer, `_`, or a tuple of them", a.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help("tiles and elements are picked by integers: the block's and the thread's indices, loop counters, extents and `let` integers of them; a tensor's element is a value, and no index"));
        }
        let coord = if values.len() == 1 {
            values.remove(0)
        } else {
            Value::Tuple(values)
        };
        if let (Value::Tensor(t), Some(ranges), Some(c)) = (callee, self.ranges, coord.to_coord()) {
            let spans: Vec<Span> = args.iter().map(|a| a.span).collect();
            coordinates::check_slice(
                t.layout.shape(),
                &c,
                ranges,
                self.block_threads,
                matches!(t.base, crate::check::program::Base::Registers(_)),
                &spans,
                span,
            )?;
            coordinates::full_slice(t, &c, &mut self.conditions);
        }
        apply(callee, &coord, fspan, span)
    }

    fn call(&mut self, name: &str, span: Span, args: &[Expr]) -> Result<Value, Diagnostic> {
        // In a step, `X` is the mode left out even where a tensor is named
        // X (the name most examples give one).
        let values = args
            .iter()
            .map(|a| match &a.kind {
                ExprKind::Name(n) if name == "step" && n == "X" => Ok(Value::Skip),
                _ => self.eval(a),
            })
            .collect::<Result<Vec<_>, _>>()?;
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
        let function = FUNCTIONS.iter().find(|f| f.name == name);
        let usage = match function {
            Some(f) => f.usage,
            None => {
                let base = function_name(name);
                let theirs = self.functions.known();
                theirs
                    .iter()
                    .find(|(n, _)| *n == base)
                    .map_or("", |&(_, u)| u)
            }
        };
        let a = Args {
            names,
            name,
            usage,
            call: span,
            values,
            spans,
            ranges: self.ranges,
        };
        if let Some(r) = self.functions.call(&a, &mut self.conditions) {
            return r;
        }
        let Some(function) = function else {
            return Err(unknown_function(name, span, &self.functions.known()));
        };
        if let Some(Value::Tensor(t)) = a.values.first()
            && function.keeps_tensors
        {
            return self.transform_tensor(t.clone(), a);
        }
        if let Some(Value::Composed(c)) = a.values.first()
            && KEEP_SWIZZLE.contains(&name)
        {
            // CuTe keeps a swizzle outermost: f(Sw o off o L, ...) is
            // Sw o off o f(L, ...) for these f.
            let c = c.clone();
            let mut a = a;
            a.values[0] = Value::Layout(c.layout.clone());
            return Ok(match (function.apply)(&a, &mut self.conditions)? {
                Value::Layout(layout) => Value::Composed(ComposedLayout { layout, ..c }),
                other => other,
            });
        }
        (function.apply)(&a, &mut self.conditions)
    }

    /// The algebra function applied to the tensor's layout, and to its
    /// coordinate functions, over the same memory.
    fn transform_tensor(&mut self, t: View, a: Args) -> Result<Value, Diagnostic> {
        if a.name == "composition" {
            coordinates::check_composition(&t.layout, &a)?;
        }
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

/// The functions CuTe applies to a swizzled layout's inner layout,
/// keeping the swizzle outermost (`ComposedLayout`'s overloads); `size`,
/// `get`, `composition` and `eval` handle swizzled layouts themselves, and
/// the rest refuse them.
const KEEP_SWIZZLE: &[&str] = &[
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "coalesce",
    "flatten",
    "shape",
];

/// `L(coord)`: an offset, or a sliced layout when `coord` has `_`.
fn apply(callee: &Value, coord: &Value, fspan: Span, span: Span) -> Result<Value, Diagnostic> {
    // `(L)(c)`: a parenthesized callee is the value itself.
    let callee = match callee {
        Value::Tuple(v) if v.len() == 1 => &v[0],
        c => c,
    };
    let c = coord.to_coord().ok_or_else(|| {
        Diagnostic::new("a layout is evaluated at a coordinate", span)
            .with_label(format!("this is {}", coord.kind()))
            .with_help("a coordinate is an integer, `_`, or a tuple of them, e.g. L(2,1) or L(_,1)")
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
        if c.has_underscore() {
            // The sliced-off coordinates move the offset inside the swizzle.
            let offset = cl.offset.add(&cl.layout.slice_offset(&c).map_err(fail)?);
            let layout = cl.layout.slice(&c).map_err(fail)?;
            return Ok(Value::Composed(ComposedLayout {
                layout,
                offset,
                swizzle: cl.swizzle,
            }));
        }
        return cl.eval(&c).map(Value::Int).map_err(fail);
    }
    Err(Diagnostic::new("only a layout can be evaluated at a coordinate", fspan)
        .with_label(format!("this is {}", callee.kind()))
        .with_help("to evaluate a layout literal, parenthesize it: ((4,3):(3,1))(2,1), or use eval(L, COORD)"))
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
            "complement needs an injective layout (each offset reached once) whose strides grow by whole multiples; filter out stride-0 modes"
        }
        AlgebraError::TooManyModes { what, .. } => match *what {
            "profile" => "give the profile at most as many modes as the layout has",
            _ => "give the tiler at most as many modes as the layout has",
        },
        // `(j + 1)` in a slice is a tuple of one coordinate, for a mode
        // that is itself a tuple.
        AlgebraError::BadCoordinate { coord, shape, .. }
            if coord.starts_with('(') && !shape.to_string().starts_with('(') =>
        {
            "parentheses make a tuple, a coordinate of a nested mode: write the index without them (`gK[_, _, j + 1]`)"
        }
        AlgebraError::BadCoordinate { .. } => {
            "give one coordinate per mode; `_` keeps a whole mode"
        }
        AlgebraError::SliceModes { given, modes, .. } if given > modes => {
            "give one coordinate per mode; `_` keeps a whole mode. A stage index needs a stage mode in the buffer's layout: `tile_to_shape(atom, (128, 64, stages))`, not `(128, 64)`"
        }
        AlgebraError::SliceModes { .. } => {
            "give one coordinate per mode; `_` keeps a whole mode (`gA[_, _, k]` of a (bm, bk, k) tile)"
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
