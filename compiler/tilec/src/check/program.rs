//! The typed program: what the checker hands to the middle end.
//!
//! Every tensor is a [`View`]: a base (a parameter, a shared-memory buffer or
//! a register array), a layout over named extents and a base offset. Offsets
//! are symbolic in the run-time names `block.x`, `block.y`, `block.z`,
//! `thread.x`, the loop variables and the extents; everything static is
//! already folded. Invariant: every statement's operands have agreeing
//! shapes, every partition is even (or guarded by a launch condition), and
//! the memory it declares fits the device.

use crate::arith::{Binary, Unary};
use crate::span::Span;
use std::fmt;
use tilec_layout::int::Linear;
use tilec_layout::{
    AlgebraError, Builtin, Condition, Coord, Fact, Int, IntTuple, Layout, LdMatrixAtom, Swizzle,
    TiledMma,
};

pub use tilec_layout::Elem;

/// Where a tensor's elements live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// Kernel parameter `i` (global memory).
    Param(usize),
    /// Shared-memory buffer `i` of the kernel.
    Shared(usize),
    /// Register array `i` of each thread.
    Registers(usize),
}

impl Base {
    pub fn space(self) -> &'static str {
        match self {
            Base::Param(_) => "global",
            Base::Shared(_) => "shared",
            Base::Registers(_) => "registers",
        }
    }
}

/// A tensor: elements of `base` at `offset + layout(coord)`.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub base: Base,
    pub elem: Elem,
    pub layout: Layout,
    pub offset: Int,
    /// For a view of a global tensor, where each element sits in the
    /// parameter: one function per mode of the parameter, transformed with
    /// `layout` (CuTe's identity tensor). Partial tiles are guarded by them.
    pub coords: Vec<CoordFn>,
}

/// One coordinate of the parameter, as a function of the view's coordinate:
/// `offset + layout(c)`, valid while below `extent`.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordFn {
    pub layout: Layout,
    pub offset: Int,
    pub extent: Int,
}

impl CoordFn {
    /// The coordinate functions of a parameter with layout `l`: mode `i`'s
    /// 1-D coordinate, column-major within the mode and 0 elsewhere. A
    /// size-1 leaf keeps a stride (compact layouts give it 0), so that an
    /// element a tiling places past it still has a coordinate past the
    /// extent, which the guard sees.
    pub fn of_param(l: &Layout) -> Vec<CoordFn> {
        let modes = l.shape().modes();
        (0..modes.len())
            .map(|i| {
                let strides: Vec<IntTuple> = modes
                    .iter()
                    .enumerate()
                    .map(|(j, m)| {
                        if i == j {
                            coordinate_strides(m, &mut Int::Static(1))
                        } else {
                            m.map(&|_| Int::Static(0))
                        }
                    })
                    .collect();
                let stride = if l.shape().is_tuple() {
                    IntTuple::Tuple(strides)
                } else {
                    strides.into_iter().next().expect("one mode")
                };
                CoordFn {
                    layout: Layout::new(l.shape().clone(), stride).expect("same profile"),
                    offset: Int::Static(0),
                    extent: modes[i].product(),
                }
            })
            .collect()
    }
}

/// Column-major strides over `m` from `current` on, size-1 leaves included.
fn coordinate_strides(m: &IntTuple, current: &mut Int) -> IntTuple {
    match m {
        IntTuple::Int(s) => {
            let d = current.clone();
            *current = current.mul(s);
            IntTuple::Int(d)
        }
        IntTuple::Tuple(v) => {
            IntTuple::Tuple(v.iter().map(|x| coordinate_strides(x, current)).collect())
        }
    }
}

impl View {
    /// Whether which elements the view holds depends on `thread.x` (its
    /// offset or a tile coordinate names it).
    pub fn depends_on_thread(&self) -> bool {
        let mut names = Vec::new();
        self.offset.names(&mut names);
        for c in &self.coords {
            c.offset.names(&mut names);
        }
        names
            .iter()
            .any(|n| tilec_layout::Builtin::parse(n) == Some(tilec_layout::Builtin::Thread))
    }

