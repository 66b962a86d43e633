//! Arithmetic in the accumulation type (f32 for every float type, i32 for
//! i32): FMAs as `llvm.fma`, and scalar operands converted to it.

use super::KernelBuilder;
use crate::{CodegenError, Result};
use inkwell::context::Context;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, FloatValue};
use tilec::check::program::Elem;
use tilec::ir::{Param, ScalarRef};

impl<'ctx> KernelBuilder<'_, 'ctx> {
    pub(super) fn fma(
        &self,
        elem: Elem,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if elem == Elem::I32 {
            let p = self
                .b
                .build_int_mul(a.into_int_value(), b.into_int_value(), "")?;
            return Ok(self.b.build_int_add(p, c.into_int_value(), "")?.into());
        }
        let f32t = self.ctx.f32_type();
        let f = self.intrinsic("llvm.fma", &[f32t.into()])?;
        self.call_value(f, &[a.into(), b.into(), c.into()])
    }

    /// A scalar operand in the accumulation type of `elem`.
    pub(super) fn scalar(&self, s: &ScalarRef, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        match s {
            ScalarRef::Literal(v) => Ok(match elem {
                Elem::I32 => self.ctx.i32_type().const_int(*v as i64 as u64, true).into(),
                _ => self.ctx.f32_type().const_float(*v).into(),
            }),
            ScalarRef::Param(p) => {
                let v = self.func.get_nth_param(*p as u32).expect("declared");
                let pelem = match &self.ir.params[*p] {
                    Param::Scalar { elem, .. } => *elem,
                    Param::Tensor { .. } => {
                        return Err(CodegenError::Llvm("a tensor used as a scalar".into()));
                    }
                };
                self.convert(v, pelem, elem)
            }
        }
    }

    /// Converts a scalar parameter of type `from` to the accumulation type of `to`.
    fn convert(
        &self,
        v: BasicValueEnum<'ctx>,
        from: Elem,
        to: Elem,
    ) -> Result<BasicValueEnum<'ctx>> {
        let f32t = self.ctx.f32_type();
        Ok(match (from, to) {
            (Elem::I32, Elem::I32) => v,
            (Elem::I32, _) => self
                .b
                .build_signed_int_to_float(v.into_int_value(), f32t, "")?
                .into(),
            (_, Elem::I32) => {
                let f: FloatValue = self.to_f32(v, from)?;
                self.b
                    .build_float_to_signed_int(f, self.ctx.i32_type(), "")?
                    .into()
            }
            _ => self.to_f32(v, from)?.into(),
        })
    }

    /// A float converted between types: widening is exact, narrowing
    /// rounds to nearest even (LLVM's `fptrunc`); f16 <-> bf16 goes
    /// through f32, which holds both exactly.
    pub(super) fn convert_float(
        &self,
        v: BasicValueEnum<'ctx>,
        from: Elem,
        to: Elem,
    ) -> Result<BasicValueEnum<'ctx>> {
        let wide = self.to_f32(v, from)?;
        Ok(match to {
            Elem::F32 => wide.into(),
            _ => self
                .b
                .build_float_trunc(wide, super::elem_type(self.ctx, to).into_float_type(), "")?
                .into(),
        })
    }

    fn to_f32(&self, v: BasicValueEnum<'ctx>, from: Elem) -> Result<FloatValue<'ctx>> {
        Ok(match from {
            Elem::F16 | Elem::Bf16 => {
                self.b
                    .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
            }
            _ => v.into_float_value(),
        })
    }
}

/// `v` as a constant of `elem`.
pub(super) fn constant(ctx: &Context, elem: Elem, v: f64) -> BasicValueEnum<'_> {
    match elem {
        Elem::I32 => ctx.i32_type().const_int(v as i64 as u64, true).into(),
        _ => elem_type(ctx, elem).into_float_type().const_float(v).into(),
    }
}

pub(super) fn elem_type(ctx: &Context, e: Elem) -> BasicTypeEnum<'_> {
    match e {
        Elem::F32 => ctx.f32_type().as_basic_type_enum(),
        Elem::F16 => ctx.f16_type().as_basic_type_enum(),
        Elem::Bf16 => ctx.bf16_type().as_basic_type_enum(),
        Elem::I32 => ctx.i32_type().as_basic_type_enum(),
    }
}
