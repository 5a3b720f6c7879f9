//! Trains the same small MLP twice on a real dataset, once built from fmar's `FusedLinearRelu`
//! and once from Burn's `Linear` + `relu`, from identical initial weights, data order and
//! optimizer, and compares them.
//!
//! The data is the UCI red wine quality set (1,599 wines, 11 physico-chemical features, quality
//! scores 3 to 8), which ships inside the `linfa-datasets` crate: no download at run time.
//!
//! ```text
//! cargo run --release --example train                       # 40 epochs, writes docs/training-loss.svg
//! cargo run --example train -- --epochs 3 --check           # what CI runs
//! ```
//!
//! Options: `--epochs N`, `--batch N` (64), `--lr X` (3e-3), `--plot PATH`, `--check` (exit
//! with an error unless both models reach the same quality within noise).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData, activation};
use fmar::FusedLinearRelu;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

const FEATURES: usize = 11;
const CLASSES: usize = 6; // quality 3..=8
const HIDDEN: usize = 64;

/// The reference MLP: `Linear` + `relu`, twice, then a linear head.
#[derive(Module, Debug)]
struct ReferenceMlp {
    first: Linear,
    second: Linear,
    head: Linear,
}

/// The same MLP with its hidden layers fused by fmar.
#[derive(Module, Debug)]
struct FusedMlp {
    first: FusedLinearRelu,
    second: FusedLinearRelu,
    head: Linear,
}

