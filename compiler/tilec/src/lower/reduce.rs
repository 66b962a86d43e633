//! `reduce R across block.z { ... }` or `across parts(...)`: the typed
//! statement -> an `InstKind::ReduceBlocks` naming the group, its count and
//! the block's index in it (across a grid dimension: the block's place in
//! the other two, the dimension's extent, its index along it; across
//! parts: the kernel's values, which codegen and the executor check
//! against the launch's bounds); and the check that its body does the
//! same whichever block of the group runs it.

use super::{Lowerer, Problem};
use crate::check::program::{Across, Stmt};
use crate::diagnostic::Diagnostic;
use crate::ir::{Groups, Inst, InstKind, IntDef, IntId, KernelIr, Space};
use crate::span::Span;
use tilec_layout::{Builtin, Int};

impl Lowerer<'_> {
    pub(super) fn reduce_blocks(
        &mut self,
        registers: usize,
        across: &Across,
        atomic: bool,
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
                (Groups::Parts { groups, most }, group, count, index)
            }
        };
        let body = self.stmts(body).map_err(Problem::Inside)?;
        out.push(Inst::at(
            span,
            InstKind::ReduceBlocks {
                registers,
                across,
                atomic,
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
/// block. Across a grid dimension: not on the block's index along it;
/// across parts: on nothing but the group (the kernel's value) and what
/// every block has alike (extents, the thread, constants, the body's own
/// loops), so on no block index and no counter of a loop around it.
pub(super) fn reduce_body_is_the_groups(ir: &KernelIr) -> Result<(), Diagnostic> {
    // Each copy an unrolled loop made, too: a value folded in one may not be in another.
    let mut result = Ok(());
    crate::ir::for_each_inst(&ir.body, &mut |inst| {
        if result.is_ok() {
            result = body_is_the_groups(ir, inst);
        }
    });
    result
}

/// [`reduce_body_is_the_groups`] of one instruction (if it is a reduce).
fn body_is_the_groups(ir: &KernelIr, inst: &Inst) -> Result<(), Diagnostic> {
    let InstKind::ReduceBlocks {
        registers,
        across,
        group,
        body,
        ..
    } = &inst.kind
    else {
        return Ok(());
    };
    let registers = *registers;
    if let Some((space, at)) = state_of_the_block(body, registers) {
        let what = match space {
            Space::Registers(_) => "registers",
            _ => "shared memory",
        };
        return Err(Diagnostic::new(
            format!("the body of a reduce across blocks reads {what} the block filled before it"),
            at,
        )
        .with_related(
            inst.span,
            "the group's last block to arrive runs this body, a different one each run",
        )
        .with_help("read only the summed array, global memory and what the body itself computes"));
    }
    let mut used = Vec::new();
    body.iter().for_each(|i| i.ints_used(&mut used));
    let (why, help) = match *across {
        Groups::Dim(dim) => {
            let along = IntDef::BlockIdx(dim);
            let depends = |used: Vec<IntId>| {
                ir.with_operands(used)
                    .iter()
                    .any(|&v| ir.ints[v].def == along)
            };
            if !depends(used) {
                return Ok(());
            }
            let d = ["x", "y", "z"][dim as usize % 3];
            // The first statement of the body that does, where the user
            // looks: a tensor made from one that moves with block.z.
            let mut first = None;
            crate::ir::for_each_atom(body, &mut |i| {
                let mut mine = Vec::new();
                i.ints_used(&mut mine);
                if first.is_none() && depends(mine) {
                    first = Some(i.span);
                }
            });
            let diagnostic = Diagnostic::new(
                format!("the body of a reduce across block.{d} depends on block.{d}"),
                inst.span,
            )
            .with_label("the group's last block to arrive runs it: a different one each run");
            let diagnostic = match first {
                Some(at) if at != inst.span => diagnostic.with_related(
                    at,
                    format!("this statement's tensors move with block.{d}: a view made from one sliced or tiled by block.{d}"),
                ),
                _ => diagnostic,
            };
            return Err(diagnostic.with_help(
                "index the body's tensors by the group's coordinates alone, e.g. gC with step(1, 1, X)",
            ));
        }
        Groups::Parts { .. } => {
            let mut own = Vec::new();
            crate::ir::for_each_inst(body, &mut |i| {
                if let InstKind::Loop { id, .. } = i.kind {
                    own.push(id);
                }
            });
            let differs = |v: &IntId| match ir.ints[*v].def {
                IntDef::BlockIdx(_) => true,
                IntDef::LoopVar(l) => !own.contains(&l),
                _ => false,
            };
            if !ir
                .operands_beyond(used, |v| v == *group)
                .iter()
                .any(differs)
            {
                return Ok(());
            }
            (
                "the body of a reduce across parts depends on the block that runs it".to_string(),
                "compute what the body reads and writes from the group (the first bound of parts) and extents alone",
            )
        }
    };
    Err(Diagnostic::new(why, inst.span)
        .with_label("the group's last block to arrive runs it: a different one each run")
        .with_help(help))
}

/// The first register array or shared buffer that `body` reads before it
/// writes it, other than the summed array `summed`: state the block had
/// before the reduce, which differs between the blocks of a group.
fn state_of_the_block(body: &[Inst], summed: usize) -> Option<(Space, Span)> {
    let mut written = vec![Space::Registers(summed)];
    let mut found = None;
    crate::ir::for_each_atom(body, &mut |i| {
        let (mut reads, mut writes): (Vec<Space>, Vec<Space>) = (Vec::new(), Vec::new());
        match &i.kind {
            InstKind::Copy { src, dst, .. } => {
                reads.push(src.space);
                writes.push(dst.space);
            }
            InstKind::Mma { a, b, c, .. } => {
                reads.extend([a.space, b.space, c.space]);
                writes.push(c.space);
            }
            InstKind::Compute { value, dst, .. } => {
                let mut loads = Vec::new();
                value.loads(&mut loads);
                reads.extend(loads.iter().map(|a| a.space));
                writes.push(dst.space);
            }
            InstKind::Fill { dst, .. } => writes.push(dst.space),
            InstKind::Matrix {
                store,
                shared,
                regs,
                ..
            } => {
                let (shared, regs) = (shared.space, Space::Registers(regs.array));
                let (from, to) = if *store {
                    (regs, shared)
                } else {
                    (shared, regs)
                };
                reads.push(from);
                writes.push(to);
            }
            InstKind::TmaStore { src, .. } => reads.push(src.space),
            // A block's TMA load in the body fills its tile.
            InstKind::TmaLoad { dst, .. } => writes.push(dst.space),
            _ => {}
        }
        if found.is_none() {
            found = reads
                .into_iter()
                .find(|s| !matches!(s, Space::Global(_)) && !written.contains(s))
                .map(|s| (s, i.span));
        }
        written.extend(writes);
    });
    found
}
