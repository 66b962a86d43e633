//! Element-wise statements (`dst = value`, and `axpby`): per element of
//! the target, one [`InstKind::Compute`] over the same elements of the
//! operands, a product feeding a sum contracted to an fma.
//!
//! Into a global tensor whose elements are provably distinct, it is staged:
//! a group's global operands loaded into registers, then their arithmetic,
//! then their stores (in the full entry, the next groups' loads before
//! them). Element by element, each load would wait for the
//! store before it (which may alias, for all LLVM knows): 128 memory waits
//! a thread in a GEMM's epilogue, which held every GEMM to 0.6-0.75 of
//! cuBLAS.
//!
//! Into a 16-bit shared tile in an MMA fragment's layout (an epilogue's
//! tile of C), on sm_90, the target's own elements come in by ldmatrix and
//! the results go out by stmatrix ([`Lowerer::assign_by_matrices`]).

use super::rolled::compact_view;
use super::tensor_core::{MatrixPlan, Rejected};
use super::{Lowerer, Problem, scalar, static_size};
use crate::arith::{Binary, Unary};
use crate::check::program::{Base, Elem, Elementwise, ParamKind, Scalar, View};
use crate::ir::{Addr, Arith, CopyAtom, Inst, InstKind, IntDef, ScalarRef, Space};
use crate::span::Span;
use tilec_layout::int::Op as IntOp;
use tilec_layout::{Coord, Int};

/// The elements of a staged statement loaded together: their loads
/// overlap, and what a group holds (values, addresses, guards) fits in
/// registers (all 128 of a wgmma epilogue at once spilled in its guarded
/// entry).
pub(super) const STAGED_GROUP: i64 = 16;

/// Groups whose loads are issued ahead of a group's stores, in the full
/// entry: their loads overlap the stores' (measured on the H200: a bf16
/// wgmma GEMM's epilogue, 0.73 -> 0.87 of cuBLAS at 4096 x 4096 x 1024).
/// One group ahead and two measured the same; two, because a slower
/// memory (a C read from HBM rather than L2) leaves more latency to hide,
/// and ptxas spills in neither full entry.
const GROUPS_AHEAD: usize = 2;

/// The element of an element-wise statement a tree reads: at `coord` in
/// its tensors, at `slot` in the register arrays its operands were loaded
/// into. Unrolled, both are the element's 1-D index (a reduction folds
/// over those of its operand); in a rolled statement ([`super::rolled`])
/// `coord` names the loop's counter and `slot` is the element's place in
/// its group.
pub(super) struct At {
    pub coord: Coord,
    pub slot: i64,
}

impl At {
    pub fn element(i: i64) -> At {
        At {
            coord: Coord::from(i),
            slot: i,
        }
    }
}

