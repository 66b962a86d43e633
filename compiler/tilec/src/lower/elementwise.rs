//! Element-wise statements (`dst = value`, and `axpby`): per element of
//! the target, one [`InstKind::Compute`] over the same elements of the
//! operands, a product feeding a sum contracted to an fma.
//!
//! Into a global tensor whose elements are provably distinct, it is staged:
//! a group's global operands loaded into registers, then their arithmetic,
//! then their stores. Element by element, each load would wait for the
//! store before it (which may alias, for all LLVM knows): 128 memory waits
//! a thread in a GEMM's epilogue, which held every GEMM to 0.6-0.75 of
//! cuBLAS.

use super::{Lowerer, Problem, scalar, static_size};
use crate::arith::{Binary, Unary};
use crate::check::program::{Base, Elem, Elementwise, ParamKind, View};
use crate::ir::{Addr, Arith, CopyAtom, Inst, InstKind, IntDef, Space};
use crate::span::Span;
use tilec_layout::{Coord, Int};

/// The elements of a staged statement loaded together: their loads
/// overlap, and what a group holds (values, addresses, guards) fits in
/// registers (all 128 of a wgmma epilogue at once spilled in its guarded
/// entry).
const STAGED_GROUP: i64 = 16;

impl Lowerer<'_> {
    pub(super) fn assign(
        &mut self,
        dst: &View,
        value: &Elementwise,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let n = static_size(dst)?;
        let mut operands = Vec::new();
        value.tensors(&mut operands);
        // Staged only where it computes the same: the target's elements
        // distinct, and every operand in its tensor the target's element
        // itself (read before any store) or in another tensor.
        let staged = matches!(dst.base, Base::Param(p) if distinct_elements(dst, &self.k.params[p].kind))
            && operands
                .iter()
                .all(|v| v.base != dst.base || same_elements(v, dst));
        let mut outside = Vec::new();
        value.tensors_outside_reductions(&mut outside);
        self.spend(n * (1 + operands.len() as i64 + staged as i64))?;
        let mut temp = |elem: Elem| {
            self.extra_registers.push((elem, n));
            self.k.registers.len() + self.extra_registers.len() - 1
        };
        let result = staged.then(|| temp(dst.elem));
        // The global operands of the target's elements, loaded ahead.
        let temps: Vec<(*const View, usize)> = outside
            .iter()
            .filter(|v| staged && matches!(v.base, Base::Param(_)))
            .map(|v| (*v as *const View, temp(v.elem)))
            .collect();
        let sizes: Vec<i64> = mode_sizes(dst)?;
        let integers = dst.elem == Elem::I32;
        let (mut computes, mut stores) = (Vec::new(), Vec::new());
        for i in 0..n {
            if i % STAGED_GROUP == 0 {
                out.append(&mut computes);
                out.append(&mut stores);
            }
            let tree = self.tree(value, i, &sizes, &temps, span, out)?;
            let tree = if integers { tree } else { contract(tree) };
            let target = self.element(dst, &Coord::from(i), 1)?;
            let into = match result {
                Some(r) => {
                    let reg = self.register(r, i);
                    stores.push(Inst::at(span, copy(dst.elem, reg, target)));
                    reg
                }
                None => target,
            };
            computes.push(Inst::at(
                span,
                InstKind::Compute {
                    elem: dst.elem,
                    value: tree,
                    dst: into,
                },
            ));
        }
        out.extend(computes);
        out.extend(stores);
        Ok(())
    }

    /// The IR of element `i` (a 1-D index over modes of `sizes`) of `e`; an
    /// operand with a register of its own in `temps` is loaded into it
    /// first (the load appended to `loads`).
    fn tree(
        &mut self,
        e: &Elementwise,
        i: i64,
        sizes: &[i64],
        temps: &[(*const View, usize)],
        span: Span,
        loads: &mut Vec<Inst>,
    ) -> Result<Arith, Problem> {
        let mut sub = |s: &mut Self, x: &Elementwise| s.tree(x, i, sizes, temps, span, loads);
        Ok(match e {
            Elementwise::Tensor(v) => {
                // An operand of one element is that element for every i.
                let c = if v.layout.size().as_static() == Some(1) {
                    0
                } else {
                    i
                };
                let a = self.element(v, &Coord::from(c), 1)?;
                match temps.iter().find(|(p, _)| std::ptr::eq(*p, v)) {
                    Some(&(_, r)) => {
                        let reg = self.register(r, i);
                        loads.push(Inst::at(span, copy(v.elem, a, reg)));
                        Arith::Load(reg, v.elem)
                    }
                    None => Arith::Load(a, v.elem),
                }
            }
            Elementwise::Scalar(s) => Arith::Scalar(scalar(s)),
            Elementwise::Unary(op, x) => Arith::Unary(*op, Box::new(sub(self, x)?)),
            Elementwise::Binary(op, a, b) => {
                let a = sub(self, a)?;
                Arith::Binary(*op, Box::new(a), Box::new(sub(self, b)?))
            }
            Elementwise::Shuffle(x, mask) => Arith::Shuffle(Box::new(sub(self, x)?), *mask),
            Elementwise::Select(c, a, b) => {
                let c = sub(self, c)?;
                let a = sub(self, a)?;
                Arith::Select(Box::new(c), Box::new(a), Box::new(sub(self, b)?))
            }
            Elementwise::Reduce {
                op,
                mode,
                extent,
                value,
            } => {
                // Element i's coordinates, with each index of the folded
                // mode put in at `mode`, as 1-D indices of the operand.
                let mut inner = sizes.to_vec();
                inner.insert(*mode, *extent);
                let mut digits = Vec::with_capacity(inner.len());
                let mut rest = i;
                for &s in sizes {
                    digits.push(rest % s);
                    rest /= s;
                }
                let mut terms = Vec::with_capacity(*extent as usize);
                for j in 0..*extent {
                    let mut at = digits.clone();
                    at.insert(*mode, j);
                    let (mut index, mut stride) = (0, 1);
                    for (d, s) in at.iter().zip(&inner) {
                        index += d * stride;
                        stride *= s;
                    }
                    terms.push(self.tree(value, index, &inner, &[], span, loads)?);
                }
                // Pairwise: a sum's rounding error grows with log(extent).
                while terms.len() > 1 {
                    let mut next = Vec::with_capacity(terms.len().div_ceil(2));
                    let mut it = terms.into_iter();
                    while let Some(a) = it.next() {
                        next.push(match it.next() {
                            Some(b) => Arith::Binary(*op, Box::new(a), Box::new(b)),
                            None => a,
                        });
                    }
                    terms = next;
                }
                terms.pop().expect("a mode of at least one element")
            }
        })
    }

    /// Element `i` of register array `r`.
    fn register(&mut self, r: usize, i: i64) -> Addr {
        Addr {
            space: Space::Registers(r),
            index: self.def(IntDef::Const(i)),
            guard: None,
        }
    }
}

