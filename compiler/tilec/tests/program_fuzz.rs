//! No input makes the compiler panic: arbitrary text through lexer, parser
//! and checker, and mutated examples through lowering too (every variant,
//! the IR verifier after each), bounded to fit CI.

use proptest::prelude::*;
use tilec::check::kernel::check_source;
use tilec::pipeline::lower_source;

fn examples() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    v.sort();
    v
}

const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    "=",
    ".",
    "..",
    "<",
    ">",
    "_",
    "X",
    "0",
    "1",
    "8",
    "128",
    "0.5",
    "M",
    "K",
    "tA",
    "tC",
    "gA",
    "sA",
    "thread.x",
    "block.y",
    "let x = ",
    "layout",
    "tiler",
    "for k in 0..4 {",
    "copy(",
    "gemm(",
    "sync()",
    "local_tile(",
    "local_partition(",
    "shared<f32>(",
    "registers<f16>(",
    "step(1, X)",
    "if thread.x < 32 {",
    "if block.x == 0 && thread.x / 32 == 1 {",
    "} else {",
    " || ",
    "i32(",
    "bf16(",
    "sm_count",
    "shfl_xor(tC, 16)",
    "threads(",
    "reduce_max(",
    "threads((32, 8):(1, 32), 0)",
    "threads((48):(1))",
    "coord(tC, 0)",
    "coord(",
    "fast_exp2(",
    "fast_tanh(tC)",
    "shared<f32>((16, 16))",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        let _ = check_source(&s);
    }

    #[test]
    fn mutated_examples_never_panic(
        which in 0usize..64,
        edits in prop::collection::vec((0usize..4000, 0usize..12, prop::sample::select(PIECES)), 1..4),
    ) {
        let all = examples();
        let mut s = all[which % all.len()].clone();
        for (at, cut, piece) in edits {
            let mut at = at.min(s.len());
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + cut).min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.replace_range(at..end, piece);
        }
        let _ = lower_source(&s);
    }
}