impl Lowerer<'_> {
    pub(super) fn assign(
        &mut self,
        dst: &View,
        value: &Elementwise,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        // A global target whose elements lie in another order than its
        // index (a row-major tile in a column-major shape) is walked in its
        // own order, so that its stores are vectors.
        if let Some((dst, value)) = super::order::in_memory_order(dst, value) {
            return self.assign(&dst, &value, span, out);
        }
        let n = static_size(dst)?;
        // Counted before `distinct_elements` walks the target's elements
        // (2^31 of them a thread once ran for minutes before the limit).
        self.spend(n.saturating_mul(value.terms()).saturating_add(n))?;
        let mut operands = Vec::new();
        value.tensors(&mut operands);
        // Staged only where it computes the same: the target's elements
        // distinct, and every operand in its tensor the target's element
        // itself (read before any store) or in another tensor.
        let staged = matches!(dst.base, Base::Param(p) if distinct_elements(dst, &self.k.params[p].kind))
            && operands
                .iter()
                .all(|v| v.base != dst.base || same_elements(v, dst));
        if staged {
            self.spend(n)?;
        }
        let mut outside = Vec::new();
        value.tensors_outside_reductions(&mut outside);
        if self.assign_by_matrices(dst, value, n, span, out)? {
            return Ok(());
        }
        if staged && let Some(roll) = self.rolling(dst, value, n) {
            return self.assign_rolled(dst, value, roll, span, out);
        }
        // Register arrays of the target's shape, compact.
        let mut temp = |elem: Elem| View {
            base: Base::Registers(self.add_registers(elem, n)),
            ..compact_view(elem, dst.layout.shape())
        };
        let result = staged.then(|| temp(dst.elem));
        // The global operands of the target's elements (one element apart),
        // loaded ahead into registers of their own.
        let temps: Vec<(&View, View)> = outside
            .into_iter()
            .filter(|v| staged && matches!(v.base, Base::Param(_)))
            .filter(|v| v.layout.size().as_static() != Some(1))
            .map(|v| (v, temp(v.elem)))
            .collect();
        // Loads and stores of the staged elements, as vectors where both
        // sides allow without a new launch condition (one would keep the
        // whole launch off the full-tile entry for the epilogue's sake).
        let mut loads = Vec::new();
        for (v, reg) in &temps {
            let width = self.vector_width(v, reg, n, v.elem, false);
            self.note_narrower_than_a_copy((v, reg), n, v.elem, width, span);
            loads.push(atom(v.elem, width));
        }
        let store = result.as_ref().map(|reg| {
            let width = self.vector_width(reg, dst, n, dst.elem, false);
            self.note_narrower_than_a_copy((reg, dst), n, dst.elem, width, span);
            (reg, atom(dst.elem, width))
        });
        let sizes: Vec<i64> = mode_sizes(dst)?;
        let integers = dst.elem == Elem::I32;
        let groups: Vec<std::ops::Range<i64>> = (0..n)
            .step_by(STAGED_GROUP as usize)
            .map(|g| g..(g + STAGED_GROUP).min(n))
            .collect();
        // In the full entry the next groups' loads are issued before this
        // group's stores; the guarded entries, whose guards take registers
        // too, would spill.
        let ahead = !self.variant.guarded();
        let load_group = |l: &mut Self, g: &std::ops::Range<i64>, out: &mut Vec<Inst>| {
            for ((v, reg), load) in temps.iter().zip(&loads) {
                l.copies(v, reg, *load, g.clone(), span, out)?;
            }
            Ok::<(), Problem>(())
        };
        let depth = if ahead { GROUPS_AHEAD } else { 0 };
        for g in groups.iter().take(depth) {
            load_group(self, g, out)?;
        }
        let mut trees = Vec::with_capacity(n as usize);
        for i in 0..n {
            let tree = self.tree(value, &At::element(i), &sizes, &temps)?;
            trees.push(if integers { tree } else { contract(tree) });
        }
        self.note_sum_order(value, integers, span);
        let target = space_of(dst.base);
        self.hoist_common(&mut trees, target, integers, span, out)?;
        let mut trees = trees.into_iter();
        for (at, g) in groups.iter().enumerate() {
            match groups.get(at + depth) {
                Some(next) if ahead => load_group(self, next, out)?,
                _ if !ahead => load_group(self, g, out)?,
                _ => {}
            }
            let (group, end) = (g.start, g.end);
            for i in group..end {
                let tree = trees.next().expect("a tree per element");
                let into = match &store {
                    Some((reg, _)) => self.element(reg, &Coord::from(i), 1)?,
                    None => self.element(dst, &Coord::from(i), 1)?,
                };
                out.push(Inst::at(
                    span,
                    InstKind::Compute {
                        elem: dst.elem,
                        value: tree,
                        dst: into,
                    },
                ));
            }
            if let Some((reg, st)) = store {
                self.copies(reg, dst, st, group..end, span, out)?;
            }
        }
        Ok(())
    }

    /// `dst = value` where a 16-bit shared tile laid out as an MMA's
    /// fragments (an epilogue's tile of C) is involved, on sm_90: eight
    /// elements a lane an instruction where the per-element form moves one
    /// (a wgmma epilogue of 128 x 256: 256 shared accesses a thread, about
    /// a tenth of a 4096^3 GEMM's time on the H200). Into such a tile, the
    /// results go out by stmatrix and the target's own elements that the
    /// value reads come in by ldmatrix; into registers, a tile the value
    /// reads comes in by ldmatrix (`x = alpha * acc + beta * tCsC`, then
    /// `tCsC = f(x)`, moves as much as the one statement). `false`, having
    /// emitted nothing, where the statement or the layouts do not allow it.
    fn assign_by_matrices(
        &mut self,
        dst: &View,
        value: &Elementwise,
        n: i64,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<bool, Problem> {
        // Warp instructions, on whole warps; each element reads no other
        // element of the target than its own (read before any store).
        let mut operands = Vec::new();
        value.tensors(&mut operands);
        if !self.sm90
            || !self.warps_agree()
            || operands
                .iter()
                .any(|v| v.base == dst.base && !same_elements(v, dst))
        {
            return Ok(false);
        }
        let arrays = self.extra_registers.len();
        // Register arrays of the target's shape, compact.
        let view = |array: usize, elem: Elem| View {
            base: Base::Registers(array),
            ..compact_view(elem, dst.layout.shape())
        };
        // The stores (and the registers the results go to), the loads, and
        // the operand whose elements the loads bring.
        let (stores, into, source, load) = match dst.base {
            Base::Shared(_) if dst.elem.bytes() == 2 => {
                let result = view(self.add_registers(dst.elem, n), dst.elem);
                let store = match self.matrix_plan(dst, &result, n, true, None) {
                    Ok(plan) => plan,
                    Err(why) => {
                        self.extra_registers.truncate(arrays);
                        self.note(span, format!("element by element, not stmatrix: {why}"));
                        return Ok(false);
                    }
                };
                // The target's own elements come in by the same rows and
                // pairs (which the loads two groups ahead of the stores
                // rely on).
                let (source, load) = operands
                    .iter()
                    .find(|v| v.base == dst.base)
                    .map(|&v| {
                        let array = self.add_registers(dst.elem, n);
                        ((v, view(array, dst.elem)), store.reversed(array))
                    })
                    .unzip();
                (Some(store), result, source, load)
            }
            Base::Registers(_) => {
                // A tile read inside a reduction folds element by element.
                let mut outside = Vec::new();
                value.tensors_outside_reductions(&mut outside);
                let tiles: Vec<&View> = outside
                    .into_iter()
                    .filter(|v| {
                        matches!(v.base, Base::Shared(_))
                            && v.elem.bytes() == 2
                            && v.layout.shape() == dst.layout.shape()
                    })
                    .collect();
                // The first that plans; a note where one was read but none did.
                let (mut found, mut why) = (None, None);
                for &v in &tiles {
                    let array = self.add_registers(v.elem, n);
                    let temp = view(array, v.elem);
                    match self.matrix_plan(v, &temp, n, false, None) {
                        Ok(plan) => {
                            found = Some((v, plan, temp));
                            break;
                        }
                        Err(w) => {
                            self.extra_registers.truncate(arrays);
                            why = Some(w);
                        }
                    }
                }
                let Some((v, load, temp)) = found else {
                    if let Some(why) = why {
                        self.note(span, format!("element by element, not ldmatrix: {why}"));
                    }
                    return Ok(false);
                };
                // One tile a statement goes by ldmatrix (its loads staged
                // ahead of the arithmetic); the others element by element.
                let mut others: Vec<&View> = Vec::new();
                let kept = self.extra_registers.len();
                for &t in &tiles {
                    if t != v && !others.contains(&t) {
                        let array = self.add_registers(t.elem, n);
                        if self
                            .matrix_plan(t, &view(array, t.elem), n, false, None)
                            .is_ok()
                        {
                            others.push(t);
                        }
                        self.extra_registers.truncate(kept);
                    }
                }
                let others = others.len();
                if others > 0 {
                    self.note(
                        span,
                        format!(
                            "element by element, not ldmatrix: {others} more shared tile(s) of fragments read here; a statement reads one by ldmatrix, so read each other into registers by a statement of its own first (`tR = tCsR;`)"
                        ),
                    );
                }
                (None, dst.clone(), Some((v, temp)), Some(load))
            }
            _ => return Ok(false),
        };
        // The groups of register pairs: each group's loads go two groups
        // ahead of its arithmetic, its stores right after it.
        let Some(pairs) = stores.as_ref().or(load.as_ref()) else {
            self.extra_registers.truncate(arrays);
            return Ok(false);
        };
        let per_group = (STAGED_GROUP / 2) as usize;
        let groups: Vec<std::ops::Range<usize>> = (0..pairs.pairs())
            .step_by(per_group)
            .map(|g| g..(g + per_group).min(pairs.pairs()))
            .collect();
        // Every group's instructions, made before any is emitted: a row
        // address that is not linear in the lane (rare: the plan has
        // placed every element) leaves the statement element by element.
        let made =
            |l: &mut Self, plan: Option<&MatrixPlan>| -> Result<Option<Vec<Vec<Inst>>>, Problem> {
                let Some(plan) = plan else {
                    return Ok(Some(vec![Vec::new(); groups.len()]));
                };
                let mut each = Vec::with_capacity(groups.len());
                for g in &groups {
                    match l.emit_matrix(plan, g.clone(), span) {
                        Ok(insts) => each.push(insts),
                        Err(Rejected::Problem(p)) => return Err(p),
                        Err(Rejected::Layouts(_)) => return Ok(None),
                    }
                }
                Ok(Some(each))
            };
        let (Some(stores), Some(mut loads)) =
            (made(self, stores.as_ref())?, made(self, load.as_ref())?)
        else {
            self.extra_registers.truncate(arrays);
            let why = "the rows' addresses are not linear in the lane";
            let name = if matches!(dst.base, Base::Shared(_)) {
                "stmatrix"
            } else {
                "ldmatrix"
            };
            self.note(span, format!("element by element, not {name}: {why}"));
            return Ok(false);
        };
        let temps: Vec<(&View, View)> = match &source {
            Some((v, temp)) => operands
                .iter()
                .filter(|o| o.base == v.base && same_elements(o, v))
                .map(|o| (*o, temp.clone()))
                .collect(),
            None => Vec::new(),
        };
        let sizes = mode_sizes(dst)?;
        let integers = dst.elem == Elem::I32;
        let mut trees = Vec::with_capacity(n as usize);
        for i in 0..n {
            let tree = self.tree(value, &At::element(i), &sizes, &temps)?;
            trees.push(if integers { tree } else { contract(tree) });
        }
        self.note_sum_order(value, integers, span);
        self.hoist_common(&mut trees, space_of(dst.base), integers, span, out)?;
        let mut trees: Vec<Option<Arith>> = trees.into_iter().map(Some).collect();
        for group in loads.iter_mut().take(GROUPS_AHEAD) {
            out.append(group);
        }
        for (at, (g, stores)) in groups.iter().zip(stores).enumerate() {
            if let Some(next) = loads.get_mut(at + GROUPS_AHEAD) {
                out.append(next);
            }
            for p in g.clone() {
                for i in pairs.pair_elements(p) {
                    let value = trees[i as usize].take().expect("an element in one pair");
                    let into = self.element(&into, &Coord::from(i), 1)?;
                    out.push(Inst::at(
                        span,
                        InstKind::Compute {
                            elem: dst.elem,
                            value,
                            dst: into,
                        },
                    ));
                }
            }
            out.extend(stores);
        }
        Ok(true)
    }

    /// A register array of `len` elements that lowering adds (a staged
    /// statement's operands, its common values, a rolled group's): its
    /// index among the kernel's arrays.
    pub(super) fn add_registers(&mut self, elem: Elem, len: i64) -> usize {
        self.extra_registers.push((elem, len));
        self.k.registers.len() + self.extra_registers.len() - 1
    }

    /// Computes once, into a register of its own, each largest subtree
    /// that is the same in every element's tree (softmax's `exp(ml - m) * s`
    /// scaling a chunk of a row), and reads it there in each: LLVM merged
    /// such copies only where no guarded store lay between them, after
    /// paying for every copy (31 exponentials more in softmax's guarded
    /// entry than in its full one). Subtrees that read the target's own
    /// tensor stay (an element's store may change what the next one reads)
    /// and so do shuffles (every lane computes a shuffle's operand).
    fn hoist_common(
        &mut self,
        trees: &mut [Arith],
        target: Space,
        integers: bool,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        if trees.len() < 2 {
            return Ok(());
        }
        let elem = if integers { Elem::I32 } else { Elem::F32 };
        // The array's index, known before its length; dropped if empty.
        let array = self.add_registers(elem, 0);
        let mut common = Vec::new();
        let nodes: Vec<&mut Arith> = trees.iter_mut().collect();
        self.hoist_in(nodes, target, (array, elem), &mut common)?;
        let added = self
            .extra_registers
            .last_mut()
            .expect("the array just added");
        match common.len() {
            0 => {
                self.extra_registers.pop();
                return Ok(());
            }
            len => added.1 = len as i64,
        }
        for (i, value) in common.into_iter().enumerate() {
            let dst = Addr {
                space: Space::Registers(array),
                index: self.int(&Int::Static(i as i64))?,
                guard: None,
            };
            out.push(Inst::at(span, InstKind::Compute { elem, value, dst }));
        }
        Ok(())
    }

    /// The integer an [`integral`] expression is at element `at`.
    fn integer(&mut self, e: &Elementwise, at: &At) -> Result<crate::ir::IntId, Problem> {
        Ok(match e {
            Elementwise::Int(v) => {
                let v = self.fix(v);
                self.int(&v)?
            }
            Elementwise::Coord(v, m) => {
                let c = match v.layout.size().as_static() {
                    Some(1) => Coord::from(0),
                    _ => at.coord.clone(),
                };
                self.coordinate(v, &c, *m)?
            }
            Elementwise::Scalar(Scalar::Whole(v)) => self.int(&Int::Static(*v))?,
            Elementwise::Quotient {
                rem,
                value,
                divisor,
            } => {
                let x = self.integer(value, at)?;
                let d = self.fix(divisor);
                let d = self.int(&d)?;
                let op = if *rem { IntOp::Mod } else { IntOp::Div };
                self.def(IntDef::Bin(op, x, d))
            }
            Elementwise::Unary(Unary::Neg, x) => {
                let (zero, x) = (self.int(&Int::Static(0))?, self.integer(x, at)?);
                self.def(IntDef::Bin(IntOp::Sub, zero, x))
            }
            // `abs(x)` is `max(x, -x)`, as for integers outside statements.
            Elementwise::Unary(Unary::Abs, x) => {
                let (zero, x) = (self.int(&Int::Static(0))?, self.integer(x, at)?);
                let minus = self.def(IntDef::Bin(IntOp::Sub, zero, x));
                self.def(IntDef::Bin(IntOp::Max, x, minus))
            }
            Elementwise::Binary(op, a, b) => {
                let (x, y) = (self.integer(a, at)?, self.integer(b, at)?);
                let int = match op {
                    Binary::Add => IntDef::Bin(IntOp::Add, x, y),
                    Binary::Sub => IntDef::Bin(IntOp::Sub, x, y),
                    Binary::Mul => IntDef::Bin(IntOp::Mul, x, y),
                    Binary::Min => IntDef::Bin(IntOp::Min, x, y),
                    Binary::Max => IntDef::Bin(IntOp::Max, x, y),
                    _ => IntDef::Compare(*op, x, y),
                };
                self.def(int)
            }
            _ => {
                return Err(String::from(
                    "an element-wise integer of another form; this is a bug in tilec",
                )
                .into());
            }
        })
    }

    /// The IR of the element `at` of `e`; an operand with a register array
    /// of its own in `temps` (loaded ahead) is read there.
    pub(super) fn tree(
        &mut self,
        e: &Elementwise,
        at: &At,
        sizes: &[i64],
        temps: &[(&View, View)],
    ) -> Result<Arith, Problem> {
        let sub = |s: &mut Self, x: &Elementwise| s.tree(x, at, sizes, temps);
        // An operand of one element is that element for every element.
        let coord = |v: &View| match v.layout.size().as_static() {
            Some(1) => Coord::from(0),
            _ => at.coord.clone(),
        };
        Ok(match e {
            Elementwise::Tensor(v) => match temps.iter().find(|(p, _)| std::ptr::eq(*p, v)) {
                Some((_, reg)) => Arith::Load(self.element(reg, &Coord::from(at.slot), 1)?, v.elem),
                None => Arith::Load(self.element(v, &coord(v), 1)?, v.elem),
            },
            Elementwise::Scalar(s) => Arith::Scalar(scalar(s)),
            // A full tile's elements are all inside: no guard, 1.
            Elementwise::Inside(v) => match self.element(v, &coord(v), 1)?.guard {
                Some(g) => Arith::Inside(g),
                None => Arith::Scalar(ScalarRef::Literal(1.0)),
            },
            Elementwise::Int(v) => {
                let v = self.fix(v);
                Arith::Int(self.int(&v)?)
            }
            // Coordinates, and arithmetic and comparisons of integers
            // (coordinates, run-time values, whole numbers) are integer
            // ones: exact where f32 rounds past 2^24.
            Elementwise::Coord(..) | Elementwise::Quotient { .. } => {
                Arith::Int(self.integer(e, at)?)
            }
            Elementwise::Binary(..) | Elementwise::Unary(..) if e.integral() => {
                Arith::Int(self.integer(e, at)?)
            }
            Elementwise::Unary(op, x) => Arith::Unary(*op, Box::new(sub(self, x)?)),
            Elementwise::Convert(to, x) => Arith::Convert(*to, Box::new(sub(self, x)?)),
            Elementwise::Binary(op, a, b) => {
                let a = sub(self, a)?;
                Arith::Binary(*op, Box::new(a), Box::new(sub(self, b)?))
            }
            Elementwise::Shuffle(x, mask) => Arith::Shuffle(Box::new(sub(self, x)?), *mask),
            Elementwise::Select(c, a, b) => {
                let c = sub(self, c)?;
                let a = sub(self, a)?;
                Arith::Select(Box::new(c), Box::new(a), Box::new(sub(self, b)?))
            }
            Elementwise::Reduce {
                op,
                mode,
                modes,
                value,
            } => {
                // Element i's coordinates (modes of one element aside), in
                // the operand's other modes, with each index of the folded
                // mode put in at `mode`: 1-D indices of the operand.
                let mut digits = Vec::with_capacity(sizes.len());
                let mut rest = at.slot;
                for &s in sizes {
                    if s != 1 {
                        digits.push(rest % s);
                    }
                    rest /= s;
                }
                let mut terms = Vec::with_capacity(modes[*mode] as usize);
                for j in 0..modes[*mode] {
                    let mut next = digits.iter();
                    let (mut index, mut stride) = (0, 1);
                    for (p, &s) in modes.iter().enumerate() {
                        let d = match p {
                            _ if p == *mode => j,
                            _ if s == 1 => 0,
                            _ => *next.next().unwrap_or(&0),
                        };
                        index += d * stride;
                        stride *= s;
                    }
                    terms.push(self.tree(value, &At::element(index), modes, &[])?);
                }
                // Pairwise: a sum's rounding error grows with log(extent).
                while terms.len() > 1 {
                    let mut next = Vec::with_capacity(terms.len().div_ceil(2));
                    let mut it = terms.into_iter();
                    while let Some(a) = it.next() {
                        next.push(match it.next() {
                            Some(b) => Arith::Binary(*op, Box::new(a), Box::new(b)),
                            None => a,
                        });
                    }
                    terms = next;
                }
                terms.pop().expect("a mode of at least one element")
            }
        })
    }

    /// [`Lowerer::hoist_common`] over the same place in every element's
    /// tree: the whole if it is the same everywhere and may move (into
    /// `common`, read back from register array `array`), else each operand.
    fn hoist_in<'a>(
        &mut self,
        nodes: Vec<&'a mut Arith>,
        target: Space,
        (array, elem): (usize, Elem),
        common: &mut Vec<Arith>,
    ) -> Result<(), Problem> {
        let first = &*nodes[0];
        let leaf = first.operands() == 0;
        if !leaf && nodes.iter().all(|x| **x == *first) && movable(first, target) {
            common.push(first.clone());
            let at = Addr {
                space: Space::Registers(array),
                index: self.int(&Int::Static(common.len() as i64 - 1))?,
                guard: None,
            };
            for x in nodes {
                *x = Arith::Load(at, elem);
            }
            return Ok(());
        }
        // The trees differ only at their leaves (one statement's elements),
        // but nothing is assumed: operands are matched only between nodes
        // of one kind. Below a conversion in an integer statement the
        // computation is in f32, which `array` (i32) would not hold.
        let kind = std::mem::discriminant(first);
        let arity = first.operands();
        if leaf
            || (elem == Elem::I32 && matches!(first, Arith::Convert(..)))
            || nodes
                .iter()
                .any(|x| std::mem::discriminant(&**x) != kind || x.operands() != arity)
        {
            return Ok(());
        }
        let mut at: Vec<Vec<&'a mut Arith>> = (0..arity)
            .map(|_| Vec::with_capacity(nodes.len()))
            .collect();
        for x in nodes {
            for (j, operand) in x.operands_mut().into_iter().enumerate() {
                at[j].push(operand);
            }
        }
        for operands in at {
            self.hoist_in(operands, target, (array, elem), common)?;
        }
        Ok(())
    }
}

