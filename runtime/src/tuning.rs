//! The tune cache: the values `tilec tune` found fastest for a kernel's
//! tunables, per device, source file and shape class, in one JSON file
//! that `tilec run`, `tilec bench` and `tilec-run` read.
//!
//! A shape class rounds each extent up to a power of two (M=300 and M=500
//! share M=512): a search at one shape serves its neighbours, whose best
//! split or tile rarely differs. An entry is for the source's hash, so an
//! edited file is searched again rather than served stale values.

use crate::RuntimeError;
use crate::manifest::Manifest;
use crate::plan::{Dims, assignments};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One search's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub device: String,
    pub kernel: String,
    /// [`fingerprint`] of the source file.
    pub source: String,
    /// [`shape_class`] of the extents searched at.
    pub class: String,
    /// The extents searched at, as given.
    pub dims: String,
    pub values: BTreeMap<String, i64>,
    /// Median time of the best variant, and of the defaults where they
    /// were built and ran, in ms.
    pub best_ms: f64,
    #[serde(default)]
    pub default_ms: Option<f64>,
}

/// The cache file and its entries.
#[derive(Debug, Default)]
pub struct TuneCache {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct File {
    entries: Vec<Entry>,
}

/// Where the cache lives: `$TILEC_TUNE_CACHE`, else
/// `$XDG_CACHE_HOME/tilec/tune.json`, else `~/.cache/tilec/tune.json`.
pub fn default_path() -> Option<PathBuf> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
    if let Some(p) = var("TILEC_TUNE_CACHE") {
        return Some(PathBuf::from(p));
    }
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))?;
    Some(base.join("tilec").join("tune.json"))
}

/// BLAKE3 of a source file's text, in hex.
pub fn fingerprint(src: &str) -> String {
    blake3::hash(src.as_bytes()).to_hex().to_string()
}

/// Each extent rounded up to a power of two, in name order:
/// `K=8192,M=512,N=512`.
pub fn shape_class(dims: &Dims) -> String {
    let mut parts: Vec<(String, i64)> = dims
        .0
        .iter()
        .map(|(n, v)| {
            let up = u64::try_from((*v).max(1))
                .ok()
                .and_then(u64::checked_next_power_of_two)
                .and_then(|p| i64::try_from(p).ok())
                .unwrap_or(i64::MAX);
            (n.clone(), up)
        })
        .collect();
    parts.sort();
    assignments(parts)
}

