//! The variants a kernel compiles to: full tiles unguarded and vectorized,
//! on the blocks the checker's full-tile facts allow; guarded with vectors
//! where the extents are aligned; guarded per element, anywhere; and where
//! the tested copies' values are computed.

use std::path::Path;
use tilec::check::kernel::check_source;
use tilec::ir::{CopyAtom, Inst, InstKind, for_each_atom};
use tilec::lower::{Variant, lower_variant, lower_variants, variants};

fn kernel(name: &str) -> tilec::check::program::Kernel {
    kernel_at(&format!("examples/{name}.tile"))
}

/// The kernel of a file under the repository's root.
fn kernel_at(file: &str) -> tilec::check::program::Kernel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../{file}"));
    let src = std::fs::read_to_string(path).unwrap();
    check_source(&src).unwrap().remove(0)
}

fn atoms(insts: &[Inst]) -> Vec<Inst> {
    let mut out = Vec::new();
    for_each_atom(insts, &mut |i| out.push(i.clone()));
    out
}

fn guarded_anywhere(insts: &[Inst]) -> bool {
    atoms(insts).iter().any(|i| match &i.kind {
        InstKind::Copy { src, dst, .. } => src.guard.is_some() || dst.guard.is_some(),
        InstKind::Compute { value, dst, .. } => {
            let mut loads = Vec::new();
            value.loads(&mut loads);
            dst.guard.is_some() || loads.iter().any(|a| a.guard.is_some())
        }
        _ => false,
    })
}

fn facts(cs: &[tilec_layout::Condition]) -> Vec<String> {
    cs.iter().map(|c| c.fact.to_string()).collect()
}

#[test]
fn the_full_variant_runs_where_the_tiles_are_full() {
    let k = kernel("sgemm_nt_sm80");
    assert_eq!(
        variants(&k),
        [
            Variant::Full,
            Variant::KResidue,
            Variant::GuardedVectors,
            Variant::Unaligned,
            Variant::Guarded
        ]
    );
    let full = lower_variant(&k, Variant::Full).unwrap();
    assert_eq!(full.ir.name, "sgemm_nt_sm80");
    // Launch conditions: full k-tiles (the same for every block) and the
    // 16-byte copies' alignment, a fact about the strides of A and B (M
    // and N on the caller's buffers); the full M and N tiles are per block.
    assert_eq!(
        facts(&full.conditions),
        ["K % 16 == 0", "A.stride.1 % 4 == 0", "B.stride.1 % 4 == 0"]
    );
    let declared: Vec<String> = full
        .conditions
        .iter()
        .map(|c| k.as_declared(&c.fact).to_string())
        .collect();
    assert_eq!(declared, ["K % 16 == 0", "M % 4 == 0", "N % 4 == 0"]);
    assert_eq!(
        facts(&full.block_conditions),
        ["(128*(block.x+1)) <= M", "(128*(block.y+1)) <= N"]
    );
    assert!(!full.ir.block_offset, "the full blocks start at block 0");
    assert!(!guarded_anywhere(&full.ir.body));
    assert!(atoms(&full.ir.body).iter().any(|i| matches!(
        i.kind,
        InstKind::Copy {
            atom: CopyAtom::Async(_, 4),
            ..
        }
    )));

    let guarded = lower_variant(&k, Variant::Guarded).unwrap();
    assert_eq!(guarded.ir.name, "sgemm_nt_sm80_guarded");
    assert!(guarded.conditions.is_empty(), "{:?}", guarded.conditions);
    assert!(guarded.block_conditions.is_empty());
    assert!(guarded.ir.block_offset, "it runs the edge blocks alone");
    assert!(guarded_anywhere(&guarded.ir.body));
}

