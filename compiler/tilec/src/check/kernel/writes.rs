//! Two threads writing one element in one statement: a race, which the
//! CPU executor and compute-sanitizer report at run time, found here from
//! a witness. In: a statement's target view (global or shared memory)
//! that depends on `thread.x`, run by every thread of the block (no `if`
//! around it). Out: an error naming two threads and the element, where
//! the view gives two threads one element: a thread-value layout whose
//! threads overlap (`((32, 8), (4, 4)):((1, 128), (32, 512))`, whose
//! threads 4 and 128 share an element), or an index that two threads
//! reach (`Y[thread.x / 2]`). `local_partition`'s thread layouts are
//! refused where they overlap already; this covers every other view.

use super::KernelChecker;
use super::ranges::EXTENT;
use crate::check::program::View;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::Expr;
use tilec_layout::Builtin;

/// The most (thread, element) pairs looked at (a larger statement is left
/// to the executor: the check stays a small part of a build).
const MOST_PAIRS: i64 = 1 << 16;

impl KernelChecker {
    /// An error where two of the block's `threads` write one element of
    /// `dst` (in `memory`), at block 0, every loop at its first trip and
    /// every extent at [`EXTENT`]; what cannot be evaluated there is left
    /// to the executor.
    pub(super) fn threads_write_apart(
        &self,
        dst: &View,
        threads: i64,
        memory: &str,
        e: &Expr,
    ) -> Result<(), Diagnostic> {
        let Some(size) = dst.layout.size().as_static() else {
            return Ok(());
        };
        if threads.saturating_mul(size) > MOST_PAIRS {
            return Ok(());
        }
        let extent = |n: &str| self.extent_spans.contains_key(n).then_some(EXTENT);
        let value = |n: &str, thread: i64| -> Option<i64> {
            match Builtin::parse(n) {
                Some(Builtin::Thread) => Some(thread),
                Some(Builtin::Block(_)) => Some(0),
                _ => extent(n)
                    .or_else(|| {
                        let s = self.strides.iter().find(|s| s.name == n)?;
                        s.declared.eval(&extent)
                    })
                    .or_else(|| self.loop_ranges.get(n).map(|r| r.0)),
            }
        };
        // Each element's value of `l`, which no thread moves.
        let at_every = |l: &tilec_layout::Layout| -> Option<Vec<i64>> {
            (0..size)
                .map(|i| l.at(i).ok()?.eval(&|n: &str| value(n, 0)))
                .collect()
        };
        // The elements' offsets within the view.
        let Some(within) = at_every(&dst.layout) else {
            return Ok(());
        };
        // A global view's guards: each element's coordinate in each mode
        // of the tensor (and of a tile it was cut from), which an element
        // past the edge fails, and so is not written.
        let mut guards = Vec::with_capacity(dst.coords.len());
        for c in &dst.coords {
            let Some(along) = at_every(&c.layout) else {
                return Ok(());
            };
            let Some(extent) = c.extent.eval(&|n: &str| value(n, 0)) else {
                return Ok(());
            };
            guards.push((c, along, extent));
        }
        let mut writes: Vec<(i64, i64, i64)> = Vec::with_capacity((threads * size) as usize);
        for t in 0..threads {
            let Some(base) = dst.offset.eval(&|n: &str| value(n, t)) else {
                return Ok(());
            };
            let mut starts = Vec::with_capacity(guards.len());
            for (c, _, _) in &guards {
                let Some(s) = c.offset.eval(&|n: &str| value(n, t)) else {
                    return Ok(());
                };
                starts.push(s);
            }
            let inside = |i: usize| {
                guards
                    .iter()
                    .zip(&starts)
                    .all(|((_, along, extent), s)| (0..*extent).contains(&(s + along[i])))
            };
            writes.extend(
                within
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| inside(i))
                    .map(|(i, w)| (base + w, t, i as i64)),
            );
        }
        let Some(((t1, v1), (t2, v2))) = shared_element(&writes) else {
            return Ok(());
        };
        Err(
            Diagnostic::new(format!("two threads write one element of {memory} here"), e.span)
                .with_label(format!(
                    "thread {t1}'s element {v1} and thread {t2}'s element {v2} are one element (at block 0, extents {EXTENT}): a race"
                ))
                .with_help("each thread writes elements of its own: a thread-value layout maps each (thread, value) to an element of its own (`tilec show --tv` draws who owns each), as a compact thread layout of local_partition does")
                // A partition for fewer threads than the block (an MMA of
                // one warpgroup in a block of two) overlaps here too:
                // where that is an error of its own, it is the one to fix.
                .following(),
        )
    }
}

/// The first element (the lowest offset) that two threads write, of
/// `writes` (offset, thread, value) in the order of their threads: the
/// last write to it of the first thread that writes it, and the next
/// thread's first. Offsets within a few times as many as the writes (a
/// tile's) are marked in a table, a pass; others are sorted.
fn shared_element(writes: &[(i64, i64, i64)]) -> Option<((i64, i64), (i64, i64))> {
    let lo = writes.iter().map(|w| w.0).min()?;
    let hi = writes.iter().map(|w| w.0).max()?;
    let span = hi.checked_sub(lo)?.checked_add(1)?;
    if span > 4 * writes.len() as i64 + 1024 {
        let mut sorted = writes.to_vec();
        sorted.sort_unstable();
        let pair = sorted
            .windows(2)
            .find(|p| p[0].0 == p[1].0 && p[0].1 != p[1].1)?;
        return Some(((pair[0].1, pair[0].2), (pair[1].1, pair[1].2)));
    }
    // Per offset: its first writer's last write, then the next thread's
    // first, each as its place in `writes` plus 1 (0: none yet).
    let mut first = vec![0u32; span as usize];
    let mut next = vec![0u32; span as usize];
    for (i, &(off, t, _)) in writes.iter().enumerate() {
        let at = (off - lo) as usize;
        let mark = u32::try_from(i + 1).ok()?;
        match (first[at], next[at]) {
            (0, _) => first[at] = mark,
            (f, 0) if writes[f as usize - 1].1 == t => first[at] = mark,
            (_, 0) => next[at] = mark,
            _ => {}
        }
    }
    let at = next.iter().position(|&n| n != 0)?;
    let (a, b) = (
        writes[first[at] as usize - 1],
        writes[next[at] as usize - 1],
    );
    Some(((a.1, a.2), (b.1, b.2)))
}

#[cfg(test)]
mod tests {
    use super::shared_element;

    /// The table and the sort find the same pair: offsets close together
    /// take the table, the same offsets spread 10^6 apart the sort.
    #[test]
    fn the_table_and_the_sort_find_one_pair() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut writes = Vec::new();
            for t in 0..8 {
                for v in 0..4 {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    writes.push(((seed >> 33) as i64 % 64, t, v));
                }
            }
            let spread: Vec<_> = writes
                .iter()
                .map(|&(o, t, v)| (o * 1_000_000, t, v))
                .collect();
            assert_eq!(shared_element(&writes), shared_element(&spread));
        }
        let apart: Vec<_> = (0..8).map(|t| (t, t, 0)).collect();
        assert_eq!(shared_element(&apart), None);
        assert_eq!(
            shared_element(&[(5, 0, 0), (5, 0, 1), (5, 2, 0)]),
            Some(((0, 1), (2, 0)))
        );
    }
}
