//! Aligned copies: which tensors the runtime copies into rows of a
//! 128-byte pitch before a launch, where that makes better entries usable
//! than the caller's buffers do. In: the manifest, the run-time integers
//! on the caller's buffers, the entries usable there. Out: the integers
//! rebound to the copies, and the copies.

use super::{Staging, bound, usable};
use crate::manifest::Manifest;

/// Where binding some stride symbols to aligned copies of their tensors
/// ([`crate::staging::whole`]) makes better variants usable than the
/// caller's buffers (`declared`) do (the list of usable ones earlier in
/// preference order): the run-time integers so bound, and the copies,
/// those alone the better list needs. `best`: the entries usable at
/// `declared`.
pub(super) fn copies(
    m: &Manifest,
    declared: &[i64],
    best: &[usize],
) -> Option<(Vec<i64>, Vec<Staging>)> {
    let at_declared = bound(m, declared);
    let env = |n: &str| at_declared.get(n).copied();
    // Not a tensor a map reads: its maps take the declared strides.
    let mapped = |p: &usize| {
        m.variants
            .iter()
            .any(|v| v.tensor_maps.iter().any(|t| t.param == *p))
    };
    let mut params: Vec<usize> = m.strides.iter().map(|s| s.param).collect();
    params.dedup();
    params.retain(|p| !mapped(p));
    let candidates: Vec<(Staging, Vec<(usize, i64)>)> = params
        .into_iter()
        .filter_map(|p| crate::staging::whole(m, p, &env))
        .collect();
    let first = m.extents.len();
    let rebound = |chosen: &[&(Staging, Vec<(usize, i64)>)]| {
        let mut v = declared.to_vec();
        for (i, x) in chosen.iter().flat_map(|c| &c.1) {
            v[first + i] = *x;
        }
        v
    };
    let mut chosen: Vec<&(Staging, Vec<(usize, i64)>)> = candidates.iter().collect();
    let all = usable(m, &bound(m, &rebound(&chosen)));
    // An empty list is the worst: no variant runs.
    if all.is_empty() || (!best.is_empty() && all.as_slice() >= best) {
        return None;
    }
    // Leave out each copy the list does not need.
    let mut i = 0;
    while i < chosen.len() {
        let mut without = chosen.clone();
        without.remove(i);
        if usable(m, &bound(m, &rebound(&without))) == all {
            chosen = without;
        } else {
            i += 1;
        }
    }
    let values = rebound(&chosen);
    Some((values, chosen.into_iter().map(|c| c.0.clone()).collect()))
}
