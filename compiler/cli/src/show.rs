//! `tilec show`: a layout as a grid of offsets, or a thread-value layout as
//! the owner of each tile cell; in the terminal, and as SVG with `--svg`.

use std::process::ExitCode;
use tilec::check::algebra::eval_static;
use tilec::picture::{self, Picture};

#[derive(clap::Args)]
pub struct Args {
    /// The layout, e.g. '(4,3):(3,1)' (any algebra expression).
    layout: String,
    /// Draw a thread-value layout over a tile of this shape, e.g. --tv '(8,4)'.
    #[arg(long, value_name = "TILE_SHAPE")]
    tv: Option<String>,
    /// Also write the picture as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> ExitCode {
    match picture_of(&args) {
        Ok(p) => {
            print!("{}", picture::text::render(&p));
            if let Some(path) = &args.svg
                && let Err(e) = std::fs::write(path, picture::svg::render(&p))
            {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::FAILURE
        }
    }
}

fn picture_of(args: &Args) -> Result<Picture, String> {
    let value =
        eval_static(&args.layout).map_err(|d| format!("{:?}", d.report("layout", &args.layout)))?;
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
            picture::tv_picture(&layout, &shape)
        }
    }
    .map_err(|e| format!("error: {e}"))
}
