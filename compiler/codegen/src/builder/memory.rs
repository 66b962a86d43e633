//! Memory accesses: loads and stores of global, shared and register
//! elements, scalar or as vectors, guarded or not.
//!
//! Registers are SSA values (constant indices); shared loads are reused
//! until a barrier, wait or shared store and carry their proved alignment;
//! a guarded load reads element 0 and selects zero, a guarded store branches.

use super::{KernelBuilder, elem_type};
use crate::{CodegenError, Result};
use inkwell::IntPredicate;
use inkwell::context::Context;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use tilec::check::program::Elem;
use tilec::ir::{Addr, IntDef, Space};

impl<'ctx> KernelBuilder<'_, 'ctx> {
    fn element_ptr(
        &self,
        space: Space,
        index: IntValue<'ctx>,
        elem: Elem,
    ) -> Result<PointerValue<'ctx>> {
        let ty = elem_type(self.ctx, elem);
        let base = match space {
            Space::Global(p) => self
                .func
                .get_nth_param(p as u32)
                .expect("declared")
                .into_pointer_value(),
            Space::Shared(s) => self.shared[s],
            Space::Registers(_) => {
                return Err(CodegenError::Llvm(
                    "registers are values, not memory".into(),
                ));
            }
        };
        // Safety: indices are in bounds: registers and shared by the verifier
        // and lowering, global ones by the runtime's launch-time bound check.
        Ok(unsafe { self.b.build_in_bounds_gep(ty, base, &[index], "")? })
    }

    pub(super) fn addr_ptr(&self, a: &Addr, elem: Elem) -> Result<PointerValue<'ctx>> {
        self.element_ptr(a.space, self.ints[&a.index], elem)
    }

    /// `guard > 0`, for a guarded access.
    pub(super) fn inside(&mut self, a: &Addr) -> Result<Option<IntValue<'ctx>>> {
        a.guard.map(|g| self.positive(g)).transpose()
    }

    /// `0 <= a < e` as an i1: one unsigned comparison, which a negative
    /// `a` fails too.
    pub(super) fn below(&self, a: usize, e: usize) -> Result<IntValue<'ctx>> {
        Ok(self
            .b
            .build_int_compare(IntPredicate::ULT, self.ints[&a], self.ints[&e], "")?)
    }

    /// Where a guarded read reads: its element while `ok`, else element 0,
    /// which is always there, so that no branch is needed.
    pub(super) fn read_ptr(
        &self,
        a: &Addr,
        ok: IntValue<'ctx>,
        elem: Elem,
    ) -> Result<PointerValue<'ctx>> {
        let zero = self.ctx.i64_type().const_zero();
        let index = self
            .b
            .build_select(ok, self.ints[&a.index], zero, "")?
            .into_int_value();
        self.element_ptr(a.space, index, elem)
    }

    /// Register element `k` of the array at `a`'s index (a constant, as
    /// the verifier checked), plus `k`.
    fn register_slot(&self, a: &Addr, k: usize) -> Result<(usize, usize)> {
        match (a.space, &self.ir.ints[a.index].def) {
            (Space::Registers(r), IntDef::Const(at)) => Ok((r, *at as usize + k)),
            _ => Err(CodegenError::Llvm(
                "a register index that is no constant".into(),
            )),
        }
    }

    /// The alignment in bytes a shared access at `a` has for every thread:
    /// its index's known divisor, within the buffer's 16-byte alignment.
    pub(super) fn shared_align(&self, a: &Addr, elem: Elem) -> u32 {
        (self.divisors[a.index] * elem.bytes()).clamp(1, 16) as u32
    }

    /// A load; a guarded one reads element 0 (always there) when outside
    /// and yields zero, so that no branch is needed. Registers are values;
    /// a shared element already loaded is reused.
    pub(super) fn load(&mut self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let ty = elem_type(self.ctx, elem);
        if let Space::Registers(_) = a.space {
            let (r, k) = self.register_slot(a, 0)?;
            // Never written: the CPU executor reports such a read.
            return Ok(self.registers[r][k].unwrap_or_else(|| ty.const_zero()));
        }
        if let (Space::Shared(s), None) = (a.space, a.guard) {
            if let Some(v) = self.shared_loads.get(&(s, a.index)) {
                return Ok(*v);
            }
            if let Some(v) = self.vector_operand(s, a, elem)? {
                return Ok(v);
            }
            let v = self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?;
            set_alignment(instruction(&v)?, self.shared_align(a, elem))?;
            self.shared_loads.insert((s, a.index), v);
            return Ok(v);
        }
        match self.inside(a)? {
            None => Ok(self.b.build_load(ty, self.addr_ptr(a, elem)?, "")?),
            Some(ok) => {
                let v = self.b.build_load(ty, self.read_ptr(a, ok, elem)?, "")?;
                Ok(self.b.build_select(ok, v, ty.const_zero(), "")?)
            }
        }
    }

    /// `width` consecutive elements as one vector (lowering proved a
    /// memory address aligned to the vector's size); a guarded one is the
    /// whole vector's guard, zeros outside.
    pub(super) fn load_vector(
        &mut self,
        a: &Addr,
        elem: Elem,
        width: u32,
    ) -> Result<BasicValueEnum<'ctx>> {
        let ty = vector_type(self.ctx, elem, width);
        if let Space::Registers(_) = a.space {
            let mut v = ty.into_vector_type().get_undef();
            for k in 0..width {
                let (r, slot) = self.register_slot(a, k as usize)?;
                let x = self.registers[r][slot]
                    .unwrap_or_else(|| elem_type(self.ctx, elem).const_zero());
                let at = self.ctx.i32_type().const_int(k as u64, false);
                v = self.b.build_insert_element(v, x, at, "")?;
            }
            return Ok(v.into());
        }
        let align = width * elem.bytes() as u32;
        // LLVM 19 splits a global load of four 16-bit floats into two of
        // 32 bits; as two 32-bit words it is one 64-bit load.
        let words =
            matches!(a.space, Space::Global(_)) && elem.bytes() == 2 && width.is_multiple_of(2);
        let load_ty: BasicTypeEnum = match words {
            true => self.ctx.i32_type().vec_type(width / 2).into(),
            false => ty,
        };
        let aligned_load = |k: &Self| -> Result<BasicValueEnum<'ctx>> {
            let v = k.b.build_load(load_ty, k.addr_ptr(a, elem)?, "")?;
            set_alignment(instruction(&v)?, align)?;
            Ok(match words {
                true => k.b.build_bit_cast(v, ty, "")?,
                false => v,
            })
        };
        let Some(ok) = self.inside(a)? else {
            return aligned_load(self);
        };
        // Wholly outside: zeros, and no access at all (the tensor may hold
        // fewer elements than the vector).
        let from = self.b.get_insert_block().expect("positioned");
        let (then, done) = (
            self.ctx.append_basic_block(self.func, "load"),
            self.ctx.append_basic_block(self.func, "loaded"),
        );
        self.b.build_conditional_branch(ok, then, done)?;
        self.b.position_at_end(then);
        let v = aligned_load(self)?;
        let loaded = self.b.get_insert_block().expect("positioned");
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(done);
        let phi = self.b.build_phi(ty, "")?;
        phi.add_incoming(&[(&v, loaded), (&ty.const_zero(), from)]);
        Ok(phi.as_basic_value())
    }

    pub(super) fn store_vector(
        &mut self,
        a: &Addr,
        elem: Elem,
        width: u32,
        v: BasicValueEnum<'ctx>,
    ) -> Result<()> {
        if let Space::Registers(_) = a.space {
            for k in 0..width {
                let (r, slot) = self.register_slot(a, k as usize)?;
                let at = self.ctx.i32_type().const_int(k as u64, false);
                let x = self
                    .b
                    .build_extract_element(v.into_vector_value(), at, "")?;
                self.registers[r][slot] = Some(x);
            }
            return Ok(());
        }
        if let Space::Shared(_) = a.space {
            self.shared_loads.clear();
        }
        let align = width * elem.bytes() as u32;
        let Some(ok) = self.inside(a)? else {
            let st = self.b.build_store(self.addr_ptr(a, elem)?, v)?;
            return set_alignment(st, align);
        };
        let (then, done) = (
            self.ctx.append_basic_block(self.func, "store"),
            self.ctx.append_basic_block(self.func, "stored"),
        );
        self.b.build_conditional_branch(ok, then, done)?;
        self.b.position_at_end(then);
        let st = self.b.build_store(self.addr_ptr(a, elem)?, v)?;
        set_alignment(st, align)?;
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(done);
        Ok(())
    }

    /// A store; a guarded one is skipped when outside.
    pub(super) fn store(&mut self, a: &Addr, elem: Elem, v: BasicValueEnum<'ctx>) -> Result<()> {
        if let Space::Registers(_) = a.space {
            let (r, k) = self.register_slot(a, 0)?;
            self.registers[r][k] = Some(v);
            return Ok(());
        }
        let p = self.addr_ptr(a, elem)?;
        if let Space::Shared(_) = a.space {
            self.shared_loads.clear();
            let st = self.b.build_store(p, v)?;
            return set_alignment(st, self.shared_align(a, elem));
        }
        match self.inside(a)? {
            None => {
                self.b.build_store(p, v)?;
            }
            Some(ok) => {
                let (then, done) = (
                    self.ctx.append_basic_block(self.func, "store"),
                    self.ctx.append_basic_block(self.func, "stored"),
                );
                self.b.build_conditional_branch(ok, then, done)?;
                self.b.position_at_end(then);
                self.b.build_store(p, v)?;
                self.b.build_unconditional_branch(done)?;
                self.b.position_at_end(done);
            }
        }
        Ok(())
    }

    /// Loads in the accumulation type: f32 for every float type, i32 for i32.
    pub(super) fn load_acc(&mut self, a: &Addr, elem: Elem) -> Result<BasicValueEnum<'ctx>> {
        let v = self.load(a, elem)?;
        Ok(match elem {
            Elem::F16 | Elem::Bf16 => self
                .b
                .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
                .into(),
            _ => v,
        })
    }

    pub(super) fn store_acc(
        &mut self,
        a: &Addr,
        elem: Elem,
        v: BasicValueEnum<'ctx>,
    ) -> Result<()> {
        let v = match elem {
            Elem::F16 | Elem::Bf16 => {
                let t = elem_type(self.ctx, elem).into_float_type();
                self.b
                    .build_float_trunc(v.into_float_value(), t, "")?
                    .into()
            }
            _ => v,
        };
        self.store(a, elem, v)
    }
}

/// The instruction behind a value a builder call just made.
fn instruction<'ctx>(v: &BasicValueEnum<'ctx>) -> Result<inkwell::values::InstructionValue<'ctx>> {
    inkwell::values::BasicValue::as_instruction_value(v)
        .ok_or_else(|| CodegenError::Llvm("a load that is no instruction".into()))
}

fn set_alignment(i: inkwell::values::InstructionValue<'_>, align: u32) -> Result<()> {
    i.set_alignment(align)
        .map_err(|e| CodegenError::Llvm(e.to_string()))
}

fn vector_type(ctx: &Context, e: Elem, width: u32) -> BasicTypeEnum<'_> {
    match e {
        Elem::F32 => ctx.f32_type().vec_type(width).into(),
        Elem::F16 => ctx.f16_type().vec_type(width).into(),
        Elem::Bf16 => ctx.bf16_type().vec_type(width).into(),
        Elem::I32 => ctx.i32_type().vec_type(width).into(),
    }
}
