//! Run-time integers inside element-wise statements: their arithmetic and
//! their comparisons are integer ones, converted to the statement's type
//! once, at the end, as in an index.

use tilec::check::kernel::check_source;
use tilec::lower::{Variant, lower_variant};

/// The full entry's IR of a kernel of 128 threads a block whose one
/// statement sets `Y`'s elements to `value`.
fn ir(value: &str) -> String {
    let src = format!(
        "kernel k(Y: tensor<f32, (M):(1)>) {{
            launch grid(ceil_div(M, 128)), block(128);
            local_tile(Y, (128), (block.x))[thread.x] = {value};
        }}"
    );
    let k = check_source(&src).unwrap().remove(0);
    lower_variant(&k, Variant::Full).unwrap().ir.to_string()
}

#[test]
fn integer_arithmetic_truncates() {
    // `thread.x / 32` is warp 0..3, not a fraction.
    let ir = ir("select(thread.x / 32 * 32 == thread.x, 1.0, 0.0)");
    assert!(!ir.contains("div(int("), "{ir}");
    assert_eq!(
        ir.lines().filter(|l| l.contains("= div %")).count(),
        1,
        "{ir}"
    );
}

#[test]
fn integer_comparisons_do_not_round() {
    // In f32, 16777216 < 16777217 would be false: both round to 2^24.
    for op in ["<", "<=", ">", ">=", "==", "!="] {
        let ir = ir(&format!(
            "select(block.x * 128 + thread.x {op} M - 1, 1.0, 0.0)"
        ));
        let compare = ["lt(", "le(", "gt(", "ge(", "eq(", "ne("];
        assert!(!compare.iter().any(|c| ir.contains(c)), "{op}: {ir}");
        assert!(ir.contains("= min %"), "{op}: {ir}");
    }
}

#[test]
fn min_and_max_of_integers_are_integer_ones() {
    let ir = ir("f32(min(block.x * 128 + thread.x, M - 1)) + max(thread.x, 3)");
    assert!(!ir.contains("min(int(") && !ir.contains("max(int("), "{ir}");
    assert!(ir.contains("= min %") && ir.contains("= max %"), "{ir}");
}

#[test]
fn min_and_max_assume_no_bound_a_value_does_not_have() {
    // thread.x starts at 0 and `thread.x - 64` below it: neither min nor
    // max may fold away (min(1, thread.x) is 0 in thread 0).
    for value in ["f32(min(1, thread.x))", "f32(max(0, thread.x - 64))"] {
        let ir = ir(value);
        assert!(
            ir.contains("= min ") || ir.contains("= max "),
            "{value}: {ir}"
        );
    }
    // A loop counter may start below 0: max(0, j) stays.
    let src = "kernel k(Y: tensor<f32, (M):(1)>) {
        launch grid(ceil_div(M, 128)), block(128);
        let s = registers<f32>(1, 0.0);
        for j in -2..1 { s = s + f32(max(0, j)); }
        local_tile(Y, (128), (block.x))[thread.x] = s;
    }";
    let k = check_source(src).unwrap().remove(0);
    let ir = lower_variant(&k, Variant::Full).unwrap().ir.to_string();
    assert!(ir.contains("= max "), "{ir}");
}

#[test]
fn a_quotient_of_numbers_that_truncates_is_refused_anywhere_in_a_statement() {
    let src = "kernel k(Y: tensor<f32, (M):(1)>) {
        launch grid(ceil_div(M, 128)), block(128);
        local_tile(Y, (128), (block.x))[thread.x] = 2.0 * (1 / 2 + thread.x);
    }";
    let errors = check_source(src).unwrap_err();
    assert!(
        errors[0]
            .message
            .contains("`1 / 2` of integers truncates to 0"),
        "{:?}",
        errors[0].message
    );
}

#[test]
fn abs_of_an_integer_is_an_integer_one() {
    let ir = ir("f32(abs(thread.x - 64))");
    assert!(!ir.contains("abs(int("), "{ir}");
    assert!(ir.contains("= max "), "{ir}");
}

/// `abs` of a coordinate is an integer too, which divides as indices do
/// (it was a float, and `abs(coord(t, 0) - 5) / 2` was refused in an i32
/// statement: a probe's finding).
#[test]
fn abs_of_a_coordinate_is_an_integer_one() {
    let src = "kernel k(R: tensor<i32, (M):(1)>) {
        launch grid(ceil_div(M, 128)), block(128);
        let tR = local_tile(R, (128), (block.x))[thread.x];
        tR = abs(coord(tR, 0) - 5) / 2;
    }";
    let k = check_source(src).unwrap().remove(0);
    let ir = lower_variant(&k, Variant::Full).unwrap().ir.to_string();
    assert!(!ir.contains("abs("), "{ir}");
    assert!(ir.contains("= max ") && ir.contains("= div "), "{ir}");
}
