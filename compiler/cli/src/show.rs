//! `tilec show`: a layout as a grid of offsets, or a thread-value layout as
//! the owner of each tile cell; in the terminal, as SVG with `--svg`, and as
//! PNG with `--png` (the SVG drawn by resvg with a built-in monospace font),
//! for places that do not show SVG.

use std::process::ExitCode;
use tilec::check::algebra::{eval_static, positive_extents};
use tilec::check::value::Value;
use tilec::picture::{self, Picture};
use tilec_layout::{IntTuple, Operand};

#[derive(clap::Args)]
pub struct Args {
    /// The layout, e.g. '(4,3):(3,1)' (any algebra expression).
    layout: String,
    /// Draw a thread-value layout over a tile of this shape, e.g. --tv '(8,4)'.
    #[arg(long, value_name = "TILE_SHAPE")]
    tv: Option<String>,
    /// For an MMA atom or tiled MMA: which operand's owners to draw.
    #[arg(long, value_enum, default_value = "c")]
    operand: OperandArg,
    /// Also write the picture as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// Also write the picture as PNG.
    #[arg(long, value_name = "FILE")]
    png: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> ExitCode {
    match picture_of(&args) {
        Ok(p) => {
            print!("{}", picture::text::render(&p));
            let svg = picture::svg::render(&p);
            if let Some(path) = &args.svg
                && let Err(e) = std::fs::write(path, &svg)
            {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            if let Some(path) = &args.png {
                let written = png(&svg).and_then(|bytes| {
                    std::fs::write(path, bytes)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))
                });
                if let Err(e) = written {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::FAILURE
        }
    }
}

/// The operands of an MMA, as `--operand` spells them.
#[derive(Clone, Copy, clap::ValueEnum)]
enum OperandArg {
    A,
    B,
    C,
}

fn picture_of(args: &Args) -> Result<Picture, String> {
    let value =
        eval_static(&args.layout).map_err(|d| format!("{:?}", d.report("layout", &args.layout)))?;
    match &value {
        // Who holds each element of the operand's tile (CuTe's print_latex(mma)).
        Value::Mma(mma) => {
            let op = match args.operand {
                OperandArg::A => Operand::A,
                OperandArg::B => Operand::B,
                OperandArg::C => Operand::C,
            };
            let (rows, cols) = mma.extent(op);
            let tile = IntTuple::Tuple(vec![IntTuple::from(rows), IntTuple::from(cols)]);
            let mut p = picture::tv_picture(&mma.tv(op), &tile)?;
            p.title = format!("{op:?} of {mma}: {}", p.title);
            if op == Operand::B && mma.atom.warpgroup || op == Operand::A && mma.atom.shared_a {
                // Stride 0 over threads: the picture shows thread 0's claim.
                p.title.push_str(
                    "; wgmma reads it from shared memory, each warpgroup all of its tile",
                );
            }
            return Ok(p);
        }
        Value::Composed(c) if args.tv.is_none() => return picture::swizzled_picture(c),
        _ => {}
    }
    let layout = value
        .to_layout()
        .ok_or_else(|| format!("error: {} is {}, not a layout", value, value.kind()))?;
    match &args.tv {
        None => picture::layout_picture(&layout),
        Some(tile_src) => {
            let tile =
                eval_static(tile_src).map_err(|d| format!("{:?}", d.report("tile", tile_src)))?;
            let shape = tile
                .to_int_tuple()
                .ok_or_else(|| format!("error: the tile {tile} must be a shape"))?;
            // Its extents at least 1, as a layout's shape is checked.
            let whole = tilec::span::Span {
                start: 0,
                end: tile_src.len(),
            };
            positive_extents(&shape, whole)
                .map_err(|d| format!("{:?}", d.report("tile", tile_src)))?;
            picture::tv_picture(&layout, &shape)
        }
    }
    .map_err(|e| format!("error: {e}"))
}

/// The most pixels a PNG gets: a larger picture is drawn scaled down to
/// fit (a 256 x 256 layout's picture is 12332 x 6212 px, which took 8 s and
/// 1.1 GB to draw and compress at full size, 2 s at this cap); the SVG
/// keeps every label.
const PNG_MAX_PIXELS: f64 = 2048.0 * 2048.0;

/// Draws the SVG into a PNG, its labels in the built-in DejaVu Sans Mono
/// (the 0.6 em advance the SVG's cell widths assume). Says on stderr when
/// the picture is scaled down.
fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut options = resvg::usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_font_data(dejavu::sans_mono::regular().to_vec());
    fonts.set_monospace_family("DejaVu Sans Mono");
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let size = tree.size();
    let scale = (PNG_MAX_PIXELS / (size.width() as f64 * size.height() as f64))
        .sqrt()
        .min(1.0) as f32;
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    if scale < 1.0 {
        eprintln!(
            "note: the PNG is drawn at {w} x {h} px, {:.0}% of the picture's size (--svg keeps every label readable)",
            scale * 100.0
        );
    }
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(w, h).ok_or("the picture is too large for a PNG")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}
