//! The `axpby` statement: `y = alpha * x + beta * y`, element by element.
//! Into a global tensor whose elements are provably distinct, it is staged:
//! loads of a group into registers, their arithmetic, their stores. Element
//! by element, each load would wait for the store before it (which may
//! alias, for all LLVM knows): 128 memory waits a thread in a GEMM's
//! epilogue, which held every GEMM to 0.6-0.75 of cuBLAS.

use super::{Lowerer, Problem, scalar, static_size};
use crate::check::program::{Base, ParamKind, Scalar, View};
use crate::ir::{Addr, CopyAtom, Inst, InstKind, IntDef, Space};
use crate::span::Span;
use tilec_layout::{Coord, Int};

/// The elements of a staged axpby loaded together: their loads overlap,
/// and what a group holds (values, addresses, guards) fits in registers
/// (all 128 of a wgmma epilogue at once spilled in its guarded entry).
const STAGED_GROUP: i64 = 16;

impl Lowerer<'_> {
    pub(super) fn axpby(
        &mut self,
        [alpha, beta]: [&Scalar; 2],
        x: &View,
        y: &View,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let n = static_size(y)?;
        // Staged only where it computes the same: `y`'s elements distinct,
        // and `x` elsewhere (staged, every element reads the old `x`).
        let staged = matches!(y.base, Base::Param(p) if distinct_elements(y, &self.k.params[p].kind))
            && x.base != y.base;
        self.spend(if staged { 3 * n } else { n })?;
        let temp = staged.then(|| {
            self.extra_registers.push((y.elem, n));
            self.k.registers.len() + self.extra_registers.len() - 1
        });
        let mut stores = Vec::new();
        let mut computes = Vec::new();
        for i in 0..n {
            if i % STAGED_GROUP == 0 {
                out.append(&mut computes);
                out.append(&mut stores);
            }
            let (xa, ya) = (
                self.element(x, &Coord::from(i), 1)?,
                self.element(y, &Coord::from(i), 1)?,
            );
            let at = match temp {
                Some(r) => {
                    let reg = Addr {
                        space: Space::Registers(r),
                        index: self.def(IntDef::Const(i)),
                        guard: None,
                    };
                    let copy = |src, dst| InstKind::Copy {
                        atom: CopyAtom::Scalar(y.elem),
                        src,
                        dst,
                    };
                    out.push(Inst::at(span, copy(ya, reg)));
                    stores.push(Inst::at(span, copy(reg, ya)));
                    reg
                }
                None => ya,
            };
            computes.push(Inst::at(
                span,
                InstKind::Axpby {
                    elem: y.elem,
                    x_elem: x.elem,
                    alpha: scalar(alpha),
                    x: xa,
                    beta: scalar(beta),
                    y: at,
                },
            ));
        }
        out.extend(computes);
        out.extend(stores);
        Ok(())
    }
}

/// Whether the elements of a view of tensor parameter `kind` are distinct
/// places: distinct coordinates (each a static function of the element,
/// plus the view's common offset) in a layout that is one-to-one, its
/// strides a chain of products of the extents (column-major under some
/// order of its modes).
fn distinct_elements(v: &View, kind: &ParamKind) -> bool {
    let ParamKind::Tensor { layout, .. } = kind else {
        return false;
    };
    let (shapes, strides) = (layout.shape().leaves(), layout.stride().leaves());
    let mut next = Int::Static(1);
    let mut left: Vec<usize> = (0..shapes.len()).collect();
    while !left.is_empty() {
        let Some(at) = left.iter().position(|&i| strides[i] == next) else {
            return false;
        };
        let i = left.remove(at);
        next = next.mul(&shapes[i]);
    }
    let Some(n) = v.layout.size().as_static() else {
        return false;
    };
    let mut seen = std::collections::HashSet::new();
    (0..n).all(|i| {
        let coords: Option<Vec<i64>> = v
            .coords
            .iter()
            .map(|c| c.layout.at(i).ok().and_then(|x| x.as_static()))
            .collect();
        coords.is_some_and(|c| seen.insert(c))
    })
}
