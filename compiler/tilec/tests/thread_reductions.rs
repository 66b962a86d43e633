//! Reductions across threads (`reduce_sum(x, threads(L, m))`) as the checker
//! writes them out: shuffles for the levels of the mode within a warp,
//! shared memory between two barriers for those across warps.

use std::path::Path;
use tilec::check::kernel::check_source;
use tilec::lower::{Variant, lower_variant};

/// The full entry's IR of `src`'s first kernel, as `--emit ir` prints it.
fn ir(src: &str) -> String {
    let k = check_source(src).unwrap().remove(0);
    lower_variant(&k, Variant::Full).unwrap().ir.to_string()
}

fn rmsnorm(rows: i64) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rmsnorm.tile");
    let src = std::fs::read_to_string(path).unwrap();
    ir(&src.replace("tune rows = 1 in", &format!("tune rows = {rows} in")))
}

fn count(ir: &str, what: &str) -> usize {
    ir.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn a_row_within_a_warp_folds_by_shuffles_alone() {
    // Eight rows a block: 32 threads a row, one warp, masks 1 to 16.
    let ir = rmsnorm(8);
    for mask in [1, 2, 4, 8, 16] {
        assert_eq!(
            count(&ir, &format!("shfl_xor(f32:r3[0], {mask}))")),
            1,
            "{ir}"
        );
    }
    assert_eq!(count(&ir, "barrier"), 0, "{ir}");
}

#[test]
fn a_row_across_warps_meets_in_shared_memory_between_two_barriers() {
    // One row a block: 32 lanes by shuffles, then 8 warps through a
    // shared buffer of a slot a thread, each thread folding the 8 slots of
    // its lane's row.
    let ir = rmsnorm(1);
    assert_eq!(count(&ir, "shfl_xor("), 5, "{ir}");
    assert_eq!(count(&ir, "barrier"), 2, "{ir}");
    assert_eq!(count(&ir, "shared s0 exchange: f32[256]"), 1, "{ir}");
}
