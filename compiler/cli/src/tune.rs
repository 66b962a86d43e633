//! `tilec tune FILE.tile --dims ... [--kernel K] [--set N=V] [--iters N]`:
//! every combination of a kernel's `tune` candidates (those `--set` leaves
//! open) is compiled, in parallel, each one checked; on the GPU, each is
//! checked against the reference and all are timed against each other,
//! interleaved run by run, the slower half stopping every two runs until
//! two remain (successive halving), the declared defaults running to the
//! end whatever their times (a GPU's clocks drift within a call: the
//! winner is timed against them in the same runs). The fastest goes into
//! the tune cache for this device, source and shape class, where `tilec
//! run`, `tilec bench` and `tilec-run` find it. Without a GPU it says so,
//! and the defaults stay.

use crate::compile::{Compiled, Failure, LaunchArgs, fail, report};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;
use tilec::check::program::{Kernel, Settings, setting};
use tilec_codegen::Output;
use tilec_runtime::bench::{BenchResult, Pruning, race};
use tilec_runtime::gpu::Gpu;
use tilec_runtime::plan::{Dims, assignments, plan, plan_on_gpu};
use tilec_runtime::tuning::{self, Entry, TuneCache};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Timed runs of the last two variants standing and of the defaults:
    /// every two runs the slower half of those still running stops
    /// (successive halving); the median decides.
    #[arg(long, default_value_t = 20)]
    iters: usize,
}

/// One point of the search: the free tunables' values, and what became
/// of it.
struct Variant {
    values: Vec<i64>,
    settings: Settings,
    outcome: Outcome,
}

enum Outcome {
    /// Every kernel of the file, built with these values.
    Built(Vec<Compiled>),
    /// Why the checker, the back end or the launch plan refused it.
    Refused(String),
}

