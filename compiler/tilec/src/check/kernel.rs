//! The kernel checker: syntax tree of a `.tile` file -> typed program.
//!
//! In: parsed kernels. Out: for each kernel, its parameters, launch shape,
//! memory, checked statements and launch-time conditions ([`program`]);
//! or every diagnostic found. A statement with an error is reported and
//! skipped, and a name it would have defined is remembered as broken, so one
//! mistake is reported once and the rest of the kernel is still checked.
//!
//! Checks: copy operands agree in shape and element type; gemm operands are
//! (M,K) x (N,K) -> (M,N); a thread layout partitions its tensor evenly; the
//! block has as many threads as every thread layout used to partition;
//! tilers, coordinates and steps have matching ranks; a slice has one
//! coordinate per mode; shared memory fits the device; names are defined
//! once and before use; divisibility that depends on run-time extents
//! becomes a launch condition.

use super::algebra::{Args, Evaluator, Functions, algebra_error};
use super::program::{
    Base, Binding, CoordFn, Elem, Kernel, KernelParam, Launch, Op, ParamKind, Reference,
    ReferenceKind, RegisterArray, Scalar, SharedBuffer, Stmt, View,
};
use super::value::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{self, Expr, ExprKind, Span, StmtKind};
use std::collections::HashMap;
use tilec_layout::{
    Builtin, Condition, Conditions, Coord, Fact, Grouping, Int, IntTuple, Layout, Tiler, divide,
};

/// What a partition that must divide evenly (no fallback) is needed by.
pub const EVEN_PARTITION: &str = "an even partition";

/// What the facts that make a block's tiles of global tensors full are
/// needed by: about the extents (every k-tile full) or about `block.*` too
/// (this block's tile is inside the tensor). The unguarded variant runs
/// where they hold; the guarded variant runs anywhere.
pub const FULL_TILES: &str = "full tiles";

/// Shared memory one block may use on sm_90.
pub const SHARED_LIMIT_BYTES: i64 = 227 * 1024;

/// Parses and checks a `.tile` source.
pub fn check_source(src: &str) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
    let program = crate::syntax::parse_program(src).map_err(|d| vec![d])?;
    check_program(&program)
}

pub fn check_program(program: &ast::Program) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
    let mut kernels = Vec::new();
    let mut diags = Vec::new();
    let mut names: HashMap<&str, Span> = HashMap::new();
    for k in &program.kernels {
        if let Some(first) = names.insert(&k.name.name, k.name.span) {
            diags.push(
                Diagnostic::new(
                    format!("kernel `{}` is defined twice", k.name.name),
                    k.name.span,
                )
                .with_related(first, "first defined here")
                .with_help("give each kernel its own name"),
            );
        }
        match KernelChecker::default().check(k) {
            Ok(kernel) => kernels.push(kernel),
            Err(mut d) => diags.append(&mut d),
        }
    }
    if program.kernels.is_empty() {
        diags.push(
            Diagnostic::new("the file defines no kernel", Span { start: 0, end: 0 })
                .with_help("write `kernel name(params) { ... }`"),
        );
    }
    if diags.is_empty() {
        Ok(kernels)
    } else {
        Err(diags)
    }
}

/// A name in scope: its value (`None` when its definition failed) and where it was defined.
struct Entry {
    value: Option<Value>,
    span: Span,
}

/// A `local_partition` by a thread layout, remembered to compare with the block.
struct ThreadUse {
    name: String,
    threads: Int,
    span: Span,
}

/// The memory and thread facts that the tensor operations record.
#[derive(Default)]
struct KernelState {
    shared: Vec<SharedBuffer>,
    registers: Vec<RegisterArray>,
    thread_uses: Vec<ThreadUse>,
}

#[derive(Default)]
struct KernelChecker {
    scope: HashMap<String, Entry>,
    /// Every name the body defines, with its span: for "used before its definition".
    declared: HashMap<String, Span>,
    state: KernelState,
    extents: Vec<String>,
    /// Where each extent is bound: the layout of the first parameter naming it.
    extent_spans: HashMap<String, Span>,
    params: Vec<KernelParam>,
    launch: Option<(Launch, Span)>,
    /// A launch statement was written, even if it had errors.
    launch_written: bool,
    conditions: Vec<Condition>,
    bindings: Vec<Binding>,
    reference: Option<(Reference, Span)>,
    diags: Vec<Diagnostic>,
}

impl KernelChecker {
    fn check(mut self, k: &ast::Kernel) -> Result<Kernel, Vec<Diagnostic>> {
        for p in &k.params {
            self.param(p);
        }
        declare_names(&k.body, &mut self.declared);
        let body = self.block(&k.body);
        let launch = match self.launch.take() {
            Some((l, span)) => {
                self.check_threads(&l, span);
                l
            }
            None if self.launch_written => Launch {
                grid: vec![],
                block: vec![],
                min_blocks: None,
            },
            None => {
                self.diags.push(
                    Diagnostic::new(format!("kernel `{}` has no launch statement", k.name.name), k.name.span)
                        .with_help("add `launch grid(...), block(...);` to say how many blocks and threads run it"),
                );
                Launch {
                    grid: vec![],
                    block: vec![],
                    min_blocks: None,
                }
            }
        };
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        Ok(Kernel {
            name: k.name.name.clone(),
            span: k.name.span,
            params: self.params,
            extents: self.extents,
            launch,
            shared: self.state.shared,
            registers: self.state.registers,
            body,
            conditions: self.conditions,
            bindings: self.bindings,
            reference: self.reference.map(|(r, _)| r),
        })
    }

