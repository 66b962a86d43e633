//! A `pipeline`: a loop whose `copy_tma`s become TMA loads of boxes (one
//! tensor map per distinct map, each box's destination bounded in its
//! buffer at compile time), and whose stage holds their bytes.

use super::{Lowerer, Problem};
use crate::check::program::{Base, Op, Stmt, Turns, View};
use crate::ir::{Addr, Inst, InstKind, IntValue, Space, Turn, WARPGROUP};
use crate::span::Span;
use tilec_layout::{Builtin, Int};

/// A TMA box of a copy: its origin in the map (per dimension), and where it
/// lies in shared memory.
type TmaBox = (Vec<crate::ir::IntId>, Addr);

impl Lowerer<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pipeline(
        &mut self,
        var: &str,
        [start, end]: [&Int; 2],
        stages: i64,
        [load, body]: [&[Stmt]; 2],
        turns: Option<&Turns>,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let bytes = load
            .iter()
            .map(|l| match &l.op {
                Op::CopyTma { tma, .. } => tma.bytes(),
                _ => 0,
            })
            .sum();
        // The turns' loop encloses the trips': the load block and the body
        // see both counters, `after` the turn's alone.
        let turn = match turns {
            Some(t) => {
                let (id, s_id, e_id) = self.open_loop(&t.var, &t.start, &t.end)?;
                Some(Turn {
                    id,
                    name: t.var.clone(),
                    start: s_id,
                    end: e_id,
                    groups: (self.block_threads / WARPGROUP) as u32,
                })
            }
            None => None,
        };
        let (id, s_id, e_id) = self.open_loop(var, start, end)?;
        let inner = self.stmts(load).and_then(|l| Ok((l, self.stmts(body)?)));
        self.active.pop();
        let after = match (turns, inner) {
            (Some(t), Ok(inner)) => self.stmts(&t.after).map(|a| (inner, a)),
            (_, inner) => inner.map(|i| (i, Vec::new())),
        };
        if turn.is_some() {
            self.active.pop();
        }
        let ((load, mut body), mut after) = after.map_err(Problem::Inside)?;
        // One consumer warpgroup drains the tensor cores at every wait for
        // all; with two or more the others' groups fill those gaps, and a
        // late release only holds each stage longer (on the H200, lag 1
        // gave a 64x256 warpgroup 5-10% and cost two warpgroups up to 6%:
        // docs/performance.md, version 18). A turn is one warpgroup's.
        let lone = self.block_threads == WARPGROUP || turn.is_some();
        let lag = u32::from(stages >= 2 && lone && crate::ir::one_wgmma_group(&body, 0));
        if lag == 1 {
            // The group stays in flight into the next trip; the turn's end
            // (or the pipeline's exit) waits for the last one.
            body.last_mut().expect("a group").kind = InstKind::WgmmaWait(1);
            if turn.is_some() {
                after.insert(0, Inst::at(span, InstKind::WgmmaWait(0)));
            }
        }
        // What the pipeline became, for `check --perf` (once per statement).
        let waits = match (lag, &turn) {
            (1, None) => {
                "one wgmma group in flight across iterations (one consumer warpgroup), each stage handed back an iteration late".to_string()
            }
            (_, None) => "each stage handed back at the end of its iteration".to_string(),
            (lag, Some(t)) => format!(
                "turns on {} consumer warpgroup(s) in rotation, each stage handed back by its turn's warpgroup{}",
                t.groups,
                match lag {
                    1 => ", an iteration late (one wgmma group in flight)",
                    _ => "",
                }
            ),
        };
        self.note(
            span,
            format!("pipeline: {stages} stage(s) of {bytes} bytes; {waits}"),
        );
        out.push(Inst::at(
            span,
            InstKind::Pipeline {
                id,
                name: var.to_string(),
                start: s_id,
                end: e_id,
                stages: stages as u32,
                bytes,
                lag,
                load,
                // Filled once the kernel's body is known
                // ([`prefetch_block_loads`]).
                prefetch: Vec::new(),
                body,
                after,
                turn,
            },
        ));
        if lag == 1 && turns.is_none() {
            out.push(Inst::at(span, InstKind::WgmmaWait(0)));
        }
        Ok(())
    }

    pub(super) fn copy_tma(
        &mut self,
        dst: &View,
        tma: &tilec_layout::TmaCopy,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        self.spend(tma.boxes.len() as i64)?;
        let sharing = self.sharing(tma, dst);
        let (parts, part) = match &sharing {
            Ok((parts, part)) => (*parts, part),
            Err(_) => (1, &tma.map),
        };
        let map = self.tensor_map(part)?;
        let elems: i64 = tma.map.dims.iter().map(|d| d.size).product();
        // What the copy became, for `check --perf` (once per statement).
        let swizzle = match tma.map.swizzle_bytes {
            0 => "no swizzle".to_string(),
            b => format!("{b}-byte swizzle"),
        };
        let shared = match &sharing {
            Ok((parts, _)) => format!(
                "; shared by the {parts} blocks of the cluster, each issuing 1/{parts} of it, multicast"
            ),
            Err(Some(why)) => format!("; each block of the cluster loads its own: {why}"),
            Err(None) => String::new(),
        };
        self.note(
            span,
            format!(
                "TMA: {} ({swizzle}), {} bytes{shared}",
                box_summary(tma),
                tma.bytes()
            ),
        );
        for (origin, dst) in self.boxes(tma, dst, elems)? {
            out.push(Inst::at(
                span,
                InstKind::TmaLoad {
                    map,
                    origin,
                    dst,
                    parts,
                },
            ));
        }
        Ok(())
    }

    /// A TMA load outside a pipeline: the boxes of `tma` into shared
    /// memory at `dst`, in one block-wide [`InstKind::TmaLoads`] on the
    /// next phase of the kernel's own barrier.
    pub(super) fn tma_block_load(
        &mut self,
        dst: &View,
        tma: &tilec_layout::TmaCopy,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let what = "TMA load by the block, waited for where its tile is next touched";
        let (map, boxes) = self.block_boxes(tma, dst, span, what)?;
        let loads = boxes
            .into_iter()
            .map(|(origin, dst)| {
                let parts = 1;
                let kind = InstKind::TmaLoad {
                    map,
                    origin,
                    dst,
                    parts,
                };
                Inst::at(span, kind)
            })
            .collect();
        let bytes = tma.bytes();
        // Unordered until `stores::may_go_unordered` finds a store in
        // flight it may read.
        let after_stores = false;
        out.push(Inst::at(
            span,
            InstKind::TmaLoads {
                bytes,
                after_stores,
                loads,
            },
        ));
        Ok(())
    }

    /// A TMA store: the boxes of `tma` from shared memory at `src`, in one
    /// block-wide [`InstKind::TmaStores`].
    pub(super) fn tma_store(
        &mut self,
        src: &View,
        tma: &tilec_layout::TmaCopy,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let what =
            "TMA store; clipped at the tensor's edges, so partial tiles need no guarded entry";
        let (map, boxes) = self.block_boxes(tma, src, span, what)?;
        let stores = boxes
            .into_iter()
            .map(|(origin, src)| Inst::at(span, InstKind::TmaStore { map, origin, src }))
            .collect();
        // Ordered until `stores::may_go_unordered` proves otherwise.
        out.push(Inst::at(
            span,
            InstKind::TmaStores {
                stores,
                ordered: true,
            },
        ));
        Ok(())
    }

    /// `prefetch(tile)`: a [`InstKind::TmaPrefetch`] per box of `tma`.
    pub(super) fn tma_prefetch(
        &mut self,
        tma: &tilec_layout::TmaCopy,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        self.spend(tma.boxes.len() as i64)?;
        let map = self.tensor_map(&tma.map)?;
        self.note(
            span,
            format!("prefetch into L2 by thread 0: {}", box_summary(tma)),
        );
        for piece in &tma.boxes {
            let origin = self.box_origin(tma, piece)?;
            out.push(Inst::at(span, InstKind::TmaPrefetch { map, origin }));
        }
        Ok(())
    }

    /// Where box `piece` of `tma` starts in its map, per dimension.
    fn box_origin(
        &mut self,
        tma: &tilec_layout::TmaCopy,
        piece: &tilec_layout::TmaPiece,
    ) -> Result<Vec<crate::ir::IntId>, Problem> {
        let origin = tma
            .origin
            .iter()
            .zip(&piece.coords)
            .map(|(o, &c)| self.int(&self.fix(o).add(&Int::Static(c))))
            .collect::<Result<_, _>>()?;
        Ok(origin)
    }

    /// A block's own TMA copy of `tma` to or from the shared tile `tile`:
    /// its map's index and its boxes ([`Self::boxes`]), with `check
    /// --perf`'s note (`what`, then the boxes; once per statement).
    fn block_boxes(
        &mut self,
        tma: &tilec_layout::TmaCopy,
        tile: &View,
        span: Span,
        what: &str,
    ) -> Result<(usize, Vec<TmaBox>), Problem> {
        self.spend(tma.boxes.len() as i64)?;
        let map = self.tensor_map(&tma.map)?;
        let elems: i64 = tma.map.dims.iter().map(|d| d.size).product();
        self.note(
            span,
            format!("{what}: {}, {} bytes", box_summary(tma), tma.bytes()),
        );
        Ok((map, self.boxes(tma, tile, elems)?))
    }

    /// Per box of `tma`: its origin in the map, and where it lies in the
    /// shared tile `tile` (each box's `elems` elements bounded in the
    /// buffer here).
    fn boxes(
        &mut self,
        tma: &tilec_layout::TmaCopy,
        tile: &View,
        elems: i64,
    ) -> Result<Vec<TmaBox>, Problem> {
        let Base::Shared(b) = tile.base else {
            unreachable!("the checker's TMA boxes are in shared memory")
        };
        let mut out = Vec::with_capacity(tma.boxes.len());
        for piece in &tma.boxes {
            let first = self.fix(&tile.offset).add(&Int::Static(piece.smem));
            self.within_shared(&first, [0, elems - 1], self.k.shared[b].len)?;
            let origin = self.box_origin(tma, piece)?;
            let index = self.int(&first)?;
            out.push((
                origin,
                Addr {
                    space: Space::Shared(b),
                    index,
                    guard: None,
                },
            ));
        }
        Ok(out)
    }

    /// A kernel on clusters runs whole clusters: past the grid's end along
    /// the cluster, the runtime adds pad blocks, which take part in the
    /// pipeline (their peers wait for their parts and releases) and skip
    /// everything after it but the wait for a lagged pipeline's last
    /// group: that runs where `block.<d>` is below the grid's extent. The
    /// checker keeps global writes and reduces across blocks out of what
    /// comes before.
    pub(super) fn past_the_grid(&mut self, mut body: Vec<Inst>) -> Result<Vec<Inst>, String> {
        let d = self
            .k
            .launch
            .cluster_dim()
            .expect("a multicast is on a cluster");
        let Some(at) = body
            .iter()
            .position(|i| matches!(i.kind, InstKind::Pipeline { .. }))
        else {
            return Ok(body);
        };
        let mut end = at + 1;
        while matches!(body.get(end).map(|i| &i.kind), Some(InstKind::WgmmaWait(_))) {
            end += 1;
        }
        let rest: Vec<Inst> = body.split_off(end);
        if rest.is_empty() {
            return Ok(body);
        }
        let grid = self
            .k
            .launch
            .grid
            .get(d as usize)
            .cloned()
            .unwrap_or(Int::Static(1));
        let block = self.int(&Builtin::Block(d).int())?;
        let grid = self.int(&grid)?;
        let cond = self.def(crate::ir::IntDef::Compare(
            crate::arith::Binary::Lt,
            block,
            grid,
        ));
        let span = rest[0].span;
        body.push(Inst::at(
            span,
            InstKind::If {
                cond,
                then: rest,
                otherwise: Vec::new(),
            },
        ));
        Ok(body)
    }

    /// Whether the blocks of the kernel's cluster can share a copy's boxes:
    /// each block then issues `parts`-th of each box (a map of that box
    /// along its outermost dimension) and multicasts it to all. They can
    /// when every block of a cluster loads the same box to the same place,
    /// which holds where neither depends on the block index along the
    /// cluster, and each part lands aligned for TMA and the swizzle.
    /// `Err(None)`: no cluster; `Err(Some(why))`: not shared.
    fn sharing(
        &self,
        tma: &tilec_layout::TmaCopy,
        dst: &View,
    ) -> Result<(u32, tilec_layout::TensorMap), Option<String>> {
        let Some(d) = self.k.launch.cluster_dim() else {
            return Err(None);
        };
        let (parts, block) = (self.k.launch.cluster[d as usize], Builtin::Block(d).name());
        let mut names = Vec::new();
        tma.origin
            .iter()
            .chain([&dst.offset])
            .for_each(|i| self.fix(i).names(&mut names));
        if names.iter().any(|n| n == block) {
            return Err(Some(format!(
                "which box it loads, or where, depends on `{block}`"
            )));
        }
        // Stacked along the outermost dimension of more than one element
        // (`TensorMapIr::stacking_dim`), which the part keeps.
        let mut part = tma.map.clone();
        let align = (part.swizzle_bytes * 8).max(128);
        let outer = part
            .dims
            .iter_mut()
            .rev()
            .find(|d| d.size > 1)
            .ok_or_else(|| Some("its boxes are one element".to_string()))?;
        if outer.size % parts != 0 || outer.size == parts {
            return Err(Some(format!(
                "its boxes' outermost extent {} is not a multiple of {parts} parts wider than 1",
                outer.size
            )));
        }
        outer.size /= parts;
        if part.box_bytes() % align != 0 {
            return Err(Some(format!(
                "1/{parts} of a box is {} bytes, not a multiple of {align}",
                part.box_bytes()
            )));
        }
        Ok((parts as u32, part))
    }

    /// The index of tensor map `m` in the IR, made on first use.
    fn tensor_map(&mut self, m: &tilec_layout::TensorMap) -> Result<usize, Problem> {
        if let Some(i) = self.tensor_maps.iter().position(|x| x == m) {
            return Ok(i);
        }
        let mut dims = Vec::new();
        for d in &m.dims {
            dims.push((self.int(&d.extent)?, self.int(&d.stride)?, d.size));
        }
        self.tensor_maps.push(m.clone());
        self.map_irs.push(crate::ir::TensorMapIr {
            param: m.param,
            dims,
            swizzle_bytes: m.swizzle_bytes,
        });
        Ok(self.tensor_maps.len() - 1)
    }
}

