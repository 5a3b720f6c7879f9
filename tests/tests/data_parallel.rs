//! Data-parallel training with `fmar::data_parallel` takes the steps single-device training takes
//! on the whole batch: after three SGD steps, N = 1, 2 and 4 members (the Flex CPU device
//! repeated, which Burn's collectives run over transfers) hold the parameters of plain training
//! on one device, within f32 rounding. A batch that does not split evenly is refused.

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Tensor, TensorData};
use fmar::data_parallel::{all_reduce_gradients, replicate, shard_batch, step_replicas};
use fmar::{FusedMlp, FusedMlpConfig};
use fmar_tests::Rng;

const INPUTS: usize = 8;
const HIDDEN: usize = 16;
const OUTPUTS: usize = 4;
const BATCH: usize = 16;
const STEPS: usize = 3;
const LEARNING_RATE: f64 = 0.1;

/// Two fused hidden layers and a plain linear head: the shape of a user's model.
fn new_model(device: &Device) -> FusedMlp {
    FusedMlpConfig::new(INPUTS, HIDDEN, OUTPUTS)
        .with_hidden_layers(2)
        .init(device)
}

fn mse_loss(model: &FusedMlp, input: Tensor<2>, target: Tensor<2>) -> Tensor<1> {
    MseLoss::new().forward(model.forward(input), target, Reduction::Mean)
}

/// One global batch per step: inputs in [-1, 1), regression targets in [-1, 1).
struct Batches {
    steps: Vec<(TensorData, TensorData)>,
}

impl Batches {
    fn random(rng: &mut Rng) -> Self {
        let mut uniform = |cols: usize| {
            let values: Vec<f32> = (0..BATCH * cols)
                .map(|_| rng.uniform(-1.0, 1.0) as f32)
                .collect();
            TensorData::new(values, [BATCH, cols])
        };
        Self {
            steps: (0..STEPS)
                .map(|_| (uniform(INPUTS), uniform(OUTPUTS)))
                .collect(),
        }
    }
}

/// Plain training: the whole batch, one device, one optimizer.
fn train_single(model: FusedMlp, batches: &Batches, device: &Device) -> FusedMlp {
    let mut optimizer = SgdConfig::new().init();
    let mut model = model.fork(device);
    for (inputs, targets) in &batches.steps {
        let loss = mse_loss(
            &model,
            Tensor::from_data(inputs.clone(), device),
            Tensor::from_data(targets.clone(), device),
        );
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LEARNING_RATE, model, grads);
    }
    model
}

/// Data-parallel training: one replica and one optimizer per member, each member's shard of the
/// same global batch, gradients all-reduced before each step. Returns every replica.
fn train_data_parallel(model: FusedMlp, batches: &Batches, members: &[Device]) -> Vec<FusedMlp> {
    let mut replicas = replicate(&model, members);
    let mut optimizers: Vec<_> = members.iter().map(|_| SgdConfig::new().init()).collect();
    for (inputs, targets) in &batches.steps {
        let inputs = shard_batch(Tensor::<2>::from_data(inputs.clone(), &members[0]), members);
        let targets = shard_batch(
            Tensor::<2>::from_data(targets.clone(), &members[0]),
            members,
        );
        let mut gradients: Vec<_> = replicas
            .iter()
            .zip(inputs.into_iter().zip(targets))
            .map(|(replica, (input, target))| mse_loss(replica, input, target).backward())
            .collect();
        all_reduce_gradients(&replicas, &mut gradients);
        replicas = step_replicas(replicas, gradients, &mut optimizers, LEARNING_RATE);
    }
    replicas
}

/// Every float parameter's values, in visiting order.
#[derive(Default)]
struct ParameterValues(Vec<Vec<f64>>);

impl ModuleVisitor for ParameterValues {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push(fmar_tests::burn_io::values(param.val()));
    }
}

fn parameters(model: &FusedMlp) -> Vec<Vec<f64>> {
    let mut values = ParameterValues::default();
    model.visit(&mut values);
    values.0
}

