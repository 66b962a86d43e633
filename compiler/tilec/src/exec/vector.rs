//! Vector accesses on the CPU: a copy of `w` elements at once is one
//! access of `w` times the element's bytes on the GPU, which faults unless
//! its address is a multiple of that size. Lowering proves the alignment
//! (or makes it a launch condition) before it picks a width; the executor
//! checks each vector's first element, so that a wrong proof fails here,
//! with its line, instead of on the GPU.

use super::{Block, Result};
use crate::ir::{Addr, Space};
use crate::span::Span;

impl<'a> Block<'a> {
    /// Thread `t`'s vector of `w` elements at `a` starts at a multiple of
    /// `w` elements from its buffer's start (buffers are allocated at
    /// least 16-byte aligned). Registers have no addresses; a vector whose
    /// guard fails is not accessed.
    pub(super) fn vector_aligned(&self, a: &Addr, w: i64, t: usize, span: Span) -> Result<()> {
        if w <= 1
            || matches!(a.space, Space::Registers(_))
            || a.guard.is_some_and(|g| self.ints[t][g] <= 0)
        {
            return Ok(());
        }
        let i = self.ints[t][a.index];
        if i.rem_euclid(w) == 0 {
            return Ok(());
        }
        let buffer = match a.space {
            Space::Global(p) => format!("`{}`", super::param_name(self.ir, p)),
            _ => "a shared buffer".to_string(),
        };
        Err(self.err(
            t,
            span,
            format!(
                "copies a vector of {w} elements from element {i} of {buffer}, not a multiple of {w}: a misaligned vector access"
            ),
        ))
    }
}
