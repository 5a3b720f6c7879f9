//! What a run reports: one row per candidate, shape and pass, printed as a Markdown table as
//! each shape completes, and the whole report as JSON (`--json`), which scripts read.

use crate::candidates::{Candidate, Pass};
use crate::reference::CHECKED_AGAINST;
use burn::tensor::DType;
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
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
    pub fn label(self) -> &'static str {
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
pub struct Row {
    pub shape: [usize; 4],
    pub pass: Pass,
    pub candidate: String,
    pub status: Status,
    /// Median milliseconds per call; `None` unless checked and timed.
    pub ms: Option<f64>,
    pub tflops: Option<f64>,
    /// `burn fused`'s time over this one's, on the same shape and pass.
    pub speedup_vs_burn_fused: Option<f64>,
    /// The first call on fresh inputs, synchronised: compilation and autotune included.
    pub first_call_ms: Option<f64>,
    /// The worst `max |actual - expected| / max |expected|` over the compared tensors.
    pub rel_error: Option<f64>,
    /// The fmar variant that ran, where fmar's kernel ran.
    pub ran: Option<String>,
    /// Forward + backward rows: the backward's seed alone (Burn's autodiff filling a tensor of
    /// ones the output's size), median ms in the same process. `ms` includes it; the operation's
    /// own time is `ms - seed_ms`.
    pub seed_ms: Option<f64>,
    /// Median host time per call to issue a batch of calls, before waiting for the device, in
    /// microseconds: where it is close to `ms`, the host bounds the figure. A floor of the
    /// host's cost: Fusion may run queued operations (and launch their kernels) at the sync.
    pub issue_us: Option<f64>,
    /// Calls per timed batch (each batch synchronised once).
    pub calls_per_batch: Option<usize>,
    /// Why it failed, was unavailable, skipped or suspect; or what ran instead of a kernel.
    pub message: Option<String>,
}

/// What `--json` writes.
#[derive(Serialize)]
pub struct Report<'a> {
    pub device: &'a str,
    /// As `--dtype` spells it: `f32`, `f16` or `bf16`.
    pub dtype: &'static str,
    pub label: Option<&'a str>,
    pub autotune: bool,
    pub budget_ms: u64,
    pub tolerance: f64,
    pub peak_tflops: f64,
    pub checked_against: &'static str,
    pub rows: &'a [Row],
}

impl Report<'_> {
    /// Writes the report as pretty-printed JSON to `path`; a failure is reported on stderr, and
    /// the run goes on.
    pub fn write(&self, path: &Path) {
        let text = serde_json::to_string_pretty(self).expect("the report serialises");
        if let Err(error) = std::fs::write(path, text + "\n") {
            eprintln!("could not write {}: {error}", path.display());
        }
    }
}

/// The report's header on stdout: device, dtype, label, how fmar chooses its kernel, the
/// reference, the tolerance and the SUSPECT threshold.
pub fn print_header(
    dtype: DType,
    device_name: &str,
    label: Option<&str>,
    tolerance: f64,
    peak_tflops: f64,
) {
    println!("# fmar benchmark: {dtype:?} on {device_name}");
    if let Some(label) = label {
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
}

/// The Markdown table's header, printed before the first row.
pub fn print_table_header() {
    println!(
        "| shape (b,m,k,n) | dtype | pass | candidate | status | ms | TFLOP/s | vs burn fused | first call ms | rel. err | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
}

/// A row for a candidate that was not run, and why.
pub fn skipped(shape: [usize; 4], pass: Pass, candidate: Candidate, why: &str) -> Row {
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
        seed_ms: None,
        issue_us: None,
        calls_per_batch: None,
        message: Some(why.into()),
    }
}

/// Fills each row's speed-up over `burn fused` on the same pass.
pub fn compare_with_burn_fused(rows: &mut [Row]) {
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
pub fn format_tflops(tflops: f64) -> String {
    if tflops >= 0.1 {
        format!("{tflops:.3}")
    } else {
        format!("{tflops:.2e}")
    }
}

pub fn print_row(dtype: DType, row: &Row) {
    let [b, m, k, n] = row.shape;
    let number = |value: Option<f64>, digits: usize| {
        value.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
    };
    let mut note = match (&row.message, &row.ran) {
        (Some(message), _) => message.clone(),
        (None, Some(ran)) if row.candidate == Candidate::Fmar(None).name() => format!("ran {ran}"),
        _ => String::new(),
    };
    for (what, value) in [
        ("issued in", row.issue_us.map(|us| format!("{us:.1} us"))),
        (
            "calls per batch",
            row.calls_per_batch.map(|n| n.to_string()),
        ),
        ("seed alone", row.seed_ms.map(|ms| format!("{ms:.4} ms"))),
    ] {
        if let Some(value) = value {
            let separator = if note.is_empty() { "" } else { "; " };
            note = format!("{note}{separator}{what} {value}");
        }
    }
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
