//! Shared memory placed by lifetime, over instructions
//! ([`crate::check::placement`] holds the rule): lowering places a kernel's
//! buffers by their lifetimes in its top-level instructions and puts a
//! barrier where bytes change hands ([`hand_over`]); the verifier checks
//! that two buffers sharing bytes are used apart, with such a barrier
//! between ([`check_placement`]).

use super::{Buffer, CopyAtom, Inst, InstKind, KernelIr};
use crate::check::placement::{Lifetime, place};

/// The lifetimes of `count` shared buffers over `body`, one position per
/// top-level instruction (with `flatten`, one per instruction of a
/// top-level `if`'s branches, which lowering's test of the grid's end on
/// clusters wraps around the epilogue), and each position's list: the
/// branches entered to reach it, outermost first.
fn lifetimes(
    body: &[Inst],
    count: usize,
    flatten: bool,
) -> (Vec<Option<Lifetime>>, Vec<Vec<usize>>) {
    let mut lives = vec![None; count];
    let mut lists = Vec::new();
    let mut branches = 0;
    visit(
        body,
        flatten,
        &mut Vec::new(),
        &mut branches,
        &mut lives,
        &mut lists,
    );
    (lives, lists)
}

fn visit(
    list: &[Inst],
    flatten: bool,
    path: &mut Vec<usize>,
    branches: &mut usize,
    lives: &mut [Option<Lifetime>],
    lists: &mut Vec<Vec<usize>>,
) {
    for inst in list {
        if let (
            true,
            InstKind::If {
                then, otherwise, ..
            },
        ) = (flatten, &inst.kind)
        {
            for branch in [then, otherwise] {
                *branches += 1;
                path.push(*branches);
                visit(branch, flatten, path, branches, lives, lists);
                path.pop();
            }
            continue;
        }
        let position = lists.len();
        // Waiting for every cp.async of the thread at the top level: none
        // is in flight past it, so a cp.async target's bytes may go to a
        // buffer first used after it (with a barrier after it, for the
        // other threads' copies).
        if path.is_empty() && matches!(inst.kind, InstKind::AsyncWait(0)) {
            for l in lives.iter_mut().flatten().filter(|l| l.pinned) {
                l.pinned = false;
                l.released = position;
            }
        }
        let mut touched = Vec::new();
        inst.shared_buffers(&mut touched);
        let mut asynchronous = Vec::new();
        super::for_each_atom(std::slice::from_ref(inst), &mut |i| {
            if let InstKind::Copy {
                atom: CopyAtom::Async(..),
                dst,
                ..
            } = &i.kind
                && let super::Space::Shared(b) = dst.space
            {
                asynchronous.push(b);
            }
        });
        // A block's own TMA load is waited for at a later position.
        let pending = matches!(inst.kind, InstKind::TmaLoads { .. });
        for b in touched {
            Lifetime::touch(&mut lives[b], position, asynchronous.contains(&b), pending);
        }
        if let InstKind::Pipeline { load, .. } = &inst.kind {
            for b in super::stores::stages(load) {
                Lifetime::from_start(&mut lives[b]);
            }
        }
        lists.push(path.clone());
    }
}

/// What [`hand_over`] makes of a kernel's top level.
pub struct Placement {
    /// Each shared buffer's byte offset.
    pub offsets: Vec<i64>,
    /// The body, with its hand-over barriers.
    pub body: Vec<Inst>,
    /// Per buffer that takes bytes of earlier ones, those buffers.
    pub takers: Vec<(usize, Vec<usize>)>,
    /// The bytes the buffers take (each rounded up to 16 bytes).
    pub total: i64,
}

/// Places the shared buffers by their lifetimes in `body` (before
/// anything wraps the top level in an `if`) and puts a barrier before the
/// first instruction of each buffer that takes bytes of an earlier one:
/// the earlier buffer's reads and writes are then done in every thread
/// (no wgmma is in flight between top-level instructions but a lagged
/// pipeline's last group, waited for right after it: the verifier's wgmma
/// protocol). `None` past 2^63 bytes.
pub fn hand_over(buffers: &[Buffer], mut body: Vec<Inst>) -> Option<Placement> {
    let (lives, _) = lifetimes(&body, buffers.len(), false);
    let sizes: Vec<(i64, i64)> = buffers
        .iter()
        .map(|b| (b.len * b.elem.bytes(), b.align))
        .collect();
    let (offsets, total) = place(&sizes, &lives)?;
    let takers = takers(&sizes, &offsets, &lives);
    // Per taker, the positions a barrier may take: after its givers' last
    // use, up to its first. One barrier serves every taker whose range
    // holds it (the tile of C and a bias vector after the main loop).
    let mut ranges: Vec<(usize, usize)> = takers
        .iter()
        .map(|(b, from)| {
            let after = from
                .iter()
                .filter_map(|a| lives[*a])
                .map(|l| l.held_until())
                .max();
            let first = lives[*b].expect("a taker is used").first;
            (after.expect("a giver is used") + 1, first)
        })
        .collect();
    ranges.sort_unstable_by_key(|r| r.1);
    let mut at: Vec<usize> = Vec::new();
    for (from, to) in ranges {
        if !at.iter().any(|&q| (from..=to).contains(&q)) {
            at.push(to);
        }
    }
    for &p in at.iter().rev() {
        let span = body[p].span;
        body.insert(p, Inst::at(span, InstKind::Barrier));
    }
    Some(Placement {
        offsets,
        body,
        takers,
        total,
    })
}

