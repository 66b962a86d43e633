//! Complement and inverses.
//!
//! In: a layout (and, for the complement, a cotarget shape). Out:
//! - `complement(A, M)`: the layout of the offsets below `M` that `A` misses,
//!   ordered, disjoint from `A`'s image (C++ CuTe's `complement`); an error,
//!   never a size-0 mode, when `A` is not injective;
//! - `right_inverse(A)`: `R` with `A(R(i)) = i` on the largest contiguous
//!   prefix, skipping stride-0 and dynamic-stride modes;
//! - `left_inverse(A)`: `L` with `L(A(i)) = i`, in CuTe's exact form.

use crate::condition::{Conditions, Fact};
use crate::error::{AlgebraError, Result};
use crate::int::Int;
use crate::layout::Layout;
use crate::tuple::IntTuple;
use std::collections::HashMap;

/// Offsets are checked point by point up to this many.
const ENUMERATION_LIMIT: i64 = 1 << 20;

/// `complement(a, cotarget)`.
pub fn complement(a: &Layout, cotarget: &IntTuple, conds: &mut Conditions) -> Result<Layout> {
    check_injective("complement", a)?;
    let f = a.filter();
    let (shape, stride) = (f.shape().leaves(), f.stride().leaves());
    if stride.len() == 1 && stride[0].is_const(0) {
        // Irreducible rank-1 stride-0 layout: everything below the cotarget.
        return Ok(Layout::col_major(&coalesce_shape(cotarget)));
    }
    if let Some(d) = stride.iter().find(|d| d.as_static().is_some_and(|v| v < 0)) {
        return Err(AlgebraError::Invalid {
            op: "complement",
            why: format!("{a} has the negative stride {d}; complement needs positive strides"),
        });
    }
    if stride.len() > 1
        && let Some(d) = stride.iter().find(|d| !d.is_static())
    {
        return Err(AlgebraError::NeedsStatic {
            op: "complement",
            layout: a.clone(),
            stride: d.clone(),
        });
    }

    let mut modes: Vec<(Int, Int)> = shape.into_iter().zip(stride).collect();
    let mut result_shape = Vec::new();
    let mut result_stride = vec![Int::Static(1)];
    while !modes.is_empty() {
        let k = min_stride_index(&modes);
        let (s, d) = modes.remove(k);
        let covered = result_stride.last().expect("starts non-empty").clone();
        let new_shape = d.div(&covered);
        if new_shape.is_const(0) {
            return Err(AlgebraError::ComplementGap {
                layout: a.clone(),
                stride: d,
                covered,
            });
        }
        if !new_shape.is_static() {
            let gap = AlgebraError::ComplementGap {
                layout: a.clone(),
                stride: d.clone(),
                covered: covered.clone(),
            };
            conds.require(Fact::divides(&covered, &d), "complement", || gap)?;
        }
        result_shape.push(new_shape);
        if modes.is_empty() {
            // The rest covers the cotarget beyond the last mode.
            let new_stride = d.mul(&s);
            let rest_shape = coalesce_shape(
                &cotarget
                    .ceil_div(&IntTuple::Int(new_stride.clone()))
                    .ok_or_else(|| AlgebraError::Invalid {
                        op: "complement",
                        why: format!("cotarget {cotarget} is not a shape"),
                    })?,
            );
            let rest_stride = rest_shape.compact_col_major(&new_stride);
            let shapes = IntTuple::Tuple(vec![int_tuple(result_shape), rest_shape]);
            let strides = IntTuple::Tuple(vec![int_tuple(result_stride), rest_stride]);
            let r = Layout::new(shapes, strides)?.coalesce();
            check_complement(a, &r)?;
            return Ok(r);
        }
        result_stride.push(d.mul(&s));
    }
    unreachable!("filter leaves at least one mode")
}

/// `complement(a)`: the cotarget is the cosize of `filter(a)`.
pub fn complement_full(a: &Layout, conds: &mut Conditions) -> Result<Layout> {
    complement(a, &IntTuple::Int(a.filter().cosize()), conds)
}

