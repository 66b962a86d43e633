//! The algebra's functions, in one table: each name with its argument
//! forms and what it computes. Dispatch, usage lines and the names that
//! "did you mean" suggests all come from [`FUNCTIONS`].
//!
//! In: evaluated arguments. Out: a value, with the run-time conditions the
//! operation needs for dynamic values, or a diagnostic at the call.

use super::{Args, apply};
use crate::check::value::{Major, Value};
use crate::diagnostic::Diagnostic;
use tilec_layout as alg;
use tilec_layout::{AlgebraError, Conditions, Grouping, Int, Interleave, Layout, Swizzle};

/// What a function computes from its evaluated arguments.
type Apply = fn(&Args, &mut Conditions) -> Result<Value, Diagnostic>;

/// A function of the algebra.
pub struct Function {
    pub name: &'static str,
    /// Its argument forms, for help lines.
    pub usage: &'static str,
    /// Applied to a tensor, it transforms the tensor's layout (and its
    /// coordinate functions) and keeps its memory: `logical_divide(gA,
    /// tiler)` is a tensor.
    pub keeps_tensors: bool,
    pub(super) apply: Apply,
}

impl Function {
    const fn new(name: &'static str, usage: &'static str, apply: Apply) -> Self {
        Function {
            name,
            usage,
            keeps_tensors: false,
            apply,
        }
    }

    const fn keeping_tensors(self) -> Self {
        Function {
            keeps_tensors: true,
            ..self
        }
    }
}

/// Every function `tilec algebra` and a kernel's layouts know.
pub const FUNCTIONS: &[Function] = &[
    Function::new(
        "make_layout",
        "make_layout(SHAPE) | make_layout(SHAPE, STRIDE) | make_layout(SHAPE, LayoutRight) | make_layout(L0, L1, ...)",
        make_layout,
    ),
    Function::new(
        "make_ordered_layout",
        "make_ordered_layout(SHAPE, ORDER)",
        make_ordered_layout,
    ),
    Function::new("size", "size(X)", measure),
    Function::new("cosize", "cosize(L)", cosize),
    Function::new("rank", "rank(X)", measure),
    Function::new("depth", "depth(X)", measure),
    Function::new("shape", "shape(L)", shape_or_stride),
    Function::new("stride", "stride(L)", shape_or_stride),
    Function::new("get", "get(X, i, ...)", get),
    Function::new("eval", "eval(L, COORD)", eval),
    Function::new("idx2crd", "idx2crd(INDEX, SHAPE)", idx2crd),
    Function::new(
        "crd2idx",
        "crd2idx(COORD, SHAPE) | crd2idx(COORD, SHAPE, STRIDE)",
        crd2idx,
    ),
    Function::new("flatten", "flatten(L)", flatten).keeping_tensors(),
    Function::new(
        "coalesce",
        "coalesce(L) | coalesce(L, PROFILE)",
        coalesce_or_filter,
    )
    .keeping_tensors(),
    Function::new(
        "filter",
        "filter(L) | filter(L, PROFILE)",
        coalesce_or_filter,
    )
    .keeping_tensors(),
    Function::new(
        "composition",
        "composition(A, B) with B a layout, tiler, shape or integer; A may be a swizzle",
        composition,
    )
    .keeping_tensors(),
    Function::new(
        "complement",
        "complement(A) | complement(A, COTARGET)",
        complement,
    ),
    Function::new("right_inverse", "right_inverse(L)", right_inverse),
    Function::new("left_inverse", "left_inverse(L)", left_inverse),
    Function::new("logical_divide", "logical_divide(L, TILER)", divide).keeping_tensors(),
    Function::new("zipped_divide", "zipped_divide(L, TILER)", divide).keeping_tensors(),
    Function::new("tiled_divide", "tiled_divide(L, TILER)", divide).keeping_tensors(),
    Function::new("flat_divide", "flat_divide(L, TILER)", divide).keeping_tensors(),
    Function::new("logical_product", "logical_product(L, TILER)", product).keeping_tensors(),
    Function::new("zipped_product", "zipped_product(L, TILER)", product).keeping_tensors(),
    Function::new("tiled_product", "tiled_product(L, TILER)", product).keeping_tensors(),
    Function::new("flat_product", "flat_product(L, TILER)", product).keeping_tensors(),
    Function::new(
        "blocked_product",
        "blocked_product(BLOCK, TILER_LAYOUT)",
        rank_product,
    ),
    Function::new(
        "raked_product",
        "raked_product(BLOCK, TILER_LAYOUT)",
        rank_product,
    ),
    Function::new(
        "tile_to_shape",
        "tile_to_shape(BLOCK, SHAPE) | tile_to_shape(BLOCK, SHAPE, ORDER)",
        tile_to_shape,
    ),
    Function::new(
        "make_tiled_mma",
        "make_tiled_mma(ATOM, (WARPS_M, WARPS_N))",
        make_tiled_mma,
    ),
    Function::new(
        "SM90_64xNx16_F32BF16BF16_SS",
        concat!(
            "SM90_64xNx16_F32BF16BF16_SS(N): the wgmma atom of N columns, N ",
            wgmma_n!()
        ),
        wgmma_atom,
    ),
    Function::new(
        "SM90_64xNx16_F32F16F16_SS",
        concat!(
            "SM90_64xNx16_F32F16F16_SS(N): the wgmma atom of N columns, N ",
            wgmma_n!()
        ),
        wgmma_atom,
    ),
    Function::new(
        "SM90_64xNx16_F32BF16BF16_RS",
        concat!(
            "SM90_64xNx16_F32BF16BF16_RS(N): the wgmma atom of N columns, A from registers, N ",
            wgmma_n!()
        ),
        wgmma_atom,
    ),
    Function::new(
        "SM90_64xNx16_F32F16F16_RS",
        concat!(
            "SM90_64xNx16_F32F16F16_RS(N): the wgmma atom of N columns, A from registers, N ",
            wgmma_n!()
        ),
        wgmma_atom,
    ),
    Function::new(
        "max_common_vector",
        "max_common_vector(A, B)",
        max_common_vector,
    ),
    Function::new(
        "max_common_layout",
        "max_common_layout(A, B)",
        max_common_layout,
    ),
    Function::new("Swizzle", "Swizzle(B, M, S)", swizzle),
    Function::new("Sw", "Sw(B, M, S), short for Swizzle(B, M, S)", swizzle),
    Function::new(
        "ceil_div",
        "ceil_div(A, B) with A, B integers or tuples",
        ceil_div,
    ),
    Function::new("min", "min(a, b) of integers", min_or_max),
    Function::new("max", "max(a, b) of integers", min_or_max),
    Function::new(
        "step",
        "step(1, X, 1): which modes a local_tile or local_partition keeps",
        step,
    ),
];

