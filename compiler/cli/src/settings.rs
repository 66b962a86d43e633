//! The values of a file's `tune` parameters for one build: `--set` first,
//! then, with a GPU, the tune cache's entry for this device, source and
//! shape class; the defaults the file declares for the rest.
//!
//! In: the `--set` arguments, the source, the device and the extents. Out:
//! the [`Settings`] the checker binds, and a note on stderr saying where
//! each kernel's values came from.

use crate::compile::{TuneArgs, fail};
use std::process::ExitCode;
use tilec::check::program::{Settings, setting};
use tilec_runtime::plan::{Dims, assignments};
use tilec_runtime::tuning::{TuneCache, default_path, fingerprint};

/// Each kernel of the source with its `tune` names; `None` when it does
/// not parse (the build that follows reports why).
type Declared = Vec<(String, Vec<String>)>;

fn declared(src: &str) -> Option<Declared> {
    let p = tilec::syntax::parse_program(src).ok()?;
    Some(
        p.kernels
            .iter()
            .map(|k| {
                let names = k.tunables().into_iter().map(str::to_string).collect();
                (k.name.name.clone(), names)
            })
            .collect(),
    )
}

/// `--set NAME=V,KERNEL.NAME=V`: each name one a kernel of the file
/// declares (unless the file does not parse: the build then says why),
/// each value an integer.
pub fn parse_set(a: &TuneArgs, file: &str, src: &str) -> Result<Settings, ExitCode> {
    settings_of(a, file, declared(src).as_ref())
}

fn settings_of(
    a: &TuneArgs,
    file: &str,
    declared: Option<&Declared>,
) -> Result<Settings, ExitCode> {
    let kernels: &[(String, Vec<String>)] = declared.map_or(&[], Vec::as_slice);
    let mut out = Settings::new();
    for item in &a.set {
        let Some((key, value)) = item.split_once('=') else {
            return Err(fail(&format!(
                "--set {item}: write NAME=VALUE, e.g. --set splits=16"
            )));
        };
        let Ok(v) = value.trim().parse::<i64>() else {
            return Err(fail(&format!("--set {item}: `{value}` is not an integer")));
        };
        let key = key.trim();
        let known = match key.split_once('.') {
            Some((k, n)) => kernels
                .iter()
                .any(|(kn, names)| kn == k && names.iter().any(|x| x == n)),
            None => kernels
                .iter()
                .any(|(_, names)| names.iter().any(|x| x == key)),
        };
        if declared.is_some() && !known {
            let all: Vec<String> = kernels
                .iter()
                .flat_map(|(k, names)| names.iter().map(move |n| format!("{k}.{n}")))
                .collect();
            let have = match all.is_empty() {
                true => format!("{file} declares no `tune` parameter"),
                false => format!("its tunables are {}", all.join(", ")),
            };
            return Err(fail(&format!(
                "--set {item}: no kernel of {file} declares `tune {key}`; {have}"
            )));
        }
        if let Some(first) = out.insert(key.to_string(), v) {
            return Err(fail(&format!(
                "--set {item}: `{key}` is given twice ({first}, then {v}); give each name once"
            )));
        }
    }
    Ok(out)
}

/// `--set`, then the tune cache's entries for `device` at `dims` for the
/// kernels whose values `--set` leaves open. Says on stderr what each
/// kernel with tunables runs with.
pub fn resolve(
    a: &TuneArgs,
    file: &str,
    src: &str,
    device: Option<&str>,
    dims: &Dims,
    arch: &str,
) -> Result<Settings, ExitCode> {
    let declared = declared(src);
    let mut settings = settings_of(a, file, declared.as_ref())?;
    let cache = device
        .and_then(|_| default_path())
        .map(|p| TuneCache::load(&p));
    let cache = match cache {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            eprintln!("warning: {e}; the tune cache is not used");
            None
        }
        None => None,
    };
    let source = fingerprint(src);
    for (kernel, names) in declared.into_iter().flatten() {
        let open: Vec<&String> = names
            .iter()
            .filter(|n| setting(&settings, &kernel, n).is_none())
            .collect();
        if open.is_empty() {
            continue;
        }
        let found = cache
            .as_ref()
            .zip(device)
            .and_then(|(c, d)| c.lookup(d, &kernel, &source, dims));
        match found {
            Some(e) => {
                let mut with = settings.clone();
                let mut chosen = Vec::new();
                for n in open {
                    if let Some(v) = e.values.get(n) {
                        with.insert(format!("{kernel}.{n}"), *v);
                        chosen.push((n, *v));
                    }
                }
                // The entry is for a class of shapes: values searched at
                // M=512 may not launch at M=300 (a launch condition).
                if let Err(why) = plans_at(src, &with, &kernel, dims, arch) {
                    eprintln!(
                        "note: {kernel}: the tune cache's {} do not run at {dims} ({why}); the defaults are used",
                        assignments(chosen.iter().copied())
                    );
                    continue;
                }
                settings = with;
                if !chosen.is_empty() {
                    eprintln!(
                        "note: {kernel}: {} from the tune cache (searched at {} on {})",
                        assignments(chosen.iter().copied()),
                        e.dims,
                        e.device
                    );
                }
            }
            None if device.is_some() => eprintln!(
                "note: {kernel}: tunables at their defaults; `tilec tune {file} --dims {dims}` searches for this shape"
            ),
            None => {}
        }
    }
    Ok(settings)
}

/// Whether `kernel` built with `settings` plans a launch at `dims`: checked
/// and lowered, not compiled (no back end).
fn plans_at(
    src: &str,
    settings: &Settings,
    kernel: &str,
    dims: &Dims,
    arch: &str,
) -> Result<(), String> {
    let opts = crate::compile::Options {
        checked: None,
        settings,
    };
    let lowered = match crate::compile::lower_source(src, opts) {
        Ok(l) => l,
        Err(crate::compile::Failure::Source(d)) => {
            return Err(d.first().map_or("refused".into(), |d| d.message.clone()));
        }
        Err(crate::compile::Failure::Backend(e)) => return Err(e),
    };
    let Some((k, l)) = lowered.iter().find(|(k, _)| k.name == kernel) else {
        return Err("the kernel is missing".into());
    };
    let m = crate::compile::manifest(k, l, arch);
    tilec_runtime::plan::plan(&m, dims)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
