//! The math functions as IEEE operations, and the `f32` backend the
//! executor runs them on. Branches are both computed and selected, so a
//! warp never diverges on them.
//!
//! Accuracy (against f64, over every input class, by the tests below):
//! exp and exp2 1 ulp, log 2 ulp, tanh 2 ulp, erf 2 ulp, rsqrt 1.5 ulp.

use super::{Approx, Binary, Float, Unary};

/// `op(x)`.
pub fn unary<F: Float>(f: &mut F, op: Unary, x: F::V) -> Result<F::V, F::Error> {
    match op {
        Unary::Neg => f.neg(x),
        Unary::Abs => f.abs(x),
        Unary::Sqrt => f.sqrt(x),
        Unary::Rsqrt => {
            let (one, s) = (f.lit(1.0)?, f.sqrt(x)?);
            f.div(one, s)
        }
        Unary::Exp => exp(f, x),
        Unary::Exp2 => exp2(f, x),
        Unary::Log => log(f, x),
        Unary::Tanh => tanh(f, x),
        Unary::Erf => erf(f, x),
        Unary::Gelu => {
            let c = f.lit(std::f32::consts::FRAC_1_SQRT_2)?;
            let z = f.mul(x, c)?;
            let e = erf(f, z)?;
            gelu_from(f, x, e)
        }
        Unary::GeluTanh => {
            let u = gelu_tanh_argument(f, x)?;
            let t = tanh(f, u)?;
            gelu_from(f, x, t)
        }
        Unary::FastGeluTanh => {
            let u = gelu_tanh_argument(f, x)?;
            let t = f.approx(Approx::Tanh, u)?;
            gelu_from(f, x, t)
        }
        // With e = e^-|x| (never past 1, so never overflowing): 1 / (1 + e)
        // where x >= 0, e / (1 + e) where x < 0 (whose value, as small as
        // e^x, would be 0 through an overflowing e^-x); SiLU's numerator
        // times x.
        Unary::Sigmoid | Unary::Silu => {
            let a = f.abs(x)?;
            let minus = f.neg(a)?;
            let e = exp(f, minus)?;
            let (zero, one) = (f.lit(0.0)?, f.lit(1.0)?);
            let d = f.add(one, e)?;
            let negative = f.compare(Binary::Lt, x, zero)?;
            let top = match op {
                Unary::Silu => {
                    let xe = f.mul(x, e)?;
                    f.select(negative, xe, x)?
                }
                _ => f.select(negative, e, one)?,
            };
            f.div(top, d)
        }
        // CUDA's __expf and __logf: the approximation in base 2, the
        // argument or the result scaled by one rounded product.
        Unary::FastExp => {
            let log2e = f.lit(std::f32::consts::LOG2_E)?;
            let y = f.mul(x, log2e)?;
            f.approx(Approx::Ex2, y)
        }
        Unary::FastLog => {
            let (l, ln2) = (f.approx(Approx::Lg2, x)?, f.lit(std::f32::consts::LN_2)?);
            f.mul(l, ln2)
        }
        Unary::FastExp2 => f.approx(Approx::Ex2, x),
        Unary::FastSqrt => f.approx(Approx::Sqrt, x),
        Unary::FastRsqrt => f.approx(Approx::Rsqrt, x),
        Unary::FastTanh => f.approx(Approx::Tanh, x),
    }
}

/// `op(a, b)`.
pub fn binary<F: Float>(f: &mut F, op: Binary, a: F::V, b: F::V) -> Result<F::V, F::Error> {
    match op {
        Binary::Add => f.add(a, b),
        Binary::Sub => f.sub(a, b),
        Binary::Mul => f.mul(a, b),
        Binary::Div => f.div(a, b),
        Binary::Min => f.min(a, b),
        Binary::Max => f.max(a, b),
        _ => f.compare(op, a, b),
    }
}

/// `x/2 (1 + s)` as `h + h s`, `h = x/2` (exact): one rounding where
/// `1 + s` would add a second.
fn gelu_from<F: Float>(f: &mut F, x: F::V, s: F::V) -> Result<F::V, F::Error> {
    let half = f.lit(0.5)?;
    let h = f.mul(x, half)?;
    f.fma(h, s, h)
}

