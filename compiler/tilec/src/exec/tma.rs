//! The executor's pipelines: TMA boxes landing in shared memory, and the
//! loop that runs a pipeline's producer and consumers.
//!
//! The compiler places the protocol (full and empty barriers per stage), so
//! the executor runs one schedule of it: each iteration's boxes land, then
//! the consumers run the body. A box write happens after every consumer
//! access of the stage's previous round (the empty barrier) and before
//! every access of this round (the full barrier), so it leaves no record
//! for the race check; the checker keeps other writes out of stage buffers.

use super::{Block, ExecError, Result, Touch};
use crate::ir::{Addr, Inst, InstKind, Param, Space};
use crate::span::Span;

impl<'a> Block<'a> {
    /// Runs a pipeline's iterations: loads land, then the body runs.
    pub(super) fn pipeline(
        &mut self,
        id: usize,
        [start, end]: [usize; 2],
        load: &'a [Inst],
        body: &'a [Inst],
        span: Span,
    ) -> Result<()> {
        let (s, e) = (
            self.uniform(start, span, "pipeline bounds differ")?,
            self.uniform(end, span, "pipeline bounds differ")?,
        );
        for k in s..e {
            self.counters.insert(id, k);
            self.scope_ints(Some(id), span)?;
            for l in load {
                if let InstKind::TmaLoad { map, origin, dst } = &l.kind {
                    self.tma_load(*map, origin, dst, l.span)?;
                }
            }
            self.insts(body)?;
        }
        Ok(())
    }

    /// One box of tensor map `map` at `origin` into shared memory at `dst`:
    /// zeros outside the tensor, through the map's swizzle.
    fn tma_load(&mut self, map: usize, origin: &[usize], dst: &Addr, span: Span) -> Result<()> {
        let m = &self.ir.tensor_maps[map];
        let Param::Tensor { elem, .. } = self.ir.params[m.param] else {
            unreachable!("the verifier's tensor maps are of tensors")
        };
        let Space::Shared(buffer) = dst.space else {
            unreachable!("the verifier's TMA loads write shared memory")
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
        let start = self.uniform(dst.index, span, "a TMA box's destination differs")?;
        let swizzle = m.swizzle(elem);
        let total: i64 = dims.iter().map(|d| d.2).product();
        for i in 0..total {
            // Box element `i`, innermost dimension first, lands at `start + i`.
            let (mut rest, mut index, mut inside) = (i, 0i64, true);
            for (d, &(extent, stride, size)) in dims.iter().enumerate() {
                let g = at[d] + rest % size;
                rest /= size;
                inside &= (0..extent).contains(&g);
                index += g * stride;
            }
            let v = if inside {
                let p = m.param;
                let g = self.global_index(p, index, 0, span, "read")?;
                match self.overlay.get(&(p, g)) {
                    Some(v) => *v,
                    None => self.globals[p].as_ref().map_or(0.0, |t| t.data[g]),
                }
            } else {
                0.0
            };
            let logical = start + i;
            let physical = swizzle.map_or(logical, |sw| sw.apply(logical));
            let slot = self
                .shared_slot(buffer, physical, 0, span, "writes")
                .map_err(|e| ExecError {
                    message: format!("a TMA box {}", e.message),
                    ..e
                })?;
            self.shared[buffer].values[slot] = v;
            self.shared[buffer].written[slot] = true;
            self.touches[buffer][slot] = Touch {
                epoch: self.epoch,
                ..Touch::default()
            };
        }
        Ok(())
    }
}
