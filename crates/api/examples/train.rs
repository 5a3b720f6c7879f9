//! Trains the same small MLP twice on a real dataset with Burn's `Learner`, once built from
//! fmar's `FusedLinearRelu` and once from Burn's `Linear` + `relu`, from identical initial
//! weights, data order and optimizer, and compares them.
//!
//! The data is the UCI red wine quality set (1,599 wines, 11 physico-chemical features, quality
//! scores 3 to 8), which ships inside the `linfa-datasets` crate: no download at run time. 80% of
//! it trains, the other 20% is the test set, which the `Learner` validates on after every epoch.
//!
//! ```text
//! cargo run --example train                                  # 40 epochs, writes the plot
//! cargo run --example train -- --epochs 3 --check --no-plot  # what CI runs
//! cargo run --example train -- --help                        # all options
//! ```
//!
//! Options: `--epochs N` (40), `--batch N` (64), `--lr X` (3e-3), `--plot PATH`
//! (`docs/training-loss.svg`), `--no-plot`, `--check` (exit with an error unless both models
//! reach the same quality within noise). The device is `fmar::default_device()`'s; set
//! `BURN_DEVICE` (e.g. `wgpu`) to pick another.
//!
//! Each model's checkpoints and metric logs (the `Learner`'s artifacts) go to a fresh directory
//! under the system's temporary directory, printed at start. Progress is one line per epoch, so
//! the example runs the same with or without a terminal.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder, Progress};
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::AdamConfig;
use burn::tensor::{Device, Int, Tensor, TensorData, activation};
use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn::train::metric::{
    AccuracyMetric, LossMetric, MetricDefinition, MetricId, MetricName, NumericEntry,
};
use burn::train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, LearnerModel, SupervisedTraining, TrainOutput,
    TrainStep,
};
use clap::Parser;
use fmar::FusedLinearRelu;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const FEATURES: usize = 11;
const CLASSES: usize = 6; // quality 3..=8
const HIDDEN: usize = 64;

/// Trains an MLP built from `FusedLinearRelu` next to the same MLP built from `Linear` + `relu`
/// (same initial weights, data order and optimizer) on the red wine quality set, and compares
/// their losses and accuracies.
#[derive(Parser, Debug)]
#[command(name = "train")]
struct Options {
    /// Training epochs.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Training batch size.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Where to write the training-loss plot (SVG).
    #[arg(long, default_value = "docs/training-loss.svg")]
    plot: PathBuf,
    /// Do not write the plot.
    #[arg(long, conflicts_with = "plot")]
    no_plot: bool,
    /// Exit with an error unless both models reach the same quality.
    #[arg(long)]
    check: bool,
}

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
    /// The fused twin of `reference`, with the very same weights: `FusedLinearRelu` takes
    /// `Linear`'s record as it is.
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

/// Cross-entropy of `logits` against the quality classes, in the form Burn's classification
/// metrics read.
fn classification(logits: Tensor<2>, quality: Tensor<1, Int>) -> ClassificationOutput {
    let loss = CrossEntropyLossConfig::new()
        .init(&logits.device())
        .forward(logits.clone(), quality.clone());
    ClassificationOutput::new(loss, logits, quality)
}

/// The `Learner`'s steps for both MLPs: they train and validate the same way, only their
/// `forward` differs.
macro_rules! classification_steps {
    ($model:ty) => {
        impl TrainStep for $model {
            type Input = WineBatch;
            type Output = ClassificationOutput;

            fn step(&self, batch: WineBatch) -> TrainOutput<ClassificationOutput> {
                let item = classification(self.forward(batch.features), batch.quality);
                TrainOutput::new(self, item.loss.backward(), item)
            }
        }

        impl InferenceStep for $model {
            type Input = WineBatch;
            type Output = ClassificationOutput;

            fn step(&self, batch: WineBatch) -> ClassificationOutput {
                classification(self.forward(batch.features), batch.quality)
            }
        }
    };
}
classification_steps!(ReferenceMlp);
classification_steps!(FusedMlp);

/// One wine: standardized features and its quality as a class index (quality 3 is class 0).
#[derive(Clone, Debug)]
struct Wine {
    features: [f32; FEATURES],
    quality: i64,
}

#[derive(Clone, Debug)]
struct WineBatch {
    features: Tensor<2>,
    quality: Tensor<1, Int>,
}

