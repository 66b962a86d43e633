//! The kernel-level functions the evaluator calls: `local_tile` and
//! `local_partition` (views of a tensor's tiles and of a thread's part),
//! `shared<T>(layout)` and `registers<T>(shape)` (a block's and a thread's
//! memory, recorded in the kernel's state).

use super::operations::{STATEMENTS, statement_usage};
use super::partition::{dice_layout, even, flat_coord, step_mask};
use super::{KernelState, SHARED_LIMIT_BYTES, ThreadUse};
use crate::check::algebra::{Args, Functions, Known, algebra_error};
use crate::check::program::{Base, Elem, RegisterArray, SharedBuffer, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use tilec_layout::{
    Builtin, Conditions, Coord, Grouping, Int, IntTuple, Layout, Operand, Tiler, composition,
    divide,
};

/// What a kernel-level function makes of its arguments, given the element
/// type written after its name (`shared<f32>`).
type Make = fn(&mut KernelState, &Args, Option<&str>, &mut Conditions) -> Result<Value, Diagnostic>;

/// The kernel-level functions: name, argument forms, and what each makes.
const FUNCTIONS: &[(&str, &str, Make)] = &[
    (
        "local_tile",
        "local_tile(T, TILER, COORD) | local_tile(T, TILER, COORD, STEP)",
        |_, a, _, conds| local_tile(a, conds),
    ),
    (
        "local_partition",
        "local_partition(T, THREADS, INDEX) | local_partition(T, THREADS, INDEX, STEP)",
        |state, a, _, conds| state.local_partition(a, conds),
    ),
    (
        "partition_A",
        "partition_A(MMA, T, thread.x)  this thread's (values, M tiles, K tiles) of T (M, K)",
        |state, a, _, conds| state.partition_mma(a, conds, Operand::A),
    ),
    (
        "partition_B",
        "partition_B(MMA, T, thread.x)  this thread's (values, N tiles, K tiles) of T (N, K)",
        |state, a, _, conds| state.partition_mma(a, conds, Operand::B),
    ),
    (
        "partition_C",
        "partition_C(MMA, T, thread.x)  this thread's (values, M tiles, N tiles) of T (M, N)",
        |state, a, _, conds| state.partition_mma(a, conds, Operand::C),
    ),
    (
        "shared",
        "shared<T>(LAYOUT) | shared<T>(SHAPE)",
        |state, a, ty, _| state.shared(a, ty),
    ),
    (
        "registers",
        "registers<T>(SHAPE) | registers<T>(SHAPE, INIT)",
        |state, a, ty, _| state.registers(a, ty),
    ),
];

/// The tensor operations of a kernel, on evaluated arguments.
impl Functions for KernelState {
    fn call(&mut self, a: &Args, conds: &mut Conditions) -> Option<Result<Value, Diagnostic>> {
        let (base, ty) = match a.name.split_once('<') {
            Some((b, t)) => (b, Some(t.trim_end_matches('>'))),
            None => (a.name, None),
        };
        if let Some(usage) = statement_usage(base) {
            return Some(Err(Diagnostic::new(
                format!("`{base}` is a statement, not a value"),
                a.call,
            )
            .with_help(format!(
                "write it as a statement on its own; usage: {usage}"
            ))));
        }
        // Element-wise functions outside an element-wise statement (the
        // algebra's integer `min` and `max` are its own).
        if ty.is_none()
            && super::elementwise::elementwise_names().contains(&base)
            && !crate::check::algebra::FUNCTIONS
                .iter()
                .any(|f| f.name == base)
        {
            return Some(Err(Diagnostic::new(
                format!("`{base}` computes element values, in an element-wise statement"),
                a.call,
            )
            .with_help(
                "a `let` holds integers, layouts and tensors; compute a number into a \
                 one-element register tensor: `let inv = registers<f32>(1); inv = 1.0 / f32(N);`",
            )));
        }
        if base.ends_with("_divide") {
            return divided_global(a, conds);
        }
        let (_, _, make) = FUNCTIONS.iter().find(|(name, ..)| *name == base)?;
        Some(make(self, a, ty, conds))
    }

    fn known(&self) -> Vec<Known> {
        FUNCTIONS
            .iter()
            .map(|&(name, usage, _)| (name, usage))
            .chain(STATEMENTS.iter().copied())
            .collect()
    }
}

impl KernelState {
    fn shared(&mut self, a: &Args, ty: Option<&str>) -> Result<Value, Diagnostic> {
        a.arity(&[1])?;
        let elem = elem_arg(a, ty)?;
        // A swizzled layout (Sw o offset o L) keeps its swizzle on the
        // buffer: every view of the buffer indexes through it.
        let (swizzle, offset, layout) = match &a.values[0] {
            Value::Composed(c) => (Some(c.swizzle), c.offset.clone(), c.layout.clone()),
            // A shape alone is its compact column-major layout, as for
            // registers<T>(SHAPE).
            v => (
                None,
                Int::Static(0),
                match v.as_layout() {
                    Some(l) => l,
                    None => Layout::col_major(
                        &a.shape(0)
                            .map_err(|_| a.wrong(0, "a layout, a swizzled layout or a shape"))?,
                    ),
                },
            ),
        };
        let cosize = layout.cosize();
        if layout.is_static() && cosize.overflowed() {
            // Static extents and strides whose span does not fit 64 bits.
            return Err(Diagnostic::new(
                "integer overflow: the layout's last offset does not fit 64 bits",
                a.spans[0],
            )
            .with_label(format!("layout {layout}"))
            .with_help("a shared buffer holds at most 227 KB; check the extents and strides"));
        }
        let static_len = cosize
            .as_static()
            .zip(offset.as_static())
            .filter(|_| layout.is_static())
            .map(|(c, o)| c.saturating_add(o));
        let mut len = static_len.ok_or_else(|| {
            Diagnostic::new("shared memory needs a static layout", a.spans[0])
                .with_label(format!("layout {layout}"))
                .with_help("shared<T>(L) takes a layout of constant extents and strides, e.g. make_layout((128, 16))")
        })?;
        if let Some(sw) = swizzle {
            // The XOR pattern maps each aligned block of its repeat onto
            // itself: the buffer holds whole blocks.
            let repeat = sw.repeat();
            len = (len.saturating_add(repeat - 1) / repeat).saturating_mul(repeat);
        }
        let buffer = SharedBuffer {
            elem,
            len,
            swizzle,
            tma: false,
            name: None,
        };
        // Overflow-checked: a layout of 2^62 floats must not count as 0
        // bytes. The kernel's buffers together are checked once their
        // lifetimes are known (`check_shared_total`).
        let bytes = len.checked_mul(elem.bytes());
        if bytes.is_none_or(|b| b > SHARED_LIMIT_BYTES) {
            let bytes = bytes.map_or("more than 2^63".into(), |b| b.to_string());
            return Err(Diagnostic::new(
                format!("shared memory exceeds the device limit: {bytes} bytes of {SHARED_LIMIT_BYTES} (227 KB on sm_90)"),
                a.call,
            )
            .with_label(format!("{len} {elem} elements"))
            .with_help("use smaller tiles, fewer stages, or a narrower element type"));
        }
        self.shared.push(buffer);
        let view = View {
            base: Base::Shared(self.shared.len() - 1),
            elem,
            layout,
            offset,
            coords: Vec::new(),
        };
        Ok(Value::Tensor(view))
    }

    fn registers(&mut self, a: &Args, ty: Option<&str>) -> Result<Value, Diagnostic> {
        a.arity(&[1, 2])?;
        let elem = elem_arg(a, ty)?;
        let shape = a.shape(0)?;
        if shape.is_static() && shape.product().overflowed() {
            return Err(Diagnostic::new(
                "integer overflow: the shape's size does not fit 64 bits",
                a.spans[0],
            )
            .with_label(format!("shape {shape}"))
            .with_help("a thread holds at most 4096 registers of a tensor"));
        }
        let len = shape.product().as_static().filter(|_| shape.is_static()).ok_or_else(|| {
            Diagnostic::new("registers need a static shape", a.spans[0])
                .with_label(format!("shape {shape}"))
                .with_help("partition down to static per-thread shapes first, e.g. registers<f32>(shape(tCgC))")
        })?;
        if len > 4096 {
            return Err(Diagnostic::new(
                format!("{len} registers per thread is more than a thread can hold"),
                a.call,
            )
            .with_help("use a larger thread layout so each thread owns fewer elements"));
        }
        let init = match a.values.get(1) {
            None => None,
            Some(Value::Float(v)) => Some(*v),
            Some(Value::Int(Int::Static(v))) => Some(*v as f64),
            Some(_) => return Err(a.wrong(1, "a number")),
        };
        if let Some(v) = init {
            element_constant(elem, v, a.spans[1])?;
        }
        Ok(Value::Tensor(self.new_registers(elem, &shape, init)))
    }

    /// A register array of `len` elements of static `shape`, column-major,
    /// as `registers<T>(shape, init)` makes it.
    pub(super) fn new_registers(
        &mut self,
        elem: Elem,
        shape: &IntTuple,
        init: Option<f64>,
    ) -> View {
        let len = shape.product().as_static().expect("a static shape");
        self.registers.push(RegisterArray {
            elem,
            len,
            init,
            name: None,
        });
        View {
            base: Base::Registers(self.registers.len() - 1),
            elem,
            layout: Layout::col_major(shape),
            offset: Int::Static(0),
            coords: Vec::new(),
        }
    }

    /// `local_partition(T, threads, index [, step])`: thread `index`'s part of
    /// `T` when the thread layout tiles `T` (CuTe's outer partition).
    fn local_partition(&mut self, a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
        a.arity(&[3, 4])?;
        let t = tensor(a, 0)?;
        let thr = match &a.values[1] {
            Value::Layout(l) => l.clone(),
            _ => return Err(a.wrong(1, "a thread layout")),
        };
        let index = a.int(2)?;
        let diced = match a.values.get(3) {
            Some(step) => dice_layout(&thr, &step_mask(a, 3, step, thr.rank())?),
            None => thr.clone(),
        };
        if diced.rank() > t.layout.rank() {
            return Err(Diagnostic::new(
                format!(
                    "the thread layout has {} modes but the tensor has {}",
                    diced.rank(),
                    t.layout.rank()
                ),
                a.spans[1],
            )
            .with_label(format!("{diced}"))
            .with_related(a.spans[0], format!("shape {}", t.layout.shape()))
            .with_help(
                "use a thread layout with at most as many modes, or a step that drops modes",
            ));
        }
        let name = source_name(a, 1);
        one_coordinate_a_thread(&thr, &name, a)?;
        let tiler = diced.shape().product_each().modes();
        let t = even(
            t,
            &tiler,
            &[],
            None,
            a,
            conds,
            (&format!("the thread layout `{name}`"), [0, 1]),
        )?;
        // By `thread.x % size(threads)`: each aligned group of that many
        // threads takes the whole tensor (a warpgroup's turn).
        let grouped = thr
            .size()
            .as_static()
            .is_some_and(|n| index == Int::var(Builtin::Thread.name()).rem(&Int::Static(n)));
        self.thread_uses.push(ThreadUse {
            name,
            threads: thr.size(),
            span: a.call,
            by: match grouped {
                true => super::ThreadsUsed::Groups,
                false => super::ThreadsUsed::Whole,
            },
            running: None,
        });
        let by = Tiler::from_shape(&IntTuple::Tuple(tiler.clone()));
        let view = t
            .map_layout(&mut |l| divide(l, &by, Grouping::Zipped, conds))
            .map_err(|e| algebra_error(e, a.call))?;
        let divided = view.layout.clone();
        // The thread's coordinate in each mode: `(index / stride) % shape` per
        // leaf, then the leaves of a mode combined column-major.
        let mut coord: Vec<Coord> = diced
            .modes()
            .iter()
            .map(|m| Coord::Int(flat_coord(m, &index)))
            .collect();
        let tile_rank = divided.shape().get(0).map_or(1, IntTuple::rank);
        coord.resize(tile_rank, Coord::Under);
        let rest = divided.shape().get(1).map_or(1, IntTuple::rank);
        let rest_coord = if rest > 1 {
            Coord::Tuple(vec![Coord::Under; rest])
        } else {
            Coord::Under
        };
        let c = Coord::Tuple(vec![Coord::Tuple(coord), rest_coord]);
        view.slice(&c)
            .map(Value::Tensor)
            .map_err(|e| algebra_error(e, a.call))
    }
}

impl KernelState {
    /// `partition_A(mma, T, thread.x)` (B, C alike): this thread's part of
    /// `T` (rows, columns, rest...) for an operand of a tiled MMA (CuTe's
    /// `thr_mma.partition_A`): `T` is cut into the MMA's operand tiles,
    /// each tile is composed with the MMA's thread-value layout, and the
    /// thread's values are kept: (values, row tiles, column tiles, rest...).
    fn partition_mma(
        &mut self,
        a: &Args,
        conds: &mut Conditions,
        op: Operand,
    ) -> Result<Value, Diagnostic> {
        a.arity(&[3])?;
        let Value::Mma(mma) = &a.values[0] else {
            return Err(a.wrong(0, "a tiled MMA").with_help(
                "make one with make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN, (2, 2))",
            ));
        };
        let t = tensor(a, 1)?;
        // The atom's lanes are the hardware's: thread t is lane t % 32 of
        // warp t / 32, so the index is the thread itself, or its place in
        // an aligned group of the MMA's threads (each warpgroup its own
        // tile, as a pipeline's turns have it): whole warps either way.
        let index = a.int(2)?;
        let thread = Int::var(Builtin::Thread.name());
        let threads = mma.threads();
        let grouped = index == thread.rem(&Int::Static(threads));
        if index != thread && !grouped {
            return Err(a.wrong(2, "thread.x").with_help(format!(
                "an MMA's lanes are the hardware's lanes: partition by thread.x itself, or by thread.x % {threads} for each group of its {threads} threads"
            )));
        }
        let (rows, cols) = mma.extent(op);
        if t.layout.rank() < 2 {
            return Err(Diagnostic::new(
                format!(
                    "the operand needs (rows, columns) modes; this tensor has {}",
                    t.layout.rank()
                ),
                a.spans[1],
            )
            .with_label(format!("shape {}", t.layout.shape()))
            .with_help("partition_A takes (M, K), partition_B (N, K), partition_C (M, N)"));
        }
        let tiler = vec![IntTuple::from(rows), IntTuple::from(cols)];
        let name = source_name(a, 0);
        let t = even(
            t,
            &tiler,
            &[],
            None,
            a,
            conds,
            (&format!("the tiled MMA `{name}`"), [1, 0]),
        )?;
        self.thread_uses.push(ThreadUse {
            name,
            threads: Int::Static(threads),
            span: a.call,
            by: match grouped {
                true => super::ThreadsUsed::Groups,
                false => super::ThreadsUsed::Whole,
            },
            running: None,
        });
        let by = Tiler::from_shape(&IntTuple::Tuple(tiler));
        let tv = mma.tv(op);
        let view = t
            .map_layout(&mut |l| {
                let d = divide(l, &by, Grouping::Zipped, conds)?;
                let per_thread = composition(&d.mode(0)?, &tv, conds)?;
                let mut modes = per_thread.modes();
                modes.extend(d.mode(1)?.modes());
                Ok(Layout::concat(&modes))
            })
            .map_err(|e| algebra_error(e, a.call))?;
        let mut coord = vec![Coord::Under; view.layout.rank()];
        coord[0] = Coord::Int(index);
        view.slice(&Coord::Tuple(coord))
            .map(Value::Tensor)
            .map_err(|e| algebra_error(e, a.call))
    }
}

/// `local_tile(T, tiler, coord [, step])`: the tile at `coord` of `T` cut by
/// `tiler` (CuTe's inner partition); the modes of the tiler and coordinate
/// with `X` in the step are left out.
fn local_tile(a: &Args, conds: &mut Conditions) -> Result<Value, Diagnostic> {
    a.arity(&[3, 4])?;
    let t = tensor(a, 0)?;
    let tiler = match a.tiler(1)? {
        Tiler::Tuple(v) => v,
        other => vec![other],
    };
    let coord = match a.values[2].to_coord() {
        Some(Coord::Tuple(v)) => v,
        Some(c) => vec![c],
        None => return Err(a.wrong(2, "a coordinate")),
    };
    if tiler.len() != coord.len() {
        return Err(Diagnostic::new(
            format!(
                "the tiler has {} modes but the coordinate has {}",
                tiler.len(),
                coord.len()
            ),
            a.spans[2],
        )
        .with_label(format!("{} coordinates", coord.len()))
        .with_related(a.spans[1], format!("{} modes", tiler.len()))
        .with_help("give one coordinate per tiler mode; `_` keeps a mode whole"));
    }
    let keep = match a.values.get(3) {
        Some(step) => step_mask(a, 3, step, tiler.len())?,
        None => vec![true; tiler.len()],
    };
    let tiler: Vec<Tiler> = tiler
        .into_iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x)
        .collect();
    let coord: Vec<Coord> = coord
        .into_iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x)
        .collect();
    if tiler.len() > t.layout.rank() {
        return Err(Diagnostic::new(
            format!(
                "the tiler keeps {} modes but the tensor has {}",
                tiler.len(),
                t.layout.rank()
            ),
            a.spans[1],
        )
        .with_related(a.spans[0], format!("shape {}", t.layout.shape()))
        .with_help(
            "use a step with `X` for the modes this tensor does not have, e.g. step(1, X, 1)",
        ));
    }
    let (sizes, spread) = tile_sizes(&tiler);
    let t = even(
        t,
        &sizes,
        &spread,
        Some(&coord),
        a,
        conds,
        ("the tile", [0, 1]),
    )?;
    let by = Tiler::Tuple(tiler);
    let view = t
        .map_layout(&mut |l| divide(l, &by, Grouping::Zipped, conds))
        .map_err(|e| algebra_error(e, a.call))?;
    let divided = view.layout.clone();
    let tile_rank = divided.shape().get(0).map_or(1, IntTuple::rank);
    let rest_rank = divided.shape().get(1).map_or(1, IntTuple::rank);
    let mut rest = coord;
    rest.resize(rest_rank, Coord::Under);
    let tile = if tile_rank > 1 {
        Coord::Tuple(vec![Coord::Under; tile_rank])
    } else {
        Coord::Under
    };
    let rest = if rest_rank > 1 || rest.len() != 1 {
        Coord::Tuple(rest)
    } else {
        rest.remove(0)
    };
    // A shared or register tensor's tiles are all there are: a tile
    // coordinate past them names another mode's elements, or none of the
    // buffer's (a global tensor's are the guards' and the launch proof's).
    if !matches!(view.base, Base::Param(_))
        && let (Some(ranges), Some(tiles)) = (a.ranges, divided.shape().get(1))
    {
        crate::check::algebra::check_slice(tiles, &rest, ranges, None, false, &[], a.spans[2])?;
    }
    view.slice(&Coord::Tuple(vec![tile, rest]))
        .map(Value::Tensor)
        .map_err(|e| algebra_error(e, a.call))
}

