//! What a run's outputs must be: the runtime's built-in reference (gemm,
//! copy, transpose, computed in f64), or a reference kernel of the same
//! file run on the CPU executor in f64 on the same inputs.
//!
//! In: every kernel of the file, compiled, and the one that runs. Out: its
//! expected outputs for a launch plan and inputs, as the runtime compares
//! them; none for a kernel that states no reference.

use crate::compile::Compiled;
use crate::run::execute_shown;
use tilec::exec;
use tilec::ir::{Space, for_each_atom};
use tilec_runtime::RuntimeError;
use tilec_runtime::plan::{Dims, LaunchPlan, plan_sizes};
use tilec_runtime::reference::{Arg, Expected, builtin};

/// The expected outputs of `c` on `args`, launched by `plan`.
pub fn expected(
    all: &[Compiled],
    c: &Compiled,
    plan: &LaunchPlan,
    args: &[Arg],
) -> Result<Vec<Expected>, RuntimeError> {
    let m = &c.manifest;
    let Some((r, name)) = m
        .reference
        .as_ref()
        .and_then(|r| Some((r, r.kernel.as_ref()?)))
    else {
        return builtin(m, plan, args);
    };
    let target = all.iter().find(|t| &t.kernel.name == name).ok_or_else(|| {
        RuntimeError::Usage(format!("the reference kernel {name} is not compiled"))
    })?;
    // The same extents: the reference takes the same tensors, declared alike.
    let dims = Dims(
        m.extents
            .iter()
            .cloned()
            .zip(plan.extents.iter().copied())
            .collect(),
    );
    let tplan = plan_sizes(&target.manifest, &dims)?;
    let targs: Vec<Arg> = r.operands.iter().map(|&o| args[o].clone()).collect();
    tilec_runtime::check_args(&target.manifest, &tplan, &targs)?;
    let mut tensors: Vec<Option<exec::Tensor>> = targs.iter().map(exec_tensor).collect();
    let scalars = targs
        .iter()
        .map(|a| if let Arg::Scalar(v) = a { *v } else { 0.0 })
        .collect();
    execute_shown(target, &tplan, scalars, &mut tensors, true).map_err(|e| {
        RuntimeError::Usage(format!(
            "the reference kernel {name} failed on the CPU executor: {} (run it alone to see where)",
            e.message
        ))
    })?;
    let mut written = vec![false; tensors.len()];
    for l in &target.lowered {
        for_each_atom(&l.ir.body, &mut |i| {
            if let Some((a, _)) = i.written()
                && let Space::Global(p) = a.space
            {
                written[p] = true;
            }
        });
    }
    Ok(tensors
        .into_iter()
        .enumerate()
        .filter(|&(p, _)| written[p])
        .filter_map(|(p, t)| {
            let t = t?;
            Some(Expected {
                output: r.operands[p],
                offsets: (0..t.data.len()).collect(),
                values: t.data,
            })
        })
        .collect())
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
