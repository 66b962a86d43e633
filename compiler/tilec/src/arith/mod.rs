//! Element-wise arithmetic: the operations of element-wise statements, and
//! the math functions (`exp`, `log`, `tanh`, `erf`, ...) written once as
//! sequences of IEEE operations each rounded once (add, mul, fma, div,
//! sqrt, round-to-integer, exact scaling by powers of two).
//!
//! In: a backend that can do those operations ([`Float`]). Out: the
//! function's value built from them. The executor runs the functions on
//! `f32`, codegen on LLVM values: the same operations in the same order, so
//! the CPU executor agrees with the GPU bit for bit, math functions
//! included. The one exception is asked for by name: the `fast_` forms
//! (`fast_exp`, ...) are the hardware's approximations ([`Approx`]), which
//! the executor computes exactly and the GPU within the bound
//! [`Unary::error`] gives, so a kernel using them is checked to that bound.

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
    /// The error function, within 2 ulp.
    Erf,
    /// GELU, `x/2 (1 + erf(x / sqrt(2)))` (PyTorch's `gelu`), as
    /// `h + h erf(x c)` with `h = x/2` and `c` the f32 nearest `1/sqrt(2)`.
    Gelu,
    /// GELU's tanh form (PyTorch's `gelu(x, approximate="tanh")`),
    /// `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, in the fewest
    /// operations: `h + h tanh(x (k0 + k1 x^2))`, `h = x/2`.
    GeluTanh,
    /// The logistic function `1 / (1 + e^-x)`, within 3 ulp (as
    /// `e^x / (1 + e^x)` below 0, so that its far negative tail is `e^x`,
    /// not 0 through an overflow).
    Sigmoid,
    /// SiLU (swish), `x * sigmoid(x)` (PyTorch's `silu`), as `x / (1 +
    /// e^-x)` and below 0 `x e^x / (1 + e^x)`, within 3 ulp where `e^x` is
    /// normal (below about -87, `x` times its subnormal rounding, as
    /// PyTorch's f32 `x * sigmoid(x)`).
    Silu,
    /// `e^x` as `2^(x * log2(e))` by the hardware's approximation (CUDA's
    /// `__expf`): within [`Unary::error`], not bit for bit.
    FastExp,
    /// `2^x`, the hardware's approximation (`ex2.approx.f32`).
    FastExp2,
    /// `ln(x)` as `log2(x) * ln(2)`, the hardware's `lg2.approx.f32`.
    FastLog,
    /// The hardware's `sqrt.approx.f32`.
    FastSqrt,
    /// The hardware's `rsqrt.approx.f32`.
    FastRsqrt,
    /// The hardware's `tanh.approx.f32` (sm_75 and later).
    FastTanh,
    /// [`Unary::GeluTanh`] with the tanh by `tanh.approx.f32`: the
    /// cheapest GELU (an epilogue's), five operations (four roundings, `x/2`
    /// being exact) and the approximation, where the formula written out
    /// takes eight.
    FastGeluTanh,
}

/// An approximation the hardware computes in one instruction (the
/// multi-function unit's). Its result is not specified to the bit, so the
/// executor takes the exact value rounded to f32, and the GPU's differs
/// by at most [`Approx::error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Approx {
    Ex2,
    Lg2,
    Sqrt,
    Rsqrt,
    Tanh,
}

impl Approx {
    /// The largest relative error the PTX ISA gives for the instruction
    /// over its whole range (for `lg2`, the absolute error near 1, where
    /// the value goes through 0), rounded up to a power of two.
    pub fn error(self) -> f64 {
        match self {
            Approx::Ex2 | Approx::Lg2 | Approx::Sqrt | Approx::Rsqrt => 2f64.powi(-22),
            // About 16 bits measured; the ISA promises 11.
            Approx::Tanh => 2f64.powi(-10),
        }
    }

    /// The exact value of what the instruction approximates.
    pub fn exact(self, x: f64) -> f64 {
        match self {
            Approx::Ex2 => x.exp2(),
            Approx::Lg2 => x.log2(),
            Approx::Sqrt => x.sqrt(),
            Approx::Rsqrt => 1.0 / x.sqrt(),
            Approx::Tanh => x.tanh(),
        }
    }
}

