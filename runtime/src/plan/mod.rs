//! Launch planning: the checks that stand between a manifest, the extents a
//! caller gives, and a launch. Every failure is a [`RuntimeError`]; nothing
//! reaches the GPU unless every global access of every thread is inside its
//! buffer.

mod blocks;
mod bounds;
mod copies;
mod dims;
mod overlap;
mod tensors;
mod waves;

use crate::RuntimeError;
use crate::manifest::{BlockReduce, LaunchCondition, Manifest, ReduceGroups, VariantSpec};
pub use crate::staging::Staging;
use crate::tma::map_plan;
pub use crate::tma::{MapPlan, MapSource};
use blocks::launches;
use bounds::{check_bounds, fits_whole_grid, fitting, quotients_proved};
use copies::copies;
pub use dims::{Dims, assignments};
use std::collections::HashMap;
use std::sync::OnceLock;
use tensors::tensor_lens;
use tilec_layout::{AXES, BLOCK_MAX, GRID_MAX, SM_COUNT};
use waves::{one_launch, split_shared_wave};

/// The multiprocessors of the GPU opened in this process, for kernels that
/// name `sm_count` (set by [`crate::gpu::Gpu::open`]).
pub static DEVICE_SM_COUNT: OnceLock<i64> = OnceLock::new();

/// `sm_count` where `--dims` does not give it: the GPU's, or the H200's 132
/// for the CPU executor.
fn sm_count() -> i64 {
    DEVICE_SM_COUNT.get().copied().unwrap_or(132)
}

/// A checked launch: the entry points that run and on which blocks, grid
/// and block sizes, extent values in ABI order, and the number of elements
/// each tensor parameter's buffer must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// In order: the first variant whose conditions hold, on the blocks
    /// its block conditions allow (all of them, or a box from block 0);
    /// then the next variant that runs any block, on the boxes left. For a
    /// GPU ([`plan_on_gpu`]), a small grid with edge boxes is one launch of
    /// that variant instead, unless its blocks share multiprocessors
    /// ([`waves`]).
    pub launches: Vec<Launch>,
    /// Where the entries were planned on parts of the grid and then made
    /// one launch of the entry for any block (a small grid,
    /// [`waves::one_launch`]): the multiprocessors that counted.
    pub one_launch_on: Option<i64>,
    /// The launches that one launch replaced, if any: their entries'
    /// proofs are said beside the waves ([`LaunchPlan::passed_over`]).
    pub merged: Vec<Launch>,
    /// Dynamic shared memory to request, in bytes.
    pub dynamic_shared: u32,
    /// The whole grid, which the launches cover exactly once.
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The threads of a block that hold partials of a `reduce` across
    /// blocks: the block's, less a pipeline's producer warpgroup (which
    /// has left by then).
    pub reducing_threads: u32,
    /// A `reduce` across parts: its bounds `[groups, most]` at these
    /// extents, what its workspace and counters are sized by.
    pub reduce_parts: Option<[u64; 2]>,
    /// The entries' run-time integers in ABI order
    /// ([`Manifest::run_time_names`]): the extents, then the stride symbols.
    pub extents: Vec<i64>,
    /// Per parameter: `Some(elements)` for tensors, `None` for scalars.
    pub lens: Vec<Option<usize>>,
    /// Per launch, the tensor maps its entry takes, evaluated.
    pub maps: Vec<Vec<MapPlan>>,
    /// The aligned copies made before every launch: of read-only tensors
    /// the kernel reads in their place (their stride symbols bound to the
    /// copies' in `extents`), and of tensors whose rows TMA cannot read
    /// in place (maps name those by index).
    pub staged: Vec<Staging>,
    /// Entries whose conditions hold but whose launch was not proved in
    /// bounds here, passed over for a later one: each with the proof's
    /// refusal.
    pub unproved: Vec<(usize, String)>,
}