    fn param(&mut self, p: &ast::Param) {
        let (kind, value) = match &p.ty {
            ast::Type::Scalar(t) => match Elem::parse(&t.name) {
                Some(e) => (
                    ParamKind::Scalar(e),
                    Value::Scalar {
                        index: self.params.len(),
                        elem: e,
                    },
                ),
                None => return self.broken_param(p, unknown_elem(t)),
            },
            ast::Type::Tensor { elem, layout } => {
                let Some(e) = Elem::parse(&elem.name) else {
                    return self.broken_param(p, unknown_elem(elem));
                };
                // In a parameter's layout, unknown names are the run-time extents it binds.
                let mut extents = Vec::new();
                collect_names(layout, &mut extents);
                for n in &extents {
                    if !self.extents.contains(n) {
                        self.extents.push(n.clone());
                        self.extent_spans.insert(n.clone(), layout.span);
                    }
                }
                let l = match self.eval_with_extents(layout) {
                    Ok(v) => match v.as_layout() {
                        Some(l) => l,
                        None => {
                            let d =
                                Diagnostic::new("a tensor parameter needs a layout", layout.span)
                                    .with_label(format!("this is {}", v.kind()))
                                    .with_help("write e.g. tensor<f32, (M, K):(1, M)>");
                            return self.broken_param(p, d);
                        }
                    },
                    Err(d) => return self.broken_param(p, d),
                };
                let view = View {
                    base: Base::Param(self.params.len()),
                    elem: e,
                    layout: l.clone(),
                    offset: Int::Static(0),
                    coords: CoordFn::of_param(&l),
                };
                (
                    ParamKind::Tensor { elem: e, layout: l },
                    Value::Tensor(view),
                )
            }
        };
        self.define(&p.name, Some(value));
        self.params.push(KernelParam {
            name: p.name.name.clone(),
            kind,
        });
    }

    fn broken_param(&mut self, p: &ast::Param, d: Diagnostic) {
        self.diags.push(d);
        self.define(&p.name, None);
    }

    fn eval_with_extents(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let extents = &self.extents;
        let lookup = |n: &str| {
            extents
                .iter()
                .any(|x| x == n)
                .then(|| Value::Int(Int::var(n)))
        };
        let mut none = super::algebra::AlgebraOnly;
        let mut ev = Evaluator::new(&lookup, &mut none);
        let v = ev.eval(e)?;
        self.take_conditions(ev.conditions, e.span);
        Ok(v)
    }

    /// Evaluates an expression in the kernel's scope.
    fn eval(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let scope = &self.scope;
        let extents = &self.extents;
        let lookup = |n: &str| -> Option<Value> {
            if let Some(entry) = scope.get(n) {
                return entry.value.clone();
            }
            if extents.iter().any(|x| x == n) {
                return Some(Value::Int(Int::var(n)));
            }
            builtin_name(n)
        };
        let declared = &self.declared;
        let later = |n: &str| declared.get(n).copied();
        let mut ev = Evaluator::new(&lookup, &mut self.state).with_defined_later(&later);
        let v = ev.eval(e);
        let (conds, undefined) = (ev.conditions, ev.undefined);
        // An undefined name is reported once: later uses see it as broken.
        for n in undefined {
            if !self.declared.contains_key(&n) {
                self.scope.entry(n).or_insert(Entry {
                    value: None,
                    span: e.span,
                });
            }
        }
        let v = v?;
        self.take_conditions(conds, e.span);
        Ok(v)
    }

    /// True when `e` uses a name whose definition failed: its error is
    /// already reported, so the statement is skipped without another.
    fn uses_broken(&self, e: &Expr) -> bool {
        let mut names = Vec::new();
        all_names(e, &mut names, true);
        names
            .iter()
            .any(|n| self.scope.get(n).is_some_and(|entry| entry.value.is_none()))
    }

    /// Conditions on extents become launch conditions; a condition on a
    /// block, thread or loop index cannot be checked at launch. (A block's
    /// full tiles are a fact about its `block.*` too: the runtime launches
    /// the unguarded variant on the blocks where it holds.)
    fn take_conditions(&mut self, conds: Conditions, span: Span) {
        for c in conds.list {
            let mut names = Vec::new();
            c.fact.names(&mut names);
            let known = |n: &String| {
                self.extents.contains(n) || (c.needed_by == FULL_TILES && Builtin::is_block(n))
            };
            match names.iter().find(|n| !known(n)) {
                None => {
                    if !self.conditions.contains(&c) {
                        self.conditions.push(c);
                    }
                }
                Some(n) => self.diags.push(
                    Diagnostic::new(format!("this needs {}, which depends on `{n}`", c.fact), span)
                        .with_label(format!("needed by {}", c.needed_by))
                        .with_help("only facts about the extents can be checked at launch; use static tile sizes here"),
                ),
            }
        }
    }

    fn define(&mut self, name: &ast::Ident, value: Option<Value>) {
        // A name that shadowed an extent would change what every layout
        // naming the extent means below it, silently.
        if let Some(&bound) = self.extent_spans.get(&name.name) {
            self.diags.push(
                Diagnostic::new(
                    format!("`{}` is a run-time extent of this kernel", name.name),
                    name.span,
                )
                .with_label("defined again here")
                .with_related(bound, format!("`{}` is bound by this layout", name.name))
                .with_help("give the new value its own name"),
            );
            return;
        }
        if let Some(first) = self.scope.get(&name.name) {
            let first = first.span;
            self.diags.push(
                Diagnostic::new(format!("`{}` is already defined", name.name), name.span)
                    .with_label("defined again here")
                    .with_related(first, "first defined here")
                    .with_help("give the new value its own name"),
            );
            return;
        }
        self.scope.insert(
            name.name.clone(),
            Entry {
                value,
                span: name.span,
            },
        );
    }

