//! Tilers: what divides, products and by-mode composition take on their
//! right. A tiler is a layout, an integer `n` (the layout `n:1`), `_` (keep
//! the mode), or a tuple of tilers applied mode by mode.

use crate::int::Int;
use crate::layout::Layout;
use crate::tuple::{IntTuple, write_list};
use std::fmt;

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Tiler {
    Layout(Layout),
    Int(Int),
    Under,
    Tuple(Vec<Tiler>),
}

impl Tiler {
    /// A plain shape used as a tiler: `(3,8)` means `[3:1, 8:1]`.
    pub fn from_shape(shape: &IntTuple) -> Tiler {
        match shape {
            IntTuple::Int(n) => Tiler::Int(n.clone()),
            IntTuple::Tuple(v) => Tiler::Tuple(v.iter().map(Tiler::from_shape).collect()),
        }
    }
}

impl From<Layout> for Tiler {
    fn from(l: Layout) -> Self {
        Tiler::Layout(l)
    }
}

impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Layout(l) => write!(f, "{l}"),
            Tiler::Int(n) => write!(f, "{n}"),
            Tiler::Under => write!(f, "_"),
            Tiler::Tuple(v) => write_list(f, "[", v, "]"),
        }
    }
}
