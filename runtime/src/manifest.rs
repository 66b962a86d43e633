//! The manifest `tilec build` writes beside the PTX: everything the runtime
//! needs to launch a kernel safely without the compiler.

use serde::{Deserialize, Serialize};
use tilec_layout::{Builtin, Fact, Int, Layout, TensorMap};

pub use tilec_layout::Elem;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamKind {
    /// A tensor in global memory: its buffer holds `cosize(layout)` elements.
    Tensor {
        elem: Elem,
        layout: Layout,
        /// The kernel writes it: its layout must not put two elements in
        /// one place at the launch's extents, or two writers race.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        written: bool,
    },
    Scalar {
        elem: Elem,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub name: String,
    pub kind: ParamKind,
}

impl ParamSpec {
    /// The element type (tensors and scalars alike).
    pub fn elem(&self) -> Elem {
        match &self.kind {
            ParamKind::Tensor { elem, .. } | ParamKind::Scalar { elem } => *elem,
        }
    }
}

/// Leaf `leaf` (in the flattened layout) of tensor parameter `param`'s
/// strides as run-time integer `name`, whose value on the caller's buffer
/// is `declared`, the parameter's own stride there (over the extents).
/// With `padded`, the leaf's extent instead (its stride is 1): how far
/// along it a guarded load may read, the extent on the caller's buffer,
/// the pitch on an aligned copy ([`crate::staging`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrideSpec {
    pub name: String,
    pub param: usize,
    pub leaf: usize,
    pub declared: Int,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub padded: bool,
}

/// A fact about the extents that must hold for the launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchCondition {
    pub fact: Fact,
    pub needed_by: String,
}

/// A global access of parameter `param` at `index` (symbolic in
/// `thread.x`, `block.*`, loop counters and extents): an element's index
/// in the buffer, or with `below`, its coordinate in one mode of the
/// tensor, which stays in `0..below`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    pub param: usize,
    pub index: Int,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<Int>,
    /// Pairs `[a, b]`: the access runs only where `a <= b` for each (the
    /// ifs around it), so not in a region of the proof where `a > b`
    /// throughout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<[Int; 2]>,
    /// The `.tile` line of its statement, which a refusal names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A quotient (or remainder) the entry computes in 32 bits, by its
