//! Perf: what a warp's memory accesses cost, computed from the kernel IR.
//!
//! In: a kernel's IR and example extents. Out: for every statement and each
//! tensor it reads or writes, the 32-byte sectors a warp's global request
//! touches (against the fewest possible: coalescing), and the wavefronts a
//! warp's shared request takes (against one per phase: bank conflicts).
//! Warp 0 of block (0,0,0), first iteration of every loop; shared memory has
//! 32 banks of 4 bytes, and a request of 8 or 16 bytes a thread is served in
//! phases of 16 or 8 threads.

use crate::check::program::Elem;
use crate::ir::{self, Addr, CopyAtom, Inst, InstKind, IntDef, KernelIr, Space};
use crate::span::Span;
use std::collections::{BTreeMap, HashMap, HashSet};
use tilec_layout::int::apply;

const WARP: usize = 32;
const SECTOR_BYTES: i64 = 32;
const BANKS: i64 = 32;

/// One kind of access of one statement.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessCost {
    pub span: Span,
    /// `copy`, `gemm`, `element-wise`, `fill`.
    pub op: &'static str,
    pub store: bool,
    /// `A` (a tensor parameter), `s0` (a shared buffer).
    pub target: String,
    pub shared: bool,
    /// Bytes one thread moves per request.
    pub bytes: i64,
    pub requests: usize,
    /// Sectors (global) or wavefronts (shared) per request, averaged and worst.
    pub mean: f64,
    pub worst: i64,
    /// The fewest possible per request.
    pub ideal: i64,
}

impl AccessCost {
    /// A one-line verdict: coalesced or not, conflicts or none.
    pub fn verdict(&self) -> String {
        let ratio = self.mean / self.ideal as f64;
        if self.shared {
            if self.worst <= self.ideal {
                "no bank conflicts".into()
            } else {
                format!("{:.0}-way bank conflicts", ratio.max(1.0))
            }
        } else if self.worst <= self.ideal {
            "coalesced".into()
        } else {
            format!("{:.1}x the sectors of a coalesced access", ratio)
        }
    }
}

/// Warps of the block looked at for an access that the ones before them
/// do not run (an `if` on the thread: a stencil's interior rows).
const WARPS: usize = 32;

/// Costs of every shared and global access, by statement, in source order:
/// each as the first warp of block 0 that runs it makes its requests.
pub fn analyze(ir: &KernelIr, extents: &[i64]) -> Vec<AccessCost> {
    let mut loop_start = HashMap::new();
    starts(&ir.body, &mut loop_start);
    let threads = ir.block_threads.max(1) as usize;
    let mut costs: BTreeMap<(usize, usize, bool, String), AccessCost> = BTreeMap::new();
    for w in 0..threads.div_ceil(WARP).min(WARPS) {
        for (key, cost) in warp_costs(
            ir,
            extents,
            &loop_start,
            w * WARP..threads.min((w + 1) * WARP),
        ) {
            costs.entry(key).or_insert(cost);
        }
    }
    costs.into_values().collect()
}

