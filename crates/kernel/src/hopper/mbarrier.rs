//! The kernel's mbarriers as plain 8-byte words of shared memory, driven by inline PTX and named
//! by their 32-bit shared address.
//!
//! cubecl's `Barrier` type compiles to CUDA's `cuda::barrier`, which brings `<cuda/barrier>` and
//! the cooperative-groups headers into the source: parsing them is about three quarters of
//! NVRTC's time on the kernel, paid on every first launch of a configuration. These words need
//! no header, and another cube of a cluster can name them through `mapa` ([`super::cluster`]).

use super::ptx::{by_value, shared_address};
use cubecl::prelude::*;

/// Bytes of one mbarrier.
pub(crate) const BARRIER_BYTES: u32 = 8;

/// Initialises the mbarrier at shared address `barrier` to complete after `count` arrivals.
#[cube]
pub(crate) fn init_barrier(barrier: u32, count: u32) {
    let barrier = by_value::<u32>(barrier);
    let count = by_value::<u32>(count);
    gpu_asm!(
        "mbarrier.init.shared::cta.b64 [{barrier}], {count};",
        barrier = in(_) barrier,
        count = in(_) count,
    );
}

/// Initialises a ring's mbarriers, `stages` of each kind, [`BARRIER_BYTES`] apart: the `full`
/// ones from `full` (one arrival, the producer's, with the bytes of its copies) and the `empty`
/// ones from `empty` (`consumers` arrivals, one per consumer unit done reading the stage).
#[cube]
pub(crate) fn init_ring(
    full: u32,
    empty: u32,
    #[comptime] stages: usize,
    #[comptime] consumers: u32,
) {
    #[unroll]
    for s in 0..stages {
        init_barrier(full + comptime![s as u32 * BARRIER_BYTES], 1u32);
        init_barrier(empty + comptime![s as u32 * BARRIER_BYTES], consumers);
    }
}

/// A ring's mbarriers in the cube's shared memory: `stages` `full` ones, then `stages` `empty`
/// ones that complete after `consumers` arrivals (as [`init_ring`] says). The first unit
/// initialises them and makes that visible to the TMA engine; then every unit of the cube waits
/// for it. Returns the shared addresses of the first `full` and the first `empty` barrier.
#[cube]
pub(crate) fn ring_barriers(#[comptime] stages: usize, #[comptime] consumers: u32) -> (u32, u32) {
    let barrier_words = Shared::<[u64]>::new_aligned_slice(comptime![2 * stages], 8usize);
    let full = shared_address::<u64>(&barrier_words);
    let empty = full + comptime![stages as u32 * BARRIER_BYTES];
    if UNIT_POS == 0 {
        init_ring(full, empty, stages, consumers);
        // The barriers' initialisation must be visible to the TMA engine.
        fence_proxy_async();
    }
    sync_cube();
    (full, empty)
}

/// The ring position after (`stage`, `phase`): the next stage, and the phase flipped each time
/// the ring wraps around.
#[cube]
pub(crate) fn next_stage(stage: u32, phase: u32, #[comptime] stages: usize) -> (u32, u32) {
    let next = stage + 1;
    let wraps = next == stages as u32;
    (select(wraps, 0u32, next), select(wraps, phase ^ 1, phase))
}

/// Arrives once on this cube's mbarrier at shared address `barrier`, releasing this unit's
/// earlier accesses to shared memory (at the cube's scope) to whoever waits on it.
#[cube]
pub(crate) fn arrive(barrier: u32) {
    let barrier = by_value::<u32>(barrier);
    gpu_asm!(
        "mbarrier.arrive.shared::cta.b64 _, [{barrier}];",
        barrier = in(_) barrier,
    );
}

/// Arrives once on this cube's mbarrier at shared address `barrier`, which from then on also
/// waits for `bytes` more bytes of asynchronous copies (TMA loads, [`super::tma`], or a
/// cluster's remote stores, [`super::cluster`]) to land.
#[cube]
pub(crate) fn arrive_expecting(barrier: u32, bytes: u32) {
    let barrier = by_value::<u32>(barrier);
    let bytes = by_value::<u32>(bytes);
    gpu_asm!(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{barrier}], {bytes};",
        barrier = in(_) barrier,
        bytes = in(_) bytes,
    );
}

/// Waits until this cube's mbarrier at shared address `barrier` completes the phase of
/// `parity`: the arrivals it counts, and the bytes of the asynchronous copies it expects.
#[cube]
pub(crate) fn wait_barrier(barrier: u32, parity: u32) {
    let barrier = by_value::<u32>(barrier);
    let parity = by_value::<u32>(parity);
    gpu_asm!(
        "{{ .reg .pred fmar_done;\nfmar_wait:\n\
         mbarrier.try_wait.parity.shared::cta.b64 fmar_done, [{barrier}], {parity};\n\
         @!fmar_done bra fmar_wait; }}",
        barrier = in(_) barrier,
        parity = in(_) parity,
    );
}

/// Orders this cube's earlier shared-memory accesses through the generic proxy (initialised
/// mbarriers, values written by its units) before later accesses through the async proxy (TMA
/// copies, MMA operand reads), and the async proxy's earlier reads before later writes.
#[cube]
pub(crate) fn fence_proxy_async() {
    gpu_asm!("fence.proxy.async.shared::cta;");
}