/// Block TMA loads one after the other in a list (a tile of C and a bias
/// vector) become one, on one phase of the kernel's barrier: their boxes
/// fly together and one wait covers them. Not loads into buffers that
/// share bytes (`sharers`: which box would land last?); so the bytes one
/// phase counts stay within shared memory's, far below the mbarrier's
/// 2^20.
pub(super) fn merge_block_loads(body: Vec<Inst>, sharers: &[Vec<usize>]) -> Vec<Inst> {
    let mut out: Vec<Inst> = Vec::with_capacity(body.len());
    for mut inst in body {
        if !matches!(inst.kind, InstKind::TmaLoads { .. }) {
            for body in inst.kind.bodies_mut() {
                *body = merge_block_loads(std::mem::take(body), sharers);
            }
        }
        let apart = |a: &Inst, b: &Inst| {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.shared_buffers(&mut x);
            b.shared_buffers(&mut y);
            x.iter().all(|&p| y.iter().all(|q| !sharers[p].contains(q)))
        };
        if let Some(last) = out.last_mut()
            && apart(last, &inst)
            && let (
                InstKind::TmaLoads { bytes, loads, .. },
                InstKind::TmaLoads {
                    bytes: more,
                    loads: next,
                    ..
                },
            ) = (&mut last.kind, &inst.kind)
        {
            *bytes += more;
            loads.extend(next.iter().cloned());
            continue;
        }
        out.push(inst);
    }
    out
}