/// Each mode's tile size, and where its tiles are spread out (a layout
/// tiler's), for [`even`].
fn tile_sizes(tiler: &[Tiler]) -> (Vec<IntTuple>, Vec<Option<Layout>>) {
    let sizes = tiler
        .iter()
        .map(|x| match x {
            Tiler::Layout(l) => IntTuple::Int(l.size()),
            Tiler::Int(n) => IntTuple::Int(n.clone()),
            Tiler::Under => IntTuple::from(1),
            Tiler::Tuple(_) => IntTuple::from(1),
        })
        .collect();
    let spread = tiler
        .iter()
        .map(|x| match x {
            Tiler::Layout(l) => super::partition::spread_of(l),
            _ => None,
        })
        .collect();
    (sizes, spread)
}

/// The divides of a global tensor (`zipped_divide(A, (32))`, ...): its
/// tiles guarded where partial, as `local_tile`'s (which is a zipped
/// divide, sliced): the algebra's divide alone left the last tile
/// unguarded, and the launch was refused wherever the tile did not
/// divide the extent. `None` for any other divide, the algebra's.
fn divided_global(a: &Args, conds: &mut Conditions) -> Option<Result<Value, Diagnostic>> {
    let Some(Value::Tensor(t)) = a.values.first() else {
        return None;
    };
    if !matches!(t.base, Base::Param(_)) || t.coords.is_empty() || a.values.len() != 2 {
        return None;
    }
    let by = a.tiler(1).ok()?;
    let tiler = match &by {
        Tiler::Tuple(v) => v.clone(),
        other => vec![other.clone()],
    };
    if tiler.len() > t.layout.rank() {
        return None;
    }
    let (sizes, spread) = tile_sizes(&tiler);
    let grouping = crate::check::algebra::grouping(a.name);
    Some((|| {
        let t = even(
            t.clone(),
            &sizes,
            &spread,
            None,
            a,
            conds,
            ("the tile", [0, 1]),
        )?;
        t.map_layout(&mut |l| divide(l, &by, grouping, conds))
            .map(Value::Tensor)
            .map_err(|e| algebra_error(e, a.call))
    })())
}