impl LaunchPlan {
    /// For a kernel with a `reduce` across blocks: the workspace's f32
    /// (a thread's values for every reducing thread of every block of the
    /// grid, or across parts of `groups * most` partials, then of each
    /// group's runs' sums) and the counters' u32 (per group, one and one
    /// per run). Atomically, a group's one sum is its whole workspace.
    pub fn block_reduce_sizes(&self, r: Option<&BlockReduce>) -> Option<(usize, usize)> {
        let r = r?;
        let blocks: usize = self.grid.iter().map(|&g| g as usize).product();
        // Partials, groups, and how far apart a group's parts lie.
        let (partials, groups, stride) = match (&r.groups, self.reduce_parts) {
            (ReduceGroups::Parts(_), Some([groups, most])) => {
                let (g, m) = (usize::try_from(groups).ok(), usize::try_from(most).ok());
                (
                    g.zip(m).and_then(|(g, m)| g.checked_mul(m)),
                    g.unwrap_or(usize::MAX),
                    m.unwrap_or(usize::MAX),
                )
            }
            (ReduceGroups::Dim(d), _) => {
                let along = self.grid.get(*d as usize).map_or(1, |&g| g as usize).max(1);
                (Some(blocks), blocks / along, along)
            }
            // Planned without its bounds: no workspace can be right.
            (ReduceGroups::Parts(_), None) => (None, usize::MAX, usize::MAX),
        };
        // Each group's runs: a sum's row each after the group's partials,
        // and a counter each after the group's own.
        let runs = stride.div_ceil(usize::try_from(r.runs.max(1)).unwrap_or(1));
        let rows = match r.atomic {
            true => partials.map(|_| groups),
            false => groups
                .checked_mul(runs)
                .and_then(|n| n.checked_add(partials?)),
        };
        let counters = runs
            .checked_add(1)
            .and_then(|n| n.checked_mul(groups))
            .unwrap_or(usize::MAX);
        // Past usize the workspace cannot exist: usize::MAX, which no
        // allocation or memory check accepts, rather than a wrapped size.
        let values = rows
            .and_then(|p| p.checked_mul(self.reducing_threads as usize))
            .and_then(|n| n.checked_mul(r.values.max(0) as usize))
            .unwrap_or(usize::MAX);
        Some((values, counters))
    }

    /// The index in [`LaunchPlan::staged`] of the copy the kernel reads in
    /// place of tensor parameter `p`, if it reads one.
    pub fn whole_copy(&self, p: usize) -> Option<usize> {
        whole_copy(&self.staged, p)
    }

    /// The entry points that run, each once, in launch order (`sgemm` or
    /// `sgemm + sgemm_guarded`), the values of the kernel's tunables
    /// (`[splits=16]`), and the tensors read through aligned copies (by
    /// the kernel, or by TMA alone), if any.
    pub fn entries(&self, m: &Manifest) -> String {
        let names = distinct(
            self.launches
                .iter()
                .map(|l| m.variants[l.variant].entry.as_str()),
        );
        names.join(" + ") + &self.notes(m)
    }

