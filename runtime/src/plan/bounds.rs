//! The proof that a launch stays inside its buffers, and that its entry's
//! quotients in 32 bits stay within them. In: a launch of the plan (its
//! entry, its box of blocks) and the run-time values. Out: `Ok`, or the
//! access that cannot be shown in bounds and where (for the quotients,
//! which entries may launch).
//!
//! Interval arithmetic over the symbolic indices is sound but forgets ties
//! between names: over a persistent grid, the last block's trip count is
//! the smallest, but the intervals pair the largest block with the largest
//! trip and find a tile past the end of C. Where a region of blocks,
//! threads and loop counters fails, it is cut in two along the widest
//! block index or loop counter the failing access depends on (the thread
//! index last), and each half is bounded on its own (each half's loop
//! bounds are recomputed from its narrower names, which restores the tie).
//! The regions always cover every block, thread and trip, so the proof
//! stays sound; a budget bounds its cost.

use super::{Launch, LaunchPlan, reach};
use crate::RuntimeError;
use crate::manifest::{LoopSpec, Manifest, VariantSpec};
use std::collections::HashMap;
use tilec_layout::{Builtin, COUNTER_MAX, NARROW_MAX};

/// Most regions one launch's proof bounds before it gives up: enough for
/// a persistent grid of a few hundred blocks cut down to single blocks and
/// trips where the last tiles are (tests/run/persistent_one_warpgroup at
/// 4096^3 takes a few dozen).
const MAX_REGIONS: usize = 1 << 14;

/// Names narrowed from the launch's: block and thread indices, loop
/// counters.
type Region<'a> = HashMap<&'a str, (i64, i64)>;

/// The ranges a region gives every name its accesses use: the block and
/// thread indices and every loop counter.
type Ranges<'a> = HashMap<&'a str, (i64, i64)>;

/// Every global access of every thread of the `blocks` of one launch, in
/// every loop iteration, is inside its parameter's buffer.
pub(super) fn check_bounds(
    m: &Manifest,
    plan: &LaunchPlan,
    launch: &Launch,
    blocks: &[(i64, i64); 3],
    values: &HashMap<&str, i64>,
) -> Result<(), RuntimeError> {
    // A pipeline's producer warpgroup (the last threads) issues TMA loads
    // alone: the listed accesses are the other threads'.
    let threads = plan.block.iter().map(|&b| b as i64).product::<i64>() - m.producer_threads;
    if threads < 1 {
        return Err(RuntimeError::Manifest(format!(
            "a block of {} threads has no thread besides its producer's {}",
            threads + m.producer_threads,
            m.producer_threads
        )));
    }
    let proof = Proof::new(m, plan, launch, values);
    let thread = Builtin::Thread.name();
    let mut whole: Region = blocks
        .iter()
        .enumerate()
        .map(|(i, &r)| (Builtin::Block(i as u8).name(), r))
        .collect();
    whole.insert(thread, (0, threads - 1));
    // Each region with the first access not yet proved over a region
    // holding it: what a region proves holds in its halves, so a half
    // proves again only from the access that failed on.
    let mut todo = vec![(whole.clone(), 0)];
    let mut bounded = 0;
    while let Some((region, first)) = todo.pop() {
        let Err(failure) = proof.check(&region, first) else {
            continue;
        };
        bounded += 1;
        let widest = wide(failure.depends_on.iter().copied(), &failure.ranges)
            .or_else(|| wide(failure.then_on.iter().copied(), &failure.ranges));
        // A loop counter whose range is made of block indices or outer
        // counters not yet single values (a stream-K block's tiles, from
        // its block index): those first, even where the counter is wider,
        // which narrows the counter with them and keeps the tie between
        // them (cut alone, the counter pairs each tile with every block of
        // the region: TN stream-K at 16384 x 16384 x 512 ran out of
        // regions). Not the thread index, still cut last.
        let widest = match widest.map(|(n, _)| proof.bounded_by(n)) {
            Some(from) => {
                let from = from.iter().copied().filter(|n| !is_thread(n));
                wide(from, &failure.ranges).or(widest)
            }
            None => widest,
        };
        let Some((name, (lo, hi))) = widest else {
            return Err((*failure).error(&region, &whole, None));
        };
        if bounded == MAX_REGIONS {
            return Err((*failure).error(&region, &whole, Some(MAX_REGIONS)));
        }
        let mid = lo + (hi.abs_diff(lo) / 2) as i64;
        for half in [(lo, mid), (mid + 1, hi)] {
            let mut r = region.clone();
            r.insert(name, half);
            todo.push((r, failure.access));
        }
    }
    Ok(())
}

