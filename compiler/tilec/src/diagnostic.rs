//! Diagnostics: a message, the span it is about, labelled related spans, and
//! a help line with the fix. Rendered by miette.

use crate::span::Span;
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
    /// A consequence of an error reported at another statement (a
    /// reduction across threads after a launch that failed to check): the
    /// checker drops it where that error is there to read.
    pub follows: bool,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            label: String::new(),
            related: Vec::new(),
            help: None,
            follows: false,
        }
    }

    /// This diagnostic as a consequence of another error.
    pub fn following(mut self) -> Self {
        self.follows = true;
        self
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

    /// A miette report over the named source, for rendering. A span far
    /// into a long line is reported by line and column without the snippet:
    /// the renderer pads to the column, and cannot pad past 65,535.
    pub fn report(&self, name: &str, src: &str) -> miette::Report {
        let spans = std::iter::once(self.span).chain(self.related.iter().map(|(s, _)| *s));
        if spans
            .clone()
            .any(|s| column(src, s.end) > MAX_SNIPPET_COLUMN)
        {
            let (line, col) = (line_of(src, self.span.start), column(src, self.span.start));
            let mut diag =
                miette::MietteDiagnostic::new(format!("{} (at {name}:{line}:{col})", self.message));
            if let Some(h) = &self.help {
                diag = diag.with_help(h.clone());
            }
            return miette::Report::new(diag);
        }
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

/// A source file's name and where its lines start: spans to line numbers,
/// for code that reports a line at run time (`--checked` builds).
#[derive(Clone, Debug)]
pub struct SourceLines {
    pub file: String,
    starts: Vec<usize>,
}

impl SourceLines {
    pub fn new(file: &str, src: &str) -> SourceLines {
        let starts = std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceLines {
            file: file.to_string(),
            starts,
        }
    }

    /// The 1-based line of the span's start.
    pub fn line(&self, span: Span) -> u32 {
        self.starts.partition_point(|&s| s <= span.start) as u32
    }
}

/// Beyond this column a diagnostic shows no source snippet.
const MAX_SNIPPET_COLUMN: usize = 1000;

/// The 1-based column of byte `at` (clamped to the source), in characters.
fn column(src: &str, at: usize) -> usize {
    let at = floor_char_boundary(src, at);
    let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    src[start..at].chars().count() + 1
}

/// The 1-based line of byte `at`.
fn line_of(src: &str, at: usize) -> usize {
    let at = floor_char_boundary(src, at);
    src[..at].matches('\n').count() + 1
}

fn floor_char_boundary(src: &str, at: usize) -> usize {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}
