//! What `tilec check --perf` says of an element-wise statement as it is
//! lowered: a load or store narrower than a copy of the same tensors, and
//! a sum that regrouped is an operation a value cheaper. In: the
//! statement's views, widths and value; out: notes beside its span.

use super::Lowerer;
use crate::check::program::{Elem, Elementwise, View};
use crate::span::Span;

impl Lowerer<'_> {
    /// `tilec check --perf`'s note on a staged load or store narrower
    /// than a `copy` of the same views would be: a copy's vectors may add
    /// a launch condition (their alignment at run-time extents), a
    /// statement's do not. Probed by asking for the wider one and taking
    /// back the condition it made.
    pub(super) fn note_narrower_than_a_copy(
        &mut self,
        (src, dst): (&View, &View),
        n: i64,
        elem: Elem,
        width: i64,
        span: Span,
    ) {
        if self.variant != super::Variant::Full {
            return;
        }
        let made = self.conditions.len();
        let wider = self.vector_width(src, dst, n, elem, true);
        self.conditions.truncate(made);
        if wider > width {
            self.note_beside(
                span,
                &format!(
                    "this statement moves {width} element(s) at a time where a `copy` of the same tensors would move {wider}: copy the operands into registers first (`copy(tA, rA)`, then the statement on rA), whose vectors may add a launch condition on their alignment; an element-wise statement's do not (in a GEMM's epilogue it would keep the whole launch off its full-tile entry)"
                ),
            );
        }
    }

    /// `tilec check --perf`'s note on a sum that regrouped takes one
    /// operation a value fewer ([`Elementwise::sums_products_then_a_term`]):
    /// an epilogue after the main loop pays each in full (version 61 of
    /// docs/performance.md).
    pub(super) fn note_sum_order(&mut self, value: &Elementwise, integers: bool, span: Span) {
        if !integers && value.sums_products_then_a_term() {
            self.note_beside(
                span,
                "a term added after a sum of products, left to right (`a * x + b * y + c`), costs an add a value; `a * x + (b * y + c)` folds it into an fma",
            );
        }
    }
}
