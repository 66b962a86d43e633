//! Benchmarks: a kernel against cuBLAS, on the same shapes and layouts, in
//! the same process, interleaved run by run, after checking the kernel's
//! result against its reference. Inputs rotate among several random sets
//! when one set fits in L2, so that no run is timed on cache-warm data.

use crate::gpu::{DeviceArgs, DeviceElem, Gpu};
use crate::manifest::{Elem, Manifest, ParamKind, ReferenceKind};
use crate::plan::{Dims, LaunchPlan, plan_on_gpu};
use crate::reference::{Arg, Expect, param_bytes, work};
use crate::settle::Settle;
use crate::{Inputs, RuntimeError, check_args};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig, sys::cublasOperation_t};
use half::{bf16, f16};
use tilec_layout::Layout;

/// Input sets are rotated until they cover twice the L2's size, at most this many.
const MAX_SETS: usize = 8;

/// Median, min and max of timed runs: device times in ms, host times in us.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Timing {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Timing {
    /// Of no runs (a build a race left out): NaN.
    fn of(mut v: Vec<f32>) -> Timing {
        if v.is_empty() {
            return Timing {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        v.sort_by(f32::total_cmp);
        Timing {
            median: v[v.len() / 2] as f64,
            min: v[0] as f64,
            max: v[v.len() - 1] as f64,
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    /// The entry points that ran (`sgemm` or `sgemm + sgemm_guarded`).
    pub kernel: String,
    pub dims: String,
    pub device: String,
    /// The values its tunables were built with (`splits=16`), if any.
    pub tuned: String,
    /// The results against the reference; `None`: the kernel states none.
    pub check: Option<crate::Check>,
    pub runs: usize,
    pub input_sets: usize,
    /// Device time of a run (docs: `crate::stopwatch`).
    pub tilec: Timing,
    /// The host's time to queue a run (the runtime's launch), median, us.
    pub launch_us: f64,
    /// `None` when cuBLAS has no routine for the kernel's reference.
    pub cublas: Option<Timing>,
    /// The host's time to queue a cuBLAS call, median, us.
    pub cublas_launch_us: Option<f64>,
    /// For a kernel measured in bytes: a device-to-device copy moving as
    /// many (half read, half written), the memory-bound roofline.
    pub copy: Option<Timing>,
    /// Floating-point operations per run (for TFLOP/s), or bytes moved.
    pub work: Option<f64>,
    pub work_unit: Option<String>,
}

impl BenchResult {
    /// Within tolerance, or unchecked.
    pub fn passed(&self) -> bool {
        self.check.as_ref().is_none_or(crate::Check::ok)
    }

    fn rate(&self, ms: f64) -> Option<f64> {
        let w = self.work?;
        Some(if self.work_unit.as_deref() == Some("flop") {
            w / (ms * 1e-3) / 1e12
        } else {
            w / (ms * 1e-3) / 1e9
        })
    }

    /// `31.10 TFLOP/s` (or GB/s) at `ms` a run; empty without a measure of work.
    pub fn rate_text(&self, ms: f64) -> String {
        let unit = if self.work_unit.as_deref() == Some("flop") {
            "TFLOP/s"
        } else {
            "GB/s"
        };
        self.rate(ms)
            .map_or(String::new(), |r| format!("{r:8.2} {unit}"))
    }

    /// A short table: the kernel, cuBLAS, and their ratio.
    pub fn table(&self) -> String {
        // Device time, then the host's time to queue the call.
        let row = |name: &str, t: &Timing, host: Option<f64>| {
            let r = self.rate_text(t.median);
            let host = host.map_or(String::new(), |us| format!("  host {us:.1} us a call"));
            format!(
                "  {name:<7} {:9.3} ms median  ({:.3} .. {:.3})  {r}{host}\n",
                t.median, t.min, t.max
            )
        };
        let check = match &self.check {
            Some(c) => format!("{c}"),
            None => "no reference, results not checked".into(),
        };
        let mut s = format!(
            "{} {} on {}: {check}, {} runs, {} input set(s)\n",
            self.kernel, self.dims, self.device, self.runs, self.input_sets
        );
        s += &row("tilec", &self.tilec, Some(self.launch_us));
        if let Some(c) = &self.cublas {
            s += &row("cuBLAS", c, self.cublas_launch_us);
            s += &format!("  tilec / cuBLAS = {:.3}\n", c.median / self.tilec.median);
        }
        if let Some(c) = &self.copy {
            s += &row("copy", c, None);
            s += &format!(
                "  tilec / device copy (bandwidth) = {:.3}\n",
                c.median / self.tilec.median
            );
        }
        s
    }
}

/// A cuBLAS GEMM in the operands' element type: SGEMM for f32,
/// `cublasGemmEx` with f32 accumulation for bf16 and f16; strided-batched
/// (`cublasGemmStridedBatchedEx`) for operands with a batch mode.
#[derive(Clone, Copy)]
enum BlasGemm {
    F32(StridedBatchedConfig<f32>),
    Bf16(StridedBatchedConfig<bf16>),
    F16(StridedBatchedConfig<f16>),
}

impl BlasGemm {
    fn run(
        &self,
        blas: &CudaBlas,
        d: &mut DeviceArgs,
        ops: [usize; 3],
    ) -> Result<(), RuntimeError> {
        match self {
            BlasGemm::F32(cfg) => gemm_typed(blas, *cfg, d, ops),
            BlasGemm::Bf16(cfg) => gemm_typed(blas, *cfg, d, ops),
            BlasGemm::F16(cfg) => gemm_typed(blas, *cfg, d, ops),
        }
    }
}

/// One cuBLAS GEMM (or a batch of them) on the three device tensors `ops`
/// of element type `T`.
fn gemm_typed<T: DeviceElem>(
    blas: &CudaBlas,
    cfg: StridedBatchedConfig<T>,
    d: &mut DeviceArgs,
    [a, b, c]: [usize; 3],
) -> Result<(), RuntimeError>
where
    CudaBlas: Gemm<T>,
{
    let (x, y, z) = d
        .gemm_operands::<T>(a, b, c)
        .ok_or_else(|| RuntimeError::Manifest("gemm operands".into()))?;
    // Safety: the shapes, leading dimensions and batch strides come from
    // the checked plan.
    let done = match cfg.batch_size {
        1 => unsafe { blas.gemm(cfg.gemm, x, y, z) },
        _ => unsafe { blas.gemm_strided_batched(cfg, x, y, z) },
    };
    done.map_err(|e| RuntimeError::Cuda(format!("cuBLAS: {e:?}")))
}

/// cuBLAS's view of `C(M,N) = alpha * A(M,K) * B(N,K)^T + beta * C`: each
/// operand column-major, possibly transposed, from the layouts, with the
/// stride of a batch mode if they have one; A, B and C of one element type.
fn cublas_config(m: &Manifest, p: &LaunchPlan, args: &[Arg]) -> Option<(BlasGemm, [usize; 3])> {
    let r = m
        .reference
        .as_ref()
        .filter(|r| r.kind == ReferenceKind::Gemm)?;
    let ops = &r.operands;
    let env = |n: &str| m.extents.iter().position(|e| e == n).map(|i| p.extents[i]);
    // Each operand's batch: its extent and stride (1 and 0 without one).
    let batch = |i: usize| -> Option<(i64, i64)> {
        let ParamKind::Tensor { layout, .. } = &m.params[ops[i]].kind else {
            return None;
        };
        if layout.rank() < 3 {
            return Some((1, 0));
        }
        let md = layout.mode(2).ok()?;
        Some((
            md.shape().as_int()?.eval(&env)?,
            md.stride().as_int()?.eval(&env)?,
        ))
    };
    let strides = |i: usize| -> Option<(i64, i64, i64, i64)> {
        let ParamKind::Tensor { layout, .. } = &m.params[ops[i]].kind else {
            return None;
        };
        let leaf = |l: &Layout, k: usize| -> Option<(i64, i64)> {
            let md = l.mode(k).ok()?;
            let (s, d) = (
                md.shape().as_int()?.eval(&env)?,
                md.stride().as_int()?.eval(&env)?,
            );
            Some((s, d))
        };
        let ((s0, d0), (s1, d1)) = (leaf(layout, 0)?, leaf(layout, 1)?);
        Some((s0, d0, s1, d1))
    };
    let (am, ad0, ak, ad1) = strides(0)?;
    let (bn, bd0, _, bd1) = strides(1)?;
    let (_, cd0, _, cd1) = strides(2)?;
    if cd0 != 1 {
        return None;
    }
    let (transa, lda) = if ad0 == 1 {
        (cublasOperation_t::CUBLAS_OP_N, ad1)
    } else if ad1 == 1 {
        (cublasOperation_t::CUBLAS_OP_T, ad0)
    } else {
        return None;
    };
    let (transb, ldb) = if bd0 == 1 {
        (cublasOperation_t::CUBLAS_OP_T, bd1)
    } else if bd1 == 1 {
        (cublasOperation_t::CUBLAS_OP_N, bd0)
    } else {
        return None;
    };
    let scalar = |i: usize| match args[ops[i]] {
        Arg::Scalar(v) => Some(v),
        Arg::Tensor(_) => None,
    };
    let c = |v: i64| i32::try_from(v).ok();
    let (alpha, beta) = (scalar(3)?, scalar(4)?);
    let f32_config = GemmConfig {
        transa,
        transb,
        m: c(am)?,
        n: c(bn)?,
        k: c(ak)?,
        alpha: alpha as f32,
        lda: c(lda)?,
        ldb: c(ldb)?,
        beta: beta as f32,
        ldc: c(cd1)?,
    };
    let ((l, sa), (_, sb), (_, sc)) = (batch(0)?, batch(1)?, batch(2)?);
    let batched = |g: GemmConfig<f32>| -> Option<StridedBatchedConfig<f32>> {
        Some(StridedBatchedConfig {
            gemm: g,
            batch_size: c(l)?,
            stride_a: sa,
            stride_b: sb,
            stride_c: sc,
        })
    };
    let f32_config = batched(f32_config)?;
    fn retyped<T>(b: StridedBatchedConfig<f32>, alpha: T, beta: T) -> StridedBatchedConfig<T> {
        let g = b.gemm;
        StridedBatchedConfig {
            gemm: GemmConfig {
                transa: g.transa,
                transb: g.transb,
                m: g.m,
                n: g.n,
                k: g.k,
                alpha,
                lda: g.lda,
                ldb: g.ldb,
                beta,
                ldc: g.ldc,
            },
            batch_size: b.batch_size,
            stride_a: b.stride_a,
            stride_b: b.stride_b,
            stride_c: b.stride_c,
        }
    }
    let elems: Vec<Elem> = (0..3)
        .filter_map(|i| match &m.params[ops[i]].kind {
            ParamKind::Tensor { elem, .. } => Some(*elem),
            ParamKind::Scalar { .. } => None,
        })
        .collect();
    let blas = match elems[..] {
        [Elem::F32, Elem::F32, Elem::F32] => BlasGemm::F32(f32_config),
        [Elem::Bf16, Elem::Bf16, Elem::Bf16] => BlasGemm::Bf16(retyped(
            f32_config,
            bf16::from_f32(alpha as f32),
            bf16::from_f32(beta as f32),
        )),
        [Elem::F16, Elem::F16, Elem::F16] => BlasGemm::F16(retyped(
            f32_config,
            f16::from_f64(alpha),
            f16::from_f64(beta),
        )),
        _ => return None,
    };
    Some((blas, [ops[0], ops[1], ops[2]]))
}

/// Checks, then times the kernel and cuBLAS, interleaved, `iters` runs each.
pub fn bench(
    gpu: &Gpu,
    ptx: &str,
    m: &Manifest,
    dims: &Dims,
    inputs: &Inputs,
    iters: usize,
    expect: &Expect,
) -> Result<BenchResult, RuntimeError> {
    let (mut results, _) = race(gpu, &[(ptx, m)], dims, inputs, iters, Pruning::None, expect)?;
    results.remove(0)
}

/// Where a race's time went, in seconds: loading the builds (the driver's
/// PTX compile), the random inputs and the reference on them, the checks
/// (the inputs uploaded, then each build's launch, the output's download
/// and its comparison with the reference), and the timed runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    pub load: f64,
    pub reference: f64,
    pub check: f64,
    pub timing: f64,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "loading {:.1} s, reference {:.1} s, checks {:.1} s, timed runs {:.1} s",
            self.load, self.reference, self.check, self.timing
        )
    }
}

