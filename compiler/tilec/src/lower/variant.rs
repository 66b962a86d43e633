//! The variants a kernel compiles to, one entry point each, and which of
//! them earn their compile time. In: a way to lower one variant. Out: the
//! lowered variants in the order the runtime tries them (full tiles first,
//! the guarded entry for any block last).

use super::Lowered;
use crate::check::program::Kernel;
use crate::diagnostic::Diagnostic;
use crate::ir::InstKind;

/// Which variant of a kernel to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Full tiles: no guards, the widest copies. Its launch conditions say
    /// when it applies (every k-tile full, vector alignment); its block
    /// conditions, on which blocks (those whose tiles are inside the tensors).
    Full,
    /// The full variant for any K: each copy whose coordinates move within
    /// the block (a k-tile's) tests that the thread's whole copy is inside
    /// the tensor, and copies the partial tile with guards where it is not
    /// ([`residue`]). The test costs the full variant its speed on whole
    /// k-tiles (registers: sgemm_nt_sm80 went from 128 to 133, one block
    /// a multiprocessor instead of two, 14% slower at 4096^3), hence a
    /// variant of its own, for the K that are not multiples of the k-tile.
    KResidue,
    /// The `KResidue` variant at the copy widths that need no launch
    /// condition: the full blocks at any alignment (and any K where every
    /// copy of a tensor is tested; an untested access keeps its tensor's
    /// facts, as in `KResidue`). Where a vector's
    /// alignment depends on an extent (f32 A read along M in 16-byte
    /// vectors needs `M % 4 == 0`), the other full entries refuse every
    /// block of an odd M; this one copies such a tensor element by element,
    /// tested as `KResidue` tests it, and leaves the guarded entry the
    /// edges. (Tests in the guarded entry instead, for every coordinate,
    /// gained at most 6% there: its guards' predicates stay live through
    /// the main loop, 142 registers against 128.)
    Unaligned,
    /// Partial tiles with the full variant's copy widths where the extents
    /// allow them: every global access guarded, but an asynchronous copy
    /// keeps its vectors where each vector's guard is one test (its
    /// elements' coordinates equal, or consecutive from a multiple of the
    /// width below an extent that is one). Its launch conditions are those
    /// alignments (a K that is a multiple of 8, say); it runs the edge
    /// blocks, or the whole grid where k-tiles are partial. Kept only where
    /// some guarded copy is wider than an element.
    GuardedVectors,
    /// Any extents, any block: every global access guarded by the tensor's
    /// coordinates, per-element copies. Where the full variant has block
    /// conditions, it takes a block offset, so that the runtime can launch
    /// it on the edge blocks alone.
    Guarded,
}

impl Variant {
    /// Whether the variant guards its global accesses (it runs partial tiles).
    pub fn guarded(self) -> bool {
        matches!(self, Variant::GuardedVectors | Variant::Guarded)
    }
}

/// Every variant a kernel may compile to, in the order the runtime tries
/// them ([`lower_variants`] makes those that earn their compile time).
pub fn variants(_: &Kernel) -> Vec<Variant> {
    vec![
        Variant::Full,
        Variant::KResidue,
        Variant::GuardedVectors,
        Variant::Unaligned,
        Variant::Guarded,
    ]
}

/// The variants of `k` that earn their compile time, each lowered by
/// `lower`, in the order the runtime tries them: the full variant alone
/// where it runs every block at any extents; it and `GuardedVectors`
/// alone where the latter's conditions are facts that aligned copies of
/// the tensors make hold ([`Kernel::stageable`]), or conditions every
/// entry has (the checker's own: `Guarded` would never launch). A `GuardedVectors`
/// variant without a guarded vector copy is the `Guarded` one with
/// conditions. A `KResidue` variant runs the full blocks where the k-tiles
/// are partial; it is made only where the guarded variant copies element by
/// element (where it keeps the copies' vectors it ran a partial K about as
/// fast: sgemm_nt_sm80 at 4096 x 4096 x 4100 on the H200, 0.92 of cuBLAS,
/// the tested full entry 0.83; the cp.async sgemm_tn_sm80 of version 17, whose guarded entry copies
/// element by element: 0.76, tested 0.89; docs/performance.md). An
/// optional variant is kept only where it can run: where every variant
/// before it needs a condition that its own do not imply (otherwise,
/// whenever it could run, one of those runs first: softmax's unaligned
/// entry needed `N % 8192 == 0`, its full one that and `N % 4 == 0`),
/// and not where every condition of the full entry it lacks is one aligned
/// copies make hold (the full entry then runs there, on copies).
pub fn lower_variants(
    k: &Kernel,
    lower: impl Fn(Variant) -> Result<Lowered, Diagnostic>,
) -> Result<Vec<Lowered>, Diagnostic> {
    lower_variants_each(k, lower, &mut |_| {})
}

