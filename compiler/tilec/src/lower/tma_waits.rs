//! Where the block's own TMA copies wait: each load before the first
//! statement that touches its tiles, each store's bulk group before its
//! tiles are touched again (in a pipeline's turn, before the turn ends).
//! In: a lowered body. Out: the body with its [`InstKind::TmaWait`]s and
//! [`InstKind::TmaStoreWait`]s placed, which the verifier checks.

use crate::check::kernel::predication::UNIFORM;
use crate::ir::stores::StoresInFlight;
use crate::ir::{Inst, InstKind};
use crate::span::Span;

/// Places the waits of the block's own TMA loads: each load is waited for
/// right before the first statement after it that touches its tiles (the
/// pipeline between, say: a tile of C loaded before the main loop lands
/// during it), or before the next such load, or one nesting some (the
/// barrier tracks one phase at a time), or at the end of its list. Within
/// a list, what a statement nests counts as the statement's; the bodies
/// it nests (an `if`'s branches, a loop's or a pipeline's body) are lists
/// of their own, so a loop's trip ends with its loads landed. But a load
/// that an `if`'s branch would wait for at its end is waited for in the
/// next `if` on the same condition instead, where nothing between touches
/// its tiles or loads (`if last { load C }; gemm; if last { use C }`: C
/// lands under the gemm; the verifier's `block_load_waits` holds lowering
/// to it).
pub(super) fn tma_waits(body: Vec<Inst>) -> Vec<Inst> {
    waits_from(body, None)
}

/// A load in flight: its tiles and where it was written.
type InFlight = (Vec<usize>, Span);

/// [`tma_waits`] of a list entered with a load in flight. A gemm on
/// wgmma is a group of instructions in the list (a proxy fence, the
/// wgmma fence, the wgmmas, the commit and the wait), which nothing may
/// stand inside: a load its wgmmas read is waited for before the group.
fn waits_from(body: Vec<Inst>, mut pending: Option<InFlight>) -> Vec<Inst> {
    let carries = carried_loads(&body);
    let mut out: Vec<Inst> = Vec::with_capacity(body.len() + 2);
    // Where the open wgmma group starts in `out`.
    let mut group: Option<usize> = None;
    for (j, mut inst) in body.into_iter().enumerate() {
        match inst.kind {
            InstKind::WgmmaFence if group.is_none() => {
                let fenced = matches!(out.last().map(|i| &i.kind), Some(InstKind::ProxyFence));
                group = Some(out.len() - usize::from(fenced));
            }
            InstKind::WgmmaWait(_) => group = None,
            _ => {}
        }
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        let next = match &inst.kind {
            InstKind::TmaLoads { .. } => Some((touched.clone(), inst.span)),
            _ => None,
        };
        let nested = next.is_none() && holds_loads(&inst);
        if next.is_none() {
            let into = carries.iter().find(|c| c.1 == j).map(|c| c.2.clone());
            let out_of = carries.iter().any(|c| c.0 == j);
            for (b, body) in inst.kind.bodies_mut().into_iter().enumerate() {
                // An `if`'s first body is its `then` branch.
                let entered = into.clone().filter(|_| b == 0);
                *body = waits_from(std::mem::take(body), entered);
                // The carried load's wait, which `carried_loads` made sure
                // ends the branch (were it anything else, the second `if`
                // would wait again and the verifier refuse the kernel).
                if out_of
                    && b == 0
                    && matches!(body.last().map(|w| &w.kind), Some(InstKind::TmaWait))
                {
                    body.pop();
                }
            }
        }
        if let Some((_, span)) = pending.take_if(|(tiles, _)| {
            next.is_some() || nested || touched.iter().any(|b| tiles.contains(b))
        }) {
            let at = group.unwrap_or(out.len());
            out.insert(at, Inst::at(span, InstKind::TmaWait));
        }
        pending = next.or(pending);
        out.push(inst);
    }
    if let Some((_, span)) = pending {
        out.push(Inst::at(span, InstKind::TmaWait));
    }
    out
}

/// The loads of `body` carried from one `if` to the next on the same
/// condition: (the first `if`'s index, the second's, the load). The first
/// `if`'s `then` ends with a load it would wait for at its end and its
/// `otherwise` loads nothing; between the two, nothing touches the load's
/// tiles or loads.
fn carried_loads(body: &[Inst]) -> Vec<(usize, usize, InFlight)> {
    let touches = |inst: &Inst, tiles: &[usize]| {
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        touched.iter().any(|b| tiles.contains(b))
    };
    let mut pairs = Vec::new();
    for (j, inst) in body.iter().enumerate() {
        let InstKind::If {
            cond,
            then,
            otherwise,
        } = &inst.kind
        else {
            continue;
        };
        // The branch's last load, waited for at its end.
        let Some(at) = then.iter().rposition(holds_loads) else {
            continue;
        };
        let InstKind::TmaLoads { .. } = then[at].kind else {
            continue;
        };
        let mut tiles = Vec::new();
        then[at].shared_buffers(&mut tiles);
        if then[at + 1..].iter().any(|i| touches(i, &tiles)) || otherwise.iter().any(holds_loads) {
            continue;
        }
        for (k, later) in body.iter().enumerate().skip(j + 1) {
            match &later.kind {
                InstKind::If { cond: c, .. } if c == cond => {
                    pairs.push((j, k, (tiles, then[at].span)));
                    break;
                }
                _ if holds_loads(later) || touches(later, &tiles) => break,
                _ => {}
            }
        }
    }
    pairs
}

