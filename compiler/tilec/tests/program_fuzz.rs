//! No input makes the front end panic: arbitrary text and mutated examples
//! through lexer, parser and checker (bounded to fit CI).

use proptest::prelude::*;
use tilec::check::kernel::check_source;

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
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        let _ = check_source(&s);
    }

    #[test]
    fn mutated_examples_never_panic(
        which in 0usize..4,
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
        let _ = check_source(&s);
    }
}
