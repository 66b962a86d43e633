//! Launch planning: the checks that stand between a manifest, the extents a
//! caller gives, and a launch. Every failure is a [`RuntimeError`]; nothing
//! reaches the GPU unless every global access of every thread is inside its
//! buffer.

use crate::RuntimeError;
use crate::manifest::{Manifest, ParamKind};
use std::collections::HashMap;

/// Extents by name, e.g. parsed from `M=4096,N=4096,K=4096`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dims(pub Vec<(String, i64)>);

/// `M=4096,N=4096,K=4096`.
impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}

impl Dims {
    pub fn parse(s: &str) -> Result<Dims, RuntimeError> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, val) = part.split_once('=').ok_or_else(|| {
                RuntimeError::Usage(format!("`{part}` is not NAME=VALUE, e.g. M=4096"))
            })?;
            let n: i64 = val.trim().parse().map_err(|_| {
                RuntimeError::Usage(format!("`{val}` is not an integer (in {part})"))
            })?;
            v.push((k.trim().to_string(), n));
        }
        Ok(Dims(v))
    }

    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// A checked launch: grid and block sizes, extent values in ABI order, and
/// the number of elements each tensor parameter's buffer must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The variant that runs: the first whose conditions hold.
    pub variant: usize,
    /// Dynamic shared memory to request, in bytes.
    pub dynamic_shared: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub extents: Vec<i64>,
    /// Per parameter: `Some(elements)` for tensors, `None` for scalars.
    pub lens: Vec<Option<usize>>,
}

/// Plans a GPU launch: every check, the bounds of every global access included.
pub fn plan(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    let p = plan_sizes(m, dims)?;
    let values: HashMap<&str, i64> = m
        .extents
        .iter()
        .map(String::as_str)
        .zip(p.extents.iter().copied())
        .collect();
    check_bounds(m, &p, &values)?;
    Ok(p)
}

/// Plans without bounding the accesses ahead of time: for the CPU
/// executor, which checks every access as it happens and names the line.
pub fn plan_sizes(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    let mut extents = Vec::new();
    for e in &m.extents {
        let v = dims.get(e).ok_or_else(|| {
            RuntimeError::Usage(format!(
                "the kernel needs the extent {e}: pass --dims {e}=..."
            ))
        })?;
        if v < 1 {
            return Err(RuntimeError::Usage(format!(
                "extent {e} = {v}; extents are at least 1"
            )));
        }
        extents.push(v);
    }
    if let Some((k, _)) = dims.0.iter().find(|(k, _)| !m.extents.contains(k)) {
        return Err(RuntimeError::Usage(format!(
            "the kernel has no extent {k}; its extents are {}",
            m.extents.join(", ")
        )));
    }
    let values: HashMap<&str, i64> = m
        .extents
        .iter()
        .map(String::as_str)
        .zip(extents.iter().copied())
        .collect();
    let env = |n: &str| values.get(n).copied();
    let failing = |v: &crate::manifest::VariantSpec| {
        v.conditions
            .iter()
            .find(|c| c.fact.eval(&env) != Some(true))
            .cloned()
    };
    let variant = match m.variants.iter().position(|v| failing(v).is_none()) {
        Some(i) => i,
        None => {
            let c = m.variants.first().and_then(failing);
            let why = c.map_or("the manifest has no variant".to_string(), |c| {
                format!("{} does not hold ({})", c.fact, c.needed_by)
            });
            return Err(RuntimeError::Condition(format!("{why} for {dims}")));
        }
    };
    let dim3 = |v: &[tilec_layout::Int], what: &str| -> Result<[u32; 3], RuntimeError> {
        let mut out = [1u32; 3];
        for (i, x) in v.iter().enumerate().take(3) {
            let n = x.eval(&env).ok_or_else(|| {
                RuntimeError::Manifest(format!("{what} size {x} cannot be evaluated"))
            })?;
            out[i] = u32::try_from(n)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| RuntimeError::Condition(format!("{what} size {x} = {n}")))?;
        }
        Ok(out)
    };
    let grid = dim3(&m.grid, "grid")?;
    let block = dim3(&m.block, "block")?;
    let mut lens = Vec::new();
    for p in &m.params {
        lens.push(match &p.kind {
            ParamKind::Tensor { layout, .. } => {
                let n = layout
                    .cosize()
                    .eval(&env)
                    .ok_or_else(|| RuntimeError::Manifest(format!("cosize of {layout}")))?;
                Some(
                    usize::try_from(n).map_err(|_| {
                        RuntimeError::Condition(format!("{} has {n} elements", p.name))
                    })?,
                )
            }
            ParamKind::Scalar { .. } => None,
        });
    }
    let dynamic_shared = u32::try_from(m.dynamic_shared_bytes).map_err(|_| {
        RuntimeError::Manifest(format!(
            "dynamic shared memory of {} bytes",
            m.dynamic_shared_bytes
        ))
    })?;
    Ok(LaunchPlan {
        variant,
        dynamic_shared,
        grid,
        block,
        extents,
        lens,
    })
}

/// Every global access of every thread of every block, in every loop
/// iteration, is inside its parameter's buffer (interval arithmetic on the
/// symbolic indices, with the launch's actual sizes).
fn check_bounds(
    m: &Manifest,
    plan: &LaunchPlan,
    values: &HashMap<&str, i64>,
) -> Result<(), RuntimeError> {
    let extent = |n: &str| values.get(n).map(|&v| (v, v));
    let mut ranges: HashMap<&str, (i64, i64)> = HashMap::new();
    ranges.insert(
        "thread.x",
        (0, plan.block.iter().map(|&b| b as i64).product::<i64>() - 1),
    );
    for (i, name) in ["block.x", "block.y", "block.z"].iter().enumerate() {
        ranges.insert(name, (0, plan.grid[i] as i64 - 1));
    }
    let v = &m.variants[plan.variant];
    let mut empty_loops = Vec::new();
    for l in &v.loops {
        let eval = |x: &tilec_layout::Int| x.eval(&|n: &str| values.get(n).copied());
        let (Some(s), Some(e)) = (eval(&l.start), eval(&l.end)) else {
            return Err(RuntimeError::Manifest(format!("loop {} bounds", l.name)));
        };
        if e <= s {
            empty_loops.push(l.name.as_str());
            continue;
        }
        let r = ranges.entry(&l.name).or_insert((s, e - 1));
        *r = (r.0.min(s), r.1.max(e - 1));
    }
    for a in &v.accesses {
        let env = |n: &str| ranges.get(n).copied().or_else(|| extent(n));
        let mut names = Vec::new();
        a.index.names(&mut names);
        if names.iter().any(|n| empty_loops.contains(&n.as_str())) {
            continue; // inside a loop that does not run
        }
        let p = &m.params[a.param];
        let len = plan.lens[a.param].unwrap_or(0) as i64;
        match a.index.range(&env) {
            Some((lo, hi)) if lo >= 0 && hi < len => {}
            Some((lo, hi)) => {
                return Err(RuntimeError::Bounds(format!(
                    "{} would be accessed at {lo}..={hi}, but its buffer has {len} elements (index {})",
                    p.name, a.index
                )));
            }
            None => {
                return Err(RuntimeError::Bounds(format!(
                    "the index {} of {} cannot be bounded",
                    a.index, p.name
                )));
            }
        }
    }
    Ok(())
}