impl TuneCache {
    /// Reads the cache at `path`; a missing file is an empty cache.
    pub fn load(path: &Path) -> Result<TuneCache, RuntimeError> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => {
                serde_json::from_str::<File>(&text)
                    .map_err(|e| {
                        RuntimeError::Io(format!(
                            "tune cache {}: {e} (delete it to start afresh)",
                            path.display()
                        ))
                    })?
                    .entries
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(RuntimeError::Io(format!("{}: {e}", path.display()))),
        };
        Ok(TuneCache {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The values recorded for this kernel of this source on this device
    /// at this shape class.
    pub fn lookup(&self, device: &str, kernel: &str, source: &str, dims: &Dims) -> Option<&Entry> {
        let class = shape_class(dims);
        self.entries.iter().find(|e| {
            e.device == device && e.kernel == kernel && e.source == source && e.class == class
        })
    }

    /// Records an entry, replacing the one for the same device, kernel,
    /// source and class, and writes the file (through a temporary file,
    /// so that a reader never sees half of it).
    pub fn record(&mut self, entry: Entry) -> Result<(), RuntimeError> {
        self.entries.retain(|e| {
            (&e.device, &e.kernel, &e.source, &e.class)
                != (&entry.device, &entry.kernel, &entry.source, &entry.class)
        });
        self.entries.push(entry);
        let io = |e: std::io::Error| RuntimeError::Io(format!("{}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(&File {
            entries: self.entries.clone(),
        })
        .map_err(|e| RuntimeError::Io(e.to_string()))?;
        // A name of this process's own: two searches writing at once each
        // rename a whole file into place (the later one wins).
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

/// For a prebuilt kernel (`tilec-run`): a note when the cache at `path`
/// holds other values for its source, device and shape class than the
/// build has, with the command that rebuilds it so.
pub fn advice(path: &Path, m: &Manifest, device: &str, dims: &Dims) -> Option<String> {
    if m.tunables.is_empty() {
        return None;
    }
    let cache = TuneCache::load(path).ok()?;
    let e = cache.lookup(device, &m.kernel, &m.source, dims)?;
    // Values the cache holds for tunables this build has, among their
    // candidates (an entry from an edited file's search has another hash).
    let preferred: Vec<(&str, i64)> = m
        .tunables
        .iter()
        .filter_map(|t| {
            let v = *e.values.get(&t.name)?;
            t.candidates.contains(&v).then_some((t.name.as_str(), v))
        })
        .collect();
    let differ = preferred
        .iter()
        .any(|(n, v)| m.tunables.iter().any(|t| t.name == *n && t.value != *v));
    let want = assignments(preferred.iter().copied());
    let set = assignments(
        preferred
            .iter()
            .map(|(n, v)| (format!("{}.{n}", m.kernel), *v)),
    );
    differ.then(|| {
        format!(
            "note: this build has {}; the tune cache prefers {} at this shape on {device} (rebuild with `tilec build --set {}`)",
            m.tuned(),
            want,
            set
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(class: &str, splits: i64) -> Entry {
        Entry {
            device: "NVIDIA H200".into(),
            kernel: "sgemm_splitk".into(),
            source: fingerprint("kernel k() {}"),
            class: class.into(),
            dims: class.into(),
            values: BTreeMap::from([("splits".to_string(), splits)]),
            best_ms: 0.1,
            default_ms: Some(0.2),
        }
    }

    #[test]
    fn a_shape_class_rounds_each_extent_up_to_a_power_of_two() {
        let d = Dims::parse("M=300,N=512,K=8193").unwrap();
        assert_eq!(shape_class(&d), "K=16384,M=512,N=512");
        let big = Dims::parse("M=9223372036854775807").unwrap();
        assert_eq!(shape_class(&big), format!("M={}", i64::MAX));
    }

    #[test]
    fn an_entry_is_found_at_its_class_and_replaced_by_a_newer_search() {
        let dir = std::env::temp_dir().join(format!("tilec-tune-{}", std::process::id()));
        let path = dir.join("tune.json");
        let mut c = TuneCache::load(&path).unwrap();
        assert!(c.entries.is_empty(), "a missing file is an empty cache");
        c.record(entry("K=8192,M=512,N=512", 8)).unwrap();
        c.record(entry("K=8192,M=512,N=512", 16)).unwrap();
        let c = TuneCache::load(&path).unwrap();
        assert_eq!(c.entries.len(), 1);
        let src = fingerprint("kernel k() {}");
        let near = Dims::parse("M=500,N=300,K=8000").unwrap();
        let found = c
            .lookup("NVIDIA H200", "sgemm_splitk", &src, &near)
            .unwrap();
        assert_eq!(found.values["splits"], 16);
        let edited = fingerprint("kernel k() { }");
        assert!(
            c.lookup("NVIDIA H200", "sgemm_splitk", &edited, &near)
                .is_none()
        );
        let far = Dims::parse("M=4096,N=4096,K=8192").unwrap();
        assert!(
            c.lookup("NVIDIA H200", "sgemm_splitk", &src, &far)
                .is_none()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_damaged_cache_is_an_error_that_says_what_to_do() {
        let path = std::env::temp_dir().join(format!("tilec-bad-{}.json", std::process::id()));
        std::fs::write(&path, "{ not json").unwrap();
        let e = TuneCache::load(&path).unwrap_err().to_string();
        assert!(e.contains("delete it"), "{e}");
        std::fs::remove_file(path).unwrap();
    }
}
