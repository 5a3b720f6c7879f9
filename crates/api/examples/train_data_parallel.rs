//! Trains an MLP of `FusedLinearRelu` layers (and a `Linear` head) data parallel on N members
//! with `fmar::data_parallel`: every member holds a replica of the model (the same initial
//! weights), runs forward and backward on its shard of the global batch, the members' gradients
//! are averaged with Burn's all-reduce, and every member takes the same Adam step. The task is
//! synthetic, so nothing is downloaded: random inputs, and regression targets from a random
//! teacher network of the same shape.
//!
//! On N GPUs (CUDA; the all-reduce runs through NCCL):
//!
//! ```text
//! BURN_DEVICE=cuda NCCL_NVLS_ENABLE=0 cargo run --release --features cuda-nvrtc \
//!     --example train_data_parallel -- --devices 2 --hidden 4096 --dtype bf16
//! ```
//!
//! `NCCL_NVLS_ENABLE=0` turns off NCCL's NVLink SHARP (multicast) algorithms; leaving them off
//! avoids NCCL's multicast setup, which some shared or virtualised multi-GPU hosts do not
//! support. Drop it on hosts where NVLink multicast works.
//!
//! On the CPU (Burn's Flex backend; N members are then N logical members sharing the one
//! device, which Burn's collectives run over transfers: it shows the code path, not a speed-up):
//!
//! ```text
//! BURN_DEVICE=flex cargo run --example train_data_parallel -- --devices 2
//! ```
//!
//! Member 0 is `fmar::default_device()`'s (set `BURN_DEVICE` to pick another). On CUDA, member
//! `i` is GPU `i`; on every other runtime the members share member 0's device. Each step prints
//! the loss and the samples per second (global batch over the step's wall time, the device
//! synchronized); the end prints the median over the steps after the first, which compiles the
//! kernels.

use burn::module::{Module, ModuleMapper, Param};
use burn::nn::loss::{MseLoss, Reduction};
use burn::optim::AdamConfig;
use burn::tensor::{DType, Device, Distribution, Tensor};
use clap::{Parser, ValueEnum};
use fmar::data_parallel::{all_reduce_gradients, replicate, shard_batch, step_replicas};
use fmar::{FusedMlpConfig, Runtime};
use std::error::Error;
use std::time::Instant;

/// The teacher's outputs, which the student regresses.
const OUTPUTS: usize = 16;

/// Data-parallel training of an MLP of `FusedLinearRelu` layers on synthetic data.
#[derive(Parser, Debug)]
#[command(name = "train_data_parallel")]
struct Options {
    /// Members (replicas of the model): GPUs on CUDA, else logical members on one device.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    devices: u64,
    /// Width of the input and of every hidden layer.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    hidden: u64,
    /// Hidden `FusedLinearRelu` layers.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    layers: u64,
    /// Global batch (all members together); must divide by `--devices`.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,
    /// Training steps.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// The dtype of the parameters and the data.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    dtype: Dtype,
    /// Seed of member 0's random generator (the weights, the teacher and the data): runs with
    /// any `--devices` start from the same model and see the same batches.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Dtype {
    F32,
    Bf16,
}

impl Dtype {
    fn burn(self) -> DType {
        match self {
            Dtype::F32 => DType::F32,
            Dtype::Bf16 => DType::BF16,
        }
    }
}

/// Casts every float parameter to `dtype`, keeping it a trainable leaf.
struct CastParameters(DType);

impl ModuleMapper for CastParameters {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let dtype = self.0;
        param.map(|tensor| {
            let trainable = tensor.is_require_grad();
            let tensor = tensor.cast(dtype).detach();
            if trainable {
                tensor.require_grad()
            } else {
                tensor
            }
        })
    }
}

