//! Lower: typed program -> kernel IR.
//!
//! In: a checked [`Kernel`]. Out: a [`KernelIr`] whose accesses are base +
//! index, every index an integer value of the IR's table, loops over static
//! modes unrolled into atoms, register indices constant; plus the facts the
//! runtime needs to refuse an out-of-bounds launch ([`Lowered::global_accesses`]
//! and [`Lowered::loops`]). The IR's verifier ([`crate::ir::verify`]) runs after lowering.
//!
//! This file walks the statements; `access` makes addresses (guards,
//! swizzles, vector widths, shared bounds), `residue` copies (and the
//! k-residue and unaligned entries' tested copies), `order` the walk of a
//! copy or statement in its memory's order, `tensor_core` the MMA
//! and ldmatrix atoms, `checked` the `--checked` bound checks, `variant`
//! which entries a kernel gets, `conditions` which of the checker's
//! conditions an entry needs.

mod access;
mod checked;
mod conditions;
mod elementwise;
mod ints;
mod loops;
mod narrow;
mod order;
mod pipeline;
mod predication;
mod reduce;
mod residue;
mod rolled;
mod statement_notes;
mod tensor_core;
mod tma_waits;
mod variant;
mod warpgroup;

pub use access::GlobalAccess;
pub use narrow::NarrowedDivision;
pub use variant::{Variant, entry_name, lower_variants, lower_variants_each, variants};

use crate::check::program::{Kernel, Op, ParamKind, Scalar, Stmt, View};
use crate::diagnostic::{Diagnostic, SourceLines};
use crate::ir::{
    Buffer, Inst, InstKind, IntDef, IntId, IntValue, KernelIr, MmaAtom, Param, ScalarRef,
};
use crate::span::Span;
use foldhash::{HashMap, HashMapExt};
use loops::{MAX_UNROLL, indexes_registers};
use tilec_layout::{Coord, Int};

/// A kernel's IR and what the runtime checks before launching it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    pub variant: Variant,
    pub ir: KernelIr,
    /// Every distinct global index, symbolic in `thread.x`, `block.*`,
    /// loop counters and extents: the runtime bounds them at launch.
    pub global_accesses: Vec<GlobalAccess>,
    /// The loops' counters and bounds, for those bounds.
    pub loops: Vec<LoopRange>,
    /// The operands of the quotients the entry computes in 32 bits, which
    /// the runtime bounds within them (or launches a later entry). Named as
    /// the IR names them: in-place stride symbols never reach the IR.
    pub narrowed: Vec<NarrowedDivision>,
    /// The variant's launch conditions: the checker's (less the full-tile
    /// facts the variant does not need: all of them for the guarded ones,
    /// the k-tiles' for `_k_residue`) and what lowering relied on (vector
    /// alignment).
    pub conditions: Vec<tilec_layout::Condition>,
    /// Facts about `block.*` that every block this variant runs must
    /// satisfy (its tiles are full); empty where any block may run it. The
    /// runtime launches it on the blocks where they hold.
    pub block_conditions: Vec<tilec_layout::Condition>,
    /// Choices of atoms worth knowing about, once per statement: a copy
    /// that could have been ldmatrix and why it is not (`check --perf`).
    pub notes: Vec<Note>,
    /// The IR's tensor maps, symbolic in the extents, for the runtime to
    /// encode at launch (in the IR's order).
    pub tensor_maps: Vec<tilec_layout::TensorMap>,
}

/// A remark on how a statement was lowered.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub span: Span,
    pub text: String,
}

