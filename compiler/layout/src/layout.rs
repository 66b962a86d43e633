//! Layouts `shape:stride`: functions from coordinates to offsets.
//!
//! In: a shape and a stride with the same tree profile. Out: evaluation
//! (1-D index, per-mode and natural coordinates, slicing with `_`), the
//! measures (size, cosize, rank, depth), mode access and concatenation, and
//! the simplifications coalesce and filter, as CuTe's `layout.hpp` defines
//! them.

use crate::error::{AlgebraError, Result};
use crate::int::Int;
use crate::tuple::{IntTuple, write_list};
use std::fmt;

/// A function from coordinates to offsets; `shape` and `stride` are congruent
/// (also when read back from a file: deserializing checks it).
#[derive(Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "LayoutParts")]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

/// A layout as stored, before its congruence is checked.
#[derive(serde::Deserialize)]
struct LayoutParts {
    shape: IntTuple,
    stride: IntTuple,
}

impl TryFrom<LayoutParts> for Layout {
    type Error = AlgebraError;
    fn try_from(p: LayoutParts) -> Result<Layout> {
        Layout::new(p.shape, p.stride)
    }
}

/// A coordinate: an integer (unravelled colexicographically within its
/// mode), `_` (keep the whole mode, for slicing), or a tuple of coordinates.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Coord {
    Int(Int),
    Under,
    Tuple(Vec<Coord>),
}

impl Coord {
    pub fn has_underscore(&self) -> bool {
        match self {
            Coord::Int(_) => false,
            Coord::Under => true,
            Coord::Tuple(v) => v.iter().any(Coord::has_underscore),
        }
    }
}

impl From<i64> for Coord {
    fn from(v: i64) -> Self {
        Coord::Int(Int::Static(v))
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coord::Int(i) => write!(f, "{i}"),
            Coord::Under => write!(f, "_"),
            Coord::Tuple(v) => write_list(f, "(", v, ")"),
        }
    }
}

impl Layout {
    /// `shape:stride`; an error unless the two have the same profile.
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<Layout> {
        if !shape.congruent(&stride) {
            return Err(AlgebraError::NotCongruent { shape, stride });
        }
        Ok(Layout { shape, stride })
    }

    /// For callers that built `shape` and `stride` by the same recursion.
    pub(crate) fn raw(shape: IntTuple, stride: IntTuple) -> Layout {
        debug_assert!(shape.congruent(&stride), "{shape} vs {stride}");
        Layout { shape, stride }
    }

    /// The compact column-major layout of `shape` (CuTe's `make_layout(shape)`):
    /// first mode fastest; static size-1 modes get stride 0.
    pub fn col_major(shape: &IntTuple) -> Layout {
        Layout::raw(shape.clone(), shape.compact_col_major(&Int::Static(1)))
    }

    /// The compact row-major layout of `shape` (CuTe's `LayoutRight`).
    pub fn row_major(shape: &IntTuple) -> Layout {
        Layout::raw(shape.clone(), shape.compact_row_major(&Int::Static(1)))
    }

    /// The rank-1 layout `n:d`.
    pub fn int(n: Int, d: Int) -> Layout {
        Layout::raw(IntTuple::Int(n), IntTuple::Int(d))
    }

    /// `1:0`, the identity of concatenation padding.
    pub fn unit() -> Layout {
        Layout::int(Int::Static(1), Int::Static(0))
    }

    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    pub fn size(&self) -> Int {
        self.shape.product()
    }

    /// One past the largest offset: `1 + sum((s-1)*|d|)` over the leaves.
    pub fn cosize(&self) -> Int {
        let s = self.shape.leaves();
        let d = self.stride.leaves();
        s.iter().zip(&d).fold(Int::Static(1), |acc, (s, d)| {
            acc.add(&s.sub(&Int::Static(1)).mul(&d.abs()))
        })
    }

    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    pub fn is_static(&self) -> bool {
        self.shape.is_static() && self.stride.is_static()
    }