/// The widest of `names` over `ranges` (wider than one value): a block
/// index or loop counter; the thread index last, which the tiles a block
/// or a trip reaches rarely depend on (cut first, it would multiply the
/// regions for nothing).
fn wide<'n>(
    names: impl Iterator<Item = &'n str>,
    ranges: &Ranges,
) -> Option<(&'n str, (i64, i64))> {
    names
        .filter_map(|n| Some((n, *ranges.get(n)?)))
        .filter(|(_, (lo, hi))| hi > lo)
        .max_by_key(|&(n, (lo, hi))| (!is_thread(n), hi.abs_diff(lo), std::cmp::Reverse(n)))
}

/// Whether `name` is the thread index, or its range under an `if` on it
/// (`thread.x.if3`, which lowering lists as a loop of static bounds).
fn is_thread(name: &str) -> bool {
    let thread = Builtin::Thread.name();
    name.strip_prefix(thread)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// What bounding one region needs: the launch, and for each loop and
/// each access of its entry what the region does not change.
struct Proof<'a> {
    m: &'a Manifest,
    plan: &'a LaunchPlan,
    launch: &'a Launch,
    values: &'a HashMap<&'a str, i64>,
    /// The names in each loop's bounds.
    loop_names: Vec<Vec<String>>,
    /// The block indices and loop counters each loop's counter depends on
    /// (itself included).
    loops: Vec<Vec<&'a str>>,
    accesses: Vec<Term<'a>>,
}

/// An access's index: the names in it, and the block indices and loop
/// counters it depends on, directly or through the bounds of the loops it
/// names.
struct Term<'a> {
    names: Vec<String>,
    depends_on: Vec<&'a str>,
    /// Those the ifs around it depend on.
    then_on: Vec<&'a str>,
}

/// An access that one region does not bound.
struct Failure<'a> {
    error: RuntimeError,
    /// The region's ranges of every name, loop counters included.
    ranges: Ranges<'a>,
    /// The block indices and loop counters the access depends on, through
    /// its index or the bounds of the loops around it; then those of the
    /// ifs around it.
    depends_on: Vec<&'a str>,
    then_on: Vec<&'a str>,
    /// The access that failed (the first checked where a loop's bounds did).
    access: usize,
}

impl Failure<'_> {
    /// The failure's message, naming the region where it is narrower than
    /// the launch, and, where the proof gave up after `gave_up` regions,
    /// that the region might yet be bounded.
    fn error(self, region: &Region, whole: &Region, gave_up: Option<usize>) -> RuntimeError {
        let mut narrowed: Vec<String> = region
            .iter()
            .filter(|&(n, r)| whole.get(n) != Some(r))
            .map(|(n, (lo, hi))| match lo == hi {
                true => format!("{n} = {lo}"),
                false => format!("{n} in {lo}..={hi}"),
            })
            .collect();
        narrowed.sort();
        let (mut why, past) = match self.error {
            RuntimeError::Bounds(why) => (why, false),
            RuntimeError::PastAMode(why) => (why, true),
            other => return other,
        };
        if !narrowed.is_empty() {
            why = format!("{why} (where {})", narrowed.join(", "));
        }
        if let Some(n) = gave_up {
            why = format!(
                "the proof that every access is in bounds gave up after {n} regions of blocks, threads and loop counters, the last: {why}"
            );
        }
        match past {
            true => RuntimeError::PastAMode(why),
            false => RuntimeError::Bounds(why),
        }
    }
}

