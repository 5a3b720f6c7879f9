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
/// `device` once, within about `budget`. Before the timed batches, `f` runs untimed in batches
/// for about half the budget (at least 50 ms), so that no timed batch follows straight on the
/// idle device of the first call's compilation; each warm-up batch re-sizes the next from the
/// fastest time per call seen, so that a batch lasts about a tenth of the budget (up to 200
/// calls; 3 to 15 timed batches). Sizing from a batch rather than from one synchronised call
/// matters where the host bounds the figure: one call plus a sync takes several times a call's
/// share of a batch, and batches sized from it were too short (on an H200 a `1 x 1 x 4096 x
/// 4096` forward measured 30.6 us per call in batches of 37 calls, 21.2 in batches of 200).
/// Burn's runtime also hands work to the device thread in chunks of tasks, so each batch starts
/// late by a chunk's worth of host work, which long batches amortise. (On the H200 the first
/// shape of a process had measured 0.21-0.23 ms at bf16 4096³ against 0.195-0.198 in a longer
/// run; with the warm-up it still measured 0.2256 on another machine, so that difference lies
/// elsewhere: the figures move with the machine and its power cap.) Results stay alive until
/// the sync: Fusion skips work whose result is dropped unread.
pub fn median_time_in_batches<T>(
    device: &Device,
    budget: Duration,
    mut f: impl FnMut() -> T,
) -> Timing {
    let batch_time = budget.as_secs_f64() / 10.0;
    let size = |per_call: Duration| {
        (batch_time / per_call.as_secs_f64().max(1e-7)).clamp(1.0, 200.0) as usize
    };
    let start = Instant::now();
    let kept = f();
    device.sync().expect("device sync");
    drop(kept);
    // The fastest time per call seen so far: a batch that compiled something (Fusion's plans
    // for a new sequence of operations, say) only ever makes a batch slower, so batches only
    // grow, and warming ends with a batch of the final size.
    let mut per_call = start.elapsed();
    let mut per_batch = size(per_call);
    let warm_until = Instant::now() + (budget / 2).max(Duration::from_millis(50));
    let give_up = warm_until + budget;
    loop {
        let start = Instant::now();
        let kept: Vec<T> = (0..per_batch).map(|_| f()).collect();
        device.sync().expect("device sync");
        per_call = per_call.min(start.elapsed() / per_batch as u32);
        drop(kept);
        let next = size(per_call);
        let now = Instant::now();
        if (next == per_batch && now >= warm_until) || now >= give_up {
            break;
        }
        per_batch = next;
    }
    let batches = ((budget.as_secs_f64() / (per_call.as_secs_f64() * per_batch as f64)) as usize)
        .clamp(3, 15);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::thread::sleep;

    /// A call whose first few runs are slow (a compile, a new plan) must not leave the timed
    /// batches sized from them: a batch lasts about a tenth of the budget at the steady speed.
    #[test]
    fn batches_are_sized_from_the_steady_time_per_call() {
        let device = Device::flex();
        let calls = Cell::new(0usize);
        let timing = median_time_in_batches(&device, Duration::from_millis(80), || {
            calls.set(calls.get() + 1);
            let pause = if calls.get() <= 3 { 4_000 } else { 100 };
            sleep(Duration::from_micros(pause));
        });
        // 8 ms per batch at ~0.1 ms per call (sleep overshoots, on a busy machine by much, so
        // allow for it); sized from the first call alone it would be 1 or 2.
        assert!(
            timing.calls_per_batch >= 10,
            "{} calls per batch",
            timing.calls_per_batch
        );
        assert!(
            timing.per_call < Duration::from_micros(2_000),
            "{:?} per call",
            timing.per_call
        );
    }
}