/// operands (symbolic as an [`Access`]'s index): the runtime launches the
/// entry only where both stay within `-(2^31 - 1)..2^31` over the launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Narrowed {
    pub dividend: Int,
    pub divisor: Int,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopSpec {
    pub name: String,
    pub start: Int,
    pub end: Int,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferenceKind {
    Gemm,
    Copy,
    Transpose,
    /// A kernel of the same source, run by the compiler's CPU executor.
    Kernel,
    /// `gemv(A, x, y, alpha, beta)`: `y = alpha * A x + beta * y`.
    Gemv,
    /// `reduce_sum(X, Y)`: each row's sum (over mode 1).
    ReduceSum,
    /// `softmax(X, Y)`: each row's softmax.
    Softmax,
    /// `layernorm(X, gamma, beta, Y, eps)`: each row normalized (population
    /// variance), scaled and shifted.
    LayerNorm,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub kind: ReferenceKind,
    pub operands: Vec<usize>,
    /// The reference kernel's name, for [`ReferenceKind::Kernel`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub kernel: String,
    pub arch: String,
    /// Tensors and scalars in ABI order; the extents follow as i64, then
    /// the stride symbols as i64, then, for a variant with a block offset,
    /// three u32s (the contract codegen and the launch share;
    /// `pipeline.rs` checks it on every example).
    pub params: Vec<ParamSpec>,
    /// The names a launch binds (`--dims`), each a positive integer.
    pub extents: Vec<String>,
    /// The tensors' strides that are not constants, each a run-time
    /// integer of the entries (`A.stride.0`), bound to its declared value
    /// for the caller's buffers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strides: Vec<StrideSpec>,
    pub grid: Vec<Int>,
    pub block: Vec<Int>,
    /// Threads at the end of the block that run a pipeline's TMA loads
    /// and nothing else (0: none): the accesses are the others'.
    #[serde(default)]
    pub producer_threads: i64,
    pub shared_bytes: i64,
    /// Blocks a multiprocessor holds at once that the kernel's launch
    /// promises (`min_blocks(n)`; 1 where it says nothing): the plan's
    /// choice between one launch and a split one on a small grid.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub min_blocks: i64,
    /// Whether the kernel multiplies on tensor cores (mma.sync or wgmma):
    /// the plan's choice between one launch and a split one too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tensor_cores: bool,
    /// Dynamic shared memory to request at launch (0: all static).
    pub dynamic_shared_bytes: i64,
    /// Entry points in order of preference: the first whose conditions
    /// hold for the launch's extents runs, on the blocks its block
    /// conditions allow; the next one the rest of the grid.
    pub variants: Vec<VariantSpec>,
    pub reference: Option<Reference>,
    /// A kernel with a `reduce` across blocks: the workspace and arrival
    /// counters its launches take as their last two parameters.
    #[serde(default)]
    pub block_reduce: Option<BlockReduce>,
    /// A `--checked` build: every global and shared access checks its
    /// bounds on the device and stops the kernel with its line, so the plan
    /// launches it without proving the accesses in bounds first.
    #[serde(default)]
    pub checked: bool,
    /// The largest relative error of the hardware approximations the
    /// kernel asked for (`fast_exp`, ...; 0: none): its results are
    /// checked within it, not bit for bit against the CPU executor.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub approximation: f64,
    /// A unit in the last place of bf16 or f16 where an approximated value
    /// is rounded to that type and computed on again (0: nowhere): the
    /// CPU executor's exact value and the hardware's may round either way
    /// there, so `tilec run --check-cpu` allows one such unit at the
    /// output's scale. The check against the reference ignores it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounded_approximation: f64,
    /// The coarsest type, bf16 or f16, that the kernel rounds a value to
    /// inside an expression (`C = bf16(A * B)` into an f32 C), if any: the
    /// reference's exact value and the kernel's may round to it either
    /// way, a whole unit apart, so its results are checked within that
    /// type's tolerance where their own is tighter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounded_to: Option<Elem>,
    /// The kernel's `tune` parameters and the values this build has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunables: Vec<TunableSpec>,
    /// BLAKE3 of the source file, in hex: what the tune cache's entries
    /// are for (an edited file is tuned again).
    #[serde(default)]
    pub source: String,
    /// BLAKE3 of the PTX and of this manifest with the seal empty, in
    /// hex: what ties the two files together. A runtime that loads them
    /// from disk refuses a pair whose seal does not match (an edited
    /// layout, access list or PTX).
    #[serde(default)]
    pub seal: String,
}

/// The seal of a PTX and its manifest's JSON with the seal empty.
/// BLAKE3: the seal covers the whole PTX (hundreds of KB), hashed at every
/// build and load; SHA-3 in software took 12% of a build's main thread.
fn seal_hash(ptx: &str, unsealed: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(ptx.as_bytes());
    h.update(unsealed.as_bytes());
    h.finalize().to_hex().to_string()
}

/// What a `reduce` across blocks needs at launch: per partial, a thread's
/// `values` f32 for each of its reducing threads (a pipeline's producer
/// warpgroup holds none) in the workspace, and as much per run of `runs`
/// parts (a group's parts are summed run by run, then the runs' sums);
/// per group, a u32 counter and one per run, zero before the first launch
/// (each launch leaves them at zero).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockReduce {
    pub groups: ReduceGroups,
    pub values: i64,
    pub runs: i64,
    /// The partials added by atomics into row g of the workspace for
    /// group g, which the group's last block leaves at zero (`reduce ...
    /// atomic`): its workspace must be zero before the first launch, so it
    /// is not shared with one of partials in index order.
    #[serde(default)]
    pub atomic: bool,
}

/// The parts a run of a `reduce` across blocks adds before the runs' sums
/// are added: the compiler's `tilec::ir::REDUCE_RUN`, which its kernels'
/// workspace layout follows.
pub const REDUCE_RUN: i64 = 8;

/// How a `reduce` across blocks' partials and groups are counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ReduceGroups {
    /// The blocks that differ only in grid dimension `0..3`: a partial per
    /// block, a group per place in the other two dimensions.
    Dim(u8),
    /// `[groups, most]` in the extents: `groups * most` partials, `groups`
    /// groups; the kernel takes both values after the counters.
    Parts([Int; 2]),
}

/// A `tune` parameter: the value of this build, and its candidates (what
/// `tilec-run` may suggest instead).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunableSpec {
    pub name: String,
    pub value: i64,
    pub candidates: Vec<i64>,
}

