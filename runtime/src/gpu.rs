//! The GPU: loads PTX through the CUDA driver (cudarc, loaded at run time),
//! copies arguments, launches a planned kernel, times it with events.

use crate::RuntimeError;
use crate::host::HostBuffer;
use crate::manifest::{BlockReduce, Elem, Manifest, ParamKind};
use crate::plan::{LaunchPlan, MapPlan, MapSource};
use crate::reference::Arg;
use crate::stopwatch::Stopwatch;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig,
    PushKernelArg,
};
use half::{bf16, f16};
use std::sync::Arc;

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    /// Its multiprocessors.
    pub sms: i64,
    /// Its L2 cache's size in bytes.
    pub l2_bytes: usize,
}

impl From<cudarc::driver::DriverError> for RuntimeError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        RuntimeError::Cuda(e.to_string())
    }
}

/// The device copies of a kernel's arguments, in order.
pub struct DeviceArgs(Vec<DeviceArg>);

impl DeviceArgs {
    /// Three distinct tensor arguments of element type `T`: two to read,
    /// one to write.
    pub fn gemm_operands<T: DeviceElem>(
        &mut self,
        a: usize,
        b: usize,
        c: usize,
    ) -> Option<(&CudaSlice<T>, &CudaSlice<T>, &mut CudaSlice<T>)> {
        let (mut ra, mut rb, mut rc) = (None, None, None);
        for (i, x) in self.0.iter_mut().enumerate() {
            if let Some(s) = T::slice(x) {
                match i {
                    _ if i == c => rc = Some(s),
                    _ if i == a => ra = Some(&*s),
                    _ if i == b => rb = Some(&*s),
                    _ => {}
                }
            }
        }
        Some((ra?, rb?, rc?))
    }

    /// The device address of tensor argument `i`.
    fn address(&self, i: usize, stream: &CudaStream) -> Result<u64, RuntimeError> {
        use cudarc::driver::DevicePtr;
        Ok(match &self.0[i] {
            DeviceArg::F32(x) => x.device_ptr(stream).0,
            DeviceArg::F16(x) => x.device_ptr(stream).0,
            DeviceArg::Bf16(x) => x.device_ptr(stream).0,
            DeviceArg::I32(x) => x.device_ptr(stream).0,
            _ => return Err(RuntimeError::Manifest(format!("argument {i} is a scalar"))),
        })
    }
}

/// The element types a device tensor can have.
pub trait DeviceElem: Sized {
    fn slice(arg: &mut DeviceArg) -> Option<&mut CudaSlice<Self>>;
}

impl DeviceElem for f32 {
    fn slice(arg: &mut DeviceArg) -> Option<&mut CudaSlice<f32>> {
        match arg {
            DeviceArg::F32(s) => Some(s),
            _ => None,
        }
    }
}

impl DeviceElem for f16 {
    fn slice(arg: &mut DeviceArg) -> Option<&mut CudaSlice<f16>> {
        match arg {
            DeviceArg::F16(s) => Some(s),
            _ => None,
        }
    }
}

impl DeviceElem for bf16 {
    fn slice(arg: &mut DeviceArg) -> Option<&mut CudaSlice<bf16>> {
        match arg {
            DeviceArg::Bf16(s) => Some(s),
            _ => None,
        }
    }
}

/// One pitched copy of the stage kernel ([`crate::stage`]), as
/// [`Gpu::stage`] batches them.
#[derive(Clone, Copy)]
struct StageCopy<'a> {
    elem_bytes: u64,
    kernel: &'a CudaFunction,
    /// Source, destination, row length, source pitch, destination pitch,
    /// rows (lengths and pitches in elements).
    args: [u64; 6],
    /// Blocks along a row.
    blocks: u64,
    rows: u64,
}

