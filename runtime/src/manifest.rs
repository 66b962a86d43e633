//! The manifest `tilec build` writes beside the PTX: everything the runtime
//! needs to launch a kernel safely without the compiler.

use serde::{Deserialize, Serialize};
use tilec_layout::{Fact, Int, Layout};

pub use tilec_layout::Elem;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamKind {
    /// A tensor in global memory: its buffer holds `cosize(layout)` elements.
    Tensor {
        elem: Elem,
        layout: Layout,
    },
    Scalar {
        elem: Elem,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub name: String,
    pub kind: ParamKind,
}

impl ParamSpec {
    /// The element type (tensors and scalars alike).
    pub fn elem(&self) -> Elem {
        match &self.kind {
            ParamKind::Tensor { elem, .. } | ParamKind::Scalar { elem } => *elem,
        }
    }
}

/// A fact about the extents that must hold for the launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchCondition {
    pub fact: Fact,
    pub needed_by: String,
}

/// A global access of parameter `param` at `index` (symbolic in
/// `thread.x`, `block.*`, loop counters and extents).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    pub param: usize,
    pub index: Int,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopSpec {
    pub name: String,
    pub start: Int,
    pub end: Int,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferenceKind {
    Gemm,
    Copy,
    Transpose,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub kind: ReferenceKind,
    pub operands: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub kernel: String,
    pub arch: String,
    /// Tensors and scalars in ABI order; the extents follow as i64.
    pub params: Vec<ParamSpec>,
    pub extents: Vec<String>,
    pub grid: Vec<Int>,
    pub block: Vec<Int>,
    pub shared_bytes: i64,
    /// Dynamic shared memory to request at launch (0: all static).
    pub dynamic_shared_bytes: i64,
    /// Entry points in order of preference: the first whose conditions
    /// hold for the launch's extents runs, on the blocks its block
    /// conditions allow; the next one the rest of the grid.
    pub variants: Vec<VariantSpec>,
    pub reference: Option<Reference>,
}

/// One entry point of the kernel: what must hold to launch it, and its
/// unguarded global accesses, which the runtime bounds before launching.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub entry: String,
    pub conditions: Vec<LaunchCondition>,
    /// Facts about `block.*` that must hold for every block it runs
    /// (its tiles are full); empty: any block.
    pub block_conditions: Vec<LaunchCondition>,
    /// Whether the entry takes a block offset (three u32s after the
    /// extents), so that it can run on part of the grid.
    pub block_offset: bool,
    pub accesses: Vec<Access>,
    pub loops: Vec<LoopSpec>,
}

impl Manifest {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes")
    }

    pub fn from_json(s: &str) -> Result<Manifest, String> {
        serde_json::from_str(s).map_err(|e| format!("not a tilec manifest: {e}"))
    }
}
