//! `tilec run FILE.tile --dims M=..,N=..,K=.. [--seed S] [--cpu]`: compiles,
//! fills the inputs with seeded random values, runs on the GPU when there is
//! one (else, or with `--cpu`, on the CPU executor), compares with the
//! kernel's reference; prints the error, the time and the throughput. Exits
//! 1 when the result does not match or the CPU executor finds a bug.
//!
//! Before anything is allocated, the extents are checked against the
//! kernel's (every problem at once) and the host memory they need against
//! what the machine has. Without a GPU and without `--cpu`, work the CPU
//! executor would take more than a minute on is refused with the estimate;
//! what does run shows its progress: a bar on a terminal, a line every ten
//! seconds (every minute after the first) otherwise.

use crate::compile::{
    Compiled, Failure, LaunchArgs, compile, fail, lower_source, manifest, report,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};
use tilec::exec;
use tilec_runtime::gpu::Gpu;
use tilec_runtime::host::HostBuffer;
use tilec_runtime::manifest::{Manifest, ParamKind};
use tilec_runtime::plan::{Dims, LaunchPlan, plan_sizes};
use tilec_runtime::reference::{Arg, work};
use tilec_runtime::{Inputs, Report, check_args};

/// Work the CPU executor may start on without being asked (`--cpu`).
const CPU_LIMIT: Duration = Duration::from_secs(60);

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Timed runs on the GPU (after warm-up); the median is reported.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// Run on the CPU executor even when a GPU is present, however long it
    /// takes (without a GPU, work estimated above a minute needs it).
    #[arg(long)]
    cpu: bool,
    /// After a GPU run, run the CPU executor on the same inputs and compare
    /// the two outputs element by element.
    #[arg(long)]
    check_cpu: bool,
}