/// The costs of the accesses that some lane of the warp of threads `lanes`
/// runs.
fn warp_costs(
    ir: &KernelIr,
    extents: &[i64],
    loop_start: &HashMap<usize, usize>,
    threads: std::ops::Range<usize>,
) -> BTreeMap<(usize, usize, bool, String), AccessCost> {
    let lanes = threads.len();
    let ints: Vec<Vec<Option<i64>>> = threads
        .map(|t| values(ir, extents, t as i64, loop_start))
        .collect();
    // The lanes that run each instruction under ifs (the others sit it out).
    let mut running: HashMap<*const Inst, Vec<bool>> = HashMap::new();
    lanes_running(&ir.body, &ints, &vec![true; lanes], &mut running);
    let mut costs: BTreeMap<(usize, usize, bool, String), AccessCost> = BTreeMap::new();
    let mut gemm_reads: BTreeMap<(usize, usize, usize), (Span, Vec<usize>)> = BTreeMap::new();
    ir::for_each_atom(&ir.body, &mut |inst: &Inst| {
        let (op, list): (&'static str, Vec<(&Addr, bool, i64)>) = match &inst.kind {
            InstKind::Copy { atom, src, dst } => (
                if matches!(atom, CopyAtom::Async(..)) {
                    "copy_async"
                } else {
                    "copy"
                },
                vec![(src, false, atom.width()), (dst, true, atom.width())],
            ),
            InstKind::Mma { a, b, c, .. } => {
                // Shared operands are read as codegen groups them into
                // vectors (`builder/operands.rs`); they are costed after the walk.
                let mut list = vec![(c, false, 1), (c, true, 1)];
                for x in [a, b] {
                    if let Space::Shared(buffer) = x.space {
                        gemm_reads
                            .entry((inst.span.start, inst.span.end, buffer))
                            .or_insert_with(|| (inst.span, Vec::new()))
                            .1
                            .push(x.index);
                    } else {
                        list.push((x, false, 1));
                    }
                }
                ("gemm", list)
            }
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                let mut list: Vec<_> = loads.into_iter().map(|a| (a, false, 1)).collect();
                list.push((dst, true, 1));
                ("element-wise", list)
            }
            InstKind::Fill { dst, .. } => ("fill", vec![(dst, true, 1)]),
            // Each lane gives one 16-byte row.
            InstKind::Matrix {
                store, shared, ..
            } => match store {
                false => ("ldmatrix", vec![(shared, false, 8)]),
                true => ("stmatrix", vec![(shared, true, 8)]),
            },
            // wgmma reads shared memory through the async proxy, by whole
            // swizzled rows: no bank conflicts to count per lane.
            InstKind::MmaSync { .. }
            | InstKind::Wgmma { .. }
            | InstKind::WgmmaFence
            | InstKind::ProxyFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_)
            | InstKind::Barrier
            | InstKind::TmaStoreWait { .. }
            | InstKind::AsyncFence
            | InstKind::AsyncWait(_)
            | InstKind::Assert { .. }
            // A TMA box is one instruction of one thread, with its own
            // swizzle: the hardware's access pattern, not the lanes'.
            | InstKind::TmaLoad { .. }
            | InstKind::TmaPrefetch { .. }
            | InstKind::TmaLoads { .. }
            | InstKind::TmaWait
            | InstKind::TmaStores { .. }
            | InstKind::TmaStore { .. }
            | InstKind::Loop { .. }
            | InstKind::If { .. }
            | InstKind::ReduceBlocks { .. }
            | InstKind::Pipeline { .. } => return,
        };
        for (a, store, width) in list {
            let (shared, target, elem) = match a.space {
                Space::Global(p) => (false, param_name(ir, p), param_elem(ir, p)),
                Space::Shared(s) => (true, ir.shared_label(s), ir.shared[s].elem),
                Space::Registers(_) => continue,
            };
            let bytes = width * elem.bytes();
            let on = running.get(&(inst as *const Inst));
            let lane_runs = |t: usize| on.is_none_or(|m| m[t]);
            let addrs: Vec<i64> = ints
                .iter()
                .enumerate()
                .filter(|&(t, _)| lane_runs(t))
                .filter_map(|(_, v)| v[a.index])
                .map(|i| i * elem.bytes())
                .collect();
            if addrs.is_empty() || addrs.len() != (0..lanes).filter(|&t| lane_runs(t)).count() {
                continue;
            }
            record(
                &mut costs,
                Access {
                    span: inst.span,
                    op,
                    store,
                    target,
                    shared,
                    bytes,
                },
                &addrs,
            );
        }
    });
    // A gemm's shared reads: per lane, the distinct elements it reads, in
    // order; an element that starts an aligned run of 2 or 4 (up to 16
    // bytes) in every lane is one vector load, as LLVM emits it.
    for ((_, _, s), (span, indices)) in gemm_reads {
        let elem = ir.shared[s].elem;
        let per_lane: Vec<Vec<i64>> = ints
            .iter()
            .map(|v| {
                let mut seen = HashSet::new();
                indices
                    .iter()
                    .filter_map(|&i| v[i])
                    .filter(|i| seen.insert(*i))
                    .collect()
            })
            .collect();
        let Some(first) = per_lane.first() else {
            continue;
        };
        if per_lane.iter().any(|l| l.len() != first.len()) {
            continue;
        }
        let sets: Vec<HashSet<i64>> = per_lane
            .iter()
            .map(|l| l.iter().copied().collect())
            .collect();
        let mut covered: Vec<HashSet<i64>> = vec![HashSet::new(); per_lane.len()];
        for p in 0..first.len() {
            if covered[0].contains(&per_lane[0][p]) {
                continue;
            }
            let mut w = 16 / elem.bytes();
            while w > 1
                && !per_lane
                    .iter()
                    .zip(&sets)
                    .all(|(l, set)| l[p] % w == 0 && (1..w).all(|d| set.contains(&(l[p] + d))))
            {
                w /= 2;
            }
            for (lane, l) in per_lane.iter().enumerate() {
                covered[lane].extend((0..w).map(|d| l[p] + d));
            }
            let addrs: Vec<i64> = per_lane.iter().map(|l| l[p] * elem.bytes()).collect();
            record(
                &mut costs,
                Access {
                    span,
                    op: "gemm",
                    store: false,
                    target: ir.shared_label(s),
                    shared: true,
                    bytes: w * elem.bytes(),
                },
                &addrs,
            );
        }
    }
    costs
}