    /// Mode `i` as a layout (CuTe's `layout<i>` / `get<i>`).
    pub fn mode(&self, i: usize) -> Result<Layout> {
        match (self.shape.get(i), self.stride.get(i)) {
            (Some(s), Some(d)) => Ok(Layout::raw(s.clone(), d.clone())),
            _ => Err(AlgebraError::NoSuchMode {
                rank: self.rank(),
                index: i,
            }),
        }
    }

    /// The modes as layouts; an integral layout is its own single mode.
    pub fn modes(&self) -> Vec<Layout> {
        self.shape
            .modes()
            .into_iter()
            .zip(self.stride.modes())
            .map(|(s, d)| Layout::raw(s, d))
            .collect()
    }

    /// Concatenation of modes (CuTe's `make_layout(l0, l1, ...)`): always a
    /// tuple, so a single layout becomes a rank-1 tuple layout.
    pub fn concat(parts: &[Layout]) -> Layout {
        Layout::raw(
            IntTuple::Tuple(parts.iter().map(|l| l.shape.clone()).collect()),
            IntTuple::Tuple(parts.iter().map(|l| l.stride.clone()).collect()),
        )
    }

    /// Pads with `1:0` modes up to rank `n` (CuTe's `append<N>(layout)`).
    pub fn append_to_rank(&self, n: usize) -> Layout {
        if n <= self.rank() && (self.shape.is_tuple() || n == 1) {
            return self.clone();
        }
        let mut modes = self.modes();
        modes.resize(n, Layout::unit());
        Layout::concat(&modes)
    }

    /// Depth at most 1.
    pub fn flatten(&self) -> Layout {
        Layout::raw(self.shape.flatten(), self.stride.flatten())
    }

    /// The offset of a coordinate (CuTe's `crd2idx`). An integer coordinate
    /// unravels colexicographically; past the end it runs on along the last mode.
    pub fn eval(&self, coord: &Coord) -> Result<Int> {
        crd2idx(coord, &self.shape, &self.stride)
    }

    /// The offset of a 1-D index.
    pub fn at(&self, index: i64) -> Result<Int> {
        self.eval(&Coord::from(index))
    }

    /// The offset of a 1-D index of a static layout.
    pub fn at_static(&self, index: i64) -> Option<i64> {
        self.at(index).ok()?.as_static()
    }

    /// The layout in plain integers, when it is static: the same function
    /// as [`Layout::at`], for the post-conditions that evaluate every point.
    pub fn to_static(&self) -> Option<StaticLayout> {
        let mut leaves = Vec::new();
        static_leaves(&self.shape, &self.stride, &mut leaves)?;
        Some(StaticLayout(leaves))
    }

    /// The natural coordinate of a 1-D index (CuTe's `idx2crd`).
    pub fn idx2crd(&self, index: &Int) -> Coord {
        idx2crd(index, &self.shape)
    }

    /// Keeps the modes where `coord` has `_` (CuTe's `slice`); the offset of
    /// the fixed part is [`Layout::slice_offset`].
    pub fn slice(&self, coord: &Coord) -> Result<Layout> {
        let shape = slice_tuple(coord, &self.shape)?;
        let stride = slice_tuple(coord, &self.stride)?;
        Ok(Layout::raw(shape, stride))
    }

    /// The offset contributed by the fixed coordinates of a slice.
    pub fn slice_offset(&self, coord: &Coord) -> Result<Int> {
        self.eval(&underscores_to_zero(coord))
    }

    /// Replaces shapes by 1 where the stride is a static 0 (CuTe's `filter_zeros`).
    pub fn filter_zeros(&self) -> Layout {
        let leaves: Vec<Int> = self
            .shape
            .leaves()
            .into_iter()
            .zip(self.stride.leaves())
            .map(|(s, d)| if d.is_const(0) { Int::Static(1) } else { s })
            .collect();
        Layout::raw(
            self.shape.unflatten_like(&mut leaves.into_iter()),
            self.stride.clone(),
        )
    }

    /// Removes stride-0 and size-1 modes, then coalesces (CuTe's `filter`).
    pub fn filter(&self) -> Layout {
        self.filter_zeros().coalesce()
    }

