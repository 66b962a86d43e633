//! Large element-wise statements of the guarded entries, rolled into a loop.
//!
//! In: an element-wise statement into a global tensor whose elements are
//! guarded one by one (a GEMM's `axpby` epilogue in a guarded entry). Out:
//! a loop over groups of its elements instead of every element unrolled.
//! Unrolled, bgemm_tn_sm80's `_guarded_vec` epilogue is 128 guarded loads
//! and 128 guarded stores a thread, each store a basic block of its own:
//! two thirds of that entry's back end, and the longest thread of its
//! build. Rolled, the loop's body is one group: the next group's global
//! operands loaded, then this group computed and stored, so that loads
//! overlap the stores as the full entry's unrolled groups do. Its register operands,
//! which only constant indices can read, go through shared memory: each
//! thread writes its elements into a row of its own before the loop (no
//! other thread reads them: no barrier but the one that hands the bytes
//! over) and reads one group back per iteration. The row's bytes are those
//! of buffers whose lifetimes have ended (a GEMM's stages); where they
//! would make the kernel's shared memory larger, the statement stays
//! unrolled ([`super::lower_with`]).

use super::elementwise::{At, STAGED_GROUP, atom, mode_sizes};
use super::{Lowerer, Problem, static_size};
use crate::check::program::{Base, Elem, Elementwise, Op, View, walk};
use crate::ir::shared::{Placement, hand_over};
use crate::ir::{Addr, Buffer, CopyAtom, Inst, InstKind, Space};
use crate::span::Span;
use tilec_layout::{Builtin, Coord, Int, IntTuple, Layout};

/// Fewer groups than this are left unrolled: the loop would save little.
const MIN_GROUPS: i64 = 2;

/// The name of a rolled statement's counter: no identifier of a `.tile`
/// file has a dot, so it hides no extent.
const COUNTER: &str = "rolled.group";

/// How a statement rolls: `group` elements an iteration, the first
/// elements in the colexicographic order of the target's leaves: the
/// leaves before `split` whole, `factor` values of leaf `split`; the loop
/// runs over the rest.
pub(super) struct Rolling {
    group: i64,
    /// The target's shape, its leaves' sizes, and its modes' (every
    /// operand's the same).
    shape: IntTuple,
    leaves: Vec<i64>,
    sizes: Vec<i64>,
    split: usize,
    factor: i64,
}

impl Rolling {
    /// How `shape` rolls into groups of at least [`STAGED_GROUP`]
    /// elements, at least [`MIN_GROUPS`] of them.
    fn of(shape: &IntTuple, sizes: Vec<i64>) -> Option<Rolling> {
        let leaves: Vec<i64> = shape
            .leaves()
            .iter()
            .map(Int::as_static)
            .collect::<Option<_>>()?;
        let n: i64 = leaves.iter().product();
        let mut below = 1;
        for (split, &s) in leaves.iter().enumerate() {
            if below * s >= STAGED_GROUP {
                let factor = (1..=s).find(|r| s % r == 0 && below * r >= STAGED_GROUP)?;
                let group = below * factor;
                // Two groups of each global operand live at once (loaded
                // ahead): no more than twice the unrolled group's registers.
                let fits = group <= 2 * STAGED_GROUP && n / group >= MIN_GROUPS;
                return fits.then(|| Rolling {
                    group,
                    shape: shape.clone(),
                    leaves,
                    sizes,
                    split,
                    factor,
                });
            }
            below *= s;
        }
        None
    }

    /// The coordinate of element `e` of group `g`, congruent with the
    /// target's shape: the leaves before the split from `e`, the split
    /// leaf from both, those after it from `g`.
    fn coord(&self, e: i64, g: &Int) -> Coord {
        let mut digits = Vec::with_capacity(self.leaves.len());
        let mut low = e;
        for &s in &self.leaves[..self.split] {
            digits.push(Int::Static(low % s));
            low /= s;
        }
        // The split leaf: `factor` values from `e`, the rest from `g`.
        let turns = self.leaves[self.split] / self.factor;
        let mut high = g.clone();
        let mut digit = Int::Static(low);
        if turns > 1 {
            digit = digit.add(&high.rem(&Int::Static(turns)).mul(&Int::Static(self.factor)));
            high = high.div(&Int::Static(turns));
        }
        digits.push(digit);
        let last = self.leaves.iter().rposition(|&s| s > 1).unwrap_or(0);
        for (k, &s) in self.leaves.iter().enumerate().skip(self.split + 1) {
            digits.push(match s {
                1 => Int::Static(0),
                _ if k == last => high.clone(),
                _ => {
                    let d = high.rem(&Int::Static(s));
                    high = high.div(&Int::Static(s));
                    d
                }
            });
        }
        nest(&self.shape, &mut digits.into_iter())
    }
}

