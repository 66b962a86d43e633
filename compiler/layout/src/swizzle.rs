//! Swizzle functions `Sw<B,M,S>` and layouts composed with them.
//!
//! In: the three parameters, and a layout to compose with. Out: the XOR
//! permutation of offsets that CuTe's `Swizzle<B,M,S>` computes (the `B` bits
//! at `M + max(0,S)` fold into the `B` bits at `M - min(0,S)`), and
//! `ComposedLayout` = swizzle o offset o layout, which is how shared-memory
//! tiles avoid bank conflicts.

use crate::composition::composition;
use crate::condition::Conditions;
use crate::error::{AlgebraError, Result};
use crate::int::Int;
use crate::layout::{Coord, Layout};
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Swizzle {
    pub bits: u32,
    pub base: u32,
    pub shift: i32,
}

impl Swizzle {
    /// `Sw<B,M,S>`; CuTe requires `|S| >= B` so the two bit fields do not overlap.
    pub fn new(bits: i64, base: i64, shift: i64) -> Result<Swizzle> {
        // Every bit it reads or flips below bit 31: offsets of 32-bit
        // address spaces, and masks and repeats that cannot overflow.
        let ok = (0..=30).contains(&bits)
            && (0..=30).contains(&base)
            && shift.unsigned_abs() >= bits as u64
            && bits as u64 + base as u64 + shift.unsigned_abs() <= 30;
        if !ok {
            return Err(AlgebraError::Invalid {
                op: "Swizzle",
                why: format!("Sw<{bits},{base},{shift}> needs 0 <= B <= |S| and B + M + |S| <= 30"),
            });
        }
        Ok(Swizzle {
            bits: bits as u32,
            base: base as u32,
            shift: shift as i32,
        })
    }

    /// The mask of the bits that are read (CuTe's `yyy_msk`).
    pub fn source_mask(&self) -> i64 {
        ((1i64 << self.bits) - 1) << (self.base as i32 + self.shift.max(0))
    }

    /// The mask of the bits that are flipped (CuTe's `zzz_msk`).
    pub fn target_mask(&self) -> i64 {
        ((1i64 << self.bits) - 1) << (self.base as i32 - self.shift.min(0))
    }

    /// The period of the XOR pattern: it maps every aligned block of this
    /// many offsets onto itself, as every bit it reads or flips lies below.
    pub fn repeat(&self) -> i64 {
        1i64 << (64 - (self.source_mask() | self.target_mask()).leading_zeros())
    }

    /// The lowest bit it reads or flips: runs of `2^base` consecutive
    /// offsets stay consecutive through it.
    pub fn unchanged_run(&self) -> i64 {
        1i64 << self.base
    }

    pub fn apply(&self, offset: i64) -> i64 {
        let y = offset & self.source_mask();
        let moved = if self.shift >= 0 {
            y >> self.shift
        } else {
            y << -self.shift
        };
        offset ^ moved
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}

/// `swizzle o offset o layout`: `c -> swizzle(offset + layout(c))`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ComposedLayout {
    pub swizzle: Swizzle,
    pub offset: Int,
    pub layout: Layout,
}

impl ComposedLayout {
    pub fn new(swizzle: Swizzle, layout: Layout) -> ComposedLayout {
        ComposedLayout {
            swizzle,
            offset: Int::Static(0),
            layout,
        }
    }

    /// The swizzled offset of a coordinate; the inner offset must be static.
    pub fn eval(&self, coord: &Coord) -> Result<Int> {
        let inner = self.offset.add(&self.layout.eval(coord)?);
        match inner.as_static() {
            Some(v) => Ok(Int::Static(self.swizzle.apply(v))),
            None => Err(AlgebraError::Invalid {
                op: "swizzle",
                why: format!("the offset {inner} is not static; swizzles apply to static offsets"),
            }),
        }
    }

    /// `(swizzle o offset o layout) o b = swizzle o offset o (layout o b)`.
    pub fn compose(&self, b: &Layout, conds: &mut Conditions) -> Result<ComposedLayout> {
        Ok(ComposedLayout {
            layout: composition(&self.layout, b, conds)?,
            ..self.clone()
        })
    }

    pub fn size(&self) -> Int {
        self.layout.size()
    }
}

impl fmt::Display for ComposedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o {} o {}", self.swizzle, self.offset, self.layout)
    }
}
