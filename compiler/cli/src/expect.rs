//! What a run's outputs must be: the runtime's built-in reference (gemm,
//! copy, transpose, computed in f64), or a reference kernel of the same
//! file run on the CPU executor in f64 on the same inputs (on a sample of
//! its blocks when all of them would take too long).
//!
//! In: every kernel of the file, compiled, and the one that runs. Out: its
//! expected outputs for a launch plan and inputs, as the runtime compares
//! them; none for a kernel that states no reference.

use crate::compile::Compiled;
use std::time::{Duration, Instant};
use tilec::exec;
use tilec_runtime::RuntimeError;
use tilec_runtime::plan::{Dims, LaunchPlan, plan_reference};
use tilec_runtime::reference::{Arg, Expected, builtin};

/// Why a run's expected outputs could not be made.
pub enum ReferenceFailure {
    Runtime(RuntimeError),
    /// The reference kernel's own bug, which the executor found (its span
    /// in the same file).
    Kernel(exec::ExecError),
}

impl From<RuntimeError> for ReferenceFailure {
    fn from(e: RuntimeError) -> Self {
        ReferenceFailure::Runtime(e)
    }
}

/// The expected outputs of `c` on `args`, launched by `plan`, as the
/// runtime's GPU runs take them: a reference kernel's bug as a message.
pub fn expected(
    all: &[Compiled],
    c: &Compiled,
    plan: &LaunchPlan,
    args: &[Arg],
) -> Result<Vec<Expected>, RuntimeError> {
    reference_outputs(all, c, plan, args).map_err(|f| match f {
        ReferenceFailure::Runtime(e) => e,
        ReferenceFailure::Kernel(e) => RuntimeError::Usage(format!(
            "{} (run it on the CPU executor to see where)",
            e.message
        )),
    })
}

/// [`expected`], a reference kernel's bug with its span (the CPU run
/// reports it at its line).
pub fn reference_outputs(
    all: &[Compiled],
    c: &Compiled,
    plan: &LaunchPlan,
    args: &[Arg],
) -> Result<Vec<Expected>, ReferenceFailure> {
    let m = &c.manifest;
    let Some((r, name)) = m
        .reference
        .as_ref()
        .and_then(|r| Some((r, r.kernel.as_ref()?)))
    else {
        return Ok(builtin(m, plan, args)?);
    };
    let target = all.iter().find(|t| &t.kernel.name == name).ok_or_else(|| {
        RuntimeError::Usage(format!("the reference kernel {name} is not compiled"))
    })?;
    // The same extents: the reference takes the same tensors, declared
    // alike; those of the kernel's it does not name (a `W: extent` it has
    // no use for, `sm_count`) it is not given.
    let dims = Dims(
        m.extents
            .iter()
            .cloned()
            .zip(plan.extents.iter().copied())
            .filter(|(e, _)| target.manifest.extents.contains(e))
            .collect(),
    );
    let tplan = plan_reference(&target.manifest, &dims)?;
    let targs: Vec<Arg> = r.operands.iter().map(|&o| args[o].clone()).collect();
    tilec_runtime::check_args(&target.manifest, &tplan, &targs)?;
    let mut tensors: Vec<Option<exec::Tensor>> = targs.iter().map(exec_tensor).collect();
    let scalars = targs
        .iter()
        .map(|a| if let Arg::Scalar(v) = a { *v } else { 0.0 })
        .collect();
    let (written, sample) = crate::run::on_copies(&tplan, &mut tensors, |t| {
        run_sampled(target, &tplan, scalars, t)
    })
    .map_err(|mut e| {
        e.message = format!("the reference kernel {name}: {}", e.message);
        ReferenceFailure::Kernel(e)
    })?;
    // The tensors the reference may write (in any variant, as the
    // manifest says) are its outputs, whole: the elements it wrote to its
    // values, and where every block ran, the elements it left alone to
    // stay as given, compared apart (in one norm, a few wrong elements
    // among many untouched ones would be diluted). So a kernel that writes
    // those, or a reference that at these extents writes nothing, fails.
    // Where only a sample ran, the elements the sample wrote.
    let may_write = |p: usize| {
        matches!(
            target.manifest.params.get(p).map(|q| &q.kind),
            Some(tilec_runtime::manifest::ParamKind::Tensor { written: true, .. })
        )
    };
    let mut out = Vec::new();
    for (p, (t, offsets)) in tensors.into_iter().zip(written).enumerate() {
        let Some(t) = t.filter(|_| may_write(p)) else {
            continue;
        };
        let left_alone: Vec<usize> = match sample {
            Some(_) => Vec::new(),
            None => {
                let mut wrote = vec![false; t.data.len()];
                offsets.iter().for_each(|&i| wrote[i] = true);
                (0..t.data.len()).filter(|&i| !wrote[i]).collect()
            }
        };
        for offsets in [offsets, left_alone] {
            if offsets.is_empty() {
                continue;
            }
            let e = Expected {
                output: r.operands[p],
                values: offsets.iter().map(|&i| t.data[i]).collect(),
                offsets,
                sample,
            };
            out.push(e.in_memory_order());
        }
    }
    Ok(out)
}

/// The reference kernel's blocks, in f64, for this long at most once the
/// first batch has run: a launch too large for that (a GPU-sized GEMM of
/// one thread per output) is checked on the outputs of a sample of its
/// blocks, spread over the grid.
const REFERENCE_TIME: Duration = Duration::from_secs(10);

