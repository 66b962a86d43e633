//! tilec's runtime: runs precompiled kernels. No LLVM.
//!
//! In: PTX and the manifest `tilec build` writes, extents, a seed. Out: a
//! report: the kernel's results against its reference (relative error) and
//! its event-timed speed. Data flow: [`manifest`] -> [`plan`] (every check
//! before a launch: extents, launch conditions, buffer sizes, the bounds of
//! every global access) -> [`gpu`] (cudarc) -> [`reference`] and [`host`]
//! (comparison on the CPU); [`bench`] times a kernel against cuBLAS.

pub mod bench;
pub mod gpu;
pub mod host;
pub mod manifest;
pub mod output;
pub mod plan;
pub mod reference;
mod rows;
mod settle;
pub mod stage;
pub mod staging;
pub mod stopwatch;
pub mod tma;
pub mod tuning;

use host::{HostBuffer, Worst, deviation};
use manifest::{Elem, Manifest, ParamKind};
use plan::{Dims, LaunchPlan};
use reference::Arg;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("{0}")]
    Usage(String),
    #[error("launch condition failed: {0}")]
    Condition(String),
    #[error("refusing to launch: {0}")]
    Bounds(String),
    /// A coordinate past its mode whose element may lie inside the
    /// tensor's buffer (another row's or column's): a `--checked` build,
    /// which bounds addresses by the buffer, would not stop it.
    #[error("refusing to launch: {0}")]
    PastAMode(String),
    #[error("invalid manifest: {0}")]
    Manifest(String),
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("{0}")]
    Io(String),
    #[error(
        "buffer {name} has {given} elements, but its layout {layout} needs {needed} for these extents"
    )]
    BufferSize {
        name: String,
        given: usize,
        needed: usize,
        layout: String,
    },
}

/// What a run's inputs are made of: the seed of its random tensors and
/// scalars, and the scalars set by name instead (`--scalars eps=1e-5`: an
/// rmsnorm's epsilon at the value it runs with, not a random one).
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub seed: u64,
    pub scalars: Vec<(String, f64)>,
}

impl Inputs {
    /// `eps=1e-5,window=64`: scalar parameters' values.
    pub fn parse_scalars(s: &str) -> Result<Vec<(String, f64)>, RuntimeError> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, val) = part.split_once('=').ok_or_else(|| {
                RuntimeError::Usage(format!("`{part}` is not NAME=VALUE, e.g. eps=1e-5"))
            })?;
            let val = val.trim();
            let x: f64 = val
                .parse()
                .map_err(|_| RuntimeError::Usage(format!("`{val}` is not a number (in {part})")))?;
            // Past f64's range a number parses as an infinity, and below it
            // as 0: neither is what was written.
            let written = val.trim_start_matches(['+', '-']).to_ascii_lowercase();
            if x.is_infinite() && !matches!(written.as_str(), "inf" | "infinity") {
                return Err(RuntimeError::Usage(format!(
                    "`{val}` is past f64's range (in {part}); write `inf` for an infinity"
                )));
            }
            let mantissa = written.split('e').next().unwrap_or("");
            if x == 0.0 && mantissa.contains(|c: char| ('1'..='9').contains(&c)) {
                return Err(RuntimeError::Usage(format!(
                    "`{val}` is below f64's smallest value (in {part}): it would be 0"
                )));
            }
            let k = k.trim().to_string();
            if let Some((_, y)) = v.iter().find(|(j, _)| *j == k) {
                return Err(RuntimeError::Usage(format!(
                    "--scalars gives {k} twice ({k}={y} and {k}={x})"
                )));
            }
            v.push((k, x));
        }
        Ok(v)
    }

    /// The arguments of input set `set` (a benchmark fills several, each
    /// from its own seed): seeded random ones ([`random_args`]), the named
    /// scalars at their values.
    pub fn args(
        &self,
        m: &Manifest,
        plan: &LaunchPlan,
        set: u64,
    ) -> Result<Vec<Arg>, RuntimeError> {
        let mut args = random_args(m, plan, self.seed.wrapping_add(set * 7919));
        for (name, v) in &self.scalars {
            let scalars = || match m.scalar_names().as_slice() {
                [] => "it has none".to_string(),
                names => format!("its scalars are {}", names.join(", ")),
            };
            let (i, elem) = m
                .params
                .iter()
                .enumerate()
                .find_map(|(i, p)| match p.kind {
                    ParamKind::Scalar { elem } if p.name == *name => Some((i, elem)),
                    _ => None,
                })
                .ok_or_else(|| {
                    RuntimeError::Usage(format!(
                        "the kernel has no scalar parameter {name}; {}",
                        scalars()
                    ))
                })?;
            if elem == Elem::I32
                && !(v.fract() == 0.0 && (-2f64.powi(31)..2f64.powi(31)).contains(v))
            {
                return Err(RuntimeError::Usage(format!(
                    "{name} is an i32, and {v} is not one"
                )));
            }
            // A finite value past the type's range would be passed as an
            // infinity (`inf` itself is taken as asked for).
            let rounded = match elem {
                Elem::F16 => half::f16::from_f64(*v).to_f64(),
                Elem::Bf16 => half::bf16::from_f64(*v).to_f64(),
                _ => *v as f32 as f64,
            };
            if v.is_finite() && rounded.is_infinite() {
                return Err(RuntimeError::Usage(format!(
                    "{name} is {elem}, and {v} is past its largest value (it would be {rounded}); pass `{name}=inf` for an infinity"
                )));
            }
            if *v != 0.0 && rounded == 0.0 {
                return Err(RuntimeError::Usage(format!(
                    "{name} is {elem}, and {v:e} is below its smallest value (it would be 0)"
                )));
            }
            args[i] = Arg::Scalar(*v);
        }
        Ok(args)
    }
}

