//! Why an operation of the algebra has no result. Each message is one line,
//! names the operands, and says what would make the operation admissible.

use crate::int::Int;
use crate::layout::Layout;
use crate::tuple::IntTuple;
use thiserror::Error;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AlgebraError {
    #[error("shape {shape} and stride {stride} do not have the same profile")]
    NotCongruent { shape: IntTuple, stride: IntTuple },

    #[error(
        "composition {a} o {b}: stride {stride} is neither a multiple of nor smaller than the extent {shape} it walks across \
         (CuTe's stride divisibility condition)"
    )]
    StrideDivisibility {
        a: Layout,
        b: Layout,
        stride: Int,
        shape: Int,
    },

    #[error(
        "composition {a} o {b}: shape {rest} is not divisible by {part}, the part that fits in one mode of the left layout \
         (CuTe's shape divisibility condition)"
    )]
    ShapeDivisibility {
        a: Layout,
        b: Layout,
        rest: Int,
        part: Int,
    },

    #[error(
        "composition {a} o {b}: CuTe's result {result} is not the composition: at coordinate {index} it gives {got}, \
         but {a}({b}({index})) = {expected}"
    )]
    NotAComposition {
        a: Layout,
        b: Layout,
        result: Layout,
        index: i64,
        got: i64,
        expected: i64,
    },

    #[error(
        "{op} of {layout}: the layout is not injective (two coordinates map to offset {offset})"
    )]
    NotInjective {
        op: &'static str,
        layout: Layout,
        offset: i64,
    },

    #[error(
        "complement of {layout}: stride {stride} is not a multiple of {covered}, the extent already covered \
         (CuTe's non-injective/complement condition)"
    )]
    ComplementGap {
        layout: Layout,
        stride: Int,
        covered: Int,
    },

    #[error(
        "left_inverse of {layout}: stride {stride} is not a multiple of {covered} (CuTe's left inverse divisibility condition)"
    )]
    LeftInverseDivisibility {
        layout: Layout,
        stride: Int,
        covered: Int,
    },

    #[error("{op}: the {what} has {tiler} modes but the layout {layout} has only {modes}")]
    TooManyModes {
        op: &'static str,
        /// The operand with too many modes: a tiler, or a profile.
        what: &'static str,
        layout: Layout,
        tiler: usize,
        modes: usize,
    },

    #[error("the slice {coord} gives {given} coordinates to a shape of {modes} modes, {shape}")]
    SliceModes {
        coord: String,
        shape: IntTuple,
        given: usize,
        modes: usize,
    },

    #[error("coordinate {coord} does not fit the shape {shape}: {why}")]
    BadCoordinate {
        coord: String,
        shape: IntTuple,
        why: &'static str,
    },

    #[error("{op} of {layout} needs static strides; this one has the dynamic stride {stride}")]
    NeedsStatic {
        op: &'static str,
        layout: Layout,
        stride: Int,
    },

    #[error(
        "tile_to_shape: the block {block} does not divide the target shape {target} in mode {mode}"
    )]
    TileToShape {
        block: Layout,
        target: IntTuple,
        mode: usize,
    },

    #[error("rank {rank} layout has no mode {index}")]
    NoSuchMode { rank: usize, index: usize },

    #[error("{op}: a value does not fit in 64 bits (overflow, or a division by zero)")]
    Overflow { op: &'static str },

    #[error("{op}: {why}")]
    Invalid { op: &'static str, why: String },
}

pub type Result<T> = std::result::Result<T, AlgebraError>;
