//! The names a kernel's body defines and uses, read from the syntax tree
//! before checking: for "used before its definition", for definitions
//! that need themselves through names defined later, and for the extents a
//! parameter's layout binds.

use super::KernelChecker;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, Expr, ExprKind, StmtKind};
use std::collections::HashMap;

impl KernelChecker {
    /// A definition of `name` by `e` that needs itself: `e` uses a name
    /// defined later whose definition, directly or through others defined
    /// later, uses `name`. Moving definitions cannot help, so it is its own
    /// error, naming the chain.
    pub(super) fn cycle(&self, name: &str, e: &Expr) -> Option<Diagnostic> {
        let later = |n: &str| !self.scope.contains_key(n) && self.declared.contains_key(n);
        let mut uses = Vec::new();
        all_names(e, &mut uses, false);
        if !self.scope.contains_key(name) && uses.iter().any(|u| u == name) {
            return Some(
                Diagnostic::new(format!("`{name}` is used in its own definition"), e.span)
                    .with_label(format!("uses `{name}`"))
                    .with_help("a definition cannot use the name it defines; name the value it builds on first"),
            );
        }
        for first in uses.iter().filter(|u| later(u)) {
            // Depth-first through later definitions, remembering the path.
            let mut stack = vec![vec![first.clone()]];
            let mut seen = vec![first.clone()];
            while let Some(path) = stack.pop() {
                let last = path.last().expect("paths are not empty");
                for next in self.uses.get(last).into_iter().flatten() {
                    if next == name {
                        let chain: Vec<String> = std::iter::once(name.to_string())
                            .chain(path.iter().cloned())
                            .chain(std::iter::once(name.to_string()))
                            .map(|n| format!("`{n}`"))
                            .collect();
                        let at = self.declared.get(first).copied().unwrap_or(e.span);
                        return Some(
                            Diagnostic::new(
                                format!("`{name}` is defined in terms of itself: {}", chain.join(" uses ")),
                                e.span,
                            )
                            .with_label(format!("uses `{first}`"))
                            .with_related(at, format!("`{first}` is defined here, from `{name}`"))
                            .with_help("a cyclic definition has no value; define one of them without the other"),
                        );
                    }
                    if later(next) && !seen.contains(next) {
                        seen.push(next.clone());
                        let mut longer = path.clone();
                        longer.push(next.clone());
                        stack.push(longer);
                    }
                }
            }
        }
        None
    }
}

pub(super) fn declare_names(
    stmts: &[ast::Stmt],
    out: &mut HashMap<String, Span>,
    uses: &mut HashMap<String, Vec<String>>,
) {
    for s in stmts {
        match &s.kind {
            StmtKind::Tiler(n, e) | StmtKind::Layout(n, e) | StmtKind::Let(n, e) => {
                out.entry(n.name.clone()).or_insert(n.span);
                let mut names = Vec::new();
                all_names(e, &mut names, false);
                uses.entry(n.name.clone()).or_insert(names);
            }
            StmtKind::Tune {
                name,
                default,
                candidates,
            } => {
                out.entry(name.name.clone()).or_insert(name.span);
                let mut names = Vec::new();
                for e in std::iter::once(default).chain(candidates) {
                    all_names(e, &mut names, false);
                }
                uses.entry(name.name.clone()).or_insert(names);
            }
            StmtKind::For { body, .. }
            | StmtKind::Pipeline(ast::Pipeline { body, .. })
            | StmtKind::ReduceBlocks { body, .. }
            | StmtKind::Load(body)
            | StmtKind::After(body) => declare_names(body, out, uses),
            StmtKind::If {
                then, otherwise, ..
            } => {
                declare_names(then, out, uses);
                declare_names(otherwise, out, uses);
            }
            _ => {}
        }
    }
}

/// Every name an expression mentions; with `callees`, the names of called functions too.
pub(super) fn all_names(e: &Expr, out: &mut Vec<String>, callees: bool) {
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
        ExprKind::Neg(a) => all_names(a, out, callees),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Under => {}
    }
}

/// The extents a parameter layout binds: its plain names, in first-use order.
pub(super) fn collect_names(e: &Expr, out: &mut Vec<String>) {
    let mut names = Vec::new();
    all_names(e, &mut names, false);
    for n in names {
        let extent = !n.contains(['.', '<']) && !matches!(n.as_str(), "LayoutLeft" | "LayoutRight");
        if extent && !out.contains(&n) {
            out.push(n);
        }
    }
}
