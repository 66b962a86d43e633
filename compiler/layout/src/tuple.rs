//! Integer tuples nested to any depth: shapes, strides and coordinates.
//!
//! In: integers and tuples of them. Out: the tuple functions CuTe's
//! `int_tuple.hpp` defines (size, rank, depth, flatten, congruence,
//! compatibility, prefix products, the tuple forms of `ceil_div`), each a
//! small pure function over the tree.

use crate::int::Int;
use std::fmt;

/// An integer or a tuple of integer tuples. `4` and `(4)` are different
/// values, as in CuTe.
/// Stored as a nested array of integer texts: `["M", ["2", "K"]]`.
#[derive(Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum IntTuple {
    Int(Int),
    Tuple(Vec<IntTuple>),
}

impl From<i64> for IntTuple {
    fn from(v: i64) -> Self {
        IntTuple::Int(Int::Static(v))
    }
}

impl From<Int> for IntTuple {
    fn from(v: Int) -> Self {
        IntTuple::Int(v)
    }
}

impl From<Vec<IntTuple>> for IntTuple {
    fn from(v: Vec<IntTuple>) -> Self {
        IntTuple::Tuple(v)
    }
}

impl IntTuple {
    pub fn is_tuple(&self) -> bool {
        matches!(self, IntTuple::Tuple(_))
    }

    pub fn as_int(&self) -> Option<&Int> {
        match self {
            IntTuple::Int(i) => Some(i),
            IntTuple::Tuple(_) => None,
        }
    }

    /// The modes: the elements of a tuple, or the integer itself as one mode.
    pub fn modes(&self) -> Vec<IntTuple> {
        match self {
            IntTuple::Int(_) => vec![self.clone()],
            IntTuple::Tuple(v) => v.clone(),
        }
    }

    pub fn rank(&self) -> usize {
        match self {
            IntTuple::Int(_) => 1,
            IntTuple::Tuple(v) => v.len(),
        }
    }

    pub fn depth(&self) -> usize {
        match self {
            IntTuple::Int(_) => 0,
            IntTuple::Tuple(v) => 1 + v.iter().map(IntTuple::depth).max().unwrap_or(0),
        }
    }

    /// Mode `i`; an integer has itself as its only mode.
    pub fn get(&self, i: usize) -> Option<&IntTuple> {
        match self {
            IntTuple::Int(_) if i == 0 => Some(self),
            IntTuple::Int(_) => None,
            IntTuple::Tuple(v) => v.get(i),
        }
    }

    /// Product of all leaves (CuTe's `size` of a shape, `product`).
    pub fn product(&self) -> Int {
        match self {
            IntTuple::Int(i) => i.clone(),
            IntTuple::Tuple(v) => v
                .iter()
                .fold(Int::Static(1), |acc, t| acc.mul(&t.product())),
        }
    }

    /// The leaves in order, first leaf first.
    pub fn leaves(&self) -> Vec<Int> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves(&self, out: &mut Vec<Int>) {
        match self {
            IntTuple::Int(i) => out.push(i.clone()),
            IntTuple::Tuple(v) => v.iter().for_each(|t| t.collect_leaves(out)),
        }
    }

    /// Depth at most 1. An integer stays an integer.
    pub fn flatten(&self) -> IntTuple {
        match self {
            IntTuple::Int(_) => self.clone(),
            IntTuple::Tuple(_) => {
                IntTuple::Tuple(self.leaves().into_iter().map(IntTuple::Int).collect())
            }
        }
    }

    /// Applies `f` to every leaf, keeping the tree.
    pub fn map(&self, f: &dyn Fn(&Int) -> Int) -> IntTuple {
        match self {
            IntTuple::Int(i) => IntTuple::Int(f(i)),
            IntTuple::Tuple(v) => IntTuple::Tuple(v.iter().map(|t| t.map(f)).collect()),
        }
    }

    /// Rebuilds a tree with the profile of `self` from leaves taken in order.
    pub fn unflatten_like(&self, leaves: &mut impl Iterator<Item = Int>) -> IntTuple {
        match self {
            IntTuple::Int(_) => IntTuple::Int(leaves.next().unwrap_or(Int::Static(1))),
            IntTuple::Tuple(v) => {
                IntTuple::Tuple(v.iter().map(|t| t.unflatten_like(leaves)).collect())
            }
        }
    }

    /// Exclusive prefix products in the profile of `self`, starting at
    /// `start`: the compact column-major strides (CuTe's `compact_major<LayoutLeft>`).
    /// Static size-1 modes get stride 0, as `make_layout` does in CuTe.
    pub fn compact_col_major(&self, start: &Int) -> IntTuple {
        let mut current = start.clone();
        self.compact_with(&mut current, false)
    }