    /// The entries tried before every one that runs that cannot run at
    /// these extents, each with why, in the caller's terms: the first
    /// launch condition that fails, or its quotients in 32 bits that may
    /// pass them. Why a faster entry does not run.
    pub fn passed_over<'a>(&self, m: &'a Manifest) -> Vec<(&'a str, String)> {
        let values = bound(m, &self.extents);
        let first = self.launches.iter().map(|l| l.variant).min().unwrap_or(0);
        let threads = self.block.iter().map(|&b| b as i64).product();
        // Why an entry that could run does not, where the plan made one
        // launch of the entry for any block.
        let merged = self.one_launch_on.map(|n| {
            let blocks: u64 = self.grid.iter().map(|&g| g as u64).product();
            format!(
                "{blocks} blocks are at most {} waves on {n} multiprocessors: one launch of the entry for any block costs less than the full blocks and the edges apart",
                waves::ONE_LAUNCH_WAVES
            )
        });
        let unproved = |i: usize| self.unproved.iter().find(|u| u.0 == i).map(|u| &u.1);
        let why = |(i, v): (usize, &VariantSpec)| match failing(v, &values) {
            None if let Some(e) = unproved(i) => Some(format!(
                "its accesses are not proved in bounds here ({e}); a later entry tests them, reading 0 and writing nothing past the tensor's end"
            )),
            Some(c) => Some(format!(
                "{} does not hold ({})",
                self.in_callers_terms(m, &c.fact.to_string()),
                c.needed_by
            )),
            None if !fits_whole_grid(v, self.grid, threads, &values) => {
                Some("it divides in 32 bits, and its quotients' operands may pass them here".into())
            }
            None => merged.clone(),
        };
        // Those before the first that runs, and any that stepped aside
        // after it (a middle entry passed over for the edges).
        let launched = |i: usize| self.launches.iter().any(|l| l.variant == i);
        m.variants
            .iter()
            .enumerate()
            .filter(|&(i, _)| i < first || (!launched(i) && unproved(i).is_some()))
            .filter_map(|(i, v)| Some((v.entry.as_str(), why((i, v))?)))
            .collect()
    }

    /// `text` (a launch condition, say) with each stride symbol that holds
    /// the caller's stride here (not an aligned copy's pitch) written as
    /// the stride or extent it declares: `X.stride.0 % 4 == 0` of `X: (M,
    /// N):(N, 1)` reads `N % 4 == 0`.
    pub fn in_callers_terms(&self, m: &Manifest, text: &str) -> String {
        callers_terms(m, &self.extents, text)
    }

    /// [`LaunchPlan::entries`] less the entries' names: the tunables'
    /// values and the tensors read or written through aligned copies.
    pub fn notes(&self, m: &Manifest) -> String {
        let mut s = String::new();
        if !m.tunables.is_empty() {
            s += &format!(" [{}]", m.tuned());
        }
        let names = |written: bool, whole: bool| {
            distinct(
                self.staged
                    .iter()
                    .filter(|s| s.written == written && s.whole == whole)
                    .map(|s| m.params[s.param].name.as_str()),
            )
        };
        let (copied, read, written) = (names(false, true), names(false, false), names(true, false));
        if !copied.is_empty() {
            s += &format!(" (reads aligned copies of {})", copied.join(", "));
        }
        if !read.is_empty() {
            s += &format!(" (TMA reads an aligned copy of {})", read.join(", "));
        }
        if !written.is_empty() {
            s += &format!(
                " (TMA writes an aligned copy of {}, copied back)",
                written.join(", ")
            );
        }
        s
    }
}

/// Each name once, in order of first appearance.
fn distinct<'a>(all: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in all {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// One launch of an entry point: `grid` blocks from block `offset` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub variant: usize,
    pub grid: [u32; 3],
    pub offset: [u32; 3],
}

/// Plans a launch: every check, the bounds of every global access
/// included; the full-tile entry on the full blocks beside the guarded
/// one on the edges, whatever the grid's size.
pub fn plan(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    plan_checked(m, dims, None)
}

/// [`plan`] for a GPU of `sms` multiprocessors: a grid with edge blocks
/// and at most two blocks a multiprocessor is one launch of the entry for
/// any block, unless its blocks share multiprocessors ([`waves`]).
pub fn plan_on_gpu(m: &Manifest, dims: &Dims, sms: i64) -> Result<LaunchPlan, RuntimeError> {
    plan_checked(m, dims, Some(sms))
}

/// [`plan_on_gpu`] for the GPU opened in this process, or for an H200
/// (132 multiprocessors) without one: what a GPU's runtime would launch,
/// for the CPU executor's runs and `tilec check --dims` to prove too.
pub fn plan_for_gpu(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    plan_checked(m, dims, Some(sm_count()))
}

