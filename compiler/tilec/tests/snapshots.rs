//! Snapshots of what people read: layout pictures and calculator diagnostics.

use tilec::check::algebra::eval_static;
use tilec::picture::{layout_picture, svg, text, tv_picture};
use tilec_layout::{IntTuple, Layout};

fn layout(src: &str) -> Layout {
    eval_static(src).unwrap().to_layout().unwrap()
}

fn shape(src: &str) -> IntTuple {
    eval_static(src).unwrap().to_int_tuple().unwrap()
}

#[test]
fn pictures_of_layouts() {
    for (name, src) in [
        ("row_major_4x3", "(4,3):(3,1)"),
        ("tiled_panel", "((2,2),(2,2)):((1,2),(4,8))"),
        ("composition", "composition((6,2):(8,2), (4,3):(3,1))"),
        ("rank_1", "8:2"),
        ("rank_3", "(2,2,2):(1,4,2)"),
        ("swizzle_free_8x8", "(8,8):(8,1)"),
    ] {
        let p = layout_picture(&layout(src)).unwrap();
        insta::assert_snapshot!(name, text::render(&p));
    }
}

#[test]
fn pictures_of_thread_value_layouts() {
    for (name, tv, tile) in [
        ("tv_coalesced", "(8,4):(1,8)", "(8,4)"),
        ("tv_strided", "(8,4):(4,1)", "(8,4)"),
        (
            "tv_raked",
            "raked_product((2,2):(1,2), (2,2):(1,2))",
            "(4,4)",
        ),
    ] {
        let p = tv_picture(&layout(tv), &shape(tile)).unwrap();
        insta::assert_snapshot!(name, text::render(&p));
    }
    let p = tv_picture(&layout("(8,4):(1,8)"), &shape("(8,4)")).unwrap();
    insta::assert_snapshot!("tv_coalesced_svg", svg::render(&p));
}

#[test]
fn calculator_diagnostics() {
    for (name, src) in [
        ("unknown_function", "compose(4:1, 2:1)"),
        ("not_injective", "complement((2,2):(1,1))"),
        ("stride_divisibility", "composition((6,2):(1,7), 4:8)"),
        ("shape_divisibility", "composition((4,6):(1,7), 3:2)"),
        ("walk_off_a_mode", "composition((6,2):(1,7), 4:5)"),
        ("not_a_composition", "composition((4,3):(1,8), (3,4):(1,3))"),
        ("profile_mismatch", "(4,(3,2)):(1,3)"),
        ("wrong_argument", "logical_divide((4,3), LayoutRight)"),
        ("arity", "coalesce(4:1, 1, 1)"),
        ("too_many_modes", "logical_divide(8:1, [2:1, 2:1])"),
        ("unclosed", "composition((4,3):(3,1)"),
        ("evaluate_a_tuple", "(4,3)(2,1)"),
    ] {
        let d = eval_static(src).expect_err(src);
        insta::assert_snapshot!(name, d.render("expression", src));
    }
}
