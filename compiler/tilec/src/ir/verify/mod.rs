//! The kernel IR verifier, run after lowering: every value is defined before
//! use and lives in a scope that encloses its uses; register indices are
//! constants inside their arrays; shared indices that are constants lie
//! inside their buffers; global accesses name tensor parameters; what a
//! whole warp, warpgroup or block issues stands under conditions those
//! threads agree on; shared buffers that share bytes are used apart, a
//! barrier between.

use super::{
    Addr, Arith, CopyAtom, Groups, Inst, InstKind, IntDef, IntId, KernelIr, Param, ScalarRef, Space,
};
use crate::check::kernel::predication::UNIFORM;
use crate::check::program::Elem;
use pipeline::{
    block_loads, pad_blocks_write_nothing, pipeline_loads, prefetches, tma_stores, turns,
};
use tilec_layout::int::Op as IntOp;

mod pipeline;
mod warpgroup;

use warpgroup::{wgmma_fragment, wgmma_windows};

pub fn verify(ir: &KernelIr) -> Result<(), String> {
    for (id, v) in ir.ints.iter().enumerate() {
        match &v.def {
            IntDef::Bin(_, a, b) | IntDef::Below(a, b) | IntDef::Compare(_, a, b)
                if *a >= id || *b >= id =>
            {
                return Err(format!("%{id} uses a later value"));
            }
            IntDef::Compare(op, ..) if !op.is_comparison() => {
                return Err(format!("%{id}: `{op}` is not a comparison"));
            }
            IntDef::Swizzle(a, _) if *a >= id => {
                return Err(format!("%{id} uses a later value"));
            }
            IntDef::LoopVar(l) if v.scope != Some(*l) => {
                return Err(format!("%{id}: a counter outside its loop"));
            }
            IntDef::Extent(e) if *e >= ir.extents.len() => {
                return Err(format!("%{id}: no extent {e}"));
            }
            _ => {}
        }
        if v.narrow
            && !matches!(
                v.def,
                IntDef::Bin(IntOp::Div | IntOp::CeilDiv | IntOp::Mod, ..)
            )
        {
            return Err(format!(
                "%{id} is computed in 32 bits but is no quotient or remainder"
            ));
        }
    }
    for m in &ir.tensor_maps {
        if !matches!(ir.params.get(m.param), Some(Param::Tensor { .. })) {
            return Err(format!(
                "a tensor map of parameter {}, which is not a tensor",
                m.param
            ));
        }
        for &(e, s, size) in &m.dims {
            visible(ir, e, &[])?;
            visible(ir, s, &[])?;
            if !(1..=tilec_layout::tma::MAX_BOX).contains(&size) {
                return Err(format!("a tensor map box of {size} elements"));
            }
        }
        if m.dims.is_empty()
            || m.dims.len() > tilec_layout::tma::MAX_RANK
            || ![0, 32, 64, 128].contains(&m.swizzle_bytes)
        {
            return Err("a tensor map of 1 to 5 dimensions swizzles 0, 32, 64 or 128 bytes".into());
        }
    }
    let pipelines = ir
        .body
        .iter()
        .filter(|i| matches!(i.kind, InstKind::Pipeline { .. }))
        .count();
    if pipelines > 1 {
        return Err("a kernel has at most one pipeline".into());
    }
    if ir.pads && ir.cluster == [1; 3] {
        return Err("pad blocks without a cluster".into());
    }
    if ir.cluster != [1; 3] {
        let wide = ir.cluster.iter().filter(|&&c| c > 1).count();
        if ir.cluster.contains(&0) || wide != 1 || ir.cluster.iter().product::<u32>() > 8 {
            return Err(format!(
                "a cluster of {:?} blocks: 2 to 8 along one grid dimension",
                ir.cluster
            ));
        }
        if pipelines == 0 {
            return Err("a cluster without a pipeline to share".into());
        }
        pad_blocks_write_nothing(ir)?;
    }
    if pipelines == 1
        && (ir.block_threads % super::PRODUCER_THREADS != 0
            || ir.block_threads + super::PRODUCER_THREADS > 1024)
    {
        return Err(format!(
            "a pipeline's consumers are whole warpgroups, not {} threads",
            ir.block_threads
        ));
    }
    // One workspace and set of counters a launch: one reduce across a grid
    // dimension, or reduces across parts of the same bounds (the copies of
    // one that lowering unrolled); on the block's threads alone (in a
    // pipeline's body, the consumers', not in its load block: the producer
    // takes no part).
    let mut reduces = Vec::new();
    super::for_each_inst(&ir.body, &mut |i| {
        if let InstKind::ReduceBlocks { across, .. } = i.kind {
            reduces.push(across);
        }
    });
    let one = match reduces.as_slice() {
        [] | [_] => true,
        [first @ Groups::Parts { .. }, rest @ ..] => rest.iter().all(|a| a == first),
        _ => false,
    };
    if !one {
        return Err("a kernel's reduces across blocks share one workspace: one reduce across a grid dimension, or reduces across parts of the same bounds".into());
    }
    for i in &ir.body {
        if let InstKind::Pipeline { load, .. } = &i.kind {
            let mut inside = false;
            super::for_each_inst(load, &mut |i| {
                inside |= matches!(i.kind, InstKind::ReduceBlocks { .. });
            });
            if inside {
                return Err("a reduce across blocks inside a pipeline's load block".into());
            }
        }
    }
    let mut seen_loops = Vec::new();
    insts(ir, &ir.body, &mut Vec::new(), &mut seen_loops, 0)?;
    super::shared::check_placement(ir)?;
    super::shared::check_proxy_fences(ir)?;
    pipeline::block_load_waits(&ir.body)?;
    pipeline::tma_store_waits(ir)?;
    pipeline::tma_store_order(ir)?;
    agreement(&ir.body, &super::granules(&ir.ints), UNIFORM, false)
}

