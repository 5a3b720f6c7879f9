//! The command line: the options, the dtype, and the shapes they select.

use burn::tensor::DType;
use clap::{Parser, ValueEnum};
use std::path::PathBuf;

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

#[derive(Parser)]
#[command(about = "Benchmarks fmar's relu(lhs @ rhs + bias) against Burn, checking every result")]
pub struct Args {
    /// The dtype of every operand.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    /// Shapes `b,m,k,n`, separated by `;` [default: 64,128,128,128; 32,512,64,512; 1,1,4096,4096;
    /// 1,16,4096,4096; 1,128,4096,4096; 8,1024,1024,1024; 1,4096,4096,4096; 1,16384,1024,4096]
    #[arg(long, value_delimiter = ';', value_parser = parse_shape)]
    shapes: Vec<[usize; 4]>,
    /// Two more shapes after the defaults' first seven: `1,2048,2048,2048` and `4,257,513,129`.
    #[arg(long, conflicts_with = "shapes")]
    all_shapes: bool,
    /// Time spent measuring each candidate, in milliseconds.
    #[arg(long, default_value_t = 600)]
    pub budget_ms: u64,
    /// Measure the forward only.
    #[arg(long)]
    pub no_backward: bool,
    /// Skip the forced variants: fmar's own choice and Burn's two paths only.
    #[arg(long)]
    pub no_variants: bool,
    /// Force only these variants (names separated by `,`, as `FMAR_KERNEL` spells them), beside
    /// fmar's own choice and Burn's two paths: for instance the Hopper paths alone.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "VARIANT",
        conflicts_with_all = ["no_variants", "only"]
    )]
    pub variants: Vec<String>,
    /// Write the report as JSON to this file, rewritten after every shape.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Measure only this candidate: a variant name (`tiled`, ...), `fmar`, `fmar <variant>`,
    /// `burn-matmul` or `burn-fused`.
    #[arg(long, value_name = "CANDIDATE")]
    pub only: Option<String>,
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
    pub label: Option<String>,
    /// Testing switch: make this candidate panic on its first call.
    #[arg(long, value_name = "CANDIDATE")]
    pub fail_candidate: Option<String>,
    /// Testing switch: add 1 to this candidate's forward output, and double its gradients in
    /// the forward + backward (its output unchanged there).
    #[arg(long, value_name = "CANDIDATE")]
    pub corrupt_candidate: Option<String>,
}

impl Args {
    /// The shapes to measure, in order: `--shapes`, else the defaults (with `--all-shapes`'s two
    /// before the last).
    pub fn shape_list(&self) -> Vec<[usize; 4]> {
        if !self.shapes.is_empty() {
            self.shapes.clone()
        } else if self.all_shapes {
            let (last, first) = DEFAULT_SHAPES.split_last().expect("default shapes");
            [first, &EXTRA_SHAPES, &[*last]].concat()
        } else {
            DEFAULT_SHAPES.to_vec()
        }
    }

    /// `--tolerance`, else the dtype's ([`Dtype::default_tolerance`]).
    pub fn tolerance(&self) -> f64 {
        self.tolerance
            .unwrap_or_else(|| self.dtype.default_tolerance())
    }

    /// `--peak-tflops`, else the dtype's.
    pub fn peak_tflops(&self) -> f64 {
        self.peak_tflops
            .unwrap_or_else(|| self.dtype.default_peak_tflops())
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    /// As `--dtype` spells it, and the report records it.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }

    pub fn burn(self) -> DType {
        match self {
            Dtype::F32 => DType::F32,
            Dtype::F16 => DType::F16,
            Dtype::Bf16 => DType::BF16,
        }
    }

    /// An H200's dense tensor-core peaks, rounded up: no figure above them can be right.
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
