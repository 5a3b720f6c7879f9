//! Soak: forward + backward many times at small shapes, with random broadcast patterns and
//! dtypes, under Fusion and autodiff, every result checked; device memory and host memory must
//! stay flat.
//!
//! `FMAR_SOAK_ITERATIONS` sets the count (CI: 2,000 after the warm-up; docs/TESTING.md records
//! a run of 100,000). The warm-up runs every configuration once, so that every kernel is
//! compiled and every memory-pool size class exists before the baseline is taken; after that,
//! - Burn's device memory in use (`Device::memory_pool_usage().bytes_in_use`) must return to
//!   the baseline whenever no tensor is alive, and the bytes the pools reserve may not grow by
//!   more than `RESERVED_SLACK`;
//! - host RSS may not grow by more than `RSS_SLACK`.

mod common;

use burn::tensor::Device;
use common::{check_random_nd, runs};
use fmar_tests::{Precision, Rng};
use std::time::Instant;

/// What the pools may reserve beyond the warm-up's high-water mark: a few pages.
const RESERVED_SLACK: u64 = 16 << 20;
/// Host memory growth allowed over the run: allocator noise, far below any leak of one
/// iteration's buffers times the iteration count.
const RSS_SLACK: u64 = 48 << 20;

/// One configuration: lhs batch, rhs batch, m, k, n, bias pattern, dtype.
#[derive(Debug, Clone, Copy)]
struct Config {
    batches: (usize, usize),
    m: usize,
    k: usize,
    n: usize,
    bias: usize,
    precision: Precision,
}

impl Config {
    fn shapes(&self) -> ([usize; 3], [usize; 3], Vec<usize>) {
        let (lb, rb) = self.batches;
        let batch = lb.max(rb);
        let bias = match self.bias {
            0 => vec![self.n],
            1 => vec![1, 1, self.n],
            2 => vec![batch, 1, self.n],
            _ => vec![batch, self.m, self.n],
        };
        ([lb, self.m, self.k], [rb, self.k, self.n], bias)
    }
}

fn configs(precisions: &[Precision]) -> Vec<Config> {
    let mut all = Vec::new();
    for &precision in precisions {
        for batches in [(1, 1), (2, 2), (1, 3), (3, 1)] {
            for m in [7, 33] {
                for k in [5, 32] {
                    for n in [3, 40] {
                        for bias in 0..4 {
                            all.push(Config {
                                batches,
                                m,
                                k,
                                n,
                                bias,
                                precision,
                            });
                        }
                    }
                }
            }
        }
    }
    all
}

fn run(config: Config, device: &Device, rng: &mut Rng) {
    let (lhs, rhs, bias) = config.shapes();
    let what = format!("soak {config:?}");
    let shapes = (&lhs[..], &rhs[..], &bias[..]);
    match bias.len() {
        1 => check_random_nd::<3, 1>(&what, shapes, config.precision, device, rng),
        _ => check_random_nd::<3, 3>(&what, shapes, config.precision, device, rng),
    }
}

/// Resident host memory of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn forward_backward_soak_keeps_memory_flat() {
    let iterations: usize = std::env::var("FMAR_SOAK_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let precisions: Vec<Precision> = [Precision::F32, Precision::F16]
        .into_iter()
        .filter(|&p| runs(p))
        .collect();
    let configs = configs(&precisions);
    let device = Device::default().autodiff();
    let mut rng = Rng::fresh();

    let warm_up = Instant::now();
    for &config in &configs {
        run(config, &device, &mut rng);
    }
    // Twice: the second pass reuses what the first allocated.
    for &config in &configs {
        run(config, &device, &mut rng);
    }
    let usage = || {
        device
            .memory_pool_usage()
            .expect("the CubeCL backend reports its memory pools")
    };
    let baseline = usage();
    let baseline_rss = rss();
    eprintln!(
        "warm-up: {} configurations twice in {:.1?}; device {baseline:?}; host RSS {} MiB",
        configs.len(),
        warm_up.elapsed(),
        baseline_rss >> 20
    );

    let start = Instant::now();
    let mut peak_reserved = baseline.bytes_reserved;
    let mut peak_rss = baseline_rss;
    for iteration in 1..=iterations {
        let config = configs[(rng.next_u64() % configs.len() as u64) as usize];
        run(config, &device, &mut rng);
        if iteration % 100 == 0 || iteration == iterations {
            let now = usage();
            peak_reserved = peak_reserved.max(now.bytes_reserved);
            peak_rss = peak_rss.max(rss());
            assert!(
                now.bytes_in_use <= baseline.bytes_in_use,
                "iteration {iteration}: {} bytes in use with no tensor alive, {} at the baseline",
                now.bytes_in_use,
                baseline.bytes_in_use
            );
            assert!(
                now.bytes_reserved <= baseline.bytes_reserved + RESERVED_SLACK,
                "iteration {iteration}: the pools reserve {} bytes, {} at the baseline",
                now.bytes_reserved,
                baseline.bytes_reserved
            );
            assert!(
                rss() <= baseline_rss + RSS_SLACK,
                "iteration {iteration}: host RSS {} MiB, {} MiB at the baseline",
                rss() >> 20,
                baseline_rss >> 20
            );
        }
        if iteration % 10_000 == 0 {
            eprintln!(
                "{iteration} iterations, {:.1?}, reserved {} B, RSS {} MiB",
                start.elapsed(),
                usage().bytes_reserved,
                rss() >> 20
            );
        }
    }
    let elapsed = start.elapsed();
    eprintln!(
        "soak: {iterations} forward+backward passes in {elapsed:.1?} ({:.2} ms each), every one \
         checked; bytes in use {} -> {}, reserved {} -> peak {} (slack {}), host RSS {} MiB -> \
         peak {} MiB (slack {} MiB)",
        elapsed.as_secs_f64() * 1e3 / iterations as f64,
        baseline.bytes_in_use,
        usage().bytes_in_use,
        baseline.bytes_reserved,
        peak_reserved,
        RESERVED_SLACK,
        baseline_rss >> 20,
        peak_rss >> 20,
        RSS_SLACK >> 20
    );
}