/// Instructions a whole warp (mma.sync, ldmatrix, shuffles), warpgroup
/// (wgmma; a barrier or TMA copy in a pipeline's turn, `turn`) or block
/// (barriers, TMA copies) issues, under conditions of granule `under`.
fn agreement(body: &[Inst], granules: &[i64], under: i64, turn: bool) -> Result<(), String> {
    for inst in body {
        let (need, what) = match &inst.kind {
            InstKind::Barrier if turn => (128, "a barrier of a turn's warpgroup"),
            InstKind::Barrier => (UNIFORM, "a barrier"),
            // In a turn, its warpgroup's: the first thread of it issues,
            // its barrier orders.
            InstKind::TmaStoreWait { .. } if turn => (128, "a TMA store's wait in a turn"),
            InstKind::TmaStores { .. } if turn => (128, "a TMA store in a turn"),
            InstKind::TmaLoads { .. } if turn => (128, "a TMA load in a turn"),
            InstKind::TmaWait if turn => (128, "a wait for a turn's TMA loads"),
            InstKind::TmaPrefetch { .. } if turn => (128, "a prefetch in a turn"),
            InstKind::TmaStoreWait { .. } => (UNIFORM, "a TMA store's wait (its barrier)"),
            InstKind::TmaStores { .. } => (UNIFORM, "a TMA store (its barriers)"),
            InstKind::TmaLoads { .. } => (UNIFORM, "a TMA load outside a pipeline (its barriers)"),
            InstKind::TmaWait => (UNIFORM, "a wait for TMA loads"),
            InstKind::TmaPrefetch { .. } => (UNIFORM, "a prefetch (thread 0 issues it)"),
            InstKind::Wgmma { .. }
            | InstKind::WgmmaFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_) => (128, "a wgmma"),
            InstKind::MmaSync { .. } => (32, "an mma.sync"),
            InstKind::Matrix { .. } => (32, "an ldmatrix or stmatrix"),
            InstKind::Compute { value, .. } if value.shuffles() => (32, "a shuffle"),
            InstKind::If {
                cond,
                then,
                otherwise,
            } => {
                let g = under.min(granules[*cond]);
                agreement(then, granules, g, turn)?;
                agreement(otherwise, granules, g, turn)?;
                continue;
            }
            InstKind::Loop {
                start, end, body, ..
            } => {
                let g = under.min(granules[*start]).min(granules[*end]);
                agreement(body, granules, g, turn)?;
                continue;
            }
            InstKind::ReduceBlocks { body, .. } => {
                // The block's threads meet at its barriers; its body runs
                // on whole blocks.
                if under < UNIFORM {
                    return Err(
                        "a reduce across blocks under a condition threads may split on".into(),
                    );
                }
                agreement(body, granules, under, turn)?;
                continue;
            }
            InstKind::Pipeline {
                start,
                end,
                turn,
                load,
                body,
                after,
                ..
            } => {
                // The producer and the consumers must count the same trips.
                let bounds = match turn {
                    Some(t) => [*start, *end, t.start, t.end],
                    None => [*start, *end, *start, *end],
                };
                if bounds.iter().any(|&b| granules[b] < UNIFORM) {
                    return Err("a pipeline whose bounds differ between threads".into());
                }
                agreement(load, granules, under, false)?;
                // A turn runs on one warpgroup.
                let (g, t) = match turn {
                    Some(_) => (under.min(128), true),
                    None => (under, false),
                };
                agreement(body, granules, g, t)?;
                agreement(after, granules, g, t)?;
                continue;
            }
            _ => continue,
        };
        if under < need {
            return Err(format!(
                "{what} under a condition that threads issuing it together may disagree on"
            ));
        }
    }
    Ok(())
}

