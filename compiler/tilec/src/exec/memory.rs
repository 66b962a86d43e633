//! The block's memory as the executor sees it: reads and writes of
//! global tensors, shared buffers and registers, each bounded, each shared
//! access checked for races and for a cp.async (`cp_async.rs`) or TMA load
//! still in flight, global writes recorded so that two blocks writing one
//! element are caught.

use super::{Block, ExecError, Result, Write, param_name, round, warpgroup};
use crate::ir::{Addr, InstKind, Param, ScalarRef, Space};
use crate::span::Span;
use std::collections::hash_map::Entry;

impl<'a> Block<'a> {
    /// The element of shared buffer `s` that thread `t` reads or writes at
    /// `i`: inside the buffer, and with no cp.async in flight to it (what
    /// the access sees would depend on when the copy lands).
    pub(super) fn shared_slot(
        &self,
        s: usize,
        i: i64,
        t: usize,
        span: Span,
        what: &str,
    ) -> Result<usize> {
        let len = self.shared[s].values.len();
        let i = self.local_index(i, len, t, span, &|| {
            format!("shared buffer {}", self.ir.shared_label(s))
        })?;
        self.in_stage(s, i, t, span)?;
        match self.in_flight[s][i] {
            None => Ok(i),
            Some((owner, at)) => Err(ExecError {
                message: format!(
                    "thread {t} of block {:?} {what} {}[{i}] while thread {owner}'s cp.async to it is still in flight",
                    self.block,
                    self.ir.shared_label(s)
                ),
                span,
                label: format!("thread {t} {what} it here"),
                other: Some((at, format!("thread {owner} issued the copy here"))),
                help: Some(
                    "retire the copy with cp_async_wait(n), then sync(), before touching its destination",
                ),
            }),
        }
    }

    pub(super) fn scalar(&self, s: &ScalarRef) -> f64 {
        match s {
            // The value the kernel receives: rounded to the parameter's type.
            ScalarRef::Param(p) => {
                let v = self.launch.scalars.get(*p).copied().unwrap_or(0.0);
                match &self.ir.params[*p] {
                    Param::Scalar { elem, .. } => round(*elem, v),
                    Param::Tensor { .. } => v,
                }
            }
            ScalarRef::Literal(v) => *v,
        }
    }

    pub(super) fn read(&mut self, a: &Addr, t: usize, span: Span) -> Result<f64> {
        self.read_at(a, 0, t, span)
    }

    pub(super) fn write(&mut self, a: &Addr, t: usize, v: f64, span: Span) -> Result<()> {
        self.write_at(a, 0, t, v, span)
    }

    /// Reads the element `delta` past `a` (the lanes of a vector).
    pub(super) fn read_at(&mut self, a: &Addr, delta: i64, t: usize, span: Span) -> Result<f64> {
        let i = self.ints[t][a.index] + delta;
        if a.guard.is_some_and(|g| self.ints[t][g] <= 0) {
            self.padding = true;
            return Ok(0.0); // a guarded load outside the tensor reads 0
        }
        match a.space {
            Space::Global(p) => {
                let i = self.global_index(p, i, t, span, "read")?;
                if self.written[p] {
                    self.global_read(p, i, t as u32, span)?;
                }
                Ok(self.global_value(p, i))
            }
            Space::Shared(s) => self.read_shared(s, i, t, span),
            Space::Registers(r) => self.register(t, r, i, span),
        }
    }

    /// Element `i` (inside) of global tensor `p` as this block sees it:
    /// its own latest write, else the launch's input.
    pub(super) fn global_value(&self, p: usize, i: usize) -> f64 {
        match self.overlay.get(&(p, i)) {
            Some(&w) => self.writes[w].value,
            None => self.globals[p].as_ref().map_or(0.0, |g| g.data[i]),
        }
    }

    /// Register `i` of array `r` of thread `t`: inside the array, and
    /// written before.
    pub(super) fn register(&self, t: usize, r: usize, i: i64, span: Span) -> Result<f64> {
        let len = self.registers[t][r].values.len();
        let i = self.local_index(i, len, t, span, &|| {
            format!("register array {}", self.ir.register_label(r))
        })?;
        if !self.registers[t][r].written[i] {
            let mut e = self.err(
                t,
                span,
                format!(
                    "reads register {}[{i}], which nothing wrote",
                    self.ir.register_label(r)
                ),
            );
            e.help = Some(
                "give the registers a first value where they are made (`registers<f32>(shape(tCgC), 0.0)` for a sum), or write every element before reading it",
            );
            return Err(e);
        }
        Ok(self.registers[t][r].values[i])
    }

