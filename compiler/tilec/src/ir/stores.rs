//! The order of a kernel's TMA stores. A store's bulk group writes global
//! memory on its own time, and two groups in flight are not ordered: a
//! store whose boxes may overlap an earlier one's must wait for the groups
//! before it (`cp.async.bulk.wait_group 0`), which also retires them all.
//! One whose boxes provably miss those of every store that may still be in
//! flight need not: the column subtiles of a tile's epilogue, each 64
//! columns past the last. A block's TMA load reads global memory that a
//! store in flight may be writing: it waits as well, unless its boxes
//! miss those of every store in flight (the next subtile of C after this
//! one went out). In: a kernel's instructions. Out: per
//! [`InstKind::TmaStores`] and [`InstKind::TmaLoads`], in the order
//! [`super::for_each_inst`] visits them, whether it may go without the
//! wait. Lowering marks them (`ordered`, `after_stores`), the verifier
//! checks the marks. Also what the placing and the checking of the
//! stores' waits share (`any`, `stages`, [`StoresInFlight`]).

use super::{Inst, InstKind, IntDef, IntId, IntValue, TensorMapIr};
use std::collections::BTreeMap;
use tilec_layout::int::Op;

/// Whether `body` holds a TMA store: the passes over stores have nothing
/// to do (nor to clone) in a kernel without one.
pub fn any(body: &[Inst]) -> bool {
    let mut found = false;
    super::for_each_inst(body, &mut |i| {
        found |= matches!(i.kind, InstKind::TmaStores { .. });
    });
    found
}

/// The shared buffers a pipeline's producer writes (its `load` block):
/// a store may not read them past the end of a trip.
pub fn stages(load: &[Inst]) -> Vec<usize> {
    let mut stages = Vec::new();
    for i in load {
        i.shared_buffers(&mut stages);
    }
    stages
}

/// `more` into the buffer set `set`, each once.
fn union(set: &mut Vec<usize>, more: &[usize]) {
    for &b in more {
        if !set.contains(&b) {
            set.push(b);
        }
    }
}

/// The shared buffers that TMA stores in flight may still be reading, by
/// bulk group, oldest first. Each entry is one group, but for the oldest,
/// which may stand for several or none: where paths meet with different
/// groups in flight (an `if`'s branches, a loop's trips), all of them
/// become one entry, older than any group issued after. So a wait that
/// leaves the newest `n` groups in flight (`cp.async.bulk.wait_group.read
/// n`) leaves at most the newest `n` entries pending. Lowering places the
/// waits by it, the verifier checks them by it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoresInFlight(Vec<Vec<usize>>);

impl StoresInFlight {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A store's bulk group, reading the buffers it `touched` and those
    /// sharing their bytes (`sharers`).
    pub fn issue(&mut self, touched: &[usize], sharers: &[Vec<usize>]) {
        let mut read = Vec::new();
        for &b in touched {
            union(&mut read, &sharers[b]);
        }
        self.0.push(read);
    }

    /// After a wait that leaves at most `keep` groups in flight.
    pub fn wait(&mut self, keep: usize) {
        let done = self.0.len().saturating_sub(keep);
        self.0.drain(..done);
    }

    /// The fewest groups a wait may leave in flight so that `touched` is
    /// read by none of them, if a group reads it.
    pub fn keep_for(&self, touched: &[usize]) -> Option<usize> {
        let newest = self
            .0
            .iter()
            .rposition(|e| e.iter().any(|b| touched.contains(b)))?;
        Some(self.0.len() - 1 - newest)
    }

    /// Whether a group in flight reads one of `buffers`.
    pub fn reads_any(&self, buffers: &[usize]) -> bool {
        self.keep_for(buffers).is_some()
    }

    /// Where two paths meet: the same groups, or all of both as one.
    pub fn meet(self, other: &StoresInFlight) -> StoresInFlight {
        if self == *other {
            return self;
        }
        let mut all = Vec::new();
        for e in self.0.iter().chain(&other.0) {
            union(&mut all, e);
        }
        StoresInFlight(if all.is_empty() {
            Vec::new()
        } else {
            vec![all]
        })
    }
}

/// Per TMA store and block TMA load of `body`, in visiting order, whether
/// its boxes miss those of every store that may be in flight when it is
/// issued: with `decide`, where each waits exactly when they may not
/// (what lowering marks); otherwise where they wait as marked (what the
/// verifier checks an unmarked one against).
pub fn may_go_unordered(
    ints: &[IntValue],
    maps: &[TensorMapIr],
    body: &[Inst],
    decide: bool,
) -> Vec<bool> {
    let mut numbers = BTreeMap::new();
    super::for_each_inst(body, &mut |i| {
        if ordered(i).is_some() {
            let n = numbers.len();
            numbers.insert(i as *const Inst, n);
        }
    });
    // A store the walk does not reach (none today) waits.
    let mut free = vec![false; numbers.len()];
    let mut flow = Flow {
        ints,
        maps,
        numbers: &numbers,
        free: &mut free,
        decide,
    };
    flow.list(body, Vec::new());
    free
}