/// Inputs for a run: every tensor filled with seeded random values, every
/// float scalar a seeded random value in [0.5, 1.5) (never 0 or 1, which
/// hide bugs), an i32 one 1.
fn random_args(m: &Manifest, plan: &LaunchPlan, seed: u64) -> Vec<Arg> {
    m.params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = seed.wrapping_mul(0x9E37_79B9).wrapping_add(i as u64 + 1);
            match &p.kind {
                ParamKind::Tensor { elem, .. } => {
                    Arg::Tensor(HostBuffer::random(*elem, plan.lens[i].unwrap_or(0), s))
                }
                ParamKind::Scalar { elem } => {
                    let v = match HostBuffer::random(Elem::F32, 1, s) {
                        HostBuffer::F32(v) => 1.0 + 0.5 * v[0] as f64,
                        _ => 1.0,
                    };
                    Arg::Scalar(if *elem == Elem::I32 { v.round() } else { v })
                }
            }
        })
        .collect()
}

/// Checks that every tensor argument has exactly the elements its layout needs.
pub fn check_args(m: &Manifest, plan: &LaunchPlan, args: &[Arg]) -> Result<(), RuntimeError> {
    if args.len() != m.params.len() {
        return Err(RuntimeError::Usage(format!(
            "{} arguments for {} parameters",
            args.len(),
            m.params.len()
        )));
    }
    for ((p, a), need) in m.params.iter().zip(args).zip(&plan.lens) {
        match (&p.kind, a, need) {
            (ParamKind::Tensor { layout, elem, .. }, Arg::Tensor(t), Some(n)) => {
                if t.len() != *n {
                    return Err(RuntimeError::BufferSize {
                        name: p.name.clone(),
                        given: t.len(),
                        needed: *n,
                        layout: layout.to_string(),
                    });
                }
                if t.elem() != *elem {
                    return Err(RuntimeError::Usage(format!(
                        "{} holds {:?} elements, not {:?}",
                        p.name,
                        t.elem(),
                        elem
                    )));
                }
            }
            (ParamKind::Scalar { .. }, Arg::Scalar(_), None) => {}
            _ => {
                return Err(RuntimeError::Usage(format!(
                    "argument {} is the wrong kind",
                    p.name
                )));
            }
        }
    }
    Ok(())
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub device: String,
    /// The entry point that ran (the variant the launch plan chose).
    pub kernel: String,
    pub dims: String,
    /// The results against the reference; `None`: the kernel states none.
    pub check: Option<Check>,
    pub ms_median: f64,
    pub ms_min: f64,
    pub ms_max: f64,
    /// How many timed runs the times summarize.
    pub runs: usize,
    /// Floating-point operations (or bytes) of the reference computation.
    pub work: Option<(f64, &'static str)>,
    /// The tensors the kernel changed that its reference does not write
    /// (an input it overwrote, or an output nothing checks), by name.
    pub unchecked: Vec<String>,
}

/// A result's relative error against its reference, and the tolerance of
/// its element type.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Check {
    /// The output it is of (the worst of several).
    pub tensor: String,
    pub error: f64,
    pub tolerance: f64,
    /// The element furthest from its reference value ([`host::Deviation`]),
    /// held to [`element_tolerance`].
    pub worst: Option<Worst>,
    pub element_tolerance: f64,
    /// Checked on a sample of the reference's outputs.
    pub sample: Option<Sample>,
    /// The worst element's coordinate in its tensor (its flattened modes),
    /// where [`Check::located`] found it from the offset.
    pub coord: Option<Vec<i64>>,
    /// The output holds integers (printed as such).
    pub integers: bool,
    /// Reference values that are NaN or infinite, which the output meets
    /// exactly or not at all: said beside an `ok`, since a NaN everywhere
    /// (a scale of inf) passes against a NaN everywhere.
    pub non_finite: usize,
    /// The worst element came back as the kernel was given it (where
    /// [`Check::located`] had the inputs): most often one no block wrote
    /// (a grid one tile short, a guard too tight).
    pub unchanged: bool,
}