    /// Thread `t` reads element `i` of shared buffer `s`.
    pub(super) fn read_shared(&mut self, s: usize, i: i64, t: usize, span: Span) -> Result<f64> {
        let i = self.shared_slot(s, i, t, span, "reads")?;
        if !self.shared[s].written[i] {
            let mut e = self.err(
                t,
                span,
                format!(
                    "reads {}[{i}] of shared memory, which nothing wrote",
                    self.ir.shared_label(s)
                ),
            );
            // In a pipeline's body, a stage read before its box has landed
            // is most likely another iteration's; any other buffer, one
            // whose load comes after the read or is missing.
            if let Some(k) = self.iteration {
                e.label = format!("iteration {k} of the pipeline reads it here");
                e.help = Some(match self.stage_buffer(s) {
                    true => {
                        "the body reads the stage its own iteration loaded: index the stage buffers by the pipeline's stage name (`smA[_, _, s]`)"
                    }
                    false => {
                        "this buffer is not one of the pipeline's stages: load it before it is read (a `copy_tma` before the pipeline, as examples/attention_sm90.tile loads Q)"
                    }
                });
            }
            return Err(e);
        }
        self.touch(s, i, t as u32, false, span)?;
        Ok(self.shared[s].values[i])
    }

    /// Whether the pipeline's load block writes shared buffer `s`.
    fn stage_buffer(&self, s: usize) -> bool {
        match self.ir.pipeline().map(|p| &p.kind) {
            Some(InstKind::Pipeline { load, .. }) => crate::ir::stores::stages(load).contains(&s),
            _ => false,
        }
    }

    /// Thread `t` writes `v` to element `i` of shared buffer `s`.
    pub(super) fn write_shared(
        &mut self,
        s: usize,
        i: i64,
        t: usize,
        v: f64,
        span: Span,
    ) -> Result<()> {
        let i = self.shared_slot(s, i, t, span, "writes")?;
        self.touch(s, i, t as u32, true, span)?;
        self.shared[s].values[i] = v;
        self.shared[s].written[i] = true;
        Ok(())
    }

    pub(super) fn write_at(
        &mut self,
        a: &Addr,
        delta: i64,
        t: usize,
        v: f64,
        span: Span,
    ) -> Result<()> {
        let i = self.ints[t][a.index] + delta;
        if a.guard.is_some_and(|g| self.ints[t][g] <= 0) {
            return Ok(()); // a guarded store outside the tensor does nothing
        }
        match a.space {
            Space::Global(p) => self.write_global(p, i, t, v, span)?,
            Space::Shared(s) => self.write_shared(s, i, t, v, span)?,
            Space::Registers(r) => {
                let len = self.registers[t][r].values.len();
                let i = self.local_index(i, len, t, span, &|| {
                    format!("register array {}", self.ir.register_label(r))
                })?;
                self.registers[t][r].values[i] = v;
                self.registers[t][r].written[i] = true;
            }
        }
        Ok(())
    }

    /// Thread `t` writes `v` to element `i` of global tensor `p`.
    pub(super) fn write_global(
        &mut self,
        p: usize,
        i: i64,
        t: usize,
        v: f64,
        span: Span,
    ) -> Result<()> {
        let i = self.global_index(p, i, t, span, "write")?;
        // A reference keeps f64's precision, but stores no value past its
        // tensor's range: that is the type's infinity, as a kernel storing
        // it gets (an f16 of 1.9e8 is inf).
        let v = match &self.ir.params[p] {
            Param::Tensor { elem, .. } if self.launch.exact && round(*elem, v).is_infinite() => {
                round(*elem, v)
            }
            _ => v,
        };
        if let Some(&(reader, at)) = self.in_flight_sources.get(&(p, i)).and_then(|r| r.first()) {
            return Err(ExecError {
                message: format!(
                    "thread {t} writes element {i} of `{}`, which thread {reader}'s cp.async in flight reads: the copy may read it before or after the write",
                    param_name(self.ir, p)
                ),
                span,
                label: format!("thread {t} writes it here"),
                other: Some((at, format!("thread {reader}'s copy reads it here"))),
                help: Some(
                    "wait for the copy (cp_async_wait) before writing what it reads: a barrier does not wait for it",
                ),
            });
        }
        let me = self.access(t as u32, span);
        if let Some((e, _)) = self.readers.get(&(p, i))
            && e.epoch == self.epoch
            && let Some(r) = e.readers.iter().flatten().find(|r| self.unordered(r, &me))
        {
            return Err(self.global_race(
                p,
                i,
                (r.thread, r.span, "reads"),
                (t as u32, span, "writes"),
            ));
        }
        if let Some((epoch, w)) = self.writers.insert((p, i), (self.epoch, me))
            && epoch == self.epoch
            && self.unordered(&w, &me)
        {
            let (other, at) = (w.thread, w.span);
            return Err(ExecError {
                message: format!(
                    "threads {other} and {t} of block {:?} both write element {i} of `{}` with no barrier between: the result depends on their order",
                    self.block,
                    param_name(self.ir, p)
                ),
                span,
                label: format!("thread {t} writes it here"),
                other: Some((at, format!("thread {other} writes it here"))),
                help: Some(
                    "give each thread its own elements (check that the thread layout does not map two threads to one element), have one thread write what all share (`if thread.x == 0 { ... }`), or order the writes with sync()",
                ),
            });
        }
        // One record an element, its latest value: a loop storing one
        // element a million times keeps one.
        match self.overlay.entry((p, i)) {
            Entry::Occupied(w) => {
                let w = &mut self.writes[*w.get()];
                (w.value, w.span) = (v, span);
            }
            Entry::Vacant(at) => {
                at.insert(self.writes.len());
                self.writes.push(Write {
                    param: p,
                    index: i,
                    value: v,
                    span,
                });
            }
        }
        Ok(())
    }