/// Marks the TMA stores and block TMA loads of `body` that
/// [`may_go_unordered`] (deciding) proves apart from every store in
/// flight: they go without waiting.
pub fn mark_unordered(ints: &[IntValue], maps: &[TensorMapIr], body: &mut [Inst]) {
    let free = may_go_unordered(ints, maps, body, true);
    let mut next = 0;
    mark(body, &free, &mut next);
}

/// In [`super::for_each_inst`]'s order.
fn mark(list: &mut [Inst], free: &[bool], next: &mut usize) {
    for inst in list {
        if let InstKind::TmaStores { ordered: waits, .. }
        | InstKind::TmaLoads {
            after_stores: waits,
            ..
        } = &mut inst.kind
        {
            *waits = !free[*next];
            *next += 1;
        }
        for body in inst.kind.bodies_mut() {
            mark(body, free, next);
        }
    }
}

/// Whether `i` waits for the stores in flight, if it is one that may: a
/// TMA store (`ordered`) or a block's TMA load (`after_stores`).
pub fn ordered(i: &Inst) -> Option<bool> {
    match i.kind {
        InstKind::TmaStores { ordered, .. } => Some(ordered),
        InstKind::TmaLoads { after_stores, .. } => Some(after_stores),
        _ => None,
    }
}

/// The stores that may be in flight: the store instructions, each with
/// whether it may be from an earlier trip of a loop around this point
/// (its origins' loop counters then held other values: never proven apart).
type InFlight<'a> = Vec<(&'a Inst, bool)>;

struct Flow<'a, 'b> {
    ints: &'a [IntValue],
    maps: &'a [TensorMapIr],
    numbers: &'b BTreeMap<*const Inst, usize>,
    free: &'b mut Vec<bool>,
    decide: bool,
}

impl<'a> Flow<'a, '_> {
    /// What may be in flight after `list`, entered with `flight`; marks
    /// the stores that may overlap one in flight as they are reached (a
    /// loop's body is walked until its entry stops growing, so the last
    /// walk, on the most, decides).
    fn list(&mut self, list: &'a [Inst], mut flight: InFlight<'a>) -> InFlight<'a> {
        for inst in list {
            match &inst.kind {
                InstKind::TmaStores { ordered: waits, .. }
                | InstKind::TmaLoads {
                    after_stores: waits,
                    ..
                } => {
                    let n = self.numbers[&(inst as *const Inst)];
                    let free = flight
                        .iter()
                        .all(|&(earlier, old)| self.disjoint(earlier, inst, old));
                    self.free[n] = free;
                    if if self.decide { !free } else { *waits } {
                        // Its wait retires every group before it.
                        flight.clear();
                    }
                    // A load writes no global memory.
                    if matches!(inst.kind, InstKind::TmaStores { .. }) {
                        add(&mut flight, &[(inst, false)]);
                    }
                }
                InstKind::If {
                    then, otherwise, ..
                } => {
                    let after_then = self.list(then, flight.clone());
                    let after_otherwise = self.list(otherwise, flight.clone());
                    add(&mut flight, &after_then);
                    add(&mut flight, &after_otherwise);
                }
                InstKind::ReduceBlocks { body, .. } => {
                    let after = self.list(body, flight.clone());
                    add(&mut flight, &after);
                }
                InstKind::Loop { body, .. } | InstKind::Pipeline { body, .. } => loop {
                    // What is in flight at a trip's end is a trip old at
                    // the next one's start.
                    let after: InFlight = self
                        .list(body, flight.clone())
                        .into_iter()
                        .map(|(i, _)| (i, true))
                        .collect();
                    // Entries only join or age: a fixpoint once neither.
                    let size = |f: &InFlight| (f.len(), f.iter().filter(|e| e.1).count());
                    let before = size(&flight);
                    add(&mut flight, &after);
                    if size(&flight) == before {
                        break;
                    }
                },
                _ => {}
            }
        }
        flight
    }

    /// Whether every box of store `a` misses every box of `b` (a store or
    /// a block's TMA load): of different tensors, or, both of one trip of
    /// every loop around them (`a` not `old`), apart along some dimension
    /// of the tensor by at least the box that comes first there.
    fn disjoint(&self, a: &Inst, b: &Inst, old: bool) -> bool {
        let (Some(sa), Some(sb)) = (boxes(a), boxes(b)) else {
            return false;
        };
        sa.iter()
            .all(|x| sb.iter().all(|y| self.boxes_apart(x, y, old)))
    }

    fn boxes_apart(&self, x: &Inst, y: &Inst, old: bool) -> bool {
        let (Some((mx, ox)), Some((my, oy))) = (place(x), place(y)) else {
            return false;
        };
        let (mx, my) = (&self.maps[mx], &self.maps[my]);
        if mx.param != my.param {
            return true;
        }
        // Two maps of one tensor have its dimensions in one order.
        !old && mx.dims.len() == my.dims.len()
            && ox
                .iter()
                .zip(oy)
                .zip(mx.dims.iter().zip(&my.dims))
                .any(|((&a, &b), (dx, dy))| {
                    let (la, lb) = (linear(self.ints, a), linear(self.ints, b));
                    match (la, lb) {
                        // x starts past y's box and y past x's the other
                        // way round the 32-bit coordinates TMA takes (the
                        // IR's are truncated to them, so origins a multiple
                        // of 2^32 apart are one box).
                        (Some(la), Some(lb)) => la.difference(&lb).is_some_and(|d| {
                            let r = d.rem_euclid(1 << 32);
                            r >= dy.2.abs() && (1 << 32) - r >= dx.2.abs()
                        }),
                        _ => false,
                    }
                })
    }
}

