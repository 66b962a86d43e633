//! Lowering for the tensor cores: a tiled MMA's gemm into `mma.sync`
//! atoms (wgmma's are `warpgroup.rs`'s), and shared -> register copies
//! into `ldmatrix` where the layouts allow it; element-wise statements on
//! shared tiles use the same plans in both directions (`stmatrix`).
//!
//! ldmatrix is chosen by layout, as vector copies are: a copy of 16-bit
//! elements becomes ldmatrix when, for every thread of the block, each
//! pair of consecutive registers it fills is where ldmatrix (or its
//! transposing form) would put it, the rows are 16-byte aligned, and the
//! row addresses follow from the thread index. That is checked by
//! evaluating the copy's own index for every thread, so the instruction
//! reads exactly the elements the per-element copy would; anything else
//! stays a per-element copy. stmatrix puts the same elements where
//! ldmatrix takes them from.

use super::{Lowerer, Problem, mode_size};
use crate::check::program::{Base, Op, Stmt, View};
use crate::ir::{Addr, Fragment, Inst, InstKind, Space};
use crate::span::Span;
use tilec_layout::{Builtin, Coord, Int, LdMatrixAtom, Operand, Swizzle, TiledMma};

/// One 32-bit register's worth of a copy: elements `first` and `second` of
/// the copy (its 1-D indices), landing in consecutive registers.
#[derive(Clone, Copy)]
struct Pair {
    first: i64,
    second: i64,
}

/// How a copy between a shared tile and registers becomes ldmatrix (or,
/// with `store`, stmatrix): the buffer and the register array, the shared
/// offset split into the thread's part and everyone's, each element's
/// static offset and register, the register pairs, and the form.
#[derive(Clone)]
pub(super) struct MatrixPlan {
    store: bool,
    elem: crate::check::program::Elem,
    buffer: usize,
    array: usize,
    swizzle: Option<Swizzle>,
    by_thread: Int,
    common: Int,
    offset: Vec<i64>,
    register: Vec<i64>,
    pairs: Vec<Pair>,
    trans: bool,
    /// Matrices per instruction, at most.
    group: usize,
}

impl MatrixPlan {
    /// How many register pairs it moves.
    pub(super) fn pairs(&self) -> usize {
        self.pairs.len()
    }

    /// The same elements moved the other way, into or out of register
    /// array `array` (laid out as the plan's own).
    pub(super) fn reversed(&self, array: usize) -> MatrixPlan {
        MatrixPlan {
            store: !self.store,
            array,
            ..self.clone()
        }
    }

    /// The elements (1-D indices of the copy) of pair `p`.
    pub(super) fn pair_elements(&self, p: usize) -> [i64; 2] {
        [self.pairs[p].first, self.pairs[p].second]
    }
}

/// Why a planned ldmatrix or stmatrix is not made: the layouts after all,
/// or a problem of the kernel's (an index outside its buffer).
pub(super) enum Rejected {
    Layouts(String),
    Problem(Problem),
}