fn copy(elem: Elem, src: Addr, dst: Addr) -> InstKind {
    InstKind::Copy {
        atom: CopyAtom::Scalar(elem),
        src,
        dst,
    }
}

/// A product feeding a sum or difference becomes one fma (as nvcc's
/// default contracts), the left operand's product first: `a*b + c`,
/// `c + a*b`, `a*b - c = fma(a, b, -c)`, `c - a*b = fma(-a, b, c)`.
fn contract(a: Arith) -> Arith {
    let product = |x: &Arith| matches!(x, Arith::Binary(Binary::Mul, ..));
    let factors = |x: Arith| match x {
        Arith::Binary(Binary::Mul, p, q) => (p, q),
        _ => unreachable!("a product"),
    };
    match a {
        Arith::Binary(op @ (Binary::Add | Binary::Sub), x, y) => {
            let (x, y) = (contract(*x), contract(*y));
            match op {
                _ if product(&x) => {
                    let (p, q) = factors(x);
                    let y = match op {
                        Binary::Add => y,
                        _ => Arith::Unary(Unary::Neg, Box::new(y)),
                    };
                    Arith::Fma(p, q, Box::new(y))
                }
                _ if product(&y) => {
                    let (p, q) = factors(y);
                    let p = match op {
                        Binary::Add => p,
                        _ => Box::new(Arith::Unary(Unary::Neg, p)),
                    };
                    Arith::Fma(p, q, Box::new(x))
                }
                _ => Arith::Binary(op, Box::new(x), Box::new(y)),
            }
        }
        Arith::Binary(op, x, y) => {
            Arith::Binary(op, Box::new(contract(*x)), Box::new(contract(*y)))
        }
        Arith::Unary(op, x) => Arith::Unary(op, Box::new(contract(*x))),
        Arith::Fma(x, y, z) => Arith::Fma(
            Box::new(contract(*x)),
            Box::new(contract(*y)),
            Box::new(contract(*z)),
        ),
        Arith::Select(c, x, y) => Arith::Select(
            Box::new(contract(*c)),
            Box::new(contract(*x)),
            Box::new(contract(*y)),
        ),
        Arith::Shuffle(x, mask) => Arith::Shuffle(Box::new(contract(*x)), mask),
        leaf => leaf,
    }
}

/// The extents of a view's modes, all static (unrolled element by element).
fn mode_sizes(v: &View) -> Result<Vec<i64>, Problem> {
    v.layout
        .shape()
        .modes()
        .iter()
        .map(|m| {
            m.product()
                .as_static()
                .ok_or_else(|| Problem::from(format!("a mode of run-time extent {m}")))
        })
        .collect()
}

/// Whether two views of one tensor are the same elements in the same order.
fn same_elements(a: &View, b: &View) -> bool {
    a.layout == b.layout && a.offset == b.offset
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
