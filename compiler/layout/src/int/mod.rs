//! Integers of the algebra: static (known at compile time, CuTe's `_4`) or
//! dynamic (a run-time value such as the kernel parameter `M`, or an
//! expression of such values, CuTe's `int`).
//!
//! In: literals and names. Out: folded constants where both operands are
//! static, small symbolic trees otherwise, which a later stage evaluates or
//! emits as run-time arithmetic.
//!
//! Invariant: a dynamic value denotes a positive integer (extents and strides
//! bound at launch are at least 1; the runtime rejects zero extents). The
//! folding rules below rely on it, e.g. `ceil_div(1, M) = 1`.

mod linear;
mod range;
mod text;

pub use linear::Linear;

use crate::Builtin;
use std::sync::Arc;

/// A static or symbolic 64-bit integer.
#[derive(Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Int {
    Static(i64),
    Dynamic(Arc<Sym>),
}

/// The operations that can remain symbolic.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    Add,
    Sub,
    Mul,
    /// Truncating division, as C++ `/`.
    Div,
    CeilDiv,
    /// Truncating remainder, as C++ `%`.
    Mod,
    Min,
    Max,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 8] = [
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::CeilDiv,
        Op::Mod,
        Op::Min,
        Op::Max,
    ];
}

/// A symbolic integer expression.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Sym {
    Var(String),
    Bin(Op, Int, Int),
}

/// Values for the names in dynamic integers.
pub trait Bindings {
    fn value(&self, name: &str) -> Option<i64>;
}

impl<F: Fn(&str) -> Option<i64>> Bindings for F {
    fn value(&self, name: &str) -> Option<i64> {
        self(name)
    }
}

impl From<i64> for Int {
    fn from(v: i64) -> Self {
        Int::Static(v)
    }
}

impl Int {
    /// A run-time value bound by name, e.g. the extent `M`.
    pub fn var(name: &str) -> Int {
        Int::Dynamic(Arc::new(Sym::Var(name.to_string())))
    }

    pub fn as_static(&self) -> Option<i64> {
        match self {
            Int::Static(v) => Some(*v),
            Int::Dynamic(_) => None,
        }
    }