fn step(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    Ok(Value::Tuple(a.values.clone()))
}

fn min_or_max(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    let (x, y) = (a.int(0)?, a.int(1)?);
    Ok(Value::Int(if a.name == "min" {
        x.min(&y)
    } else {
        x.max(&y)
    }))
}

fn ceil_div(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    let (x, y) = (a.int_tuple(0)?, a.int_tuple(1)?);
    if y.leaves()
        .iter()
        .any(|v| v.as_static().is_some_and(|v| v < 1))
    {
        return Err(a.wrong(1, "positive").with_help(
            "ceil_div(a, b) counts the pieces of size b that cover a: b is at least 1 (a grid of ceil_div(M, 128) blocks, a split of ceil_div(kt, splits) k-tiles)",
        ));
    }
    Ok(x.ceil_div(&y)
        .ok_or_else(|| a.wrong(1, "a tuple of at most as many modes"))?
        .into())
}

fn make_layout(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    if a.values.is_empty() {
        return Err(a.arity(&[1, 2]).expect_err("no arguments"));
    }
    if a.values.iter().all(|v| v.as_layout().is_some()) {
        let parts: Vec<Layout> = a.values.iter().filter_map(Value::as_layout).collect();
        return Ok(Layout::concat(&parts).into());
    }
    a.arity(&[1, 2])?;
    let shape = a.shape(0)?;
    let layout = match a.values.get(1) {
        None | Some(Value::Major(Major::Left)) => Layout::col_major(&shape),
        Some(Value::Major(Major::Right)) => Layout::row_major(&shape),
        Some(_) => Layout::new(shape, a.strides(1)?).map_err(|e| a.fail(e))?,
    };
    Ok(layout.into())
}

