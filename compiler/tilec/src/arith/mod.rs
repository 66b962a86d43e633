//! Element-wise arithmetic: the operations of element-wise statements, and
//! the math functions (`exp`, `log`, `tanh`, `erf`, ...) written once as
//! sequences of IEEE operations each rounded once (add, mul, fma, div,
//! sqrt, round-to-integer, exact scaling by powers of two).
//!
//! In: a backend that can do those operations ([`Float`]). Out: the
//! function's value built from them. The executor runs the functions on
//! `f32`, codegen on LLVM values: the same operations in the same order, so
//! the CPU executor agrees with the GPU bit for bit, math functions
//! included (no approximate hardware instruction is ever used).

mod math;

pub use math::{F32, binary, unary};

use std::fmt;

/// A one-operand element-wise operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unary {
    Neg,
    Abs,
    /// `e^x`, within 1 ulp.
    Exp,
    /// `2^x`, within 1 ulp.
    Exp2,
    /// The natural logarithm, within 2 ulp.
    Log,
    /// Correctly rounded.
    Sqrt,
    /// `1 / sqrt(x)`, the two rounded apart: within 1.5 ulp.
    Rsqrt,
    /// Within 2 ulp.
    Tanh,
    /// The error function (GELU's), within 2 ulp.
    Erf,
}

/// A two-operand element-wise operation. Comparisons give 1 or 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    /// Correctly rounded division.
    Div,
    /// IEEE minNum and maxNum: a NaN operand gives the other one; of two
    /// zeros, min is -0 if either is, max +0 if either is.
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Unary {
    pub const ALL: [Unary; 9] = [
        Unary::Neg,
        Unary::Abs,
        Unary::Exp,
        Unary::Exp2,
        Unary::Log,
        Unary::Sqrt,
        Unary::Rsqrt,
        Unary::Tanh,
        Unary::Erf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Unary::Neg => "neg",
            Unary::Abs => "abs",
            Unary::Exp => "exp",
            Unary::Exp2 => "exp2",
            Unary::Log => "log",
            Unary::Sqrt => "sqrt",
            Unary::Rsqrt => "rsqrt",
            Unary::Tanh => "tanh",
            Unary::Erf => "erf",
        }
    }

    /// Whether it means the same on integers (i32 element-wise statements).
    pub fn on_integers(self) -> bool {
        matches!(self, Unary::Neg | Unary::Abs)
    }
}

impl Binary {
    pub const ALL: [Binary; 12] = [
        Binary::Add,
        Binary::Sub,
        Binary::Mul,
        Binary::Div,
        Binary::Min,
        Binary::Max,
        Binary::Lt,
        Binary::Le,
        Binary::Gt,
        Binary::Ge,
        Binary::Eq,
        Binary::Ne,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
            Binary::Min => "min",
            Binary::Max => "max",
            Binary::Lt => "lt",
            Binary::Le => "le",
            Binary::Gt => "gt",
            Binary::Ge => "ge",
            Binary::Eq => "eq",
            Binary::Ne => "ne",
        }
    }

    pub fn on_integers(self) -> bool {
        self != Binary::Div
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            Binary::Lt | Binary::Le | Binary::Gt | Binary::Ge | Binary::Eq | Binary::Ne
        )
    }

    /// The comparison that holds where this one does not (itself for an
    /// operation that is no comparison).
    pub fn negation(self) -> Binary {
        match self {
            Binary::Lt => Binary::Ge,
            Binary::Le => Binary::Gt,
            Binary::Gt => Binary::Le,
            Binary::Ge => Binary::Lt,
            Binary::Eq => Binary::Ne,
            Binary::Ne => Binary::Eq,
            other => other,
        }
    }

    /// The comparison's truth on two values.
    pub fn compare<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Binary::Lt => a < b,
            Binary::Le => a <= b,
            Binary::Gt => a > b,
            Binary::Ge => a >= b,
            Binary::Eq => a == b,
            Binary::Ne => a != b,
            _ => false,
        }
    }
}

impl fmt::Display for Unary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a math function is made of. Every operation is IEEE binary32,
/// rounded to nearest even, subnormals kept.
pub trait Float {
    type V: Copy;
    type Error;
    fn lit(&mut self, x: f32) -> Result<Self::V, Self::Error>;
    fn add(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    fn sub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    fn mul(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    fn div(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    /// `a * b + c`, rounded once.
    fn fma(&mut self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V, Self::Error>;
    fn sqrt(&mut self, a: Self::V) -> Result<Self::V, Self::Error>;
    fn neg(&mut self, a: Self::V) -> Result<Self::V, Self::Error>;
    fn abs(&mut self, a: Self::V) -> Result<Self::V, Self::Error>;
    fn min(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    fn max(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    /// `x` limited to `[lo, hi]` (constants, `lo <= hi`); a NaN gives the
    /// canonical NaN (PTX `max.NaN`, `min.NaN`: no test and select after).
    fn clamp(&mut self, x: Self::V, lo: f32, hi: f32) -> Result<Self::V, Self::Error>;
    /// 1.0 where the comparison holds, else 0.0 (false on NaN but for `Ne`).
    fn compare(&mut self, op: Binary, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    /// `a` where `c` is not 0, else `b`.
    fn select(&mut self, c: Self::V, a: Self::V, b: Self::V) -> Result<Self::V, Self::Error>;
    /// The nearest integer, ties to even.
    fn rint(&mut self, a: Self::V) -> Result<Self::V, Self::Error>;
    /// `2^n` for an integral `n` in -126..=127: exact.
    fn pow2(&mut self, n: Self::V) -> Result<Self::V, Self::Error>;
    /// For a positive normal `a`: its exponent `e` (as a float) and its
    /// significand in [1, 2), `a = m * 2^e`, both exact.
    fn split(&mut self, a: Self::V) -> Result<(Self::V, Self::V), Self::Error>;
}