fn tensor(a: &Args, i: usize) -> Result<View, Diagnostic> {
    match &a.values[i] {
        Value::Tensor(t) => Ok(t.clone()),
        _ => Err(a.wrong(i, "a tensor")),
    }
}

fn elem_arg(a: &Args, ty: Option<&str>) -> Result<Elem, Diagnostic> {
    let ty = ty.unwrap_or("");
    Elem::parse(ty).ok_or_else(|| {
        Diagnostic::new(
            format!("`{}` needs an element type f32, f16, bf16 or i32", a.name),
            a.call,
        )
        .with_help(format!(
            "write {}<f32>(...)",
            a.name.split('<').next().unwrap_or(a.name)
        ))
    })
}

/// Argument `i` as written if it is a name, else its value, for messages.
fn source_name(a: &Args, i: usize) -> String {
    a.names
        .get(i)
        .cloned()
        .flatten()
        .unwrap_or_else(|| a.values[i].to_string())
}

/// The number `v` as a constant of type `elem` (a register array's
/// initial value, a fill), or an error at `span`: an i32 holds whole
/// numbers of its range alone (a constant past it would wrap on the GPU);
/// a float of any size rounds.
pub(super) fn element_constant(
    elem: Elem,
    v: f64,
    span: crate::span::Span,
) -> Result<(), Diagnostic> {
    let why = match elem {
        Elem::I32 if !(i32::MIN as f64..=i32::MAX as f64).contains(&v) => "past i32's range",
        Elem::I32 if v.fract() != 0.0 => "a fraction",
        _ => return Ok(()),
    };
    Err(Diagnostic::new(format!("{v} is {why}"), span)
        .with_help("an i32 holds whole numbers from -2147483648 to 2147483647"))
}

