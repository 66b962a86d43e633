//! Operation statements: `copy`, `copy_async`, `prefetch`, `cp_async_fence`,
//! `cp_async_wait`, `gemm`, `axpby`, `fill`, `clear` and `sync`, with their
//! operands' element types, shapes and memory spaces checked.

use super::{KernelChecker, predication};
use crate::check::algebra::Known;
use crate::check::program::{Base, Elem, Op, Scalar, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind};
use tilec_layout::{Int, IntTuple, Operand, TiledMma};

/// The operation statements and their argument forms, in the order help
/// lines list them.
pub(super) const STATEMENTS: &[Known] = &[
    (
        "copy",
        "copy(src, dst) | copy(ATOM, src, dst)  ATOM: SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T, ... (ldmatrix)",
    ),
    ("copy_async", "copy_async(src, dst)"),
    (
        "copy_tma",
        "copy_tma(src, dst)  in a pipeline's load block: a global tile into a shared stage, as TMA boxes; elsewhere the whole block's TMA load (global to shared) or store (shared to global)",
    ),
    (
        "prefetch",
        "prefetch(tile)  a global tile into L2 ahead of its use, as TMA boxes issued by one thread (a hint: nothing waits for it)",
    ),
    ("cp_async_fence", "cp_async_fence()"),
    (
        "cp_async_wait",
        "cp_async_wait(N)  waits until at most N fenced groups are in flight",
    ),
    (
        "gemm",
        "gemm(A (M,K), B (N,K), C (M,N)) | gemm(MMA, A (V,M,K), B (V,N,K), C (V,M,N))",
    ),
    (
        "axpby",
        "axpby(alpha, X, beta, Y)  computes Y = alpha*X + beta*Y, as the element-wise statement `Y = alpha * X + beta * Y;` does",
    ),
    ("fill", "fill(T, value)"),
    ("clear", "clear(T)"),
    ("sync", "sync()"),
];

/// The argument forms of statement `name`.
pub(super) fn statement_usage(name: &str) -> Option<&'static str> {
    STATEMENTS.iter().find(|(n, _)| *n == name).map(|(_, u)| *u)
}