/// Partial tiles with vectors: the cp.async copies keep 16 bytes where
/// each vector has one guard, under the alignment conditions alone; a
/// kernel with no such copy does not compile the variant.
#[test]
fn guarded_vectors_keep_the_copy_width_under_alignment_conditions() {
    let k = kernel("sgemm_nt_sm80");
    let v = lower_variant(&k, Variant::GuardedVectors).unwrap();
    assert_eq!(v.ir.name, "sgemm_nt_sm80_guarded_vec");
    // Each vector's start (a stride of A or B) and that no vector
    // straddles the end of a column (its padded extent: M or N on the
    // caller's buffers, the pitch on an aligned copy).
    assert_eq!(
        facts(&v.conditions),
        [
            "A.stride.1 % 4 == 0",
            "A.padded.0 % 4 == 0",
            "B.stride.1 % 4 == 0",
            "B.padded.0 % 4 == 0"
        ]
    );
    assert!(v.block_conditions.is_empty() && v.ir.block_offset);
    let wide_and_guarded = atoms(&v.ir.body).iter().any(|i| {
        matches!(
            &i.kind,
            InstKind::Copy {
                atom: CopyAtom::Async(_, 4),
                src,
                ..
            } if src.guard.is_some()
        )
    });
    assert!(wide_and_guarded);
    // Its conditions hold on aligned copies of A and B (the strides and
    // padded extents a multiple of 4 there): it runs every extent, and the
    // per-element entries are not made.
    assert_eq!(
        kept("sgemm_nt_sm80"),
        ["sgemm_nt_sm80", "sgemm_nt_sm80_guarded_vec"]
    );
    // sgemm_nt copies synchronously: its guarded copies stay per element.
    assert!(!kept("sgemm_nt").contains(&"sgemm_nt_guarded_vec".to_string()));
}

/// The entries `tilec build` makes of an example.
fn kept(name: &str) -> Vec<String> {
    kept_of(&kernel(name))
}

/// Any K on the full blocks: where the guarded entry copies element by
/// element, the `_k_residue` entry runs the full blocks without whole
/// k-tiles. Each copy of a k-tile tests the thread's whole copy and takes
/// the guarded element copies where it fails; those accesses are the
/// test's to bound, not the runtime's (which could not: the last k-tile
/// reaches past K); C's stores in the epilogue stay the runtime's.
/// sgemm_nt keeps it (its k-tiles are along A's columns, which a copy does
/// not pad); tests/run/streamk_transposing_copies.tile (one 4-byte
/// cp.async per element) does not: on aligned copies of A and B, zero from
/// K to the pitch, its full entry runs the full blocks at any K.
#[test]
fn the_k_residue_entry_needs_no_whole_k_tiles() {
    assert_eq!(
        kept("sgemm_nt"),
        ["sgemm_nt", "sgemm_nt_k_residue", "sgemm_nt_guarded"]
    );
    assert_eq!(
        kept_of(&kernel_at("tests/run/streamk_transposing_copies.tile")),
        ["sgemm_tn_streamk", "sgemm_tn_streamk_guarded"]
    );
    let k = kernel("sgemm_nt");
    let full = lower_variant(&k, Variant::Full).unwrap();
    let r = lower_variant(&k, Variant::KResidue).unwrap();
    // Whole k-tiles: the full entry's condition, which the k-residue entry
    // drops; both keep the full blocks' own conditions.
    assert_eq!(facts(&full.conditions), ["K % 8 == 0"]);
    assert!(r.conditions.is_empty(), "{:?}", r.conditions);
    assert_eq!(
        facts(&r.block_conditions),
        ["(128*(block.x+1)) <= M", "(128*(block.y+1)) <= N"]
    );
    assert_eq!(facts(&r.block_conditions), facts(&full.block_conditions));
    assert!(
        !r.ir.block_offset,
        "it starts at block 0, as the full entry"
    );
    let tested: Vec<Inst> = atoms(&r.ir.body);
    fn branches(insts: &[Inst]) -> usize {
        insts
            .iter()
            .map(|i| match &i.kind {
                InstKind::If {
                    then, otherwise, ..
                } => {
                    assert!(!guarded_anywhere(then) && guarded_anywhere(otherwise));
                    1
                }
                k => k.bodies().into_iter().map(branches).sum(),
            })
            .sum()
    }
    // A's and B's copies in the k-loop (sgemm_nt copies synchronously:
    // no loop fills stages ahead).
    assert_eq!(branches(&r.ir.body), 2);
    assert!(guarded_anywhere(&r.ir.body) && !guarded_anywhere(&full.ir.body));
    assert!(tested.len() > atoms(&full.ir.body).len());
    let params: Vec<usize> = r.global_accesses.iter().map(|a| a.param).collect();
    assert!(params.iter().all(|&p| p == 2), "only C's: {params:?}");
    // Where the guarded entry keeps its vectors, no such entry.
    assert!(
        !kept("bgemm_tn_sm80")
            .iter()
            .any(|n| n.ends_with("_k_residue"))
    );
}