    /// The same function on `[0, size)` with the fewest modes, depth <= 1
    /// (CuTe's `coalesce`).
    pub fn coalesce(&self) -> Layout {
        let (s, d) = self.flat_leaves();
        let last = s.len() - 1;
        bw_coalesce(&s, &d, s[last].clone(), d[last].clone())
    }

    /// Coalesce that also keeps the function outside `[0, size)`: a trailing
    /// size-1 mode keeps its stride for the indices past the end
    /// (CuTe's `detail::coalesce_x`).
    pub(crate) fn coalesce_x(&self) -> Layout {
        let (s, d) = self.flat_leaves();
        let last = s.len() - 1;
        let front = if s[last].is_const(1) {
            Int::Static(2)
        } else {
            s[last].clone()
        };
        bw_coalesce(&s, &d, front, d[last].clone())
    }

    /// Coalesce each mode that `profile` reaches; a profile integer means
    /// "coalesce this whole subtree" (CuTe's `coalesce(layout, profile)`).
    pub fn coalesce_by(&self, profile: &IntTuple) -> Result<Layout> {
        self.by_profile(profile, "coalesce", &Layout::coalesce)
    }

    /// Filter each mode that `profile` reaches.
    pub fn filter_by(&self, profile: &IntTuple) -> Result<Layout> {
        self.by_profile(profile, "filter", &Layout::filter)
    }

    fn by_profile(
        &self,
        profile: &IntTuple,
        op: &'static str,
        f: &dyn Fn(&Layout) -> Layout,
    ) -> Result<Layout> {
        match profile {
            IntTuple::Int(_) => Ok(f(self)),
            IntTuple::Tuple(p) => {
                if p.len() > self.rank() {
                    return Err(AlgebraError::TooManyModes {
                        op,
                        what: "profile",
                        layout: self.clone(),
                        tiler: p.len(),
                        modes: self.rank(),
                    });
                }
                let modes = self.modes();
                let mut out = Vec::with_capacity(modes.len());
                for (i, m) in modes.iter().enumerate() {
                    out.push(match p.get(i) {
                        Some(pi) => m.by_profile(pi, op, f)?,
                        None => m.clone(),
                    });
                }
                Ok(Layout::concat(&out))
            }
        }
    }

    /// Flat leaves of shape and stride; an empty shape acts as `1:0`.
    fn flat_leaves(&self) -> (Vec<Int>, Vec<Int>) {
        let s = self.shape.leaves();
        if s.is_empty() {
            return (vec![Int::Static(1)], vec![Int::Static(0)]);
        }
        (s, self.stride.leaves())
    }
}

/// CuTe's `bw_coalesce`: walk the flat modes from the back, merging a mode
/// into the front of the result when it ends where the front begins.
fn bw_coalesce(s: &[Int], d: &[Int], front_s: Int, front_d: Int) -> Layout {
    let mut shapes = vec![front_s];
    let mut strides = vec![front_d];
    for i in (0..s.len() - 1).rev() {
        if s[i].is_const(1) {
            continue;
        }
        if shapes[0].is_const(1) {
            shapes[0] = s[i].clone();
            strides[0] = d[i].clone();
        } else if s[i].mul(&d[i]) == strides[0] {
            shapes[0] = s[i].mul(&shapes[0]);
            strides[0] = d[i].clone();
        } else {
            shapes.insert(0, s[i].clone());
            strides.insert(0, d[i].clone());
        }
    }
    if shapes.len() == 1 {
        if shapes[0].is_const(1) {
            return Layout::unit();
        }
        return Layout::int(shapes.remove(0), strides.remove(0));
    }
    Layout::raw(
        IntTuple::Tuple(shapes.into_iter().map(IntTuple::Int).collect()),
        IntTuple::Tuple(strides.into_iter().map(IntTuple::Int).collect()),
    )
}

/// CuTe's `crd2idx(coord, shape, stride)`.
/// A static layout as plain integers ([`Layout::to_static`]): its leaves
/// in colexicographic order, each with its extent and stride. Nesting does
/// not change a 1-D index's offset (each mode's remainder is taken by its
/// own leaves in the same order), so the leaves are all it needs.
#[derive(Clone, Debug)]
pub struct StaticLayout(Vec<(i64, i64)>);