impl KernelChecker {
    /// An expression statement: one of the operations.
    pub(super) fn op(&mut self, e: &Expr) -> Result<Op, Diagnostic> {
        let (name, args) = match &e.kind {
            ExprKind::Call(f, args) => match &f.kind {
                ExprKind::Name(n) => (n.as_str(), args),
                _ => return Err(does_nothing(e.span)),
            },
            _ => return Err(does_nothing(e.span)),
        };
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if args.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::new(
                    format!("`{name}` takes {n} argument(s), not {}", args.len()),
                    e.span,
                )
                .with_help(format!("usage: {}", statement_usage(name).unwrap_or(""))))
            }
        };
        match name {
            "sync" => {
                arity(0)?;
                Ok(Op::Sync)
            }
            "copy" if args.len() == 3 => {
                let demand = match self.eval(&args[0])? {
                    Value::CopyAtom(a) => a,
                    v => return Err(wrong_leading(name, "a copy atom", &v, &args[0])),
                };
                let src = self.tensor_operand(&args[1], name)?;
                let dst = self.tensor_operand(&args[2], name)?;
                self.same_elem(&src, &args[1], &dst, &args[2])?;
                same_modes(&src, &args[1], &dst, &args[2], name)?;
                writable(&dst, &args[2], name)?;
                Ok(Op::Copy {
                    src,
                    dst,
                    asynchronous: false,
                    demand: Some(demand),
                })
            }
            "copy" | "copy_async" => {
                arity(2)?;
                let src = self.tensor_operand(&args[0], name)?;
                let dst = self.tensor_operand(&args[1], name)?;
                if name == "copy_async" || !(src.elem.is_float() && dst.elem.is_float()) {
                    self.same_elem(&src, &args[0], &dst, &args[1])?;
                }
                same_modes(&src, &args[0], &dst, &args[1], name)?;
                writable(&dst, &args[1], name)?;
                self.not_by_every_thread(&dst, &args[1], name)?;
                reads_no_element_it_wrote(&dst, &src, &args[1])?;
                let asynchronous = name == "copy_async";
                if asynchronous {
                    async_spaces(&src, &args[0], &dst, &args[1])?;
                }
                Ok(Op::Copy {
                    src,
                    dst,
                    asynchronous,
                    demand: None,
                })
            }
            "copy_tma" => {
                arity(2)?;
                let src = self.tensor_operand(&args[0], name)?;
                let dst = self.tensor_operand(&args[1], name)?;
                self.same_elem(&src, &args[0], &dst, &args[1])?;
                same_modes(&src, &args[0], &dst, &args[1], name)?;
                self.copy_tma(src, &args[0], dst, &args[1], e.span)
            }
            "prefetch" => {
                arity(1)?;
                let src = self.tensor_operand(&args[0], name)?;
                self.prefetch(src, &args[0])
            }
            "cp_async_fence" => {
                arity(0)?;
                Ok(Op::AsyncFence)
            }
            "cp_async_wait" => {
                arity(1)?;
                match self.eval(&args[0])?.to_int().and_then(|n| n.as_static()) {
                    Some(n) if (0..=7).contains(&n) => Ok(Op::AsyncWait(n as u32)),
                    _ => Err(Diagnostic::new(
                        "cp_async_wait takes a constant from 0 to 7",
                        args[0].span,
                    )
                    .with_help("the number of fenced groups that may stay in flight: stages - 2 for a pipeline")),
                }
            }
            "gemm" if args.len() == 4 => {
                let mma = match self.eval(&args[0])? {
                    Value::Mma(m) => m,
                    v => return Err(wrong_leading(name, "a tiled MMA", &v, &args[0])),
                };
                let a = self.tensor_operand(&args[1], "gemm")?;
                let b = self.tensor_operand(&args[2], "gemm")?;
                let c = self.tensor_operand(&args[3], "gemm")?;
                let ops = [(&a, &args[1]), (&b, &args[2]), (&c, &args[3])];
                self.operands_in_place(&args[1..])?;
                mma_operands(&mma, ops)?;
                if mma.atom.warpgroup
                    && let Some(n) = c.layout.size().as_static()
                    && self.state.wgmma_accumulators.is_none_or(|(m, _)| n > m)
                {
                    // f32 accumulators, one register each.
                    self.state.wgmma_accumulators = Some((n, e.span));
                }
                self.state.thread_uses.push(super::ThreadUse {
                    name: match &args[0].kind {
                        ExprKind::Name(n) => n.clone(),
                        _ => mma.atom.full_name(),
                    },
                    threads: Int::Static(mma.threads()),
                    span: e.span,
                    by: super::ThreadsUsed::Gemm,
                    running: None,
                });
                Ok(Op::Mma {
                    mma: Box::new(mma),
                    a,
                    b,
                    c,
                })
            }
            "gemm" => {
                arity(3)?;
                let a = self.tensor_operand(&args[0], "gemm")?;
                let b = self.tensor_operand(&args[1], "gemm")?;
                let c = self.tensor_operand(&args[2], "gemm")?;
                self.same_elem(&a, &args[0], &b, &args[1])?;
                // f16 and bf16 products accumulate in f32 too.
                let widening = a.elem.bytes() == 2 && c.elem == Elem::F32;
                if !widening {
                    self.same_elem(&a, &args[0], &c, &args[2])?;
                }
                gemm_shapes([(&a, &args[0]), (&b, &args[1]), (&c, &args[2])])?;
                writable(&c, &args[2], "gemm")?;
                Ok(Op::Gemm { a, b, c })
            }
            "axpby" => {
                arity(4)?;
                self.axpby(args)
            }
            "clear" | "fill" => {
                let value = if name == "clear" {
                    arity(1)?;
                    0.0
                } else {
                    arity(2)?;
                    match self.scalar_arg(&args[1])? {
                        Scalar::Literal(v) => v,
                        Scalar::Whole(v) => v as f64,
                        Scalar::Param(_) => {
                            return Err(Diagnostic::new("fill takes a number", args[1].span)
                                .with_help("fill(T, 0.5); to fill with a parameter, use axpby"));
                        }
                    }
                };
                let dst = self.tensor_operand(&args[0], name)?;
                writable(&dst, &args[0], name)?;
                self.not_by_every_thread(&dst, &args[0], name)?;
                // `clear(T)` has no number: its 0 is any type's.
                let at = args.get(1).map_or(e.span, |a| a.span);
                super::functions::element_constant(dst.elem, value, at)?;
                Ok(Op::Fill { dst, value })
            }
            _ => {
                // Evaluate for its errors (unknown function, bad arguments), then say it does nothing.
                self.eval(e)?;
                Err(does_nothing(e.span))
            }
        }
    }

    /// Both operands of one element type; otherwise an error at both, and
    /// at the definitions of the names they are made from.
    fn same_elem(&self, a: &View, ae: &Expr, b: &View, be: &Expr) -> Result<(), Diagnostic> {
        if a.elem == b.elem {
            return Ok(());
        }
        let mut d = Diagnostic::new(
            format!("element types differ: {} and {}", a.elem, b.elem),
            ae.span,
        )
        .with_label(format!("{} elements", a.elem))
        .with_related(be.span, format!("{} elements", b.elem))
        .with_help("give both tensors one element type");
        for (v, e) in [(a, ae), (b, be)] {
            if let Some(n) = root_name(e).map(|n| self.elem_origin(n, v))
                && let Some(&at) = self.declared.get(&n)
            {
                d = d.with_related(at, format!("{} from `{n}`, defined here", v.elem));
            }
        }
        Err(d)
    }

    /// The definition a tensor's element type comes from: following each
    /// definition to the first tensor of that type it is made of, back to
    /// the one made of none (`shared<f16>(...)`, `registers<f32>(...)`).
    fn elem_origin(&self, name: &str, v: &View) -> String {
        let mut at = name.to_string();
        for _ in 0..self.uses.len() {
            let next = self.uses.get(&at).into_iter().flatten().find(|u| {
                self.declared.contains_key(*u)
                    && matches!(
                        self.scope.get(*u).and_then(|e| e.value.as_ref()),
                        Some(Value::Tensor(t)) if t.elem == v.elem
                    )
            });
            match next {
                Some(n) => at = n.clone(),
                None => break,
            }
        }
        at
    }

    pub(super) fn tensor_operand(&mut self, e: &Expr, op: &str) -> Result<View, Diagnostic> {
        match self.eval(e)? {
            Value::Tensor(t) => Ok(t),
            v => Err(Diagnostic::new(format!("`{op}` works on tensors"), e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help("make a tensor with local_tile, local_partition, shared<T>(layout) or registers<T>(shape)")),
        }
    }

    fn scalar_arg(&mut self, e: &Expr) -> Result<Scalar, Diagnostic> {
        match self.eval(e)? {
            Value::Scalar { index, .. } => Ok(Scalar::Param(index)),
            Value::Float(v) => Ok(Scalar::Literal(v)),
            Value::Int(Int::Static(v)) => Ok(Scalar::Whole(v)),
            v => Err(Diagnostic::new("expected a scalar", e.span)
                .with_label(format!("this is {}", v.kind()))
                .with_help("a scalar parameter such as alpha, or a number")),
        }
    }

    /// A statement every thread of a block runs, under no condition the
    /// threads may disagree on, that
    /// writes shared or global memory at elements that do not depend on
    /// the thread (`fill(s, 0.0)` of a whole tile, `gC = gA + gB` of a
    /// block's tile): every thread writes each of them, a race (the CPU
    /// executor's and compute-sanitizer's), refused here with what to
    /// write instead.
    pub(super) fn not_by_every_thread(
        &self,
        dst: &View,
        e: &Expr,
        op: &str,
    ) -> Result<(), Diagnostic> {
        let threads = self.launch.as_ref().and_then(|(l, _)| l.static_threads());
        let memory = match dst.base {
            Base::Shared(_) => "shared memory",
            Base::Param(_) => "global memory",
            _ => return Ok(()),
        };
        // Under a condition the threads may not agree on (or a loop whose
        // bounds differ between threads) some threads alone write; under
        // one of the block's or a counter's (`if k < 64`), all of them.
        let divergent = self
            .enclosing
            .iter()
            .any(|e| e.granule < predication::UNIFORM);
        if divergent || threads.is_none_or(|t| t <= 1) {
            return Ok(());
        }
        if dst.depends_on_thread() {
            return self.threads_write_apart(dst, threads.unwrap_or(1), memory, e);
        }
        Err(Diagnostic::new(
            match op {
                "=" => format!("every thread of the block writes the same elements of {memory} here"),
                _ => format!(
                    "every thread of the block runs this `{op}` on the same elements of {memory}"
                ),
            },
            e.span,
        )
        .with_label(format!(
            "no element of this depends on thread.x: the block's {} threads each write all {} of them, a race",
            threads.unwrap_or(0),
            dst.layout.size()
        ))
        .with_help(match dst.base {
            Base::Shared(_) => "give each thread its part, e.g. `fill(local_partition(s, (128):(1), thread.x), 0.0)` with as many threads as the block, or write it under `if thread.x == 0` and `sync()` after",
            _ => "give each thread its part of the tile, e.g. `local_partition(gC, (8, 32):(32, 1), thread.x)` with a thread layout of as many threads as the block, or write it under `if thread.x == 0`",
        }))
    }
}