/// One entry point of the kernel: what must hold to launch it, and its
/// unguarded global accesses, which the runtime bounds before launching.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub entry: String,
    pub conditions: Vec<LaunchCondition>,
    /// Facts about `block.*` that must hold for every block it runs
    /// (its tiles are full); empty: any block.
    pub block_conditions: Vec<LaunchCondition>,
    /// Whether the entry takes a block offset (three u32s after the
    /// extents), so that it can run on part of the grid.
    pub block_offset: bool,
    pub accesses: Vec<Access>,
    pub loops: Vec<LoopSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub narrowed: Vec<Narrowed>,
    /// The tensor maps the entry takes after the block offset, in order,
    /// encoded by the runtime at launch (TMA loads need no bound check:
    /// the hardware fills zeros outside the map, and the map is the tensor).
    #[serde(default)]
    pub tensor_maps: Vec<TensorMap>,
    /// Blocks per cluster along each grid dimension: the entry runs only
    /// in clusters of that shape, on a grid of whole clusters.
    #[serde(default = "no_cluster")]
    pub cluster: [u32; 3],
    /// Whether a launch of the entry may be padded to whole clusters:
    /// compiled so, its pad blocks write nothing. A grid of whole clusters
    /// is compiled without (its pipeline's body may write global memory),
    /// and the runtime then refuses a launch that would need pad blocks.
    #[serde(default = "may_pad")]
    pub pads: bool,
}

fn may_pad() -> bool {
    true
}

fn no_cluster() -> [u32; 3] {
    [1; 3]
}

