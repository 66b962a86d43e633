//! A pipeline body's reads of its stage buffers: each read of a trip lies
//! in the stage that trip's loads filled. A read of another stage (`smA[_,
//! _, 1 - s]`, `(s + 1) % 2`) races with the producer, which refills it
//! while the consumers read it; the CPU executor reports it at run time,
//! and this finds it at compile time from a witness: the offsets of the
//! loads and the reads evaluated at the first trips (and turns) for a few
//! threads of the warpgroup that runs them, block indices at 0, the
//! extents at a large value, each loop of the body at its first and its
//! last trip. A read is looked at only where the `if`s around it hold and
//! its loops run, so an error is a point where the read happens outside
//! its stage; what cannot be evaluated there is left to the executor.

use super::KernelChecker;
use super::ranges::EXTENT;
use crate::check::program::{Base, Op, Predicate, Stmt, View};
use crate::diagnostic::Diagnostic;
use tilec_layout::{Builtin, Int, SM_COUNT};

/// The trips a pipeline is followed through: each of its first `2 S` (up
/// to twice round a ring of 16 stages).
const TRIPS: i64 = 32;

/// The turns (from the first) a pipeline with turns is followed through.
const TURNS: i64 = 2;

/// A stand-in for the multiprocessors a persistent grid is sized by.
const SMS: i64 = 132;

/// Threads sampled in each warpgroup (by their place in it).
const LANES: [i64; 6] = [0, 1, 31, 32, 64, 127];

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
        let witness = Witness {
            trips,
            load,
            lens: self.state.shared.iter().map(|b| b.len).collect(),
            threads: self.block_threads().unwrap_or(128),
            extents: self.extent_spans.keys().cloned().collect(),
        };
        let Some((s, b, at)) = witness.first_outside(body) else {
            return;
        };
        let name = self.state.shared[b]
            .name
            .clone()
            .unwrap_or_else(|| "the stage buffer".into());
        let turn = match trips.turn {
            Some((j, _)) => format!(" of turn {j} = {}", at.turn),
            None => String::new(),
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
            ))
            // Its witness evaluates what the other checks vouch for (a
            // block of two warpgroups over an MMA of one read past the
            // stage at thread 128): where they fail, theirs is the error.
            .following(),
        );
    }
}

/// Where a read was found outside its trip's stage: the trip from the
/// pipeline's first, the turn's value, the thread.
struct At {
    trip: i64,
    turn: i64,
    thread: i64,
}

/// What a statement runs under inside the body.
enum Guard<'a> {
    /// `if cond` (its `then` where `holds`, its `else` otherwise).
    If { cond: &'a Predicate, holds: bool },
    /// `for var in start..end`.
    Loop {
        var: &'a str,
        start: &'a Int,
        end: &'a Int,
    },
}

/// What the reads are evaluated with.
struct Witness<'a> {
    trips: &'a Trips<'a>,
    load: &'a [Stmt],
    /// Each shared buffer's elements.
    lens: Vec<i64>,
    threads: i64,
    extents: Vec<String>,
}

