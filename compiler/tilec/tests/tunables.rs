//! `tune` parameters in the front and middle end: a setting is a static
//! integer everywhere below its statement, per kernel or for every kernel,
//! and a split-K tuned to one slice lowers to no reduction at all.

use tilec::check::kernel::check_source_with;
use tilec::check::program::{Kernel, Settings};
use tilec::ir::InstKind;
use tilec::lower::{Variant, lower_variant};
use tilec_layout::Int;

fn splitk(settings: &[(&str, i64)]) -> Kernel {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sgemm_splitk.tile"
    );
    let src = std::fs::read_to_string(path).unwrap();
    let s: Settings = settings.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    check_source_with(&src, &s).unwrap().remove(0)
}

#[test]
fn a_setting_is_a_constant_of_the_layouts_and_the_launch() {
    let k = splitk(&[("bm", 64), ("splits", 16)]);
    let values: Vec<(&str, i64, i64)> = k
        .tunables
        .iter()
        .map(|t| (t.name.as_str(), t.value, t.default))
        .collect();
    assert_eq!(
        values,
        [
            ("bm", 64, 128),
            ("bn", 128, 128),
            ("splits", 16, 8),
            ("stages", 4, 4),
            ("blocks_per_sm", 1, 1)
        ]
    );
    assert_eq!(k.launch.grid[2], Int::Static(16));
    assert_eq!(k.launch.grid[0].to_string(), "ceil_div(M,64)");
    // Half the A tile: 64 x 16 floats a stage, 4 stages, beside B's 128 x 16.
    assert_eq!(k.shared_bytes(), (64 + 128) * 16 * 4 * 4);
}

#[test]
fn a_kernel_s_own_setting_wins_over_every_kernel_s() {
    let k = splitk(&[("splits", 2), ("sgemm_splitk.splits", 32)]);
    assert_eq!(k.launch.grid[2], Int::Static(32));
    let other = splitk(&[("other_kernel.splits", 32)]);
    assert_eq!(other.launch.grid[2], Int::Static(8), "the default");
}

#[test]
fn a_reduce_across_one_block_is_its_body() {
    let has_reduce = |k: &Kernel| {
        let l = lower_variant(k, Variant::Full).unwrap();
        l.ir.body
            .iter()
            .any(|i| matches!(i.kind, InstKind::ReduceBlocks { .. }))
    };
    assert!(has_reduce(&splitk(&[("splits", 2)])));
    assert!(!has_reduce(&splitk(&[("splits", 1)])));
}