impl Lowerer<'_> {
    /// `gemm(mma, a, b, c)`: one mma.sync per (k, m, n) fragment, k
    /// outermost (CuTe's order).
    pub(super) fn mma(
        &mut self,
        mma: &TiledMma,
        [a, b, c]: [&View; 3],
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let kk = if a.layout.rank() == 3 {
            mode_size(a, 2)?
        } else {
            1
        };
        let (m, n) = (mode_size(c, 1)?, mode_size(c, 2)?);
        self.spend(m.saturating_mul(n).saturating_mul(kk))?;
        debug_assert_eq!(mma.atom.values(Operand::C), mode_size(c, 0)?);
        if mma.atom.warpgroup {
            return self.wgmma(mma, [a, b, c], [kk, m, n], span, out);
        }
        for k in 0..kk {
            for mi in 0..m {
                for ni in 0..n {
                    let inst = InstKind::MmaSync {
                        atom: mma.atom.clone(),
                        a: self.fragment(a, mi, k)?,
                        b: self.fragment(b, ni, k)?,
                        c: self.fragment(c, mi, ni)?,
                    };
                    out.push(Inst::at(span, inst));
                }
            }
        }
        Ok(())
    }

    /// The register elements of fragment `(_, i, j)` of a (values, I, J)
    /// register tensor (`(_, i)` of a (values, I) one), in value order.
    pub(super) fn fragment(&mut self, v: &View, i: i64, j: i64) -> Result<Fragment, Problem> {
        let Base::Registers(array) = v.base else {
            return Err(format!("a tensor-core operand in {} memory", v.base.space()).into());
        };
        let index = (0..mode_size(v, 0)?)
            .map(|x| {
                let mut c = vec![Coord::from(x), Coord::from(i), Coord::from(j)];
                c.truncate(v.layout.rank());
                self.register_index(v, &Coord::Tuple(c))
            })
            .collect::<Result<_, String>>()?;
        Ok(Fragment { array, index })
    }

    /// The constant index of a register element.
    fn register_index(&self, v: &View, c: &Coord) -> Result<i64, String> {
        let at = self.fix(&v.offset.add(&v.layout.eval(c).map_err(|e| e.to_string())?));
        at.as_static().ok_or_else(|| {
            format!(
                "a register tensor is indexed by the run-time value {at}; slice registers with constants"
            )
        })
    }

    /// The copy `src -> dst` of `n` elements as ldmatrix instructions, or
    /// `None` where the layouts do not allow it (see the module's comment);
    /// a copy that demands an ldmatrix atom gets an error saying why instead.
    pub(super) fn ldmatrix(
        &mut self,
        src: &View,
        dst: &View,
        n: i64,
        span: Span,
        demand: Option<LdMatrixAtom>,
    ) -> Result<Option<Vec<Inst>>, Problem> {
        let why_not = match self.matrix_plan(src, dst, n, false, demand) {
            Ok(plan) => match self.emit_matrix(&plan, 0..plan.pairs(), span) {
                Ok(insts) => return Ok(Some(insts)),
                Err(Rejected::Problem(p)) => return Err(p),
                Err(Rejected::Layouts(why)) => why,
            },
            Err(why) => why,
        };
        match demand {
            None => {
                // A 16-bit copy from shared memory into registers could
                // have been ldmatrix: say why not, once per statement.
                let candidate =
                    matches!((src.base, dst.base), (Base::Shared(_), Base::Registers(_)))
                        && src.elem.bytes() == 2
                        && src.elem == dst.elem;
                if candidate {
                    self.note(span, format!("element by element, not ldmatrix: {why_not}"));
                }
                Ok(None)
            }
            Some(atom) => Err(Problem::Here(
                format!("the layouts do not allow {}: {why_not}", atom.name),
                "ldmatrix gives each lane two consecutive registers of an 8x8 matrix whose rows are 16-byte runs of shared memory; partition the shared tile and the fragment with one tiled MMA (partition_A, partition_B)",
            )),
        }
    }

    /// Whether and how `n` elements can move between the shared tile
    /// `shared` and the registers `regs` by ldmatrix (or with `store`
    /// stmatrix, sm_90's): the reason when not.
    pub(super) fn matrix_plan(
        &self,
        shared: &View,
        regs: &View,
        n: i64,
        store: bool,
        demand: Option<LdMatrixAtom>,
    ) -> Result<MatrixPlan, String> {
        let (Base::Shared(buffer), Base::Registers(array)) = (shared.base, regs.base) else {
            return Err(match store {
                false => "it copies from shared memory into registers only".into(),
                true => "it stores registers into shared memory only".into(),
            });
        };
        if shared.elem != regs.elem || shared.elem.bytes() != 2 {
            return Err(format!("it moves 16-bit elements, not {}", shared.elem));
        }
        if self.block_threads % 32 != 0 {
            return Err(format!(
                "the block's {} threads are not whole warps",
                self.block_threads
            ));
        }
        let swizzle = self.k.shared[buffer].swizzle;
        // The offset is a part that depends on the thread alone (or on
        // nothing) and a part that is the same for every thread, whole
        // rows and whole swizzle repeats (a stage's offset), so that
        // checking the first part for every thread checks the copy.
        let thread = Builtin::Thread.name();
        let (mut by_thread, mut common) = (Int::Static(0), Int::Static(0));
        for term in self.fix(&shared.offset).terms() {
            let mut names = Vec::new();
            term.names(&mut names);
            // Constants go with the thread's part, which is evaluated.
            match names.iter().all(|x| x == thread) {
                true => by_thread = by_thread.add(&term),
                false if names.iter().any(|x| x == thread) => {
                    return Err(format!(
                        "the offset term {term} mixes {thread} with other run-time values"
                    ));
                }
                false => common = common.add(&term),
            }
        }
        let align = swizzle.map_or(8, |sw| sw.repeat().max(8));
        if common.multiple_of(align, &|_| false).is_none() {
            return Err(format!(
                "the offset {common}, the same for every thread, is not a multiple of {align} elements"
            ));
        }
        let mut offset = Vec::with_capacity(n as usize);
        let mut register = Vec::with_capacity(n as usize);
        for i in 0..n {
            let o = shared.layout.at(i).ok().and_then(|x| x.as_static());
            let r = self.register_index(regs, &Coord::from(i));
            let (Some(o), Ok(r)) = (o, r) else {
                return Err("the per-thread layouts are not static".into());
            };
            offset.push(o);
            register.push(r);
        }
        let pairs = pairs(&register).ok_or(
            "the registers do not pair up: each even register needs the next one in the copy",
        )?;
        // The thread's part for every thread, evaluated once: `fits` asks
        // for each of them many times.
        let thread_part: Option<Vec<i64>> = (0..self.block_threads)
            .map(|t| by_thread.eval(&|name: &str| (name == thread).then_some(t)))
            .collect();
        let thread_part = thread_part.ok_or("the offset does not evaluate for every thread")?;
        // Where element `e` of thread `t` lies, swizzled, less `common`.
        let place = |t: i64, e: i64| -> i64 {
            let x = thread_part[t as usize] + offset[e as usize];
            swizzle.map_or(x, |sw| sw.apply(x))
        };
        // stmatrix writes a warp's elements in no particular order: each
        // must have a place of its own, as the per-element stores, in
        // order, would not need.
        if store {
            let mut seen = std::collections::HashSet::new();
            let distinct =
                (0..self.block_threads).all(|t| (0..n).all(|e| seen.insert(place(t, e))));
            if !distinct {
                return Err("two of its elements share a place in shared memory".into());
            }
        }
        let kinds: &[bool] = match demand {
            Some(a) => &[a.trans][..],
            None => &[false, true][..],
        };
        let Some(trans) = kinds.iter().copied().find(|&trans| {
            pairs
                .iter()
                .all(|p| fits(&place, self.block_threads, *p, trans))
        }) else {
            // A demanded form that does not fit may have a twin that does.
            let twin = demand.and_then(|a| {
                let other = LdMatrixAtom::ALL
                    .iter()
                    .find(|b| b.count == a.count && b.trans != a.trans)?;
                let fits_other = pairs
                    .iter()
                    .all(|p| fits(&place, self.block_threads, *p, other.trans));
                fits_other.then(|| format!("; {} fits them", other.name))
            });
            let name = if store { "stmatrix" } else { "ldmatrix" };
            return Err(format!(
                "the lanes' elements are not where {name}{} puts them (rows of 8 consecutive, 16-byte aligned elements){}",
                if kinds == [true] { ".trans" } else { "" },
                twin.unwrap_or_default()
            ));
        };
        // A demanded atom takes its count of matrices each time; otherwise
        // x4s, then an x2 and an x1 for what is left.
        let group = demand.map_or(4, |a| a.count as usize);
        if demand.is_some() && pairs.len() % group != 0 {
            return Err(format!(
                "{} register pairs do not make whole groups of {group} matrices",
                pairs.len()
            ));
        }
        Ok(MatrixPlan {
            store,
            elem: shared.elem,
            buffer,
            array,
            swizzle,
            by_thread,
            common,
            offset,
            register,
            pairs,
            trans,
            group,
        })
    }

    /// The plan's instructions for its register pairs `which`: their
    /// matrices in groups (x4, x2, x1).
    pub(super) fn emit_matrix(
        &mut self,
        plan: &MatrixPlan,
        which: std::ops::Range<usize>,
        span: Span,
    ) -> Result<Vec<Inst>, Rejected> {
        // Every row a lane gives holds elements of the copy (of other
        // lanes): the copy's own indices bound them.
        let len = self.k.shared[plan.buffer].len;
        let pairs = &plan.pairs[which];
        for p in pairs {
            for e in [p.first, p.second] {
                let o = plan.offset[e as usize];
                let index = plan.by_thread.add(&plan.common).add(&Int::Static(o));
                self.within_shared(&index, [0, 0], len)
                    .map_err(Rejected::Problem)?;
            }
        }
        let mut insts = Vec::new();
        for chunk in chunks(pairs, plan.group) {
            let index = self.row_address(plan, chunk).ok_or_else(|| {
                Rejected::Layouts("the rows' addresses are not linear in the lane".into())
            })?;
            let index = match plan.swizzle {
                Some(sw) => self.swizzled(&index, sw).map_err(Rejected::Problem)?,
                None => self.int(&index).map_err(|e| Rejected::Problem(e.into()))?,
            };
            let registers = chunk
                .iter()
                .flat_map(|p| {
                    [
                        plan.register[p.first as usize],
                        plan.register[p.second as usize],
                    ]
                })
                .collect();
            insts.push(Inst::at(
                span,
                InstKind::Matrix {
                    store: plan.store,
                    elem: plan.elem,
                    count: chunk.len() as u32,
                    trans: plan.trans,
                    shared: Addr {
                        space: Space::Shared(plan.buffer),
                        index,
                        guard: None,
                    },
                    regs: Fragment {
                        array: plan.array,
                        index: registers,
                    },
                },
            ));
        }
        self.spend(insts.len() as i64).map_err(Rejected::Problem)?;
        Ok(insts)
    }

    /// The unswizzled shared index each lane gives for an ldmatrix of
    /// `chunk`: lane `8q + r` gives row `r` of matrix `q`, which is where
    /// a lane of its warp holds an element (lane `4r`'s first, or with
    /// `trans` lane `r/2`'s first or second). The element's offset as a
    /// function of the lane must be linear in the bits of `q` and in `r%2`,
    /// `c0 + d0*(q%2) + d1*(q/2) + e*(r%2)`; `None` otherwise.
    fn row_address(&self, plan: &MatrixPlan, chunk: &[Pair]) -> Option<Int> {
        let (offset, trans) = (&plan.offset, plan.trans);
        let count = chunk.len() as i64;
        let element = |lane: i64| {
            let (q, r) = ((lane / 8) % count, lane % 8);
            let p = chunk[q as usize];
            let e = if trans && r % 2 == 1 {
                p.second
            } else {
                p.first
            };
            offset[e as usize]
        };
        let c0 = element(0);
        let (d0, d1, e) = (element(8) - c0, element(16) - c0, element(1) - c0);
        let linear = (0..32).all(|l| {
            let q = (l / 8) % count;
            element(l) == c0 + d0 * (q % 2) + d1 * (q / 2) + e * (l % 2)
        });
        if !linear {
            return None;
        }
        let t = Int::var(Builtin::Thread.name());
        let lane = t.rem(&Int::Static(32));
        let r = t.rem(&Int::Static(8));
        let q = lane.div(&Int::Static(8)).rem(&Int::Static(count));
        let supplier_lane = if trans {
            r.div(&Int::Static(2))
        } else {
            r.mul(&Int::Static(4))
        };
        let warp = t.div(&Int::Static(32)).mul(&Int::Static(32));
        let supplier = warp.add(&supplier_lane);
        Some(
            plan.by_thread
                .replace(Builtin::Thread.name(), &supplier)
                .add(&plan.common)
                .add(&Int::Static(c0))
                .add(&q.rem(&Int::Static(2)).mul(&Int::Static(d0)))
                .add(&q.div(&Int::Static(2)).mul(&Int::Static(d1)))
                .add(&r.rem(&Int::Static(2)).mul(&Int::Static(e))),
        )
    }
}

