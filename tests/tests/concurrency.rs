//! Eight threads call the operation at once on the same device, each with its own shapes,
//! broadcast patterns and dtype, under Fusion and autodiff. Every result is checked against the
//! f64 reference (so results crossing between threads would fail), and the whole run has a
//! deadline (so a deadlock fails instead of hanging CI).

mod common;

use burn::tensor::Device;
use common::{outcome_nd, runs};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerances, check_outcome, tf32_matmuls};
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

/// One thread's work: `ROUNDS` forward+backward passes, each checked; returns how many ran.
fn worker(index: usize, device: Device, start: Arc<Barrier>) -> usize {
    let precision = precision(index);
    let (lhs, rhs, bias) = shapes(index);
    start.wait();
    for round in 0..ROUNDS {
        let mut rng = Rng::fresh();
        let seed = rng.seed();
        let problem = Problem::random(&lhs, &rhs, &bias, &mut rng, precision);
        let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);
        let outcome = match bias.len() {
            1 => outcome_nd::<3, 1>(&problem, &upstream, &device, precision),
            _ => outcome_nd::<3, 3>(&problem, &upstream, &device, precision),
        };
        check_outcome(
            &format!(
                "thread {index} round {round}: lhs {lhs:?} rhs {rhs:?} bias {bias:?} {precision:?}"
            ),
            &problem,
            Tolerances::new(precision, tf32_matmuls()),
            &upstream,
            &outcome,
            [true; 3],
            seed,
        );
    }
    ROUNDS
}

#[test]
fn eight_threads_at_once_under_fusion_and_autodiff() {
    let device = Device::default().autodiff();
    let start = Arc::new(Barrier::new(THREADS));
    let (done, finished) = mpsc::channel();
    for index in 0..THREADS {
        let (device, start, done) = (device.clone(), start.clone(), done.clone());
        std::thread::Builder::new()
            .name(format!("fmar-worker-{index}"))
            .spawn(move || {
                let result = std::panic::catch_unwind(|| worker(index, device, start));
                let _ = done.send((index, result));
            })
            .expect("spawn");
    }
    drop(done);
    let mut rounds = 0;
    for _ in 0..THREADS {
        match finished.recv_timeout(DEADLINE) {
            Ok((_, Ok(count))) => rounds += count,
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
    assert_eq!(rounds, THREADS * ROUNDS);
}

/// The same, forward only, on the plain (Fusion, no autodiff) device: the lazy path, where
/// threads' queued operations share Fusion's stream.
#[test]
fn eight_threads_forward_only_under_fusion() {
    let device = Device::default();
    let (done, finished) = mpsc::channel();
    let start = Arc::new(Barrier::new(THREADS));
    for index in 0..THREADS {
        let (device, start, done) = (device.clone(), start.clone(), done.clone());
        std::thread::spawn(move || {
            let result = std::panic::catch_unwind(move || {
                let precision = precision(index);
                let (lhs, rhs, bias) = shapes(index);
                start.wait();
                for _ in 0..ROUNDS {
                    let mut rng = Rng::fresh();
                    let seed = rng.seed();
                    let problem = Problem::random(&lhs, &rhs, &bias, &mut rng, precision);
                    let output = match bias.len() {
                        1 => common::values(fmar::matmul_add_relu_nd(
                            common::tensor::<3>(&problem.lhs, &device, precision),
                            common::tensor::<3>(&problem.rhs, &device, precision),
                            common::tensor::<1>(&problem.bias, &device, precision),
                        )),
                        _ => common::values(fmar::matmul_add_relu_nd(
                            common::tensor::<3>(&problem.lhs, &device, precision),
                            common::tensor::<3>(&problem.rhs, &device, precision),
                            common::tensor::<3>(&problem.bias, &device, precision),
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
            });
            let _ = done.send((index, result.is_ok()));
        });
    }
    drop(done);
    for _ in 0..THREADS {
        match finished.recv_timeout(DEADLINE) {
            Ok((_, true)) => {}
            Ok((index, false)) => panic!("thread {index} failed (its message is above)"),
            Err(_) => panic!("no thread finished within {DEADLINE:?}: deadlock"),
        }
    }
}
