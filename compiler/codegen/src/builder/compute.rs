//! Element-wise computations: an IR [`Arith`] tree as LLVM instructions.
//! Floats go through [`tilec::arith`]'s math functions on [`Llvm`], the
//! same IEEE operations in the same order as the CPU executor runs them,
//! and nothing carries fast-math flags: each operation rounds once, to
//! nearest even, subnormals kept (the PTX: add/mul/fma/div/sqrt `.rn`).
//! The `fast_` forms alone are the hardware's approximations
//! (`ex2.approx.f32`, ...), which the user asked for by name.

use super::KernelBuilder;
use crate::{CodegenError, Result};
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{AsValueRef, BasicValueEnum, CallSiteValue, FloatValue, IntValue, ValueKind};
use inkwell::{FloatPredicate, IntPredicate};
use tilec::arith::{self, Approx, Binary, Float, Unary};
use tilec::check::program::Elem;
use tilec::ir::{Addr, Arith};

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// `dst = value`, rounded to `elem`.
    pub(super) fn compute(&mut self, elem: Elem, value: &Arith, dst: &Addr) -> Result<()> {
        let v: BasicValueEnum = match elem {
            Elem::I32 => self.integer(value)?.into(),
            _ => self.float(value)?.into(),
        };
        self.store_acc(dst, elem, v)
    }

    fn float(&mut self, a: &Arith) -> Result<FloatValue<'ctx>> {
        Ok(match a {
            Arith::Load(at, e) => {
                let v = self.load_acc(at, *e)?;
                match e {
                    Elem::I32 => self.b.build_signed_int_to_float(
                        v.into_int_value(),
                        self.ctx.f32_type(),
                        "",
                    )?,
                    _ => v.into_float_value(),
                }
            }
            Arith::Scalar(s) => self.scalar(s, Elem::F32)?.into_float_value(),
            Arith::Unary(op, x) => {
                let x = self.float(x)?;
                arith::unary(&mut Llvm(self), *op, x)?
            }
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.float(x)?, self.float(y)?);
                arith::binary(&mut Llvm(self), *op, x, y)?
            }
            Arith::Fma(x, y, z) => {
                let (x, y, z) = (self.float(x)?, self.float(y)?, self.float(z)?);
                Llvm(self).fma(x, y, z)?
            }
            Arith::Convert(Elem::I32, x) => {
                let i = self.truncate(x)?;
                self.b
                    .build_signed_int_to_float(i, self.ctx.f32_type(), "")?
            }
            Arith::Convert(to, x) => {
                let x = self.float(x)?;
                let narrow = self.convert_float(x.into(), Elem::F32, *to)?;
                self.convert_float(narrow, *to, Elem::F32)?
                    .into_float_value()
            }
            Arith::Select(c, x, y) => {
                let (c, x, y) = (self.float(c)?, self.float(x)?, self.float(y)?);
                Llvm(self).select(c, x, y)?
            }
            Arith::Int(g) => {
                self.b
                    .build_signed_int_to_float(self.ints[g], self.ctx.f32_type(), "")?
            }
            Arith::Inside(g) => {
                let p = self.positive(*g)?;
                let (one, zero) = (
                    self.ctx.f32_type().const_float(1.0),
                    self.ctx.f32_type().const_zero(),
                );
                self.b.build_select(p, one, zero, "")?.into_float_value()
            }
            Arith::Shuffle(x, mask) => {
                let x = self.float(x)?;
                self.shuffle(x.into(), *mask, "llvm.nvvm.shfl.sync.bfly.f32")?
                    .into_float_value()
            }
        })
    }

    /// `i32(x)`: x in f32, truncated toward zero, saturating, NaN to 0
    /// (`cvt.rzi.sat.s32.f32`).
    fn truncate(&mut self, x: &Arith) -> Result<IntValue<'ctx>> {
        let x = self.float(x)?;
        let i32t = self.ctx.i32_type();
        let f = self.intrinsic(
            "llvm.fptosi.sat",
            &[i32t.into(), self.ctx.f32_type().into()],
        )?;
        Ok(self.call_value(f, &[x.into()])?.into_int_value())
    }

    /// `x / y` or `x % y` of i32 values, truncated toward zero, without
    /// LLVM's undefined cases: -2^31 / -1 wraps to -2^31 (its remainder
    /// 0), and a divisor of 0 divides by 1 (the CPU executor stops there
    /// instead, naming the statement).
    fn quotient(
        &mut self,
        op: Binary,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let b = &self.b;
        let minus_one = b.build_int_compare(IntPredicate::EQ, y, i32t.const_all_ones(), "")?;
        let zero = b.build_int_compare(IntPredicate::EQ, y, i32t.const_zero(), "")?;
        let plain = b.build_or(minus_one, zero, "")?;
        let by = b
            .build_select(plain, i32t.const_int(1, false), y, "")?
            .into_int_value();
        let (v, at_minus_one) = match op {
            Binary::Div => (b.build_int_signed_div(x, by, "")?, b.build_int_neg(x, "")?),
            _ => (b.build_int_signed_rem(x, by, "")?, i32t.const_zero()),
        };
        Ok(b.build_select(minus_one, at_minus_one, v, "")?
            .into_int_value())
    }

    /// Wrapping i32 arithmetic (the verifier lets only integer operations in).
    fn integer(&mut self, a: &Arith) -> Result<IntValue<'ctx>> {
        Ok(match a {
            Arith::Load(at, e) => self.load_acc(at, *e)?.into_int_value(),
            Arith::Scalar(s) => self.scalar(s, Elem::I32)?.into_int_value(),
            Arith::Unary(op, x) => {
                let x = self.integer(x)?;
                let neg = self.b.build_int_neg(x, "")?;
                match op {
                    Unary::Abs => {
                        let zero = self.ctx.i32_type().const_zero();
                        let below = self.b.build_int_compare(IntPredicate::SLT, x, zero, "")?;
                        self.b.build_select(below, neg, x, "")?.into_int_value()
                    }
                    _ => neg,
                }
            }
            Arith::Binary(op, x, y) => {
                let (x, y) = (self.integer(x)?, self.integer(y)?);
                let b = &self.b;
                let cmp = |p| b.build_int_compare(p, x, y, "");
                let flag = |c: IntValue<'ctx>| b.build_int_z_extend(c, self.ctx.i32_type(), "");
                match op {
                    Binary::Add => b.build_int_add(x, y, "")?,
                    Binary::Sub => b.build_int_sub(x, y, "")?,
                    Binary::Mul => b.build_int_mul(x, y, "")?,
                    Binary::Min => b
                        .build_select(cmp(IntPredicate::SLT)?, x, y, "")?
                        .into_int_value(),
                    Binary::Max => b
                        .build_select(cmp(IntPredicate::SGT)?, x, y, "")?
                        .into_int_value(),
                    Binary::Lt | Binary::Le | Binary::Gt | Binary::Ge | Binary::Eq | Binary::Ne => {
                        flag(cmp(int_predicate(*op))?)?
                    }
                    Binary::Div | Binary::Rem => return self.quotient(*op, x, y),
                }
            }
            Arith::Fma(..) => return Err(CodegenError::Llvm("an integer fma".into())),
            Arith::Convert(_, x) => self.truncate(x)?,
            Arith::Int(g) => self
                .b
                .build_int_truncate(self.ints[g], self.ctx.i32_type(), "")?,
            Arith::Inside(g) => {
                let p = self.positive(*g)?;
                self.b.build_int_z_extend(p, self.ctx.i32_type(), "")?
            }
            Arith::Shuffle(x, mask) => {
                let x = self.integer(x)?;
                self.shuffle(x.into(), *mask, "llvm.nvvm.shfl.sync.bfly.i32")?
                    .into_int_value()
            }
            Arith::Select(c, x, y) => {
                let (c, x, y) = (self.integer(c)?, self.integer(x)?, self.integer(y)?);
                let zero = self.ctx.i32_type().const_zero();
                let on = self.b.build_int_compare(IntPredicate::NE, c, zero, "")?;
                self.b.build_select(on, x, y, "")?.into_int_value()
            }
        })
    }
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// The value of lane `lane ^ mask`, all 32 lanes taking part.
    pub(super) fn shuffle(
        &self,
        v: BasicValueEnum<'ctx>,
        mask: u32,
        intrinsic: &str,
    ) -> Result<BasicValueEnum<'ctx>> {
        let i32t = self.ctx.i32_type();
        let f = self.intrinsic(intrinsic, &[])?;
        let args = [
            i32t.const_all_ones().into(),
            v.into(),
            i32t.const_int(mask as u64, false).into(),
            i32t.const_int(31, false).into(),
        ];
        self.call_value(f, &args)
    }
}