/// The member devices: GPU `i` for member `i` on CUDA, else member 0's device repeated.
fn member_devices(count: usize) -> Result<Vec<Device>, Box<dyn Error>> {
    let choice = fmar::try_default_device()?;
    println!("member 0: {choice}");
    if choice.runtime == Runtime::Cuda {
        #[cfg(feature = "cuda")]
        {
            let gpus = Device::enumerate(burn::tensor::DeviceType::Cuda)
                .into_vec()
                .len();
            if count > gpus {
                return Err(
                    format!("--devices {count}, but this machine has {gpus} CUDA GPUs").into(),
                );
            }
            return Ok((0..count).map(|i| Device::cuda(i).autodiff()).collect());
        }
    }
    if count > 1 {
        println!(
            "{count} logical members share this {:?} device (only CUDA gives each member its own)",
            choice.runtime
        );
    }
    Ok(vec![choice.device.autodiff(); count])
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() % 2 {
        0 => (values[middle - 1] + values[middle]) / 2.0,
        _ => values[middle],
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = Options::parse();
    let (count, width, layers) = (
        options.devices as usize,
        options.hidden as usize,
        options.layers as usize,
    );
    let batch = options.batch as usize;
    let dtype = options.dtype.burn();
    if !batch.is_multiple_of(count) {
        return Err(format!("--batch {batch} does not split into {count} equal shards").into());
    }

    let members = member_devices(count)?;
    let lead = &members[0];
    lead.seed(options.seed);
    if !lead.supports_dtype(dtype) {
        return Err(format!("{dtype:?} is not supported on this device").into());
    }
    println!(
        "{count} member(s), global batch {batch} ({} per member), {layers} x FusedLinearRelu \
         {width} -> {width} + Linear {width} -> {OUTPUTS}, {dtype:?}, Adam lr {}",
        batch / count,
        options.lr
    );

    // One model, built once: every replica starts from its weights.
    let config = FusedMlpConfig::new(width, width, OUTPUTS).with_hidden_layers(layers);
    let model = config.init(lead).map(&mut CastParameters(dtype));
    let teacher = config.init(lead).map(&mut CastParameters(dtype)).no_grad();
    let mut replicas = replicate(&model, &members);
    let mut optimizers: Vec<_> = members.iter().map(|_| AdamConfig::new().init()).collect();

    let mut samples_per_second = Vec::new();
    for step in 1..=options.steps {
        let start = Instant::now();
        let inputs = Tensor::<2>::random(
            [batch, width],
            Distribution::Uniform(-1.0, 1.0),
            (lead, dtype),
        );
        // Scaled to a unit root mean square, so that the loss starts near 1 at any width.
        let targets = teacher.forward(inputs.clone()).detach();
        let rms = targets.clone().powi_scalar(2).mean().sqrt();
        let targets = targets / rms.unsqueeze::<2>();
        let inputs = shard_batch(inputs, &members);
        let targets = shard_batch(targets, &members);

        let (losses, mut gradients): (Vec<_>, Vec<_>) = replicas
            .iter()
            .zip(inputs.into_iter().zip(targets))
            .map(|(replica, (input, target))| {
                let loss = MseLoss::new().forward(replica.forward(input), target, Reduction::Mean);
                let gradients = loss.backward();
                (loss.detach(), gradients)
            })
            .unzip();
        all_reduce_gradients(&replicas, &mut gradients);
        replicas = step_replicas(replicas, gradients, &mut optimizers, options.lr);
        for device in &members {
            device.sync()?;
        }
        let seconds = start.elapsed().as_secs_f64();

        // The global batch's loss: the mean of the members' (equal-shard) mean losses.
        let loss = losses
            .into_iter()
            .map(|loss| loss.cast(DType::F32).into_scalar::<f32>() as f64)
            .sum::<f64>()
            / count as f64;
        let rate = batch as f64 / seconds;
        println!(
            "step {step:>3}: loss {loss:.6}, {:.1} ms, {rate:.0} samples/s",
            seconds * 1e3
        );
        if step > 1 || options.steps == 1 {
            samples_per_second.push(rate);
        }
    }
    println!(
        "median: {:.0} samples/s over {} step(s) ({count} member(s), global batch {batch})",
        median(samples_per_second.clone()),
        samples_per_second.len()
    );
    Ok(())
}
