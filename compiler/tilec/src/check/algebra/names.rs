//! Names in expressions: what a name stands for (a binding in scope, an
//! atom, a layout major, `X`, `inf`), and for one that stands for nothing,
//! or a function nobody defines, the diagnostic with the names close to it.
//! In: the name and what the evaluator knows. Out: a value or a diagnostic.

use super::{Evaluator, FUNCTIONS, Known, atoms};
use crate::check::value::{Major, Value};
use crate::diagnostic::Diagnostic;
use crate::span::Span;

impl Evaluator<'_> {
    /// What `n` stands for, or why it stands for nothing.
    pub(super) fn name(&mut self, n: &str, span: Span) -> Result<Value, Diagnostic> {
        if let Some(v) = (self.scope)(n) {
            return Ok(v);
        }
        if let Some(atom) = tilec_layout::LdMatrixAtom::named(n) {
            return Ok(Value::CopyAtom(atom));
        }
        if let Some(atom) = tilec_layout::MmaAtom::named(n) {
            let one = tilec_layout::TiledMma::new(atom, [1, 1, 1]).expect("one warp");
            return Ok(Value::Mma(one));
        }
        if let Some(d) = atoms::unknown_atom(n, span) {
            return Err(d);
        }
        if !matches!(
            n,
            "LayoutLeft" | "GenColMajor" | "LayoutRight" | "GenRowMajor" | "X" | "inf"
        ) {
            self.undefined.push(n.to_string());
        }
        match n {
            "LayoutLeft" | "GenColMajor" => Ok(Value::Major(Major::Left)),
            "LayoutRight" | "GenRowMajor" => Ok(Value::Major(Major::Right)),
            "X" => Ok(Value::Skip),
            _ => match self.defined_later.and_then(|f| f(n)) {
                // Defined above, in a block (a loop's body, an if's branch)
                // that has ended: not in scope.
                Some(def) if def.start < span.start => Err(Diagnostic::new(
                    format!("`{n}` is not in scope here"),
                    span,
                )
                .with_label("used here")
                .with_related(def, "defined here, inside a block that ends before the use")
                .with_help(format!(
                    "a name lives until the end of its block: define `{n}` before the block to use it after"
                ))),
                Some(def) => Err(Diagnostic::new(
                    format!("`{n}` is used before its definition"),
                    span,
                )
                .with_label("used here")
                .with_related(def, "defined here")
                .with_help(format!("move the definition of `{n}` above its first use"))),
                // A name the program does not bind: `-inf` starts a running maximum.
                None if n == "inf" => Ok(Value::Float(f64::INFINITY)),
                None => {
                    let d = Diagnostic::new(format!("`{n}` is not defined"), span)
                        .with_label("unknown name");
                    // The closest names, ignoring case first: two typos,
                    // one for names of 3 or 4 characters, only case for
                    // shorter ones (a typo there makes most names close);
                    // the fewest wins. A typo counts 2 (its edit, and the
                    // case-blind inequality), a difference of case alone 0.
                    let distance = |k: &str| {
                        edit_distance(&k.to_ascii_lowercase(), &n.to_ascii_lowercase())
                            + usize::from(!k.eq_ignore_ascii_case(n))
                    };
                    let limit = match n.len() {
                        0..=2 => 2,
                        3 | 4 => 3,
                        _ => 4,
                    };
                    // In a kernel's statements the block and thread
                    // indices are names too (not in a parameter's layout).
                    let mut known = self.known_names.map_or(Vec::new(), |f| {
                        let mut names = f();
                        names.extend(tilec_layout::Builtin::ALL.map(|b| b.name().to_string()));
                        names
                    });
                    // And the algebra's own constants (`LayoutRigth`).
                    known.extend(
                        ["LayoutLeft", "LayoutRight", "GenColMajor", "GenRowMajor"]
                            .map(String::from),
                    );
                    known.retain(|k| k != n);
                    let best = known
                        .iter()
                        .map(|k| distance(k))
                        .min()
                        .unwrap_or(usize::MAX);
                    let mut close: Vec<&String> = known
                        .iter()
                        .filter(|k| best < limit && distance(k) == best)
                        .collect();
                    close.sort();
                    Err(match close.as_slice() {
                        // CUDA's 2-D and 3-D blocks: here a thread layout
                        // gives a thread its coordinates.
                        _ if (n.starts_with("thread.") || n.starts_with("threadIdx.") && n != "threadIdx.x")
                            && self.known_names.is_some() => d.with_help(
                            "blocks are one-dimensional: a thread is `thread.x`, and a thread layout gives it coordinates, e.g. local_partition(T, (32, 8):(1, 32), thread.x) for a 32 x 8 block",
                        ),
                        // CUDA's spellings of the indices.
                        _ if self.known_names.is_some()
                            && let Some(ours) = cuda_index(n) =>
                        {
                            d.with_help(format!("a thread's and a block's indices are `thread.x` and `block.x`, `block.y`, `block.z` here: write `{ours}`"))
                        }
                        [] => d,
                        [one] => d.with_help(format!("a similar name exists: `{one}`")),
                        more => d.with_help(format!(
                            "similar names exist: {}",
                            more.iter()
                                .map(|m| format!("`{m}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    })
                }
            },
        }
    }
}

/// A called name without its element type: `shared<f32>` calls `shared`.
pub(super) fn function_name(name: &str) -> &str {
    name.split('<').next().unwrap_or(name)
}

/// An unknown function's diagnostic: the known names close to it, else all
/// of them (the algebra's and `theirs`, the context's).
pub(super) fn unknown_function(name: &str, span: Span, theirs: &[Known]) -> Diagnostic {
    let base = function_name(name);
    let known: Vec<&str> = FUNCTIONS
        .iter()
        .map(|f| f.name)
        .chain(theirs.iter().map(|(n, _)| *n))
        .collect();
    let close: Vec<&str> = known
        .iter()
        .copied()
        .filter(|n| n.contains(base) || base.contains(n) || edit_distance(n, base) <= 2)
        .collect();
    // Not a function: the second argument of a reduction across threads.
    if base == "threads" {
        return Diagnostic::new("`threads(L, m)` is no value of its own", span)
            .with_label("it names the threads a reduction runs across")
            .with_help("write it inside the reduction, `reduce_sum(x, threads(L, m))`; bind the thread layout L with `layout` to share it");
    }
    let help = if close.is_empty() {
        format!("known functions: {}", known.join(", "))
    } else {
        format!("did you mean {}?", close.join(" or "))
    };
    Diagnostic::new(format!("unknown function `{name}`"), span).with_help(help)
}

pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// tilec's name for CUDA's `threadIdx.x` or `blockIdx.x|y|z` (blocks are
/// one-dimensional; `blockDim` and `gridDim` have none: the launch's).
fn cuda_index(n: &str) -> Option<String> {
    let (base, dim) = n.split_once('.')?;
    match (base, dim) {
        ("threadIdx", "x") => Some("thread.x".into()),
        ("blockIdx", "x" | "y" | "z") => Some(format!("block.{dim}")),
        _ => None,
    }
}