fn plan_checked(m: &Manifest, dims: &Dims, sms: Option<i64>) -> Result<LaunchPlan, RuntimeError> {
    let p = plan_sizes_for(m, dims, sms)?;
    prove(m, &p)?;
    Ok(p)
}

/// Every launch of `p` proved in bounds, as a GPU's runtime proves it
/// (nothing for a checked build, which bounds every access itself on the
/// device): for a plan made another way, such as the CPU executor's.
pub fn prove(m: &Manifest, p: &LaunchPlan) -> Result<(), RuntimeError> {
    let values = bound(m, &p.extents);
    quotients_proved(m, p, &values)?;
    if !m.checked {
        for l in &p.launches {
            launch_in_bounds(m, p, l, &values)?;
        }
    }
    Ok(())
}

/// `l`'s accesses bounded over its whole box of blocks.
fn launch_in_bounds(
    m: &Manifest,
    p: &LaunchPlan,
    l: &Launch,
    values: &HashMap<&str, i64>,
) -> Result<(), RuntimeError> {
    let whole: [(i64, i64); 3] =
        std::array::from_fn(|i| (l.offset[i] as i64, (l.offset[i] + l.grid[i]) as i64 - 1));
    check_bounds(m, p, l, &whole, values)
}

/// Plans without bounding the accesses ahead of time: for the CPU
/// executor, which checks every access as it happens and names the line.
pub fn plan_sizes(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    plan_sizes_for(m, dims, None)
}

/// [`plan_sizes`] for a reference kernel, which runs on the CPU executor
/// alone: CUDA's grid limits do not apply (`grid(M, N)` of a naive
/// reference may pass 65535 blocks along y where the kernel it checks
/// does not).
pub fn plan_reference(m: &Manifest, dims: &Dims) -> Result<LaunchPlan, RuntimeError> {
    plan_sizes_within(m, dims, None, false)
}

/// Plans for a GPU of `sms` multiprocessors, if given: a grid of at most
/// two blocks a multiprocessor that has edge blocks runs as one launch of
/// the entry for any block, unless its blocks share multiprocessors
/// ([`waves`]; a grid of full tiles stays one launch of the full-tile
/// entry).
pub fn plan_sizes_for(
    m: &Manifest,
    dims: &Dims,
    sms: Option<i64>,
) -> Result<LaunchPlan, RuntimeError> {
    plan_sizes_within(m, dims, sms, true)
}