/// The operation's leading operand (`copy(ATOM, ...)`, `gemm(MMA, ...)`)
/// is not what that form takes.
fn wrong_leading(op: &str, wanted: &str, got: &Value, e: &Expr) -> Diagnostic {
    Diagnostic::new(format!("this form of `{op}` takes {wanted} first"), e.span)
        .with_label(format!("this is {}", got.kind()))
        .with_help(format!("usage: {}", statement_usage(op).unwrap_or("")))
}

fn does_nothing(span: Span) -> Diagnostic {
    let names: Vec<&str> = STATEMENTS.iter().map(|(n, _)| *n).collect();
    let (last, rest) = names.split_last().expect("statements");
    Diagnostic::new("this statement does nothing", span).with_help(format!(
        "statements are {} and {last}; bind values with `let`",
        rest.join(", ")
    ))
}

/// The name an operand is made from: `t` of `t`, `t[_, k]` or `t(_, k)`.
fn root_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Name(n) => Some(n),
        ExprKind::Index(t, _) | ExprKind::Call(t, _) if !matches!(t.kind, ExprKind::Name(_)) => {
            root_name(t)
        }
        ExprKind::Index(t, _) => root_name(t),
        _ => None,
    }
}

/// Mode sizes of a tensor, for comparing operands.
pub(super) fn mode_sizes(v: &View) -> Vec<Int> {
    v.layout
        .shape()
        .modes()
        .iter()
        .map(IntTuple::product)
        .collect()
}

