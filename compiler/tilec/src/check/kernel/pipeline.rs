//! Pipelines: `pipeline k in a..b, stage s in 0..S { load { copy_tma(...); } body }`.
//!
//! A pipeline is a loop whose loads run ahead on a warpgroup of their own
//! (the producer, added to the block's threads), up to `S` iterations,
//! through TMA into a ring of shared stages, while the block's threads (the
//! consumers) run the rest of the body on the stages that have landed. The
//! compiler owns the protocol (full and empty barriers per stage, the bytes
//! each stage expects, stage and phase), so the checks here are what makes
//! it sound: one pipeline, at the top of the kernel; its load block only
//! `copy_tma`s, issued by one thread (so nothing in them depends on
//! `thread.x`); the stage buffers written by nothing else, since the
//! producer writes them while the consumers run; and no tensor both loaded
//! by TMA and written (another block's producer may be reading it).

use super::KernelChecker;
use crate::check::program::{Across, Base, Launch, Op, Stmt, Turns, View, shared_placement, walk};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{self, Expr, StmtKind};
use tilec_layout::{Builtin, Int, Layout};

/// The most stages a pipeline may have (two mbarriers each).
pub const MAX_STAGES: i64 = 16;

/// The threads of a warpgroup.
pub const WARPGROUP: i64 = 128;

/// The producer warpgroup's threads, added to the block's (the last ones).
pub const PRODUCER_THREADS: i64 = WARPGROUP;

/// The registers a thread of a block of `threads` has at launch when
/// `blocks` blocks must fit on a multiprocessor (64K registers, at most 255
/// a thread, allocated by 8): what ptxas compiles the kernel for.
pub fn registers_at_launch(threads: i64, blocks: i64) -> i64 {
    (65536 / (blocks.max(1) * threads)).min(255) / 8 * 8
}

