//! Element types of tensors. Not algebra: kept here because this is the one
//! crate both the compiler and the runtime (whose manifest names them)
//! depend on, so that both speak of the same type.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Elem {
    F32,
    F16,
    Bf16,
    I32,
}

impl Elem {
    /// The type named in `.tile` source (`f32`, `f16`, `bf16`, `i32`).
    pub fn parse(s: &str) -> Option<Elem> {
        match s {
            "f32" => Some(Elem::F32),
            "f16" => Some(Elem::F16),
            "bf16" => Some(Elem::Bf16),
            "i32" => Some(Elem::I32),
            _ => None,
        }
    }

    pub fn is_float(self) -> bool {
        self != Elem::I32
    }

    pub fn bytes(self) -> i64 {
        match self {
            Elem::F32 | Elem::I32 => 4,
            Elem::F16 | Elem::Bf16 => 2,
        }
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Elem::F32 => "f32",
            Elem::F16 => "f16",
            Elem::Bf16 => "bf16",
            Elem::I32 => "i32",
        })
    }
}