impl Lowerer<'_> {
    /// A note on how statement `span` was lowered, once per statement.
    fn note(&mut self, span: Span, text: String) {
        if !self.notes.iter().any(|n| n.span == span) {
            self.notes.push(Note { span, text });
        }
    }

    /// A note on statement `span` beside any other on it (an atom's), each
    /// text once: a statement lowered again, once a trip of a loop unrolled
    /// by trips, adds no copy. [`Lowerer::note`] keeps one a statement
    /// because its texts vary by trip (an ldmatrix refusal names offsets).
    fn note_beside(&mut self, span: Span, text: &str) {
        if !self.notes.iter().any(|n| n.span == span && n.text == text) {
            self.notes.push(Note {
                span,
                text: text.into(),
            });
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LoopRange {
    pub name: String,
    pub start: Int,
    pub end: Int,
}

/// The hint of an internal error.
const BUG: &str = "this is a bug in tilec, not in the kernel; please report it with this file";

pub fn lower(k: &Kernel) -> Result<Lowered, Diagnostic> {
    lower_variant(k, Variant::Full)
}

/// Lowers one variant; the IR's name is the variant's entry point.
pub fn lower_variant(k: &Kernel, variant: Variant) -> Result<Lowered, Diagnostic> {
    lower_with(k, variant, None, None, true)
}

/// Lowers one variant, each access the runtime bounds recording its line
/// of `lines`, which a refused launch names.
pub fn lower_variant_at(
    k: &Kernel,
    variant: Variant,
    lines: &SourceLines,
) -> Result<Lowered, Diagnostic> {
    lower_with(k, variant, None, Some(lines), true)
}

/// Lowers one variant for a `--checked` build: before every global and
/// shared access, an [`InstKind::Assert`] that it lies inside its tensor or
/// buffer, reporting the line of `lines` it comes from.
pub fn lower_variant_checked(
    k: &Kernel,
    variant: Variant,
    lines: &SourceLines,
) -> Result<Lowered, Diagnostic> {
    lower_with(k, variant, Some(lines), Some(lines), true)
}

/// Lowers a variant, the guarded entries' large element-wise statements
/// rolled where `roll` (and their rows of shared memory take no bytes the
/// kernel would not have taken anyway; else it lowers the whole variant
/// again unrolled).
fn lower_with(
    k: &Kernel,
    variant: Variant,
    checks: Option<&SourceLines>,
    lines: Option<&SourceLines>,
    roll: bool,
) -> Result<Lowered, Diagnostic> {
    let block_threads = k
        .launch
        .block
        .iter()
        .fold(Int::Static(1), |a, b| a.mul(b))
        .as_static()
        .unwrap_or(0);
    let mut l = Lowerer {
        k,
        variant,
        block_threads,
        ints: Vec::new(),
        table: HashMap::new(),
        counters: Vec::new(),
        active: Vec::new(),
        unrolled: Vec::new(),
        checks,
        lines,
        line: None,
        atoms: 0,
        accesses: Vec::new(),
        loops: Vec::new(),
        conditions: Vec::new(),
        by_element: Vec::new(),
        tested: false,
        untested: Vec::new(),
        notes: Vec::new(),
        tensor_maps: Vec::new(),
        map_irs: Vec::new(),
        extra_registers: Vec::new(),
        extra_shared: Vec::new(),
        roll,
        under: Vec::new(),
        threads: Vec::new(),
        caps: Vec::new(),
        when: Vec::new(),
        sm90: tensor_core::sm90_only(&k.body),
    };
    let body = l.stmts(&k.body)?;
    let mut shared: Vec<Buffer> = k
        .shared
        .iter()
        .map(|b| Buffer {
            elem: b.elem,
            len: b.len,
            init: None,
            align: b.align(),
            at: 0,
            name: b.name.clone().unwrap_or_default(),
        })
        .chain(l.extra_shared.iter().map(|&(elem, len)| Buffer {
            elem,
            len,
            init: None,
            align: 16,
            at: 0,
            name: String::new(),
        }))
        .collect();
    // Buffers whose lifetimes do not meet share bytes, handed over at a barrier.
    // Where rolled statements' rows would add bytes (placed again without
    // them), the variant is lowered unrolled.
    let unrolled = (!l.extra_shared.is_empty()).then(|| body.clone());
    let placed = crate::ir::shared::hand_over(&shared, body)
        .ok_or_else(|| Diagnostic::new("shared memory past 2^63 bytes", k.span))?;
    if let Some(body) = unrolled
        && rolled::rows_grow(&shared, k.shared.len(), &placed, body)
    {
        return lower_with(k, variant, checks, lines, false);
    }
    for (b, at) in shared.iter_mut().zip(placed.offsets) {
        b.at = at;
    }
    let sharers = crate::ir::shared::byte_sharers(&shared);
    let mut body = pipeline::merge_block_loads(placed.body, &sharers);
    if let Some((span, n)) = pipeline::prefetch_block_loads(&mut body, &l.ints) {
        l.notes.push(Note {
            span,
            text: format!(
                "pipeline: the producer prefetches the {n} TMA box(es) loaded after it into L2 once its last load is issued"
            ),
        });
    }
    crate::ir::shared::proxy_fences(&mut body, &shared);
    // Of the kernel's own buffers (a rolled statement's rows are lowering's).
    for (b, from) in placed.takers.into_iter().filter(|t| t.0 < k.shared.len()) {
        let first = body.iter().find(|i| {
            let mut touched = Vec::new();
            i.shared_buffers(&mut touched);
            touched.contains(&b)
        });
        if let Some(span) = first.map(|i| i.span) {
            let note = Note {
                span,
                text: format!(
                    "shared memory: this tile takes the bytes of {} buffer(s) used only before it; a barrier hands them over",
                    from.len()
                ),
            };
            if !l.notes.contains(&note) {
                l.notes.push(note);
            }
        }
    }
    // Whether a TMA load is shared by the blocks of the cluster.
    let mut multicast = false;
    crate::ir::for_each_atom(&body, &mut |i| {
        multicast |= matches!(i.kind, InstKind::TmaLoad { parts, .. } if parts > 1);
    });
    let pads = multicast && k.launch.may_pad();
    if pads {
        body = l
            .past_the_grid(body)
            .map_err(|msg| Diagnostic::new(msg, k.span))?;
    }
    let granules = crate::ir::granules(&l.ints);
    let mut body = tma_waits::tma_store_waits(tma_waits::tma_waits(body), &granules, &sharers);
    crate::ir::stores::mark_unordered(&l.ints, &l.map_irs, &mut body);
    let (block_conditions, conditions) = conditions::needed(k, variant, &l.by_element, &l.untested);
    let params = k
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Tensor { elem, .. } => Param::Tensor {
                name: p.name.clone(),
                elem: *elem,
            },
            ParamKind::Scalar(elem) => Param::Scalar {
                name: p.name.clone(),
                elem: *elem,
            },
        })
        .collect();
    let mut ir = KernelIr {
        name: entry_name(&k.name, variant),
        params,
        extents: k.extents.clone(),
        block_offset: variant.guarded() && k.conditions.iter().any(conditions::is_block_fact),
        block_threads,
        min_blocks: k.launch.min_blocks,
        // A cluster is for sharing loads: a variant whose loads all differ
        // between blocks (or has none: an unaligned tensor's copies) runs
        // block by block.
        cluster: match multicast {
            true => k.launch.cluster.map(|c| c as u32),
            false => [1; 3],
        },
        pads,
        shared,
        registers: k
            .registers
            .iter()
            .map(|r| Buffer {
                elem: r.elem,
                len: r.len,
                init: r.init,
                align: 16,
                at: 0,
                name: r.name.clone().unwrap_or_default(),
            })
            .chain(l.extra_registers.iter().map(|&(elem, len)| Buffer {
                elem,
                len,
                init: None,
                align: 16,
                at: 0,
                name: String::new(),
            }))
            .collect(),
        ints: l.ints,
        tensor_maps: l.map_irs,
        body,
    };
    // The guarded entries are what the others fall back on.
    let narrowed = match variant.guarded() {
        true => Vec::new(),
        false => narrow::narrow(&mut ir, &|c| loops::loop_counter(&l.counters[c].name, c)),
    };
    reduce::reduce_body_is_the_groups(&ir)?;
    crate::ir::verify::verify(&ir).map_err(|e| {
        Diagnostic::new(
            format!(
                "internal error in lowering: the kernel IR of `{}` fails the verifier: {e}",
                ir.name
            ),
            k.span,
        )
        .with_label("while lowering this kernel")
        .with_help(BUG)
    })?;
    // The variant's launch conditions: the checker's, less the full-tile
    // facts it does not need (above), plus what lowering relied on.
    let mut conditions = conditions;
    for mut c in l.conditions {
        c.fact = k.in_place(&c.fact);
        if !conditions.contains(&c) {
            conditions.push(c);
        }
    }
    let conditions = conditions::without_implied(conditions);
    // What the runtime evaluates names no in-place stride symbol (it has
    // no value for one).
    let accesses = l.accesses.into_iter().map(|a| GlobalAccess {
        index: k.in_place_int(&a.index),
        below: a.below.map(|b| k.in_place_int(&b)),
        when: a
            .when
            .iter()
            .map(|(x, y)| (k.in_place_int(x), k.in_place_int(y)))
            .collect(),
        ..a
    });
    let loops = l.loops.into_iter().map(|r| LoopRange {
        start: k.in_place_int(&r.start),
        end: k.in_place_int(&r.end),
        ..r
    });
    let mut tensor_maps = l.tensor_maps;
    for d in tensor_maps.iter_mut().flat_map(|m| &mut m.dims) {
        d.extent = k.in_place_int(&d.extent);
        d.stride = k.in_place_int(&d.stride);
    }
    Ok(Lowered {
        variant,
        ir,
        global_accesses: access::dedup(accesses.collect()),
        narrowed,
        loops: loops.collect(),
        conditions,
        block_conditions,
        notes: l.notes,
        tensor_maps,
    })
}

