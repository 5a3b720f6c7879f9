//! fmar's benchmark: `relu(lhs @ rhs + bias)` with a `Linear`-style bias `[n]`, forward and
//! forward + backward, measured in one process on one device, for
//!
//! - `fmar`: fmar's own choice of kernel (by measurement with the `autotune` feature, else by
//!   its heuristic);
//! - `fmar <variant>`: each of fmar's kernel variants, forced
//!   ([`Variant::ALL`](fmar::kernel::Variant::ALL), or those `--variants` names);
//! - `burn matmul`: Burn's `lhs.matmul(rhs)` alone, no bias and no ReLU: the ceiling of Burn's
//!   generic path;
//! - `burn fused`: Burn's composition `relu(lhs.matmul(rhs) + bias)`, which Fusion fuses into
//!   its matmul ([`fmar::matmul_add_relu_reference_nd`]).
//!
//! ```text
//! BURN_DEVICE=cuda cargo run --release -p fmar-bench --features cuda-nvrtc,autotune -- \
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
//! with the device once, after untimed warm-up batches that size the timed ones (each about a
//! tenth of the budget, up to 200 calls; the report gives the count), within about
//! `--budget-ms` per candidate. The
//! first call on fresh inputs (which includes compiling the kernels, and autotune where it is
//! on: fmar's for `fmar`, Burn's for its own paths) is timed apart and reported in its own
//! column. TFLOP/s count `2 b m k n` for the forward and
//! three times that for the forward + backward.
//!
//! A forward + backward is seeded with ones of the output's shape (`out.backward()`, the
//! gradients of `out.sum()` without the sum), a tensor Burn's autodiff fills. That fill is timed
//! alone once per shape, from a leaf of the output's shape, and reported with every forward +
//! backward row (`seed_ms`), so that a reader can take it out: PyTorch's figures in the rendered
//! tables are seeded with a ready gradient, `out.backward(g)`. Each row also reports the host's
//! time to issue a call (`issue_us`, the median over batches, before the sync): where it is
//! close to the figure, the host bounds it. It is a floor of the host's cost, since Fusion may
//! run queued operations, and launch their kernels, at the sync.
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
//! - The forward + backward checks its forward output as above and its gradients (those of
//!   `out.sum()`, which the seed of ones gives) against the exact ones given that output's ReLU
//!   mask `M = out > 0`, computed on the CPU in f32 as well: `grad lhs = M @ rhs^T` on the
//!   sampled rows, `grad rhs = lhs^T @ M` on up to 64 strided columns, `grad bias` (the column
//!   sums of `M`) whole; every gradient value is checked finite. Using the candidate's own mask
//!   makes the check exact where the pre-activation is within rounding of 0 and two correct
//!   implementations may take opposite sides of the ReLU's kink. For `burn matmul`, `M` is all
//!   ones.
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

//!
//! # Where each part lives
//!
//! [`cli`] holds the options and the shapes; [`candidates`] what is measured and how each
//! candidate is called; [`measure`] one row: a candidate on fresh inputs, checked, then timed;
//! [`reference`](mod@reference) the inputs and the independent CPU reference with its
//! tolerances; [`timing`](fmar_bench::timing) the clock, shared with `flex_choice`; [`report`]
//! the table rows and the JSON.

mod candidates;
mod cli;
mod measure;
mod reference;
mod report;

use burn::tensor::Device;
use candidates::{Candidate, Pass};
use clap::Parser;
use cli::Args;
use measure::{Bench, Sabotage};
use reference::Problem;
use report::Report;
use std::time::Duration;

fn main() {
    let args = Args::parse();
    let dtype = args.dtype.burn();
    let tolerance = args.tolerance();
    let peak_tflops = args.peak_tflops();
    let shapes = args.shape_list();
    let candidates = match &args.only {
        Some(text) => vec![Candidate::named("only", text)],
        None if !args.variants.is_empty() => {
            let mut chosen = vec![Candidate::Fmar(None)];
            chosen.extend(
                args.variants
                    .iter()
                    .map(|name| Candidate::named("variants", name)),
            );
            chosen.extend([Candidate::BurnMatmul, Candidate::BurnFused]);
            chosen
        }
        None => Candidate::all(!args.no_variants),
    };
    let sabotage = Sabotage {
        fail: args
            .fail_candidate
            .as_deref()
            .map(|t| Candidate::named("fail-candidate", t)),
        corrupt: args
            .corrupt_candidate
            .as_deref()
            .map(|t| Candidate::named("corrupt-candidate", t)),
    };

    let device = Device::default();
    let device_name = device
        .identity()
        .map(|identity| format!("{} ({})", identity.name, identity.fingerprint))
        .unwrap_or_else(|| format!("{device:?}"));
    report::print_header(
        dtype,
        &device_name,
        args.label.as_deref(),
        tolerance,
        peak_tflops,
    );
    if !device.supports_dtype(dtype) {
        println!("{dtype:?} is not supported on this device; nothing to measure.");
        return;
    }
    report::print_table_header();

    let bench = Bench {
        device: device.clone(),
        dtype,
        tolerance,
        peak_tflops,
        budget: Duration::from_millis(args.budget_ms),
        sabotage,
    };
    let passes: &[Pass] = if args.no_backward {
        &[Pass::Forward]
    } else {
        &[Pass::Forward, Pass::ForwardBackward]
    };
    let mut rows = Vec::new();
    for &shape in &shapes {
        eprintln!("{shape:?}: inputs and the CPU reference ...");
        let problem = Problem::new(shape, dtype);
        let mut shape_rows = Vec::new();
        for &candidate in &candidates {
            let naive_too_slow = args.only.is_none() && candidate.is_naive_too_slow(shape);
            for &pass in passes {
                let row = if naive_too_slow {
                    report::skipped(shape, pass, candidate, "naive kernel skipped: m*n*k > 2^30")
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
        if passes.contains(&Pass::ForwardBackward) {
            eprintln!("{shape:?} the backward's seed alone ...");
            let seed_ms = bench
                .seed_time(&problem)
                .map(|timing| timing.per_call.as_secs_f64() * 1e3);
            match seed_ms {
                Some(ms) => eprintln!("{shape:?} the backward's seed alone: {ms:.4} ms"),
                None => eprintln!("{shape:?} the backward's seed alone: not timed"),
            }
            for row in &mut shape_rows {
                if row.pass == Pass::ForwardBackward {
                    row.seed_ms = seed_ms;
                }
            }
        }
        report::compare_with_burn_fused(&mut shape_rows);
        // Forward rows first, then the forward + backward ones, in candidate order.
        shape_rows.sort_by_key(|row| row.pass == Pass::ForwardBackward);
        for row in &shape_rows {
            report::print_row(dtype, row);
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
                checked_against: reference::CHECKED_AGAINST,
                rows: &rows,
            };
            report.write(path);
        }
        eprintln!("done {shape:?}");
    }
}