struct WineBatcher;

impl Batcher<Wine, WineBatch> for WineBatcher {
    fn batch(&self, wines: Vec<Wine>, device: &Device) -> WineBatch {
        let count = wines.len();
        let features: Vec<f32> = wines.iter().flat_map(|wine| wine.features).collect();
        let quality: Vec<i64> = wines.iter().map(|wine| wine.quality).collect();
        WineBatch {
            features: Tensor::from_data(TensorData::new(features, [count, FEATURES]), device),
            quality: Tensor::from_data(TensorData::new(quality, [count]), device),
        }
    }
}

/// The training and test wines, split 80/20 with a fixed shuffle and standardized with the
/// training split's mean and deviation.
fn load() -> (Vec<Wine>, Vec<Wine>) {
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
    let wine = |i: usize| Wine {
        features: std::array::from_fn(|f| {
            ((records[[i, f]] - mean[f]) / std[f].sqrt().max(1e-12)) as f32
        }),
        quality: (targets[i] as i64 - 3).clamp(0, CLASSES as i64 - 1),
    };
    let (train, test) = order.split_at(split);
    (
        train.iter().map(|&i| wine(i)).collect(),
        test.iter().map(|&i| wine(i)).collect(),
    )
}

/// One epoch of one model, as the `Learner`'s metrics report it at the epoch's end.
#[derive(Clone, Copy, Debug, Default)]
struct Epoch {
    train_loss: f64,
    train_accuracy: f64,
    test_loss: f64,
    test_accuracy: f64,
    seconds: f64,
}

/// The `Learner`'s renderer here: one line per epoch on stdout (no terminal needed, nothing read
/// from stdin), and each epoch's figures kept in `epochs` for the comparison, the check and the
/// plot.
struct EpochLog {
    name: &'static str,
    metric_names: HashMap<MetricId, MetricName>,
    current: Epoch,
    started: Instant,
    epochs: Arc<Mutex<Vec<Epoch>>>,
}

impl EpochLog {
    fn new(name: &'static str, epochs: Arc<Mutex<Vec<Epoch>>>) -> Self {
        Self {
            name,
            metric_names: HashMap::new(),
            current: Epoch::default(),
            started: Instant::now(),
            epochs,
        }
    }

    /// The epoch's final value of a metric (its mean over the split's batches), if `state` is
    /// one, by the metric's name (`Loss`, `Accuracy`); the per-batch updates are skipped.
    fn epoch_value(&self, state: &MetricState) -> Option<(&str, f64)> {
        match state {
            MetricState::Numeric(entry, Some(NumericEntry::Final(value))) => self
                .metric_names
                .get(&entry.metric_id)
                .map(|name| (name.as_str(), *value)),
            _ => None,
        }
    }
}

impl MetricsRendererTraining for EpochLog {
    fn update_train(&mut self, state: MetricState) {
        match self.epoch_value(&state) {
            Some(("Loss", value)) => self.current.train_loss = value,
            Some(("Accuracy", percent)) => self.current.train_accuracy = percent / 100.0,
            _ => {}
        }
    }

    fn update_valid(&mut self, state: MetricState) {
        match self.epoch_value(&state) {
            Some(("Loss", value)) => self.current.test_loss = value,
            Some(("Accuracy", percent)) => self.current.test_accuracy = percent / 100.0,
            _ => {}
        }
    }
}

impl TrainingProgressLogger for EpochLog {
    fn start(&mut self, total_epochs: usize, _: usize, _: Option<usize>, _: Option<&str>) {
        println!("{}: training for {total_epochs} epochs", self.name);
        self.started = Instant::now();
    }

    fn update_epoch(&mut self, epoch: usize) {
        let mut epoch_figures = self.current;
        epoch_figures.seconds = self.started.elapsed().as_secs_f64();
        self.started = Instant::now();
        println!(
            "{:>16} epoch {epoch:>3}: train loss {:.4}, accuracy {:5.1}% | test loss {:.4}, \
             accuracy {:5.1}% | {:.2} s",
            self.name,
            epoch_figures.train_loss,
            epoch_figures.train_accuracy * 100.0,
            epoch_figures.test_loss,
            epoch_figures.test_accuracy * 100.0,
            epoch_figures.seconds,
        );
        self.epochs.lock().expect("epoch log").push(epoch_figures);
    }