/// The copy's elements paired by register: each even register with the
/// next one. `None` when an element has no partner.
fn pairs(register: &[i64]) -> Option<Vec<Pair>> {
    let mut out = Vec::new();
    for (i, &r) in register.iter().enumerate() {
        if r % 2 == 1 {
            continue;
        }
        let j = register.iter().position(|&x| x == r + 1)?;
        out.push(Pair {
            first: i as i64,
            second: j as i64,
        });
    }
    (out.len() * 2 == register.len()).then_some(out)
}

/// Groups of at most `group` pairs, one ldmatrix each (x4, x2, x1).
fn chunks(pairs: &[Pair], group: usize) -> Vec<&[Pair]> {
    let mut out = Vec::new();
    let mut rest = pairs;
    while !rest.is_empty() {
        let take = [4, 2, 1]
            .into_iter()
            .find(|&c| c <= group && c <= rest.len())
            .unwrap_or(1);
        out.push(&rest[..take]);
        rest = &rest[take..];
    }
    out
}

/// Whether pair `p` of every thread is where ldmatrix puts it: the 8x8
/// matrix's rows are 16-byte aligned runs of 8 elements, and lane `l`
/// holds row `l/4`, columns `2(l%4)` and `+1` (with `trans`: rows `2(l%4)`
/// and `+1` of column `l/4`).
fn fits(place: &dyn Fn(i64, i64) -> i64, threads: i64, p: Pair, trans: bool) -> bool {
    (0..threads / 32).all(|w| {
        let row = |r: i64| -> Option<i64> {
            let at = if trans {
                place(32 * w + r / 2, if r % 2 == 0 { p.first } else { p.second })
            } else {
                place(32 * w + 4 * r, p.first)
            };
            (at % 8 == 0).then_some(at)
        };
        (0..32).all(|l| {
            let t = 32 * w + l;
            let want = if trans {
                row(2 * (l % 4))
                    .zip(row(2 * (l % 4) + 1))
                    .map(|(a, b)| (a + l / 4, b + l / 4))
            } else {
                row(l / 4).map(|a| (a + 2 * (l % 4), a + 2 * (l % 4) + 1))
            };
            want == Some((place(t, p.first), place(t, p.second)))
        })
    })
}

/// Whether statements that run on sm_90 alone are among `body`'s: a
/// wgmma, a pipeline, a TMA copy.
pub(super) fn sm90_only(body: &[Stmt]) -> bool {
    let mut found = false;
    crate::check::program::walk(body, &mut |s| {
        found |= match &s.op {
            Op::Mma { mma, .. } => mma.atom.warpgroup,
            Op::Pipeline { .. } | Op::CopyTma { .. } => true,
            _ => false,
        };
    });
    found
}