pub fn run(a: Args) -> ExitCode {
    let (name, src, dims) = match a.launch.read() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let inputs = match a.launch.inputs() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let gpu = if a.cpu {
        None
    } else {
        match Gpu::open() {
            Ok(g) => g,
            Err(e) => return fail(&e.to_string()),
        }
    };
    let device = gpu.as_ref().map(|g| g.name.as_str());
    let settings = match crate::settings::resolve(
        &a.launch.tuning,
        &name,
        &src,
        device,
        &dims,
        &a.launch.arch,
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let opts = a.launch.options(&name, &settings);
    let mut all_ok = true;
    match gpu {
        Some(gpu) => {
            let compiled = match compile(&src, &a.launch.arch, opts) {
                Ok(c) => c,
                Err(f) => return report(&name, &src, f),
            };
            let selected = match a.launch.selected(&compiled) {
                Ok(s) => s,
                Err(code) => return code,
            };
            for c in selected {
                let plan = match check_launch(&c.manifest, &dims, a.check_cpu) {
                    Ok(p) => p,
                    Err(code) => return code,
                };
                note_passed_over(&c.manifest, &plan);
                // --check-cpu asks for the executor, however long it takes.
                if a.check_cpu
                    && let Err(code) = approve_cpu(c, &dims, &plan, true)
                {
                    return code;
                }
                let waiting = spinner("running on the GPU and checking against the reference");
                let expect =
                    |p: &LaunchPlan, args: &[Arg]| crate::expect::expected(&compiled, c, p, args);
                let ran = tilec_runtime::run_gpu(
                    &gpu,
                    &c.code,
                    &c.manifest,
                    &dims,
                    &inputs,
                    a.iters,
                    &expect,
                );
                waiting.finish_and_clear();
                match ran {
                    Ok((r, gpu_outs)) => {
                        println!("{}", r.line());
                        all_ok &= r.passed();
                        if a.check_cpu {
                            match run_cpu(&compiled, c, &dims, &inputs, None) {
                                Ok((_, cpu_outs)) => {
                                    all_ok &= crate::agree::agree(&gpu_outs, &cpu_outs, &c.manifest)
                                }
                                Err(e) => return cpu_failed(e, c, &name, &src),
                            }
                        }
                    }
                    // A checked kernel that stops has printed where, above.
                    Err(tilec_runtime::RuntimeError::Cuda(e)) if c.manifest.checked => {
                        return fail(&format!(
                            "{}: the kernel stopped at a --checked bound check (the access is named above): {e}",
                            c.kernel.name
                        ));
                    }
                    Err(e) => return crate::compile::fail_launch(&c.kernel.name, &e),
                }
            }
        }
        None => {
            if !a.cpu {
                eprintln!("note: no GPU on this machine; running on the CPU executor");
            }
            if a.check_cpu {
                eprintln!(
                    "note: --check-cpu compares the GPU's results with the CPU executor's, and there is no GPU run here"
                );
            }
            let lowered = match lower_source(&src, opts) {
                Ok(l) => l,
                Err(f) => return report(&name, &src, f),
            };
            // A --checked build bounds its accesses on the device, and its
            // GPU launch needs no proof ahead: the same here.
            let compiled: Vec<Compiled> = lowered
                .into_iter()
                .map(|(kernel, l)| Compiled {
                    manifest: tilec_runtime::manifest::Manifest {
                        checked: a.launch.checked,
                        ..manifest(&kernel, &l, &a.launch.arch)
                    },
                    kernel,
                    lowered: l,
                    code: String::new(),
                    json: String::new(),
                })
                .collect();
            let selected = match a.launch.selected(&compiled) {
                Ok(s) => s,
                Err(code) => return code,
            };
            for c in selected {
                let plan = match check_launch(&c.manifest, &dims, true) {
                    Ok(p) => p,
                    Err(code) => return code,
                };
                note_passed_over(&c.manifest, &plan);
                note_one_tile_a_block(&c.manifest, &dims, &plan);
                let estimate = match approve_cpu(c, &dims, &plan, a.cpu) {
                    Ok(e) => e,
                    Err(code) => return code,
                };
                // Three times what was estimated, a minute at least: an
                // estimate approved just under the minute may run past it.
                let limit =
                    (!a.cpu).then(|| estimate.map_or(CPU_LIMIT, |e| (e * 3).max(CPU_LIMIT)));
                match run_cpu(&compiled, c, &dims, &inputs, limit) {
                    Ok((r, _)) => {
                        println!("{}", r.line());
                        all_ok &= r.passed();
                        // The executor checks each access as it runs; a GPU
                        // launch must be proved in bounds first. A kernel it
                        // would refuse fails here too, not on the GPU alone.
                        // Nor the executor's own plan (which entries ran
                        // where): its checks see the buffer, the proof each
                        // coordinate of an unguarded access in its mode.
                        let proved = tilec_runtime::plan::plan_for_gpu(&c.manifest, &dims)
                            .map(|_| ())
                            .map_err(|e| ("on a GPU", e))
                            .and_then(|()| {
                                tilec_runtime::plan::prove(&c.manifest, &plan)
                                    .map_err(|e| ("as the CPU executor ran it", e))
                            });
                        if let Err((how, e)) = proved {
                            eprintln!("error: {}: {how}, {e}", c.kernel.name);
                            crate::compile::refused_hint(&e);
                            all_ok = false;
                        }
                    }
                    Err(e) => return cpu_failed(e, c, &name, &src),
                }
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub enum CpuFailure {
    Runtime(tilec_runtime::RuntimeError),
    /// A bug the executor found in the kernel, with its span.
    Kernel(exec::ExecError),
    /// Stopped at its time limit `after`, with the blocks done of all.
    Stopped {
        done: usize,
        of: usize,
        after: Duration,
    },
}

/// A failed CPU run, reported: the kernel's bug at its line, or why it
/// did not run to its end.
fn cpu_failed(e: CpuFailure, c: &Compiled, name: &str, src: &str) -> ExitCode {
    match e {
        CpuFailure::Runtime(e) => fail(&format!("{}: {e}", c.kernel.name)),
        CpuFailure::Kernel(e) => report(name, src, Failure::Source(vec![e.diagnostic()])),
        CpuFailure::Stopped { done, of, after } => fail(&format!(
            "the CPU executor stopped {} after {} with {done} of {of} blocks finished (no GPU on this machine)\n  \
             run it to its end with --cpu (a progress bar shows the time left), or give smaller --dims (or fewer loop trips, where no extent sets them)",
            c.kernel.name,
            human(after)
        )),
    }
}

impl From<tilec_runtime::RuntimeError> for CpuFailure {
    fn from(e: tilec_runtime::RuntimeError) -> Self {
        CpuFailure::Runtime(e)
    }
}

/// Runs one kernel of `all` on the CPU executor against its reference;
/// returns the report and every tensor as the kernel left it.
/// `limit`: how long the kernel may run (`None`: to its end).
pub fn run_cpu(
    all: &[Compiled],
    c: &Compiled,
    dims: &Dims,
    inputs: &Inputs,
    limit: Option<Duration>,
) -> Result<(Report, Vec<Option<HostBuffer>>), CpuFailure> {
    let m = &c.manifest;
    let plan = plan_sizes(m, dims)?;
    let waiting = spinner("making the inputs and computing the reference");
    let args = inputs.args(m, &plan, 0)?;
    check_args(m, &plan, &args)?;
    let want = crate::expect::reference_outputs(all, c, &plan, &args).map_err(|f| match f {
        crate::expect::ReferenceFailure::Runtime(e) => CpuFailure::Runtime(e),
        crate::expect::ReferenceFailure::Kernel(e) => CpuFailure::Kernel(e),
    })?;
    let mut tensors: Vec<Option<exec::Tensor>> =
        args.iter().map(crate::expect::exec_tensor).collect();
    let scalars = args
        .iter()
        .map(|a| if let Arg::Scalar(v) = a { *v } else { 0.0 })
        .collect();
    waiting.finish_and_clear();
    let start = Instant::now();
    execute_shown(c, &plan, scalars, &mut tensors, limit)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let outs: Vec<Option<HostBuffer>> = tensors
        .iter()
        .map(|t| {
            t.as_ref()
                .map(|t| HostBuffer::from_f64(t.elem, t.data.iter().copied()))
        })
        .collect();
    let report = Report {
        device: format!("the CPU executor ({} threads)", cores()),
        kernel: plan.entries(m),
        dims: dims.to_string(),
        // The executor computes the `fast_` forms exactly: the types'
        // own tolerances, but for the roundings inside expressions.
        check: tilec_runtime::compare(
            &outs,
            &want,
            &m.param_names(),
            tilec_runtime::Allowance {
                approximation: 0.0,
                ..m.allowance()
            },
        )?
        .map(|c| c.located(m, &plan, &args)),
        ms_median: ms,
        ms_min: ms,
        ms_max: ms,
        runs: 1,
        work: work(m, &plan),
        unchecked: tilec_runtime::changed_unchecked(&args, &outs, &want, &m.param_names()),
    };
    Ok((report, outs))
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs the plan on the CPU executor, showing the blocks done: a bar with
/// the time left on a terminal, else a line every ten seconds, every minute
/// after the first (so that a short run prints nothing). The display wakes
/// every 100 ms, and at once when the executor is done: a short run is not
/// held up (nor its reported time stretched) to the next tick.
fn execute_shown(
    c: &Compiled,
    plan: &LaunchPlan,
    scalars: Vec<f64>,
    tensors: &mut [Option<exec::Tensor>],
    limit: Option<Duration>,
) -> Result<(), CpuFailure> {
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (finished, wait) = mpsc::channel::<()>();
    let mut launch = cpu_launch(c, plan, scalars, Some(&done));
    launch.stop = Some(&stop);
    let total = blocks(plan) as u64;
    let (name, shown, stopping) = (&c.kernel.name, &done, &stop);
    std::thread::scope(|s| {
        s.spawn(move || {
            let start = Instant::now();
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = ProgressBar::new(total).with_message(format!("{name}: blocks"));
                bar.set_style(
                    ProgressStyle::with_template(
                        "{msg} {bar:30} {pos}/{len}, {elapsed} gone, about {eta} left",
                    )
                    .expect("a valid template"),
                );
                bar
            });
            let mut said = Duration::ZERO;
            while let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(Duration::from_millis(100))
            {
                // Work the estimate did not see (a long loop at any
                // extents) stops at the limit too.
                if limit.is_some_and(|l| start.elapsed() > l) {
                    stopping.store(true, Ordering::Relaxed);
                }
                let n = shown.load(Ordering::Relaxed) as u64;
                // Every ten seconds for the first minute, then every minute:
                // an hour's run leaves a readable log.
                let every = Duration::from_secs(if said.as_secs() < 60 { 10 } else { 60 });
                match &bar {
                    Some(bar) => bar.set_position(n),
                    None if start.elapsed() >= said + every => {
                        said = start.elapsed();
                        let left = (n > 0)
                            .then(|| said.mul_f64((total - n) as f64 / n as f64))
                            .map_or("unknown".into(), human);
                        eprintln!(
                            "{name}: {n}/{total} blocks, {} gone, about {left} left",
                            human(said)
                        );
                    }
                    None => {}
                }
            }
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        });
        let r = on_copies(plan, tensors, |t| exec::execute(&launch, t));
        // The display's channel closes: it stops now, not at its next tick.
        drop(finished);
        match r {
            Ok(_) => Ok(()),
            Err(_)
                if let Some(after) = limit
                    && stop.load(Ordering::Relaxed) =>
            {
                Err(CpuFailure::Stopped {
                    done: done.load(Ordering::Relaxed),
                    of: total as usize,
                    after,
                })
            }
            Err(e) => Err(CpuFailure::Kernel(e)),
        }
    })
}

/// Runs `f` on `tensors` as the plan's launches read them: each tensor
/// read through an aligned copy replaced by that copy, made on the host as
/// the GPU makes it (zero past each row), and put back after (the checker
/// lets no kernel write such a tensor).
pub fn on_copies<R>(
    plan: &LaunchPlan,
    tensors: &mut [Option<exec::Tensor>],
    f: impl FnOnce(&mut [Option<exec::Tensor>]) -> R,
) -> R {
    let mut originals = Vec::new();
    for s in plan.staged.iter().filter(|s| s.whole) {
        if let Some(t) = &mut tensors[s.param] {
            let copy = s.on_host(&t.data);
            originals.push((s.param, std::mem::replace(&mut t.data, copy)));
        }
    }
    let r = f(tensors);
    for (p, data) in originals {
        if let Some(t) = &mut tensors[p] {
            t.data = data;
        }
    }
    r
}

/// The executor's launch of a plan.
fn cpu_launch<'a>(
    c: &'a Compiled,
    plan: &LaunchPlan,
    scalars: Vec<f64>,
    blocks_done: Option<&'a AtomicUsize>,
) -> exec::Launch<'a> {
    exec::Launch {
        parts: plan
            .launches
            .iter()
            .map(|l| exec::Part {
                ir: &c.lowered[l.variant].ir,
                grid: l.grid,
                offset: l.offset,
            })
            .collect(),
        extents: plan.extents.clone(),
        scalars,
        blocks_done,
        stop: None,
        exact: false,
    }
}

fn blocks(plan: &LaunchPlan) -> usize {
    plan.launches
        .iter()
        .map(|l| l.grid.iter().map(|&g| g as usize).product::<usize>())
        .sum()
}

/// Refuses a CPU run estimated above [`CPU_LIMIT`] unless `forced`, with
/// the estimate and how to force it; says the estimate of a long run.
/// The estimate, where the work was large enough to make one.
fn approve_cpu(
    c: &Compiled,
    dims: &Dims,
    plan: &LaunchPlan,
    forced: bool,
) -> Result<Option<Duration>, ExitCode> {
    let Some(est) = estimate(c, dims, plan) else {
        return Ok(None);
    };
    if !forced && est.time > CPU_LIMIT {
        return Err(fail(&format!(
            "the CPU executor would take about {} for {} at {dims} (no GPU on this machine; measured at {} and scaled by the work)\n  \
             run it anyway with --cpu (a progress bar shows the time left), or give smaller --dims",
            human(est.time),
            c.kernel.name,
            est.measured_at
        )));
    }
    if est.time > Duration::from_secs(10) {
        eprintln!(
            "note: the CPU executor will take about {} (measured at {})",
            human(est.time),
            est.measured_at
        );
    }
    Ok(Some(est.time))
}

/// What the CPU executor will take, and the extents it was measured at.
struct Estimate {
    time: Duration,
    measured_at: Dims,
}

/// Work below this runs without an estimate: a second or less.
const SMALL_WORK: f64 = (1u64 << 22) as f64;

/// Estimates the CPU executor's time at `dims`: runs the kernel at every
/// extent halved until the work is small (a fraction of a second), on
/// zero-filled tensors, and scales the time by the work (the reference's
/// flops or bytes, else the threads launched) and by the cores each run
/// can use. `None` when the work is small anyway, or no smaller launch is
/// valid.
fn estimate(c: &Compiled, dims: &Dims, plan: &LaunchPlan) -> Option<Estimate> {
    let m = &c.manifest;
    let amount = |p: &LaunchPlan| {
        work(m, p).map_or_else(
            || (blocks(p) * p.block.iter().product::<u32>() as usize) as f64,
            |(w, _)| w,
        )
    };
    let full = amount(plan);
    if full <= SMALL_WORK {
        return None;
    }
    let mut small = Dims(dims.0.clone());
    let small_plan = loop {
        if small.0.iter().all(|(_, v)| *v <= 1) {
            return None;
        }
        for (_, v) in &mut small.0 {
            *v = (*v + 1) / 2;
        }
        let p = plan_sizes(m, &small).ok()?;
        if amount(&p) <= SMALL_WORK {
            break p;
        }
    };
    let mut tensors: Vec<Option<exec::Tensor>> = m
        .params
        .iter()
        .zip(&small_plan.lens)
        .map(|(p, len)| match (&p.kind, len) {
            (ParamKind::Tensor { elem, .. }, Some(len)) => Some(exec::Tensor {
                elem: *elem,
                data: vec![0.0; *len],
            }),
            _ => None,
        })
        .collect();
    let launch = cpu_launch(c, &small_plan, vec![0.0; m.params.len()], None);
    let start = Instant::now();
    on_copies(&small_plan, &mut tensors, |t| exec::execute(&launch, t)).ok()?;
    let took = start.elapsed();
    let parallel = |p: &LaunchPlan| cores().min(blocks(p)).max(1) as f64;
    let scale = full / amount(&small_plan) * parallel(&small_plan) / parallel(plan);
    Some(Estimate {
        time: took.mul_f64(scale),
        measured_at: small,
    })
}

/// `2h 05m`, `3m 20s`, `12 s`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s / 60 % 60),
    }
}

