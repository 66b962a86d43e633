//! The text form of element-wise computes read back: scalars and `Arith`
//! trees (`f32:A[%3]`, `exp(x)`, `add(a, b)`, `bf16(x)`, `shfl_xor(x, 16)`).

use super::{Parser, Result, elem};
use crate::arith::{Binary, Unary};
use crate::ir::{Arith, Param, ScalarRef};

impl Parser<'_> {
    pub(super) fn scalar(&self, text: &str) -> Result<ScalarRef> {
        let text = text.trim();
        match self
            .ir
            .params
            .iter()
            .position(|p| matches!(p, Param::Scalar { name, .. } if name == text))
        {
            Some(p) => Ok(ScalarRef::Param(p)),
            None => Ok(ScalarRef::Literal(self.float(text)?)),
        }
    }

    /// The printer's form of an [`Arith`]: `f32:A[%3]`, a scalar, or
    /// `op(args)`.
    pub(super) fn arith(&mut self, text: &str) -> Result<Arith> {
        let Some(open) = text.find('(').filter(|_| text.ends_with(')')) else {
            if let Some((e, at)) = text.split_once(':')
                && let Some(e) = elem(e)
            {
                return Ok(Arith::Load(self.addr(at)?, e));
            }
            return Ok(Arith::Scalar(self.scalar(text)?));
        };
        let name = &text[..open];
        if name == "inside" || name == "int" {
            let id = self.operand(&text[open + 1..text.len() - 1])?;
            return Ok(if name == "int" {
                Arith::Int(id)
            } else {
                Arith::Inside(id)
            });
        }
        if name == "shfl_xor" {
            let inner = &text[open + 1..text.len() - 1];
            let (x, mask) = inner
                .rsplit_once(',')
                .ok_or(format!("line {}: shfl_xor(value, mask)", self.line_no()))?;
            let mask = mask
                .trim()
                .parse()
                .map_err(|_| format!("line {}: bad shuffle mask", self.line_no()))?;
            return Ok(Arith::Shuffle(Box::new(self.arith(x.trim())?), mask));
        }
        let mut args = Vec::new();
        for a in split_top_level(&text[open + 1..text.len() - 1]) {
            args.push(Box::new(self.arith(a.trim())?));
        }
        let unary = Unary::ALL.into_iter().find(|u| u.name() == name);
        let binary = Binary::ALL.into_iter().find(|b| b.name() == name);
        Ok(match (args.len(), unary, binary, name) {
            (1, Some(op), _, _) => Arith::Unary(op, args.remove(0)),
            (1, _, _, _) if let Some(to) = elem(name) => Arith::Convert(to, args.remove(0)),
            (2, _, Some(op), _) => {
                let a = args.remove(0);
                Arith::Binary(op, a, args.remove(0))
            }
            (3, _, _, "fma" | "select") => {
                let (a, b, c) = (args.remove(0), args.remove(0), args.remove(0));
                if name == "fma" {
                    Arith::Fma(a, b, c)
                } else {
                    Arith::Select(a, b, c)
                }
            }
            _ => {
                return self.fail(format!(
                    "unknown operation `{name}` of {} operands",
                    args.len()
                ));
            }
        })
    }
}

/// `text` split at the commas outside brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}
