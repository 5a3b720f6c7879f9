//! fmar's benchmark: `relu(lhs @ rhs + bias)` with a `Linear`-style bias `[n]`, forward and
//! forward + backward, for fmar (autotuned, and each variant forced), Burn's fused reference
//! path (`relu(lhs.matmul(rhs) + bias)` under Fusion) and the seed's naive kernel, measured in
//! one process on one device.
//!
//! ```text
//! BURN_DEVICE=cuda cargo run --release --features cuda-nvrtc,autotune --example bench -- \
//!     --dtype bf16 --json bf16.json
//! ```
//!
//! One dtype per process (`--dtype f32|f16|bf16`), so that a failure in one cannot poison the
//! others. Options: `--shapes b,m,k,n;...` (default: the speed issue's seven), `--budget-ms`
//! (time per measured candidate, default 600), `--no-backward`, `--no-variants`, `--json PATH`.
//! Each figure is the median over batches of back-to-back launches, synchronised with the
//! device, after warm-up; the first call's time (which includes autotune) is reported apart.

use burn::tensor::{DType, Device, Distribution, Tensor};
use fmar::kernel::{Variant, force_variant, last_launched_variant};
use fmar::{matmul_add_relu_nd, matmul_add_relu_reference_nd};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The speed issue's shapes, small first and the one Burn's path was seen to fail on last, so
/// that a hang costs the fewest figures. Then two more with `--all-shapes`.
const DEFAULT_SHAPES: [[usize; 4]; 7] = [
    [64, 128, 128, 128],
    [32, 512, 64, 512],
    [8, 1024, 1024, 1024],
    [1, 4096, 4096, 4096],
    [1, 16384, 1024, 4096],
    [1, 2048, 2048, 2048],
    [4, 257, 513, 129],
];

struct Options {
    dtype: DType,
    shapes: Vec<[usize; 4]>,
    budget: Duration,
    backward: bool,
    variants: bool,
    json: Option<String>,
    /// Measure only this variant (pinned), checked against the tiled kernel: a probe that runs
    /// no autotune and no reference path.
    only: Option<Variant>,
}

fn options() -> Options {
    let mut options = Options {
        dtype: DType::F32,
        shapes: DEFAULT_SHAPES[..5].to_vec(),
        budget: Duration::from_millis(600),
        backward: true,
        variants: true,
        json: None,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--dtype" => {
                options.dtype = match value().as_str() {
                    "f32" => DType::F32,
                    "f16" => DType::F16,
                    "bf16" => DType::BF16,
                    other => panic!("unknown dtype {other}"),
                }
            }
            "--shapes" => {
                options.shapes = value()
                    .split(';')
                    .map(|shape| {
                        let dims: Vec<usize> = shape
                            .split(',')
                            .map(|d| d.trim().parse().unwrap())
                            .collect();
                        dims.try_into().expect("a shape is b,m,k,n")
                    })
                    .collect()
            }
            "--all-shapes" => options.shapes = DEFAULT_SHAPES.to_vec(),
            "--budget-ms" => options.budget = Duration::from_millis(value().parse().unwrap()),
            "--no-backward" => options.backward = false,
            "--no-variants" => options.variants = false,
            "--json" => options.json = Some(value()),
            "--only" => {
                let name = value();
                options.only =
                    Some(Variant::from_name(&name).unwrap_or_else(|| panic!("no variant {name}")));
            }
            other => panic!("unknown option {other}"),
        }
    }
    options
}

/// One measured candidate on one shape.
struct Row {
    shape: [usize; 4],
    candidate: String,
    pass: &'static str,
    ms: Option<f64>,
    first_call_ms: Option<f64>,
    note: String,
}