/// `digits` (one a leaf, in order) as a coordinate of `shape`'s nesting.
fn nest(shape: &IntTuple, digits: &mut impl Iterator<Item = Int>) -> Coord {
    match shape {
        IntTuple::Int(_) => Coord::Int(digits.next().unwrap_or(Int::Static(0))),
        IntTuple::Tuple(modes) => Coord::Tuple(modes.iter().map(|m| nest(m, digits)).collect()),
    }
}

/// A register operand's rows: thread t's elements from `t * pitch` of
/// shared buffer `buffer`, a group of them read back into `registers`.
struct Row<'a> {
    view: &'a View,
    buffer: usize,
    pitch: i64,
    registers: View,
}

/// What every group of a rolled statement shares.
struct Group<'a> {
    dst: &'a View,
    value: &'a Elementwise,
    roll: &'a Rolling,
    globals: &'a [&'a View],
    rows: &'a [Row<'a>],
    span: Span,
}

impl super::Lowered {
    /// Whether the variant rolls a statement into a loop over groups.
    pub fn rolls(&self) -> bool {
        let mut any = false;
        crate::ir::for_each_inst(&self.ir.body, &mut |i| {
            any |= matches!(&i.kind, InstKind::Loop { name, .. } if name == COUNTER);
        });
        any
    }
}

