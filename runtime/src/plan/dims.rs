//! Extents and other named integers as the command line gives them
//! (`M=4096,N=4096,K=4096`): parsed into [`Dims`], written back by
//! [`assignments`].

use crate::RuntimeError;

/// Extents by name, e.g. parsed from `M=4096,N=4096,K=4096`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dims(pub Vec<(String, i64)>);

/// `M=4096,N=4096,K=4096`.
impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&assignments(self.0.iter().map(|(k, v)| (k, *v))))
    }
}

/// `NAME=V,NAME=V`: how named integers are written, extents (`--dims`)
/// and tunables (`--set`, reports) alike.
pub fn assignments<N: std::fmt::Display>(pairs: impl IntoIterator<Item = (N, i64)>) -> String {
    pairs
        .into_iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Dims {
    pub fn parse(s: &str) -> Result<Dims, RuntimeError> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, val) = part.split_once('=').ok_or_else(|| {
                RuntimeError::Usage(format!("`{part}` is not NAME=VALUE, e.g. M=4096"))
            })?;
            if k.trim().is_empty() || val.trim().is_empty() {
                let what = match k.trim().is_empty() {
                    true => "names no extent",
                    false => "has no value",
                };
                return Err(RuntimeError::Usage(format!(
                    "`{part}` {what}: NAME=VALUE, e.g. M=4096"
                )));
            }
            let n: i64 = val.trim().parse().map_err(|_| {
                RuntimeError::Usage(match val.trim().bytes().all(|b| b.is_ascii_digit()) {
                    true => format!("`{val}` is past 64 bits (in {part}); extents are below 2^40"),
                    false => format!(
                        "`{val}` is not an integer (in {part}); extents are whole numbers, and a scalar parameter's value goes in --scalars"
                    ),
                })
            })?;
            v.push((k.trim().to_string(), n));
        }
        Ok(Dims(v))
    }

    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}