fn static_leaves(shape: &IntTuple, stride: &IntTuple, out: &mut Vec<(i64, i64)>) -> Option<()> {
    match (shape, stride) {
        (IntTuple::Int(s), IntTuple::Int(d)) => out.push((s.as_static()?, d.as_static()?)),
        (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
            for (s, d) in ss.iter().zip(ds) {
                static_leaves(s, d, out)?;
            }
        }
        _ => return None,
    }
    Some(())
}

impl StaticLayout {
    /// The offset of a 1-D index, as [`crd2idx`] computes it: every leaf
    /// but the last takes its remainder (C's truncating `%`), the last the
    /// rest; `None` where the offset does not fit an `i64` (the sum is
    /// taken in `i128`, so a partial sum may exceed it).
    pub fn at(&self, index: i64) -> Option<i64> {
        // 64-bit arithmetic unless a partial sum overflows (it is the hot
        // path of every post-condition check; 128-bit division is slow).
        self.at_narrow(index)
            .or_else(|| i64::try_from(self.at_wide(index)?).ok())
    }

    fn at_narrow(&self, index: i64) -> Option<i64> {
        let Some(((_, last), init)) = self.0.split_last() else {
            return Some(0);
        };
        let mut rest = index;
        let mut idx = 0i64;
        for &(extent, stride) in init {
            let r = rest.checked_rem(extent)?;
            rest = rest.checked_div(extent)?;
            idx = idx.checked_add(r.checked_mul(stride)?)?;
        }
        idx.checked_add(rest.checked_mul(*last)?)
    }

    fn at_wide(&self, index: i64) -> Option<i128> {
        let Some(((_, last), init)) = self.0.split_last() else {
            return Some(0);
        };
        let mut rest = index as i128;
        let mut idx = 0i128;
        for &(extent, stride) in init {
            let r = rest.checked_rem(extent as i128)?;
            rest = rest.checked_div(extent as i128)?;
            idx = idx.checked_add(r.checked_mul(stride as i128)?)?;
        }
        idx.checked_add(rest.checked_mul(*last as i128)?)
    }

    /// The least and the greatest offset of the domain `0..size` (a leaf
    /// of extent 0 gives no offsets: then `None`), or `None` on overflow.
    pub fn range(&self) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (0i64, 0i64);
        for &(extent, stride) in &self.0 {
            let far = extent.checked_sub(1)?.checked_mul(stride)?;
            if extent < 1 {
                return None;
            }
            lo = lo.checked_add(far.min(0))?;
            hi = hi.checked_add(far.max(0))?;
        }
        Some((lo, hi))
    }

    /// The offsets of indices `0, 1, ...` in order: [`StaticLayout::at`] of
    /// each, stepped like an odometer (no division), for checks that
    /// enumerate a whole layout. A step that overflows 64 bits falls back
    /// to `at`, so the two always agree.
    pub fn offsets(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        let mut digits = vec![0i64; self.0.len()];
        let (mut index, mut offset) = (0i64, Some(0i64));
        std::iter::from_fn(move || {
            let here = offset;
            index += 1;
            // Carry through the leaves that wrap; the last never wraps.
            let mut step = Some(0i64);
            for (i, &(extent, stride)) in self.0.iter().enumerate() {
                if i + 1 == self.0.len() || digits[i] + 1 < extent {
                    digits[i] += 1;
                    step = step.and_then(|s| s.checked_add(stride));
                    break;
                }
                step = step.and_then(|s| s.checked_sub((extent - 1).checked_mul(stride)?));
                digits[i] = 0;
            }
            offset = match (here, step) {
                (Some(o), Some(s)) => o.checked_add(s).or_else(|| self.at(index)),
                _ => self.at(index),
            };
            Some(here)
        })
    }
}