    /// The name, where the value is a run-time value by name alone.
    pub fn as_var(&self) -> Option<&str> {
        match self {
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(n) => Some(n),
                Sym::Bin(..) => None,
            },
            Int::Static(_) => None,
        }
    }

    pub fn is_static(&self) -> bool {
        matches!(self, Int::Static(_))
    }

    /// True only when the value is statically `v` (CuTe's `is_constant<v>`).
    pub fn is_const(&self, v: i64) -> bool {
        self.as_static() == Some(v)
    }

    /// Evaluates with the given names bound; `None` if a name is unbound or a
    /// division by zero occurs.
    pub fn eval(&self, env: &dyn Bindings) -> Option<i64> {
        match self {
            Int::Static(v) => Some(*v),
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(name) => env.value(name),
                Sym::Bin(op, a, b) => apply(*op, a.eval(env)?, b.eval(env)?),
            },
        }
    }

    /// Whether a static operation on this value overflowed 64 bits (or
    /// divided by zero): such a result stays an expression with no names.
    pub fn overflowed(&self) -> bool {
        let mut names = Vec::new();
        self.names(&mut names);
        !self.is_static() && names.is_empty()
    }

    /// Whether the expression has more than `limit` terms (names, numbers
    /// and operations), a part it shares counted at each use: what a walk
    /// over it costs (printing, evaluating, lowering). A chain of
    /// definitions that each use the one before twice doubles it at every
    /// step. Walks at most `limit` terms, with a stack of its own.
    pub fn larger_than(&self, limit: usize) -> bool {
        self.count_within(limit, &|_| true).is_none()
    }

    /// How many of the expression's terms are the name `name` (each use
    /// of a shared part counted): what replacing it multiplies; `None`
    /// where the expression has more than `limit` terms.
    pub fn uses_within(&self, name: &str, limit: usize) -> Option<usize> {
        self.count_within(limit, &|i| i.as_var() == Some(name))
    }

    /// The terms `keep` holds for; `None` once more than `limit` terms
    /// are walked.
    fn count_within(&self, limit: usize, keep: &dyn Fn(&Int) -> bool) -> Option<usize> {
        let (mut todo, mut walked, mut kept) = (vec![self], 0, 0);
        while let Some(i) = todo.pop() {
            walked += 1;
            if walked > limit {
                return None;
            }
            kept += usize::from(keep(i));
            if let Int::Dynamic(sym) = i
                && let Sym::Bin(_, a, b) = &**sym
            {
                todo.push(a);
                todo.push(b);
            }
        }
        Some(kept)
    }

    /// The value with the name `from` called `to`.
    pub fn rename(&self, from: &str, to: &str) -> Int {
        let Int::Dynamic(sym) = self else {
            return self.clone();
        };
        match &**sym {
            Sym::Var(n) if n == from => Int::var(to),
            Sym::Var(_) => self.clone(),
            Sym::Bin(op, a, b) => bin(*op, &a.rename(from, to), &b.rename(from, to)),
        }
    }

    /// The value with each part equal to the first of a pair replaced by
    /// its second (the first pair that matches, and nothing inside the
    /// replacement replaced again), folded as the operations fold: where
    /// each pair's two are equal, the same value. A sum matches a sum of
    /// the same terms in any order (`thread.x + 32*block.x` the index
    /// `32*block.x + thread.x`).
    pub fn replace_parts(&self, pairs: &[(Int, Int)]) -> Int {
        if let Some((_, to)) = pairs.iter().find(|(from, _)| from.same_value(self)) {
            return to.clone();
        }
        match self {
            Int::Dynamic(sym) => match &**sym {
                Sym::Bin(op, a, b) => bin(*op, &a.replace_parts(pairs), &b.replace_parts(pairs)),
                Sym::Var(_) => self.clone(),
            },
            Int::Static(_) => self.clone(),
        }
    }

    /// The value with `name` replaced by `v`, folded as the operations fold.
    pub fn substitute(&self, name: &str, v: i64) -> Int {
        self.replace(name, &Int::Static(v))
    }

    /// The value with `name` replaced by the value `v`, folded as the
    /// operations fold.
    pub fn replace(&self, name: &str, v: &Int) -> Int {
        let Int::Dynamic(sym) = self else {
            return self.clone();
        };
        match &**sym {
            Sym::Var(n) if n == name => v.clone(),
            Sym::Var(_) => self.clone(),
            Sym::Bin(op, a, b) => {
                let (x, y) = (a.replace(name, v), b.replace(name, v));
                // A tree without the name is kept, not rebuilt: the common
                // case (an access of a tensor without in-place strides).
                match x.same(a) && y.same(b) {
                    true => self.clone(),
                    false => folded(*op, &x, &y),
                }
            }
        }
    }

    /// Whether the two are the same value object (equal constants, or one
    /// shared tree): cheaper than `==`, which compares trees.
    fn same(&self, other: &Int) -> bool {
        match (self, other) {
            (Int::Static(a), Int::Static(b)) => a == b,
            (Int::Dynamic(a), Int::Dynamic(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// The value with each `a / c` whose `a` stays in `0..c` (by the ranges
    /// `env` gives the names) folded to 0, and each `a % c` to `a`: a
    /// coordinate in a mode the index never leaves (the row of a thread in
    /// a block of one row) drops out, so that alignment can be proved.
    pub fn fold_in_range(&self, env: &dyn Fn(&str) -> Option<(i64, i64)>) -> Int {
        let Int::Dynamic(sym) = self else {
            return self.clone();
        };
        let Sym::Bin(op, a, b) = &**sym else {
            return self.clone();
        };
        let (a, b) = (a.fold_in_range(env), b.fold_in_range(env));
        let below = |c: &Int| match (a.range(env), c.as_static()) {
            (Some((lo, hi)), Some(c)) => lo >= 0 && hi < c,
            _ => false,
        };
        match op {
            Op::Div if below(&b) => Int::Static(0),
            Op::Mod if below(&b) => a,
            // Sums and products fold exactly; `min`, `max` and the
            // divisions fold by rules that take a name to be at least 1,
            // which a thread index or a counter is not: those are kept.
            Op::Add | Op::Sub | Op::Mul => folded(*op, &a, &b),
            _ => bin(*op, &a, &b),
        }
    }

    /// Whether this value depends on `name`.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Int::Static(_) => false,
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(n) => n == name,
                Sym::Bin(_, a, b) => a.mentions(name) || b.mentions(name),
            },
        }
    }

    /// Names this value depends on, in first-use order, without repeats.
    pub fn names(&self, out: &mut Vec<String>) {
        if let Int::Dynamic(sym) = self {
            match &**sym {
                Sym::Var(n) => {
                    if !out.contains(n) {
                        out.push(n.clone());
                    }
                }
                Sym::Bin(_, a, b) => {
                    a.names(out);
                    b.names(out);
                }
            }
        }
    }

    /// The facts under which `self` is a multiple of `w`, when it can be
    /// shown: `Some(vec![])` if always, `Some(facts)` if the names in
    /// `facts` (for which `divisible` says a run-time fact may be required)
    /// satisfy them, `None` if it cannot be shown.
    pub fn multiple_of(
        &self,
        w: i64,
        divisible: &dyn Fn(&str) -> bool,
    ) -> Option<Vec<crate::Fact>> {
        if w <= 1 {
            return Some(vec![]);
        }
        match self {
            Int::Static(v) => (v % w == 0).then(Vec::new),
            Int::Dynamic(sym) => match &**sym {
                Sym::Var(n) => {
                    divisible(n).then(|| vec![crate::Fact::divides(&Int::Static(w), self)])
                }
                Sym::Bin(Op::Add | Op::Sub | Op::Mod, a, b) => {
                    let mut f = a.multiple_of(w, divisible)?;
                    f.extend(b.multiple_of(w, divisible)?);
                    Some(f)
                }
                Sym::Bin(Op::Mul, a, b) => {
                    // c * x is a multiple of w when x is a multiple of w / gcd(c, w).
                    let try_side = |c: &Int, x: &Int| -> Option<Vec<crate::Fact>> {
                        let g = gcd(c.as_static()?.abs(), w);
                        x.multiple_of(w / g, divisible)
                    };
                    try_side(a, b)
                        .or_else(|| try_side(b, a))
                        .or_else(|| a.multiple_of(w, divisible))
                        .or_else(|| b.multiple_of(w, divisible))
                }
                Sym::Bin(..) => None,
            },
        }
    }

    /// Whether the two are one expression, a sum's terms in any order.
    pub fn same_value(&self, o: &Int) -> bool {
        self == o || self.same_sum(o)
    }

    /// Whether both are sums of the same terms, in some order.
    fn same_sum(&self, o: &Int) -> bool {
        let is_sum =
            |v: &Int| matches!(v, Int::Dynamic(s) if matches!(&**s, Sym::Bin(Op::Add, ..)));
        if !is_sum(self) || !is_sum(o) {
            return false;
        }
        let (mut a, mut b) = (self.terms(), o.terms());
        if a.len() != b.len() {
            return false;
        }
        for t in a.drain(..) {
            match b.iter().position(|u| *u == t) {
                Some(i) => {
                    b.swap_remove(i);
                }
                None => return false,
            }
        }
        true
    }

    /// The terms of a sum: `a + b + c` gives `[a, b, c]`; anything else is
    /// its own single term.
    pub fn terms(&self) -> Vec<Int> {
        match self {
            Int::Dynamic(sym) => match &**sym {
                Sym::Bin(Op::Add, a, b) => {
                    let mut t = a.terms();
                    t.extend(b.terms());
                    t
                }
                _ => vec![self.clone()],
            },
            Int::Static(_) => vec![self.clone()],
        }
    }

    pub fn add(&self, o: &Int) -> Int {
        match (self.as_static(), o.as_static()) {
            (Some(0), _) => o.clone(),
            (_, Some(0)) => self.clone(),
            _ => bin(Op::Add, self, o),
        }
    }

    pub fn sub(&self, o: &Int) -> Int {
        match o.as_static() {
            Some(0) => self.clone(),
            _ if self == o => Int::Static(0),
            _ => match self.sum_without(o) {
                Some(rest) => rest,
                None => bin(Op::Sub, self, o),
            },
        }
    }

    /// `b` for `(b + o)` or `(o + b)`: so that a loop counter less its
    /// start, `(start + i) - start`, is `i` again.
    fn sum_without(&self, o: &Int) -> Option<Int> {
        // An overflowed sum stays as written, for the checker to report.
        if self.overflowed() {
            return None;
        }
        let Int::Dynamic(sym) = self else { return None };
        match &**sym {
            Sym::Bin(Op::Add, a, b) if a == o => Some(b.clone()),
            Sym::Bin(Op::Add, a, b) if b == o => Some(a.clone()),
            _ => None,
        }
    }

    pub fn mul(&self, o: &Int) -> Int {
        match (self.as_static(), o.as_static()) {
            (Some(0), _) | (_, Some(0)) => Int::Static(0),
            (Some(1), _) => o.clone(),
            (_, Some(1)) => self.clone(),
            // Constants first, so that `2*M` and `M*2` are one value.
            (None, Some(_)) => bin(Op::Mul, o, self),
            _ => bin(Op::Mul, self, o),
        }
    }

    /// Truncating division (C++ `/`). Division by a static zero is the
    /// caller's error to prevent; it yields a symbolic value, never a panic.
    pub fn div(&self, o: &Int) -> Int {
        match o.as_static() {
            Some(1) => self.clone(),
            _ if self == o => Int::Static(1),
            _ => self
                .exact_quotient(o)
                .unwrap_or_else(|| bin(Op::Div, self, o)),
        }
    }

    pub fn ceil_div(&self, o: &Int) -> Int {
        match (self.as_static(), o.as_static()) {
            (_, Some(1)) => self.clone(),
            // Dynamic values are positive: 1 <= o, so ceil(1/o) = 1.
            (Some(1), None) => Int::Static(1),
            (Some(0), _) => Int::Static(0),
            _ if self == o => Int::Static(1),
            _ => self
                .exact_quotient(o)
                .unwrap_or_else(|| bin(Op::CeilDiv, self, o)),
        }
    }

    pub fn rem(&self, o: &Int) -> Int {
        match o.as_static() {
            Some(1) => Int::Static(0),
            _ if self == o => Int::Static(0),
            _ if self.exact_quotient(o).is_some() => Int::Static(0),
            _ => bin(Op::Mod, self, o),
        }
    }

    pub fn min(&self, o: &Int) -> Int {
        if self == o {
            return self.clone();
        }
        match self.known_le(o) {
            Some(true) => self.clone(),
            Some(false) => o.clone(),
            None => bin(Op::Min, self, o),
        }
    }

    pub fn max(&self, o: &Int) -> Int {
        if self == o {
            return self.clone();
        }
        match self.known_le(o) {
            Some(true) => o.clone(),
            Some(false) => self.clone(),
            None => bin(Op::Max, self, o),
        }
    }

    pub fn abs(&self) -> Int {
        match self {
            Int::Static(v) => Int::Static(v.abs()),
            Int::Dynamic(_) => self.clone(),
        }
    }

    pub fn signum(&self) -> Int {
        match self {
            Int::Static(v) => Int::Static(v.signum()),
            Int::Dynamic(_) => Int::Static(1),
        }
    }

    /// `self <= o` when it is decidable at compile time.
    pub fn known_le(&self, o: &Int) -> Option<bool> {
        match (self.as_static(), o.as_static()) {
            (Some(a), Some(b)) => Some(a <= b),
            _ if self == o => Some(true),
            // `thread.x` and `block.x` are at least 0; not at least 1
            // (`min(1, thread.x)` is 0 in thread 0). A loop counter may
            // start below 0, and a sum or difference may be anything.
            (Some(a), None)
                if a <= 0 && o.as_var().is_some_and(|v| Builtin::parse(v).is_some()) =>
            {
                Some(true)
            }
            _ => None,
        }
    }

    /// `self < o` when it is decidable at compile time.
    pub fn known_lt(&self, o: &Int) -> Option<bool> {
        o.known_le(self).map(|ge| !ge)
    }

    /// `self / o` when `o` visibly divides `self`: both static, or `self` a
    /// product with `o` among its factors (`(128*M) / 128 = M`).
    fn exact_quotient(&self, o: &Int) -> Option<Int> {
        match (self.as_static(), o.as_static()) {
            (Some(a), Some(b)) if b != 0 && a % b == 0 => return Some(Int::Static(a / b)),
            (Some(_), Some(_)) => return None,
            _ => {}
        }
        if self == o {
            return Some(Int::Static(1));
        }
        if let Int::Dynamic(sym) = self
            && let Sym::Bin(Op::Mul, a, b) = &**sym
        {
            if let Some(q) = a.exact_quotient(o) {
                return Some(q.mul(b));
            }
            if let Some(q) = b.exact_quotient(o) {
                return Some(a.mul(&q));
            }
        }
        None
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// `a op b`, folded as each operation folds.
fn folded(op: Op, a: &Int, b: &Int) -> Int {
    match op {
        Op::Add => a.add(b),
        Op::Sub => a.sub(b),
        Op::Mul => a.mul(b),
        Op::Div => a.div(b),
        Op::CeilDiv => a.ceil_div(b),
        Op::Mod => a.rem(b),
        Op::Min => a.min(b),
        Op::Max => a.max(b),
    }
}

/// `a op b` with two constants folded and nothing else: none of the
/// operations' rules that take names for positive values (what a bound
/// over values of either sign needs, as the runtime's proofs do).
pub fn bin(op: Op, a: &Int, b: &Int) -> Int {
    match (a.as_static(), b.as_static()) {
        (Some(x), Some(y)) => match apply(op, x, y) {
            Some(v) => Int::Static(v),
            None => Int::Dynamic(Arc::new(Sym::Bin(op, a.clone(), b.clone()))),
        },
        _ => Int::Dynamic(Arc::new(Sym::Bin(op, a.clone(), b.clone()))),
    }
}

/// One operation on values, with C++ semantics (truncating division);
/// `None` on division by zero or overflow. Generated code and the CPU
/// executor compute indices exactly so.
pub fn apply(op: Op, a: i64, b: i64) -> Option<i64> {
    match op {
        Op::Add => a.checked_add(b),
        Op::Sub => a.checked_sub(b),
        Op::Mul => a.checked_mul(b),
        Op::Div => a.checked_div(b),
        Op::CeilDiv => a.checked_add(b)?.checked_sub(1)?.checked_div(b),
        Op::Mod => a.checked_rem(b),
        Op::Min => Some(a.min(b)),
        Op::Max => Some(a.max(b)),
    }
}

#[cfg(test)]
mod tests;