impl<'a> Proof<'a> {
    fn new(
        m: &'a Manifest,
        plan: &'a LaunchPlan,
        launch: &'a Launch,
        values: &'a HashMap<&'a str, i64>,
    ) -> Self {
        let v = &m.variants[launch.variant];
        let mut through: HashMap<&str, Vec<&str>> = HashMap::new();
        let loop_names = loop_names(&v.loops);
        let mut loops = Vec::new();
        // Loops are listed outer first: a loop's bounds may name the block
        // and the counters of the loops around it.
        for (l, names) in v.loops.iter().zip(&loop_names) {
            let mut depends_on = vec![l.name.as_str()];
            for n in names {
                depends(n, &v.loops, &through, &mut depends_on);
            }
            through.insert(&l.name, depends_on.clone());
            loops.push(depends_on);
        }
        let accesses = v
            .accesses
            .iter()
            .map(|a| {
                let mut names = Vec::new();
                a.index.names(&mut names);
                let mut depends_on = Vec::new();
                for n in &names {
                    depends(n, &v.loops, &through, &mut depends_on);
                }
                // The ifs' names too, cut along once the index's are single
                // values: a region may leave the if's range, and the access
                // with it.
                let mut ifs = Vec::new();
                for [x, y] in &a.when {
                    x.names(&mut ifs);
                    y.names(&mut ifs);
                }
                let mut then_on = Vec::new();
                for n in &ifs {
                    depends(n, &v.loops, &through, &mut then_on);
                }
                Term {
                    names,
                    depends_on,
                    then_on,
                }
            })
            .collect();
        Proof {
            m,
            plan,
            launch,
            values,
            loop_names,
            loops,
            accesses,
        }
    }

    /// The block indices and outer loop counters loop counter `name`'s
    /// range is made from (none for any other name).
    fn bounded_by(&self, name: &str) -> &[&'a str] {
        let v = &self.m.variants[self.launch.variant];
        match v.loops.iter().position(|l| l.name == name) {
            Some(i) => &self.loops[i][1..],
            None => &[],
        }
    }

    /// Bounds every access over one region.
    fn check(&self, region: &Region<'a>, first: usize) -> Result<(), Box<Failure<'a>>> {
        let extent = |n: &str| self.values.get(n).map(|&v| (v, v));
        let v = &self.m.variants[self.launch.variant];
        let (ranges, empty_loops) = match counter_ranges(v, &self.loop_names, region, &extent) {
            Ok(r) => r,
            Err(e) => {
                return Err(Box::new(Failure {
                    error: e.error,
                    ranges: e.ranges,
                    depends_on: self.loops[e.at].clone(),
                    then_on: Vec::new(),
                    access: first,
                }));
            }
        };
        for (i, (a, term)) in v
            .accesses
            .iter()
            .zip(&self.accesses)
            .enumerate()
            .skip(first)
        {
            if term.names.iter().any(|n| empty_loops.contains(&n.as_str())) {
                continue; // inside a loop that does not run
            }
            let env = |n: &str| ranges.get(n).copied().or_else(|| extent(n));
            // Under an if that fails throughout the region: never runs.
            let never = a.when.iter().any(|[x, y]| {
                matches!((x.range(&env), y.range(&env)), (Some((lo, _)), Some((_, hi))) if lo > hi)
            });
            if never {
                continue;
            }
            if let Err(error) = self.bound(a, &env) {
                return Err(Box::new(Failure {
                    error,
                    ranges,
                    depends_on: term.depends_on.clone(),
                    then_on: term.then_on.clone(),
                    access: i,
                }));
            }
        }
        Ok(())
    }

    /// One access over the ranges `env`: its index inside the buffer, or
    /// its coordinate inside its mode.
    fn bound(
        &self,
        a: &crate::manifest::Access,
        env: &dyn Fn(&str) -> Option<(i64, i64)>,
    ) -> Result<(), RuntimeError> {
        let (p, index) = (&self.m.params[a.param], &a.index);
        // The statement's line, where the manifest has it.
        let line = a.line.map_or(String::new(), |n| format!("line {n}: "));
        if let Some(below) = &a.below {
            return match (index.range(env), below.range(env)) {
                (Some((lo, hi)), Some((n, _))) if lo >= 0 && hi < n => Ok(()),
                (Some((lo, hi)), Some((n, _))) => Err(RuntimeError::PastAMode(format!(
                    "{line}{} would be accessed at coordinate {lo}..={hi} of a mode of {n} (coordinate {index}): inside its buffer, perhaps, but another row's or column's element",
                    p.name
                ))),
                _ => Err(RuntimeError::Bounds(format!(
                    "{line}the coordinate {index} of {} cannot be bounded below {below}",
                    p.name
                ))),
            };
        }
        let len = reach(&self.plan.lens, &self.plan.staged, a.param) as i64;
        match index.range(env) {
            Some((lo, hi)) if lo >= 0 && hi < len => Ok(()),
            Some((lo, hi)) => Err(RuntimeError::Bounds(format!(
                "{line}{} would be accessed at {lo}..={hi}, but its buffer has {len} elements (index {index})",
                p.name
            ))),
            None => Err(RuntimeError::Bounds(format!(
                "{line}the index {index} of {} cannot be bounded",
                p.name
            ))),
        }
    }
}

/// A loop whose counter a region cannot bound: which (by its place in the
/// variant's list), why, and the ranges found before it.
struct Unbounded<'a> {
    at: usize,
    error: RuntimeError,
    ranges: Ranges<'a>,
}