    /// Thread `t` reads element `i` of global tensor `p`, which the kernel
    /// writes: another thread's write of it in this barrier epoch is a race
    /// (its warp may run before or after this one's), and the read is
    /// recorded for the writes to come and for other blocks' writes.
    fn global_read(&mut self, p: usize, i: usize, t: u32, span: Span) -> Result<()> {
        let me = self.access(t, span);
        if let Some(&(epoch, w)) = self.writers.get(&(p, i))
            && epoch == self.epoch
            && self.unordered(&w, &me)
        {
            return Err(self.global_race(p, i, (w.thread, w.span, "writes"), (t, span, "reads")));
        }
        let epoch = self.epoch;
        let (e, in_reduce) = self.readers.entry((p, i)).or_default();
        *in_reduce |= self.in_reduce_body;
        e.enter(epoch);
        e.read_by(me);
        Ok(())
    }

    /// A TMA load's read of element `i` of global tensor `p`, which the
    /// kernel writes, issued by thread `t`: recorded for other blocks'
    /// writes (a race between blocks, as a thread's read is), not for this
    /// block's threads, whose accesses after their wait for the box are
    /// ordered after it (in a turn, its warpgroup's).
    pub(super) fn async_global_read(&mut self, p: usize, i: usize, t: usize, span: Span) {
        if !self.written[p] {
            return;
        }
        let me = self.access(t as u32, span);
        let (e, in_reduce) = self.readers.entry((p, i)).or_default();
        *in_reduce |= self.in_reduce_body;
        if e.readers[0].is_none() {
            // In the epoch the record has (an earlier one where it is
            // new): no write of this block's threads in this one meets it.
            e.readers[0] = Some(me);
        }
    }

    /// Thread `t`'s access by statement `span`, now.
    fn access(&self, t: u32, span: Span) -> Access {
        Access {
            thread: t,
            span,
            turn_barriers: self.turn_barriers[warpgroup(t as usize)],
        }
    }

    /// Whether `before` (in this barrier epoch) and `now` may run in either
    /// order: two threads, unless a barrier of their warpgroup's turn came
    /// between.
    fn unordered(&self, before: &Access, now: &Access) -> bool {
        before.thread != now.thread
            && (warpgroup(before.thread as usize) != warpgroup(now.thread as usize)
                || before.turn_barriers == now.turn_barriers)
    }

    /// Two threads of this block at one global element with no barrier
    /// between, one of them writing: `other` then `mine` (thread, statement,
    /// what it does).
    fn global_race(
        &self,
        p: usize,
        i: usize,
        other: (u32, Span, &str),
        mine: (u32, Span, &str),
    ) -> ExecError {
        ExecError {
            message: format!(
                "thread {} of block {:?} {} element {i} of `{}` and thread {} {} it with no barrier between: what is read depends on the order the threads run in",
                other.0,
                self.block,
                other.2,
                param_name(self.ir, p),
                mine.0,
                mine.2
            ),
            span: mine.1,
            label: format!("thread {} {} it here", mine.0, mine.2),
            other: Some((other.1, format!("thread {} {} it here", other.0, other.2))),
            help: Some(
                "order them with sync(), or give each thread the elements it writes to read alone",
            ),
        }
    }

