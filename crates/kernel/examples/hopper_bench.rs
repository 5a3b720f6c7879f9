//! Checks and times fmar's kernel variants on a CUDA device, with no Burn in between.
//!
//! ```text
//! cargo run --release -p fmar-kernel --features cuda --example hopper_bench -- \
//!     [--variants launch,hopper-tiles,tiled] [--dtypes bf16,f16] [--reps 50] [--lhs k,m]
//!     [--rhs n,k] [--outputs 1] [--mask] [--probe] [SHAPE ...]
//! ```
//!
//! Each `SHAPE` is `b,m,k,n` (default: 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192).
//! For every shape, dtype, `lhs` layout (`k`: row-major, the default; `m`: stored `[k, m]` and
//! read transposed), `rhs` layout (`n`: `[k, n]` row-major, Burn's `Linear` weight; `k`: a
//! `[n, k]` weight read transposed) and variant, the output is first poisoned with NaN, one
//! launch is checked against an f64 dot product at 2,048 sampled outputs (every sampled row
//! and column edge included), then `--reps` launches are timed between two device syncs, each
//! writing the next of `--outputs` output buffers in turn (one: the same buffer every time, which
//! may stay in L2; more: as a caller that allocates each output sees it; 0: a buffer allocated
//! for each launch and kept until the sync, as Burn's path does). Under `--mask` every launch is
//! the tracked forward (`launch_keeping_mask`, which also writes the ReLU mask the backward
//! reads), with the crate's own choice of variant (or `FMAR_KERNEL`'s); the check
//! covers the output.
//! Under `--probe` the operands are not random but say where each output came from: row `i` of
//! `lhs` is one at `k` index `i % k` and zero elsewhere, `rhs[l][j] = l n + j` and the bias is
//! zero, so output `(i, j)` must be `(i % k) n + j`, exact in every dtype while `k n <= 256`
//! (half precision) or `2048` (f32 through TF32). Every output is checked, and a wrong one is
//! printed with the `(l, j)` of `rhs` its value names: the layout a kernel got wrong, read
//! from one run.
//! Prints one line per run: `RESULT dtype shape lhs rhs variant ms TFLOP/s max_rel_err status`.

use cubecl::client::Client;
use cubecl::cuda::CudaDevice;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::zspace::{Shape, Strides, Tiling};
use fmar_kernel::{LaunchError, Operands, Variant, last_launched_variant};
use fmar_tests::{Precision, Rng};
use std::time::Instant;

struct Options {
    /// `None`: the crate's own choice (`launch`).
    variants: Vec<Option<Variant>>,
    dtypes: Vec<Precision>,
    lhs_layouts: Vec<char>,
    rhs_layouts: Vec<char>,
    reps: usize,
    /// Output buffers the timed launches write in turn.
    outputs: usize,
    /// Whether every launch is the tracked forward, which writes the ReLU mask too.
    mask: bool,
    /// Whether the operands are the layout probe's instead of random.
    probe: bool,
    shapes: Vec<[usize; 4]>,
}

fn parse() -> Options {
    let mut options = Options {
        variants: vec![None],
        dtypes: vec![Precision::BF16, Precision::F16],
        lhs_layouts: vec!['k'],
        rhs_layouts: vec!['n', 'k'],
        reps: 50,
        outputs: 1,
        mask: false,
        probe: false,
        shapes: vec![],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--variants" => {
                options.variants = value()
                    .split(',')
                    .map(|name| {
                        if name == "launch" {
                            return None;
                        }
                        Some(Variant::from_name(name).unwrap_or_else(|| {
                            let names: Vec<String> =
                                Variant::ALL.iter().map(|v| v.name()).collect();
                            panic!("no variant {name}; one of {names:?}")
                        }))
                    })
                    .collect()
            }
            "--dtypes" => {
                options.dtypes = value()
                    .split(',')
                    .map(|name| match name {
                        "f32" => Precision::F32,
                        "f16" => Precision::F16,
                        "bf16" => Precision::BF16,
                        other => panic!("no dtype {other}"),
                    })
                    .collect()
            }
            "--lhs" => {
                options.lhs_layouts = value()
                    .split(',')
                    .map(|s| s.chars().next().unwrap())
                    .collect()
            }
            "--rhs" => {
                options.rhs_layouts = value()
                    .split(',')
                    .map(|s| s.chars().next().unwrap())
                    .collect()
            }
            "--reps" => options.reps = value().parse().expect("--reps N"),
            "--outputs" => options.outputs = value().parse().expect("--outputs N"),
            "--mask" => options.mask = true,
            "--probe" => options.probe = true,
            shape => {
                let dims: Vec<usize> = shape
                    .split(',')
                    .map(|d| d.parse().expect("b,m,k,n"))
                    .collect();
                options.shapes.push(dims.try_into().expect("b,m,k,n"));
            }
        }
    }
    if options.shapes.is_empty() {
        options.shapes = vec![
            [1, 4096, 4096, 4096],
            [1, 16384, 1024, 4096],
            [1, 8192, 8192, 8192],
        ];
    }
    options
}