/// Per placed shared buffer, those whose bytes meet its own, itself
/// included: what a TMA store still reading it keeps from being written
/// (buffers handed over inside a top-level `if`, say).
pub fn byte_sharers(buffers: &[Buffer]) -> Vec<Vec<usize>> {
    let sizes: Vec<(i64, i64)> = buffers
        .iter()
        .map(|b| (b.len * b.elem.bytes(), b.align))
        .collect();
    let offsets: Vec<i64> = buffers.iter().map(|b| b.at).collect();
    let mut sharers: Vec<Vec<usize>> = (0..buffers.len()).map(|b| vec![b]).collect();
    for (a, b) in overlapping(&sizes, &offsets) {
        sharers[a].push(b);
        sharers[b].push(a);
    }
    sharers
}

/// The pairs of buffers whose bytes meet, each once.
fn overlapping(sizes: &[(i64, i64)], offsets: &[i64]) -> Vec<(usize, usize)> {
    let end = |i: usize| offsets[i] + (sizes[i].0 + 15) / 16 * 16;
    (0..sizes.len())
        .flat_map(|b| (0..b).map(move |a| (a, b)))
        .filter(|&(a, b)| offsets[a] < end(b) && offsets[b] < end(a))
        .collect()
}

/// Per buffer whose bytes meet those of earlier-used ones, the earlier ones.
fn takers(
    sizes: &[(i64, i64)],
    offsets: &[i64],
    lives: &[Option<Lifetime>],
) -> Vec<(usize, Vec<usize>)> {
    let mut takers: Vec<(usize, Vec<usize>)> = Vec::new();
    for (a, b) in overlapping(sizes, offsets) {
        let (Some(la), Some(lb)) = (lives[a], lives[b]) else {
            continue;
        };
        let (giver, taker) = match la.first.cmp(&lb.first) {
            std::cmp::Ordering::Less => (a, b),
            std::cmp::Ordering::Greater => (b, a),
            std::cmp::Ordering::Equal => continue,
        };
        match takers.iter_mut().find(|(t, _)| *t == taker) {
            Some((_, from)) => from.push(giver),
            None => takers.push((taker, vec![giver])),
        }
    }
    takers.sort_unstable_by_key(|t| t.0);
    for (_, from) in &mut takers {
        from.sort_unstable();
    }
    takers
}

/// Byte offsets one after the other, in order, each at its alignment: the
/// placement of buffers that are all live at once.
pub fn in_order(buffers: &[Buffer]) -> Vec<i64> {
    let sizes: Vec<(i64, i64)> = buffers
        .iter()
        .map(|b| (b.len * b.elem.bytes(), b.align))
        .collect();
    let always = Some(Lifetime {
        first: 0,
        last: 0,
        pinned: false,
        pending: false,
        released: 0,
    });
    place(&sizes, &vec![always; sizes.len()]).map_or_else(|| vec![0; sizes.len()], |(o, _)| o)
}

/// The verifier's rule: each buffer at its alignment; two buffers that
/// share bytes are used apart, the earlier one done with all its
/// asynchronous writes, with a barrier between in the list of the later
/// one's first instruction or around it.
pub fn check_placement(ir: &KernelIr) -> Result<(), String> {
    for (i, b) in ir.shared.iter().enumerate() {
        if b.at < 0 || b.at % b.align != 0 {
            return Err(format!(
                "shared buffer s{i} at byte {} is not aligned to {}",
                b.at, b.align
            ));
        }
    }
    let (lives, lists) = lifetimes(&ir.body, ir.shared.len(), true);
    let sizes: Vec<(i64, i64)> = ir
        .shared
        .iter()
        .map(|b| (b.len * b.elem.bytes(), b.align))
        .collect();
    let offsets: Vec<i64> = ir.shared.iter().map(|b| b.at).collect();
    let mut flat = Vec::new();
    flat_positions(&ir.body, &mut flat);
    for (a, b) in overlapping(&sizes, &offsets) {
        let (Some(la), Some(lb)) = (lives[a], lives[b]) else {
            continue;
        };
        let ((a, early), (b, late)) = if la.first <= lb.first {
            ((a, la), (b, lb))
        } else {
            ((b, lb), (a, la))
        };
        if early.held_until() >= late.first || !early.releasable() {
            return Err(format!(
                "shared buffers s{a} and s{b} share bytes, but s{a} is still in use (or awaits an asynchronous write) where s{b} is first used"
            ));
        }
        let around = |p: usize| lists[late.first].starts_with(&lists[p]);
        let between = early.held_until() + 1..late.first;
        if !between
            .into_iter()
            .any(|p| around(p) && matches!(flat[p].kind, InstKind::Barrier))
        {
            return Err(format!(
                "shared buffer s{b} takes bytes of s{a} without a barrier between their uses"
            ));
        }
    }
    Ok(())
}

