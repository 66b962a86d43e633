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

/// An aligned copy of the part of a tensor that a map covers: its rows
/// (the map's contiguous dimension) start 128 bytes apart at least, so
/// that each TMA row starts a cache line, and the outer dimensions follow
/// densely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    pub param: usize,
    /// Bytes of one element (the copy moves whole elements).
    pub elem_bytes: u64,
    /// Bytes of one row: the map's first extent times the element's size.
    pub row_bytes: u64,
    /// The map's other dimensions, innermost first.
    pub dims: Vec<StagedDim>,
    /// A TMA store writes through the copy: it is copied back to the
    /// tensor after the launch.
    pub written: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagedDim {
    pub extent: u64,
    /// Bytes between consecutive entries in the tensor.
    pub from: u64,
    /// Bytes between consecutive entries in the copy.
    pub to: u64,
}

/// One pitched two-dimensional copy: `rows` rows of `Staging::row_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCopy {
    /// Bytes from the start of the tensor and of the copy.
    pub from: u64,
    pub to: u64,
    pub rows: u64,
    pub from_pitch: u64,
    pub to_pitch: u64,
}

/// Row copies a staging may take: beyond this the tensor's outer
/// dimensions are too scattered to copy before every launch.
const MAX_ROW_COPIES: u64 = 1 << 12;

/// Bytes an aligned copy may take (the H200 has 141 GB).
const MAX_STAGED_BYTES: u64 = 1 << 40;

impl Staging {
    /// Bytes of the copy.
    pub fn bytes(&self) -> u64 {
        self.dims.last().map_or(self.row_bytes, |d| d.to * d.extent)
    }

    /// The rows of one pitched copy (the first dimension's, with every
    /// next dimension's whose rows follow on in the tensor), and the
    /// dimensions left, each a copy per entry.
    fn joined(&self) -> Option<(u64, &[StagedDim])> {
        let first = self.dims.first()?;
        let mut rows = first.extent;
        let mut rest = &self.dims[1..];
        while let Some(d) = rest
            .first()
            .filter(|d| Some(d.from) == first.from.checked_mul(rows))
        {
            rows *= d.extent;
            rest = &rest[1..];
        }
        Some((rows, rest))
    }

    /// How many pitched copies [`Staging::copies`] gives, without making them.
    pub fn copy_count(&self) -> u64 {
        self.joined().map_or(0, |(_, rest)| {
            rest.iter().fold(1u64, |n, d| n.saturating_mul(d.extent))
        })
    }

    /// The copy as pitched copies.
    pub fn copies(&self) -> Vec<RowCopy> {
        let (Some(first), Some((rows, rest))) = (self.dims.first(), self.joined()) else {
            return Vec::new();
        };
        let mut out = vec![RowCopy {
            from: 0,
            to: 0,
            rows,
            from_pitch: first.from,
            to_pitch: first.to,
        }];
        for d in rest {
            out = (0..d.extent)
                .flat_map(|i| {
                    out.iter().map(move |c| RowCopy {
                        from: c.from + i * d.from,
                        to: c.to + i * d.to,
                        ..*c
                    })
                })
                .collect();
        }
        out
    }
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
            let b = s
                .checked_mul(bytes)
                .filter(|b| (1..1 << 40).contains(b))
                .ok_or_else(|| {
                    RuntimeError::Condition(format!(
                        "the tensor map of {name} has a stride of {s} elements; TMA takes 1 to 2^40 bytes"
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
    if strides.iter().any(|s| s % 16 != 0) {
        let refuse = |why: String| {
            RuntimeError::Condition(format!(
                "TMA needs the strides of {name} to be multiples of 16 bytes; an aligned copy of it {why}"
            ))
        };
        let mut staging = staging(t.param, bytes as u64, extents[0], &extents[1..], &strides)
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

/// The aligned copy of rows of `row` elements of `elem_bytes`, with outer
/// `extents` at byte `strides` in the tensor; `None` past
/// [`MAX_STAGED_BYTES`] (dimensions that overlap in the tensor can make a
/// copy far larger than the tensor).
fn staging(
    param: usize,
    elem_bytes: u64,
    row: u64,
    extents: &[u64],
    strides: &[u64],
) -> Option<Staging> {
    let row_bytes = row.checked_mul(elem_bytes)?;
    let mut to = row_bytes.checked_next_multiple_of(128)?;
    let mut dims = Vec::new();
    for (&extent, &from) in extents.iter().zip(strides) {
        dims.push(StagedDim { extent, from, to });
        to = to.checked_mul(extent).filter(|&b| b <= MAX_STAGED_BYTES)?;
    }
    Some(Staging {
        param,
        elem_bytes,
        row_bytes,
        dims,
        written: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_is_one_pitched_copy() {
        // 4097 x 4097 bf16, K-major: rows of 8194 bytes go to rows of 8320.
        let s = staging(0, 2, 4097, &[4097], &[8194]).unwrap();
        assert_eq!(s.bytes(), 8320 * 4097);
        assert_eq!(
            s.copies(),
            vec![RowCopy {
                from: 0,
                to: 0,
                rows: 4097,
                from_pitch: 8194,
                to_pitch: 8320,
            }]
        );
    }

    #[test]
    fn batches_that_follow_on_join_the_rows() {
        let dense = staging(1, 4, 50, &[30, 5], &[200, 6000]).unwrap();
        assert_eq!(dense.copies().len(), 1);
        assert_eq!(dense.copies()[0].rows, 150);
        assert_eq!(dense.bytes(), 256 * 150);
        // A gap between batch entries: one copy per entry.
        let gapped = staging(1, 4, 50, &[30, 5], &[200, 6400]).unwrap();
        let c = gapped.copies();
        assert_eq!((c.len(), gapped.copy_count()), (5, 5));
        assert_eq!(
            (c[4].from, c[4].to, c[4].rows),
            (4 * 6400, 4 * 256 * 30, 30)
        );
    }

    #[test]
    fn a_copy_larger_than_memory_is_refused_not_wrapped() {
        // Three dimensions of 2^31 that overlap in the tensor (strides of
        // 16 bytes): the copy would be 2^93 bytes.
        let big = [1 << 31, 1 << 31, 1 << 31];
        assert!(staging(0, 2, 3, &big, &[16, 16, 16]).is_none());
        // The count of copies is counted, not listed.
        let many = staging(0, 2, 3, &[2, 1 << 20], &[6, 1 << 30]).unwrap();
        assert_eq!(many.copy_count(), 1 << 20);
    }
}