/// What one request is: a statement's load or store of one target.
struct Access {
    span: Span,
    op: &'static str,
    store: bool,
    target: String,
    shared: bool,
    /// Bytes one lane moves.
    bytes: i64,
}

/// Adds one request of a warp (one address per lane) to its statement's cost.
fn record(
    costs: &mut BTreeMap<(usize, usize, bool, String), AccessCost>,
    a: Access,
    addrs: &[i64],
) {
    let (cost, ideal) = if a.shared {
        wavefronts(addrs, a.bytes)
    } else {
        sectors(addrs, a.bytes)
    };
    let key = (a.span.start, a.span.end, a.store, a.target.clone());
    let e = costs.entry(key).or_insert(AccessCost {
        span: a.span,
        op: a.op,
        store: a.store,
        target: a.target,
        shared: a.shared,
        bytes: a.bytes,
        requests: 0,
        mean: 0.0,
        worst: 0,
        ideal,
    });
    e.mean = (e.mean * e.requests as f64 + cost as f64) / (e.requests + 1) as f64;
    e.requests += 1;
    e.worst = e.worst.max(cost);
    e.ideal = e.ideal.max(ideal);
}

/// 32-byte sectors the lanes' accesses touch, and the fewest possible: the
/// distinct bytes' (lanes reading one address, a broadcast, share them).
fn sectors(addrs: &[i64], bytes: i64) -> (i64, i64) {
    let (mut sectors, mut words) = (HashSet::new(), HashSet::new());
    for &a in addrs {
        for b in (0..bytes).step_by(4) {
            sectors.insert((a + b).div_euclid(SECTOR_BYTES));
            words.insert((a + b).div_euclid(4));
        }
    }
    let distinct = words.len() as i64 * 4;
    (
        sectors.len() as i64,
        (distinct + SECTOR_BYTES - 1) / SECTOR_BYTES,
    )
}

