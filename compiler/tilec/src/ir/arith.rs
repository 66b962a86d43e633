//! The value tree of an element-wise computation ([`super::InstKind::Compute`]):
//! one element's loads, scalars, integers and operations, as lowering
//! builds it for the executor and codegen to evaluate.

use super::{Addr, IntId, ScalarRef};
use crate::arith::{Binary, Unary};
use crate::check::program::Elem;

/// One element's value in an [`InstKind::Compute`].
#[derive(Clone, Debug, PartialEq)]
pub enum Arith {
    /// An element of a tensor of type `Elem`, converted to the computation's
    /// type (exactly from f16, bf16 and f32; i32 to f32 rounds to nearest).
    Load(Addr, Elem),
    Scalar(ScalarRef),
    Unary(Unary, Box<Arith>),
    /// Its operand rounded to `Elem` (nearest even) in a float computation;
    /// to i32, the operand is computed in f32 and truncated toward zero,
    /// saturating (NaN gives 0), in either.
    Convert(Elem, Box<Arith>),
    Binary(Binary, Box<Arith>, Box<Arith>),
    /// `a * b + c` rounded once: lowering contracts a product feeding a sum.
    Fma(Box<Arith>, Box<Arith>, Box<Arith>),
    /// `a` where `c` is not 0, else `b`.
    Select(Box<Arith>, Box<Arith>, Box<Arith>),
    /// 1 where the guard is positive (an element inside its tensor), else 0.
    Inside(IntId),
    /// An integer value, converted to the computation's type (to f32 by
    /// rounding to nearest; to i32 by keeping the low 32 bits).
    Int(IntId),
    /// The value of the lane `lane ^ mask` of the warp (PTX `shfl.sync.bfly`):
    /// every lane computes `value`, then each takes its partner's.
    Shuffle(Box<Arith>, u32),
}

impl Arith {
    /// Its operands, left to right (none for a leaf).
    pub fn for_each_operand<'a>(&'a self, f: &mut dyn FnMut(&'a Arith)) {
        match self {
            Arith::Load(..) | Arith::Scalar(_) | Arith::Inside(_) | Arith::Int(_) => {}
            Arith::Unary(_, x) | Arith::Convert(_, x) | Arith::Shuffle(x, _) => f(x),
            Arith::Binary(_, a, b) => {
                f(a);
                f(b);
            }
            Arith::Fma(a, b, c) | Arith::Select(a, b, c) => {
                f(a);
                f(b);
                f(c);
            }
        }
    }

    /// How many operands it has (0 for a leaf).
    pub fn operands(&self) -> usize {
        let mut n = 0;
        self.for_each_operand(&mut |_| n += 1);
        n
    }

    /// Its operands, left to right, to rewrite.
    pub fn operands_mut(&mut self) -> Vec<&mut Arith> {
        match self {
            Arith::Load(..) | Arith::Scalar(_) | Arith::Inside(_) | Arith::Int(_) => Vec::new(),
            Arith::Unary(_, x) | Arith::Convert(_, x) | Arith::Shuffle(x, _) => vec![&mut **x],
            Arith::Binary(_, a, b) => vec![&mut **a, &mut **b],
            Arith::Fma(a, b, c) | Arith::Select(a, b, c) => vec![&mut **a, &mut **b, &mut **c],
        }
    }

    /// Its one-operand operations, outermost first.
    pub fn unaries(&self, out: &mut Vec<Unary>) {
        if let Arith::Unary(op, _) = self {
            out.push(*op);
        }
        self.for_each_operand(&mut |x| x.unaries(out));
    }

    /// The types it rounds values to along the way (`bf16(x * y)`).
    pub fn conversions(&self, out: &mut Vec<Elem>) {
        if let Arith::Convert(to, _) = self {
            out.push(*to);
        }
        self.for_each_operand(&mut |x| x.conversions(out));
    }

    /// Whether it takes values of other lanes.
    pub fn shuffles(&self) -> bool {
        let mut found = matches!(self, Arith::Shuffle(..));
        self.for_each_operand(&mut |x| found |= x.shuffles());
        found
    }

    /// The integer values it reads (`inside` guards, `int` operands).
    pub fn guards(&self, out: &mut Vec<IntId>) {
        match self {
            Arith::Inside(g) | Arith::Int(g) => out.push(*g),
            _ => self.for_each_operand(&mut |x| x.guards(out)),
        }
    }

    /// Its loads, left to right.
    pub fn loads<'a>(&'a self, out: &mut Vec<&'a Addr>) {
        match self {
            Arith::Load(a, _) => out.push(a),
            _ => self.for_each_operand(&mut |x| x.loads(out)),
        }
    }
}