/// `lag` is that of the pipeline whose body `body` is (0 for any other list).
fn insts(
    ir: &KernelIr,
    body: &[Inst],
    open: &mut Vec<usize>,
    seen: &mut Vec<usize>,
    lag: u32,
) -> Result<(), String> {
    wgmma_windows(body, lag)?;
    for inst in body {
        match &inst.kind {
            InstKind::Copy { src, dst, atom } => {
                for a in [src, dst] {
                    addr(ir, a, open)?;
                    if atom.width() > 1 {
                        // The vector's last element lies inside too.
                        last_in_bounds(ir, a, atom.width())?;
                    }
                }
                // A guarded vector is global memory's side of a copy with
                // registers or shared memory (its guard the whole vector's).
                if matches!(atom, CopyAtom::Vector(..))
                    && (src.guard.is_some()
                        && !matches!(dst.space, Space::Registers(_) | Space::Shared(_))
                        || dst.guard.is_some()
                            && !matches!(src.space, Space::Registers(_) | Space::Shared(_)))
                {
                    return Err("a guarded vector copy between two global tensors".into());
                }
                if let CopyAtom::Async(e, w) = atom {
                    let bytes = e.bytes() * *w as i64;
                    if !matches!(
                        (src.space, dst.space, bytes),
                        (Space::Global(_), Space::Shared(_), 4 | 8 | 16)
                    ) {
                        return Err(format!(
                            "cp.async of {bytes} bytes from {:?} to {:?}",
                            src.space, dst.space
                        ));
                    }
                }
            }
            InstKind::Mma { a, b, c, .. } => {
                for x in [a, b, c] {
                    addr(ir, x, open)?;
                }
            }
            InstKind::MmaSync { atom, a, b, c } => {
                use tilec_layout::Operand;
                whole_warps(ir)?;
                for (f, op) in [(a, Operand::A), (b, Operand::B), (c, Operand::C)] {
                    fragment(ir, f, atom.values(op))?;
                }
                let elems = [
                    ir.registers[a.array].elem,
                    ir.registers[b.array].elem,
                    ir.registers[c.array].elem,
                ];
                if elems != [atom.ab, atom.ab, atom.c] {
                    let [a, b, c] = elems;
                    return Err(format!("{} on registers of {a}, {b} and {c}", atom.name));
                }
            }
            InstKind::Matrix {
                store,
                elem,
                count,
                shared,
                regs,
                ..
            } => {
                let name = if *store { "stmatrix" } else { "ldmatrix" };
                addr(ir, shared, open)?;
                fragment(ir, regs, 2 * *count as i64)?;
                whole_warps(ir)?;
                let unguarded_shared = match shared.space {
                    Space::Shared(buffer) if shared.guard.is_none() && elem.bytes() == 2 => buffer,
                    _ => {
                        return Err(format!(
                            "{name} moves 16-bit elements of shared memory, unguarded"
                        ));
                    }
                };
                let (s, r) = (
                    ir.shared[unguarded_shared].elem,
                    ir.registers[regs.array].elem,
                );
                if s != *elem || r != *elem {
                    return Err(format!(
                        "{name} of {elem} between s{unguarded_shared} of {s} and r{} of {r}",
                        regs.array
                    ));
                }
            }
            InstKind::Compute { elem, value, dst } => {
                addr(ir, dst, open)?;
                if space_elem(ir, dst.space) != Some(*elem) {
                    return Err(format!(
                        "a compute of {elem} into {:?} of another type",
                        dst.space
                    ));
                }
                arith(ir, value, *elem == Elem::I32, open)?;
            }
            InstKind::Fill { dst, .. } => addr(ir, dst, open)?,
            InstKind::Wgmma { atom, a, b, c } => {
                if ir.block_threads % 128 != 0 {
                    return Err(format!(
                        "a warpgroup-wide wgmma in a block of {} threads",
                        ir.block_threads
                    ));
                }
                wgmma_fragment(ir, atom, c, tilec_layout::Operand::C)?;
                if let crate::ir::WgmmaA::Registers(a) = a {
                    wgmma_fragment(ir, atom, a, tilec_layout::Operand::A)?;
                }
                for o in a.shared().into_iter().chain([b]) {
                    addr(ir, &o.start, open)?;
                    let Space::Shared(s) = o.start.space else {
                        return Err("a wgmma operand outside shared memory".into());
                    };
                    let buffer = &ir.shared[s];
                    // The hardware's swizzle is on addresses: its repeat is
                    // the buffer's own only at that alignment (16 bytes, a
                    // core matrix's row, without a swizzle).
                    let repeat = match o.desc.swizzle {
                        tilec_layout::DescSwizzle::Interleave => 16,
                        sw => 8 * sw.row_bytes(),
                    };
                    // The descriptor holds offsets >> 4: others cannot be said.
                    if [o.desc.lbo, o.desc.sbo].iter().any(|v| v % 16 != 0) {
                        return Err(format!(
                            "a wgmma descriptor's byte offsets {} and {} are not multiples of 16",
                            o.desc.lbo, o.desc.sbo
                        ));
                    }
                    if o.start.guard.is_some() || buffer.elem != atom.ab || buffer.align < repeat {
                        return Err(format!(
                            "a wgmma operand in s{s} ({}, aligned to {} bytes) needs unguarded {} aligned to {} bytes",
                            buffer.elem, buffer.align, atom.ab, repeat
                        ));
                    }
                }
            }
            InstKind::TmaLoad { .. } => {
                return Err("a TMA load outside a pipeline's load block".into());
            }
            InstKind::TmaPrefetch { map, origin } => {
                pipeline::map_box(ir, *map, origin, open)?;
            }
            InstKind::TmaStore { .. } => {
                return Err("a TMA store's box outside its `tma_store` block".into());
            }
            InstKind::TmaStores { stores, .. } => tma_stores(ir, stores, open)?,
            InstKind::TmaLoads { bytes, loads, .. } => block_loads(ir, loads, *bytes, open)?,
            InstKind::Pipeline {
                id,
                start,
                end,
                stages,
                bytes,
                lag,
                turn,
                load,
                prefetch,
                body,
                after,
                ..
            } => {
                if !open.is_empty() || seen.contains(id) {
                    return Err("a pipeline inside a loop or an if, or twice".into());
                }
                if !(1..=super::MAX_STAGES as u32).contains(stages) {
                    return Err(format!("a pipeline of {stages} stages"));
                }
                seen.push(*id);
                // A turn's trips are the same for every turn: their bounds
                // are the kernel's, not the turn's.
                visible(ir, *start, open)?;
                visible(ir, *end, open)?;
                if let Some(t) = turn {
                    turns(ir, t, load, after, *lag)?;
                    visible(ir, t.start, open)?;
                    visible(ir, t.end, open)?;
                    seen.push(t.id);
                    open.push(t.id);
                }
                let mut bounds = vec![*start, *end];
                bounds.extend(turn.iter().flat_map(|t| [t.start, t.end]));
                if let Some(d) = ir.cluster_dim()
                    && bounds.iter().any(|&b| ir.depends_on_block(b, d))
                {
                    return Err(format!(
                        "a pipeline whose bounds differ between the blocks of the cluster (they depend on block index {d})"
                    ));
                }
                // The producer runs them after its loop, at the top level.
                prefetches(ir, prefetch, open)?;
                open.push(*id);
                pipeline_loads(ir, load, *bytes, open)?;
                if *lag > 1 || (*lag == 1 && *stages < 2) {
                    // Trip t's stage is free only after trip t + lag.
                    return Err(format!("a pipeline of {stages} stages with lag {lag}"));
                }
                insts(ir, body, open, seen, *lag)?;
                open.pop();
                if turn.is_some() {
                    // Lagged, the turn's last group is waited for first.
                    let closed = match *lag {
                        1 => &after[1..],
                        _ => &after[..],
                    };
                    insts(ir, closed, open, seen, 0)?;
                    open.pop();
                } else if !after.is_empty() {
                    return Err("an `after` block in a pipeline without turns".into());
                }
            }
            InstKind::TmaWait
            | InstKind::Barrier
            | InstKind::TmaStoreWait { .. }
            | InstKind::AsyncFence
            | InstKind::AsyncWait(_)
            | InstKind::WgmmaFence
            | InstKind::ProxyFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_) => {}
            InstKind::Assert { cond, .. } => visible(ir, *cond, open)?,
            InstKind::ReduceBlocks {
                registers,
                across,
                group,
                count,
                index,
                body,
                ..
            } => {
                match across {
                    Groups::Dim(dim) => {
                        if open.iter().any(|&o| o != PAD_TEST) {
                            return Err("a reduce across blocks inside a loop or an if".into());
                        }
                        if *dim > 2 {
                            return Err(format!("a reduce across grid dimension {dim}"));
                        }
                        if ir.cluster_dim() == Some(*dim) {
                            // A grid of whole clusters has pad blocks in the group.
                            return Err(format!(
                                "a reduce across grid dimension {dim}, the cluster's"
                            ));
                        }
                        if ir.ints.get(*index).map(|v| &v.def) != Some(&IntDef::BlockIdx(*dim)) {
                            return Err(
                                "a reduce across blocks whose index is not the block's".into()
                            );
                        }
                    }
                    // Launch values: the runtime sizes the workspace by
                    // them (and passes its own to the kernel, which checks
                    // the group, part and count against those).
                    Groups::Parts { groups, most } => {
                        for v in [groups, most] {
                            visible(ir, *v, &[])?;
                        }
                    }
                }
                // The block's threads agree on them (the block is one arrival).
                let granules = super::granules(&ir.ints);
                if [group, count, index]
                    .iter()
                    .any(|&&v| granules.get(v) != Some(&UNIFORM))
                {
                    return Err(
                        "a reduce across blocks whose group, count or index differs between threads"
                            .into(),
                    );
                }
                match ir.registers.get(*registers) {
                    Some(b) if b.elem == Elem::F32 => {}
                    _ => {
                        return Err(format!(
                            "reduce across blocks of r{registers}: no f32 register array"
                        ));
                    }
                }
                for v in [group, count, index] {
                    visible(ir, *v, open)?;
                }
                open.push(usize::MAX);
                insts(ir, body, open, seen, 0)?;
                open.pop();
            }
            InstKind::If {
                cond,
                then,
                otherwise,
            } => {
                visible(ir, *cond, open)?;
                // No value's scope is this: it only marks "inside" for the
                // pipeline's and the reduce's checks. The kernel's own
                // test that keeps a cluster's pad blocks out (`block.<d> <
                // extent` at the top) is marked apart: every block of a
                // reduce's group (across another dimension) passes it.
                let mark = match open.is_empty() && keeps_pad_blocks_out(ir, *cond) {
                    true => PAD_TEST,
                    false => usize::MAX,
                };
                open.push(mark);
                insts(ir, then, open, seen, 0)?;
                insts(ir, otherwise, open, seen, 0)?;
                open.pop();
            }
            InstKind::Loop {
                id,
                start,
                end,
                body,
                ..
            } => {
                if seen.contains(id) {
                    return Err(format!("loop {id} appears twice"));
                }
                seen.push(*id);
                visible(ir, *start, open)?;
                visible(ir, *end, open)?;
                open.push(*id);
                insts(ir, body, open, seen, 0)?;
                open.pop();
            }
        }
    }
    Ok(())
}

