//! Aligned copies of tensors, made before a launch: rows padded to 128
//! bytes and zero past their end, the outer dimensions dense. A tensor map
//! reads one where TMA cannot address the tensor's rows ([`crate::tma`]);
//! a kernel reads one in place of a read-only tensor whose stride symbols
//! then take the copy's pitch ([`whole`], docs/design/strides.md): its
//! vector loads are aligned, and its guarded loads may run to the pitch.

use crate::manifest::{Manifest, ParamKind};

/// An aligned copy of a tensor, or of the part of it that a map covers:
/// its rows (the contiguous dimension) start 128 bytes apart at least, so
/// that each row starts a cache line, and the outer dimensions follow
/// densely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    pub param: usize,
    /// Bytes of one element (the copy moves whole elements).
    pub elem_bytes: u64,
    /// Bytes of one row: the contiguous extent times the element's size.
    pub row_bytes: u64,
    /// The other dimensions, innermost first.
    pub dims: Vec<StagedDim>,
    /// A TMA store writes through the copy: it is copied back to the
    /// tensor after the launch.
    pub written: bool,
    /// The kernel's pointer to the tensor is the copy's ([`whole`]), and
    /// its maps of the tensor read the copy; otherwise only a map does.
    pub whole: bool,
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
pub(crate) const MAX_ROW_COPIES: u64 = 1 << 12;

/// Bytes an aligned copy may take (the H200 has 141 GB).
pub(crate) const MAX_STAGED_BYTES: u64 = 1 << 40;

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

    /// The copy made on the host, of a tensor held as `tensor` (one value
    /// an element): what the GPU's stage kernel makes, zero past each row.
    pub fn on_host<T: Copy + Default>(&self, tensor: &[T]) -> Vec<T> {
        let e = self.elem_bytes;
        let width = (self.row_bytes / e) as usize;
        let mut out = vec![T::default(); (self.bytes() / e) as usize];
        for c in self.copies() {
            for r in 0..c.rows {
                let from = ((c.from + r * c.from_pitch) / e) as usize;
                let to = ((c.to + r * c.to_pitch) / e) as usize;
                out[to..to + width].copy_from_slice(&tensor[from..from + width]);
            }
        }
        out
    }
}

/// The aligned copy of rows of `row` elements of `elem_bytes`, with outer
/// `extents` at byte `strides` in the tensor; `None` past
/// [`MAX_STAGED_BYTES`] (dimensions that overlap in the tensor can make a
/// copy far larger than the tensor).
pub(crate) fn rows(
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
        whole: false,
    })
}

/// The copy of tensor parameter `param` that its stride symbols can take,
/// if they can: its declared layout has one leaf of stride 1 (the rows)
/// and a stride symbol for every other leaf. Returns the copy and the
/// symbols' values on it, by index in [`Manifest::strides`]: each stride
/// the copy's, the padded extent its pitch (the copy is zero past a row's
/// end). `values` binds the extents. `None` where the layout cannot be
/// copied so, or the copy would pass [`MAX_STAGED_BYTES`] or
/// [`MAX_ROW_COPIES`].
pub fn whole(
    m: &Manifest,
    param: usize,
    values: &dyn tilec_layout::Bindings,
) -> Option<(Staging, Vec<(usize, i64)>)> {
    let ParamKind::Tensor { elem, layout, .. } = &m.params.get(param)?.kind else {
        return None;
    };
    let symbols: Vec<usize> = (0..m.strides.len())
        .filter(|&i| m.strides[i].param == param)
        .collect();
    let stride_of = |leaf: usize| {
        symbols
            .iter()
            .copied()
            .find(|&i| m.strides[i].leaf == leaf && !m.strides[i].padded)
    };
    let (shape, stride) = (layout.shape().leaves(), layout.stride().leaves());
    let unit: Vec<usize> = (0..stride.len())
        .filter(|&i| stride[i].is_const(1))
        .collect();
    let [row] = unit[..] else { return None };
    let bytes = elem.bytes() as u64;
    // The other leaves, by their declared stride: innermost first.
    let mut outer: Vec<(usize, u64, u64)> = Vec::new();
    for leaf in (0..stride.len()).filter(|&i| i != row) {
        stride_of(leaf)?;
        let extent = u64::try_from(shape[leaf].eval(values)?).ok()?;
        let from = u64::try_from(stride[leaf].eval(values)?).ok()?;
        outer.push((leaf, extent, from.checked_mul(bytes)?));
    }
    if outer.is_empty() {
        return None;
    }
    outer.sort_by_key(|&(_, _, from)| from);
    let extents: Vec<u64> = outer.iter().map(|o| o.1).collect();
    let strides: Vec<u64> = outer.iter().map(|o| o.2).collect();
    let row_extent = u64::try_from(shape[row].eval(values)?).ok()?;
    let mut copy = rows(param, bytes, row_extent, &extents, &strides)?;
    if copy.copy_count() > MAX_ROW_COPIES {
        return None;
    }
    copy.whole = true;
    let elements = |b: u64| i64::try_from(b / bytes).ok();
    let mut bound = Vec::new();
    for (&(leaf, ..), d) in outer.iter().zip(&copy.dims) {
        bound.push((stride_of(leaf)?, elements(d.to)?));
    }
    let pitch = elements(copy.dims[0].to)?;
    bound.extend(
        symbols
            .iter()
            .filter(|&&i| m.strides[i].padded && m.strides[i].leaf == row)
            .map(|&i| (i, pitch)),
    );
    Some((copy, bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_is_one_pitched_copy() {
        // 4097 x 4097 bf16, K-major: rows of 8194 bytes go to rows of 8320.
        let s = rows(0, 2, 4097, &[4097], &[8194]).unwrap();
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
        let dense = rows(1, 4, 50, &[30, 5], &[200, 6000]).unwrap();
        assert_eq!(dense.copies().len(), 1);
        assert_eq!(dense.copies()[0].rows, 150);
        assert_eq!(dense.bytes(), 256 * 150);
        // A gap between batch entries: one copy per entry.
        let gapped = rows(1, 4, 50, &[30, 5], &[200, 6400]).unwrap();
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
        assert!(rows(0, 2, 3, &big, &[16, 16, 16]).is_none());
        // The count of copies is counted, not listed.
        let many = rows(0, 2, 3, &[2, 1 << 20], &[6, 1 << 30]).unwrap();
        assert_eq!(many.copy_count(), 1 << 20);
    }
}
