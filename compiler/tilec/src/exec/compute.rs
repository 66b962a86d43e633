//! The executor's element-wise computations: an [`Arith`] tree evaluated as
//! codegen builds it, in f32 through the math functions of
//! [`crate::arith`] (so every bit agrees with the GPU), or in wrapping i32;
//! for a reference kernel ([`super::Launch::exact`]), in f64 through the
//! correctly rounded functions of Rust and `libm`.

use super::{Block, ExecError, Result, round};
use crate::arith::{self, Binary, F32, Unary};
use crate::check::program::Elem;
use crate::ir::{Addr, Arith};
use crate::span::Span;

impl Block<'_> {
    /// A compute that shuffles: every thread's shuffled values first (the
    /// GPU's lanes all give theirs before any takes), then each thread's
    /// result from its partners' values.
    pub(super) fn compute_warps(
        &mut self,
        elem: Elem,
        value: &Arith,
        dst: &Addr,
        span: Span,
    ) -> Result<()> {
        let mut shuffles = Vec::new();
        collect_shuffles(value, &mut shuffles);
        let mut given = Vec::with_capacity(shuffles.len());
        for &(x, _) in &shuffles {
            let mut per_thread = Vec::with_capacity(self.threads);
            for t in 0..self.threads {
                // A thread that sits the statement out gives nothing; its
                // whole warp does (checked below).
                let v = match self.active[t] {
                    true => self.value(elem, x, t, span)?,
                    false => 0.0,
                };
                per_thread.push(v);
            }
            given.push(per_thread);
        }
        self.shuffled = Vec::with_capacity(shuffles.len());
        for (&(_, mask), values) in shuffles.iter().zip(&given) {
            let mut taken = Vec::with_capacity(self.threads);
            for t in 0..self.threads {
                let partner = t ^ mask as usize;
                let Some(&v) = values.get(partner) else {
                    return Err(super::ExecError {
                        message: format!(
                            "thread {t}'s shuffle partner {partner} is outside the block"
                        ),
                        span,
                        label: "this statement shuffles".into(),
                        other: None,
                        help: Some("shuffles exchange within whole warps of 32 threads"),
                    });
                };
                taken.push(v);
            }
            self.shuffled.push(taken);
        }
        for warp in (0..self.threads).step_by(32) {
            if !self.group_runs(warp, 32, span)? {
                continue;
            }
            for t in warp..(warp + 32).min(self.threads) {
                self.shuffle_at = 0;
                self.compute(elem, value, dst, t, span)?;
            }
        }
        self.shuffled.clear();
        Ok(())
    }

    /// Thread `t`'s value of `a` as its type computes it, unrounded.
    fn value(&mut self, elem: Elem, a: &Arith, t: usize, span: Span) -> Result<f64> {
        Ok(match elem {
            Elem::I32 => self.integer(a, t, span)? as f64,
            _ if self.launch.exact => self.exact(a, t, span)?,
            _ => self.float(a, t, span)? as f64,
        })
    }

    /// The next shuffle's value for thread `t`.
    fn shuffled(&mut self, t: usize) -> f64 {
        let v = self.shuffled[self.shuffle_at][t];
        self.shuffle_at += 1;
        v
    }

    /// `dst = value` for thread `t`.
    pub(super) fn compute(
        &mut self,
        elem: Elem,
        value: &Arith,
        dst: &Addr,
        t: usize,
        span: Span,
    ) -> Result<()> {
        self.padding = false;
        let v = self.value(elem, value, t, span)?;
        let v = match elem {
            Elem::I32 => v,
            _ if self.launch.exact => v,
            _ => round(elem, v),
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
            Arith::Convert(Elem::I32, x) => self.float(x, t, span)? as i32 as f32,
            Arith::Convert(to, x) => round(*to, self.float(x, t, span)? as f64) as f32,
            Arith::Shuffle(..) => self.shuffled(t) as f32,
            Arith::Inside(g) => (self.ints[t][*g] > 0) as i32 as f32,
            Arith::Int(g) => self.ints[t][*g] as f32,
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
            Arith::Unary(op, x) => op.exact(self.exact(x, t, span)?),
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.exact(x, t, span)?, self.exact(y, t, span)?);
                match op {
                    Binary::Add => x + y,
                    Binary::Sub => x - y,
                    Binary::Mul => x * y,
                    Binary::Div => x / y,
                    // The verifier keeps `rem` in i32 computes, which the
                    // integers compute.
                    Binary::Rem => x % y,
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
            // An explicit conversion rounds in the reference too.
            Arith::Convert(Elem::I32, x) => self.exact(x, t, span)? as i32 as f64,
            Arith::Convert(to, x) => round(*to, self.exact(x, t, span)?),
            Arith::Shuffle(..) => self.shuffled(t),
            Arith::Inside(g) => (self.ints[t][*g] > 0) as i32 as f64,
            Arith::Int(g) => self.ints[t][*g] as f64,
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
            Arith::Binary(op @ (Binary::Div | Binary::Rem), x, y) => {
                let x = self.integer(x, t, span)?;
                // Whether the divisor itself read a partial tile's padding.
                let outer = std::mem::replace(&mut self.padding, false);
                let y = self.integer(y, t, span)?;
                let padded = self.padding;
                self.padding |= outer;
                match (op, y) {
                    // Codegen's values: by 1 where the divisor is 0.
                    (Binary::Div, 0) if padded => x,
                    (_, 0) if padded => 0,
                    (_, 0) => return Err(self.by_zero(*op, t, span)),
                    (Binary::Div, _) => x.wrapping_div(y),
                    _ => x.wrapping_rem(y),
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
            // Rust's `as` truncates and saturates, NaN giving 0, as
            // cvt.rzi.sat does; the verifier lets only i32(...) through.
            Arith::Convert(_, x) => self.float(x, t, span)? as i32,
            Arith::Shuffle(..) => self.shuffled(t) as i32,
            Arith::Inside(g) => (self.ints[t][*g] > 0) as i32,
            Arith::Int(g) => self.ints[t][*g] as i32,
            Arith::Select(c, x, y) => {
                let c = self.integer(c, t, span)?;
                let (x, y) = (self.integer(x, t, span)?, self.integer(y, t, span)?);
                if c != 0 { x } else { y }
            }
        })
    }
}

impl Block<'_> {
    /// An i32 `/` or `%` by zero in thread `t`: the GPU's value there is
    /// not the program's to rely on.
    fn by_zero(&self, op: Binary, t: usize, span: Span) -> ExecError {
        let what = match op {
            Binary::Div => "divides",
            _ => "takes a remainder",
        };
        let mut e = self.err(t, span, format!("{what} by an i32 zero"));
        e.help = Some(
            "an i32 `/` or `%` needs a divisor other than 0 in every thread that computes it: divide by `select(d != 0, d, 1)` or `max(d, 1)` (`select(d != 0, x / d, 0)` computes `x / d` too)",
        );
        e
    }
}

/// The shuffles of `a` in the order the evaluators meet them (operands left
/// to right), each with its mask; none is nested in another.
fn collect_shuffles<'a>(a: &'a Arith, out: &mut Vec<(&'a Arith, u32)>) {
    match a {
        Arith::Shuffle(x, mask) => out.push((x, *mask)),
        _ => a.for_each_operand(&mut |x| collect_shuffles(x, out)),
    }
}