/// `sqrt(2/pi) (x + 0.044715 x^3)` as `x (k0 + k1 x^2)`: three operations
/// where the textbook order takes five.
fn gelu_tanh_argument<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    let k0 = (2.0 / std::f64::consts::PI).sqrt();
    let (k0, k1) = (f.lit(k0 as f32)?, f.lit((k0 * 0.044715) as f32)?);
    let x2 = f.mul(x, x)?;
    let p = f.fma(k1, x2, k0)?;
    f.mul(x, p)
}

/// `p(x)` by Horner's rule, `coefficients` from the highest power down.
fn horner<F: Float>(f: &mut F, coefficients: &[f32], x: F::V) -> Result<F::V, F::Error> {
    let mut p = f.lit(coefficients[0])?;
    for &c in &coefficients[1..] {
        let c = f.lit(c)?;
        p = f.fma(p, x, c)?;
    }
    Ok(p)
}

/// NaN stays NaN through the clamps that follow it.
fn keep_nan<F: Float>(f: &mut F, x: F::V, r: F::V) -> Result<F::V, F::Error> {
    let nan = f.compare(Binary::Ne, x, x)?;
    f.select(nan, x, r)
}

/// `e^r * 2^n` for `|r| <= ln2/2` and an integral `n` in -151..=129:
/// `1 + r + r^2 q(r)`, `q` of degree 4 fitted to `(e^r - 1 - r) / r^2` on
/// that interval (Chebyshev, coefficients in f32: relative error below
/// 1e-8), scaled in two exact steps so that neither power of two leaves
/// the normal range, the second a constant (2^64 or 2^-64). An
/// exponential is the bulk of a softmax's instructions, so each one saved
/// here is one the back end does not pay for a hundred times an entry.
fn exp_reduced<F: Float>(f: &mut F, r: F::V, n: F::V) -> Result<F::V, F::Error> {
    const FIT: [f32; 7] = [
        0.001_392_617_6,
        0.008_363_173,
        0.041_666_556,
        0.166_665_78,
        0.5,
        1.0,
        1.0,
    ];
    let p = horner(f, &FIT, r)?;
    let zero = f.lit(0.0)?;
    let up = f.compare(Binary::Ge, n, zero)?;
    let (pos, neg) = (f.lit(64.0)?, f.lit(-64.0)?);
    let k = f.select(up, pos, neg)?;
    let rest = f.sub(n, k)?;
    let s1 = f.pow2(rest)?;
    let (big, small) = (f.lit(2f32.powi(64))?, f.lit(2f32.powi(-64))?);
    let s2 = f.select(up, big, small)?;
    let p = f.mul(p, s1)?;
    f.mul(p, s2)
}

const LN2_HI: f32 = 0.693_145_75; // 0x3f317200: n * LN2_HI is exact
const LN2_LO: f32 = 1.428_606_8e-6;
const LN2: f32 = std::f32::consts::LN_2;

fn exp<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    // A NaN stays one through the clamp and every step after it.
    let xc = f.clamp(x, -104.0, 89.0)?;
    let log2e = f.lit(std::f32::consts::LOG2_E)?;
    let t = f.mul(xc, log2e)?;
    let n = f.rint(t)?;
    let (nh, nl) = (f.lit(-LN2_HI)?, f.lit(-LN2_LO)?);
    let r = f.fma(n, nh, xc)?;
    let r = f.fma(n, nl, r)?;
    exp_reduced(f, r, n)
}

fn exp2<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    let xc = f.clamp(x, -151.0, 129.0)?;
    let n = f.rint(xc)?;
    let frac = f.sub(xc, n)?;
    let (ln2, ln2_tail) = (f.lit(LN2)?, f.lit(-1.904_654_3e-9)?);
    let tail = f.mul(frac, ln2_tail)?;
    let r = f.fma(frac, ln2, tail)?;
    exp_reduced(f, r, n)
}

