//! Reference computations on the CPU, in f64, read through the parameters'
//! layouts: what a kernel's `reference` statement says it computes.

use crate::RuntimeError;
use crate::host::HostBuffer;
use crate::manifest::{Manifest, ParamKind, ReferenceKind};
use crate::plan::LaunchPlan;
use rayon::prelude::*;
use tilec_layout::{Int, IntTuple, Layout};

/// A kernel argument on the host.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(HostBuffer),
    Scalar(f64),
}

/// The expected contents of one output tensor, at the given element offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub output: usize,
    pub offsets: Vec<usize>,
    pub values: Vec<f64>,
    /// For a reference computed on a sample of its outputs: which.
    pub sample: Option<crate::Sample>,
}

impl Expected {
    /// The same values, by increasing offset: a comparison then reads the
    /// output in memory order (a column-major C compared row by row missed
    /// the cache on every element: 0.1 s per million elements, which a
    /// tuning race paid for every variant).
    pub fn in_memory_order(self) -> Expected {
        if self.offsets.is_sorted() {
            return self;
        }
        let mut pairs: Vec<(usize, f64)> = self.offsets.into_iter().zip(self.values).collect();
        pairs.par_sort_unstable_by_key(|&(o, _)| o);
        let (offsets, values) = pairs.into_iter().unzip();
        Expected {
            offsets,
            values,
            ..self
        }
    }
}

/// Multiply-adds of a GEMM reference computed whole: 4096^3 (seconds on
/// 16 cores in f64). Beyond it the reference is a sample of C's rows.
const GEMM_REFERENCE_MACS: usize = 1 << 36;

/// The rows of C a GEMM reference computes, of `rows`, each costing
/// `per_row` multiply-adds: all of them, or one in every `s` with its place
/// in the group of `s` advancing by one from group to group (every tile of
/// `s` rows or more is reached, at every position within a tile over the
/// matrix), and the last row (the edge). `s` is at most 64, so that every
/// tile of 64 rows has one: a matrix that needs more is checked longer.
fn gemm_rows(rows: usize, per_row: usize) -> (Vec<usize>, Option<crate::Sample>) {
    let work = rows.saturating_mul(per_row);
    if work <= GEMM_REFERENCE_MACS {
        return ((0..rows).collect(), None);
    }
    let s = work.div_ceil(GEMM_REFERENCE_MACS).min(rows).min(64);
    let mut picked: Vec<usize> = (0..rows.div_ceil(s))
        .map(|g| g * s + g % s)
        .filter(|&r| r < rows)
        .collect();
    if picked.last() != Some(&(rows - 1)) {
        picked.push(rows - 1);
    }
    let sample = crate::Sample {
        ran: picked.len() as u64,
        of: rows as u64,
        unit: "rows of C",
    };
    (picked, Some(sample))
}

/// The coordinate of the element at `offset` of tensor parameter `p`, one
/// integer a mode as the program indexes it (a nested mode's leaves folded
/// column-major), for a report. Each leaf's coordinate is taken from the
/// largest stride down and the result checked to land on `offset`: `None`
/// where that does not (a stride symbol with no value here, a layout whose
/// strides do not nest).
pub fn coordinate_of(m: &Manifest, plan: &LaunchPlan, p: usize, offset: usize) -> Option<Vec<i64>> {
    coordinate_in(&static_layout(m, plan, p).ok()?, offset)
}

