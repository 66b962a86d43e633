//! TMA boxes: when a copy of a global tile into shared memory is one
//! `cp.async.bulk.tensor`, and the tensor map that describes it.
//!
//! In: the global tile as CuTe's identity tensor gives it (per mode of the
//! tensor, the coordinate as a layout over the tile, plus the tile's
//! origin), the tensor's layout, and the shared destination (its layout
//! before the buffer's swizzle, its offset, the swizzle). Out: a
//! [`TensorMap`] (per dimension the tensor's extent and stride, the box's
//! size; the swizzle mode) and the box's origin, or why the hardware cannot
//! do it. TMA writes a box densely, innermost dimension first, and swizzles
//! its 16-byte chunks by the shared address; so the destination's layout
//! must be that dense order, and its swizzle one of the three TMA has.

use crate::elem::Elem;
use crate::int::Int;
use crate::layout::Layout;
use crate::swizzle::Swizzle;

/// One dimension of a tensor map, innermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TmaDim {
    /// The tensor's extent along it, and its stride in elements (1 for the
    /// first dimension), symbolic in the kernel's extents.
    pub extent: Int,
    pub stride: Int,
    /// The box's size along it (1 to 256).
    pub size: i64,
}

/// What `cuTensorMapEncodeTiled` needs, but the tensor's address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TensorMap {
    /// The tensor: a kernel parameter.
    pub param: usize,
    pub elem: Elem,
    pub dims: Vec<TmaDim>,
    /// 0 (none), 32, 64 or 128: TMA's swizzle of 16-byte chunks.
    pub swizzle_bytes: i64,
}

impl TensorMap {
    /// Bytes of one box (what a load's mbarrier transaction counts, even
    /// where the box overhangs the tensor and is filled with zeros).
    pub fn box_bytes(&self) -> i64 {
        self.dims.iter().map(|d| d.size).product::<i64>() * self.elem.bytes()
    }
}

/// A box load: the map and the box's first element, per dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct TmaBox {
    pub map: TensorMap,
    pub origin: Vec<Int>,
}

/// The most elements along one dimension of a box.
pub const MAX_BOX: i64 = 256;

/// The most dimensions of a tensor map.
pub const MAX_RANK: usize = 5;

