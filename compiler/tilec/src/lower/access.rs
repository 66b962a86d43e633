//! Addresses: a view's element as base + index, with the guard of a
//! partial tile, the swizzle of a swizzled buffer, the widest vector a
//! copy allows, and the compile-time bound of every shared index; the
//! copy atoms between two views; and the global accesses the runtime
//! bounds before a launch.

use super::{Lowerer, Problem, Variant};
use crate::check::program::{Base, Elem, View};
use crate::ir::{Addr, CopyAtom, Inst, InstKind, IntDef, IntId, Space};
use crate::span::Span;
use tilec_layout::int::Op as IntOp;
use tilec_layout::{Coord, Int, Swizzle};

impl Lowerer<'_> {
    /// Elements `range` of `src` copied into `dst` by `atom`, its width at
    /// a time (the range's start and length multiples of it).
    pub(super) fn copies(
        &mut self,
        src: &View,
        dst: &View,
        atom: CopyAtom,
        range: std::ops::Range<i64>,
        span: Span,
        out: &mut Vec<Inst>,
    ) -> Result<(), Problem> {
        let width = atom.width();
        for i in range.step_by(width as usize) {
            let (s, d) = (
                self.element(src, &Coord::from(i), width)?,
                self.element(dst, &Coord::from(i), width)?,
            );
            out.push(Inst::at(
                span,
                InstKind::Copy {
                    atom,
                    src: s,
                    dst: d,
                },
            ));
        }
        Ok(())
    }

    /// Elements of shared buffer `s`: the kernel's, or one lowering added.
    pub(super) fn shared_len(&self, s: usize) -> i64 {
        match self.k.shared.get(s) {
            Some(b) => b.len,
            None => self.extra_shared[s - self.k.shared.len()].1,
        }
    }

    /// The address of element `c` of a view, the first of `width` consecutive ones.
    pub(super) fn element(&mut self, v: &View, c: &Coord, width: i64) -> Result<Addr, Problem> {
        let index = self.fix(&v.offset.add(&v.layout.eval(c).map_err(|e| e.to_string())?));
        let mut guard = None;
        if let Base::Param(p) = v.base
            && !self.by_element.contains(&p)
        {
            self.by_element.push(p);
        }
        let space = match v.base {
            Base::Param(p) if self.variant.guarded() && !v.coords.is_empty() => {
                guard = self.guard(v, c)?;
                Space::Global(p)
            }
            Base::Param(p) if self.tested && !v.coords.is_empty() => Space::Global(p),
            Base::Param(p) => {
                if !v.coords.is_empty() && !self.untested.contains(&p) {
                    self.untested.push(p);
                }
                let index = self.by_loop(&self.capped(&index));
                let when = self.when_here();
                self.accesses.push(GlobalAccess {
                    param: p,
                    index: index.clone(),
                    below: None,
                    when: when.clone(),
                    line: self.line,
                });
                if width > 1 {
                    self.accesses.push(GlobalAccess {
                        param: p,
                        index: index.add(&Int::Static(width - 1)),
                        below: None,
                        when,
                        line: self.line,
                    });
                }
                self.record_coordinates(v, c, width)?;
                Space::Global(p)
            }
            Base::Shared(s) => {
                self.within_shared(&index, [0, width - 1], self.k.shared[s].len)?;
                if let Some(sw) = self.k.shared[s].swizzle {
                    // Inside the buffer before the swizzle is inside after
                    // it: the buffer holds whole repeats.
                    return Ok(Addr {
                        space: Space::Shared(s),
                        index: self.swizzled(&index, sw)?,
                        guard,
                    });
                }
                Space::Shared(s)
            }
            Base::Registers(r) => {
                if !index.is_static() {
                    return Err(format!(
                        "a register tensor is indexed by the run-time value {index}; slice registers with constants"
                    )
                    .into());
                }
                Space::Registers(r)
            }
        };
        Ok(Addr {
            space,
            index: self.int(&index)?,
            guard,
        })
    }

    /// `sw(index)` as IR values. The terms of the sum that are multiples
    /// of the swizzle's repeat (a stage's offset, typically) pass through
    /// it unchanged, so they are added after it: the XOR is then on the
    /// loop-invariant part alone.
    pub(super) fn swizzled(&mut self, index: &Int, sw: Swizzle) -> Result<IntId, Problem> {
        let repeat = sw.repeat();
        let (mut inside, mut whole) = (Int::Static(0), Int::Static(0));
        for term in index.terms() {
            match term.as_static() {
                // A constant's whole repeats pass through; its remainder
                // is XOR-ed with the rest.
                Some(c) => {
                    whole = whole.add(&Int::Static(c - c.rem_euclid(repeat)));
                    inside = inside.add(&Int::Static(c.rem_euclid(repeat)));
                }
                // Provable multiples only: no launch condition is taken.
                None if term.multiple_of(repeat, &|_| false).is_some() => whole = whole.add(&term),
                None => inside = inside.add(&term),
            }
        }
        let x = self.int(&inside)?;
        let swizzled = self.def(IntDef::Swizzle(x, sw));
        let whole = self.int(&whole)?;
        Ok(self.def(IntDef::Bin(IntOp::Add, swizzled, whole)))
    }

    /// Where element `c` of a global view sits along mode `m` of its
    /// tensor (`coord(t, m)`).
    pub(super) fn coordinate(&mut self, v: &View, c: &Coord, m: usize) -> Result<IntId, Problem> {
        let f = &v.coords[m];
        let at = self.fix(&f.offset.add(&f.layout.eval(c).map_err(|e| e.to_string())?));
        Ok(self.int(&at)?)
    }

    /// The guard of element `c` of a global view: every coordinate function
    /// below its extent, one [`IntDef::Below`] test per mode joined by
    /// `min`. Tests that hold statically are left out; `None` when all do.
    /// Built as IR values, never as symbolic `extent - coordinate`, whose
    /// folding assumes dynamic values positive.
    pub(super) fn guard(&mut self, v: &View, c: &Coord) -> Result<Option<IntId>, Problem> {
        let mut guard: Option<IntId> = None;
        for (at, extent) in self.coordinates(v, c)? {
            guard = Some(self.below_and(guard, &at, extent)?);
        }
        Ok(guard)
    }

    /// Element `c`'s coordinate in each mode of its tensor, with the
    /// mode's extent, but those known at compile time to lie inside.
    fn coordinates<'v>(&self, v: &'v View, c: &Coord) -> Result<Vec<(Int, &'v Int)>, Problem> {
        let mut out = Vec::new();
        for f in &v.coords {
            let at = self.fix(&f.offset.add(&f.layout.eval(c).map_err(|e| e.to_string())?));
            if let (Some(x), Some(e)) = (at.as_static(), f.extent.as_static())
                && (0..e).contains(&x)
            {
                continue;
            }
            out.push((at, &f.extent));
        }
        Ok(out)
    }

    /// For the runtime's proof, each coordinate of an unguarded element of
    /// a partial tile's view (the first and, for a vector at a flat
    /// coordinate, the last) against its mode's extent: where a tile
    /// coordinate runs past the tiles (a loop counter's `k - 1`), the
    /// element can lie inside the buffer and outside the tensor, in
    /// another row or column, which bounding its index alone passes.
    fn record_coordinates(&mut self, v: &View, c: &Coord, width: i64) -> Result<(), Problem> {
        let Base::Param(p) = v.base else {
            return Ok(());
        };
        let last = match (width, c) {
            (2.., Coord::Int(x)) => Some(Coord::Int(x.add(&Int::Static(width - 1)))),
            _ => None,
        };
        for c in std::iter::once(c).chain(&last) {
            for (at, extent) in self.coordinates(v, c)? {
                let index = self.by_loop(&self.capped(&at));
                self.accesses.push(GlobalAccess {
                    param: p,
                    index,
                    below: Some(extent.clone()),
                    when: self.when_here(),
                    line: self.line,
                });
            }
        }
        Ok(())
    }

    /// `at < extent`, joined to `so_far` (a conjunction of such tests, as
    /// 0 or 1) by `min`.
    pub(super) fn below_and(
        &mut self,
        so_far: Option<IntId>,
        at: &Int,
        extent: &Int,
    ) -> Result<IntId, Problem> {
        let (at, extent) = (self.int(at)?, self.int(extent)?);
        let test = self.def(IntDef::Below(at, extent));
        Ok(match so_far {
            None => test,
            Some(g) => self.def(IntDef::Bin(IntOp::Min, g, test)),
        })
    }

    /// The widest copy atom for `src -> dst`: CuTe's `max_common_vector` of
    /// the two layouts, at most 128 bits, narrowed until every group of
    /// elements is consecutive in both tensors and starts at an address
    /// aligned to the vector for every thread; alignment that depends on
    /// the extents becomes a launch condition, where `conditional` allows
    /// (otherwise only conditions already made count, or facts that read
    /// as one of them on the caller's buffers).
    pub(super) fn vector_width(
        &mut self,
        src: &View,
        dst: &View,
        n: i64,
        elem: Elem,
        conditional: bool,
    ) -> i64 {
        // In the guarded-vectors variant, a vector with one guard for all
        // its elements is wholly inside or wholly outside: a load that
        // reads nothing (zeros, or a cp.async that writes zeros) and a
        // store that writes nothing where the guard fails. The guarded
        // variant goes element by element.
        let guarded = self.variant.guarded() && !(src.coords.is_empty() && dst.coords.is_empty());
        let local = |v: &View| matches!(v.base, Base::Registers(_) | Base::Shared(_));
        if guarded && (self.variant == Variant::Guarded || !(local(src) || local(dst))) {
            return 1;
        }
        let mut scratch = tilec_layout::Conditions::new();
        let common = tilec_layout::max_common_vector(&src.layout, &dst.layout, &mut scratch)
            .ok()
            .and_then(|v| v.as_static())
            .unwrap_or(1);
        // A swizzle keeps runs of consecutive elements only below the
        // lowest bit it reads or flips.
        let unswizzled = [src, dst]
            .iter()
            .filter_map(|v| match v.base {
                Base::Shared(s) => self.k.shared[s].swizzle,
                _ => None,
            })
            .map(|sw| sw.unchanged_run())
            .fold(16 / elem.bytes(), i64::min);
        let mut w = 1;
        while w * 2 <= common.min(unswizzled) && n % (w * 2) == 0 {
            w *= 2;
        }
        let extents = |x: &str| self.k.is_run_time(x);
        // A thread's coordinate in a mode it never leaves (its row in a
        // block of one row, `thread.x / 256`) is 0: folded by the names'
        // ranges, such terms no longer hide a multiple of the width.
        let offsets = [src, dst].map(|v| v.offset.fold_in_range(&|name| self.name_range(name)));
        while w > 1 {
            let mut facts = Vec::new();
            let fits = [src, dst].iter().zip(&offsets).all(|(v, offset)| {
                // Groups of w are consecutive when the coalesced layout's first
                // mode has stride 1 and an extent that w divides.
                let c = v.layout.coalesce();
                let Ok(first) = c.mode(0) else { return false };
                let run = first.stride().as_int().is_some_and(|d| d.is_const(1))
                    && first
                        .shape()
                        .as_int()
                        .and_then(Int::as_static)
                        .is_some_and(|s| s % w == 0);
                run && (0..n).step_by(w as usize).all(|i| {
                    let Ok(start) = v.layout.at(i) else {
                        return false;
                    };
                    match offset.add(&start).multiple_of(w, &extents) {
                        Some(f) => {
                            facts.extend(f);
                            true
                        }
                        None => false,
                    }
                })
            });
            let fits = fits
                && (!guarded
                    || [src, dst]
                        .iter()
                        .all(|v| self.one_guard_per_vector(v, n, w, &mut facts)))
                && (conditional
                    || facts.iter().all(|f| {
                        let f = self.k.as_declared(f);
                        self.conditions
                            .iter()
                            .any(|c| self.k.as_declared(&c.fact) == f)
                    }));
            if fits {
                for fact in facts {
                    let c = tilec_layout::Condition {
                        fact,
                        needed_by: "a vectorized copy",
                        tensor: None,
                    };
                    if !self.conditions.contains(&c) {
                        self.conditions.push(c);
                    }
                }
                return w;
            }
            w /= 2;
        }
        1
    }

    /// Whether every group of `w` consecutive elements of `v` (from a
    /// multiple of `w`) has one guard: each coordinate function is the same
    /// for the whole group, or steps by 1 from a multiple of `w` below an
    /// extent that is a multiple of `w` (so the group is wholly inside or
    /// wholly outside). The multiples that depend on extents go to `facts`.
    fn one_guard_per_vector(
        &self,
        v: &View,
        n: i64,
        w: i64,
        facts: &mut Vec<tilec_layout::Fact>,
    ) -> bool {
        let extents = |x: &str| self.k.is_run_time(x);
        v.coords.iter().all(|f| {
            let offset = self
                .fix(&f.offset)
                .fold_in_range(&|name| self.name_range(name));
            (0..n).step_by(w as usize).all(|i| {
                let at = |j: i64| {
                    f.layout
                        .at(i + j)
                        .ok()
                        .and_then(|x| self.fix(&x).as_static())
                };
                let Some(first) = at(0) else { return false };
                let steps: Option<Vec<i64>> = (0..w).map(|j| at(j).map(|x| x - first)).collect();
                match steps {
                    Some(s) if s.iter().all(|&d| d == 0) => true,
                    Some(s) if s.iter().enumerate().all(|(j, &d)| d == j as i64) => {
                        let start = offset.add(&Int::Static(first));
                        match (
                            start.multiple_of(w, &extents),
                            f.extent.multiple_of(w, &extents),
                        ) {
                            (Some(a), Some(b)) => {
                                facts.extend(a);
                                facts.extend(b);
                                true
                            }
                            _ => false,
                        }
                    }
                    _ => false,
                }
            })
        })
    }

    /// A shared-memory access stays inside its buffer for every thread and
    /// every iteration of the loops around it, checked here at compile
    /// time: `index + first ..= index + last` within `len` elements (one
    /// range computed for both ends: this runs for every shared element
    /// access).
    pub(super) fn within_shared(
        &self,
        index: &Int,
        [first, last]: [i64; 2],
        len: i64,
    ) -> Result<(), Problem> {
        const HELP: &str = "the shared layout must cover every index the access reaches, at every thread and trip: bound the index by an if around it, or give the buffer more elements (in a pipeline or a loop over stages, as many stages as the index takes, `k % stages`)";
        debug_assert!(first <= last, "an access's first element before its last");
        let (uncapped, index) = (index, &self.capped(index));
        let range = self.range_here(uncapped, index);
        if range.is_some_and(|(lo, hi)| lo > hi) {
            // No thread runs it: the ifs around it never hold together.
            return Ok(());
        }
        let reach = range.map(|(lo, hi)| {
            lo.checked_add(first)
                .zip(hi.checked_add(last))
                .ok_or((lo, hi))
        });
        match reach {
            Some(Err((lo, hi))) => Err(Problem::Here(
                format!("a shared-memory access at {lo}..={hi} (+{last}) overflows its index"),
                HELP,
            )),
            Some(Ok((lo, hi))) if lo >= 0 && hi < len => Ok(()),
            Some(Ok((lo, hi))) => {
                // A counter whose loop ends at a run-time value is taken
                // up to 2^40 here: name it, rather than leave the bound
                // unexplained.
                let mut names = Vec::new();
                index.names(&mut names);
                // Named only where it is the cause: the reach grows with its
                // end (a pipeline's stage `(k - k0) % 4` names `k` too, and
                // reaches a fourth stage within four trips at any end).
                let reach_grows = |name: &str| {
                    let Some((v, _)) = self.name_range(name) else {
                        return true;
                    };
                    let k = Int::var(name);
                    let trips = Int::Static(v).add(&k.rem(&Int::Static(len.max(1))));
                    let fewer = uncapped.replace_parts(&[(k, trips)]);
                    match (self.range_here(&fewer, &self.capped(&fewer)), range) {
                        (Some((_, a)), Some((_, b))) => a < b,
                        _ => true,
                    }
                };
                let unbounded: Vec<&str> = self
                    .active
                    .iter()
                    .map(|&l| &self.counters[l])
                    .filter(|c| {
                        c.iterations >= tilec_layout::COUNTER_MAX
                            && names.contains(&c.name)
                            && reach_grows(&c.name)
                    })
                    .map(|c| c.name.as_str())
                    .collect();
                let (why, help) = match unbounded.as_slice() {
                    [] => (String::new(), HELP),
                    n => (
                        format!(
                            " (`{}` {} to a bound known at run time alone, taken up to 2^40 here)",
                            n.join("`, `"),
                            if n.len() == 1 { "runs" } else { "run" }
                        ),
                        "guard the access by the buffer's size (`if k < 64 { s[k] = ...; }`, which bounds `k` there), or walk the buffer in stages (`s[k % stages]`)",
                    ),
                };
                Err(Problem::Here(
                    format!(
                        "a shared-memory access reaches {lo}..={hi}, outside the buffer of {len} elements{why}"
                    ),
                    help,
                ))
            }
            None => {
                // An index of a few thousand terms would fill the screen.
                let mut shown = index.to_string();
                if let Some((cut, _)) = shown.char_indices().nth(160) {
                    shown.truncate(cut);
                    shown.push_str("...");
                }
                Err(Problem::Here(
                    format!(
                        "the shared-memory index {shown} depends on run-time values; it must be bounded at compile time"
                    ),
                    HELP,
                ))
            }
        }
    }
}

/// An unguarded global access, which the runtime bounds before launching.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalAccess {
    /// Kernel parameter index.
    pub param: usize,
    /// The element's index in the buffer, or with `below`, its coordinate
    /// in one mode of the tensor.
    pub index: Int,
    /// The mode's extent, which the coordinate stays below (and at or
    /// above 0): an unguarded entry's access inside the buffer but outside
    /// its tile's tensor reads or writes another element, silently.
    pub below: Option<Int>,
    /// Pairs `(a, b)`: the access runs only where each `a <= b` (the ifs
    /// around it), so nowhere in a region of the proof where one fails.
    pub when: Vec<(Int, Int)>,
    /// The `.tile` line of its statement, where lowering had the source:
    /// a refused launch names it.
    pub line: Option<u32>,
}

/// The accesses, each once: the same access from two lines (a guard's
/// test and its statement's) is bounded once, at its first line.
pub(super) fn dedup(v: Vec<GlobalAccess>) -> Vec<GlobalAccess> {
    let mut seen = foldhash::HashSet::default();
    v.into_iter()
        .filter(|a| seen.insert((a.param, a.index.clone(), a.below.clone(), a.when.clone())))
        .collect()
}
