//! One training step of a multilayer perceptron, fmar's [`FusedMlp`] against the same model in
//! Burn's `Linear` + `relu` (the same weights), on Burn's default device: the device memory each
//! keeps between forward and backward, and the step's time.
//!
//! ```text
//! BURN_DEVICE=cuda cargo run --release -p fmar-bench --features cuda-nvrtc,autotune \
//!     --bin mlp_step -- --dtype bf16 --rows 4096 --width 4096 --layers 4
//! ```
//!
//! A step is a forward of `rows x width` inputs through `--layers` hidden layers and a `Linear`
//! head, the loss `mean(out²)`, and its backward (no optimizer: it would be the same for both).
//! Memory is cubecl's count of bytes in use in the device's pools, read with the queue drained:
//!
//! - `kept`: after the forward (the loss computed), less what was in use before it (the model,
//!   the input): what the autodiff graph holds for the backward, activations and all;
//! - `after backward`: with the gradients computed, less the same baseline.
//!
//! Each model runs `--warmup` steps first (compilation, autotune), then `--steps` timed steps,
//! each synchronised; the median is reported. CubeCL devices only. `--json PATH` also writes the
//! figures as JSON, which `render_benchmarks.py --memory` renders.

use burn::nn::{Linear, Relu};
use burn::tensor::{Device, Distribution, FloatDType, Tensor};
use burn_cubecl::cubecl::MemoryScope;
use fmar::{FusedMlp, FusedMlpConfig};
use std::time::{Duration, Instant};

/// The same model in Burn's own layers.
struct BurnMlp {
    hidden: Vec<Linear>,
    head: Linear,
}

impl BurnMlp {
    fn from_fused(model: &FusedMlp) -> Self {
        Self {
            hidden: model.hidden.iter().cloned().map(Linear::from).collect(),
            head: model.head.clone(),
        }
    }

    fn forward(&self, input: Tensor<2>) -> Tensor<2> {
        let hidden = self.hidden.iter().fold(input, |activation, layer| {
            Relu::new().forward(layer.forward(activation))
        });
        self.head.forward(hidden)
    }
}

/// One training step of an MLP, fmar's against Burn's layers.
#[derive(clap::Parser)]
struct Options {
    /// The models' dtype.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    dtype: Dtype,
    /// Input rows (the batch).
    #[arg(long, default_value_t = 4096)]
    rows: usize,
    /// Input features and every layer's width.
    #[arg(long, default_value_t = 4096)]
    width: usize,
    /// Hidden (`Linear` + ReLU) layers before the head.
    #[arg(long, default_value_t = 4)]
    layers: usize,
    /// Untimed steps per model first (compilation, autotune).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed steps per model.
    #[arg(long, default_value_t = 10)]
    steps: usize,
    /// Also write the figures to this JSON file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// One model's figures, as `--json` writes them.
#[derive(serde::Serialize)]
struct ModelFigures {
    model: &'static str,
    kept_for_backward_mib: f64,
    after_backward_mib: f64,
    step_ms: f64,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Dtype {
    F32,
    F16,
    Bf16,
}

fn main() {
    let options = <Options as clap::Parser>::parse();
    let dtype = match options.dtype {
        Dtype::F32 => FloatDType::F32,
        Dtype::F16 => FloatDType::F16,
        Dtype::Bf16 => FloatDType::BF16,
    };
    let mut device = Device::default();
    device
        .configure(dtype)
        .expect("the device takes the dtype as its default");
    let client = match device.as_dispatch().clone().inner() {
        burn::backend::DispatchDevice::Cube(device) => device.client(),
        #[allow(unreachable_patterns)]
        _ => panic!("mlp_step measures a CubeCL device's memory; the default device is not one"),
    };
    let in_use = |device: &Device| {
        device.sync().expect("the device runs its queue");
        client
            .memory_report(MemoryScope::Device)
            .usage()
            .bytes_in_use
    };
    let device = device.autodiff();
    let Options {
        rows,
        width,
        layers,
        ..
    } = options;
    let fused: FusedMlp = FusedMlpConfig::new(width, width, width)
        .with_hidden_layers(layers)
        .init(&device);
    let burn = BurnMlp::from_fused(&fused);
    let input = Tensor::<2>::random([rows, width], Distribution::Default, &device);
    let loss = |out: Tensor<2>| (out.clone() * out).mean();

    println!(
        "device {:?}, dtype {:?}, input {rows} x {width}, {layers} hidden layers of {width} + a \
         Linear head",
        device, dtype
    );
    let mut figures = Vec::new();
    println!("| model | kept for backward (MiB) | after backward (MiB) | step (ms) |");
    println!("|---|---|---|---|");
    let models: [(&str, &dyn Fn(Tensor<2>) -> Tensor<2>); 2] = [
        ("fmar FusedMlp", &|x| fused.forward(x)),
        ("Burn Linear + relu", &|x| burn.forward(x)),
    ];
    for (name, forward) in models {
        let step = || {
            let grads = loss(forward(input.clone())).backward();
            drop(grads);
        };
        for _ in 0..options.warmup {
            step();
        }
        let base = in_use(&device);
        let value = loss(forward(input.clone()));
        let kept = in_use(&device).saturating_sub(base);
        let grads = value.backward();
        let after = in_use(&device).saturating_sub(base);
        drop(grads);

        let mut times: Vec<Duration> = (0..options.steps)
            .map(|_| {
                let start = Instant::now();
                step();
                device.sync().expect("the device runs its queue");
                start.elapsed()
            })
            .collect();
        times.sort();
        let median = times[times.len() / 2];
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let row = ModelFigures {
            model: name,
            kept_for_backward_mib: mib(kept),
            after_backward_mib: mib(after),
            step_ms: median.as_secs_f64() * 1e3,
        };
        println!(
            "| {name} | {:.1} | {:.1} | {:.3} |",
            row.kept_for_backward_mib, row.after_backward_mib, row.step_ms
        );
        figures.push(row);
    }
    if let Some(path) = &options.json {
        let report = serde_json::json!({
            "device": format!("{device:?}"),
            "dtype": format!("{:?}", options.dtype).to_lowercase(),
            "rows": rows,
            "width": width,
            "layers": layers,
            "models": figures,
        });
        let text = serde_json::to_string_pretty(&report).expect("the figures serialise");
        if let Err(error) = std::fs::write(path, text + "\n") {
            eprintln!("could not write {}: {error}", path.display());
        }
    }
}
