//! TMA boxes: when a copy of a global tile into shared memory is one
//! `cp.async.bulk.tensor`, and the tensor map that describes it; and the
//! boxes that prefetch a global tile into L2 ([`tma_prefetch`]).
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
use crate::tuple::IntTuple;

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
    /// The kernel writes the tensor through this map (a TMA store), rather
    /// than reading it.
    #[serde(default)]
    pub store: bool,
}

impl TensorMap {
    /// Bytes of one box (what a load's mbarrier transaction counts, even
    /// where the box overhangs the tensor and is filled with zeros).
    pub fn box_bytes(&self) -> i64 {
        self.dims.iter().map(|d| d.size).product::<i64>() * self.elem.bytes()
    }
}

/// A copy of a tile as TMA boxes of one map: the tile's first element
/// (per map dimension, symbolic) and, per box, where it starts from there
/// (per dimension) and in shared memory (elements, before the swizzle).
#[derive(Clone, Debug, PartialEq)]
pub struct TmaCopy {
    pub map: TensorMap,
    pub origin: Vec<Int>,
    pub boxes: Vec<TmaPiece>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaPiece {
    pub coords: Vec<i64>,
    pub smem: i64,
}

impl TmaCopy {
    /// The bytes the copy brings (whole boxes, zero-filled or not).
    pub fn bytes(&self) -> i64 {
        self.map.box_bytes() * self.boxes.len() as i64
    }
}

/// The most elements along one dimension of a box.
pub const MAX_BOX: i64 = 256;

/// The most dimensions of a tensor map.
pub const MAX_RANK: usize = 5;

/// The most boxes one copy is cut into.
pub const MAX_BOXES: usize = 64;

/// Per mode of `tensor` (a single extent each), the mode of the tile
/// (shaped as `tile`) that walks it, with stride 1 and alone, if one does;
/// and the tensor's modes in map order, its stride-1 mode first (which
/// the tile must walk: a box's rows).
fn walked_modes(
    tensor: &Layout,
    coords: &[(Layout, Int)],
    tile: &Layout,
) -> Result<(Vec<Option<usize>>, Vec<usize>), String> {
    let modes = tensor.modes();
    for (j, m) in modes.iter().enumerate() {
        if m.shape().is_tuple() {
            return Err(format!(
                "mode {j} of the tensor, {m}, is not a single extent; a tensor map dimension is one"
            ));
        }
    }
    let mut walks: Vec<Option<usize>> = vec![None; modes.len()];
    for i in 0..tile.rank() {
        if static_size(tile, i)? == 1 {
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
        walks[found.ok_or(format!("mode {i} of the tile does not move in the tensor"))?] = Some(i);
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
    if walks[inner].is_none() {
        return Err(format!(
            "the tile does not move along mode {inner} of the tensor, its stride-1 mode: a box's rows would be one element, and TMA takes rows of 16 bytes and more"
        ));
    }
    let order = std::iter::once(inner)
        .chain((0..modes.len()).filter(|&j| j != inner))
        .collect();
    Ok((walks, order))
}

/// The static size of mode `i` of a tile.
fn static_size(tile: &Layout, i: usize) -> Result<i64, String> {
    tile.mode(i)
        .map_err(|e| e.to_string())?
        .size()
        .as_static()
        .ok_or_else(|| "the tile needs a static shape".to_string())
}

/// The TMA boxes of an unswizzled map of its own that fetch the tile of
/// `tensor` whose coordinates are `coords` (as [`tma_copy`]'s) into L2: a
/// prefetch. Per dimension the box is the largest divisor of the tile's
/// extent up to 256 elements, whole 16 bytes along the stride-1 mode. The
/// boxes land nowhere, so they are laid out for [`tma_copy`] in a
/// shared tile of their own making: densely, box dimensions first, each
/// box 128-byte aligned.
pub fn tma_prefetch(
    param: usize,
    elem: Elem,
    tensor: &Layout,
    coords: &[(Layout, Int)],
    tile: &Layout,
) -> Result<TmaCopy, String> {
    let (walks, order) = walked_modes(tensor, coords, tile)?;
    // Per tile mode: (box, repeats), in map order.
    let mut modes: Vec<(i64, i64)> = Vec::with_capacity(tile.rank());
    for i in 0..tile.rank() {
        let size = static_size(tile, i)?;
        let rows = |b: i64| walks[order[0]] != Some(i) || (b * elem.bytes()) % 16 == 0;
        let b = (1..=size.min(MAX_BOX))
            .rev()
            .find(|&b| size % b == 0 && rows(b))
            .unwrap_or(size.min(MAX_BOX));
        modes.push((b, size / b));
    }
    let walkers: Vec<usize> = order.iter().filter_map(|&j| walks[j]).collect();
    let mut strides = vec![(0i64, 0i64); modes.len()];
    let mut dense = 1;
    for &i in &walkers {
        strides[i].0 = dense;
        dense *= modes[i].0;
    }
    let align = 128 / elem.bytes();
    dense = (dense + align - 1) / align * align;
    for &i in &walkers {
        strides[i].1 = dense;
        dense *= modes[i].1;
    }
    let int = |v: i64| IntTuple::Int(Int::Static(v));
    let (shape, stride): (Vec<IntTuple>, Vec<IntTuple>) = (0..modes.len())
        .map(|i| match (walkers.contains(&i), modes[i]) {
            // A mode of one element walks nothing.
            (false, (b, r)) => (int(b * r), int(0)),
            (true, (b, 1)) => (int(b), int(strides[i].0)),
            (true, (b, r)) => (
                IntTuple::Tuple(vec![int(b), int(r)]),
                IntTuple::Tuple(vec![int(strides[i].0), int(strides[i].1)]),
            ),
        })
        .unzip();
    let boxes =
        Layout::new(IntTuple::Tuple(shape), IntTuple::Tuple(stride)).map_err(|e| e.to_string())?;
    tma_copy(param, elem, tensor, coords, &boxes, &Int::Static(0), None)
}

/// The TMA boxes that copy the tile whose coordinates in mode `j` of the
/// tensor are `coords[j].1 + coords[j].0(c)` into shared memory at
/// `smem_offset + smem(c)` (then swizzled by `swizzle`), or why there are
/// none. `tensor` is the parameter's layout. The box is the largest that
/// lands densely: per dimension (the tensor's stride-1 mode first) the
/// first run of the destination's mode that steps by the box elements
/// before it, at most 256 elements (the swizzle's span for the first
/// dimension of a swizzled buffer); the rest of the mode repeats it.
pub fn tma_copy(
    param: usize,
    elem: Elem,
    tensor: &Layout,
    coords: &[(Layout, Int)],
    smem: &Layout,
    smem_offset: &Int,
    swizzle: Option<Swizzle>,
) -> Result<TmaCopy, String> {
    let modes = tensor.modes();
    if modes.len() != coords.len() || modes.len() > MAX_RANK {
        return Err(format!(
            "a tensor map has at most {MAX_RANK} dimensions, one per mode of the tensor"
        ));
    }
    let (walks, order) = walked_modes(tensor, coords, smem)?;
    let inner = order[0];
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
    // Per dimension in map order: the box's size and, per repeat of it
    // along the mode, (coordinate, shared offset).
    let mut dense = 1i64;
    let mut sizes = vec![1i64; modes.len()];
    let mut repeats: Vec<Vec<(i64, i64)>> = vec![vec![(0, 0)]; modes.len()];
    for &j in &order {
        let Some(i) = walks[j] else { continue };
        let m = smem.mode(i).map_err(|e| e.to_string())?.coalesce();
        let (s, d) = (m.shape().leaves(), m.stride().leaves());
        let (Some(n), Some(first), Some(step)) =
            (m.size().as_static(), s[0].as_static(), d[0].as_static())
        else {
            return Err("the shared tile needs a static layout".into());
        };
        if step != dense {
            let want = Layout::new(Int::Static(first).into(), Int::Static(dense).into())
                .map_err(|e| e.to_string())?;
            // Along the tensor's stride-1 mode itself: a tile of the other
            // major; along another, rows of the wrong width.
            let major = if i == inner {
                "; the tile is of the other major"
            } else {
                ""
            };
            return Err(format!(
                "mode {i} of the shared tile is {m}, but TMA writes a box densely, fastest along mode {inner} of the tensor (its stride-1 mode): it would start {want}{major}"
            ));
        }
        let limit = match (j == inner, swizzle_bytes) {
            (true, b) if b > 0 => b / elem.bytes(),
            _ => MAX_BOX,
        };
        let size = (1..=first.min(limit))
            .rev()
            .find(|b| first % b == 0)
            .unwrap_or(1);
        if j == inner && swizzle_bytes > 0 && size != limit {
            return Err(format!(
                "the box's inner dimension is {} bytes; with the {swizzle_bytes}-byte swizzle it must be {swizzle_bytes}",
                size * elem.bytes()
            ));
        }
        if j == inner && (size * elem.bytes()) % 16 != 0 {
            return Err(format!(
                "the box's inner dimension is {} bytes; TMA needs a multiple of 16",
                size * elem.bytes()
            ));
        }
        sizes[j] = size;
        // Too many boxes along one mode alone: refused before they are
        // listed (a tile of 2^32 columns listed 2^24 of them, for minutes).
        if n / size > MAX_BOXES as i64 {
            return Err(format!(
                "the copy would be more than {MAX_BOXES} TMA boxes ({} along mode {i} of the tile alone)",
                n / size
            ));
        }
        repeats[j] = (0..n / size)
            .map(|r| {
                let at = m.at(r * size).ok().and_then(|x| x.as_static());
                at.map(|a| (r * size, a))
                    .ok_or("the shared tile needs a static layout")
            })
            .collect::<Result<_, _>>()?;
        dense *= size;
    }
    let count: usize = repeats.iter().map(Vec::len).product();
    if count > MAX_BOXES {
        return Err(format!(
            "the copy would be {count} TMA boxes of {}; at most {MAX_BOXES}",
            order
                .iter()
                .map(|&j| sizes[j].to_string())
                .collect::<Vec<_>>()
                .join("x")
        ));
    }
    // Every box starts where the swizzle pattern does (and TMA needs
    // 128-byte aligned boxes).
    let align = swizzle.map_or(128, |sw| (sw.repeat() * elem.bytes()).max(128)) / elem.bytes();
    if smem_offset.multiple_of(align, &|_| false).is_none() {
        return Err(format!(
            "the shared tile starts at element {smem_offset}, which is not a multiple of {align} elements ({} bytes), where TMA's boxes start",
            align * elem.bytes()
        ));
    }
    let mut boxes = vec![TmaPiece {
        coords: vec![0; order.len()],
        smem: 0,
    }];
    for (at, &j) in order.iter().enumerate() {
        boxes = boxes
            .into_iter()
            .flat_map(|b| {
                repeats[j].iter().map(move |&(c, o)| {
                    let mut coords = b.coords.clone();
                    coords[at] = c;
                    TmaPiece {
                        coords,
                        smem: b.smem + o,
                    }
                })
            })
            .collect();
    }
    if let Some(b) = boxes.iter().find(|b| b.smem % align != 0) {
        return Err(format!(
            "a box would land at element {} of the tile, not a multiple of {align} elements ({} bytes), where TMA's boxes start",
            b.smem,
            align * elem.bytes()
        ));
    }
    Ok(TmaCopy {
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
            store: false,
        },
        origin: order.iter().map(|&j| coords[j].1.clone()).collect(),
        boxes,
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

    /// A prefetch cuts the tile into the largest boxes that tile it, rows
    /// of whole 16 bytes: 128 x 256 of an M-major bf16 tensor is one box,
    /// 264 x 300 six of 88 x 150 (132 rows would be 264 bytes), and every
    /// box's origin is the tile's moved by whole boxes.
    #[test]
    fn a_prefetch_is_the_largest_boxes_of_whole_16_byte_rows() {
        let (m, n) = (Int::var("M"), Int::var("N"));
        let tensor = l(&[m.clone(), n], &[c(1), m]);
        let tile = |rows: i64, cols: i64| {
            let coords = [
                (l(&[c(rows), c(cols)], &[c(1), c(0)]), Int::var("m0")),
                (l(&[c(rows), c(cols)], &[c(0), c(1)]), Int::var("n0")),
            ];
            let t = l(&[c(rows), c(cols)], &[c(1), c(rows)]);
            tma_prefetch(0, Elem::Bf16, &tensor, &coords, &t).expect("boxes")
        };
        let one = tile(128, 256);
        let sizes = |p: &TmaCopy| p.map.dims.iter().map(|d| d.size).collect::<Vec<_>>();
        assert_eq!(
            (sizes(&one), one.boxes.len(), one.map.swizzle_bytes),
            (vec![128, 256], 1, 0)
        );
        let six = tile(264, 300);
        assert_eq!(sizes(&six), [88, 150]);
        let mut at: Vec<Vec<i64>> = six.boxes.iter().map(|b| b.coords.clone()).collect();
        at.sort();
        assert_eq!(
            at,
            [[0, 0], [0, 150], [88, 0], [88, 150], [176, 0], [176, 150]]
        );
        assert!(six.boxes.iter().all(|b| b.smem % 64 == 0));
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
        let b =
            tma_copy(0, Elem::Bf16, &tensor, &coords, &smem, &c(8192), Some(sw)).expect("a box");
        assert_eq!(b.map.dims[0].size, 64);
        assert_eq!(b.map.dims[0].extent, Int::var("K"));
        assert_eq!(b.map.dims[1].size, 128);
        assert_eq!(b.map.dims[1].stride, Int::var("K"));
        assert_eq!(b.map.swizzle_bytes, 128);
        assert_eq!(b.map.box_bytes(), 16384);
        assert_eq!(b.origin, vec![Int::var("k0"), Int::var("m0")]);
        assert_eq!(
            b.boxes,
            vec![TmaPiece {
                coords: vec![0, 0],
                smem: 0
            }]
        );
        // Not at a swizzle repeat: refused.
        let e = tma_copy(0, Elem::Bf16, &tensor, &coords, &smem, &c(64), Some(sw)).unwrap_err();
        assert!(e.contains("multiple of 512 elements"), "{e}");
        // Under a 64-byte swizzle a box's rows are 32 elements: 128-byte
        // rows in shared memory are no such boxes.
        let sw64 = Swizzle::new(2, 3, 3).unwrap();
        let e = tma_copy(0, Elem::Bf16, &tensor, &coords, &smem, &c(0), Some(sw64)).unwrap_err();
        assert!(e.contains("it would start 128:32"), "{e}");
    }

    #[test]
    fn the_destination_must_be_the_dense_box() {
        let (tensor, coords) = k_major(64);
        let rows = l(&[c(64), c(64)], &[c(64), c(1)]);
        assert!(tma_copy(0, Elem::F16, &tensor, &coords, &rows, &c(0), None).is_ok());
        let transposed = l(&[c(64), c(64)], &[c(1), c(64)]);
        let e = tma_copy(0, Elem::F16, &tensor, &coords, &transposed, &c(0), None).unwrap_err();
        assert!(e.contains("densely"), "{e}");
    }

    /// An MN-major tile taller than the swizzle's span (128 rows of the
    /// 128-byte atom) and k-tiles wider than a box are several boxes.
    #[test]
    fn a_tile_wider_than_a_box_is_several() {
        let (m, k) = (Int::var("M"), Int::var("K"));
        let tensor = l(&[m.clone(), k], &[c(1), m]);
        let coords = [
            (l(&[c(128), c(32)], &[c(1), c(0)]), Int::var("m0")),
            (l(&[c(128), c(32)], &[c(0), c(1)]), Int::var("k0")),
        ];
        // Sw<3,3,3> o (64,8):(1,64) tiled to (128, 32): ((64,2),(8,4)):((1,4096),(64,512)).
        let smem = Layout::new(
            IntTuple::Tuple(vec![t(&[c(64), c(2)]), t(&[c(8), c(4)])]),
            IntTuple::Tuple(vec![t(&[c(1), c(4096)]), t(&[c(64), c(512)])]),
        )
        .unwrap();
        let sw = Swizzle::new(3, 3, 3).unwrap();
        let b = tma_copy(0, Elem::Bf16, &tensor, &coords, &smem, &c(0), Some(sw)).expect("boxes");
        assert_eq!(
            b.map.dims.iter().map(|d| d.size).collect::<Vec<_>>(),
            vec![64, 32]
        );
        assert_eq!(
            b.boxes,
            vec![
                TmaPiece {
                    coords: vec![0, 0],
                    smem: 0
                },
                TmaPiece {
                    coords: vec![64, 0],
                    smem: 4096
                },
            ]
        );
        assert_eq!(b.bytes(), 8192);
    }
}
