//! What the examples share: median timings synchronised with the device, the relative error
//! between two tensors, and duration formatting.
//!
//! Each example includes this module with `mod common;` and uses only part of it.
#![allow(dead_code)]

use burn::tensor::{Device, Tensor};
use std::time::{Duration, Instant};

/// Median wall time of `f` over `iterations` calls, after `warm_ups` calls, each call
/// synchronised with `device`. The result is kept alive until the sync: Fusion skips work whose
/// result is dropped unread.
pub fn median_time<T>(
    device: &Device,
    warm_ups: usize,
    iterations: usize,
    mut f: impl FnMut() -> T,
) -> Duration {
    for _ in 0..warm_ups {
        let _kept = f();
        device.sync().expect("device sync");
    }
    let mut times: Vec<Duration> = (0..iterations.max(1))
        .map(|_| {
            let start = Instant::now();
            let kept = f();
            device.sync().expect("device sync");
            let elapsed = start.elapsed();
            drop(kept);
            elapsed
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// `||a - b|| / ||b||` (Frobenius norms), computed in f64 from the two tensors' values.
pub fn relative_error<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f64 {
    let values = |t: Tensor<D>| {
        t.into_data()
            .try_into_vec_as::<f64>()
            .expect("float values convert to f64")
    };
    let (a, b) = (values(a), values(b));
    let diff: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// A duration in milliseconds, to the microsecond.
pub fn format_duration(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}
