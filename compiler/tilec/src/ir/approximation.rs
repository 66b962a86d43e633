//! How far a kernel's GPU values may be from the CPU executor's: in, a
//! kernel's IR; out, relative bounds, 0 where the two agree bit for bit.
//! The `fast_` functions are the hardware's approximations, which the
//! executor computes exactly ([`crate::arith::Unary::error`]).

use super::{Arith, CopyAtom, Inst, InstKind, KernelIr, Param, Space, for_each_inst};
use std::collections::HashSet;
use tilec_layout::Elem;

/// The coarser of the half-precision types among `elems` (bf16 keeps 8
/// bits of precision, f16 11), if any: a kernel's, or its variants',
/// [`KernelIr::rounded_to`].
pub fn coarsest_rounding(elems: impl IntoIterator<Item = Elem>) -> Option<Elem> {
    elems
        .into_iter()
        .filter(|e| matches!(e, Elem::F16 | Elem::Bf16))
        .max_by_key(|e| *e == Elem::Bf16)
}

impl KernelIr {
    /// The largest relative error its `fast_` functions allow the GPU's
    /// values against the executor's and the reference's.
    pub fn approximation(&self) -> f64 {
        let mut ops = Vec::new();
        for_each_inst(&self.body, &mut |i| {
            if let InstKind::Compute { value, .. } = &i.kind {
                value.unaries(&mut ops);
            }
        });
        ops.into_iter()
            .map(crate::arith::Unary::error)
            .fold(0.0, f64::max)
    }

    /// The coarsest floating type an element-wise statement rounds a value
    /// to inside its expression (`C = bf16(A * B)` into an f32 C), if
    /// narrower than f32: the reference rounds its exact value once, the
    /// kernel its f32 value, and where the two lie on either side of a
    /// rounding boundary of that type they differ by a whole unit of it.
    /// The results are checked within that type's tolerance, then. So too
    /// where a value is stored narrower on its way to a wider output (an
    /// f32 tile of A copied into bf16 registers for the tensor cores): a
    /// narrowing that reaches only outputs of its own width (a bf16 C's
    /// staging) changes nothing, nor loosens another output's check.
    pub fn rounded_to(&self) -> Option<Elem> {
        let mut to = Vec::new();
        let mut narrowed: Vec<(Space, Elem)> = Vec::new();
        for_each_inst(&self.body, &mut |i| match &i.kind {
            InstKind::Compute { value, elem, dst } => {
                value.conversions(&mut to);
                let exact = matches!(value, Arith::Load(_, from) if from == elem);
                if !exact && !matches!(dst.space, Space::Global(_)) {
                    narrowed.push((dst.space, *elem));
                }
            }
            InstKind::Copy {
                atom: CopyAtom::Convert(_, elem),
                dst,
                ..
            } if !matches!(dst.space, Space::Global(_)) => narrowed.push((dst.space, *elem)),
            _ => {}
        });
        for e in [Elem::F16, Elem::Bf16] {
            let from: HashSet<Space> = narrowed.iter().filter(|n| n.1 == e).map(|n| n.0).collect();
            if !from.is_empty() && self.reaches_wider(from, e) {
                to.push(e);
            }
        }
        coarsest_rounding(to)
    }

