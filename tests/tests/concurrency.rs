//! Eight threads call the operation at once on the same device, each with its own shapes,
//! broadcast patterns and dtype, under Fusion and autodiff. Every result is checked against the
//! f64 reference (so results crossing between threads would fail), and the whole run has a
//! deadline (so a deadlock fails instead of hanging CI).

mod common;

use burn::tensor::Device;
use common::{check_random_nd, runs};
use fmar_tests::{Precision, Problem, Rng, Tolerances, tf32_matmuls};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

const THREADS: usize = 8;
/// Rounds each thread runs; every round is a fresh problem, checked.
const ROUNDS: usize = 4;
/// Far above the run's time on a software rasterizer (seconds); only a deadlock reaches it.
const DEADLINE: Duration = Duration::from_secs(600);

/// Thread `index`'s problem: operand rank 3, no two threads alike in shape, bias pattern or
/// batch broadcast.
fn shapes(index: usize) -> ([usize; 3], [usize; 3], Vec<usize>) {
    let m = 5 + 7 * index;
    let k = 3 + 11 * index;
    let n = 4 + 5 * index;
    let (lhs_batch, rhs_batch) = [(2, 2), (1, 3), (3, 1), (2, 2)][index % 4];
    let batch = lhs_batch.max(rhs_batch);
    let bias = match index % 4 {
        0 => vec![n],
        1 => vec![1, 1, n],
        2 => vec![batch, 1, n],
        _ => vec![batch, m, n],
    };
    ([lhs_batch, m, k], [rhs_batch, k, n], bias)
}

fn precision(index: usize) -> Precision {
    if index % 2 == 1 && runs(Precision::F16) {
        Precision::F16
    } else {
        Precision::F32
    }
}

/// Runs `work(index, device)` on `THREADS` threads released together, and waits for all of
/// them: a thread's panic fails the test with its message, and so does missing the deadline.
fn on_threads_at_once(device: Device, work: fn(usize, &Device)) {
    let start = Arc::new(Barrier::new(THREADS));
    let (done, finished) = mpsc::channel();
    for index in 0..THREADS {
        let (device, start, done) = (device.clone(), start.clone(), done.clone());
        std::thread::Builder::new()
            .name(format!("fmar-worker-{index}"))
            .spawn(move || {
                let result = std::panic::catch_unwind(|| {
                    start.wait();
                    work(index, &device)
                });
                let _ = done.send((index, result));
            })
            .expect("spawn");
    }
    drop(done);
    for _ in 0..THREADS {
        match finished.recv_timeout(DEADLINE) {
            Ok((_, Ok(()))) => {}
            Ok((index, Err(panic))) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("thread {index} failed: {message}");
            }
            Err(_) => panic!("no thread finished within {DEADLINE:?}: deadlock"),
        }
    }
}

/// One thread's work: `ROUNDS` forward+backward passes, each checked.
fn forward_backward_rounds(index: usize, device: &Device) {
    let precision = precision(index);
    let (lhs, rhs, bias) = shapes(index);
    for round in 0..ROUNDS {
        let what = format!(
            "thread {index} round {round}: lhs {lhs:?} rhs {rhs:?} bias {bias:?} {precision:?}"
        );
        let shapes = (&lhs[..], &rhs[..], &bias[..]);
        let mut rng = Rng::fresh();
        match bias.len() {
            1 => check_random_nd::<3, 1>(&what, shapes, precision, device, &mut rng),
            _ => check_random_nd::<3, 3>(&what, shapes, precision, device, &mut rng),
        }
    }
}

/// One thread's work without autodiff: `ROUNDS` forwards, each checked.
fn forward_rounds(index: usize, device: &Device) {
    let precision = precision(index);
    let (lhs, rhs, bias) = shapes(index);
    for _ in 0..ROUNDS {
        let mut rng = Rng::fresh();
        let seed = rng.seed();
        let problem = Problem::random(&lhs, &rhs, &bias, &mut rng, precision);
        let (l, r) = (
            common::tensor::<3>(&problem.lhs, device, precision),
            common::tensor::<3>(&problem.rhs, device, precision),
        );
        let output = match bias.len() {
            1 => common::values(fmar::matmul_add_relu_nd(
                l,
                r,
                common::tensor::<1>(&problem.bias, device, precision),
            )),
            _ => common::values(fmar::matmul_add_relu_nd(
                l,
                r,
                common::tensor::<3>(&problem.bias, device, precision),
            )),
        };
        fmar_tests::assert_close(
            &format!("thread {index}: forward {precision:?}"),
            &output,
            &problem.output.data,
            Tolerances::new(precision, tf32_matmuls()).forward,
            problem.forward_scale(),
            seed,
        );
    }
}

#[test]
fn eight_threads_at_once_under_fusion_and_autodiff() {
    on_threads_at_once(Device::default().autodiff(), forward_backward_rounds);
}

/// The same, forward only, on the plain (Fusion, no autodiff) device: the lazy path, where
/// threads' queued operations share Fusion's stream.
#[test]
fn eight_threads_forward_only_under_fusion() {
    on_threads_at_once(Device::default(), forward_rounds);
}
