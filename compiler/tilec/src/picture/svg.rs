//! A picture as SVG: one box per cell, colored by its key (the offset for a
//! layout, the thread for a thread-value layout), labelled, with row and
//! column indices, as CuTe's `print_latex` draws them. Every cell is as wide
//! as the longest label needs, with room on both sides, so that labels such
//! as `T128V0` never touch a border.

use super::Picture;
use std::fmt::Write;

/// A cell's height, and its least width.
const CELL: usize = 24;
const MARGIN: usize = 36;
/// Width of a character of the 12 px monospace labels (0.6 em, as in
/// DejaVu Sans Mono and Courier), and the room left on each side.
const CHAR: f64 = 7.2;
const PAD: usize = 6;

/// Eight soft colors, as CuTe's TikZ pictures cycle through; keys pick one.
const PALETTE: [&str; 8] = [
    "#afafff", "#afffaf", "#ffffaf", "#ffafaf", "#d2d2ff", "#d2ffd2", "#ffffd2", "#ffd2d2",
];

pub fn render(p: &Picture) -> String {
    let longest = p
        .cells
        .iter()
        .flatten()
        .map(|c| c.label.chars().count())
        .chain([p.cols.saturating_sub(1).to_string().len()])
        .max()
        .unwrap_or(1);
    let cw = CELL.max((longest as f64 * CHAR).ceil() as usize + 2 * PAD);
    // Wide enough for the grid and for the title (about 8.5 px a character).
    let w = (MARGIN + p.cols * cw + 8).max(MARGIN + p.title.len() * 17 / 2 + 8);
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
        let x = MARGIN + n * cw + cw / 2;
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
            let x = MARGIN + n * cw;
            let yy = top + m * CELL;
            match &p.cells[m * p.cols + n] {
                Some(c) => {
                    let fill = PALETTE[c.key.rem_euclid(PALETTE.len() as i64) as usize];
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x}" y="{yy}" width="{cw}" height="{CELL}" fill="{fill}" stroke="black"/><text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                        x + cw / 2,
                        yy + CELL / 2 + 4,
                        escape(&c.label)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x}" y="{yy}" width="{cw}" height="{CELL}" fill="whitesmoke" stroke="black"/>"#
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
