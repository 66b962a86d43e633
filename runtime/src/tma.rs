//! Tensor maps at a launch's extents: what `cuTensorMapEncodeTiled` takes
//! (all but the address), checked against what TMA can do. A tensor whose
//! rows TMA cannot address (their strides not whole 16-byte units, e.g. a
//! K-major bf16 matrix with K = 4097) is read through an aligned copy that
//! the runtime makes before each launch: the checker has already refused a
//! kernel that both loads a tensor by TMA and writes it, so the copy is
//! the tensor for the whole launch. A tensor that TMA stores write goes
//! through such a copy too, copied back after the launch: the checker lets
//! nothing else write it, and its plain reads see the launch's input.

use crate::RuntimeError;
use crate::manifest::{Elem, Manifest};
use crate::staging::{MAX_ROW_COPIES, MAX_STAGED_BYTES, Staging, rows};

/// A tensor map at the launch's extents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapPlan {
    pub param: usize,
    pub elem: Elem,
    /// Innermost first.
    pub extents: Vec<u64>,
    /// Bytes between consecutive elements of each dimension but the first.
    pub strides: Vec<u64>,
    pub boxes: Vec<u32>,
    pub swizzle_bytes: u32,
    pub source: MapSource,
}

/// The memory a tensor map reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapSource {
    /// The tensor argument itself.
    Tensor,
    /// [`crate::plan::LaunchPlan::staged`]`[i]`: an aligned copy of it.
    Staged(usize),
}

/// Evaluates tensor map `t` at the extents, refusing what TMA cannot take
/// (a first dimension that is not contiguous, extents, boxes or strides
/// past its limits) and a map reaching past its tensor's `len` elements.
/// Strides that are not whole 16-byte units give a [`Staging`], added to
/// `staged` unless an equal one is there.
pub fn map_plan(
    m: &Manifest,
    t: &tilec_layout::TensorMap,
    env: &dyn tilec_layout::Bindings,
    len: usize,
    staged: &mut Vec<Staging>,
) -> Result<MapPlan, RuntimeError> {
    let name = &m.params[t.param].name;
    let eval = |x: &tilec_layout::Int| {
        x.eval(env).ok_or_else(|| {
            RuntimeError::Manifest(format!("tensor map value {x} cannot be evaluated"))
        })
    };
    let bytes = t.elem.bytes();
    let (mut extents, mut strides, mut reach) = (Vec::new(), Vec::new(), 0i128);
    for (i, d) in t.dims.iter().enumerate() {
        let (e, s) = (eval(&d.extent)?, eval(&d.stride)?);
        // Box coordinates are 32-bit signed in the kernel.
        if !(1..1 << 31).contains(&e) || !(1..=tilec_layout::tma::MAX_BOX).contains(&d.size) {
            return Err(RuntimeError::Condition(format!(
                "the tensor map of {name} has extent {e} and box {} in dimension {i}; the kernel takes extents below 2^31 and boxes up to 256",
                d.size
            )));
        }
        if i == 0 && s != 1 {
            return Err(RuntimeError::Manifest(format!(
                "the tensor map of {name} is not contiguous innermost"
            )));
        }
        if i > 0 {
            // A stride of 0 (a tensor broadcast along a dimension) is
            // read through an aligned copy, which repeats the entries; a
            // store through one would write them all to one place.
            let b = s
                .checked_mul(bytes)
                .filter(|&b| (0..1 << 40).contains(&b) && (b > 0 || !t.store))
                .ok_or_else(|| {
                    RuntimeError::Condition(format!(
                        "the tensor map of {name} has a stride of {s} elements; TMA takes 1 to 2^40 bytes{}",
                        if s == 0 { " (a broadcast tensor is read through a copy, but not written)" } else { "" }
                    ))
                })?;
            strides.push(b as u64);
        }
        extents.push(e as u64);
        reach += (e as i128 - 1) * s as i128;
    }
    if reach >= len as i128 {
        return Err(RuntimeError::Manifest(format!(
            "the tensor map of {name} reaches element {reach}, past its {len}"
        )));
    }
    let mut source = MapSource::Tensor;
    if strides.iter().any(|&s| s == 0 || s % 16 != 0) {
        let refuse = |why: String| {
            RuntimeError::Condition(format!(
                "TMA needs the strides of {name} to be non-zero multiples of 16 bytes; an aligned copy of it {why}"
            ))
        };
        let mut staging = rows(t.param, bytes as u64, extents[0], &extents[1..], &strides)
            .ok_or_else(|| refuse(format!("would pass {MAX_STAGED_BYTES} bytes")))?;
        staging.written = t.store;
        if staging.copy_count() > MAX_ROW_COPIES {
            return Err(refuse(format!(
                "would take more than {MAX_ROW_COPIES} row copies"
            )));
        }
        strides = staging.dims.iter().map(|d| d.to).collect();
        // One copy of a tensor serves its load and store maps alike.
        let same = |s: &Staging| {
            Staging {
                written: false,
                ..s.clone()
            } == Staging {
                written: false,
                ..staging.clone()
            }
        };
        let i = match staged.iter().position(same) {
            Some(i) => {
                staged[i].written |= staging.written;
                i
            }
            None => {
                staged.push(staging);
                staged.len() - 1
            }
        };
        source = MapSource::Staged(i);
    }
    Ok(MapPlan {
        param: t.param,
        elem: t.elem,
        extents,
        strides,
        boxes: t.dims.iter().map(|d| d.size as u32).collect(),
        swizzle_bytes: t.swizzle_bytes as u32,
        source,
    })
}
