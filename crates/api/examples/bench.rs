//! fmar's benchmark: `relu(lhs @ rhs + bias)` with a `Linear`-style bias `[n]`, forward and
//! forward + backward, measured in one process on one device, for
//!
//! - `fmar`: fmar's own choice of kernel (by measurement with the `autotune` feature, else by
//!   its heuristic);
//! - `fmar <variant>`: each of fmar's kernel variants, forced ([`Variant::ALL`]);
//! - `burn matmul`: Burn's `lhs.matmul(rhs)` alone, no bias and no ReLU: the ceiling of Burn's
//!   generic path;
//! - `burn fused`: Burn's composition `relu(lhs.matmul(rhs) + bias)`, which Fusion fuses into
//!   its matmul ([`fmar::matmul_add_relu_reference_nd`]).
//!
//! ```text
//! BURN_DEVICE=cuda cargo run --release --features cuda-nvrtc,autotune --example bench -- \
//!     --dtype bf16 --json bf16.json
//! ```
//!
//! One dtype per process (`--dtype f32|f16|bf16`), so that a device fault in one cannot poison
//! the others. The default shapes `b,m,k,n` are eight: the small `64,128,128,128` and
//! `32,512,64,512`; the small-`m` inference shapes `1,1,4096,4096`, `1,16,4096,4096` and
//! `1,128,4096,4096`; `8,1024,1024,1024`; `1,4096,4096,4096`; and last `1,16384,1024,4096`, on
//! which Burn's fused path has been seen to fail, so that a fault there costs no other figure.
//! `--all-shapes` adds `1,2048,2048,2048` and `4,257,513,129` before that last one. Run
//! with `--help` for every option.
//!
//! # How it measures
//!
//! Each figure is the median over batches of back-to-back launches, each batch synchronised
//! with the device once, after a warm-up call, within about `--budget-ms` per candidate. The
//! first call on fresh inputs (which includes compiling the kernels, and autotune where it is
//! on: fmar's for `fmar`, Burn's for its own paths) is timed apart and reported in its own
//! column. TFLOP/s count `2 b m k n` for the forward and
//! three times that for the forward + backward.
//!
//! # Why a figure can be trusted
//!
//! - Every candidate runs inside `catch_unwind` on inputs uploaded afresh from the same host
//!   data, so a candidate that panics, returns an error, or whose result cannot be read back is
//!   reported `FAILED` with its message and no figure, and cannot hand a broken tensor or a
//!   pending fault to the next one.
//! - Its result is read back and checked before it is timed; a wrong result is `FAILED` and
//!   never timed. The expected values are computed independently, on the CPU by Burn's Flex
//!   backend in f32, from the same inputs upcast to f32 (exactly): not by any candidate and not
//!   under Fusion. Small problems (`b m k n <= 2^26`) are compared whole; larger ones on a strided
//!   sample of up to 64 output rows (up to 4 batches, each row over the full `k` and `n`), which
//!   keeps the reference a small matmul. Every output value is also checked finite.
//! - The error is `max |actual - expected| / max |expected|` over the compared values, against a
//!   tolerance per dtype (`--tolerance` overrides): f32 `1e-3` (room for matmuls that round
//!   their inputs to TF32), f16 `1e-2`, bf16 `3e-2`. The tests' rule in `fmar-tests` bounds
//!   each element instead; a benchmark needs only to tell a right answer from a wrong one.
//! - The forward + backward checks its forward output as above and its gradients of
//!   `out.sum()` against the exact ones given that output's ReLU mask `M = out > 0`, computed on
//!   the CPU in f32 as well: `grad lhs = M @ rhs^T` on the sampled rows, `grad rhs = lhs^T @ M` on
//!   up to 64 strided columns, `grad bias` (the column sums of `M`) whole; every gradient value is
//!   checked finite. Using the candidate's own mask makes the check exact where the
//!   pre-activation is within rounding of 0 and two correct implementations may take opposite
//!   sides of the ReLU's kink. For `burn matmul`, `M` is all ones.
//! - A forced variant that cannot run a problem on the device falls back to fmar's own choice;
//!   such a row is reported `unavailable` (naming what ran instead) and not timed. The `naive`
//!   variant is skipped for `m n k > 2^30`, where it would take most of the run's time (not
//!   with `--only naive`).
//! - A figure above `--peak-tflops` (default 1000 for f16 and bf16, 500 for f32: an H200's dense
//!   tensor-core peaks, rounded up; give another device's) is marked `SUSPECT`: it cannot be
//!   right.
//!
//! The table goes to stdout one shape at a time, as each completes; progress and panic
//! messages go to stderr. With `--json PATH`, the whole report (device, dtype, `--label`, every
//! row) is rewritten after every shape, so a run cut short keeps the figures it had.
//!
//! Two testing switches check the checks: `--fail-candidate NAME` makes a candidate panic on
//! its first call; `--corrupt-candidate NAME` adds 1 to its forward's output and, in the
//! forward + backward, doubles its gradients while leaving its output as it is. Both must come
//! out `FAILED` while the candidates after them run as usual.

mod common;

use burn::tensor::{DType, Device, Tensor, TensorData};
use clap::{Parser, ValueEnum};
use common::{median_time_in_batches, pseudo_random};
use fmar::kernel::{Variant, force_variant, last_launched_variant};
use serde::Serialize;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Small first and the one Burn's fused path has been seen to fail on last, so that a fault
/// costs the fewest figures.
const DEFAULT_SHAPES: [[usize; 4]; 8] = [
    [64, 128, 128, 128],
    [32, 512, 64, 512],
    [1, 1, 4096, 4096],
    [1, 16, 4096, 4096],
    [1, 128, 4096, 4096],
    [8, 1024, 1024, 1024],
    [1, 4096, 4096, 4096],
    [1, 16384, 1024, 4096],
];