/// Whether a subtree common to every element may be computed once before
/// them: it reads nothing of the target's tensor and shuffles nothing.
fn movable(tree: &Arith, target: Space) -> bool {
    let mut loads = Vec::new();
    tree.loads(&mut loads);
    !tree.shuffles() && loads.iter().all(|a| a.space != target)
}

/// Where a view's elements live, in the IR's terms.
fn space_of(base: Base) -> Space {
    match base {
        Base::Param(p) => Space::Global(p),
        Base::Shared(s) => Space::Shared(s),
        Base::Registers(r) => Space::Registers(r),
    }
}

/// The copy atom of `width` elements: one, or a vector.
pub(super) fn atom(elem: Elem, width: i64) -> CopyAtom {
    match width {
        1 => CopyAtom::Scalar(elem),
        w => CopyAtom::Vector(elem, w as u32),
    }
}

/// A product feeding a sum or difference becomes one fma (as nvcc's
/// default contracts), the left operand's product first: `a*b + c`,
/// `c + a*b`, `a*b - c = fma(a, b, -c)`, `c - a*b = fma(-a, b, c)`.
pub(super) fn contract(a: Arith) -> Arith {
    let product = |x: &Arith| matches!(x, Arith::Binary(Binary::Mul, ..));
    let factors = |x: Arith| match x {
        Arith::Binary(Binary::Mul, p, q) => (p, q),
        _ => unreachable!("a product"),
    };
    match a {
        Arith::Binary(op @ (Binary::Add | Binary::Sub), x, y) => {
            let (x, y) = (contract(*x), contract(*y));
            match op {
                _ if product(&x) => {
                    let (p, q) = factors(x);
                    let y = match op {
                        Binary::Add => y,
                        _ => Arith::Unary(Unary::Neg, Box::new(y)),
                    };
                    Arith::Fma(p, q, Box::new(y))
                }
                _ if product(&y) => {
                    let (p, q) = factors(y);
                    let p = match op {
                        Binary::Add => p,
                        _ => Box::new(Arith::Unary(Unary::Neg, p)),
                    };
                    Arith::Fma(p, q, Box::new(x))
                }
                _ => Arith::Binary(op, Box::new(x), Box::new(y)),
            }
        }
        Arith::Binary(op, x, y) => {
            Arith::Binary(op, Box::new(contract(*x)), Box::new(contract(*y)))
        }
        Arith::Unary(op, x) => Arith::Unary(op, Box::new(contract(*x))),
        Arith::Fma(x, y, z) => Arith::Fma(
            Box::new(contract(*x)),
            Box::new(contract(*y)),
            Box::new(contract(*z)),
        ),
        Arith::Select(c, x, y) => Arith::Select(
            Box::new(contract(*c)),
            Box::new(contract(*x)),
            Box::new(contract(*y)),
        ),
        Arith::Shuffle(x, mask) => Arith::Shuffle(Box::new(contract(*x)), mask),
        leaf => leaf,
    }
}