/// Any alignment on the full blocks: sgemm_nt_sm80's 16-byte copies need
/// M and N multiples of 4, which its full and guarded-vector entries take
/// as launch conditions; the `_unaligned` entry copies A and B element by
/// element, each copy tested as a whole as in `_k_residue`, and needs only
/// the blocks' full tiles. Where those copies would no longer be
/// asynchronous (cp.async moves 4 bytes at least: bf16 elements), it is
/// not made.
#[test]
fn the_unaligned_entry_runs_the_full_blocks_at_any_alignment() {
    let k = kernel("sgemm_nt_sm80");
    let full = lower_variant(&k, Variant::Full).unwrap();
    let u = lower_variant(&k, Variant::Unaligned).unwrap();
    let asynchronous = |l: &tilec::lower::Lowered| {
        atoms(&l.ir.body)
            .iter()
            .filter(|i| {
                matches!(
                    i.kind,
                    InstKind::Copy {
                        atom: CopyAtom::Async(..),
                        ..
                    }
                )
            })
            .count()
    };
    // Four times the full entry's cp.async, each a quarter as wide, and as
    // many again for the partial copies under guards.
    assert_eq!(asynchronous(&u), 8 * asynchronous(&full));
    assert_eq!(u.ir.name, "sgemm_nt_sm80_unaligned");
    assert!(u.conditions.is_empty(), "{:?}", u.conditions);
    assert_eq!(facts(&u.block_conditions), facts(&full.block_conditions));
    assert!(!u.ir.block_offset);
    let global = |a: &tilec::ir::Addr| matches!(a.space, tilec::ir::Space::Global(_));
    for i in atoms(&u.ir.body) {
        if let InstKind::Copy { atom, src, dst } = &i.kind
            && (global(src) || global(dst))
        {
            // A's and B's asynchronous, C's in the epilogue not.
            assert_eq!(atom.width(), 1, "{atom:?}");
        }
    }
    assert!(guarded_anywhere(&u.ir.body));
    assert!(lower_variant(&kernel("bgemm_tn_sm80"), Variant::Unaligned).is_err());
    // Where its conditions imply one of every earlier entry's, it could
    // never run: softmax's writes of a chunk are untested, so it keeps
    // `N % 8192 == 0`, which implies the full entry's `N % 4 == 0`.
    for name in ["softmax", "layernorm"] {
        assert!(!kept(name).iter().any(|n| n.ends_with("_unaligned")));
    }
    assert!(kept("gemv").iter().any(|n| n.ends_with("_unaligned")));
    assert!(
        !kept("bgemm_tn_sm80")
            .iter()
            .any(|n| n.ends_with("_unaligned"))
    );
}

#[test]
fn kernels_without_partial_tiles_launch_one_entry_on_the_whole_grid() {
    // Static extents: every tile is full, so there is nothing to split.
    let src = "kernel k(A: tensor<f32, (64, 64):(1, 64)>) {
        launch grid(1), block(32);
        let g = local_tile(A, (64, 64), (0, 0));
        fill(local_partition(g, (32, 1):(1, 32), thread.x), 1.0);
    }";
    let k = check_source(src).unwrap().remove(0);
    for v in variants(&k) {
        let l = lower_variant(&k, v).unwrap();
        assert!(l.block_conditions.is_empty() && !l.ir.block_offset);
    }
}