    fn start_split(&mut self, _: &str, _: &Progress) {}
    fn update_split(&mut self, _: &Progress) {}
    fn end_split(&mut self, _: &Progress) {}
    fn end(&mut self) {}
    fn log_event_training(&mut self, _: String) {}
}

impl MetricsRendererEvaluation for EpochLog {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}
}

impl EvaluationProgressLogger for EpochLog {
    fn start_global_progress(&mut self, _: usize) {}
    fn start_test(&mut self, _: &str, _: &Progress) {}
    fn update_test_progress(&mut self, _: &Progress) {}
    fn end_test(&mut self, _: &Progress) {}
    fn end_global_progress(&mut self) {}
    fn log_event_evaluation(&mut self, _: String) {}
}

impl MetricsRenderer for EpochLog {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.metric_names
            .insert(definition.metric_id, definition.name);
    }
}

/// One model's training run: its figures per epoch.
struct Run {
    name: &'static str,
    epochs: Vec<Epoch>,
    /// Optimizer steps (training batches) per epoch.
    steps_per_epoch: usize,
}

impl Run {
    fn last(&self) -> Epoch {
        *self.epochs.last().expect("at least one epoch")
    }

    /// The median epoch time: the first epoch also compiles every kernel it meets.
    fn seconds_per_epoch(&self) -> f64 {
        let mut seconds: Vec<f64> = self.epochs.iter().map(|epoch| epoch.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        seconds[seconds.len() / 2]
    }

    /// Training steps per second over the median epoch (whose time also holds the epoch's
    /// validation and checkpoint).
    fn steps_per_second(&self) -> f64 {
        self.steps_per_epoch as f64 / self.seconds_per_epoch()
    }
}

/// Trains `model` with Burn's `Learner`: Adam at a constant learning rate, loss and accuracy
/// metrics on both splits, checkpoints and metric logs in `artifacts`.
fn train<M>(
    name: &'static str,
    model: M,
    loaders: &Loaders,
    options: &Options,
    artifacts: &Path,
) -> Result<Run, Box<dyn Error>>
where
    M: LearnerModel
        + TrainStep<Input = WineBatch, Output = ClassificationOutput>
        + InferenceStep<Input = WineBatch, Output = ClassificationOutput>,
{
    let epochs = Arc::new(Mutex::new(Vec::new()));
    let result = SupervisedTraining::new(artifacts, loaders.train.clone(), loaders.test.clone())
        .metrics((LossMetric::new(), AccuracyMetric::new()))
        .with_default_checkpointers()
        .with_application_logger(None)
        .renderer(Box::new(EpochLog::new(name, epochs.clone())))
        .num_epochs(options.epochs as usize)
        .launch(Learner::new(model, AdamConfig::new().init(), options.lr));
    if let Some(error) = result.error {
        return Err(format!("{name}: training failed: {error}").into());
    }
    let epochs = epochs.lock().expect("epoch log").clone();
    Ok(Run {
        name,
        epochs,
        steps_per_epoch: loaders.train.num_items().div_ceil(options.batch as usize),
    })
}

/// The training and test data loaders, shared by both models: the same batches in the same
/// order (no shuffle), so the two runs differ only by their kernels.
struct Loaders {
    train: Arc<dyn DataLoader<WineBatch>>,
    test: Arc<dyn DataLoader<WineBatch>>,
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = Options::parse();
    let choice = fmar::default_device();
    println!("device: {choice}");
    let device = choice.device.autodiff();
    let (train_wines, test_wines) = load();
    println!(
        "wine quality: {} training and {} test samples, {FEATURES} features, {CLASSES} classes",
        train_wines.len(),
        test_wines.len()
    );
    let loaders = Loaders {
        train: DataLoaderBuilder::new(WineBatcher)
            .batch_size(options.batch as usize)
            .set_device(device.clone())
            .build(InMemDataset::new(train_wines)),
        // The whole test set in one batch: the epoch's test loss is then exactly the model's.
        test: DataLoaderBuilder::new(WineBatcher)
            .batch_size(test_wines.len())
            .set_device(device.clone())
            .build(InMemDataset::new(test_wines)),
    };
    let artifacts = std::env::temp_dir().join(format!("fmar-train-{}", std::process::id()));
    println!("checkpoints and metric logs: {}", artifacts.display());