/// [`plan_sizes_for`], refusing grids and blocks past CUDA's limits where
/// `cuda_limits` says so.
fn plan_sizes_within(
    m: &Manifest,
    dims: &Dims,
    sms: Option<i64>,
    cuda_limits: bool,
) -> Result<LaunchPlan, RuntimeError> {
    // `--dims sm_count=N` stands for the device's multiprocessors, in the
    // waves a plan counts as in a kernel that names it.
    let given = dims.get(SM_COUNT);
    if let Some(v) = given.filter(|v| !(1..tilec_layout::EXTENT_END).contains(v)) {
        return Err(RuntimeError::Usage(format!(
            "sm_count = {v}; a device has at least 1 multiprocessor (and fewer than 2^40)"
        )));
    }
    let sms = sms.map(|n| given.unwrap_or(n));
    let mut extents = Vec::new();
    for e in &m.extents {
        let v = dims
            .get(e)
            .or_else(|| (e == SM_COUNT).then(sm_count))
            .ok_or_else(|| {
                RuntimeError::Usage(format!(
                    "the kernel needs the extent {e}: pass --dims {e}=..."
                ))
            })?;
        if !(1..tilec_layout::EXTENT_END).contains(&v) {
            return Err(RuntimeError::Usage(format!(
                "extent {e} = {v}; extents are at least 1 and below 2^40"
            )));
        }
        extents.push(v);
    }
    // `sm_count` describes the device, which every kernel runs on.
    if let Some((k, _)) = dims
        .0
        .iter()
        .find(|(k, _)| !m.extents.contains(k) && k != SM_COUNT)
    {
        return Err(RuntimeError::Usage(
            match m.scalar_names().contains(&k.as_str()) {
                true => format!(
                    "{k} is a scalar parameter, not an extent: its value goes in --scalars {k}=VALUE"
                ),
                false if m.extents.is_empty() => format!(
                    "the kernel has no extents (its shapes are all static), and --dims gives {k}"
                ),
                false => format!(
                    "the kernel has no extent {k}; its extents are {}",
                    m.extents.join(", ")
                ),
            },
        ));
    }
    // Each stride symbol is its declared stride: the caller's buffers.
    let strides: Vec<i64> = {
        let bound = |n: &str| m.extents.iter().position(|e| e == n).map(|i| extents[i]);
        m.strides
            .iter()
            .map(|s| {
                s.declared.eval(&bound).ok_or_else(|| {
                    RuntimeError::Usage(format!("{} = {} overflows at {dims}", s.name, s.declared))
                })
            })
            .collect::<Result<_, _>>()?
    };
    extents.extend(strides);
    let declared = planned(
        m,
        dims,
        sms,
        cuda_limits,
        extents.clone(),
        Vec::new(),
        false,
    );
    // The entries that run on the caller's buffers as they are.
    let best = usable(m, &bound(m, &extents));
    let no_entry = best.is_empty();
    let Some((values, staged)) = copies(m, &extents, &best) else {
        // Where the kernel's conditions fail on the caller's buffers, say
        // that no copy could meet them either.
        let declared = declared.map_err(|e| match (e, no_entry && !m.strides.is_empty()) {
            (RuntimeError::Condition(c), true) => RuntimeError::Condition(format!(
                "{c}, and no aligned copy of the tensors meets it there (copies pad rows to 128 bytes, up to 2^40 bytes in all)"
            )),
            (e, _) => e,
        });
        return split_shared_wave(m, dims, sms, cuda_limits, declared, (extents, Vec::new()));
    };
    // The copies only where the entries that launch are better (on a
    // small grid the one entry for any block may run either way).
    let copied = planned(
        m,
        dims,
        sms,
        cuda_limits,
        values.clone(),
        staged.clone(),
        false,
    );
    let launched = |p: &LaunchPlan| p.launches.iter().map(|l| l.variant).collect::<Vec<_>>();
    // Both refused: where no entry runs on the caller's buffers as they
    // are, the copies' refusal (a grid, a size) is the one that holds, since
    // the copies exist to meet the entries' conditions.
    let take_copies = match (&declared, &copied) {
        (Ok(d), Ok(c)) => launched(c) < launched(d),
        (Err(_), Ok(_)) => true,
        (Err(_), Err(_)) => no_entry,
        (Ok(_), Err(_)) => false,
    };
    match take_copies {
        true => split_shared_wave(m, dims, sms, cuda_limits, copied, (values, staged)),
        false => split_shared_wave(m, dims, sms, cuda_limits, declared, (extents, Vec::new())),
    }
}

/// `text` with each stride symbol that holds its declared value at
/// `extents` written as that value (`A.stride.1 % 4 == 0` as `M % 4 == 0`).
fn callers_terms(m: &Manifest, extents: &[i64], text: &str) -> String {
    let values = bound(m, extents);
    let env = |n: &str| values.get(n).copied();
    let mut strides: Vec<&crate::manifest::StrideSpec> = m
        .strides
        .iter()
        .filter(|s| {
            s.declared
                .eval(&env)
                .is_some_and(|v| env(&s.name) == Some(v))
        })
        .collect();
    // `X.stride.10` before `X.stride.1`.
    strides.sort_by_key(|s| std::cmp::Reverse(s.name.len()));
    strides.into_iter().fold(text.to_string(), |t, s| {
        let declared = s.declared.to_string();
        let plain = declared
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
        t.replace(
            &s.name,
            &if plain {
                declared
            } else {
                format!("({declared})")
            },
        )
    })
}

