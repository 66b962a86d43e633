//! The launch statement (`launch grid(...), block(...), min_blocks(n),
//! cluster(x, y);`)
//! and the block's threads, compared with every thread layout that partitions.

use super::KernelChecker;
use crate::check::kernel::pipeline::{PRODUCER_THREADS, registers_at_launch};
use crate::check::program::Launch;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind};
use tilec_layout::{AXES, BLOCK_MAX, GRID_MAX, Int};

impl KernelChecker {
    pub(super) fn launch_stmt(&mut self, parts: &[Expr], span: Span) {
        self.launch_written = true;
        if let Some((_, first)) = &self.launch {
            let first = *first;
            return self.diags.push(
                Diagnostic::new("a kernel has one launch statement", span)
                    .with_related(first, "the first one")
                    .with_help("merge them into one `launch grid(...), block(...);`"),
            );
        }
        let mut grid = None;
        let mut block = None;
        let mut min_blocks = None;
        let mut cluster = [1; 3];
        for p in parts {
            let (which, args) = match &p.kind {
                ExprKind::Call(f, args) => match &f.kind {
                    ExprKind::Name(n) if LAUNCH_PARTS.contains(&n.as_str()) => (n.as_str(), args),
                    // A part misspelt (`blocks(...)`): name it and the parts.
                    ExprKind::Name(n) => {
                        let close = LAUNCH_PARTS
                            .iter()
                            .find(|k| crate::check::algebra::edit_distance(k, n) <= 2);
                        let d = Diagnostic::new(format!("a launch has no part `{n}`"), f.span)
                            .with_label("unknown part");
                        return self.diags.push(match close {
                            Some(k) => d.with_help(format!("did you mean `{k}`? a launch's parts are grid, block, min_blocks and cluster")),
                            None => d.with_help("a launch's parts are grid, block, min_blocks and cluster: `launch grid(...), block(...);`"),
                        });
                    }
                    _ => return self.diags.push(launch_help(p.span)),
                },
                _ => return self.diags.push(launch_help(p.span)),
            };
            let mut dims = Vec::new();
            for a in args {
                match self.eval(a) {
                    Ok(v) => match v.to_int() {
                        Some(i) => dims.push(i),
                        None => {
                            return self.diags.push(
                                Diagnostic::new(format!("{which} dimensions are integers"), a.span)
                                    .with_label(format!("this is {}", v.kind())),
                            );
                        }
                    },
                    Err(d) => return self.diags.push(d),
                }
            }
            if dims.is_empty() || dims.len() > 3 {
                return self.diags.push(
                    Diagnostic::new(
                        format!("{which}(...) takes one to three dimensions"),
                        p.span,
                    )
                    .with_label(format!("{} given", dims.len())),
                );
            }
            if which == "block" && !dims.iter().all(Int::is_static) {
                return self.diags.push(
                    Diagnostic::new("the block size must be static", p.span)
                        .with_help("thread layouts are static; use block(size(tC))"),
                );
            }
            // A static extent below 1 launches nothing (the driver refuses a
            // grid or block of 0; a negative one wraps), and CUDA's grids
            // and blocks have limits per dimension.
            let (unit, max, help) = match which {
                "grid" => (
                    "block",
                    GRID_MAX,
                    "a grid's size is usually ceil_div(extent, tile), at least 1 for any extent",
                ),
                "block" => (
                    "thread",
                    BLOCK_MAX,
                    "a block holds at most 1024 threads, at most 64 of them along z: use a smaller thread layout",
                ),
                _ => (
                    "block",
                    [8; 3],
                    "e.g. cluster(2, 1): two blocks next to each other in x",
                ),
            };
            let bad = dims.iter().zip(args).enumerate().find_map(|(i, (d, a))| {
                d.as_static()
                    .filter(|&n| n < 1 || n > max[i])
                    .map(|n| (i, n, a.span))
            });
            if which != "min_blocks"
                && let Some((i, n, at)) = bad
            {
                let msg = match n < 1 {
                    true => format!("a {which} needs at least 1 {unit} in each dimension, not {n}"),
                    false => format!(
                        "a {which} has at most {} {unit}s along {}, not {n}",
                        max[i], AXES[i]
                    ),
                };
                return self.diags.push(Diagnostic::new(msg, at).with_help(help));
            }
            match which {
                "grid" => grid = Some(dims),
                "block" => block = Some(dims),
                "cluster" => match cluster_dims(&dims) {
                    Some(c) => {
                        cluster = c;
                        self.cluster = Some(p.span);
                    }
                    None => {
                        return self.diags.push(
                            Diagnostic::new("a cluster is static blocks along one grid dimension, 2 to 8 of them", p.span)
                                .with_help("e.g. cluster(2, 1): two blocks next to each other in x share the TMA boxes they both load"),
                        );
                    }
                },
                _ => match dims.as_slice() {
                    [Int::Static(n)] if (1..=32).contains(n) => min_blocks = Some(*n),
                    [Int::Static(n)] => {
                        return self.diags.push(
                            Diagnostic::new(format!("min_blocks({n}): a multiprocessor holds 1 to 32 blocks"), p.span)
                                .with_label(format!("{n} is out of that range"))
                                .with_help("e.g. min_blocks(2): registers are then limited so that two blocks fit"),
                        );
                    }
                    _ => {
                        return self.diags.push(
                            Diagnostic::new("min_blocks takes one static count of blocks per multiprocessor", p.span)
                                .with_help("e.g. min_blocks(2): registers are then limited so that two blocks fit"),
                        );
                    }
                },
            }
        }
        match (grid, block) {
            (Some(grid), Some(block)) => {
                self.launch = Some((
                    Launch {
                        grid,
                        block,
                        min_blocks,
                        cluster,
                    },
                    span,
                ))
            }
            _ => self.diags.push(launch_help(span)),
        }
    }