    fn block(&mut self, stmts: &[ast::Stmt]) -> Vec<Stmt> {
        stmts.iter().filter_map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Option<Stmt> {
        let exprs: Vec<&Expr> = match &s.kind {
            StmtKind::Tiler(_, e)
            | StmtKind::Layout(_, e)
            | StmtKind::Let(_, e)
            | StmtKind::Expr(e) => vec![e],
            StmtKind::Launch(v) => v.iter().collect(),
            StmtKind::Reference(e) => vec![e],
            StmtKind::For { start, end, .. } => vec![start, end],
        };
        if exprs.iter().any(|e| self.uses_broken(e)) {
            if let StmtKind::Tiler(n, _) | StmtKind::Layout(n, _) | StmtKind::Let(n, _) = &s.kind {
                self.define(n, None);
            }
            if matches!(s.kind, StmtKind::Launch(_)) {
                self.launch_written = true;
            }
            return None;
        }
        match &s.kind {
            StmtKind::Tiler(n, e) => {
                let v = self.eval(e).and_then(|v| match v.to_tiler() {
                    Some(_) => Ok(v),
                    None => Err(Diagnostic::new(
                        "a tiler must be a shape, a layout or [L0, L1, ...]",
                        e.span,
                    )
                    .with_label(format!("this is {}", v.kind()))
                    .with_help("e.g. tiler cta = (128, 128, 8);")),
                });
                self.define_result(n, v);
                None
            }
            StmtKind::Layout(n, e) => {
                let v = self.eval(e).and_then(|v| match v {
                    Value::Layout(_) | Value::Composed(_) => Ok(v),
                    other => Err(
                        Diagnostic::new("a layout declaration needs a layout", e.span)
                            .with_label(format!("this is {}", other.kind()))
                            .with_help("write SHAPE:STRIDE, e.g. layout sA = (128, 8):(1, 128);"),
                    ),
                });
                self.define_result(n, v);
                None
            }
            StmtKind::Let(n, e) => {
                let v = self.eval(e);
                if let Ok(Value::Tensor(view)) = &v {
                    self.bindings.push(Binding {
                        name: n.name.clone(),
                        view: view.clone(),
                        span: n.span,
                    });
                }
                self.define_result(n, v);
                None
            }
            StmtKind::Launch(parts) => {
                self.launch_stmt(parts, s.span);
                None
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
            } => {
                let bounds = self.eval(start).and_then(|a| Ok((a, self.eval(end)?)));
                let (a, b) = match bounds {
                    Ok((a, b)) => match (a.to_int(), b.to_int()) {
                        (Some(a), Some(b)) => (a, b),
                        _ => {
                            self.diags.push(
                                Diagnostic::new(
                                    "loop bounds must be integers",
                                    Span {
                                        start: start.span.start,
                                        end: end.span.end,
                                    },
                                )
                                .with_help("e.g. for k in 0..size(gA, 2)"),
                            );
                            return None;
                        }
                    },
                    Err(d) => {
                        self.diags.push(d);
                        return None;
                    }
                };
                let outer: Vec<String> = self.scope.keys().cloned().collect();
                self.define(var, Some(Value::Int(Int::var(&var.name))));
                let body = self.block(body);
                // The loop variable and the body's names are not visible after the loop.
                self.scope.retain(|name, _| outer.contains(name));
                Some(Stmt {
                    op: Op::For {
                        var: var.name.clone(),
                        start: a,
                        end: b,
                        body,
                    },
                    span: s.span,
                })
            }
            StmtKind::Reference(e) => {
                match self.reference_stmt(e) {
                    Ok(r) => match &self.reference {
                        Some((_, first)) => self.diags.push(
                            Diagnostic::new("a kernel states one reference", s.span)
                                .with_related(*first, "the first one")
                                .with_help("keep the reference that says what the kernel computes"),
                        ),
                        None => self.reference = Some((r, s.span)),
                    },
                    Err(d) => self.diags.push(d),
                }
                None
            }
            StmtKind::Expr(e) => match self.op(e) {
                Ok(op) => Some(Stmt { op, span: s.span }),
                Err(d) => {
                    self.diags.push(d);
                    None
                }
            },
        }
    }

    fn define_result(&mut self, n: &ast::Ident, v: Result<Value, Diagnostic>) {
        match v {
            Ok(v) => self.define(n, Some(v)),
            Err(d) => {
                self.diags.push(d);
                self.define(n, None);
            }
        }
    }

    fn launch_stmt(&mut self, parts: &[Expr], span: Span) {
        self.launch_written = true;
        if let Some((_, first)) = &self.launch {
            let first = *first;
            return self.diags.push(
                Diagnostic::new("a kernel has one launch statement", span)
                    .with_related(first, "the first one")
                    .with_help("merge them into one `launch grid(...), block(...);`"),
            );
        }
        let mut grid = None;
        let mut block = None;
        let mut min_blocks = None;
        for p in parts {
            let (which, args) = match &p.kind {
                ExprKind::Call(f, args) => match &f.kind {
                    ExprKind::Name(n) if n == "grid" || n == "block" || n == "min_blocks" => {
                        (n.as_str(), args)
                    }
                    _ => return self.diags.push(launch_help(p.span)),
                },
                _ => return self.diags.push(launch_help(p.span)),
            };
            let mut dims = Vec::new();
            for a in args {
                match self.eval(a) {
                    Ok(v) => match v.to_int() {
                        Some(i) => dims.push(i),
                        None => {
                            return self.diags.push(
                                Diagnostic::new(format!("{which} dimensions are integers"), a.span)
                                    .with_label(format!("this is {}", v.kind())),
                            );
                        }
                    },
                    Err(d) => return self.diags.push(d),
                }
            }
            if dims.is_empty() || dims.len() > 3 {
                return self.diags.push(
                    Diagnostic::new(
                        format!("{which}(...) takes one to three dimensions"),
                        p.span,
                    )
                    .with_label(format!("{} given", dims.len())),
                );
            }
            if which == "block" && !dims.iter().all(Int::is_static) {
                return self.diags.push(
                    Diagnostic::new("the block size must be static", p.span)
                        .with_help("thread layouts are static; use block(size(tC))"),
                );
            }
            match which {
                "grid" => grid = Some(dims),
                "block" => block = Some(dims),
                _ => match dims.as_slice() {
                    [Int::Static(n)] if (1..=32).contains(n) => min_blocks = Some(*n),
                    _ => {
                        return self.diags.push(
                            Diagnostic::new("min_blocks takes one static count of blocks per multiprocessor", p.span)
                                .with_help("e.g. min_blocks(2): registers are then limited so that two blocks fit"),
                        );
                    }
                },
            }
        }
        match (grid, block) {
            (Some(grid), Some(block)) => {
                self.launch = Some((
                    Launch {
                        grid,
                        block,
                        min_blocks,
                    },
                    span,
                ))
            }
            _ => self.diags.push(launch_help(span)),
        }
    }

    /// The block has as many threads as every thread layout used to partition.
    fn check_threads(&mut self, l: &Launch, span: Span) {
        let block = l.block.iter().fold(Int::Static(1), |a, b| a.mul(b));
        let mut reported: Vec<&str> = Vec::new();
        for u in &self.state.thread_uses {
            // One report per thread layout, at its first use.
            if u.threads != block && !reported.contains(&u.name.as_str()) {
                reported.push(&u.name);
                self.diags.push(
                    Diagnostic::new(
                        format!(
                            "`{}` has {} threads but the block has {block}",
                            u.name, u.threads
                        ),
                        u.span,
                    )
                    .with_label(format!("partitions by {} threads", u.threads))
                    .with_related(span, format!("launches {block} threads a block"))
                    .with_help(format!(
                        "use block(size({})) or a thread layout of size {block}",
                        u.name
                    )),
                );
            }
        }
        if let Some(b) = block.as_static()
            && !(1..=1024).contains(&b)
        {
            self.diags.push(
                Diagnostic::new(format!("a block has at most 1024 threads, not {b}"), span)
                    .with_help("use a smaller thread layout"),
            );
        }
    }

    /// An expression statement: one of the operations.
    fn op(&mut self, e: &Expr) -> Result<Op, Diagnostic> {
        let (name, args) = match &e.kind {
            ExprKind::Call(f, args) => match &f.kind {
                ExprKind::Name(n) => (n.as_str(), args),
                _ => return Err(does_nothing(e.span)),
            },
            _ => return Err(does_nothing(e.span)),
        };
        let arity = |n: usize, usage: &str| -> Result<(), Diagnostic> {
            if args.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::new(
                    format!("`{name}` takes {n} argument(s), not {}", args.len()),
                    e.span,
                )
                .with_help(format!("usage: {usage}")))
            }
        };
        match name {
            "sync" => {
                arity(0, "sync()")?;
                Ok(Op::Sync)
            }
            "copy" | "copy_async" => {
                arity(2, &format!("{name}(src, dst)"))?;
                let src = self.tensor_arg(&args[0], name)?;
                let dst = self.tensor_arg(&args[1], name)?;
                same_elem(&src, &args[0], &dst, &args[1])?;
                same_modes(&src, &args[0], &dst, &args[1], name)?;
                writable(&dst, &args[1], name)?;
                let asynchronous = name == "copy_async";
                if asynchronous {
                    async_spaces(&src, &args[0], &dst, &args[1])?;
                }
                Ok(Op::Copy {
                    src,
                    dst,
                    asynchronous,
                })
            }
            "cp_async_fence" => {
                arity(0, "cp_async_fence()")?;
                Ok(Op::AsyncFence)
            }
            "cp_async_wait" => {
                arity(
                    1,
                    "cp_async_wait(N)  waits until at most N fenced groups are in flight",
                )?;
                match self.eval(&args[0])?.to_int().and_then(|n| n.as_static()) {
                    Some(n) if (0..=7).contains(&n) => Ok(Op::AsyncWait(n as u32)),
                    _ => Err(Diagnostic::new(
                        "cp_async_wait takes a constant from 0 to 7",
                        args[0].span,
                    )
                    .with_help("the number of fenced groups that may stay in flight: stages - 2 for a pipeline")),
                }
            }
            "gemm" => {
                arity(3, "gemm(A (M,K), B (N,K), C (M,N))")?;
                let a = self.tensor_arg(&args[0], "gemm")?;
                let b = self.tensor_arg(&args[1], "gemm")?;
                let c = self.tensor_arg(&args[2], "gemm")?;
                same_elem(&a, &args[0], &b, &args[1])?;
                same_elem(&a, &args[0], &c, &args[2])?;
                gemm_shapes([(&a, &args[0]), (&b, &args[1]), (&c, &args[2])])?;
                writable(&c, &args[2], "gemm")?;
                Ok(Op::Gemm { a, b, c })
            }
            "axpby" => {
                arity(4, "axpby(alpha, X, beta, Y)  computes Y = alpha*X + beta*Y")?;
                let alpha = self.scalar_arg(&args[0])?;
                let x = self.tensor_arg(&args[1], "axpby")?;
                let beta = self.scalar_arg(&args[2])?;
                let y = self.tensor_arg(&args[3], "axpby")?;
                same_elem(&x, &args[1], &y, &args[3])?;
                same_modes(&x, &args[1], &y, &args[3], "axpby")?;
                writable(&y, &args[3], "axpby")?;
                Ok(Op::Axpby { alpha, x, beta, y })
            }
            "clear" | "fill" => {
                let value = if name == "clear" {
                    arity(1, "clear(T)")?;
                    0.0
                } else {
                    arity(2, "fill(T, value)")?;
                    match self.scalar_arg(&args[1])? {
                        Scalar::Literal(v) => v,
                        Scalar::Param(_) => {
                            return Err(Diagnostic::new("fill takes a number", args[1].span)
                                .with_help("fill(T, 0.5); to fill with a parameter, use axpby"));
                        }
                    }
                };
                let dst = self.tensor_arg(&args[0], name)?;
                writable(&dst, &args[0], name)?;
                Ok(Op::Fill { dst, value })
            }
            _ => {
                // Evaluate for its errors (unknown function, bad arguments), then say it does nothing.
                self.eval(e)?;
                Err(does_nothing(e.span))
            }
        }
    }

    /// `reference gemm(A, B, C, alpha, beta)` and friends: the operands are
    /// parameters, with the shapes the computation needs.
    fn reference_stmt(&mut self, e: &Expr) -> Result<Reference, Diagnostic> {
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

    fn tensor_arg(&mut self, e: &Expr, op: &str) -> Result<View, Diagnostic> {
        match self.eval(e)? {
            Value::Tensor(t) => Ok(t),
            v => Err(Diagnostic::new(format!("`{op}` works on tensors"), e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help("make a tensor with local_tile, local_partition, shared<T>(layout) or registers<T>(shape)")),
        }
    }

    fn scalar_arg(&mut self, e: &Expr) -> Result<Scalar, Diagnostic> {
        match self.eval(e)? {
            Value::Scalar { index, .. } => Ok(Scalar::Param(index)),
            Value::Float(v) => Ok(Scalar::Literal(v)),
            Value::Int(Int::Static(v)) => Ok(Scalar::Literal(v as f64)),
            v => Err(Diagnostic::new("expected a scalar", e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help("a scalar parameter such as alpha, or a number")),
        }
    }
}

/// `block.x` and friends, run-time values of every thread.
fn builtin_name(n: &str) -> Option<Value> {
    Builtin::parse(n).map(|b| Value::Int(b.int()))
}

fn declare_names(stmts: &[ast::Stmt], out: &mut HashMap<String, Span>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Tiler(n, _) | StmtKind::Layout(n, _) | StmtKind::Let(n, _) => {
                out.entry(n.name.clone()).or_insert(n.span);
            }
            StmtKind::For { body, .. } => declare_names(body, out),
            _ => {}
        }
    }
}

