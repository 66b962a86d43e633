//! `--checked` bound checks: an `Assert` instruction of the IR becomes a
//! branch to a block that prints where the access was and traps.

use super::KernelBuilder;
use crate::Result;
use inkwell::AddressSpace;

impl KernelBuilder<'_, '_> {
    /// A `--checked` bound check: when `cond` is 0, the thread traps,
    /// which fails the launch. The first thread of the launch to fail
    /// prints `what` with its block and thread (CUDA's `printf`, which the
    /// driver flushes when the launch fails) and then sets a flag; the
    /// others wait for the flag before they trap, since a trap ends every
    /// thread of the launch, a printing one too.
    pub(super) fn assert(&mut self, cond: usize, what: &str) -> Result<()> {
        let ok = self.positive(cond)?;
        self.holds(ok, what, "tilec --checked")
    }

    /// When `ok` is 0 the thread traps, which fails the launch, and
    /// reports nothing: where `holds`'s printf, a call, would make ptxas
    /// serialize every wgmma of the entry (C7510: in a pipeline's body).
    pub(super) fn traps_unless(&mut self, ok: inkwell::values::IntValue<'_>) -> Result<()> {
        self.stops_unless(ok, &mut |_| Ok(()))
    }

    /// When `ok` is 0: `report` (which leaves the builder where the thread
    /// goes on), then a trap; the builder then continues where `ok` held.
    fn stops_unless(
        &mut self,
        ok: inkwell::values::IntValue<'_>,
        report: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let (fail, fine) = (
            self.ctx.append_basic_block(self.func, "check_failed"),
            self.ctx.append_basic_block(self.func, "checked"),
        );
        self.b.build_conditional_branch(ok, fine, fail)?;
        self.b.position_at_end(fail);
        report(self)?;
        let trap = self.intrinsic("llvm.trap", &[])?;
        self.b.build_call(trap, &[], "")?;
        self.b.build_unreachable()?;
        self.b.position_at_end(fine);
        Ok(())
    }

    /// [`Self::assert`] of an i1 the builder computed.
    pub(super) fn holds(
        &mut self,
        ok: inkwell::values::IntValue<'_>,
        what: &str,
        by: &str,
    ) -> Result<()> {
        self.stops_unless(ok, &mut |k| {
            let ptr = k.ctx.ptr_type(AddressSpace::default());
            let i32t = k.ctx.i32_type();
            let vprintf = k.module.get_function("vprintf").unwrap_or_else(|| {
                let ty = i32t.fn_type(&[ptr.into(), ptr.into()], false);
                k.module.add_function("vprintf", ty, None)
            });
            let fmt = match k.messages.get(what) {
                Some(p) => *p,
                None => {
                    // Named after the entry: the variants' modules share one PTX file.
                    let text = format!("{what} by block (%d,%d,%d) thread %d ({by})\n");
                    let name = format!("{}_check{}", k.ir.name, k.messages.len());
                    let p =
                        k.b.build_global_string_ptr(&text, &name)?
                            .as_pointer_value();
                    k.messages.insert(what.to_string(), p);
                    p
                }
            };
            // One report a launch: the thread that swaps the flag from 0 prints.
            let flag = match k
                .module
                .get_global(&format!("{}_check_reported", k.ir.name))
            {
                Some(g) => g,
                None => {
                    let g = k.module.add_global(
                        i32t,
                        Some(AddressSpace::from(1u16)),
                        &format!("{}_check_reported", k.ir.name),
                    );
                    g.set_initializer(&i32t.const_zero());
                    g
                }
            };
            // 0: nobody failed yet; 1: a thread is printing; 2: it printed
            // (stored with release, polled with acquire: a waiter that sees 2
            // sees the printed line in the buffer too).
            let first = k.b.build_cmpxchg(
                flag.as_pointer_value(),
                i32t.const_zero(),
                i32t.const_int(1, false),
                inkwell::AtomicOrdering::Monotonic,
                inkwell::AtomicOrdering::Monotonic,
            )?;
            let first = k.b.build_extract_value(first, 1, "")?.into_int_value();
            let (report, wait, stop) = (
                k.ctx.append_basic_block(k.func, "check_report"),
                k.ctx.append_basic_block(k.func, "check_wait"),
                k.ctx.append_basic_block(k.func, "check_stop"),
            );
            k.b.build_conditional_branch(first, report, wait)?;
            k.b.position_at_end(wait);
            let state = k.b.build_atomicrmw(
                inkwell::AtomicRMWBinOp::Add,
                flag.as_pointer_value(),
                i32t.const_zero(),
                inkwell::AtomicOrdering::Acquire,
            )?;
            let printed = k.b.build_int_compare(
                inkwell::IntPredicate::EQ,
                state,
                i32t.const_int(2, false),
                "",
            )?;
            k.b.build_conditional_branch(printed, stop, wait)?;
            k.b.position_at_end(report);
            let args_ty = k.ctx.struct_type(&[i32t.into(); 4], false);
            let args = k.entry_alloca(args_ty.into())?;
            // The block as the kernel sees it (with an edge launch's offset).
            let who = [
                k.block_index(0)?,
                k.block_index(1)?,
                k.block_index(2)?,
                k.thread_index()?,
            ];
            for (i, v) in who.into_iter().enumerate() {
                let v = k.b.build_int_truncate(v, i32t, "")?;
                let at = k.b.build_struct_gep(args_ty, args, i as u32, "")?;
                k.b.build_store(at, v)?;
            }
            k.b.build_call(vprintf, &[fmt.into(), args.into()], "")?;
            k.b.build_atomicrmw(
                inkwell::AtomicRMWBinOp::Xchg,
                flag.as_pointer_value(),
                i32t.const_int(2, false),
                inkwell::AtomicOrdering::Release,
            )?;
            k.b.build_unconditional_branch(stop)?;
            k.b.position_at_end(stop);
            Ok(())
        })
    }
}
