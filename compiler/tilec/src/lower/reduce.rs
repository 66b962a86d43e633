//! `reduce R across block.z { ... }`: the typed statement -> an
//! `InstKind::ReduceBlocks` naming the group (the block's place in the
//! other two grid dimensions), the group's size and the block's index in
//! it; and the check that the body does not depend on that index.

use super::{Lowerer, Problem};
use crate::check::program::Stmt;
use crate::diagnostic::Diagnostic;
use crate::ir::{Inst, InstKind, IntDef, KernelIr};
use crate::span::Span;
use tilec_layout::{Builtin, Int};

impl Lowerer<'_> {
    pub(super) fn reduce_blocks(
        &mut self,
        registers: usize,
        dim: u8,
        body: &[Stmt],
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        // The group is the block's place in the grid's other two
        // dimensions, over the whole grid (an edge launch's blocks have
        // offsets): x + X * y, leaving out `dim`.
        let d = dim as usize;
        let extent = |i: usize| self.k.launch.grid.get(i).cloned().unwrap_or(Int::Static(1));
        // A group of one block (split-K tuned to one slice) holds its sum
        // already: the body runs as it is, with no workspace, counter or
        // barrier.
        if extent(d) == Int::Static(1) {
            out.extend(self.stmts(body).map_err(Problem::Inside)?);
            return Ok(());
        }
        let coord = |i: usize| Builtin::Block(i as u8).int();
        let [a, b] = match d {
            0 => [1, 2],
            1 => [0, 2],
            _ => [0, 1],
        };
        let group = coord(a).add(&extent(a).mul(&coord(b)));
        let (group, count, index) = (
            self.int(&group)?,
            self.int(&extent(d))?,
            self.int(&coord(d))?,
        );
        let body = self.stmts(body).map_err(Problem::Inside)?;
        out.push(Inst::at(
            span,
            InstKind::ReduceBlocks {
                registers,
                dim,
                group,
                count,
                index,
                body,
            },
        ));
        Ok(())
    }
}

/// A reduce across blocks' body runs on the group's last block to arrive,
/// which differs from run to run: what it does may not depend on that
/// block's index along the reduction's dimension.
pub(super) fn reduce_body_is_the_groups(ir: &KernelIr) -> Result<(), Diagnostic> {
    for inst in &ir.body {
        let InstKind::ReduceBlocks { dim, body, .. } = &inst.kind else {
            continue;
        };
        let mut used = Vec::new();
        body.iter().for_each(|i| i.ints_used(&mut used));
        let along = IntDef::BlockIdx(*dim);
        if ir
            .with_operands(used)
            .iter()
            .any(|&v| ir.ints[v].def == along)
        {
            let d = ["x", "y", "z"][*dim as usize % 3];
            return Err(Diagnostic::new(
                format!("the body of a reduce across block.{d} depends on block.{d}"),
                inst.span,
            )
            .with_label("the group's last block to arrive runs it: a different one each run")
            .with_help("index the body's tensors by the group's coordinates alone, e.g. gC with step(1, 1, X)"));
        }
    }
    Ok(())
}
