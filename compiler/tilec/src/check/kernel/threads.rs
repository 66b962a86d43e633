//! Reductions across threads: `reduce_sum(x, threads(L, m))` folds `x`
//! over the threads that differ only in mode `m` of the thread layout `L`
//! (thread coordinate -> `thread.x`), and every one of them gets the
//! result; `threads(L)` folds over all of `L`'s threads.
//!
//! The checker writes it out, before the statement that uses it, as
//! statements the later stages already know: `x` into a register tensor;
//! for each level of the mode that lies within a warp, a butterfly of
//! shuffles; for the levels across warps, every thread's value through a
//! shared buffer between two barriers, each thread folding its group's
//! values in the same order. Either way every thread of a group holds the
//! same bits, and the CPU executor, the verifier and the race checks see
//! ordinary statements.

use super::KernelChecker;
use super::elementwise::{Target, nontrivial, show_modes};
use crate::arith::Binary;
use crate::check::program::{Base, Elem, Elementwise, Op, SharedBuffer, Stmt, View};
use crate::check::value::Value;
use crate::diagnostic::Diagnostic;
use crate::syntax::ast::{Expr, ExprKind};
use tilec_layout::{Builtin, Int, IntTuple, Layout};

/// Whether `e` is `threads(...)`, the second operand of a reduction across threads.
pub(super) fn is_threads(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call(f, _) if matches!(&f.kind, ExprKind::Name(n) if n == "threads"))
}

/// One level of the folded mode: `size` threads, `stride` apart in `thread.x`.
#[derive(Clone, Copy)]
struct Level {
    size: i64,
    stride: i64,
}

/// The levels a reduction folds through shared memory, and the rest.
struct Exchange {
    /// The levels folded through shared memory.
    shared: Vec<Level>,
    /// The thread layout's other levels, whose digits a thread keeps when
    /// it reads its group's slots (those folded by shuffles among them).
    kept: Vec<Level>,
    /// The thread layout's threads, which repeat over the block's.
    size: i64,
    /// The block's threads: a slot each.
    threads: i64,
}

impl Level {
    /// The part of this level within a warp, then the rest: 64 threads at
    /// stride 1 are 32 lanes (shuffles) and 2 warps (shared memory).
    fn split(self) -> [Level; 2] {
        let lanes = match self.stride {
            // The largest power of two dividing the size, up to a warp.
            d if d > 0 && d < 32 && (d as u64).is_power_of_two() => {
                (1i64 << self.size.trailing_zeros()).min(32 / d)
            }
            _ => 1,
        };
        [
            Level {
                size: lanes,
                stride: self.stride,
            },
            Level {
                size: self.size / lanes,
                stride: self.stride * lanes,
            },
        ]
    }

    /// Within one warp, at power-of-two strides: a butterfly of shuffles
    /// (lane `t ^ stride * 2^b` differs from `t` in this level's bit `b`).
    fn by_shuffles(self) -> bool {
        let power = |n: i64| n > 0 && (n as u64).is_power_of_two();
        power(self.size) && power(self.stride) && self.size * self.stride <= 32
    }
}