/// The math functions' operations as LLVM instructions, without fast-math
/// flags.
struct Llvm<'k, 'a, 'ctx>(&'k KernelBuilder<'a, 'ctx>);

impl<'ctx> Llvm<'_, '_, 'ctx> {
    fn call(&self, name: &str, args: &[FloatValue<'ctx>]) -> Result<FloatValue<'ctx>> {
        let f32t = self.0.ctx.f32_type();
        let f = self.0.intrinsic(name, &[f32t.into()])?;
        let args: Vec<_> = args.iter().map(|&a| a.into()).collect();
        result(self.0.b.build_call(f, &args, "")?, name)
    }

    fn bits(&self, a: FloatValue<'ctx>) -> Result<IntValue<'ctx>> {
        let i32t = self.0.ctx.i32_type();
        Ok(self.0.b.build_bit_cast(a, i32t, "")?.into_int_value())
    }

    fn float_of_bits(&self, a: IntValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let f32t = self.0.ctx.f32_type();
        Ok(self.0.b.build_bit_cast(a, f32t, "")?.into_float_value())
    }
}

impl<'ctx> Float for Llvm<'_, '_, 'ctx> {
    type V = FloatValue<'ctx>;
    type Error = CodegenError;
    fn lit(&mut self, x: f32) -> Result<Self::V> {
        Ok(self.0.ctx.f32_type().const_float(x as f64))
    }
    fn add(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        Ok(self.0.b.build_float_add(a, b, "")?)
    }
    fn sub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        Ok(self.0.b.build_float_sub(a, b, "")?)
    }
    fn mul(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        Ok(self.0.b.build_float_mul(a, b, "")?)
    }
    fn div(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        Ok(self.0.b.build_float_div(a, b, "")?)
    }
    fn fma(&mut self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V> {
        self.call("llvm.fma", &[a, b, c])
    }
    fn sqrt(&mut self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.sqrt", &[a])
    }
    fn neg(&mut self, a: Self::V) -> Result<Self::V> {
        Ok(self.0.b.build_float_neg(a, "")?)
    }
    fn abs(&mut self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.fabs", &[a])
    }
    // PTX min.f32 and max.f32 (FMNMX), probed on the H200: a NaN gives the
    // other operand; of two zeros, min gives -0 and max +0 in either order:
    // the rule the executor follows.
    fn min(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.call("llvm.minnum", &[a, b])
    }
    fn max(&mut self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.call("llvm.maxnum", &[a, b])
    }
    fn clamp(&mut self, x: Self::V, lo: f32, hi: f32) -> Result<Self::V> {
        let (lo, hi) = (self.lit(lo)?, self.lit(hi)?);
        let x = self.call("llvm.maximum", &[x, lo])?;
        self.call("llvm.minimum", &[x, hi])
    }
    fn compare(&mut self, op: Binary, a: Self::V, b: Self::V) -> Result<Self::V> {
        // Ordered comparisons are false on NaN; `!=` is true on it.
        let p = match op {
            Binary::Lt => FloatPredicate::OLT,
            Binary::Le => FloatPredicate::OLE,
            Binary::Gt => FloatPredicate::OGT,
            Binary::Ge => FloatPredicate::OGE,
            Binary::Eq => FloatPredicate::OEQ,
            _ => FloatPredicate::UNE,
        };
        let c = self.0.b.build_float_compare(p, a, b, "")?;
        let (one, zero) = (self.lit(1.0)?, self.lit(0.0)?);
        Ok(self.0.b.build_select(c, one, zero, "")?.into_float_value())
    }
    fn select(&mut self, c: Self::V, a: Self::V, b: Self::V) -> Result<Self::V> {
        let zero = self.lit(0.0)?;
        let on = self
            .0
            .b
            .build_float_compare(FloatPredicate::UNE, c, zero, "")?;
        Ok(self.0.b.build_select(on, a, b, "")?.into_float_value())
    }
    fn rint(&mut self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.rint", &[a])
    }
    fn pow2(&mut self, n: Self::V) -> Result<Self::V> {
        // (n + 127) << 23 as one exact fma in f32 ((n + 127) * 2^23 has 8
        // significant bits) and a conversion: one instruction fewer than
        // the integer add and shift, in every exponential. Frozen: for a
        // NaN `n` (an exponential of NaN, whose result is NaN whatever
        // this gives) LLVM's conversion is poison, which a constant NaN
        // would fold the whole computation into; `llvm.fptosi.sat` would
        // say 0, but NVPTX expands it into six more instructions.
        let (scale, bias) = (self.lit(8_388_608.0)?, self.lit(127.0 * 8_388_608.0)?);
        let biased = self.fma(n, scale, bias)?;
        let i32t = self.0.ctx.i32_type();
        let bits = self.0.b.build_float_to_signed_int(biased, i32t, "")?;
        // Safety: `bits` is a value of this builder's function; the name
        // is a NUL-terminated empty string.
        let bits = unsafe {
            IntValue::new(llvm_sys::core::LLVMBuildFreeze(
                self.0.b.as_mut_ptr(),
                bits.as_value_ref(),
                c"".as_ptr(),
            ))
        };
        self.float_of_bits(bits)
    }
    fn split(&mut self, a: Self::V) -> Result<(Self::V, Self::V)> {
        let i32t = self.0.ctx.i32_type();
        let c = |v: u64| i32t.const_int(v, false);
        let bits = self.bits(a)?;
        let b = &self.0.b;
        let e = b.build_right_shift(bits, c(23), false, "")?;
        let e = b.build_and(e, c(0xff), "")?;
        let e = b.build_int_sub(e, c(127), "")?;
        let e = b.build_signed_int_to_float(e, self.0.ctx.f32_type(), "")?;
        let m = b.build_and(bits, c(0x007f_ffff), "")?;
        let m = b.build_or(m, c(0x3f80_0000), "")?;
        Ok((e, self.float_of_bits(m)?))
    }
    fn approx(&mut self, op: Approx, a: Self::V) -> Result<Self::V> {
        // Not ftz: subnormal arguments and results kept, as everywhere else.
        let name = match op {
            Approx::Ex2 => "llvm.nvvm.ex2.approx.f",
            Approx::Lg2 => "llvm.nvvm.lg2.approx.f",
            Approx::Sqrt => "llvm.nvvm.sqrt.approx.f",
            Approx::Rsqrt => "llvm.nvvm.rsqrt.approx.f",
            // LLVM 19 has no intrinsic for it: inline PTX, pure (no
            // side effects, no memory), so LLVM may still move or merge it.
            Approx::Tanh => {
                let f32t = self.0.ctx.f32_type();
                let fn_ty = f32t.fn_type(&[BasicMetadataTypeEnum::from(f32t)], false);
                let asm = self.0.ctx.create_inline_asm(
                    fn_ty,
                    "tanh.approx.f32 $0, $1;".to_string(),
                    "=f,f".to_string(),
                    false,
                    false,
                    None,
                    false,
                );
                let call = self.0.b.build_indirect_call(fn_ty, asm, &[a.into()], "")?;
                return result(call, "tanh.approx.f32");
            }
        };
        let f = self.0.intrinsic(name, &[])?;
        result(self.0.b.build_call(f, &[a.into()], "")?, name)
    }
}

/// The float a call returns.
fn result<'ctx>(call: CallSiteValue<'ctx>, name: &str) -> Result<FloatValue<'ctx>> {
    match call.try_as_basic_value() {
        ValueKind::Basic(v) => Ok(v.into_float_value()),
        ValueKind::Instruction(_) => Err(CodegenError::Llvm(format!("{name} returned nothing"))),
    }
}

/// A comparison on signed integers.
pub(super) fn int_predicate(op: Binary) -> IntPredicate {
    match op {
        Binary::Lt => IntPredicate::SLT,
        Binary::Le => IntPredicate::SLE,
        Binary::Gt => IntPredicate::SGT,
        Binary::Ge => IntPredicate::SGE,
        Binary::Eq => IntPredicate::EQ,
        _ => IntPredicate::NE,
    }
}