/// What codegen computes before each top-level statement
/// (`KernelIr::entry_values_of`): a tested copy's guards, which only its
/// partial branch uses, are left to that branch, so that they hold no
/// register through the main loop; the whole copy's indices, which the
/// common branch uses, are still computed once, before the loop.
#[test]
fn a_tested_copy_s_guards_are_computed_in_its_partial_branch() {
    let k = kernel("sgemm_nt_sm80");
    let u = lower_variant(&k, Variant::Unaligned).unwrap();
    let ir = &u.ir;
    // Each entry value's uses: in a `then`, an `otherwise`, or elsewhere.
    fn walk(insts: &[Inst], place: u8, out: &mut Vec<(usize, u8)>) {
        for i in insts {
            match &i.kind {
                InstKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    out.push((*cond, place));
                    walk(then, place.max(1), out);
                    walk(otherwise, 2, out);
                }
                k if !k.bodies().is_empty() => {
                    let mut named = Vec::new();
                    i.ints_used_before_branches(&mut named);
                    out.extend(named.into_iter().map(|v| (v, place)));
                    for b in k.bodies() {
                        walk(b, place, out);
                    }
                }
                _ => {
                    let mut named = Vec::new();
                    i.ints_used(&mut named);
                    out.extend(named.into_iter().map(|v| (v, place)));
                }
            }
        }
    }
    let mut uses = Vec::new();
    walk(&ir.body, 0, &mut uses);
    let hoisted: Vec<usize> = ir
        .body
        .iter()
        .flat_map(|i| ir.entry_values_of(std::slice::from_ref(i)))
        .collect();
    // The entry values each place needs, operands included.
    let needs = |f: &dyn Fn(u8) -> bool| -> Vec<usize> {
        let named = uses
            .iter()
            .filter(|&&(_, p)| f(p))
            .map(|&(v, _)| v)
            .collect();
        ir.with_operands(named)
            .into_iter()
            .filter(|&v| ir.ints[v].scope.is_none())
            .collect()
    };
    let elsewhere = needs(&|p| p != 2);
    let only_otherwise: Vec<usize> = needs(&|p| p == 2)
        .into_iter()
        .filter(|v| !elsewhere.contains(v))
        .collect();
    let in_then = needs(&|p| p == 1);
    assert!(
        !only_otherwise.is_empty(),
        "the guards of the partial branches"
    );
    assert!(only_otherwise.iter().all(|v| !hoisted.contains(v)));
    assert!(!in_then.is_empty() && in_then.iter().all(|v| hoisted.contains(v)));
}

/// A tensor whose strides the kernel computes with outside an index (here
/// the grid, from `cosize(B)`) keeps them: a copy would change the grid.
/// Its facts then read as declared (`K % 8`), and the per-element entries
/// stay; A is still copied.
#[test]
fn strides_used_outside_an_index_keep_their_tensor_in_place() {
    let k = sgemm_tn_with(
        "launch grid(ceil_div(M, 128), ceil_div(N, 128))",
        "launch grid(ceil_div(M, 128), ceil_div(cosize(B), 128 * K))",
    );
    assert_eq!(copied_symbols(&k), ["A.stride.0", "A.padded.1"]);
    let full = lower_variant(&k, Variant::Full).unwrap();
    assert_eq!(
        facts(&full.conditions),
        ["A.padded.1 % 8 == 0", "K % 8 == 0"]
    );
    assert!(kept_of(&k).iter().any(|n| n == "sgemm_tn_guarded"));
}

/// A stream-K GEMM's blocks walk overlapping runs of tiles (a loop whose
/// bounds depend on `block.x`): its operands may be read through aligned
/// copies although every view of them names `block.x`. Its tiles come
/// from the loop's counter, so its full entry needs whole tiles of M and N
/// as launch conditions; where those are all a `_k_residue` entry would
/// add (K's are aligned copies' to make hold), it is not made.
#[test]
fn a_stream_k_gemm_reads_copies_and_makes_no_k_residue_entry() {
    let k = kernel_at("tests/run/streamk_transposing_copies.tile");
    assert_eq!(
        copied_symbols(&k),
        ["A.stride.0", "A.padded.1", "B.stride.0", "B.padded.1"]
    );
    assert_eq!(
        kept_of(&k),
        ["sgemm_tn_streamk", "sgemm_tn_streamk_guarded"]
    );
    assert_eq!(
        copied_symbols(&kernel("sgemm_streamk")),
        ["A.stride.1", "A.padded.0", "B.stride.1", "B.padded.0"]
    );
}

/// No per-element entry where the guarded entry with vectors needs nothing
/// every entry does not need too: attention's `_guarded_vec` asks only the
/// checker's composition facts (`0 <= S`), so it runs wherever
/// `_guarded` could, and `_guarded` would never launch.
#[test]
fn no_per_element_entry_where_the_vector_one_runs_everywhere_it_could() {
    let k = kernel("attention");
    let entries = kept_of(&k);
    assert_eq!(entries, ["attention", "attention_guarded_vec"]);
    // Every condition of the vector entry is one the per-element entry has
    // too (and there are some: without any, the copies' rule would have
    // made the same choice).
    let vectors = lower_variant(&k, Variant::GuardedVectors).unwrap();
    let per_element = lower_variant(&k, Variant::Guarded).unwrap();
    assert!(!vectors.conditions.is_empty());
    for c in &vectors.conditions {
        assert!(
            per_element.conditions.iter().any(|d| d.fact == c.fact),
            "{} is not a condition of attention_guarded: {:?}",
            c.fact,
            facts(&per_element.conditions)
        );
    }
    // Where the vector entry needs an alignment of its own, the per-element
    // one stays (softmax's rows of any width).
    assert_eq!(
        kept("softmax"),
        ["softmax", "softmax_guarded_vec", "softmax_guarded"]
    );
}