impl KernelChecker {
    /// `reduce_sum(x, threads(L, m))` (`op` its fold): the statements that
    /// compute it go to `self.before`; the value is their register tensor.
    pub(super) fn reduce_threads(
        &mut self,
        op: Binary,
        name: &str,
        args: &[Expr],
        e: &Expr,
        to: &Target,
        depth: usize,
    ) -> Result<Elementwise, Diagnostic> {
        let usage = format!(
            "`{name}(x, threads(L, m))` folds x over the threads that differ only in mode m of the thread layout L (thread coordinate -> thread.x), each of them getting the result; `threads(L)` folds over all of L's threads; e.g. `m = reduce_max(x, threads((32, 8):(1, 32), 0));` over each warp's lanes"
        );
        let ExprKind::Call(_, targs) = &args[1].kind else {
            unreachable!("is_threads matched a call")
        };
        if targs.is_empty() || targs.len() > 2 {
            return Err(Diagnostic::new(
                format!(
                    "`threads` takes a thread layout and a mode, not {} operand(s)",
                    targs.len()
                ),
                args[1].span,
            )
            .with_help(usage));
        }
        let layout = match self.eval(&targs[0])? {
            Value::Layout(l) if l.is_static() => l,
            v => {
                return Err(Diagnostic::new(
                    "`threads` takes a thread layout of static shape and strides",
                    targs[0].span,
                )
                .with_label(format!("this is {}", v.kind()))
                .with_help(usage));
            }
        };
        let mode = match targs.get(1).map(|m| self.eval(m)).transpose()? {
            None => None,
            Some(Value::Int(Int::Static(m))) if m >= 0 && (m as usize) < layout.rank() => {
                Some(m as usize)
            }
            Some(v) => {
                return Err(Diagnostic::new(
                    format!(
                        "the mode to fold over is a number below the layout's rank, {}",
                        layout.rank()
                    ),
                    targs[1].span,
                )
                .with_label(format!("this is {v}"))
                .with_help(usage));
            }
        };
        let threads = self.block_threads().ok_or_else(|| {
            let d = Diagnostic::new("a reduction across threads before a launch of static block size", e.span)
                .with_help("write `launch grid(...), block(256);` before the statements, with a number of threads");
            // A launch written but refused has its own error.
            match self.launch_written && self.launch.is_none() {
                true => d.following(),
                false => d,
            }
        })?;
        check_thread_layout(&layout, threads, &targs[0])?;
        // Every level of the layout, split at the warp, and whether the
        // reduction folds it.
        let mut levels: Vec<(Level, bool)> = Vec::new();
        for (i, part) in layout.modes().iter().enumerate() {
            let sizes = part.shape().leaves();
            let strides = part.stride().leaves();
            for (s, d) in sizes.iter().zip(&strides) {
                let level = Level {
                    size: s.as_static().expect("a static layout"),
                    stride: d.as_static().expect("a static layout"),
                };
                let folded = mode.is_none_or(|m| m == i);
                levels.extend(
                    level
                        .split()
                        .into_iter()
                        .filter(|l| l.size > 1)
                        .map(|l| (l, folded)),
                );
            }
        }
        // The operand's own modes: one element is folded as one and shared
        // by every element of the target, as any operand of one element.
        let operand = self
            .operand_modes(&args[0])?
            .unwrap_or_else(|| vec![Int::Static(1)]);
        let inner = Target {
            view: to.view,
            expr: to.expr,
            modes: operand.clone(),
            integers: to.integers,
            folded: Some(args[0].span),
        };
        // Each element folds into the target's same element, or one into
        // all of them.
        if !nontrivial(&operand).is_empty() && nontrivial(&operand) != nontrivial(&to.modes) {
            return Err(Diagnostic::new(
                format!(
                    "`{name}` across threads gives modes {}, not those of the target {}",
                    show_modes(&operand),
                    show_modes(&to.modes)
                ),
                args[0].span,
            )
            .with_related(to.expr.span, "the target")
            .with_help("across threads each element folds on its own: the operand has the target's modes, or is one element"));
        }
        let modes: Option<Vec<i64>> = operand.iter().map(Int::as_static).collect();
        let Some(modes) = modes else {
            return Err(Diagnostic::new(
                format!("`{name}` across threads of an operand of run-time shape"),
                args[0].span,
            )
            .with_help("fold a register tensor: `r = x; r = reduce_sum(r, threads(L, m));`"));
        };
        let value = self.elementwise(&args[0], &inner, depth + 1)?;
        let elem = if to.integers { Elem::I32 } else { Elem::F32 };
        let shape = IntTuple::Tuple(
            modes
                .iter()
                .map(|&m| IntTuple::Int(Int::Static(m)))
                .collect(),
        );
        let len: i64 = modes.iter().product();
        let acc = self.state.new_registers(elem, &shape, None);
        let mut ops = vec![Op::Assign {
            dst: acc.clone(),
            value,
        }];
        // Shuffles need whole warps; a block of fewer threads goes through
        // shared memory alone.
        let shuffled = |l: &Level| threads % 32 == 0 && l.by_shuffles();
        let folded = |by: bool| -> Vec<Level> {
            levels
                .iter()
                .filter(|(l, f)| *f && shuffled(l) == by)
                .map(|(l, _)| *l)
                .collect()
        };
        let (lanes, shared) = (folded(true), folded(false));
        // The digits a thread keeps when it reads its group's slots: every
        // level's but the shared ones.
        let kept: Vec<Level> = levels
            .iter()
            .filter(|(l, f)| !*f || shuffled(l))
            .map(|(l, _)| *l)
            .collect();
        for level in lanes {
            for bit in 0..level.size.trailing_zeros() {
                let mask = (level.stride << bit) as u32;
                let tensor = || Box::new(Elementwise::Tensor(acc.clone()));
                ops.push(Op::Assign {
                    dst: acc.clone(),
                    value: Elementwise::Binary(
                        op,
                        tensor(),
                        Box::new(Elementwise::Shuffle(tensor(), mask)),
                    ),
                });
            }
        }
        if !shared.is_empty() {
            // A slot a thread for each element, 4 bytes each.
            let bytes = threads * len * 4;
            if bytes > super::SHARED_LIMIT_BYTES {
                return Err(Diagnostic::new(
                    format!("`{name}` through shared memory needs {bytes} bytes, past the device's {}", super::SHARED_LIMIT_BYTES),
                    e.span,
                )
                .with_label(format!("{len} elements for each of {threads} threads"))
                .with_help("fold fewer elements at once, or fold each thread's elements first (`reduce_sum(x, 0)`)"));
            }
            let group = Exchange {
                shared,
                kept,
                size: layout.size().as_static().expect("a static layout"),
                threads,
            };
            ops.extend(self.exchange(op, &acc, &group));
        }
        for op in &ops {
            self.check_agreement(op, e.span).map_err(|d| {
                d.with_label(match op {
                    Op::Sync => "through shared memory, the values meet between two barriers",
                    _ => "within a warp, the values meet by shuffles",
                })
            })?;
        }
        self.before
            .extend(ops.into_iter().map(|op| Stmt { op, span: e.span }));
        Ok(Elementwise::Tensor(acc))
    }

