//! Whether a written tensor's layout puts two of its elements in one place
//! at the launch's extents (two writers of one element race). In: the
//! layout and the extents' values. Out: one to one, a witness (two
//! coordinates' meeting place), or undecided, which the plan refuses too.
//!
//! Two coordinates meet where the strides' combination `sum c_i d_i` with
//! `|c_i| < n_i`, not all 0, is 0. Strides that nest (sorted, each past
//! the span of those below it) admit none; two modes have a closed form;
//! otherwise a search over the coefficients, from the largest stride down,
//! each bounded by what the smaller modes can still reach, decides it
//! within a budget.

use tilec_layout::{Bindings, Layout};

/// Steps the search may take before it gives up (well under a
/// millisecond for the layouts of batched and strided tensors, which it
/// decides in a few dozen).
const MAX_STEPS: u64 = 1 << 22;

/// What [`overlap`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Every coordinate has a place of its own.
    None,
    /// Two coordinates share a place: why, in words.
    At(String),
    /// The search ran out of its budget: why not decided, in words.
    Undecided(String),
}

/// Whether `layout` (its names bound by `env`) puts two coordinates at one
/// offset; undecided where an extent or stride cannot be computed.
pub fn overlap(layout: &Layout, env: &dyn Bindings) -> Overlap {
    let modes: Option<Vec<(i64, i64)>> = (layout.shape().leaves().iter())
        .zip(layout.stride().leaves().iter())
        .map(|(n, d)| Some((n.eval(env)?, d.eval(env)?)))
        .collect();
    let Some(mut modes) = modes else {
        return Overlap::Undecided("an extent or a stride cannot be computed".into());
    };
    modes.retain(|&(n, _)| n > 1);
    if let Some((n, _)) = modes.iter().find(|&&(_, d)| d == 0) {
        return Overlap::At(format!("a mode of {n} elements has stride 0"));
    }
    modes.sort_by_key(|&(_, d)| d);
    // spans[j]: the largest offset of modes 0..j.
    let mut spans = vec![0i64];
    for &(n, d) in &modes {
        let last = *spans.last().unwrap_or(&0);
        spans.push(last.saturating_add((n - 1).saturating_mul(d)));
    }
    if modes.iter().enumerate().all(|(j, &(_, d))| d > spans[j]) {
        return Overlap::None;
    }
    if let [(n1, d1), (n2, d2)] = modes[..] {
        let g = gcd(d1, d2);
        let (a, b) = (d2 / g, d1 / g);
        return match a < n1 && b < n2 {
            true => Overlap::At(format!(
                "coordinate {a} of its mode of stride {d1} and coordinate {b} of the one of stride {d2} meet at offset {}",
                a * d1
            )),
            false => Overlap::None,
        };
    }
    // More places needed than the layout spans: two share one.
    let size = modes.iter().try_fold(1i64, |a, &(n, _)| a.checked_mul(n));
    let places = spans.last().map(|s| s.saturating_add(1));
    if let (Some(size), Some(places)) = (size, places)
        && size > places
    {
        return Overlap::At(format!("{size} elements in {places} places: two share one"));
    }
    let mut search = Search {
        modes: &modes,
        spans: &spans,
        steps: 0,
        coefficients: vec![0; modes.len()],
    };
    // The largest mode whose coefficient is not 0 takes a positive one.
    for j in (0..modes.len()).rev() {
        let (n, d) = modes[j];
        for c in 1..=(n - 1).min(spans[j] / d) {
            search.coefficients[j] = c;
            match search.reaches(-i128::from(c) * i128::from(d), j) {
                Some(true) => return Overlap::At(search.witness()),
                Some(false) => {}
                None => {
                    return Overlap::Undecided(format!(
                        "its strides do not nest, and {MAX_STEPS} steps of the search for two elements in one place did not decide it"
                    ));
                }
            }
        }
        search.coefficients[j] = 0;
    }
    Overlap::None
}

/// The search for coefficients of modes below `j` that make `target`.
struct Search<'m> {
    /// (extent, stride), strides ascending.
    modes: &'m [(i64, i64)],
    spans: &'m [i64],
    steps: u64,
    coefficients: Vec<i64>,
}