pub fn crd2idx(coord: &Coord, shape: &IntTuple, stride: &IntTuple) -> Result<Int> {
    let bad = |why| AlgebraError::BadCoordinate {
        coord: coord.to_string(),
        shape: shape.clone(),
        why,
    };
    match (coord, shape, stride) {
        (Coord::Under, _, _) => Err(bad("`_` selects a slice; it has no single offset")),
        (Coord::Int(c), IntTuple::Int(_), IntTuple::Int(d)) => Ok(c.mul(d)),
        (Coord::Int(c), IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
            let n = ss.len();
            let mut rest = c.clone();
            let mut idx = Int::Static(0);
            for i in 0..n {
                let here = if i + 1 == n {
                    rest.clone()
                } else {
                    let extent = ss[i].product();
                    let r = rest.rem(&extent);
                    rest = rest.div(&extent);
                    r
                };
                idx = idx.add(&crd2idx(&Coord::Int(here), &ss[i], &ds[i])?);
            }
            Ok(idx)
        }
        (Coord::Tuple(cs), IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => {
            if cs.len() != ss.len() {
                return Err(bad("the coordinate and the shape have different ranks"));
            }
            let mut idx = Int::Static(0);
            for ((c, s), d) in cs.iter().zip(ss).zip(ds) {
                idx = idx.add(&crd2idx(c, s, d)?);
            }
            Ok(idx)
        }
        (Coord::Tuple(cs), IntTuple::Int(_), _) if cs.len() == 1 => crd2idx(&cs[0], shape, stride),
        (Coord::Tuple(_), IntTuple::Int(_), _) => {
            Err(bad("the coordinate is deeper than the shape"))
        }
        _ => Err(bad("shape and stride differ in profile")),
    }
}

/// CuTe's `idx2crd(index, shape)`: the natural coordinate, congruent with
/// `shape`; the last mode takes whatever is left.
pub fn idx2crd(index: &Int, shape: &IntTuple) -> Coord {
    match shape {
        IntTuple::Int(_) => Coord::Int(index.clone()),
        IntTuple::Tuple(ss) => {
            let mut rest = index.clone();
            let n = ss.len();
            let mut out = Vec::with_capacity(n);
            for (i, s) in ss.iter().enumerate() {
                if i + 1 == n {
                    out.push(idx2crd(&rest, s));
                } else {
                    let extent = s.product();
                    out.push(idx2crd(&rest.rem(&extent), s));
                    rest = rest.div(&extent);
                }
            }
            Coord::Tuple(out)
        }
    }
}

/// CuTe's `slice(coord, tuple)`: the parts of `t` opposite `_`. Inside a
/// tuple coordinate the kept parts of nested tuples are spliced into their
/// parent, so `(_,(_,_))` on `((A,B),(a,b))` gives `((A,B),a,b)`.
fn slice_tuple(coord: &Coord, t: &IntTuple) -> Result<IntTuple> {
    match coord {
        Coord::Under => Ok(t.clone()),
        Coord::Int(_) => Ok(IntTuple::Tuple(vec![])),
        Coord::Tuple(_) => Ok(IntTuple::Tuple(lift_slice(coord, t)?)),
    }
}

fn lift_slice(coord: &Coord, t: &IntTuple) -> Result<Vec<IntTuple>> {
    match (coord, t) {
        (Coord::Under, _) => Ok(vec![t.clone()]),
        (Coord::Int(_), _) => Ok(vec![]),
        (Coord::Tuple(cs), IntTuple::Tuple(ts)) if cs.len() == ts.len() => {
            let mut out = Vec::new();
            for (c, ti) in cs.iter().zip(ts) {
                out.extend(lift_slice(c, ti)?);
            }
            Ok(out)
        }
        (Coord::Tuple(cs), IntTuple::Tuple(ts)) => Err(AlgebraError::SliceModes {
            coord: coord.to_string(),
            shape: t.clone(),
            given: cs.len(),
            modes: ts.len(),
        }),
        _ => Err(AlgebraError::BadCoordinate {
            coord: coord.to_string(),
            shape: t.clone(),
            why: "a slice needs one coordinate per mode",
        }),
    }
}

fn underscores_to_zero(c: &Coord) -> Coord {
    match c {
        Coord::Under => Coord::from(0),
        Coord::Int(_) => c.clone(),
        Coord::Tuple(v) => Coord::Tuple(v.iter().map(underscores_to_zero).collect()),
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape, self.stride)
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