fn make_ordered_layout(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    Ok(alg::ordered_layout(&a.shape(0)?, &a.int_tuple(1)?)
        .map_err(|e| a.fail(e))?
        .into())
}

/// `size`, `rank` or `depth` of a layout, swizzled layout or integer tuple;
/// `size(X, i, ...)` is the size of a mode.
fn measure(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    if a.name == "size" && a.values.len() > 1 {
        let mode = Args {
            values: vec![get(a, conds)?],
            spans: vec![a.spans[0]],
            names: vec![None],
            ..*a
        };
        return measure(&mode, conds);
    }
    a.arity(&[1])?;
    let (size, rank, depth) = match (a.values[0].as_layout(), &a.values[0]) {
        (Some(l), _) => (l.size(), l.rank(), l.depth()),
        (None, Value::Composed(c)) => (c.size(), c.layout.rank(), c.layout.depth()),
        _ => {
            let t = a.int_tuple(0)?;
            (t.product(), t.rank(), t.depth())
        }
    };
    Ok(match a.name {
        "size" => size.into(),
        "rank" => Value::Int(Int::Static(rank as i64)),
        _ => Value::Int(Int::Static(depth as i64)),
    })
}

fn cosize(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    Ok(a.layout(0)?.cosize().into())
}

fn shape_or_stride(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    let l = a.values[0]
        .as_layout()
        .ok_or_else(|| a.wrong(0, "a layout"))?;
    Ok(if a.name == "shape" {
        l.shape().clone().into()
    } else {
        l.stride().clone().into()
    })
}

fn get(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    if a.values.len() < 2 {
        return Err(a.arity(&[2]).expect_err("too few"));
    }
    let mut cur = a.values[0].clone();
    for i in 1..a.values.len() {
        let k = a.static_int(i)?;
        let next = match &cur {
            Value::Layout(l) => usize::try_from(k)
                .ok()
                .and_then(|k| l.mode(k).ok())
                .map(Value::Layout),
            Value::Tensor(t) => usize::try_from(k)
                .ok()
                .and_then(|k| t.layout.mode(k).ok())
                .map(Value::Layout),
            // A mode of a swizzled layout keeps the swizzle outermost.
            Value::Composed(c) => usize::try_from(k)
                .ok()
                .and_then(|k| c.layout.mode(k).ok())
                .map(|layout| {
                    Value::Composed(alg::ComposedLayout {
                        layout,
                        ..c.clone()
                    })
                }),
            Value::Tuple(v) | Value::Tiler(v) => {
                usize::try_from(k).ok().and_then(|k| v.get(k).cloned())
            }
            Value::Int(_) if k == 0 => Some(cur.clone()),
            _ => None,
        };
        cur = next.ok_or_else(|| {
            Diagnostic::new(format!("{cur} has no mode {k}"), a.spans[i])
                .with_help("modes count from 0")
        })?;
    }
    Ok(cur)
}

fn eval(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    apply(&a.values[0], &a.values[1], a.spans[0], a.call)
}

/// `idx2crd(INDEX, SHAPE)`; an index that is a tuple splits mode by mode
/// (CuTe's `idx2crd((1, 5), (3, (2, 3)))` is `(1, (1, 2))`).
fn idx2crd(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    fn split(index: &alg::Coord, shape: &alg::IntTuple) -> Option<alg::Coord> {
        match (index, shape) {
            (alg::Coord::Int(i), s) => Some(alg::idx2crd(i, s)),
            (alg::Coord::Tuple(is), alg::IntTuple::Tuple(ss)) if is.len() == ss.len() => is
                .iter()
                .zip(ss)
                .map(|(i, s)| split(i, s))
                .collect::<Option<Vec<_>>>()
                .map(alg::Coord::Tuple),
            _ => None,
        }
    }
    let shape = a.shape(1)?;
    let index = a.coord(0)?;
    split(&index, &shape)
        .map(|c| coord_value(&c))
        .ok_or_else(|| {
            a.wrong(
                0,
                "an integer, or a tuple of them congruent with the shape's modes",
            )
        })
}