fn elem_type(precision: Precision) -> ElemType {
    ElemType::Float(match precision {
        Precision::F32 => FloatKind::F32,
        Precision::F16 => FloatKind::F16,
        Precision::BF16 => FloatKind::BF16,
    })
}

fn binding(handle: &cubecl::server::Handle, shape: &[usize], strides: &[usize]) -> TensorBinding {
    TensorBinding {
        handle: handle.clone().binding(),
        shape: Shape::from(shape.to_vec()),
        strides: Strides::new(strides),
        tiling: Tiling::default(),
    }
}

/// One problem on the device: `lhs [b, m, k]` (stored `[b, m, k]` or `[b, k, m]`), `rhs [k, n]`
/// broadcast over the batch (stored `[k, n]` or `[n, k]`), bias `[n]` broadcast, output
/// `[b, m, n]`.
struct Problem {
    shape: [usize; 4],
    precision: Precision,
    lhs_m_major: bool,
    rhs_k_major: bool,
    /// The layout probe's operands (`--probe`).
    probe: bool,
    lhs: Vec<f64>,
    rhs: Vec<f64>, // logical [k, n]
    bias: Vec<f64>,
    handles: [cubecl::server::Handle; 3],
}

impl Problem {
    fn new(
        client: &Client,
        shape: [usize; 4],
        precision: Precision,
        lhs_m_major: bool,
        rhs_k_major: bool,
        probe: bool,
        rng: &mut Rng,
    ) -> Self {
        let [b, m, k, n] = shape;
        let (lhs, rhs, bias) = if probe {
            (
                (0..b * m * k)
                    .map(|at| f64::from(u8::from(at % k == (at / k % m) % k)))
                    .collect(),
                (0..k * n).map(|at| at as f64).collect(),
                vec![0.0; n],
            )
        } else {
            (
                rng.values(b * m * k, -1.0, 1.0, precision),
                rng.values(k * n, -1.0, 1.0, precision),
                rng.values(n, -1.0, 1.0, precision),
            )
        };
        let stored_rhs: Vec<f64> = if rhs_k_major {
            (0..n * k).map(|i| rhs[(i % k) * n + i / k]).collect()
        } else {
            rhs.clone()
        };
        let stored_lhs: Vec<f64> = if lhs_m_major {
            // Per batch, `[k, m]`.
            (0..b * m * k)
                .map(|i| {
                    let (batch, within) = (i / (m * k), i % (m * k));
                    lhs[batch * m * k + (within % m) * k + within / m]
                })
                .collect()
        } else {
            lhs.clone()
        };
        let handles = [
            client.create_from_slice(&precision.encode(&stored_lhs)),
            client.create_from_slice(&precision.encode(&stored_rhs)),
            client.create_from_slice(&precision.encode(&bias)),
        ];
        Self {
            shape,
            precision,
            lhs_m_major,
            rhs_k_major,
            probe,
            lhs,
            rhs,
            bias,
            handles,
        }
    }

    fn operands(&self, out: &cubecl::server::Handle) -> Operands {
        let [b, m, k, n] = self.shape;
        let rhs_strides = if self.rhs_k_major {
            [0, 1, k]
        } else {
            [0, n, 1]
        };
        let lhs_strides = if self.lhs_m_major {
            [m * k, 1, m]
        } else {
            [m * k, k, 1]
        };
        Operands {
            lhs: binding(&self.handles[0], &[b, m, k], &lhs_strides),
            rhs: binding(&self.handles[1], &[b, k, n], &rhs_strides),
            bias: binding(&self.handles[2], &[b, m, n], &[0, 0, 1]),
            out: binding(out, &[b, m, n], &[m * n, n, 1]),
        }
    }