impl Lowerer<'_> {
    /// How the element-wise statement `dst = value` of `n` elements rolls,
    /// if it does: in a guarded entry, at the kernel's top level, into a
    /// global tensor's guarded elements, from operands of the target's
    /// shape in global memory or registers (a reduction or a shuffle keeps
    /// it unrolled), at least [`MIN_GROUPS`] groups of 16 to 32 elements,
    /// its registers' rows no more bytes than the kernel's shared buffers.
    /// Not in a kernel of clusters with cp.async: the test of the grid's end
    /// that lowering wraps around its epilogue would hide the wait for every
    /// copy from placement.
    pub(super) fn rolling(&self, dst: &View, value: &Elementwise, n: i64) -> Option<Rolling> {
        let top = self.under.is_empty()
            && self.active.is_empty()
            && self.threads.is_empty()
            && self.unrolled.is_empty();
        if !(self.roll && top && self.variant.guarded() && !dst.coords.is_empty()) {
            return None;
        }
        let shape = dst.layout.shape();
        if !matches!(dst.base, Base::Param(_)) || !plain(value, shape) {
            return None;
        }
        if self.k.launch.cluster_dim().is_some() && has_async_copies(&self.k.body) {
            return None;
        }
        let sizes = mode_sizes(dst).ok()?;
        let mut operands = Vec::new();
        value.tensors(&mut operands);
        let mut row_bytes = 0;
        for v in &operands {
            if v.layout.size().as_static() == Some(1) {
                continue;
            }
            match v.base {
                Base::Param(_) => {}
                Base::Registers(_) => row_bytes += row_pitch(n, v.elem) * v.elem.bytes(),
                Base::Shared(_) => return None,
            }
            if v.layout.shape() != shape {
                return None;
            }
        }
        let shared: i64 = self.k.shared.iter().map(|b| b.len * b.elem.bytes()).sum();
        if row_bytes * self.block_threads > shared {
            return None;
        }
        Rolling::of(shape, sizes)
    }

    /// Lowers `dst = value` rolled as `roll` says: the register operands
    /// into rows of shared memory, then a loop whose iteration loads a
    /// group's global operands and its registers' row, computes the group
    /// and stores it, each global access guarded.
    pub(super) fn assign_rolled(
        &mut self,
        dst: &View,
        value: &Elementwise,
        roll: Rolling,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let n = static_size(dst)?;
        let mut operands = Vec::new();
        value.tensors_outside_reductions(&mut operands);
        operands.retain(|v| v.layout.size().as_static() != Some(1));
        // A cp.async in flight may still land in the bytes the rows take.
        if has_async_copies(&self.k.body) {
            out.push(Inst::at(span, InstKind::AsyncWait(0)));
        }
        let thread = Int::var(Builtin::Thread.name());
        // Each register operand's rows: thread t's elements from t * pitch.
        let mut rows = Vec::new();
        for v in operands
            .iter()
            .filter(|v| matches!(v.base, Base::Registers(_)))
        {
            let pitch = row_pitch(n, v.elem);
            let buffer = self.k.shared.len() + self.extra_shared.len();
            self.extra_shared.push((v.elem, pitch * self.block_threads));
            let width = vector(v.elem, n);
            for i in (0..n).step_by(width as usize) {
                let at = thread.mul(&Int::Static(pitch)).add(&Int::Static(i));
                if self.consecutive_slots(v, i, width)? {
                    let src = self.element(v, &Coord::from(i), width)?;
                    let dst = self.shared_addr(buffer, &at)?;
                    out.push(copy(atom(v.elem, width), src, dst, span));
                    continue;
                }
                for k in 0..width {
                    let src = self.element(v, &Coord::from(i + k), 1)?;
                    let dst = self.shared_addr(buffer, &at.add(&Int::Static(k)))?;
                    out.push(copy(atom(v.elem, 1), src, dst, span));
                }
            }
            rows.push(Row {
                view: v,
                buffer,
                pitch,
                registers: self.group_registers(v.elem, roll.group),
            });
        }
        // Iteration g stores group g and loads group g + 1's global
        // operands first, so that their loads overlap its stores (which
        // may alias them, for all ptxas knows); the last group follows
        // the loop.
        let last = n / roll.group - 1;
        let globals: Vec<&View> = operands
            .iter()
            .copied()
            .filter(|v| matches!(v.base, Base::Param(_)))
            .collect();
        let cur: Vec<View> = globals
            .iter()
            .map(|v| self.group_registers(v.elem, roll.group))
            .collect();
        let next: Vec<View> = globals
            .iter()
            .map(|v| self.group_registers(v.elem, roll.group))
            .collect();
        let group = Group {
            dst,
            value,
            roll: &roll,
            globals: &globals,
            rows: &rows,
            span,
        };
        self.load_globals(&group, &cur, &Int::Static(0), out)?;
        let (id, start_id, end_id) =
            self.open_loop(COUNTER, &Int::Static(0), &Int::Static(last))?;
        let counter = Int::var(COUNTER);
        let mut body = Vec::new();
        let made = self
            .load_globals(&group, &next, &counter.add(&Int::Static(1)), &mut body)
            .and_then(|()| self.compute_group(&group, &cur, &counter, &mut body))
            .and_then(|()| {
                for (c, x) in cur.iter().zip(&next) {
                    for e in 0..roll.group {
                        let src = self.element(x, &Coord::from(e), 1)?;
                        let dst = self.element(c, &Coord::from(e), 1)?;
                        body.push(copy(atom(c.elem, 1), src, dst, span));
                    }
                }
                Ok(())
            })
            .and_then(|()| self.with_bound_checks(std::mem::take(&mut body)))
            .map(|checked| body = checked);
        self.active.pop();
        made?;
        out.push(Inst::at(
            span,
            InstKind::Loop {
                id,
                name: COUNTER.to_string(),
                start: start_id,
                end: end_id,
                body,
            },
        ));
        self.compute_group(&group, &cur, &Int::Static(last), out)
    }

    /// Group `g` of the statement's global operands into `registers`
    /// (one array per operand), each access guarded, as wide as unrolled.
    fn load_globals(
        &mut self,
        group: &Group,
        registers: &[View],
        g: &Int,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let n = static_size(group.dst)?;
        let size = group.roll.group;
        for (v, reg) in group.globals.iter().zip(registers) {
            let compact = compact_view(v.elem, group.dst.layout.shape());
            let width = self.group_width(v, &compact, n, size);
            for e in (0..size).step_by(width as usize) {
                let src = self.element(v, &group.roll.coord(e, g), width)?;
                let dst = self.element(reg, &Coord::from(e), width)?;
                out.push(copy(atom(v.elem, width), src, dst, group.span));
            }
        }
        Ok(())
    }

    /// Group `g` of the statement: its registers' row read back, its
    /// elements computed from that and the global operands in `globals`
    /// (loaded by [`Self::load_globals`]), and stored.
    fn compute_group(
        &mut self,
        group: &Group,
        globals: &[View],
        g: &Int,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let (dst, span) = (group.dst, group.span);
        let n = static_size(dst)?;
        let size = group.roll.group;
        let thread = Int::var(Builtin::Thread.name());
        let mut temps: Vec<(&View, View)> = Vec::new();
        for row in group.rows {
            let width = vector(row.view.elem, size);
            for e in (0..size).step_by(width as usize) {
                let at = thread
                    .mul(&Int::Static(row.pitch))
                    .add(&g.mul(&Int::Static(size)))
                    .add(&Int::Static(e));
                let src = self.shared_addr(row.buffer, &at)?;
                let to = self.element(&row.registers, &Coord::from(e), width)?;
                out.push(copy(atom(row.view.elem, width), src, to, span));
            }
            temps.push((row.view, row.registers.clone()));
        }
        temps.extend(group.globals.iter().copied().zip(globals.iter().cloned()));
        let result = self.group_registers(dst.elem, size);
        for e in 0..size {
            let at = At {
                coord: group.roll.coord(e, g),
                slot: e,
            };
            let tree = self.tree(group.value, &at, &group.roll.sizes, &temps)?;
            let tree = match dst.elem {
                Elem::I32 => tree,
                _ => super::elementwise::contract(tree),
            };
            let into = self.element(&result, &Coord::from(e), 1)?;
            out.push(Inst::at(
                span,
                InstKind::Compute {
                    elem: dst.elem,
                    value: tree,
                    dst: into,
                },
            ));
        }
        let compact = compact_view(dst.elem, dst.layout.shape());
        let width = self.group_width(&compact, dst, n, size);
        for e in (0..size).step_by(width as usize) {
            let src = self.element(&result, &Coord::from(e), width)?;
            let to = self.element(dst, &group.roll.coord(e, g), width)?;
            out.push(copy(atom(dst.elem, width), src, to, span));
        }
        Ok(())
    }

    /// The width of `src -> dst`'s copies as the unrolled statement of `n`
    /// elements would have it, where it divides a group of `size`; else 1.
    fn group_width(&mut self, src: &View, dst: &View, n: i64, size: i64) -> i64 {
        let width = self.vector_width(src, dst, n, src.elem, false);
        if size % width == 0 { width } else { 1 }
    }

    /// A register array of `len` elements of its own, as a compact view.
    fn group_registers(&mut self, elem: Elem, len: i64) -> View {
        View {
            base: Base::Registers(self.add_registers(elem, len)),
            ..compact_view(elem, &IntTuple::from(len))
        }
    }

    /// Whether elements `i .. i + width` of register view `v` are
    /// consecutive slots of its array.
    fn consecutive_slots(&mut self, v: &View, i: i64, width: i64) -> Result<bool, Problem> {
        let first = self.element(v, &Coord::from(i), 1)?.index;
        let first = self.constant(first);
        for k in 1..width {
            let next = self.element(v, &Coord::from(i + k), 1)?.index;
            if first.is_none() || self.constant(next) != first.map(|c| c + k) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Element `at` of the lowering's shared buffer `buffer`.
    fn shared_addr(&mut self, buffer: usize, at: &Int) -> Result<Addr, Problem> {
        Ok(Addr {
            space: Space::Shared(buffer),
            index: self.int(at)?,
            guard: None,
        })
    }

    /// The value of a constant integer of the table.
    fn constant(&self, id: usize) -> Option<i64> {
        match self.ints[id].def {
            crate::ir::IntDef::Const(c) => Some(c),
            _ => None,
        }
    }
}

/// Whether the rows of rolled statements (the buffers of `shared` past the
/// kernel's own `own`) make its shared memory larger than it is without
/// them: `placed` is `body` placed with them.
pub(super) fn rows_grow(
    shared: &[Buffer],
    own: usize,
    placed: &Placement,
    body: Vec<Inst>,
) -> bool {
    let mut without = shared.to_vec();
    without[own..].iter_mut().for_each(|b| b.len = 0);
    hand_over(&without, body).is_some_and(|alone| placed.total > alone.total)
}

/// Whether `e` reads each operand at the target's element only (no
/// reduction folds a mode, no shuffle crosses lanes), and asks `inside()`
/// and `coord()` of tensors of the target's `shape` (or of one element): a group's
/// coordinates are congruent with that shape.
fn plain(e: &Elementwise, shape: &IntTuple) -> bool {
    let mut ok = match e {
        Elementwise::Reduce { .. } | Elementwise::Shuffle(..) => false,
        Elementwise::Inside(v) | Elementwise::Coord(v, _) => {
            v.layout.size().as_static() == Some(1) || v.layout.shape() == shape
        }
        _ => true,
    };
    e.for_each_operand(&mut |x| ok &= plain(x, shape));
    ok
}

/// Elements of a thread's row of `n` elements: whole 128-byte lines and 16
/// bytes more, so that the 16-byte vectors of eight neighbouring threads
/// (one phase of a shared-memory access) fall in eight different bank groups.
fn row_pitch(n: i64, elem: Elem) -> i64 {
    ((n * elem.bytes() + 127) / 128 * 128 + 16) / elem.bytes()
}

/// Elements of a 16-byte vector of `elem`, where `n` elements hold whole ones.
fn vector(elem: Elem, n: i64) -> i64 {
    let w = 16 / elem.bytes();
    if n % w == 0 { w } else { 1 }
}

fn copy(atom: CopyAtom, src: Addr, dst: Addr, span: Span) -> Inst {
    Inst::at(span, InstKind::Copy { atom, src, dst })
}

/// A compact register view of `shape`.
pub(super) fn compact_view(elem: Elem, shape: &IntTuple) -> View {
    View {
        base: Base::Registers(0),
        elem,
        layout: Layout::col_major(shape),
        offset: Int::Static(0),
        coords: Vec::new(),
    }
}

/// Whether the kernel issues any `cp.async`.
fn has_async_copies(body: &[crate::check::program::Stmt]) -> bool {
    let mut any = false;
    walk(body, &mut |s| {
        any |= matches!(
            s.op,
            Op::Copy {
                asynchronous: true,
                ..
            }
        );
    });
    any
}