    let reference = ReferenceMlp::new(&device);
    let fused = FusedMlp::from_reference(reference.clone());
    let runs = [
        train(
            "Linear + relu",
            reference,
            &loaders,
            &options,
            &artifacts.join("reference"),
        )?,
        train(
            "FusedLinearRelu",
            fused,
            &loaders,
            &options,
            &artifacts.join("fused"),
        )?,
    ];

    println!();
    println!(
        "| model | final train loss | test loss | test accuracy | s / epoch (median) | train steps / s |"
    );
    println!("|---|---|---|---|---|---|");
    for run in &runs {
        let last = run.last();
        println!(
            "| {} | {:.4} | {:.4} | {:.1}% | {:.3} | {:.1} |",
            run.name,
            last.train_loss,
            last.test_loss,
            last.test_accuracy * 100.0,
            run.seconds_per_epoch(),
            run.steps_per_second()
        );
    }
    if !options.no_plot {
        plot(&options.plot, &runs)?;
        println!("loss curves: {}", options.plot.display());
    }
    if options.check {
        check(&runs)?;
    }
    Ok(())
}

/// Same weights, data and optimizer: the two runs differ only by kernel rounding, so their
/// losses and accuracies must agree closely.
fn check([reference, fused]: &[Run; 2]) -> Result<(), Box<dyn Error>> {
    let (a, b) = (reference.last(), fused.last());
    let loss_gap = (a.test_loss - b.test_loss).abs() / a.test_loss;
    let accuracy_gap = (a.test_accuracy - b.test_accuracy).abs();
    let first_epoch_gap = (reference.epochs[0].train_loss - fused.epochs[0].train_loss).abs()
        / reference.epochs[0].train_loss;
    println!(
        "check: test-loss gap {loss_gap:.2e} (relative), accuracy gap {accuracy_gap:.3}, \
         first-epoch train-loss gap {first_epoch_gap:.2e} (relative)"
    );
    if loss_gap >= 0.02 {
        return Err(format!("test losses differ by {loss_gap:.3} (relative)").into());
    }
    if accuracy_gap > 0.02 {
        return Err(format!("test accuracies differ by {accuracy_gap:.3}").into());
    }
    if first_epoch_gap >= 1e-3 {
        return Err(format!("first-epoch losses differ by {first_epoch_gap:.2e}").into());
    }
    println!("check: both models reach the same quality");
    Ok(())
}

/// The two training-loss curves, the reference dashed over the fused one so that both show
/// where they coincide.
fn plot(path: &Path, [reference, fused]: &[Run; 2]) -> Result<(), Box<dyn Error>> {
    let losses = || {
        [reference, fused]
            .into_iter()
            .flat_map(|run| run.epochs.iter().map(|epoch| epoch.train_loss))
    };
    let max = losses().fold(f64::MIN, f64::max) * 1.05;
    let min = losses().fold(f64::MAX, f64::min) * 0.95;
    let last_epoch = reference.epochs.len().max(2) as f64;
    let curve = |run: &Run| -> Vec<(f64, f64)> {
        (1u32..)
            .zip(&run.epochs)
            .map(|(epoch, figures)| (f64::from(epoch), figures.train_loss))
            .collect()
    };
    let label = |run: &Run| {
        format!(
            "{} (test acc. {:.1}%)",
            run.name,
            run.last().test_accuracy * 100.0
        )
    };

    let root = SVGBackend::new(path, (640, 360)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Training loss per epoch, red wine quality (same init, data and optimizer)",
            ("sans-serif", 14),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(1.0..last_epoch, min..max)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .x_label_formatter(&|epoch| format!("{epoch:.0}"))
        .y_desc("cross-entropy")
        .max_light_lines(0)
        .draw()?;

    let fused_color = RGBColor(0xd6, 0x27, 0x28);
    chart
        .draw_series(LineSeries::new(curve(fused), fused_color.stroke_width(2)))?
        .label(label(fused))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], fused_color.stroke_width(2)));
    let reference_color = RGBColor(0x55, 0x55, 0x55);
    chart
        .draw_series(DashedLineSeries::new(
            curve(reference),
            6,
            4,
            reference_color.stroke_width(2),
        ))?
        .label(label(reference))
        .legend(move |(x, y)| {
            DashedPathElement::new([(x, y), (x + 20, y)], 6, 4, reference_color.stroke_width(2))
        });
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
