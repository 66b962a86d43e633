//! Walks of an element-wise statement's value ([`Elementwise`]): its
//! operands, views, tensors and run-time integers, as the checker, lowering
//! and the stride rules ask of it.

use super::program::{Base, Elementwise, Scalar, View};
use crate::arith::{Binary, Unary};

impl Elementwise {
    /// The names its run-time integers use, into `names`, and the tensor
    /// parameters it asks `inside()` of, into `inside`.
    pub fn integers_and_insides(&self, names: &mut Vec<String>, inside: &mut Vec<usize>) {
        match self {
            Elementwise::Int(x) | Elementwise::Quotient { divisor: x, .. } => x.names(names),
            Elementwise::Inside(View {
                base: Base::Param(p),
                ..
            }) => inside.push(*p),
            _ => {}
        }
        self.for_each_operand(&mut |x| x.integers_and_insides(names, inside));
    }

    /// Its operands, left to right (a reduction's: the value it folds).
    pub fn for_each_operand<'a>(&'a self, f: &mut dyn FnMut(&'a Elementwise)) {
        match self {
            Elementwise::Tensor(_)
            | Elementwise::Scalar(_)
            | Elementwise::Inside(_)
            | Elementwise::Coord(..)
            | Elementwise::Int(_) => {}
            Elementwise::Unary(_, x)
            | Elementwise::Convert(_, x)
            | Elementwise::Shuffle(x, _)
            | Elementwise::Quotient { value: x, .. }
            | Elementwise::Reduce { value: x, .. } => f(x),
            Elementwise::Binary(_, a, b) => {
                f(a);
                f(b);
            }
            Elementwise::Select(c, a, b) => {
                f(c);
                f(a);
                f(b);
            }
        }
    }

    /// The same expression with every view (tensors and those `inside`
    /// asks of) through `f`.
    pub fn map_views(&self, f: &mut dyn FnMut(&View) -> View) -> Elementwise {
        let mut m = |x: &Elementwise| Box::new(x.map_views(f));
        match self {
            Elementwise::Tensor(v) => Elementwise::Tensor(f(v)),
            Elementwise::Inside(v) => Elementwise::Inside(f(v)),
            Elementwise::Coord(v, m) => Elementwise::Coord(f(v), *m),
            Elementwise::Scalar(_) | Elementwise::Int(_) => self.clone(),
            Elementwise::Unary(u, x) => Elementwise::Unary(*u, m(x)),
            Elementwise::Binary(b, x, y) => {
                let x = m(x);
                Elementwise::Binary(*b, x, m(y))
            }
            Elementwise::Select(c, x, y) => {
                let (c, x) = (m(c), m(x));
                Elementwise::Select(c, x, m(y))
            }
            Elementwise::Convert(e, x) => Elementwise::Convert(*e, m(x)),
            Elementwise::Shuffle(x, k) => Elementwise::Shuffle(m(x), *k),
            Elementwise::Quotient {
                rem,
                value,
                divisor,
            } => Elementwise::Quotient {
                rem: *rem,
                value: m(value),
                divisor: divisor.clone(),
            },
            Elementwise::Reduce {
                op,
                mode,
                modes,
                value,
            } => Elementwise::Reduce {
                op: *op,
                mode: *mode,
                modes: modes.clone(),
                value: m(value),
            },
        }
    }

    /// Every view it reads: its tensors and those `inside` and `coord` ask of.
    pub fn for_each_view(&self, f: &mut dyn FnMut(&View)) {
        match self {
            Elementwise::Tensor(v) | Elementwise::Inside(v) | Elementwise::Coord(v, _) => f(v),
            _ => self.for_each_operand(&mut |x| x.for_each_view(f)),
        }
    }