/// Every name an expression mentions; with `callees`, the names of called functions too.
fn all_names(e: &Expr, out: &mut Vec<String>, callees: bool) {
    match &e.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Tuple(v) | ExprKind::Tiler(v) => {
            v.iter().for_each(|x| all_names(x, out, callees))
        }
        ExprKind::Layout(a, b) => {
            all_names(a, out, callees);
            all_names(b, out, callees);
        }
        ExprKind::Call(f, args) | ExprKind::Index(f, args) => {
            if callees || !matches!(f.kind, ExprKind::Name(_)) {
                all_names(f, out, callees);
            }
            args.iter().for_each(|x| all_names(x, out, callees));
        }
        ExprKind::Binary(_, a, b) => {
            all_names(a, out, callees);
            all_names(b, out, callees);
        }
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Under => {}
    }
}

/// The extents a parameter layout binds: its plain names, in first-use order.
fn collect_names(e: &Expr, out: &mut Vec<String>) {
    let mut names = Vec::new();
    all_names(e, &mut names, false);
    for n in names {
        let extent = !n.contains(['.', '<']) && !matches!(n.as_str(), "LayoutLeft" | "LayoutRight");
        if extent && !out.contains(&n) {
            out.push(n);
        }
    }
}

fn unknown_elem(t: &ast::Ident) -> Diagnostic {
    Diagnostic::new(format!("unknown element type `{}`", t.name), t.span)
        .with_help("element types are f32, f16, bf16 and i32")
}