    /// The sub-tensor at `coord`: the modes opposite `_` stay, the fixed
    /// coordinates move the offset. A single kept mode that is itself a
    /// tuple becomes the tensor's modes: `t[thread.x, _]` of a thread-value
    /// tensor `(thr, (m, k))` is the `(m, k)` tensor that gemm takes.
    pub fn slice(&self, coord: &Coord) -> Result<View, AlgebraError> {
        let cut = |l: &Layout| -> Result<Layout, AlgebraError> {
            let s = l.slice(coord)?;
            if s.rank() == 1 && s.shape().get(0).is_some_and(|m| m.is_tuple()) {
                s.mode(0)
            } else {
                Ok(s)
            }
        };
        let coords = self
            .coords
            .iter()
            .map(|c| {
                Ok(CoordFn {
                    layout: cut(&c.layout)?,
                    offset: c.offset.add(&c.layout.slice_offset(coord)?),
                    extent: c.extent.clone(),
                })
            })
            .collect::<Result<_, AlgebraError>>()?;
        Ok(View {
            layout: cut(&self.layout)?,
            offset: self.offset.add(&self.layout.slice_offset(coord)?),
            coords,
            ..self.clone()
        })
    }

    /// The same memory seen through `f(layout)`; the coordinate functions
    /// go through `f` too.
    pub fn map_layout<E>(
        &self,
        f: &mut dyn FnMut(&Layout) -> Result<Layout, E>,
    ) -> Result<View, E> {
        // The view's own layout first: where it fails, its error (naming
        // the layout the program wrote) is the one reported, not a
        // coordinate function's (`(3,682):(1,0)` for a row-major tile).
        let layout = f(&self.layout)?;
        let coords = self
            .coords
            .iter()
            .map(|c| {
                Ok(CoordFn {
                    layout: f(&c.layout)?,
                    ..c.clone()
                })
            })
            .collect::<Result<_, E>>()?;
        Ok(View {
            layout,
            coords,
            ..self.clone()
        })
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.base.space(), self.elem, self.layout)?;
        if !self.offset.is_const(0) {
            write!(f, " @ {}", self.offset)?;
        }
        Ok(())
    }
}

/// A scalar operand: a scalar parameter or a number.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Param(usize),
    /// A number written as a float (`2.0`, `0.5`).
    Literal(f64),
    /// A number written as an integer (`2`): an integer operand of
    /// integer arithmetic ([`Elementwise::integral`]), a float otherwise.
    Whole(i64),
}

/// What each element of an element-wise statement's target becomes:
/// computed in f32 and rounded to the target's type, or in i32 for an i32
/// target.
#[derive(Clone, Debug, PartialEq)]
pub enum Elementwise {
    /// The same element of a tensor of the target's mode sizes, or the one
    /// element of a tensor of one element.
    Tensor(View),
    Scalar(Scalar),
    Unary(Unary, Box<Elementwise>),
    Binary(Binary, Box<Elementwise>, Box<Elementwise>),
    /// `select(c, a, b)`: `a` where `c` is not 0, else `b`.
    Select(Box<Elementwise>, Box<Elementwise>, Box<Elementwise>),
    /// A run-time integer (an extent, a loop counter, `thread.x`): its value,
    /// converted to the computation's type.
    Int(Int),
    /// `inside(t)`: 1 where the element of `t` lies inside its tensor (a
    /// partial tile's edge), else 0.
    Inside(View),
    /// `coord(t, m)`: the element of `t`'s coordinate along mode `m` of its
    /// tensor, an integer.
    Coord(View, usize),
    /// `value / divisor` or `value % divisor` (`rem`) of an integer
    /// ([`Elementwise::integral`]) by one known positive (a whole number or
    /// an extent): truncating, as the integers of indices divide.
    Quotient {
        rem: bool,
        value: Box<Elementwise>,
        divisor: Int,
    },
    /// `bf16(x)`, `f16(x)`, `f32(x)`: `x` rounded to the type (nearest
    /// even), still computed in f32; `i32(x)`: `x`, computed in f32,
    /// truncated toward zero, saturating (NaN gives 0).
    Convert(Elem, Box<Elementwise>),
    /// `shfl_xor(value, mask)`: the value of lane `lane ^ mask` of the warp.
    Shuffle(Box<Elementwise>, u32),
    /// `reduce_sum(value, mode)` (`op` is `Add`, `Max` or `Min`): `value`,
    /// of static mode sizes `modes`, has the modes here (modes of one
    /// element aside) plus `mode`, which it is folded over.
    Reduce {
        op: Binary,
        mode: usize,
        modes: Vec<i64>,
        value: Box<Elementwise>,
    },
}