/// The extents of a view's modes, all static (unrolled element by element).
pub(super) fn mode_sizes(v: &View) -> Result<Vec<i64>, Problem> {
    v.layout
        .shape()
        .modes()
        .iter()
        .map(|m| {
            m.product()
                .as_static()
                .ok_or_else(|| Problem::from(format!("a mode of run-time extent {m}")))
        })
        .collect()
}

/// Whether two views of one tensor are the same elements in the same order.
fn same_elements(a: &View, b: &View) -> bool {
    a.layout == b.layout && a.offset == b.offset
}

/// Whether the elements of a view of tensor parameter `kind` are distinct
/// places: distinct coordinates (each a static function of the element,
/// plus the view's common offset) in a layout that is one-to-one, its
/// strides a chain of products of the extents (column-major under some
/// order of its modes).
fn distinct_elements(v: &View, kind: &ParamKind) -> bool {
    let ParamKind::Tensor { layout, .. } = kind else {
        return false;
    };
    let (shapes, strides) = (layout.shape().leaves(), layout.stride().leaves());
    let mut next = Int::Static(1);
    let mut left: Vec<usize> = (0..shapes.len()).collect();
    while !left.is_empty() {
        let Some(at) = left.iter().position(|&i| strides[i] == next) else {
            return false;
        };
        let i = left.remove(at);
        next = next.mul(&shapes[i]);
    }
    let Some(n) = v.layout.size().as_static() else {
        return false;
    };
    let mut seen = std::collections::HashSet::new();
    (0..n).all(|i| {
        let coords: Option<Vec<i64>> = v
            .coords
            .iter()
            .map(|c| c.layout.at(i).ok().and_then(|x| x.as_static()))
            .collect();
        coords.is_some_and(|c| seen.insert(c))
    })
}
