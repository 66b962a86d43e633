//! `tilec run --check-cpu`: the GPU's outputs against the CPU executor's
//! on the same inputs. In: both runs' tensors and the kernel's manifest.
//! Out: whether they agree: bit for bit, unless the manifest says the
//! kernel's hardware approximations or its atomic sums may move them, and
//! then within what those allow; the differences are printed.

use tilec_runtime::host::HostBuffer;
use tilec_runtime::manifest::{Elem, Manifest};

/// The GPU's tensors against the CPU executor's, on the same inputs: every
/// element of every tensor, bit for bit; prints how many differ.
/// Units in the last place of an output's type by which a kernel of
/// hardware approximations may differ from the executor anyway: an
/// approximation's difference moves the roundings after it (to bf16, a
/// unit of 2^-8) one way or the other.
const ROUNDING_ULPS: u64 = 4;

/// Units of an intermediate's 16-bit type, at the output's scale, by which
/// an output may move where approximated values are rounded to that type
/// and computed on again (the manifest's `rounded_approximation`). How
/// much of a rounding the other way reaches an output is the data's to
/// say; one unit holds what was seen (attention at S = 1000 on an H100:
/// 5.2e-6 at an element of 1.0e-4, in an output whose values reach
/// 4e-2) and stays far below a kernel computing the wrong thing.
const ROUNDED_UNITS: f64 = 1.0;

/// How far, relatively at the output's scale, a sum added by atomics
/// (`reduce ... atomic`) may move from the executor's in index order: f32
/// sums of a few dozen partials in another order differ by a few dozen
/// units of 2^-24 of the partials' magnitude; 2^-16 leaves room for
/// partials larger than their sum, and stays far below a wrong kernel.
const UNORDERED_SUM: f64 = 1.0 / 65536.0;

pub(crate) fn agree(gpu: &[Option<HostBuffer>], cpu: &[Option<HostBuffer>], m: &Manifest) -> bool {
    let (approximation, rounded) = (m.approximation, m.rounded_approximation);
    let atomic = m.block_reduce.as_ref().is_some_and(|r| r.atomic);
    // An atomic sum's order moves floats, not integers.
    let unordered = |b: &HostBuffer| match atomic && b.elem() != Elem::I32 {
        true => UNORDERED_SUM,
        false => 0.0,
    };
    let (mut differ, mut total, mut most, mut beyond) = (0usize, 0usize, 0u64, 0usize);
    let mut shown = 0;
    for (g, c) in gpu.iter().zip(cpu) {
        let (Some(g), Some(c)) = (g, c) else { continue };
        total += g.len();
        // The scale of an element's allowed difference: its own value, or
        // the output's root mean square where that is larger (near zeros),
        // of its finite values.
        let finite: Vec<f64> = (0..c.len())
            .map(|i| c.get(i))
            .filter(|v| v.is_finite())
            .collect();
        let rms = (finite.iter().map(|v| v * v).sum::<f64>() / finite.len().max(1) as f64).sqrt();
        let exact = approximation == 0.0 && unordered(g) == 0.0;
        for i in 0..g.len() {
            let u = g.ulps(c, i);
            if u > 0 {
                differ += 1;
                most = most.max(u);
                // The approximations' error carried on, or a few units in
                // the last place of the output's type: a difference that
                // small before a rounding to bf16 can move it a unit.
                let scale = c.get(i).abs().max(rms);
                let allowed = (32.0 * approximation)
                    .max(ROUNDED_UNITS * rounded)
                    .max(unordered(g))
                    * scale;
                // NaN against a number is beyond. An i32 made from an
                // atomic sum may truncate across an integer the other way.
                let within = match exact {
                    true => atomic && g.elem() == Elem::I32 && u <= 1,
                    false => u <= ROUNDING_ULPS || (g.get(i) - c.get(i)).abs() <= allowed,
                };
                beyond += usize::from(!within);
                // The first few, to study.
                if shown < 4 {
                    shown += 1;
                    println!(
                        "    element {i}: GPU {:e}, CPU {:e} (the output's rms {rms:e})",
                        g.get(i),
                        c.get(i)
                    );
                }
            }
        }
    }
    let by = if differ > 0 {
        format!(" (by at most {most} ulp)")
    } else {
        String::new()
    };
    println!("  CPU executor vs GPU on the same inputs: {differ} of {total} elements differ{by}");
    if approximation == 0.0 && !atomic {
        return differ == 0;
    }
    if atomic {
        println!(
            "  its reduce adds by atomics, in the order the blocks arrive: {UNORDERED_SUM:.1e} relatively or {ROUNDING_ULPS} units in the last place of a float output allowed, {beyond} elements beyond"
        );
    }
    if approximation == 0.0 {
        return beyond == 0;
    }
    // The executor computes the hardware's approximations exactly.
    let rounding = match rounded > 0.0 {
        true => format!(
            ", or {ROUNDED_UNITS} times a unit of a 16-bit rounding of approximated values ({rounded:.1e}) at the output's scale"
        ),
        false => String::new(),
    };
    println!(
        "  the kernel's fast_ functions allow {:.1e} relatively (32 times {approximation:.1e}) or {ROUNDING_ULPS} units in the last place{rounding}: {beyond} elements beyond",
        32.0 * approximation
    );
    beyond == 0
}
