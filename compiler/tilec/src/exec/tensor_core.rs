//! The executor's warp-wide instructions: `ldmatrix`, `stmatrix`,
//! `mma.sync` and the arithmetic of the tensor cores.
//!
//! A warp instruction runs once per warp, with every lane's registers: the
//! MMA atom's thread-value layouts say which element of A, B and C each
//! lane's value is, so the product is computed on whole matrices and each
//! lane's part written back, as the hardware does.

use super::{Block, Result};
use crate::ir::{Addr, Fragment, SmemOperand, Space, WgmmaA};
use crate::span::Span;
use tilec_layout::{MmaAtom, Operand};

impl Block<'_> {
    /// `c += a * b^T` for every warp of the block.
    pub(super) fn mma_sync(
        &mut self,
        atom: &MmaAtom,
        [a, b, c]: [&Fragment; 3],
        span: Span,
    ) -> Result<()> {
        let lanes = atom.threads as usize;
        let (m, n, k) = (atom.m as usize, atom.n as usize, atom.k as usize);
        for warp in 0..self.threads / lanes {
            if !self.group_runs(warp * lanes, lanes, span)? {
                continue;
            }
            let mut ma = vec![0.0; m * k];
            let mut mb = vec![0.0; n * k];
            for lane in 0..lanes {
                let t = warp * lanes + lane;
                for (f, op, rows, into) in
                    [(a, Operand::A, m, &mut ma), (b, Operand::B, n, &mut mb)]
                {
                    for (v, &i) in f.index.iter().enumerate() {
                        let (r, col) = atom.element(op, lane as i64, v as i64);
                        into[r as usize + rows * col as usize] =
                            self.register(t, f.array, i, span)?;
                    }
                }
            }
            self.accumulate(atom, c, warp * lanes, [&ma, &mb], span)?;
        }
        Ok(())
    }

    /// `c += a * b^T` for the lanes of one instruction, from `first` on:
    /// `a` (M, K) and `b` (N, K) column-major, each lane's accumulators
    /// placed by the atom's C layout and summed as the tensor cores do.
    fn accumulate(
        &mut self,
        atom: &MmaAtom,
        c: &Fragment,
        first: usize,
        [a, b]: [&[f64]; 2],
        span: Span,
    ) -> Result<()> {
        let (m, n, k) = (atom.m as usize, atom.n as usize, atom.k as usize);
        for lane in 0..atom.threads as usize {
            let t = first + lane;
            for (v, &i) in c.index.iter().enumerate() {
                let (r, col) = atom.element(Operand::C, lane as i64, v as i64);
                let (r, col) = (r as usize, col as usize);
                let terms: Vec<(f64, f64)> =
                    (0..k).map(|kk| (a[r + m * kk], b[col + n * kk])).collect();
                let acc = self.register(t, c.array, i, span)? as f32;
                let d = tensor_core_sum(acc, &terms);
                self.set_register(t, c.array, i as usize, d as f64);
            }
        }
        Ok(())
    }

    /// `c += a * b^T` for every warpgroup, B (and an `_SS` atom's A) read
    /// where its descriptor says (the hardware's swizzle on byte
    /// addresses), an `_RS` atom's A from the threads' registers as its
    /// layout places them, one k16 step summed as the tensor cores sum it.
    /// The compiler waits for each group before anything writes what it
    /// reads or accumulates, so running it at once is exact.
    pub(super) fn wgmma(
        &mut self,
        atom: &MmaAtom,
        a: &WgmmaA,
        b: &SmemOperand,
        c: &Fragment,
        span: Span,
    ) -> Result<()> {
        let (m, n) = (atom.m as usize, atom.n as usize);
        let lanes = atom.threads as usize;
        for group in 0..self.threads / lanes {
            let first = group * lanes;
            if !self.group_runs(first, lanes, span)? {
                continue;
            }
            let ta = match a {
                WgmmaA::Shared(a) => self.smem_tile(atom, a, m, first, span)?,
                WgmmaA::Registers(f) => {
                    let mut tile = vec![0.0; m * atom.k as usize];
                    for lane in 0..lanes {
                        for (v, &i) in f.index.iter().enumerate() {
                            let (r, col) = atom.element(Operand::A, lane as i64, v as i64);
                            tile[r as usize + m * col as usize] =
                                self.register(first + lane, f.array, i, span)?;
                        }
                    }
                    tile
                }
            };
            let tb = self.smem_tile(atom, b, n, first, span)?;
            self.accumulate(atom, c, first, [&ta, &tb], span)?;
        }
        Ok(())
    }

    /// The (rows, 16) tile a wgmma operand in shared memory gives the
    /// warpgroup from thread `first` on, column-major.
    fn smem_tile(
        &mut self,
        atom: &MmaAtom,
        o: &SmemOperand,
        rows: usize,
        first: usize,
        span: Span,
    ) -> Result<Vec<f64>> {
        let (k, lanes) = (atom.k as usize, atom.threads as usize);
        let Space::Shared(s) = o.start.space else {
            return Err(self.err(
                first,
                span,
                "gives wgmma an operand outside shared memory".into(),
            ));
        };
        let start = self.ints[first][o.start.index];
        if let Some(t) = (first..first + lanes).find(|&t| self.ints[t][o.start.index] != start) {
            return Err(self.err(
                t,
                span,
                format!("gives wgmma the operand start {label}[{}], not its warpgroup's {label}[{start}]", self.ints[t][o.start.index], label = self.ir.shared_label(s)),
            ));
        }
        let e = self.ir.shared[s].elem.bytes();
        // The descriptor holds the address >> 4.
        if (start * e) % 16 != 0 {
            return Err(self.err(
                first,
                span,
                format!(
                    "gives wgmma the operand start {}[{start}], not 16-byte aligned",
                    self.ir.shared_label(s)
                ),
            ));
        }
        let mut tile = vec![0.0; rows * k];
        for kk in 0..k {
            for r in 0..rows {
                let byte = o.desc.address(start * e, e, r as i64, kk as i64);
                // One read for the warpgroup, by its first thread: the
                // instruction is the warpgroup's.
                tile[r + rows * kk] = self.read_shared(s, byte / e, first, span)?;
            }
        }
        Ok(tile)
    }

    /// A warp's ldmatrix (or with `store` its twin stmatrix) of `count`
    /// 8x8 matrices: each lane's row address checked for 16-byte alignment,
    /// then each lane's two elements of each matrix moved between its
    /// registers and the rows (`ir::InstKind::Matrix`). A lane's elements
    /// count as its own accesses for the race checks.
    pub(super) fn matrix(
        &mut self,
        store: bool,
        count: usize,
        trans: bool,
        shared: &Addr,
        regs: &Fragment,
        span: Span,
    ) -> Result<()> {
        let name = if store { "stmatrix" } else { "ldmatrix" };
        let Space::Shared(s) = shared.space else {
            return Err(self.err(
                0,
                span,
                format!("runs {name} on memory outside shared memory"),
            ));
        };
        for warp in 0..self.threads / 32 {
            if !self.group_runs(warp * 32, 32, span)? {
                continue;
            }
            for q in 0..count {
                let mut rows = [0i64; 8];
                for (r, row) in rows.iter_mut().enumerate() {
                    let t = warp * 32 + 8 * q + r;
                    *row = self.ints[t][shared.index];
                    if row.rem_euclid(8) != 0 {
                        return Err(self.err(
                            t,
                            span,
                            format!(
                                "gives {name} the row {}[{row}], which is not 16-byte aligned",
                                self.ir.shared_label(s)
                            ),
                        ));
                    }
                }
                for lane in 0..32 {
                    let t = warp * 32 + lane;
                    let (l4, l2) = ((lane / 4) as i64, lane % 4);
                    let at = if trans {
                        [rows[2 * l2] + l4, rows[2 * l2 + 1] + l4]
                    } else {
                        [
                            rows[l4 as usize] + 2 * l2 as i64,
                            rows[l4 as usize] + 2 * l2 as i64 + 1,
                        ]
                    };
                    for (h, i) in at.into_iter().enumerate() {
                        let slot = regs.index[2 * q + h];
                        if store {
                            let v = self.register(t, regs.array, slot, span)?;
                            self.write_shared(s, i, t, v, span)?;
                        } else {
                            let v = self.read_shared(s, i, t, span)?;
                            self.set_register(t, regs.array, slot as usize, v);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A warp instruction's result in register `i` of array `r` of thread `t`.
    fn set_register(&mut self, t: usize, r: usize, i: usize, v: f64) {
        self.registers[t][r].values[i] = v;
        self.registers[t][r].written[i] = true;
    }
}

/// One output of a tensor-core instruction: the accumulator `c` plus the
/// exact products `a * b` of one k-step, as the H200 sums them (probed with
/// mma.sync, docs/correctness.md): each product is aligned to
/// the largest exponent sum `e(a) + e(b)` among them (the accumulator by
/// its own exponent) and truncated toward zero to 25 bits below it; the
/// truncated terms are added exactly and the sum truncated to f32.
pub fn tensor_core_sum(c: f32, terms: &[(f64, f64)]) -> f32 {
    // Infinities and NaNs follow IEEE (an infinite product makes the sum
    // infinite, or NaN against the other sign); the window is for finite
    // values.
    if !c.is_finite() || terms.iter().any(|(a, b)| !(a * b).is_finite()) {
        return terms.iter().fold(c as f64, |s, (a, b)| s + a * b) as f32;
    }
    // floor(log2 |x|); zero has no exponent and never sets the window.
    let exponent = |x: f64| (x != 0.0).then(|| x.abs().log2().floor() as i32);
    let emax = terms
        .iter()
        .filter_map(|(a, b)| Some(exponent(*a)? + exponent(*b)?))
        .chain(exponent(c as f64))
        .max();
    let Some(emax) = emax else {
        return c + 0.0;
    };
    let quantum = 2f64.powi(emax - 25);
    let sum: f64 = terms
        .iter()
        .map(|(a, b)| a * b)
        .chain(std::iter::once(c as f64))
        .map(|x| (x / quantum).trunc() * quantum)
        .sum();
    toward_zero(sum)
}

/// `x` rounded toward zero to f32.
fn toward_zero(x: f64) -> f32 {
    let r = x as f32;
    if (r as f64).abs() > x.abs() {
        // One step toward zero: the next f32 of smaller magnitude.
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sums_stay_exact() {
        assert_eq!(
            tensor_core_sum(1.0, &[(2.0, 1.0), (0.5, 1.0), (-0.25, 1.0)]),
            3.25
        );
        assert_eq!(tensor_core_sum(0.0, &[(0.0, 1.0); 16]), 0.0);
    }

    #[test]
    fn infinities_and_nans_sum_as_ieee() {
        assert_eq!(tensor_core_sum(1.0, &[(f64::INFINITY, 2.0)]), f32::INFINITY);
        assert!(tensor_core_sum(f32::INFINITY, &[(f64::INFINITY, -1.0)]).is_nan());
        assert!(tensor_core_sum(f32::NAN, &[(1.0, 1.0)]).is_nan());
    }

    #[test]
    fn small_terms_below_the_window_are_dropped() {
        // 2^-30 lies more than 25 bits below 1: it is truncated away.
        assert_eq!(
            tensor_core_sum(1.0, &[(2f64.powi(-15), 2f64.powi(-15))]),
            1.0
        );
        // The window is set by exponent sums: 1.5 * 1.5 = 2.25 has the
        // exponent sum 0, so its bits down to 2^-25 count.
        let x = 1.5 + 2f64.powi(-7);
        assert_eq!(tensor_core_sum(0.0, &[(x, x)]), (x * x) as f32);
        // The sum is truncated, not rounded, to f32.
        let below_two = 2.0 - 2f64.powi(-24);
        assert_eq!(
            tensor_core_sum(0.0, &[(below_two, 1.0)]),
            2.0 - 2f32.powi(-23)
        );
    }
}
