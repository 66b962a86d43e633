//! A pipeline's loads (TMA boxes of its maps bringing the stage's bytes,
//! multicast ones alike in every block of the cluster) and what a kernel
//! on clusters may do where the runtime's pad blocks run.

use super::{addr, visible};
use crate::ir::stores::StoresInFlight;
use crate::ir::{Addr, Inst, InstKind, IntDef, IntId, KernelIr, Param, Space};

/// On clusters the runtime may pad the grid with blocks past its end:
/// where it may (`pads`), they write global memory nowhere and reduce
/// across blocks nowhere (they would join the groups), because every
/// write and reduce is in the test that follows the pipeline (`block.<d>
/// < extent`, lowering's `past_the_grid`).
pub(super) fn pad_blocks_write_nothing(ir: &KernelIr) -> Result<(), String> {
    let d = ir.cluster_dim().expect("a cluster");
    if !ir.pads {
        return Ok(());
    }
    // Groups the kernel computes from its indices: a pad block may have one.
    let mut parts = false;
    crate::ir::for_each_inst(&ir.body, &mut |i| {
        parts |= matches!(
            i.kind,
            InstKind::ReduceBlocks {
                across: crate::ir::Groups::Parts { .. },
                ..
            }
        );
    });
    if parts {
        return Err(
            "a kernel on clusters reduces across parts where the runtime may pad its grid".into(),
        );
    }
    let mut after = false;
    for inst in &ir.body {
        if let InstKind::If { cond, .. } = &inst.kind
            && after
            && let IntDef::Compare(crate::arith::Binary::Lt, b, _) = ir.ints[*cond].def
            && ir.ints[b].def == IntDef::BlockIdx(d)
        {
            continue;
        }
        after |= matches!(inst.kind, InstKind::Pipeline { .. });
        // Every instruction, a reduce's and an if's own included (before
        // their bodies'): the reduce itself, or what any of them writes.
        let mut wrong = None;
        crate::ir::for_each_inst(std::slice::from_ref(inst), &mut |i| {
            let global = i
                .written()
                .is_some_and(|(a, _)| matches!(a.space, Space::Global(_)));
            if matches!(i.kind, InstKind::ReduceBlocks { .. }) {
                wrong.get_or_insert("reduces across blocks");
            } else if global || matches!(i.kind, InstKind::TmaStore { .. }) {
                wrong.get_or_insert("writes global memory");
            }
        });
        if let Some(what) = wrong {
            return Err(format!(
                "a kernel on clusters {what} where its pad blocks run (outside a test of block index {d} below the grid's extent, after the pipeline)"
            ));
        }
    }
    Ok(())
}

/// A load of `parts` boxes: one, or one per block of the kernel's
/// cluster, which all load them alike (where from and where to does not
/// depend on the block index along the cluster).
fn multicast(ir: &KernelIr, origin: &[IntId], dst: &Addr, parts: u32) -> Result<(), String> {
    if parts == 1 {
        return Ok(());
    }
    let Some(d) = ir.cluster_dim() else {
        return Err(format!(
            "a TMA load multicast to {parts} blocks, without a cluster"
        ));
    };
    if parts != ir.cluster[d as usize] {
        return Err(format!(
            "a TMA load multicast to {parts} blocks, in a cluster of {}",
            ir.cluster[d as usize]
        ));
    }
    if origin
        .iter()
        .chain([&dst.index])
        .any(|&v| ir.depends_on_block(v, d))
    {
        return Err(format!(
            "a multicast TMA load that differs between the blocks of the cluster (it depends on block index {d})"
        ));
    }
    Ok(())
}

/// A pipeline's loads: TMA boxes of its maps, into shared memory, whose
/// bytes are the stage's.
pub(super) fn pipeline_loads(
    ir: &KernelIr,
    load: &[Inst],
    bytes: i64,
    open: &[usize],
) -> Result<(), String> {
    let (mut total, mut shared) = (0, false);
    for inst in load {
        let InstKind::TmaLoad {
            map,
            origin,
            dst,
            parts,
        } = &inst.kind
        else {
            return Err("a pipeline's load block holds only TMA loads".into());
        };
        multicast(ir, origin, dst, *parts)?;
        shared |= *parts > 1;
        let (elem, elems) = tma_box(ir, *map, origin, dst, *parts, open)?;
        total += elems * elem.bytes();
    }
    if ir.cluster != [1; 3] && !shared {
        return Err("a cluster whose pipeline multicasts no load".into());
    }
    if total != bytes {
        return Err(format!(
            "a pipeline stage expects {bytes} bytes, but its loads bring {total}"
        ));
    }
    Ok(())
}

