//! The run-time indices a kernel can name: `thread.x`, `block.x`, `block.y`
//! and `block.z`. A closed set, resolved from a name here and nowhere else:
//! symbolic integers carry them as names (`Int::var`), and the checker, the
//! lowering, the IR's text form and the runtime's manifest all depend on
//! this crate.

use crate::int::Int;

/// CUDA's largest grid, in blocks along x, y and z: the checker refuses a
/// static grid past it, the runtime a launch.
pub const GRID_MAX: [i64; 3] = [(1 << 31) - 1, 65535, 65535];

/// One past the largest extent a launch takes (the runtime refuses more):
/// far past any tensor a GPU holds, and far from overflow, so that the
/// compiler may bound an expression of extents (`(thread.x + M) % 256`).
pub const EXTENT_END: i64 = 1 << 40;

/// The most a run-time loop's counter reaches, and the most iterations a
/// loop runs, as the compiler takes them where a loop's end is known only
/// at run time (a shared index `(k + 3) % 4`, a vector's alignment); the
/// runtime proves both of every loop at launch and refuses it otherwise.
pub const COUNTER_MAX: i64 = 1 << 40;

/// The most a quotient computed in 32 bits takes as an operand either way
/// (a quotient the compiler narrows, and the runtime proves within it):
/// 32-bit operands that truncate losslessly, without `i32::MIN / -1`.
pub const NARROW_MAX: i64 = i32::MAX as i64;

/// CUDA's largest block, in threads along x, y and z (1024 in all).
pub const BLOCK_MAX: [i64; 3] = [1024, 1024, 64];

/// The names of the grid's and the block's dimensions, as messages say them.
pub const AXES: [&str; 3] = ["x", "y", "z"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `thread.x`: the thread's index in its block (blocks are 1-D).
    Thread,
    /// `block.x`, `block.y`, `block.z` (0, 1, 2): the block's index in the grid.
    Block(u8),
}

impl Builtin {
    pub const ALL: [Builtin; 4] = [
        Builtin::Thread,
        Builtin::Block(0),
        Builtin::Block(1),
        Builtin::Block(2),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Thread => "thread.x",
            Builtin::Block(0) => "block.x",
            Builtin::Block(1) => "block.y",
            _ => "block.z",
        }
    }

    /// The builtin called `name`, if it is one.
    pub fn parse(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether `name` is a block index (`block.x`, `block.y`, `block.z`).
    pub fn is_block(name: &str) -> bool {
        matches!(Builtin::parse(name), Some(Builtin::Block(_)))
    }

    /// Whether every name in `v` is a block index: the value is the same
    /// for all of a block's threads and trips (a constant too).
    pub fn of_the_block(v: &Int) -> bool {
        let mut names = Vec::new();
        v.names(&mut names);
        names.iter().all(|n| Builtin::is_block(n))
    }

    /// The builtin as a symbolic integer.
    pub fn int(self) -> Int {
        Int::var(self.name())
    }
}

/// The device's number of multiprocessors: a run-time extent that a kernel
/// may name without a tensor binding it (a persistent kernel's grid,
/// `grid(min(tiles, sm_count))`). The runtime binds it from the GPU, the
/// CPU executor to 132 (the H200's); `--dims sm_count=N` overrides both.
pub const SM_COUNT: &str = "sm_count";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for b in Builtin::ALL {
            assert_eq!(Builtin::parse(b.name()), Some(b));
        }
        assert_eq!(Builtin::parse("block.w"), None);
        assert!(Builtin::is_block("block.z") && !Builtin::is_block("thread.x"));
    }
}
