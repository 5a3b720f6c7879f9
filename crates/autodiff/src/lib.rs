//! fmar's handwritten backward pass: the state the fused forward keeps for autodiff and the pass
//! that turns the output gradient into the gradients of `lhs`, `rhs` and `bias`.
//!
//! Layer 2 of fmar, a sibling of `fmar-backend-ext` rather than a layer above it: it depends on
//! Burn, burn-autodiff and `fmar-fusion-meta` (the ReLU mask's layout) only, is generic over the
//! inner backend and takes the inner forward as an argument, so it needs no other fmar crate.
//! The `fmar` crate, which owns the extension trait (Rust's orphan rule puts
//! `impl Trait for Autodiff<B, C>` there), passes its own forward in. [`host_mask`] holds the
//! ReLU mask's operations for inner backends that compute on the host.

use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{Shape, TensorData};
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::CheckpointStrategy;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, Ops, OpsKind, broadcast_shape};
use burn_autodiff::{Autodiff, NodeId};
use fmar_fusion_meta::OP_NAME;

pub mod host_mask;

/// A float tensor primitive of backend `B`.
pub type FloatTensor<B> = <B as burn::backend::BackendTypes>::FloatTensorPrimitive;

/// An integer tensor primitive of backend `B` (the ReLU mask's words).
pub type IntTensor<B> = <B as burn::backend::BackendTypes>::IntTensorPrimitive;

/// The inner backend's fused forward, `relu(lhs @ rhs + bias)`.
pub type Forward<B> = fn(FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>;

/// The inner backend's fused forward of a tracked call: the output and its ReLU mask.
pub type ForwardKeepingMask<B> =
    fn(FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) -> (FloatTensor<B>, IntTensor<B>);

/// The inner backend's `grad ⊙ mask`.
pub type MaskedGradient<B> = fn(FloatTensor<B>, IntTensor<B>) -> FloatTensor<B>;

/// The inner backend's `grad ⊙ mask` with its column sums.
pub type MaskedGradientWithColumnSums<B> =
    fn(FloatTensor<B>, IntTensor<B>) -> (FloatTensor<B>, FloatTensor<B>);

/// The inner backend's operations that the forward and the backward run.
pub struct InnerOps<B: Backend> {
    /// The fused forward, `relu(lhs @ rhs + bias)`, for an untracked call.
    pub forward: Forward<B>,
    /// The fused forward of a tracked call: the output and its ReLU mask, one bit per element
    /// (`u32` words, `[B.., m, ceil(n / 32)]`; bit `j % 32` of word `j / 32` set where the
    /// output is not `<= 0`).
    pub forward_keeping_mask: ForwardKeepingMask<B>,
    /// `grad ⊙ mask`, in one pass over `grad`.
    pub masked_gradient: MaskedGradient<B>,
    /// `grad ⊙ mask` and its sum over every dim but the last (`[n]`), from the same reads.
    pub masked_gradient_with_column_sums: MaskedGradientWithColumnSums<B>,
    /// The gradient products, `lhs @ rhs` with broadcast batch dims (fmar's own where it has
    /// one, else the backend's).
    pub matmul: Matmul<B>,
}

/// The inner backend's matmul for the gradient products.
pub type Matmul<B> = fn(FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>;

// Function pointers: copied whatever `B` is (a derive would ask `B: Clone`). The backward's
// state keeps the whole set.
impl<B: Backend> Clone for InnerOps<B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: Backend> Copy for InnerOps<B> {}

impl<B: Backend> std::fmt::Debug for InnerOps<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InnerOps")
    }
}

/// `relu(lhs @ rhs + bias)` on the autodiff backend `Autodiff<B, C>`: runs the inner backend's
/// forward and, when any input is tracked, its forward that also writes the ReLU mask, and
/// registers the backward step, which runs on `ops`.
///
/// The operation is marked compute bound, so Burn's checkpointing keeps its state rather than
/// recomputing the matmul. Only what the tracked inputs' gradients need is kept: `rhs` when
/// `lhs` is tracked, `lhs` when `rhs` is tracked, and the ReLU mask (one bit per output
/// element) in every case; never the output itself.
pub fn fused_matmul_add_relu<B: Backend, C: CheckpointStrategy>(
    lhs: FloatTensor<Autodiff<B, C>>,
    rhs: FloatTensor<Autodiff<B, C>>,
    bias: FloatTensor<Autodiff<B, C>>,
    ops: InnerOps<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let lhs_tracked = lhs.is_tracked();
    let rhs_tracked = rhs.is_tracked();

    match FusedMatmulAddReluBackward
        .prepare::<C>([lhs.node(), rhs.node(), bias.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            // Each matmul gradient reads the *other* operand.
            let lhs_id = rhs_tracked.then(|| prep.checkpoint(&lhs));
            let rhs_id = lhs_tracked.then(|| prep.checkpoint(&rhs));
            let shapes = OperandShapes {
                lhs: lhs.primitive().shape(),
                rhs: rhs.primitive().shape(),
                bias: bias.primitive().shape(),
            };
            let (output, mask) = (ops.forward_keeping_mask)(
                lhs.into_primitive(),
                rhs.into_primitive(),
                bias.into_primitive(),
            );
            let state = BackwardState {
                lhs: lhs_id,
                rhs: rhs_id,
                mask,
                shapes,
                output_shape: output.shape(),
                ops,
            };
            prep.finish(state, output)
        }
        OpsKind::UnTracked(prep) => prep.finish((ops.forward)(
            lhs.into_primitive(),
            rhs.into_primitive(),
            bias.into_primitive(),
        )),
    }
}