/// An `if` condition: comparisons of run-time integers (`thread.x < 4`,
/// `k + 1 < kt`) joined by `&&` and `||`.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `a op b`, `op` a comparison.
    Compare(Binary, Int, Int),
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
}

impl Predicate {
    /// The names its integers use, into `out`.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Predicate::Compare(_, a, b) => {
                a.names(out);
                b.names(out);
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }

    /// Its truth where the integers it needs are static (`&&` and `||`
    /// short-circuit: `false && x` is false whatever `x` is).
    pub fn known(&self) -> Option<bool> {
        match self {
            Predicate::Compare(op, a, b) => Some(op.compare(a.as_static()?, b.as_static()?)),
            Predicate::And(a, b) => match (a.known(), b.known()) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Predicate::Or(a, b) => match (a.known(), b.known()) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        }
    }

    /// Its truth where the names take the values `value` gives (`None`
    /// where one it needs has none and the rest do not decide it).
    pub fn at(&self, value: &dyn Fn(&str) -> Option<i64>) -> Option<bool> {
        self.map(&mut |i| {
            i.eval(&|n: &str| value(n))
                .map_or_else(|| i.clone(), Int::Static)
        })
        .known()
    }

    /// The condition that holds where this one does not.
    pub fn negated(&self) -> Predicate {
        match self {
            Predicate::Compare(op, a, b) => Predicate::Compare(op.negation(), a.clone(), b.clone()),
            Predicate::And(a, b) => Predicate::Or(Box::new(a.negated()), Box::new(b.negated())),
            Predicate::Or(a, b) => Predicate::And(Box::new(a.negated()), Box::new(b.negated())),
        }
    }

    /// The same condition with `f` applied to each integer.
    pub fn map(&self, f: &mut dyn FnMut(&Int) -> Int) -> Predicate {
        match self {
            Predicate::Compare(op, a, b) => Predicate::Compare(*op, f(a), f(b)),
            Predicate::And(a, b) => Predicate::And(Box::new(a.map(f)), Box::new(b.map(f))),
            Predicate::Or(a, b) => Predicate::Or(Box::new(a.map(f)), Box::new(b.map(f))),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A tensor in global memory with its declared layout.
    Tensor {
        elem: Elem,
        layout: Layout,
    },
    Scalar(Elem),
}

pub use super::strides::StrideSymbol;

#[derive(Clone, Debug, PartialEq)]
pub struct KernelParam {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SharedBuffer {
    pub elem: Elem,
    /// Elements: the cosize of its layout (rounded up to whole repeats of
    /// its swizzle).
    pub len: i64,
    /// A swizzled buffer's swizzle: every index into the buffer goes
    /// through it, outermost (CuTe's `Sw o L`).
    pub swizzle: Option<Swizzle>,
    /// A TMA copy reads or writes it.
    pub tma: bool,
    /// The name of the `let` that first held it, for messages.
    pub name: Option<String>,
}

impl SharedBuffer {
    /// Bytes its start is aligned to: 16, or its swizzle's repeat, whose
    /// XOR pattern is defined on aligned blocks; 128 at least for TMA.
    pub fn align(&self) -> i64 {
        let tma = if self.tma { 128 } else { 16 };
        self.swizzle
            .map_or(tma, |sw| (sw.repeat() * self.elem.bytes()).max(tma))
    }
}

/// Each buffer's byte offset in a block's shared memory and the bytes all
/// of them take, padding included, the buffers placed by their lifetimes
/// in `body` ([`super::placement`]); `None` past 2^63.
pub fn shared_placement(buffers: &[SharedBuffer], body: &[Stmt]) -> Option<(Vec<i64>, i64)> {
    let sizes: Option<Vec<(i64, i64)>> = buffers
        .iter()
        .map(|b| Some((b.len.checked_mul(b.elem.bytes())?, b.align())))
        .collect();
    super::placement::place(&sizes?, &super::placement::lifetimes(body, buffers.len()))
}

#[derive(Clone, Debug, PartialEq)]
pub struct RegisterArray {
    pub elem: Elem,
    pub len: i64,
    pub init: Option<f64>,
    /// The name of the `let` that first held it, for messages.
    pub name: Option<String>,
}

/// The statements that remain after checking.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `copy(src, dst)`; `copy_async(src, dst)` (global to shared, CuTe's
    /// SM80_CP_ASYNC) lands only once a `cp_async_wait` retires its group.
    Copy {
        src: View,
        dst: View,
        asynchronous: bool,
        /// `copy(ATOM, src, dst)`: the atom it must use, or an error.
        demand: Option<LdMatrixAtom>,
    },
    /// `c += a * b^T` over `a (M,K)`, `b (N,K)`, `c (M,N)`.
    Gemm {
        a: View,
        b: View,
        c: View,
    },
    /// `gemm(mma, a, b, c)`: `c += a * b^T` on the tensor cores, over
    /// register fragments `a (values, M, K)`, `b (values, N, K)`, `c
    /// (values, M, N)` made by the tiled MMA's partitions.
    Mma {
        mma: Box<TiledMma>,
        a: View,
        b: View,
        c: View,
    },
    /// `dst = value` element by element (`axpby(alpha, x, beta, y)` is
    /// `y = alpha * x + beta * y`).
    Assign {
        dst: View,
        value: Elementwise,
    },
    Fill {
        dst: View,
        value: f64,
    },
    Sync,
    /// `cp_async_fence()`: closes the group of async copies issued so far.
    AsyncFence,
    /// `cp_async_wait(n)`: waits until at most `n` fenced groups are in flight.
    AsyncWait(u32),
    /// `for var in start..end`.
    For {
        var: String,
        start: Int,
        end: Int,
        body: Vec<Stmt>,
    },
    /// `if cond { then } else { otherwise }`: the threads for which `cond`
    /// holds run `then`, the others `otherwise`. Statements that need
    /// every thread of a warp, a warpgroup or the block stand only under
    /// conditions that agree across those threads (the checker's rule).
    If {
        cond: Predicate,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `pipeline var in start..end, stage s in 0..stages { load {...} body }`:
    /// iteration `k`'s `load` (TMA box loads into stage `(k - start) %
    /// stages`) runs on a producer warpgroup as soon as the consumers have
    /// finished with the stage; the rest of the body runs on the block's
    /// threads once the stage has landed. The stage name is bound to that
    /// expression inside the body. With `turn`, the loop runs once a turn,
    /// each turn on one consumer warpgroup in rotation, and the stage is
    /// that of the trip counted across the turns.
    Pipeline {
        var: String,
        start: Int,
        end: Int,
        stages: i64,
        load: Vec<Stmt>,
        body: Vec<Stmt>,
        turn: Option<Turns>,
    },
    /// `copy_tma(src, dst)`: a global tile into a shared stage as TMA boxes
    /// of one tensor map, in a pipeline's `load` block (`stage`);
    /// elsewhere, by the whole block, a global tile into a shared one
    /// (waited for there), or a shared tile out to a global one
    /// (`tma.map.store`).
    CopyTma {
        src: View,
        dst: View,
        tma: tilec_layout::TmaCopy,
        stage: bool,
    },
    /// `prefetch(tile)`: a global tile fetched into L2 as the TMA boxes of
    /// `tma` (a map of its own, unswizzled) by one thread of the block: a
    /// hint that writes nothing, reads nothing the kernel sees and that
    /// nothing waits for.
    Prefetch {
        src: View,
        tma: tilec_layout::TmaCopy,
    },
    /// `reduce R across block.z { body }` or `across parts(...)`: register
    /// array `registers` (f32) summed over the blocks of a group (`across`
    /// says which), in the order of their part index, in runs (the same
    /// bits whichever block arrives last); the block that finishes the
    /// group's sum holds it and runs `body`, the others skip it.
    ReduceBlocks {
        registers: usize,
        across: Across,
        /// The partials added by atomics in the order the blocks arrive
        /// (`atomic`), not in index order.
        atomic: bool,
        body: Vec<Stmt>,
    },
}

/// The groups of a `reduce` across blocks.
#[derive(Clone, Debug, PartialEq)]
pub enum Across {
    /// The blocks that differ only in grid dimension `0..3` (split-K's
    /// slices along `block.z`), each its own part. At the kernel's top
    /// level, once.
    Dim(u8),
    /// `parts(t < groups, p < n, n <= most)`: the block holds part `part`
    /// of the `count` partial sums of group `group` (stream-K's pieces of
    /// a tile, a block's in each trip of a loop). `groups` and `most` are
    /// launch values (extents): the workspace's size, `groups * most`
    /// partials; the kernel stops where a block's values break the bounds.
    Parts {
        group: Int,
        groups: Int,
        part: Int,
        count: Int,
        most: Int,
    },
}

impl Op {
    /// The tensor the statement writes, if it writes one (not counting
    /// the statements nested in it).
    pub fn written(&self) -> Option<&View> {
        match self {
            Op::Copy { dst, .. } | Op::Fill { dst, .. } | Op::Assign { dst, .. } => Some(dst),
            Op::Gemm { c, .. } | Op::Mma { c, .. } => Some(c),
            // A TMA store or a block's own load; a pipeline's stages are
            // its rules' business.
            Op::CopyTma { dst, stage, .. } if !stage => Some(dst),
            _ => None,
        }
    }

    /// The tensors this statement reads (not those nested in it).
    pub fn read(&self) -> Vec<&View> {
        let mut out = Vec::new();
        match self {
            Op::Copy { src, .. } | Op::CopyTma { src, .. } => out.push(src),
            Op::Gemm { a, b, c } | Op::Mma { a, b, c, .. } => out.extend([a, b, c]),
            Op::Assign { value, .. } => value.tensors(&mut out),
            _ => {}
        }
        out
    }

    /// The statement lists nested in this one.
    pub fn bodies(&self) -> Vec<&[Stmt]> {
        match self {
            Op::For { body, .. } | Op::ReduceBlocks { body, .. } => vec![body],
            Op::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            Op::Pipeline {
                load, body, turn, ..
            } => match turn {
                Some(t) => vec![load, body, &t.after],
                None => vec![load, body],
            },
            _ => vec![],
        }
    }
}

/// A pipeline's turns (`turn j in start..end`): turn `j` runs the loop's
/// trips on consumer warpgroup `(j - start) % G`, then `after` on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Turns {
    pub var: String,
    pub start: Int,
    pub end: Int,
    pub after: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub op: Op,
    pub span: Span,
}

/// Calls `f` on every statement, and on those in their bodies (loops,
/// branches, pipelines, reduces), before the statements after it.
pub fn walk(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        for b in s.op.bodies() {
            walk(b, f);
        }
    }
}

