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

/// GELU by name: `fast_gelu_tanh` is one `tanh.approx` an element in the
/// fewest operations (x^2, an fma, a product, x / 2, an fma), and the
/// exact forms `gelu` and `gelu_tanh` none; tanh.approx's bound is the
/// kernel's, and sm_70 is refused at the statement.
#[test]
fn gelu_by_name_is_its_cheapest_form() {
    let ptx = emitted("tests/run/gelu.tile", "ptx");
    let full = part(&ptx, ".entry gelu(");
    assert_eq!(full.matches("\ttanh.approx.f32 ").count(), 2, "{full}");
    // tF's two elements a thread, from their loads to the first store
    // after: each 6 x (a product), then x^2, an fma, a product, x / 2 and
    // an fma around the approximation.
    let at = full.find("\ttanh.approx.f32 ").unwrap();
    let from = full[..at].rfind("ld.global").unwrap();
    let to = at + full[at..].find("st.global").unwrap();
    let window = &full[from..to];
    let count = |op: &str| window.matches(op).count();
    assert_eq!(
        (
            count("tanh.approx"),
            count("mul.rn.f32"),
            count("fma.rn.f32")
        ),
        (2, 8, 4),
        "{window}"
    );
    assert_eq!(count("add.rn.f32") + count("sub.rn.f32"), 0, "{window}");
    assert_eq!(
        manifest_of("tests/run/gelu.tile").approximation,
        2f64.powi(-10)
    );
    let f = root().join("tests/run/gelu.tile");
    let (code, _, err) = tilec(&["build", f.to_str().unwrap(), "--arch", "sm_70"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("fast_gelu_tanh (tanh.approx.f32), which needs sm_75"),
        "{err}"
    );
}

/// Where an approximation's result is rounded to bf16 and computed on
/// again (attention's P before P V; tests/codegen/approximation_rounded.tile),
/// the manifest allows the GPU-executor comparison a unit of bf16 there;
/// the approximations' own bound, which the reference check uses, stays.
#[test]
fn an_approximation_rounded_and_computed_on_allows_a_unit_of_the_type() {
    let ex2 = 2f64.powi(-22);
    for f in [
        "examples/attention.tile",
        "examples/attention_sm90.tile",
        "tests/run/attention_causal.tile",
    ] {
        let m = manifest_of(f);
        assert_eq!(
            (m.approximation, m.rounded_approximation),
            (ex2, 2f64.powi(-7)),
            "{f}"
        );
    }
    // An epilogue reads C's old values through ldmatrix before it writes
    // the approximated ones in place: no rounding computed on again, in
    // two statements or in one.
    for f in [
        "tests/run/gemm_bias_gelu.tile",
        "tests/run/persistent_gelu.tile",
    ] {
        let m = manifest_of(f);
        assert_eq!(
            (m.approximation, m.rounded_approximation),
            (2f64.powi(-10), 0.0),
            "{f}"
        );
    }
    let file = "tests/codegen/approximation_rounded.tile";
    for (kernel, unit) in [
        ("rounded_again", 2f64.powi(-7)),
        ("rounded_inside", 2f64.powi(-7)),
        ("rounded_into_the_output", 0.0),
        ("exact_before_the_rounding", 0.0),
    ] {
        assert_eq!(
            kernel_manifest(file, kernel).rounded_approximation,
            unit,
            "{kernel}"
        );
    }
}