fn launch_help(span: Span) -> Diagnostic {
    Diagnostic::new("a launch statement names the grid and the block", span)
        .with_help("write `launch grid(ceil_div(M, 128), ceil_div(N, 128)), block(size(tC));`")
}

fn does_nothing(span: Span) -> Diagnostic {
    Diagnostic::new("this statement does nothing", span)
        .with_help("statements are copy, copy_async, cp_async_fence, cp_async_wait, gemm, axpby, fill, clear and sync; bind values with `let`")
}

fn same_elem(a: &View, ae: &Expr, b: &View, be: &Expr) -> Result<(), Diagnostic> {
    if a.elem == b.elem {
        return Ok(());
    }
    Err(Diagnostic::new(
        format!("element types differ: {} and {}", a.elem, b.elem),
        ae.span,
    )
    .with_label(format!("{} elements", a.elem))
    .with_related(be.span, format!("{} elements", b.elem))
    .with_help("give both tensors one element type"))
}

/// Mode sizes of a tensor, for comparing operands.
fn mode_sizes(v: &View) -> Vec<Int> {
    v.layout
        .shape()
        .modes()
        .iter()
        .map(IntTuple::product)
        .collect()
}

fn same_modes(a: &View, ae: &Expr, b: &View, be: &Expr, op: &str) -> Result<(), Diagnostic> {
    let (sa, sb) = (mode_sizes(a), mode_sizes(b));
    if sa == sb {
        return Ok(());
    }
    let what = if sa.len() != sb.len() {
        format!("{} modes and {} modes", sa.len(), sb.len())
    } else {
        "shapes".to_string()
    };
    Err(Diagnostic::new(format!("`{op}` operands have different {what}"), ae.span)
        .with_label(format!("shape {}", a.layout.shape()))
        .with_related(be.span, format!("shape {}", b.layout.shape()))
        .with_help("both operands need the same extent in every mode; check the thread layouts and tilers that made them"))
}