fn log<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    // Subnormals are scaled into the normal range first.
    let (min_normal, scale, zero) = (f.lit(f32::MIN_POSITIVE)?, f.lit(16_777_216.0)?, f.lit(0.0)?);
    let tiny = f.compare(Binary::Lt, x, min_normal)?;
    let scaled = f.mul(x, scale)?;
    let xs = f.select(tiny, scaled, x)?;
    let minus24 = f.lit(-24.0)?;
    let adjust = f.select(tiny, minus24, zero)?;
    let (e, m) = f.split(xs)?;
    let e = f.add(e, adjust)?;
    // m in [sqrt(1/2), sqrt(2)), f = m - 1 exactly.
    let (sqrt2, half, one, two) = (
        f.lit(std::f32::consts::SQRT_2)?,
        f.lit(0.5)?,
        f.lit(1.0)?,
        f.lit(2.0)?,
    );
    let big = f.compare(Binary::Gt, m, sqrt2)?;
    let halved = f.mul(m, half)?;
    let m = f.select(big, halved, m)?;
    let e_up = f.add(e, one)?;
    let e = f.select(big, e_up, e)?;
    let g = f.sub(m, one)?;
    // log(m) = 2 atanh(s), s = g / (2 + g), |s| <= 0.1716.
    let d = f.add(two, g)?;
    let s = f.div(g, d)?;
    let z = f.mul(s, s)?;
    let p = horner(
        f,
        &[2.0 / 11.0, 2.0 / 9.0, 2.0 / 7.0, 2.0 / 5.0, 2.0 / 3.0],
        z,
    )?;
    let s2 = f.add(s, s)?;
    let sz = f.mul(s, z)?;
    let lm = f.fma(sz, p, s2)?;
    let (lh, ll) = (f.lit(LN2_HI)?, f.lit(LN2_LO)?);
    let r = f.fma(e, ll, lm)?;
    let r = f.fma(e, lh, r)?;
    // log(0) = -inf, log(inf) = inf, log(x < 0) = NaN, log(NaN) = NaN.
    let (ninf, inf, nan) = (
        f.lit(f32::NEG_INFINITY)?,
        f.lit(f32::INFINITY)?,
        f.lit(f32::NAN)?,
    );
    let is_inf = f.compare(Binary::Eq, x, inf)?;
    let r = f.select(is_inf, inf, r)?;
    let is_zero = f.compare(Binary::Eq, x, zero)?;
    let r = f.select(is_zero, ninf, r)?;
    let negative = f.compare(Binary::Lt, x, zero)?;
    let r = f.select(negative, nan, r)?;
    keep_nan(f, x, r)
}

fn tanh<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    // |x| < 0.55: the odd Taylor series to x^21 (next term below 1e-10).
    const TAYLOR: [f32; 11] = [
        (18_888_466_084.0 / 194_896_477_400_625.0) as f32,
        (-443_861_162.0 / 1_856_156_927_625.0) as f32,
        (6_404_582.0 / 10_854_718_875.0) as f32,
        (-929_569.0 / 638_512_875.0) as f32,
        (21_844.0 / 6_081_075.0) as f32,
        (-1_382.0 / 155_925.0) as f32,
        (62.0 / 2_835.0) as f32,
        (-17.0 / 315.0) as f32,
        (2.0 / 15.0) as f32,
        (-1.0 / 3.0) as f32,
        1.0,
    ];
    let a = f.abs(x)?;
    let z = f.mul(x, x)?;
    let p = horner(f, &TAYLOR, z)?;
    let small = f.mul(x, p)?;
    // Otherwise 1 - 2 / (e^{2|x|} + 1), which is 1 from |x| = 9 on.
    let (one, two) = (f.lit(1.0)?, f.lit(2.0)?);
    let a2 = f.add(a, a)?;
    let e = exp(f, a2)?;
    let d = f.add(e, one)?;
    let q = f.div(two, d)?;
    let t = f.sub(one, q)?;
    let nt = f.neg(t)?;
    let zero = f.lit(0.0)?;
    let negative = f.compare(Binary::Lt, x, zero)?;
    let large = f.select(negative, nt, t)?;
    let cut = f.lit(0.55)?;
    let is_small = f.compare(Binary::Lt, a, cut)?;
    f.select(is_small, small, large)
}