impl KernelChecker {
    pub(super) fn pipeline_stmt(&mut self, p: &ast::Pipeline, span: Span) -> Option<Stmt> {
        if self.loop_depth > 0 || !self.enclosing.is_empty() {
            self.diags.push(
                Diagnostic::new("a pipeline stands at the top of a kernel, not inside a loop or an if", span)
                    .with_help("its loads run on a warpgroup of their own for the whole kernel; put the loop inside the pipeline"),
            );
            return None;
        }
        if let Some(first) = self.pipeline {
            self.diags.push(
                Diagnostic::new("a kernel has one pipeline", span)
                    .with_related(first, "the first one")
                    .with_help("load every operand of the main loop in one pipeline's load block"),
            );
            return None;
        }
        self.pipeline = Some(span);
        if let Some(t) = &p.turn {
            self.turns = Some(Span {
                start: t.var.span.start,
                end: t.end.span.end,
            });
        }
        // An `after` closes turns: without them, the body has none.
        if p.turn.is_none()
            && let Some(a) = p
                .body
                .last()
                .filter(|s| matches!(s.kind, StmtKind::After(_)))
        {
            self.diags.push(
                Diagnostic::new("an `after` block closes a pipeline's turns, and this pipeline has no `turn` clause", a.span)
                    .with_help("give the pipeline turns, `pipeline k in 0..kt, turn j in 0..n, stage s in 0..4 { ... }`, or put the epilogue after the pipeline"),
            );
            return None;
        }
        let (start, end) = self.uniform_bounds(&p.start, &p.end)?;
        let turns = match &p.turn {
            Some(t) => Some((t, self.uniform_bounds(&t.start, &t.end)?)),
            None => None,
        };
        match self.eval(&p.first).ok().and_then(|v| v.to_int()) {
            Some(Int::Static(0)) => {}
            _ => {
                self.diags.push(
                    Diagnostic::new("the stage range starts at 0", p.first.span)
                        .with_help("write `stage s in 0..3` for three stages"),
                );
                return None;
            }
        }
        let stages = match self.eval(&p.stages).ok().and_then(|v| v.to_int()) {
            Some(Int::Static(n)) if (1..=MAX_STAGES).contains(&n) => n,
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        format!("the number of stages is a constant from 1 to {MAX_STAGES}"),
                        p.stages.span,
                    )
                    .with_help("each stage is a slice of the shared buffers that the loads fill"),
                );
                return None;
            }
        };
        // `let`s before the load block name values of the trip that the
        // load block and the rest of the body share (a persistent kernel's
        // tile coordinates): definitions only, no statements.
        let lets = p
            .body
            .iter()
            .take_while(|s| matches!(s.kind, StmtKind::Let(..)))
            .count();
        let (lead, after) = p.body.split_at(lets);
        let (load, rest) = match after.split_first() {
            Some((
                ast::Stmt {
                    kind: StmtKind::Load(l),
                    ..
                },
                rest,
            )) => (l, rest),
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        "a pipeline's body starts with its `load { ... }` block (after the `let`s it shares with the body)",
                        span,
                    )
                    .with_help("e.g. load { copy_tma(gA[_, _, k], smA[_, _, s]); }"),
                );
                return None;
            }
        };
        if load.is_empty() {
            self.diags.push(
                Diagnostic::new("this pipeline loads nothing", span)
                    .with_help("its load block holds the copy_tma statements that fill a stage"),
            );
            return None;
        }
        let (outer, mark) = self.enter_scope();
        let counter = Int::var(&p.var.name);
        self.define(&p.var, Some(Value::Int(counter.clone())));
        // What the slices' check knows of the counter, as of a `for`
        // loop's: its values, and `k < end` in the body.
        if let Some(range) = self.counter_range(&start, &end) {
            self.loop_ranges.insert(p.var.name.clone(), range);
        }
        let bound = self.bound_fact(&p.var.name, &end);
        let bounded = bound.is_some();
        self.facts.extend(bound);
        // The trip counted from the pipeline's first: across turns, the
        // earlier turns' trips before this one's, `(j - j0) * (k1 - k0)`,
        // taken mod S factor by factor, so that its range is known without
        // one for the product (whose bounds would pass 2^63).
        let n = Int::Static(stages);
        let mut trip = counter.sub(&start);
        if let Some((t, (first, _))) = &turns {
            let turn = Int::var(&t.var.name);
            self.define(&t.var, Some(Value::Int(turn.clone())));
            let before = turn.sub(first).rem(&n).mul(&end.sub(&start).rem(&n));
            trip = before.add(&trip);
        }
        let stage = trip.rem(&n);
        self.define(&p.stage, Some(Value::Int(stage)));
        for s in lead {
            self.stmt(s);
        }
        // Reads are compared with the loads where those are sound: all
        // checked, none refused.
        let before = self.diags.len();
        self.in_load = true;
        let load = self.scoped_block(load);
        self.in_load = false;
        // A stage's box lands in that stage: a destination the stage does
        // not move is one slice that every stage's box overwrites; two
        // boxes of a stage landing at one place overwrite each other.
        let mut landed: Vec<(&View, Span)> = Vec::new();
        for s in &load {
            let Op::CopyTma { dst, .. } = &s.op else {
                continue;
            };
            if let Some((_, first)) = landed
                .iter()
                .find(|(d, _)| d.base == dst.base && d.offset == dst.offset)
            {
                self.diags.push(
                    Diagnostic::new("two loads of a stage land at the same place", s.span)
                        .with_related(*first, "the first lands here")
                        .with_help("give each operand its own shared buffer: copy_tma(gA[_, _, k], smA[_, _, s]); copy_tma(gB[_, _, k], smB[_, _, s]);"),
                );
            }
            if stages > 1 && !dst.offset.mentions(&p.var.name) {
                let (buffer, len) = match dst.base {
                    Base::Shared(b) => {
                        (self.state.shared[b].name.clone(), self.state.shared[b].len)
                    }
                    _ => (None, 0),
                };
                let buffer = buffer.unwrap_or_else(|| "smA".into());
                // The whole buffer, no stage mode to slice: a tile every
                // iteration reads alike loads once, before the pipeline.
                let whole = dst.layout.cosize().as_static().is_some_and(|c| c >= len);
                let help = match whole {
                    true => format!(
                        "`{buffer}` has no stage mode: load a tile every iteration reads alike once, before the pipeline (`copy_tma(gQ, sQ);`, as examples/attention_sm90.tile loads Q), or give the buffer a stage mode to slice by `{}`",
                        p.stage.name
                    ),
                    false => format!(
                        "slice the destination's stage mode with the stage: `{buffer}[_, _, {}]`",
                        p.stage.name
                    ),
                };
                self.diags.push(
                    Diagnostic::new(
                        "this load writes the same shared memory at every stage",
                        s.span,
                    )
                    .with_label(format!(
                        "its destination does not depend on the stage `{}`",
                        p.stage.name
                    ))
                    .with_help(help),
                );
            }
            landed.push((dst, s.span));
        }
        let mut only_boxes = true;
        for other in load
            .iter()
            .filter(|s| !matches!(s.op, Op::CopyTma { stage: true, .. }))
        {
            only_boxes = false;
            self.diags.push(
                Diagnostic::new("a load block holds copy_tma statements only", other.span)
                    .with_help("the producer warpgroup runs it, one thread issuing each box: anything else belongs in the body, on the consumers"),
            );
        }
        let loads_sound = self.diags.len() == before;
        // A turn's statements run on its warpgroup alone: what needs more
        // threads than one (a barrier, a block's TMA copy) is refused as
        // under a condition of warpgroups.
        let (rest, after) = match (rest.split_last(), &turns) {
            (
                Some((
                    ast::Stmt {
                        kind: StmtKind::After(a),
                        ..
                    },
                    init,
                )),
                Some(_),
            ) => (init, Some(a)),
            _ => (rest, None),
        };
        if let Some((t, _)) = &turns {
            self.enclosing.push(super::predication::Enclosing {
                granule: WARPGROUP,
                span: Span {
                    start: t.var.span.start,
                    end: t.end.span.end,
                },
                turn: true,
            });
        }
        self.loop_depth += 1;
        let body = self.block(rest);
        // `after` sees the turn, not a trip: the names of the trip (its
        // counter, stage and `let`s) are out of scope there.
        let after = after.map(|a| {
            let turn = |name: &str| turns.iter().any(|(t, _)| t.var.name == name);
            let trip: Vec<String> = self
                .scope
                .keys()
                .filter(|n| !outer.contains(n) && !turn(n))
                .cloned()
                .collect();
            self.scope.retain(|name, _| outer.contains(name) || turn(name));
            self.restore_clashes(mark);
            let first = self.diags.len();
            let block = self.block(a);
            for d in &mut self.diags[first..] {
                let name = trip.iter().find(|n| {
                    d.message == format!("`{n}` is not defined")
                        || d.message == format!("`{n}` is used before its definition")
                        || d.message == format!("`{n}` is not in scope here")
                });
                if let Some(n) = name {
                    d.message = format!("`{n}` is not in scope in `after`");
                    d.label = "a name of the trip".into();
                    d.related.clear();
                    d.help = Some("`after` runs once a turn's trips are done: the trip's names (its counter, its stage, the `let`s of the body) are not in scope there; define what it needs from the turn's counter again".into());
                }
            }
            block
        });
        self.loop_depth -= 1;
        if turns.is_some() {
            self.enclosing.pop();
        }
        let trips = super::stages::Trips {
            counter: &p.var.name,
            start: &start,
            turn: turns
                .as_ref()
                .map(|(t, (first, _))| (t.var.name.as_str(), first)),
            stages,
        };
        if loads_sound {
            self.reads_within_stages(&trips, &load, &body);
        }
        if bounded {
            self.facts.pop();
        }
        self.leave_scope(&outer, mark);
        self.loop_ranges.remove(&p.var.name);
        if !only_boxes {
            return None;
        }
        Some(Stmt {
            op: Op::Pipeline {
                var: p.var.name.clone(),
                start,
                end,
                stages,
                load,
                body,
                turn: turns.map(|(t, (start, end))| Turns {
                    var: t.var.name.clone(),
                    start,
                    end,
                    after: after.unwrap_or_default(),
                }),
            },
            span,
        })
    }

    /// A pipeline's or its turns' bounds: integers of the block, since its
    /// producer warpgroup and its consumers count the same trips.
    fn uniform_bounds(&mut self, start: &Expr, end: &Expr) -> Option<(Int, Int)> {
        let (a, b) = self.loop_bounds(start, end)?;
        if self.granule(&a).min(self.granule(&b)) < super::predication::UNIFORM {
            self.diags.push(
                Diagnostic::new("a pipeline's bounds depend on thread.x", Span {
                    start: start.span.start,
                    end: end.span.end,
                })
                .with_help("its producer warpgroup and its consumers must run the same iterations: bound it by values of the block (extents, block.x)"),
            );
            return None;
        }
        Some((a, b))
    }

    /// `copy_tma(src, dst)`: in a pipeline's load block, a global tile into
    /// a shared stage as TMA boxes of one map, issued by one producer
    /// thread; elsewhere, by the whole block, a global tile into a shared
    /// one (one thread issues the boxes, all wait for them) or a shared
    /// tile out to a global one (a TMA store: the tile's writers finish
    /// before one thread issues the boxes, and the buffer is free again
    /// once TMA has read it).
    pub(super) fn copy_tma(
        &mut self,
        src: View,
        se: &Expr,
        dst: View,
        de: &Expr,
        span: Span,
    ) -> Result<Op, Diagnostic> {
        let stage = self.in_load;
        let (global, shared, store) = match (src.base, dst.base) {
            (Base::Param(p), Base::Shared(b)) => ((p, &src), (b, &dst), false),
            (Base::Shared(b), Base::Param(p)) if !stage => ((p, &dst), (b, &src), true),
            _ if stage => {
                let (at, v) = if matches!(src.base, Base::Param(_)) {
                    (de, &dst)
                } else {
                    (se, &src)
                };
                return Err(Diagnostic::new(
                    "in a load block, `copy_tma` copies from global to shared memory",
                    at.span,
                )
                .with_label(format!("this is in {}", v.base.space())));
            }
            _ => {
                let (at, v) = if matches!(src.base, Base::Param(_) | Base::Shared(_)) {
                    (de, &dst)
                } else {
                    (se, &src)
                };
                return Err(Diagnostic::new(
                    "`copy_tma` copies between global and shared memory: a tile into shared memory, or out of it (a TMA store)",
                    at.span,
                )
                .with_label(format!("this is in {}", v.base.space())));
            }
        };
        self.issued_by_one_thread(&src, se)?;
        self.issued_by_one_thread(&dst, de)?;
        let ((p, gv), (b, sv)) = (global, shared);
        let (tensor, coords) = self.tensor_and_coords(p, gv);
        self.state.shared[b].tma = true;
        let swizzle = self.state.shared[b].swizzle;
        let mut tma = tilec_layout::tma_copy(p, src.elem, &tensor, &coords, &sv.layout, &sv.offset, swizzle)
            .map_err(|why| {
                // A tile whose fastest mode is not the tensor's: the rows'
                // widths are beside the point.
                let help = match why.ends_with("the tile is of the other major") {
                    true => "a stage takes the tensor's major: a K-major tensor a K-major stage (`tile_to_shape((8, 64):(64, 1), (128, 64, 4))` under its swizzle), an M- or N-major one an MN-major stage (`tile_to_shape((64, 8):(1, 64), (128, 64, 4), (2, 1, 3))`, as examples/bgemm_nt_sm90_tma.tile), whose wgmma descriptor tilec derives either way".to_string(),
                    false => format!("a box is a tile of whole rows of the tensor, landing densely in shared memory (its rows 32, 64 or 128 bytes under a swizzle); a copy is one box or several alike{}", swizzle.map_or(String::new(), |sw| super::tma_rules::swizzle_rows(sw, src.elem))),
                };
                Diagnostic::new(format!("this copy is not TMA boxes: {why}"), span)
                    .with_label(format!("{} -> {}", src.layout, dst.layout))
                    .with_help(help)
            })?;
        tma.map.store = store;
        Ok(Op::CopyTma {
            src,
            dst,
            tma,
            stage,
        })
    }

    /// The parameter `p`'s layout, and per mode of it the coordinate
    /// function of the global view `v` (what [`tilec_layout::tma_copy`] takes).
    fn tensor_and_coords(&self, p: usize, v: &View) -> (Layout, Vec<(Layout, Int)>) {
        let tensor = match &self.params[p].kind {
            crate::check::program::ParamKind::Tensor { layout, .. } => layout.clone(),
            crate::check::program::ParamKind::Scalar(_) => unreachable!("a view of a tensor"),
        };
        let coords = v
            .coords
            .iter()
            .map(|c| (c.layout.clone(), c.offset.clone()))
            .collect();
        (tensor, coords)
    }

    /// `prefetch(tile)`: the global tile as the TMA boxes of an unswizzled
    /// map of its own ([`tilec_layout::tma_prefetch`]).
    pub(super) fn prefetch(&mut self, src: View, se: &Expr) -> Result<Op, Diagnostic> {
        let Base::Param(p) = src.base else {
            return Err(Diagnostic::new(
                "`prefetch` fetches a global tile into L2",
                se.span,
            )
            .with_label(format!("this is in {}", src.base.space()))
            .with_help("prefetch a tile of a tensor parameter (local_tile(C, ...)) some loads of the block read later"));
        };
        self.issued_by_one_thread(&src, se)?;
        let (tensor, coords) = self.tensor_and_coords(p, &src);
        let boxes = tilec_layout::tma_prefetch(p, src.elem, &tensor, &coords, &src.layout)
            .map_err(|why| {
                Diagnostic::new(format!("this tile is not TMA boxes: {why}"), se.span)
                    .with_label(format!("{}", src.layout))
                    .with_help("a prefetch is a tile of whole rows of the tensor (local_tile, slices by loop counters), its rows a multiple of 16 bytes")
            })?;
        Ok(Op::Prefetch { src, tma: boxes })
    }

    /// The tensors a block's own TMA loads and stores reach: where their
    /// rows are not whole 16-byte units the runtime gives TMA an aligned
    /// copy (copied back after the launch where a store writes it), so no
    /// other statement writes them (a store's copy back would undo it; a
    /// load would not see it), and nothing but a block's TMA load reads a
    /// tensor after a TMA store wrote it (the store's global writes
    /// complete on their own time, and a staged tensor gets them only
    /// after the launch): reads before it see the launch's input; a TMA
    /// load reads what TMA writes, after the stores that may overlap it
    /// have written global memory (lowering's `after_stores`).
    pub(super) fn check_tma_tensors(&mut self, body: &[Stmt]) {
        // The tensor a block's own TMA copy reaches, and whether it stores.
        let global = |op: &Op| match op {
            Op::CopyTma {
                src,
                dst,
                tma,
                stage: false,
            } => match (src.base, dst.base) {
                (Base::Param(p), _) | (_, Base::Param(p)) => Some((p, tma.map.store)),
                _ => None,
            },
            // Through a map of its own, which an aligned copy would serve.
            Op::Prefetch { src, .. } => match src.base {
                Base::Param(p) => Some((p, false)),
                _ => None,
            },
            _ => None,
        };
        let mut reached: Vec<(usize, Span)> = Vec::new();
        walk(body, &mut |s| {
            reached.extend(global(&s.op).map(|(p, _)| (p, s.span)))
        });
        let name = |p: usize| self.params[p].name.clone();
        let mut problems: Vec<(String, Span, (Span, &str), &str)> = Vec::new();
        let mut stored: Vec<(usize, Span)> = Vec::new();
        walk(body, &mut |s| {
            if let Some((p, true)) = global(&s.op) {
                return stored.push((p, s.span));
            }
            // A block's TMA load waits for the stores in flight that may
            // have written its boxes (lowering's `after_stores`).
            if let Some((_, false)) = global(&s.op)
                && matches!(s.op, Op::CopyTma { .. })
            {
                return;
            }
            let read = s.op.read().into_iter().find_map(|v| match v.base {
                Base::Param(p) => stored.iter().find(|(q, _)| *q == p).map(|&(_, at)| (p, at)),
                _ => None,
            });
            if let Some((p, at)) = read {
                problems.push((
                    format!("this reads `{}` after a TMA store wrote it", name(p)),
                    s.span,
                    (at, "the TMA store"),
                    "the store's writes complete on their own time: read the tile before the store, keep it in shared memory, or read it with a block's TMA load (copy_tma), which waits for them",
                ));
            } else if global(&s.op).is_none()
                && let Some(Base::Param(p)) = s.op.written().map(|v| v.base)
                && let Some(&(_, at)) = reached.iter().find(|(q, _)| *q == p)
            {
                problems.push((
                    format!("this writes `{}`, which a block's TMA copy reaches too", name(p)),
                    s.span,
                    (at, "the TMA copy"),
                    "a tensor a block's TMA loads or stores reach is written by its TMA stores alone (the runtime may give TMA an aligned copy of it): stage the other results in the shared tile a store copies out",
                ));
            }
        });
        for (message, span, (at, label), help) in problems {
            self.diags.push(
                Diagnostic::new(message, span)
                    .with_related(at, label)
                    .with_help(help),
            );
        }
    }

    /// The block's shared memory once every statement is checked: each
    /// buffer alone was checked at its declaration; together they lie
    /// where their lifetimes place them, one that TMA reads or writes
    /// aligned to 128 bytes, and the mbarriers take 16 bytes a pipeline
    /// stage and 8 for the block's own TMA loads.
    pub(super) fn check_shared_total(&mut self, body: &[Stmt], span: Span) {
        let mut barriers = 0;
        let mut loads = false;
        let mut pipeline = false;
        let groups = self.block_threads().map_or(1, |b| b / WARPGROUP);
        walk(body, &mut |s| match &s.op {
            Op::Pipeline { stages, turn, .. } => {
                // And one a warpgroup that orders the turns.
                barriers += 16 * stages + 8 * groups * i64::from(turn.is_some());
                pipeline = true;
            }
            Op::CopyTma {
                tma, stage: false, ..
            } => loads |= !tma.map.store,
            _ => {}
        });
        barriers += 8 * i64::from(loads);
        let used =
            shared_placement(&self.state.shared, body).map(|(_, b)| b.saturating_add(barriers));
        self.check_blocks_fit(used);
        if let Some(used) = used.filter(|&u| u > super::SHARED_LIMIT_BYTES) {
            // Where the bytes go: each buffer by its name, the largest first.
            let mut sizes: Vec<(i64, String)> = self
                .state
                .shared
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let name = b.name.clone().unwrap_or_else(|| format!("buffer {i}"));
                    (b.len.saturating_mul(b.elem.bytes()), name)
                })
                .collect();
            sizes.sort_by_key(|s| std::cmp::Reverse(s.0));
            let sizes: Vec<String> = sizes.iter().map(|(n, b)| format!("{b} {n}")).collect();
            // What the total holds beside the buffers' bytes, where it
            // holds anything.
            let tma = self.state.shared.iter().any(|b| b.tma);
            let extra: Vec<String> = [
                tma.then(|| "the TMA tiles aligned to 128 bytes".to_string()),
                (barriers > 0).then(|| format!("{barriers} bytes of mbarriers")),
            ]
            .into_iter()
            .flatten()
            .collect();
            let extra = match extra.is_empty() {
                true => String::new(),
                false => format!(", with {}", extra.join(" and ")),
            };
            self.diags.push(
                Diagnostic::new(
                    format!(
                        "shared memory exceeds the device limit: {used} bytes of {} (227 KB on sm_90){extra}",
                        super::SHARED_LIMIT_BYTES
                    ),
                    // A pipeline's stages are where the bytes usually go.
                    self.pipeline.unwrap_or(span),
                )
                .with_label(format!("bytes: {}", sizes.join(", ")))
                .with_help(format!("use smaller tiles, fewer stages, or a narrower element type; a buffer first used after another's last use (a tile of C after the main loop) shares its memory{}", if pipeline { ", but a pipeline's stages are in use from the kernel's start" } else { "" })),
            );
        }
    }

    /// The kernel-wide rules of a pipeline, once every statement is
    /// checked: the block is whole warpgroups of consumers, and the stage
    /// buffers are written by the loads alone.
    pub(super) fn check_pipeline(&mut self, body: &[Stmt], launch: &Launch) {
        self.check_cluster(body, launch);
        let block = &launch.block;
        let Some(span) = self.pipeline else { return };
        let threads = block.iter().fold(Int::Static(1), |a, b| a.mul(b));
        match threads.as_static() {
            Some(t) if block.len() == 1 && t % WARPGROUP == 0 && t + PRODUCER_THREADS <= 1024 => {}
            _ => self.diags.push(
                Diagnostic::new(
                    format!("a pipeline's consumers are whole warpgroups, but the block is {}", tilec_layout::IntTuple::Tuple(block.iter().cloned().map(Into::into).collect())),
                    span,
                )
                .with_help("launch a one-dimensional block of 128 to 896 threads, whole warpgroups; the producer warpgroup is added to it (1024 threads at most)"),
            ),
        }
        let (mut stages, mut loaded) = (Vec::new(), Vec::new());
        walk(body, &mut |s| {
            if let Op::CopyTma {
                src,
                dst,
                stage: true,
                ..
            } = &s.op
            {
                stages.extend(match dst.base {
                    Base::Shared(b) => Some(b),
                    _ => None,
                });
                loaded.extend(match src.base {
                    Base::Param(p) => Some(p),
                    _ => None,
                });
            }
        });
        self.check_turns(body, &stages, span, threads.as_static());
        walk(body, &mut |s| {
            let written = s.op.written();
            if let Some(v) = written
                && let Base::Param(p) = v.base
                && loaded.contains(&p)
            {
                self.diags.push(
                    Diagnostic::new(format!("this writes `{}`, which the pipeline loads", self.params[p].name), s.span)
                        .with_related(span, "its TMA loads read it, in every block, while the blocks run")
                        .with_help("a tensor is read by TMA or written, not both; write the result to another tensor"),
                );
            }
            if let Some(v) = written
                && let Base::Shared(b) = v.base
                && stages.contains(&b)
            {
                self.diags.push(
                    Diagnostic::new("this writes a pipeline's stage buffer", s.span)
                        .with_related(span, "the pipeline's loads write it while the block runs")
                        .with_help("the producer warpgroup writes the stages at any time; give this data its own buffer"),
                );
            }
        });
    }

    /// A cluster shares a pipeline's loads, so the kernel has one, and its
    /// blocks run the same iterations: a peer waits for every box it is
    /// sent, and sends every box the others wait for.
    fn check_cluster(&mut self, body: &[Stmt], launch: &Launch) {
        let Some(at) = self.cluster.filter(|_| launch.cluster != [1; 3]) else {
            return;
        };
        let Some(span) = self.pipeline else {
            return self.diags.push(
                Diagnostic::new(
                    "a cluster shares a pipeline's TMA loads, and this kernel has no pipeline",
                    at,
                )
                .with_help("remove cluster(...), or load the tiles in a `pipeline` with copy_tma"),
            );
        };
        // Past the grid's end, whole clusters have pad blocks: they take
        // part in the loads, and lowering skips what follows the pipeline
        // for them. So the kernel writes global memory and reduces across
        // blocks (whose groups a pad block would join) only after it,
        // unless the grid is whole clusters. A reduce's group never spans
        // the cluster's dimension: a cluster's blocks load the same
        // stages, a group's the slices of one sum.
        let mut after = !launch.may_pad();
        let along = launch.cluster_dim();
        for top in body {
            walk(std::slice::from_ref(top), &mut |s| {
                let writes =
                    s.op.written()
                        .is_some_and(|v| matches!(v.base, Base::Param(_)));
                const PADS: (&str, &str) = (
                    "the grid runs in whole clusters: past its end, pad blocks",
                    "a cluster's pad blocks run the pipeline and skip what follows it: write results and reduce across blocks after the pipeline",
                );
                let problem = match &s.op {
                    Op::ReduceBlocks {
                        across: Across::Dim(d),
                        ..
                    } if Some(*d) == along => Some((
                        "a reduce across the grid dimension the cluster lies along",
                        (
                            "the blocks of a cluster load the same stages; a reduce's group is slices of one sum",
                            "put the slices along another grid dimension than the cluster (split-K: slices along block.z, a cluster along M)",
                        ),
                    )),
                    Op::ReduceBlocks { .. } if !after => {
                        Some(("a reduce across blocks before the pipeline's end", PADS))
                    }
                    Op::ReduceBlocks {
                        across: Across::Parts { .. },
                        ..
                    } if launch.may_pad() => Some((
                        "a reduce across parts where the grid may be padded",
                        (
                            "the grid runs in whole clusters: past its end, pad blocks, which may compute a group of their own",
                            "reduce across a grid dimension the cluster does not lie along (split-K's slices along block.z), or launch a grid of whole clusters (`grid(2, n), cluster(2, 1)`)",
                        ),
                    )),
                    _ if writes && !after => {
                        Some(("a write to global memory before the pipeline's end", PADS))
                    }
                    _ => None,
                };
                if let Some((what, (why, help))) = problem {
                    self.diags.push(
                        Diagnostic::new(format!("{what}, in a kernel on clusters"), s.span)
                            .with_related(at, why)
                            .with_help(help),
                    );
                }
            });
            after |= matches!(top.op, Op::Pipeline { .. });
        }
        let mut bounds = Vec::new();
        walk(body, &mut |s| {
            if let Op::Pipeline {
                start, end, turn, ..
            } = &s.op
            {
                start.names(&mut bounds);
                end.names(&mut bounds);
                if let Some(t) = turn {
                    t.start.names(&mut bounds);
                    t.end.names(&mut bounds);
                }
            }
        });
        for n in bounds {
            if let Some(Builtin::Block(d)) = Builtin::parse(&n)
                && launch.cluster[d as usize] > 1
            {
                return self.diags.push(
                    Diagnostic::new(format!("the pipeline's bounds depend on `{n}`, along which the blocks of a cluster lie"), span)
                        .with_related(at, "the blocks of this cluster load the stages together")
                        .with_help("give every block of a cluster the same iterations, or cluster along another grid dimension"),
                );
            }
        }
    }
}