/// [`lower_variants`], telling `ready` of each variant as soon as it is
/// known to be kept: a build starts its back end there while the next
/// variants are lowered (the full variant's even though a later one may
/// still fail to lower), in the result's order. The guarded variant comes
/// last, and not at all where an earlier one runs every block at any
/// extents.
pub fn lower_variants_each(
    k: &Kernel,
    lower: impl Fn(Variant) -> Result<Lowered, Diagnostic>,
    ready: &mut dyn FnMut(&Lowered),
) -> Result<Vec<Lowered>, Diagnostic> {
    let mut full = lower(Variant::Full)?;
    // A full entry whose conditions can never hold (a thread layout that
    // does not divide a global tensor's tile: `24 % 16 == 0`) never
    // launches, nor would the other full-tile entries, which share it: the
    // guarded entry alone runs every block, and is the one built.
    let never = full
        .conditions
        .iter()
        .any(|c| c.fact.eval(&|_: &str| None) == Some(false));
    if never {
        let guarded = lower(Variant::Guarded)?;
        ready(&guarded);
        return Ok(vec![guarded]);
    }
    // An entry that runs every block at any extents (all its global
    // traffic TMA's, say) leaves the others nothing to run, and so has
    // none to fall back on where its quotients pass 32 bits.
    if full.conditions.is_empty() && full.block_conditions.is_empty() {
        super::narrow::widen(&mut full.ir.ints);
        full.narrowed.clear();
        ready(&full);
        return Ok(vec![full]);
    }
    ready(&full);
    // Whether `l` has a copy wider than an element (`guarded`: one with a
    // guard).
    let wide_copies = |l: &Lowered, guarded: bool| {
        let mut wide = false;
        crate::ir::for_each_atom(&l.ir.body, &mut |i| {
            if let InstKind::Copy { atom, src, dst } = &i.kind {
                wide |=
                    atom.width() > 1 && (!guarded || src.guard.is_some() || dst.guard.is_some());
            }
        });
        wide
    };
    // The guarded variants and `Unaligned` keep at most the full variant's
    // copy widths: where it copies element by element, `GuardedVectors` is
    // `Guarded` with conditions, and `Unaligned` is `KResidue` (neither is
    // lowered: 6 of 19 ms of lowering for
    // tests/run/streamk_transposing_copies.tile). `vectors`: the
    // `GuardedVectors` variant where some guarded copy in it is wide.
    let full_wide = wide_copies(&full, false);
    let vectors = match full_wide {
        true => Some(lower(Variant::GuardedVectors)?).filter(|v| wide_copies(v, true)),
        false => None,
    };
    // Where aligned copies make every condition of the guarded entry with
    // vectors hold (docs/design/strides.md), it runs every extent, faster
    // than the per-element entries, which would then never launch, and
    // than a tested full entry on the full blocks where the full one
    // cannot run (sgemm_nt_sm80 at K = 4100: 0.92 of cuBLAS, tested 0.83).
    // So too where every condition it has is the checker's own, which
    // every entry needs (attention's `0 <= S` from a composition):
    // wherever the per-element entry could run, it runs first (that
    // entry's back end was a fifth of the example's build).
    let everyones = |c: &tilec_layout::Condition| {
        k.conditions.iter().any(|d| {
            d.needed_by != crate::check::kernel::FULL_TILES && k.in_place(&d.fact) == c.fact
        })
    };
    if let Some(v) = &vectors
        && (v.conditions.iter().all(|c| k.stageable(&c.fact)) || v.conditions.iter().all(everyones))
    {
        ready(v);
        return Ok(vec![full, vectors.expect("just matched")]);
    }
    let on_copies = full.conditions.iter().all(|c| k.stageable(&c.fact));
    let mut out = vec![full];
    // Keeps `l`; true where it runs every block at any extents (no
    // conditions of either kind: an unaligned entry whose tiles come from a
    // loop counter, each copy tested): no later entry would ever launch,
    // so, like such a full entry, it has no narrowed quotients to fall
    // back from, and the guarded entry is not made (a third of the build
    // of tests/run/pingpong_smem_epilogue.tile).
    let keep = |mut l: Lowered, out: &mut Vec<Lowered>, ready: &mut dyn FnMut(&Lowered)| {
        let runs_all = l.conditions.is_empty() && l.block_conditions.is_empty();
        if runs_all {
            super::narrow::widen(&mut l.ir.ints);
            l.narrowed.clear();
        }
        ready(&l);
        out.push(l);
        runs_all
    };
    // Optional: where one cannot be made (too many atoms, say), the full
    // and guarded entries still run every extent.
    // Facts compared as they hold on the caller's buffers: a vector's
    // `A.stride.0 % 8 == 0` is `K % 8 == 0` there, implied by `K % 64 == 0`.
    let implied = |v: &Lowered, c: &tilec_layout::Condition| {
        let c = k.as_declared(&c.fact);
        v.conditions
            .iter()
            .any(|u| k.as_declared(&u.fact).implies(&c))
    };
    let earns = |v: &Lowered, before: &[Lowered]| {
        before
            .iter()
            .all(|b| b.conditions.iter().any(|c| !implied(v, c)))
    };
    // None earns its place after an entry without conditions (the TMA
    // GEMMs' full one), nor after a full entry whose conditions aligned
    // copies make hold (it then runs the full blocks at any K and
    // alignment: the cp.async sgemm_tn_sm80 at 4096 x 4096 x 4100 on copies 0.85-0.87
    // of cuBLAS, `_k_residue` 0.87): not lowered at all there (3% of the
    // TMA GEMMs' build).
    let open = |before: &[Lowered]| !on_copies && before.iter().all(|b| !b.conditions.is_empty());
    // Nor one whose extents leave the full entry nothing but conditions
    // that aligned copies make hold: there the full entry runs on copies
    // (a stream-K GEMM's `_k_residue`, whose tiles come from a loop
    // counter and so need whole tiles of M and N in both).
    let covered = |v: &Lowered, full: &Lowered| {
        full.conditions
            .iter()
            .all(|c| k.stageable(&c.fact) || implied(v, c))
    };
    if vectors.is_none()
        && open(&out)
        && let Ok(r) = lower(Variant::KResidue)
        && earns(&r, &out)
        && !covered(&r, &out[0])
        && keep(r, &mut out, ready)
    {
        return Ok(out);
    }
    if let Some(v) = vectors
        && keep(v, &mut out, ready)
    {
        return Ok(out);
    }
    if full_wide
        && open(&out)
        && let Ok(u) = lower(Variant::Unaligned)
        && earns(&u, &out)
        && !covered(&u, &out[0])
        && keep(u, &mut out, ready)
    {
        return Ok(out);
    }
    let guarded = lower(Variant::Guarded)?;
    ready(&guarded);
    out.push(guarded);
    Ok(out)
}

/// The entry-point name of a variant.
pub fn entry_name(kernel: &str, v: Variant) -> String {
    match v {
        Variant::Full => kernel.to_string(),
        Variant::KResidue => format!("{kernel}_k_residue"),
        Variant::Unaligned => format!("{kernel}_unaligned"),
        Variant::GuardedVectors => format!("{kernel}_guarded_vec"),
        Variant::Guarded => format!("{kernel}_guarded"),
    }
}
