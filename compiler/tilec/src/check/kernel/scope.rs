//! Names in scope while a kernel is checked: defining one (an extent or a
//! name defined again is an error at the second definition, which breaks
//! the name until its scope ends), and the scopes of blocks, loops and
//! pipelines, whose own names go when they end.

use super::{Entry, KernelChecker};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast;
use tilec_layout::Operand;

impl KernelChecker {
    /// `name` as `value` (`None`: its definition failed) from here to the
    /// end of its scope.
    pub(super) fn define(&mut self, name: &ast::Ident, value: Option<Value>) {
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
        // A name that shadowed a function would break its calls below it,
        // some with an error about their arguments, some silently not
        // (an element-wise `exp(x)` still called the function).
        if self.names_a_function(&name.name) {
            self.diags.push(
                Diagnostic::new(format!("`{}` is a built-in function", name.name), name.span)
                    .with_label("defined as a value here")
                    .with_help(
                        "give the value its own name: calls of the function keep their meaning",
                    ),
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
            // Which of the two a later use means is the writer's to say:
            // the name is broken until the scope of the second definition
            // ends, its uses there not reported again (a stage named like
            // a scalar gave an error at each slice).
            let before = self.scope.insert(
                name.name.clone(),
                Entry {
                    value: None,
                    span: first,
                    role: None,
                },
            );
            self.clashes.extend(before.map(|e| (name.name.clone(), e)));
            return;
        }
        self.scope.insert(
            name.name.clone(),
            Entry {
                value,
                span: name.span,
                role: None,
            },
        );
    }

    /// The names in scope, and where the clashes of a scope entered now
    /// will start.
    pub(super) fn enter_scope(&self) -> (Vec<String>, usize) {
        (self.scope.keys().cloned().collect(), self.clashes.len())
    }

    /// Leaves a scope: its own names go, and the outer names it defined
    /// again are what they were.
    pub(super) fn leave_scope(&mut self, outer: &[String], mark: usize) {
        self.scope.retain(|name, _| outer.contains(name));
        self.restore_clashes(mark);
    }

    /// The outer names defined again since `mark`, as they were.
    pub(super) fn restore_clashes(&mut self, mark: usize) {
        for (name, e) in self.clashes.drain(mark..).rev() {
            self.scope.insert(name, e);
        }
    }

    pub(super) fn define_result(&mut self, n: &ast::Ident, v: Result<Value, Diagnostic>) {
        match v {
            Ok(v) => self.define(n, Some(v)),
            Err(d) => {
                self.diags.push(d);
                self.define(n, None);
            }
        }
    }

    /// The MMA operand `e` is a partition for, and the call that made it:
    /// a `partition_A/B/C` call, a name defined as one, or a slice of
    /// either.
    pub(super) fn operand_role(&self, e: &ast::Expr) -> Option<(Operand, Span)> {
        match &e.kind {
            ast::ExprKind::Call(f, _) => match &f.kind {
                ast::ExprKind::Name(n) if n == "partition_A" => Some((Operand::A, e.span)),
                ast::ExprKind::Name(n) if n == "partition_B" => Some((Operand::B, e.span)),
                ast::ExprKind::Name(n) if n == "partition_C" => Some((Operand::C, e.span)),
                _ => None,
            },
            ast::ExprKind::Name(n) => self.scope.get(n).and_then(|entry| entry.role),
            ast::ExprKind::Index(base, _) => self.operand_role(base),
            _ => None,
        }
    }

    /// Whether `name` is a function a program may call: element-wise, the
    /// algebra's or a kernel's.
    pub(super) fn names_a_function(&self, name: &str) -> bool {
        use crate::check::algebra::Functions;
        super::elementwise::elementwise_names().contains(&name)
            || crate::check::algebra::FUNCTIONS
                .iter()
                .any(|f| f.name == name)
            || self.state.known().iter().any(|(n, _)| *n == name)
    }
}