/// [`plan_sizes_for`] with the run-time integers `extents` bound and the
/// aligned copies `staged` (those the kernel reads in place of tensors).
/// The plan of the first entries whose conditions hold at `extents`
/// ([`planned_among`]); an entry whose launch is not proved in bounds
/// there steps aside for a later one (a tile coordinate a spare block
/// takes past the tensor, which only the guarded entry tests), and says so
/// in [`LaunchPlan::unproved`]. The entry for any block never steps aside:
/// a GPU's plan proves it again ([`prove`]) and refuses it there; the CPU
/// executor checks its every access as it runs. A proof that gives up
/// (its budget of regions) steps aside too: the later entry runs, slower.
fn planned(
    m: &Manifest,
    dims: &Dims,
    sms: Option<i64>,
    cuda_limits: bool,
    extents: Vec<i64>,
    staged: Vec<Staging>,
    shared_waves_split: bool,
) -> Result<LaunchPlan, RuntimeError> {
    let mut unproved: Vec<(usize, String)> = Vec::new();
    let last = m.variants.len().saturating_sub(1);
    loop {
        let excluded: Vec<usize> = unproved.iter().map(|u| u.0).collect();
        let inputs = (extents.clone(), staged.clone());
        let mut p = planned_among(
            m,
            dims,
            sms,
            cuda_limits,
            inputs,
            shared_waves_split,
            &excluded,
        )?;
        // A --checked build's entries run unproved, and stop at an
        // access outside.
        if m.checked {
            return Ok(p);
        }
        let values = bound(m, &p.extents);
        let failed = p.launches.iter().find_map(|l| {
            let e = launch_in_bounds(m, &p, l, &values).err()?;
            Some((l.variant, e))
        });
        match failed {
            Some((v, RuntimeError::Bounds(e) | RuntimeError::PastAMode(e))) if v != last => {
                unproved.push((v, e))
            }
            _ => {
                // An entry one launch replaced that would not have been
                // proved either: that, not the waves, is what a user
                // needs to hear (an index past a tensor's end, whose
                // writes the entry for any block skips).
                for l in p.merged.iter().filter(|l| l.variant != last) {
                    if let Err(RuntimeError::Bounds(e) | RuntimeError::PastAMode(e)) =
                        launch_in_bounds(m, &p, l, &values)
                        && !unproved.iter().any(|u| u.0 == l.variant)
                    {
                        unproved.push((l.variant, e));
                    }
                }
                p.unproved = unproved;
                return Ok(p);
            }
        }
    }
}