pub fn run(a: Args) -> ExitCode {
    let start = Instant::now();
    let (name, src, dims) = match a.launch.read() {
        Ok(x) => x,
        Err(code) => return code,
    };
    if a.launch.checked {
        return fail(
            "tilec tune times kernels; a --checked build checks every access and is slower: tune without it, then `tilec run --checked` one variant with --set",
        );
    }
    let inputs = match a.launch.inputs() {
        Ok(x) => x,
        Err(code) => return code,
    };
    let fixed = match crate::settings::parse_set(&a.launch.tuning, &name, &src) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let kernels = match tilec::check::kernel::check_source_with(&src, &fixed) {
        Ok(k) => k,
        Err(d) => return report(&name, &src, Failure::Source(d)),
    };
    let wanted = |k: &&Kernel| a.launch.kernel.as_ref().is_none_or(|n| *n == k.name);
    let targets: Vec<&Kernel> = kernels
        .iter()
        .filter(wanted)
        .filter(|k| !k.tunables.is_empty())
        .collect();
    if let Some(n) = &a.launch.kernel
        && !kernels.iter().any(|k| k.name == *n)
    {
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        return fail(&format!(
            "{name} has no kernel {n}; its kernels are {}",
            names.join(", ")
        ));
    }
    if targets.is_empty() {
        return fail(&format!(
            "no kernel {}of {name} declares a `tune` parameter; write e.g. `tune splits = 8 in (1, 2, 4, 8);` and use the name",
            a.launch
                .kernel
                .as_ref()
                .map_or(String::new(), |k| format!("{k} ")),
        ));
    }
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(e) => return fail(&e.to_string()),
    };
    for k in &targets {
        let problems = crate::run::dims_problems(&k.name, k.dims(), &k.scalar_names(), &dims, true);
        if !problems.is_empty() {
            problems.iter().for_each(|p| eprintln!("error: {p}"));
            return ExitCode::from(2);
        }
    }
    for k in targets {
        let free: Vec<_> = k
            .tunables
            .iter()
            .filter(|t| setting(&fixed, &k.name, &t.name).is_none())
            .collect();
        if free.is_empty() {
            eprintln!(
                "note: {}: --set fixes every tunable; nothing to search",
                k.name
            );
            continue;
        }
        let mut variants: Vec<Variant> = product(free.iter().map(|t| t.candidates.as_slice()))
            .into_iter()
            .map(|values| {
                let mut settings = fixed.clone();
                for (t, v) in free.iter().zip(&values) {
                    settings.insert(format!("{}.{}", k.name, t.name), *v);
                }
                Variant {
                    values,
                    settings,
                    outcome: Outcome::Refused(String::new()),
                }
            })
            .collect();
        let compile_start = Instant::now();
        build_all(&mut variants, &src, &a.launch.arch, &k.name, &dims);
        let compile_s = compile_start.elapsed().as_secs_f64();
        let built = variants
            .iter()
            .filter(|v| matches!(v.outcome, Outcome::Built(_)))
            .count();
        eprintln!(
            "{}: {} variants, {built} built in {compile_s:.1} s",
            k.name,
            variants.len()
        );
        let names: Vec<&str> = free.iter().map(|t| t.name.as_str()).collect();
        let defaults: Vec<i64> = free.iter().map(|t| t.default).collect();
        // Where no variant builds at these extents (an extent of 0, past
        // 2^40), the extents are wrong, as `run` says with status 2.
        if built == 0 {
            print!("{}", table(&names, &variants, &[], &defaults));
            eprintln!(
                "error: no variant of {} builds at {dims}: the reasons are above",
                k.name
            );
            return ExitCode::from(2);
        }
        let Some(gpu) = &gpu else {
            print!("{}", table(&names, &variants, &[], &defaults));
            println!(
                "no GPU on this machine: nothing was timed; {} keeps its defaults ({})",
                k.name,
                assignments(free.iter().map(|t| (&t.name, t.default)))
            );
            continue;
        };
        refuse_what_does_not_fit(gpu, &mut variants, &k.name, &dims);
        let timed = match time_all(
            gpu,
            &mut variants,
            &k.name,
            &dims,
            &inputs,
            a.iters,
            &defaults,
        ) {
            Ok(t) => t,
            Err(code) => return code,
        };
        print!("{}", table(&names, &variants, &timed, &defaults));
        let Some(bi) = best(&timed) else {
            return fail(&format!(
                "{}: no variant ran and matched its reference at {dims}",
                k.name
            ));
        };
        let b = &timed.iter().find(|(i, _)| *i == bi).expect("timed").1;
        let default_ms = default_time(&variants, &timed, &defaults);
        // Only what was searched: a value --set pinned is not this
        // shape's best, and must not come back to runs without --set.
        let values: BTreeMap<String, i64> = names
            .iter()
            .zip(&variants[bi].values)
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
        let entry = Entry {
            device: gpu.name.clone(),
            kernel: k.name.clone(),
            source: tuning::fingerprint(&src),
            class: tuning::shape_class(&dims),
            dims: dims.to_string(),
            values,
            best_ms: b.tilec.median,
            default_ms,
        };
        let saved = tuning::default_path()
            .ok_or_else(|| "no cache directory: set TILEC_TUNE_CACHE or HOME".to_string())
            .and_then(|p| TuneCache::load(&p).map_err(|e| e.to_string()))
            .and_then(|mut c| {
                c.record(entry.clone()).map_err(|e| e.to_string())?;
                Ok(c.path)
            });
        let tuned = assignments(entry.values.iter().map(|(n, v)| (n, *v)));
        let speedup = default_ms.map_or("the defaults were refused".into(), |d| {
            format!("{:.2}x the defaults", d / b.tilec.median)
        });
        match saved {
            Ok(p) => println!(
                "best: {tuned}, {speedup}; kept in {} for {} at {} (each extent rounded up to a power of two)",
                p.display(),
                entry.device,
                entry.class
            ),
            Err(e) => return fail(&format!("best: {tuned}, but the tune cache: {e}")),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    match gpu {
        Some(_) => eprintln!("tuned in {secs:.1} s"),
        None => eprintln!("built and checked in {secs:.1} s; nothing timed without a GPU"),
    }
    ExitCode::SUCCESS
}

/// Every combination of one value from each list, the first list slowest.
fn product<'a>(lists: impl Iterator<Item = &'a [i64]>) -> Vec<Vec<i64>> {
    lists.fold(vec![Vec::new()], |acc, list| {
        acc.iter()
            .flat_map(|prefix| {
                list.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push(*v);
                    p
                })
            })
            .collect()
    })
}

