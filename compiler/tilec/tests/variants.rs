//! The variants a kernel compiles to, and the per-block choice inside one:
//! blocks whose tiles are all full run the unguarded, vectorized code.

use std::path::Path;
use tilec::check::kernel::check_source;
use tilec::lower::ir::{CopyAtom, Inst, InstKind, IntDef, KernelIr, for_each_atom};
use tilec::lower::{Variant, lower_variant, variants};
use tilec_layout::int::apply;

fn kernel(name: &str) -> tilec::check::program::Kernel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{name}.tile"));
    let src = std::fs::read_to_string(path).unwrap();
    check_source(&src).unwrap().remove(0)
}

/// Value `id` of the IR's table for one block, with the extents bound by name.
fn value(ir: &KernelIr, id: usize, block: [i64; 3], extents: &[(&str, i64)]) -> Option<i64> {
    let mut v: Vec<Option<i64>> = Vec::new();
    for x in &ir.ints {
        v.push(match &x.def {
            IntDef::Const(c) => Some(*c),
            IntDef::BlockIdx(d) => Some(block[*d as usize]),
            IntDef::Extent(e) => extents
                .iter()
                .find(|(n, _)| *n == ir.extents[*e])
                .map(|(_, x)| *x),
            IntDef::Bin(op, a, b) => v[*a].zip(v[*b]).and_then(|(a, b)| apply(*op, a, b)),
            IntDef::ThreadIdx | IntDef::LoopVar(_) => None,
        });
    }
    v[id]
}

fn atoms(insts: &[Inst]) -> Vec<Inst> {
    let mut out = Vec::new();
    for_each_atom(insts, &mut |i| out.push(i.clone()));
    out
}

#[test]
fn full_blocks_of_a_partial_problem_run_unguarded() {
    let k = kernel("sgemm_nt_sm80");
    assert_eq!(
        variants(&k),
        [Variant::Full, Variant::PerBlock, Variant::Guarded]
    );
    let l = lower_variant(&k, Variant::PerBlock).unwrap();
    assert_eq!(l.ir.name, "sgemm_nt_sm80_per_block");
    // Launch conditions: full k-tiles (the same for every block) and the
    // fast code's alignment; the full M and N tiles are the block's own.
    let conds: Vec<String> = l.conditions.iter().map(|c| c.fact.to_string()).collect();
    assert_eq!(
        conds,
        ["K % 16 == 0", "M % 4 == 0", "N % 4 == 0"],
        "{conds:?}"
    );
    let [
        Inst {
            kind:
                InstKind::If {
                    cond,
                    then,
                    otherwise,
                },
            ..
        },
    ] = &l.ir.body[..]
    else {
        panic!("one branch:\n{}", l.ir);
    };
    // The fast branch: 16-byte cp.async and no guard anywhere; the other
    // branch: 4-byte guarded cp.async.
    let fast = atoms(then);
    assert!(fast.iter().any(|i| matches!(
        i.kind,
        InstKind::Copy {
            atom: CopyAtom::Async(_, 4),
            ..
        }
    )));
    let guarded_anywhere = |insts: &[Inst]| {
        insts.iter().any(|i| match &i.kind {
            InstKind::Copy { src, dst, .. } => src.guard.is_some() || dst.guard.is_some(),
            InstKind::Axpby { x, y, .. } => x.guard.is_some() || y.guard.is_some(),
            _ => false,
        })
    };
    assert!(!guarded_anywhere(&fast));
    assert!(guarded_anywhere(&atoms(otherwise)));
    // M = 260, N = 384, K = 32: blocks x = 0, 1 are full, x = 2 is not.
    let dims = [("M", 260), ("N", 384), ("K", 32)];
    for (block, full) in [
        ([0, 0, 0], true),
        ([1, 2, 0], true),
        ([2, 0, 0], false),
        ([2, 2, 0], false),
    ] {
        let c = value(&l.ir, *cond, block, &dims).unwrap();
        assert_eq!(c > 0, full, "block {block:?}: condition {c}");
    }
}

#[test]
fn kernels_without_partial_tiles_have_no_per_block_variant() {
    // Static extents: every tile is full, so there is nothing to choose.
    let src = "kernel k(A: tensor<f32, (64, 64):(1, 64)>) {
        launch grid(1), block(32);
        let g = local_tile(A, (64, 64), (0, 0));
        fill(local_partition(g, (32, 1):(1, 32), thread.x), 1.0);
    }";
    let k = check_source(src).unwrap().remove(0);
    assert_eq!(variants(&k), [Variant::Full, Variant::Guarded]);
}
