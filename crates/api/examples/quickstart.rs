//! fmar's main job: forward and backward of `relu(lhs @ rhs + bias)` on the best device
//! [`fmar::default_device`] finds (CUDA, then wgpu, then the CPU),
//! checked against Burn's composed reference, with timings.
//!
//! ```text
//! cargo run --release --example quickstart
//! BURN_DEVICE=cuda cargo run --release --features cuda,autotune --example quickstart
//! ```
//!
//! Options (environment): `FMAR_QUICKSTART_SHAPE=b,m,k,n` (default `8,256,512,256`) and
//! `FMAR_QUICKSTART_ITERS` (default 20).

mod common;

use burn::tensor::{DType, Device, Distribution, Tensor};
use common::{format_duration, median_time, relative_error};
use fmar::{matmul_add_relu, matmul_add_relu_reference};

fn main() {
    let shape = shape_from_env();
    let iterations: usize = std::env::var("FMAR_QUICKSTART_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let choice = fmar::default_device();
    println!("device: {choice}");
    if choice.runtime == fmar::Runtime::Cpu {
        println!(
            "  (no GPU was found, so this runs on the CPU through Burn's Flex backend, which is \
             far faster than a software rasterizer; `BURN_DEVICE=wgpu` runs fmar's kernels on \
             one, e.g. Mesa's lavapipe: `apt-get install mesa-vulkan-drivers libvulkan1`. For a \
             GPU: an NVIDIA card with `--features cuda`, or any GPU through wgpu)"
        );
    }
    let device = choice.device;
    let [b, m, k, n] = shape;
    println!("shape: lhs [{b}, {m}, {k}], rhs [{b}, {k}, {n}], bias [{b}, {m}, {n}]");
    println!();
    println!(
        "| dtype | forward rel. error | ReLU masks differ | grad lhs | grad rhs | grad bias | fmar fwd | reference fwd | fmar fwd+bwd | reference fwd+bwd |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");

    for dtype in [DType::F32, DType::F16, DType::BF16] {
        if !device.supports_dtype(dtype) {
            println!("| {dtype:?} | not supported by this device | | | | | | | | |");
            continue;
        }
        run(&device, shape, dtype, iterations);
    }
}

fn shape_from_env() -> [usize; 4] {
    let Ok(text) = std::env::var("FMAR_QUICKSTART_SHAPE") else {
        return [8, 256, 512, 256];
    };
    let dims: Vec<usize> = text
        .split(',')
        .map(|d| d.trim().parse().expect("FMAR_QUICKSTART_SHAPE is b,m,k,n"))
        .collect();
    dims.try_into()
        .expect("FMAR_QUICKSTART_SHAPE has four dims")
}

/// Calls before the timed ones: the first compiles the kernels (and tunes them with the
/// `autotune` feature).
const WARM_UPS: usize = 2;

type Op = fn(Tensor<3>, Tensor<3>, Tensor<3>) -> Tensor<3>;

struct Run {
    output: Tensor<3>,
    grads: [Tensor<3>; 3],
}

fn run(device: &Device, [b, m, k, n]: [usize; 4], dtype: DType, iterations: usize) {
    let random = |dims: [usize; 3]| {
        Tensor::<3>::random(dims, Distribution::Uniform(-1.0, 1.0), (device, dtype))
    };
    let (lhs, rhs, bias) = (random([b, m, k]), random([b, k, n]), random([b, m, n]));
    let upstream = random([b, m, n]);

    let forward_backward = |op: Op| -> Run {
        let lhs = lhs.clone().autodiff().require_grad();
        let rhs = rhs.clone().autodiff().require_grad();
        let bias = bias.clone().autodiff().require_grad();
        let output = op(lhs.clone(), rhs.clone(), bias.clone());
        let grads = (output.clone() * upstream.clone()).sum().backward();
        let grad = |t: &Tensor<3>| t.grad(&grads).expect("tracked input has a gradient");
        Run {
            grads: [grad(&lhs), grad(&rhs), grad(&bias)],
            output: output.inner(),
        }
    };

    let fmar = forward_backward(matmul_add_relu);
    let reference = forward_backward(matmul_add_relu_reference);
    let mask_differences = mask_differences(fmar.output.clone(), reference.output.clone());
    let errors: Vec<String> = std::iter::once((fmar.output, reference.output))
        .chain(fmar.grads.into_iter().zip(reference.grads))
        .map(|(a, b)| format!("{:.2e}", relative_error(a, b)))
        .collect();

    let time_forward = |op: Op| {
        median_time(device, WARM_UPS, iterations, || {
            op(lhs.clone(), rhs.clone(), bias.clone())
        })
    };
    let time_forward_backward =
        |op: Op| median_time(device, WARM_UPS, iterations, || forward_backward(op));
    println!(
        "| {dtype:?} | {} | {mask_differences} | {} | {} | {} | {} | {} | {} | {} |",
        errors[0],
        errors[1],
        errors[2],
        errors[3],
        format_duration(time_forward(matmul_add_relu)),
        format_duration(time_forward(matmul_add_relu_reference)),
        format_duration(time_forward_backward(matmul_add_relu)),
        format_duration(time_forward_backward(matmul_add_relu_reference)),
    );
}

/// In how many elements one output is positive and the other is not. Where the pre-activation
/// is within rounding of 0, the two paths may take opposite sides of the ReLU's kink; each such
/// element sends a different gradient through its row and column, which is why the gradients
/// differ more than the forwards do.
fn mask_differences(a: Tensor<3>, b: Tensor<3>) -> usize {
    let a = a.greater_elem(0.0);
    let b = b.greater_elem(0.0);
    a.not_equal(b).int().sum().into_scalar::<i64>() as usize
}