/// cp.async moves global memory into shared memory, nothing else.
fn async_spaces(src: &View, se: &Expr, dst: &View, de: &Expr) -> Result<(), Diagnostic> {
    let (at, what) = match (src.base, dst.base) {
        (Base::Param(_), Base::Shared(_)) => return Ok(()),
        (Base::Param(_), _) => (de, format!("this is in {}", dst.base.space())),
        _ => (se, format!("this is in {}", src.base.space())),
    };
    Err(
        Diagnostic::new("`copy_async` copies from global to shared memory", at.span)
            .with_label(what)
            .with_help("use copy(src, dst) for other copies"),
    )
}

fn writable(v: &View, e: &Expr, op: &str) -> Result<(), Diagnostic> {
    if v.layout.is_static() || matches!(v.base, Base::Param(_)) {
        return Ok(());
    }
    Err(Diagnostic::new(
        format!("`{op}` writes to a tensor of run-time shape outside global memory"),
        e.span,
    )
    .with_label(format!("shape {}", v.layout.shape())))
}

fn gemm_shapes(ops: [(&View, &Expr); 3]) -> Result<(), Diagnostic> {
    let names = ["A", "B", "C"];
    let modes: Vec<Vec<Int>> = ops.iter().map(|(v, _)| mode_sizes(v)).collect();
    for (i, (v, e)) in ops.iter().enumerate() {
        if modes[i].len() != 2 {
            return Err(Diagnostic::new(
                format!("gemm's {} must have two modes", names[i]),
                e.span,
            )
            .with_label(format!("shape {} has {}", v.layout.shape(), modes[i].len()))
            .with_help("gemm(A (M,K), B (N,K), C (M,N)); slice or partition to two modes"));
        }
    }
    let agree = [
        (0, 0, 2, 0, "M", "A's mode 0", "C's mode 0"),
        (1, 0, 2, 1, "N", "B's mode 0", "C's mode 1"),
        (0, 1, 1, 1, "K", "A's mode 1", "B's mode 1"),
    ];
    for (x, xm, y, ym, dim, xs, ys) in agree {
        if modes[x][xm] != modes[y][ym] {
            return Err(Diagnostic::new(
                format!("gemm's {dim} extents disagree: {xs} is {} but {ys} is {}", modes[x][xm], modes[y][ym]),
                ops[x].1.span,
            )
            .with_label(format!("{} shape {}", names[x], ops[x].0.layout.shape()))
            .with_related(ops[y].1.span, format!("{} shape {}", names[y], ops[y].0.layout.shape()))
            .with_help("gemm(A (M,K), B (N,K), C (M,N)): partition A by the rows of the thread layout and B by its columns, step(1, X) and step(X, 1)"));
        }
    }
    Ok(())
}

/// The tensor operations of a kernel, on evaluated arguments.
impl Functions for KernelState {
    fn call(&mut self, a: &Args, conds: &mut Conditions) -> Option<Result<Value, Diagnostic>> {
        let (base, ty) = match a.name.split_once('<') {
            Some((b, t)) => (b, Some(t.trim_end_matches('>'))),
            None => (a.name, None),
        };
        let r = match base {
            "local_tile" => local_tile(a, conds),
            "local_partition" => self.local_partition(a, conds),
            "shared" => self.shared(a, ty),
            "registers" => self.registers(a, ty),
            _ => return None,
        };
        Some(r)
    }
}

impl KernelState {
    fn shared(&mut self, a: &Args, ty: Option<&str>) -> Result<Value, Diagnostic> {
        a.arity(&[1])?;
        let elem = elem_arg(a, ty)?;
        let layout = a.values[0]
            .as_layout()
            .ok_or_else(|| a.wrong(0, "a layout"))?;
        let len = layout
            .cosize()
            .as_static()
            .filter(|_| layout.is_static())
            .ok_or_else(|| {
                Diagnostic::new("shared memory needs a static layout", a.spans[0])
                    .with_label(format!("layout {layout}"))
            })?;
        // Overflow-checked: a layout of 2^62 floats must not count as 0 bytes.
        let bytes = len.checked_mul(elem.bytes());
        let used = bytes.and_then(|bytes| {
            self.shared.iter().try_fold(bytes, |sum, b| {
                sum.checked_add(b.len.checked_mul(b.elem.bytes())?)
            })
        });
        if used.is_none_or(|u| u > SHARED_LIMIT_BYTES) {
            let used = used.map_or("more than 2^63".into(), |u| u.to_string());
            let bytes = bytes.map_or("more than 2^63".into(), |b| b.to_string());
            return Err(Diagnostic::new(
                format!("shared memory exceeds the device limit: {used} bytes of {SHARED_LIMIT_BYTES} (227 KB on sm_90)"),
                a.call,
            )
            .with_label(format!("{len} {elem} elements = {bytes} bytes"))
            .with_help("use smaller tiles, fewer stages, or a narrower element type"));
        }
        self.shared.push(SharedBuffer { elem, len });
        let view = View {
            base: Base::Shared(self.shared.len() - 1),
            elem,
            layout,
            offset: Int::Static(0),
            coords: Vec::new(),
        };
        Ok(Value::Tensor(view))
    }

    fn registers(&mut self, a: &Args, ty: Option<&str>) -> Result<Value, Diagnostic> {
        a.arity(&[1, 2])?;
        let elem = elem_arg(a, ty)?;
        let shape = a.shape(0)?;
        let len = shape.product().as_static().filter(|_| shape.is_static()).ok_or_else(|| {
            Diagnostic::new("registers need a static shape", a.spans[0])
                .with_label(format!("shape {shape}"))
                .with_help("partition down to static per-thread shapes first, e.g. registers<f32>(shape(tCgC))")
        })?;
        if len > 4096 {
            return Err(Diagnostic::new(
                format!("{len} registers per thread is more than a thread can hold"),
                a.call,
            )
            .with_help("use a larger thread layout so each thread owns fewer elements"));
        }
        let init = match a.values.get(1) {
            None => None,
            Some(Value::Float(v)) => Some(*v),
            Some(Value::Int(Int::Static(v))) => Some(*v as f64),
            Some(_) => return Err(a.wrong(1, "a number")),
        };
        self.registers.push(RegisterArray { elem, len, init });
        let view = View {
            base: Base::Registers(self.registers.len() - 1),
            elem,
            layout: Layout::col_major(&shape),
            offset: Int::Static(0),
            coords: Vec::new(),
        };
        Ok(Value::Tensor(view))
    }

