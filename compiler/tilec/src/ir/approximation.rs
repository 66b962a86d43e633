//! How far a kernel's GPU values may be from the CPU executor's: in, a
//! kernel's IR; out, a relative error, 0 where the two agree bit for bit.
//! The `fast_` functions are the hardware's approximations, which the
//! executor computes exactly ([`crate::arith::Unary::error`]).

use super::{InstKind, KernelIr, Space, for_each_inst};
use std::collections::HashSet;
use tilec_layout::Elem;

impl KernelIr {
    /// The largest relative error its `fast_` functions allow the GPU's
    /// values against the executor's. Where the kernel also rounds values
    /// it computed to bf16 or f16 and multiplies them on the tensor cores
    /// (attention's P = 2^(S - m) before P V), an approximation's
    /// difference can move such a rounding a unit of that type, which the
    /// products then carry: the bound is at least that unit (2^-8 for
    /// bf16, 2^-11 for f16). A GELU epilogue's rounding to its output is
    /// not one: nothing multiplies its values again.
    pub fn approximation(&self) -> f64 {
        let mut ops = Vec::new();
        // Register arrays and shared buffers that hold values the kernel
        // computed (a `Compute`'s target, or a stmatrix's of registers).
        let mut computed = HashSet::new();
        let mut operands = Vec::new();
        for_each_inst(&self.body, &mut |i| match &i.kind {
            InstKind::Compute { value, dst, .. } => {
                value.unaries(&mut ops);
                computed.insert(dst.space);
            }
            InstKind::Matrix {
                store: true,
                shared,
                ..
            } => {
                computed.insert(shared.space);
            }
            InstKind::MmaSync { a, b, .. } => {
                operands.extend([Space::Registers(a.array), Space::Registers(b.array)]);
            }
            InstKind::Wgmma { a, b, .. } => operands.extend([a.start.space, b.start.space]),
            _ => {}
        });
        let fast = ops
            .into_iter()
            .map(crate::arith::Unary::error)
            .fold(0.0, f64::max);
        if fast == 0.0 {
            return 0.0;
        }
        operands
            .into_iter()
            .filter(|s| computed.contains(s))
            .filter_map(|s| match s {
                Space::Registers(r) => Some(self.registers[r].elem),
                Space::Shared(b) => Some(self.shared[b].elem),
                Space::Global(_) => None,
            })
            .map(|e| match e {
                Elem::Bf16 => 2f64.powi(-8),
                Elem::F16 => 2f64.powi(-11),
                Elem::F32 | Elem::I32 => 0.0,
            })
            .fold(fast, f64::max)
    }
}
