//! The text form of integers: what `Display` prints (`ceil_div(M,128)`,
//! `(4*(M*N))`) and `FromStr` reads back, the form the manifest stores them
//! in (serde goes through `String`).

use super::{Int, Op, Sym};
use std::fmt;
use std::sync::Arc;

impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Int::Static(v) => write!(f, "{v}"),
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(n) => write!(f, "{n}"),
                Sym::Bin(op, a, b) => {
                    let infix = |s: &str, f: &mut fmt::Formatter<'_>| write!(f, "({a}{s}{b})");
                    match op {
                        Op::Add => infix("+", f),
                        Op::Sub => infix("-", f),
                        Op::Mul => infix("*", f),
                        Op::Div => infix("/", f),
                        Op::Mod => infix("%", f),
                        Op::CeilDiv => write!(f, "ceil_div({a},{b})"),
                        Op::Min => write!(f, "min({a},{b})"),
                        Op::Max => write!(f, "max({a},{b})"),
                    }
                }
            },
        }
    }
}

/// Stored as its text, e.g. `"ceil_div(M,128)"`: manifests stay readable.
impl From<Int> for String {
    fn from(i: Int) -> String {
        i.to_string()
    }
}

impl TryFrom<String> for Int {
    type Error = String;
    fn try_from(s: String) -> Result<Int, String> {
        s.parse()
    }
}

/// Parses the text form that `Display` writes: integers, names (with
/// dots), parenthesized `a+b a-b a*b a/b a%b`, and `ceil_div(a,b)`,
/// `min(a,b)`, `max(a,b)`.
impl std::str::FromStr for Int {
    type Err = String;
    fn from_str(s: &str) -> Result<Int, String> {
        let mut p = IntParser {
            s: s.as_bytes(),
            at: 0,
            depth: 0,
        };
        let v = p.int()?;
        if p.at != s.len() {
            return Err(format!("unexpected text after an integer in `{s}`"));
        }
        Ok(v)
    }
}

struct IntParser<'a> {
    s: &'a [u8],
    at: usize,
    /// Nesting so far: a text nested deeper than [`MAX_INT_DEPTH`] is
    /// refused rather than parsed by ever deeper recursion.
    depth: usize,
}

/// The deepest nesting the text form may have.
const MAX_INT_DEPTH: usize = 200;

impl IntParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at {}", c as char, self.at))
        }
    }

    fn int(&mut self) -> Result<Int, String> {
        self.depth += 1;
        if self.depth > MAX_INT_DEPTH {
            return Err(format!(
                "an integer nested deeper than {MAX_INT_DEPTH} levels"
            ));
        }
        let v = self.term();
        self.depth -= 1;
        v
    }

    fn term(&mut self) -> Result<Int, String> {
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let a = self.int()?;
                let op = match self.peek() {
                    Some(b'+') => Op::Add,
                    Some(b'-') => Op::Sub,
                    Some(b'*') => Op::Mul,
                    Some(b'/') => Op::Div,
                    Some(b'%') => Op::Mod,
                    _ => return Err(format!("expected an operator at {}", self.at)),
                };
                self.at += 1;
                let b = self.int()?;
                self.eat(b')')?;
                Ok(Int::Dynamic(Arc::new(Sym::Bin(op, a, b))))
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let start = self.at;
                self.at += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.at += 1;
                }
                let text =
                    std::str::from_utf8(&self.s[start..self.at]).map_err(|e| e.to_string())?;
                text.parse()
                    .map(Int::Static)
                    .map_err(|_| format!("`{text}` is not a 64-bit integer"))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
                {
                    self.at += 1;
                }
                let name = std::str::from_utf8(&self.s[start..self.at])
                    .map_err(|e| e.to_string())?
                    .to_string();
                let op = match name.as_str() {
                    "ceil_div" => Op::CeilDiv,
                    "min" => Op::Min,
                    "max" => Op::Max,
                    _ => return Ok(Int::Dynamic(Arc::new(Sym::Var(name)))),
                };
                self.eat(b'(')?;
                let a = self.int()?;
                self.eat(b',')?;
                let b = self.int()?;
                self.eat(b')')?;
                Ok(Int::Dynamic(Arc::new(Sym::Bin(op, a, b))))
            }
            _ => Err(format!("expected an integer at {}", self.at)),
        }
    }
}

impl fmt::Debug for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
