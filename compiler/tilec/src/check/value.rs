//! Values of algebra expressions, and the conversions an operation applies
//! to its arguments (a tuple in a tiler position is a by-mode tiler of
//! stride-1 layouts; a tuple with `_` is a coordinate; ...).

use super::program::{Elem, View};
use std::fmt;
use tilec_layout::tuple::write_list;
use tilec_layout::{
    ComposedLayout, Coord, Int, IntTuple, Layout, LdMatrixAtom, Swizzle, TiledMma, Tiler,
};

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(Int),
    Under,
    Tuple(Vec<Value>),
    /// `[a, b]`: a by-mode tiler.
    Tiler(Vec<Value>),
    Layout(Layout),
    Swizzle(Swizzle),
    Composed(ComposedLayout),
    /// `LayoutLeft` / `LayoutRight`.
    Major(Major),
    /// `0.5`.
    Float(f64),
    /// `X` in a step: the mode is skipped.
    Skip,
    /// A tensor: a view of global, shared or register memory.
    Tensor(View),
    /// Scalar parameter `index` of the kernel.
    Scalar {
        index: usize,
        elem: Elem,
    },
    /// An MMA atom repeated over warps (an atom alone is one warp of it).
    Mma(TiledMma),
    /// A copy atom a copy may demand: `copy(SM75_U32x4_LDSM_N, src, dst)`.
    CopyAtom(LdMatrixAtom),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Major {
    Left,
    Right,
}

impl Value {
    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Under => "`_`",
            Value::Tuple(_) => "a tuple",
            Value::Tiler(_) => "a tiler",
            Value::Layout(_) => "a layout",
            Value::Swizzle(_) => "a swizzle",
            Value::Composed(_) => "a swizzled layout",
            Value::Major(_) => "a major order",
            Value::Float(_) => "a number",
            Value::Skip => "`X`",
            Value::Tensor(_) => "a tensor",
            Value::Scalar { .. } => "a scalar",
            Value::Mma(_) => "a tiled MMA",
            Value::CopyAtom(_) => "a copy atom",
        }
    }

    /// Whether `f` holds for one of the integers the value holds (a
    /// layout's shape and stride, a tensor's offset).
    pub fn any_int(&self, f: &dyn Fn(&Int) -> bool) -> bool {
        let layout = |l: &Layout| {
            l.shape()
                .leaves()
                .iter()
                .chain(l.stride().leaves().iter())
                .any(f)
        };
        match self {
            Value::Int(i) => f(i),
            Value::Tuple(v) | Value::Tiler(v) => v.iter().any(|v| v.any_int(f)),
            Value::Layout(l) => layout(l),
            Value::Composed(c) => layout(&c.layout) || f(&c.offset),
            Value::Tensor(t) => layout(&t.layout) || f(&t.offset),
            _ => false,
        }
    }

    /// Whether an integer in the value overflowed 64 bits while computing it.
    pub fn overflowed(&self) -> bool {
        self.any_int(&Int::overflowed)
    }

    pub fn to_int(&self) -> Option<Int> {
        match self {
            Value::Int(i) => Some(i.clone()),
            Value::Tuple(v) if v.len() == 1 => v[0].to_int(),
            _ => None,
        }
    }

    pub fn to_int_tuple(&self) -> Option<IntTuple> {
        match self {
            Value::Int(i) => Some(IntTuple::Int(i.clone())),
            Value::Tuple(v) => v
                .iter()
                .map(Value::to_int_tuple)
                .collect::<Option<Vec<_>>>()
                .map(IntTuple::Tuple),
            _ => None,
        }
    }

    /// A layout (a tensor's layout too), a one-element group around a
    /// layout, or a plain integer tuple as its compact column-major layout.
    pub fn to_layout(&self) -> Option<Layout> {
        match self {
            Value::Layout(l) => Some(l.clone()),
            Value::Tensor(t) => Some(t.layout.clone()),
            Value::Tuple(v) if v.len() == 1 && !v[0].is_int_like() => v[0].to_layout(),
            _ => self.to_int_tuple().map(|s| Layout::col_major(&s)),
        }
    }

    /// Only an actual layout (or a group around one), no conversion.
    pub fn as_layout(&self) -> Option<Layout> {
        match self {
            Value::Layout(l) => Some(l.clone()),
            Value::Tensor(t) => Some(t.layout.clone()),
            Value::Tuple(v) if v.len() == 1 => v[0].as_layout(),
            _ => None,
        }
    }

    pub fn to_coord(&self) -> Option<Coord> {
        match self {
            Value::Int(i) => Some(Coord::Int(i.clone())),
            Value::Under => Some(Coord::Under),
            Value::Tuple(v) => v
                .iter()
                .map(Value::to_coord)
                .collect::<Option<Vec<_>>>()
                .map(Coord::Tuple),
            _ => None,
        }
    }

    /// A value in a tiler position.
    pub fn to_tiler(&self) -> Option<Tiler> {
        match self {
            Value::Layout(l) => Some(Tiler::Layout(l.clone())),
            Value::Int(i) => Some(Tiler::Int(i.clone())),
            Value::Under => Some(Tiler::Under),
            Value::Tuple(v) if v.len() == 1 && !v[0].is_int_like() => v[0].to_tiler(),
            Value::Tuple(v) | Value::Tiler(v) => v
                .iter()
                .map(Value::to_tiler)
                .collect::<Option<Vec<_>>>()
                .map(Tiler::Tuple),
            _ => None,
        }
    }

    fn is_int_like(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Under | Value::Tuple(_))
    }

    /// True when every integer in the value is static.
    pub fn is_static(&self) -> bool {
        match self {
            Value::Int(i) => i.is_static(),
            Value::Tuple(v) | Value::Tiler(v) => v.iter().all(Value::is_static),
            Value::Layout(l) => l.is_static(),
            Value::Composed(c) => c.layout.is_static() && c.offset.is_static(),
            Value::Tensor(t) => t.layout.is_static(),
            Value::Under
            | Value::Swizzle(_)
            | Value::Major(_)
            | Value::Float(_)
            | Value::Skip
            | Value::Scalar { .. }
            | Value::Mma(_)
            | Value::CopyAtom(_) => true,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Under => write!(f, "_"),
            Value::Tuple(v) => write_list(f, "(", v, ")"),
            Value::Tiler(v) => write_list(f, "[", v, "]"),
            Value::Layout(l) => write!(f, "{l}"),
            Value::Swizzle(s) => write!(f, "{s}"),
            Value::Composed(c) => write!(f, "{c}"),
            Value::Major(Major::Left) => write!(f, "LayoutLeft"),
            Value::Major(Major::Right) => write!(f, "LayoutRight"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Skip => write!(f, "X"),
            Value::Tensor(t) => write!(f, "{t}"),
            Value::Scalar { index, elem } => write!(f, "scalar #{index} {elem}"),
            Value::Mma(m) => write!(f, "{m}"),
            Value::CopyAtom(a) => write!(f, "{}", a.name),
        }
    }
}

impl From<Layout> for Value {
    fn from(l: Layout) -> Self {
        Value::Layout(l)
    }
}

impl From<Int> for Value {
    fn from(i: Int) -> Self {
        Value::Int(i)
    }
}

impl From<IntTuple> for Value {
    fn from(t: IntTuple) -> Self {
        match t {
            IntTuple::Int(i) => Value::Int(i),
            IntTuple::Tuple(v) => Value::Tuple(v.into_iter().map(Value::from).collect()),
        }
    }
}