/// Added by `--all-shapes`, before the last default shape: a square size between the defaults,
/// and sizes that are multiples of no tile.
const EXTRA_SHAPES: [[usize; 4]; 2] = [[1, 2048, 2048, 2048], [4, 257, 513, 129]];

/// Problems up to this many multiply-adds are compared whole with the reference.
const FULL_CHECK_MACS: usize = 1 << 26;
/// Otherwise the compared sample: batches, output rows in all, and `grad rhs` columns.
const SAMPLE_BATCHES: usize = 4;
const SAMPLE_ROWS: usize = 64;
const SAMPLE_COLUMNS: usize = 64;
/// The naive kernel is skipped above this `m n k`.
const NAIVE_MAX_MNK: usize = 1 << 30;

#[derive(Parser)]
#[command(about = "Benchmarks fmar's relu(lhs @ rhs + bias) against Burn, checking every result")]
struct Args {
    /// The dtype of every operand.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    dtype: Dtype,
    /// Shapes `b,m,k,n`, separated by `;` [default: 64,128,128,128; 32,512,64,512; 1,1,4096,4096;
    /// 1,16,4096,4096; 1,128,4096,4096; 8,1024,1024,1024; 1,4096,4096,4096; 1,16384,1024,4096]
    #[arg(long, value_delimiter = ';', value_parser = parse_shape)]
    shapes: Vec<[usize; 4]>,
    /// Two more shapes after the defaults' first seven: `1,2048,2048,2048` and `4,257,513,129`.
    #[arg(long, conflicts_with = "shapes")]
    all_shapes: bool,
    /// Time spent measuring each candidate, in milliseconds.
    #[arg(long, default_value_t = 600)]
    budget_ms: u64,
    /// Measure the forward only.
    #[arg(long)]
    no_backward: bool,
    /// Skip the forced variants: fmar's own choice and Burn's two paths only.
    #[arg(long)]
    no_variants: bool,
    /// Write the report as JSON to this file, rewritten after every shape.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Measure only this candidate: a variant name (`tiled`, ...), `fmar`, `fmar <variant>`,
    /// `burn-matmul` or `burn-fused`.
    #[arg(long, value_name = "CANDIDATE")]
    only: Option<String>,
    /// TFLOP/s above which a figure is marked SUSPECT (default: 1000 for f16 and bf16, 500 for
    /// f32).
    #[arg(long)]
    peak_tflops: Option<f64>,
    /// The largest accepted `max |actual - expected| / max |expected|` (default: 1e-3 for f32,
    /// 1e-2 for f16, 3e-2 for bf16).
    #[arg(long)]
    tolerance: Option<f64>,
    /// Free text stored in the report and printed in its header: a date, a commit.
    #[arg(long)]
    label: Option<String>,
    /// Testing switch: make this candidate panic on its first call.
    #[arg(long, value_name = "CANDIDATE")]
    fail_candidate: Option<String>,
    /// Testing switch: add 1 to this candidate's forward output, and double its gradients in
    /// the forward + backward (its output unchanged there).
    #[arg(long, value_name = "CANDIDATE")]
    corrupt_candidate: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    /// As `--dtype` spells it, and the report records it.
    fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }

    fn burn(self) -> DType {
        match self {
            Dtype::F32 => DType::F32,
            Dtype::F16 => DType::F16,
            Dtype::Bf16 => DType::BF16,
        }
    }

    fn default_tolerance(self) -> f64 {
        match self {
            Dtype::F32 => 1e-3,
            Dtype::F16 => 1e-2,
            Dtype::Bf16 => 3e-2,
        }
    }

    fn default_peak_tflops(self) -> f64 {
        match self {
            Dtype::F32 => 500.0,
            Dtype::F16 | Dtype::Bf16 => 1000.0,
        }
    }
}

