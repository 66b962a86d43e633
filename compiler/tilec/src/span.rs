//! Spans: where in the source a thing came from, as a byte range. Every
//! stage carries them (syntax tree nodes, typed statements, IR
//! instructions) so that a problem found late is still reported at the
//! `.tile` text that caused it.

/// A byte range in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        (s.start, s.end.saturating_sub(s.start)).into()
    }
}