/// The shapes of the three inputs, which the gradients are reduced back to.
#[derive(Debug, Clone)]
struct OperandShapes {
    lhs: Shape,
    rhs: Shape,
    bias: Shape,
}

/// What the backward pass needs from the forward.
#[derive(Debug, Clone)]
struct BackwardState<I, O> {
    /// Checkpointed `lhs`, present when `rhs`'s gradient is needed.
    lhs: Option<NodeId>,
    /// Checkpointed `rhs`, present when `lhs`'s gradient is needed.
    rhs: Option<NodeId>,
    /// The output's ReLU mask, one bit per element.
    mask: I,
    shapes: OperandShapes,
    output_shape: Shape,
    ops: O,
}

#[derive(Debug)]
struct FusedMatmulAddReluBackward;

impl<B: Backend> Backward<B, 3> for FusedMatmulAddReluBackward {
    type State = BackwardState<IntTensor<B>, InnerOps<B>>;

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_lhs, node_rhs, node_bias] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let state = ops.state;
        let shapes = &state.shapes;

        if state.output_shape.num_elements() == 0 {
            // Every gradient sums over an empty set of outputs. (Burn's own kernels are not all
            // safe on empty tensors, so none is launched.)
            //
            // The empty `grad` usually comes from elementwise work on empty tensors (the loss's
            // and its backward's) that Fusion still holds, unlaunched. Burn 0.23.0-pre.1 sizes a
            // fused elementwise launch by its trace's first block, so an empty first block makes
            // the whole launch zero-sized, and the work fused after it (the next step's, on
            // non-empty tensors) is silently dropped, its outputs left as stale memory. Flushing
            // here launches the pending empty work on its own.
            if let Err(error) = B::flush(&grad.device()) {
                panic!("{OP_NAME} backward: the device failed to run its pending work: {error}");
            }
            for (node, shape) in [
                (node_lhs, &shapes.lhs),
                (node_rhs, &shapes.rhs),
                (node_bias, &shapes.bias),
            ] {
                if let Some(node) = node {
                    grads.register::<B>(node.id, zeros_like::<B>(&grad, shape.clone()));
                }
            }
            return;
        }

        // d relu(x) / dx is 1 where the output is positive, 0 elsewhere (x = 0 included). When
        // the bias is shared by every row, its gradient (the column sums) comes from the same
        // pass; otherwise it is summed from the masked gradient below.
        let bias_by_columns =
            node_bias.is_some() && shared_by_every_row(&shapes.bias, &state.output_shape);
        let (grad_pre_relu, column_sums) = if bias_by_columns {
            let (gated, sums) = (state.ops.masked_gradient_with_column_sums)(grad, state.mask);
            (gated, Some(sums))
        } else {
            ((state.ops.masked_gradient)(grad, state.mask), None)
        };
        let matmul = state.ops.matmul;

        if let Some(node) = node_lhs {
            let rhs: FloatTensor<B> = checkpointer.retrieve_node_output(
                state
                    .rhs
                    .expect("rhs is checkpointed whenever lhs is tracked"),
            );
            let grad_lhs =
                matmul_or_zeros::<B>(grad_pre_relu.clone(), B::float_transpose(rhs), matmul);
            grads.register::<B>(node.id, broadcast_shape::<B>(grad_lhs, &shapes.lhs));
        }
        if let Some(node) = node_rhs {
            let lhs: FloatTensor<B> = checkpointer.retrieve_node_output(
                state
                    .lhs
                    .expect("lhs is checkpointed whenever rhs is tracked"),
            );
            let grad_rhs = grad_of_rhs::<B>(lhs, grad_pre_relu.clone(), &shapes.rhs, matmul);
            grads.register::<B>(node.id, grad_rhs);
        }
        if let Some(node) = node_bias {
            let grad_bias = match column_sums {
                Some(sums) => B::float_reshape(sums, shapes.bias.clone()),
                None => sum_to_shape::<B>(grad_pre_relu, &shapes.bias),
            };
            grads.register::<B>(node.id, grad_bias);
        }
    }
}