/// A tensor the kernel asks `inside()` of keeps its strides: inside the
/// tensor is not inside a copy's padded rows. Here A's tile is loaded
/// through `select(inside(..), .., 0.0)`; B is still copied.
#[test]
fn a_tensor_asked_inside_of_stays_in_place() {
    let k = sgemm_tn_with(
        "copy(tAgA[_, _, k], tAsA);",
        "tAsA = select(inside(tAgA[_, _, k]), tAgA[_, _, k], 0.0);",
    );
    assert_eq!(copied_symbols(&k), ["B.stride.0", "B.padded.1"]);
}

/// examples/sgemm_tn.tile with `from` replaced by `to`, checked.
fn sgemm_tn_with(from: &str, to: &str) -> tilec::check::program::Kernel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sgemm_tn.tile");
    let src = std::fs::read_to_string(path).unwrap();
    assert!(src.contains(from), "{from}");
    check_source(&src.replace(from, to)).unwrap().remove(0)
}

/// The stride symbols a launch may bind to an aligned copy.
fn copied_symbols(k: &tilec::check::program::Kernel) -> Vec<&str> {
    k.strides
        .iter()
        .filter(|s| !s.in_place)
        .map(|s| s.name.as_str())
        .collect()
}

/// The entries `tilec build` makes of kernel `k`.
fn kept_of(k: &tilec::check::program::Kernel) -> Vec<String> {
    lower_variants(k, |v| lower_variant(k, v))
        .unwrap()
        .into_iter()
        .map(|l| l.ir.name)
        .collect()
}