/// Grid and block extents, in terms of the kernel's extents.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub grid: Vec<Int>,
    pub block: Vec<Int>,
    /// `min_blocks(n)`: blocks that must fit on one multiprocessor at once
    /// (CUDA's launch bounds), which caps the registers a thread may use.
    pub min_blocks: Option<i64>,
    /// `cluster(2, 1)`: blocks per cluster along each grid dimension (1s
    /// without one). A pipeline's TMA boxes that every block of a cluster
    /// loads alike are split among them and multicast.
    pub cluster: [i64; 3],
}

impl Launch {
    /// The threads of a block, where the launch states a static number
    /// (and it fits 64 bits).
    pub fn static_threads(&self) -> Option<i64> {
        self.block
            .iter()
            .try_fold(1i64, |n, d| n.checked_mul(d.as_static()?))
    }

    /// The grid dimension the cluster spans, if there is a cluster (one
    /// dimension at most: the checker's rule).
    pub fn cluster_dim(&self) -> Option<u8> {
        self.cluster.iter().position(|&c| c > 1).map(|d| d as u8)
    }

    /// Whether the grid may end inside a cluster, so that the runtime
    /// adds pad blocks to make it whole: a cluster along a dimension whose
    /// extent is not a static multiple of the cluster's (`grid(2, n),
    /// cluster(2, 1)` has none).
    pub fn may_pad(&self) -> bool {
        self.cluster_dim().is_some_and(|d| {
            let whole = self.grid.get(d as usize).map_or(Some(1), Int::as_static);
            whole.is_none_or(|g| g % self.cluster[d as usize] != 0)
        })
    }

