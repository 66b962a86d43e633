//! tilec's layout algebra: C++ CuTe's `Layout` functions (`layout.hpp`) over
//! integers that are static or symbolic, with every result checked against
//! the operation's post-condition.
//!
//! The data flow is one-way: [`Int`] -> [`IntTuple`] -> [`Layout`] -> the
//! operations. Each operation is a small pure function; those that need a
//! fact about dynamic values take a [`Conditions`] and record it there rather
//! than assume it. Errors are [`AlgebraError`], one line each.
//!
//! Nothing here depends on LLVM or CUDA.

// Errors carry their operands so messages can name them; they are cold, so
// their size does not matter.
#![allow(clippy::result_large_err)]

pub mod builtin;
pub mod complement;
pub mod composition;
pub mod condition;
pub mod elem;
pub mod error;
pub mod gmma;
pub mod int;
pub mod layout;
pub mod mma;
pub mod swizzle;
pub mod tiler;
pub mod tiling;
pub mod tma;
pub mod tuple;
pub mod vector;

pub use builtin::{
    AXES, BLOCK_MAX, Builtin, COUNTER_MAX, EXTENT_END, GRID_MAX, NARROW_MAX, SM_COUNT,
};
pub use complement::{coalesce_shape, complement, complement_full, left_inverse, right_inverse};
pub use composition::{composition, composition_tiler};
pub use condition::{Condition, Conditions, Fact};
pub use elem::{Elem, f32_rounded_to_odd};
pub use error::{AlgebraError, Result};
pub use gmma::{DescSwizzle, Major, SmemDescriptor};
pub use int::{Bindings, Int};
pub use layout::{Coord, Layout, StaticLayout, crd2idx, idx2crd};
pub use mma::{LdMatrixAtom, MmaAtom, Operand, TiledMma};
pub use swizzle::{ComposedLayout, Swizzle};
pub use tiler::Tiler;
pub use tiling::{
    Grouping, Interleave, divide, ordered_layout, product, rank_product, tile_to_shape,
};
pub use tma::{TensorMap, TmaCopy, TmaDim, TmaPiece, tma_copy, tma_prefetch};
pub use tuple::IntTuple;
pub use vector::{max_common_layout, max_common_vector};