fn erf<F: Float>(f: &mut F, x: F::V) -> Result<F::V, F::Error> {
    // |x| < 1: x (c0 + sum_n c_n x^2n), c_n = 2/sqrt(pi) (-1)^n / (n! (2n+1))
    // to n = 12, the leading term's constant split in two so that it
    // rounds once.
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    let mut series = [0f32; 12];
    let mut factorial = 1f64;
    for n in 1..13 {
        factorial *= n as f64;
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        series[12 - n] = (two_over_sqrt_pi * sign / (factorial * (2 * n + 1) as f64)) as f32;
    }
    let hi = two_over_sqrt_pi as f32;
    let lo = (two_over_sqrt_pi - hi as f64) as f32;
    let z = f.mul(x, x)?;
    let p = horner(f, &series, z)?;
    let xz = f.mul(x, z)?;
    let tail = f.mul(xz, p)?;
    let (hi, lo) = (f.lit(hi)?, f.lit(lo)?);
    let tail = f.fma(x, lo, tail)?;
    let small = f.fma(x, hi, tail)?;
    // |x| >= 1: 1 - e^{-x^2} g(x), g = erfc(x) e^{x^2} as a Chebyshev
    // series on [1, 4] (relative error 1.1e-9, by Clenshaw's recurrence);
    // from 4 on, erf rounds to 1.
    let a = f.abs(x)?;
    let four = f.lit(4.0)?;
    let ac = f.min(a, four)?;
    let (scale, shift) = (f.lit(2.0 / 3.0)?, f.lit(-5.0 / 3.0)?);
    let u = f.fma(ac, scale, shift)?;
    let u2 = f.add(u, u)?;
    let zero = f.lit(0.0)?;
    let (mut b1, mut b2) = (zero, zero);
    for &c in ERFCX_CHEBYSHEV[1..].iter().rev() {
        let c = f.lit(c)?;
        let t = f.fma(u2, b1, c)?;
        let t = f.sub(t, b2)?;
        (b2, b1) = (b1, t);
    }
    let c0 = f.lit(ERFCX_CHEBYSHEV[0])?;
    let g = f.fma(u, b1, c0)?;
    let g = f.sub(g, b2)?;
    let na = f.neg(a)?;
    let z2 = f.mul(na, a)?;
    let e = exp(f, z2)?;
    let one = f.lit(1.0)?;
    let ng = f.neg(g)?;
    let big = f.fma(ng, e, one)?;
    let nbig = f.neg(big)?;
    let negative = f.compare(Binary::Lt, x, zero)?;
    let large = f.select(negative, nbig, big)?;
    let is_small = f.compare(Binary::Lt, a, one)?;
    let r = f.select(is_small, small, large)?;
    keep_nan(f, x, r)
}

/// Chebyshev coefficients of `erfc(x) e^{x^2}` on [1, 4] in `u = (2x - 5) / 3`.
const ERFCX_CHEBYSHEV: [f32; 14] = [
    0.244_425_75,
    -0.135_898_63,
    0.035_635_114,
    -0.008_884_099,
    0.002_118_424,
    -0.000_485_398_76,
    0.000_107_273_76,
    -2.293_663_4e-5,
    4.756_874_7e-6,
    -9.589_945e-7,
    1.882_898_8e-7,
    -3.606_207_2e-8,
    6.740_900_6e-9,
    -1.196_027_3e-9,
];

/// The executor's backend: Rust's `f32`, whose operations are IEEE's.
pub struct F32;

