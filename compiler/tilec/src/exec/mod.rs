//! Exec: runs kernel IR on the CPU with the GPU's semantics.
//!
//! In: the launch (entry points, each on its part of the grid; extents,
//! scalars) and the global tensors. Out: the tensors as the kernel leaves them, or the first error,
//! with the span of the `.tile` statement that made it. Blocks run in
//! parallel on the host's cores; the threads of a block run in lockstep, one
//! instruction for all threads at a time, with per-block shared memory,
//! per-thread registers and barriers. Arithmetic rounds as the GPU's does
//! (f32 `fma`, products rounded before they are added), so results match the
//! GPU's bit for bit.
//!
//! It catches what a GPU hides: an access outside a tensor; a shared-memory
//! race (two threads touching one element between two barriers, at least one
//! writing); a read of shared memory or registers that nothing wrote; two
//! blocks writing one global element; an access to shared memory while a
//! cp.async to it is in flight (copies land when `cp_async_wait` retires
//! their group, as late as the GPU may land them).

mod compute;
mod control;
mod cp_async;
use cp_async::AsyncGroups;
mod memory;
use memory::{Access, Touch};
mod reduce;
mod tensor_core;
mod tma;
mod vector;

use crate::check::program::Elem;
use crate::ir::Inst;
use crate::ir::{CopyAtom, InstKind, KernelIr, MmaAtom, Param};
use crate::span::Span;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tilec_layout::f32_rounded_to_odd;

/// A global tensor: its values (each exactly representable in `elem`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub elem: Elem,
    pub data: Vec<f64>,
}

/// Everything a launch needs besides the tensors.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    /// The entry points that run, each on its part of the grid (the
    /// runtime's plan: full tiles unguarded, the edges guarded).
    pub parts: Vec<Part<'a>>,
    /// Values of the kernel's extents, in order.
    pub extents: Vec<i64>,
    /// Per kernel parameter: the scalar's value (ignored for tensors).
    pub scalars: Vec<f64>,
    /// Counts the blocks run so far, for the caller's progress report.
    pub blocks_done: Option<&'a AtomicUsize>,
    /// Set by the caller to stop the run (a time limit): each block and
    /// each loop trip looks at it, and the run then fails.
    pub stop: Option<&'a AtomicBool>,
    /// Runs a reference kernel: floats computed and kept in f64, never
    /// rounded to their tensors' types (tensor-core atoms excepted).
    pub exact: bool,
}

/// What went wrong, where in the source, and (for races) the other access.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecError {
    pub message: String,
    pub span: Span,
    pub label: String,
    pub other: Option<(Span, String)>,
    /// What to do about it, when the kind of error does not say.
    pub help: Option<&'static str>,
}

impl ExecError {
    pub fn diagnostic(&self) -> crate::diagnostic::Diagnostic {
        let mut d = crate::diagnostic::Diagnostic::new(self.message.clone(), self.span)
            .with_label(self.label.clone());
        match &self.other {
            // Both accesses in one statement: one label says it all.
            Some((s, l)) if *s == self.span => d.label = format!("{}; {l}", self.label),
            Some((s, l)) => d = d.with_related(*s, l.clone()),
            None => {}
        }
        d.with_help(self.help.unwrap_or(match &self.other {
            Some(_) => "put a sync() between the two accesses, or give each thread its own elements",
            None => "the kernel reads or writes where it should not; check the tiler, thread layout and launch that led here",
        }))
    }
}

/// One entry point on a box of blocks: `grid` blocks from `offset` on.
#[derive(Clone, Debug, PartialEq)]
pub struct Part<'a> {
    pub ir: &'a KernelIr,
    pub grid: [u32; 3],
    pub offset: [u32; 3],
}

type Result<T> = std::result::Result<T, ExecError>;

/// Per tensor parameter, the elements a launch wrote, in increasing order.
pub type Written = Vec<Vec<usize>>;

/// The most blocks one launch may have on the CPU executor, which keeps
/// a record of each (a microsecond each at least: over a minute).
pub const MAX_BLOCKS: u64 = 1 << 26;

