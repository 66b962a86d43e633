//! Which values an instruction uses: for codegen, which entry values must
//! be computed before a statement (and no earlier, so that none lives in a
//! register through a loop it is not used in).

use super::{Addr, Inst, InstKind, IntDef, IntId, IntValue, KernelIr, Space};
use crate::check::kernel::predication::{UNIFORM, mirror, threshold_granule};

/// Which of an instruction's values [`Inst::ints_named`] collects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// All, in every branch.
    Everywhere,
    /// Those outside the branches of its ifs and block reductions.
    BeforeBranches,
    /// Those but an if's `otherwise` branch's and a block reduction's.
    Hoisted,
    /// Its own: a loop's, pipeline's, if's or reduction's bounds and
    /// conditions, not its bodies' (the instructions there name theirs).
    Own,
}

impl Inst {
    /// Every value the instruction names, nested instructions included
    /// (not the values a loop computes in its own scope, nor operands of
    /// values: see [`KernelIr::operands`]).
    pub fn ints_used(&self, out: &mut Vec<IntId>) {
        self.ints_named(out, Reach::Everywhere)
    }

    /// The values it names outside the branches of the ifs it holds (their
    /// conditions count): what must be computed before it; a branch
    /// computes what only it needs.
    pub fn ints_used_before_branches(&self, out: &mut Vec<IntId>) {
        self.ints_named(out, Reach::BeforeBranches)
    }

    /// The values it names but those only the `otherwise` branch of an if
    /// or the body of a block reduction (the last block's branch) names:
    /// what is worth computing once, before it. An if's `then` is
    /// its common path (a tested copy's whole copy, where `otherwise` is
    /// the partial tile): its values are computed before the loops around
    /// it, as everywhere else, and the other branch's where it runs.
    /// (Computing the `then` branch's own in it too cost the cp.async sgemm_tn_sm80's
    /// `_k_residue` entry 4% on the H200, its unguarded indices computed
    /// again each k-tile. This form measured 3.8% there too, its main
    /// loop's PTX the same instruction for instruction: ptxas's doing, not
    /// understood; docs/performance.md, version 17.)
    pub fn ints_shared(&self, out: &mut Vec<IntId>) {
        self.ints_named(out, Reach::Hoisted)
    }

    /// The values it reads itself, where it runs: what the CPU executor
    /// needs defined in each thread that runs it (those of a body, an
    /// if's branches, a pipeline's loads are the nested instructions').
    pub fn ints_own(&self, out: &mut Vec<IntId>) {
        self.ints_named(out, Reach::Own)
    }

    fn ints_named(&self, out: &mut Vec<IntId>, reach: Reach) {
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
                if let Some(a) = a.shared() {
                    addr(&a.start, out);
                }
                addr(&b.start, out);
            }
            InstKind::Matrix { shared, .. } => addr(shared, out),
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
            InstKind::TmaPrefetch { origin, .. } => out.extend(origin),
            InstKind::TmaStore { origin, src, .. } => {
                out.extend(origin);
                addr(src, out);
            }
            InstKind::TmaStores { stores: boxes, .. } | InstKind::TmaLoads { loads: boxes, .. } => {
                boxes.iter().for_each(|i| i.ints_named(out, reach))
            }
            InstKind::Loop {
                start, end, body, ..
            } => {
                out.extend([*start, *end]);
                if reach != Reach::Own {
                    body.iter().for_each(|i| i.ints_named(out, reach));
                }
            }
            InstKind::If {
                cond,
                then,
                otherwise,
            } => {
                out.push(*cond);
                let branches: &[&[Inst]] = match reach {
                    Reach::Everywhere => &[then, otherwise],
                    Reach::Hoisted => &[then],
                    Reach::BeforeBranches | Reach::Own => &[],
                };
                for i in branches.iter().copied().flatten() {
                    i.ints_named(out, Reach::Everywhere);
                }
            }
            // Its body is a branch: the last block of each group runs it.
            InstKind::ReduceBlocks {
                across,
                group,
                count,
                index,
                body,
                ..
            } => {
                out.extend([*group, *count, *index]);
                if let super::Groups::Parts { groups, most } = across {
                    out.extend([*groups, *most]);
                }
                if reach == Reach::Everywhere {
                    body.iter().for_each(|i| i.ints_named(out, reach));
                }
            }
            InstKind::Pipeline {
                start,
                end,
                turn,
                load,
                prefetch,
                body,
                after,
                ..
            } => {
                out.extend([*start, *end]);
                if let Some(t) = turn {
                    out.extend([t.start, t.end]);
                }
                if reach != Reach::Own {
                    load.iter()
                        .chain(prefetch)
                        .chain(body)
                        .chain(after)
                        .for_each(|i| i.ints_named(out, reach));
                }
            }
            InstKind::MmaSync { .. }
            | InstKind::TmaWait
            | InstKind::Barrier
            | InstKind::TmaStoreWait { .. }
            | InstKind::AsyncFence
            | InstKind::AsyncWait(_)
            | InstKind::WgmmaFence
            | InstKind::ProxyFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_) => {}
        }
    }
}

