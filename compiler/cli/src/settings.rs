//! The values of a file's `tune` parameters for one build: `--set` first,
//! then, with a GPU, the tune cache's entry for this device, source and
//! shape class; the defaults the file declares for the rest.
//!
//! In: the `--set` arguments, the source, the device and the extents. Out:
//! the [`Settings`] the checker binds, and a note on stderr saying where
//! each kernel's values came from.

use crate::compile::{TuneArgs, fail};
use std::process::ExitCode;
use tilec::check::program::Settings;
use tilec_runtime::plan::Dims;
use tilec_runtime::tuning::{TuneCache, default_path, fingerprint};

/// Each kernel of the source with its `tune` names; empty when it does not
/// parse (the build that follows reports why).
pub fn declared(src: &str) -> Vec<(String, Vec<String>)> {
    match tilec::syntax::parse_program(src) {
        Ok(p) => p
            .kernels
            .iter()
            .map(|k| {
                let names = k.tunables().into_iter().map(str::to_string).collect();
                (k.name.name.clone(), names)
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// `--set NAME=V,KERNEL.NAME=V`: each name one a kernel of the file
/// declares, each value an integer.
pub fn parse_set(a: &TuneArgs, file: &str, src: &str) -> Result<Settings, ExitCode> {
    let kernels = declared(src);
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
        if !known {
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
        out.insert(key.to_string(), v);
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
) -> Result<Settings, ExitCode> {
    let mut settings = parse_set(a, file, src)?;
    let cache = device
        .and_then(|_| default_path())
        .map(|p| TuneCache::load(&p));
    let cache = match cache {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            eprintln!("warning: {e}; the defaults are used");
            None
        }
        None => None,
    };
    let source = fingerprint(src);
    for (kernel, names) in declared(src) {
        let open: Vec<&String> = names
            .iter()
            .filter(|n| {
                !settings.contains_key(n.as_str())
                    && !settings.contains_key(&format!("{kernel}.{n}"))
            })
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
                let mut chosen = Vec::new();
                for n in open {
                    if let Some(v) = e.values.get(n) {
                        settings.insert(format!("{kernel}.{n}"), *v);
                        chosen.push(format!("{n}={v}"));
                    }
                }
                eprintln!(
                    "note: {kernel}: {} from the tune cache (searched at {} on {})",
                    chosen.join(","),
                    e.dims,
                    e.device
                );
            }
            None if device.is_some() => eprintln!(
                "note: {kernel}: tunables at their defaults; `tilec tune {file} --dims {dims}` searches for this shape"
            ),
            None => {}
        }
    }
    Ok(settings)
}