/// The boxes of the block's TMA loads after the pipeline (an epilogue's
/// tile of C), given to the pipeline's producer to prefetch into L2 once
/// its last load is issued: the consumers, a few k-tiles later, then wait
/// for L2 rather than DRAM (docs/performance.md, version 31: 2-3% on the
/// batched GEMM, 5-6% at K = 512). Boxes at entry-scope origins only, which
/// the producer can compute. Returns the pipeline's span and the number of
/// boxes, for `check --perf`.
pub(super) fn prefetch_block_loads(body: &mut [Inst], ints: &[IntValue]) -> Option<(Span, usize)> {
    let at = body
        .iter()
        .position(|i| matches!(i.kind, InstKind::Pipeline { .. }))?;
    let boxes: Vec<Inst> = body[at + 1..]
        .iter()
        .filter_map(|i| match &i.kind {
            InstKind::TmaLoads { loads, .. } => Some(loads),
            _ => None,
        })
        .flatten()
        .filter_map(|l| match &l.kind {
            InstKind::TmaLoad { map, origin, .. }
                if origin.iter().all(|&o| ints[o].scope.is_none()) =>
            {
                Some(Inst::at(
                    l.span,
                    InstKind::TmaPrefetch {
                        map: *map,
                        origin: origin.clone(),
                    },
                ))
            }
            _ => None,
        })
        .collect();
    let span = body[at].span;
    let InstKind::Pipeline { prefetch, .. } = &mut body[at].kind else {
        unreachable!("found above")
    };
    *prefetch = boxes;
    (!prefetch.is_empty()).then_some((span, prefetch.len()))
}

/// `check --perf`'s words for a copy's boxes: `2 box(es) of 64x256 bf16`.
fn box_summary(tma: &tilec_layout::TmaCopy) -> String {
    let sizes: Vec<String> = tma.map.dims.iter().map(|d| d.size.to_string()).collect();
    format!(
        "{} box(es) of {} {}",
        tma.boxes.len(),
        sizes.join("x"),
        tma.map.elem
    )
}
