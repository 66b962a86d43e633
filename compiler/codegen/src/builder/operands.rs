//! A gemm's FMA operands as vector loads: its atoms read each thread's A
//! and B elements from shared memory one at a time; where a group of 2 or
//! 4 consecutive elements starts at an address proved 8- or 16-byte
//! aligned and the same instruction list reads every element of the group,
//! one vector load reads them all (the later reads find them in
//! `shared_loads`). LLVM's load-store vectorizer did this after the fact,
//! at a fifth of the f32 GEMMs' build time.
//!
//! In: the instruction list being emitted. Out: the groups' loads.

use super::KernelBuilder;
use crate::Result;
use foldhash::{HashMap, HashMapExt};
use inkwell::values::BasicValueEnum;
use tilec::check::program::Elem;
use tilec::ir::{Addr, Inst, InstKind, IntDef, KernelIr, MmaAtom, Space};
use tilec_layout::int::Op as IntOp;

/// A shared element by buffer, the non-constant terms of its index (IR
/// values, sorted) and the constant added to them.
pub(super) type Operand = (usize, Vec<usize>, i64);

/// The gemm operands an instruction list reads from shared memory, by
/// [`Operand`], with the IR value of each index. Nested lists have their own.
pub(super) fn operands(ir: &KernelIr, insts: &[Inst]) -> HashMap<Operand, usize> {
    let mut out = HashMap::new();
    for i in insts {
        if let InstKind::Mma {
            atom: MmaAtom::Fma { .. },
            a,
            b,
            ..
        } = &i.kind
        {
            for x in [a, b] {
                if let (Space::Shared(s), None) = (x.space, x.guard) {
                    let (terms, c) = linear(ir, x.index);
                    out.insert((s, terms, c), x.index);
                }
            }
        }
    }
    out
}

/// `v` as a sum of IR values and a constant.
pub(crate) fn linear(ir: &KernelIr, v: usize) -> (Vec<usize>, i64) {
    let mut terms = Vec::new();
    let mut c = 0i64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match ir.ints[v].def {
            IntDef::Const(k) => c = c.wrapping_add(k),
            IntDef::Bin(IntOp::Add, x, y) => stack.extend([x, y]),
            _ => terms.push(v),
        }
    }
    terms.sort_unstable();
    (terms, c)
}

impl<'ctx> KernelBuilder<'_, 'ctx> {
    /// The load of shared operand `a` as the first of a vector of the
    /// operands after it, when the group is aligned and wholly read; its
    /// other elements go to `shared_loads`.
    pub(super) fn vector_operand(
        &mut self,
        s: usize,
        a: &Addr,
        elem: Elem,
    ) -> Result<Option<BasicValueEnum<'ctx>>> {
        let (terms, c) = linear(self.ir, a.index);
        if !self.operands.contains_key(&(s, terms.clone(), c)) {
            return Ok(None);
        }
        for width in [4u32, 2] {
            let bytes = width * elem.bytes() as u32;
            if bytes > 16 || self.shared_align(a, elem) < bytes {
                continue;
            }
            let rest: Option<Vec<usize>> = (1..width as i64)
                .map(|j| {
                    let key = (s, terms.clone(), c.wrapping_add(j));
                    self.operands.get(&key).copied()
                })
                .collect();
            let Some(rest) = rest else { continue };
            let v = self.load_vector(a, elem, width)?.into_vector_value();
            let mut first = None;
            for (j, id) in std::iter::once(a.index).chain(rest).enumerate() {
                let at = self.ctx.i32_type().const_int(j as u64, false);
                let x = self.b.build_extract_element(v, at, "")?;
                self.shared_loads.insert((s, id), x);
                first.get_or_insert(x);
            }
            return Ok(first);
        }
        Ok(None)
    }
}
