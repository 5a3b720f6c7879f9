//! Data-parallel training through Burn's collective operations: one replica of the model per
//! member device, each member runs forward and backward on its own shard of the global batch,
//! and the members' gradients are averaged with [`Tensor::all_reduce`] so that every replica
//! applies the same optimizer step and the replicas stay identical.
//!
//! A member is a [`Device`]: on CUDA, `Device::cuda(i)` for GPU `i` (the all-reduce then runs
//! through NCCL); anywhere, the same device repeated `N` times, which Burn runs over transfers
//! (for tests, or a CPU). One training step:
//!
//! ```
//! use burn::nn::loss::{MseLoss, Reduction};
//! use burn::tensor::{Device, Distribution, Tensor};
//! use fmar::FusedLinearReluConfig;
//! use burn::optim::SgdConfig;
//! use fmar::data_parallel::{all_reduce_gradients, replicate, shard_batch, step_replicas};
//!
//! let members = vec![Device::flex().autodiff(); 2];
//! let model = FusedLinearReluConfig::new(8, 4).init(&members[0]);
//! let replicas = replicate(&model, &members);
//!
//! let inputs = Tensor::<2>::random([16, 8], Distribution::Default, &members[0]);
//! let targets = Tensor::<2>::random([16, 4], Distribution::Default, &members[0]);
//! let (inputs, targets) = (shard_batch(inputs, &members), shard_batch(targets, &members));
//!
//! let mut gradients: Vec<_> = replicas
//!     .iter()
//!     .zip(inputs.into_iter().zip(targets))
//!     .map(|(replica, (x, y))| {
//!         MseLoss::new()
//!             .forward(replica.forward(x), y, Reduction::Mean)
//!             .backward()
//!     })
//!     .collect();
//! all_reduce_gradients(&replicas, &mut gradients);
//!
//! // Every replica now holds the full batch's gradient.
//! let weight = |i: usize| replicas[i].weight.val().grad(&gradients[i]).unwrap();
//! weight(0).into_data().assert_approx_eq::<f32>(&weight(1).into_data(), Default::default());
//!
//! // One optimizer per replica; each takes the same step, so the replicas stay identical.
//! let mut optimizers: Vec<_> = members.iter().map(|_| SgdConfig::new().init()).collect();
//! let replicas = step_replicas(replicas, gradients, &mut optimizers, 1e-2);
//! ```
//!
//! The functions work on [`Gradients`], what `backward` returns; [`step_replicas`] converts
//! them to Burn's `GradientsParams` for the optimizers.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::{GradientsParams, LearningRate, ModuleOptimizer};
use burn::tensor::container::TensorContainer;
use burn::tensor::distributed::ReduceOperation;
use burn::tensor::kind::Basic;
use burn::tensor::{Device, Gradients, Tensor};

/// One replica of `model` per member device, replica `i` on `devices[i]`.
///
/// Every replica holds the same parameter values and the same [`ParamId`]s (which is how
/// [`all_reduce_gradients`] pairs their gradients), but its own autodiff leaves, so that each
/// replica's backward is its own. Replicas are forked ([`Module::fork`]) even where a device
/// repeats.
///
/// # Panics
///
/// If `devices` is empty.
pub fn replicate<M: Module>(model: &M, devices: &[Device]) -> Vec<M> {
    assert!(
        !devices.is_empty(),
        "data parallel: replicate needs at least one member device"
    );
    devices
        .iter()
        .map(|device| model.clone().fork(device))
        .collect()
}

/// `batch` split along dim 0 into one equal shard per member device, shard `i` (rows
/// `i * n / N .. (i + 1) * n / N`) moved to `devices[i]`.
///
/// Shards are equal so that the mean of the members' mean losses is the mean loss over the
/// whole batch, and the averaged gradient of [`all_reduce_gradients`] is the whole batch's
/// gradient. Uneven shards would need each member's gradient weighted by its shard size.
///
/// Works for any tensor kind: float inputs, integer class labels, boolean masks.
///
/// # Panics
///
/// If `devices` is empty, the batch has rank 0, or its first dim does not divide into
/// `devices.len()` equal shards.
pub fn shard_batch<const D: usize, K: Basic>(
    batch: Tensor<D, K>,
    devices: &[Device],
) -> Vec<Tensor<D, K>> {
    let members = devices.len();
    assert!(
        members > 0,
        "data parallel: shard_batch needs at least one member device"
    );
    assert!(
        D > 0,
        "data parallel: a batch of rank 0 has no dim to split"
    );
    let rows = batch.dims()[0];
    assert!(
        rows.is_multiple_of(members),
        "data parallel: a batch of {rows} rows does not split into {members} equal shards; \
         pick a global batch size divisible by the number of members"
    );
    let shard = rows / members;
    devices
        .iter()
        .enumerate()
        .map(|(i, device)| batch.clone().narrow(0, i * shard, shard).to_device(device))
        .collect()
}

