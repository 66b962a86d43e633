//! The `fast_` forms: the hardware's approximations, where asked for.

use super::*;

/// The `fast_` forms are the hardware's approximations, one instruction
/// each, and only where asked for: the manifest says how far the GPU may
/// then be from the executor, and a kernel without them says nothing.
#[test]
fn fast_forms_are_the_hardware_s_approximations() {
    let ptx = emitted("tests/run/fast_math.tile", "ptx");
    let full = part(&ptx, ".entry fast_math(");
    // Per element (two a thread): fast_exp twice and fast_exp2 once, then
    // fast_log, fast_rsqrt, fast_sqrt, fast_tanh once each.
    for (op, n) in [
        ("ex2.approx.f32", 6),
        ("lg2.approx.f32", 2),
        ("rsqrt.approx.f32", 2),
        ("sqrt.approx.f32", 2),
        ("tanh.approx.f32", 2),
    ] {
        assert_eq!(
            full.matches(&format!("\t{op} ")).count(),
            n,
            "{op}:\n{full}"
        );
    }
    // Not flushed to zero; and the exact forms' reference has none.
    assert!(!full.contains(".ftz"), "{full}");
    let reference = part(&ptx, ".entry fast_math_reference(");
    assert!(!reference.contains(".approx"), "{reference}");
    assert_eq!(
        manifest_of("tests/run/fast_math.tile").approximation,
        2f64.powi(-10),
        "tanh.approx's bound"
    );
    assert_eq!(
        manifest_of("tests/run/elementwise_math.tile").approximation,
        0.0
    );
    // tanh.approx is Turing's: an error at the statement before it.
    let f = root().join("tests/run/fast_math.tile");
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_70"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("fast_tanh (tanh.approx.f32), which needs sm_75"),
        "{err}"
    );
}