/// A pipeline's prefetches: boxes of its maps, each at as many
/// coordinates as the map has dimensions, all visible before the pipeline.
pub(super) fn prefetches(ir: &KernelIr, prefetch: &[Inst], open: &[usize]) -> Result<(), String> {
    for inst in prefetch {
        let InstKind::TmaPrefetch { map, origin } = &inst.kind else {
            return Err("a pipeline's prefetch block holds only TMA prefetches".into());
        };
        map_box(ir, *map, origin, open)?;
    }
    Ok(())
}

/// A box of a map of the kernel, at as many coordinates as the map has
/// dimensions, each visible here: the map.
pub(super) fn map_box<'a>(
    ir: &'a KernelIr,
    map: usize,
    origin: &[IntId],
    open: &[usize],
) -> Result<&'a crate::ir::TensorMapIr, String> {
    let m = ir
        .tensor_maps
        .get(map)
        .ok_or(format!("no tensor map t{map}"))?;
    if origin.len() != m.dims.len() {
        return Err(format!("a box of t{map} with {} coordinates", origin.len()));
    }
    for &o in origin {
        visible(ir, o, open)?;
    }
    Ok(m)
}

/// A block's own TMA loads: boxes of its maps into shared memory, one
/// each, bringing the bytes its barrier expects.
pub(super) fn block_loads(
    ir: &KernelIr,
    loads: &[Inst],
    bytes: i64,
    open: &[usize],
) -> Result<(), String> {
    let mut total = 0;
    for inst in loads {
        let InstKind::TmaLoad {
            map,
            origin,
            dst,
            parts: 1,
        } = &inst.kind
        else {
            return Err("a TMA load outside a pipeline holds only TMA boxes, not multicast".into());
        };
        let (elem, elems) = tma_box(ir, *map, origin, dst, 1, open)?;
        total += elems * elem.bytes();
    }
    if total != bytes {
        return Err(format!(
            "a TMA load outside a pipeline expects {bytes} bytes, but its boxes bring {total}"
        ));
    }
    Ok(())
}

/// What [`block_load_waits`] refuses.
const NEVER_WAITED: &str = "a TMA load outside a pipeline that is never waited for";
const LOAD_BEFORE_WAIT: &str = "a TMA load outside a pipeline before the last one is waited for";
const CARRIED_TOUCHED: &str =
    "an access to a TMA load's tile, or another load, before the load is waited for";

/// Each of a list's TMA loads outside a pipeline is waited for in the same
/// list before its next one, before anything touches its tiles, and
/// before the list ends; the bodies an instruction nests (an `if`'s
/// branches, a loop's or a pipeline's body) are lists of their own. One
/// exception: a load left in flight at the end of an `if`'s branch (whose
/// other branch loads nothing) may be waited for in the branch of the next
/// `if` on the same condition, where nothing between touches its tiles or
/// loads: the two take the same branch. So on every path loads and waits
/// alternate, a loop's trip leaves none in flight, and a wait's phase is
/// the count of waits before it, mod 2.
pub(super) fn block_load_waits(body: &[Inst]) -> Result<(), String> {
    match load_waits(body, None)? {
        Some(_) => Err(NEVER_WAITED.into()),
        None => Ok(()),
    }
}

/// [`block_load_waits`] of a list entered with a load in flight (its
/// tiles): the load still in flight at the list's end, if any.
fn load_waits(body: &[Inst], entered: Option<Vec<usize>>) -> Result<Option<Vec<usize>>, String> {
    let mut pending = entered;
    // A load in flight where an earlier `if` on `cond` took its branch.
    let mut carried: Option<(IntId, Vec<usize>)> = None;
    for inst in body {
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        let mut nested = 0;
        for body in inst.kind.bodies() {
            crate::ir::for_each_inst(body, &mut |i| {
                nested += usize::from(matches!(i.kind, InstKind::TmaLoads { .. }));
            });
        }
        if let InstKind::If {
            cond,
            then,
            otherwise,
        } = &inst.kind
            && pending.is_none()
        {
            let entered = match carried.take() {
                Some((c, tiles)) if c == *cond => Some(tiles),
                Some((c, tiles)) if nested == 0 && !touched.iter().any(|b| tiles.contains(b)) => {
                    carried = Some((c, tiles));
                    None
                }
                Some(_) => {
                    return Err(CARRIED_TOUCHED.into());
                }
                None => None,
            };
            let left = load_waits(then, entered)?;
            if load_waits(otherwise, None)?.is_some() {
                return Err(NEVER_WAITED.into());
            }
            if let Some(tiles) = left {
                if carried.is_some() {
                    return Err(LOAD_BEFORE_WAIT.into());
                }
                carried = Some((*cond, tiles));
            }
            continue;
        }
        if let Some((_, tiles)) = &carried
            && (nested > 0
                || matches!(inst.kind, InstKind::TmaLoads { .. } | InstKind::TmaWait)
                || touched.iter().any(|b| tiles.contains(b)))
        {
            return Err(CARRIED_TOUCHED.into());
        }
        if nested > 0 && pending.is_some() {
            return Err(LOAD_BEFORE_WAIT.into());
        }
        match (&inst.kind, &pending) {
            (InstKind::TmaWait, Some(_)) => pending = None,
            (InstKind::TmaWait, None) => {
                return Err("a wait for TMA loads with none in flight".into());
            }
            (InstKind::TmaLoads { .. }, None) => pending = Some(touched),
            (InstKind::TmaLoads { .. }, Some(_)) => {
                return Err(LOAD_BEFORE_WAIT.into());
            }
            (_, Some(tiles)) if touched.iter().any(|b| tiles.contains(b)) => {
                return Err("an access to a TMA load's tile before the load is waited for".into());
            }
            _ => {}
        }
        for body in inst.kind.bodies() {
            if load_waits(body, None)?.is_some() {
                return Err(NEVER_WAITED.into());
            }
        }
    }
    match carried {
        Some(_) => Err(NEVER_WAITED.into()),
        None => Ok(pending),
    }
}