    /// Whether `fact`, a fact of the block (`64 * (block.x + 1) <= S`),
    /// holds on every block of the grid: `block.x + 1 <= S` under
    /// `grid(S, ...)`. Such a full-tile fact is no condition: a grid of a
    /// block per row (a reference, a row-wise norm) leaves its full entry
    /// every block, and the guarded one, a whole back end, is not built.
    pub fn holds_on_every_block(&self, fact: &Fact) -> bool {
        match fact {
            Fact::All(fs) => fs.iter().all(|f| self.holds_on_every_block(f)),
            Fact::Le(a, b) => self.least_over_blocks(b, a).is_some_and(|m| m >= 0),
            _ => false,
        }
    }

    /// A lower bound of `b - a` over the grid's blocks, where the
    /// difference is linear in the block's indices and, those taken at
    /// their least, a constant and extents with coefficients of at least
    /// 0 (an extent is at least 1). `None` where it is anything else.
    fn least_over_blocks(&self, b: &Int, a: &Int) -> Option<i64> {
        let mut d = Linear::of(b)?;
        d.add_form(&Linear::of(a)?, -1)?;
        for (atom, c) in d.terms.clone() {
            let Some(Builtin::Block(i)) = atom.as_var().and_then(Builtin::parse) else {
                continue;
            };
            // A cluster's pad blocks lie past the grid's stated end.
            if self.may_pad() && self.cluster_dim() == Some(i) {
                return None;
            }
            let g = self.grid.get(i as usize)?;
            d = d.without(&atom);
            // `c * block.i` over `0..g` is least at 0 where `c >= 0`, at
            // `g - 1` where it is below.
            if c < 0 {
                d.add_form(&Linear::of(g)?, c)?;
                d.constant = d.constant.checked_sub(c)?;
            }
        }
        let extent = |n: &str| Builtin::parse(n).is_none();
        d.terms
            .iter()
            .all(|(atom, c)| *c >= 0 && atom.as_var().is_some_and(extent))
            .then_some(d.constant)
    }
}