/// The largest `|ours - reference|` over every parameter, relative to the largest reference
/// `|parameter|`.
fn relative_difference(ours: &[Vec<f64>], reference: &[Vec<f64>]) -> f64 {
    assert_eq!(ours.len(), reference.len(), "parameter count");
    let scale = reference
        .iter()
        .flatten()
        .fold(0.0f64, |max, value| max.max(value.abs()));
    let difference = ours
        .iter()
        .zip(reference)
        .flat_map(|(ours, reference)| {
            assert_eq!(ours.len(), reference.len(), "parameter size");
            ours.iter().zip(reference).map(|(a, b)| (a - b).abs())
        })
        .fold(0.0f64, f64::max);
    difference / scale
}

/// The largest parameter difference allowed, relative to the largest parameter. Data parallel
/// and single-device training differ only in the order each gradient's terms are summed (per
/// shard, then across members, against one sum over the batch): f32 rounding, about 1e-7 of a
/// gradient entry. SGD at learning rate 0.1 carries a tenth of it into the parameters per step,
/// so three steps stay far below 1e-5 (measured: about 2e-8). A wrong reduction (a sum, or
/// none) changes every step by a whole gradient step: measured 2e-2 to 1e-1. SGD rather than
/// Adam: Adam divides by the gradient's magnitude, which would magnify rounding differences in
/// near-zero gradients up to learning rate / epsilon times.
const TOLERANCE: f64 = 1e-5;

fn check_members(count: usize) {
    let device = Device::flex().autodiff();
    let mut rng = Rng::fresh();
    let batches = Batches::random(&mut rng);
    let model = new_model(&device);
    let initial = parameters(&model);

    let reference = parameters(&train_single(model.clone(), &batches, &device));
    let replicas = train_data_parallel(model, &batches, &vec![device; count]);

    let moved = relative_difference(&reference, &initial);
    assert!(
        moved > 100.0 * TOLERANCE,
        "training moved the parameters by only {moved:e} (seed {})",
        rng.seed()
    );
    for (member, replica) in replicas.iter().enumerate() {
        let difference = relative_difference(&parameters(replica), &reference);
        assert!(
            difference <= TOLERANCE,
            "{count} members: replica {member}'s parameters differ from single-device \
             training's by {difference:e} of the largest parameter (tolerance {TOLERANCE:e}, \
             seed {})",
            rng.seed()
        );
    }
}

#[test]
fn one_member_matches_single_device_training() {
    check_members(1);
}

#[test]
fn two_members_match_single_device_training() {
    check_members(2);
}

#[test]
fn four_members_match_single_device_training() {
    check_members(4);
}

#[test]
#[should_panic(expected = "does not split into 3 equal shards")]
fn uneven_batch_is_refused() {
    let device = Device::flex().autodiff();
    let batch = Tensor::<2>::zeros([BATCH, INPUTS], &device);
    let _ = shard_batch(batch, &vec![device; 3]);
}

#[test]
fn a_gradient_missing_on_one_member_counts_as_zero() {
    let device = Device::flex().autodiff();
    let members = vec![device.clone(); 2];
    let replicas = replicate(&LinearConfig::new(INPUTS, OUTPUTS).init(&device), &members);
    let input = Tensor::<2>::ones([BATCH, INPUTS], &device);
    let own_weight_grad = {
        let replica = replicas[0].clone().fork(&device);
        let grads = replica.forward(input.clone()).sum().backward();
        fmar_tests::burn_io::values(replica.weight.val().grad(&grads).unwrap())
    };
    // Member 1's loss leaves the weight out: it gets no weight gradient there.
    let bias = |replica: &Linear| replica.bias.as_ref().unwrap().val();
    let mut gradients = vec![
        replicas[0].forward(input).sum().backward(),
        bias(&replicas[1]).sum().backward(),
    ];
    all_reduce_gradients(&replicas, &mut gradients);
    for (member, (replica, gradients)) in replicas.iter().zip(&gradients).enumerate() {
        let weight = fmar_tests::burn_io::values(replica.weight.val().grad(gradients).unwrap());
        let halved: Vec<f64> = own_weight_grad.iter().map(|g| g / 2.0).collect();
        assert_eq!(weight, halved, "member {member}'s weight gradient");
        // Bias: member 0's is BATCH per output, member 1's is 1.
        let bias = fmar_tests::burn_io::values(bias(replica).grad(gradients).unwrap());
        let mean = (BATCH as f64 + 1.0) / 2.0;
        assert_eq!(bias, vec![mean; OUTPUTS], "member {member}'s bias gradient");
    }
}