    /// Its tensors, left to right.
    pub fn tensors<'a>(&'a self, out: &mut Vec<&'a View>) {
        match self {
            Elementwise::Tensor(v) => out.push(v),
            _ => self.for_each_operand(&mut |x| x.tensors(out)),
        }
    }

    /// Its tensors outside reductions, whose elements are the target's.
    pub fn tensors_outside_reductions<'a>(&'a self, out: &mut Vec<&'a View>) {
        match self {
            Elementwise::Tensor(v) => out.push(v),
            Elementwise::Reduce { .. } => {}
            _ => self.for_each_operand(&mut |x| x.tensors_outside_reductions(out)),
        }
    }

    /// The elements it reads for one element of its target (reductions
    /// multiply): what unrolling it costs.
    pub fn terms(&self) -> i64 {
        match self {
            Elementwise::Tensor(_)
            | Elementwise::Scalar(_)
            | Elementwise::Inside(_)
            | Elementwise::Coord(..)
            | Elementwise::Int(_) => 1,
            Elementwise::Reduce {
                mode, modes, value, ..
            } => value.terms().saturating_mul(modes[*mode]),
            _ => {
                let mut n = 0i64;
                self.for_each_operand(&mut |x| n = n.saturating_add(x.terms()));
                n
            }
        }
    }

    /// Whether it is an integer of the thread (a run-time value, an
    /// element's coordinate, a whole number, and sums, products, quotients
    /// by [`Elementwise::Quotient`], minima, maxima and comparisons of
    /// them), which lowering computes as integers: exact where f32 would
    /// round past 2^24. Not `/` of elements, which divides as floats do.
    pub fn integral(&self) -> bool {
        match self {
            Elementwise::Int(_) | Elementwise::Coord(..) => true,
            Elementwise::Scalar(Scalar::Whole(_)) => true,
            Elementwise::Quotient { value, .. }
            | Elementwise::Unary(Unary::Neg | Unary::Abs, value) => value.integral(),
            Elementwise::Binary(op, a, b) => {
                !matches!(op, Binary::Div | Binary::Rem) && a.integral() && b.integral()
            }
            _ => false,
        }
    }

    /// Whether it adds a term to a sum of products, left to right (`a * x +
    /// b * y + c`, or more products before `c`): contracted, the last
    /// product's fma and then an add, where `a * x + (b * y + c)` folds `c`
    /// into an fma, one operation a value fewer. Only the writer may
    /// regroup it: sums are kept in the order written, as IEEE arithmetic
    /// rounds them. Products of integers are not contracted, so they do
    /// not count.
    pub fn sums_products_then_a_term(&self) -> bool {
        fn product(x: &Elementwise) -> bool {
            matches!(x, Elementwise::Binary(Binary::Mul, ..)) && !x.integral()
        }
        fn sum(op: &Binary) -> bool {
            matches!(op, Binary::Add | Binary::Sub)
        }
        // Two products or more, summed left to right.
        fn products(x: &Elementwise) -> bool {
            matches!(x, Elementwise::Binary(op, a, b)
                if sum(op) && product(b) && (product(a) || products(a)))
        }
        let mut found = matches!(self, Elementwise::Binary(op, x, t)
            if sum(op) && !product(t) && products(x));
        self.for_each_operand(&mut |x| found |= x.sums_products_then_a_term());
        found
    }

    /// Whether it takes values of other lanes.
    pub fn shuffles(&self) -> bool {
        let mut found = matches!(self, Elementwise::Shuffle(..));
        self.for_each_operand(&mut |x| found |= x.shuffles());
        found
    }
}

/// 2^53: f64 holds every whole number up to it, and skips some past it.
pub const WHOLE_MAX: i64 = 1 << 53;

#[cfg(test)]
mod tests {
    use super::*;

    fn param(i: usize) -> Elementwise {
        Elementwise::Scalar(Scalar::Param(i))
    }
    fn whole(v: i64) -> Elementwise {
        Elementwise::Scalar(Scalar::Whole(v))
    }
    fn op(b: Binary, x: Elementwise, y: Elementwise) -> Elementwise {
        Elementwise::Binary(b, Box::new(x), Box::new(y))
    }

    /// Flagged: a term after two or more products summed left to right,
    /// at any depth; not: the term grouped with the last product, a last
    /// product (no term to fold), or products of integers (not contracted).
    #[test]
    fn a_term_after_a_sum_of_products_is_flagged() {
        let (a, b, c, d, e, f, t) = (
            param(0),
            param(1),
            param(2),
            param(3),
            param(4),
            param(5),
            param(6),
        );
        let ab = || op(Binary::Mul, a.clone(), b.clone());
        let cd = || op(Binary::Mul, c.clone(), d.clone());
        let ef = || op(Binary::Mul, e.clone(), f.clone());
        let flagged = [
            op(Binary::Add, op(Binary::Add, ab(), cd()), t.clone()),
            op(Binary::Sub, op(Binary::Sub, ab(), cd()), t.clone()),
            op(
                Binary::Add,
                op(Binary::Add, op(Binary::Add, ab(), cd()), ef()),
                t.clone(),
            ),
            Elementwise::Unary(
                Unary::Neg,
                Box::new(op(Binary::Add, op(Binary::Add, ab(), cd()), t.clone())),
            ),
            op(
                Binary::Add,
                op(Binary::Add, ab(), cd()),
                op(Binary::Mul, whole(2), whole(3)),
            ),
        ];
        for x in &flagged {
            assert!(x.sums_products_then_a_term(), "{x:?}");
        }
        let integers = op(Binary::Mul, whole(2), whole(3));
        let not = [
            op(Binary::Add, ab(), op(Binary::Add, cd(), t.clone())),
            op(Binary::Add, op(Binary::Add, ab(), cd()), ef()),
            op(Binary::Add, op(Binary::Add, ab(), t.clone()), t.clone()),
            op(Binary::Add, op(Binary::Add, ab(), integers), t.clone()),
        ];
        for x in &not {
            assert!(!x.sums_products_then_a_term(), "{x:?}");
        }
    }
}