/// Compiles every variant, as many at once as there are cores (rayon's),
/// with a progress bar; a variant the checker, the back end or the launch
/// plan at `dims` refuses is marked with the reason.
fn build_all(variants: &mut [Variant], src: &str, arch: &str, kernel: &str, dims: &Dims) {
    use rayon::prelude::*;
    let bar = match std::io::stderr().is_terminal() {
        true => ProgressBar::new(variants.len() as u64).with_style(
            ProgressStyle::with_template("compiling {pos}/{len} variants {wide_bar} {elapsed}")
                .expect("a valid template"),
        ),
        false => ProgressBar::hidden(),
    };
    let source = tuning::fingerprint(src);
    variants.par_iter_mut().for_each(|v| {
        v.outcome = build(src, arch, kernel, dims, &v.settings, &source);
        bar.inc(1);
    });
    bar.finish_and_clear();
}

/// Every kernel of the source built with `settings`; of `kernel`, only the
/// entries its launch plan at `dims` runs (at 4096^3, the full-tile entry
/// alone: the guarded ones, the back end's slowest, are never launched
/// there, and the driver has less PTX to compile when the race loads it).
fn build(
    src: &str,
    arch: &str,
    kernel: &str,
    dims: &Dims,
    settings: &Settings,
    source: &str,
) -> Outcome {
    let refused = |f: Failure| match f {
        Failure::Source(d) => {
            Outcome::Refused(d.first().map_or("refused".into(), |d| d.message.clone()))
        }
        Failure::Backend(e) => Outcome::Refused(format!("back end: {e}")),
    };
    let opts = crate::compile::Options {
        checked: None,
        settings,
    };
    let lowered = match crate::compile::lower_source(src, opts) {
        Ok(l) => l,
        Err(f) => return refused(f),
    };
    let mut built = Vec::with_capacity(lowered.len());
    for (k, mut l) in lowered {
        if k.name == kernel {
            let m = crate::compile::manifest(&k, &l, arch);
            let p = match plan(&m, dims) {
                Ok(p) => p,
                Err(e) => return Outcome::Refused(format!("at {dims}: {e}")),
            };
            l = l
                .into_iter()
                .enumerate()
                .filter(|(i, _)| p.launches.iter().any(|x| x.variant == *i))
                .map(|(_, v)| v)
                .collect();
        }
        match crate::compile::codegen(k, l, arch, Output::Ptx, opts, source) {
            Ok(c) => built.push(c),
            Err(f) => return refused(f),
        }
    }
    Outcome::Built(built)
}

/// Marks refused the built variants whose tensors and workspace alone need
/// more device memory than is free (split-K's partials grow with the
/// split), so that the others can still race.
fn refuse_what_does_not_fit(gpu: &Gpu, variants: &mut [Variant], kernel: &str, dims: &Dims) {
    for v in variants.iter_mut() {
        let Outcome::Built(cs) = &v.outcome else {
            continue;
        };
        let Some(c) = cs.iter().find(|c| c.kernel.name == kernel) else {
            continue;
        };
        let fits =
            plan_on_gpu(&c.manifest, dims, gpu.sms).and_then(|p| gpu.check_fits(&c.manifest, &p));
        if let Err(e) = fits {
            v.outcome = Outcome::Refused(e.to_string());
        }
    }
}