/// The first index of the smallest stride (CuTe's `find(stride, min(stride))`).
fn min_stride_index(modes: &[(Int, Int)]) -> usize {
    let mut k = 0;
    for (i, (_, d)) in modes.iter().enumerate() {
        if d.known_lt(&modes[k].1) == Some(true) {
            k = i;
        }
    }
    k
}

fn int_tuple(v: Vec<Int>) -> IntTuple {
    IntTuple::Tuple(v.into_iter().map(IntTuple::Int).collect())
}

/// CuTe's `coalesce(shape)`: neighbouring static leaves multiply, as do
/// neighbouring dynamic ones; a single group stays an integer.
pub fn coalesce_shape(shape: &IntTuple) -> IntTuple {
    let mut groups: Vec<Int> = Vec::new();
    for leaf in shape.leaves() {
        match groups.last_mut() {
            Some(last) if last.is_static() == leaf.is_static() => *last = last.mul(&leaf),
            _ => groups.push(leaf),
        }
    }
    match groups.len() {
        0 => IntTuple::from(1),
        1 => IntTuple::Int(groups.remove(0)),
        _ => int_tuple(groups),
    }
}

/// Two points of `a` with one offset make its complement and its left
/// inverse meaningless (no `l` has `l(a(i)) = i` for both).
fn check_injective(op: &'static str, a: &Layout) -> Result<()> {
    let f = a.filter();
    let (Some(n), Some(sf)) = (
        f.size().as_static().filter(|&n| n <= ENUMERATION_LIMIT),
        f.to_static(),
    ) else {
        return Ok(());
    };
    let mut seen = HashMap::new();
    for (i, off) in (0..n).zip(sf.offsets()) {
        let off = off.unwrap_or(i64::MIN);
        if seen.insert(off, i).is_some() {
            return Err(AlgebraError::NotInjective {
                op,
                layout: a.clone(),
                offset: off,
            });
        }
    }
    Ok(())
}

/// CuTe's post-condition: the complement is ordered and, past its origin,
/// never hits an offset of `a`.
fn check_complement(a: &Layout, r: &Layout) -> Result<()> {
    let (Some(n), Some(m), Some(sa), Some(sr)) = (
        a.size().as_static(),
        r.size().as_static(),
        a.to_static(),
        r.to_static(),
    ) else {
        return Ok(());
    };
    if n > ENUMERATION_LIMIT || m > ENUMERATION_LIMIT {
        return Ok(());
    }
    let image: std::collections::HashSet<i64> =
        (0..n).zip(sa.offsets()).filter_map(|(_, o)| o).collect();
    let mut prev = None;
    for (i, off) in (0..m).zip(sr.offsets()) {
        let off = off.unwrap_or(i64::MIN);
        if i > 0 && (image.contains(&off) || prev.is_some_and(|p| off <= p)) {
            return Err(AlgebraError::Invalid {
                op: "complement",
                why: format!(
                    "CuTe's result {r} for {a} is not an ordered complement: its offset {off} at {i} overlaps"
                ),
            });
        }
        prev = Some(off);
    }
    Ok(())
}

/// Exchange sort by static stride, as CuTe's `SortByKey` orders modes (ties
/// keep CuTe's order exactly).
fn sorted_by_stride(strides: &[i64], indices: Vec<usize>) -> Vec<usize> {
    let mut kv: Vec<(i64, usize)> = indices.into_iter().map(|i| (strides[i], i)).collect();
    for i in 0..kv.len() {
        for j in i + 1..kv.len() {
            if kv[j].0 < kv[i].0 {
                kv.swap(i, j);
            }
        }
    }
    kv.into_iter().map(|(_, i)| i).collect()
}