    /// The worst relative error at sampled outputs (edges included), or why the output is
    /// wrong.
    fn check(
        &self,
        client: &Client,
        out: cubecl::server::Handle,
        rng: &mut Rng,
    ) -> Result<f64, String> {
        let [b, m, k, n] = self.shape;
        let got = self
            .precision
            .decode(&client.read_one(out).map_err(|e| format!("{e:?}"))?);
        let unwritten = got.iter().filter(|v| v.is_nan()).count();
        if self.probe {
            return self.check_probe(&got);
        }
        if unwritten > 0 {
            return Err(format!("{unwritten} outputs unwritten (NaN)"));
        }
        let mut worst = 0.0f64;
        let mut samples: Vec<(usize, usize, usize)> = (0..2048)
            .map(|_| {
                (
                    rng.next_u64() as usize % b,
                    rng.next_u64() as usize % m,
                    rng.next_u64() as usize % n,
                )
            })
            .collect();
        samples.extend([
            (0, 0, 0),
            (b - 1, m - 1, n - 1),
            (0, m - 1, 0),
            (b - 1, 0, n - 1),
        ]);
        for (bi, i, j) in samples {
            let dot: f64 = (0..k)
                .map(|l| self.lhs[(bi * m + i) * k + l] * self.rhs[l * n + j])
                .sum();
            let scale = (k as f64).sqrt() + 1.0;
            let expected = (dot + self.bias[j]).max(0.0);
            let error = (got[(bi * m + i) * n + j] - expected).abs() / (expected.abs() + scale);
            worst = worst.max(error);
        }
        // f32 products on CUDA's tensor cores round their inputs to TF32 (cubek's
        // `allow_tf32`, its default).
        let tolerance = match self.precision {
            Precision::F32 => fmar_tests::Tolerance::tf32().rtol,
            half => 4.0 * half.unit_roundoff(),
        };
        if worst > tolerance {
            return Err(format!("max relative error {worst:.2e} > {tolerance:.1e}"));
        }
        Ok(worst)
    }

    /// Under `--probe`: every output against `(i % k) n + j`, and the first wrong ones with the
    /// `rhs` element `(l, j)` their values name (or the value, where it names none: a sum of
    /// several, or unwritten).
    fn check_probe(&self, got: &[f64]) -> Result<f64, String> {
        let [b, m, k, n] = self.shape;
        let mut wrong = Vec::new();
        for (at, &value) in got.iter().enumerate().take(b * m * n) {
            let (i, j) = (at / n % m, at % n);
            if value != ((i % k) * n + j) as f64 {
                wrong.push((at / (m * n), i, j, value));
            }
        }
        if wrong.is_empty() {
            return Ok(0.0);
        }
        let names = |v: f64| {
            if v.fract() == 0.0 && (0.0..(k * n) as f64).contains(&v) {
                let v = v as usize;
                format!("rhs({}, {})", v / n, v % n)
            } else {
                format!("{v}")
            }
        };
        for &(batch, i, j, value) in wrong.iter().take(48) {
            println!(
                "PROBE out({batch}, {i}, {j}) = {} where rhs({}, {j}) was due",
                names(value),
                i % k
            );
        }
        Err(format!(
            "{} of {} outputs misplaced",
            wrong.len(),
            b * m * n
        ))
    }
}

fn main() {
    let options = parse();
    let client = cubecl::Device::Cuda(CudaDevice::new(0)).client();
    let properties = client.properties();
    println!(
        "device: {} ({}), SMs {:?}",
        properties.identity.name,
        properties.identity.fingerprint,
        properties.hardware.num_streaming_multiprocessors
    );
    let mut rng = Rng::fresh();
    println!("seed: {}", rng.seed());
    for &shape in &options.shapes {
        for &precision in &options.dtypes {
            for &lhs_layout in &options.lhs_layouts {
                for &rhs_layout in &options.rhs_layouts {
                    let problem = Problem::new(
                        &client,
                        shape,
                        precision,
                        lhs_layout == 'm',
                        rhs_layout == 'k',
                        options.probe,
                        &mut rng,
                    );
                    for &variant in &options.variants {
                        run(&client, &problem, variant, &options, &mut rng);
                    }
                }
            }
        }
    }
}

