//! Host buffers: typed element vectors, seeded random inputs, and the
//! relative error between an output and its reference.

use crate::manifest::Elem;
use half::{bf16, f16};
use tilec_layout::f32_rounded_to_odd;

/// `v` as an f16, rounded once to nearest even, as the GPU's `cvt.rn`
/// and the CPU executor round it (half 2's `from_f64` does not).
pub(crate) fn f16_of(v: f64) -> f16 {
    f16::from_f32(f32_rounded_to_odd(v))
}

/// `v` as a bf16, rounded once, as [`f16_of`].
pub(crate) fn bf16_of(v: f64) -> bf16 {
    bf16::from_f32(f32_rounded_to_odd(v))
}

#[derive(Clone, Debug, PartialEq)]
pub enum HostBuffer {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    I32(Vec<i32>),
}

impl HostBuffer {
    pub fn len(&self) -> usize {
        match self {
            HostBuffer::F32(v) => v.len(),
            HostBuffer::F16(v) => v.len(),
            HostBuffer::Bf16(v) => v.len(),
            HostBuffer::I32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn elem(&self) -> Elem {
        match self {
            HostBuffer::F32(_) => Elem::F32,
            HostBuffer::F16(_) => Elem::F16,
            HostBuffer::Bf16(_) => Elem::Bf16,
            HostBuffer::I32(_) => Elem::I32,
        }
    }

    pub fn get(&self, i: usize) -> f64 {
        match self {
            HostBuffer::F32(v) => v[i] as f64,
            HostBuffer::F16(v) => v[i].to_f64(),
            HostBuffer::Bf16(v) => v[i].to_f64(),
            HostBuffer::I32(v) => v[i] as f64,
        }
    }

    /// How many representable values of the element type lie between
    /// element `i` here and in `other` (0: the same bits; for floats, the
    /// distance in units in the last place, across zero too).
    /// Any two NaNs count as equal: their payloads are not part of IEEE's
    /// results (a GPU's invalid operation gives 0x7fffffff, x86's 0xffc00000).
    pub fn ulps(&self, other: &HostBuffer, i: usize) -> u64 {
        if self.get(i).is_nan() && other.get(i).is_nan() {
            return 0;
        }
        // Floats ordered as integers: the bits of a negative value mirrored below zero.
        fn ordered(bits: u64, sign: u64) -> i64 {
            if bits & sign != 0 {
                -((bits & !sign) as i64)
            } else {
                bits as i64
            }
        }
        let key = |b: &HostBuffer| match b {
            HostBuffer::F32(v) => ordered(v[i].to_bits() as u64, 1 << 31),
            HostBuffer::F16(v) => ordered(v[i].to_bits() as u64, 1 << 15),
            HostBuffer::Bf16(v) => ordered(v[i].to_bits() as u64, 1 << 15),
            HostBuffer::I32(v) => v[i] as i64,
        };
        key(self).abs_diff(key(other))
    }

    /// `values` as elements of `elem` (floats rounded to nearest, integers
    /// truncated).
    pub fn from_f64(elem: Elem, values: impl Iterator<Item = f64>) -> HostBuffer {
        match elem {
            Elem::F32 => HostBuffer::F32(values.map(|v| v as f32).collect()),
            Elem::F16 => HostBuffer::F16(values.map(f16_of).collect()),
            Elem::Bf16 => HostBuffer::Bf16(values.map(bf16_of).collect()),
            Elem::I32 => HostBuffer::I32(values.map(|v| v as i32).collect()),
        }
    }

    /// `len` values uniform in [-1, 1) (integers in [-8, 8)), from `seed`:
    /// never zeros, never the same twice for different seeds.
    pub fn random(elem: Elem, len: usize, seed: u64) -> HostBuffer {
        let mut s = SplitMix(seed);
        let mut unit = move || (s.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let values = (0..len).map(move |_| match elem {
            Elem::I32 => (unit() * 8.0).floor(),
            _ => unit(),
        });
        HostBuffer::from_f64(elem, values)
    }
}

/// SplitMix64: a small, good, seedable generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// How far a result is from its reference over the given element offsets
/// of `out`: the norm-wise relative error `||out - ref|| / ||ref||`, and
/// the element furthest from its value, measured against the larger of
/// that value and the reference's root mean square (so that a value near
/// zero is not held to its own tiny scale). The norm alone forgives a few
/// wrong elements among millions. A NaN or an infinity in the reference is
/// met exactly (a NaN of any payload, the same infinity) or not at all.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Deviation {
    pub norm: f64,
    pub worst: Option<Worst>,
}

/// One element against its reference value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Worst {
    /// The element's offset in its tensor.
    pub offset: usize,
    pub got: f64,
    pub want: f64,
    /// `|got - want| / max(|want|, rms(ref))`; NaN where `got` is.
    pub error: f64,
}

/// A NaN where a NaN is expected (any payload), or the same infinity.
fn same_non_finite(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
}

pub fn deviation(out: &HostBuffer, reference: &[f64], offsets: &[usize]) -> Deviation {
    use rayon::prelude::*;
    // Sums of fixed chunks, added in order: the same result on any number
    // of threads.
    const CHUNK: usize = 1 << 16;
    let (num, den) = reference
        .par_chunks(CHUNK)
        .zip(offsets.par_chunks(CHUNK))
        .map(|(rs, os)| {
            rs.iter()
                .zip(os)
                .fold((0.0f64, 0.0f64), |(n, d), (&r, &o)| {
                    let got = out.get(o);
                    match r.is_finite() {
                        true => (n + (got - r) * (got - r), d + r * r),
                        // A NaN or an infinity expected is matched exactly
                        // (adding nothing) or not at all.
                        false if same_non_finite(got, r) => (n, d),
                        false => (f64::INFINITY, d),
                    }
                })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold((0.0, 0.0), |(n, d), (x, y)| (n + x, d + y));
    let norm = if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    };
    // Where every expected value is zero, errors are absolute, element by
    // element as in the norm (a difference of 1e-9 was "rel. error 1.5e-9
    // (MISMATCH)", measured against a scale of f64::MIN_POSITIVE).
    let rms = match den == 0.0 {
        true => 1.0,
        false => (den / reference.len().max(1) as f64).sqrt(),
    };
    // The first of the worst, NaN worst of all: the same on any threads.
    let rank = |e: f64| if e.is_nan() { f64::INFINITY } else { e };
    let worst = reference
        .par_iter()
        .zip(offsets.par_iter())
        .map(|(&want, &offset)| {
            let got = out.get(offset);
            let error = match want.is_finite() {
                true => (got - want).abs() / want.abs().max(rms),
                false if same_non_finite(got, want) => 0.0,
                false => f64::INFINITY,
            };
            Worst {
                offset,
                got,
                want,
                error,
            }
        })
        .reduce_with(|a, b| if rank(b.error) > rank(a.error) { b } else { a });
    Deviation { norm, worst }
}