/// The bytes of the tensor parameters `keep` selects (by index), at `p`'s extents.
fn tensor_bytes(m: &Manifest, p: &LaunchPlan, keep: impl Fn(usize) -> bool) -> usize {
    (0..m.params.len())
        .filter(|&i| keep(i))
        .map(|i| param_bytes(m, p, i))
        .sum()
}

/// The builds a cut of a pruned race keeps, fastest first, from their
/// (median, build) so far: the faster half, and of it only those within
/// [`FAR_BEHIND`] of the best (a build that far behind after a few runs
/// does not catch up), at least two; and `keep` if it was running.
fn survivors(mut medians: Vec<(f64, usize)>, keep: Option<usize>) -> Vec<usize> {
    medians.sort_by(|x, y| x.0.total_cmp(&y.0));
    let best = medians.first().map_or(0.0, |m| m.0);
    let close = medians
        .iter()
        .take_while(|(t, _)| *t <= FAR_BEHIND * best)
        .count();
    let mut running: Vec<usize> = medians.iter().map(|(_, b)| *b).collect();
    running.truncate(running.len().div_ceil(2).min(close).max(2));
    if let Some(k) = keep.filter(|k| medians.iter().any(|(_, b)| b == k))
        && !running.contains(&k)
    {
        running.push(k);
    }
    running
}

