//! `tune NAME = DEFAULT in (C0, C1, ...);`: a kernel's tunable integer.
//!
//! In: the statement and the settings the checker was given. Out: NAME bound
//! to a static integer (the setting's value, else the default), so that
//! every layout, tiler and launch below sees a constant; and a [`Tunable`]
//! in the kernel, listing the candidates for `tilec tune`.

use super::KernelChecker;
use crate::check::program::{Tunable, setting};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, Expr};
use tilec_layout::Int;

/// Candidates one tunable may list, and variants (the product over a
/// kernel's tunables) a kernel may have: `tilec tune` compiles and times
/// every one, so both stay small enough for a minute's search.
pub const MAX_CANDIDATES: usize = 16;
pub const MAX_VARIANTS: usize = 256;

impl KernelChecker {
    pub(super) fn tune_stmt(
        &mut self,
        name: &ast::Ident,
        default: &Expr,
        candidates: &[Expr],
        span: Span,
    ) {
        match self.tunable(name, default, candidates, span) {
            Ok(t) => {
                self.define(name, Some(Value::Int(Int::Static(t.value))));
                self.tunables.push(t);
            }
            Err(d) => {
                self.diags.push(d);
                self.define(name, None);
            }
        }
    }

    fn tunable(
        &mut self,
        name: &ast::Ident,
        default: &Expr,
        candidates: &[Expr],
        span: Span,
    ) -> Result<Tunable, Diagnostic> {
        // A tunable is one value for the whole kernel: the tuner sets it
        // before anything runs, so a loop or a branch cannot hold it.
        if self.block_depth > 1 {
            return Err(
                Diagnostic::new(format!("`tune {}` is inside a block", name.name), span)
                    .with_label("in a loop, a branch, a pipeline or a reduce")
                    .with_help("declare tunables at the kernel's top level, before they are used"),
            );
        }
        let default_value = self.constant(default)?;
        if candidates.is_empty() {
            return Err(
                Diagnostic::new(format!("`tune {}` lists no candidates", name.name), span)
                    .with_help(format!(
                        "list the values to try, e.g. tune {} = {default_value} in ({default_value}, {});",
                        name.name,
                        default_value.saturating_mul(2)
                    )),
            );
        }
        if candidates.len() > MAX_CANDIDATES {
            return Err(Diagnostic::new(
                format!(
                    "`tune {}` lists {} candidates; at most {MAX_CANDIDATES}",
                    name.name,
                    candidates.len()
                ),
                span,
            )
            .with_help("`tilec tune` compiles and times every variant: keep the likely values"));
        }
        let mut values: Vec<(i64, Span)> = Vec::with_capacity(candidates.len());
        for c in candidates {
            let v = self.constant(c)?;
            if let Some((_, first)) = values.iter().find(|(x, _)| *x == v) {
                return Err(
                    Diagnostic::new(format!("candidate {v} is listed twice"), c.span)
                        .with_label("again here")
                        .with_related(*first, "first listed here")
                        .with_help("list each value once"),
                );
            }
            values.push((v, c.span));
        }
        let candidates: Vec<i64> = values.iter().map(|(v, _)| *v).collect();
        if !candidates.contains(&default_value) {
            return Err(Diagnostic::new(
                format!("the default {default_value} is not one of the candidates"),
                default.span,
            )
            .with_label("the value used where nothing was tuned")
            .with_help(format!(
                "add {default_value} to the candidates, or default to one of them ({})",
                list(&candidates)
            )));
        }
        Ok(Tunable {
            name: name.name.clone(),
            default: default_value,
            value: setting(&self.settings, &self.kernel, &name.name).unwrap_or(default_value),
            candidates,
            span,
        })
    }

    /// A value known while checking: a literal, or arithmetic on names
    /// already bound to static integers.
    fn constant(&mut self, e: &Expr) -> Result<i64, Diagnostic> {
        match self.eval(e)? {
            Value::Int(Int::Static(v)) => Ok(v),
            other => Err(Diagnostic::new(
                "a tune value must be an integer known at compile time",
                e.span,
            )
            .with_label(match other {
                Value::Int(_) => "this is known only at launch".to_string(),
                _ => format!("this is {}", other.kind()),
            })
            .with_help("e.g. tune splits = 8 in (1, 2, 4, 8, 16);")),
        }
    }

    /// The variants a kernel's tunables make stay within what a search
    /// can time.
    pub(super) fn check_variant_count(&mut self) {
        let count = self
            .tunables
            .iter()
            .fold(1usize, |n, t| n.saturating_mul(t.candidates.len()));
        if count > MAX_VARIANTS
            && let Some(last) = self.tunables.last()
        {
            let sizes: Vec<String> = self
                .tunables
                .iter()
                .map(|t| format!("{} {}", t.candidates.len(), t.name))
                .collect();
            self.diags.push(
                Diagnostic::new(
                    format!("the tunables make {count} variants; at most {MAX_VARIANTS}"),
                    last.span,
                )
                .with_label(format!("candidates: {}", sizes.join(" x ")))
                .with_help("drop candidates that cannot win, or fix one of the tunables"),
            );
        }
    }

    /// A tunable set (by `--set`, the tuner or its cache) to a value that
    /// is not one of its candidates may be what broke the build: each
    /// error of the kernel points at its `tune` too, with the value.
    pub(super) fn point_at_settings_off_the_list(&mut self) {
        for t in &self.tunables {
            if t.candidates.contains(&t.value) {
                continue;
            }
            let why = format!(
                "built with {} = {}, set from outside the candidates ({})",
                t.name,
                t.value,
                list(&t.candidates)
            );
            for d in &mut self.diags {
                d.related.push((t.span, why.clone()));
            }
        }
    }
}

fn list(values: &[i64]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