/// The ranges over `region` of the block and thread indices and of every
/// loop counter, and the loops that do not run there (nor any loop
/// inside them); `bound_names`: the names in each loop's bounds.
fn counter_ranges<'a>(
    v: &'a VariantSpec,
    bound_names: &[Vec<String>],
    region: &Region<'a>,
    extent: &dyn Fn(&str) -> Option<(i64, i64)>,
) -> Result<(Ranges<'a>, Vec<&'a str>), Box<Unbounded<'a>>> {
    let mut ranges: Ranges = HashMap::new();
    let thread = Builtin::Thread.name();
    ranges.insert(thread, region[thread]);
    for i in 0..3 {
        let b = Builtin::Block(i).name();
        ranges.insert(b, region[b]);
    }
    let mut empty_loops: Vec<&str> = Vec::new();
    for (at, (l, names)) in v.loops.iter().zip(bound_names).enumerate() {
        // Inside a loop that does not run, neither does this one.
        if names.iter().any(|n| empty_loops.contains(&n.as_str())) {
            empty_loops.push(l.name.as_str());
            continue;
        }
        let env = |n: &str| ranges.get(n).copied().or_else(|| extent(n));
        let (Some((s, _)), Some((_, e))) = (l.start.range(&env), l.end.range(&env)) else {
            // Bounded over a narrower region, perhaps.
            return Err(Box::new(Unbounded {
                at,
                error: RuntimeError::Bounds(format!(
                    "the bounds of loop {} cannot be bounded",
                    l.name
                )),
                ranges,
            }));
        };
        // The last counter value, and the region's narrower range of
        // it where it has one (names are a loop's own: validated).
        let last = match region.get(l.name.as_str()) {
            Some(&(lo, hi)) => (s.max(lo), e.saturating_sub(1).min(hi)),
            None => (s, e.saturating_sub(1)),
        };
        if last.1 < last.0 {
            empty_loops.push(l.name.as_str());
            continue;
        }
        // What the compiler took for the counter and its iterations
        // where the end was unknown to it (shared indices, alignments).
        if last.1 > COUNTER_MAX || last.1.checked_sub(s).is_none_or(|n| n > COUNTER_MAX) {
            return Err(Box::new(Unbounded {
                at,
                error: RuntimeError::Bounds(format!(
                    "loop {} would count from {s} to {}: a loop's counter and its iterations stay within 2^40, as the compiler's bounds of shared indices and alignments take them",
                    l.name, last.1
                )),
                ranges,
            }));
        }
        ranges.insert(&l.name, last);
    }
    Ok((ranges, empty_loops))
}