impl ReferenceMlp {
    fn new(device: &Device) -> Self {
        Self {
            first: LinearConfig::new(FEATURES, HIDDEN).init(device),
            second: LinearConfig::new(HIDDEN, HIDDEN).init(device),
            head: LinearConfig::new(HIDDEN, CLASSES).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = activation::relu(self.first.forward(x));
        let x = activation::relu(self.second.forward(x));
        self.head.forward(x)
    }
}

impl FusedMlp {
    /// The fused twin of `reference`, with the very same weights.
    fn from_reference(reference: ReferenceMlp) -> Self {
        Self {
            first: reference.first.into(),
            second: reference.second.into(),
            head: reference.head,
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.head
            .forward(self.second.forward(self.first.forward(x)))
    }
}

struct Options {
    epochs: usize,
    batch: usize,
    lr: f64,
    plot: Option<String>,
    check: bool,
}

fn options() -> Options {
    let mut options = Options {
        epochs: 40,
        batch: 64,
        lr: 3e-3,
        plot: Some("docs/training-loss.svg".into()),
        check: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--epochs" => options.epochs = value().parse().expect("--epochs N"),
            "--batch" => options.batch = value().parse().expect("--batch N"),
            "--lr" => options.lr = value().parse().expect("--lr X"),
            "--plot" => options.plot = Some(value()),
            "--no-plot" => options.plot = None,
            "--check" => options.check = true,
            other => panic!("unknown option {other}"),
        }
    }
    options
}

/// Standardized features and class labels, split 80/20 with a fixed shuffle.
struct Data {
    train_x: Vec<f32>,
    train_y: Vec<i64>,
    test_x: Vec<f32>,
    test_y: Vec<i64>,
}

fn load() -> Data {
    let dataset = linfa_datasets::winequality();
    let records = dataset.records();
    let targets = dataset.targets();
    let n = records.nrows();
    // A fixed permutation (a multiplicative step coprime with n) keeps runs comparable.
    let order: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let split = n * 4 / 5;
    let mut mean = [0.0f64; FEATURES];
    let mut std = [0.0f64; FEATURES];
    for &i in &order[..split] {
        for (f, m) in mean.iter_mut().enumerate() {
            *m += records[[i, f]] / split as f64;
        }
    }
    for &i in &order[..split] {
        for (f, s) in std.iter_mut().enumerate() {
            *s += (records[[i, f]] - mean[f]).powi(2) / split as f64;
        }
    }
    let row = |i: usize| -> Vec<f32> {
        (0..FEATURES)
            .map(|f| ((records[[i, f]] - mean[f]) / std[f].sqrt().max(1e-12)) as f32)
            .collect()
    };
    let label = |i: usize| (targets[i] as i64 - 3).clamp(0, CLASSES as i64 - 1);
    let (train, test) = order.split_at(split);
    Data {
        train_x: train.iter().flat_map(|&i| row(i)).collect(),
        train_y: train.iter().map(|&i| label(i)).collect(),
        test_x: test.iter().flat_map(|&i| row(i)).collect(),
        test_y: test.iter().map(|&i| label(i)).collect(),
    }
}

/// One model's training run: loss per epoch, final test loss and accuracy, time per epoch.
struct Report {
    name: &'static str,
    epoch_losses: Vec<f64>,
    test_loss: f64,
    test_accuracy: f64,
    seconds_per_epoch: f64,
}

fn train<M>(
    name: &'static str,
    mut model: M,
    forward: impl Fn(&M, Tensor<2>) -> Tensor<2>,
    data: &Data,
    options: &Options,
    device: &Device,
) -> Report
where
    M: Module,
{
    let mut optimizer = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let samples = data.train_y.len();
    let steps = samples.div_ceil(options.batch);
    let bar = ProgressBar::new((options.epochs * steps) as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>16} [{bar:40}] {pos}/{len} steps, loss {prefix}")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_message(name);
    let mut epoch_losses = Vec::new();
    let mut epoch_seconds = Vec::new();
    for _ in 0..options.epochs {
        let start = Instant::now();
        let mut total = 0.0;
        for step in 0..steps {
            let (from, to) = (
                step * options.batch,
                ((step + 1) * options.batch).min(samples),
            );
            let x = Tensor::<2>::from_data(
                TensorData::new(
                    data.train_x[from * FEATURES..to * FEATURES].to_vec(),
                    [to - from, FEATURES],
                ),
                device,
            );
            let y = Tensor::<1, Int>::from_data(
                TensorData::new(data.train_y[from..to].to_vec(), [to - from]),
                device,
            );
            let loss = loss_fn.forward(forward(&model, x), y);
            let value = loss.clone().into_scalar::<f64>();
            total += value * (to - from) as f64;
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(options.lr, model, grads);
            bar.set_prefix(format!("{value:.4}"));
            bar.inc(1);
        }
        epoch_losses.push(total / samples as f64);
        epoch_seconds.push(start.elapsed().as_secs_f64());
    }
    bar.finish();
    // The median epoch: the first one also compiles every kernel it meets.
    epoch_seconds.sort_by(f64::total_cmp);
    let seconds_per_epoch = epoch_seconds
        .get(epoch_seconds.len() / 2)
        .copied()
        .unwrap_or(0.0);

    let x = Tensor::<2>::from_data(
        TensorData::new(data.test_x.clone(), [data.test_y.len(), FEATURES]),
        device,
    );
    let y = Tensor::<1, Int>::from_data(
        TensorData::new(data.test_y.clone(), [data.test_y.len()]),
        device,
    );
    let logits = forward(&model, x);
    let test_loss = loss_fn
        .forward(logits.clone(), y.clone())
        .into_scalar::<f64>();
    let correct = logits
        .argmax(1)
        .squeeze::<1>()
        .equal(y)
        .int()
        .sum()
        .into_scalar::<i64>();
    Report {
        name,
        epoch_losses,
        test_loss,
        test_accuracy: correct as f64 / data.test_y.len() as f64,
        seconds_per_epoch,
    }
}

fn main() {
    let options = options();
    let choice = fmar::default_device();
    println!("device: {choice}");
    let device = choice.device.autodiff();
    let data = load();
    println!(
        "wine quality: {} training and {} test samples, {FEATURES} features, {CLASSES} classes",
        data.train_y.len(),
        data.test_y.len()
    );

    let reference = ReferenceMlp::new(&device);
    let fused = FusedMlp::from_reference(reference.clone());
    let reports = [
        train(
            "Linear + relu",
            reference,
            ReferenceMlp::forward,
            &data,
            &options,
            &device,
        ),
        train(
            "FusedLinearRelu",
            fused,
            FusedMlp::forward,
            &data,
            &options,
            &device,
        ),
    ];

    println!();
    println!("| model | final train loss | test loss | test accuracy | s / epoch (median) |");
    println!("|---|---|---|---|---|");
    for report in &reports {
        println!(
            "| {} | {:.4} | {:.4} | {:.1}% | {:.3} |",
            report.name,
            report.epoch_losses.last().copied().unwrap_or(f64::NAN),
            report.test_loss,
            report.test_accuracy * 100.0,
            report.seconds_per_epoch
        );
    }
    if let Some(path) = &options.plot {
        std::fs::write(path, svg(&reports)).expect("write the plot");
        println!("loss curves: {path}");
    }
    if options.check {
        // Same weights, data and optimizer: the two runs differ only by kernel rounding, so
        // their losses and accuracies must agree closely.
        let [a, b] = &reports;
        let loss_gap = (a.test_loss - b.test_loss).abs() / a.test_loss;
        let accuracy_gap = (a.test_accuracy - b.test_accuracy).abs();
        println!(
            "check: test-loss gap {:.2e} (relative), accuracy gap {:.3}",
            loss_gap, accuracy_gap
        );
        assert!(
            loss_gap < 0.02,
            "test losses differ by {loss_gap:.3} (relative)"
        );
        assert!(
            accuracy_gap <= 0.02,
            "test accuracies differ by {accuracy_gap:.3}"
        );
        let first_epoch_gap = (a.epoch_losses[0] - b.epoch_losses[0]).abs() / a.epoch_losses[0];
        assert!(
            first_epoch_gap < 1e-3,
            "first-epoch losses differ by {first_epoch_gap:.2e}"
        );
        println!("check: both models reach the same quality");
    }
}

/// The two training-loss curves as a small SVG.
fn svg(reports: &[Report]) -> String {
    let (width, height, margin) = (640.0, 360.0, 48.0);
    let epochs = reports[0].epoch_losses.len().max(2);
    let max = reports
        .iter()
        .flat_map(|r| r.epoch_losses.iter().copied())
        .fold(0.0f64, f64::max)
        * 1.05;
    let min = reports
        .iter()
        .flat_map(|r| r.epoch_losses.iter().copied())
        .fold(f64::INFINITY, f64::min)
        * 0.95;
    let x = |epoch: usize| margin + (width - 2.0 * margin) * epoch as f64 / (epochs - 1) as f64;
    let y = |loss: f64| {
        height - margin - (height - 2.0 * margin) * (loss - min) / (max - min).max(1e-9)
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"20\" text-anchor=\"middle\">Training loss per epoch, red wine quality (same init, data and optimizer)</text>\n\
         <line x1=\"{margin}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{margin}\" y1=\"{margin}\" x2=\"{margin}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n\
         <text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">cross-entropy</text>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max:.3}</text>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{min:.3}</text>\n",
        width / 2.0,
        height - margin,
        width - margin,
        height - margin,
        height - margin,
        width / 2.0,
        height - 12.0,
        height / 2.0,
        height / 2.0,
        margin - 4.0,
        margin + 4.0,
        margin - 4.0,
        height - margin,
    );
    let styles = [("#555555", "6,4"), ("#d62728", "none")];
    for (i, (report, (color, dash))) in reports.iter().zip(styles).enumerate() {
        let points: Vec<String> = report
            .epoch_losses
            .iter()
            .enumerate()
            .map(|(e, &l)| format!("{:.1},{:.1}", x(e), y(l)))
            .collect();
        out += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\" points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{color}\" text-anchor=\"end\">{} (test acc. {:.1}%)</text>\n",
            points.join(" "),
            width - margin,
            margin + 16.0 * (i as f64 + 1.0),
            report.name,
            report.test_accuracy * 100.0
        );
    }
    out + "</svg>\n"
}