    /// What `i` moves values between, for the analyses that follow them:
    /// the spaces it reads and the one it writes (an MMA's operands and its
    /// accumulators), for element-wise statements, copies, TMA stores,
    /// ldmatrix and stmatrix, and MMAs; `None` for the rest.
    fn flow(&self, i: &Inst) -> Option<(Vec<Space>, Space)> {
        Some(match &i.kind {
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                (loads.iter().map(|a| a.space).collect(), dst.space)
            }
            InstKind::Copy { src, dst, .. } => (vec![src.space], dst.space),
            InstKind::Matrix {
                store,
                shared,
                regs,
                ..
            } => {
                let r = Space::Registers(regs.array);
                match store {
                    true => (vec![r], shared.space),
                    false => (vec![shared.space], r),
                }
            }
            InstKind::MmaSync { a, b, c, .. } => (
                vec![Space::Registers(a.array), Space::Registers(b.array)],
                Space::Registers(c.array),
            ),
            InstKind::Wgmma { a, b, c, .. } => {
                let a = match a {
                    crate::ir::WgmmaA::Shared(a) => a.start.space,
                    crate::ir::WgmmaA::Registers(a) => Space::Registers(a.array),
                };
                (vec![a, b.start.space], Space::Registers(c.array))
            }
            InstKind::Mma { a, b, c, .. } => (vec![a.space, b.space], c.space),
            InstKind::TmaStore { map, src, .. } => {
                (vec![src.space], Space::Global(self.tensor_maps[*map].param))
            }
            _ => return None,
        })
    }

    /// Whether values in `reached` reach an f32 output (wider than `elem`)
    /// through copies, TMA stores, element-wise statements, ldmatrix and
    /// stmatrix, and MMAs (to their accumulators).
    fn reaches_wider(&self, mut reached: HashSet<Space>, elem: Elem) -> bool {
        loop {
            let before = reached.len();
            for_each_inst(&self.body, &mut |i| {
                let Some((from, to)) = self.flow(i) else {
                    return;
                };
                if from.iter().any(|s| reached.contains(s)) {
                    reached.insert(to);
                }
            });
            if reached.len() == before {
                break;
            }
        }
        reached.iter().any(|s| match *s {
            Space::Global(p) => matches!(
                &self.params[p],
                Param::Tensor { elem: out, .. } if *out == Elem::F32 && elem != Elem::F32
            ),
            _ => false,
        })
    }

    /// A unit in the last place of bf16 (2^-7) or f16 (2^-10) where a value
    /// that an approximation reached is rounded to that type and then
    /// computed on again (attention's P = 2^(S - m) by `fast_exp2`,
    /// rounded to bf16 for P V), else 0. The hardware's value and the
    /// executor's exact one may lie on either side of a rounding boundary,
    /// so that intermediate differs by a whole unit, which the products
    /// after it carry into the output: the GPU-executor comparison allows
    /// for it (`tilec run --check-cpu`); the check against the reference
    /// does not change. Values are followed through element-wise
    /// statements, copies, ldmatrix and stmatrix, and MMAs (to their
    /// accumulators), until nothing new is reached; "computed on again"
    /// is an MMA's operand, a register an element-wise statement reads, or
    /// a rounding inside an expression (`bf16(fast_exp(x)) * y`).
    pub fn rounded_approximation(&self) -> f64 {
        if self.approximation() == 0.0 {
            return 0.0;
        }
        // Register arrays that lowering adds (no `.tile` name) and ldmatrix
        // fills: an element-wise statement reads a shared tile through
        // them (an epilogue's C), as if the tile itself. A `copy` into a
        // kernel's own registers by ldmatrix is followed as any copy.
        let mut by_ldmatrix = HashSet::new();
        for_each_inst(&self.body, &mut |i| {
            if let InstKind::Matrix {
                store: false, regs, ..
            } = &i.kind
                && self.registers[regs.array].name.is_empty()
            {
                by_ldmatrix.insert(regs.array);
            }
        });
        let mut reached = HashSet::new();
        let mut unit: f64 = 0.0;
        loop {
            let before = reached.len();
            for_each_inst(&self.body, &mut |i| {
                unit = unit.max(self.follow(i, &by_ldmatrix, &mut reached));
            });
            if reached.len() == before {
                return unit;
            }
        }
    }

    /// One step of [`KernelIr::rounded_approximation`]: what `i` writes
    /// from a value an approximation reached joins `reached`; returns the
    /// unit of a 16-bit rounding of such a value that `i` computes on.
    fn follow(&self, i: &Inst, by_ldmatrix: &HashSet<usize>, reached: &mut HashSet<Space>) -> f64 {
        let elem = |s: &Space| match *s {
            Space::Registers(r) => self.registers[r].elem,
            Space::Shared(b) => self.shared[b].elem,
            Space::Global(p) => match &self.params[p] {
                Param::Tensor { elem, .. } | Param::Scalar { elem, .. } => *elem,
            },
        };
        let reused = |spaces: &[Space], reached: &HashSet<Space>| {
            spaces
                .iter()
                .filter(|s| reached.contains(s))
                .map(|s| unit(elem(s)))
                .fold(0.0, f64::max)
        };
        match &i.kind {
            InstKind::Compute { value, dst, .. } => {
                // Registers read again; not shared tiles, which an
                // epilogue reads (C's values) and then writes in place: the
                // analysis does not see order, and would take the write
                // for the read's source. Nor the registers ldmatrix brings
                // such a tile into.
                let mut loads = Vec::new();
                value.loads(&mut loads);
                let spaces: Vec<Space> = loads
                    .iter()
                    .map(|a| a.space)
                    .filter(|s| matches!(s, Space::Registers(r) if !by_ldmatrix.contains(r)))
                    .collect();
                let fast = |x: &Arith| {
                    let mut ops = Vec::new();
                    x.unaries(&mut ops);
                    ops.iter().any(|u| u.error() > 0.0) || {
                        let mut l = Vec::new();
                        x.loads(&mut l);
                        l.iter().any(|a| reached.contains(&a.space))
                    }
                };
                let inner = inner_rounding(value, &fast);
                if fast(value) {
                    reached.insert(dst.space);
                }
                reused(&spaces, reached).max(inner)
            }
            InstKind::Copy { .. } | InstKind::Matrix { .. } => {
                if let Some((from, to)) = self.flow(i)
                    && from.iter().any(|s| reached.contains(s))
                {
                    reached.insert(to);
                }
                0.0
            }
            InstKind::MmaSync { .. } | InstKind::Wgmma { .. } | InstKind::Mma { .. } => {
                match self.flow(i) {
                    Some((ab, c)) => self.mma(&ab, c, reached, &reused),
                    None => 0.0,
                }
            }
            _ => 0.0,
        }
    }

    /// An MMA's accumulators take what its operands carry; an operand of
    /// 16 bits that an approximation reached was rounded on its way in.
    fn mma(
        &self,
        ab: &[Space],
        c: Space,
        reached: &mut HashSet<Space>,
        reused: &dyn Fn(&[Space], &HashSet<Space>) -> f64,
    ) -> f64 {
        let u = reused(ab, reached);
        if ab.iter().any(|s| reached.contains(s)) {
            reached.insert(c);
        }
        u
    }
}

/// One unit in the last place relative to the value, at its largest.
fn unit(e: Elem) -> f64 {
    match e {
        Elem::Bf16 => 2f64.powi(-7),
        Elem::F16 => 2f64.powi(-10),
        Elem::F32 | Elem::I32 => 0.0,
    }
}

/// The unit of a rounding to 16 bits inside `value` (not at its root, which
/// is the target's) of an operand that `fast` says an approximation reached:
/// `bf16(fast_exp(x)) * y`.
fn inner_rounding(value: &Arith, fast: &dyn Fn(&Arith) -> bool) -> f64 {
    let mut u: f64 = 0.0;
    value.for_each_operand(&mut |x| {
        if let Arith::Convert(e, inner) = x
            && fast(inner)
        {
            u = u.max(unit(*e));
        }
        u = u.max(inner_rounding(x, fast));
    });
    u
}