/// A reference computed in part: `ran` of its `of` blocks (a reference
/// kernel), or rows of C (a GEMM too large to compute whole in f64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sample {
    pub ran: u64,
    pub of: u64,
    pub unit: &'static str,
}

impl Check {
    /// The same check with its worst element's coordinate, from its
    /// offset through the tensor's layout at the launch's extents.
    /// `args`: the inputs the kernel was given, where the caller has them.
    pub fn located(mut self, m: &Manifest, plan: &LaunchPlan, args: &[reference::Arg]) -> Check {
        let p = m.params.iter().position(|p| p.name == self.tensor);
        self.coord = self
            .worst
            .and_then(|w| reference::coordinate_of(m, plan, p?, w.offset));
        self.unchanged = match (self.worst, p.and_then(|p| args.get(p))) {
            (Some(w), Some(reference::Arg::Tensor(before))) if !self.ok() => {
                w.offset < before.len() && before.get(w.offset) == w.got
            }
            _ => false,
        };
        self
    }

    /// The error is within the element type's tolerance.
    pub fn ok(&self) -> bool {
        self.error <= self.tolerance && self.worst.is_none_or(|w| w.error <= self.element_tolerance)
    }
}

/// `rel. error 1.2e-7 (ok)`, and on what sample.
impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rel. error {:.2e} (", self.error)?;
        match self.worst {
            _ if self.ok() => write!(f, "ok")?,
            Some(w) => {
                let at = match &self.coord {
                    Some(c) if c.len() == 1 => c[0].to_string(),
                    Some(c) => format!(
                        "({})",
                        c.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                    ),
                    None => format!("at offset {}", w.offset),
                };
                let value = |v: f64| match self.integers && v.is_finite() {
                    true => format!("{v:.0}"),
                    false => format!("{v:.6e}"),
                };
                write!(
                    f,
                    "MISMATCH: element {at} of {} is {} where the reference has {}",
                    self.tensor,
                    value(w.got),
                    value(w.want)
                )?;
                if self.unchanged {
                    write!(
                        f,
                        "; the kernel left it as it was given (no block wrote it?)"
                    )?
                }
            }
            None => write!(f, "MISMATCH of {}", self.tensor)?,
        }
        if let Some(Sample { ran, of, unit }) = self.sample {
            write!(
                f,
                ", on the outputs of {ran} of the reference's {of} {unit}"
            )?;
        }
        if self.non_finite > 0 {
            write!(
                f,
                ", {} of the reference's values NaN or infinite, met exactly",
                self.non_finite
            )?;
        }
        write!(f, ")")
    }
}

