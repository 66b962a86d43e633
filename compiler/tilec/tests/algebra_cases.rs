//! Data-driven: every case of `tests/algebra/cute_cases.tsv` (values computed
//! by C++ CuTe) through the calculator, as `tilec algebra --batch` prints it.

use tilec::check::algebra::eval_static;

#[test]
fn calculator_matches_cute_on_every_case() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/algebra/cute_cases.tsv"
    );
    let data = std::fs::read_to_string(path).expect("the case file exists");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in data
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (expr, expected) = line.split_once('\t').expect("expression<TAB>expected");
        count += 1;
        let got = match eval_static(expr) {
            Ok(v) => v.to_string(),
            Err(_) => "error".to_string(),
        };
        if got != expected {
            failures.push(format!("{expr}\n  expected {expected}\n  got      {got}"));
        }
    }
    assert!(count > 1000, "the case file holds {count} cases");
    assert!(
        failures.is_empty(),
        "{} of {count} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every `    EXPR => VALUE` line of docs/layout-algebra.md is what the calculator prints.
#[test]
fn the_algebra_docs_show_true_values() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/layout-algebra.md");
    let doc = std::fs::read_to_string(path).expect("the docs page exists");
    let mut checked = 0;
    for line in doc.lines().filter_map(|l| l.strip_prefix("    ")) {
        let Some((expr, rest)) = line.split_once("=>") else {
            continue;
        };
        let expected = rest.split_whitespace().next().unwrap_or_default();
        let got = eval_static(expr.trim());
        match (expected, got) {
            ("error:", Err(_)) => {}
            (e, Ok(v))
                if v.to_string() == e || (e.starts_with("Sw<") && v.to_string().starts_with(e)) => {
            }
            (e, got) => panic!(
                "docs say {} => {e}, the calculator gives {got:?}",
                expr.trim()
            ),
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} examples found");
}