/// Whether every quotient that entry `v` computes in 32 bits keeps its
/// operands within them on a launch of `grid` blocks from block `offset`
/// (the pad blocks of its last clusters too; blocks of `threads` threads)
/// at the run-time values `values`. One bound over the whole launch, not
/// cut into regions: where it fails, the runtime launches a later entry
/// (the last divides in 64 bits) rather than refusing.
pub(super) fn quotients_fit(
    v: &VariantSpec,
    [grid, offset]: [[u32; 3]; 2],
    threads: i64,
    values: &HashMap<&str, i64>,
) -> bool {
    if v.narrowed.is_empty() {
        return true;
    }
    let mut region: Region = (0..3)
        .map(|i| {
            let (g, o, c) = (grid[i] as i64, offset[i] as i64, v.cluster[i] as i64);
            let last = o + (g + c - 1) / c * c - 1;
            (Builtin::Block(i as u8).name(), (o, last))
        })
        .collect();
    region.insert(Builtin::Thread.name(), (0, threads - 1));
    let extent = |n: &str| values.get(n).map(|&v| (v, v));
    let names = loop_names(&v.loops);
    let Ok((ranges, empty_loops)) = counter_ranges(v, &names, &region, &extent) else {
        return false;
    };
    let env = |n: &str| ranges.get(n).copied().or_else(|| extent(n));
    let within = |x: &tilec_layout::Int| {
        let mut names = Vec::new();
        x.names(&mut names);
        // Inside a loop that does not run, it is never computed.
        names.iter().any(|n| empty_loops.contains(&n.as_str()))
            || x.range(&env)
                .is_some_and(|(lo, hi)| lo >= -NARROW_MAX && hi <= NARROW_MAX)
    };
    v.narrowed
        .iter()
        .all(|n| within(&n.dividend) && within(&n.divisor))
}

/// The entries of `usable` whose quotients in 32 bits keep within them
/// on a launch of the whole `grid` (blocks of `threads` threads).
pub(super) fn fitting(
    m: &Manifest,
    usable: &[usize],
    grid: [u32; 3],
    threads: i64,
    values: &HashMap<&str, i64>,
) -> Vec<usize> {
    usable
        .iter()
        .copied()
        .filter(|&v| fits_whole_grid(&m.variants[v], grid, threads, values))
        .collect()
}

/// Whether entry `v`'s quotients in 32 bits keep within them on a launch
/// of the whole `grid`: the region planning picks entries by, and the one
/// `LaunchPlan::passed_over` explains them by.
pub(super) fn fits_whole_grid(
    v: &VariantSpec,
    grid: [u32; 3],
    threads: i64,
    values: &HashMap<&str, i64>,
) -> bool {
    quotients_fit(v, [grid, [0; 3]], threads, values)
}

/// Every launch of `p` runs an entry whose quotients in 32 bits keep
/// within them on its blocks: for a plan made another way (the
/// executor's), as [`fitting`] chose the entries of the runtime's own.
pub(super) fn quotients_proved(
    m: &Manifest,
    p: &LaunchPlan,
    values: &HashMap<&str, i64>,
) -> Result<(), RuntimeError> {
    let threads = p.block.iter().map(|&b| b as i64).product();
    match p
        .launches
        .iter()
        .find(|l| !quotients_fit(&m.variants[l.variant], [l.grid, l.offset], threads, values))
    {
        Some(l) => Err(RuntimeError::Condition(format!(
            "{} divides in 32 bits, and at these extents its quotients' operands may pass them",
            m.variants[l.variant].entry
        ))),
        None => Ok(()),
    }
}

/// The names in each loop's bounds.
fn loop_names(loops: &[LoopSpec]) -> Vec<Vec<String>> {
    loops
        .iter()
        .map(|l| {
            let mut names = Vec::new();
            l.start.names(&mut names);
            l.end.names(&mut names);
            names
        })
        .collect()
}

/// Adds to `out` what a value of `name` depends on that a region may
/// narrow: `name` itself if it is a block index or a loop counter, and,
/// for a counter, what its loop's bounds depend on (`through`).
fn depends<'a>(
    name: &str,
    loops: &'a [LoopSpec],
    through: &HashMap<&'a str, Vec<&'a str>>,
    out: &mut Vec<&'a str>,
) {
    let known = (0..3)
        .map(|i| Builtin::Block(i as u8).name())
        .chain([Builtin::Thread.name()])
        .chain(loops.iter().map(|l| l.name.as_str()))
        .find(|&k| k == name);
    let via = known.and_then(|k| through.get(k)).into_iter().flatten();
    for &k in known.iter().chain(via) {
        if !out.contains(&k) {
            out.push(k);
        }
    }
}
