//! Which values an instruction uses: for codegen, which entry values must
//! be computed before a statement (and no earlier, so that none lives in a
//! register through a loop it is not used in).

use super::{Addr, Inst, InstKind, IntDef, IntId, KernelIr};

impl Inst {
    /// Every value the instruction names, nested instructions included
    /// (not the values a loop computes in its own scope, nor operands of
    /// values: see [`KernelIr::operands`]).
    pub fn ints_used(&self, out: &mut Vec<IntId>) {
        let addr = |a: &Addr, out: &mut Vec<IntId>| {
            out.push(a.index);
            out.extend(a.guard);
        };
        match &self.kind {
            InstKind::Copy { src, dst, .. } => {
                addr(src, out);
                addr(dst, out);
            }
            InstKind::Mma { a, b, c, .. } => {
                for x in [a, b, c] {
                    addr(x, out);
                }
            }
            InstKind::Wgmma { a, b, .. } => {
                addr(&a.start, out);
                addr(&b.start, out);
            }
            InstKind::LdMatrix { src, .. } => addr(src, out),
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                loads.into_iter().for_each(|a| addr(a, out));
                value.guards(out);
                addr(dst, out);
            }
            InstKind::Fill { dst, .. } => addr(dst, out),
            InstKind::Assert { cond, .. } => out.push(*cond),
            InstKind::TmaLoad { origin, dst, .. } => {
                out.extend(origin);
                addr(dst, out);
            }
            InstKind::Loop {
                start, end, body, ..
            } => {
                out.extend([*start, *end]);
                body.iter().for_each(|i| i.ints_used(out));
            }
            InstKind::Pipeline {
                start,
                end,
                load,
                body,
                ..
            } => {
                out.extend([*start, *end]);
                load.iter().chain(body).for_each(|i| i.ints_used(out));
            }
            InstKind::MmaSync { .. }
            | InstKind::Barrier
            | InstKind::AsyncFence
            | InstKind::AsyncWait(_)
            | InstKind::WgmmaFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_) => {}
        }
    }
}

impl KernelIr {
    /// The values value `id` is computed from.
    pub fn operands(&self, id: IntId) -> Vec<IntId> {
        match self.ints[id].def {
            IntDef::Bin(_, a, b) | IntDef::Below(a, b) => vec![a, b],
            IntDef::Swizzle(a, _) => vec![a],
            _ => vec![],
        }
    }

    /// The entry-scope values `insts` need, operands included, in
    /// definition order: what must be computed before them. (The values
    /// of loops inside count, through their operands.)
    pub fn entry_values_of(&self, insts: &[Inst]) -> Vec<IntId> {
        let mut ids = Vec::new();
        let mut loops = Vec::new();
        for i in insts {
            i.ints_used(&mut ids);
            collect_loops(std::slice::from_ref(i), &mut loops);
        }
        ids.extend(
            (0..self.ints.len())
                .filter(|&v| self.ints[v].scope.is_some_and(|l| loops.contains(&l))),
        );
        let mut need = vec![false; self.ints.len()];
        let mut stack = ids;
        while let Some(v) = stack.pop() {
            if !std::mem::replace(&mut need[v], true) {
                stack.extend(self.operands(v));
            }
        }
        (0..self.ints.len())
            .filter(|&v| need[v] && self.ints[v].scope.is_none())
            .collect()
    }
}

/// The ids of the loops (and pipelines) in `insts`, nested ones too.
fn collect_loops(insts: &[Inst], out: &mut Vec<usize>) {
    for i in insts {
        match &i.kind {
            InstKind::Loop { id, body, .. } => {
                out.push(*id);
                collect_loops(body, out);
            }
            InstKind::Pipeline { id, load, body, .. } => {
                out.push(*id);
                collect_loops(load, out);
                collect_loops(body, out);
            }
            _ => {}
        }
    }
}