/// Warp-wide instructions need a block of whole warps.
fn whole_warps(ir: &KernelIr) -> Result<(), String> {
    if ir.block_threads % 32 != 0 {
        return Err(format!(
            "a warp-wide instruction in a block of {} threads",
            ir.block_threads
        ));
    }
    Ok(())
}

/// A fragment names `values` elements of an existing register array.
pub(super) fn fragment(ir: &KernelIr, f: &super::Fragment, values: i64) -> Result<(), String> {
    let b = ir
        .registers
        .get(f.array)
        .ok_or(format!("no register array {}", f.array))?;
    if f.index.len() as i64 != values || f.index.iter().any(|i| !(0..b.len).contains(i)) {
        return Err(format!(
            "fragment of r{} needs {values} indices inside 0..{}",
            f.array, b.len
        ));
    }
    Ok(())
}

fn last_in_bounds(ir: &KernelIr, a: &Addr, width: i64) -> Result<(), String> {
    let IntDef::Const(c) = ir.ints[a.index].def else {
        return Ok(());
    };
    let len = match a.space {
        Space::Registers(r) => ir.registers[r].len,
        Space::Shared(s) => ir.shared[s].len,
        Space::Global(_) => return Ok(()),
    };
    if c % width != 0 || c + width > len {
        return Err(format!(
            "a vector of {width} at {c} is misaligned or outside 0..{len}"
        ));
    }
    Ok(())
}

