//! The executor's pipelines: TMA boxes landing in shared memory, and the
//! loop that runs a pipeline's producer and consumers.
//!
//! The compiler places the protocol (full and empty barriers per stage), so
//! the executor runs one schedule of it: each iteration's boxes land, then
//! the consumers run the body. What the protocol orders is a stage, not an
//! element, so the executor checks that the kernel keeps to its stages:
//! every element a box writes is tagged with its iteration; a box may land
//! only on elements whose last box is `S` iterations old (the producer runs
//! up to `S` ahead, so a younger one may still be in use), and the body of
//! iteration `k` may touch a tagged element only if iteration `k` wrote it
//! (any other may be rewritten under it). Within those rules a box write
//! happens after every consumer access of the stage's previous round (the
//! empty barrier) and before every access of this round (the full
//! barrier), so it leaves no record for the race check; the checker keeps
//! other writes out of stage buffers.

use super::{Access, Block, ExecError, Result, Touch};
use crate::ir::{Addr, Inst, InstKind, Param, Space, Turn};
use crate::span::Span;

/// What [`Block::tma_box`] calls per element of a box: its element of the
/// tensor (`None` outside it) and its slot in the shared buffer.
type BoxElement<'f, 'a> = dyn FnMut(&mut Block<'a>, Option<usize>, usize) -> Result<()> + 'f;

impl<'a> Block<'a> {
    /// Runs a pipeline's iterations: loads land, then the body runs. With
    /// turns, each turn's iterations and then its `after` run on its
    /// warpgroup's threads alone, one turn after the other: the GPU's
    /// warpgroups run theirs at once, which nothing between them can tell
    /// apart (they meet at no barrier, a turn's `sync()` being its
    /// warpgroup's, so the race check holds no access of one warpgroup
    /// ordered against another's).
    pub(super) fn pipeline(
        &mut self,
        id: usize,
        [start, end]: [usize; 2],
        stages: u32,
        turn: Option<&Turn>,
        [load, body, after]: [&'a [Inst]; 3],
        span: Span,
    ) -> Result<()> {
        let (s, e) = (
            self.uniform(start, span, "pipeline bounds differ")?,
            self.uniform(end, span, "pipeline bounds differ")?,
        );
        self.stage_tags = self
            .shared
            .iter()
            .map(|b| vec![None; b.values.len()])
            .collect();
        let turns = match turn {
            Some(t) => (
                self.uniform(t.start, span, "pipeline bounds differ")?,
                self.uniform(t.end, span, "pipeline bounds differ")?,
            ),
            None => (0, 1),
        };
        let outer = self.active.clone();
        self.in_turns = turn.is_some();
        // The trip, counted on across the turns from the loop's start.
        let mut trip = s;
        for j in turns.0..turns.1 {
            if let Some(t) = turn {
                let group = (j - turns.0).rem_euclid(i64::from(t.groups)) as usize;
                self.active = (0..self.threads)
                    .map(|th| outer[th] && super::warpgroup(th) == group)
                    .collect();
                self.counters.insert(t.id, j);
                self.scope_ints(Some(t.id));
            }
            self.trips(id, [s, e], stages, [load, body], &mut trip, span)?;
            // (Empty without turns.)
            self.insts(after)?;
        }
        self.active = outer;
        self.in_turns = false;
        // After the pipeline every box has landed and been waited for.
        self.stage_tags.clear();
        Ok(())
    }

    /// One turn's trips of a pipeline (the whole loop, without turns),
    /// `trip` counting them across turns.
    fn trips(
        &mut self,
        id: usize,
        [s, e]: [i64; 2],
        stages: u32,
        [load, body]: [&'a [Inst]; 2],
        trip: &mut i64,
        span: Span,
    ) -> Result<()> {
        for k in s..e {
            let t = *trip;
            *trip += 1;
            self.counters.insert(id, k);
            self.stopped(span)?;
            self.scope_ints(Some(id));
            for l in load {
                // The loads run here, not through `insts`: their origins
                // are checked defined as theirs are.
                self.defined_for(l)?;
                if let InstKind::TmaLoad {
                    map,
                    origin,
                    dst,
                    parts,
                } = &l.kind
                {
                    // A multicast load's boxes are the same in every block
                    // of the cluster (the verifier's rule), so the block's
                    // own issue and its peers' bring it all of them.
                    for part in 0..*parts as i64 {
                        self.tma_load(*map, origin, dst, part, (t, stages as i64), l.span)?;
                    }
                }
            }
            self.iteration = Some(t);
            self.insts(body)?;
            self.iteration = None;
        }
        Ok(())
    }

    /// In a pipeline's body: element `i` of buffer `s` holds what the
    /// current iteration's boxes brought, or no box's.
    pub(super) fn in_stage(&self, s: usize, i: usize, t: usize, span: Span) -> Result<()> {
        let (Some(k), Some(Some((j, at)))) = (self.iteration, self.stage_tags.get(s).map(|b| b[i]))
        else {
            return Ok(());
        };
        if j == k {
            return Ok(());
        }
        Err(ExecError {
            message: format!(
                "thread {t} of block {:?} touches {}[{i}] in iteration {k} of the pipeline, but the box of iteration {j} landed there: the producer may rewrite it meanwhile",
                self.block,
                self.ir.shared_label(s)
            ),
            span,
            label: format!("iteration {k} touches it here"),
            other: Some((at, format!("iteration {j}'s box wrote it"))),
            help: Some(
                "the body reads the stage its own iteration loaded: index the stages by the pipeline's stage name",
            ),
        })
    }

    /// A TMA load outside a pipeline, by the whole block: a barrier (the
    /// threads are done with the tile), thread 0's boxes land (zeros
    /// outside the tensor, leaving no record for the race check: every
    /// thread waits for them), and the threads go on. In a pipeline's
    /// turn, by the turn's warpgroup: its first thread's boxes land as
    /// that thread's writes before the warpgroup's barrier ahead of them,
    /// so that its threads' accesses after the wait are ordered after
    /// them and another warpgroup's are not.
    pub(super) fn block_loads(&mut self, loads: &'a [Inst], span: Span) -> Result<()> {
        self.meet(span)?;
        let issuer = self.issuer();
        let landed = self.in_turns.then(|| Access {
            thread: issuer as u32,
            span,
            turn_barriers: self.turn_barriers[super::warpgroup(issuer)].saturating_sub(1),
        });
        for l in loads {
            if let InstKind::TmaLoad {
                map, origin, dst, ..
            } = &l.kind
            {
                let Space::Shared(buffer) = dst.space else {
                    unreachable!("the verifier's TMA loads write shared memory")
                };
                let p = self.ir.tensor_maps[*map].param;
                self.tma_box(*map, origin, dst, 0, l.span, &mut |b, global, slot| {
                    if let Some(i) = global {
                        b.async_global_read(p, i, issuer, l.span);
                    }
                    match landed {
                        // In a turn, the box's write meets what another
                        // warpgroup did to the element (its barrier orders
                        // only its own threads' accesses before it):
                        // checked as the issuer's write after the barrier,
                        // then kept as one before it.
                        Some(w) => {
                            b.touch(buffer, slot, issuer as u32, true, l.span)?;
                            b.touches[buffer][slot].writer = Some(w);
                        }
                        None => {
                            b.touches[buffer][slot] = Touch {
                                epoch: b.epoch,
                                ..Touch::default()
                            }
                        }
                    }
                    b.shared[buffer].values[slot] = global.map_or(0.0, |i| b.global_value(p, i));
                    b.shared[buffer].written[slot] = true;
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// A TMA store by the whole block: a barrier (the threads' writes to
    /// the tile are done), then thread 0's boxes read shared memory and
    /// write the tensor where they lie inside it. Their reads stand in the
    /// barrier's epoch as thread 0's until the store's wait (a barrier), so
    /// that another thread's write to the buffer before it is a race. In a
    /// pipeline's turn, the first thread of the turn's warpgroup's, and
    /// its warpgroup's barriers.
    pub(super) fn tma_stores(&mut self, stores: &'a [Inst], span: Span) -> Result<()> {
        self.meet(span)?;
        let issuer = self.issuer();
        for s in stores {
            if let InstKind::TmaStore { map, origin, src } = &s.kind {
                let Space::Shared(buffer) = src.space else {
                    unreachable!("the verifier's TMA stores read shared memory")
                };
                // What the box writes: its elements inside the tensor.
                let mut values = Vec::new();
                self.tma_box(*map, origin, src, 0, s.span, &mut |b, global, slot| {
                    if let Some(i) = global {
                        values.push((i, b.read_shared(buffer, slot as i64, issuer, s.span)?));
                    }
                    Ok(())
                })?;
                let p = self.ir.tensor_maps[*map].param;
                for (i, v) in values {
                    self.write_global(p, i as i64, issuer, v, s.span)?;
                }
            }
        }
        Ok(())
    }

    /// The thread that issues a block's TMA copy: thread 0, or in a
    /// pipeline's turn the first thread of the turn's warpgroup.
    fn issuer(&self) -> usize {
        match self.in_turns {
            true => self.active.iter().position(|a| *a).unwrap_or(0),
            false => 0,
        }
    }

    /// Box `part` of a load of tensor map `map` at `origin` into shared
    /// memory at `dst` (`part` boxes further along the map's stacking
    /// dimension and in the buffer), for iteration `k` of a pipeline of
    /// `stages`: zeros outside the tensor, through the map's swizzle, only
    /// where no younger box's data may still be in use.
    fn tma_load(
        &mut self,
        map: usize,
        origin: &[usize],
        dst: &Addr,
        part: i64,
        (k, stages): (i64, i64),
        span: Span,
    ) -> Result<()> {
        let Space::Shared(buffer) = dst.space else {
            unreachable!("the verifier's TMA loads write shared memory")
        };
        let p = self.ir.tensor_maps[map].param;
        self.tma_box(map, origin, dst, part, span, &mut |b, global, slot| {
            let v = match global {
                Some(i) => {
                    b.async_global_read(p, i, 0, span);
                    b.global_value(p, i)
                }
                None => 0.0,
            };
            if let Some((j, at)) = b.stage_tags[buffer][slot]
                && k - j < stages
            {
                return Err(ExecError {
                    message: format!(
                        "the box of iteration {k} of the pipeline lands on {}[{slot}], where iteration {j}'s box may still be in use ({stages} stages)",
                        b.ir.shared_label(buffer)
                    ),
                    span,
                    label: format!("iteration {k}'s box"),
                    other: Some((at, format!("iteration {j}'s box"))),
                    help: Some(
                        "each iteration's boxes go to its own stage: index the stage buffers by the pipeline's stage name, and give them as many stages as the pipeline",
                    ),
                });
            }
            b.stage_tags[buffer][slot] = Some((k, span));
            b.shared[buffer].values[slot] = v;
            b.shared[buffer].written[slot] = true;
            b.touches[buffer][slot] = Touch {
                epoch: b.epoch,
                ..Touch::default()
            };
            Ok(())
        })
    }

    /// Calls `f` on each element of box `part` of tensor map `map` at
    /// `origin` (`part` boxes further along the map's stacking dimension,
    /// and in shared memory from `place`): its element of the tensor
    /// (`None` outside it) and its slot in the shared buffer, through the
    /// map's swizzle.
    fn tma_box(
        &mut self,
        map: usize,
        origin: &[usize],
        place: &Addr,
        part: i64,
        span: Span,
        f: &mut BoxElement<'_, 'a>,
    ) -> Result<()> {
        let m = &self.ir.tensor_maps[map];
        let Param::Tensor { elem, .. } = self.ir.params[m.param] else {
            unreachable!("the verifier's tensor maps are of tensors")
        };
        let Space::Shared(buffer) = place.space else {
            unreachable!("the verifier's TMA boxes are in shared memory")
        };
        let value = |id: usize| self.ints[0][id];
        let dims: Vec<(i64, i64, i64)> = m
            .dims
            .iter()
            .map(|&(e, s, n)| (value(e), value(s), n))
            .collect();
        let mut at = Vec::with_capacity(origin.len());
        for &o in origin {
            at.push(self.uniform(o, span, "a TMA box's origin differs")?);
        }
        let total: i64 = dims.iter().map(|d| d.2).product();
        let stack = m.stacking_dim();
        at[stack] += part * dims[stack].2;
        // The instructions take coordinates as signed 32-bit integers: one
        // past them wraps, as the GPU's does (a box at row 2^32 is row 0's).
        for c in &mut at {
            *c = *c as i32 as i64;
        }
        let start = self.uniform(
            place.index,
            span,
            "a TMA box's place in shared memory differs",
        )? + part * total;
        let (swizzle, p) = (m.swizzle(elem), m.param);
        for i in 0..total {
            // Box element `i`, innermost dimension first, is at `start + i`.
            let (mut rest, mut index, mut inside) = (i, 0i64, true);
            for (d, &(extent, stride, size)) in dims.iter().enumerate() {
                let g = at[d] + rest % size;
                rest /= size;
                inside &= (0..extent).contains(&g);
                index += g * stride;
            }
            let global = match inside {
                true => Some(self.global_index(p, index, 0, span, "read")?),
                false => None,
            };
            let logical = start + i;
            let physical = swizzle.map_or(logical, |sw| sw.apply(logical));
            let slot = self
                .shared_slot(buffer, physical, 0, span, "writes")
                .map_err(|e| ExecError {
                    message: format!("a TMA box {}", e.message),
                    ..e
                })?;
            f(self, global, slot)?;
        }
        Ok(())
    }
}
