//! Inline PTX, for what LLVM 19's NVPTX intrinsics lack (mbarriers'
//! waits, fences, `red.add.v4.f32`, `bar.red` on a named barrier): in, the
//! instruction's text, constraints and operands; out, the call, ordering
//! memory, made convergent where a warp's `.aligned` instruction needs it.

use super::KernelBuilder;
use crate::Result;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::types::{BasicMetadataTypeEnum, FunctionType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, CallSiteValue, IntValue, ValueKind,
};

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// Inline PTX on 32- and 64-bit integer operands, ordering memory.
    pub(super) fn ptx(
        &mut self,
        text: &str,
        constraints: &str,
        args: &[IntValue<'ctx>],
    ) -> Result<()> {
        self.inline_ptx(text, constraints, args, false)
    }

    /// [`Self::ptx`] on operands of any type (a `red.add.f32`'s floats
    /// too), `convergent` for a warp's `.sync.aligned` instruction, so that
    /// LLVM neither duplicates it nor sinks it into branches that part the
    /// warp, as it may other inline assembly.
    pub(super) fn inline_ptx<V: BasicValue<'ctx> + Copy>(
        &mut self,
        text: &str,
        constraints: &str,
        args: &[V],
        convergent: bool,
    ) -> Result<()> {
        let args: Vec<BasicValueEnum<'ctx>> =
            args.iter().map(|a| a.as_basic_value_enum()).collect();
        let types: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = self.ctx.void_type().fn_type(&types, false);
        self.asm_call(fn_ty, text, constraints, &args, convergent)?;
        Ok(())
    }

    /// The call of inline PTX of type `fn_ty` on `args`, ordering memory
    /// (the clobber added to `constraints`), convergent where asked.
    fn asm_call<V: Copy + Into<BasicMetadataValueEnum<'ctx>>>(
        &self,
        fn_ty: FunctionType<'ctx>,
        text: &str,
        constraints: &str,
        args: &[V],
        convergent: bool,
    ) -> Result<CallSiteValue<'ctx>> {
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            format!("{constraints},~{{memory}}"),
            true,
            false,
            None,
            false,
        );
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_indirect_call(fn_ty, asm, &args, "")?;
        if convergent {
            self.make_convergent(call);
        }
        Ok(call)
    }

    /// Marks an inline-assembly call convergent (see [`Self::inline_ptx`]).
    pub(super) fn make_convergent(&self, call: CallSiteValue<'ctx>) {
        let kind = Attribute::get_named_enum_kind_id("convergent");
        call.add_attribute(
            AttributeLoc::Function,
            self.ctx.create_enum_attribute(kind, 0),
        );
    }

    /// Inline PTX with one 32-bit result `$0` and integer operands `$1..`
    /// (`constraints` without the memory clobber, which it adds). A
    /// `convergent` one LLVM may not duplicate or sink into branches, as
    /// it may other inline assembly: what an `.aligned` barrier needs.
    pub(super) fn asm_u32(
        &self,
        text: &str,
        constraints: &str,
        args: &[IntValue<'ctx>],
        convergent: bool,
    ) -> Result<IntValue<'ctx>> {
        let types: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = self.ctx.i32_type().fn_type(&types, false);
        let call = self.asm_call(fn_ty, text, constraints, args, convergent)?;
        match call.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(v.into_int_value()),
            ValueKind::Instruction(_) => Err(crate::CodegenError::Llvm(format!(
                "`{text}` returned nothing"
            ))),
        }
    }
}