/// Why a statement cannot be lowered: a message and a hint for it, or a
/// diagnostic already made for a statement inside it.
enum Problem {
    Here(String, &'static str),
    Inside(Diagnostic),
}

impl From<String> for Problem {
    /// What most lowering failures come down to.
    fn from(msg: String) -> Problem {
        Problem::Here(
            msg,
            "operations run on static per-thread shapes; partition further",
        )
    }
}

struct Lowerer<'k> {
    k: &'k Kernel,
    variant: Variant,
    block_threads: i64,
    ints: Vec<IntValue>,
    table: HashMap<IntDef, IntId>,
    /// Every loop opened so far, by id.
    counters: Vec<loops::Counter>,
    /// The loops enclosing the statement being lowered, innermost last.
    active: Vec<usize>,
    /// Counters of the unrolled loops enclosing it, with their value in
    /// the copy of the body being lowered.
    unrolled: Vec<(String, i64)>,
    /// For a `--checked` build, the source's lines.
    checks: Option<&'k SourceLines>,
    /// The source's lines, where given, and the line of the statement
    /// being lowered: the accesses the runtime bounds record it.
    lines: Option<&'k SourceLines>,
    line: Option<u32>,
    /// Atoms made so far, against [`MAX_ATOMS`].
    atoms: i64,
    accesses: Vec<GlobalAccess>,
    loops: Vec<LoopRange>,
    conditions: Vec<tilec_layout::Condition>,
    /// The tensors whose elements the variant touches one by one (loads,
    /// stores, copies): all but those read by TMA alone.
    by_element: Vec<usize>,
    /// Whether the global accesses being lowered lie under a test that the
    /// thread's whole copy is inside its tensor ([`residue`]).
    tested: bool,
    /// The tensors the variant touches element by element outside
    /// such a test: their full-tile facts stay launch conditions.
    untested: Vec<usize>,
    notes: Vec<Note>,
    /// Register arrays lowering adds (after the kernel's), by element type.
    extra_registers: Vec<(crate::check::program::Elem, i64)>,
    /// Shared buffers lowering adds (after the kernel's): the rows of
    /// rolled statements ([`rolled`]).
    extra_shared: Vec<(crate::check::program::Elem, i64)>,
    /// Whether large element-wise statements of guarded entries may roll
    /// (unless their rows would make the kernel's shared memory larger).
    roll: bool,
    /// The tensor maps made so far, and their IR form.
    tensor_maps: Vec<tilec_layout::TensorMap>,
    map_irs: Vec<crate::ir::TensorMapIr>,
    /// The conditions of the ifs, and the bounds of the loops, around the
    /// statement being lowered: whether whole warps run it.
    under: Vec<IntId>,
    /// `thread.x`'s range where the ifs around the statement bound it
    /// (`if thread.x < 32`), and the name its global accesses give it for
    /// the runtime's bound check (a range of its own, like a loop's).
    threads: Vec<(String, (i64, i64))>,
    /// The parts of values the ifs around the statement compare, each with
    /// the value it equals there ([`Lowerer::capped`]).
    caps: Vec<(Int, Int)>,
    /// What the ifs around the statement require ([`GlobalAccess::when`]).
    when: Vec<(Int, Int)>,
    /// Whether the kernel runs on sm_90 alone (it has a wgmma, a pipeline
    /// or a TMA copy), so that lowering may choose sm_90's instructions
    /// (stmatrix) where they are faster.
    sm90: bool,
}