/// Runs the blocks of `plan` in batches of doubling size (within the time
/// left), each batch a launch of its own (a reference kernel's blocks are
/// independent; two writing one element are caught when it runs alone), in
/// an order that takes the grids' corners first and then visits them
/// evenly ([`visit_order`]), until all ran or the
/// time is up; returns what they wrote and, if not all ran, how many of how
/// many.
fn run_sampled(
    c: &Compiled,
    plan: &LaunchPlan,
    scalars: Vec<f64>,
    tensors: &mut [Option<exec::Tensor>],
) -> Result<(exec::Written, Option<tilec_runtime::Sample>), exec::ExecError> {
    let sizes: Vec<u64> = plan
        .launches
        .iter()
        .map(|l| l.grid.iter().map(|&g| g as u64).product())
        .collect();
    let total: u64 = sizes.iter().sum();
    let grids: Vec<[u64; 3]> = plan
        .launches
        .iter()
        .map(|l| l.grid.map(u64::from))
        .collect();
    let mut order = visit_order(&grids);
    let block = |mut k: u64| -> exec::Part {
        let mut part = 0;
        while k >= sizes[part] {
            k -= sizes[part];
            part += 1;
        }
        let l = &plan.launches[part];
        let [gx, gy, _] = l.grid.map(|g| g as u64);
        let at = [k % gx, k / gx % gy, k / (gx * gy)];
        exec::Part {
            ir: &c.lowered[l.variant].ir,
            grid: [1, 1, 1],
            offset: [0, 1, 2].map(|d| l.offset[d] + at[d] as u32),
        }
    };
    let start = Instant::now();
    let mut written: exec::Written = vec![Vec::new(); tensors.len()];
    let (mut done, mut batch) = (0u64, 256u64);
    while done < total && (done == 0 || start.elapsed() < REFERENCE_TIME) {
        // No more than the time left allows, at the rate so far.
        if done > 0 {
            let per_block = start.elapsed().as_secs_f64() / done as f64;
            let left = REFERENCE_TIME.saturating_sub(start.elapsed()).as_secs_f64();
            batch = batch.min((left / per_block) as u64).max(1);
        }
        let n = batch.min(total - done);
        let launch = exec::Launch {
            parts: order.by_ref().take(n as usize).map(block).collect(),
            extents: plan.extents.clone(),
            scalars: scalars.clone(),
            blocks_done: None,
            stop: None,
            exact: true,
        };
        for (all, new) in written.iter_mut().zip(exec::execute(&launch, tensors)?) {
            all.extend(new);
        }
        done += n;
        batch *= 2;
    }
    for w in &mut written {
        w.sort_unstable();
        w.dedup();
    }
    let sample = tilec_runtime::Sample {
        ran: done,
        of: total,
        unit: "blocks",
    };
    Ok((written, (done < total).then_some(sample)))
}

/// The order the reference's blocks run in, as indices into the launches'
/// grids one after the other: the corner blocks of each grid first (the
/// last row and column of blocks, where a kernel's edge handling goes
/// wrong: a sample that missed them passed a kernel that never wrote the
/// last column), then block `(i * stride) % total` for i = 0, 1, ...: a
/// stride near total / golden ratio, coprime with total, visits every
/// block once and spreads any prefix over the grid.
fn visit_order(grids: &[[u64; 3]]) -> impl Iterator<Item = u64> {
    let sizes: Vec<u64> = grids.iter().map(|g| g.iter().product()).collect();
    let total: u64 = sizes.iter().sum();
    let mut stride = ((total as f64 * 0.618_033_988_75) as u64).max(1);
    while gcd(stride, total) != 1 {
        stride += 1;
    }
    let mut corners: Vec<u64> = Vec::new();
    let mut base = 0;
    for (&[gx, gy, gz], &size) in grids.iter().zip(&sizes) {
        for z in [0, gz.saturating_sub(1)] {
            for y in [0, gy.saturating_sub(1)] {
                for x in [0, gx.saturating_sub(1)] {
                    let k = base + x + gx * (y + gy * z);
                    if k < base + size && !corners.contains(&k) {
                        corners.push(k);
                    }
                }
            }
        }
        base += size;
    }
    let first = corners.clone();
    first.into_iter().chain(
        (0..total)
            .map(move |i| (i as u128 * stride as u128 % total as u128) as u64)
            .filter(move |k| !corners.contains(k)),
    )
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A host tensor as the executor takes it.
pub fn exec_tensor(a: &Arg) -> Option<exec::Tensor> {
    match a {
        Arg::Tensor(t) => Some(exec::Tensor {
            elem: t.elem(),
            data: (0..t.len()).map(|i| t.get(i)).collect(),
        }),
        Arg::Scalar(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::visit_order;

    /// The corners of each grid come first (the last row and column of
    /// blocks too), then every other block once.
    #[test]
    fn the_reference_s_corner_blocks_run_first() {
        let grids = [[10, 20001, 1], [3, 1, 1]];
        let order: Vec<u64> = visit_order(&grids).collect();
        let (gx, gy) = (10, 20001);
        let first = [0, gx - 1, gx * (gy - 1), gx * gy - 1, gx * gy, gx * gy + 2];
        assert_eq!(order[..6], first);
        let mut all = order.clone();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), order.len());
        assert_eq!(all, (0..gx * gy + 3).collect::<Vec<u64>>());
    }
}
