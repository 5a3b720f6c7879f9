//! fmar's training step on the CPU against the composition it wraps: forward + backward of
//! `relu(lhs @ rhs + bias)` on Burn's Flex backend, fmar (its handwritten backward, with the
//! ReLU mask packed in bits) beside `matmul_add_relu_reference` (Burn's autodiff through the
//! matmul, the add and the ReLU), for each float dtype and for a `Linear` bias (`[1, 1, n]`) and
//! a full bias `[b, m, n]`.
//!
//! ```text
//! cargo run --release -p fmar-bench --bin cpu_step [-- b,m,k,n]
//! ```
//!
//! On the CPU fmar runs Flex's own matmul, add and ReLU forward (see `flex_choice`), so the two
//! differ only in the backward's bookkeeping: what each keeps of the forward and how it gates
//! the gradient. The step is seeded with ones (`out.backward()`) and its gradients are read
//! back, so every figure includes the same work; before timing, fmar's output and gradients are
//! checked against the reference's.

use burn::tensor::{DType, Device, Tensor, TensorData};
use fmar_bench::data::pseudo_random;
use fmar_bench::timing::median_time_in_batches;
use std::time::Duration;

/// Time spent measuring a candidate once: the median over batches of steps.
const BUDGET: Duration = Duration::from_millis(1500);

/// How many times each candidate is measured, in turns with the other; the best is reported.
const ROUNDS: usize = 5;

/// The shape the figures in the docs use, `b, m, k, n`.
const DEFAULT_SHAPE: [usize; 4] = [8, 256, 512, 256];

type Op = fn(Tensor<3>, Tensor<3>, Tensor<3>) -> Tensor<3>;

/// The output and the three gradients of one step, on the host in f32.
struct Step {
    values: [Vec<f32>; 4],
}

fn step(op: Op, lhs: &Tensor<3>, rhs: &Tensor<3>, bias: &Tensor<3>) -> Step {
    let (lhs, rhs, bias) = (
        lhs.clone().autodiff().require_grad(),
        rhs.clone().autodiff().require_grad(),
        bias.clone().autodiff().require_grad(),
    );
    let out = op(lhs.clone(), rhs.clone(), bias.clone());
    let grads = out.backward();
    let host = |tensor: Tensor<3>| {
        tensor
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .expect("f32 data")
    };
    let grad = |tensor: &Tensor<3>| host(tensor.grad(&grads).expect("a gradient"));
    Step {
        values: [grad(&lhs), grad(&rhs), grad(&bias), host(out.inner())],
    }
}

fn main() {
    let shape = std::env::args().nth(1).map_or(DEFAULT_SHAPE, |text| {
        let dims: Vec<usize> = text
            .split(',')
            .map(|dim| dim.trim().parse().expect("a shape is b,m,k,n"))
            .collect();
        dims.try_into().expect("a shape is b,m,k,n")
    });
    let [b, m, k, n] = shape;
    let device = Device::flex();
    println!(
        "CPU (Burn Flex), {} threads; lhs [{b}, {m}, {k}], rhs [{b}, {k}, {n}]; forward + backward \
         seeded with ones, gradients read back; median ms per step\n",
        std::thread::available_parallelism().map_or(1, |t| t.get())
    );
    println!("| dtype | bias | fmar ms | reference ms | reference / fmar |");
    println!("|---|---|---|---|---|");
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for bias_dims in [vec![n], vec![b, m, n]] {
            let upload = |dims: Vec<usize>, seed| {
                let len = dims.iter().product();
                let data = TensorData::new(pseudo_random(len, seed), dims).convert_dtype(dtype);
                Tensor::<3>::from_data(data, &device)
            };
            let lhs = upload(vec![b, m, k], 1);
            let rhs = upload(vec![b, k, n], 2);
            // A `Linear` bias as `[1, 1, n]`, which the op broadcasts as it does `[n]`.
            let mut bias_shape = vec![1; 3 - bias_dims.len()];
            bias_shape.extend(&bias_dims);
            let bias = upload(bias_shape.clone(), 3);

            let fmar_step = step(fmar::matmul_add_relu_nd, &lhs, &rhs, &bias);
            let reference_step = step(fmar::matmul_add_relu_reference_nd, &lhs, &rhs, &bias);
            check(&fmar_step, &reference_step, dtype);

            let time = |op: Op| {
                median_time_in_batches(&device, BUDGET, || step(op, &lhs, &rhs, &bias)).per_call
            };
            // Taken in turns, the best of each: on a small CPU whichever is timed first or
            // last in a run is otherwise favoured by a few percent (the allocator's and the
            // caches' state, the clock).
            let (mut fmar_time, mut reference_time) = (Duration::MAX, Duration::MAX);
            for _ in 0..ROUNDS {
                fmar_time = fmar_time.min(time(fmar::matmul_add_relu_nd));
                reference_time = reference_time.min(time(fmar::matmul_add_relu_reference_nd));
            }
            let ms = |time: Duration| time.as_secs_f64() * 1e3;
            println!(
                "| {dtype:?} | {bias_shape:?} | {:.2} | {:.2} | {:.2}x |",
                ms(fmar_time),
                ms(reference_time),
                reference_time.as_secs_f64() / fmar_time.as_secs_f64()
            );
        }
    }
}

/// fmar's step against the reference's: each value within the dtype's rounding of the
/// largest, scaled by the length of the sums behind it.
fn check(fmar: &Step, reference: &Step, dtype: DType) {
    let epsilon = match dtype {
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        _ => 1e-6,
    };
    for (name, (got, want)) in ["grad lhs", "grad rhs", "grad bias", "output"]
        .iter()
        .zip(fmar.values.iter().zip(&reference.values))
    {
        assert_eq!(got.len(), want.len(), "{name}: lengths differ");
        let scale = want.iter().fold(1.0f32, |s, v| s.max(v.abs()));
        let worst = got
            .iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, f32::max);
        assert!(
            worst <= 64.0 * epsilon * scale,
            "{name}: fmar and the reference differ by {worst} (largest value {scale})"
        );
    }
}