impl Search<'_> {
    /// Whether `target` is `sum c_i d_i` over modes `0..j` with `|c_i| <
    /// n_i` (the coefficients found left in place); `None` past the budget.
    /// In i128: a target and the span below it reach twice a span of 64
    /// bits.
    fn reaches(&mut self, target: i128, j: usize) -> Option<bool> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return None;
        }
        if j == 0 {
            return Some(target == 0);
        }
        let (n, d) = self.modes[j - 1];
        let (n, d, below) = (i128::from(n), i128::from(d), i128::from(self.spans[j - 1]));
        // |target - c d| <= below, and |c| < n.
        let low = (target - below).div_euclid(d) + i128::from((target - below).rem_euclid(d) != 0);
        let high = (target + below).div_euclid(d);
        for c in low.max(-(n - 1))..=high.min(n - 1) {
            self.coefficients[j - 1] = c as i64;
            if self.reaches(target - c * d, j - 1)? {
                return Some(true);
            }
        }
        self.coefficients[j - 1] = 0;
        Some(false)
    }

    /// The two elements the coefficients found name: one at the positive
    /// coefficients' coordinates, the other at the negative ones' (0 in
    /// every other mode), both at the same offset.
    fn witness(&self) -> String {
        let side = |sign: i64| {
            let parts: Vec<String> = (self.modes.iter().zip(&self.coefficients))
                .filter(|&(_, &c)| c * sign > 0)
                .map(|(&(_, d), &c)| format!("{} along stride {d}", c * sign))
                .collect();
            let at: i128 = (self.modes.iter().zip(&self.coefficients))
                .filter(|&(_, &c)| c * sign > 0)
                .map(|(&(_, d), &c)| i128::from(c * sign) * i128::from(d))
                .sum();
            (parts.join(", "), at)
        };
        let ((a, at), (b, _)) = (side(1), side(-1));
        format!("the elements ({a}) and ({b}) both lie at offset {at}")
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tilec_layout::tup;

    fn overlaps(shape: tilec_layout::IntTuple, stride: tilec_layout::IntTuple) -> Overlap {
        overlap(&Layout::new(shape, stride).unwrap(), &|_: &str| None)
    }

    /// One to one where the strides nest, or where two modes' smallest
    /// common offset lies past their extents; a stride 0, a meeting within
    /// them, or one the search finds, is named.
    #[test]
    fn a_layout_that_puts_two_elements_in_one_place_is_named() {
        assert_eq!(overlaps(tup!(4, (2, 3)), tup!(1, (4, 8))), Overlap::None);
        assert_eq!(overlaps(tup!(3, 3), tup!(2, 3)), Overlap::None);
        assert_eq!(
            overlaps(tup!(4, 3), tup!(2, 3)),
            Overlap::At(
                "coordinate 3 of its mode of stride 2 and coordinate 2 of the one of stride 3 meet at offset 6".into()
            )
        );
        assert_eq!(
            overlaps(tup!(4, 1, 3), tup!(1, 7, 0)),
            Overlap::At("a mode of 3 elements has stride 0".into())
        );
        assert_eq!(
            overlaps(tup!(40, 20, 3), tup!(1, 40, 100)),
            Overlap::At("2400 elements in 1000 places: two share one".into())
        );
        assert_eq!(
            overlaps(tup!(2, 2, 2), tup!(1, 3, 4)),
            Overlap::At(
                "the elements (1 along stride 4) and (1 along stride 1, 1 along stride 3) both lie at offset 4".into()
            )
        );
    }

    /// An extent or stride the extents do not give (a quotient by zero) is
    /// no mode to leave out: undecided.
    #[test]
    fn a_mode_that_cannot_be_computed_is_undecided() {
        let l = Layout::new(
            tilec_layout::IntTuple::Tuple(vec![
                tilec_layout::Int::var("M")
                    .div(&tilec_layout::Int::var("Z"))
                    .into(),
                4.into(),
            ]),
            tup!(0, 1),
        )
        .unwrap();
        let env = |n: &str| match n {
            "M" => Some(4),
            "Z" => Some(0),
            _ => None,
        };
        assert!(matches!(overlap(&l, &env), Overlap::Undecided(_)));
    }

    /// A probe's batched C, (M, N, L):(1, M, U), past the 2^20 elements
    /// the old listing stopped at: batch 1's first element is batch 0's
    /// last (pigeonhole), and with a batch stride in between, the search
    /// finds where they meet.
    #[test]
    fn large_batched_layouts_that_overlap_are_found() {
        let at = |s: Overlap| matches!(s, Overlap::At(_));
        assert!(at(overlaps(tup!(1024, 513, 2), tup!(1, 1024, 525311))));
        assert!(at(overlaps(tup!(1024, 1024, 2), tup!(1, 1024, 1000000))));
        assert!(at(overlaps(tup!(1024, 1024, 3), tup!(1, 1024, 1048573))));
        // Rows padded to 1030, batches far apart: one to one.
        assert_eq!(
            overlaps(tup!(1024, 1024, 4), tup!(1, 1030, 1054720)),
            Overlap::None
        );
        // Batch 1's rows in batch 0's rows' padding: one to one, though
        // the strides do not nest; half a row over, they overlap.
        assert_eq!(overlaps(tup!(10, 10, 2), tup!(1, 30, 10)), Overlap::None);
        assert!(at(overlaps(tup!(10, 10, 2), tup!(1, 30, 5))));
    }

    /// Every offset listed: a repeat exactly where the search finds a
    /// meeting, over random small layouts of up to four modes.
    fn listed(modes: &[(i64, i64)]) -> bool {
        let size: i64 = modes.iter().map(|&(n, _)| n).product();
        let mut offsets: Vec<i64> = (0..size)
            .map(|mut i| {
                modes.iter().fold(0, |o, &(n, d)| {
                    let c = i % n;
                    i /= n;
                    o + c * d
                })
            })
            .collect();
        offsets.sort_unstable();
        offsets.windows(2).any(|w| w[0] == w[1])
    }

    proptest! {
        #[test]
        fn the_search_agrees_with_listing_the_offsets(
            modes in prop::collection::vec((1i64..7, 0i64..40), 1..5)
        ) {
            let shape = tilec_layout::IntTuple::Tuple(modes.iter().map(|&(n, _)| n.into()).collect());
            let stride = tilec_layout::IntTuple::Tuple(modes.iter().map(|&(_, d)| d.into()).collect());
            let found = overlaps(shape, stride);
            prop_assert!(!matches!(found, Overlap::Undecided(_)));
            prop_assert_eq!(matches!(found, Overlap::At(_)), listed(&modes), "{:?}: {:?}", modes, found);
        }
    }
}
