//! Hopper's warpgroup MMA (sm_90a only): `wgmma.mma_async` with its fence,
//! commit and wait. LLVM 19 has no intrinsics for them, so they are inline
//! PTX; the accumulators stay SSA values, tied in and out of each wgmma.
//! Shared-memory descriptors are the operands' fixed fields (from the
//! layout, in the IR) with the start address added here.

use super::KernelBuilder;
use crate::{CodegenError, Result};
use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue};
use tilec::check::program::Elem;
use tilec::ir::{Fragment, Inst, InstKind, SmemOperand, WgmmaA};
use tilec_layout::{Major, MmaAtom};

/// Orders the warpgroup's register writes before the wgmmas after it.
const FENCE: &str = "wgmma.fence.sync.aligned;";

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T`: D = A * B^T + D
    /// (scale-d 1), A and B from descriptors, K-major or transposed
    /// (MN-major) as their descriptors say.
    pub(super) fn wgmma(
        &mut self,
        atom: &MmaAtom,
        a: &WgmmaA,
        b: &SmemOperand,
        c: &Fragment,
    ) -> Result<()> {
        let ty = match atom.ab {
            Elem::Bf16 => "bf16",
            Elem::F16 => "f16",
            e => return Err(CodegenError::Llvm(format!("no wgmma on {e}"))),
        };
        let n = c.index.len();
        let trans = |o: &SmemOperand| u8::from(o.desc.major == Major::Mn);
        let accumulators: Vec<String> = (0..n).map(|i| format!("${i}")).collect();
        // A's operand text, B's position after it, A's transpose flag (a
        // register A has none) and the inputs: A's descriptor or its four
        // words of packed pairs, then B's descriptor.
        let (a_text, b_at, trans_a, mut inputs) = match a {
            WgmmaA::Shared(a) => (
                format!("${n}"),
                n + 1,
                format!(", {}", trans(a)),
                vec![self.descriptor(a)?],
            ),
            WgmmaA::Registers(f) => (
                format!("{{${}, ${}, ${}, ${}}}", n, n + 1, n + 2, n + 3),
                n + 4,
                String::new(),
                self.register_a(f, atom.ab)?,
            ),
        };
        inputs.push(self.descriptor(b)?);
        let asm = format!(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\nwgmma.mma_async.sync.aligned.m64n{}k16.f32.{ty}.{ty} {{{}}}, {a_text}, ${b_at}, p, 1, 1{trans_a}, {};\n}}",
            atom.n,
            accumulators.join(", "),
            trans(b)
        );
        let accumulators = self.fragment_values(c, Elem::F32);
        let d = self.tied_f32_asm(asm, &inputs, &accumulators, "")?;
        for (x, &i) in d.into_iter().zip(&c.index) {
            self.registers[c.array][i as usize] = Some(x);
            if !self.in_flight.contains(&(c.array, i as usize)) {
                self.in_flight.push((c.array, i as usize));
            }
        }
        Ok(())
    }

    /// An `_RS` wgmma's A: the fragment's words of packed pairs, tied
    /// through a fence of their own where its group fences each wgmma
    /// (see [`Self::wgmma_fence`]).
    fn register_a(&mut self, f: &Fragment, elem: Elem) -> Result<Vec<IntValue<'ctx>>> {
        let words = self.words(f, elem)?;
        if !self.fence_each {
            return Ok(words);
        }
        let words: Vec<BasicValueEnum> = words.into_iter().map(Into::into).collect();
        let i32t = self.ctx.i32_type().into();
        Ok(self
            .tied_asm(FENCE, &[], &words, (i32t, "r"), ",~{memory}")?
            .into_iter()
            .map(BasicValueEnum::into_int_value)
            .collect())
    }

    /// `wgmma.fence`, before the wgmmas that follow it (`group`, up to
    /// their commit). Registers a wgmma reads must be written before a
    /// fence that precedes it, or ptxas inserts one of its own (C7519). An
    /// `_RS` wgmma's A words are packed from the fragment's values where
    /// it is issued, so each such wgmma gets a fence of its own with its
    /// words tied through it: LLVM cannot sink the packing (or the
    /// conversion before it) below that fence, and the packing of the next
    /// k-block's words still runs under this one's wgmma (all of a group's
    /// words tied through one fence at its start took 8-11% longer in the
    /// attention example on an H100).
    pub(super) fn wgmma_fence(&mut self, group: &[Inst]) -> Result<()> {
        self.fence_each = group
            .iter()
            .map_while(|i| match &i.kind {
                InstKind::Wgmma { a, .. } => Some(a),
                _ => None,
            })
            .any(|a| matches!(a, WgmmaA::Registers(_)));
        match self.fence_each {
            true => Ok(()),
            false => self.ptx_statement(FENCE),
        }
    }

    /// `wgmma.wait_group N`, with the accumulators of the wgmmas before it
    /// tied (CUTLASS's `warpgroup_fence_operand`): after a wait for all,
    /// through an empty statement just after it; after a wait that leaves
    /// a group in flight (a lagged pipeline's body), through the wait
    /// itself, since they stay in flight: the registers that hold them at
    /// the loop's exit are tied through it for all that follows the
    /// pipeline. Their values are those the tie returns, so LLVM cannot
    /// move a use of them above the wait, where the registers are still
    /// being written.
    pub(super) fn wgmma_wait(&mut self, n: u32) -> Result<()> {
        let regs = match n {
            0 => std::mem::take(&mut self.in_flight),
            _ => self.in_flight.clone(),
        };
        let text = format!("wgmma.wait_group.sync.aligned {n};");
        if regs.is_empty() {
            return self.ptx_statement(&text);
        }
        let values: Vec<BasicValueEnum<'ctx>> = regs
            .iter()
            .map(|&(a, i)| {
                self.registers[a][i].unwrap_or_else(|| self.ctx.f32_type().const_zero().into())
            })
            .collect();
        // After a wait for all, the accumulators are tied through an empty
        // statement of their own just after it: where LLVM copies a tied
        // register (it did for one of 64 in guarded entries), the copy
        // then reads it after the wait, not before, where ptxas injected
        // a wait of its own, in a divergent path, and serialized every
        // wgmma of the entry (C7518; C7517 with two consumer warpgroups).
        let d = match n {
            0 => {
                self.ptx_statement(&text)?;
                self.tied_f32_asm(String::new(), &[], &values, ",~{memory}")?
            }
            _ => self.tied_f32_asm(text, &[], &values, ",~{memory}")?,
        };
        for (x, &(a, i)) in d.into_iter().zip(&regs) {
            self.registers[a][i] = Some(x);
        }
        Ok(())
    }

    /// Inline PTX whose outputs `$0..` are f32s tied to `tied` (each output
    /// the new value of its register), with the 32- or 64-bit integer
    /// `inputs` after them (`$n..`); `clobbers` is appended to the
    /// constraints as written.
    fn tied_f32_asm(
        &mut self,
        text: String,
        inputs: &[IntValue<'ctx>],
        tied: &[BasicValueEnum<'ctx>],
        clobbers: &str,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f32t = self.ctx.f32_type().into();
        self.tied_asm(&text, inputs, tied, (f32t, "f"), clobbers)
    }

    /// Inline PTX `text` with `inputs` read and `tied` values of one type
    /// (`ty`: the LLVM type and its constraint letter, `f` or `r`) tied in
    /// and out: the values it returns are those after it.
    fn tied_asm(
        &mut self,
        text: &str,
        inputs: &[IntValue<'ctx>],
        tied: &[BasicValueEnum<'ctx>],
        (ty, letter): (BasicTypeEnum<'ctx>, &str),
        clobbers: &str,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let n = tied.len();
        let out = self.ctx.struct_type(&vec![ty; n], false);
        let mut params: Vec<BasicMetadataTypeEnum> =
            inputs.iter().map(|v| v.get_type().into()).collect();
        params.extend(std::iter::repeat_n(BasicMetadataTypeEnum::from(ty), n));
        let fn_ty = out.fn_type(&params, false);
        let mut constraints: Vec<String> = vec![format!("={letter}"); n];
        constraints.extend(inputs.iter().map(|v| match v.get_type().get_bit_width() {
            64 => "l".to_string(),
            _ => "r".to_string(),
        }));
        constraints.extend((0..n).map(|i| i.to_string()));
        let mut args: Vec<BasicMetadataValueEnum> = inputs.iter().map(|&v| v.into()).collect();
        args.extend(tied.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        let ptr = self.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            constraints.join(",") + clobbers,
            true,
            false,
            None,
            false,
        );
        let d = match self
            .b
            .build_indirect_call(fn_ty, ptr, &args, "")?
            .try_as_basic_value()
        {
            inkwell::values::ValueKind::Basic(v) => v.into_struct_value(),
            inkwell::values::ValueKind::Instruction(_) => {
                return Err(CodegenError::Llvm(format!("`{text}` returned nothing")));
            }
        };
        (0..n)
            .map(|v| Ok(self.b.build_extract_value(d, v as u32, "")?))
            .collect()
    }

    /// The 64-bit descriptor: the operand's shared address >> 4 in bits
    /// 0..14, the fixed fields above.
    fn descriptor(&mut self, o: &SmemOperand) -> Result<IntValue<'ctx>> {
        let i32t = self.ctx.i32_type();
        let i64t = self.ctx.i64_type();
        let elem = self.ir.shared[match o.start.space {
            tilec::ir::Space::Shared(s) => s,
            _ => {
                return Err(CodegenError::Llvm(
                    "a wgmma operand outside shared memory".into(),
                ));
            }
        }]
        .elem;
        let ptr = self.addr_ptr(&o.start, elem)?;
        let addr = self.b.build_ptr_to_int(ptr, i32t, "")?;
        let field = self
            .b
            .build_and(addr, i32t.const_int(0x3FFF << 4, false), "")?;
        let field = self
            .b
            .build_right_shift(field, i32t.const_int(4, false), false, "")?;
        let field = self.b.build_int_z_extend(field, i64t, "")?;
        Ok(self
            .b
            .build_or(field, i64t.const_int(o.desc.fixed_bits(), false), "")?)
    }

    /// Inline PTX with no operands that orders memory around it.
    pub(super) fn ptx_statement(&mut self, text: &str) -> Result<()> {
        let fn_ty = self.ctx.void_type().fn_type(&[], false);
        let ptr = self.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            "~{memory}".into(),
            true,
            false,
            None,
            false,
        );
        self.b.build_indirect_call(fn_ty, ptr, &[], "")?;
        Ok(())
    }
}