fn parse_shape(text: &str) -> Result<[usize; 4], String> {
    let dims = text
        .split(',')
        .map(|dim| {
            dim.trim()
                .parse::<usize>()
                .map_err(|e| format!("{dim:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    dims.try_into()
        .map_err(|dims: Vec<usize>| format!("a shape is b,m,k,n; got {} dims", dims.len()))
}

/// What runs `relu(lhs @ rhs + bias)` (or, for `BurnMatmul`, `lhs @ rhs`).
#[derive(Clone, Copy, PartialEq)]
enum Candidate {
    /// fmar, with this variant forced; `None`: fmar's own choice.
    Fmar(Option<Variant>),
    /// Burn's `lhs.matmul(rhs)` alone.
    BurnMatmul,
    /// Burn's composition, fused by Fusion.
    BurnFused,
}

impl Candidate {
    /// The order of a shape's rows: fmar first, Burn's fused path last (its fault on the largest
    /// shape poisons the device for whatever follows).
    fn all(variants: bool) -> Vec<Candidate> {
        let mut all = vec![Candidate::Fmar(None)];
        if variants {
            all.extend(
                Variant::ALL
                    .iter()
                    .map(|&variant| Candidate::Fmar(Some(variant))),
            );
        }
        all.extend([Candidate::BurnMatmul, Candidate::BurnFused]);
        all
    }

    fn name(self) -> String {
        match self {
            Candidate::Fmar(None) => "fmar".into(),
            Candidate::Fmar(Some(variant)) => format!("fmar {variant}"),
            Candidate::BurnMatmul => "burn matmul".into(),
            Candidate::BurnFused => "burn fused".into(),
        }
    }

    /// Whether `text` names this candidate on the command line: its name, with `-` for spaces
    /// allowed, or a bare variant name.
    fn is_named(self, text: &str) -> bool {
        let text = text.trim().replace('-', " ");
        text == self.name()
            || matches!(self, Candidate::Fmar(Some(variant)) if variant.to_string() == text)
    }

    /// Whether the output carries the bias and the ReLU.
    fn has_epilogue(self) -> bool {
        self != Candidate::BurnMatmul
    }

    fn forced(self) -> Option<Variant> {
        match self {
            Candidate::Fmar(forced) => forced,
            _ => None,
        }
    }

    fn call(self, lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<1>) -> Result<Tensor<3>, String> {
        match self {
            Candidate::Fmar(_) => {
                fmar::try_matmul_add_relu_nd(lhs, rhs, bias).map_err(|error| error.to_string())
            }
            Candidate::BurnMatmul => Ok(lhs.matmul(rhs)),
            Candidate::BurnFused => Ok(fmar::matmul_add_relu_reference_nd(lhs, rhs, bias)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Serialize)]
enum Pass {
    #[serde(rename = "forward")]
    Forward,
    #[serde(rename = "forward+backward")]
    ForwardBackward,
}

impl Pass {
    fn name(self) -> &'static str {
        match self {
            Pass::Forward => "forward",
            Pass::ForwardBackward => "forward+backward",
        }
    }

    fn flops([b, m, k, n]: [usize; 4], pass: Pass) -> f64 {
        let forward = 2.0 * (b * m * k * n) as f64;
        match pass {
            Pass::Forward => forward,
            Pass::ForwardBackward => 3.0 * forward,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    /// Checked and timed.
    Ok,
    /// Checked and timed, but faster than the device's peak: not to be believed.
    Suspect,
    /// Panicked, returned an error, could not be read back, or computed a wrong result.
    Failed,
    /// A forced variant that cannot run here; something else ran. Not timed.
    Unavailable,
    /// Not run.
    Skipped,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Suspect => "SUSPECT",
            Status::Failed => "FAILED",
            Status::Unavailable => "unavailable",
            Status::Skipped => "skipped",
        }
    }
}

/// One candidate on one shape and pass.
#[derive(Serialize)]
struct Row {
    shape: [usize; 4],
    pass: Pass,
    candidate: String,
    status: Status,
    /// Median milliseconds per call; `None` unless checked and timed.
    ms: Option<f64>,
    tflops: Option<f64>,
    /// `burn fused`'s time over this one's, on the same shape and pass.
    speedup_vs_burn_fused: Option<f64>,
    /// The first call on fresh inputs, synchronised: compilation and autotune included.
    first_call_ms: Option<f64>,
    /// The worst `max |actual - expected| / max |expected|` over the compared tensors.
    rel_error: Option<f64>,
    /// The fmar variant that ran, where fmar's kernel ran.
    ran: Option<String>,
    /// Why it failed, was unavailable, skipped or suspect; or what ran instead of a kernel.
    message: Option<String>,
}

/// What `--json` writes.
#[derive(Serialize)]
struct Report<'a> {
    device: &'a str,
    /// As `--dtype` spells it: `f32`, `f16` or `bf16`.
    dtype: &'static str,
    label: Option<&'a str>,
    autotune: bool,
    budget_ms: u64,
    tolerance: f64,
    peak_tflops: f64,
    checked_against: &'static str,
    rows: &'a [Row],
}

const CHECKED_AGAINST: &str = "relu(lhs @ rhs + bias) in f32 on the CPU (Burn's Flex), from the \
    inputs upcast to f32; whole for b*m*k*n <= 2^26, else on up to 64 strided output rows; \
    gradients against the exact ones given the candidate's own ReLU mask";

fn main() {
    let args = Args::parse();
    let dtype = args.dtype.burn();
    let tolerance = args
        .tolerance
        .unwrap_or_else(|| args.dtype.default_tolerance());
    let peak_tflops = args
        .peak_tflops
        .unwrap_or_else(|| args.dtype.default_peak_tflops());
    let shapes = if !args.shapes.is_empty() {
        args.shapes.clone()
    } else if args.all_shapes {
        let (last, first) = DEFAULT_SHAPES.split_last().expect("default shapes");
        [first, &EXTRA_SHAPES, &[*last]].concat()
    } else {
        DEFAULT_SHAPES.to_vec()
    };
    let every_candidate = Candidate::all(true);
    let named = |option: &str, text: &str| {
        every_candidate
            .iter()
            .copied()
            .find(|candidate| candidate.is_named(text))
            .unwrap_or_else(|| {
                let names: Vec<String> = every_candidate.iter().map(|c| c.name()).collect();
                eprintln!("--{option} {text:?} names no candidate; one of {names:?}");
                std::process::exit(2)
            })
    };
    let candidates = match &args.only {
        Some(text) => vec![named("only", text)],
        None => Candidate::all(!args.no_variants),
    };
    let sabotage = Sabotage {
        fail: args
            .fail_candidate
            .as_deref()
            .map(|t| named("fail-candidate", t)),
        corrupt: args
            .corrupt_candidate
            .as_deref()
            .map(|t| named("corrupt-candidate", t)),
    };

    let device = Device::default();
    let device_name = device
        .identity()
        .map(|identity| format!("{} ({})", identity.name, identity.fingerprint))
        .unwrap_or_else(|| format!("{device:?}"));
    println!("# fmar benchmark: {dtype:?} on {device_name}");
    if let Some(label) = &args.label {
        println!();
        println!("{label}");
    }
    println!();
    println!(
        "fmar's choice: {}. Checked against {CHECKED_AGAINST}; tolerance {tolerance:.0e}; \
         SUSPECT above {peak_tflops} TFLOP/s.",
        if cfg!(feature = "autotune") {
            "autotune"
        } else {
            "heuristic (build with --features autotune to measure)"
        }
    );
    println!();
    if !device.supports_dtype(dtype) {
        println!("{dtype:?} is not supported on this device; nothing to measure.");
        return;
    }
    println!(
        "| shape (b,m,k,n) | dtype | pass | candidate | status | ms | TFLOP/s | vs burn fused | first call ms | rel. err | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");

    let bench = Bench {
        device: device.clone(),
        dtype,
        tolerance,
        peak_tflops,
        budget: Duration::from_millis(args.budget_ms),
        sabotage,
    };
    let mut rows: Vec<Row> = Vec::new();
    for &shape in &shapes {
        eprintln!("{shape:?}: inputs and the CPU reference ...");
        let problem = Problem::new(shape, dtype);
        let mut shape_rows = Vec::new();
        for &candidate in &candidates {
            let naive_too_slow = args.only.is_none()
                && candidate
                    .forced()
                    .is_some_and(|variant| variant.to_string() == "naive")
                && shape[1] * shape[2] * shape[3] > NAIVE_MAX_MNK;
            let passes: &[Pass] = if args.no_backward {
                &[Pass::Forward]
            } else {
                &[Pass::Forward, Pass::ForwardBackward]
            };
            for &pass in passes {
                let row = if naive_too_slow {
                    skipped(shape, pass, candidate, "naive kernel skipped: m*n*k > 2^30")
                } else {
                    eprintln!("{shape:?} {} {} ...", pass.name(), candidate.name());
                    bench.measure(&problem, candidate, pass)
                };
                eprintln!(
                    "{shape:?} {} {}: {} {}",
                    pass.name(),
                    row.candidate,
                    row.status.label(),
                    row.ms.map_or_else(
                        || row.message.clone().unwrap_or_default(),
                        |ms| format!("{ms:.4} ms")
                    )
                );
                shape_rows.push(row);
            }
        }
        compare_with_burn_fused(&mut shape_rows);
        // Forward rows first, then the forward + backward ones, in candidate order.
        shape_rows.sort_by_key(|row| row.pass == Pass::ForwardBackward);
        for row in &shape_rows {
            print_row(dtype, row);
        }
        rows.extend(shape_rows);
        if let Some(path) = &args.json {
            let report = Report {
                device: &device_name,
                dtype: args.dtype.name(),
                label: args.label.as_deref(),
                autotune: cfg!(feature = "autotune"),
                budget_ms: args.budget_ms,
                tolerance,
                peak_tflops,
                checked_against: CHECKED_AGAINST,
                rows: &rows,
            };
            let text = serde_json::to_string_pretty(&report).expect("the report serialises");
            if let Err(error) = std::fs::write(path, text + "\n") {
                eprintln!("could not write {}: {error}", path.display());
            }
        }
        eprintln!("done {shape:?}");
    }
}

/// The testing switches: which candidate to break, and how.
struct Sabotage {
    fail: Option<Candidate>,
    corrupt: Option<Candidate>,
}

/// One process's settings.
struct Bench {
    device: Device,
    dtype: DType,
    tolerance: f64,
    peak_tflops: f64,
    budget: Duration,
    sabotage: Sabotage,
}

/// What a candidate produced before it was timed.
struct Checked {
    first_call: Duration,
    /// The worst of its compared tensors.
    deviation: Deviation,
    /// Whether fmar's kernel ran, and which variant last.
    kernel_ran: bool,
    ran: Option<String>,
}

impl Bench {
    /// One row: the candidate run on fresh inputs, checked, then timed, all inside
    /// `catch_unwind`.
    fn measure(&self, problem: &Problem, candidate: Candidate, pass: Pass) -> Row {
        force_variant(candidate.forced());
        let mut first: Option<Checked> = None;
        // `Ok(Ok(time))`: checked and timed; `Ok(Err(why))`: unavailable; `Err(why)`: failed.
        let outcome = catch_unwind(AssertUnwindSafe(
            || -> Result<Result<Duration, String>, String> {
                let (lhs, rhs, bias) = problem.upload(&self.device, self.dtype);
                self.device
                    .sync()
                    .map_err(|error| format!("uploading the inputs: {error:?}"))?;
                let checked = match pass {
                    Pass::Forward => self.check_forward(problem, candidate, &lhs, &rhs, &bias)?,
                    Pass::ForwardBackward => {
                        self.check_backward(problem, candidate, &lhs, &rhs, &bias)?
                    }
                };
                let deviation = checked.deviation.clone();
                let unavailable = unavailable(candidate, &checked);
                first = Some(checked);
                if deviation.rel_error.is_nan() || deviation.rel_error > self.tolerance {
                    return Err(format!(
                        "wrong {}: rel. err {:.2e} > tolerance {:.0e}",
                        deviation.of, deviation.rel_error, self.tolerance
                    ));
                }
                if let Some(why) = unavailable {
                    return Ok(Err(why));
                }
                let time = match pass {
                    Pass::Forward => median_time_in_batches(&self.device, self.budget, || {
                        self.call(candidate, pass, lhs.clone(), rhs.clone(), bias.clone())
                            .unwrap_or_else(|error| panic!("{error}"))
                    }),
                    Pass::ForwardBackward => {
                        median_time_in_batches(&self.device, self.budget, || {
                            self.step(candidate, &lhs, &rhs, &bias)
                                .unwrap_or_else(|error| panic!("{error}"))
                        })
                    }
                };
                Ok(Ok(time))
            },
        ))
        .unwrap_or_else(|payload| Err(format!("panicked: {}", panic_message(&*payload))));
        force_variant(None);
        // Whatever the candidate left queued runs now, so that its fault surfaces here and not
        // in the next candidate.
        let _ = catch_unwind(AssertUnwindSafe(|| self.device.sync()));

        let mut row = Row {
            shape: problem.shape,
            pass,
            candidate: candidate.name(),
            status: Status::Ok,
            ms: None,
            tflops: None,
            speedup_vs_burn_fused: None,
            first_call_ms: first
                .as_ref()
                .map(|first| first.first_call.as_secs_f64() * 1e3),
            rel_error: first
                .as_ref()
                .map(|first| first.deviation.rel_error)
                .filter(|error| error.is_finite()),
            ran: first.as_ref().and_then(|first| first.ran.clone()),
            message: None,
        };
        match outcome {
            Err(error) => {
                row.status = Status::Failed;
                row.message = Some(error);
            }
            Ok(Err(unavailable)) => {
                row.status = Status::Unavailable;
                row.message = Some(unavailable);
            }
            Ok(Ok(time)) => {
                let ms = time.as_secs_f64() * 1e3;
                let tflops = Pass::flops(problem.shape, pass) / time.as_secs_f64() / 1e12;
                row.ms = Some(ms);
                row.tflops = Some(tflops);
                if candidate == Candidate::Fmar(None)
                    && first.as_ref().is_some_and(|f| f.kernel_ran)
                {
                    // After the timed calls: the variant autotune settled on.
                    row.ran = last_launched_variant().map(|variant| variant.to_string());
                }
                if candidate == Candidate::Fmar(None)
                    && first.as_ref().is_some_and(|f| !f.kernel_ran)
                {
                    row.message =
                        Some("no fmar kernel on this device: composed from its ops".into());
                }
                if tflops > self.peak_tflops {
                    row.status = Status::Suspect;
                    row.message = Some(format!(
                        "{} TFLOP/s is above the peak of {} TFLOP/s",
                        format_tflops(tflops),
                        self.peak_tflops
                    ));
                }
            }
        }
        row
    }

    /// The candidate's forward, with the testing switches applied.
    fn call(
        &self,
        candidate: Candidate,
        pass: Pass,
        lhs: Tensor<3>,
        rhs: Tensor<3>,
        bias: Tensor<1>,
    ) -> Result<Tensor<3>, String> {
        if self.sabotage.fail == Some(candidate) {
            panic!("injected failure (--fail-candidate)");
        }
        let out = candidate.call(lhs, rhs, bias)?;
        if self.sabotage.corrupt != Some(candidate) {
            return Ok(out);
        }
        Ok(match pass {
            Pass::Forward => out + 1.0,
            // `2 out - out` is `out` exactly, but its gradient is twice `out`'s.
            Pass::ForwardBackward => out.clone() * 2.0 - out.detach(),
        })
    }

    /// One forward + backward of `out.sum()` from fresh leaves over the uploaded inputs.
    fn step(
        &self,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Step, String> {
        let lhs = lhs.clone().autodiff().require_grad();
        let rhs = rhs.clone().autodiff().require_grad();
        let bias = bias.clone().autodiff().require_grad();
        let out = self.call(
            candidate,
            Pass::ForwardBackward,
            lhs.clone(),
            rhs.clone(),
            bias.clone(),
        )?;
        let grads = out.clone().sum().backward();
        let missing = |what: &str| format!("no gradient for {what}");
        Ok(Step {
            out: out.inner(),
            lhs: lhs.grad(&grads).ok_or_else(|| missing("lhs"))?,
            rhs: rhs.grad(&grads).ok_or_else(|| missing("rhs"))?,
            bias: bias.grad(&grads),
        })
    }

    /// Runs `call` once on fresh inputs and waits for the device: its result, the time it took
    /// (compilation and autotune included), and whether fmar's kernel ran.
    fn first_call<T>(
        &self,
        call: impl FnOnce() -> Result<T, String>,
    ) -> Result<(T, Duration, bool), String> {
        let launches = fmar::diagnostics::kernel_launches();
        let start = Instant::now();
        let value = call()?;
        self.device
            .sync()
            .map_err(|error| format!("executing: {error:?}"))?;
        let elapsed = start.elapsed();
        Ok((
            value,
            elapsed,
            fmar::diagnostics::kernel_launches() > launches,
        ))
    }

    fn check_forward(
        &self,
        problem: &Problem,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Checked, String> {
        let (out, first_call, kernel_ran) = self.first_call(|| {
            self.call(
                candidate,
                Pass::Forward,
                lhs.clone(),
                rhs.clone(),
                bias.clone(),
            )
        })?;
        let out = read_back("output", out)?;
        Ok(Checked {
            first_call,
            deviation: problem.check_output(&out, candidate.has_epilogue()),
            kernel_ran,
            ran: ran(candidate, kernel_ran),
        })
    }

    fn check_backward(
        &self,
        problem: &Problem,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Checked, String> {
        let (step, first_call, kernel_ran) =
            self.first_call(|| self.step(candidate, lhs, rhs, bias))?;
        let out = read_back("output", step.out)?;
        let forward = problem.check_output(&out, candidate.has_epilogue());
        let grads = Gradients {
            lhs: read_back("grad lhs", step.lhs)?,
            rhs: read_back("grad rhs", step.rhs)?,
            bias: match (candidate.has_epilogue(), step.bias) {
                (true, Some(bias)) => Some(read_back("grad bias", bias)?),
                (true, None) => return Err("no gradient for bias".into()),
                (false, _) => None,
            },
        };
        let gradients = problem.check_gradients(&out, &grads, candidate);
        Ok(Checked {
            first_call,
            deviation: forward.worst(gradients),
            kernel_ran,
            ran: ran(candidate, kernel_ran),
        })
    }
}

/// What one forward + backward step keeps alive until the device is synchronised.
struct Step {
    out: Tensor<3>,
    lhs: Tensor<3>,
    rhs: Tensor<3>,
    bias: Option<Tensor<1>>,
}

/// A step's gradients, read back.
struct Gradients {
    lhs: Vec<f32>,
    rhs: Vec<f32>,
    bias: Option<Vec<f32>>,
}

/// The variant that ran, for fmar candidates whose kernel ran.
fn ran(candidate: Candidate, kernel_ran: bool) -> Option<String> {
    let fmar = matches!(candidate, Candidate::Fmar(_));
    (fmar && kernel_ran)
        .then(last_launched_variant)
        .flatten()
        .map(|variant| variant.to_string())
}

/// Why a forced variant's row is not its own, if it is not: fmar fell back to its own choice,
/// or (on the CPU) to a composition without a kernel.
fn unavailable(candidate: Candidate, checked: &Checked) -> Option<String> {
    let forced = candidate.forced()?.to_string();
    match &checked.ran {
        _ if !checked.kernel_ran => Some("fmar's kernel does not run on this device".into()),
        Some(ran) if *ran != forced => Some(format!("unavailable here; {ran} ran instead")),
        _ => None,
    }
}

fn read_back<const D: usize>(what: &str, tensor: Tensor<D>) -> Result<Vec<f32>, String> {
    tensor
        .try_into_data()
        .map_err(|error| format!("reading back {what}: {error:?}"))?
        .try_into_vec_as::<f32>()
        .map_err(|error| format!("converting {what} to f32: {error:?}"))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|message| message.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

fn skipped(shape: [usize; 4], pass: Pass, candidate: Candidate, why: &str) -> Row {
    Row {
        shape,
        pass,
        candidate: candidate.name(),
        status: Status::Skipped,
        ms: None,
        tflops: None,
        speedup_vs_burn_fused: None,
        first_call_ms: None,
        rel_error: None,
        ran: None,
        message: Some(why.into()),
    }
}

/// Fills each row's speed-up over `burn fused` on the same pass.
fn compare_with_burn_fused(rows: &mut [Row]) {
    let burn_fused = Candidate::BurnFused.name();
    let reference = |rows: &[Row], pass: Pass| {
        rows.iter()
            .find(|row| row.pass == pass && row.candidate == burn_fused)
            .and_then(|row| row.ms)
    };
    let forward = reference(rows, Pass::Forward);
    let backward = reference(rows, Pass::ForwardBackward);
    for row in rows {
        let reference = match row.pass {
            Pass::Forward => forward,
            Pass::ForwardBackward => backward,
        };
        row.speedup_vs_burn_fused = reference.zip(row.ms).map(|(reference, ms)| reference / ms);
    }
}

/// Three decimals, or three significant digits where that would show only zeros (the small
/// shapes).
fn format_tflops(tflops: f64) -> String {
    if tflops >= 0.1 {
        format!("{tflops:.3}")
    } else {
        format!("{tflops:.2e}")
    }
}

fn print_row(dtype: DType, row: &Row) {
    let [b, m, k, n] = row.shape;
    let number = |value: Option<f64>, digits: usize| {
        value.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
    };
    let note = match (&row.message, &row.ran) {
        (Some(message), _) => message.clone(),
        (None, Some(ran)) if row.candidate == Candidate::Fmar(None).name() => format!("ran {ran}"),
        _ => String::new(),
    };
    // One table row: no newlines, no column separators, and not a page of backtrace.
    let mut note = note.replace('\n', " ").replace('|', "\\|");
    if note.chars().count() > 160 {
        note = note.chars().take(157).collect::<String>() + "...";
    }
    println!(
        "| {b},{m},{k},{n} | {dtype:?} | {} | {} | {} | {} | {} | {} | {} | {} | {note} |",
        row.pass.name(),
        row.candidate,
        row.status.label(),
        number(row.ms, 4),
        row.tflops.map_or_else(|| "-".to_string(), format_tflops),
        row.speedup_vs_burn_fused
            .map_or_else(|| "-".to_string(), |s| format!("{s:.2}x")),
        number(row.first_call_ms, 1),
        row.rel_error
            .map_or_else(|| "-".to_string(), |e| format!("{e:.1e}")),
    );
}

/// One shape's inputs on the host (uploaded afresh for every candidate) and the independent
/// reference for the compared part of the output.
struct Problem {
    shape: [usize; 4],
    /// In the benchmark's dtype.
    lhs: TensorData,
    rhs: TensorData,
    bias: TensorData,
    /// The same values upcast to f32 (exact).
    lhs_f32: Vec<f32>,
    rhs_f32: Vec<f32>,
    bias_f32: Vec<f32>,
    sample: Sample,
    /// `lhs @ rhs` on the sampled rows, `[batches, rows, n]`, without bias or ReLU.
    product: Vec<f32>,
}

/// The compared part of a problem: every index when it is small, else strided ones.
struct Sample {
    batches: Vec<usize>,
    rows: Vec<usize>,
    columns: Vec<usize>,
}

/// `count` indices spread evenly over `0..len`, first and last included; all of them when
/// `len <= count`.
fn strided(len: usize, count: usize) -> Vec<usize> {
    if len <= count {
        (0..len).collect()
    } else if count <= 1 {
        vec![0]
    } else {
        (0..count).map(|i| i * (len - 1) / (count - 1)).collect()
    }
}

impl Sample {
    fn new([b, m, k, n]: [usize; 4]) -> Self {
        if b * m * k * n <= FULL_CHECK_MACS {
            return Self {
                batches: (0..b).collect(),
                rows: (0..m).collect(),
                columns: (0..n).collect(),
            };
        }
        let batches = strided(b, SAMPLE_BATCHES);
        let rows = strided(m, (SAMPLE_ROWS / batches.len().max(1)).max(1));
        Self {
            batches,
            rows,
            columns: strided(n, SAMPLE_COLUMNS),
        }
    }
}

impl Problem {
    fn new(shape: [usize; 4], dtype: DType) -> Self {
        let [b, m, k, n] = shape;
        // Uniform in [-1, 1), rounded to the dtype once, here.
        let data = |len: usize, seed: u64, dims: Vec<usize>| {
            let values: Vec<f32> = pseudo_random(len, seed).iter().map(|v| 2.0 * v).collect();
            TensorData::new(values, dims).convert_dtype(dtype)
        };
        let lhs = data(b * m * k, 1, vec![b, m, k]);
        let rhs = data(b * k * n, 2, vec![b, k, n]);
        let bias = data(n, 3, vec![n]);
        let upcast = |data: &TensorData| {
            data.clone()
                .try_into_vec_as::<f32>()
                .expect("float data converts to f32")
        };
        let (lhs_f32, rhs_f32, bias_f32) = (upcast(&lhs), upcast(&rhs), upcast(&bias));
        let sample = Sample::new(shape);
        let lhs_rows = gather_rows(&lhs_f32, [b, m, k], &sample.batches, &sample.rows);
        let rhs_batches = gather_batches(&rhs_f32, k * n, &sample.batches);
        let (sb, sr) = (sample.batches.len(), sample.rows.len());
        let product = cpu_matmul(
            (lhs_rows, [sb, sr, k], false),
            (rhs_batches, [sb, k, n], false),
        );
        Self {
            shape,
            lhs,
            rhs,
            bias,
            lhs_f32,
            rhs_f32,
            bias_f32,
            sample,
            product,
        }
    }

    fn upload(&self, device: &Device, dtype: DType) -> (Tensor<3>, Tensor<3>, Tensor<1>) {
        (
            Tensor::from_data(self.lhs.clone(), (device, dtype)),
            Tensor::from_data(self.rhs.clone(), (device, dtype)),
            Tensor::from_data(self.bias.clone(), (device, dtype)),
        )
    }

    /// How far a candidate's output `[b, m, n]` is from the reference, `relu(lhs @ rhs + bias)`
    /// (`lhs @ rhs` without the epilogue), on the sampled rows; infinitely far when any of its
    /// values is not finite.
    fn check_output(&self, out: &[f32], epilogue: bool) -> Deviation {
        let [b, m, _, n] = self.shape;
        if let Some(bad) = not_finite("output", out, b * m * n) {
            return bad;
        }
        let mut pairs = Vec::with_capacity(self.product.len());
        let mut expected = self.product.iter();
        for &batch in &self.sample.batches {
            for &row in &self.sample.rows {
                let start = (batch * m + row) * n;
                for (j, &actual) in out[start..start + n].iter().enumerate() {
                    let product = *expected.next().expect("one product per sampled value");
                    let value = if epilogue {
                        (product + self.bias_f32[j]).max(0.0)
                    } else {
                        product
                    };
                    pairs.push((actual, value));
                }
            }
        }
        Deviation::of("output", &pairs)
    }

    /// How far a candidate's gradients of `out.sum()` are from the exact ones given the ReLU
    /// mask of its output `out` (all ones for `burn matmul`): the worst of the three.
    fn check_gradients(&self, out: &[f32], grads: &Gradients, candidate: Candidate) -> Deviation {
        let [b, m, k, n] = self.shape;
        let sample = &self.sample;
        let bad = not_finite("grad lhs", &grads.lhs, b * m * k)
            .or_else(|| not_finite("grad rhs", &grads.rhs, b * k * n))
            .or_else(|| {
                let bias = grads.bias.as_deref()?;
                not_finite("grad bias", bias, n)
            });
        if let Some(bad) = bad {
            return bad;
        }
        let mask: Vec<f32> = if candidate.has_epilogue() {
            out.iter()
                .map(|&v| if v > 0.0 { 1.0 } else { 0.0 })
                .collect()
        } else {
            vec![1.0; out.len()]
        };
        let (sb, sr, sc) = (
            sample.batches.len(),
            sample.rows.len(),
            sample.columns.len(),
        );

        // grad lhs = M @ rhs^T, on the sampled rows.
        let mask_rows = gather_rows(&mask, [b, m, n], &sample.batches, &sample.rows);
        let rhs_batches = gather_batches(&self.rhs_f32, k * n, &sample.batches);
        let expected = cpu_matmul(
            (mask_rows, [sb, sr, n], false),
            (rhs_batches, [sb, k, n], true),
        );
        let actual = gather_rows(&grads.lhs, [b, m, k], &sample.batches, &sample.rows);
        let mut deviation = Deviation::of("grad lhs", &pairs(&actual, &expected));

        // grad rhs = lhs^T @ M, on the sampled columns.
        let lhs_batches = gather_batches(&self.lhs_f32, m * k, &sample.batches);
        let mask_columns = gather_columns(&mask, [b, m, n], &sample.batches, &sample.columns);
        let expected = cpu_matmul(
            (lhs_batches, [sb, m, k], true),
            (mask_columns, [sb, m, sc], false),
        );
        let actual = gather_columns(&grads.rhs, [b, k, n], &sample.batches, &sample.columns);
        deviation = deviation.worst(Deviation::of("grad rhs", &pairs(&actual, &expected)));

        // grad bias = the column sums of M, whole.
        if let Some(grad_bias) = &grads.bias {
            let mut counts = vec![0.0f64; n];
            for row in mask.chunks(n) {
                for (count, &value) in counts.iter_mut().zip(row) {
                    *count += f64::from(value);
                }
            }
            let expected: Vec<f32> = counts.iter().map(|&c| c as f32).collect();
            deviation = deviation.worst(Deviation::of("grad bias", &pairs(grad_bias, &expected)));
        }
        deviation
    }
}

fn pairs(actual: &[f32], expected: &[f32]) -> Vec<(f32, f32)> {
    assert_eq!(
        actual.len(),
        expected.len(),
        "compared slices differ in length"
    );
    actual
        .iter()
        .copied()
        .zip(expected.iter().copied())
        .collect()
}

/// An infinite deviation when `values` has the wrong length or a value that is not finite.
fn not_finite(what: &str, values: &[f32], len: usize) -> Option<Deviation> {
    let of = if values.len() != len {
        format!("{what} ({} values, expected {len})", values.len())
    } else {
        match values.iter().filter(|v| !v.is_finite()).count() {
            0 => return None,
            bad => format!("{what} ({bad} of {len} values not finite)"),
        }
    };
    Some(Deviation {
        of,
        rel_error: f64::INFINITY,
    })
}

/// How far a candidate's tensor is from the reference.
#[derive(Clone)]
struct Deviation {
    /// Which tensor.
    of: String,
    /// `max |actual - expected| / max |expected|` over the compared values.
    rel_error: f64,
}

impl Deviation {
    fn of(what: &str, pairs: &[(f32, f32)]) -> Self {
        let (mut worst, mut scale) = (0.0f64, 0.0f64);
        // Both sides are finite: `not_finite` has checked the candidate's values.
        for &(actual, expected) in pairs {
            worst = worst.max((f64::from(actual) - f64::from(expected)).abs());
            scale = scale.max(f64::from(expected).abs());
        }
        Self {
            of: what.into(),
            rel_error: worst / scale.max(f64::MIN_POSITIVE),
        }
    }

    fn worst(self, other: Self) -> Self {
        if other.rel_error > self.rel_error || other.rel_error.is_nan() {
            other
        } else {
            self
        }
    }
}

/// `tensor[batch, row, ..]` for every sampled batch and row, in that order.
fn gather_rows(
    tensor: &[f32],
    [_, rows, cols]: [usize; 3],
    batches: &[usize],
    sampled_rows: &[usize],
) -> Vec<f32> {
    let mut out = Vec::with_capacity(batches.len() * sampled_rows.len() * cols);
    for &batch in batches {
        for &row in sampled_rows {
            let start = (batch * rows + row) * cols;
            out.extend_from_slice(&tensor[start..start + cols]);
        }
    }
    out
}

/// `tensor[batch, .., column]` for every sampled batch and column: `[batches, rows, columns]`.
fn gather_columns(
    tensor: &[f32],
    [_, rows, cols]: [usize; 3],
    batches: &[usize],
    columns: &[usize],
) -> Vec<f32> {
    let mut out = Vec::with_capacity(batches.len() * rows * columns.len());
    for &batch in batches {
        for row in tensor[batch * rows * cols..(batch + 1) * rows * cols].chunks(cols) {
            out.extend(columns.iter().map(|&column| row[column]));
        }
    }
    out
}

/// The sampled batches of a `[b, ..]` tensor whose batches hold `batch_len` values each.
fn gather_batches(tensor: &[f32], batch_len: usize, batches: &[usize]) -> Vec<f32> {
    batches
        .iter()
        .flat_map(|&batch| &tensor[batch * batch_len..(batch + 1) * batch_len])
        .copied()
        .collect()
}

/// `a @ b` of two `[batch, rows, cols]` f32 arrays, each transposed (its last two dims swapped)
/// where its flag says, on the CPU by Burn's Flex backend: no Fusion, and nothing shared with the
/// device under test.
fn cpu_matmul(
    (a, a_dims, a_transposed): (Vec<f32>, [usize; 3], bool),
    (b, b_dims, b_transposed): (Vec<f32>, [usize; 3], bool),
) -> Vec<f32> {
    let cpu = Device::flex();
    let tensor = |values: Vec<f32>, dims: [usize; 3], transposed: bool| {
        let tensor = Tensor::<3>::from_data(TensorData::new(values, dims), (&cpu, DType::F32));
        if transposed {
            tensor.swap_dims(1, 2)
        } else {
            tensor
        }
    };
    tensor(a, a_dims, a_transposed)
        .matmul(tensor(b, b_dims, b_transposed))
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("f32 values")
}