impl Float for F32 {
    type V = f32;
    type Error = std::convert::Infallible;
    fn lit(&mut self, x: f32) -> Result<f32, Self::Error> {
        Ok(x)
    }
    fn add(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(a + b)
    }
    fn sub(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(a - b)
    }
    fn mul(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(a * b)
    }
    fn div(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(a / b)
    }
    fn fma(&mut self, a: f32, b: f32, c: f32) -> Result<f32, Self::Error> {
        Ok(a.mul_add(b, c))
    }
    fn sqrt(&mut self, a: f32) -> Result<f32, Self::Error> {
        Ok(a.sqrt())
    }
    fn neg(&mut self, a: f32) -> Result<f32, Self::Error> {
        Ok(-a)
    }
    fn abs(&mut self, a: f32) -> Result<f32, Self::Error> {
        Ok(a.abs())
    }
    fn min(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        // Equal operands (zeros of either sign): -0 if either is, as the
        // H200's min.f32 gives (probed; Rust's f32::min leaves it open).
        Ok(if a == b {
            f32::from_bits(a.to_bits() | b.to_bits())
        } else {
            a.min(b)
        })
    }
    fn max(&mut self, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(if a == b {
            f32::from_bits(a.to_bits() & b.to_bits())
        } else {
            a.max(b)
        })
    }
    fn clamp(&mut self, x: f32, lo: f32, hi: f32) -> Result<f32, Self::Error> {
        if x.is_nan() {
            return Ok(f32::from_bits(0x7fff_ffff));
        }
        let x = self.max(x, lo)?;
        self.min(x, hi)
    }
    fn compare(&mut self, op: Binary, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(if op.compare(a, b) { 1.0 } else { 0.0 })
    }
    fn select(&mut self, c: f32, a: f32, b: f32) -> Result<f32, Self::Error> {
        Ok(if c != 0.0 { a } else { b })
    }
    fn rint(&mut self, a: f32) -> Result<f32, Self::Error> {
        Ok(a.round_ties_even())
    }
    fn pow2(&mut self, n: f32) -> Result<f32, Self::Error> {
        Ok(f32::from_bits(((n as i32 + 127) as u32) << 23))
    }
    fn split(&mut self, a: f32) -> Result<(f32, f32), Self::Error> {
        let bits = a.to_bits();
        let e = ((bits >> 23) & 0xff) as i32 - 127;
        let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
        Ok((e as f32, m))
    }
    fn approx(&mut self, op: Approx, a: f32) -> Result<f32, Self::Error> {
        Ok(op.exact(a as f64) as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: Unary, x: f32) -> f32 {
        let Ok(v) = unary(&mut F32, op, x);
        v
    }

    /// Distance in units in the last place of `want` (f64, exact enough).
    fn ulps(got: f32, want: f64) -> f64 {
        if got as f64 == want || (got.is_nan() && want.is_nan()) {
            return 0.0;
        }
        let w = want as f32;
        let ulp = (f32::from_bits(w.abs().to_bits() + 1) - w.abs()) as f64;
        ((got as f64 - want) / ulp).abs()
    }

    /// erf in f64 by its Taylor series (cancellation costs at most 4
    /// digits of 16 below |x| = 3) and 1 beyond 4.5.
    fn erf64(x: f64) -> f64 {
        if x.abs() > 4.5 {
            return x.signum();
        }
        let (mut term, mut sum, z) = (x, x, x * x);
        for n in 1..200 {
            term *= -z / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    fn worst(op: Unary, reference: fn(f64) -> f64, xs: impl Iterator<Item = f32>) -> (f64, f32) {
        xs.map(|x| (ulps(run(op, x), reference(x as f64)), x))
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    }

    fn sweep(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
    }

    #[test]
    fn math_functions_keep_their_stated_accuracy() {
        // (function, its f64 reference, from, to, ulps at most)
        type Case = (Unary, fn(f64) -> f64, f32, f32, f64);
        let cases: [Case; 7] = [
            (Unary::Exp, f64::exp, -100.0, 88.0, 1.0),
            (Unary::Exp2, f64::exp2, -148.0, 127.0, 1.0),
            (Unary::Log, f64::ln, 1e-30, 1e30, 2.0),
            (Unary::Log, f64::ln, 0.5, 2.0, 2.0),
            (Unary::Tanh, f64::tanh, -10.0, 10.0, 2.0),
            (Unary::Erf, erf64, -5.0, 5.0, 2.0),
            (Unary::Rsqrt, |x| 1.0 / x.sqrt(), 1e-3, 1e3, 1.5),
        ];
        for (op, reference, lo, hi, bound) in cases {
            let (err, at) = worst(op, reference, sweep(lo, hi, 200_000));
            assert!(err <= bound, "{op}: {err} ulp at {at}");
        }
        // Logarithms over every binade, subnormals included.
        let (err, at) = worst(
            Unary::Log,
            f64::ln,
            (1..255u32).map(|e| f32::from_bits(e << 23 | 0x2a_aaaa)),
        );
        assert!(err <= 2.0, "log: {err} ulp at {at}");
        let (err, at) = worst(
            Unary::Log,
            f64::ln,
            (1..1000u32).map(|b| f32::from_bits(b * 7919)),
        );
        assert!(err <= 2.0, "log of subnormals: {err} ulp at {at}");
    }

    /// The `fast_` forms on the executor: the exact value of what the
    /// hardware approximates, so within an ulp of the function (the
    /// product `fast_exp` rounds before the approximation adds up to
    /// `|x| 2^-24` of relative error), within what [`Unary::error`] allows.
    #[test]
    fn fast_forms_are_exact_on_the_executor() {
        type Case = (Unary, fn(f64) -> f64, f32, f32, f64);
        let cases: [Case; 6] = [
            (Unary::FastExp2, f64::exp2, -148.0, 127.0, 0.5),
            (Unary::FastExp, f64::exp, -80.0, 88.0, 100.0),
            (Unary::FastLog, f64::ln, 1e-30, 1e30, 1.5),
            (Unary::FastSqrt, f64::sqrt, 0.0, 1e30, 0.5),
            (Unary::FastRsqrt, |x| 1.0 / x.sqrt(), 1e-30, 1e30, 0.5),
            (Unary::FastTanh, f64::tanh, -10.0, 10.0, 0.5),
        ];
        for (op, reference, lo, hi, bound) in cases {
            let (err, at) = worst(op, reference, sweep(lo, hi, 20_000));
            assert!(err <= bound, "{op}: {err} ulp at {at}");
            for x in sweep(lo, hi, 20_000) {
                let want = reference(x as f64);
                // Relative to normal values: a subnormal's ulp is coarser.
                let rel = ((run(op, x) as f64 - want) / want).abs();
                let normal = want.abs() >= f32::MIN_POSITIVE as f64;
                assert!(!normal || rel <= op.error(), "{op}({x}): {rel}");
            }
        }
        for op in Unary::ALL {
            assert_eq!(op.error() == 0.0, !op.name().starts_with("fast_"), "{op}");
        }
        assert_eq!(run(Unary::FastExp2, -f32::INFINITY), 0.0);
        assert_eq!(run(Unary::FastRsqrt, 0.0), f32::INFINITY);
        assert_eq!(run(Unary::FastLog, 0.0), -f32::INFINITY);
        assert!(run(Unary::FastSqrt, -1.0).is_nan());
    }

    /// GELU's forms against their f64 formulas: within 2 ulp of the value
    /// plus 1 ulp of `x / 2`, the second where `1 + erf` or `1 + tanh`
    /// cancels (large negative `x`, the value far below `x`): the rounding
    /// of `erf` or `tanh` near -1, which PyTorch's f32 forms carry too.
    #[test]
    fn gelu_forms_keep_their_accuracy() {
        for op in [Unary::Gelu, Unary::GeluTanh, Unary::FastGeluTanh] {
            for x in sweep(-12.0, 12.0, 200_000) {
                let want = op.exact(x as f64);
                let ulp = |v: f64| {
                    let v = (v as f32).abs();
                    (f32::from_bits(v.to_bits() + 1) - v) as f64
                };
                let bound = 2.0 * ulp(want) + ulp(x as f64 / 2.0);
                let got = run(op, x) as f64;
                assert!(
                    (got - want).abs() <= bound,
                    "{op}({x}) = {got}, want {want}"
                );
            }
        }
        assert_eq!(run(Unary::Gelu, f32::INFINITY), f32::INFINITY);
        assert_eq!(run(Unary::GeluTanh, 1e30), 1e30);
        assert_eq!(run(Unary::Gelu, -20.0), 0.0);
        assert_eq!(run(Unary::GeluTanh, -1e30), 0.0);
        for op in [Unary::Gelu, Unary::GeluTanh, Unary::FastGeluTanh] {
            // The formula's 0 * inf.
            assert!(run(op, -f32::INFINITY).is_nan(), "{op}");
        }
        // -0: h + h s keeps its sign where s is erf's +0, not where it is
        // tanh's -0 (PyTorch's forms give -0).
        assert_eq!(run(Unary::Gelu, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(run(Unary::GeluTanh, -0.0).to_bits(), 0.0f32.to_bits());
    }

    /// The logistic function and SiLU against their f64 formulas: within
    /// 3 ulp (exp's 1, the product's, the sum's and the quotient's
    /// roundings), down to the subnormal tail (sigmoid(-100) = e^-100;
    /// SiLU's there as x times a subnormal), and their edges: 0 and 1, -0
    /// and x, NaN from NaN and from silu(-inf).
    #[test]
    fn sigmoid_and_silu_keep_their_accuracy() {
        let ulp = |v: f64| {
            let v = (v as f32).abs().max(f32::MIN_POSITIVE);
            (f32::from_bits(v.to_bits() + 1) - v) as f64
        };
        for op in [Unary::Sigmoid, Unary::Silu] {
            for x in sweep(-100.0, 100.0, 200_000) {
                let (want, got) = (op.exact(x as f64), run(op, x) as f64);
                // Where e^x is subnormal its absolute rounding, 2^-149,
                // times SiLU's x (PyTorch's x * sigmoid(x) carries it too).
                let tail = (x as f64).abs() * 2f64.powi(-148);
                assert!(
                    (got - want).abs() <= 3.0 * ulp(want) + tail,
                    "{op}({x}) = {got}, want {want}"
                );
            }
            assert!(run(op, f32::NAN).is_nan(), "{op}");
        }
        let inf = f32::INFINITY;
        assert_eq!(run(Unary::Sigmoid, -inf), 0.0);
        assert_eq!(run(Unary::Sigmoid, inf), 1.0);
        assert_eq!(run(Unary::Sigmoid, 0.0), 0.5);
        assert_eq!(run(Unary::Silu, -1e30).to_bits(), (-0.0f32).to_bits());
        assert_eq!(run(Unary::Silu, 1e30), 1e30);
        assert!(run(Unary::Silu, -inf).is_nan());
    }

    #[test]
    fn math_functions_take_the_edges_of_their_domains() {
        let inf = f32::INFINITY;
        assert_eq!(run(Unary::Exp, inf), inf);
        assert_eq!(run(Unary::Exp, -inf), 0.0);
        assert_eq!(run(Unary::Exp, 89.0), inf);
        assert_eq!(run(Unary::Exp2, 128.0), inf);
        assert_eq!(run(Unary::Exp2, -149.0), f32::from_bits(1));
        assert_eq!(run(Unary::Log, 0.0), -inf);
        assert_eq!(run(Unary::Log, inf), inf);
        assert_eq!(run(Unary::Log, 1.0), 0.0);
        assert!(run(Unary::Log, -1.0).is_nan());
        assert_eq!(run(Unary::Tanh, inf), 1.0);
        assert_eq!(run(Unary::Tanh, -inf), -1.0);
        assert_eq!(run(Unary::Tanh, 0.0), 0.0);
        assert_eq!(run(Unary::Erf, inf), 1.0);
        assert_eq!(run(Unary::Erf, -inf), -1.0);
        for op in Unary::ALL {
            assert!(run(op, f32::NAN).is_nan(), "{op} of NaN");
        }
        // Zeros of both signs: one rule, which codegen follows too.
        let Ok(m) = binary(&mut F32, Binary::Max, -0.0, 0.0);
        assert_eq!(m.to_bits(), 0.0f32.to_bits());
        let Ok(m) = binary(&mut F32, Binary::Min, 0.0, -0.0);
        assert_eq!(m.to_bits(), (-0.0f32).to_bits());
        let Ok(m) = binary(&mut F32, Binary::Max, f32::NAN, -1.0);
        assert_eq!(m, -1.0);
        // The clamp inside exp and exp2 keeps NaN (PTX max.NaN, min.NaN),
        // where min and max drop it.
        let clamp = |x: f32| F32.clamp(x, -104.0, 89.0).unwrap_or(0.0);
        assert!(clamp(f32::NAN).is_nan());
        assert_eq!((clamp(-inf), clamp(inf), clamp(3.5)), (-104.0, 89.0, 3.5));
    }
}