impl Report {
    /// Within tolerance, or unchecked (the executor's checks still ran).
    pub fn passed(&self) -> bool {
        self.check.as_ref().is_none_or(Check::ok) && self.unchecked.is_empty()
    }

    /// One line: error, time and throughput.
    pub fn line(&self) -> String {
        let per_s = |w: f64| w / (self.ms_median * 1e-3);
        let rate = match self.work {
            Some((w, "flop")) if per_s(w) >= 1e11 => format!(", {:.2} TFLOP/s", per_s(w) / 1e12),
            Some((w, "flop")) => format!(", {:.3} GFLOP/s", per_s(w) / 1e9),
            Some((w, _)) if per_s(w) >= 1e8 => format!(", {:.1} GB/s", per_s(w) / 1e9),
            Some((w, _)) => format!(", {:.2} MB/s", per_s(w) / 1e6),
            None => String::new(),
        };
        let time = if self.runs > 1 {
            format!(
                "{:.3} ms median of {} (min {:.3}, max {:.3})",
                self.ms_median, self.runs, self.ms_min, self.ms_max
            )
        } else {
            format!("{:.1} ms", self.ms_median)
        };
        let mut check = match &self.check {
            Some(c) => format!("{}", c),
            None => "no reference, results not checked".into(),
        };
        if !self.unchecked.is_empty() {
            check += &format!(
                "; but it changed {}, which the reference does not write (an input it overwrote, or an output nothing checks)",
                self.unchecked.join(", ")
            );
        }
        format!(
            "{} {} on {}: {check}, {time}{rate}",
            self.kernel, self.dims, self.device,
        )
    }
}

/// Tolerance on the relative error for results in `elem`: for f16 and
/// bf16 about five times what rounding to the type leaves a correct
/// kernel (a bf16 GEMM measures 1.7e-3, an f16 one 2.1e-4), two units of
/// the type's precision; with 2e-2 for both, an f16 epilogue 1.2% off
/// passed.
pub fn tolerance(elem: Elem) -> f64 {
    match elem {
        Elem::F32 => 1e-4,
        Elem::F16 => 1e-3,
        Elem::Bf16 => 8e-3,
        Elem::I32 => 0.0,
    }
}

/// Tolerance on one element's error (against the larger of its reference
/// value and the reference's root mean square) for results in `elem`:
/// four roundings to bf16 (2^-8 each at most) or f16 (2^-11), ten times
/// f32's norm-wise tolerance (accumulation order over long sums), exact for
/// i32.
pub fn element_tolerance(elem: Elem) -> f64 {
    match elem {
        Elem::F32 => 1e-3,
        Elem::F16 => 1.0 / 512.0,
        Elem::Bf16 => 1.0 / 64.0,
        Elem::I32 => 0.0,
    }
}

/// Plans, fills, runs on the GPU, and compares with what `expect` gives;
/// returns the report and every tensor as the kernel left it.
pub fn run_gpu(
    gpu: &gpu::Gpu,
    ptx: &str,
    m: &Manifest,
    dims: &Dims,
    inputs: &Inputs,
    iters: usize,
    expect: &reference::Expect,
) -> Result<(Report, Vec<Option<HostBuffer>>), RuntimeError> {
    let plan = plan::plan_on_gpu(m, dims, gpu.sms)?;
    gpu.check_fits(m, &plan)?;
    let args = inputs.args(m, &plan, 0)?;
    check_args(m, &plan, &args)?;
    let expected = expect(&plan, &args)?;
    let f = gpu.load(ptx, m, &plan)?;
    let (outs, mut times) = gpu.run(&f, &plan, m, &args, 3, iters.max(1))?;
    let check = compare(&outs, &expected, &m.param_names(), m.allowance())?
        .map(|c| c.located(m, &plan, &args));
    let unchecked = changed_unchecked(&args, &outs, &expected, &m.param_names());
    times.sort_by(f32::total_cmp);
    let report = Report {
        device: gpu.name.clone(),
        kernel: plan.entries(m),
        dims: dims.to_string(),
        check,
        ms_median: times[times.len() / 2] as f64,
        ms_min: times[0] as f64,
        ms_max: times[times.len() - 1] as f64,
        runs: times.len(),
        work: reference::work(m, &plan),
        unchecked,
    };
    Ok((report, outs))
}

