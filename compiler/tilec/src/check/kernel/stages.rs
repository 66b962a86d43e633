//! A pipeline body's reads of its stage buffers: each read of a trip lies
//! in the stage that trip's loads filled. A read of another stage (`smA[_,
//! _, 1 - s]`, `(s + 1) % 2`) races with the producer, which refills it
//! while the consumers read it; the CPU executor reports it at run time,
//! and this finds it at compile time from a witness: the offsets of the
//! loads and the reads evaluated at the first trips (and turns) for a few
//! threads, the extents at a large value. An error is a trip and a thread
//! where the read is outside, so no kernel that reads its own stage is
//! refused; what cannot be evaluated is left to the executor.

use super::KernelChecker;
use crate::check::program::{Base, Op, Stmt, View};
use crate::diagnostic::Diagnostic;
use tilec_layout::{Builtin, Int, SM_COUNT};

/// The trips and turns a pipeline is followed through (each of them, up to
/// twice round a ring of 16 stages).
const TRIPS: i64 = 32;

/// The value the extents take: large enough that the first trips exist.
const EXTENT: i64 = 1 << 14;

/// A pipeline's counter and its turns', as the stage is computed from them.
pub(super) struct Trips<'a> {
    pub counter: &'a str,
    pub start: &'a Int,
    pub turn: Option<(&'a str, &'a Int)>,
    pub stages: i64,
}

impl KernelChecker {
    /// Each read in `body` of a buffer that `load` fills lies within what
    /// the loads of its own trip filled: an error at the first read found
    /// outside.
    pub(super) fn reads_within_stages(&mut self, trips: &Trips, load: &[Stmt], body: &[Stmt]) {
        let threads = self.block_threads().unwrap_or(128);
        let samples: Vec<i64> = [0, 1, 31, 32, 64, 127, 128, 255, threads - 1]
            .into_iter()
            .filter(|&t| (0..threads).contains(&t))
            .collect();
        let witness = Witness {
            trips,
            load,
            threads: &samples,
            extents: self.extent_spans.keys().cloned().collect(),
        };
        if let Some((s, b, at)) = witness.first_outside(body, &mut Vec::new()) {
            let name = self.state.shared[b]
                .name
                .clone()
                .unwrap_or_else(|| "the stage buffer".into());
            let turn = match (trips.turn, at.turn) {
                (Some((name, _)), t) => format!(" of turn {name} = first + {t}"),
                (None, _) => String::new(),
            };
            self.diags.push(
                Diagnostic::new(
                    format!("this reads a stage of `{name}` that its trip did not load"),
                    s.span,
                )
                .with_label(format!(
                    "at trip {}{turn}, thread {} reads outside what the trip's loads filled",
                    at.trip, at.thread
                ))
                .with_help(format!(
                    "the producer refills the other stages while the body runs: index the stage buffers by the pipeline's stage name (`{name}[_, _, s]`)"
                )),
            );
        }
    }
}

/// Where a read was found outside its trip's stage.
struct At {
    trip: i64,
    turn: i64,
    thread: i64,
}

/// What the reads are evaluated with.
struct Witness<'a> {
    trips: &'a Trips<'a>,
    load: &'a [Stmt],
    threads: &'a [i64],
    extents: Vec<String>,
}

impl Witness<'_> {
    /// The first statement of `body` (loops nested in it at their first
    /// trip, `loops` those around it) reading a stage buffer outside its
    /// trip's stage: with the buffer and the witness.
    fn first_outside<'s>(
        &self,
        body: &'s [Stmt],
        loops: &mut Vec<(String, Int)>,
    ) -> Option<(&'s Stmt, usize, At)> {
        for s in body {
            for read in s.op.read() {
                let Base::Shared(b) = read.base else { continue };
                let filled: Vec<&View> = self
                    .load
                    .iter()
                    .filter_map(|l| match &l.op {
                        Op::CopyTma { dst, .. } if dst.base == read.base => Some(dst),
                        _ => None,
                    })
                    .collect();
                if let Some(at) = self.outside(&filled, read, loops) {
                    return Some((s, b, at));
                }
            }
            let nested = match &s.op {
                Op::For { var, start, .. } => Some((var.clone(), start.clone())),
                _ => None,
            };
            let pushed = nested.is_some();
            loops.extend(nested);
            for inner in s.op.bodies() {
                if let Some(found) = self.first_outside(inner, loops) {
                    return Some(found);
                }
            }
            if pushed {
                loops.pop();
            }
        }
        None
    }

    /// The first trip, turn and thread where `read` is not within the
    /// union of what `filled` covers at that trip.
    fn outside(&self, filled: &[&View], read: &View, loops: &[(String, Int)]) -> Option<At> {
        if filled.is_empty() {
            return None;
        }
        let reach = |v: &View| v.layout.to_static().and_then(|l| l.range());
        let (rlo, rhi) = reach(read)?;
        let reaches: Vec<(i64, i64)> = filled.iter().map(|v| reach(v)).collect::<Option<_>>()?;
        let trips = self.trips;
        let turns = if trips.turn.is_some() { 2 } else { 1 };
        for trip in 0..TRIPS.min(2 * trips.stages) {
            for turn in 0..turns {
                for &thread in self.threads {
                    let env = Env {
                        witness: self,
                        loops,
                        trip,
                        turn,
                        thread,
                    };
                    let Some(at) = read.offset.eval(&|n: &str| env.value(n)) else {
                        continue;
                    };
                    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
                    for (v, (flo, fhi)) in filled.iter().zip(&reaches) {
                        let o = v.offset.eval(&|n: &str| env.value(n))?;
                        lo = lo.min(o.checked_add(*flo)?);
                        hi = hi.max(o.checked_add(*fhi)?);
                    }
                    if at.checked_add(rlo)? < lo || at.checked_add(rhi)? > hi {
                        return Some(At { trip, turn, thread });
                    }
                }
            }
        }
        None
    }
}

/// The values of the names at one trip, turn and thread.
struct Env<'a> {
    witness: &'a Witness<'a>,
    loops: &'a [(String, Int)],
    trip: i64,
    turn: i64,
    thread: i64,
}

impl Env<'_> {
    /// A name's value; `None` for a name it does not know (the sample is
    /// skipped, never guessed).
    fn value(&self, n: &str) -> Option<i64> {
        let w = self.witness;
        let extent = |n: &str| w.extents.iter().any(|e| e == n).then_some(EXTENT);
        if n == w.trips.counter {
            return w.trips.start.eval(&extent)?.checked_add(self.trip);
        }
        if let Some((name, first)) = w.trips.turn
            && n == name
        {
            return first.eval(&extent)?.checked_add(self.turn);
        }
        if let Some((_, start)) = self.loops.iter().rev().find(|(v, _)| v == n) {
            return start.eval(&|m: &str| self.value(m));
        }
        match Builtin::parse(n) {
            Some(Builtin::Thread) => Some(self.thread),
            Some(Builtin::Block(_)) => Some(0),
            None if n == SM_COUNT => Some(132),
            None => extent(n),
        }
    }
}