/// What a kernel computes, stated in its source, to check its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ReferenceKind {
    /// `gemm(A, B, C, alpha, beta)`: `C = alpha * A * B^T + beta * C`, A (M,K), B (N,K), C (M,N);
    /// with a batch mode L last on all three, one such product per batch.
    Gemm,
    /// `copy(A, B)`: `B = A`.
    Copy,
    /// `transpose(A, B)`: `B = A^T`, A (M,N), B (N,M).
    Transpose,
    /// `name(A, B, ...)`: kernel `name` of the same source, run on the CPU
    /// executor in f64 with these operands as its parameters; what it
    /// writes is what this kernel must.
    Kernel,
    /// `gemv(A, x, y, alpha, beta)`: `y = alpha * A x + beta * y`, A (M,N),
    /// x (N), y (M).
    Gemv,
    /// `reduce_sum(X, Y)`: `Y(m)` the sum of row m of `X (M,N)`.
    ReduceSum,
    /// `softmax(X, Y)`: each row of `X (M,N)`'s softmax.
    Softmax,
    /// `layernorm(X, gamma, beta, Y, eps)`: `(x - mean) / sqrt(var + eps) *
    /// gamma + beta` along each row (population variance), all (M,N).
    LayerNorm,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    pub kind: ReferenceKind,
    /// Kernel parameter indices, in the order the reference names them.
    pub operands: Vec<usize>,
    /// The reference kernel, for [`ReferenceKind::Kernel`].
    pub kernel: Option<String>,
    /// The `reference` statement.
    pub span: Span,
}

