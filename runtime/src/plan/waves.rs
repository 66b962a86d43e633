//! One launch or a split one, for a small grid with edge blocks on a GPU.
//! In: the manifest, the grid's blocks and block size, the multiprocessors.
//! Out: whether the grid runs as one launch of the entry for any block,
//! and the split plan where its blocks share multiprocessors in one wave.

use super::{Dims, LaunchPlan, planned};
use crate::RuntimeError;
use crate::manifest::Manifest;
use crate::staging::Staging;

/// Blocks a multiprocessor up to which a grid with edge blocks is one
/// launch of the entry for any block rather than the full-tile entry on
/// its full blocks beside the guarded one on the edges (waves, for a
/// kernel of one block a multiprocessor; one wave for one of two). In one
/// wave every block runs at once and the slowest, a partial tile's, sets
/// the time: the second launch only adds its cost and the streams'
/// synchronization (sgemm_tn_sm80 at 1000 x 1037 x 999, 72 blocks on the
/// H200: 0.141 ms split, 0.126 as one launch;
/// bf16 at 509^3, 64 blocks: 0.034 ms, 0.018). In two, the split's waves
/// are ragged: the edge blocks hold multiprocessors while the full blocks'
/// second round waits (sgemm_tn_sm80 at 2000^3, 256 blocks: 0.619 ms split,
/// 0.446 as one; sgemm_nt_sm80 0.542, 0.373; the bf16 kernels within 2%
/// either way; docs/performance.md, version 15). [`shares_one_wave`] names
/// the exception.
pub(super) const ONE_LAUNCH_WAVES: u128 = 2;

/// Shared memory an sm_90 multiprocessor holds for its blocks, what it
/// sets aside beside each block's own, and the threads it runs at once.
const SHARED_PER_SM: i64 = 228 * 1024;
const SHARED_RESERVED_PER_BLOCK: i64 = 1024;
const THREADS_PER_SM: i64 = 2048;

/// Whether a grid of `blocks` (each of `block` threads) with edge blocks,
/// on `sms` multiprocessors, runs as one launch of the entry for any
/// block: small enough ([`ONE_LAUNCH_WAVES`]), and, where
/// `shared_waves_split`, its blocks not sharing multiprocessors in one
/// wave ([`shares_one_wave`]).
pub(super) fn one_launch(
    m: &Manifest,
    blocks: u128,
    sms: i64,
    block: [u32; 3],
    shared_waves_split: bool,
) -> bool {
    blocks <= ONE_LAUNCH_WAVES * sms.max(0) as u128
        && !(shared_waves_split && shares_one_wave(m, blocks, sms, block))
}

/// Whether the `blocks` of a kernel without tensor cores share `sms`
/// multiprocessors in one wave: more blocks than multiprocessors, and no
/// more than they hold at once (two or more each, as the launch's
/// `min_blocks` promises and their shared memory and threads allow; a
/// kernel that reduces across blocks is left out, its split not yet
/// measured). There a full block beside an edge block leaves its
/// multiprocessor early and the edge block has it to itself, where two
/// edge blocks would share it to the end, so such a grid splits
/// (sgemm_tn_sm80 on an H100, 256 blocks of which 31 edges at 2039^3:
/// 0.442 -> 0.421 ms, 0.774 -> 0.805-0.822 of cuBLAS; 0.233 -> 0.219 ms at
/// 1531 x 2713 x 997). The split's side stream costs a few microseconds,
/// more than the tensor-core GEMMs' guarded entries lose to their full ones
/// in a wave of 50 us (bgemm_tn_sm90, hgemm_tn_sm90 and bgemm_nt_sm90 at
/// 2000 x 2000 x 2048: 2-6% slower split; docs/performance.md, version 58).
fn shares_one_wave(m: &Manifest, blocks: u128, sms: i64, block: [u32; 3]) -> bool {
    let threads: i64 = block.iter().map(|&b| b as i64).product();
    let shared = m.shared_bytes.max(0) + SHARED_RESERVED_PER_BLOCK;
    let held = m
        .min_blocks
        .min(SHARED_PER_SM / shared)
        .min(THREADS_PER_SM / threads.max(1));
    let sms = sms.max(0) as u128;
    !m.tensor_cores
        && m.block_reduce.is_none()
        && held >= 2
        && sms < blocks
        && blocks <= held as u128 * sms
}

/// `plan` (made by [`planned`] from `inputs`, its run-time integers and
/// copies), or, where it is one launch of a grid whose blocks share
/// multiprocessors in one wave, the split on the same buffers where its
/// entries run there, it needs no copy more and every access of it is
/// proved in bounds. The choice of copies is made for one launch: a split
/// that needed copies would pay for them (measured on the bf16 GEMMs, where
/// it lost: 0.054 ms as one launch in place at 2000^3, 0.066 split on
/// copies; docs/performance.md, version 58).
pub(super) fn split_shared_wave(
    m: &Manifest,
    dims: &Dims,
    sms: Option<i64>,
    cuda_limits: bool,
    plan: Result<LaunchPlan, RuntimeError>,
    (values, staged): (Vec<i64>, Vec<Staging>),
) -> Result<LaunchPlan, RuntimeError> {
    // One launch only because the split is not asked for.
    let shared = |p: &LaunchPlan, n: i64| {
        let blocks = p.grid.iter().map(|&g| g as u128).product::<u128>();
        p.launches.len() == 1
            && one_launch(m, blocks, n, p.block, false)
            && !one_launch(m, blocks, n, p.block, true)
    };
    let Ok(one) = &plan else { return plan };
    if !sms.is_some_and(|n| shared(one, n)) {
        return plan;
    }
    match planned(m, dims, sms, cuda_limits, values, staged, true) {
        Ok(split)
            if split.launches.len() > 1
                && split.staged == one.staged
                && super::prove(m, &split).is_ok() =>
        {
            Ok(split)
        }
        _ => plan,
    }
}
