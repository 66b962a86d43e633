//! Tensor-core instructions: `mma.sync` and `ldmatrix` through LLVM 19's
//! NVVM intrinsics, on register fragments that stay SSA values, and
//! `stmatrix`, which LLVM 19 lacks, as inline PTX.

use super::{KernelBuilder, elem_type};
use crate::{CodegenError, Result};
use inkwell::types::{BasicTypeEnum, IntType, VectorType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, InstructionOpcode, IntValue,
};
use tilec::check::program::Elem;
use tilec::ir::{Addr, Fragment};
use tilec_layout::MmaAtom;

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// One `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`: A and B go
    /// in as 32-bit pairs of 16-bit values, in the atom's value order
    /// (which is PTX's register order), C and D as f32s.
    pub(super) fn mma_sync(
        &mut self,
        atom: &MmaAtom,
        a: &Fragment,
        b: &Fragment,
        c: &Fragment,
    ) -> Result<()> {
        let name = match atom.ab {
            Elem::Bf16 => "llvm.nvvm.mma.m16n8k16.row.col.bf16",
            Elem::F16 => "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
            e => return Err(CodegenError::Llvm(format!("no m16n8k16 MMA on {e}"))),
        };
        let mut args: Vec<BasicMetadataValueEnum> = Vec::new();
        for f in [a, b] {
            for v in self.pairs(f, atom.ab)? {
                args.push(v.into());
            }
        }
        for v in self.fragment_values(c, Elem::F32) {
            args.push(v.into());
        }
        let f = self.intrinsic(name, &[])?;
        let d = match self.b.build_call(f, &args, "")?.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => v.into_struct_value(),
            inkwell::values::ValueKind::Instruction(_) => {
                return Err(CodegenError::Llvm(format!("{name} returned nothing")));
            }
        };
        for (v, &i) in c.index.iter().enumerate() {
            let x = self.b.build_extract_value(d, v as u32, "")?;
            self.registers[c.array][i as usize] = Some(x);
        }
        Ok(())
    }

    /// `ldmatrix.sync.aligned.m8n8.x{count}[.trans].b16`: each 32-bit
    /// result is two 16-bit values, for registers `2q` and `2q + 1`.
    pub(super) fn ldmatrix(
        &mut self,
        elem: Elem,
        count: u32,
        trans: bool,
        src: &Addr,
        dst: &Fragment,
    ) -> Result<()> {
        let name = format!(
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{}.b16",
            if trans { ".trans" } else { "" }
        );
        let ptr = self.addr_ptr(src, elem)?;
        let f = self.intrinsic(&name, &[ptr.get_type().into()])?;
        let words: Vec<BasicValueEnum> = match self
            .b
            .build_call(f, &[ptr.into()], "")?
            .try_as_basic_value()
        {
            inkwell::values::ValueKind::Basic(BasicValueEnum::StructValue(s)) => (0..count)
                .map(|q| self.b.build_extract_value(s, q, ""))
                .collect::<std::result::Result<_, _>>()?,
            inkwell::values::ValueKind::Basic(v) => vec![v],
            inkwell::values::ValueKind::Instruction(_) => {
                return Err(CodegenError::Llvm(format!("{name} returned nothing")));
            }
        };
        let pair = elem_type(self.ctx, elem).into_float_type().vec_type(2);
        let i32t = self.ctx.i32_type();
        for (q, w) in words.into_iter().enumerate() {
            let v = self.b.build_bit_cast(w, pair, "")?.into_vector_value();
            for h in 0..2 {
                let x = self
                    .b
                    .build_extract_element(v, i32t.const_int(h, false), "")?;
                self.registers[dst.array][dst.index[2 * q + h as usize] as usize] = Some(x);
            }
        }
        Ok(())
    }

    /// `stmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` (sm_90):
    /// the lane's row address, then its two 16-bit values of each matrix
    /// (registers `2q` and `2q + 1`) as one 32-bit word.
    pub(super) fn stmatrix(
        &mut self,
        elem: Elem,
        count: u32,
        trans: bool,
        shared: &Addr,
        regs: &Fragment,
    ) -> Result<()> {
        let i32t = self.ctx.i32_type();
        let ptr = self.addr_ptr(shared, elem)?;
        let mut args = vec![self.b.build_ptr_to_int(ptr, i32t, "")?];
        for w in self.pairs(regs, elem)? {
            args.push(self.b.build_bit_cast(w, i32t, "")?.into_int_value());
        }
        let words: Vec<String> = (1..=count).map(|i| format!("${i}")).collect();
        let text = format!(
            "stmatrix.sync.aligned.m8n8.x{count}{}.shared.b16 [$0], {{{}}};",
            if trans { ".trans" } else { "" },
            words.join(", ")
        );
        self.inline_ptx(&text, &vec!["r"; args.len()].join(","), &args, true)
    }

    /// A fragment's values; a register never written is zero (the CPU
    /// executor reports such a read).
    pub(super) fn fragment_values(&self, f: &Fragment, elem: Elem) -> Vec<BasicValueEnum<'ctx>> {
        let ty: BasicTypeEnum = elem_type(self.ctx, elem);
        f.index
            .iter()
            .map(|&i| self.registers[f.array][i as usize].unwrap_or_else(|| ty.const_zero()))
            .collect()
    }

    /// A fragment's 16-bit values as 32-bit words of pairs, the register
    /// operands of inline PTX (a wgmma's A).
    pub(super) fn words(&self, f: &Fragment, elem: Elem) -> Result<Vec<IntValue<'ctx>>> {
        let i32t = self.ctx.i32_type();
        self.pairs(f, elem)?
            .into_iter()
            .map(|p| match p {
                BasicValueEnum::IntValue(w) => Ok(w),
                v => Ok(self.b.build_bit_cast(v, i32t, "")?.into_int_value()),
            })
            .collect()
    }

    /// A fragment of 16-bit values as 32-bit registers, two values each:
    /// `i32` for bf16 (the intrinsic's type), `<2 x half>` for f16.
    fn pairs(&self, f: &Fragment, elem: Elem) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let values = self.fragment_values(f, elem);
        let vec_ty = elem_type(self.ctx, elem).into_float_type().vec_type(2);
        let i32t = self.ctx.i32_type();
        values
            .chunks(2)
            .map(|p| {
                if let Some(word) = loaded_pair(p, elem, vec_ty, i32t) {
                    return Ok(word);
                }
                let mut v = vec_ty.get_undef();
                for (lane, x) in p.iter().enumerate() {
                    let at = i32t.const_int(lane as u64, false);
                    v = self.b.build_insert_element(v, *x, at, "")?;
                }
                Ok(match elem {
                    Elem::Bf16 => self.b.build_bit_cast(v, i32t, "")?,
                    _ => v.into(),
                })
            })
            .collect()
    }
}