fn visible(ir: &KernelIr, id: IntId, open: &[usize]) -> Result<(), String> {
    match ir.ints.get(id).map(|v| v.scope) {
        None => Err(format!("%{id} is not defined")),
        Some(None) => Ok(()),
        Some(Some(l)) if open.contains(&l) => Ok(()),
        Some(Some(l)) => Err(format!(
            "%{id} belongs to loop {l}, which does not enclose its use"
        )),
    }
}

/// The element type of a space (`None`: no such tensor).
fn space_elem(ir: &KernelIr, s: Space) -> Option<Elem> {
    match s {
        Space::Global(p) => match ir.params.get(p)? {
            Param::Tensor { elem, .. } => Some(*elem),
            Param::Scalar { .. } => None,
        },
        Space::Shared(b) => ir.shared.get(b).map(|b| b.elem),
        Space::Registers(r) => ir.registers.get(r).map(|r| r.elem),
    }
}

/// A compute's value: loads of existing tensors of their stated types,
/// scalar parameters that exist, and on integers only integer operations.
fn arith(ir: &KernelIr, a: &Arith, integers: bool, open: &[usize]) -> Result<(), String> {
    match a {
        Arith::Load(at, elem) => {
            addr(ir, at, open)?;
            if space_elem(ir, at.space) != Some(*elem) {
                return Err(format!(
                    "a load of {elem} from {:?} of another type",
                    at.space
                ));
            }
            if integers && *elem != Elem::I32 {
                return Err(format!("an integer compute loads {elem}"));
            }
            Ok(())
        }
        Arith::Scalar(ScalarRef::Param(p)) => match ir.params.get(*p) {
            Some(Param::Scalar { .. }) => Ok(()),
            _ => Err(format!("scalar parameter {p} does not exist")),
        },
        Arith::Scalar(ScalarRef::Literal(_)) => Ok(()),
        Arith::Inside(g) | Arith::Int(g) => visible(ir, *g, open),
        Arith::Unary(op, x) => {
            if integers && !op.on_integers() {
                return Err(format!("{op} of integers"));
            }
            arith(ir, x, integers, open)
        }
        // `i32(x)` computes x in f32; other conversions give floats.
        // (The executor shuffles an integer compute's values as integers.)
        Arith::Convert(Elem::I32, x) if integers && x.shuffles() => {
            Err("a shuffle inside i32(...) of an integer compute".into())
        }
        Arith::Convert(elem, _) if integers && *elem != Elem::I32 => {
            Err(format!("an integer compute converts to {elem}"))
        }
        Arith::Convert(_, x) => arith(ir, x, false, open),
        Arith::Binary(op, x, y) => {
            if !integers && !op.on_floats() {
                return Err(format!("{op} of floats"));
            }
            arith(ir, x, integers, open)?;
            arith(ir, y, integers, open)
        }
        Arith::Shuffle(x, mask) => {
            whole_warps(ir)?;
            if *mask == 0 || *mask > 31 || x.shuffles() {
                return Err(format!("a shuffle of mask {mask} (1 to 31, one deep)"));
            }
            arith(ir, x, integers, open)
        }
        Arith::Fma(x, y, z) | Arith::Select(x, y, z) => {
            if integers && matches!(a, Arith::Fma(..)) {
                return Err("an fma of integers".into());
            }
            [x, y, z]
                .into_iter()
                .try_for_each(|v| arith(ir, v, integers, open))
        }
    }
}