/// Replaces every parameter's gradient in `gradients[i]` (replica `i`'s, from its shard) by the
/// mean of that parameter's gradients over all replicas, each result on its replica's device.
///
/// The reduction is [`Tensor::all_reduce`] with [`ReduceOperation::Mean`], one call per
/// parameter: with equal shards (see [`shard_batch`]) and a loss that is a mean over the
/// shard's samples, the mean of the shards' gradients is the gradient of the mean loss over the
/// whole batch, so every replica then takes the step single-device training on the whole batch
/// would take. Mean rather than Sum and a rescale: one operation, the same on every runtime
/// (NCCL's average on CUDA), and each member's part is scaled before it is added, so half
/// precisions do not overflow in the sum.
///
/// The parameters are those of `replicas[0]` that require a gradient, found with a
/// [`ModuleVisitor`] (every float parameter, at any rank); the other replicas' are paired with
/// them by [`ParamId`]. A parameter that got a gradient on some replicas and none on others (it
/// played no part in their shards' losses) counts as a zero gradient there. One that got no
/// gradient anywhere is left alone.
///
/// # Panics
///
/// If `replicas` is empty, `gradients` does not hold one entry per replica, or a replica lacks
/// one of `replicas[0]`'s parameters (replicas must come from one model, as [`replicate`] makes
/// them).
pub fn all_reduce_gradients<M: Module>(replicas: &[M], gradients: &mut [Gradients]) {
    assert!(
        !replicas.is_empty(),
        "data parallel: all_reduce_gradients needs at least one replica"
    );
    assert_eq!(
        replicas.len(),
        gradients.len(),
        "data parallel: one set of gradients per replica"
    );
    let parameters: Vec<TensorContainer<ParamId>> = replicas
        .iter()
        .map(|replica| {
            let mut collector = ParameterCollector::default();
            replica.visit(&mut collector);
            collector.parameters
        })
        .collect();
    replicas[0].visit(&mut GradientReducer {
        parameters: &parameters,
        gradients,
    });
}

/// Every trainable float parameter's tensor (its autodiff leaf), by [`ParamId`].
#[derive(Default)]
struct ParameterCollector {
    parameters: TensorContainer<ParamId>,
}

impl ModuleVisitor for ParameterCollector {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if param.is_require_grad() {
            self.parameters.register(param.id, param.val());
        }
    }
}

/// Visits replica 0 and all-reduces each of its parameters' gradients across the replicas.
struct GradientReducer<'a> {
    /// Replica `i`'s parameters, from [`ParameterCollector`].
    parameters: &'a [TensorContainer<ParamId>],
    /// Replica `i`'s gradients.
    gradients: &'a mut [Gradients],
}

impl ModuleVisitor for GradientReducer<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !param.is_require_grad() {
            return;
        }
        let leaves: Vec<Tensor<D>> = self
            .parameters
            .iter()
            .enumerate()
            .map(|(replica, parameters)| {
                parameters.get(&param.id).unwrap_or_else(|| {
                    panic!(
                        "data parallel: replica {replica} has no trainable parameter {}; \
                         build the replicas from one model with `replicate`",
                        param.id
                    )
                })
            })
            .collect();
        let grads: Vec<Option<Tensor<D>>> = leaves
            .iter()
            .zip(self.gradients.iter_mut())
            .map(|(leaf, gradients)| leaf.grad_remove(gradients))
            .collect();
        let Some(template) = grads.iter().flatten().next() else {
            return;
        };
        let (shape, dtype) = (template.shape(), template.dtype());
        let grads = grads
            .into_iter()
            .zip(&leaves)
            .map(|(grad, leaf)| {
                grad.unwrap_or_else(|| {
                    let device = leaf.device().without_autodiff();
                    Tensor::zeros(shape.clone(), (&device, dtype))
                })
            })
            .collect();
        let reduced = Tensor::all_reduce(grads, ReduceOperation::Mean);
        for ((leaf, gradients), grad) in leaves.iter().zip(self.gradients.iter_mut()).zip(reduced) {
            leaf.grad_replace(gradients, grad);
        }
    }
}

/// Steps every replica with its own optimizer: replica `i` takes `gradients[i]` (all-reduced by
/// [`all_reduce_gradients`], so the same on every replica) through `optimizers[i]` at learning
/// rate `lr`. Returns the stepped replicas, in order. With the same gradients and optimizers
/// built alike, every replica takes the same step and the replicas stay identical.
///
/// # Panics
///
/// If `gradients` or `optimizers` does not hold one entry per replica.
pub fn step_replicas<M: Module>(
    replicas: Vec<M>,
    gradients: Vec<Gradients>,
    optimizers: &mut [ModuleOptimizer],
    lr: LearningRate,
) -> Vec<M> {
    assert!(
        gradients.len() == replicas.len() && optimizers.len() == replicas.len(),
        "data parallel: step_replicas needs one gradient set and one optimizer per replica \
         ({} replicas, {} gradient sets, {} optimizers)",
        replicas.len(),
        gradients.len(),
        optimizers.len()
    );
    replicas
        .into_iter()
        .zip(gradients)
        .zip(optimizers)
        .map(|((replica, gradients), optimizer)| {
            let gradients = GradientsParams::from_grads(gradients, &replica);
            optimizer.step(lr, replica, gradients)
        })
        .collect()
}
