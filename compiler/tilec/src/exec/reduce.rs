//! `reduce_blocks` on the CPU: the blocks of a group run one after the
//! other on one worker (across a grid dimension: the group's blocks in that
//! dimension's order; across parts: every block of the grid, in order),
//! each leaving its registers in its group's partials; the last one to
//! arrive adds them up in part order, run by run (`ir::REDUCE_RUN` parts
//! each, then the runs' sums), as the GPU's blocks do (f32 additions from
//! 0, the same bits), and runs the body. The other blocks skip it.

use super::{Block, ExecError, Result};
use crate::check::program::Elem;
use crate::ir::{Groups, Inst, InstKind, IntId, KernelIr};
use crate::span::Span;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// The partial sums of a worker's groups: per group number, per part once
/// its block has arrived, each thread's register values; across a grid
/// dimension the worker's one group's number (its blocks must agree).
#[derive(Default)]
pub(super) struct Group {
    number: Option<i64>,
    open: BTreeMap<i64, Vec<Option<Vec<Vec<f64>>>>>,
    /// The groups already summed: on the GPU a second round of one in a
    /// launch would overwrite partials the first is still counting.
    done: std::collections::BTreeSet<i64>,
}

pub(super) type Partials = RefCell<Group>;

/// An error when a group is left incomplete after the worker's blocks
/// (`last` the last of them): run apart from some of its blocks (a sample
/// of the grid), or counting more parts than arrived, its sum was never
/// made.
pub(super) fn whole(p: &Partials, last: [u32; 3]) -> Result<()> {
    let p = p.borrow();
    let Some((g, parts)) = p.open.iter().next() else {
        return Ok(());
    };
    let i = parts.iter().position(Option::is_none).unwrap_or(0);
    Err(ExecError {
        message: format!(
            "group {g} reduces across blocks without its part {i} (up to block {last:?}): run every block of a group (a sample of the grid must take whole groups), and count only the parts that arrive"
        ),
        span: Span { start: 0, end: 0 },
        label: "the kernel".into(),
        other: None,
        help: None,
    })
}

/// What a kernel's `reduce_blocks` runs across, if it has one.
fn reduction(ir: &KernelIr) -> Option<Groups> {
    match ir.block_reduction()?.kind {
        InstKind::ReduceBlocks { across, .. } => Some(across),
        _ => None,
    }
}

/// The blocks (indices into `blocks`) that run together on one worker, in
/// order: each block alone; for a kernel reducing across a grid dimension,
/// the blocks of each group by their index along it; across parts, the
/// whole grid.
pub(super) fn groups(blocks: &[(&KernelIr, [u32; 3])]) -> Vec<Vec<usize>> {
    let d = match blocks.first().and_then(|(ir, _)| reduction(ir)) {
        None => return (0..blocks.len()).map(|b| vec![b]).collect(),
        Some(Groups::Parts { .. }) => return vec![(0..blocks.len()).collect()],
        Some(Groups::Dim(d)) => d as usize,
    };
    let mut by_group: BTreeMap<[u32; 3], Vec<usize>> = BTreeMap::new();
    for (b, (_, at)) in blocks.iter().enumerate() {
        let mut key = *at;
        key[d] = 0;
        by_group.entry(key).or_default().push(b);
    }
    by_group
        .into_values()
        .map(|mut g| {
            g.sort_by_key(|&b| blocks[b].1[d]);
            g
        })
        .collect()
}

