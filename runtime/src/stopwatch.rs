//! Timing of GPU work queued back to back: what `tilec run`, `tilec bench`
//! and `tilec tune` report. In: closures that enqueue work on the stream
//! (a launch, a cuBLAS call, a copy). Out: per slot, the device time of
//! each run in ms, and the host time each call took to enqueue it in us.
//!
//! Each run is bracketed by two events on the stream, and the events are
//! read only once the stream has passed them. So while the host prepares a
//! launch the GPU is still busy with the runs queued before it, and an
//! event pair holds the device's time for its work alone, which is what
//! is compared between tilec, cuBLAS and a copy: their host costs differ
//! (argument packing and tensor-map encoding, cuBLAS's dispatch) and are
//! reported apart. That holds while the queue stays ahead of the GPU: a run
//! shorter than the host's cost of a call (a few microseconds) drains it,
//! and its figure then holds the host's time too. A call that blocks
//! because the driver's queue is full counts in its host time.

use crate::RuntimeError;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;
use std::time::Instant;

pub struct Stopwatch {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Runs queued and not yet read: their slot and events.
    pending: Vec<(usize, CudaEvent, CudaEvent)>,
    /// Event pairs already read, for the next runs: creating two events a
    /// run would lengthen the host's side of each.
    spare: Vec<(CudaEvent, CudaEvent)>,
    /// Per slot: the device time of each run read so far, in ms.
    pub device_ms: Vec<Vec<f32>>,
    /// Per slot: the host time of each call, in us.
    pub host_us: Vec<Vec<f32>>,
}

impl Stopwatch {
    pub fn new(ctx: Arc<CudaContext>, stream: Arc<CudaStream>, slots: usize) -> Stopwatch {
        Stopwatch {
            ctx,
            stream,
            pending: Vec::new(),
            spare: Vec::new(),
            device_ms: vec![Vec::new(); slots],
            host_us: vec![Vec::new(); slots],
        }
    }

    /// Queues `work` between two timing events, for `slot`.
    pub fn time(
        &mut self,
        slot: usize,
        work: impl FnOnce() -> Result<(), RuntimeError>,
    ) -> Result<(), RuntimeError> {
        let (start, end) = match self.spare.pop() {
            Some(pair) => pair,
            None => {
                let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
                (self.ctx.new_event(timing)?, self.ctx.new_event(timing)?)
            }
        };
        start.record(&self.stream)?;
        let host = Instant::now();
        work()?;
        self.host_us[slot].push(host.elapsed().as_secs_f32() * 1e6);
        end.record(&self.stream)?;
        self.pending.push((slot, start, end));
        Ok(())
    }

    /// Waits for the runs queued so far and files their device times.
    /// The stream is idle afterwards: queue something untimed before the
    /// next timed run, or its figure includes the host's cost of the call.
    pub fn read(&mut self) -> Result<(), RuntimeError> {
        for (slot, start, end) in std::mem::take(&mut self.pending) {
            self.device_ms[slot].push(start.elapsed_ms(&end)?);
            self.spare.push((start, end));
        }
        Ok(())
    }
}