/// A `let`, with its inferred tensor, for `tilec check --shapes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub name: String,
    pub view: View,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The kernel's name in the source: where a problem with the kernel as
    /// a whole is reported.
    pub span: Span,
    pub params: Vec<KernelParam>,
    /// The kernel's run-time integers, in the order of its parameters: the
    /// extents bound by the tensor parameters' layouts (and `sm_count`),
    /// then the stride symbols of [`Kernel::strides`] that are not in place.
    pub extents: Vec<String>,
    /// The tensor parameters' strides that are not constants, as the views
    /// name them.
    pub strides: Vec<StrideSymbol>,
    pub launch: Launch,
    pub shared: Vec<SharedBuffer>,
    pub registers: Vec<RegisterArray>,
    pub body: Vec<Stmt>,
    /// Facts about extents that must hold at launch.
    pub conditions: Vec<Condition>,
    pub bindings: Vec<Binding>,
    pub reference: Option<Reference>,
    /// Its `tune` parameters, in order, each with the value this check used.
    pub tunables: Vec<Tunable>,
}

/// `tune NAME = DEFAULT in (C0, C1, ...);`: an integer constant of the
/// kernel that a tuner may set to any candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Tunable {
    pub name: String,
    pub default: i64,
    pub candidates: Vec<i64>,
    /// What this kernel was checked with: a setting's, or the default.
    pub value: i64,
    pub span: Span,
}

/// Values chosen for `tune` parameters (`--set`, `tilec tune`, the tune
/// cache), by `KERNEL.NAME` for one kernel or by `NAME` for every kernel
/// declaring it; other kernels are unaffected.
pub type Settings = std::collections::BTreeMap<String, i64>;

/// The value `settings` give tunable `name` of `kernel`: `KERNEL.NAME`'s,
/// else `NAME`'s.
pub fn setting(settings: &Settings, kernel: &str, name: &str) -> Option<i64> {
    settings
        .get(&format!("{kernel}.{name}"))
        .or_else(|| settings.get(name))
        .copied()
}

impl Kernel {
    /// The scalar parameters' names (`--scalars` sets their values).
    pub fn scalar_names(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Scalar(_)))
            .map(|p| p.name.as_str())
            .collect()
    }

    pub fn shared_bytes(&self) -> i64 {
        shared_placement(&self.shared, &self.body).map_or(i64::MAX, |(_, total)| total)
    }
}