    /// Row-major counterpart: the last mode is fastest (CuTe's `LayoutRight`).
    pub fn compact_row_major(&self, start: &Int) -> IntTuple {
        let mut current = start.clone();
        self.compact_with(&mut current, true)
    }

    fn compact_with(&self, current: &mut Int, reverse: bool) -> IntTuple {
        match self {
            IntTuple::Int(s) if s.is_const(1) => IntTuple::Int(Int::Static(0)),
            IntTuple::Int(s) => {
                let d = current.clone();
                *current = current.mul(s);
                IntTuple::Int(d)
            }
            IntTuple::Tuple(v) => {
                let mut out: Vec<IntTuple> = Vec::with_capacity(v.len());
                if reverse {
                    for t in v.iter().rev() {
                        out.push(t.compact_with(current, reverse));
                    }
                    out.reverse();
                } else {
                    for t in v {
                        out.push(t.compact_with(current, reverse));
                    }
                }
                IntTuple::Tuple(out)
            }
        }
    }

    /// Same tree profile (CuTe's `congruent`).
    pub fn congruent(&self, o: &IntTuple) -> bool {
        match (self, o) {
            (IntTuple::Int(_), IntTuple::Int(_)) => true,
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y))
            }
            _ => false,
        }
    }

    /// `self` is a shape that `o` refines: equal sizes, and every integer of
    /// `self` sits opposite a subtree of `o` of equal size (CuTe's
    /// `compatible`). Decided on static values; dynamic leaves compare by value.
    pub fn compatible(&self, o: &IntTuple) -> bool {
        match (self, o) {
            (IntTuple::Int(a), _) => *a == o.product(),
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            (IntTuple::Tuple(_), IntTuple::Int(_)) => false,
        }
    }

    /// `self` has `o`'s profile down to `o`'s integers (CuTe's `weakly_congruent`).
    pub fn weakly_congruent(&self, o: &IntTuple) -> bool {
        match (self, o) {
            (IntTuple::Int(_), _) => true,
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.weakly_congruent(y))
            }
            (IntTuple::Tuple(_), IntTuple::Int(_)) => false,
        }
    }

    /// CuTe's `ceil_div` on tuples: by mode for two tuples (missing modes of
    /// `b` are 1), folded left to right for a tuple and an integer, by the
    /// product for an integer and a tuple.
    pub fn ceil_div(&self, b: &IntTuple) -> Option<IntTuple> {
        match (self, b) {
            (IntTuple::Tuple(a), IntTuple::Tuple(bv)) => {
                if a.len() < bv.len() {
                    return None;
                }
                let one = IntTuple::from(1);
                let r: Option<Vec<_>> = a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x.ceil_div(bv.get(i).unwrap_or(&one)))
                    .collect();
                r.map(IntTuple::Tuple)
            }
            (IntTuple::Tuple(a), IntTuple::Int(d)) => {
                let mut rest = d.clone();
                let mut out = Vec::with_capacity(a.len());
                for x in a {
                    let xs = IntTuple::Int(rest.clone());
                    out.push(x.ceil_div(&xs)?);
                    rest = rest.ceil_div(&x.product());
                }
                Some(IntTuple::Tuple(out))
            }
            (IntTuple::Int(a), _) => Some(IntTuple::Int(a.ceil_div(&b.product()))),
        }
    }

    /// Product of each mode (CuTe's `product_each`).
    pub fn product_each(&self) -> IntTuple {
        match self {
            IntTuple::Int(_) => self.clone(),
            IntTuple::Tuple(v) => {
                IntTuple::Tuple(v.iter().map(|t| IntTuple::Int(t.product())).collect())
            }
        }
    }

    /// True when every leaf is static.
    pub fn is_static(&self) -> bool {
        self.leaves().iter().all(Int::is_static)
    }
}

impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntTuple::Int(i) => write!(f, "{i}"),
            IntTuple::Tuple(v) => write_list(f, "(", v, ")"),
        }
    }
}

/// Writes `open a,b,c close`: the one list notation of tuples, coordinates and tilers.
pub fn write_list<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    open: &str,
    items: &[T],
    close: &str,
) -> fmt::Result {
    write!(f, "{open}")?;
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            write!(f, ",")?;
        }
        write!(f, "{x}")?;
    }
    write!(f, "{close}")
}

impl fmt::Debug for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Builds a tuple from a compact literal, for tests and examples:
/// `tup!(2, (3, 4))`.
#[macro_export]
macro_rules! tup {
    (($($x:tt),*)) => { $crate::IntTuple::Tuple(vec![$($crate::tup!($x)),*]) };
    ($x:literal) => { $crate::IntTuple::from($x as i64) };
    ($($x:tt),+) => { $crate::IntTuple::Tuple(vec![$($crate::tup!($x)),*]) };
}
