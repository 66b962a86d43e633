//! `tilec check --shapes`: every binding with its inferred shape, layout and
//! offset, and the launch conditions, the way CuTe users annotate by hand.

use super::program::{Base, Kernel, Op};
use std::fmt::Write;

/// Each binding with its shape and layout, the way CuTe users annotate code.
pub fn shapes_report(kernels: &[Kernel]) -> String {
    let mut out = String::new();
    for k in kernels {
        let _ = writeln!(out, "kernel {}", k.name);
        for t in &k.tunables {
            let list: Vec<String> = t.candidates.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "  tune {} = {} (default {}, candidates {})",
                t.name,
                t.value,
                t.default,
                list.join(", ")
            );
        }
        let grid: Vec<String> = k
            .launch
            .grid
            .iter()
            .map(|g| k.in_place_int(g).to_string())
            .collect();
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
            // A tensor's stride symbols read as its declared strides where
            // they are those at every launch.
            let in_place = |t: &tilec_layout::IntTuple| t.map(&|i| k.in_place_int(i));
            let view_layout = tilec_layout::Layout::new(
                in_place(b.view.layout.shape()),
                in_place(b.view.layout.stride()),
            )
            .expect("the same profile");
            // A swizzled buffer's views index through its swizzle, outermost.
            let layout = match b.view.base {
                Base::Shared(s) => match k.shared[s].swizzle {
                    Some(sw) => format!("{sw} o {view_layout}"),
                    None => view_layout.to_string(),
                },
                _ => view_layout.to_string(),
            };
            let _ = writeln!(
                out,
                "  {:width$}  {:<24} {} {}, layout {layout}, offset {}",
                b.name,
                b.view.layout.shape().to_string(),
                b.view.base.space(),
                b.view.elem,
                k.in_place_int(&b.view.offset)
            );
        }
        // Facts as the launch reads them: in-place symbols are their
        // declared values.
        let conditions: Vec<tilec_layout::Condition> = k
            .conditions
            .iter()
            .map(|c| tilec_layout::Condition {
                fact: k.in_place(&c.fact),
                ..c.clone()
            })
            .collect();
        // A tensor that TMA alone reads and writes needs no full tiles:
        // TMA fills zeros past its edges and clips its stores.
        let mut by_element = Vec::new();
        super::program::walk(&k.body, &mut |s| {
            if matches!(s.op, Op::CopyTma { .. } | Op::Prefetch { .. }) {
                return;
            }
            for v in s.op.read().into_iter().chain(s.op.written()) {
                if let Base::Param(p) = v.base {
                    by_element.push(p);
                }
            }
        });
        let conditions: Vec<_> = conditions
            .into_iter()
            .filter(|c| {
                c.needed_by != crate::check::kernel::FULL_TILES
                    || c.tensor.is_none_or(|p| by_element.contains(&p))
            })
            .collect();
        let mut shown: Vec<(&tilec_layout::Fact, &str)> = Vec::new();
        for c in &conditions {
            // The same fact about several tensors' tiles, once, naming them.
            if shown.contains(&(&c.fact, c.needed_by)) {
                continue;
            }
            shown.push((&c.fact, c.needed_by));
            if c.needed_by == crate::check::kernel::FULL_TILES {
                let tensors: Vec<&str> = conditions
                    .iter()
                    .filter(|d| d.fact == c.fact && d.needed_by == c.needed_by)
                    .filter_map(|d| d.tensor.map(|p| k.params[p].name.as_str()))
                    .collect();
                let _ = match tensors.is_empty() {
                    true => writeln!(out, "  fast path where {}", c.fact),
                    false => writeln!(
                        out,
                        "  fast path where {} (tiles of {})",
                        c.fact,
                        tensors.join(", ")
                    ),
                };
            } else {
                let _ = writeln!(out, "  requires {c}");
            }
        }
    }
    out
}