/// [`coordinate_of`] in a static layout.
fn coordinate_in(layout: &Layout, offset: usize) -> Option<Vec<i64>> {
    // (mode, size, stride) of every leaf.
    let mut leaves = Vec::new();
    for (i, (n, d)) in layout
        .shape()
        .modes()
        .iter()
        .zip(layout.stride().modes())
        .enumerate()
    {
        for (n, d) in n.leaves().iter().zip(d.leaves()) {
            leaves.push((i, n.as_static()?, d.as_static()?));
        }
    }
    let mut order: Vec<usize> = (0..leaves.len()).collect();
    order.sort_by_key(|&l| std::cmp::Reverse(leaves[l].2));
    let (mut left, mut at) = (i64::try_from(offset).ok()?, vec![0; leaves.len()]);
    for l in order {
        let (_, size, stride) = leaves[l];
        if stride > 0 && size > 1 {
            at[l] = (left / stride).min(size - 1);
            left -= at[l] * stride;
        }
    }
    if left != 0 {
        return None;
    }
    let mut coord = vec![0; layout.shape().modes().len()];
    let mut scale = vec![1; coord.len()];
    for (l, &(i, size, _)) in leaves.iter().enumerate() {
        coord[i] += at[l] * scale[i];
        scale[i] *= size;
    }
    Some(coord)
}

/// The layout of parameter `p` with the launch's extents substituted.
fn static_layout(m: &Manifest, plan: &LaunchPlan, p: usize) -> Result<Layout, RuntimeError> {
    let ParamKind::Tensor { layout, .. } = &m.params[p].kind else {
        return Err(RuntimeError::Manifest(format!(
            "{} is not a tensor",
            m.params[p].name
        )));
    };
    let env = |n: &str| {
        m.extents
            .iter()
            .position(|e| e == n)
            .map(|i| plan.extents[i])
    };
    // A name that is no extent, or a value past i64, is the manifest's
    // error: a stand-in value would check the kernel against a wrong
    // reference without a word.
    let fix = |t: &IntTuple| -> Result<IntTuple, RuntimeError> {
        let leaves = t.leaves().into_iter().map(|i| {
            i.eval(&env).map(Int::Static).ok_or_else(|| {
                RuntimeError::Manifest(format!(
                    "the layout of {} has {i}, which these extents give no value",
                    m.params[p].name
                ))
            })
        });
        Ok(t.unflatten_like(&mut leaves.collect::<Result<Vec<_>, _>>()?.into_iter()))
    };
    Layout::new(fix(layout.shape())?, fix(layout.stride())?)
        .map_err(|e| RuntimeError::Manifest(e.to_string()))
}

/// The offsets of the elements of mode `i`, by 1-D coordinate within it.
fn mode_offsets(l: &Layout, i: usize) -> Result<Vec<usize>, RuntimeError> {
    // A vector's missing second mode: one coordinate.
    if i == 1 && l.rank() == 1 {
        return Ok(vec![0]);
    }
    let mode = l
        .mode(i)
        .map_err(|e| RuntimeError::Manifest(e.to_string()))?;
    let n = mode.size().as_static().unwrap_or(0);
    (0..n)
        .map(|j| {
            mode.at_static(j)
                .and_then(|o| usize::try_from(o).ok())
                .ok_or_else(|| RuntimeError::Manifest(format!("{mode} at {j}")))
        })
        .collect()
}

fn tensor(args: &[Arg], p: usize) -> Result<&HostBuffer, RuntimeError> {
    match &args[p] {
        Arg::Tensor(t) => Ok(t),
        Arg::Scalar(_) => Err(RuntimeError::Manifest(format!(
            "parameter {p} is not a tensor"
        ))),
    }
}

fn scalar(args: &[Arg], p: usize) -> Result<f64, RuntimeError> {
    match &args[p] {
        Arg::Scalar(v) => Ok(*v),
        Arg::Tensor(_) => Err(RuntimeError::Manifest(format!(
            "parameter {p} is not a scalar"
        ))),
    }
}

/// Where a run's expected outputs come from: [`builtin`] for the built-in
/// references, or the caller's (the compiler runs reference kernels on its
/// CPU executor). None at all: the run is not checked.
pub type Expect<'a> = dyn Fn(&LaunchPlan, &[Arg]) -> Result<Vec<Expected>, RuntimeError> + 'a;