    /// Records an access to shared element `i`; two threads in one epoch
    /// with at least one write is a race.
    pub(super) fn touch(
        &mut self,
        s: usize,
        i: usize,
        t: u32,
        write: bool,
        span: Span,
    ) -> Result<()> {
        let epoch = self.epoch;
        let me = self.access(t, span);
        self.touches[s][i].enter(epoch);
        let e = self.touches[s][i];
        let conflict = if write {
            match e.writer {
                Some(w) if self.unordered(&w, &me) => Some((w.thread, w.span, "writes")),
                _ => e
                    .readers
                    .iter()
                    .flatten()
                    .find(|r| self.unordered(r, &me))
                    .map(|r| (r.thread, r.span, "reads")),
            }
        } else {
            e.writer
                .filter(|w| self.unordered(w, &me))
                .map(|w| (w.thread, w.span, "writes"))
        };
        if let Some((other, other_span, what)) = conflict {
            let mine = if write { "writes" } else { "reads" };
            return Err(ExecError {
                message: format!(
                    "shared-memory race on {}[{i}] in block {:?}: thread {other} {what} it and thread {t} {mine} it with no barrier between",
                    self.ir.shared_label(s),
                    self.block
                ),
                span,
                label: format!("thread {t} {mine} it here"),
                other: Some((other_span, format!("thread {other} {what} it here"))),
                // Two warpgroups' turns: they meet nowhere. One statement,
                // two threads, one element: no barrier can order them; the
                // layouts map both threads there.
                help: if self.in_turns && warpgroup(other as usize) != warpgroup(t as usize) {
                    Some(
                        "the two threads are of two warpgroups, whose turns of the pipeline run beside each other and meet nowhere: give each warpgroup shared memory of its own (a mode of the buffer sliced by thread.x / 128)",
                    )
                } else {
                    (other_span == span).then_some(
                        "both threads reach this element through one statement: check that the shared layout's strides do not overlap and that the thread layout maps each thread to elements of its own",
                    )
                },
            });
        }
        let e = &mut self.touches[s][i];
        if write {
            e.writer = Some(me);
        } else {
            e.read_by(me);
        }
        Ok(())
    }

    pub(super) fn global_index(
        &self,
        p: usize,
        i: i64,
        t: usize,
        span: Span,
        what: &str,
    ) -> Result<usize> {
        let len = self.globals[p].as_ref().map_or(0, |g| g.data.len());
        usize::try_from(i).ok().filter(|&i| i < len).ok_or_else(|| {
            self.err(
                t,
                span,
                format!(
                    "{what}s element {i} of `{}`, outside its {len} elements",
                    param_name(self.ir, p)
                ),
            )
        })
    }

    /// `i` inside a buffer of `len` elements; `what` names the buffer, and
    /// is only called for the error (every access of every thread comes
    /// through here: formatting each name took half the executor's time).
    pub(super) fn local_index(
        &self,
        i: i64,
        len: usize,
        t: usize,
        span: Span,
        what: &dyn Fn() -> String,
    ) -> Result<usize> {
        usize::try_from(i).ok().filter(|&i| i < len).ok_or_else(|| {
            self.err(
                t,
                span,
                format!(
                    "accesses element {i} of {}, outside its {len} elements",
                    what()
                ),
            )
        })
    }
}

/// Who touched a shared element in the current barrier epoch: the last
/// writer, and up to two distinct readers (enough to name one that is not
/// the thread writing now).
#[derive(Clone, Copy, Default)]
pub(super) struct Touch {
    pub(super) epoch: u32,
    pub(super) writer: Option<Access>,
    pub(super) readers: [Option<Access>; 2],
}

/// A thread's access: the thread, its statement, and how many barriers
/// its warpgroup had met in its pipeline turns by then (which order it
/// before that warpgroup's later accesses, not another's).
#[derive(Clone, Copy)]
pub(super) struct Access {
    pub(super) thread: u32,
    pub(super) span: Span,
    pub(super) turn_barriers: u32,
}

impl Touch {
    /// Starts the record afresh in a new barrier epoch.
    pub(super) fn enter(&mut self, epoch: u32) {
        if self.epoch != epoch {
            *self = Touch {
                epoch,
                ..Touch::default()
            };
        }
    }

    /// Records a read, keeping two distinct readers at most, so that any
    /// later write that races with a read races with a reader kept: a
    /// reader of a warpgroup not kept takes the place of one of a
    /// warpgroup kept twice (readers of two warpgroups race with every
    /// write, which one of them is not ordered with), and a reader that
    /// its warpgroup's own barriers have ordered before this one gives way
    /// to it (a later write that races with the old read races with this).
    pub(super) fn read_by(&mut self, a: Access) {
        let group = |r: Access| warpgroup(r.thread as usize);
        match self.readers {
            [None, _] => self.readers[0] = Some(a),
            [Some(r), None] if r.thread != a.thread => self.readers[1] = Some(a),
            [Some(r0), Some(r1)] => {
                let slot = if group(r0) != group(a) && group(r1) != group(a) {
                    (group(r0) == group(r1)).then_some(1)
                } else {
                    [r0, r1]
                        .iter()
                        .position(|r| group(*r) == group(a) && r.turn_barriers != a.turn_barriers)
                };
                if let Some(i) = slot {
                    self.readers[i] = Some(a);
                }
            }
            _ => {}
        }
    }
}
