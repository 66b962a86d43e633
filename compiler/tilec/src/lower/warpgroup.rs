//! Lowering of a gemm with a wgmma atom (SM90): B stays in shared memory,
//! and A too for `_SS` atoms, described to the tensor cores by descriptors
//! derived from their layouts (an `_RS` atom's A is a register fragment,
//! as mma.sync's), and the group's asynchronous protocol is placed here.
//!
//! In: the tiled MMA and the (tile, M, K) / (tile, N, K) shared views (A
//! `(values, M, K)` in registers for `_RS`) and the (values, M, N)
//! accumulator. Out: a fence, one wgmma per (k, m, n), a
//! commit and a wait for it, so that the statement is complete when the
//! next one starts (the IR verifier's rule): nothing touches an
//! accumulator in flight. A gemm right after another joins its group.

use super::{Lowerer, Problem};
use crate::check::program::{Base, View};
use crate::ir::{Addr, Inst, InstKind, SmemOperand, Space, WgmmaA};
use crate::span::Span;
use tilec_layout::{Builtin, Coord, Int, SmemDescriptor, TiledMma};

const HELP: &str = "wgmma reads tiles laid out as CuTe's GMMA atoms: tile_to_shape of (8, 64):(64, 1) under Swizzle(3, 3, 3) for K-major 16-bit tiles (or the 64- and 32-byte forms), each tile starting on a whole swizzle repeat";

/// One operand's tiles: the descriptor its tile layout and its buffer's
/// swizzle give (the same for every (M or N, K) tile of the view), and the
/// span of element offsets a tile reads, from its start.
struct SmemTiles<'v> {
    view: &'v View,
    name: &'static str,
    buffer: usize,
    desc: SmemDescriptor,
    span: (i64, i64),
}

/// Appends `next` to `out`, a gemm right after another joining its wgmma
/// group (a dual GEMM's two products of one k-tile): nothing touched a
/// register between the two, so neither the wait between them nor the
/// second's fence is needed, and the tensor cores do not drain there.
/// Only gemms whose A lies alike: a group with an `_RS` wgmma fences each
/// of those at its own A fragment (codegen), not the group's start, so an
/// `_SS` one before it would go unfenced.
pub(super) fn join_wgmma_groups(out: &mut Vec<Inst>, next: Vec<Inst>) {
    let a_in_registers = |i: &Inst| match &i.kind {
        InstKind::Wgmma { a, .. } => Some(matches!(a, WgmmaA::Registers(_))),
        _ => None,
    };
    let ends_a_group = match out.as_slice() {
        [.., w, c, x]
            if matches!(c.kind, InstKind::WgmmaCommit)
                && matches!(x.kind, InstKind::WgmmaWait(0)) =>
        {
            a_in_registers(w)
        }
        _ => None,
    };
    let starts_one = match next.as_slice() {
        [f, w, ..] if matches!(f.kind, InstKind::WgmmaFence) => a_in_registers(w),
        _ => None,
    };
    if ends_a_group.is_some() && ends_a_group == starts_one {
        out.truncate(out.len() - 2);
        out.extend(next.into_iter().skip(1));
    } else {
        out.extend(next);
    }
}