/// The plan of the first entries whose conditions hold at `extents`,
/// those in `excluded` left out: on the blocks each may run, the full and
/// the edge boxes, their grids, tensor maps and sizes.
fn planned_among(
    m: &Manifest,
    dims: &Dims,
    sms: Option<i64>,
    cuda_limits: bool,
    (extents, mut staged): (Vec<i64>, Vec<Staging>),
    shared_waves_split: bool,
    excluded: &[usize],
) -> Result<LaunchPlan, RuntimeError> {
    let values = bound(m, &extents);
    let env = |n: &str| values.get(n).copied();
    let lens = tensor_lens(m, &env, dims)?;
    let mut usable = usable(m, &values);
    usable.retain(|v| !excluded.contains(v));
    if usable.is_empty() {
        // The entry for any block is the last: what it lacks is what keeps
        // every entry off (a full-tile entry lacks more).
        let c = m.variants.last().and_then(|v| failing(v, &values));
        let why = c.map_or("the manifest has no variant".to_string(), |c| {
            let fact = callers_terms(m, &extents, &c.fact.to_string());
            format!("{fact} does not hold ({})", c.needed_by)
        });
        return Err(RuntimeError::Condition(format!("{why} for {dims}")));
    }
    let dim3 = |v: &[tilec_layout::Int], what: &str| -> Result<[u32; 3], RuntimeError> {
        let mut out = [1u32; 3];
        for (i, x) in v.iter().enumerate().take(3) {
            // Every name is bound (the manifest was validated): what fails
            // to evaluate overflows 64 bits at these extents.
            let n = x.eval(&env).ok_or_else(|| {
                RuntimeError::Condition(format!("{what} size {x} does not fit 64 bits for {dims}"))
            })?;
            out[i] = u32::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
                let (unit, max) = match what {
                    "grid" => ("blocks", GRID_MAX[i]),
                    _ => ("threads", BLOCK_MAX[i]),
                };
                RuntimeError::Condition(match n < 1 {
                    true => format!(
                        "{} launches a {what} of {n} {unit} along {} ({x}); a launch takes at least 1 (for {dims})",
                        m.kernel, AXES[i]
                    ),
                    false => format!(
                        "{} launches a {what} of {n} {unit} along {} ({x}); CUDA takes at most {max} (for {dims})",
                        m.kernel, AXES[i]
                    ),
                })
            })?;
        }
        Ok(out)
    };
    let grid = dim3(&m.grid, "grid")?;
    let block = dim3(&m.block, "block")?;
    // An entry whose quotients in 32 bits would pass them on some block
    // steps aside for a later one (the last divides in 64 bits).
    let threads = block.iter().map(|&b| b as i64).product();
    let fit = fitting(m, &usable, grid, threads, &values);
    if fit.is_empty() {
        return Err(RuntimeError::Condition(format!(
            "every entry of {} that could run divides in 32 bits, and its quotients' operands pass them for {dims}",
            m.kernel
        )));
    }
    let mut launches = launches(m, &fit, grid, &env)?;
    let blocks: u128 = grid.iter().map(|&g| g as u128).product();
    let mut one_launch_on = None;
    let mut merged = Vec::new();
    if let Some(last) = launches.last().copied()
        && launches.len() > 1
        && let Some(n) = sms.filter(|&n| one_launch(m, blocks, n, block, shared_waves_split))
    {
        // The edges' entry, which runs any block.
        merged = std::mem::take(&mut launches);
        launches = vec![Launch {
            variant: last.variant,
            grid,
            offset: [0; 3],
        }];
        one_launch_on = Some(n);
    }
    // A cluster entry runs on whole clusters: past the grid's end, pad
    // blocks (of an entry for any block) take part in the cluster's
    // loads and skip what follows the pipeline (the compiler's test of
    // the block index against the grid's extent; its verifier keeps every
    // global write and reduce behind it); the bound check below covers
    // their accesses too. An entry compiled for a grid of whole clusters
    // has no such test, and is refused where its launch needs pad blocks.
    for l in &mut launches {
        let v = &m.variants[l.variant];
        for ((g, o), c) in l.grid.iter_mut().zip(l.offset).zip(v.cluster) {
            if !v.pads && (*g % c != 0 || o % c != 0) {
                return Err(RuntimeError::Condition(format!(
                    "{} runs on whole clusters of {:?} blocks with no pad blocks (it writes global memory in its pipeline), and at {dims} a launch of it covers {g} blocks from block {o} along a dimension",
                    v.entry, v.cluster
                )));
            }
            *g = g.div_ceil(c) * c;
        }
    }
    // A launch past CUDA's largest grid or block is refused here, by name,
    // rather than by the driver; on the CPU executor too, so that a kernel
    // that runs there runs on a GPU. A reference kernel runs on the
    // executor alone and has no such limit.
    if cuda_limits {
        let sizes = launches
            .iter()
            .map(|l| (l.grid, "grid", "blocks", GRID_MAX));
        for (v, what, unit, max) in sizes.chain([(block, "block", "threads", BLOCK_MAX)]) {
            if let Some(i) = (0..3).find(|&i| v[i] as i64 > max[i]) {
                return Err(RuntimeError::Condition(format!(
                    "{} launches a {what} of {} {unit} along {}; CUDA takes at most {} (for {dims})",
                    m.kernel, v[i], AXES[i], max[i]
                )));
            }
        }
    }
    let mut maps = Vec::new();
    for l in &launches {
        let mut these = Vec::new();
        for t in &m.variants[l.variant].tensor_maps {
            let len = reach(&lens, &staged, t.param);
            these.push(map_plan(m, t, &env, len, &mut staged)?);
        }
        maps.push(these);
    }
    let dynamic_shared = u32::try_from(m.dynamic_shared_bytes).map_err(|_| {
        RuntimeError::Manifest(format!(
            "dynamic shared memory of {} bytes",
            m.dynamic_shared_bytes
        ))
    })?;
    let threads: i64 = block.iter().map(|&b| b as i64).product();
    let reducing_threads = u32::try_from(threads - m.producer_threads).map_err(|_| {
        RuntimeError::Manifest(format!(
            "a producer of {} threads in a block of {threads}",
            m.producer_threads
        ))
    })?;
    let reduce_parts = match m.block_reduce.as_ref().map(|r| &r.groups) {
        None | Some(ReduceGroups::Dim(_)) => None,
        Some(ReduceGroups::Parts(bounds)) => {
            let mut out = [0u64; 2];
            for (o, x) in out.iter_mut().zip(bounds) {
                let n = x.eval(&env).ok_or_else(|| {
                    RuntimeError::Condition(format!(
                        "the bound {x} of a reduce across parts does not fit 64 bits for {dims}"
                    ))
                })?;
                // At most 2^32 - 1: the kernel's arrival counters are u32.
                *o = u64::try_from(n)
                    .ok()
                    .filter(|&n| (1..=u32::MAX as u64).contains(&n))
                    .ok_or_else(|| {
                        RuntimeError::Condition(format!(
                            "the bound {x} of a reduce across parts is {n} for {dims}: 1 to 2^32 - 1"
                        ))
                    })?;
            }
            Some(out)
        }
    };
    Ok(LaunchPlan {
        launches,
        one_launch_on,
        merged,
        dynamic_shared,
        grid,
        block,
        reducing_threads,
        reduce_parts,
        extents,
        lens,
        maps,
        staged,
        unproved: Vec::new(),
    })
}