/// The tensors the kernel left changed that the reference does not write,
/// by name (inputs are finite, so values compare as bits do); none for a
/// kernel without a reference, whose results nothing checks.
pub fn changed_unchecked(
    args: &[reference::Arg],
    outs: &[Option<HostBuffer>],
    expected: &[reference::Expected],
    names: &[String],
) -> Vec<String> {
    if expected.is_empty() {
        return Vec::new();
    }
    args.iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let reference::Arg::Tensor(before) = a else {
                return None;
            };
            let after = outs.get(i)?.as_ref()?;
            let written = expected.iter().any(|e| e.output == i);
            (!written && after != before).then(|| names.get(i).cloned().unwrap_or_default())
        })
        .collect()
}

/// How loosely a kernel's results are checked beyond their types'
/// tolerances: the manifest's `approximation` and `rounded_to`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Allowance {
    /// The largest relative error of the hardware approximations the
    /// kernel asked for (0: none).
    pub approximation: f64,
    /// The coarsest type the kernel rounds values to inside an expression.
    pub rounded_to: Option<Elem>,
}

impl Manifest {
    /// How loosely its results are checked against the reference.
    pub fn allowance(&self) -> Allowance {
        Allowance {
            approximation: self.approximation,
            rounded_to: self.rounded_to,
        }
    }
}