impl Lowerer<'_> {
    pub(super) fn wgmma(
        &mut self,
        mma: &TiledMma,
        [a, b, c]: [&View; 3],
        [kk, m, n]: [i64; 3],
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let ta = match mma.atom.shared_a {
            true => Some(self.smem_tiles(a, "A", mma.atom.m)?),
            false => None,
        };
        let tb = self.smem_tiles(b, "B", mma.atom.n)?;
        out.push(Inst::at(span, InstKind::WgmmaFence));
        for k in 0..kk {
            for mi in 0..m {
                for ni in 0..n {
                    let inst = InstKind::Wgmma {
                        atom: mma.atom.clone(),
                        a: match &ta {
                            Some(ta) => WgmmaA::Shared(self.smem_operand(ta, mi, k)?),
                            None => WgmmaA::Registers(self.fragment(a, mi, k)?),
                        },
                        b: self.smem_operand(&tb, ni, k)?,
                        c: self.fragment(c, mi, ni)?,
                    };
                    out.push(Inst::at(span, inst));
                }
            }
        }
        out.push(Inst::at(span, InstKind::WgmmaCommit));
        out.push(Inst::at(span, InstKind::WgmmaWait(0)));
        Ok(())
    }

    /// The descriptor of a ((rows, 16), I, J) shared view's tiles, or an
    /// error saying why its layout has none.
    fn smem_tiles<'v>(
        &self,
        v: &'v View,
        name: &'static str,
        rows: i64,
    ) -> Result<SmemTiles<'v>, Problem> {
        let Base::Shared(buffer) = v.base else {
            return Err(format!("a wgmma operand in {} memory", v.base.space()).into());
        };
        let tile = v.layout.mode(0).map_err(|e| e.to_string())?;
        let offsets: Option<Vec<i64>> = (0..rows * tilec_layout::gmma::K)
            .map(|x| tile.at(x).ok().and_then(|o| o.as_static()))
            .collect();
        let Some(offsets) = offsets else {
            return Err(Problem::Here(
                format!("wgmma's {name} tile is not static"),
                HELP,
            ));
        };
        let b = &self.k.shared[buffer];
        let at = |r: i64, k: i64| offsets[(r + rows * k) as usize] - offsets[0];
        let desc = SmemDescriptor::derive(rows, b.elem.bytes(), b.swizzle, &at).map_err(|why| {
            Problem::Here(format!("wgmma's {name} has no descriptor: {why}"), HELP)
        })?;
        let span = offsets.iter().fold((0, 0), |(l, h), &o| {
            (l.min(o - offsets[0]), h.max(o - offsets[0]))
        });
        Ok(SmemTiles {
            view: v,
            name,
            buffer,
            desc,
            span,
        })
    }

    /// Tile `(_, i, j)` as a wgmma operand: its start, checked (for every
    /// thread) to be one address per warpgroup, 16-byte aligned, in the
    /// first row of a swizzle repeat, and the tile inside its buffer.
    fn smem_operand(&mut self, t: &SmemTiles, i: i64, j: i64) -> Result<SmemOperand, Problem> {
        let v = t.view;
        let mut c = vec![Coord::from(0), Coord::from(i), Coord::from(j)];
        c.truncate(v.layout.rank());
        let at = v.layout.eval(&Coord::Tuple(c)).map_err(|e| e.to_string())?;
        let start = self.fix(&v.offset.add(&at));
        let elem = self.k.shared[t.buffer].elem;
        // The hardware's swizzle phase comes from the address.
        let row = t.desc.swizzle.row_bytes() / elem.bytes();
        let repeat = match self.k.shared[t.buffer].swizzle {
            Some(_) => 8 * row,
            None => row,
        };
        // The part that depends on the thread alone (a warpgroup's rows) is
        // checked for every thread; the rest must be whole repeats.
        let thread = Builtin::Thread.name();
        let (mut by_thread, mut moving) = (Int::Static(0), Int::Static(0));
        for term in start.terms() {
            let mut names = Vec::new();
            term.names(&mut names);
            match names.iter().all(|x| x == thread) {
                true => by_thread = by_thread.add(&term),
                false => moving = moving.add(&term),
            }
        }
        let of = |t: i64| by_thread.eval(&|name: &str| (name == thread).then_some(t));
        let placed = |t: i64| {
            // wgmma takes one descriptor from the whole warpgroup.
            of(t).is_some_and(|x| {
                x.rem_euclid(repeat) < row
                    && x % (16 / elem.bytes()) == 0
                    && of(t - t % 128) == Some(x)
            })
        };
        if moving.multiple_of(repeat, &|_| false).is_none() || !(0..self.block_threads).all(placed)
        {
            return Err(Problem::Here(
                format!(
                    "wgmma's {} starts at element {start} of its buffer: not one 16-byte aligned start per warpgroup in the first row of a {} swizzle repeat ({repeat} elements)",
                    t.name,
                    t.desc.swizzle.name()
                ),
                HELP,
            ));
        }
        // Every element it reads lies in the buffer (before the swizzle;
        // the buffer holds whole repeats).
        let len = self.k.shared[t.buffer].len;
        self.within_shared(&start, [t.span.0, t.span.1], len)?;
        let index = self.int(&start)?;
        Ok(SmemOperand {
            start: Addr {
                space: Space::Shared(t.buffer),
                index,
                guard: None,
            },
            desc: t.desc,
        })
    }
}
