//! The argument checks every function of the algebra shares: extents are
//! at least 1 (in shapes, layouts and tilers) and strides at least 0.

use crate::diagnostic::Diagnostic;
use crate::span::Span;
use tilec_layout::{Int, IntTuple, Tiler};

/// Extents are at least 1: a zero or negative extent has no coordinates.
pub fn positive_extents(shape: &IntTuple, span: Span) -> Result<(), Diagnostic> {
    at_least_one(&shape.leaves(), || format!("the shape {shape}"), span)
}

/// A tiler's extents are at least 1, as a shape's: a tile of 0 or fewer
/// elements has none to hold.
pub(crate) fn positive_tiler(t: &Tiler, span: Span) -> Result<(), Diagnostic> {
    fn extents(t: &Tiler, out: &mut Vec<Int>) {
        match t {
            Tiler::Layout(l) => out.extend(l.shape().leaves()),
            Tiler::Int(n) => out.push(n.clone()),
            Tiler::Under => {}
            Tiler::Tuple(v) => v.iter().for_each(|t| extents(t, out)),
        }
    }
    let mut all = Vec::new();
    extents(t, &mut all);
    at_least_one(&all, || format!("the tiler {t}"), span)
}

/// The error for the first static extent below 1 of `what`'s, if any.
fn at_least_one(extents: &[Int], what: impl Fn() -> String, span: Span) -> Result<(), Diagnostic> {
    match extents
        .iter()
        .find(|e| e.as_static().is_some_and(|v| v < 1))
    {
        None => Ok(()),
        Some(e) => Err(
            Diagnostic::new(format!("{} has the extent {e}", what()), span)
                .with_label("extents must be at least 1")
                .with_help("use 1 for a mode with a single coordinate"),
        ),
    }
}

/// Strides are at least 0: tilec's indices never go below a tensor's base.
pub(super) fn non_negative_strides(stride: &IntTuple, span: Span) -> Result<(), Diagnostic> {
    match stride
        .leaves()
        .iter()
        .find(|e| e.as_static().is_some_and(|v| v < 0))
    {
        None => Ok(()),
        Some(e) => Err(
            Diagnostic::new(format!("negative stride {e} in {stride}"), span)
                .with_label("strides must be at least 0")
                .with_help("tilec's layouts map coordinates to offsets from the start of a tensor; reverse a mode by its coordinates instead"),
        ),
    }
}