/// Coalesced modes with their exclusive prefix products.
fn coalesced_modes(a: &Layout) -> (Vec<Int>, Vec<Int>, Vec<Int>) {
    let c = a.coalesce();
    let shape = c.shape().leaves();
    let stride = c.stride().leaves();
    let mut preprod = vec![Int::Static(1)];
    for s in &shape {
        let next = preprod.last().expect("non-empty").mul(s);
        preprod.push(next);
    }
    (shape, stride, preprod)
}

/// `right_inverse(a)`: `a(r(i)) = i` for `i < size(r)`.
pub fn right_inverse(a: &Layout) -> Layout {
    let (shape, stride, preprod) = coalesced_modes(a);
    let statics: Vec<i64> = stride.iter().map(|d| d.as_static().unwrap_or(0)).collect();
    let keep = (0..stride.len())
        .filter(|&i| stride[i].is_static())
        .collect();
    let mut rs = vec![Int::Static(1)];
    let mut rd = vec![Int::Static(0)];
    let mut curr = Int::Static(1);
    for i in sorted_by_stride(&statics, keep) {
        if curr.is_static() && stride[i] == curr {
            rs.push(shape[i].clone());
            rd.push(preprod[i].clone());
            curr = shape[i].mul(&stride[i]);
        }
    }
    Layout::raw(int_tuple(rs), int_tuple(rd)).coalesce()
}

/// `left_inverse(a)`: `l(a(i)) = i` for `i < size(a)` when `a` is injective.
pub fn left_inverse(a: &Layout) -> Result<Layout> {
    let r = left_inverse_form(a)?;
    check_quasi_inverse(a, &r)?;
    Ok(r)
}

/// CuTe's post-condition of a left inverse `r` of `a`, quasi where `a` is
/// not one to one: `a(r(a(i))) == a(i)` for every `i` (for an injective
/// `a`, `r(a(i)) == i`).
fn check_quasi_inverse(a: &Layout, r: &Layout) -> Result<()> {
    let (Some(n), Some(sa), Some(sr)) = (
        a.size().as_static().filter(|&n| n <= ENUMERATION_LIMIT),
        a.to_static(),
        r.to_static(),
    ) else {
        return Ok(());
    };
    let offsets: Vec<Option<i64>> = sa.offsets().take(n as usize).collect();
    for off in offsets.iter().flatten() {
        let back = sr.at(*off).and_then(|i| sa.at(i));
        if back != Some(*off) {
            return Err(AlgebraError::Invalid {
                op: "left_inverse",
                why: format!(
                    "CuTe's result {r} is no left inverse of {a}: it takes offset {off} to a coordinate {a} does not map back to {off}"
                ),
            });
        }
    }
    Ok(())
}

/// CuTe's form of the left inverse, before its post-condition.
fn left_inverse_form(a: &Layout) -> Result<Layout> {
    let (shape, stride, preprod) = coalesced_modes(a);
    let mut statics = Vec::with_capacity(stride.len());
    for d in &stride {
        match d.as_static() {
            Some(v) => statics.push(v),
            None => {
                return Err(AlgebraError::NeedsStatic {
                    op: "left_inverse",
                    layout: a.clone(),
                    stride: d.clone(),
                });
            }
        }
    }
    let order = sorted_by_stride(&statics, (0..stride.len()).collect());
    let mut rs: Vec<Int> = Vec::new();
    let mut rd = vec![Int::Static(0)];
    for &i in &order {
        if statics[i] == 0 {
            continue;
        }
        let covered = rs.iter().fold(Int::Static(1), |acc, s| acc.mul(s));
        if stride[i].rem(&covered).as_static() != Some(0) {
            return Err(AlgebraError::LeftInverseDivisibility {
                layout: a.clone(),
                stride: stride[i].clone(),
                covered,
            });
        }
        rs.push(stride[i].div(&covered));
        rd.push(preprod[i].clone());
    }
    let last = *order.last().expect("at least one mode");
    rs.push(shape[last].clone());
    Ok(Layout::raw(int_tuple(rs), int_tuple(rd)).coalesce())
}