/// The guarded entry's epilogue rolls into a loop over groups of 16 of a
/// thread's 128 elements (lower/rolled.rs): its accumulators written into
/// rows of shared memory that take the bytes of the stages (after every
/// cp.async has landed and a barrier), the loop's body one group of
/// guarded loads, computes and stores. The full entry's stays unrolled; so
/// does an epilogue whose rows would make the kernel's shared memory larger
/// (sgemm_nt_sm80's: 64 elements of 256 threads, over 16 KB of stages).
#[test]
fn the_guarded_entry_rolls_its_epilogue_in_the_stages_bytes() {
    let k = kernel("bgemm_tn_sm80");
    let rolled = |insts: &[Inst]| -> Vec<Inst> {
        insts
            .iter()
            .filter_map(|i| match &i.kind {
                InstKind::Loop { name, body, .. } if name == "rolled.group" => Some(body.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let full = lower_variant(&k, Variant::Full).unwrap().ir;
    assert!(rolled(&full.body).is_empty());
    let guarded = lower_variant(&k, Variant::GuardedVectors).unwrap().ir;
    let body = rolled(&guarded.body);
    let count = |f: &dyn Fn(&InstKind) -> bool| body.iter().filter(|i| f(&i.kind)).count();
    assert_eq!(count(&|i| matches!(i, InstKind::Compute { .. })), 16);
    let stores = |i: &InstKind| matches!(i, InstKind::Copy { dst, .. } if dst.guard.is_some());
    assert_eq!(count(&stores), 16);
    // The rows: 128 threads of 128 f32 and 16 bytes, at the stages' bytes.
    let rows = guarded.shared.last().unwrap();
    assert_eq!((rows.len, rows.at), (128 * 132, 0));
    assert_eq!(guarded.shared_offsets().1, full.shared_offsets().1);
    let top: Vec<&InstKind> = guarded.body.iter().map(|i| &i.kind).collect();
    let wait = top
        .iter()
        .position(|i| matches!(i, InstKind::AsyncWait(0)))
        .expect("every cp.async waited for");
    assert!(matches!(top[wait + 1], InstKind::Barrier));

    let k = kernel("sgemm_nt_sm80");
    let guarded = lower_variant(&k, Variant::Guarded).unwrap().ir;
    assert!(rolled(&guarded.body).is_empty());
}

/// The exponentials in a variant's element-wise computations.
fn exponentials(insts: &[Inst]) -> usize {
    fn count(a: &tilec::ir::Arith) -> usize {
        let mut n = matches!(a, tilec::ir::Arith::Unary(tilec::arith::Unary::Exp, _)) as usize;
        a.for_each_operand(&mut |x| n += count(x));
        n
    }
    atoms(insts)
        .iter()
        .map(|i| match &i.kind {
            InstKind::Compute { value, .. } => count(value),
            _ => 0,
        })
        .sum()
}

#[test]
fn a_value_common_to_every_element_is_computed_once() {
    // softmax's last chunk, `r * (exp(ml - m) * s)`: one exponential for
    // its 32 elements, in every entry (the guarded ones computed it per
    // element, 31 more, where a guarded store lay between two elements).
    // 32 + 32 a chunk, 1 rescale, 5 + 8 merges, 1 for the last chunk.
    let k = kernel("softmax");
    for v in variants(&k) {
        let ir = lower_variant(&k, v).unwrap().ir;
        assert_eq!(exponentials(&ir.body), 79, "{}", ir.name);
    }
    // A statement that would read an element of its own target after
    // writing it (`r = r * exp(r[0, 0])`: element 1 would see the new
    // r[0, 0]) is refused, so a value common to every element never
    // depends on the statement's own stores, and computing it once is
    // always right.
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/softmax.tile"),
    )
    .unwrap()
    .replace(
        "r = select(inside(tX), exp(r - mn), 0.0);",
        "r = r * exp(r[0, 0]);",
    );
    let err = check_source(&src).unwrap_err();
    assert!(
        err[0]
            .message
            .contains("overwrites an element of its target before its operand reads it"),
        "{err:?}"
    );
}

/// A divisibility that another of a variant's conditions implies is left
/// out: softmax's full entry needs N % 8192 (its tiles), which holds N % 4
/// (its vectors) too.
#[test]
fn a_variant_s_conditions_leave_out_the_implied() {
    let k = kernel("softmax");
    let lowered = lower_variants(&k, |v| lower_variant(&k, v)).unwrap();
    let full = facts(&lowered[0].conditions);
    assert!(full.iter().any(|f| f.contains("8192")), "{full:?}");
    assert!(
        !full
            .iter()
            .any(|f| f.starts_with("N % 4") || f.contains("4 | N")),
        "{full:?}"
    );
}

/// Every entry but the last needs a condition of the launch or of the
/// block: the runtime tries them in order, so an entry after one that runs
/// every block at any extents would never launch, and only costs the build
/// its back end. tests/run/pingpong_smem_epilogue.tile's unaligned entry
/// (tiles from a loop counter, each copy of C tested) is such a one: it is
/// the last, widened like a lone full entry (its quotients have no entry to
/// fall back on).
#[test]
fn no_entry_follows_one_that_runs_everywhere_nor_never_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<_> = ["examples", "tests/run"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .collect();
    files.sort();
    let mut seen = 0;
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap();
        for k in check_source(&src).unwrap() {
            let Ok(kept) = lower_variants(&k, |v| lower_variant(&k, v)) else {
                continue;
            };
            for l in &kept[..kept.len() - 1] {
                assert!(
                    !(l.conditions.is_empty() && l.block_conditions.is_empty()),
                    "{}: {} runs everywhere, yet entries follow it",
                    f.display(),
                    l.ir.name
                );
            }
            // Nor is an entry built that never launches (a thread layout
            // that does not divide a tile: `1 % 4 == 0`,
            // tests/run/threads_past_a_tile_mode.tile).
            for l in &kept {
                assert!(
                    l.conditions
                        .iter()
                        .all(|c| c.fact.eval(&|_: &str| None) != Some(false)),
                    "{}: {} can never launch",
                    f.display(),
                    l.ir.name
                );
            }
            if let Some(last) = kept.last()
                && last.conditions.is_empty()
                && last.block_conditions.is_empty()
            {
                assert!(
                    last.narrowed.is_empty(),
                    "{}: {}",
                    f.display(),
                    last.ir.name
                );
            }
            seen += kept.len();
        }
    }
    assert!(seen > 100, "only {seen} entries");
    let names = kept_of(&kernel_at("tests/run/pingpong_smem_epilogue.tile"));
    assert_eq!(
        names,
        [
            "pingpong_smem_epilogue",
            "pingpong_smem_epilogue_guarded_vec",
            "pingpong_smem_epilogue_unaligned"
        ]
    );
    // Its C by TMA in the turns instead: one entry for every extent.
    assert_eq!(kept("gemm_batched_pingpong"), ["gemm_batched_pingpong"]);
}
