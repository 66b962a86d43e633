//! Syntax: source text -> tokens (`lexer`, by logos) -> syntax tree (`ast`,
//! by the LALRPOP grammar in `grammar/tile.lalrpop`).
//!
//! Invariant: parsing never panics; it returns a tree, or a diagnostic that
//! points at the offending span and says what was expected.

pub mod ast;
pub mod lexer;

use crate::diagnostic::Diagnostic;
use crate::span::Span;
use ast::{Expr, Program};
use lalrpop_util::ParseError;
use lexer::LexError;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused)]
    grammar,
    "/tile.rs"
);

/// How deeply `(`, `[` and `{` may nest.
pub const MAX_NESTING: usize = 64;
/// How many tokens one statement (or one algebra expression) may have.
pub const MAX_STATEMENT_TOKENS: usize = 1024;
/// How many `else if` one chain may have (with the chains around it):
/// each nests the tree one level deeper though its braces do not.
pub const MAX_ELSE_IF: usize = 128;

/// Refuses input whose tree would be too deep for the recursive stages
/// after the parser (evaluation, checking, dropping the tree): nesting past
/// [`MAX_NESTING`], or a statement longer than [`MAX_STATEMENT_TOKENS`]
/// (a long sum or call chain nests as deeply as it is long). Checked on
/// the tokens, before any tree exists. An `else if` chain longer than
/// [`MAX_ELSE_IF`] is refused too.
fn within_limits(src: &str) -> Result<(), Diagnostic> {
    let (mut depth, mut count) = (0usize, 0usize);
    // The first token of the statement being counted.
    let mut first = Span { start: 0, end: 0 };
    // The `else if`s of the chain open at each bracket depth.
    let mut chains: Vec<usize> = vec![0];
    let mut previous: Option<lexer::Tok> = None;
    for t in lexer::tokens(src) {
        let Ok((l, t, r)) = t else {
            return Ok(()); // the parser reports the bad character
        };
        let here = Span { start: l, end: r };
        // A chain ends at the first token after a `}` that is not `else`.
        match (&previous, &t) {
            (Some(lexer::Tok::Else), lexer::Tok::If) => {
                chains[depth] += 1;
                // Chains inside chains' branches nest on each other.
                if chains[..=depth].iter().sum::<usize>() > MAX_ELSE_IF {
                    return Err(Diagnostic::new(
                        format!("this `else if` chain is longer than {MAX_ELSE_IF} branches"),
                        here,
                    )
                    .with_help("select among many cases with arithmetic on the value, or split the chain into nested `if`s on ranges"));
                }
            }
            (Some(lexer::Tok::RBrace), lexer::Tok::Else) => {}
            (Some(lexer::Tok::RBrace), _) => chains[depth] = 0,
            _ => {}
        }
        previous = Some(t.clone());
        match t {
            lexer::Tok::LParen | lexer::Tok::LBracket | lexer::Tok::LBrace => {
                depth += 1;
                if chains.len() <= depth {
                    chains.push(0);
                }
                chains[depth] = 0;
                if depth > MAX_NESTING {
                    return Err(Diagnostic::new(
                        format!("brackets nest deeper than {MAX_NESTING} levels"),
                        here,
                    )
                    .with_label(format!("level {depth}"))
                    .with_help("name the inner parts with `let`, `layout` or `tiler`"));
                }
            }
            lexer::Tok::RParen | lexer::Tok::RBracket | lexer::Tok::RBrace => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
        if matches!(
            t,
            lexer::Tok::Semi | lexer::Tok::LBrace | lexer::Tok::RBrace
        ) {
            count = 0;
            continue;
        }
        if count == 0 {
            first = here;
        }
        count += 1;
        if count > MAX_STATEMENT_TOKENS {
            // At its first token: the whole statement, as long as it is,
            // would be a span past what a snippet shows.
            return Err(Diagnostic::new(
                format!("this statement is longer than {MAX_STATEMENT_TOKENS} tokens"),
                first,
            )
            .with_label(format!(
                "the statement that starts here has more than {MAX_STATEMENT_TOKENS} tokens"
            ))
            .with_help("split it into several statements with `let`, `layout` or `tiler`"));
        }
    }
    Ok(())
}

/// Parses one algebra expression, as `tilec algebra` and layout
/// declarations take it.
pub fn parse_expr(src: &str) -> Result<Expr, Diagnostic> {
    within_limits(src)?;
    grammar::ExprParser::new()
        .parse(lexer::tokens(src))
        .map_err(|e| to_diagnostic(e, src))
}

/// Parses a `.tile` file.
pub fn parse_program(src: &str) -> Result<Program, Diagnostic> {
    within_limits(src)?;
    grammar::ProgramParser::new()
        .parse(lexer::tokens(src))
        .map_err(|e| turn_after_the_stage(to_diagnostic(e, src), src))
}

/// The character at `at` that no token begins with, named: a no-break
/// space or a typographic quote pasted from a document is invisible or
/// looks right in the source.
fn unexpected_character(src: &str, at: usize) -> Diagnostic {
    let Some(c) = src.get(at..).and_then(|r| r.chars().next()) else {
        return Diagnostic::new(
            "unexpected character",
            Span {
                start: at,
                end: at + 1,
            },
        );
    };
    let help = match c {
        _ if c.is_ascii() => "the language's characters are letters, digits, `_` and the operators and brackets of docs/language.md".to_string(),
        _ => format!(
            "`{}` is not ASCII; .tile sources are written in ASCII (a character pasted from a document, such as a no-break space or a curly quote, looks like one that is)",
            c.escape_unicode()
        ),
    };
    let shown = match () {
        _ if c.is_whitespace() || c.is_control() => format!("{}", c.escape_unicode()),
        _ if c.is_ascii() => format!("`{c}`"),
        _ => format!("`{c}` ({})", c.escape_unicode()),
    };
    Diagnostic::new(
        format!("unexpected character {shown}"),
        Span {
            start: at,
            end: at + c.len_utf8(),
        },
    )
    .with_help(help)
}

/// What C allows and the language writes out: `Y += X` (an `=` straight
/// after an arithmetic operator) and `.5` (a number from its point).
fn written_as_in_c(src: &str, at: usize, token: &str) -> Option<String> {
    let op = src.get(..at)?.trim_end().chars().last()?;
    let digits: String = src
        .get(at + 1..)
        .unwrap_or("")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match token {
        "=" if "+-*/".contains(op) => Some(format!(
            "there is no `{op}=`: write the target again, as in `Y = Y {op} X;`"
        )),
        "." if !digits.is_empty() => Some(format!(
            "a number starts with a digit: write `0.{digits}`, not `.{digits}`"
        )),
        _ => None,
    }
}

/// Where a `{` was expected and the line before the token (or its own,
/// before it) ends with `:` (`for k in 0..4:`): that colon's offset. The
/// parser read `4:rA` as a layout and stopped further on.
fn block_after_a_colon(src: &str, at: usize, expected: &[String]) -> Option<usize> {
    if !expected.iter().any(|e| e.trim_matches('"') == "{") {
        return None;
    }
    let before = src.get(..at)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let previous = src.get(..line_start.checked_sub(1)?)?;
    [before, previous].into_iter().find_map(|text| {
        let start = text.rfind('\n').map_or(0, |i| i + 1);
        let code = text[start..].split("//").next().unwrap_or("").trim_end();
        code.ends_with(':').then(|| start + code.len() - 1)
    })
}

/// A pipeline's turn clause written after its stage clause (`stage s in
/// 0..4, turn j in ...`): the parser stops at the comma; say where the
/// clause goes.
fn turn_after_the_stage(d: Diagnostic, src: &str) -> Diagnostic {
    let rest = src.get(d.span.end..).unwrap_or("").trim_start();
    let turn = rest
        .strip_prefix("turn")
        .is_some_and(|r| r.starts_with(char::is_whitespace));
    match d.message == "unexpected `,`" && turn {
        true => d.with_help(
            "a pipeline's turn clause stands before its stage clause: `pipeline k in 0..kt, turn j in 0..n, stage s in 0..4 { ... }`",
        ),
        false => d,
    }
}

fn to_diagnostic(
    e: ParseError<usize, lexer::Tok<'_>, (LexError, std::ops::Range<usize>)>,
    src: &str,
) -> Diagnostic {
    match e {
        ParseError::InvalidToken { location } => unexpected_character(src, location),
        ParseError::User {
            error: (LexError::Unexpected, range),
        } => unexpected_character(src, range.start),
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
        } => {
            // A word or a brace opens the next statement; a `)` or `,`
            // there is an unbalanced bracket, not a missing `;`.
            let opens = t
                .to_string()
                .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '{' || c == '}');
            if let Some(end) = statement_left_open(src, l, &expected).filter(|_| opens) {
                return Diagnostic::new("missing `;`", Span { start: end, end })
                    .with_help(format!(
                        "end the statement here with `;`: the `{t}` on the next line cannot continue it"
                    ));
            }
            let d = Diagnostic::new(format!("unexpected `{t}`"), Span { start: l, end: r });
            if let Some(help) = written_as_in_c(src, l, &t.to_string()) {
                return d.with_help(help);
            }
            if let Some(colon) = block_after_a_colon(src, l, &expected) {
                return d
                    .with_related(
                        Span {
                            start: colon,
                            end: colon + 1,
                        },
                        "a block opened with `:`, as in Python",
                    )
                    .with_help(
                        "a loop's or an if's body is a block in braces: `for k in 0..4 { ... }`",
                    );
            }
            let word = t.to_string();
            // A word right after a `)` on the same line, where a `,` could
            // go: the comma between two clauses, forgotten.
            let before = src.get(..l).unwrap_or("");
            let same_line = !before[before.trim_end().len()..].contains('\n');
            if word.starts_with(|c: char| c.is_ascii_alphabetic())
                && same_line
                && before.trim_end().ends_with(')')
                && expected.iter().any(|e| e.trim_matches('"') == ",")
            {
                return d
                    .with_label("a `,` is missing before this?")
                    .with_help(format!(
                        "separate the parts with `,`, as in `launch grid(...), block(...);`: write `, {word}`"
                    ));
            }
            // A word where a name may stand is one of the language's own.
            match word.chars().all(|c| c.is_ascii_alphabetic())
                && expected.iter().any(|e| e.trim_matches('"') == "name")
            {
                true => d.with_help(format!(
                    "`{word}` is a keyword of the language; give it another name, e.g. `{word}_`"
                )),
                false => d.with_help(expected_help(&expected)),
            }
        }
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

/// Where a statement was left without its `;`: the parser could take `;`
/// before the token at `at`, which begins a line of its own. The end of
/// the code before it (comments and blank lines passed over), for the
/// diagnostic to point there rather than at the next line's first token.
fn statement_left_open(src: &str, at: usize, expected: &[String]) -> Option<usize> {
    if !expected.iter().any(|e| e.trim_matches('"') == ";") {
        return None;
    }
    let before = src.get(..at)?;
    let line_start = before.rfind('\n')? + 1;
    if !before[line_start..].trim().is_empty() {
        return None;
    }
    let mut end = line_start - 1;
    loop {
        let start = src[..end].rfind('\n').map_or(0, |i| i + 1);
        let code = src[start..end].split("//").next().unwrap_or("").trim_end();
        if !code.trim().is_empty() {
            return Some(start + code.len());
        }
        end = start.checked_sub(1)?;
    }
}

fn expected_help(expected: &[String]) -> String {
    let names: Vec<String> = expected
        .iter()
        .map(|e| e.trim_matches('"').replace("\\\"", "\""))
        .collect();
    match names.as_slice() {
        // The parser has no continuation here: what came before is whole.
        [] => {
            "nothing may stand here: remove it, or look for an unbalanced bracket before it".into()
        }
        _ => {
            // In the reader's words: kinds of token once each, in the
            // parser's order, punctuation as itself.
            let mut said: Vec<String> = Vec::new();
            for n in &names {
                let word = match n.as_str() {
                    "int" | "float" | "static int" => "a number".to_string(),
                    "name" | "_" => "a name".to_string(),
                    "type arg" => "a type argument".to_string(),
                    "&&" | "||" | "<" | ">" | "<=" | ">=" | "==" | "!=" | "+" | "-" | "*" | "/"
                    | "%" => "an operator".to_string(),
                    "kernel" => "a kernel".to_string(),
                    "tiler" | "layout" | "let" | "launch" | "for" | "pipeline" | "load"
                    | "reference" | "if" | "reduce" | "tune" => "a statement".to_string(),
                    other => format!("`{other}`"),
                };
                if !said.contains(&word) {
                    said.push(word);
                }
            }
            let last = said.pop().unwrap_or_default();
            match said.is_empty() {
                true => format!("expected {last}"),
                false => format!("expected {} or {last}", said.join(", ")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ast::ExprKind;

    /// A statement left open before a line that starts another is a
    /// missing `;` at the end of its code (comments and blank lines
    /// passed over, CRLF too); a `)` starting the next line is an
    /// unbalanced bracket, left to the parser's own message.
    #[test]
    fn a_missing_semicolon_is_found_at_the_end_of_its_line() {
        let kernel = |body: &str| format!("kernel k(A: tensor<f32, (M):(1)>) {{\n{body}\n}}");
        for (body, before) in [
            (
                "    launch grid(M), block(1)\n    A[block.x] = 1.0;",
                "block(1)",
            ),
            (
                "    launch grid(M), block(1) // é\r\n\r\n    A[block.x] = 1.0;",
                "block(1)",
            ),
            (
                "    launch grid(M), block(1);\n    A[block.x] = 1.0\n}\nkernel j() {",
                "= 1.0",
            ),
        ] {
            let src = kernel(body);
            let d = parse_program(&src).expect_err("a missing `;`");
            assert_eq!(d.message, "missing `;`", "{body}");
            assert!(
                src[..d.span.start].ends_with(before),
                "{body}: {:?}",
                &src[..d.span.start]
            );
        }
        let src = kernel("    launch grid(M), block(1);\n    let x = A[block.x]\n    );");
        let d = parse_program(&src).expect_err("an unbalanced bracket");
        assert_eq!(d.message, "unexpected `)`");
    }

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
