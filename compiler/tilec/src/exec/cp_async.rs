//! cp.async on the executor: in, a thread's copies of elements (issued),
//! its fences and its waits; out, each copy landing in shared memory when a
//! wait retires its group, as on the GPU, and until then its destination
//! untouchable and its global source, where the kernel writes that tensor,
//! unwritable (`memory.rs` refuses both); its destination written from the
//! issue's barrier epoch on, for the race check.

use super::{Block, Result};
use crate::ir::{Addr, Space};
use crate::span::Span;

/// One element of a cp.async, landing when its group is retired.
struct Landing {
    buffer: usize,
    index: usize,
    value: f64,
    span: Span,
    /// The element of a tensor the kernel writes that it reads: read at
    /// any time until the group retires, on the GPU.
    source: Option<(usize, usize)>,
}

/// A thread's cp.async groups: the open one and the fenced ones, oldest first.
#[derive(Default)]
pub(super) struct AsyncGroups {
    open: Vec<Landing>,
    fenced: std::collections::VecDeque<Vec<Landing>>,
}

impl<'a> Block<'a> {
    /// Issues one element of a cp.async: it is in flight until a wait
    /// retires its group, and no one may touch it before.
    pub(super) fn issue(
        &mut self,
        a: &Addr,
        delta: i64,
        t: usize,
        value: f64,
        source: Option<(usize, usize)>,
        span: Span,
    ) -> Result<()> {
        let Space::Shared(s) = a.space else {
            return Err(self.err(
                t,
                span,
                "issues a cp.async to a place outside shared memory".into(),
            ));
        };
        let i = self.shared_slot(s, self.ints[t][a.index] + delta, t, span, "writes")?;
        // The GPU may write it from the issue on: a write in this barrier
        // epoch too, so that another thread's read of it earlier in the
        // epoch races (a double buffer refilled with no barrier after its
        // reads); later ones meet it in flight.
        self.touch(s, i, t as u32, true, span)?;
        self.in_flight[s][i] = Some((t as u32, span));
        self.asyncs[t].open.push(Landing {
            buffer: s,
            index: i,
            value,
            span,
            source,
        });
        if let Some(at) = source {
            self.in_flight_sources
                .entry(at)
                .or_default()
                .push((t as u32, span));
        }
        Ok(())
    }

    /// The element of a tensor the kernel writes that thread `t`'s
    /// cp.async reads `delta` past `src` (none where its guard fails, or
    /// the tensor is only read): the GPU's copy reads it at any time until
    /// its group retires.
    pub(super) fn async_source(
        &self,
        src: &Addr,
        delta: i64,
        t: usize,
        span: Span,
    ) -> Result<Option<(usize, usize)>> {
        let Space::Global(p) = src.space else {
            return Ok(None);
        };
        if !self.written[p] || src.guard.is_some_and(|g| self.ints[t][g] <= 0) {
            return Ok(None);
        }
        let i = self.global_index(p, self.ints[t][src.index] + delta, t, span, "read")?;
        Ok(Some((p, i)))
    }

    /// Thread `t`'s cp.async of `span` no longer reads `at`: its group
    /// retired.
    fn retire_source(&mut self, at: (usize, usize), t: u32, span: Span) {
        if let Some(readers) = self.in_flight_sources.get_mut(&at) {
            if let Some(k) = readers.iter().position(|&(r, s)| r == t && s == span) {
                readers.swap_remove(k);
            }
            if readers.is_empty() {
                self.in_flight_sources.remove(&at);
            }
        }
    }

    /// Thread `t`'s `cp_async_fence()`: its open copies become a group.
    pub(super) fn fence_async(&mut self, t: usize) {
        let group = std::mem::take(&mut self.asyncs[t].open);
        self.asyncs[t].fenced.push_back(group);
    }

    /// Thread `t`'s `cp_async_wait(n)`: its groups but the newest `n` land.
    pub(super) fn wait_async(&mut self, t: usize, n: usize) -> Result<()> {
        while self.asyncs[t].fenced.len() > n {
            let group = self.asyncs[t].fenced.pop_front().unwrap_or_default();
            for l in group {
                // The copy lands now: a write by this thread, in this epoch.
                self.in_flight[l.buffer][l.index] = None;
                if let Some(at) = l.source {
                    self.retire_source(at, t as u32, l.span);
                }
                self.touch(l.buffer, l.index, t as u32, true, l.span)?;
                self.shared[l.buffer].values[l.index] = l.value;
                self.shared[l.buffer].written[l.index] = true;
            }
        }
        Ok(())
    }
}