fn addr(ir: &KernelIr, a: &Addr, open: &[usize]) -> Result<(), String> {
    visible(ir, a.index, open)?;
    if let Some(g) = a.guard {
        visible(ir, g, open)?;
        if !matches!(a.space, Space::Global(_)) {
            return Err("only global accesses are guarded".into());
        }
    }
    let constant = match ir.ints[a.index].def {
        IntDef::Const(c) => Some(c),
        _ => None,
    };
    let within = |len: i64, what: &str| match constant {
        Some(c) if c < 0 || c >= len => Err(format!("{what} index {c} outside 0..{len}")),
        _ => Ok(()),
    };
    match a.space {
        Space::Registers(r) => {
            let b = ir
                .registers
                .get(r)
                .ok_or(format!("no register array {r}"))?;
            if constant.is_none() {
                return Err(format!("register array r{r} indexed by a run-time value"));
            }
            within(b.len, "register")
        }
        Space::Shared(s) => within(
            ir.shared.get(s).ok_or(format!("no shared buffer {s}"))?.len,
            "shared",
        ),
        Space::Global(p) => match ir.params.get(p) {
            Some(Param::Tensor { .. }) => Ok(()),
            _ => Err(format!(
                "global access to parameter {p}, which is not a tensor"
            )),
        },
    }
}

/// The mark on `open` of the top-level test that keeps a cluster's pad
/// blocks out ([`keeps_pad_blocks_out`]): no value's scope, as
/// `usize::MAX` for any other if.
const PAD_TEST: usize = usize::MAX - 1;

/// Whether `cond` is `block.<d> < extent`, `d` the cluster's dimension and
/// `extent` a value of the launch (of no block, thread or loop): the test
/// lowering puts around what follows a pipeline on clusters, which pad
/// blocks skip and every other block passes.
fn keeps_pad_blocks_out(ir: &KernelIr, cond: IntId) -> bool {
    let Some(d) = ir.cluster_dim() else {
        return false;
    };
    let IntDef::Compare(crate::arith::Binary::Lt, b, e) = ir.ints[cond].def else {
        return false;
    };
    ir.ints[b].def == IntDef::BlockIdx(d)
        && ir.with_operands(vec![e]).iter().all(|&v| {
            !matches!(
                ir.ints[v].def,
                IntDef::BlockIdx(_) | IntDef::ThreadIdx | IntDef::LoopVar(_)
            )
        })
}