/// The manifest's built-in reference, or none for a kernel that states none.
pub fn builtin(
    m: &Manifest,
    plan: &LaunchPlan,
    args: &[Arg],
) -> Result<Vec<Expected>, RuntimeError> {
    match &m.reference {
        None => Ok(Vec::new()),
        Some(r) if r.kind == ReferenceKind::Kernel => Err(RuntimeError::Usage(format!(
            "kernel {}'s reference is the kernel {}, which runs on the compiler's CPU executor: use `tilec run`",
            m.kernel,
            r.kernel.as_deref().unwrap_or("?")
        ))),
        Some(_) => expected(m, plan, args).map(|e| vec![e.in_memory_order()]),
    }
}

/// Computes the built-in reference the manifest names, from the kernel's inputs.
pub fn expected(m: &Manifest, plan: &LaunchPlan, args: &[Arg]) -> Result<Expected, RuntimeError> {
    let r = m.reference.as_ref().ok_or_else(|| {
        RuntimeError::Usage(format!(
            "kernel {} states no reference; add e.g. `reference gemm(A, B, C, alpha, beta);`",
            m.kernel
        ))
    })?;
    let ops = &r.operands;
    let tensors: Vec<usize> = ops
        .iter()
        .copied()
        .filter(|&p| matches!(m.params[p].kind, ParamKind::Tensor { .. }))
        .collect();
    let l: Vec<Layout> = tensors
        .iter()
        .map(|&p| static_layout(m, plan, p))
        .collect::<Result<_, _>>()?;
    match r.kind {
        ReferenceKind::Gemv
        | ReferenceKind::ReduceSum
        | ReferenceKind::Softmax
        | ReferenceKind::LayerNorm => {
            let views = tensors
                .iter()
                .zip(&l)
                .map(|(&p, layout)| {
                    Ok(crate::rows::RowView {
                        buffer: tensor(args, p)?,
                        rows: mode_offsets(layout, 0)?,
                        cols: match layout.rank() {
                            1 => vec![0],
                            _ => mode_offsets(layout, 1)?,
                        },
                    })
                })
                .collect::<Result<Vec<_>, RuntimeError>>()?;
            let scalars = ops
                .iter()
                .filter(|&&p| !tensors.contains(&p))
                .map(|&p| scalar(args, p))
                .collect::<Result<Vec<_>, _>>()?;
            crate::rows::compute(r.kind, &views, &tensors, &scalars)
        }
        ReferenceKind::Gemm => {
            let (a, b, c) = (
                tensor(args, ops[0])?,
                tensor(args, ops[1])?,
                tensor(args, ops[2])?,
            );
            let (alpha, beta) = (scalar(args, ops[3])?, scalar(args, ops[4])?);
            let (am, ak) = (mode_offsets(&l[0], 0)?, mode_offsets(&l[0], 1)?);
            let (bn, bk) = (mode_offsets(&l[1], 0)?, mode_offsets(&l[1], 1)?);
            let (cm, cn) = (mode_offsets(&l[2], 0)?, mode_offsets(&l[2], 1)?);
            // A batch mode, last on all three operands; else one product.
            let batch = |x: &Layout| match x.rank() {
                3 => mode_offsets(x, 2),
                _ => Ok(vec![0]),
            };
            let (al, bl, cl) = (batch(&l[0])?, batch(&l[1])?, batch(&l[2])?);
            let (k, n) = (ak.len(), bn.len());
            let per_row = n.saturating_mul(k).saturating_mul(cl.len());
            let (sampled, sample) = gemm_rows(am.len(), per_row);
            let rows = sampled.len();
            let mut values = vec![0.0; cl.len() * rows * n];
            let mut offsets = Vec::with_capacity(values.len());
            for (li, out) in values.chunks_mut((rows * n).max(1)).enumerate() {
                // Packed rows: a[m][k] and b[n][k], contiguous in k, for fast dot products.
                let (ab, bb) = (al[li], bl[li]);
                let pa: Vec<f64> = sampled
                    .iter()
                    .flat_map(|&m| {
                        let mo = am[m];
                        ak.iter().map(move |&ko| a.get(ab + mo + ko))
                    })
                    .collect();
                let pb: Vec<f64> = bn
                    .iter()
                    .flat_map(|&no| bk.iter().map(move |&ko| b.get(bb + no + ko)))
                    .collect();
                let cb = cl[li];
                // Blocks of rows of A against each row of B keep that row in cache.
                out.par_chunks_mut(16 * n.max(1))
                    .enumerate()
                    .for_each(|(blk, out)| {
                        let rows = out.len() / n.max(1);
                        for j in 0..n {
                            let brow = &pb[j * k..(j + 1) * k];
                            for r in 0..rows {
                                let i = blk * 16 + r;
                                let arow = &pa[i * k..(i + 1) * k];
                                let dot = dot(arow, brow);
                                let m = cm[sampled[i]];
                                out[r * n + j] = alpha * dot + beta * c.get(cb + m + cn[j]);
                            }
                        }
                    });
                offsets.extend(sampled.iter().flat_map(|&m| {
                    let mo = cm[m];
                    cn.iter().map(move |&no| cb + mo + no)
                }));
            }
            Ok(Expected {
                output: ops[2],
                offsets,
                values,
                sample,
            })
        }
        ReferenceKind::Kernel => Err(RuntimeError::Usage(
            "a reference kernel runs on the compiler's CPU executor".into(),
        )),
        ReferenceKind::Copy | ReferenceKind::Transpose => {
            let a = tensor(args, ops[0])?;
            let (a0, a1) = (mode_offsets(&l[0], 0)?, mode_offsets(&l[0], 1)?);
            let (b0, b1) = (mode_offsets(&l[1], 0)?, mode_offsets(&l[1], 1)?);
            let transpose = r.kind == ReferenceKind::Transpose;
            let mut offsets = Vec::with_capacity(a0.len() * a1.len());
            let mut values = Vec::with_capacity(a0.len() * a1.len());
            for (i, &ao) in a0.iter().enumerate() {
                for (j, &bo) in a1.iter().enumerate() {
                    values.push(a.get(ao + bo));
                    offsets.push(if transpose {
                        b0[j] + b1[i]
                    } else {
                        b0[i] + b1[j]
                    });
                }
            }
            Ok(Expected {
                output: ops[1],
                offsets,
                values,
                sample: None,
            })
        }
    }
}