impl Lowerer<'_> {
    fn stmts(&mut self, stmts: &[Stmt]) -> Result<Vec<Inst>, Diagnostic> {
        let mut out = Vec::new();
        for s in stmts {
            self.line = self.lines.map(|l| l.line(s.span));
            let mut here = Vec::new();
            let here = self
                .stmt(s, &mut here)
                .and_then(|()| self.with_bound_checks(here))
                .map_err(|e| match e {
                    Problem::Here(msg, help) => Diagnostic::new(msg, s.span).with_help(help),
                    Problem::Inside(d) => d,
                })?;
            warpgroup::join_wgmma_groups(&mut out, here);
        }
        Ok(out)
    }

    fn stmt(&mut self, s: &Stmt, out: &mut Vec<Inst>) -> Result<(), Problem> {
        match &s.op {
            Op::ReduceBlocks {
                registers,
                across,
                atomic,
                body,
            } => self.reduce_blocks(*registers, across, *atomic, body, s.span, out)?,
            Op::Sync => {
                self.spend(1)?;
                out.push(Inst::at(s.span, InstKind::Barrier))
            }
            Op::AsyncFence => {
                self.spend(1)?;
                out.push(Inst::at(s.span, InstKind::AsyncFence))
            }
            Op::AsyncWait(n) => {
                self.spend(1)?;
                out.push(Inst::at(s.span, InstKind::AsyncWait(*n)))
            }
            Op::Copy {
                src,
                dst,
                asynchronous,
                demand,
            } => {
                let n = static_size(src)?;
                self.spend(n)?;
                // ldmatrix is a whole warp's: not where its lanes may part.
                if !asynchronous
                    && self.warps_agree()
                    && let Some(insts) = self.ldmatrix(src, dst, n, s.span, *demand)?
                {
                    out.extend(insts);
                    return Ok(());
                }
                self.copy(src, dst, n, *asynchronous, s.span, out)?;
            }
            Op::Gemm { a, b, c } => {
                let (m, n) = (mode_size(c, 0)?, mode_size(c, 1)?);
                let kk = mode_size(a, 1)?;
                self.spend(m.saturating_mul(n).saturating_mul(kk))?;
                for k in 0..kk {
                    for mi in 0..m {
                        for ni in 0..n {
                            let (a_, b_, c_) = (
                                self.element(a, &coord2(mi, k), 1)?,
                                self.element(b, &coord2(ni, k), 1)?,
                                self.element(c, &coord2(mi, ni), 1)?,
                            );
                            out.push(Inst::at(
                                s.span,
                                InstKind::Mma {
                                    atom: MmaAtom::Fma {
                                        ab: a.elem,
                                        c: c.elem,
                                    },
                                    a: a_,
                                    b: b_,
                                    c: c_,
                                },
                            ));
                        }
                    }
                }
            }
            Op::Mma { mma, a, b, c } => self.mma(mma, [a, b, c], s.span, out)?,
            Op::Assign { dst, value } => self.assign(dst, value, s.span, out)?,
            Op::Fill { dst, value } => {
                self.spend(static_size(dst)?)?;
                for i in 0..static_size(dst)? {
                    let d = self.element(dst, &Coord::from(i), 1)?;
                    out.push(Inst::at(
                        s.span,
                        InstKind::Fill {
                            elem: dst.elem,
                            dst: d,
                            value: *value,
                        },
                    ));
                }
            }
            Op::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = cond.map(&mut |v| self.fix(v));
                // A condition known here (a static loop's counter, unrolled)
                // keeps one branch.
                match cond.known() {
                    Some(true) => out.extend(self.stmts(then).map_err(Problem::Inside)?),
                    Some(false) => out.extend(self.stmts(otherwise).map_err(Problem::Inside)?),
                    None => {
                        let c = self.predicate(&cond)?;
                        self.under.push(c);
                        let branches = self
                            .branch(&cond, true, then)
                            .and_then(|t| Ok((t, self.branch(&cond, false, otherwise)?)))
                            .map_err(Problem::Inside);
                        self.under.pop();
                        let (then, otherwise) = branches?;
                        out.push(Inst::at(
                            s.span,
                            InstKind::If {
                                cond: c,
                                then,
                                otherwise,
                            },
                        ));
                    }
                }
            }
            Op::Pipeline {
                var,
                start,
                end,
                stages,
                load,
                body,
                turn,
            } => self.pipeline(
                var,
                [start, end],
                *stages,
                [load, body],
                turn.as_ref(),
                s.span,
                out,
            )?,
            Op::CopyTma { src, tma, .. } if tma.map.store => {
                self.tma_store(src, tma, s.span, out)?
            }
            Op::CopyTma {
                dst,
                tma,
                stage: true,
                ..
            } => self.copy_tma(dst, tma, s.span, out)?,
            Op::CopyTma { dst, tma, .. } => self.tma_block_load(dst, tma, s.span, out)?,
            Op::Prefetch { tma, .. } => self.tma_prefetch(tma, s.span, out)?,
            Op::For {
                var,
                start,
                end,
                body,
            } => {
                let (start, end) = (self.fix(start), self.fix(end));
                if let (Some(a), Some(b)) = (start.as_static(), end.as_static())
                    && indexes_registers(body, var)
                {
                    // Registers are indexed by constants: a static loop that
                    // slices them by its counter is unrolled, as CuTe's are.
                    let trips = b.saturating_sub(a);
                    if trips > MAX_UNROLL {
                        return Err(Problem::Here(
                            format!(
                                "this loop slices registers by `{var}` and would unroll {trips} times, more than {MAX_UNROLL}"
                            ),
                            "registers are indexed by constants, so such a loop is unrolled; slice registers outside long loops",
                        ));
                    }
                    for v in a..b {
                        self.unrolled.push((var.clone(), v));
                        let copy = self.stmts(body).map_err(Problem::Inside);
                        self.unrolled.pop();
                        out.extend(copy?);
                    }
                    return Ok(());
                }
                let (id, s_id, e_id) = self.open_loop(var, &start, &end)?;
                self.under.extend([s_id, e_id]);
                let inner = self.stmts(body).map_err(Problem::Inside);
                self.under.truncate(self.under.len() - 2);
                self.active.pop();
                out.push(Inst::at(
                    s.span,
                    InstKind::Loop {
                        id,
                        name: var.clone(),
                        start: s_id,
                        end: e_id,
                        body: inner?,
                    },
                ));
            }
        }
        Ok(())
    }

    /// Counts `n` more atoms toward [`MAX_ATOMS`], before they are made.
    fn spend(&mut self, n: i64) -> Result<(), Problem> {
        self.atoms = self.atoms.saturating_add(n.max(0));
        if self.atoms > MAX_ATOMS {
            return Err(Problem::Here(
                format!(
                    "the kernel unrolls to more than {MAX_ATOMS} copies and multiply-adds per thread"
                ),
                "operations unroll over each thread's static shape: partition the tiles over threads (local_partition) so that each thread holds fewer elements",
            ));
        }
        Ok(())
    }
}

/// The most atoms (element or vector copies, multiply-adds) one variant of
/// a kernel unrolls to: each is an instruction of every thread.
const MAX_ATOMS: i64 = 1 << 16;

fn coord2(a: i64, b: i64) -> Coord {
    Coord::Tuple(vec![Coord::from(a), Coord::from(b)])
}

pub(super) fn scalar(s: &Scalar) -> ScalarRef {
    match s {
        Scalar::Param(p) => ScalarRef::Param(*p),
        Scalar::Literal(v) => ScalarRef::Literal(*v),
        Scalar::Whole(v) => ScalarRef::Literal(*v as f64),
    }
}

pub(super) fn static_size(v: &View) -> Result<i64, String> {
    v.layout
        .size()
        .as_static()
        .ok_or_else(|| format!("this operation has the run-time shape {}", v.layout.shape()))
}

fn mode_size(v: &View, i: usize) -> Result<i64, String> {
    v.layout
        .mode(i)
        .map_err(|e| e.to_string())?
        .size()
        .as_static()
        .ok_or_else(|| format!("this operation has the run-time shape {}", v.layout.shape()))
}