    /// The block has as many threads as every thread layout used to partition.
    pub(super) fn check_threads(&mut self, l: &Launch, span: Span) {
        let block = l.block.iter().fold(Int::Static(1), |a, b| a.mul(b));
        let mut reported: Vec<&str> = Vec::new();
        let turns = self.turns;
        for u in &self.state.thread_uses {
            if reported.contains(&u.name.as_str()) {
                continue;
            }
            // Every group of `threads` takes the whole tensor: a
            // warpgroup's own tile in a pipeline's turns, nowhere else.
            let groups = u.by == super::ThreadsUsed::Groups;
            if groups && (u.threads.as_static() != Some(128) || turns.is_none()) {
                reported.push(&u.name);
                let mut d = Diagnostic::new(
                    format!(
                        "`{}` partitioned by thread.x % {} gives every group of {} threads the whole tensor",
                        u.name, u.threads, u.threads
                    ),
                    u.span,
                )
                .with_help("only a pipeline's turns give each warpgroup (128 threads) a tile of its own: partition by thread.x % 128 for them, by thread.x elsewhere");
                if let Some(t) = turns {
                    d = d.with_related(t, "the turns");
                }
                self.diags.push(d);
                continue;
            }
            let fits = match (u.by, u.threads.as_static(), block.as_static()) {
                // Under `if thread.x < t`, the first t threads alone.
                (super::ThreadsUsed::Whole, Some(t), _) if u.running == Some((0, t - 1)) => true,
                (super::ThreadsUsed::Whole, ..) => u.threads == block,
                (_, Some(t), Some(b)) => t > 0 && b % t == 0,
                _ => u.threads == block,
            };
            // One report per thread layout, at its first use.
            if !fits && !reported.contains(&u.name.as_str()) {
                reported.push(&u.name);
                self.diags.push(
                    Diagnostic::new(
                        format!(
                            "`{}` has {} threads but the block has {block}",
                            u.name, u.threads
                        ),
                        u.span,
                    )
                    .with_label(format!("partitions by {} threads", u.threads))
                    .with_related(span, format!("launches {block} threads a block"))
                    .with_help(match (turns, u.threads.as_static()) {
                        // In turns each warpgroup takes a tile of its own.
                        (Some(_), Some(128)) => "in a pipeline's turns each warpgroup partitions a tile of its own: partition by thread.x % 128, not thread.x".to_string(),
                        _ => format!(
                            "use block(size({})) or a thread layout of size {block}{}",
                            u.name,
                            match self.pipeline {
                                Some(_) => " (the pipeline adds its producer warpgroup to the block itself)",
                                None => "",
                            }
                        ),
                    }),
                );
            }
        }
        if let Some(b) = block.as_static()
            && b > 1024
        {
            self.diags.push(
                Diagnostic::new(format!("a block has at most 1024 threads, not {b}"), span)
                    .with_help("use a smaller thread layout"),
            );
        }
    }
}