/// A spinner with the time gone while something long happens out of
/// sight, on a terminal; hidden otherwise.
pub fn spinner(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let s = ProgressBar::new_spinner().with_message(what.to_string());
    s.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template"),
    );
    s.enable_steady_tick(Duration::from_millis(120));
    s
}

/// Says which entries tried before those that run do not run at these
/// extents, and the condition that keeps each out (on stderr): why a
/// launch is slower than the full-tile entry would be.
pub fn note_passed_over(m: &Manifest, plan: &LaunchPlan) {
    for (entry, why) in plan.passed_over(m) {
        eprintln!("note: {entry} does not run: {why}");
    }
}

/// Says where a kernel that sizes its grid by `sm_count` (not given in
/// `--dims`) launches fewer blocks than that, two or more: a persistent kernel's walk
/// then gives each block one tile, and its later trips (the accumulators
/// cleared for the next tile, the next tile's loads under this one's
/// epilogue) go untested at these extents.
fn note_one_tile_a_block(m: &Manifest, dims: &Dims, plan: &LaunchPlan) {
    let Some(i) = m.extents.iter().position(|e| e == tilec_layout::SM_COUNT) else {
        return;
    };
    if !m.grid.iter().any(|g| g.mentions(tilec_layout::SM_COUNT)) {
        return;
    }
    let sms = plan.extents[i];
    let blocks: i64 = plan
        .launches
        .iter()
        .map(|l| l.grid.iter().map(|&g| g as i64).product::<i64>())
        .sum();
    if dims.get(tilec_layout::SM_COUNT).is_none() && (2..sms).contains(&blocks) {
        eprintln!(
            "note: {} launches {blocks} block(s), fewer than sm_count = {sms}: each block takes one tile (or one piece) of a walk at these extents; `--dims {}` gives each several",
            m.kernel,
            Dims(
                dims.0
                    .iter()
                    .cloned()
                    .chain([(tilec_layout::SM_COUNT.to_string(), (blocks / 3).max(1))])
                    .collect()
            )
        );
    }
}

