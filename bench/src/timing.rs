//! The clock: the first call on fresh inputs, and the median time per call over batches.

use burn::tensor::Device;
use std::time::{Duration, Instant};

/// Runs `call` once and waits for `device`: its result, the time it took (compilation and
/// autotune included, when this is the first call), and whether fmar's kernel ran.
pub fn first_call<T>(
    device: &Device,
    call: impl FnOnce() -> Result<T, String>,
) -> Result<(T, Duration, bool), String> {
    let launches = fmar::diagnostics::kernel_launches();
    let start = Instant::now();
    let value = call()?;
    device
        .sync()
        .map_err(|error| format!("executing: {error:?}"))?;
    let elapsed = start.elapsed();
    Ok((
        value,
        elapsed,
        fmar::diagnostics::kernel_launches() > launches,
    ))
}

/// What [`median_time_in_batches`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Median time per call, the device's work included.
    pub per_call: Duration,
    /// Median host time per call to issue the batch, before the sync: the host's share. Where
    /// it is close to `per_call`, the host bounds the figure, not the device.
    pub issued_per_call: Duration,
    /// Calls per timed batch.
    pub calls_per_batch: usize,
}

/// Median time per call of `f`, over batches of back-to-back calls each synchronised with
/// `device` once, within about `budget`. One warm-up call sizes the batches (up to 200 calls,
/// 3 to 15 batches), so a launch that takes microseconds is timed over many launches rather
/// than one launch plus a sync. Before the timed batches, `f` runs untimed for about half the
/// budget (at least 50 ms), so that no timed batch follows straight on the idle device of the
/// first call's compilation. (On the H200 the first shape of a process had measured 0.21-0.23
/// ms at bf16 4096³ against 0.195-0.198 in a longer run; with this warm-up it still measured
/// 0.2256 on another machine, so that difference lies elsewhere: the figures move with the
/// machine and its power cap.) Results stay alive until the sync: Fusion skips work whose
/// result is dropped unread.
pub fn median_time_in_batches<T>(
    device: &Device,
    budget: Duration,
    mut f: impl FnMut() -> T,
) -> Timing {
    let start = Instant::now();
    let kept = f();
    device.sync().expect("device sync");
    drop(kept);
    let one = start.elapsed().max(Duration::from_micros(1));
    let per_batch = ((budget.as_secs_f64() / 10.0) / one.as_secs_f64()).clamp(1.0, 200.0) as usize;
    let batches =
        ((budget.as_secs_f64() / (one.as_secs_f64() * per_batch as f64)) as usize).clamp(3, 15);
    let warm_until = Instant::now() + (budget / 2).max(Duration::from_millis(50));
    while Instant::now() < warm_until {
        let kept: Vec<T> = (0..per_batch).map(|_| f()).collect();
        device.sync().expect("device sync");
        drop(kept);
    }
    let (mut totals, mut issued): (Vec<Duration>, Vec<Duration>) = (0..batches)
        .map(|_| {
            let start = Instant::now();
            let kept: Vec<T> = (0..per_batch).map(|_| f()).collect();
            let issued = start.elapsed() / per_batch as u32;
            device.sync().expect("device sync");
            let elapsed = start.elapsed() / per_batch as u32;
            drop(kept);
            (elapsed, issued)
        })
        .unzip();
    totals.sort();
    issued.sort();
    Timing {
        per_call: totals[totals.len() / 2],
        issued_per_call: issued[issued.len() / 2],
        calls_per_batch: per_batch,
    }
}
