//! Diagnostics: a message, the span it is about, labelled related spans, and
//! a help line with the fix. Rendered by miette.

use crate::syntax::ast::Span;
use miette::{LabeledSpan, NamedSource};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Span,
    /// The label at the primary span; empty for none.
    pub label: String,
    pub related: Vec<(Span, String)>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            label: String::new(),
            related: Vec::new(),
            help: None,
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn with_related(mut self, span: Span, label: impl Into<String>) -> Self {
        self.related.push((span, label.into()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// A miette report over the named source, for rendering.
    pub fn report(&self, name: &str, src: &str) -> miette::Report {
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            (!self.label.is_empty()).then(|| self.label.clone()),
            self.span,
        )];
        labels.extend(
            self.related
                .iter()
                .map(|(s, l)| LabeledSpan::new_with_span(Some(l.clone()), *s)),
        );
        let mut diag = miette::MietteDiagnostic::new(self.message.clone()).with_labels(labels);
        if let Some(h) = &self.help {
            diag = diag.with_help(h.clone());
        }
        miette::Report::new(diag).with_source_code(NamedSource::new(name, src.to_string()))
    }

    /// Rendered as text without colors, as tests snapshot it and CI logs show it.
    pub fn render(&self, name: &str, src: &str) -> String {
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_width(100);
        let mut out = String::new();
        let report = self.report(name, src);
        match handler.render_report(&mut out, report.as_ref()) {
            Ok(()) => out,
            Err(_) => format!("error: {self}\n"),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}