    /// `local_partition(T, threads, index [, step])`: thread `index`'s part of
    /// `T` when the thread layout tiles `T` (CuTe's outer partition).
    fn local_partition(&mut self, a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
        a.arity(&[3, 4])?;
        let t = tensor(a, 0)?;
        let thr = match &a.values[1] {
            Value::Layout(l) => l.clone(),
            _ => return Err(a.wrong(1, "a thread layout")),
        };
        let index = a.int(2)?;
        let diced = match a.values.get(3) {
            Some(step) => dice_layout(&thr, &step_mask(a, 3, step, thr.rank())?),
            None => thr.clone(),
        };
        if diced.rank() > t.layout.rank() {
            return Err(Diagnostic::new(
                format!(
                    "the thread layout has {} modes but the tensor has {}",
                    diced.rank(),
                    t.layout.rank()
                ),
                a.spans[1],
            )
            .with_label(format!("{diced}"))
            .with_related(a.spans[0], format!("shape {}", t.layout.shape()))
            .with_help(
                "use a thread layout with at most as many modes, or a step that drops modes",
            ));
        }
        let name = source_name(a, 1);
        let tiler = diced.shape().product_each().modes();
        let t = even(
            t,
            &tiler,
            None,
            a,
            conds,
            &format!("the thread layout `{name}`"),
        )?;
        self.thread_uses.push(ThreadUse {
            name,
            threads: thr.size(),
            span: a.call,
        });
        let by = Tiler::from_shape(&IntTuple::Tuple(tiler.clone()));
        let view = t
            .map_layout(&mut |l| divide(l, &by, Grouping::Zipped, conds))
            .map_err(|e| algebra_error(e, a.call))?;
        let divided = view.layout.clone();
        // The thread's coordinate in each mode: `(index / stride) % shape` per
        // leaf, then the leaves of a mode combined column-major.
        let mut coord: Vec<Coord> = diced
            .modes()
            .iter()
            .map(|m| Coord::Int(flat_coord(m, &index)))
            .collect();
        let tile_rank = divided.shape().get(0).map_or(1, IntTuple::rank);
        coord.resize(tile_rank, Coord::Under);
        let rest = divided.shape().get(1).map_or(1, IntTuple::rank);
        let rest_coord = if rest > 1 {
            Coord::Tuple(vec![Coord::Under; rest])
        } else {
            Coord::Under
        };
        let c = Coord::Tuple(vec![Coord::Tuple(coord), rest_coord]);
        view.slice(&c)
            .map(Value::Tensor)
            .map_err(|e| algebra_error(e, a.call))
    }
}

/// `local_tile(T, tiler, coord [, step])`: the tile at `coord` of `T` cut by
/// `tiler` (CuTe's inner partition); the modes of the tiler and coordinate
/// with `X` in the step are left out.
fn local_tile(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[3, 4])?;
    let t = tensor(a, 0)?;
    let tiler = match a.values[1].to_tiler() {
        Some(Tiler::Tuple(v)) => v,
        Some(other) => vec![other],
        None => return Err(a.wrong(1, "a tiler")),
    };
    let coord = match a.values[2].to_coord() {
        Some(Coord::Tuple(v)) => v,
        Some(c) => vec![c],
        None => return Err(a.wrong(2, "a coordinate")),
    };
    if tiler.len() != coord.len() {
        return Err(Diagnostic::new(
            format!(
                "the tiler has {} modes but the coordinate has {}",
                tiler.len(),
                coord.len()
            ),
            a.spans[2],
        )
        .with_label(format!("{} coordinates", coord.len()))
        .with_related(a.spans[1], format!("{} modes", tiler.len()))
        .with_help("give one coordinate per tiler mode; `_` keeps a mode whole"));
    }
    let keep = match a.values.get(3) {
        Some(step) => step_mask(a, 3, step, tiler.len())?,
        None => vec![true; tiler.len()],
    };
    let tiler: Vec<Tiler> = tiler
        .into_iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x)
        .collect();
    let coord: Vec<Coord> = coord
        .into_iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x)
        .collect();
    if tiler.len() > t.layout.rank() {
        return Err(Diagnostic::new(
            format!(
                "the tiler keeps {} modes but the tensor has {}",
                tiler.len(),
                t.layout.rank()
            ),
            a.spans[1],
        )
        .with_related(a.spans[0], format!("shape {}", t.layout.shape()))
        .with_help(
            "use a step with `X` for the modes this tensor does not have, e.g. step(1, X, 1)",
        ));
    }
    let sizes: Vec<IntTuple> = tiler
        .iter()
        .map(|x| match x {
            Tiler::Layout(l) => IntTuple::Int(l.size()),
            Tiler::Int(n) => IntTuple::Int(n.clone()),
            Tiler::Under => IntTuple::from(1),
            Tiler::Tuple(_) => IntTuple::from(1),
        })
        .collect();
    let t = even(t, &sizes, Some(&coord), a, conds, "the tile")?;
    let by = Tiler::Tuple(tiler);
    let view = t
        .map_layout(&mut |l| divide(l, &by, Grouping::Zipped, conds))
        .map_err(|e| algebra_error(e, a.call))?;
    let divided = view.layout.clone();
    let tile_rank = divided.shape().get(0).map_or(1, IntTuple::rank);
    let rest_rank = divided.shape().get(1).map_or(1, IntTuple::rank);
    let mut rest = coord;
    rest.resize(rest_rank, Coord::Under);
    let tile = if tile_rank > 1 {
        Coord::Tuple(vec![Coord::Under; tile_rank])
    } else {
        Coord::Under
    };
    let rest = if rest_rank > 1 || rest.len() != 1 {
        Coord::Tuple(rest)
    } else {
        rest.remove(0)
    };
    view.slice(&Coord::Tuple(vec![tile, rest]))
        .map(Value::Tensor)
        .map_err(|e| algebra_error(e, a.call))
}