/// Runs the kernel; on success the tensors hold its results, and it says
/// which elements it wrote. The parts run as one launch: two blocks writing
/// one element conflict across parts too.
pub fn execute(launch: &Launch, tensors: &mut [Option<Tensor>]) -> Result<Written> {
    let count: u64 = launch
        .parts
        .iter()
        .map(|p| p.grid.iter().map(|&g| g as u64).product::<u64>())
        .sum();
    if count > MAX_BLOCKS {
        return Err(ExecError {
            message: format!(
                "the launch has {count} blocks; the CPU executor runs at most {MAX_BLOCKS}"
            ),
            span: Span { start: 0, end: 0 },
            label: "launched here".into(),
            other: None,
            help: Some("give smaller --dims: the executor keeps a record of every block"),
        });
    }
    let blocks: Vec<(&KernelIr, [u32; 3])> = launch
        .parts
        .iter()
        .flat_map(|p| {
            let [gx, gy, gz] = p.grid;
            let [ox, oy, oz] = p.offset;
            (0..gz).flat_map(move |z| {
                (0..gy).flat_map(move |y| (0..gx).map(move |x| (p.ir, [ox + x, oy + y, oz + z])))
            })
        })
        .collect();
    let groups = reduce::groups(&blocks);
    let mut group_of = vec![0; blocks.len()];
    for (g, members) in groups.iter().enumerate() {
        for &b in members {
            group_of[b] = g;
        }
    }
    // Per entry, which tensors it writes: only their reads are recorded.
    let written: Vec<Vec<bool>> = launch.parts.iter().map(|p| p.ir.written_params()).collect();
    // Every block's entry is one of the parts' (the blocks are made from them).
    let parts_of = |ir: &KernelIr| {
        launch
            .parts
            .iter()
            .position(|p| std::ptr::eq(p.ir, ir))
            .unwrap_or_default()
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<Log>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(groups.len().max(1));
    let inputs: &[Option<Tensor>] = tensors;
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if g >= groups.len() {
                        break;
                    }
                    let partials = reduce::Partials::default();
                    for &b in &groups[g] {
                        let (ir, at) = blocks[b];
                        let written = &written[parts_of(ir)];
                        let r = Block::new(ir, launch, inputs, at, written, Some(&partials)).run();
                        // A block stopped or failed midway is not done.
                        if let Some(done) = launch.blocks_done
                            && r.is_ok()
                        {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        let failed = r.is_err();
                        results.lock().expect("no poisoning").push((b, r));
                        if failed {
                            // Stop handing out groups: one error is reported.
                            next.store(groups.len(), Ordering::Relaxed);
                            break;
                        }
                    }
                    if let Some(&b) = groups[g].last()
                        && let Err(e) = reduce::whole(&partials, blocks[b].1)
                    {
                        results.lock().expect("no poisoning").push((b, Err(e)));
                        next.store(groups.len(), Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().expect("no poisoning");
    results.sort_by_key(|(b, _)| *b);
    let mut logs = Vec::with_capacity(results.len());
    for (b, r) in results {
        logs.push((b, r?));
    }
    // Per element of each tensor written: the block that wrote it, plus
    // one (0: none yet). Arrays, not a map: a launch writes every element
    // of its output, tens of millions at GPU sizes.
    let mut writer: Vec<Vec<usize>> = vec![Vec::new(); tensors.len()];
    for (b, log) in &logs {
        for w in &log.writes {
            let owner = &mut writer[w.param];
            if owner.is_empty() {
                let len = tensors[w.param].as_ref().map_or(0, |t| t.data.len());
                *owner = vec![0; len];
            }
            match owner[w.index] {
                0 => owner[w.index] = b + 1,
                o if o == b + 1 => {}
                o => {
                    let other = o - 1;
                    let span = logs
                        .iter()
                        .find(|(ob, _)| *ob == other)
                        .and_then(|(_, l)| {
                            l.writes
                                .iter()
                                .find(|x| (x.param, x.index) == (w.param, w.index))
                        })
                        .map_or(w.span, |x| x.span);
                    return Err(ExecError {
                        message: format!(
                            "blocks {:?} and {:?} both write element {} of `{}`: the result depends on their order",
                            blocks[other].1,
                            blocks[*b].1,
                            w.index,
                            param_name(blocks[*b].0, w.param)
                        ),
                        span: w.span,
                        label: format!("block {:?} writes it here", blocks[*b].1),
                        other: Some((span, "the other block's write".into())),
                        help: Some(
                            "blocks run in no order and no barrier orders them: give each block its own elements (a batch stride of at least a batch entry's elements, a tile per block)",
                        ),
                    });
                }
            }
        }
    }
    // A block that reads what another writes: blocks are not ordered, so
    // it reads the launch's input here and either value on a GPU.
    for (b, log) in &logs {
        for r in &log.reads {
            let owner = writer[r.param].get(r.index).copied().unwrap_or(0);
            if owner != 0 && owner != b + 1 {
                let (writer, reader) = (blocks[owner - 1].1, blocks[*b].1);
                let grouped = r.in_reduce && group_of[owner - 1] == group_of[*b];
                return Err(ExecError {
                    message: match grouped {
                        // Ordered on the GPU, but the executor runs each
                        // block on the launch's inputs and its own writes.
                        true => format!(
                            "block {reader:?} reads element {} of `{}` in a reduce's body, which block {writer:?} of its group wrote before arriving: the CPU executor does not model such reads",
                            r.index,
                            param_name(blocks[*b].0, r.param)
                        ),
                        false => format!(
                            "block {reader:?} reads element {} of `{}`, which block {writer:?} writes: blocks are not ordered, so what it reads depends on which runs first",
                            r.index,
                            param_name(blocks[*b].0, r.param)
                        ),
                    },
                    span: r.span,
                    label: format!("block {reader:?} reads it here"),
                    other: None,
                    help: Some(match grouped {
                        true => {
                            "let the reduce add the parts (its register tensor), rather than read their global writes in its body"
                        }
                        false => {
                            "give each block the elements it writes to read alone, or split the kernel in two launches"
                        }
                    }),
                });
            }
        }
    }
    for (_, log) in logs {
        for w in log.writes {
            if let Some(t) = tensors[w.param].as_mut() {
                t.data[w.index] = w.value;
            }
        }
    }
    Ok(writer
        .iter()
        .map(|w| (0..w.len()).filter(|&i| w[i] != 0).collect())
        .collect())
}

/// What a block leaves: its global writes, applied after every block has
/// run, and the elements of written tensors it read (each once).
struct Log {
    writes: Vec<Write>,
    reads: Vec<Read>,
}

/// A global read of one block of a tensor the kernel writes.
struct Read {
    param: usize,
    index: usize,
    span: Span,
    /// In a reduce's body: after its group's arrivals, which order the
    /// group's writes before it on the GPU.
    in_reduce: bool,
}

/// A global write of one block, applied after every block has run.
struct Write {
    param: usize,
    index: usize,
    value: f64,
    span: Span,
}

fn param_name(ir: &KernelIr, p: usize) -> &str {
    match &ir.params[p] {
        Param::Tensor { name, .. } | Param::Scalar { name, .. } => name,
    }
}

/// The warpgroup of thread `t` of a block.
fn warpgroup(t: usize) -> usize {
    t / crate::ir::WARPGROUP as usize
}

#[derive(Clone)]
struct Buffer {
    values: Vec<f64>,
    written: Vec<bool>,
}

impl Buffer {
    fn new(len: usize, init: Option<f64>) -> Buffer {
        Buffer {
            values: vec![init.unwrap_or(0.0); len],
            written: vec![init.is_some(); len],
        }
    }
}

/// Per thread, per integer value: undefined or not, and how many are.
struct Undefined {
    flags: Vec<Vec<bool>>,
    count: usize,
}

impl Undefined {
    fn is(&self, t: usize, id: usize) -> bool {
        self.flags[t][id]
    }

    fn set(&mut self, t: usize, id: usize, undefined: bool) {
        let flag = &mut self.flags[t][id];
        match (*flag, undefined) {
            (false, true) => self.count += 1,
            (true, false) => self.count -= 1,
            _ => {}
        }
        *flag = undefined;
    }
}

struct Block<'a> {
    ir: &'a KernelIr,
    launch: &'a Launch<'a>,
    globals: &'a [Option<Tensor>],
    block: [u32; 3],
    threads: usize,
    /// Per thread, every integer value computed so far.
    ints: Vec<Vec<i64>>,
    /// Which of `ints` are undefined (a quotient by zero, an overflow):
    /// an error where an instruction the thread runs uses one, not where
    /// the scope computes it (the GPU computes it where used).
    undefined: Undefined,
    shared: Vec<Buffer>,
    touches: Vec<Vec<Touch>>,
    /// Per shared element: the thread and copy of a cp.async in flight to it.
    in_flight: Vec<Vec<Option<(u32, Span)>>>,
    /// Per element of a global tensor the kernel writes: the threads and
    /// copies of the cp.asyncs in flight that read it.
    in_flight_sources: HashMap<(usize, usize), Vec<(u32, Span)>>,
    /// Per thread.
    asyncs: Vec<AsyncGroups>,
    epoch: u32,
    /// Per thread, per register array.
    registers: Vec<Vec<Buffer>>,
    /// A shuffling compute's shuffled values, per shuffle in evaluation
    /// order, per thread; and the next shuffle a thread's evaluation meets.
    shuffled: Vec<Vec<f64>>,
    shuffle_at: usize,
    /// Whether the value being computed read a guarded load outside its
    /// tensor (a partial tile's padding, 0): an i32 `/` or `%` whose
    /// divisor did is no error where the divisor is 0, and gives codegen's
    /// value there (a division by 1).
    padding: bool,
    /// Per thread: whether it runs the instructions at hand (the `if`
    /// conditions around them hold for it).
    active: Vec<bool>,
    /// This block's global writes, one an element with its latest value,
    /// and where each element's stands.
    writes: Vec<Write>,
    overlay: HashMap<(usize, usize), usize>,
    /// Per global element this block wrote: the last writer, the barrier
    /// epoch and the statement, so that two threads writing it with no
    /// barrier between them are caught.
    writers: HashMap<(usize, usize), (u32, Access)>,
    /// Per parameter: whether the kernel writes it.
    written: &'a [bool],
    /// Per global element of a written tensor this block read: who read
    /// it in the current barrier epoch, as [`Touch`] keeps them, and
    /// whether a reduce's body read it.
    readers: HashMap<(usize, usize), (Touch, bool)>,
    /// Whether a reduce's body runs (after its group's arrivals).
    in_reduce_body: bool,
    counters: HashMap<usize, i64>,
    /// In a pipeline: per shared element, the iteration whose box last
    /// wrote it (and the load), and the iteration whose body is running.
    stage_tags: Vec<Vec<Option<(i64, Span)>>>,
    iteration: Option<i64>,
    /// In a pipeline's turns: each warpgroup's threads run their own turns,
    /// meeting only at their warpgroup's barriers, which each counts here.
    in_turns: bool,
    turn_barriers: Vec<u32>,
    /// For a kernel that reduces across blocks: its group's partials.
    partials: Option<&'a reduce::Partials>,
}

impl<'a> Block<'a> {
    fn new(
        ir: &'a KernelIr,
        launch: &'a Launch<'a>,
        globals: &'a [Option<Tensor>],
        block: [u32; 3],
        written: &'a [bool],
        partials: Option<&'a reduce::Partials>,
    ) -> Block<'a> {
        let threads = ir.block_threads.max(1) as usize;
        // An init is a store of a constant: rounded as one, except in a
        // reference kernel's f64. The same for every thread.
        let fresh: Vec<Buffer> = ir
            .registers
            .iter()
            .map(|b| {
                let init = b.init.map(|v| match launch.exact {
                    true => v,
                    false => round(b.elem, v),
                });
                Buffer::new(b.len as usize, init)
            })
            .collect();
        Block {
            ir,
            launch,
            globals,
            block,
            threads,
            ints: vec![vec![0; ir.ints.len()]; threads],
            undefined: Undefined {
                flags: vec![vec![false; ir.ints.len()]; threads],
                count: 0,
            },
            shared: ir
                .shared
                .iter()
                .map(|b| Buffer::new(b.len as usize, None))
                .collect(),
            touches: ir
                .shared
                .iter()
                .map(|b| vec![Touch::default(); b.len as usize])
                .collect(),
            in_flight: ir
                .shared
                .iter()
                .map(|b| vec![None; b.len as usize])
                .collect(),
            in_flight_sources: HashMap::new(),
            asyncs: (0..threads).map(|_| AsyncGroups::default()).collect(),
            epoch: 1,
            registers: vec![fresh; threads],
            writes: Vec::new(),
            overlay: HashMap::new(),
            writers: HashMap::new(),
            written,
            readers: HashMap::new(),
            in_reduce_body: false,
            counters: HashMap::new(),
            stage_tags: Vec::new(),
            iteration: None,
            in_turns: false,
            turn_barriers: vec![0; threads.div_ceil(crate::ir::WARPGROUP as usize)],
            shuffled: Vec::new(),
            shuffle_at: 0,
            padding: false,
            active: vec![true; threads],
            partials,
        }
    }

    fn run(mut self) -> Result<Log> {
        self.stopped(Span { start: 0, end: 0 })?;
        self.scope_ints(None);
        self.insts(&self.ir.body)?;
        let mut reads: Vec<Read> = self
            .readers
            .into_iter()
            .filter_map(|((param, index), (t, in_reduce))| {
                let span = t.readers[0]?.span;
                Some(Read {
                    param,
                    index,
                    span,
                    in_reduce,
                })
            })
            .collect();
        // In the tensors' order, not the map's: a race between blocks is
        // reported at the same element from run to run.
        reads.sort_unstable_by_key(|r| (r.param, r.index));
        Ok(Log {
            writes: self.writes,
            reads,
        })
    }

    /// An error where the caller asked the run to stop.
    pub(super) fn stopped(&self, span: Span) -> Result<()> {
        match self.launch.stop {
            Some(stop) if stop.load(Ordering::Relaxed) => Err(ExecError {
                message: "the run was stopped".into(),
                span,
                label: "running here".into(),
                other: None,
                help: None,
            }),
            _ => Ok(()),
        }
    }

    fn insts(&mut self, insts: &'a [Inst]) -> Result<()> {
        for inst in insts {
            self.defined_for(inst)?;
            match &inst.kind {
                // TMA read the buffers when the store was issued; a new
                // epoch, so that a write before the wait is a race.
                InstKind::Barrier | InstKind::TmaStoreWait { .. } => self.meet(inst.span)?,
                InstKind::If {
                    cond,
                    then,
                    otherwise,
                } => self.branch(*cond, [then, otherwise])?,
                InstKind::Loop {
                    id,
                    start,
                    end,
                    body,
                    ..
                } => self.loop_(*id, [*start, *end], body, inst.span)?,
                InstKind::Pipeline {
                    id,
                    start,
                    end,
                    stages,
                    turn,
                    load,
                    body,
                    after,
                    ..
                } => self.pipeline(
                    *id,
                    [*start, *end],
                    *stages,
                    turn.as_ref(),
                    [load, body, after],
                    inst.span,
                )?,
                InstKind::TmaStores { stores, .. } => self.tma_stores(stores, inst.span)?,
                InstKind::TmaLoads { loads, .. } => self.block_loads(loads, inst.span)?,
                // An atomic reduce's sum in index order: one of the orders
                // the blocks may arrive in on the GPU.
                InstKind::ReduceBlocks {
                    registers,
                    across,
                    group,
                    count,
                    index,
                    body,
                    ..
                } => self.reduce_blocks(
                    *registers,
                    *across,
                    [*group, *count, *index],
                    body,
                    inst.span,
                )?,
                InstKind::MmaSync { atom, a, b, c } => self.mma_sync(atom, [a, b, c], inst.span)?,
                InstKind::Wgmma { atom, a, b, c } => self.wgmma(atom, a, b, c, inst.span)?,
                InstKind::Matrix {
                    store,
                    count,
                    trans,
                    shared,
                    regs,
                    ..
                } => self.matrix(*store, *count as usize, *trans, shared, regs, inst.span)?,
                InstKind::Compute { elem, value, dst } if value.shuffles() => {
                    self.compute_warps(*elem, value, dst, inst.span)?
                }
                kind => {
                    for t in 0..self.threads {
                        if self.active[t] {
                            self.atom(kind, t, inst.span)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn atom(&mut self, kind: &InstKind, t: usize, span: Span) -> Result<()> {
        match kind {
            InstKind::Copy { atom, src, dst } => {
                // A vector reads all its elements, then writes them all.
                let w = atom.width();
                self.vector_aligned(src, w, t, span)?;
                self.vector_aligned(dst, w, t, span)?;
                let mut v = Vec::with_capacity(w as usize);
                for r in 0..w {
                    let x = self.read_at(src, r, t, span)?;
                    v.push(match atom {
                        CopyAtom::Convert(_, to) if !self.launch.exact => round(*to, x),
                        CopyAtom::Convert(..) => x,
                        _ => x,
                    });
                }
                for (r, x) in v.into_iter().enumerate() {
                    if matches!(atom, CopyAtom::Async(..)) {
                        let source = self.async_source(src, r as i64, t, span)?;
                        self.issue(dst, r as i64, t, x, source, span)?;
                    } else {
                        self.write_at(dst, r as i64, t, x, span)?;
                    }
                }
                Ok(())
            }
            InstKind::AsyncFence => {
                self.fence_async(t);
                Ok(())
            }
            InstKind::AsyncWait(n) => self.wait_async(t, *n as usize),
            InstKind::Mma {
                atom: MmaAtom::Fma { c: elem, .. },
                a,
                b,
                c,
            } => {
                let (x, y, z) = (
                    self.read(a, t, span)?,
                    self.read(b, t, span)?,
                    self.read(c, t, span)?,
                );
                let r = match elem {
                    Elem::I32 => (x as i32).wrapping_mul(y as i32).wrapping_add(z as i32) as f64,
                    _ if self.launch.exact => x.mul_add(y, z),
                    _ => round(*elem, (x as f32).mul_add(y as f32, z as f32) as f64),
                };
                self.write(c, t, r, span)
            }
            InstKind::Compute { elem, value, dst } => self.compute(*elem, value, dst, t, span),
            InstKind::Fill { dst, value, .. } if self.launch.exact => self.write(dst, t, *value, span),
            InstKind::Fill { elem, dst, value } => self.write(dst, t, round(*elem, *value), span),
            InstKind::Assert { cond, message, .. } if self.ints[t][*cond] == 0 => Err(self.err(
                t,
                span,
                format!("fails its bound check: {message}"),
            )),
            InstKind::Assert { .. } => Ok(()),
            InstKind::Barrier
            | InstKind::TmaStoreWait { .. }
            | InstKind::Loop { .. }
            | InstKind::If { .. }
            | InstKind::MmaSync { .. }
            | InstKind::Matrix { .. }
            | InstKind::Wgmma { .. }
            | InstKind::Pipeline { .. }
            | InstKind::ReduceBlocks { .. }
            | InstKind::TmaLoad { .. }
            | InstKind::TmaPrefetch { .. }
            | InstKind::TmaLoads { .. }
            | InstKind::TmaStores { .. }
            | InstKind::TmaStore { .. }
            // Its loads landed where they were issued: nothing touched
            // their tiles in between (the verifier's rule).
            | InstKind::TmaWait
            // Each group is waited for before its accumulators are touched
            // (the verifier's rule), so the executor runs wgmmas at once.
            | InstKind::WgmmaFence
            | InstKind::ProxyFence
            | InstKind::WgmmaCommit
            | InstKind::WgmmaWait(_) => Ok(()),
        }
    }

    fn err(&self, t: usize, span: Span, what: String) -> ExecError {
        ExecError {
            message: format!("thread {t} of block {:?} {what}", self.block),
            span,
            label: "here".into(),
            other: None,
            help: None,
        }
    }
}

/// Rounds to the element type once, to nearest even, as a store on the
/// GPU does (and as the back end rounds a constant of the program).
fn round(elem: Elem, v: f64) -> f64 {
    match elem {
        Elem::F32 => v as f32 as f64,
        Elem::F16 => half::f16::from_f32(f32_rounded_to_odd(v)).to_f64(),
        Elem::Bf16 => half::bf16::from_f32(f32_rounded_to_odd(v)).to_f64(),
        Elem::I32 => v.trunc(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constant rounds once, as the back end rounds it: just past a tie
    /// of bf16 (1 + 2^-8 + 2^-30) and of f16 (1 + 2^-11 + 2^-32) rounds up,
    /// where through f32 to nearest (a tie) it rounded to even, down.
    #[test]
    fn constants_round_once() {
        let just_past = |tie: f64, e: i32| tie + 2f64.powi(e);
        assert_eq!(
            round(Elem::Bf16, just_past(1.0 + 2f64.powi(-8), -30)),
            1.0078125
        );
        assert_eq!(
            round(Elem::F16, just_past(1.0 + 2f64.powi(-11), -32)),
            1.0009765625
        );
        // Ties themselves to even, and f32 values as before.
        assert_eq!(round(Elem::Bf16, 1.0 + 2f64.powi(-8)), 1.0);
        let v = f32::from_bits(0x3fc8_8003) as f64;
        assert_eq!(
            round(Elem::Bf16, v),
            half::bf16::from_f32(v as f32).to_f64()
        );
        assert_eq!(
            round(Elem::Bf16, -just_past(1.0 + 2f64.powi(-8), -30)),
            -1.0078125
        );
        assert_eq!(round(Elem::F16, 1e-30), 0.0);
    }
}