/// Whether a bias of shape `bias` is the same for every row of an output of shape `output`:
/// it has the output's columns, and its other dims are all 1 (or absent), as a `Linear` bias
/// `[n]` has. Its gradient is then the masked gradient's column sums.
fn shared_by_every_row(bias: &Shape, output: &Shape) -> bool {
    let rank = bias.num_dims();
    rank >= 1
        && bias[rank - 1] == output[output.num_dims() - 1]
        && bias[..rank - 1].iter().all(|&d| d == 1)
}

/// Zeros of `shape` on `like`'s device, in its dtype.
///
/// Uploaded rather than made with `float_zeros`: under Fusion, a fill is elementwise work, which
/// Burn 0.23.0-pre.1 drops when it is fused after elementwise work on an empty tensor (see the
/// flush in the backward above), leaving stale memory.
fn zeros_like<B: Backend>(like: &FloatTensor<B>, shape: Shape) -> FloatTensor<B> {
    let data = TensorData::full_dtype(shape, 0.0, like.dtype());
    B::float_from_data(data, &like.device())
}

/// `lhsᵀ @ grad` reduced to `rhs_shape`. When `rhs` is shared by every batch (its batch dims are
/// all 1, as a `Linear` weight is), the batch is folded into the product's inner dim instead:
/// `lhs` `[B.., m, k]` read as `[1.., B m, k]` and `grad` as `[1.., B m, n]`, so one product
/// sums over the batch as it goes, with no `[B.., k, n]` intermediate and no reduction after it.
/// (The reshapes are free for contiguous tensors, which a forward input and `grad` usually
/// are.)
fn grad_of_rhs<B: Backend>(
    lhs: FloatTensor<B>,
    grad: FloatTensor<B>,
    rhs_shape: &Shape,
    matmul: Matmul<B>,
) -> FloatTensor<B> {
    let (lhs_shape, grad_shape) = (lhs.shape(), grad.shape());
    let rank = grad_shape.num_dims();
    let batch: usize = grad_shape[..rank - 2].iter().product();
    let shared_rhs = rhs_shape.num_dims() == rank && rhs_shape[..rank - 2].iter().all(|&d| d == 1);
    if shared_rhs && batch > 1 && lhs_shape[..rank - 2] == grad_shape[..rank - 2] {
        let folded = |shape: &Shape, cols: usize| {
            let mut dims = vec![1; rank - 2];
            dims.extend([batch * shape[rank - 2], cols]);
            Shape::from(dims)
        };
        let lhs = B::float_reshape(lhs, folded(&lhs_shape, lhs_shape[rank - 1]));
        let grad = B::float_reshape(grad, folded(&grad_shape, grad_shape[rank - 1]));
        return matmul_or_zeros::<B>(B::float_transpose(lhs), grad, matmul);
    }
    let grad_rhs = matmul_or_zeros::<B>(B::float_transpose(lhs), grad, matmul);
    broadcast_shape::<B>(grad_rhs, rhs_shape)
}

/// `lhs @ rhs` with batch broadcasting, through `matmul`. When either operand is empty (the
/// inner dim is 0, or the product itself is empty) the result is zeros of the product's shape,
/// made without a matmul launch: Burn's matmul is not safe on empty operands.
fn matmul_or_zeros<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    matmul: Matmul<B>,
) -> FloatTensor<B> {
    let (lhs_shape, rhs_shape) = (lhs.shape(), rhs.shape());
    if lhs_shape.num_elements() == 0 || rhs_shape.num_elements() == 0 {
        let rank = lhs_shape.num_dims();
        let mut shape: Vec<usize> = (0..rank - 2)
            .map(|dim| match (lhs_shape[dim], rhs_shape[dim]) {
                (1, other) | (other, 1) => other,
                (same, _) => same,
            })
            .collect();
        shape.extend([lhs_shape[rank - 2], rhs_shape[rank - 1]]);
        return zeros_like::<B>(&lhs, Shape::from(shape));
    }
    matmul(lhs, rhs)
}

/// Sums `grad` (in the output's shape) down to `shape`, which broadcast to it from the right:
/// over the leading dims `shape` lacks and over its size-1 dims, in one reduction, then reshapes
/// to `shape` itself (so a `[n]` bias gets an `[n]` gradient).
fn sum_to_shape<B: Backend>(grad: FloatTensor<B>, shape: &Shape) -> FloatTensor<B> {
    let grad_shape = grad.shape();
    let skip = grad_shape.num_dims() - shape.num_dims();
    let dims: Vec<usize> = (0..grad_shape.num_dims())
        .filter(|&dim| dim < skip || (shape[dim - skip] == 1 && grad_shape[dim] != 1))
        .collect();
    let summed = match dims.as_slice() {
        [] => grad,
        [dim] => B::float_sum_dim(grad, *dim),
        dims => B::float_sum_dims(grad, dims),
    };
    B::float_reshape(summed, shape.clone())
}