/// The box load that copies the tile whose coordinates in mode `j` of the
/// tensor are `coords[j].1 + coords[j].0(c)` into shared memory at
/// `smem_offset + smem(c)` (then swizzled by `swizzle`), or why there is
/// none. `tensor` is the parameter's layout.
pub fn tma_box(
    param: usize,
    elem: Elem,
    tensor: &Layout,
    coords: &[(Layout, Int)],
    smem: &Layout,
    smem_offset: &Int,
    swizzle: Option<Swizzle>,
) -> Result<TmaBox, String> {
    let modes = tensor.modes();
    if modes.len() != coords.len() || modes.len() > MAX_RANK {
        return Err(format!(
            "a tensor map has at most {MAX_RANK} dimensions, one per mode of the tensor"
        ));
    }
    for (j, m) in modes.iter().enumerate() {
        if m.shape().is_tuple() {
            return Err(format!(
                "mode {j} of the tensor, {m}, is not a single extent; a tensor map dimension is one"
            ));
        }
    }
    // Which tensor mode each tile mode walks, with stride 1, alone.
    let tile_modes = smem.rank();
    let mut walks: Vec<Option<usize>> = vec![None; modes.len()];
    let mut sizes = vec![1i64; modes.len()];
    for i in 0..tile_modes {
        let size = smem
            .mode(i)
            .map_err(|e| e.to_string())?
            .size()
            .as_static()
            .ok_or("the tile needs a static shape")?;
        if size == 1 {
            continue;
        }
        let mut found = None;
        for (j, (c, _)) in coords.iter().enumerate() {
            let m = c.mode(i).map_err(|e| e.to_string())?.coalesce();
            if m.stride().leaves().iter().all(|d| d.is_const(0)) {
                continue;
            }
            let unit = m.shape().leaves().len() == 1 && m.stride().leaves()[0].is_const(1);
            if !unit || found.is_some() || walks[j].is_some() {
                return Err(format!(
                    "mode {i} of the tile does not walk one mode of the tensor element by element: a TMA box is a box of the tensor"
                ));
            }
            found = Some(j);
        }
        let j = found.ok_or(format!("mode {i} of the tile does not move in the tensor"))?;
        if size > MAX_BOX {
            return Err(format!(
                "the box would be {size} elements along mode {j} of the tensor; TMA takes at most {MAX_BOX}"
            ));
        }
        walks[j] = Some(i);
        sizes[j] = size;
    }
    // The tensor's unit-stride mode is the map's first dimension.
    let Some(inner) = modes
        .iter()
        .position(|m| m.stride().leaves()[0].is_const(1))
    else {
        return Err(
            "the tensor has no mode of stride 1, which a tensor map's first dimension needs".into(),
        );
    };
    let order: Vec<usize> = std::iter::once(inner)
        .chain((0..modes.len()).filter(|&j| j != inner))
        .collect();
    // The box lands densely in that order: mode i of the destination must
    // step by the box elements of the dimensions before its own.
    let mut dense = 1i64;
    let mut box_stride = vec![0i64; modes.len()];
    for &j in &order {
        box_stride[j] = dense;
        dense *= sizes[j];
    }
    for (j, w) in walks.iter().enumerate() {
        let Some(i) = *w else { continue };
        let m = smem.mode(i).map_err(|e| e.to_string())?.coalesce();
        let want = Layout::new(
            Int::Static(sizes[j]).into(),
            Int::Static(box_stride[j]).into(),
        )
        .map_err(|e| e.to_string())?;
        if m != want {
            return Err(format!(
                "mode {i} of the shared tile is {m}, but TMA writes the box densely, fastest along mode {} of the tensor (its stride-1 mode): it would be {want}",
                order[0]
            ));
        }
    }
    let inner_bytes = sizes[inner] * elem.bytes();
    let swizzle_bytes = match swizzle {
        None => 0,
        Some(sw) => {
            let base_bytes = sw.base as i64 + elem.bytes().trailing_zeros() as i64;
            if base_bytes != 4 || sw.shift != 3 || !(1..=3).contains(&sw.bits) {
                return Err(format!(
                    "the buffer's swizzle {sw} is not one of TMA's: on {elem} those are Sw<1|2|3,{},3> (32, 64 or 128 bytes)",
                    4 - elem.bytes().trailing_zeros()
                ));
            }
            16 << sw.bits
        }
    };
    if inner_bytes % 16 != 0 || (swizzle_bytes > 0 && inner_bytes != swizzle_bytes) {
        return Err(match swizzle_bytes {
            0 => format!(
                "the box's inner dimension is {inner_bytes} bytes; TMA needs a multiple of 16"
            ),
            s => format!(
                "the box's inner dimension is {inner_bytes} bytes; with the {s}-byte swizzle it must be {s}"
            ),
        });
    }
    // The destination starts where the swizzle pattern does (and TMA
    // needs 128-byte aligned boxes).
    let align = swizzle.map_or(128, |sw| (sw.repeat() * elem.bytes()).max(128)) / elem.bytes();
    if smem_offset.multiple_of(align, &|_| false).is_none() {
        return Err(format!(
            "the shared tile starts at element {smem_offset}, which is not a multiple of {align} elements ({} bytes), where TMA's boxes start",
            align * elem.bytes()
        ));
    }
    Ok(TmaBox {
        map: TensorMap {
            param,
            elem,
            dims: order
                .iter()
                .map(|&j| TmaDim {
                    extent: modes[j].shape().leaves()[0].clone(),
                    stride: modes[j].stride().leaves()[0].clone(),
                    size: sizes[j],
                })
                .collect(),
            swizzle_bytes,
        },
        origin: order.iter().map(|&j| coords[j].1.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple::IntTuple;

    fn t(v: &[Int]) -> IntTuple {
        IntTuple::Tuple(v.iter().cloned().map(IntTuple::Int).collect())
    }

    fn l(shape: &[Int], stride: &[Int]) -> Layout {
        Layout::new(t(shape), t(stride)).expect("a layout")
    }

    fn c(v: i64) -> Int {
        Int::Static(v)
    }

    /// A (M, K):(K, 1) and its (rows, 64) tile at (m0, k0).
    fn k_major(rows: i64) -> (Layout, [(Layout, Int); 2]) {
        let (m, k) = (Int::var("M"), Int::var("K"));
        let tensor = l(&[m, k.clone()], &[k, c(1)]);
        let coords = [
            (l(&[c(rows), c(64)], &[c(1), c(0)]), Int::var("m0")),
            (l(&[c(rows), c(64)], &[c(0), c(1)]), Int::var("k0")),
        ];
        (tensor, coords)
    }

    #[test]
    fn a_k_major_tile_is_a_box_with_the_128_byte_swizzle() {
        let (tensor, coords) = k_major(128);
        // CuTe's K-major 128B atom tiled to 128 rows: ((8,16),64):((64,512),1).
        let smem = Layout::new(
            IntTuple::Tuple(vec![t(&[c(8), c(16)]), IntTuple::Int(c(64))]),
            IntTuple::Tuple(vec![t(&[c(64), c(512)]), IntTuple::Int(c(1))]),
        )
        .unwrap();
        let sw = Swizzle::new(3, 3, 3).unwrap();
        let b = tma_box(0, Elem::Bf16, &tensor, &coords, &smem, &c(8192), Some(sw)).expect("a box");
        assert_eq!(b.map.dims[0].size, 64);
        assert_eq!(b.map.dims[0].extent, Int::var("K"));
        assert_eq!(b.map.dims[1].size, 128);
        assert_eq!(b.map.dims[1].stride, Int::var("K"));
        assert_eq!(b.map.swizzle_bytes, 128);
        assert_eq!(b.map.box_bytes(), 16384);
        assert_eq!(b.origin, vec![Int::var("k0"), Int::var("m0")]);
        // Not at a swizzle repeat: refused.
        let e = tma_box(0, Elem::Bf16, &tensor, &coords, &smem, &c(64), Some(sw)).unwrap_err();
        assert!(e.contains("multiple of 512 elements"), "{e}");
        // A 64-byte swizzle is not TMA's for 128-byte rows.
        let sw64 = Swizzle::new(2, 3, 3).unwrap();
        let e = tma_box(0, Elem::Bf16, &tensor, &coords, &smem, &c(0), Some(sw64)).unwrap_err();
        assert!(e.contains("must be 64"), "{e}");
    }

    #[test]
    fn the_destination_must_be_the_dense_box() {
        let (tensor, coords) = k_major(64);
        let rows = l(&[c(64), c(64)], &[c(64), c(1)]);
        assert!(tma_box(0, Elem::F16, &tensor, &coords, &rows, &c(0), None).is_ok());
        let transposed = l(&[c(64), c(64)], &[c(1), c(64)]);
        let e = tma_box(0, Elem::F16, &tensor, &coords, &transposed, &c(0), None).unwrap_err();
        assert!(e.contains("densely"), "{e}");
    }
}