    /// The threads of a block, where the launch states a static number.
    pub(super) fn block_threads(&self) -> Option<i64> {
        self.launch.as_ref()?.0.static_threads()
    }

    /// The group's levels through shared memory: each thread's values of
    /// `acc` to its own slots, a barrier, each thread folding its group's
    /// slots (over the levels' coordinates, from 0, the same order for all
    /// of them), a barrier before the slots are written again.
    fn exchange(&mut self, op: Binary, acc: &View, group: &Exchange) -> Vec<Op> {
        let Exchange {
            shared,
            kept,
            size,
            threads,
        } = group;
        let (size, threads, elem, shape) = (*size, *threads, acc.elem, acc.layout.shape());
        let len = acc.layout.size().as_static().expect("static registers");
        // One buffer a type for all of the kernel's reductions, as large as
        // the largest needs: each one's last barrier lets the next write
        // (buffers of their own, placed at the same bytes, would add a
        // barrier between them).
        let index = match self.exchanges.iter().find(|(e, _)| *e == elem) {
            Some(&(_, i)) => i,
            None => {
                self.state.shared.push(SharedBuffer {
                    elem,
                    len: 0,
                    swizzle: None,
                    tma: false,
                    name: Some("exchange".into()),
                });
                self.exchanges.push((elem, self.state.shared.len() - 1));
                self.state.shared.len() - 1
            }
        };
        let slots_len = &mut self.state.shared[index].len;
        *slots_len = (*slots_len).max(threads * len);
        let buffer = Base::Shared(index);
        // Element e of thread t at t + e * threads: a warp's writes are
        // consecutive words.
        let slots = shape.compact_col_major(&Int::Static(threads));
        let t = Builtin::Thread.int();
        let own = View {
            base: buffer,
            elem,
            layout: Layout::new(shape.clone(), slots.clone()).expect("congruent"),
            offset: t.clone(),
            coords: Vec::new(),
        };
        // The group's first thread: t's run of `size` threads plus its
        // digits of the kept levels (thread layouts are compact, so a
        // level's coordinate is the digit (t / stride) % size), a sum of
        // terms each within its own range, so the bounds of the slots read
        // stay those of the block.
        let n = Int::Static(size);
        let first = kept.iter().fold(t.div(&n).mul(&n), |base, l| {
            let (s, d) = (Int::Static(l.size), Int::Static(l.stride));
            base.add(&t.div(&d).rem(&s).mul(&d))
        });
        let leaf = |f: fn(&Level) -> i64| -> IntTuple {
            let v: Vec<IntTuple> = shared
                .iter()
                .map(|l| IntTuple::Int(Int::Static(f(l))))
                .collect();
            match v.len() {
                1 => v.into_iter().next().expect("one level"),
                _ => IntTuple::Tuple(v),
            }
        };
        let mut group_shape = vec![leaf(|l| l.size)];
        let mut group_stride = vec![leaf(|l| l.stride)];
        group_shape.extend(shape.modes());
        group_stride.extend(slots.modes());
        let group = View {
            base: buffer,
            elem,
            layout: Layout::new(IntTuple::Tuple(group_shape), IntTuple::Tuple(group_stride))
                .expect("congruent"),
            offset: first,
            coords: Vec::new(),
        };
        let group_size: i64 = shared.iter().map(|l| l.size).product();
        let mut modes = vec![group_size];
        modes.extend(
            shape
                .modes()
                .iter()
                .map(|m| m.product().as_static().expect("static")),
        );
        vec![
            Op::Copy {
                src: acc.clone(),
                dst: own,
                asynchronous: false,
                demand: None,
            },
            Op::Sync,
            Op::Assign {
                dst: acc.clone(),
                value: Elementwise::Reduce {
                    op,
                    mode: 0,
                    modes,
                    value: Box::new(Elementwise::Tensor(group)),
                },
            },
            Op::Sync,
        ]
    }
}