/// The variants whose launch conditions hold at `values`, in order.
fn usable(m: &Manifest, values: &HashMap<&str, i64>) -> Vec<usize> {
    (0..m.variants.len())
        .filter(|&i| failing(&m.variants[i], values).is_none())
        .collect()
}

/// The first launch condition of `v` that does not hold at `values`.
fn failing<'a>(v: &'a VariantSpec, values: &HashMap<&str, i64>) -> Option<&'a LaunchCondition> {
    let env = |n: &str| values.get(n).copied();
    v.conditions
        .iter()
        .find(|c| c.fact.eval(&env) != Some(true))
}

/// The manifest's run-time names (extents, then stride symbols) bound to
/// `values`, in that order.
fn bound<'a>(m: &'a Manifest, values: &[i64]) -> HashMap<&'a str, i64> {
    m.run_time_names()
        .map(String::as_str)
        .zip(values.iter().copied())
        .collect()
}

/// Elements the kernel may address in parameter `p`'s buffer: its aligned
/// copy's where it reads one in place of the tensor.
fn reach(lens: &[Option<usize>], staged: &[Staging], p: usize) -> usize {
    match whole_copy(staged, p).map(|i| &staged[i]) {
        Some(s) => (s.bytes() / s.elem_bytes) as usize,
        None => lens.get(p).copied().flatten().unwrap_or(0),
    }
}

/// The index in `staged` of the copy the kernel reads in place of tensor
/// parameter `p`, if any.
fn whole_copy(staged: &[Staging], p: usize) -> Option<usize> {
    staged.iter().position(|s| s.whole && s.param == p)
}