/// A cluster's blocks per grid dimension: static, more than one along
/// one dimension at most (a multicast then reaches every block of the
/// cluster), at most 8 (the portable cluster size); all 1s is no cluster
/// (a `tune` value may ask for that).
fn cluster_dims(dims: &[Int]) -> Option<[i64; 3]> {
    let mut c = [1; 3];
    for (d, i) in dims.iter().enumerate() {
        c[d] = i.as_static()?;
    }
    let wide = c.iter().filter(|&&n| n != 1).count();
    (c.iter().all(|&n| n >= 1) && wide <= 1 && c.iter().product::<i64>() <= 8).then_some(c)
}

impl KernelChecker {
    /// `min_blocks(n)` where n blocks' shared memory fits a multiprocessor
    /// (228 KB on sm_90, 1 KB of it reserved a block): ptxas would limit
    /// every thread's registers for blocks that can never run beside each
    /// other, spilling for nothing.
    pub(super) fn check_blocks_fit(&mut self, used: Option<i64>) {
        const SM_SHARED_BYTES: i64 = 228 * 1024;
        const RESERVED_A_BLOCK: i64 = 1024;
        let (Some(used), Some((launch, span))) = (used, &self.launch) else {
            return;
        };
        let Some(n) = launch.min_blocks.filter(|&n| n >= 2) else {
            return;
        };
        let fit = SM_SHARED_BYTES / (used + RESERVED_A_BLOCK);
        if used > 0 && used <= super::SHARED_LIMIT_BYTES && fit < n {
            self.diags.push(
                Diagnostic::new(
                    format!("min_blocks({n}) asks for {n} blocks a multiprocessor, but only {} its shared memory", match fit {
                        1 => "one fits".to_string(),
                        f => format!("{f} fit"),
                    }),
                    *span,
                )
                .with_label(format!("a block takes {used} bytes of shared memory (and 1 KB the hardware reserves); a multiprocessor has 228 KB"))
                .with_help(format!("ask for min_blocks({fit}) or none, or use smaller tiles or fewer stages: ptxas limits every thread's registers for {n} blocks that cannot run at once")),
            );
        }
    }

    /// With `min_blocks(n)` (1 without), ptxas compiles the whole kernel
    /// for the registers n blocks leave a thread (a pipeline's `setmaxnreg` raises
    /// the consumers' allocation at run time, not that target), and a
    /// wgmma's accumulators must all be registers: where they and the
    /// addresses beside them cannot fit, the driver refuses the kernel at
    /// load (ptxas C7602, "insufficient registers"). Say so here. The
    /// margin is what ptxas asked beyond the accumulators on the H200
    /// (154 for 128: docs/performance.md, version 19).
    pub(super) fn check_register_budget(&mut self, l: &Launch, span: Span) {
        const BESIDE_ACCUMULATORS: i64 = 24;
        let Some((acc, at)) = self.state.wgmma_accumulators else {
            return;
        };
        // Without min_blocks, the launch bounds ask for one block.
        let n = l.min_blocks.unwrap_or(1);
        let block = l.block.iter().fold(Int::Static(1), |a, b| a.mul(b));
        let Some(block) = block.as_static() else {
            return;
        };
        let threads = block
            + if self.pipeline.is_some() {
                PRODUCER_THREADS
            } else {
                0
            };
        let budget = registers_at_launch(threads, n);
        if acc + BESIDE_ACCUMULATORS > budget {
            let asked = match (l.min_blocks, self.pipeline) {
                (Some(n), _) => format!("min_blocks({n})"),
                (None, Some(_)) => format!(
                    "a block of {threads} threads ({block} and the pipeline's producer warpgroup)"
                ),
                (None, None) => format!("a block of {threads} threads"),
            };
            let blocks = match n {
                1 => "one block".to_string(),
                n => format!("{n} blocks"),
            };
            self.diags.push(
                Diagnostic::new(
                    format!("{asked} leaves a thread {budget} registers, too few for this wgmma's {acc} accumulators and their addresses"),
                    at,
                )
                .with_related(span, format!("{blocks} of {threads} threads a multiprocessor"))
                .with_help("ptxas compiles the whole kernel for that budget and the accumulators cannot spill: ask for fewer blocks, or a narrower tile"),
            );
        }
    }
}

/// The parts a launch statement may name.
const LAUNCH_PARTS: [&str; 4] = ["grid", "block", "min_blocks", "cluster"];

fn launch_help(span: Span) -> Diagnostic {
    Diagnostic::new("a launch statement names the grid and the block", span)
        .with_help("write `launch grid(ceil_div(M, 128), ceil_div(N, 128)), block(size(tC));`")
}