/// A thread layout whose groups are well defined: it numbers the threads
/// `0..size` once each (so each level's coordinate is `(t / stride) %
/// size`), and its size divides the block's threads (the layout repeats
/// over each run of `size` threads).
fn check_thread_layout(layout: &Layout, threads: i64, at: &Expr) -> Result<(), Diagnostic> {
    let help = "a thread layout numbers each of its threads once, from 0, e.g. (32, 8):(1, 32) or ((32, 2), 4):((1, 128), 32); its size divides the block's threads";
    let size = layout.size().as_static().expect("a static layout");
    if size > threads || threads % size != 0 {
        return Err(Diagnostic::new(
            format!("a thread layout of {size} threads in a block of {threads}"),
            at.span,
        )
        .with_label(format!("layout {layout}"))
        .with_help(help));
    }
    let stat = layout.to_static().expect("a static layout");
    let mut seen = vec![false; size as usize];
    for (i, offset) in stat.offsets().take(size as usize).enumerate() {
        let t = offset.expect("a static layout");
        match seen.get_mut(t as usize).filter(|_| t >= 0) {
            Some(s @ false) => *s = true,
            Some(true) => {
                return Err(
                    Diagnostic::new("this thread layout names a thread twice", at.span)
                        .with_label(format!(
                            "layout {layout}: coordinate {i} is thread {t} again"
                        ))
                        .with_help(help),
                );
            }
            None => {
                return Err(Diagnostic::new(
                    format!("this thread layout reaches thread {t}, past its {size} threads"),
                    at.span,
                )
                .with_label(format!("layout {layout}: coordinate {i}"))
                .with_help(help));
            }
        }
    }
    Ok(())
}