/// Whether `inst` is a block's TMA load or holds one.
fn holds_loads(inst: &Inst) -> bool {
    let mut any = false;
    crate::ir::for_each_inst(std::slice::from_ref(inst), &mut |i| {
        any |= matches!(i.kind, InstKind::TmaLoads { .. });
    });
    any
}

/// Places the waits of the block's TMA stores ([`InstKind::TmaStoreWait`]).
/// TMA reads a store's tiles after it is issued, so a wait stands before
/// the first instruction after the store, in its list, that touches one
/// of them (what an instruction nests counts as its own), around the back
/// edge of a loop or pipeline body (whose next trip may rewrite them),
/// and right after the top-level instruction the store is in at the
/// latest: shared memory is placed by lifetimes over the top level, so no
/// tile may be in flight from one top-level instruction into the next.
/// A wait leaves the stores issued after the newest one it waits for in
/// flight (an epilogue's subtiles through four buffers: the load into the
/// first waits for the first's store, not the second's). A wait is a
/// barrier: it goes into an `if` only where the block agrees on the
/// condition (`granules`), before the `if` otherwise. A store keeps every
/// buffer sharing bytes with its tile (`sharers`) from being touched.
/// Inside a persistent kernel's body, a subtile's store then drains while
/// the next subtile's C is loaded.
pub(super) fn tma_store_waits(
    body: Vec<Inst>,
    granules: &[i64],
    sharers: &[Vec<usize>],
) -> Vec<Inst> {
    if !crate::ir::stores::any(&body) {
        return body;
    }
    let mut out = Vec::with_capacity(body.len() + 1);
    let context = (granules, sharers);
    for inst in body {
        let span = inst.span;
        let (mut placed, pending) = store_waits(vec![inst], StoresInFlight::default(), context);
        out.append(&mut placed);
        if !pending.is_empty() {
            out.push(Inst::at(span, InstKind::TmaStoreWait { keep: 0 }));
        }
    }
    out
}

/// [`tma_store_waits`] in one list, with the stores before it that may
/// still be reading their buffers (`pending`): the list with its waits,
/// and the stores pending at its end.
fn store_waits(
    list: Vec<Inst>,
    mut pending: StoresInFlight,
    context: (&[i64], &[Vec<usize>]),
) -> (Vec<Inst>, StoresInFlight) {
    let (granules, sharers) = context;
    let mut out = Vec::with_capacity(list.len() + 1);
    for mut inst in list {
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        let inside = match inst.kind {
            InstKind::TmaStores { .. } => true,
            InstKind::If { cond, .. } => granules[cond] == UNIFORM,
            _ => false,
        };
        if !inside && let Some(keep) = pending.keep_for(&touched) {
            out.push(Inst::at(inst.span, InstKind::TmaStoreWait { keep }));
            pending.wait(keep);
        }
        match &mut inst.kind {
            InstKind::TmaStores { .. } => {
                pending.issue(&touched, sharers);
            }
            InstKind::If {
                then, otherwise, ..
            } => {
                let (t, after_then) = store_waits(std::mem::take(then), pending.clone(), context);
                let (o, after_otherwise) = store_waits(std::mem::take(otherwise), pending, context);
                (*then, *otherwise) = (t, o);
                pending = after_then.meet(&after_otherwise);
            }
            InstKind::ReduceBlocks { body, .. } => {
                let (b, after) = store_waits(std::mem::take(body), pending.clone(), context);
                *body = b;
                pending = pending.meet(&after);
            }
            InstKind::Loop { body, .. } => {
                let (b, after) = trips(std::mem::take(body), pending, &[], context);
                *body = b;
                pending = after;
            }
            InstKind::Pipeline {
                body, load, after, ..
            } => {
                // The producer rewrites the stages once the trip releases
                // them, at the body's end.
                let stages = crate::ir::stores::stages(load);
                let (b, left) = trips(std::mem::take(body), pending, &stages, context);
                *body = b;
                pending = left;
                // A turn's stores are its warpgroup's bulk groups, which
                // only the first thread of that warpgroup can wait for:
                // each turn waits for its own before it ends (ahead of
                // the warpgroup's next turn, which may rewrite the tile,
                // and of the block's exit, which frees it).
                if !after.is_empty() {
                    let (mut a, left) = store_waits(std::mem::take(after), pending, context);
                    if !left.is_empty() {
                        let span = a.last().map_or(inst.span, |i| i.span);
                        a.push(Inst::at(span, InstKind::TmaStoreWait { keep: 0 }));
                    }
                    *after = a;
                    pending = StoresInFlight::default();
                }
            }
            _ => {}
        }
        out.push(inst);
    }
    (out, pending)
}

/// The waits of a loop's body, which runs any number of times: entered
/// with what is pending before the loop or at the end of a trip, until
/// that stops growing. With `rewritten`, buffers the loop rewrites
/// between trips: a wait ends the body where a store may be reading one.
fn trips(
    body: Vec<Inst>,
    before: StoresInFlight,
    rewritten: &[usize],
    context: (&[i64], &[Vec<usize>]),
) -> (Vec<Inst>, StoresInFlight) {
    // A trip starts after the loop's start or after another trip: what
    // either leaves, as one entry.
    let mut entry = before.clone().meet(&StoresInFlight::default());
    loop {
        let (mut placed, mut after) = store_waits(body.clone(), entry.clone(), context);
        if let Some(last) = placed.last()
            && let Some(keep) = after.keep_for(rewritten)
        {
            let span = last.span;
            placed.push(Inst::at(span, InstKind::TmaStoreWait { keep }));
            after.wait(keep);
        }
        let next = entry.clone().meet(&after);
        if next == entry {
            return (placed, before.meet(&after));
        }
        entry = next;
    }
}