/// The instructions at the positions [`lifetimes`] counts with `flatten`.
fn flat_positions<'a>(list: &'a [Inst], out: &mut Vec<&'a Inst>) {
    for inst in list {
        match &inst.kind {
            InstKind::If {
                then, otherwise, ..
            } => {
                flat_positions(then, out);
                flat_positions(otherwise, out);
            }
            _ => out.push(inst),
        }
    }
}

/// Per top-level instruction, per buffer: whether a write through the
/// generic proxy (a store, a `cp.async`; not TMA's) at or before it may
/// have touched the buffer's bytes (its own or an overlapping buffer's).
fn generic_writes(body: &[Inst], shared: &[Buffer]) -> Vec<Vec<bool>> {
    let end = |b: &Buffer| b.at + (b.len * b.elem.bytes() + 15) / 16 * 16;
    let mut dirty = vec![false; shared.len()];
    body.iter()
        .map(|inst| {
            super::for_each_atom(std::slice::from_ref(inst), &mut |i| {
                if let Some((addr, _)) = i.written()
                    && let super::Space::Shared(w) = addr.space
                {
                    let written = &shared[w];
                    for (b, buffer) in shared.iter().enumerate() {
                        dirty[b] |= buffer.at < end(written) && written.at < end(buffer);
                    }
                }
            });
            dirty.clone()
        })
        .collect()
}

/// The shared buffers the wgmma group that starts at `list[at]` (its
/// fence) reads.
fn group_operands(list: &[Inst], at: usize) -> Vec<usize> {
    let mut out = Vec::new();
    for i in &list[at + 1..] {
        match &i.kind {
            InstKind::Wgmma { a, b, .. } => {
                for addr in a.shared().into_iter().chain([b]).map(|o| &o.start) {
                    if let super::Space::Shared(s) = addr.space {
                        out.push(s);
                    }
                }
            }
            _ => break,
        }
    }
    out
}

/// Whether the wgmma group fenced at `list[at]` reads bytes that `dirty`
/// marks written through the generic proxy.
fn needs_proxy_fence(list: &[Inst], at: usize, dirty: &[bool]) -> bool {
    group_operands(list, at).iter().any(|&b| dirty[b])
}

/// Lowering's rule, on a placed body: a proxy fence before each wgmma
/// group that reads bytes a generic write may have touched before it (or
/// in the same top-level statement: a loop's next trip); none where TMA
/// alone wrote them, as in a pipeline's stages.
pub fn proxy_fences(body: &mut Vec<Inst>, shared: &[Buffer]) {
    let dirty = generic_writes(body, shared);
    insert_fences(body, &|at| &dirty[at]);
}

/// [`proxy_fences`] over `list`, whose `n`-th statement (counted before
/// any fence went in) sees the writes `dirty(n)` marks; a nested list sees
/// those of the top-level statement that holds it.
fn insert_fences<'d>(list: &mut Vec<Inst>, dirty: &dyn Fn(usize) -> &'d [bool]) {
    let (mut at, mut inserted) = (0, 0);
    while at < list.len() {
        let seen = dirty(at - inserted);
        if matches!(list[at].kind, InstKind::WgmmaFence) && needs_proxy_fence(list, at, seen) {
            let span = list[at].span;
            list.insert(at, Inst::at(span, InstKind::ProxyFence));
            (at, inserted) = (at + 1, inserted + 1);
        }
        for nested in list[at].kind.bodies_mut() {
            insert_fences(nested, &|_| seen);
        }
        at += 1;
    }
}

/// The verifier's rule: every wgmma group that reads bytes a generic
/// write may have touched before it follows a proxy fence.
pub fn check_proxy_fences(ir: &KernelIr) -> Result<(), String> {
    let dirty = generic_writes(&ir.body, &ir.shared);
    match unfenced(&ir.body, &|at| &dirty[at]) {
        true => Err(
            "a wgmma group reads shared bytes written through the generic proxy with no proxy fence before it"
                .to_string(),
        ),
        false => Ok(()),
    }
}

/// Whether some wgmma group in `list` (or nested in it) needs a proxy fence
/// right before it and has none; `dirty` as in [`insert_fences`].
fn unfenced<'d>(list: &[Inst], dirty: &dyn Fn(usize) -> &'d [bool]) -> bool {
    list.iter().enumerate().any(|(at, inst)| {
        let seen = dirty(at);
        let bare = matches!(inst.kind, InstKind::WgmmaFence)
            && needs_proxy_fence(list, at, seen)
            && (at == 0 || !matches!(list[at - 1].kind, InstKind::ProxyFence));
        bare || inst
            .kind
            .bodies()
            .into_iter()
            .any(|body| unfenced(body, &|_| seen))
    })
}