/// The entry points of a plan's launches, each with whether it takes a
/// block offset, and a stream for each launch after the first.
pub struct Loaded {
    entries: Vec<(CudaFunction, bool)>,
    /// Per launch after the first: its stream, and the event of its end.
    side: Vec<(Arc<CudaStream>, CudaEvent)>,
    /// Where the side streams start: the main stream's work so far.
    start: CudaEvent,
    /// The aligned copies of [`LaunchPlan::staged`], filled at each launch
    /// by the stage kernel for their element size.
    staged: Vec<(CudaSlice<u8>, CudaFunction)>,
    /// What a `reduce` across blocks needs, and its buffers.
    block_reduce: Option<(BlockReduce, Arc<BlockReduceBuffers>)>,
}

/// A `reduce` across blocks' workspace and arrival counters (zeroed once;
/// each launch leaves its counters at zero). Kernels launched one after
/// the other on one stream may share them (the builds a race times), each
/// using a prefix: a launch checks that they are large enough for its plan.
struct BlockReduceBuffers {
    workspace: CudaSlice<f32>,
    counters: CudaSlice<u32>,
}

/// A tensor map as a kernel argument: 128 bytes, passed by value.
#[repr(C, align(64))]
pub struct TensorMapArg([u64; 16]);

// Safety: plain bytes, laid out as CUDA's `CUtensorMap`.
unsafe impl cudarc::driver::DeviceRepr for TensorMapArg {}

/// A device copy of one argument.
pub enum DeviceArg {
    F32(CudaSlice<f32>),
    F16(CudaSlice<f16>),
    Bf16(CudaSlice<bf16>),
    I32(CudaSlice<i32>),
    F32Scalar(f32),
    F16Scalar(f16),
    Bf16Scalar(bf16),
    I32Scalar(i32),
}

impl Gpu {
    /// The first GPU, or `None` when this machine has no CUDA driver or no device.
    pub fn open() -> Result<Option<Gpu>, RuntimeError> {
        // Safety: only probes whether the CUDA driver library can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Ok(None);
        }
        if CudaContext::device_count().unwrap_or(0) < 1 {
            return Ok(None);
        }
        let ctx = CudaContext::new(0)?;
        // The runtime orders its streams itself: a launch's side streams
        // wait for the main stream's work so far (`Loaded::start`) and the
        // main stream for their ends, and their launches write disjoint
        // tiles. cudarc's own tracking, once a second stream exists, made
        // every launch argument wait for the last write to it on any
        // stream, which put the full-tile launch behind the edge launches
        // it is meant to run beside, and recorded and waited on two events
        // per argument and tensor map each launch.
        // Safety: before any buffer exists; every buffer is allocated,
        // used and freed on the main stream, or used on a side stream
        // between the main stream's `start` and that stream's end event,
        // which the main stream waits for before anything after the launch.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().unwrap_or_else(|_| "GPU".into());
        let sms = ctx.attribute(
            cudarc::driver::sys::CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?;
        let _ = crate::plan::DEVICE_SM_COUNT.set(sms as i64);
        let l2 = ctx.attribute(
            cudarc::driver::sys::CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
        )?;
        let stream = ctx.default_stream();
        Ok(Some(Gpu {
            ctx,
            stream,
            name,
            sms: sms as i64,
            l2_bytes: l2 as usize,
        }))
    }

    /// Loads the entry points a plan launches, allowing each the dynamic
    /// shared memory it needs, with a stream for each launch after the first.
    pub fn load(&self, ptx: &str, m: &Manifest, plan: &LaunchPlan) -> Result<Loaded, RuntimeError> {
        self.load_all(&[(ptx, m, plan)])?.remove(0)
    }

