//! A picture as SVG: one square per cell, colored by its key (the offset
//! for a layout, the thread for a thread-value layout), labelled, with row
//! and column indices, as CuTe's `print_latex` draws them.

use super::Picture;
use std::fmt::Write;

const CELL: usize = 44;
const MARGIN: usize = 36;

/// Eight soft colors, as CuTe's TikZ pictures cycle through; keys pick one.
const PALETTE: [&str; 8] = [
    "#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2",
];

pub fn render(p: &Picture) -> String {
    // Wide enough for the grid and for the title (about 8.5 px a character).
    let w = (MARGIN + p.cols * CELL + 8).max(MARGIN + p.title.len() * 17 / 2 + 8);
    let h = MARGIN + 24 + p.rows * CELL + 8;
    let top = MARGIN + 24;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="18" font-size="14">{}</text>"#,
        escape(&p.title)
    );
    for n in 0..p.cols {
        let x = MARGIN + n * CELL + CELL / 2;
        let _ = writeln!(
            s,
            r#"<text x="{x}" y="{}" text-anchor="middle" fill="gray">{n}</text>"#,
            top - 6
        );
    }
    for m in 0..p.rows {
        let y = top + m * CELL + CELL / 2 + 4;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{y}" text-anchor="end" fill="gray">{m}</text>"#,
            MARGIN - 6
        );
        for n in 0..p.cols {
            let x = MARGIN + n * CELL;
            let yy = top + m * CELL;
            match &p.cells[m * p.cols + n] {
                Some(c) => {
                    let fill = PALETTE[c.key.rem_euclid(PALETTE.len() as i64) as usize];
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x}" y="{yy}" width="{CELL}" height="{CELL}" fill="{fill}" stroke="black"/><text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                        x + CELL / 2,
                        yy + CELL / 2 + 4,
                        escape(&c.label)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x}" y="{yy}" width="{CELL}" height="{CELL}" fill="whitesmoke" stroke="black"/>"#
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
