//! `reduce_blocks` on the CPU: the blocks of a group (those that differ
//! only in the reduction's grid dimension) run one after the other on one
//! worker, in that dimension's order, each leaving its registers in the
//! group's partials; the last one adds them up in index order, as the GPU's
//! last-arriving block does (f32 additions from 0, the same bits), and runs
//! the body. The other blocks skip it.

use super::{Block, ExecError, Result};
use crate::check::program::Elem;
use crate::ir::{Inst, InstKind, IntId, KernelIr};
use crate::span::Span;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// A group's state: the group's number (every block of it must compute
/// the same), and per index along its dimension, once that block has
/// arrived, each thread's register values.
#[derive(Default)]
pub(super) struct Group {
    number: Option<i64>,
    partials: Vec<Option<Vec<Vec<f64>>>>,
}

pub(super) type Partials = RefCell<Group>;

/// An error when the group of the block at `last` is incomplete: run
/// apart from its group (a sample of the grid), its sum was never made.
pub(super) fn whole(p: &Partials, last: [u32; 3]) -> Result<()> {
    match p.borrow().partials.iter().position(Option::is_none) {
        None => Ok(()),
        Some(i) => Err(ExecError {
            message: format!(
                "block {last:?}'s group reduces across blocks without its block {i}: run every block of a group (a sample of the grid must take whole groups)"
            ),
            span: Span { start: 0, end: 0 },
            label: "the kernel".into(),
            other: None,
            help: None,
        }),
    }
}

/// The grid dimension a kernel's `reduce_blocks` runs along, if it has one.
fn reduction_dim(ir: &KernelIr) -> Option<u8> {
    let mut dim = None;
    for i in &ir.body {
        if let InstKind::ReduceBlocks { dim: d, .. } = i.kind {
            dim = Some(d);
        }
    }
    dim
}

/// The blocks (indices into `blocks`) that run together on one worker, in
/// order: each block alone, or, for a kernel reducing across blocks, the
/// blocks of each group by their index along the dimension.
pub(super) fn groups(blocks: &[(&KernelIr, [u32; 3])]) -> Vec<Vec<usize>> {
    let Some(dim) = blocks.first().and_then(|(ir, _)| reduction_dim(ir)) else {
        return (0..blocks.len()).map(|b| vec![b]).collect();
    };
    let d = dim as usize;
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
        [group, count, index]: [IntId; 3],
        body: &'a [Inst],
        span: Span,
    ) -> Result<()> {
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
        for t in 0..self.threads {
            if let Some(i) = self.registers[t][r].written.iter().position(|w| !w) {
                return Err(self.err(
                    t,
                    span,
                    format!("sums register r{r}[{i}] across blocks, which nothing wrote"),
                ));
            }
        }
        let mine: Vec<Vec<f64>> = (0..self.threads)
            .map(|t| self.registers[t][r].values.clone())
            .collect();
        let sums = {
            let mut state = partials.borrow_mut();
            if *state.number.get_or_insert(number) != number {
                return Err(self.err(
                    0,
                    span,
                    format!(
                        "is in group {number}, but its group's other blocks are in {:?}",
                        state.number
                    ),
                ));
            }
            let p = &mut state.partials;
            let n = usize::try_from(count).unwrap_or(0);
            if p.len() < n {
                p.resize(n, None);
            }
            match p.get_mut(usize::try_from(index).unwrap_or(usize::MAX)) {
                Some(slot) => *slot = Some(mine),
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
            let exact = self.launch.exact;
            let len = self.registers[0][r].values.len();
            (0..self.threads)
                .map(|t| {
                    (0..len)
                        .map(|i| {
                            p.iter().flatten().fold(0.0, |acc, z| match exact {
                                true => acc + z[t][i],
                                false => super::round(Elem::F32, acc + z[t][i]),
                            })
                        })
                        .collect::<Vec<f64>>()
                })
                .collect::<Vec<_>>()
        };
        for (t, values) in sums.into_iter().enumerate() {
            let reg = &mut self.registers[t][r];
            reg.values = values;
            reg.written.iter_mut().for_each(|w| *w = true);
        }
        self.insts(body)
    }
}