fn crd2idx(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2, 3])?;
    let shape = a.shape(1)?;
    let stride = if a.values.len() == 3 {
        a.strides(2)?
    } else {
        shape.compact_col_major(&Int::Static(1))
    };
    let l = Layout::new(shape, stride).map_err(|e| a.fail(e))?;
    Ok(l.eval(&a.coord(0)?).map_err(|e| a.fail(e))?.into())
}

fn flatten(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    Ok(a.layout(0)?.flatten().into())
}

fn coalesce_or_filter(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1, 2])?;
    let l = a.layout(0)?;
    let whole = a.name == "coalesce";
    Ok(match a.values.len() {
        1 if whole => l.coalesce().into(),
        1 => l.filter().into(),
        _ if whole => l
            .coalesce_by(&a.int_tuple(1)?)
            .map_err(|e| a.fail(e))?
            .into(),
        _ => l.filter_by(&a.int_tuple(1)?).map_err(|e| a.fail(e))?.into(),
    })
}

fn composition(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    if let Some(t) = a.values[1].to_tiler() {
        super::positive_tiler(&t, a.spans[1])?;
    }
    compose(a, conds).map_err(|e| a.fail(e))
}

fn compose(a: &Args, conds: &mut Conditions) -> Result<Value, AlgebraError> {
    let rhs = &a.values[1];
    let as_rhs_layout = || {
        rhs.as_layout()
            .or_else(|| rhs.to_int().map(|n| Layout::int(n, Int::Static(1))))
    };
    match &a.values[0] {
        Value::Swizzle(s) => {
            let b = as_rhs_layout().ok_or_else(|| not_layout("composition with a swizzle", rhs))?;
            Ok(Value::Composed(alg::ComposedLayout::new(*s, b)))
        }
        Value::Composed(c) => {
            let b = as_rhs_layout()
                .ok_or_else(|| not_layout("composition of a swizzled layout", rhs))?;
            Ok(Value::Composed(c.compose(&b, conds)?))
        }
        lhs => {
            let l = lhs
                .to_layout()
                .ok_or_else(|| not_layout("composition", lhs))?;
            match rhs.as_layout() {
                Some(b) => alg::composition(&l, &b, conds).map(Value::Layout),
                None => {
                    let t = rhs
                        .to_tiler()
                        .ok_or_else(|| not_layout("composition", rhs))?;
                    alg::composition_tiler(&l, &t, conds).map(Value::Layout)
                }
            }
        }
    }
}

fn not_layout(op: &'static str, v: &Value) -> AlgebraError {
    AlgebraError::Invalid {
        op,
        why: format!("{v} is {}, not a layout", v.kind()),
    }
}

fn complement(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1, 2])?;
    let l = a.layout(0)?;
    Ok(match a.values.len() {
        1 => alg::complement_full(&l, conds),
        _ => {
            let cotarget = match a.values[1].as_layout() {
                Some(m) => m.shape().clone(),
                None => a.shape(1)?,
            };
            alg::complement(&l, &cotarget, conds)
        }
    }
    .map_err(|e| a.fail(e))?
    .into())
}

fn right_inverse(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    Ok(alg::right_inverse(&a.layout(0)?).into())
}

fn left_inverse(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    Ok(alg::left_inverse(&a.layout(0)?)
        .map_err(|e| a.fail(e))?
        .into())
}

/// The grouping a divide or product's name asks for: `zipped_divide` zips.
pub(crate) fn grouping(name: &str) -> Grouping {
    match name.split('_').next() {
        Some("zipped") => Grouping::Zipped,
        Some("tiled") => Grouping::Tiled,
        Some("flat") => Grouping::Flat,
        _ => Grouping::Logical,
    }
}

fn divide(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    Ok(
        alg::divide(&a.layout(0)?, &a.tiler(1)?, grouping(a.name), conds)
            .map_err(|e| a.fail(e))?
            .into(),
    )
}

fn product(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    Ok(
        alg::product(&a.layout(0)?, &a.tiler(1)?, grouping(a.name), conds)
            .map_err(|e| a.fail(e))?
            .into(),
    )
}

fn rank_product(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    let how = if a.name == "blocked_product" {
        Interleave::Blocked
    } else {
        Interleave::Raked
    };
    Ok(alg::rank_product(&a.layout(0)?, &a.layout(1)?, how, conds)
        .map_err(|e| a.fail(e))?
        .into())
}