fn tensor(a: &Args, i: usize) -> Result<View, Diagnostic> {
    match &a.values[i] {
        Value::Tensor(t) => Ok(t.clone()),
        _ => Err(a.wrong(i, "a tensor")),
    }
}

fn elem_arg(a: &Args, ty: Option<&str>) -> Result<Elem, Diagnostic> {
    let ty = ty.unwrap_or("");
    Elem::parse(ty).ok_or_else(|| {
        Diagnostic::new(
            format!("`{}` needs an element type f32, f16, bf16 or i32", a.name),
            a.call,
        )
        .with_help(format!(
            "write {}<f32>(...)",
            a.name.split('<').next().unwrap_or(a.name)
        ))
    })
}

/// `step(1, X, 1)` as which modes to keep.
fn step_mask(a: &Args, i: usize, step: &Value, rank: usize) -> Result<Vec<bool>, Diagnostic> {
    let items = match step {
        Value::Tuple(v) => v.clone(),
        other => vec![other.clone()],
    };
    let mask: Option<Vec<bool>> = items
        .iter()
        .map(|v| match v {
            Value::Skip => Some(false),
            Value::Int(Int::Static(1)) => Some(true),
            _ => None,
        })
        .collect();
    let mask = mask.ok_or_else(|| a.wrong(i, "a step of 1s and Xs, e.g. step(1, X, 1)"))?;
    if mask.len() != rank {
        return Err(Diagnostic::new(
            format!(
                "the step has {} modes but it selects from {rank}",
                mask.len()
            ),
            a.spans[i],
        )
        .with_help(format!("give one 1 or X per mode: {rank} in all")));
    }
    Ok(mask)
}

/// The modes of `l` that the mask keeps.
fn dice_layout(l: &Layout, keep: &[bool]) -> Layout {
    let modes: Vec<Layout> = l
        .modes()
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(m, _)| m)
        .collect();
    if modes.len() == 1 {
        modes.into_iter().next().expect("one mode")
    } else {
        Layout::concat(&modes)
    }
}

/// A thread's 1-D coordinate within mode `m` of its thread layout (CuTe's
/// `get_flat_coord`): per leaf `(index / stride) % shape`, combined colexicographically.
fn flat_coord(m: &Layout, index: &Int) -> Int {
    let mut c = Int::Static(0);
    let mut scale = Int::Static(1);
    for (s, d) in m.shape().leaves().iter().zip(m.stride().leaves()) {
        let leaf = if d.is_const(0) {
            Int::Static(0)
        } else {
            index.div(&d).rem(s)
        };
        c = c.add(&leaf.mul(&scale));
        scale = scale.mul(s);
    }
    c
}

/// Each tile extent divides the tensor's extent in its mode: statically, or
/// as a launch condition.
///
/// For a global tensor, partial tiles are allowed: what makes this block's
/// tile full is a [`FULL_TILES`] fact, `(c + 1) * tile <= extent` for a mode
/// cut at the block-uniform coordinate `c` (`at`), else the tile dividing it.
/// A mode that the tiles may overrun also bounds the view's own coordinate
/// in it: elements past a tile's edge (four threads over a mode of one) are
/// guarded by the tile, not only by the tensor, whose extent lies further.
/// Returns the view with those coordinate functions added.
fn even(
    mut t: View,
    tiles: &[IntTuple],
    at: Option<&[Coord]>,
    a: &Args,
    conds: &mut Conditions,
    what: &str,
) -> Result<View, Diagnostic> {
    let modes = t.layout.shape().modes();
    let own = CoordFn::of_param(&t.layout);
    for (i, (tile, mode)) in tiles.iter().zip(&modes).enumerate() {
        let (tile, extent) = (tile.product(), mode.product());
        let fact = Fact::divides(&tile, &extent);
        if !t.coords.is_empty() {
            let block_uniform = |c: &Int| {
                let mut names = Vec::new();
                c.names(&mut names);
                names.iter().all(|n| Builtin::is_block(n))
            };
            let here = match at.and_then(|c| c.get(i)) {
                Some(Coord::Int(c)) if block_uniform(c) => {
                    Fact::Le(c.add(&Int::Static(1)).mul(&tile), extent.clone())
                }
                _ => fact.clone(),
            };
            if fact.decide() != Some(true) && !t.coords.contains(&own[i]) {
                t.coords.push(own[i].clone());
            }
            conds.record(here, FULL_TILES);
            continue;
        }
        conds
            .require(fact, EVEN_PARTITION, || {
                tilec_layout::AlgebraError::Invalid {
                    op: "partition",
                    why: String::new(),
                }
            })
            .map_err(|_| {
                Diagnostic::new(
                    format!(
                        "{what} does not divide the tensor evenly: {tile} into {extent} in mode {i}"
                    ),
                    a.spans[1],
                )
                .with_label(format!("{tile} in mode {i}"))
                .with_related(a.spans[0], format!("shape {}", t.layout.shape()))
                .with_help(format!(
                    "make mode {i} of {what} divide {extent}, or pad the tensor to a multiple of {tile} in mode {i}"
                ))
            })?;
    }
    Ok(t)
}

/// Argument `i` as written if it is a name, else its value, for messages.
fn source_name(a: &Args, i: usize) -> String {
    a.names
        .get(i)
        .cloned()
        .flatten()
        .unwrap_or_else(|| a.values[i].to_string())
}
