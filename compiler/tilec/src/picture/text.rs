//! A picture as a terminal grid, in the style of CuTe's `print_layout`:
//! column indices on top, row indices on the left, one boxed cell each.

use super::Picture;
use std::fmt::Write;

pub fn render(p: &Picture) -> String {
    let width = p
        .cells
        .iter()
        .flatten()
        .map(|c| c.label.len())
        .chain([p.cols.saturating_sub(1).to_string().len()])
        .max()
        .unwrap_or(1)
        + 1;
    let margin = p.rows.saturating_sub(1).to_string().len() + 2;
    let mut out = String::new();
    let _ = writeln!(out, "{}", p.title);
    let _ = write!(out, "{:margin$}", "");
    for n in 0..p.cols {
        let _ = write!(out, " {n:>width$}");
    }
    out.push('\n');
    let rule = format!(
        "{:margin$}+{}\n",
        "",
        format!("{}+", "-".repeat(width)).repeat(p.cols)
    );
    out.push_str(&rule);
    for m in 0..p.rows {
        let _ = write!(out, "{m:>w$}  |", w = margin - 2);
        for n in 0..p.cols {
            let label = p.cells[m * p.cols + n]
                .as_ref()
                .map_or(".", |c| c.label.as_str());
            let _ = write!(out, "{label:>width$}|");
        }
        out.push('\n');
        out.push_str(&rule);
    }
    out
}