/// TMA reads a store's tiles after the store is issued: nothing touches
/// them again before a [`InstKind::TmaStoreWait`] that leaves fewer
/// groups in flight than were issued since (on every path: through an
/// `if`'s branches, around a loop's back edge, and before a pipeline's
/// producer rewrites a stage), and at the top level a wait for all is the
/// very next instruction (shared memory is placed by lifetimes over the
/// top level: no tile may be read from one top-level instruction into
/// the next).
pub(super) fn tma_store_waits(ir: &KernelIr) -> Result<(), String> {
    if !crate::ir::stores::any(&ir.body) {
        return Ok(());
    }
    let sharers = crate::ir::shared::byte_sharers(&ir.shared);
    let mut pending = StoresInFlight::default();
    for inst in &ir.body {
        if !pending.is_empty() && !matches!(inst.kind, InstKind::TmaStoreWait { keep: 0 }) {
            return Err("a top-level instruction after a TMA store before the wait for it".into());
        }
        pending = store_reads(std::slice::from_ref(inst), pending, &sharers)?;
    }
    if !pending.is_empty() {
        return Err("a TMA store whose wait never comes".into());
    }
    Ok(())
}

/// The stores that may still be reading their buffers after `list` (with
/// those sharing their bytes: `sharers`), entered with `pending`; an error
/// where something touches one of them first.
fn store_reads(
    list: &[Inst],
    mut pending: StoresInFlight,
    sharers: &[Vec<usize>],
) -> Result<StoresInFlight, String> {
    for inst in list {
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        match &inst.kind {
            InstKind::TmaStoreWait { keep } => pending.wait(*keep),
            InstKind::TmaStores { .. } => {
                pending.issue(&touched, sharers);
            }
            InstKind::If {
                then, otherwise, ..
            } => {
                let after_then = store_reads(then, pending.clone(), sharers)?;
                let after_otherwise = store_reads(otherwise, pending, sharers)?;
                pending = after_then.meet(&after_otherwise);
            }
            InstKind::ReduceBlocks { body, .. } => {
                let after = store_reads(body, pending.clone(), sharers)?;
                pending = pending.meet(&after);
            }
            InstKind::Loop { body, .. } | InstKind::Pipeline { body, .. } => {
                let stages = match &inst.kind {
                    InstKind::Pipeline { load, .. } => crate::ir::stores::stages(load),
                    _ => Vec::new(),
                };
                // Trips until what is pending at a trip's start stops growing.
                let before = pending.clone();
                loop {
                    let after = store_reads(body, pending.clone(), sharers)?;
                    if after.reads_any(&stages) {
                        return Err(
                            "a pipeline trip ends with a TMA store reading a stage the producer rewrites"
                                .into(),
                        );
                    }
                    let next = pending.clone().meet(&after);
                    if next == pending {
                        pending = before.meet(&after);
                        break;
                    }
                    pending = next;
                }
            }
            _ if pending.reads_any(&touched) => {
                return Err(format!(
                    "an access to s{} while a TMA store may still be reading it (no wait between)",
                    touched
                        .iter()
                        .find(|b| pending.reads_any(&[**b]))
                        .expect("found above")
                ));
            }
            _ => {}
        }
    }
    Ok(pending)
}