fn main() {
    let options = options();
    let device = Device::default();
    let name = device
        .identity()
        .map(|identity| format!("{} ({})", identity.name, identity.fingerprint))
        .unwrap_or_else(|| format!("{device:?}"));
    let dtype = options.dtype;
    println!("# fmar benchmark: {dtype:?} on {name}");
    if !device.supports_dtype(dtype) {
        println!("{dtype:?} is not supported on this device; nothing to measure.");
        return;
    }
    let mut rows = Vec::new();
    println!();
    println!(
        "| shape (b,m,k,n) | dtype | pass | candidate | ms | TFLOP/s | vs reference | first call ms | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &shape in &options.shapes {
        let [b, m, k, n] = shape;
        let random = |dims: Vec<usize>| {
            Tensor::<3>::random(dims, Distribution::Uniform(-1.0, 1.0), (&device, dtype))
        };
        let lhs = random(vec![b, m, k]);
        let rhs = random(vec![b, k, n]);
        let bias = Tensor::<1>::random([n], Distribution::Uniform(-1.0, 1.0), (&device, dtype));
        let forward = |reference: bool| {
            let (lhs, rhs, bias) = (lhs.clone(), rhs.clone(), bias.clone());
            if reference {
                matmul_add_relu_reference_nd(lhs, rhs, bias)
            } else {
                matmul_add_relu_nd(lhs, rhs, bias)
            }
        };

        // Every candidate's output is compared with the reference's: a fast wrong answer is
        // no answer.
        let expected = match options.only {
            Some(_) => {
                force_variant(Some(Variant::Tiled));
                let out = forward(false).into_data().convert::<f64>();
                force_variant(None);
                out
            }
            None => forward(true).into_data().convert::<f64>(),
        };
        let mut measure = |candidate: String, reference: bool, forced: Option<Variant>| {
            eprintln!("{shape:?} forward {candidate} ...");
            force_variant(forced);
            let first = Instant::now();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let out = forward(reference);
                device.sync().expect("sync");
                out
            }));
            let first_call = first.elapsed();
            let (ms, note) = match result {
                Err(_) => (None, "failed".to_string()),
                Ok(out) => {
                    let error = relative_error(out.into_data().convert::<f64>(), &expected);
                    let ran = (!reference).then(last_launched_variant).flatten();
                    let note = match (forced, ran) {
                        (Some(forced), Some(ran)) if forced != ran => {
                            format!("unavailable here; {ran} ran instead")
                        }
                        (None, Some(ran)) => format!("ran {ran}; rel. err {error:.1e}"),
                        _ => format!("rel. err {error:.1e}"),
                    };
                    let skip = note.starts_with("unavailable");
                    let ms = (!skip).then(|| time(&device, options.budget, || forward(reference)));
                    (ms, note)
                }
            };
            rows.push(Row {
                shape,
                candidate,
                pass: "forward",
                ms,
                first_call_ms: Some(first_call.as_secs_f64() * 1e3),
                note,
            });
            print_row(dtype, &rows, rows.len() - 1);
        };

        if let Some(variant) = options.only {
            measure(format!("fmar {variant}"), false, Some(variant));
            force_variant(None);
            continue;
        }
        measure("burn reference".into(), true, None);
        measure("fmar".into(), false, None);
        if options.variants {
            for variant in Variant::ALL {
                measure(format!("fmar {variant}"), false, Some(variant));
            }
        }
        force_variant(None);

        if options.backward {
            for (candidate, reference) in [("burn reference", true), ("fmar", false)] {
                let ad = device.clone().autodiff();
                let step = || {
                    let lhs = lhs.clone().autodiff().require_grad();
                    let rhs = rhs.clone().autodiff().require_grad();
                    let bias = bias.clone().autodiff().require_grad();
                    let out = if reference {
                        matmul_add_relu_reference_nd(lhs.clone(), rhs.clone(), bias.clone())
                    } else {
                        matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone())
                    };
                    let grads = out.backward();
                    [
                        lhs.grad(&grads),
                        rhs.grad(&grads),
                        bias.grad(&grads).map(|g| g.unsqueeze()),
                    ]
                };
                let _ = &ad;
                eprintln!("{shape:?} forward+backward {candidate} ...");
                let first = Instant::now();
                let _warm = step();
                device.sync().expect("sync");
                let first_call = first.elapsed();
                let ms = time(&device, options.budget, step);
                rows.push(Row {
                    shape,
                    candidate: candidate.into(),
                    pass: "forward+backward",
                    ms: Some(ms),
                    first_call_ms: Some(first_call.as_secs_f64() * 1e3),
                    note: String::new(),
                });
                print_row(dtype, &rows, rows.len() - 1);
            }
        }
        eprintln!("done {shape:?}");
        // Written after every shape, so a later shape that hangs loses nothing before it.
        if let Some(path) = &options.json {
            std::fs::write(path, json(dtype, &name, &rows)).expect("write json");
        }
    }
}