/// A dot product with eight independent sums, so that it vectorizes (f64
/// addition is not reassociated for us).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// The bytes parameter `p` holds at `plan`'s extents (none for a scalar).
pub fn param_bytes(m: &Manifest, plan: &LaunchPlan, p: usize) -> usize {
    match &m.params[p].kind {
        ParamKind::Tensor { elem, .. } => plan.lens[p].unwrap_or(0) * elem.bytes() as usize,
        ParamKind::Scalar { .. } => 0,
    }
}

/// Floating-point work of the reference computation (for TFLOP/s), or the
/// bytes it moves (for GB/s).
pub fn work(m: &Manifest, plan: &LaunchPlan) -> Option<(f64, &'static str)> {
    let r = m.reference.as_ref()?;
    match r.kind {
        ReferenceKind::Gemm => {
            let l = static_layout(m, plan, r.operands[0]).ok()?;
            let c = static_layout(m, plan, r.operands[2]).ok()?;
            let k = l.mode(1).ok()?.size().as_static()? as f64;
            Some((2.0 * c.size().as_static()? as f64 * k, "flop"))
        }
        // Bytes each tensor operand holds, once: the traffic of a
        // memory-bound kernel that reads its inputs and writes its outputs.
        ReferenceKind::Copy
        | ReferenceKind::Transpose
        | ReferenceKind::Kernel
        | ReferenceKind::Gemv
        | ReferenceKind::ReduceSum
        | ReferenceKind::Softmax
        | ReferenceKind::LayerNorm => {
            let bytes: usize = r.operands.iter().map(|&p| param_bytes(m, plan, p)).sum();
            Some((bytes as f64, "byte"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_layout::tup;

    /// Up to 4096^3 a GEMM reference is whole; past it, one row in every
    /// `s`, at every place within a group over the matrix, and the last.
    #[test]
    fn a_large_gemm_reference_samples_rows_of_every_tile() {
        assert_eq!(gemm_rows(4096, 4096 * 4096), ((0..4096).collect(), None));
        let (rows, sample) = gemm_rows(8192, 8192 * 8192);
        let s = 8;
        // The last group's pick, 1023 * 8 + 1023 % 8, is the last row.
        assert_eq!(rows.len(), 8192 / s);
        assert_eq!(rows[..3], [0, s + 1, 2 * s + 2]);
        assert_eq!(rows.last(), Some(&8191));
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        // Every tile of 128 rows has some, at every residue mod 8 overall.
        assert!((0..64).all(|t| rows.iter().any(|r| r / 128 == t)));
        assert!((0..s).all(|x| rows.iter().any(|r| r % s == x)));
        let sample = sample.unwrap();
        assert_eq!((sample.ran, sample.of), (rows.len() as u64, 8192));
        // At most one row in 64: every tile of 64 rows is checked.
        let (rows, _) = gemm_rows(1 << 20, 4096 * 4096);
        assert!((0..1 << 14).all(|g| rows[g] / 64 == g));
        // A single row too long to compute whole is still computed.
        assert_eq!(gemm_rows(1, usize::MAX).0, vec![0]);
    }

    /// Sorting by offset keeps each value with its offset, and the
    /// relative error of an output is the same in either order.
    #[test]
    fn memory_order_keeps_the_pairs() {
        let e = Expected {
            output: 2,
            offsets: vec![3, 0, 2, 1],
            values: vec![30.0, 0.5, 20.0, 10.0],
            sample: None,
        };
        let out = HostBuffer::F32(vec![0.5, 10.0, 21.0, 30.0]);
        let before = crate::host::deviation(&out, &e.values, &e.offsets).norm;
        let s = e.clone().in_memory_order();
        assert_eq!(s.offsets, vec![0, 1, 2, 3]);
        assert_eq!(s.values, vec![0.5, 10.0, 20.0, 30.0]);
        assert_eq!((s.output, s.sample), (2, None));
        let after = crate::host::deviation(&out, &s.values, &s.offsets).norm;
        assert!((before - after).abs() < 1e-15 && after > 0.0);
    }

    fn located(shape: IntTuple, stride: IntTuple, offset: usize) -> Option<Vec<i64>> {
        coordinate_in(&Layout::new(shape, stride).unwrap(), offset)
    }

    #[test]
    fn an_offset_is_found_by_the_coordinate_the_program_indexes_with() {
        // Row-major: offset 5 * 40 + 3 is (5, 3).
        assert_eq!(located(tup!(9, 40), tup!(40, 1), 203), Some(vec![5, 3]));
        // A nested row mode ((2, 4), 7):((1, 14), 2): row 5 is (1, 2), at 1 + 28.
        assert_eq!(
            located(tup!((2, 4), 7), tup!((1, 14), 2), 1 + 28 + 2 * 3),
            Some(vec![5, 3])
        );
        // A broadcast mode (stride 0) sits at 0.
        assert_eq!(located(tup!(9, 40), tup!(0, 1), 7), Some(vec![0, 7]));
        // Strides that do not nest: 3 = 1 * 3 is (1, 0), found; 4 is not
        // reached by the walk from the largest stride, and says so.
        assert_eq!(located(tup!(2, 3), tup!(3, 2), 3), Some(vec![1, 0]));
        assert_eq!(located(tup!(2, 3), tup!(3, 2), 4), None);
    }
}