/// The 32-bit register a pair of 16-bit values came out of, when they are
/// its two halves in order (an ldmatrix result, unpacked into registers):
/// the mma takes that word again instead of a repacked one (`pair`: the
/// two-value vector type; bf16's word is the `i32` cast to it). LLVM would
/// fold the repacking in instruction selection, at a cost: a packing and
/// an unpacking per pair.
fn loaded_pair<'ctx>(
    p: &[BasicValueEnum<'ctx>],
    elem: Elem,
    pair: VectorType<'ctx>,
    word: IntType<'ctx>,
) -> Option<BasicValueEnum<'ctx>> {
    let half = |x: &BasicValueEnum<'ctx>| {
        let i = x.as_instruction_value()?;
        if i.get_opcode() != InstructionOpcode::ExtractElement {
            return None;
        }
        let vector = i.get_operand(0)?.value()?;
        let lane = i.get_operand(1)?.value()?.into_int_value();
        Some((vector, lane.get_zero_extended_constant()?))
    };
    let [lo, hi] = p else { return None };
    let ((v, 0), (w, 1)) = (half(lo)?, half(hi)?) else {
        return None;
    };
    // Halves of a wider vector (a register copy's) are not a pair.
    if v != w || v.get_type() != pair.into() {
        return None;
    }
    match elem {
        Elem::Bf16 => {
            let cast = v.as_instruction_value()?;
            let source = cast.get_operand(0)?.value()?;
            (cast.get_opcode() == InstructionOpcode::BitCast && source.get_type() == word.into())
                .then_some(source)
        }
        _ => Some(v),
    }
}