/// A two-operand element-wise operation. Comparisons give 1 or 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    /// Correctly rounded division; of i32 values, truncated toward zero
    /// (C's, PTX's `div.s32`), wrapping at -2^31 / -1.
    Div,
    /// The remainder of i32 values, with the dividend's sign (C's `%`,
    /// PTX's `rem.s32`); no float has one.
    Rem,
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
    pub const ALL: [Unary; 20] = [
        Unary::Neg,
        Unary::Abs,
        Unary::Exp,
        Unary::Exp2,
        Unary::Log,
        Unary::Sqrt,
        Unary::Rsqrt,
        Unary::Tanh,
        Unary::Erf,
        Unary::Gelu,
        Unary::GeluTanh,
        Unary::Sigmoid,
        Unary::Silu,
        Unary::FastExp,
        Unary::FastExp2,
        Unary::FastLog,
        Unary::FastSqrt,
        Unary::FastRsqrt,
        Unary::FastTanh,
        Unary::FastGeluTanh,
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
            Unary::Gelu => "gelu",
            Unary::GeluTanh => "gelu_tanh",
            Unary::Sigmoid => "sigmoid",
            Unary::Silu => "silu",
            Unary::FastExp => "fast_exp",
            Unary::FastExp2 => "fast_exp2",
            Unary::FastLog => "fast_log",
            Unary::FastSqrt => "fast_sqrt",
            Unary::FastRsqrt => "fast_rsqrt",
            Unary::FastTanh => "fast_tanh",
            Unary::FastGeluTanh => "fast_gelu_tanh",
        }
    }

    /// The hardware approximation a `fast_` form is made of.
    pub fn approx(self) -> Option<Approx> {
        match self {
            Unary::FastExp | Unary::FastExp2 => Some(Approx::Ex2),
            Unary::FastLog => Some(Approx::Lg2),
            Unary::FastSqrt => Some(Approx::Sqrt),
            Unary::FastRsqrt => Some(Approx::Rsqrt),
            Unary::FastTanh | Unary::FastGeluTanh => Some(Approx::Tanh),
            _ => None,
        }
    }

    /// How far the GPU's value may be from the executor's, relatively: 0
    /// for the exact forms (the two agree bit for bit). `fast_exp` adds
    /// the rounding of `x * log2(e)`, `|x| 2^-24` of relative error for
    /// the `|x| < 104` whose values are normal: 2^-17 at most.
    pub fn error(self) -> f64 {
        match self {
            Unary::FastExp => 2f64.powi(-17),
            _ => self.approx().map_or(0.0, Approx::error),
        }
    }

    /// The exact value of what it computes (the references' f64 forms).
    pub fn exact(self, x: f64) -> f64 {
        match self {
            Unary::Neg => -x,
            Unary::Abs => x.abs(),
            Unary::Exp | Unary::FastExp => x.exp(),
            Unary::Exp2 | Unary::FastExp2 => x.exp2(),
            Unary::Log | Unary::FastLog => x.ln(),
            Unary::Sqrt | Unary::FastSqrt => x.sqrt(),
            Unary::Rsqrt | Unary::FastRsqrt => 1.0 / x.sqrt(),
            Unary::Tanh | Unary::FastTanh => x.tanh(),
            Unary::Erf => libm::erf(x),
            Unary::Gelu => 0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2)),
            Unary::GeluTanh | Unary::FastGeluTanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
            }
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Silu => x / (1.0 + (-x).exp()),
        }
    }

    /// Whether it means the same on integers (i32 element-wise statements).
    pub fn on_integers(self) -> bool {
        matches!(self, Unary::Neg | Unary::Abs)
    }
}

impl Binary {
    pub const ALL: [Binary; 13] = [
        Binary::Add,
        Binary::Sub,
        Binary::Mul,
        Binary::Div,
        Binary::Rem,
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
            Binary::Rem => "rem",
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

    /// Whether it means something on floats (f32 computes).
    pub fn on_floats(self) -> bool {
        self != Binary::Rem
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
    /// The hardware's approximation (asked for by a `fast_` form only).
    fn approx(&mut self, op: Approx, a: Self::V) -> Result<Self::V, Self::Error>;
}