/// A thread layout gives each thread its coordinate as `(index / stride) %
/// extent` per mode (CuTe's `get_flat_coord`): two threads share one, and
/// some coordinates go to none, unless the strides, stride 0 and modes of
/// one coordinate aside, are those of a compact layout in some order, each
/// the product of the extents with smaller strides. `(32, 4):(1, 64)` gives
/// threads 0 and 32 both (0, 0) and leaves half the tile to no thread.
fn one_coordinate_a_thread(thr: &Layout, name: &str, a: &Args) -> Result<(), Diagnostic> {
    let leaves: Option<Vec<(i64, i64)>> = thr
        .shape()
        .leaves()
        .iter()
        .zip(thr.stride().leaves())
        .map(|(s, d)| Some((d.as_static()?, s.as_static()?)))
        .collect();
    let Some(mut leaves) = leaves else {
        return Ok(());
    };
    let in_mode_order = leaves.clone();
    // A mode of one coordinate gives every thread 0, whatever its stride.
    leaves.retain(|&(d, s)| d != 0 && s != 1);
    leaves.sort();
    let mut next = 1;
    for &(d, s) in &leaves {
        if d != next {
            let pair = match first_shared_coordinate(&in_mode_order, thr.size().as_static()) {
                Some((t0, t1, c)) => format!("threads {t0} and {t1} both take {c}, as "),
                None => String::new(),
            };
            return Err(Diagnostic::new(
                format!("the thread layout `{name}` ({thr}) gives two threads one coordinate"),
                a.spans[1],
            )
            .with_label(format!(
                "{pair}a thread's coordinate is (index / stride) % extent: stride {d} where {next} would give each its own"
            ))
            .with_help(
                "make the strides those of a compact layout in some order, each the product of the extents with smaller strides (e.g. (32, 4):(1, 32) or (32, 4):(4, 1)); stride 0 shares a mode among threads on purpose",
            ));
        }
        next = d * s;
    }
    Ok(())
}

/// The first two threads of `threads` (up to 2^16) that the thread layout
/// of `leaves` ((stride, extent) in mode order) gives one coordinate,
/// `(index / stride) % extent` in each (0 where the stride is), and that
/// coordinate.
fn first_shared_coordinate(
    leaves: &[(i64, i64)],
    threads: Option<i64>,
) -> Option<(i64, i64, String)> {
    let mut seen = std::collections::HashMap::new();
    for t in 0..threads?.min(1 << 16) {
        let c: Vec<i64> = leaves
            .iter()
            .map(|&(d, s)| if d == 0 { 0 } else { (t / d) % s })
            .collect();
        if let Some(&first) = seen.get(&c) {
            let text: Vec<String> = c.iter().map(i64::to_string).collect();
            return Some((first, t, format!("({})", text.join(", "))));
        }
        seen.insert(c, t);
    }
    None
}