    /// A build's entry points, side streams and aligned copies, without
    /// the `reduce` buffers.
    fn load_entries(
        &self,
        module: &Arc<CudaModule>,
        m: &Manifest,
        plan: &LaunchPlan,
    ) -> Result<Loaded, RuntimeError> {
        let mut entries = Vec::new();
        for l in &plan.launches {
            let v = &m.variants[l.variant];
            let f = module.load_function(&v.entry)?;
            if plan.dynamic_shared > 0 {
                let attr = cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
                f.set_attribute(attr, plan.dynamic_shared as i32)?;
            }
            if v.cluster != [1; 3] {
                // A plain launch then runs the grid in clusters of this shape
                // (the PTX cannot say so itself: LLVM 19 emits no
                // `.reqnctapercluster`; the entry traps without one).
                use cudarc::driver::sys::CUfunction_attribute_enum as A;
                let dims = [
                    A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                    A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                    A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
                ];
                for (attr, &n) in dims.into_iter().zip(&v.cluster) {
                    f.set_attribute(attr, n as i32)?;
                }
            }
            entries.push((f, v.block_offset));
        }
        // Events without timing are the cheapest to record and wait on.
        let event = || {
            let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
            self.ctx.new_event(Some(flags))
        };
        let side = (1..plan.launches.len())
            .map(|_| Ok((self.ctx.new_stream()?, event()?)))
            .collect::<Result<_, RuntimeError>>()?;
        let mut staged = Vec::new();
        if !plan.staged.is_empty() {
            let stage = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(crate::stage::ptx()))?;
            for s in &plan.staged {
                let entry = crate::stage::entry(s.elem_bytes).ok_or_else(|| {
                    RuntimeError::Manifest(format!("{}-byte elements to stage", s.elem_bytes))
                })?;
                // Zeroed once, and written only by the stage kernel, which
                // leaves the rows' padding alone: a kernel that reads a copy
                // in its tensor's place reads zeros past a row's end up to
                // the pitch, as a guarded load outside the tensor would.
                let copy = self.stream.alloc_zeros::<u8>(s.bytes() as usize)?;
                staged.push((copy, stage.load_function(entry)?));
            }
        }
        Ok(Loaded {
            entries,
            side,
            start: event()?,
            staged,
            block_reduce: None,
        })
    }

    /// Loads several builds of one kernel to launch one after the other
    /// (a race): their `reduce` workspaces are one, as large as the
    /// largest needs, not one each (56 split-K variants at 4096^3 would
    /// otherwise zero 68 GB), and one more for those that add by atomics
    /// (a row a group: small beside the others'). Each build loads or fails alone: the
    /// driver's PTX compile refuses what ptxas cannot fit (a wgmma's
    /// accumulators in the registers two blocks a multiprocessor leave),
    /// which must not stop the others' race.
    pub fn load_all(
        &self,
        builds: &[(&str, &Manifest, &LaunchPlan)],
    ) -> Result<Vec<Result<Loaded, RuntimeError>>, RuntimeError> {
        // Builds that add by atomics share buffers of their own: the
        // others' partials would be in their sums.
        let atomic = |m: &Manifest| m.block_reduce.as_ref().is_some_and(|r| r.atomic);
        let mut buffers = [None, None];
        for kind in [false, true] {
            let sizes = builds
                .iter()
                .filter(|(_, m, _)| atomic(m) == kind)
                .filter_map(|(_, m, p)| p.block_reduce_sizes(m.block_reduce.as_ref()))
                .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1)));
            if let Some(s) = sizes {
                buffers[kind as usize] = Some(Arc::new(self.block_reduce_buffers(s)?));
            }
        }
        let modules = self.load_modules(builds.iter().map(|(ptx, _, _)| *ptx));
        Ok(builds
            .iter()
            .zip(modules)
            .map(|((_, m, p), module)| {
                self.load_sharing(&module?, m, p, buffers[atomic(m) as usize].clone())
            })
            .collect())
    }

    /// Loads PTX modules on as many threads as there are cores (rayon's): the
    /// driver's PTX-to-SASS compile of a new module takes a good part of a
    /// second, which a hundred tuning variants would otherwise wait for
    /// one after the other.
    fn load_modules<'a>(
        &self,
        ptx: impl Iterator<Item = &'a str>,
    ) -> Vec<Result<Arc<CudaModule>, RuntimeError>> {
        use rayon::prelude::*;
        let ptx: Vec<&str> = ptx.collect();
        ptx.par_iter()
            .map(|p| {
                self.ctx
                    .load_module(cudarc::nvrtc::Ptx::from_src(*p))
                    .map_err(|e| match e.0 {
                        cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_PTX => RuntimeError::Cuda(format!(
                            "the driver's PTX compile refused the kernel ({e}): `ptxas -v` on the built PTX says why, e.g. too few registers for its min_blocks"
                        )),
                        _ => e.into(),
                    })
            })
            .collect()
    }

    fn block_reduce_buffers(
        &self,
        (values, counters): (usize, usize),
    ) -> Result<BlockReduceBuffers, RuntimeError> {
        Ok(BlockReduceBuffers {
            workspace: self.stream.alloc_zeros::<f32>(values.max(1))?,
            counters: self.stream.alloc_zeros::<u32>(counters.max(1))?,
        })
    }

    /// [`Gpu::load`] with the `reduce` buffers given (`None`: the kernel has no `reduce`).
    fn load_sharing(
        &self,
        module: &Arc<CudaModule>,
        m: &Manifest,
        plan: &LaunchPlan,
        buffers: Option<Arc<BlockReduceBuffers>>,
    ) -> Result<Loaded, RuntimeError> {
        let mut loaded = self.load_entries(module, m, plan)?;
        loaded.block_reduce = match (&m.block_reduce, buffers) {
            (Some(r), Some(b)) => Some((r.clone(), b)),
            (None, _) => None,
            (Some(_), None) => {
                return Err(RuntimeError::Usage(
                    "a reduce across blocks without its workspace".into(),
                ));
            }
        };
        Ok(loaded)
    }

    /// Refuses, before anything is allocated, tensors that need more
    /// device memory than is free, saying how much they need.
    pub fn check_fits(&self, m: &Manifest, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        let need: u128 = m
            .params
            .iter()
            .zip(&plan.lens)
            .map(|(p, n)| n.unwrap_or(0) as u128 * p.elem().bytes() as u128)
            .chain(plan.staged.iter().map(|s| s.bytes() as u128))
            .chain(
                plan.block_reduce_sizes(m.block_reduce.as_ref())
                    .map(|(v, c)| (v as u128 + c as u128) * 4),
            )
            .sum();
        self.ctx.bind_to_thread()?;
        let (free, _) = cudarc::driver::result::mem_get_info()?;
        if need > free as u128 {
            return Err(RuntimeError::Condition(format!(
                "the tensors need {need} bytes of device memory; {} has {free} free",
                self.name
            )));
        }
        Ok(())
    }

    /// Copies the arguments to the device.
    pub fn upload(&self, m: &Manifest, args: &[Arg]) -> Result<DeviceArgs, RuntimeError> {
        let s = &self.stream;
        let mut dev = Vec::new();
        for (a, p) in args.iter().zip(&m.params) {
            dev.push(match a {
                Arg::Tensor(HostBuffer::F32(v)) => DeviceArg::F32(s.clone_htod(v)?),
                Arg::Tensor(HostBuffer::F16(v)) => DeviceArg::F16(s.clone_htod(v)?),
                Arg::Tensor(HostBuffer::Bf16(v)) => DeviceArg::Bf16(s.clone_htod(v)?),
                Arg::Tensor(HostBuffer::I32(v)) => DeviceArg::I32(s.clone_htod(v)?),
                Arg::Scalar(x) => match p.kind {
                    ParamKind::Scalar { elem: Elem::F32 } => DeviceArg::F32Scalar(*x as f32),
                    // Rounded once, as the CPU executor rounds a scalar.
                    ParamKind::Scalar { elem: Elem::F16 } => {
                        DeviceArg::F16Scalar(crate::host::f16_of(*x))
                    }
                    ParamKind::Scalar { elem: Elem::Bf16 } => {
                        DeviceArg::Bf16Scalar(crate::host::bf16_of(*x))
                    }
                    ParamKind::Scalar { elem: Elem::I32 } => DeviceArg::I32Scalar(*x as i32),
                    ParamKind::Tensor { .. } => {
                        return Err(RuntimeError::Usage(format!("{} needs a tensor", p.name)));
                    }
                },
            });
        }
        Ok(DeviceArgs(dev))
    }

    /// Launches a planned kernel on uploaded arguments (asynchronously).
    /// The plan's launches write the tiles of disjoint blocks, so they run
    /// side by side: the edge launches, on their own streams, start first,
    /// and the full-tile launch's blocks fill the multiprocessors around
    /// them (one after the other, the edges would add a wave). The stream
    /// then waits for all of them.
    pub fn launch(
        &self,
        k: &Loaded,
        plan: &LaunchPlan,
        d: &DeviceArgs,
    ) -> Result<(), RuntimeError> {
        let small = |(r, b): &(BlockReduce, Arc<BlockReduceBuffers>)| {
            plan.block_reduce_sizes(Some(r))
                .is_none_or(|(v, c)| b.workspace.len() < v || b.counters.len() < c)
        };
        if plan.staged.len() != k.staged.len() || k.block_reduce.as_ref().is_some_and(small) {
            return Err(RuntimeError::Usage(
                "the kernel was loaded for another plan (its aligned copies or its workspace differ)".into(),
            ));
        }
        self.stage(plan, k, d, false)?;
        if !k.side.is_empty() {
            k.start.record(&self.stream)?;
        }
        let parts = k.entries.iter().zip(&plan.launches);
        for (((s, _), ((f, offset), l)), maps) in k
            .side
            .iter()
            .zip(parts.clone().skip(1))
            .zip(plan.maps.iter().skip(1))
        {
            s.wait(&k.start)?;
            let at = offset.then_some(&l.offset);
            self.launch_one(s, f, at, l.grid, plan, k, d, maps)?;
        }
        for ((f, offset), l) in parts.take(1) {
            self.launch_one(
                &self.stream,
                f,
                offset.then_some(&l.offset),
                l.grid,
                plan,
                k,
                d,
                plan.maps.first().map_or(&[], Vec::as_slice),
            )?;
        }
        for (s, done) in &k.side {
            done.record(s)?;
            self.stream.wait(done)?;
        }
        self.stage(plan, k, d, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_one(
        &self,
        stream: &CudaStream,
        f: &CudaFunction,
        offset: Option<&[u32; 3]>,
        grid: [u32; 3],
        plan: &LaunchPlan,
        k: &Loaded,
        d: &DeviceArgs,
        maps: &[MapPlan],
    ) -> Result<(), RuntimeError> {
        let maps = maps
            .iter()
            .map(|m| self.encode(m, plan.whole_copy(m.param), d, k, stream))
            .collect::<Result<Vec<_>, _>>()?;
        let cfg = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            // `block(4, 2)` is 8 threads numbered by thread.x alone (the
            // kernel reads %tid.x only): one dimension on the device.
            block_dim: (plan.block.iter().product(), 1, 1),
            shared_mem_bytes: plan.dynamic_shared,
        };
        let mut b = stream.launch_builder(f);
        for (i, a) in d.0.iter().enumerate() {
            // A tensor read through its aligned copy: the copy's address.
            if let Some(j) = plan.whole_copy(i) {
                b.arg(&k.staged[j].0);
                continue;
            }
            match a {
                DeviceArg::F32(x) => b.arg(x),
                DeviceArg::F16(x) => b.arg(x),
                DeviceArg::Bf16(x) => b.arg(x),
                DeviceArg::I32(x) => b.arg(x),
                DeviceArg::F32Scalar(x) => b.arg(x),
                DeviceArg::F16Scalar(x) => b.arg(x),
                DeviceArg::Bf16Scalar(x) => b.arg(x),
                DeviceArg::I32Scalar(x) => b.arg(x),
            };
        }
        for e in &plan.extents {
            b.arg(e);
        }
        for o in offset.into_iter().flatten() {
            b.arg(o);
        }
        for m in &maps {
            b.arg(m);
        }
        // Across parts, the bounds the workspace was sized by: the kernel
        // checks its group, part and count against these, not its own.
        let parts = plan.reduce_parts.map(|p| p.map(|n| n as i64));
        if let Some((_, r)) = &k.block_reduce {
            b.arg(&r.workspace);
            b.arg(&r.counters);
            for n in parts.iter().flatten() {
                b.arg(n);
            }
        }
        // Safety: the plan checked every argument's size and every access's bounds.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// Fills the plan's aligned copies (on the stream, before the launch),
    /// or with `back`, copies those a TMA store wrote back to their tensors
    /// (after it): their pitched copies, [`crate::stage::COPIES`] a launch
    /// of the stage kernel for their element size.
    fn stage(
        &self,
        plan: &LaunchPlan,
        k: &Loaded,
        d: &DeviceArgs,
        back: bool,
    ) -> Result<(), RuntimeError> {
        use cudarc::driver::DevicePtr;
        let mut jobs: Vec<StageCopy> = Vec::new();
        for (s, (copy, f)) in plan.staged.iter().zip(&k.staged) {
            if back && !s.written {
                continue;
            }
            if (copy.len() as u64) < s.bytes() {
                return Err(RuntimeError::Usage(format!(
                    "an aligned copy of {} bytes for a staging of {}",
                    copy.len(),
                    s.bytes()
                )));
            }
            let tensor = d.address(s.param, &self.stream)?;
            let copy = copy.device_ptr(&self.stream).0;
            let e = s.elem_bytes;
            let width = s.row_bytes / e;
            // Nothing to copy, no launch (a grid of no blocks is an error).
            if width == 0 {
                continue;
            }
            let blocks = width.div_ceil(crate::stage::row_elements_per_block(e));
            for c in s.copies().into_iter().filter(|c| c.rows > 0) {
                let (from, to) = (tensor + c.from, copy + c.to);
                let (from_pitch, to_pitch) = (c.from_pitch / e, c.to_pitch / e);
                let args = match back {
                    false => [from, to, width, from_pitch, to_pitch, c.rows],
                    true => [to, from, width, to_pitch, from_pitch, c.rows],
                };
                jobs.push(StageCopy {
                    elem_bytes: e,
                    kernel: f,
                    args,
                    blocks,
                    rows: c.rows,
                });
            }
        }
        // The copies of one element size, a launch for each few.
        while let Some(&StageCopy {
            elem_bytes: e,
            kernel: f,
            ..
        }) = jobs.first()
        {
            let (same, rest): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|j| j.elem_bytes == e);
            jobs = rest;
            for chunk in same.chunks(crate::stage::COPIES) {
                let across = chunk.iter().map(|j| j.blocks).max().unwrap_or(1);
                let rows = chunk.iter().map(|j| j.rows).max().unwrap_or(1);
                let down = rows.min(65535).min((crate::stage::BLOCKS / across).max(1));
                let cfg = LaunchConfig {
                    grid_dim: (across as u32, down as u32, chunk.len() as u32),
                    block_dim: (crate::stage::THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let unused = [0u64; 6];
                let mut b = self.stream.launch_builder(f);
                for i in 0..crate::stage::COPIES {
                    for a in chunk.get(i).map_or(&unused, |j| &j.args) {
                        b.arg(a);
                    }
                }
                // Safety: the plan bounded each copy's rows within its
                // tensor's buffer (the map's reach) and sized the copy by
                // them; the kernel takes COPIES x six u64s, reads those of
                // copies below gridDim.z alone, and touches a copy's rows
                // below its row count only.
                unsafe { b.launch(cfg) }?;
            }
        }
        Ok(())
    }

    /// The tensor map `m` of its tensor's device copy, or of its aligned
    /// copy (`plan_copy`: the one the kernel reads in its place, if any).
    fn encode(
        &self,
        m: &MapPlan,
        plan_copy: Option<usize>,
        d: &DeviceArgs,
        k: &Loaded,
        stream: &CudaStream,
    ) -> Result<TensorMapArg, RuntimeError> {
        use cudarc::driver::DevicePtr;
        use cudarc::driver::sys;
        let source = match m.source {
            MapSource::Tensor => plan_copy,
            MapSource::Staged(i) => Some(i),
        };
        let address = match source {
            None => d.address(m.param, stream)?,
            Some(i) => k.staged[i].0.device_ptr(stream).0,
        };
        let dtype = match m.elem {
            Elem::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            Elem::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            Elem::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Elem::I32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        };
        let swizzle = match m.swizzle_bytes {
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            _ => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        };
        let ones = vec![1u32; m.boxes.len()];
        let mut map = TensorMapArg([0; 16]);
        // Safety: every array has the rank's length (strides one less), and
        // the plan checked them against TMA's limits and the tensor's size.
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                (&mut map as *mut TensorMapArg).cast(),
                dtype,
                m.boxes.len() as u32,
                address as *mut std::ffi::c_void,
                m.extents.as_ptr(),
                m.strides.as_ptr(),
                m.boxes.as_ptr(),
                ones.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(RuntimeError::Cuda(format!(
                "cuTensorMapEncodeTiled refused the map of {} ({r:?})",
                m.param
            )));
        }
        Ok(map)
    }

    /// Copies every tensor of `from` over the same tensor of `to`, on the
    /// device.
    pub fn restore(&self, from: &DeviceArgs, to: &mut DeviceArgs) -> Result<(), RuntimeError> {
        let s = &self.stream;
        for (a, b) in from.0.iter().zip(to.0.iter_mut()) {
            match (a, b) {
                (DeviceArg::F32(x), DeviceArg::F32(y)) => s.memcpy_dtod(x, y)?,
                (DeviceArg::F16(x), DeviceArg::F16(y)) => s.memcpy_dtod(x, y)?,
                (DeviceArg::Bf16(x), DeviceArg::Bf16(y)) => s.memcpy_dtod(x, y)?,
                (DeviceArg::I32(x), DeviceArg::I32(y)) => s.memcpy_dtod(x, y)?,
                (
                    DeviceArg::F32Scalar(_)
                    | DeviceArg::F16Scalar(_)
                    | DeviceArg::Bf16Scalar(_)
                    | DeviceArg::I32Scalar(_),
                    _,
                ) => {}
                _ => {
                    return Err(RuntimeError::Usage(
                        "restoring arguments of another kernel".into(),
                    ));
                }
            }
        }
        if from.0.len() != to.0.len() {
            return Err(RuntimeError::Usage(
                "restoring arguments of another kernel".into(),
            ));
        }
        Ok(())
    }

    /// Copies every tensor back (scalars are `None`).
    pub fn download(&self, d: &DeviceArgs) -> Result<Vec<Option<HostBuffer>>, RuntimeError> {
        self.download_only(d, |_| true)
    }

    /// Copies back the tensors `wanted` picks by argument index (the others,
    /// and scalars, are `None`): a check reads only the outputs.
    pub fn download_only(
        &self,
        d: &DeviceArgs,
        wanted: impl Fn(usize) -> bool,
    ) -> Result<Vec<Option<HostBuffer>>, RuntimeError> {
        let s = &self.stream;
        s.synchronize()?;
        d.0.iter()
            .enumerate()
            .map(|(i, a)| {
                if !wanted(i) {
                    return Ok(None);
                }
                Ok(match a {
                    DeviceArg::F32(x) => Some(HostBuffer::F32(s.clone_dtoh(x)?)),
                    DeviceArg::F16(x) => Some(HostBuffer::F16(s.clone_dtoh(x)?)),
                    DeviceArg::Bf16(x) => Some(HostBuffer::Bf16(s.clone_dtoh(x)?)),
                    DeviceArg::I32(x) => Some(HostBuffer::I32(s.clone_dtoh(x)?)),
                    _ => None,
                })
            })
            .collect()
    }

    /// A stopwatch for `slots` kinds of work queued on the stream.
    pub fn stopwatch(&self, slots: usize) -> Stopwatch {
        Stopwatch::new(self.ctx.clone(), self.stream.clone(), slots)
    }

    /// Runs the kernel once for its results, then `warmup` times, then
    /// `iters` timed times; returns the first run's tensors and the times.
    pub fn run(
        &self,
        f: &Loaded,
        plan: &LaunchPlan,
        m: &Manifest,
        args: &[Arg],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<Option<HostBuffer>>, Vec<f32>), RuntimeError> {
        let dev = self.upload(m, args)?;
        self.launch(f, plan, &dev)?;
        let outs = self.download(&dev)?;
        for _ in 0..warmup {
            self.launch(f, plan, &dev)?;
        }
        let mut watch = self.stopwatch(1);
        for _ in 0..iters {
            watch.time(0, || self.launch(f, plan, &dev))?;
        }
        watch.read()?;
        Ok((outs, watch.device_ms.remove(0)))
    }
}
