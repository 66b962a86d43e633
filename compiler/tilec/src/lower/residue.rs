//! Copies, and the k residue of the `KResidue` variant: the full-tile
//! entry for any K. A copy whose global coordinates move within a block (a
//! k-tile's, from a loop counter or the tile count) runs unguarded where
//! the thread's whole copy lies inside the tensor, and guarded, element by
//! element, where it does not (the last, partial k-tile): one test a copy,
//! the same for every thread but at a partial tile. The variant then needs
//! no whole k-tiles (`K % 16 == 0`), only the block's full-tile facts;
//! the `Unaligned` variant tests alike, with copies whose width needs no
//! condition on the extents.

use super::order::{by_leaves, compact_like, stride_order};
use super::{Lowerer, Problem, Variant};
use crate::check::program::{Base, CoordFn, View};
use crate::ir::{CopyAtom, Inst, InstKind, IntId};
use crate::span::Span;
use tilec_layout::{Builtin, Coord, Int};

impl Lowerer<'_> {
    /// `src -> dst`, `n` elements a thread, as the variant copies them.
    pub(super) fn copy(
        &mut self,
        src: &View,
        dst: &View,
        n: i64,
        asynchronous: bool,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        // Between memory and registers of another type, the memory's type
        // moves as the layouts allow (a row of bf16 as 8-byte vectors, not
        // element by element) through registers of its own, laid out like
        // the memory and walked in the order of its strides, and is
        // converted there.
        let memory = |v: &View| !matches!(v.base, Base::Registers(_));
        if src.elem != dst.elem && !asynchronous && memory(src) != memory(dst) {
            // Two copies made: the budget counts the second.
            self.spend(n)?;
            let side = if memory(src) { src } else { dst };
            let temp = View {
                base: Base::Registers(self.add_registers(side.elem, n)),
                elem: side.elem,
                layout: compact_like(&side.layout),
                offset: Int::Static(0),
                coords: Vec::new(),
            };
            let order = stride_order(&side.layout);
            let (walked, temp_walked) = match (by_leaves(side, &order), by_leaves(&temp, &order)) {
                (Some(w), Some(t)) => (w, t),
                _ => (side.clone(), temp.clone()),
            };
            // Into registers: the memory's type in, then converted; out of
            // them: converted, then the memory's type out.
            return match memory(src) {
                true => {
                    self.copy(&walked, &temp_walked, n, false, span, out)?;
                    self.copy(&temp, dst, n, false, span, out)
                }
                false => {
                    self.copy(src, &temp, n, false, span, out)?;
                    self.copy(&temp_walked, &walked, n, false, span, out)
                }
            };
        }
        let variant = self.variant;
        if matches!(variant, Variant::KResidue | Variant::Unaligned)
            && let Some(test) = self.whole_copy_test(src, dst, n)?
        {
            // Made twice: the budget counts the second copy.
            self.spend(n)?;
            // The accesses under the test are bounded by it: they are not
            // the runtime's to bound (and over the grid, with the last
            // k-tile partial, it could not).
            let atom = self.copy_atom(src, dst, n, asynchronous)?;
            self.tested = true;
            let mut then = Vec::new();
            let done = self.copies(src, dst, atom, 0..n, span, &mut then);
            self.tested = false;
            done?;
            let then = self.with_bound_checks(then)?;
            // The partial tile, as the guarded entry copies it.
            self.variant = Variant::Guarded;
            let atom = self.copy_atom(src, dst, n, asynchronous)?;
            let mut otherwise = Vec::new();
            let done = self.copies(src, dst, atom, 0..n, span, &mut otherwise);
            self.variant = variant;
            done?;
            let otherwise = self.with_bound_checks(otherwise)?;
            out.push(Inst::at(
                span,
                InstKind::If {
                    cond: test,
                    then,
                    otherwise,
                },
            ));
            return Ok(());
        }
        let atom = self.copy_atom(src, dst, n, asynchronous)?;
        self.copies(src, dst, atom, 0..n, span, out)
    }

    /// The copy atom of `src -> dst` in this variant: a conversion, or the
    /// widest vector the layouts and the variant allow.
    fn copy_atom(
        &mut self,
        src: &View,
        dst: &View,
        n: i64,
        asynchronous: bool,
    ) -> Result<CopyAtom, Problem> {
        let elem = dst.elem;
        if src.elem != elem {
            return Ok(CopyAtom::Convert(src.elem, elem));
        }
        let unaligned = self.variant == Variant::Unaligned;
        let w = self.vector_width(src, dst, n, elem, !unaligned);
        // cp.async moves at least 4 bytes; a narrower copy may as well land
        // at once, which an async copy is allowed to do. Not in the
        // `Unaligned` variant, which is made to run a pipeline's copies at
        // full speed: loads that land at once stall it, and hold registers
        // (bgemm_tn_sm80's spilled 736 bytes, its guarded entry's 320).
        let whole_words = w * elem.bytes() >= 4;
        if asynchronous && unaligned && !whole_words {
            return Err(Problem::Here(
                format!("an asynchronous copy of {elem} elements one by one"),
                "the unaligned entry is not made for such copies",
            ));
        }
        Ok(match w {
            _ if asynchronous && whole_words => CopyAtom::Async(elem, w as u32),
            1 => CopyAtom::Scalar(elem),
            _ => CopyAtom::Vector(elem, w as u32),
        })
    }

    /// Where a copy touches a global view with a coordinate that moves
    /// within the block (one naming more than `block.*` and `thread.x`: a
    /// loop counter, an extent), the test that every coordinate of every
    /// element the thread copies lies in `0..extent`, as one IR value: its
    /// largest and, unless the ranges prove it at least 0, its smallest.
    /// `None` when no coordinate moves so (the block's full-tile facts
    /// bound it), or a coordinate's reach is not a constant.
    fn whole_copy_test(
        &mut self,
        src: &View,
        dst: &View,
        n: i64,
    ) -> Result<Option<IntId>, Problem> {
        let global = |v: &View| matches!(v.base, Base::Param(_)) && !v.coords.is_empty();
        let views: Vec<&View> = [src, dst].into_iter().filter(|v| global(v)).collect();
        let moves = |l: &Self, f: &CoordFn| {
            let mut names = Vec::new();
            l.fix(&f.offset).names(&mut names);
            names
                .iter()
                .any(|x| !Builtin::is_block(x) && Builtin::parse(x) != Some(Builtin::Thread))
        };
        if !views
            .iter()
            .any(|v| v.coords.iter().any(|f| moves(self, f)))
        {
            return Ok(None);
        }
        // Each coordinate's first and last element, before any IR value.
        let mut ends: Vec<(Int, Int, &Int)> = Vec::new();
        for f in views.iter().flat_map(|v| &v.coords) {
            let mut reach: Option<(i64, i64)> = None;
            for i in 0..n {
                let at = f.layout.eval(&Coord::from(i)).map_err(|e| e.to_string())?;
                let Some(x) = self.fix(&at).as_static() else {
                    return Ok(None);
                };
                reach = Some(reach.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
            }
            let Some((lo, hi)) = reach else {
                return Ok(None);
            };
            let at = |d: i64| self.fix(&f.offset.add(&Int::Static(d)));
            ends.push((at(lo), at(hi), &f.extent));
        }
        let mut test: Option<IntId> = None;
        for (first, last, extent) in ends {
            test = Some(self.below_and(test, &last, extent)?);
            if first != last && self.range(&first).is_none_or(|(lo, _)| lo < 0) {
                test = Some(self.below_and(test, &first, extent)?);
            }
        }
        Ok(test)
    }
}
