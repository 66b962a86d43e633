//! The syntax tree. Every node carries the byte span of its source text.

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprKind {
    /// `12`, `-3`, or the static spelling `_12` (the same value).
    Int(i64),
    /// `_`: a whole mode, in slices, steps and tilers.
    Under,
    Name(String),
    /// `(a, b, ...)`: an integer tuple, a coordinate, or grouping.
    Tuple(Vec<Expr>),
    /// `[L0, L1, ...]`: a by-mode tiler.
    Tiler(Vec<Expr>),
    /// `SHAPE:STRIDE`.
    Layout(Box<Expr>, Box<Expr>),
    /// `f(args)` for a named function, or `L(coord)` to evaluate a layout.
    Call(Box<Expr>, Vec<Expr>),
}
