//! The built-in references that work row by row, in f64: `gemv`,
//! `reduce_sum`, `softmax` and `layernorm` over mode 1 of an (M, N)
//! operand, each row through the layouts' offsets.

use crate::RuntimeError;
use crate::host::HostBuffer;
use crate::manifest::ReferenceKind;
use crate::reference::Expected;

/// One operand as the computation reads it: its buffer and, per row and
/// per column, the offsets that mode 0 and mode 1 add (a vector's second
/// is `[0]`).
pub struct RowView<'a> {
    pub buffer: &'a HostBuffer,
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
}

impl RowView<'_> {
    fn row(&self, i: usize) -> impl Iterator<Item = f64> + '_ {
        let base = self.rows[i];
        self.cols.iter().map(move |&c| self.buffer.get(base + c))
    }
}

/// `tensors` in the reference's operand order (`params` their parameter
/// indices), `scalars` its scalars; the output is the last tensor.
pub fn compute(
    kind: ReferenceKind,
    tensors: &[RowView],
    params: &[usize],
    scalars: &[f64],
) -> Result<Expected, RuntimeError> {
    let bad = || RuntimeError::Manifest(format!("the operands of a {kind:?} reference"));
    let out = tensors.last().ok_or_else(bad)?;
    let mut offsets = Vec::new();
    let mut values = Vec::new();
    let m = tensors[0].rows.len();
    for i in 0..m {
        let x: Vec<f64> = tensors[0].row(i).collect();
        let n = x.len() as f64;
        match kind {
            ReferenceKind::Gemv => {
                // y = alpha * A x + beta * y; x is a vector of the columns.
                let [_, v, y] = tensors else {
                    return Err(bad());
                };
                let [alpha, beta] = scalars else {
                    return Err(bad());
                };
                let dot: f64 = x
                    .iter()
                    .zip(v.rows.iter())
                    .map(|(a, &o)| a * v.buffer.get(o))
                    .sum();
                offsets.push(y.rows[i]);
                values.push(alpha * dot + beta * y.buffer.get(y.rows[i]));
            }
            ReferenceKind::ReduceSum => {
                offsets.push(out.rows[i]);
                values.push(x.iter().sum());
            }
            ReferenceKind::Softmax => {
                let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = x.iter().map(|v| (v - max).exp()).sum();
                for (j, v) in x.iter().enumerate() {
                    offsets.push(out.rows[i] + out.cols[j]);
                    values.push((v - max).exp() / sum);
                }
            }
            ReferenceKind::LayerNorm => {
                // (x - mean) / sqrt(var + eps) * gamma + beta, the variance
                // the population's.
                let [_, gamma, beta, _] = tensors else {
                    return Err(bad());
                };
                let [eps] = scalars else { return Err(bad()) };
                let mean = x.iter().sum::<f64>() / n;
                let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
                let r = 1.0 / (var + eps).sqrt();
                let (g, b): (Vec<f64>, Vec<f64>) = (gamma.row(i).collect(), beta.row(i).collect());
                for (j, v) in x.iter().enumerate() {
                    offsets.push(out.rows[i] + out.cols[j]);
                    values.push((v - mean) * r * g[j] + b[j]);
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(Expected {
        output: *params.last().ok_or_else(bad)?,
        offsets,
        values,
        sample: None,
    })
}