impl Inst {
    /// The shared buffers this instruction and those nested in it address.
    pub fn shared_buffers(&self, out: &mut Vec<usize>) {
        super::for_each_atom(std::slice::from_ref(self), &mut |i| {
            let mut addrs: Vec<&Addr> = Vec::new();
            match &i.kind {
                InstKind::Copy { src, dst, .. } => addrs.extend([src, dst]),
                InstKind::Mma { a, b, c, .. } => addrs.extend([a, b, c]),
                InstKind::Wgmma { a, b, .. } => {
                    addrs.extend(a.shared().map(|a| &a.start));
                    addrs.push(&b.start);
                }
                InstKind::Matrix { shared, .. } => addrs.push(shared),
                InstKind::Compute { value, dst, .. } => {
                    value.loads(&mut addrs);
                    addrs.push(dst);
                }
                InstKind::Fill { dst, .. } => addrs.push(dst),
                InstKind::TmaLoad { dst, .. } => addrs.push(dst),
                InstKind::TmaStore { src, .. } => addrs.push(src),
                _ => {}
            }
            out.extend(addrs.iter().filter_map(|a| match a.space {
                Space::Shared(b) => Some(b),
                _ => None,
            }));
        });
    }
}

impl IntDef {
    /// The values it is computed from.
    pub fn operands(&self) -> [Option<IntId>; 2] {
        match *self {
            IntDef::Bin(_, a, b) | IntDef::Below(a, b) | IntDef::Compare(_, a, b) => {
                [Some(a), Some(b)]
            }
            IntDef::Swizzle(a, _) => [Some(a), None],
            _ => [None, None],
        }
    }
}

impl KernelIr {
    /// Whether the kernel multiplies on tensor cores (mma.sync or wgmma).
    pub fn tensor_cores(&self) -> bool {
        let mut found = false;
        super::for_each_atom(&self.body, &mut |i| {
            found |= matches!(i.kind, InstKind::MmaSync { .. } | InstKind::Wgmma { .. });
        });
        found
    }

    /// The values value `id` is computed from.
    pub fn operands(&self, id: IntId) -> Vec<IntId> {
        self.ints[id].def.operands().into_iter().flatten().collect()
    }

    /// Whether value `id` depends on `block.*` along grid dimension `d`
    /// (through its operands).
    pub fn depends_on_block(&self, id: IntId, d: u8) -> bool {
        let mut seen = vec![false; self.ints.len()];
        let mut todo = vec![id];
        while let Some(v) = todo.pop() {
            if self.ints[v].def == IntDef::BlockIdx(d) {
                return true;
            }
            for o in self.operands(v) {
                if !std::mem::replace(&mut seen[o], true) {
                    todo.push(o);
                }
            }
        }
        false
    }

    /// Per parameter: whether the kernel writes it (a store, a TMA store);
    /// the others are read-only (codegen's `noalias`, and the executor
    /// needs no record of their reads for its race checks).
    pub fn written_params(&self) -> Vec<bool> {
        let mut written = vec![false; self.params.len()];
        super::for_each_atom(&self.body, &mut |i| {
            if let Some((dst, _)) = i.written()
                && let Space::Global(p) = dst.space
            {
                written[p] = true;
            }
            if let InstKind::TmaStore { map, .. } = i.kind {
                written[self.tensor_maps[map].param] = true;
            }
        });
        written
    }

    /// The grid dimension the kernel's cluster spans, if it has one.
    pub fn cluster_dim(&self) -> Option<u8> {
        self.cluster.iter().position(|&c| c > 1).map(|d| d as u8)
    }

    /// The entry-scope values `insts` need, operands included, in
    /// definition order, less those that only an if's `otherwise` branch
    /// or a block reduction's body needs (which that branch computes):
    /// what must be computed before them. A tested copy's guards, needed
    /// by its partial branch only, then stay out of the registers through
    /// the main loop (the loop's values count through their operands,
    /// likewise).
    pub fn entry_values_of(&self, insts: &[Inst]) -> Vec<IntId> {
        self.entry_values_beyond(insts, |_| false)
    }

