//! `reduce R across block.z { ... }` or `across parts(...)`: the typed
//! statement -> an `InstKind::ReduceBlocks` naming the group, its count and
//! the block's index in it (across a grid dimension: the block's place in
//! the other two, the dimension's extent, its index along it; across
//! parts: the kernel's values, after an `Assert` of their bounds, which
//! keeps the workspace's addresses inside it); and the check that a body
//! across a grid dimension does not depend on the block's index along it.

use super::{Lowerer, Problem};
use crate::check::program::{Across, Stmt};
use crate::diagnostic::Diagnostic;
use crate::ir::{Groups, Inst, InstKind, IntDef, KernelIr};
use crate::span::Span;
use tilec_layout::int::Op as IntOp;
use tilec_layout::{Builtin, Int};

impl Lowerer<'_> {
    pub(super) fn reduce_blocks(
        &mut self,
        registers: usize,
        across: &Across,
        body: &[Stmt],
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let (across, group, count, index) = match across {
            Across::Dim(dim) => {
                // The group is the block's place in the grid's other two
                // dimensions, over the whole grid (an edge launch's blocks
                // have offsets): x + X * y, leaving out `dim`.
                let d = *dim as usize;
                let extent =
                    |i: usize| self.k.launch.grid.get(i).cloned().unwrap_or(Int::Static(1));
                // A group of one block (split-K tuned to one slice) holds
                // its sum already: the body runs as it is, with no
                // workspace, counter or barrier.
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
                (
                    Groups::Dim(*dim),
                    self.int(&group)?,
                    self.int(&extent(d))?,
                    self.int(&coord(d))?,
                )
            }
            Across::Parts {
                group,
                groups,
                part,
                count,
                most,
            } => {
                let mut id = |v: &Int| {
                    let v = self.fix(v);
                    self.int(&v)
                };
                let (group, groups, index, count, most) =
                    (id(group)?, id(groups)?, id(part)?, id(count)?, id(most)?);
                // group < groups, part < count, 1 <= count <= most: the
                // block's partial and the counter it counts on lie inside
                // the workspace the runtime sized by groups and most.
                let one = self.def(IntDef::Const(1));
                let last = self.def(IntDef::Bin(IntOp::Sub, count, one));
                let tests = [(group, groups), (index, count), (last, most)]
                    .map(|(v, n)| self.def(IntDef::Below(v, n)));
                let both = self.def(IntDef::Bin(IntOp::Min, tests[0], tests[1]));
                let cond = self.def(IntDef::Bin(IntOp::Min, both, tests[2]));
                let (file, line) = match self.checks {
                    Some(lines) => (lines.file.clone(), lines.line(span)),
                    None => (self.k.name.clone(), 0),
                };
                out.push(Inst::at(
                    span,
                    InstKind::Assert {
                        cond,
                        message: "a reduce across parts(t < groups, p < n, n <= most) whose group, part or count breaks its bound (the workspace holds groups * most partials)".into(),
                        file,
                        line,
                    },
                ));
                (Groups::Parts { groups, most }, group, count, index)
            }
        };
        let body = self.stmts(body).map_err(Problem::Inside)?;
        out.push(Inst::at(
            span,
            InstKind::ReduceBlocks {
                registers,
                across,
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
        let InstKind::ReduceBlocks {
            across: Groups::Dim(dim),
            body,
            ..
        } = &inst.kind
        else {
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
