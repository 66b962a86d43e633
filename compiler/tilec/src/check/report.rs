//! `tilec check --shapes`: every binding with its inferred shape, layout and
//! offset, and the launch conditions, the way CuTe users annotate by hand.

use super::program::Kernel;
use std::fmt::Write;

/// Each binding with its shape and layout, the way CuTe users annotate code.
pub fn shapes_report(kernels: &[Kernel]) -> String {
    let mut out = String::new();
    for k in kernels {
        let _ = writeln!(out, "kernel {}", k.name);
        let grid: Vec<String> = k.launch.grid.iter().map(ToString::to_string).collect();
        let block: Vec<String> = k.launch.block.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "  launch grid({}) block({})",
            grid.join(", "),
            block.join(", ")
        );
        let _ = writeln!(out, "  shared memory {} bytes", k.shared_bytes());
        let width = k.bindings.iter().map(|b| b.name.len()).max().unwrap_or(0);
        for b in &k.bindings {
            let _ = writeln!(
                out,
                "  {:width$}  {:<24} {} {}, layout {}, offset {}",
                b.name,
                b.view.layout.shape().to_string(),
                b.view.base.space(),
                b.view.elem,
                b.view.layout,
                b.view.offset
            );
        }
        for c in &k.conditions {
            if c.needed_by == crate::check::kernel::FULL_TILES {
                let _ = writeln!(out, "  fast path where {}", c.fact);
            } else {
                let _ = writeln!(out, "  requires {c}");
            }
        }
    }
    out
}
