//! Tokens of `.tile` source, by `logos`.
//!
//! In: source text. Out: tokens with byte spans, or a lexical error with its
//! span. Whitespace and `//` comments are skipped.

use logos::Logos;
use std::fmt;

#[derive(Logos, Clone, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(error = LexError)]
pub enum Tok<'s> {
    #[regex("[0-9]+", |lex| lex.slice().parse::<i64>().map_err(|_| LexError::IntTooLarge))]
    Int(i64),
    /// `_4`: a static integer, CuTe's `Int<4>`; same value as `4`.
    #[regex("_[0-9]+", |lex| lex.slice()[1..].parse::<i64>().map_err(|_| LexError::IntTooLarge))]
    StaticInt(i64),
    #[token("_")]
    Under,
    #[regex("[A-Za-z][A-Za-z0-9_]*|_[A-Za-z_][A-Za-z0-9_]*")]
    Ident(&'s str),
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("-")]
    Minus,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LexError {
    #[default]
    Unexpected,
    IntTooLarge,
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LexError::Unexpected => write!(f, "unexpected character"),
            LexError::IntTooLarge => write!(f, "integer literal does not fit in 64 bits"),
        }
    }
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Int(v) => write!(f, "{v}"),
            Tok::StaticInt(v) => write!(f, "_{v}"),
            Tok::Under => write!(f, "_"),
            Tok::Ident(s) => write!(f, "{s}"),
            Tok::LParen => write!(f, "("),
            Tok::RParen => write!(f, ")"),
            Tok::LBracket => write!(f, "["),
            Tok::RBracket => write!(f, "]"),
            Tok::Comma => write!(f, ","),
            Tok::Colon => write!(f, ":"),
            Tok::Minus => write!(f, "-"),
        }
    }
}

/// A token stream in the form the LALRPOP parser takes.
pub fn tokens(
    src: &str,
) -> impl Iterator<Item = Result<(usize, Tok<'_>, usize), (LexError, std::ops::Range<usize>)>> {
    Tok::lexer(src).spanned().map(|(t, span)| match t {
        Ok(t) => Ok((span.start, t, span.end)),
        Err(e) => Err((e, span)),
    })
}