fn same_modes(a: &View, ae: &Expr, b: &View, be: &Expr, op: &str) -> Result<(), Diagnostic> {
    let (sa, sb) = (mode_sizes(a), mode_sizes(b));
    // An element and a tensor of one (`t[thread.x]` and `registers<f32>(1)`)
    // are one element either way.
    let one = |v: &View| v.layout.size().is_const(1);
    if sa == sb || (one(a) && one(b)) {
        return Ok(());
    }
    let message = if sa.len() != sb.len() {
        format!(
            "`{op}`'s operands differ in rank: {} modes here, {} there",
            sa.len(),
            sb.len()
        )
    } else {
        format!("`{op}` operands have different shapes")
    };
    Err(Diagnostic::new(message, ae.span)
        .with_label(format!("shape {}", a.layout.shape()))
        .with_related(be.span, format!("shape {}", b.layout.shape()))
        .with_help("both operands need the same extent in every mode; check the thread layouts and tilers that made them"))
}

/// cp.async moves global memory into shared memory, nothing else.
fn async_spaces(src: &View, se: &Expr, dst: &View, de: &Expr) -> Result<(), Diagnostic> {
    let (at, what) = match (src.base, dst.base) {
        (Base::Param(_), Base::Shared(_)) => return Ok(()),
        (Base::Param(_), _) => (de, format!("this is in {}", dst.base.space())),
        _ => (se, format!("this is in {}", src.base.space())),
    };
    Err(
        Diagnostic::new("`copy_async` copies from global to shared memory", at.span)
            .with_label(what)
            .with_help("use copy(src, dst) for other copies"),
    )
}

pub(super) fn writable(v: &View, e: &Expr, op: &str) -> Result<(), Diagnostic> {
    if v.layout.is_static() || matches!(v.base, Base::Param(_)) {
        return Ok(());
    }
    Err(Diagnostic::new(
        format!("`{op}` writes to a tensor of run-time shape outside global memory"),
        e.span,
    )
    .with_label(format!("shape {}", v.layout.shape())))
}

