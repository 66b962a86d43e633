//! The operands of the tensor-core instructions: a thread's register
//! fragment, a wgmma's shared-memory operand (its descriptor), and where a
//! wgmma reads A from.

use super::Addr;

/// Elements of one thread's register array, in the order an instruction
/// takes them (an MMA atom's values of one operand).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    pub array: usize,
    pub index: Vec<i64>,
}

/// A wgmma operand in shared memory: where its tile starts (an element of
/// a buffer, before the buffer's swizzle) and its descriptor's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmemOperand {
    pub start: Addr,
    pub desc: tilec_layout::SmemDescriptor,
}

/// Where a wgmma reads A: shared memory through a descriptor (the `_SS`
/// atoms), or each thread's registers in the atom's A value order, 16-bit
/// values packed in pairs as mma.sync takes them (`_RS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WgmmaA {
    Shared(SmemOperand),
    Registers(Fragment),
}

impl WgmmaA {
    /// The operand's shared memory, where it is there.
    pub fn shared(&self) -> Option<&SmemOperand> {
        match self {
            WgmmaA::Shared(o) => Some(o),
            WgmmaA::Registers(_) => None,
        }
    }
}