/// Wavefronts a shared request takes: per phase, the most distinct 4-byte
/// words that fall in one bank; and the fewest possible (one per phase).
fn wavefronts(addrs: &[i64], bytes: i64) -> (i64, i64) {
    let per_phase = (WARP as i64 * 4 / bytes.max(4)).clamp(1, WARP as i64) as usize;
    let mut total = 0;
    let mut phases = 0;
    for phase in addrs.chunks(per_phase) {
        let mut banks: HashMap<i64, HashSet<i64>> = HashMap::new();
        for &a in phase {
            for b in (0..bytes.max(4)).step_by(4) {
                let word = (a + b).div_euclid(4);
                banks
                    .entry(word.rem_euclid(BANKS))
                    .or_default()
                    .insert(word);
            }
        }
        total += banks.values().map(|w| w.len() as i64).max().unwrap_or(1);
        phases += 1;
    }
    (total, phases)
}

/// Every integer value for lane `t` of block (0,0,0), loop counters at their start.
fn values(
    ir: &KernelIr,
    extents: &[i64],
    t: i64,
    loop_start: &HashMap<usize, usize>,
) -> Vec<Option<i64>> {
    let mut v: Vec<Option<i64>> = vec![None; ir.ints.len()];
    for (id, x) in ir.ints.iter().enumerate() {
        v[id] = match &x.def {
            IntDef::Const(c) => Some(*c),
            IntDef::ThreadIdx => Some(t),
            IntDef::BlockIdx(_) => Some(0),
            IntDef::Extent(e) => extents.get(*e).copied(),
            IntDef::LoopVar(l) => loop_start.get(l).and_then(|&s| v[s]),
            IntDef::Bin(op, a, b) => match (v[*a], v[*b]) {
                (Some(x), Some(y)) => apply(*op, x, y),
                _ => None,
            },
            IntDef::Below(a, b) => match (v[*a], v[*b]) {
                (Some(x), Some(y)) => Some(i64::from((0..y).contains(&x))),
                _ => None,
            },
            IntDef::Swizzle(a, sw) => v[*a].map(|x| sw.apply(x)),
            IntDef::Compare(op, a, b) => match (v[*a], v[*b]) {
                (Some(x), Some(y)) => Some(i64::from(op.compare(x, y))),
                _ => None,
            },
        };
    }
    v
}

/// For each instruction under an if, the lanes of the warp that run it.
fn lanes_running(
    insts: &[Inst],
    ints: &[Vec<Option<i64>>],
    on: &[bool],
    out: &mut HashMap<*const Inst, Vec<bool>>,
) {
    for i in insts {
        match &i.kind {
            InstKind::If {
                cond,
                then,
                otherwise,
            } => {
                for (branch, taken) in [(then, true), (otherwise, false)] {
                    let lanes: Vec<bool> = on
                        .iter()
                        .zip(ints)
                        .map(|(&r, v)| r && v[*cond].is_some_and(|c| (c != 0) == taken))
                        .collect();
                    lanes_running(branch, ints, &lanes, out);
                }
            }
            InstKind::Loop { body, .. } | InstKind::ReduceBlocks { body, .. } => {
                lanes_running(body, ints, on, out)
            }
            InstKind::Pipeline {
                load, body, after, ..
            } => {
                lanes_running(load, ints, on, out);
                lanes_running(body, ints, on, out);
                lanes_running(after, ints, on, out);
            }
            _ => {
                out.insert(i as *const Inst, on.to_vec());
            }
        }
    }
}

fn starts(insts: &[Inst], out: &mut HashMap<usize, usize>) {
    for i in insts {
        match &i.kind {
            InstKind::Loop {
                id, start, body, ..
            }
            | InstKind::Pipeline {
                id, start, body, ..
            } => {
                out.insert(*id, *start);
                starts(body, out);
                if let InstKind::Pipeline {
                    turn: Some(t),
                    after,
                    ..
                } = &i.kind
                {
                    out.insert(t.id, t.start);
                    starts(after, out);
                }
            }
            InstKind::If {
                then, otherwise, ..
            } => {
                starts(then, out);
                starts(otherwise, out);
            }
            InstKind::ReduceBlocks { body, .. } => starts(body, out),
            _ => {}
        }
    }
}

