//! The front and middle end for one source: check every kernel, then lower
//! every variant of each.
//!
//! In: source text. Out: each kernel's typed program with its lowered
//! variants (full tiles first), or every diagnostic. `tilec check` and
//! `tilec build` both go through here, so whatever lowering refuses,
//! `check` refuses too, at the statement's span.

use crate::check::kernel::check_source_with;
use crate::check::program::{Kernel, Settings};
use crate::diagnostic::{Diagnostic, SourceLines};
use crate::lower::{Lowered, lower_variant_at, lower_variant_checked, lower_variants_each};

/// Checks and lowers every kernel of `src`.
pub fn lower_source(src: &str) -> Result<Vec<(Kernel, Vec<Lowered>)>, Vec<Diagnostic>> {
    lower_source_with(src, None, &Settings::new())
}

/// Checks and lowers every kernel of `src`, its tunables at `settings`;
/// with `checked` (the file's name), every global and shared access
/// asserts its bounds and reports its line (`--checked`).
pub fn lower_source_with(
    src: &str,
    checked: Option<&str>,
    settings: &Settings,
) -> Result<Vec<(Kernel, Vec<Lowered>)>, Vec<Diagnostic>> {
    lower_source_each(src, checked, settings, &mut |_, _| {})
}

/// [`lower_source_with`], telling `ready` of each variant kept (with its
/// kernel's index) as soon as it is lowered, in the order of the result,
/// until a kernel fails to lower.
pub fn lower_source_each(
    src: &str,
    checked: Option<&str>,
    settings: &Settings,
    ready: &mut dyn FnMut(usize, &Lowered),
) -> Result<Vec<(Kernel, Vec<Lowered>)>, Vec<Diagnostic>> {
    let lines = SourceLines::new(checked.unwrap_or_default(), src);
    let kernels = check_source_with(src, settings)?;
    let mut out = Vec::with_capacity(kernels.len());
    let mut diags = Vec::new();
    for (i, k) in kernels.into_iter().enumerate() {
        let lower = |v| match checked {
            None => lower_variant_at(&k, v, &lines),
            Some(_) => lower_variant_checked(&k, v, &lines),
        };
        // After a diagnostic nothing will be built: no more back ends.
        let failed = !diags.is_empty();
        let lowered = lower_variants_each(&k, lower, &mut |l| {
            if !failed {
                ready(i, l)
            }
        });
        match lowered {
            Ok(l) => out.push((k, l)),
            Err(d) => diags.push(d),
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}
