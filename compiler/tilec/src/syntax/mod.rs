//! Syntax: source text -> tokens (`lexer`, by logos) -> syntax tree (`ast`,
//! by the LALRPOP grammar in `grammar/tile.lalrpop`).
//!
//! Invariant: parsing never panics; it returns a tree, or a diagnostic that
//! points at the offending span and says what was expected.

pub mod ast;
pub mod lexer;

use crate::diagnostic::Diagnostic;
use ast::{Expr, Program, Span};
use lalrpop_util::ParseError;
use lexer::LexError;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused)]
    grammar,
    "/tile.rs"
);

/// Parses one algebra expression, as `tilec algebra` and layout
/// declarations take it.
pub fn parse_expr(src: &str) -> Result<Expr, Diagnostic> {
    grammar::ExprParser::new()
        .parse(lexer::tokens(src))
        .map_err(to_diagnostic)
}

/// Parses a `.tile` file.
pub fn parse_program(src: &str) -> Result<Program, Diagnostic> {
    grammar::ProgramParser::new()
        .parse(lexer::tokens(src))
        .map_err(to_diagnostic)
}

fn to_diagnostic(
    e: ParseError<usize, lexer::Tok<'_>, (LexError, std::ops::Range<usize>)>,
) -> Diagnostic {
    match e {
        ParseError::InvalidToken { location } => Diagnostic::new(
            "unexpected character",
            Span {
                start: location,
                end: location + 1,
            },
        ),
        ParseError::UnrecognizedEof { location, expected } => Diagnostic::new(
            "unexpected end of input",
            Span {
                start: location,
                end: location,
            },
        )
        .with_help(expected_help(&expected)),
        ParseError::UnrecognizedToken {
            token: (l, t, r),
            expected,
        } => Diagnostic::new(format!("unexpected `{t}`"), Span { start: l, end: r })
            .with_help(expected_help(&expected)),
        ParseError::ExtraToken { token: (l, t, r) } => Diagnostic::new(
            format!("unexpected `{t}` after a complete expression"),
            Span { start: l, end: r },
        )
        .with_help("remove it, or join the parts with `:` or `,` inside parentheses".to_string()),
        ParseError::User { error: (e, range) } => Diagnostic::new(
            e.to_string(),
            Span {
                start: range.start,
                end: range.end,
            },
        ),
    }
}

fn expected_help(expected: &[String]) -> String {
    let names: Vec<String> = expected
        .iter()
        .map(|e| e.trim_matches('"').replace("\\\"", "\""))
        .collect();
    format!("expected one of: {}", names.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ast::ExprKind;

    #[test]
    fn spans_cover_their_source() {
        let e = parse_expr("(4,(3,2)):(1,3)").unwrap();
        let ExprKind::Layout(s, d) = &e.kind else {
            panic!("a layout")
        };
        assert_eq!((e.span.start, e.span.end), (0, 15));
        assert_eq!((s.span.start, s.span.end), (0, 9));
        assert_eq!((d.span.start, d.span.end), (10, 15));
    }
}