/// Every instruction, loops entered once.
fn param_name(ir: &KernelIr, p: usize) -> String {
    match &ir.params[p] {
        crate::ir::Param::Tensor { name, .. } | crate::ir::Param::Scalar { name, .. } => {
            name.clone()
        }
    }
}

fn param_elem(ir: &KernelIr, p: usize) -> Elem {
    match &ir.params[p] {
        crate::ir::Param::Tensor { elem, .. } | crate::ir::Param::Scalar { elem, .. } => *elem,
    }
}

/// The report `tilec check --perf` prints: one line per access kind, with
/// its `line:column` in the source, then lowering's notes (why a copy is
/// not ldmatrix). Extents not in `extents` are 4096 (`sm_count` 132); the stride symbols
/// (`strides`, the kernel's) their declared values.
pub fn report(
    lowered: &crate::lower::Lowered,
    strides: &[crate::check::program::StrideSymbol],
    extents: &[(String, i64)],
    src: &str,
    file: &str,
) -> String {
    let ir = &lowered.ir;
    let dims: Vec<(&String, i64)> = ir
        .extents
        .iter()
        .filter(|e| strides.iter().all(|s| &s.name != *e))
        .map(|e| {
            let v = extents
                .iter()
                .find(|(n, _)| n == e)
                .map_or(default_extent(e), |(_, v)| *v);
            (e, v)
        })
        .collect();
    let bound = |n: &str| dims.iter().find(|(e, _)| *e == n).map(|(_, v)| *v);
    let values: Vec<i64> = ir
        .extents
        .iter()
        .map(|e| match strides.iter().find(|s| &s.name == e) {
            // Overflowing only at extents no buffer could have.
            Some(s) => s.declared.eval(&bound).unwrap_or(0),
            None => bound(e).unwrap_or(default_extent(e)),
        })
        .collect();
    let dims: Vec<String> = dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let mut out = format!(
        "kernel {} (block (0,0,0), each access as the first warp that runs it makes it, first loop iteration; {})\n",
        ir.name,
        dims.join(", ")
    );
    for c in analyze(ir, &values) {
        let (line, col) = line_col(src, c.span.start);
        let unit = if c.shared { "wavefronts" } else { "sectors" };
        out += &format!(
            "  {file}:{line}:{col}  {:<5} {:<5} {:<6} {:>3}-bit  {:>5.1} {unit}/request (ideal {}, worst {})  {}\n",
            c.op,
            if c.store { "store" } else { "load" },
            c.target,
            c.bytes * 8,
            c.mean,
            c.ideal,
            c.worst,
            c.verdict()
        );
    }
    // In source order: a statement's note is made after those of the
    // statements inside it (a pipeline's after its TMA copies').
    let mut notes: Vec<_> = lowered.notes.iter().collect();
    notes.sort_by_key(|n| n.span.start);
    for n in notes {
        let (line, col) = line_col(src, n.span.start);
        out += &format!("  {file}:{line}:{col}  note: {}\n", n.text);
    }
    out
}

fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = &src[..offset.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, col)
}

/// An extent `--dims` leaves out: 4096, or the H200's 132 multiprocessors
/// for `sm_count` (4096 of them made a persistent grid of 4096 blocks).
fn default_extent(name: &str) -> i64 {
    match name {
        tilec_layout::SM_COUNT => 132,
        _ => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warp's 4-byte accesses: consecutive, every other one, and all at
    /// one address (a broadcast, which one sector serves at best).
    #[test]
    fn a_request_s_fewest_sectors_are_its_distinct_bytes() {
        let lanes = |f: fn(i64) -> i64| (0..32).map(f).collect::<Vec<_>>();
        assert_eq!(sectors(&lanes(|l| 4 * l), 4), (4, 4));
        assert_eq!(sectors(&lanes(|l| 8 * l), 4), (8, 4));
        assert_eq!(sectors(&lanes(|_| 64), 4), (1, 1));
        assert_eq!(sectors(&lanes(|l| 16 * l), 16), (16, 16));
    }
}
