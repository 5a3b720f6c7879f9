//! fmar's forward along Burn's three paths to its kernel, timed alike: the CubeCL backend's
//! primitive (`CubeBackend`, no Fusion), Fusion over it (`Fusion<CubeBackend>`), and the `Tensor`
//! API on Burn's default device (its dispatch, with Fusion). Where the paths differ at a large
//! shape, the difference is what that layer costs per call; at a tiny shape, where the device
//! waits for the host, a path's time per call is its host cost.
//!
//! ```text
//! BURN_DEVICE=cuda cargo run --release -p fmar-bench --features cuda-nvrtc --bin launch_path -- \
//!     --dtype bf16 --calls 100 --batches 7 1,4096,4096,4096 1,64,64,64
//! ```
//!
//! Each path runs `--calls` back-to-back calls per batch, every output kept alive until the
//! batch's one sync, for a warm-up batch and then `--batches` timed ones; it prints the median
//! time per call and the median host time per call before the sync (`issued`). CubeCL devices
//! only (CUDA, wgpu).

use burn::backend::fusion::Fusion;
use burn::backend::{Backend, DispatchDevice};
use burn::tensor::{DType, Device, Tensor, TensorData};
use burn_cubecl::{CubeBackend, CubeDevice};
use fmar::FusedMatmulAddReluBackend;
use fmar_bench::data::pseudo_random;
use std::time::{Duration, Instant};

struct Options {
    dtype: DType,
    calls: usize,
    batches: usize,
    shapes: Vec<[usize; 4]>,
}

fn parse() -> Options {
    let mut options = Options {
        dtype: DType::BF16,
        calls: 100,
        batches: 7,
        shapes: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} takes a value"));
        match arg.as_str() {
            "--dtype" => {
                options.dtype = match value().as_str() {
                    "f32" => DType::F32,
                    "f16" => DType::F16,
                    "bf16" => DType::BF16,
                    other => panic!("--dtype {other}: one of f32, f16, bf16"),
                }
            }
            "--calls" => options.calls = value().parse().expect("--calls N"),
            "--batches" => options.batches = value().parse().expect("--batches N"),
            shape => options.shapes.push(
                shape
                    .split(',')
                    .map(|d| d.parse().expect("a shape is b,m,k,n"))
                    .collect::<Vec<usize>>()
                    .try_into()
                    .expect("a shape is b,m,k,n"),
            ),
        }
    }
    if options.shapes.is_empty() {
        options.shapes = vec![[1, 4096, 4096, 4096], [1, 64, 64, 64]];
    }
    options
}

/// Median time per call and median host time per call before the sync, over `batches` batches
/// of `calls` calls (after one untimed batch). A fixed batch size, not the sizing of
/// [`fmar_bench::timing::median_time_in_batches`], so that every path is timed over the same
/// calls and each path syncs its own way (a backend's primitives, or the dispatch device).
fn time<T>(
    calls: usize,
    batches: usize,
    mut call: impl FnMut() -> T,
    sync: impl Fn(),
) -> (Duration, Duration) {
    let mut per_call = Vec::new();
    let mut issued = Vec::new();
    for batch in 0..=batches {
        let start = Instant::now();
        let kept: Vec<T> = (0..calls).map(|_| call()).collect();
        let issue = start.elapsed();
        sync();
        let elapsed = start.elapsed();
        drop(kept);
        if batch > 0 {
            per_call.push(elapsed / calls as u32);
            issued.push(issue / calls as u32);
        }
    }
    per_call.sort();
    issued.sort();
    (per_call[per_call.len() / 2], issued[issued.len() / 2])
}

fn report(path: &str, shape: [usize; 4], (per_call, issued): (Duration, Duration)) {
    let [b, m, k, n] = shape;
    let tflops = 2.0 * (b * m * k * n) as f64 / per_call.as_secs_f64() / 1e12;
    println!(
        "PATH {path:<22} {b},{m},{k},{n} {:>10.1} us/call {tflops:>8.1} TFLOP/s issued {:>6.1} us/call",
        per_call.as_secs_f64() * 1e6,
        issued.as_secs_f64() * 1e6
    );
}

/// Times `calls` of `B`'s forward on primitives uploaded to `device`.
fn primitive_path<B: Backend<Device = CubeDevice> + FusedMatmulAddReluBackend>(
    name: &str,
    device: &CubeDevice,
    options: &Options,
    shape: [usize; 4],
    inputs: &[TensorData; 3],
) {
    let [lhs, rhs, bias] = inputs.clone().map(|data| B::float_from_data(data, device));
    let sync = || B::sync(device).expect("device sync");
    let timing = time(
        options.calls,
        options.batches,
        || B::fused_matmul_add_relu(lhs.clone(), rhs.clone(), bias.clone()),
        sync,
    );
    report(name, shape, timing);
}

fn main() {
    let options = parse();
    let choice = fmar::default_device();
    println!("device: {choice}");
    let device: Device = choice.device;
    let cube = match device.as_dispatch() {
        DispatchDevice::Cube(cube) => cube.clone(),
        #[allow(unreachable_patterns)]
        other => panic!("launch_path needs a CubeCL device, got {other:?}"),
    };
    for &shape in &options.shapes {
        let [b, m, k, n] = shape;
        let data = |dims: Vec<usize>, seed: u64| {
            let len = dims.iter().product();
            TensorData::new(pseudo_random(len, seed), dims).convert_dtype(options.dtype)
        };
        let inputs = [
            data(vec![b, m, k], 1),
            data(vec![1, k, n], 2),
            data(vec![n], 3),
        ];
        primitive_path::<CubeBackend>("CubeBackend", &cube, &options, shape, &inputs);
        primitive_path::<Fusion<CubeBackend>>(
            "Fusion<CubeBackend>",
            &cube,
            &options,
            shape,
            &inputs,
        );
        let [lhs, rhs, bias] = inputs.clone();
        let lhs = Tensor::<3>::from_data(lhs, (&device, options.dtype));
        let rhs = Tensor::<3>::from_data(rhs, (&device, options.dtype));
        let bias = Tensor::<1>::from_data(bias, (&device, options.dtype));
        let timing = time(
            options.calls,
            options.batches,
            || fmar::matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone()),
            || device.sync().expect("device sync"),
        );
        report("Tensor API (dispatch)", shape, timing);
    }
}