/// Whether a race stops its slower builds early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pruning {
    /// Every build runs every run (a bench).
    None,
    /// Successive halving (a search); build `keep`, if it matched the
    /// reference, runs to the end whatever its times (the declared
    /// defaults: on a GPU whose clocks drift within a call, the winner is
    /// then measured against them in the same runs, not against a median
    /// from the race's start).
    Halving { keep: Option<usize> },
}

/// Runs a build takes between two cuts of a pruned race, and how much
/// slower than the best a build may be and still run after a cut.
const RUNS_PER_CUT: usize = 2;
const FAR_BEHIND: f64 = 1.5;

/// Checks each of several builds of one kernel (the variants `tilec tune`
/// tries: same parameters, other tunables) against the reference, computed
/// once, then times them and cuBLAS or a device copy interleaved, run by
/// run, on the same inputs: one result per build, in order. Beside a copy,
/// the L2 is settled before every timed run (`settle.rs`).
///
/// Pruned ([`Pruning::Halving`]), a successive-halving race: every
/// [`RUNS_PER_CUT`] runs, the slower half of the builds still running (by
/// their median so far) stops, and any [`FAR_BEHIND`] the best, down to
/// two, which run to `iters`. A search of 56 variants at 20 runs then
/// costs about 240 runs instead of 1120; a stopped build reports the runs
/// it had.
pub fn race(
    gpu: &Gpu,
    builds: &[(&str, &Manifest)],
    dims: &Dims,
    inputs: &Inputs,
    iters: usize,
    pruning: Pruning,
    expect: &Expect,
) -> Result<(Vec<Result<BenchResult, RuntimeError>>, Phases), RuntimeError> {
    let (prune, keep) = match pruning {
        Pruning::None => (false, None),
        Pruning::Halving { keep } => (true, keep),
    };
    let Some(&(_, m)) = builds.first() else {
        return Ok((Vec::new(), Phases::default()));
    };
    let mut phases = Phases::default();
    let mut clock = std::time::Instant::now();
    let mut lap = || {
        let t = clock.elapsed().as_secs_f64();
        clock = std::time::Instant::now();
        t
    };
    let plans: Vec<LaunchPlan> = builds
        .iter()
        .map(|(_, b)| plan_on_gpu(b, dims, gpu.sms))
        .collect::<Result<_, _>>()?;
    let p = &plans[0];
    if plans.iter().any(|q| q.lens != p.lens) || builds.iter().any(|(_, b)| b.params != m.params) {
        return Err(RuntimeError::Manifest(
            "the builds raced against each other take different tensors".into(),
        ));
    }
    for ((_, b), q) in builds.iter().zip(&plans) {
        gpu.check_fits(b, q)?;
    }
    let with_plans: Vec<(&str, &Manifest, &LaunchPlan)> = builds
        .iter()
        .zip(&plans)
        .map(|((ptx, b), q)| (*ptx, *b, q))
        .collect();
    lap();
    // A build the driver refuses takes no part; the others race on. One
    // build (a bench) that does not load is the run's error.
    let mut loaded = gpu.load_all(&with_plans)?;
    if let [Err(_)] = loaded.as_slice()
        && let Some(Err(e)) = loaded.pop()
    {
        return Err(e);
    }
    phases.load = lap();
    let bytes = tensor_bytes(m, p, |_| true);
    let sets = (2 * gpu.l2_bytes).div_ceil(bytes.max(1)).clamp(1, MAX_SETS);
    let host: Vec<Vec<Arg>> = (0..sets as u64)
        .map(|s| inputs.args(m, p, s))
        .collect::<Result<_, _>>()?;
    check_args(m, p, &host[0])?;
    // Correctness first, on the first set, each build from fresh inputs
    // (a kernel may accumulate into its output).
    let want = expect(p, &host[0])?;
    phases.reference = lap();
    let mut dev: Vec<DeviceArgs> = host
        .iter()
        .map(|a| gpu.upload(m, a))
        .collect::<Result<_, _>>()?;
    // Each check starts from the inputs as uploaded: restored on the
    // device from a clean copy (a hundred tuning variants at 8192^3 would
    // otherwise upload 80 GB).
    let clean = gpu.upload(m, &host[0])?;
    let mut checks = Vec::with_capacity(builds.len());
    let output = |i: usize| want.iter().any(|e| e.output == i);
    for ((f, q), (_, b)) in loaded.iter().zip(&plans).zip(builds) {
        let Ok(f) = f else {
            checks.push(None);
            continue;
        };
        gpu.restore(&clean, &mut dev[0])?;
        gpu.launch(f, q, &dev[0])?;
        let outs = gpu.download_only(&dev[0], output)?;
        checks.push(
            crate::compare(&outs, &want, &b.param_names(), b.allowance())?
                .map(|c| c.located(b, q, &host[0])),
        );
    }
    gpu.restore(&clean, &mut dev[0])?;
    drop(clean);
    phases.check = lap();
    let blas = cublas_config(m, p, &host[0]).map(|cfg| (CudaBlas::new(gpu.stream.clone()), cfg));
    let blas = match blas {
        Some((Ok(b), cfg)) => Some((b, cfg)),
        Some((Err(e), _)) => return Err(RuntimeError::Cuda(format!("cuBLAS: {e:?}"))),
        None => None,
    };
    let gemm = |blas: &(CudaBlas, (BlasGemm, [usize; 3])),
                d: &mut DeviceArgs|
     -> Result<(), RuntimeError> {
        let (b, (cfg, ops)) = blas;
        cfg.run(b, d, *ops)
    };
    // Each timed run on the input set used least recently (the sets cover
    // twice the L2): none finds its inputs in the L2. Run by run on one
    // set, cuBLAS was timed on what the kernel before it had just read
    // (at 128 x 4096 x 4096 bf16, 34 MB, all of it in the H100's L2), and
    // in a race each build on its predecessor's (docs/performance.md,
    // version 64). The warm-up takes its turns too, so that the first
    // timed run does not follow it on its set.
    let mut runs = 0usize;
    let mut next_set = || {
        runs += 1;
        (runs - 1) % sets
    };
    // Warm-up; a pruned race has many builds, each already launched once
    // by its check.
    for _ in 0..if prune { 1 } else { 3 } {
        for (f, q) in loaded.iter().zip(&plans) {
            if let Ok(f) = f {
                gpu.launch(f, q, &dev[next_set()])?;
            }
        }
        if let Some(b) = &blas {
            gemm(b, &mut dev[next_set()])?;
        }
    }
    let w = work(m, p);
    // A kernel of bytes is held against a copy of as many bytes.
    let copy_bytes = match w {
        Some((bytes, "byte")) if blas.is_none() => (bytes / 2.0) as usize,
        _ => 0,
    };
    let cuda = |e: cudarc::driver::DriverError| RuntimeError::Cuda(format!("{e:?}"));
    // Beside a copy, every timed run, the copy's too, follows an untimed
    // settling of the L2 (`settle.rs`): none of the run's data in it, and
    // as many dirty lines as the run leaves behind, so that each run pays
    // the write-back of its own writes. Plainly interleaved, a kernel that
    // only reads paid the copy's every run and the copy after it never
    // did (docs/performance.md, versions 29 and 32).
    let (mut copy_buffers, mut settler) = match copy_bytes {
        0 => (None, None),
        n => {
            let alloc = || gpu.stream.alloc_zeros::<u8>(n).map_err(cuda);
            (Some((alloc()?, alloc()?)), Some(Settle::new(gpu)?))
        }
    };
    let copy = |bufs: &mut (cudarc::driver::CudaSlice<u8>, cudarc::driver::CudaSlice<u8>)| {
        gpu.stream.memcpy_dtod(&bufs.0, &mut bufs.1).map_err(cuda)
    };
    let mut settle = |written: usize| settler.as_mut().map_or(Ok(()), |s| s.before(gpu, written));
    // The bytes a build's run writes: its outputs', the aligned copies its
    // launch makes, and its `reduce` workspace.
    let outputs = tensor_bytes(m, p, output);
    let written: Vec<usize> = builds
        .iter()
        .zip(&plans)
        .map(|((_, b), q)| {
            let staged: u64 = q.staged.iter().map(|s| s.bytes()).sum();
            let workspace = q
                .block_reduce_sizes(b.block_reduce.as_ref())
                .map_or(0, |(values, counters)| 4 * values.saturating_add(counters));
            outputs
                .saturating_add(staged as usize)
                .saturating_add(workspace)
        })
        .collect();
    // Slots of the stopwatch: one per build, then cuBLAS, then the copy.
    let (blas_slot, copy_slot) = (builds.len(), builds.len() + 1);
    let mut watch = gpu.stopwatch(builds.len() + 2);
    // A pruned race times only the builds that matched the reference.
    let mut running: Vec<usize> = (0..builds.len())
        .filter(|&b| loaded[b].is_ok())
        .filter(|&b| !prune || checks[b].as_ref().is_none_or(crate::Check::ok))
        .collect();
    for i in 0..iters.max(1) {
        for &b in &running {
            let (Ok(f), q) = (&loaded[b], &plans[b]) else {
                continue;
            };
            settle(written[b])?;
            let d = next_set();
            watch.time(b, || gpu.launch(f, q, &dev[d]))?;
        }
        if let Some(b) = &blas {
            let dv = &mut dev[next_set()];
            watch.time(blas_slot, || gemm(b, dv))?;
        }
        if let Some(bufs) = copy_buffers.as_mut() {
            settle(copy_bytes)?;
            watch.time(copy_slot, || copy(bufs))?;
        }
        if prune && running.len() > 2 && (i + 1) % RUNS_PER_CUT == 0 {
            watch.read()?;
            let medians: Vec<(f64, usize)> = running
                .iter()
                .map(|&b| (Timing::of(watch.device_ms[b].clone()).median, b))
                .collect();
            running = survivors(medians, keep);
            // The stream is idle after the read: an untimed launch keeps
            // the GPU busy while the next timed one is prepared.
            if let (Ok(f), q) = (&loaded[running[0]], &plans[running[0]]) {
                gpu.launch(f, q, &dev[next_set()])?;
            }
        }
    }
    watch.read()?;
    phases.timing = lap();
    // The copy's host time is not reported: a memcpy call's cost says
    // nothing of the kernels it stands beside.
    let launch_us_of = |slot: usize| Timing::of(watch.host_us[slot].clone()).median;
    let cublas = blas
        .is_some()
        .then(|| Timing::of(watch.device_ms[blas_slot].clone()));
    let cublas_launch_us = blas.is_some().then(|| launch_us_of(blas_slot));
    let copy = copy_buffers
        .is_some()
        .then(|| Timing::of(watch.device_ms[copy_slot].clone()));
    let results = builds
        .iter()
        .zip(&plans)
        .zip(checks)
        .zip(loaded)
        .enumerate()
        .map(|(i, ((((_, b), q), check), loaded))| match loaded {
            Err(e) => Err(e),
            Ok(_) => Ok(BenchResult {
                runs: watch.device_ms[i].len(),
                kernel: q.entries(b),
                dims: dims.to_string(),
                device: gpu.name.clone(),
                tuned: b.tuned(),
                check,
                input_sets: sets,
                tilec: Timing::of(watch.device_ms[i].clone()),
                launch_us: launch_us_of(i),
                cublas,
                cublas_launch_us,
                copy,
                work: w.map(|(x, _)| x),
                work_unit: w.map(|(_, u)| u.to_string()),
            }),
        })
        .collect();
    Ok((results, phases))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cut keeps the faster half, drops what is far behind, keeps two
    /// at least, and keeps the declared defaults however slow, unless
    /// they were not running.
    #[test]
    fn a_cut_keeps_the_faster_half_and_the_defaults() {
        let medians = vec![(1.3, 0), (1.0, 1), (1.1, 2), (1.2, 3), (1.05, 4), (9.0, 5)];
        assert_eq!(survivors(medians.clone(), None), [1, 4, 2]);
        assert_eq!(survivors(medians.clone(), Some(0)), [1, 4, 2, 0]);
        assert_eq!(survivors(medians.clone(), Some(4)), [1, 4, 2]);
        assert_eq!(survivors(medians.clone(), Some(7)), [1, 4, 2]);
        let far = vec![(1.0, 0), (2.0, 1), (3.0, 2), (4.0, 3)];
        assert_eq!(survivors(far, Some(3)), [0, 1, 3]);
    }
}
