//! Why fmar's CPU fallback composes Flex's own operations instead of running a fused loop: both,
//! measured side by side on this machine's CPU.
//!
//! ```text
//! cargo run --release -p fmar-bench --bin flex_choice
//! ```
//!
//! The fused loop is the straightforward one a CPU fallback would ship: rows split over all
//! cores, each row started from the bias, accumulated as `out[i, :] += lhs[i, k] * rhs[k, :]`
//! (unit-stride, so the compiler vectorises it), then clamped at zero. It touches the output once.
//! The composition runs Flex's blocked SIMD matmul, then the add and the ReLU as two more passes.
//! Both are checked against each other before timing.

use burn::tensor::{Device, Tensor, TensorData};
use fmar_bench::data::pseudo_random;
use fmar_bench::timing::median_time_in_batches;
use std::time::Duration;

/// `relu(lhs @ rhs + bias)` for one `[m, k] x [k, n]` problem, rows over all cores.
fn fused_loop(lhs: &[f32], rhs: &[f32], bias: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let rows_per_thread = m.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk_index, chunk) in out.chunks_mut(rows_per_thread * n).enumerate() {
            scope.spawn(move || {
                for (local_row, out_row) in chunk.chunks_mut(n).enumerate() {
                    let row = chunk_index * rows_per_thread + local_row;
                    out_row.copy_from_slice(bias);
                    for (kk, &a) in lhs[row * k..(row + 1) * k].iter().enumerate() {
                        let rhs_row = &rhs[kk * n..(kk + 1) * n];
                        for (o, &b) in out_row.iter_mut().zip(rhs_row) {
                            *o += a * b;
                        }
                    }
                    for o in out_row.iter_mut() {
                        *o = o.max(0.0);
                    }
                }
            });
        }
    });
    out
}

/// Time spent measuring each candidate on each shape: the median over batches of calls.
const BUDGET: Duration = Duration::from_secs(2);

fn main() {
    let device = Device::flex();
    println!(
        "CPU: {} threads\n",
        std::thread::available_parallelism().map_or(1, |t| t.get())
    );
    println!(
        "| m × k × n | Flex composition GFLOP/s | fused loop GFLOP/s | composition speed-up |"
    );
    println!("|---|---|---|---|");
    for (m, k, n) in [
        (64, 11, 64),
        (64, 256, 256),
        (256, 512, 512),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
    ] {
        let lhs = pseudo_random(m * k, 1);
        let rhs = pseudo_random(k * n, 2);
        let bias = pseudo_random(n, 3);
        let lhs_t = Tensor::<2>::from_data(TensorData::new(lhs.clone(), [m, k]), &device);
        let rhs_t = Tensor::<2>::from_data(TensorData::new(rhs.clone(), [k, n]), &device);
        let bias_t = Tensor::<1>::from_data(TensorData::new(bias.clone(), [n]), &device);

        let composed: Vec<f32> =
            fmar::matmul_add_relu_nd(lhs_t.clone(), rhs_t.clone(), bias_t.clone())
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
        let fused = fused_loop(&lhs, &rhs, &bias, m, k, n);
        let worst = composed
            .iter()
            .zip(&fused)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-3 * k as f32, "the two disagree by {worst}");

        let composed_time = median_time_in_batches(&device, BUDGET, || {
            let out = fmar::matmul_add_relu_nd(lhs_t.clone(), rhs_t.clone(), bias_t.clone());
            std::hint::black_box(out.into_data());
        })
        .per_call;
        let loop_time = median_time_in_batches(&device, BUDGET, || {
            std::hint::black_box(fused_loop(&lhs, &rhs, &bias, m, k, n));
        })
        .per_call;
        let gflops = |time: Duration| 2.0 * (m * k * n) as f64 / time.as_secs_f64() / 1e9;
        println!(
            "| {m} × {k} × {n} | {:.1} | {:.1} | {:.2}× |",
            gflops(composed_time),
            gflops(loop_time),
            loop_time.as_secs_f64() / composed_time.as_secs_f64()
        );
    }
}