/// A statement that writes an element of its target before it reads that
/// element as a later one of its operand `src` (a transpose in place,
/// `r = composition(r, (4, 4):(4, 1))`): element-wise statements go element
/// by element, so the later read would see the new value. Refused at the
/// statement, wherever both views' offsets are known apart (registers, or
/// one tile of a tensor seen two ways).
pub(super) fn reads_no_element_it_wrote(
    dst: &View,
    src: &View,
    e: &Expr,
) -> Result<(), Diagnostic> {
    if src.base != dst.base {
        return Ok(());
    }
    let apart = match (src.offset.as_static(), dst.offset.as_static()) {
        (Some(s), Some(d)) => s - d,
        _ if src.offset == dst.offset => 0,
        _ => return Ok(()),
    };
    let (at_dst, at_src) = (
        |i: i64| dst.layout.at_static(i),
        |i: i64| Some(src.layout.at_static(i)? + apart),
    );
    let Some(n) = dst.layout.size().as_static() else {
        return Ok(());
    };
    let mut written = std::collections::HashMap::new();
    for i in 0..n {
        if let Some(w) = at_dst(i) {
            written.entry(w).or_insert(i);
        }
        let Some(read) = at_src(i) else { continue };
        if let Some(&first) = written.get(&read)
            && first < i
        {
            return Err(Diagnostic::new(
                "this statement overwrites an element of its target before its operand reads it",
                e.span,
            )
            .with_label(format!(
                "element {first} of the result is written where element {i} of the operand reads later"
            ))
            .with_help("an element-wise statement goes element by element, so its operand may not be a rearranged view of its target: write into another tensor (registers<f32>(...)) and copy that back"));
        }
    }
    Ok(())
}

impl KernelChecker {
    /// A tensor-core gemm's A, B and C where the partitions they were made
    /// by say so: a partition for B passed as A (operands swapped) has the
    /// wrong thread-value layout, and on a square tile the same shape, so
    /// the kernel would compute another product (B A^T) without a word.
    fn operands_in_place(&self, args: &[Expr]) -> Result<(), Diagnostic> {
        for (e, want) in args.iter().zip([Operand::A, Operand::B, Operand::C]) {
            let Some((role, made)) = self.operand_role(e) else {
                continue;
            };
            if role != want {
                let (is, place) = (format!("{role:?}"), format!("{want:?}"));
                return Err(Diagnostic::new(
                    format!("gemm's {place} is a partition for {is}"),
                    e.span,
                )
                .with_label(format!("in the place of {place}"))
                .with_related(made, format!("partition_{is} made it"))
                .with_help(format!(
                    "gemm takes (mma, A, B, C), each its own partition: partition_{place}(mma, tile, thread.x) here (swapped operands compute another product whatever their shapes)"
                )));
            }
        }
        Ok(())
    }
}

