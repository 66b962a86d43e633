//! Pictures of layouts, because people read layouts faster than tuples.
//!
//! In: a layout (offsets drawn over its 2-D domain, like CuTe's
//! `print_layout`) or a thread-value layout and its tile shape (each tile
//! cell labelled with the thread and value that own it, like CuTe's
//! `print_latex` for TV layouts). Out: a [`Picture`], rendered as a terminal
//! grid ([`text`]) or an SVG ([`svg`]).

pub mod svg;
pub mod text;

use tilec_layout::{ComposedLayout, Coord, IntTuple, Layout};

/// A grid of labelled cells; `key` picks the color (offset, or thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picture {
    pub title: String,
    pub rows: usize,
    pub cols: usize,
    /// Row-major; `None` for a cell nothing maps to.
    pub cells: Vec<Option<Cell>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub label: String,
    pub key: i64,
}

/// Pictures larger than this are refused: nobody reads them.
const MAX_CELLS: i64 = 1 << 16;

fn static_size(t: &IntTuple, what: &str) -> Result<usize, String> {
    let n = t
        .product()
        .as_static()
        .ok_or_else(|| format!("{what} {t} is not static"))?;
    if n < 1 {
        return Err(format!("{what} has no cells: extents are at least 1"));
    }
    if n > MAX_CELLS {
        return Err(format!(
            "{what} has {n} cells; pictures are drawn up to {MAX_CELLS}"
        ));
    }
    Ok(n as usize)
}

/// Rows and columns of a layout's domain: mode 0 down, the other modes
/// (flattened, first fastest) across. A rank-1 layout is one column.
fn grid_dims(l: &Layout) -> Result<(usize, usize), String> {
    let modes = l.shape().modes();
    let Some(first) = modes.first() else {
        return Err(format!("{l} has no modes, so no cells to draw"));
    };
    let rows = static_size(first, &format!("mode 0 of {l}"))?;
    let cols = static_size(
        &IntTuple::Tuple(modes[1..].to_vec()),
        &format!("the column modes of {l}"),
    )?;
    if rows * cols > MAX_CELLS as usize {
        return Err(format!(
            "{l} has {} cells; pictures are drawn up to {MAX_CELLS}",
            rows * cols
        ));
    }
    Ok((rows, cols))
}

/// Evaluates `view` (rank 1 or 2) at row `m`, column `n` of its grid.
fn at(view: &Layout, m: usize, n: usize) -> Result<i64, String> {
    let c = if view.rank() == 1 {
        Coord::from(m as i64)
    } else {
        Coord::Tuple(vec![Coord::from(m as i64), Coord::from(n as i64)])
    };
    view.eval(&c)
        .map_err(|e| e.to_string())?
        .as_static()
        .ok_or_else(|| format!("{view} is not static"))
}

/// `(m, n0, n1, ...)` as `(m, (n0, n1, ...))`.
fn group_tail(l: &Layout) -> Layout {
    let s = l.shape().modes();
    let d = l.stride().modes();
    Layout::new(
        IntTuple::Tuple(vec![s[0].clone(), IntTuple::Tuple(s[1..].to_vec())]),
        IntTuple::Tuple(vec![d[0].clone(), IntTuple::Tuple(d[1..].to_vec())]),
    )
    .expect("regrouping keeps congruence")
}

/// The offsets of `l` over its 2-D domain.
pub fn layout_picture(l: &Layout) -> Result<Picture, String> {
    offsets_picture(l, l.to_string(), &|x| x)
}

/// The offsets of a swizzled layout `Sw o offset o L` over L's 2-D domain.
pub fn swizzled_picture(c: &ComposedLayout) -> Result<Picture, String> {
    let offset = c.offset.as_static().ok_or("the offset is not static")?;
    offsets_picture(&c.layout, c.to_string(), &|x| c.swizzle.apply(offset + x))
}

/// `map` of the offsets of `l` over its 2-D domain.
fn offsets_picture(l: &Layout, title: String, map: &dyn Fn(i64) -> i64) -> Result<Picture, String> {
    let (rows, cols) = grid_dims(l)?;
    let view = if l.rank() > 2 {
        group_tail(l)
    } else {
        l.clone()
    };
    let mut cells = Vec::with_capacity(rows * cols);
    for m in 0..rows {
        for n in 0..cols {
            let off = map(at(&view, m, n)?);
            cells.push(Some(Cell {
                label: off.to_string(),
                key: off,
            }));
        }
    }
    Ok(Picture {
        title,
        rows,
        cols,
        cells,
    })
}

/// Who owns each cell of a tile: `tv` maps (thread, value) to a
/// column-major index into `tile`. Cells nobody owns stay empty; a cell
/// owned twice keeps its first owner (and the title counts such cells).
pub fn tv_picture(tv: &Layout, tile: &IntTuple) -> Result<Picture, String> {
    if tv.rank() != 2 {
        return Err(format!(
            "a thread-value layout has two modes (thread, value); {tv} has {}",
            tv.rank()
        ));
    }
    let tile_layout = Layout::col_major(tile);
    let (rows, cols) = grid_dims(&tile_layout)?;
    let threads = static_size(&tv.shape().modes()[0], "the thread mode")?;
    let values = static_size(&tv.shape().modes()[1], "the value mode")?;
    let mut cells: Vec<Option<Cell>> = vec![None; rows * cols];
    // Owners a cell, and the cells nobody owns.
    let mut owners = vec![0usize; rows * cols];
    for v in 0..values {
        for t in 0..threads {
            let c = Coord::Tuple(vec![Coord::from(t as i64), Coord::from(v as i64)]);
            let off = tv
                .eval(&c)
                .map_err(|e| e.to_string())?
                .as_static()
                .ok_or("not static")?;
            let (m, n) = tile_cell(off, rows, cols).ok_or_else(|| {
                format!("thread {t} value {v} maps to {off}, outside the tile {tile}")
            })?;
            owners[m * cols + n] += 1;
            cells[m * cols + n].get_or_insert_with(|| Cell {
                label: format!("T{t}V{v}"),
                key: t as i64,
            });
        }
    }
    let mut title = format!("{tv} over tile {tile}");
    let shared: Vec<usize> = owners.iter().copied().filter(|&n| n > 1).collect();
    if let Some(most) = shared.iter().max() {
        title.push_str(&format!(
            " ({} cell(s) owned more than once, one by as many as {most}; each shows its first owner)",
            shared.len()
        ));
    }
    let unowned = owners.iter().filter(|&&n| n == 0).count();
    if unowned > 0 && !shared.is_empty() {
        title.push_str(&format!(" ({unowned} cell(s) owned by none)"));
    }
    Ok(Picture {
        title,
        rows,
        cols,
        cells,
    })
}

/// The grid cell of a column-major tile index.
fn tile_cell(off: i64, rows: usize, cols: usize) -> Option<(usize, usize)> {
    let off = usize::try_from(off).ok().filter(|&o| o < rows * cols)?;
    Some((off % rows, off / rows))
}