impl<'a> Block<'a> {
    pub(super) fn reduce_blocks(
        &mut self,
        r: usize,
        across: Groups,
        [group, count, index]: [IntId; 3],
        body: &'a [Inst],
        span: Span,
    ) -> Result<()> {
        let dim_form = matches!(across, Groups::Dim(_));
        if let Some(t) = self.active.iter().position(|a| !a) {
            return Err(self.err(
                t,
                span,
                "does not reach a reduce across blocks the block's other threads reach".into(),
            ));
        }
        let Some(partials) = self.partials else {
            return Err(ExecError {
                message: "a reduce across blocks in a block run outside its group".into(),
                span,
                label: "here".into(),
                other: None,
                help: None,
            });
        };
        let (number, count, index) = (
            self.ints[0][group],
            self.ints[0][count],
            self.ints[0][index],
        );
        // The GPU's check, against the launch's bounds (the runtime
        // evaluates them as this executor does).
        if let Groups::Parts { groups, most } = across {
            let (groups, most) = (self.ints[0][groups], self.ints[0][most]);
            if !(0..groups).contains(&number)
                || !(0..count).contains(&index)
                || !(1..=most).contains(&count)
            {
                return Err(self.err(
                    0,
                    span,
                    format!(
                        "is part {index} of {count} of group {number}, outside the launch's bounds (groups {groups}, most {most}): parts(t < groups, p < n, n <= most) must hold"
                    ),
                ));
            }
        }
        // The block meets before its arrival (codegen's barrier): what its
        // threads wrote before is ordered before the body's reads. A group
        // of one part (stream-K's whole tile) skips the arrival and, on
        // the GPU, the barrier with it: no meeting here either, so that a
        // race the kernel's own barriers leave open is one here too.
        if count != 1 {
            self.meet(span)?;
        }
        for t in 0..self.threads {
            if let Some(i) = self.registers[t][r].written.iter().position(|w| !w) {
                return Err(self.err(
                    t,
                    span,
                    format!(
                        "sums register {}[{i}] across blocks, which nothing wrote",
                        self.ir.register_label(r)
                    ),
                ));
            }
        }
        let mine: Vec<Vec<f64>> = (0..self.threads)
            .map(|t| self.registers[t][r].values.clone())
            .collect();
        let sums = {
            let mut state = partials.borrow_mut();
            if dim_form && *state.number.get_or_insert(number) != number {
                return Err(self.err(
                    0,
                    span,
                    format!(
                        "is in group {number}, but its group's other blocks are in {:?}",
                        state.number
                    ),
                ));
            }
            if state.done.contains(&number) {
                return Err(self.err(
                    0,
                    span,
                    format!("reduces group {number} again, after its sum was made in this launch"),
                ));
            }
            let n = usize::try_from(count).unwrap_or(0);
            let p = state.open.entry(number).or_insert_with(|| vec![None; n]);
            if p.len() != n {
                return Err(self.err(
                    0,
                    span,
                    format!(
                        "counts {count} parts in group {number}, whose other blocks count {}",
                        p.len()
                    ),
                ));
            }
            match p.get_mut(usize::try_from(index).unwrap_or(usize::MAX)) {
                Some(slot @ None) => *slot = Some(mine),
                Some(Some(_)) => {
                    return Err(self.err(
                        0,
                        span,
                        format!("is part {index} of group {number}, which another block is too"),
                    ));
                }
                None => {
                    return Err(self.err(
                        0,
                        span,
                        format!("is block {index} of a group of {count} blocks"),
                    ));
                }
            }
            if p.iter().any(Option::is_none) {
                return Ok(());
            }
            let mut p = state.open.remove(&number).expect("just filled");
            if !dim_form {
                state.done.insert(number);
            }
            if let [Some(alone)] = p.as_mut_slice() {
                // A group of one part: its sum as it is (not 0.0 + x,
                // which is +0.0 for -0.0), as on the GPU.
                std::mem::take(alone)
            } else {
                let exact = self.launch.exact;
                let add = |acc: f64, x: f64| match exact {
                    true => acc + x,
                    false => super::round(Elem::F32, acc + x),
                };
                let len = self.registers[0][r].values.len();
                let run = crate::ir::REDUCE_RUN as usize;
                (0..self.threads)
                    .map(|t| {
                        (0..len)
                            .map(|i| {
                                // Run by run, from 0.0; past one run, the
                                // runs' sums in order, from 0.0 (as the GPU).
                                let mut runs = p.chunks(run).map(|c| {
                                    c.iter().flatten().fold(0.0, |acc, z| add(acc, z[t][i]))
                                });
                                match p.len() > run {
                                    true => runs.fold(0.0, add),
                                    false => runs.next().unwrap_or(0.0),
                                }
                            })
                            .collect::<Vec<f64>>()
                    })
                    .collect::<Vec<_>>()
            }
        };
        for (t, values) in sums.into_iter().enumerate() {
            let reg = &mut self.registers[t][r];
            reg.values = values;
            reg.written.iter_mut().for_each(|w| *w = true);
        }
        self.in_reduce_body = true;
        let ran = self.insts(body);
        self.in_reduce_body = false;
        ran
    }
}
