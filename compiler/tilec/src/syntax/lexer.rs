//! Tokens of `.tile` source, by `logos`.
//!
//! In: source text. Out: tokens with byte spans, or a lexical error with its
//! span. Whitespace and `//` comments are skipped.

use logos::Logos;
use std::fmt;

#[derive(Logos, Clone, Debug, PartialEq, Eq)]
// A byte-order mark (what some editors put first in a UTF-8 file) is
// whitespace too.
#[logos(skip r"[ \t\r\n\f\u{FEFF}]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(error = LexError)]
pub enum Tok<'s> {
    #[regex("[0-9]+", |lex| lex.slice().parse::<i64>().map_err(|_| LexError::IntTooLarge))]
    Int(i64),
    /// `_4`: a static integer, CuTe's `Int<4>`; same value as `4`.
    #[regex("_[0-9]+", |lex| lex.slice()[1..].parse::<i64>().map_err(|_| LexError::IntTooLarge))]
    StaticInt(i64),
    /// `0.5`, `1.0`, `2e-3`: kept as text, parsed by the checker.
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")]
    Float(&'s str),
    #[token("_")]
    Under,
    #[token("kernel")]
    Kernel,
    #[token("tensor")]
    Tensor,
    #[token("tiler")]
    Tiler,
    #[token("layout")]
    Layout,
    #[token("let")]
    Let,
    #[token("launch")]
    Launch,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("pipeline")]
    Pipeline,
    #[token("stage")]
    Stage,
    #[token("load")]
    Load,
    #[token("turn")]
    Turn,
    #[token("after")]
    After,
    #[token("reference")]
    Reference,
    #[token("if")]
    If,
    #[token("reduce")]
    Reduce,
    #[token("across")]
    Across,
    #[token("tune")]
    Tune,
    #[token("else")]
    Else,
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
    #[token("+")]
    Plus,
    #[token("*")]
    Star,
    #[token("%")]
    Percent,
    /// `/`: division, in element-wise expressions.
    #[token("/")]
    Slash,
    #[token("<")]
    Less,
    #[token(">")]
    Greater,
    #[token("<=")]
    LessEq,
    #[token(">=")]
    GreaterEq,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    /// `<f32>` right after a name, as in `shared<f32>`: one token, so that
    /// `<` and `>` stay free for comparisons (`a < b`).
    #[regex("<[a-z]+[0-9]+>", |lex| { let s = lex.slice(); &s[1..s.len() - 1] })]
    TypeArg(&'s str),
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(";")]
    Semi,
    #[token("=")]
    Eq,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
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
            Tok::Plus => write!(f, "+"),
            Tok::Star => write!(f, "*"),
            Tok::Percent => write!(f, "%"),
            Tok::Float(s) => write!(f, "{s}"),
            Tok::Kernel => write!(f, "kernel"),
            Tok::Tensor => write!(f, "tensor"),
            Tok::Tiler => write!(f, "tiler"),
            Tok::Layout => write!(f, "layout"),
            Tok::Let => write!(f, "let"),
            Tok::Launch => write!(f, "launch"),
            Tok::For => write!(f, "for"),
            Tok::In => write!(f, "in"),
            Tok::Pipeline => write!(f, "pipeline"),
            Tok::Stage => write!(f, "stage"),
            Tok::Load => write!(f, "load"),
            Tok::Turn => write!(f, "turn"),
            Tok::After => write!(f, "after"),
            Tok::Reference => write!(f, "reference"),
            Tok::If => write!(f, "if"),
            Tok::Reduce => write!(f, "reduce"),
            Tok::Across => write!(f, "across"),
            Tok::Tune => write!(f, "tune"),
            Tok::Else => write!(f, "else"),
            Tok::AndAnd => write!(f, "&&"),
            Tok::OrOr => write!(f, "||"),
            Tok::Slash => write!(f, "/"),
            Tok::Less => write!(f, "<"),
            Tok::Greater => write!(f, ">"),
            Tok::LessEq => write!(f, "<="),
            Tok::GreaterEq => write!(f, ">="),
            Tok::EqEq => write!(f, "=="),
            Tok::NotEq => write!(f, "!="),
            Tok::TypeArg(t) => write!(f, "<{t}>"),
            Tok::LBrace => write!(f, "{{"),
            Tok::RBrace => write!(f, "}}"),
            Tok::Semi => write!(f, ";"),
            Tok::Eq => write!(f, "="),
            Tok::Dot => write!(f, "."),
            Tok::DotDot => write!(f, ".."),
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
