//! The executor's element-wise computations: an [`Arith`] tree evaluated as
//! codegen builds it, in f32 through the math functions of
//! [`crate::arith`] (so every bit agrees with the GPU), or in wrapping i32;
//! for a reference kernel ([`super::Launch::exact`]), in f64 through the
//! correctly rounded functions of Rust and `libm`.

use super::{Block, Result, round};
use crate::arith::{self, Binary, F32, Unary};
use crate::check::program::Elem;
use crate::ir::{Addr, Arith};
use crate::span::Span;

impl Block<'_> {
    /// `dst = value` for thread `t`.
    pub(super) fn compute(
        &mut self,
        elem: Elem,
        value: &Arith,
        dst: &Addr,
        t: usize,
        span: Span,
    ) -> Result<()> {
        let v = match elem {
            Elem::I32 => self.integer(value, t, span)? as f64,
            _ if self.launch.exact => self.exact(value, t, span)?,
            _ => round(elem, self.float(value, t, span)? as f64),
        };
        self.write(dst, t, v, span)
    }

    fn float(&mut self, a: &Arith, t: usize, span: Span) -> Result<f32> {
        Ok(match a {
            // Every stored float is an f32 value; an i32 rounds to nearest.
            Arith::Load(at, _) => self.read(at, t, span)? as f32,
            Arith::Scalar(s) => self.scalar(s) as f32,
            Arith::Unary(op, x) => {
                let x = self.float(x, t, span)?;
                let Ok(v) = arith::unary(&mut F32, *op, x);
                v
            }
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.float(x, t, span)?, self.float(y, t, span)?);
                let Ok(v) = arith::binary(&mut F32, *op, x, y);
                v
            }
            Arith::Fma(x, y, z) => {
                let x = self.float(x, t, span)?;
                let y = self.float(y, t, span)?;
                x.mul_add(y, self.float(z, t, span)?)
            }
            Arith::Select(c, x, y) => {
                // Both sides are evaluated, as on the GPU (their reads count).
                let c = self.float(c, t, span)?;
                let (x, y) = (self.float(x, t, span)?, self.float(y, t, span)?);
                if c != 0.0 { x } else { y }
            }
        })
    }

    fn exact(&mut self, a: &Arith, t: usize, span: Span) -> Result<f64> {
        Ok(match a {
            Arith::Load(at, _) => self.read(at, t, span)?,
            Arith::Scalar(s) => self.scalar(s),
            Arith::Unary(op, x) => {
                let x = self.exact(x, t, span)?;
                match op {
                    Unary::Neg => -x,
                    Unary::Abs => x.abs(),
                    Unary::Exp => x.exp(),
                    Unary::Exp2 => x.exp2(),
                    Unary::Log => x.ln(),
                    Unary::Sqrt => x.sqrt(),
                    Unary::Rsqrt => 1.0 / x.sqrt(),
                    Unary::Tanh => x.tanh(),
                    Unary::Erf => libm::erf(x),
                }
            }
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.exact(x, t, span)?, self.exact(y, t, span)?);
                match op {
                    Binary::Add => x + y,
                    Binary::Sub => x - y,
                    Binary::Mul => x * y,
                    Binary::Div => x / y,
                    Binary::Min => x.min(y),
                    Binary::Max => x.max(y),
                    _ => op.compare(x, y) as i32 as f64,
                }
            }
            Arith::Fma(x, y, z) => {
                let x = self.exact(x, t, span)?;
                let y = self.exact(y, t, span)?;
                x.mul_add(y, self.exact(z, t, span)?)
            }
            Arith::Select(c, x, y) => {
                let c = self.exact(c, t, span)?;
                let (x, y) = (self.exact(x, t, span)?, self.exact(y, t, span)?);
                if c != 0.0 { x } else { y }
            }
        })
    }

    fn integer(&mut self, a: &Arith, t: usize, span: Span) -> Result<i32> {
        Ok(match a {
            Arith::Load(at, _) => self.read(at, t, span)? as i32,
            Arith::Scalar(s) => self.scalar(s) as i32,
            Arith::Unary(op, x) => {
                let x = self.integer(x, t, span)?;
                match op {
                    Unary::Abs => x.wrapping_abs(),
                    _ => x.wrapping_neg(), // the verifier lets only neg and abs through
                }
            }
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.integer(x, t, span)?, self.integer(y, t, span)?);
                match op {
                    Binary::Add => x.wrapping_add(y),
                    Binary::Sub => x.wrapping_sub(y),
                    Binary::Mul => x.wrapping_mul(y),
                    Binary::Min => x.min(y),
                    Binary::Max => x.max(y),
                    _ => op.compare(x, y) as i32,
                }
            }
            // The verifier keeps fma out of integer computes.
            Arith::Fma(x, y, z) => {
                let (x, y) = (self.integer(x, t, span)?, self.integer(y, t, span)?);
                x.wrapping_mul(y).wrapping_add(self.integer(z, t, span)?)
            }
            Arith::Select(c, x, y) => {
                let c = self.integer(c, t, span)?;
                let (x, y) = (self.integer(x, t, span)?, self.integer(y, t, span)?);
                if c != 0 { x } else { y }
            }
        })
    }
}