/// The boxes of a TMA store or of a block's TMA load.
fn boxes(i: &Inst) -> Option<&Vec<Inst>> {
    match &i.kind {
        InstKind::TmaStores { stores: x, .. } | InstKind::TmaLoads { loads: x, .. } => Some(x),
        _ => None,
    }
}

/// A box's map and origin.
fn place(i: &Inst) -> Option<(usize, &Vec<IntId>)> {
    match &i.kind {
        InstKind::TmaStore { map, origin, .. } | InstKind::TmaLoad { map, origin, .. } => {
            Some((*map, origin))
        }
        _ => None,
    }
}

/// `more` into `set`, an instruction once (old if either says so).
fn add<'a>(set: &mut InFlight<'a>, more: &[(&'a Inst, bool)]) {
    for &(i, old) in more {
        match set.iter_mut().find(|(s, _)| std::ptr::eq(*s, i)) {
            Some(entry) => entry.1 |= old,
            None => set.push((i, old)),
        }
    }
}

/// A value as a sum of terms: values it cannot see into (by id) times
/// constants, plus a constant.
#[derive(Clone, Debug, PartialEq)]
struct Linear {
    terms: BTreeMap<IntId, i64>,
    constant: i64,
}

impl Linear {
    /// `self - other` where the terms cancel: the constant left.
    fn difference(&self, other: &Linear) -> Option<i64> {
        (self.terms == other.terms).then(|| self.constant.checked_sub(other.constant))?
    }

    fn scaled(mut self, k: i64) -> Option<Linear> {
        for c in self.terms.values_mut() {
            *c = c.checked_mul(k)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self.constant.checked_mul(k)?;
        Some(self)
    }

    fn plus(mut self, other: Linear, sign: i64) -> Option<Linear> {
        for (id, c) in other.terms {
            let e = self.terms.entry(id).or_insert(0);
            *e = e.checked_add(c.checked_mul(sign)?)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self
            .constant
            .checked_add(other.constant.checked_mul(sign)?)?;
        Some(self)
    }
}

/// Value `id` as a [`Linear`]: sums, differences and products by
/// constants looked through, anything else a term of its own. `None` on
/// an overflow.
fn linear(ints: &[IntValue], id: IntId) -> Option<Linear> {
    let constant = |id: IntId| match ints[id].def {
        IntDef::Const(c) => Some(c),
        _ => None,
    };
    match ints[id].def {
        IntDef::Const(c) => Some(Linear {
            terms: BTreeMap::new(),
            constant: c,
        }),
        IntDef::Bin(Op::Add, a, b) => linear(ints, a)?.plus(linear(ints, b)?, 1),
        IntDef::Bin(Op::Sub, a, b) => linear(ints, a)?.plus(linear(ints, b)?, -1),
        IntDef::Bin(Op::Mul, a, b) => match (constant(a), constant(b)) {
            (Some(k), _) => linear(ints, b)?.scaled(k),
            (_, Some(k)) => linear(ints, a)?.scaled(k),
            _ => Some(Linear {
                terms: BTreeMap::from([(id, 1)]),
                constant: 0,
            }),
        },
        _ => Some(Linear {
            terms: BTreeMap::from([(id, 1)]),
            constant: 0,
        }),
    }
}