impl Witness<'_> {
    /// The first statement of `body` reading a stage buffer outside its
    /// trip's stage, with the buffer and the witness.
    fn first_outside<'s>(&self, body: &'s [Stmt]) -> Option<(&'s Stmt, usize, At)> {
        self.walk(body, &mut Vec::new())
    }

    fn walk<'s>(
        &self,
        body: &'s [Stmt],
        guards: &mut Vec<Guard<'s>>,
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
                if let Some(at) = self.outside(&filled, self.lens[b], read, guards) {
                    return Some((s, b, at));
                }
            }
            let nested: Vec<(Guard<'s>, &'s [Stmt])> = match &s.op {
                Op::For {
                    var,
                    start,
                    end,
                    body,
                } => vec![(Guard::Loop { var, start, end }, body)],
                Op::If {
                    cond,
                    then,
                    otherwise,
                } => vec![
                    (Guard::If { cond, holds: true }, then),
                    (Guard::If { cond, holds: false }, otherwise),
                ],
                // A reduce's body runs unconditionally on its last block.
                op => {
                    for inner in op.bodies() {
                        if let Some(found) = self.walk(inner, guards) {
                            return Some(found);
                        }
                    }
                    vec![]
                }
            };
            for (guard, inner) in nested {
                guards.push(guard);
                let found = self.walk(inner, guards);
                guards.pop();
                if found.is_some() {
                    return found;
                }
            }
        }
        None
    }

    /// The first trip, turn and thread where `read` happens (its guards
    /// hold) and is not within the union of what `filled` covers at that
    /// trip.
    fn outside(&self, filled: &[&View], len: i64, read: &View, guards: &[Guard]) -> Option<At> {
        if filled.is_empty() {
            return None;
        }
        let reach = |v: &View| v.layout.to_static().and_then(|l| l.range());
        let (rlo, rhi) = reach(read)?;
        let reaches: Vec<(i64, i64)> = filled.iter().map(|v| reach(v)).collect::<Option<_>>()?;
        let trips = self.trips;
        let groups = (self.threads / 128).max(1);
        let turns = if trips.turn.is_some() { TURNS } else { 1 };
        for last in [false, true] {
            for trip in 0..TRIPS.min(2 * trips.stages) {
                for turn in 0..turns {
                    // A turn runs on one warpgroup; without turns, every
                    // thread of the block runs the trip.
                    let threads: Vec<i64> = match trips.turn {
                        Some(_) => LANES.iter().map(|l| (turn % groups) * 128 + l).collect(),
                        None => (0..groups)
                            .flat_map(|g| LANES.map(|l| g * 128 + l))
                            .collect(),
                    };
                    for thread in threads.into_iter().filter(|t| *t < self.threads) {
                        let env = Env {
                            witness: self,
                            guards,
                            last,
                            trip,
                            turn,
                            thread,
                        };
                        if !env.runs() {
                            continue;
                        }
                        let value = |i: &Int| i.eval(&|n: &str| env.value(n));
                        let Some(at) = value(&read.offset) else {
                            continue;
                        };
                        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
                        for (v, (flo, fhi)) in filled.iter().zip(&reaches) {
                            let o = value(&v.offset)?;
                            lo = lo.min(o.checked_add(*flo)?);
                            hi = hi.max(o.checked_add(*fhi)?);
                        }
                        // A load past its buffer is the bound check's to
                        // report, at the load.
                        if lo < 0 || hi >= len {
                            return None;
                        }
                        if at.checked_add(rlo)? < lo || at.checked_add(rhi)? > hi {
                            let turn = match trips.turn {
                                Some((_, first)) => first.eval(&|n: &str| env.base(n))? + turn,
                                None => 0,
                            };
                            return Some(At { trip, turn, thread });
                        }
                    }
                }
            }
        }
        None
    }
}

/// The values of the names at one trip, turn and thread, each loop of the
/// body at its first trip or (`last`) its last.
struct Env<'a> {
    witness: &'a Witness<'a>,
    guards: &'a [Guard<'a>],
    last: bool,
    trip: i64,
    turn: i64,
    thread: i64,
}

impl Env<'_> {
    /// Whether the statement runs here: every loop around it has trips and
    /// every `if` around it takes its branch (known to; else it is skipped).
    fn runs(&self) -> bool {
        let value = |i: &Int| i.eval(&|n: &str| self.value(n));
        self.guards.iter().all(|g| match g {
            Guard::Loop { start, end, .. } => {
                matches!((value(start), value(end)), (Some(a), Some(b)) if a < b)
            }
            Guard::If { cond, holds } => cond.at(&|n: &str| self.value(n)) == Some(*holds),
        })
    }

    /// A name's value; `None` for a name it does not know (the sample is
    /// skipped, never guessed).
    fn value(&self, n: &str) -> Option<i64> {
        let w = self.witness;
        if n == w.trips.counter {
            return w
                .trips
                .start
                .eval(&|m: &str| self.base(m))?
                .checked_add(self.trip);
        }
        if let Some((name, first)) = w.trips.turn
            && n == name
        {
            return first.eval(&|m: &str| self.base(m))?.checked_add(self.turn);
        }
        // The innermost loop of that name; its bounds see the loops around it.
        if let Some(i) = self
            .guards
            .iter()
            .rposition(|g| matches!(g, Guard::Loop { var, .. } if *var == n))
        {
            let Guard::Loop { start, end, .. } = &self.guards[i] else {
                unreachable!("found as a loop")
            };
            let outer = Env {
                guards: &self.guards[..i],
                ..*self
            };
            let at = |i: &Int| i.eval(&|m: &str| outer.value(m));
            return match self.last {
                false => at(start),
                true => at(end)?.checked_sub(1),
            };
        }
        if Builtin::parse(n) == Some(Builtin::Thread) {
            return Some(self.thread);
        }
        self.base(n)
    }

    /// The values of the launch: block indices 0, the extents large.
    fn base(&self, n: &str) -> Option<i64> {
        match Builtin::parse(n) {
            Some(Builtin::Block(_)) => Some(0),
            Some(Builtin::Thread) => None,
            None if n == SM_COUNT => Some(SMS),
            None => self
                .witness
                .extents
                .iter()
                .any(|e| e == n)
                .then_some(EXTENT),
        }
    }
}
