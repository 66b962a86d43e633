//! Bad input gets a diagnostic, never a panic: arbitrary and mutated
//! expressions through the parser and the evaluator.

use proptest::prelude::*;
use tilec::check::algebra::eval_static;

const SEEDS: &[&str] = &[
    "composition((6,2):(8,2), (4,3):(3,1))",
    "logical_divide((6,4):(1,6), [3:1, 2:1])",
    "complement((2,4):(1,8), 64)",
    "tile_to_shape((2,2):(1,2), (8,6), (1,0))",
    "((4,3):(3,1))(_,1)",
    "composition(Swizzle(3,3,3), (8,64):(64,1))(1,8)",
    "blocked_product((2,2):(1,2), (2,3):(1,2))",
    "max_common_layout((8,4):(1,8), ((4,2),4):((1,32),4))",
];

const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "_",
    "-",
    "0",
    "1",
    "7",
    "64",
    "_4",
    "9223372036854775807",
    "L",
    "size",
    "complement",
    "composition",
    "zipped_divide",
    "Swizzle",
    " ",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,40}") {
        let _ = eval_static(&s);
    }

    #[test]
    fn token_soup_never_panics(parts in prop::collection::vec(prop::sample::select(PIECES), 0..30)) {
        let _ = eval_static(&parts.concat());
    }

    #[test]
    fn mutated_programs_never_panic(
        seed in prop::sample::select(SEEDS),
        at in 0usize..64,
        cut in 0usize..4,
        insert in prop::sample::select(PIECES),
    ) {
        let mut s = seed.to_string();
        let at = at.min(s.len());
        let end = (at + cut).min(s.len());
        s.replace_range(at..end, insert);
        let _ = eval_static(&s);
    }
}
