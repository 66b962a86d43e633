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

/// `v` as an f32 rounded to odd: truncated, with the last bit set where
/// that lost anything. Rounding that to nearest with fewer bits (f16,
/// bf16: f32 has two bits more at least) is rounding `v` itself once, as
/// the GPU's cvt.rn and LLVM's constants do: the compiler's executor and
/// the runtime's conversions of f64 values both go through it. (half 2's
/// from_f64 drops the sticky bits below f32's and rounds 0x3fc88003 down.)
pub fn f32_rounded_to_odd(v: f64) -> f32 {
    let near = v as f32;
    if near as f64 == v || !near.is_finite() {
        return near;
    }
    // The neighbour toward zero when rounding to nearest went away from it.
    let toward_zero = match (near as f64).abs() > v.abs() {
        true => f32::from_bits(near.to_bits() - 1),
        false => near,
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}