/// A TMA store that goes out without waiting for the bulk groups before it
/// (`unordered`), or a block's TMA load issued without (not
/// `after_stores`), has boxes that miss those of every store that may
/// still be writing ([`crate::ir::stores`]).
pub(super) fn tma_store_order(ir: &KernelIr) -> Result<(), String> {
    let free = crate::ir::stores::may_go_unordered(&ir.ints, &ir.tensor_maps, &ir.body, false);
    let mut n = 0;
    let mut overlapping = None;
    crate::ir::for_each_inst(&ir.body, &mut |i| {
        if let Some(waits) = crate::ir::stores::ordered(i) {
            if !waits && !free[n] && overlapping.is_none() {
                overlapping = Some(match i.kind {
                    InstKind::TmaStores { .. } => "an unordered TMA store",
                    _ => "a TMA load not after the stores",
                });
            }
            n += 1;
        }
    });
    match overlapping {
        Some(what) => Err(format!(
            "{what} whose boxes may overlap a store still in flight"
        )),
        None => Ok(()),
    }
}

/// A TMA store's boxes: of its maps, from shared memory.
pub(super) fn tma_stores(ir: &KernelIr, stores: &[Inst], open: &[usize]) -> Result<(), String> {
    for inst in stores {
        let InstKind::TmaStore { map, origin, src } = &inst.kind else {
            return Err("a TMA store holds only its boxes".into());
        };
        tma_box(ir, *map, origin, src, 1, open)?;
    }
    Ok(())
}

/// One TMA box, `parts` of them stacked, of tensor map `map` at `origin`,
/// in shared memory at `place`: the map's element type, the buffer aligned
/// to the swizzle's repeat (128 bytes at least), unguarded, and inside the
/// buffer where its index is a constant. Returns the element type and how
/// many elements the boxes hold.
fn tma_box(
    ir: &KernelIr,
    map: usize,
    origin: &[IntId],
    place: &Addr,
    parts: u32,
    open: &[usize],
) -> Result<(crate::check::program::Elem, i64), String> {
    let m = map_box(ir, map, origin, open)?;
    addr(ir, place, open)?;
    let Space::Shared(s) = place.space else {
        return Err("a TMA box in global memory or registers, not shared memory".into());
    };
    let Param::Tensor { elem, .. } = ir.params[m.param] else {
        unreachable!("the verifier's tensor maps are of tensors")
    };
    let align = m
        .swizzle(elem)
        .map_or(128, |sw| (sw.repeat() * elem.bytes()).max(128));
    if place.guard.is_some() || ir.shared[s].elem != elem || ir.shared[s].align < align {
        return Err(format!(
            "a TMA box of {elem} in s{s} ({}, aligned to {} bytes) needs it unguarded, aligned to {align}",
            ir.shared[s].elem, ir.shared[s].align
        ));
    }
    let box_elems: i64 = m.dims.iter().map(|d| d.2).product();
    let elems = box_elems * parts as i64;
    if let IntDef::Const(c) = ir.ints[place.index].def
        && c + elems > ir.shared[s].len
    {
        return Err(format!(
            "a TMA box at s{s}[{c}] of {elems} elements passes the buffer's end"
        ));
    }
    if box_elems * elem.bytes() % align != 0 && parts > 1 {
        return Err(format!(
            "a multicast box of {} bytes: each part must start aligned to {align}",
            box_elems * elem.bytes()
        ));
    }
    Ok((elem, elems))
}

/// A pipeline's turns: each one warpgroup's, so the block is `groups`
/// warpgroups and nothing in a turn needs more threads (the agreement
/// check holds its body and `after` to a warpgroup's granule); `after`
/// touches no stage (the turn has handed them back); lagged,
/// `after` opens with the wait for the turn's last group. On a cluster the
/// blocks take the same turns (their bounds, like the trips', do not
/// depend on the block's rank).
pub(super) fn turns(
    ir: &KernelIr,
    t: &crate::ir::Turn,
    load: &[Inst],
    after: &[Inst],
    lag: u32,
) -> Result<(), String> {
    if i64::from(t.groups) * 128 != ir.block_threads {
        return Err(format!(
            "a pipeline's turns on {} warpgroups, in a block of {} threads",
            t.groups, ir.block_threads
        ));
    }
    // The turn's stages are handed back before `after`: the producer
    // fills them for later turns meanwhile.
    let sharers = crate::ir::shared::byte_sharers(&ir.shared);
    let staged: Vec<usize> = crate::ir::stores::stages(load)
        .iter()
        .flat_map(|&s| sharers[s].clone())
        .collect();
    let mut touched = Vec::new();
    crate::ir::for_each_atom(after, &mut |i| i.shared_buffers(&mut touched));
    if let Some(b) = touched.iter().find(|b| staged.contains(b)) {
        return Err(format!(
            "a turn's `after` touches s{b}, a stage of its pipeline"
        ));
    }
    if lag == 1 && !matches!(after.first().map(|i| &i.kind), Some(InstKind::WgmmaWait(0))) {
        return Err(
            "wgmma protocol: a lagged turn's `after` opens with a wait for all (wait 0)".into(),
        );
    }
    Ok(())
}