/// Checks the extents against the kernel's, all problems at once, and the
/// host memory the tensors need (with the executor's copies when `cpu`)
/// against what the machine has, before anything is allocated; returns the
/// plan, or prints why not and gives the exit code.
pub fn check_launch(m: &Manifest, dims: &Dims, cpu: bool) -> Result<LaunchPlan, ExitCode> {
    let problems = dims_problems(&m.kernel, &m.extents, &m.scalar_names(), dims, true);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("error: {p}");
        }
        return Err(ExitCode::from(2));
    }
    let plan = plan_sizes(m, dims).map_err(|e| fail(&format!("{}: {e}", m.kernel)))?;
    let per_elem = |elem: tilec_layout::Elem| elem.bytes() as u128 + if cpu { 8 } else { 0 };
    let need: u128 = m
        .params
        .iter()
        .zip(&plan.lens)
        .filter_map(|(p, len)| match (&p.kind, len) {
            // The host's copy, the executor's, and the reference's values
            // of the output (counted for every tensor: an upper bound).
            (ParamKind::Tensor { elem, .. }, Some(len)) => {
                Some(*len as u128 * (per_elem(*elem) + 8))
            }
            _ => None,
        })
        .sum::<u128>()
        // The aligned copies the launch reads in place of tensors.
        + plan
            .staged
            .iter()
            .map(|s| (s.bytes() / s.elem_bytes) as u128 * per_elem(m.params[s.param].elem()))
            .sum::<u128>();
    if let Some(have) = available_memory()
        && need > have as u128
    {
        return Err(fail(&format!(
            "{} at {dims} needs about {} of host memory for its tensors; this machine has {} available",
            m.kernel,
            bytes(need),
            bytes(have as u128)
        )));
    }
    Ok(plan)
}