/// The outputs against their expected values: the worst relative error
/// (against its type's tolerance) of them all; `None` with nothing expected.
/// A kernel of hardware approximations whose relative error reaches
/// `approximation` is held to a multiple of it where that is the looser:
/// twice it norm-wise, 8 times element by element, for the errors that
/// arithmetic after the approximation carries on; one that rounds values
/// to bf16 or f16 along the way (`rounded_to`), to that type's
/// tolerances where they are the looser. `names`: the parameters'.
pub fn compare(
    outs: &[Option<HostBuffer>],
    expected: &[reference::Expected],
    names: &[String],
    allowance: Allowance,
) -> Result<Option<Check>, RuntimeError> {
    let Allowance {
        approximation,
        rounded_to,
    } = allowance;
    let mut worst: Option<Check> = None;
    for e in expected {
        let out = outs
            .get(e.output)
            .and_then(Option::as_ref)
            .ok_or_else(|| RuntimeError::Manifest("an output is not a tensor".into()))?;
        let d = deviation(out, &e.values, &e.offsets);
        let c = Check {
            tensor: names.get(e.output).cloned().unwrap_or_default(),
            error: d.norm,
            tolerance: tolerance(out.elem())
                .max(rounded_to.map_or(0.0, tolerance))
                .max(2.0 * approximation),
            worst: d.worst,
            element_tolerance: element_tolerance(out.elem())
                .max(rounded_to.map_or(0.0, element_tolerance))
                .max(8.0 * approximation),
            sample: e.sample,
            coord: None,
            integers: out.elem() == Elem::I32,
            non_finite: e.values.iter().filter(|v| !v.is_finite()).count(),
            unchanged: false,
        };
        // A NaN error is the worst of all; an output off by its elements
        // is worse than one within tolerance.
        let ratio = |c: &Check| {
            let element = c
                .worst
                .map_or(0.0, |w| w.error / c.element_tolerance.max(1e-300));
            match element.is_nan() {
                true => f64::NAN,
                false => (c.error / c.tolerance.max(1e-300)).max(element),
            }
        };
        let worse = |w: &Check| !ratio(w).is_nan() && (ratio(&c).is_nan() || ratio(&c) > ratio(w));
        if worst.as_ref().is_none_or(worse) {
            worst = Some(c);
        }
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(out: HostBuffer, values: Vec<f64>) -> Check {
        check_within(out, values, 0.0)
    }

    fn check_within(out: HostBuffer, values: Vec<f64>, approximation: f64) -> Check {
        let expected = reference::Expected {
            output: 0,
            offsets: (0..values.len()).collect(),
            values,
            sample: None,
        };
        let allowance = Allowance {
            approximation,
            rounded_to: None,
        };
        compare(&[Some(out)], &[expected], &["Y".into()], allowance)
            .unwrap()
            .unwrap()
    }

    /// A NaN or an infinity the reference has is met exactly or not at
    /// all, and the finite elements are measured as if it were not there.
    #[test]
    fn non_finite_values_are_met_exactly() {
        let want = vec![1.0, f64::NAN, f64::INFINITY, -2.0, f64::NEG_INFINITY];
        let out = |v: [f32; 5]| HostBuffer::F32(v.to_vec());
        let (nan, inf) = (f32::NAN, f32::INFINITY);
        let c = check(out([1.0, nan, inf, -2.0, -inf]), want.clone());
        assert!(c.ok() && c.error == 0.0, "{c}");
        assert!(check(out([1.0, nan, inf, -2.00001, -inf]), want.clone()).ok());
        for wrong in [
            [1.0, 0.0, inf, -2.0, -inf],
            [1.0, nan, -inf, -2.0, -inf],
            [1.0, nan, inf, -2.0, 3.0e38],
            [nan, nan, inf, -2.0, -inf],
        ] {
            assert!(!check(out(wrong), want.clone()).ok(), "{wrong:?}");
        }
    }

    /// Where the reference is zero throughout, errors are absolute element
    /// by element as in the norm: a rounding residual of 1e-9 passes
    /// (it was a mismatch against a scale of f64::MIN_POSITIVE), 0.5 fails.
    #[test]
    fn an_all_zero_reference_measures_absolute_errors() {
        let zeros = vec![0.0; 64];
        let out = |v: f32| HostBuffer::F32((0..64).map(|i| if i == 7 { v } else { 0.0 }).collect());
        assert!(check(out(-1.5e-9), zeros.clone()).ok());
        assert!(!check(out(0.5), zeros.clone()).ok());
    }

    /// f32 results off by tanh.approx's bound (2^-10 of each value) fail
    /// f32's own tolerance, and pass a kernel's that asked for it; twice
    /// its allowance fails that too.
    #[test]
    fn a_kernel_of_approximations_is_held_to_their_error() {
        let want: Vec<f64> = (1..4096).map(|i| (i as f64 * 0.37).sin()).collect();
        let off =
            |by: f64| HostBuffer::F32(want.iter().map(|&v| (v * (1.0 + by)) as f32).collect());
        let tanh = 2f64.powi(-10);
        assert!(!check(off(tanh), want.clone()).ok());
        assert!(check_within(off(tanh), want.clone(), tanh).ok());
        assert!(!check_within(off(4.0 * tanh), want.clone(), tanh).ok());
        // Nothing asked: f32's tolerance stands.
        assert_eq!(
            check_within(off(0.0), want.clone(), 0.0).tolerance,
            tolerance(Elem::F32)
        );
    }

    /// A few wrong elements among many pass the norm but not the
    /// element check, which names the worst; rounding to bf16 passes both.
    #[test]
    fn a_few_wrong_elements_are_a_mismatch() {
        let want: Vec<f64> = (0..262144)
            .map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0)
            .collect();
        let rounded = HostBuffer::Bf16(want.iter().map(|&v| half::bf16::from_f64(v)).collect());
        assert!(check(rounded, want.clone()).ok());
        let mut wrong: Vec<half::bf16> = want.iter().map(|&v| half::bf16::from_f64(v)).collect();
        for w in &mut wrong[1000..1008] {
            *w = half::bf16::ZERO;
        }
        let c = check(HostBuffer::Bf16(wrong), want.clone());
        assert!(c.error <= c.tolerance, "the norm alone passes: {}", c.error);
        assert!(!c.ok());
        let shown = c.to_string();
        assert!(
            shown.contains("MISMATCH: element at offset 10") && shown.contains("of Y"),
            "{shown}"
        );
        // A NaN anywhere is a mismatch.
        let mut nan = want.clone();
        nan[5] = f64::NAN;
        let out = HostBuffer::F32(nan.iter().map(|&v| v as f32).collect());
        assert!(!check(out, want).ok());
    }
}