/// The operands of a tensor-core gemm: tensors of the atom's element types,
/// (values, M, K), (values, N, K) and (values, M, N), with the atom's value
/// count in the first mode and M, N, K agreeing. C is a register fragment;
/// so are A and B, but for wgmma atoms, which read B from shared memory
/// (whose layouts lowering turns into descriptors), and A too for `_SS`.
fn mma_operands(mma: &TiledMma, ops: [(&View, &Expr); 3]) -> Result<(), Diagnostic> {
    let atom = &mma.atom;
    let forms = [
        (Operand::A, "A", atom.ab, "(values, M, K) or (values, M)"),
        (Operand::B, "B", atom.ab, "(values, N, K) or (values, N)"),
        (Operand::C, "C", atom.c, "(values, M, N)"),
    ];
    let mut modes = Vec::new();
    for ((op, name, elem, form), (v, e)) in forms.into_iter().zip(ops) {
        let from_shared = match op {
            Operand::A => atom.shared_a,
            Operand::B => atom.warpgroup,
            Operand::C => false,
        };
        if from_shared && !matches!(v.base, Base::Shared(_)) {
            return Err(Diagnostic::new(
                format!("{} reads {name} from shared memory", atom.full_name()),
                e.span,
            )
            .with_label(format!("this is in {}", v.base.space()))
            .with_help(format!(
                "pass partition_{name}(mma, shared_tile, thread.x), sliced to one stage"
            )));
        }
        if !from_shared && !matches!(v.base, Base::Registers(_)) {
            return Err(Diagnostic::new(
                format!("the tensor-core gemm's {name} must be in registers"),
                e.span,
            )
            .with_label(format!("this is in {}", v.base.space()))
            .with_help(format!(
                "copy it into a fragment first: registers<{elem}>(shape(...)) of its partition_{name}"
            )));
        }
        if v.elem != elem {
            return Err(Diagnostic::new(
                format!(
                    "{} takes {elem} for {name}, not {}",
                    atom.full_name(),
                    v.elem
                ),
                e.span,
            )
            .with_label(format!("{} elements", v.elem))
            .with_help(format!(
                "A and B are {}, the accumulator C is {}",
                atom.ab, atom.c
            )));
        }
        let mut m = mode_sizes(v);
        let values = atom.values(op);
        // A (values, M) and B (values, N) are one k-block: K is 1.
        if m.len() == 2 && op != Operand::C {
            m.push(Int::Static(1));
        }
        if m.len() > 3 {
            return Err(Diagnostic::new(
                format!(
                    "the tensor-core gemm's {name} has {} modes; it must be {form}",
                    m.len()
                ),
                e.span,
            )
            .with_label(format!("shape {}", v.layout.shape()))
            .with_help(format!(
                "slice the modes past the third: a pipeline's stage, `tCs{name}[_, _, _, s]`"
            )));
        }
        if m.len() != 3 || m[0] != Int::Static(values) {
            return Err(Diagnostic::new(
                format!(
                    "the tensor-core gemm's {name} must be {form} with {values} values in its first mode"
                ),
                e.span,
            )
            .with_label(format!("shape {}", v.layout.shape()))
            .with_help(format!(
                "make it with partition_{name}(mma, tile, thread.x), sliced to three modes"
            )));
        }
        modes.push(m);
    }
    let agree = [(0, 1, 2, 1, "M"), (1, 1, 2, 2, "N"), (0, 2, 1, 2, "K")];
    for (x, xm, y, ym, dim) in agree {
        if modes[x][xm] != modes[y][ym] {
            let names = ["A", "B", "C"];
            return Err(Diagnostic::new(
                format!(
                    "the tensor-core gemm's {dim} tiles disagree: {} has {} and {} has {}",
                    names[x], modes[x][xm], names[y], modes[y][ym]
                ),
                ops[x].1.span,
            )
            .with_label(format!("shape {}", ops[x].0.layout.shape()))
            .with_related(ops[y].1.span, format!("shape {}", ops[y].0.layout.shape()))
            .with_help("partition A, B and C of one block tile with the same tiled MMA"));
        }
    }
    Ok(())
}

fn gemm_shapes(ops: [(&View, &Expr); 3]) -> Result<(), Diagnostic> {
    let names = ["A", "B", "C"];
    let modes: Vec<Vec<Int>> = ops.iter().map(|(v, _)| mode_sizes(v)).collect();
    for (i, (v, e)) in ops.iter().enumerate() {
        if modes[i].len() != 2 {
            return Err(Diagnostic::new(
                format!("gemm's {} must have two modes", names[i]),
                e.span,
            )
            .with_label(format!("shape {} has {}", v.layout.shape(), modes[i].len()))
            .with_help("gemm(A (M,K), B (N,K), C (M,N)); slice or partition to two modes"));
        }
    }
    let agree = [
        (0, 0, 2, 0, "M", "A's mode 0", "C's mode 0"),
        (1, 0, 2, 1, "N", "B's mode 0", "C's mode 1"),
        (0, 1, 1, 1, "K", "A's mode 1", "B's mode 1"),
    ];
    for (x, xm, y, ym, dim, xs, ys) in agree {
        if modes[x][xm] != modes[y][ym] {
            return Err(Diagnostic::new(
                format!("gemm's {dim} extents disagree: {xs} is {} but {ys} is {}", modes[x][xm], modes[y][ym]),
                ops[x].1.span,
            )
            .with_label(format!("{} shape {}", names[x], ops[x].0.layout.shape()))
            .with_related(ops[y].1.span, format!("{} shape {}", names[y], ops[y].0.layout.shape()))
            .with_help("gemm(A (M,K), B (N,K), C (M,N)): partition A by the rows of the thread layout and B by its columns, step(1, X) and step(X, 1)"));
        }
    }
    Ok(())
}