impl Manifest {
    /// The parameters' names, in ABI order.
    pub fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|p| p.name.clone()).collect()
    }

    /// The scalar parameters' names (`--scalars` sets their values).
    pub fn scalar_names(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }))
            .map(|p| p.name.as_str())
            .collect()
    }

    /// `splits=16,stages=4`: the tunables' values of this build.
    pub fn tuned(&self) -> String {
        crate::plan::assignments(self.tunables.iter().map(|t| (&t.name, t.value)))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes")
    }

    /// Reads a manifest and validates it (see [`Manifest::validate`]).
    pub fn from_json(s: &str) -> Result<Manifest, String> {
        let m: Manifest =
            serde_json::from_str(s).map_err(|e| format!("not a tilec manifest: {e}"))?;
        m.validate()?;
        Ok(m)
    }

    /// The seal of this manifest with `ptx` (see [`Manifest::seal`]).
    pub fn seal_of(&self, ptx: &str) -> String {
        let unsealed = Manifest {
            seal: String::new(),
            ..self.clone()
        };
        seal_hash(ptx, &unsealed.to_json())
    }

    /// Seals the manifest with the PTX it describes.
    pub fn seal(&mut self, ptx: &str) {
        self.seal = self.seal_of(ptx);
    }

    /// Seals the manifest with `ptx`, given `unsealed`, its JSON with the
    /// seal empty (made while the PTX was compiled), and returns the
    /// sealed JSON: the seal written into that text's last field, not the
    /// manifest serialized again (a build's serial tail, once the back
    /// ends are done).
    pub fn seal_json(&mut self, ptx: &str, unsealed: &str) -> String {
        const EMPTY: &str = "\"seal\": \"\"\n}";
        self.seal = seal_hash(ptx, unsealed);
        match unsealed.strip_suffix(EMPTY) {
            Some(head) => format!("{head}\"seal\": \"{}\"\n}}", self.seal),
            None => self.to_json(),
        }
    }

    /// Refuses a PTX that is not the one this manifest was sealed with.
    pub fn check_seal(&self, ptx: &str) -> Result<(), String> {
        if self.seal.is_empty() {
            return Err("the manifest has no seal; rebuild it with `tilec build`".into());
        }
        if self.seal_of(ptx) != self.seal {
            return Err(
                "the manifest and the PTX do not match their seal (one was edited, or they come from different builds); rebuild both with `tilec build`"
                    .into(),
            );
        }
        Ok(())
    }

    /// The entries' run-time integers in ABI order: the extents, then the
    /// stride symbols.
    pub fn run_time_names(&self) -> impl Iterator<Item = &String> {
        self.extents
            .iter()
            .chain(self.strides.iter().map(|s| &s.name))
    }

    /// Everything the plan and the launch rely on, checked against the
    /// manifest's own declarations: parameter indices name tensors, every
    /// name in an index, a size or a fact is an extent, a stride symbol, a
    /// block or thread index or an enclosing loop counter, each stride
    /// symbol the declared stride of its tensor's leaf, at most three grid
    /// and block dimensions, shared memory within the device, distinct
    /// entries.
    pub fn validate(&self) -> Result<(), String> {
        let tensor = |p: usize, what: &str| match self.params.get(p).map(|p| &p.kind) {
            Some(ParamKind::Tensor { .. }) => Ok(()),
            Some(ParamKind::Scalar { .. }) => Err(format!("{what} names the scalar parameter {p}")),
            None => Err(format!(
                "{what} names parameter {p}, but there are {}",
                self.params.len()
            )),
        };
        let known = |int: &Int, extra: &[&str], what: &str| {
            let mut names = Vec::new();
            int.names(&mut names);
            match names.iter().find(|n| {
                !self.run_time_names().any(|x| x == *n)
                    && Builtin::parse(n).is_none()
                    && !extra.contains(&n.as_str())
            }) {
                Some(n) => Err(format!(
                    "{what} uses `{n}`, which is no extent of the kernel"
                )),
                None => Ok(()),
            }
        };
        let fact = |f: &Fact, what: &str| {
            let mut names = Vec::new();
            f.names(&mut names);
            match names
                .iter()
                .find(|n| !self.run_time_names().any(|x| x == *n) && Builtin::parse(n).is_none())
            {
                Some(n) => Err(format!(
                    "{what} uses `{n}`, which is no extent of the kernel"
                )),
                None => Ok(()),
            }
        };
        if self.variants.is_empty() {
            return Err("no entry points".into());
        }
        if self.grid.len() > 3 || self.block.len() > 3 {
            return Err("more than three grid or block dimensions".into());
        }
        if ![0, 128].contains(&self.producer_threads)
            || (self.producer_threads > 0 && self.block.len() != 1)
        {
            return Err(format!("a producer of {} threads", self.producer_threads));
        }
        for x in self.grid.iter().chain(&self.block) {
            known(x, &[], "the launch")?;
        }
        // The kernel's rows and counters are laid out for the compiler's
        // runs (`tilec::ir::REDUCE_RUN`); sized for others, the workspace
        // would not hold them.
        if let Some(r) = &self.block_reduce
            && r.runs != REDUCE_RUN
        {
            return Err(format!(
                "a reduce across blocks in runs of {} parts (this runtime knows runs of {REDUCE_RUN})",
                r.runs
            ));
        }
        if let Some(BlockReduce {
            groups: ReduceGroups::Parts(bounds),
            ..
        }) = &self.block_reduce
        {
            for x in bounds {
                known(x, &[], "a reduce across parts' bound")?;
            }
        }
        if !(0..=232_448).contains(&self.dynamic_shared_bytes)
            || !(0..=232_448).contains(&self.shared_bytes)
        {
            return Err(format!(
                "shared memory of {} bytes ({} dynamic) is beyond the device's 227 KB",
                self.shared_bytes, self.dynamic_shared_bytes
            ));
        }
        // Declared layouts, and so the stride symbols' values, name the
        // extents alone.
        let over_extents = |int: &Int, what: &str| {
            let mut names = Vec::new();
            int.names(&mut names);
            match names.iter().find(|n| !self.extents.contains(n)) {
                Some(n) => Err(format!(
                    "{what} uses `{n}`, which is no extent of the kernel"
                )),
                None => Ok(()),
            }
        };
        for p in &self.params {
            if let ParamKind::Tensor { layout, .. } = &p.kind {
                for x in layout
                    .shape()
                    .leaves()
                    .iter()
                    .chain(layout.stride().leaves().iter())
                {
                    over_extents(x, &format!("the layout of {}", p.name))?;
                }
            }
        }
        for (i, s) in self.strides.iter().enumerate() {
            let declared = match self.params.get(s.param).map(|p| &p.kind) {
                Some(ParamKind::Tensor { layout, .. }) if s.padded => layout
                    .stride()
                    .leaves()
                    .get(s.leaf)
                    .filter(|d| d.is_const(1))
                    .and_then(|_| layout.shape().leaves().get(s.leaf).cloned()),
                Some(ParamKind::Tensor { layout, .. }) => {
                    layout.stride().leaves().get(s.leaf).cloned()
                }
                _ => None,
            };
            // Named and ordered as the compiler lists them (by parameter,
            // its strides by leaf, then its padded extent), so that each
            // slot of the entries' ABI is the symbol its name says.
            let kind = if s.padded { "padded" } else { "stride" };
            let name = self
                .params
                .get(s.param)
                .map(|p| format!("{}.{kind}.{}", p.name, s.leaf));
            let key = |s: &StrideSpec| (s.param, s.padded, s.leaf);
            let ordered = i == 0 || key(&self.strides[i - 1]) < key(s);
            if declared.as_ref() != Some(&s.declared)
                || name.as_ref() != Some(&s.name)
                || !ordered
                || self
                    .run_time_names()
                    .take(self.extents.len() + i)
                    .any(|n| n == &s.name)
            {
                return Err(format!(
                    "the stride symbol {} is not leaf {} of parameter {}'s declared strides (or unit-stride extent), or not a name of its own",
                    s.name, s.leaf, s.param
                ));
            }
        }
        // What the runtime falls back on where a quotient passes 32 bits.
        if let Some(v) = self.variants.last()
            && !v.narrowed.is_empty()
        {
            return Err(format!(
                "{}, the last entry, divides in 32 bits: none is left to fall back on",
                v.entry
            ));
        }
        let mut entries = Vec::new();
        for v in &self.variants {
            if entries.contains(&&v.entry) {
                return Err(format!("the entry {} is listed twice", v.entry));
            }
            entries.push(&v.entry);
            for c in v.conditions.iter().chain(&v.block_conditions) {
                fact(&c.fact, &format!("a condition of {}", v.entry))?;
            }
            let loops: Vec<&str> = v.loops.iter().map(|l| l.name.as_str()).collect();
            // The launch's bound proof takes a counter's range by its name.
            if let Some(n) = loops
                .iter()
                .enumerate()
                .find(|(i, n)| loops[..*i].contains(n))
            {
                return Err(format!("the loop {} of {} is listed twice", n.1, v.entry));
            }
            for l in &v.loops {
                known(&l.start, &loops, &format!("loop {} of {}", l.name, v.entry))?;
                known(&l.end, &loops, &format!("loop {} of {}", l.name, v.entry))?;
            }
            for a in &v.accesses {
                tensor(a.param, &format!("an access of {}", v.entry))?;
                known(&a.index, &loops, &format!("an access of {}", v.entry))?;
            }
            for n in &v.narrowed {
                let what = format!("a quotient of {} in 32 bits", v.entry);
                known(&n.dividend, &loops, &what)?;
                known(&n.divisor, &loops, &what)?;
            }
            let wide = v.cluster.iter().filter(|&&c| c != 1).count();
            if v.cluster.contains(&0)
                || wide > 1
                || v.cluster.iter().product::<u32>() > 8
                || (wide == 1 && v.tensor_maps.is_empty())
            {
                return Err(format!(
                    "{} asks for a cluster of {:?}: 2 to 8 blocks along one dimension, for TMA loads",
                    v.entry, v.cluster
                ));
            }
            if !v.tensor_maps.is_empty() && self.producer_threads == 0 {
                return Err(format!(
                    "{} takes tensor maps but has no producer warpgroup",
                    v.entry
                ));
            }
            for t in &v.tensor_maps {
                tensor(t.param, &format!("a tensor map of {}", v.entry))?;
                if self.params[t.param].elem() != t.elem {
                    return Err(format!(
                        "a tensor map of {} reads {} as {}",
                        v.entry, self.params[t.param].name, t.elem
                    ));
                }
                if t.dims.is_empty() || t.dims.len() > 5 {
                    return Err(format!(
                        "a tensor map of {} has {} dimensions",
                        v.entry,
                        t.dims.len()
                    ));
                }
                for d in &t.dims {
                    known(&d.extent, &[], &format!("a tensor map of {}", v.entry))?;
                    known(&d.stride, &[], &format!("a tensor map of {}", v.entry))?;
                }
            }
        }
        if let Some(r) = &self.reference {
            for &o in &r.operands {
                tensor(o, "the reference").or_else(|e| match (r.kind, self.params.get(o)) {
                    // A GEMM's alpha and beta are scalars, and so may a
                    // reference kernel's operands be.
                    (
                        ReferenceKind::Gemm
                        | ReferenceKind::Kernel
                        | ReferenceKind::Gemv
                        | ReferenceKind::LayerNorm,
                        Some(_),
                    ) => Ok(()),
                    _ => Err(e),
                })?;
            }
        }
        Ok(())
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn one() -> i64 {
    1
}

fn is_one(x: &i64) -> bool {
    *x == 1
}
