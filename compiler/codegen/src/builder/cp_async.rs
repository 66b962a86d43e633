//! Asynchronous copies (sm_80 and newer): global -> shared through LLVM's
//! `llvm.nvvm.cp.async.*` intrinsics, and the fences and waits that group them.

use super::KernelBuilder;
use crate::Result;
use tilec::check::program::Elem;
use tilec::ir::Addr;

impl KernelBuilder<'_, '_> {
    /// One cp.async of `width` elements (4, 8 or 16 bytes, aligned, as the
    /// verifier checked). 16 bytes go through L2 only (`.cg`): the data is
    /// bound for shared memory, so L1 would only hold a second copy. A
    /// guarded source outside its tensor reads 0 bytes from element 0 and
    /// fills the destination with zeros.
    pub(super) fn cp_async(
        &mut self,
        elem: Elem,
        width: u32,
        src: &Addr,
        dst: &Addr,
    ) -> Result<()> {
        let bytes = elem.bytes() as u64 * width as u64;
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let to = self.addr_ptr(dst, elem)?;
        match self.inside(src)? {
            None => {
                let f = self.intrinsic(
                    &format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}"),
                    &[],
                )?;
                let from = self.addr_ptr(src, elem)?;
                self.b.build_call(f, &[to.into(), from.into()], "")?;
            }
            Some(ok) => {
                let f = self.intrinsic(
                    &format!("llvm.nvvm.cp.async.{cache}.shared.global.{bytes}.s"),
                    &[],
                )?;
                let from = self.read_ptr(src, ok, elem)?;
                let i32t = self.ctx.i32_type();
                let size =
                    self.b
                        .build_select(ok, i32t.const_int(bytes, false), i32t.const_zero(), "")?;
                self.b
                    .build_call(f, &[to.into(), from.into(), size.into()], "")?;
            }
        }
        Ok(())
    }

    /// Closes the group of the cp.asyncs issued since the last fence.
    pub(super) fn cp_async_fence(&mut self) -> Result<()> {
        let f = self.intrinsic("llvm.nvvm.cp.async.commit.group", &[])?;
        self.b.build_call(f, &[], "")?;
        Ok(())
    }

    /// Waits until at most `n` groups are in flight; shared elements loaded
    /// before may have been overwritten by the copies that landed.
    pub(super) fn cp_async_wait(&mut self, n: u32) -> Result<()> {
        self.shared_loads.clear();
        let f = self.intrinsic("llvm.nvvm.cp.async.wait.group", &[])?;
        let n = self.ctx.i32_type().const_int(n as u64, false);
        self.b.build_call(f, &[n.into()], "")?;
        Ok(())
    }
}