/// Every problem of `dims` for a kernel with `extents` (and `scalars`,
/// which `--dims` does not set): names given twice, names the kernel does
/// not have (with the one probably meant), and, when
/// `all` are needed (a launch; not `check --perf`, which defaults them),
/// extents missing.
pub fn dims_problems(
    kernel: &str,
    extents: &[String],
    scalars: &[&str],
    dims: &Dims,
    all: bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, (k, v)) in dims.0.iter().enumerate() {
        if let Some((_, w)) = dims.0[..i].iter().find(|(j, _)| j == k) {
            problems.push(format!("--dims gives {k} twice ({k}={w} and {k}={v})"));
        }
    }
    // `sm_count` defaults to the device's.
    let given = |e: &String| e == tilec_layout::SM_COUNT || dims.0.iter().any(|(k, _)| k == e);
    let missing: Vec<&String> = extents.iter().filter(|e| !given(e)).collect();
    for (k, _) in &dims.0 {
        // `sm_count` describes the device, which every kernel runs on.
        if extents.contains(k) || k == tilec_layout::SM_COUNT {
            continue;
        }
        // The same name in another case, else a missing one a typo away
        // (not for one- and two-letter names, which are all a typo apart).
        let meant = extents
            .iter()
            .find(|e| e.eq_ignore_ascii_case(k))
            .or_else(|| {
                missing
                    .iter()
                    .copied()
                    .filter(|e| e.len() > 2 && strsim::damerau_levenshtein(e, k) <= 1)
                    .min_by_key(|e| strsim::damerau_levenshtein(e, k))
            });
        if scalars.contains(&k.as_str()) {
            problems.push(format!(
                "{k} is a scalar parameter, not an extent: its value goes in --scalars {k}=VALUE"
            ));
            continue;
        }
        problems.push(match meant {
            Some(e) => format!("{kernel} has no extent {k}; did you mean {e}?"),
            // A file's kernels may take different extents: one runs alone.
            None => match extents.is_empty() {
                true => format!(
                    "{kernel} has no extents (its shapes are all static), and --dims gives {k}"
                ),
                false => format!(
                    "{kernel} has no extent {k}; its extents are {} (--kernel NAME runs one kernel of a file)",
                    extents.join(", ")
                ),
            },
        });
    }
    if all && !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|e| e.as_str()).collect();
        let example: Vec<String> = extents.iter().map(|e| format!("{e}=..")).collect();
        problems.push(format!(
            "{kernel} needs the extent{} {}: pass --dims {}",
            if names.len() > 1 { "s" } else { "" },
            names.join(", "),
            example.join(",")
        ));
    }
    problems
}

/// Bytes of memory available to a new process (Linux's estimate), if known.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `206.2 GB`.
fn bytes(n: u128) -> String {
    format!("{:.1} GB", n as f64 / 1e9)
}
