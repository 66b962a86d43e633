//! Input at the limits gets a diagnostic, never a stack overflow or a panic
//! in the renderer: deep nesting, long statements, far columns. The tests
//! run on the test harness's threads (2 MB stacks), in debug builds.

use tilec::check::kernel::check_source;

fn kernel_with(expr: &str) -> String {
    format!("kernel k(A: tensor<f32, (M):(1)>) {{ let x = {expr}; }}")
}

/// Checks `src` and renders every diagnostic; returns the first message.
fn first_error(src: &str) -> String {
    let diags = check_source(src).expect_err("an error");
    for d in &diags {
        let text = d.render("t.tile", src);
        assert!(!text.is_empty());
    }
    diags[0].message.clone()
}

#[test]
fn deep_nesting_is_refused_before_a_tree_exists() {
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(first_error(&kernel_with(&deep)).contains("nest deeper than 64"));
    let calls = format!("{}A{}", "size(".repeat(10_000), ")".repeat(10_000));
    assert!(first_error(&kernel_with(&calls)).contains("nest deeper"));
    let loops = format!("kernel k() {{ {} }}", "for i in 0..1 {".repeat(100));
    assert!(first_error(&loops).contains("nest deeper"));
}

#[test]
fn long_statements_are_refused() {
    let sum = vec!["1"; 10_000].join("+");
    assert!(first_error(&kernel_with(&sum)).contains("longer than 1024 tokens"));
    let chain = format!("A{}", "(0)".repeat(10_000));
    assert!(first_error(&kernel_with(&chain)).contains("longer than 1024 tokens"));
    // At the statement's first token, which a snippet can show.
    let src = kernel_with(&sum);
    let d = &check_source(&src).expect_err("an error")[0];
    assert_eq!(&src[d.span.start..d.span.end], "let");
}

#[test]
fn the_longest_accepted_statements_check_without_overflow() {
    // Just under the limits: evaluated (and dropped) recursively.
    let sum = vec!["1"; 500].join("+");
    first_error(&kernel_with(&sum)); // no launch: an error, after evaluation
    let chain = format!("A{}", "(0)".repeat(300));
    first_error(&kernel_with(&chain));
    let nested = format!("{}1{}", "(".repeat(60), ")".repeat(60));
    first_error(&kernel_with(&nested));
}

#[test]
fn a_diagnostic_far_into_a_line_renders() {
    let src = format!("kernel k() {{{} @ }}", " ".repeat(70_000));
    assert!(first_error(&src).contains("unexpected character"));
    let d = &check_source(&src).err().unwrap()[0];
    assert!(d.render("t.tile", &src).contains("t.tile:1:70014"));
}

/// `if .. else if .. else if ..`: `n` branches, each a level deeper in the
/// tree though the braces never nest.
fn else_if_chain(n: usize) -> String {
    let branches: Vec<String> = (0..n)
        .map(|i| format!("if block.x == {i} {{ A[block.x] = {i}.0; }}"))
        .collect();
    format!(
        "kernel k(A: tensor<f32, (M):(1)>) {{ launch grid(M), block(1); {} }}",
        branches.join(" else ")
    )
}

#[test]
fn long_else_if_chains_are_refused_before_a_tree_exists() {
    assert!(first_error(&else_if_chain(5000)).contains("`else if` chain is longer than 128"));
    // Chains in the branches of a chain add up.
    let inner = else_if_chain(100).replace(
        "kernel k(A: tensor<f32, (M):(1)>) { launch grid(M), block(1); ",
        "",
    );
    let nested = format!(
        "kernel k(A: tensor<f32, (M):(1)>) {{ launch grid(M), block(1); {} }}",
        (0..100)
            .map(|i| format!("if block.x == {i} {{ {} ", &inner[..inner.len() - 1]) + "}")
            .collect::<Vec<_>>()
            .join(" else ")
    );
    assert!(first_error(&nested).contains("`else if` chain is longer than 128"));
}

#[test]
fn the_longest_accepted_else_if_chain_checks_without_overflow() {
    let src = else_if_chain(129);
    let kernels = check_source(&src).expect("checks");
    assert_eq!(kernels.len(), 1);
}

/// A byte-order mark first in the file is whitespace; a character pasted
/// from a document (a no-break space) is named, escaped, where it stands.
#[test]
fn a_byte_order_mark_is_whitespace_and_a_pasted_space_is_named() {
    let src = "kernel k(A: tensor<f32, (M):(1)>) { launch grid(M), block(1); A[block.x] = 1.0; }";
    assert!(check_source(&format!("\u{FEFF}{src}")).is_ok());
    let pasted = src.replace("= 1.0", "=\u{a0}1.0");
    let message = first_error(&pasted);
    assert_eq!(message, "unexpected character \\u{a0}");
}
