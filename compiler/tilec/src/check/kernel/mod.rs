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
//!
//! This file holds the checker's core: parameters, scope and statements.
//! `functions` has the kernel-level functions the evaluator calls
//! (`local_tile`, `local_partition`, `shared`, `registers`), `partition`
//! the evenness of their cuts, `operations` the operation statements
//! (`copy`, `gemm`, ...), `launch` the launch statement and the block's
//! threads, and `reference` the computation a kernel states.

mod block_reduce;
mod elementwise;
mod functions;
mod integers;
mod launch;
mod names;
mod operations;
mod params;
mod partition;
pub mod pipeline;
pub mod predication;
mod ranges;
mod reference;
mod scope;
mod stages;
mod strides;
mod threads;
mod tma_rules;
pub mod tune;
mod turns;
mod writes;

use super::algebra::Evaluator;
use super::program::{
    Base, Binding, Elem, Kernel, KernelParam, Launch, Op, Reference, RegisterArray, Settings,
    SharedBuffer, Stmt, StrideSymbol, Tunable,
};
use super::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, Expr, StmtKind};
use names::{all_names, declare_names};
use std::collections::HashMap;
use tilec_layout::{Builtin, Condition, Conditions, Int, Operand, SM_COUNT};

/// What a partition that must divide evenly (no fallback) is needed by.
pub const EVEN_PARTITION: &str = "an even partition";

/// What the facts that make a block's tiles of global tensors full are
/// needed by: about the extents (every k-tile full) or about `block.*` too
/// (this block's tile is inside the tensor). The unguarded variant runs
/// where they hold; the guarded variant runs anywhere.
pub const FULL_TILES: &str = "full tiles";

/// Shared memory one block may use on sm_90.
pub const SHARED_LIMIT_BYTES: i64 = 227 * 1024;

/// Parses and checks a `.tile` source, every tunable at its default.
pub fn check_source(src: &str) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
    check_source_with(src, &Settings::new())
}

/// Parses and checks a `.tile` source, tunables named in `settings` at
/// their values.
pub fn check_source_with(src: &str, settings: &Settings) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
    let program = crate::syntax::parse_program(src).map_err(|d| vec![d])?;
    check_program(&program, settings)
}

pub fn check_program(
    program: &ast::Program,
    settings: &Settings,
) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
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
        let checker = KernelChecker {
            kernel: k.name.name.clone(),
            settings: settings.clone(),
            ..KernelChecker::default()
        };
        match checker.check(k) {
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
    let names: Vec<&str> = program
        .kernels
        .iter()
        .map(|k| k.name.name.as_str())
        .collect();
    diags.extend(reference::check_kernel_references(&kernels, &names));
    if diags.is_empty() {
        Ok(kernels)
    } else {
        Err(diags)
    }
}

/// A name in scope: its value (`None` when its definition failed), where
/// it was defined, and the MMA operand it is a partition for (`let tCsA =
/// partition_A(..)` and its slices) with the call that made it, so that a
/// gemm given its operands in the wrong places is an error even where
/// their shapes agree.
#[derive(Clone)]
struct Entry {
    value: Option<Value>,
    span: Span,
    role: Option<(Operand, Span)>,
}

/// A `local_partition` by a thread layout, remembered to compare with the block.
struct ThreadUse {
    name: String,
    threads: Int,
    span: Span,
    by: ThreadsUsed,
    /// The threads that run the statement, where the conditions around
    /// it bound them (`if thread.x < 128`): a layout of exactly those
    /// partitions for them alone, whatever the block.
    running: Option<(i64, i64)>,
}

/// How a thread layout or tiled MMA meets the block's threads.
#[derive(Clone, Copy, PartialEq)]
enum ThreadsUsed {
    /// Partitioned by `thread.x`: the block is its threads.
    Whole,
    /// Partitioned by `thread.x % threads`: each aligned group of them
    /// takes the whole tensor, a warpgroup's own tile in a pipeline's
    /// turns.
    Groups,
    /// A gemm's tiled MMA, whose operands' partitions say which threads
    /// hold them: the block is whole groups of its threads.
    Gemm,
}

/// The memory and thread facts that the tensor operations record.
#[derive(Default)]
struct KernelState {
    shared: Vec<SharedBuffer>,
    registers: Vec<RegisterArray>,
    thread_uses: Vec<ThreadUse>,
    /// The largest wgmma accumulator fragment, in registers a thread, and
    /// its gemm's span.
    wgmma_accumulators: Option<(i64, Span)>,
}