/// Checks and times the built variants against each other, the one at
/// the declared `defaults` to the end: (index, result). A variant the
/// driver refuses to load (its PTX compile: ptxas cannot fit a wgmma's
/// accumulators in the registers `min_blocks` leaves) is refused with the
/// driver's message, as the checker's refusals are.
fn time_all(
    gpu: &Gpu,
    variants: &mut [Variant],
    kernel: &str,
    dims: &Dims,
    inputs: &tilec_runtime::Inputs,
    iters: usize,
    defaults: &[i64],
) -> Result<Vec<(usize, BenchResult)>, ExitCode> {
    let built: Vec<(usize, &Vec<Compiled>, &Compiled)> = variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match &v.outcome {
            Outcome::Built(cs) => Some((i, cs, cs.iter().find(|c| c.kernel.name == kernel)?)),
            Outcome::Refused(_) => None,
        })
        .collect();
    let Some(&(_, all, first)) = built.first() else {
        return Err(fail(&format!(
            "{kernel}: every variant was refused at {dims}"
        )));
    };
    crate::run::check_launch(&first.manifest, dims, false)?;
    let builds: Vec<(&str, &tilec_runtime::manifest::Manifest)> = built
        .iter()
        .map(|(_, _, c)| (c.code.as_str(), &c.manifest))
        .collect();
    let waiting = crate::run::spinner(&format!(
        "checking {} variants against the reference, then timing them",
        builds.len()
    ));
    let expect = |p: &_, args: &[_]| crate::expect::expected(all, first, p, args);
    // The defaults run to the end: the winner is timed against them in
    // the same runs.
    let keep = built
        .iter()
        .position(|(i, _, _)| variants[*i].values == defaults);
    let raced = race(
        gpu,
        &builds,
        dims,
        inputs,
        iters,
        Pruning::Halving { keep },
        &expect,
    );
    waiting.finish_and_clear();
    match raced {
        Ok((rs, phases)) => {
            eprintln!("{kernel}: {phases}");
            let indices: Vec<usize> = built.iter().map(|(i, _, _)| *i).collect();
            Ok(take_results(variants, indices, rs))
        }
        Err(e) => Err(fail(&format!("{kernel}: {e}"))),
    }
}

/// The race's results by variant index: those that ran, and each that the
/// driver would not load marked refused with its message.
fn take_results(
    variants: &mut [Variant],
    indices: Vec<usize>,
    results: Vec<Result<BenchResult, tilec_runtime::RuntimeError>>,
) -> Vec<(usize, BenchResult)> {
    let mut timed = Vec::new();
    for (i, r) in indices.into_iter().zip(results) {
        match r {
            Ok(r) => timed.push((i, r)),
            Err(e) => variants[i].outcome = Outcome::Refused(e.to_string()),
        }
    }
    timed
}

/// The winner of a race: of the variants that matched the reference, those
/// that ran to the end (successive halving stopped the others early, on
/// fewer runs), the one with the smallest median.
fn best(timed: &[(usize, BenchResult)]) -> Option<usize> {
    let passed = || timed.iter().filter(|(_, r)| r.passed());
    let most = passed().map(|(_, r)| r.runs).max()?;
    passed()
        .filter(|(_, r)| r.runs == most)
        .min_by(|x, y| x.1.tilec.median.total_cmp(&y.1.tilec.median))
        .map(|(i, _)| *i)
}

/// The median of the variant at the declared defaults, if it was timed.
fn default_time(
    variants: &[Variant],
    timed: &[(usize, BenchResult)],
    defaults: &[i64],
) -> Option<f64> {
    timed
        .iter()
        .find(|(i, _)| variants[*i].values == defaults)
        .map(|(_, r)| r.tilec.median)
}