fn tile_to_shape(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2, 3])?;
    let order = if a.values.len() == 3 {
        Some(a.int_tuple(2)?)
    } else {
        None
    };
    Ok(
        alg::tile_to_shape(&a.layout(0)?, &a.shape(1)?, order.as_ref(), conds)
            .map_err(|e| a.fail(e))?
            .into(),
    )
}

/// `make_tiled_mma(atom, warps)`: the atom repeated over a column-major
/// grid of warps (CuTe's `make_tiled_mma(atom, Layout<Shape<...>>{})`).
fn make_tiled_mma(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    let atom = match &a.values[0] {
        Value::Mma(m) if m.warps == [1, 1, 1] => m.atom.clone(),
        _ => {
            return Err(a.wrong(0, "an MMA atom").with_help(format!(
                "the atoms are {}",
                alg::MmaAtom::names().join(", ")
            )));
        }
    };
    let grid = || {
        a.wrong(1, "a shape of 2 or 3 static warp counts")
            .with_help("warps over (M, N, K), column-major, e.g. (2, 2) or (2, 2, 1)")
    };
    let shape = match &a.values[1] {
        Value::Layout(l) if *l == Layout::col_major(l.shape()) => l.shape().clone(),
        Value::Layout(_) => return Err(grid()),
        v => v.to_int_tuple().ok_or_else(grid)?,
    };
    let counts: Vec<i64> = match &shape {
        alg::IntTuple::Tuple(v) if (2..=3).contains(&v.len()) => v
            .iter()
            .map(|x| x.as_int().and_then(Int::as_static).ok_or_else(grid))
            .collect::<Result<_, _>>()?,
        _ => return Err(grid()),
    };
    let warps = [counts[0], counts[1], counts.get(2).copied().unwrap_or(1)];
    alg::TiledMma::new(atom, warps)
        .map(Value::Mma)
        .map_err(|e| a.fail(e))
}

/// What a wgmma atom's N may be, in usage lines and errors alike.
macro_rules! wgmma_n {
    () => {
        "a static multiple of 8 from 8 to 256"
    };
}
use wgmma_n;

/// `SM90_64xNx16_F32BF16BF16_SS(bn)`: the atom of CuTe's name with N
/// spelled out, so that a tile's width (a `tune` parameter, say) can choose
/// it, as CUTLASS's `ss_op_selector` chooses from a tile shape.
fn wgmma_atom(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[1])?;
    let wanted = wgmma_n!();
    let n = a.int(0)?.as_static().ok_or_else(|| {
        a.wrong(0, wanted).with_help(
            "N is fixed when the kernel is compiled: a constant, or a tune parameter (tune bn = 128 in (64, 128, 256);)",
        )
    })?;
    let name = a.name.replace("xNx", &format!("x{n}x"));
    let atom = alg::MmaAtom::named(&name).ok_or_else(|| {
        a.wrong(0, wanted)
            .with_help("wgmma's N is 8, 16, ..., 256: e.g. a tile's width of 64, 128 or 256")
    })?;
    Ok(Value::Mma(
        alg::TiledMma::new(atom, [1, 1, 1]).expect("one warpgroup"),
    ))
}

fn max_common_vector(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    Ok(alg::max_common_vector(&a.layout(0)?, &a.layout(1)?, conds)
        .map_err(|e| a.fail(e))?
        .into())
}

fn max_common_layout(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[2])?;
    Ok(alg::max_common_layout(&a.layout(0)?, &a.layout(1)?, conds)
        .map_err(|e| a.fail(e))?
        .into())
}

fn swizzle(a: &Args, _: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[3])?;
    let s = Swizzle::new(a.static_int(0)?, a.static_int(1)?, a.static_int(2)?)
        .map_err(|e| a.fail(e))?;
    Ok(Value::Swizzle(s))
}

fn coord_value(c: &alg::Coord) -> Value {
    match c {
        alg::Coord::Int(i) => Value::Int(i.clone()),
        alg::Coord::Under => Value::Under,
        alg::Coord::Tuple(v) => Value::Tuple(v.iter().map(coord_value).collect()),
    }
}