/// `||a - b|| / ||b||`.
fn relative_error(a: burn::tensor::TensorData, b: &burn::tensor::TensorData) -> f64 {
    let a = a.try_to_vec::<f64>().expect("f64");
    let b = b.try_to_vec::<f64>().expect("f64");
    let diff: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// Median milliseconds per call of `f`, over batches of back-to-back calls synchronised with
/// the device, within about `budget`. Results stay alive until the sync: Fusion skips work
/// whose result is dropped unread.
fn time<T>(device: &Device, budget: Duration, mut f: impl FnMut() -> T) -> f64 {
    // Warm up and size the batches from one call.
    let start = Instant::now();
    let kept = f();
    device.sync().expect("sync");
    drop(kept);
    let one = start.elapsed().max(Duration::from_micros(1));
    let per_batch = ((budget.as_secs_f64() / 10.0) / one.as_secs_f64()).clamp(1.0, 200.0) as usize;
    let batches =
        ((budget.as_secs_f64() / (one.as_secs_f64() * per_batch as f64)) as usize).clamp(3, 15);
    let mut samples: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            let kept: Vec<T> = (0..per_batch).map(|_| f()).collect();
            device.sync().expect("sync");
            let elapsed = start.elapsed().as_secs_f64() * 1e3 / per_batch as f64;
            drop(kept);
            elapsed
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn flops(shape: [usize; 4], pass: &str) -> f64 {
    let [b, m, k, n] = shape;
    let forward = 2.0 * (b * m * k * n) as f64;
    if pass == "forward" {
        forward
    } else {
        3.0 * forward
    }
}

/// Prints `rows[index]` as a Markdown row, with its ratio against the reference measured
/// before it on the same shape and pass.
fn print_row(dtype: DType, rows: &[Row], index: usize) {
    let row = &rows[index];
    let reference = rows
        .iter()
        .find(|r| r.shape == row.shape && r.pass == row.pass && r.candidate == "burn reference")
        .and_then(|r| r.ms);
    let [b, m, k, n] = row.shape;
    let (ms, tflops, ratio) = match row.ms {
        Some(ms) => (
            format!("{ms:.4}"),
            format!("{:.3}", flops(row.shape, row.pass) / (ms * 1e-3) / 1e12),
            reference.map_or("-".into(), |r| format!("{:.2}x", r / ms)),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    println!(
        "| {b},{m},{k},{n} | {dtype:?} | {} | {} | {ms} | {tflops} | {ratio} | {} | {} |",
        row.pass,
        row.candidate,
        row.first_call_ms.map_or("-".into(), |t| format!("{t:.1}")),
        row.note
    );
}

fn json(dtype: DType, device: &str, rows: &[Row]) -> String {
    let mut out = format!("{{\"dtype\":\"{dtype:?}\",\"device\":{device:?},\"rows\":[");
    for (i, row) in rows.iter().enumerate() {
        let _ = write!(
            out,
            "{}{{\"shape\":{:?},\"pass\":\"{}\",\"candidate\":\"{}\",\"ms\":{},\"tflops\":{},\"first_call_ms\":{},\"note\":{:?}}}",
            if i > 0 { "," } else { "" },
            row.shape,
            row.pass,
            row.candidate,
            row.ms.map_or("null".into(), |ms| format!("{ms}")),
            row.ms.map_or("null".into(), |ms| format!(
                "{}",
                flops(row.shape, row.pass) / (ms * 1e-3) / 1e12
            )),
            row.first_call_ms.map_or("null".into(), |t| format!("{t}")),
            row.note
        );
    }
    out.push_str("]}\n");
    out
}