/// One row per variant: its values, then its time and rates, or why it
/// was refused; the race's winner marked `*`.
fn table(
    names: &[&str],
    variants: &[Variant],
    timed: &[(usize, BenchResult)],
    defaults: &[i64],
) -> String {
    let by_index: BTreeMap<usize, &BenchResult> = timed.iter().map(|(i, r)| (*i, r)).collect();
    let best = best(timed);
    let default_ms = default_time(variants, timed, defaults);
    let mut s = String::from("   ");
    for n in names {
        s += &format!(" {n:>8}");
    }
    if !timed.is_empty() {
        s += "   ms median  runs   rate            vs defaults  vs cuBLAS";
    }
    s += "\n";
    for (i, v) in variants.iter().enumerate() {
        s += if Some(i) == best { "  *" } else { "   " };
        for x in &v.values {
            s += &format!(" {x:>8}");
        }
        match (&v.outcome, by_index.get(&i)) {
            (Outcome::Refused(why), _) => s += &format!("   refused: {why}"),
            (Outcome::Built(_), None) => s += "   built",
            (Outcome::Built(_), Some(r)) => {
                let rate = r.rate_text(r.tilec.median);
                let vs_default =
                    default_ms.map_or(String::new(), |d| format!("{:.2}x", d / r.tilec.median));
                let vs_blas = r.cublas.map_or(String::new(), |c| {
                    format!("{:.2}x", c.median / r.tilec.median)
                });
                let ok = if r.passed() { "" } else { "   MISMATCH" };
                s += &format!(
                    "   {:9.4}  {:>4}   {rate:<15} {vs_default:>11}  {vs_blas:>9}{ok}",
                    r.tilec.median, r.runs
                );
            }
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_runtime::bench::Timing;

    fn result(median: f64, runs: usize, error: f64) -> BenchResult {
        let t = Timing {
            median,
            min: median,
            max: median,
        };
        BenchResult {
            kernel: "k".into(),
            dims: "M=1".into(),
            device: "GPU".into(),
            tuned: String::new(),
            check: Some(tilec_runtime::Check {
                tensor: "C".into(),
                error,
                tolerance: 1e-5,
                worst: None,
                element_tolerance: 0.0,
                sample: None,
                coord: None,
                integers: false,
                non_finite: 0,
                unchanged: false,
            }),
            runs,
            input_sets: 1,
            tilec: t,
            launch_us: 1.0,
            cublas: None,
            cublas_launch_us: None,
            copy: None,
            work: None,
            work_unit: None,
        }
    }

    /// A variant the driver would not load is refused with its message,
    /// its neighbours keep their results and their indices.
    #[test]
    fn a_variant_the_driver_refuses_is_listed_refused() {
        let mut variants: Vec<Variant> = (0..4)
            .map(|i| Variant {
                values: vec![i],
                settings: Settings::new(),
                outcome: Outcome::Refused("checker".into()),
            })
            .collect();
        let refused = tilec_runtime::RuntimeError::Cuda("the driver's PTX compile refused".into());
        let timed = take_results(
            &mut variants,
            vec![1, 2, 3],
            vec![
                Ok(result(1.0, 5, 0.0)),
                Err(refused),
                Ok(result(2.0, 5, 0.0)),
            ],
        );
        let indices: Vec<usize> = timed.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, [1, 3]);
        assert!(
            matches!(&variants[2].outcome, Outcome::Refused(why) if why.contains("PTX compile refused"))
        );
        assert!(matches!(&variants[0].outcome, Outcome::Refused(why) if why == "checker"));
        assert_eq!(best(&timed), Some(1));
    }

    #[test]
    fn the_winner_ran_to_the_end_and_matched_its_reference() {
        let timed = vec![
            // Stopped early on two lucky runs: not a winner.
            (0, result(0.9, 2, 0.0)),
            (1, result(1.0, 20, 0.0)),
            (2, result(1.1, 20, 0.0)),
            // Fastest, but wrong.
            (3, result(0.5, 20, 1.0)),
        ];
        assert_eq!(best(&timed), Some(1));
        assert_eq!(best(&[(7, result(1.0, 20, 1.0))]), None);
    }

    #[test]
    fn a_variant_is_built_with_the_entries_its_shape_launches() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/sgemm_splitk.tile"
        );
        let src = std::fs::read_to_string(path).unwrap();
        let entries = |dims: &str| {
            let dims = Dims::parse(dims).unwrap();
            let set = Settings::from([("splits".to_string(), 2)]);
            match build(&src, "sm_90", "sgemm_splitk", &dims, &set, "") {
                Outcome::Built(cs) => cs[0]
                    .manifest
                    .variants
                    .iter()
                    .map(|v| v.entry.clone())
                    .collect::<Vec<_>>(),
                Outcome::Refused(why) => panic!("{why}"),
            }
        };
        assert_eq!(entries("M=4096,N=4096,K=4096"), ["sgemm_splitk"]);
        // On aligned copies of A and B (M and N are not multiples of 4).
        assert_eq!(
            entries("M=4093,N=4093,K=4093"),
            ["sgemm_splitk_guarded_vec"]
        );
        assert_eq!(
            entries("M=4000,N=4000,K=4096"),
            ["sgemm_splitk", "sgemm_splitk_guarded_vec"]
        );
    }

    #[test]
    fn the_search_is_every_combination_first_list_slowest() {
        let lists: [&[i64]; 2] = [&[64, 128], &[1, 2, 4]];
        let all = product(lists.into_iter());
        assert_eq!(all.len(), 6);
        assert_eq!(all[0], [64, 1]);
        assert_eq!(all[1], [64, 2]);
        assert_eq!(all[5], [128, 4]);
    }
}
