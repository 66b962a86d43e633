//! `--checked` bound checks: an `Assert` instruction of the IR becomes a
//! branch to a block that prints where the access was and traps.

use super::KernelBuilder;
use crate::Result;
use inkwell::AddressSpace;

impl KernelBuilder<'_, '_> {
    /// A `--checked` bound check: when `cond` is 0, the thread prints
    /// `what` with its block and thread (CUDA's `printf`, which the driver
    /// flushes when the launch fails) and traps, which fails the launch.
    pub(super) fn assert(&mut self, cond: usize, what: &str) -> Result<()> {
        let ok = self.positive(cond)?;
        let (fail, fine) = (
            self.ctx.append_basic_block(self.func, "check_failed"),
            self.ctx.append_basic_block(self.func, "checked"),
        );
        self.b.build_conditional_branch(ok, fine, fail)?;
        self.b.position_at_end(fail);
        let ptr = self.ctx.ptr_type(AddressSpace::default());
        let i32t = self.ctx.i32_type();
        let vprintf = self.module.get_function("vprintf").unwrap_or_else(|| {
            let ty = i32t.fn_type(&[ptr.into(), ptr.into()], false);
            self.module.add_function("vprintf", ty, None)
        });
        let fmt = match self.messages.get(what) {
            Some(p) => *p,
            None => {
                // Named after the entry: the variants' modules share one PTX file.
                let text = format!("{what} by block (%d,%d,%d) thread %d (tilec --checked)\n");
                let name = format!("{}_check{}", self.ir.name, self.messages.len());
                let p = self
                    .b
                    .build_global_string_ptr(&text, &name)?
                    .as_pointer_value();
                self.messages.insert(what.to_string(), p);
                p
            }
        };
        let args_ty = self.ctx.struct_type(&[i32t.into(); 4], false);
        // In the entry block: an alloca elsewhere would be a dynamic one.
        let here = self.b.get_insert_block();
        let entry = self.func.get_first_basic_block().expect("a body");
        match entry.get_first_instruction() {
            Some(first) => self.b.position_before(&first),
            None => self.b.position_at_end(entry),
        }
        let args = self.b.build_alloca(args_ty, "")?;
        if let Some(b) = here {
            self.b.position_at_end(b);
        }
        let who = [
            "llvm.nvvm.read.ptx.sreg.ctaid.x",
            "llvm.nvvm.read.ptx.sreg.ctaid.y",
            "llvm.nvvm.read.ptx.sreg.ctaid.z",
            "llvm.nvvm.read.ptx.sreg.tid.x",
        ];
        for (i, name) in who.iter().enumerate() {
            let v = self.special(name)?;
            let v = self.b.build_int_truncate(v, i32t, "")?;
            let at = self.b.build_struct_gep(args_ty, args, i as u32, "")?;
            self.b.build_store(at, v)?;
        }
        self.b.build_call(vprintf, &[fmt.into(), args.into()], "")?;
        let trap = self.intrinsic("llvm.trap", &[])?;
        self.b.build_call(trap, &[], "")?;
        self.b.build_unreachable()?;
        self.b.position_at_end(fine);
        Ok(())
    }
}