#[derive(Default)]
struct KernelChecker {
    scope: HashMap<String, Entry>,
    /// Names defined again, broken in the scope of their second
    /// definition: what each was before, restored when that scope ends.
    clashes: Vec<(String, Entry)>,
    /// Every name the body defines, with its span: for "used before its definition".
    declared: HashMap<String, Span>,
    /// The names each definition's expression mentions, for cycles.
    uses: HashMap<String, Vec<String>>,
    state: KernelState,
    extents: Vec<String>,
    /// The tensor parameters' non-constant strides, in order.
    strides: Vec<StrideSymbol>,
    /// Where each extent is bound: the layout of the first parameter naming it.
    extent_spans: HashMap<String, Span>,
    /// The names of `W: extent` parameters.
    extent_params: Vec<String>,
    params: Vec<KernelParam>,
    launch: Option<(Launch, Span)>,
    /// Where the launch statement asks for a cluster, if it does.
    cluster: Option<Span>,
    /// A launch statement was written, even if it had errors.
    launch_written: bool,
    conditions: Vec<Condition>,
    bindings: Vec<Binding>,
    reference: Option<(Reference, Span)>,
    diags: Vec<Diagnostic>,
    /// Loops around the statement being checked.
    loop_depth: usize,
    /// The kernel's pipeline, once seen.
    pipeline: Option<Span>,
    /// Checking a pipeline's load block, where `copy_tma` belongs.
    in_load: bool,
    /// The conditions around the statement being checked.
    enclosing: Vec<predication::Enclosing>,
    /// The turn clause of the kernel's pipeline, if it has one.
    turns: Option<Span>,
    /// The granule of each loop counter whose bounds differ between threads.
    loop_granules: HashMap<String, i64>,
    /// The first and last value of each loop counter with static bounds.
    loop_ranges: HashMap<String, (i64, i64)>,
    /// The `if` conditions that hold around the statement being checked.
    facts: Vec<super::program::Predicate>,
    /// The kernel's name, values chosen for tunables, and the tunables seen.
    kernel: String,
    settings: Settings,
    tunables: Vec<Tunable>,
    /// Blocks around the statement being checked (1: the kernel's body).
    block_depth: usize,
    /// Statements that the statement being checked needs run just before
    /// it: those that compute its reductions across threads.
    before: Vec<Stmt>,
    /// The shared buffer of each element type that reductions across
    /// threads exchange their values through.
    exchanges: Vec<(Elem, usize)>,
}