/// `variant`, or the crate's own choice; with `mask`, the tracked forward, which writes it.
fn launch(
    client: &Client,
    operands: Operands,
    dtype: ElemType,
    variant: Option<Variant>,
    mask: Option<&TensorBinding>,
) -> Result<(), LaunchError> {
    match (mask, variant) {
        (Some(mask), _) => fmar_kernel::launch_keeping_mask(client, operands, mask.clone(), dtype),
        (None, Some(variant)) => fmar_kernel::launch_variant(client, operands, dtype, variant),
        (None, None) => fmar_kernel::launch(client, operands, dtype),
    }
}

fn run(
    client: &Client,
    problem: &Problem,
    variant: Option<Variant>,
    options: &Options,
    rng: &mut Rng,
) {
    let reps = options.reps;
    let [b, m, k, n] = problem.shape;
    if options.mask && variant.is_some() {
        panic!("--mask runs the crate's own choice: leave --variants at `launch`");
    }
    let name = match variant {
        _ if options.mask => "keeping-mask".to_string(),
        Some(variant) => variant.name(),
        None => "launch".to_string(),
    };
    let label = format!(
        "{:?} {b},{m},{k},{n} lhs={} rhs={} {name}",
        problem.precision,
        if problem.lhs_m_major {
            "m-major"
        } else {
            "k-major"
        },
        if problem.rhs_k_major {
            "k-major"
        } else {
            "n-major"
        }
    );
    let dtype = elem_type(problem.precision);
    // Poison, then one checked launch (its first call also compiles).
    let poison = problem.precision.encode(&vec![f64::NAN; b * m * n]);
    let out = client.create_from_slice(&poison);
    let operands = problem.operands(&out);
    // Under `--mask`, one mask buffer (`[b, m, ceil(n / 32)]` words) that every launch rewrites.
    let mask = options.mask.then(|| {
        let shape = fmar_kernel::mask_shape(&[b, m, n]);
        let buffer = client.empty(shape.iter().product::<usize>() * 4);
        binding(&buffer, &shape, &[m * shape[2], shape[2], 1])
    });
    let mask = mask.as_ref();
    let first = Instant::now();
    if let Err(error) = launch(client, operands.clone(), dtype, variant, mask) {
        println!("RESULT {label} - - - UNAVAILABLE ({error})");
        return;
    }
    if let Err(error) = cubecl::future::block_on(client.sync()) {
        println!("RESULT {label} - - - FAILED (device error: {error:?})");
        return;
    }
    let first_ms = first.elapsed().as_secs_f64() * 1e3;
    let error = match problem.check(client, out, rng) {
        Ok(error) => error,
        Err(why) => {
            println!("RESULT {label} - - - WRONG ({why})");
            return;
        }
    };
    let bytes = b * m * n * problem.precision.size();
    let mut outputs = vec![operands];
    for _ in 1..options.outputs.max(1) {
        outputs.push(problem.operands(&client.empty(bytes)));
    }
    let mut fresh = Vec::new();
    let start = Instant::now();
    for rep in 0..reps {
        let operands = if options.outputs == 0 {
            fresh.push(client.empty(bytes));
            problem.operands(fresh.last().expect("just pushed"))
        } else {
            outputs[rep % outputs.len()].clone()
        };
        launch(client, operands, dtype, variant, mask).expect("launch");
    }
    // Host time to issue the launches: where the device is faster than the host (tiny
    // shapes), this is the whole loop's time, the host cost per launch.
    let host_us = start.elapsed().as_secs_f64() * 1e6 / reps as f64;
    let synced = cubecl::future::block_on(client.sync());
    drop(fresh);
    let ms = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
    if let Err(error) = synced {
        println!("RESULT {label} - - - FAILED (device error while timing: {error:?})");
        return;
    }
    let tflops = 2.0 * (b * m * n * k) as f64 / (ms * 1e-3) / 1e12;
    let ran = last_launched_variant().map_or("-".to_string(), |v| v.name());
    println!(
        "RESULT {label} {ms:.4} {tflops:.1} {error:.1e} ok (first call {first_ms:.0} ms, host \
         {host_us:.1} us/launch, ran {ran}, outputs {})",
        if options.outputs == 0 {
            "fresh".to_string()
        } else {
            outputs.len().to_string()
        }
    );
}