    /// [`Self::entry_values_of`] but those `known` (and what they are
    /// computed from): codegen, statement by statement, asks only for
    /// the values not yet computed, which keeps its walks short.
    pub fn entry_values_beyond(&self, insts: &[Inst], known: impl Fn(IntId) -> bool) -> Vec<IntId> {
        let (mut ids, mut named, mut loops) = (Vec::new(), Vec::new(), Vec::new());
        for i in insts {
            i.ints_shared(&mut ids);
            i.ints_used(&mut named);
            collect_loops(std::slice::from_ref(i), &mut loops);
        }
        // A loop's values that no instruction names (operands of others,
        // a divisor the loop steps by) are the loop's to compute from the
        // entry's, at its top. (Only a loop needs the walk over every
        // value.)
        if !loops.is_empty() {
            let mut is_named = vec![false; self.ints.len()];
            named.into_iter().for_each(|v| is_named[v] = true);
            ids.extend((0..self.ints.len()).filter(|&v| {
                !is_named[v] && self.ints[v].scope.is_some_and(|l| loops.contains(&l))
            }));
        }
        let mut ids = self.operands_beyond(ids, known);
        ids.retain(|&v| self.ints[v].scope.is_none());
        ids
    }

    /// `ids` and every value they are computed from, in definition order
    /// (operands first).
    pub fn with_operands(&self, ids: Vec<IntId>) -> Vec<IntId> {
        self.operands_beyond(ids, |_| false)
    }

    /// [`Self::with_operands`], stopping at the values `known`; visits
    /// the values it returns only, not every value of the kernel.
    pub fn operands_beyond(&self, ids: Vec<IntId>, known: impl Fn(IntId) -> bool) -> Vec<IntId> {
        let mut seen = vec![false; self.ints.len()];
        let mut out = Vec::new();
        let mut stack = ids;
        while let Some(v) = stack.pop() {
            if !known(v) && !std::mem::replace(&mut seen[v], true) {
                out.push(v);
                stack.extend(self.operands(v));
            }
        }
        out.sort_unstable();
        out
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
            InstKind::Pipeline {
                id,
                turn,
                load,
                body,
                after,
                ..
            } => {
                out.extend(turn.as_ref().map(|t| t.id));
                out.push(*id);
                collect_loops(load, out);
                collect_loops(body, out);
                collect_loops(after, out);
            }
            InstKind::If {
                then, otherwise, ..
            } => {
                collect_loops(then, out);
                collect_loops(otherwise, out);
            }
            InstKind::ReduceBlocks { body, .. } => collect_loops(body, out),
            _ => {}
        }
    }
}

/// For every value, the largest power of two `g` such that the threads of
/// every aligned group of `g` agree on it: `thread.x` 1, `thread.x / 32`
/// 32, a value of the block alone [`UNIFORM`]. (A loop counter counts as
/// uniform: a loop whose bounds differ is itself a condition.)
pub fn granules(ints: &[IntValue]) -> Vec<i64> {
    // Per value: `Some(d)` when it is `thread.x / d`.
    let mut quotient: Vec<Option<i64>> = Vec::with_capacity(ints.len());
    let mut g: Vec<i64> = Vec::with_capacity(ints.len());
    for v in ints {
        let q = match v.def {
            IntDef::ThreadIdx => Some(1),
            IntDef::Bin(tilec_layout::int::Op::Div, a, c) => match ints[c].def {
                IntDef::Const(c) if c > 0 => quotient[a].and_then(|d| d.checked_mul(c)),
                _ => None,
            },
            _ => None,
        };
        let granule = match (q, v.def.clone()) {
            (Some(d), _) => 1 << d.trailing_zeros().min(62),
            (None, IntDef::Compare(op, a, b)) => {
                let threshold = match (quotient[a], &ints[b].def, &ints[a].def, quotient[b]) {
                    (Some(d), IntDef::Const(k), ..) => threshold_granule(op, d, *k),
                    (_, _, IntDef::Const(k), Some(d)) => threshold_granule(mirror(op), d, *k),
                    _ => 1,
                };
                g[a].min(g[b]).max(threshold)
            }
            (None, IntDef::Bin(_, a, b) | IntDef::Below(a, b)) => g[a].min(g[b]),
            (None, IntDef::Swizzle(a, _)) => g[a],
            (None, _) => UNIFORM,
        };
        quotient.push(q);
        g.push(granule);
    }
    g
}