impl KernelChecker {
    fn check(mut self, k: &ast::Kernel) -> Result<Kernel, Vec<Diagnostic>> {
        for p in &k.params {
            self.param(p);
        }
        declare_names(&k.body, &mut self.declared, &mut self.uses);
        let body = self.block(&k.body);
        self.check_block_reductions(&body);
        self.check_tma_tensors(&body);
        self.check_shared_total(&body, k.span);
        self.check_variant_count();
        let launch = match self.launch.take() {
            Some((l, span)) => {
                self.check_threads(&l, span);
                self.check_register_budget(&l, span);
                self.check_pipeline(&body, &l);
                l
            }
            None if self.launch_written => Launch {
                grid: vec![],
                block: vec![],
                min_blocks: None,
                cluster: [1; 3],
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
                    cluster: [1; 3],
                }
            }
        };
        if !self.diags.is_empty() {
            if self.diags.iter().any(|d| !d.follows) {
                self.diags.retain(|d| !d.follows);
            }
            self.point_at_settings_off_the_list();
            return Err(self.diags);
        }
        let copied = self.copied_params(&body, &launch);
        for s in &mut self.strides {
            s.in_place = !copied.contains(&s.param);
        }
        let mut extents = self.extents;
        extents.extend(
            self.strides
                .iter()
                .filter(|s| !s.in_place)
                .map(|s| s.name.clone()),
        );
        Ok(Kernel {
            name: k.name.name.clone(),
            span: k.name.span,
            params: self.params,
            extents,
            strides: self.strides,
            launch,
            shared: self.state.shared,
            registers: self.state.registers,
            body,
            conditions: self.conditions,
            bindings: self.bindings,
            reference: self.reference.map(|(r, _)| r),
            tunables: self.tunables,
        })
    }

    /// Evaluates an expression in the kernel's scope.
    fn eval(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        // `sm_count` is an extent that no tensor binds: the runtime does.
        if !self.extents.iter().any(|x| x == SM_COUNT) && !self.scope.contains_key(SM_COUNT) {
            let mut names = Vec::new();
            all_names(e, &mut names, false);
            if names.iter().any(|n| n == SM_COUNT) {
                self.extents.push(SM_COUNT.to_string());
            }
        }
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
        let known = || {
            scope
                .iter()
                .filter(|(_, e)| e.value.is_some())
                .map(|(n, _)| n.clone())
                .chain(extents.iter().cloned())
                .collect()
        };
        let known_ranges = ranges::Ranges {
            launch: self.launch.as_ref().map(|(l, _)| l),
            loops: &self.loop_ranges,
            facts: &self.facts,
            producer: self.in_load,
            extents: &self.extent_spans,
        };
        let running = known_ranges.of(Builtin::Thread.name());
        let uses_before = self.state.thread_uses.len();
        let mut ev = Evaluator::new(&lookup, &mut self.state)
            .with_defined_later(&later)
            .with_known_names(&known)
            .with_ranges(&known_ranges, known_ranges.block_threads());
        let v = ev.eval(e);
        let (conds, undefined) = (ev.conditions, ev.undefined);
        for u in &mut self.state.thread_uses[uses_before..] {
            u.running = running;
        }
        // An undefined name is reported once: later uses see it as broken.
        for n in undefined {
            if !self.declared.contains_key(&n) {
                self.scope.entry(n).or_insert(Entry {
                    value: None,
                    span: e.span,
                    role: None,
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
                self.extents.contains(n)
                    || self.strides.iter().any(|s| &s.name == n)
                    || (c.needed_by == FULL_TILES && Builtin::is_block(n))
            };
            // A block's full tiles that the grid makes hold everywhere.
            let everywhere = c.needed_by == FULL_TILES
                && self
                    .launch
                    .as_ref()
                    .is_some_and(|(l, _)| l.holds_on_every_block(&c.fact));
            match names.iter().find(|n| !known(n)) {
                None if everywhere => {}
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

    fn block(&mut self, stmts: &[ast::Stmt]) -> Vec<Stmt> {
        self.block_depth += 1;
        let mut body = Vec::new();
        for s in stmts {
            let stmt = self.stmt(s);
            match stmt {
                // A statement that failed leaves nothing to run before it.
                None => self.before.clear(),
                Some(_) => body.append(&mut self.before),
            }
            body.extend(stmt);
        }
        self.block_depth -= 1;
        body
    }

    /// A block whose names are not visible after it (an if's branch, a
    /// pipeline's load block).
    fn scoped_block(&mut self, stmts: &[ast::Stmt]) -> Vec<Stmt> {
        let (outer, mark) = self.enter_scope();
        let body = self.block(stmts);
        self.leave_scope(&outer, mark);
        body
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Option<Stmt> {
        let exprs: Vec<&Expr> = match &s.kind {
            StmtKind::Tiler(_, e)
            | StmtKind::Layout(_, e)
            | StmtKind::Let(_, e)
            | StmtKind::Expr(e) => vec![e],
            StmtKind::Assign(t, e) => vec![t, e],
            StmtKind::Launch(v) => v.iter().collect(),
            StmtKind::Reference(e) => vec![e],
            StmtKind::For { start, end, .. } => vec![start, end],
            StmtKind::Pipeline(p) => {
                let mut v = vec![&p.start, &p.end, &p.first, &p.stages];
                if let Some(t) = &p.turn {
                    v.extend([&t.start, &t.end]);
                }
                v
            }
            StmtKind::If { cond, .. } => vec![cond],
            StmtKind::ReduceBlocks {
                target, dim, mode, ..
            } => [target, dim]
                .into_iter()
                .chain(mode.as_ref().and_then(|m| m.when.as_ref()))
                .collect(),
            StmtKind::Tune {
                default,
                candidates,
                ..
            } => std::iter::once(default).chain(candidates).collect(),
            StmtKind::Load(_) | StmtKind::After(_) => vec![],
        };
        if exprs.iter().any(|e| self.uses_broken(e)) {
            if let StmtKind::Tiler(n, _)
            | StmtKind::Layout(n, _)
            | StmtKind::Let(n, _)
            | StmtKind::Tune { name: n, .. } = &s.kind
            {
                self.define(n, None);
            }
            if matches!(s.kind, StmtKind::Launch(_)) {
                self.launch_written = true;
            }
            return None;
        }
        if let StmtKind::Tiler(n, e) | StmtKind::Layout(n, e) | StmtKind::Let(n, e) = &s.kind
            && let Some(d) = self.cycle(&n.name, e)
        {
            self.define_result(n, Err(d));
            return None;
        }
        match &s.kind {
            StmtKind::Tiler(n, e) => {
                let v = self.eval(e).and_then(|v| match v.to_tiler() {
                    Some(t) => crate::check::algebra::positive_tiler(&t, e.span).map(|()| v),
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
                    // The first name that holds a buffer names it in messages.
                    let name = match view.base {
                        Base::Shared(i) => self.state.shared.get_mut(i).map(|b| &mut b.name),
                        Base::Registers(i) => self.state.registers.get_mut(i).map(|b| &mut b.name),
                        _ => None,
                    };
                    if let Some(name @ None) = name {
                        *name = Some(n.name.clone());
                    }
                    self.bindings.push(Binding {
                        name: n.name.clone(),
                        view: view.clone(),
                        span: n.span,
                    });
                }
                let role = self.operand_role(e);
                self.define_result(n, v);
                if let (Some(role), Some(entry)) = (role, self.scope.get_mut(&n.name))
                    && entry.span == n.span
                {
                    entry.role = Some(role);
                }
                None
            }
            StmtKind::Tune {
                name,
                default,
                candidates,
            } => {
                self.tune_stmt(name, default, candidates, s.span);
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
                let (a, b) = self.loop_bounds(start, end)?;
                let (outer, mark) = self.enter_scope();
                self.define(var, Some(Value::Int(Int::var(&var.name))));
                if let Some(range) = self.counter_range(&a, &b) {
                    self.loop_ranges.insert(var.name.clone(), range);
                }
                // Threads that disagree on the bounds run different trips.
                let granule = self.granule(&a).min(self.granule(&b));
                let divergent = granule < predication::UNIFORM;
                if divergent {
                    self.enclosing.push(predication::Enclosing {
                        granule,
                        span: Span {
                            start: start.span.start,
                            end: end.span.end,
                        },
                        turn: false,
                    });
                    self.loop_granules.insert(var.name.clone(), granule);
                }
                let bound = self.bound_fact(&var.name, &b);
                let bounded = bound.is_some();
                self.facts.extend(bound);
                self.loop_depth += 1;
                let body = self.block(body);
                self.loop_depth -= 1;
                if bounded {
                    self.facts.pop();
                }
                if divergent {
                    self.enclosing.pop();
                    self.loop_granules.remove(&var.name);
                }
                // The loop variable and the body's names are not visible after the loop.
                self.leave_scope(&outer, mark);
                self.loop_ranges.remove(&var.name);
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
            StmtKind::Pipeline(p) => self.pipeline_stmt(p, s.span),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(cond, then, otherwise, s.span),
            StmtKind::ReduceBlocks {
                target,
                dim,
                mode,
                body,
            } => self.reduce_blocks_stmt(target, dim, mode.as_ref(), body, s.span),
            StmtKind::Load(_) => {
                self.diags.push(
                    Diagnostic::new("a load block stands first in a pipeline's body", s.span)
                        .with_help(
                            "pipeline k in 0..kt, stage s in 0..3 { load { copy_tma(...); } ... }",
                        ),
                );
                None
            }
            StmtKind::After(_) => {
                self.diags.push(
                    Diagnostic::new("an after block stands last in the body of a pipeline with turns", s.span)
                        .with_help(
                            "pipeline k in 0..kt, turn j in 0..n, stage s in 0..4 { load { ... } gemm(...); after { ... } }",
                        ),
                );
                None
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
            StmtKind::Assign(t, e) => match self
                .assign_stmt(t, e)
                .and_then(|op| self.check_agreement(&op, s.span).map(|()| op))
            {
                Ok(op) => Some(Stmt { op, span: s.span }),
                Err(d) => {
                    self.diags.push(d);
                    None
                }
            },
            StmtKind::Expr(e) => match self
                .op(e)
                .and_then(|op| self.check_agreement(&op, s.span).map(|()| op))
            {
                Ok(op) => Some(Stmt { op, span: s.span }),
                Err(d) => {
                    self.diags.push(d);
                    None
                }
            },
        }
    }
}

/// `block.x` and friends, run-time values of every thread.
fn builtin_name(n: &str) -> Option<Value> {
    Builtin::parse(n).map(|b| Value::Int(b.int()))
}
