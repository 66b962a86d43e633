//! The L2 cache's state before a timed run of a memory-bound kernel, or of
//! the device copy it is held against. In: how many bytes the timed run
//! writes. Out: an L2 that holds none of the run's data and as many
//! written (dirty) lines as the run itself leaves behind.
//!
//! Why: the lines a run writes stay in the L2, dirty, and the run after it
//! pays their write-back. Run after run of the same kernel, each run pays
//! the write-back of as many lines as it leaves: its own writes, deferred.
//! A copy of twice the L2's size leaves it full of dirty lines, which is
//! that steady state for the copy and for any kernel that writes at least
//! the L2's size; but a kernel that writes little (gemv's y, a row sum)
//! leaves almost none, and after such a copy it paid 50 MB of write-back
//! it never caused, on top of its own 268 MB of reads at 8192^2 f32
//! (docs/performance.md, versions 29 and 32). So a run that writes less
//! than the L2 holds gets it cleaned after the copy (a read of twice its
//! size of other bytes pushes every dirty line out, untimed) and then
//! dirtied by as many bytes as it writes. Lines written scattered dirty
//! more of the L2 than their bytes: such a run is charged a little less
//! than it leaves.

use crate::RuntimeError;
use crate::gpu::Gpu;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

const THREADS: u32 = 256;

pub struct Settle {
    /// The copy's source and destination, each twice the L2's size.
    from: CudaSlice<u8>,
    to: CudaSlice<u8>,
    read: CudaFunction,
    /// Where the read would store a value it never finds (so that its
    /// loads are not dead code).
    sink: CudaSlice<u32>,
    /// The L2's size in bytes.
    l2: usize,
    /// The read's grid: eight blocks a multiprocessor.
    blocks: u32,
}

impl Settle {
    pub fn new(gpu: &Gpu) -> Result<Settle, RuntimeError> {
        // A multiple of 16 bytes: the read moves 16-byte vectors.
        let n = (2 * gpu.l2_bytes).next_multiple_of(16);
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(READ_PTX))?;
        Ok(Settle {
            from: gpu.stream.alloc_zeros::<u8>(n)?,
            to: gpu.stream.alloc_zeros::<u8>(n)?,
            read: module.load_function("tilec_l2_read")?,
            sink: gpu.stream.alloc_zeros::<u32>(1)?,
            l2: gpu.l2_bytes,
            blocks: (gpu.sms as u32).max(1) * 8,
        })
    }

    /// Untimed, on `gpu`'s stream, before a run that writes `written` bytes.
    pub fn before(&mut self, gpu: &Gpu, written: usize) -> Result<(), RuntimeError> {
        // Where the run writes less than the L2 holds, the read after the
        // copy evicts its lines again: the copy is kept there as version
        // 32 measured it.
        gpu.stream.memcpy_dtod(&self.from, &mut self.to)?;
        if written >= self.l2 {
            return Ok(());
        }
        let vectors = (self.from.len() / 16) as u64;
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream.launch_builder(&self.read);
        b.arg(&self.from).arg(&vectors).arg(&mut self.sink);
        // Safety: the kernel reads `vectors` 16-byte vectors of `from`,
        // which holds that many, and writes at most `sink`'s one u32.
        unsafe { b.launch(cfg) }?;
        if written > 0 {
            gpu.stream.memset_zeros(&mut self.to.slice_mut(..written))?;
        }
        Ok(())
    }
}

/// `tilec_l2_read(src, vectors, sink)`: a grid-stride read of `vectors`
/// 16-byte vectors, folded by xor; the result is stored only if it is 1,
/// which it never is (the buffer holds zeros).
const READ_PTX: &str = r#".version 7.0
.target sm_80
.address_size 64
.visible .entry tilec_l2_read(.param .u64 p_src, .param .u64 p_n, .param .u64 p_sink)
{
  .reg .pred %p;
  .reg .b32 %t<4>;
  .reg .b32 %v<4>;
  .reg .b32 %x;
  .reg .b64 %src, %n, %sink, %i, %step, %a;
  ld.param.u64 %src, [p_src];
  ld.param.u64 %n, [p_n];
  ld.param.u64 %sink, [p_sink];
  cvta.to.global.u64 %src, %src;
  cvta.to.global.u64 %sink, %sink;
  mov.u32 %t0, %ctaid.x;
  mov.u32 %t1, %ntid.x;
  mov.u32 %t2, %tid.x;
  mul.wide.u32 %i, %t0, %t1;
  cvt.u64.u32 %a, %t2;
  add.u64 %i, %i, %a;
  mov.u32 %t3, %nctaid.x;
  mul.wide.u32 %step, %t3, %t1;
  mov.u32 %x, 0;
LOOP:
  setp.ge.u64 %p, %i, %n;
  @%p bra END;
  shl.b64 %a, %i, 4;
  add.u64 %a, %a, %src;
  ld.global.v4.u32 {%v0, %v1, %v2, %v3}, [%a];
  xor.b32 %x, %x, %v0;
  xor.b32 %x, %x, %v1;
  xor.b32 %x, %x, %v2;
  xor.b32 %x, %x, %v3;
  add.u64 %i, %i, %step;
  bra LOOP;
END:
  setp.eq.u32 %p, %x, 1;
  @%p st.global.u32 [%sink], %x;
  ret;
}
"#;
