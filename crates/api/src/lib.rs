//! fmar: `relu(lhs @ rhs + bias)` as one fused CubeCL kernel for Burn, with a handwritten
//! backward pass and lazy Fusion registration, behind a `Tensor` API with no backend generic.
//!
//! The public API layer (the top of fmar's stack), and the crate users depend on. It owns the
//! extension trait [`FusedMatmulAddReluBackend`]: `#[backend_extension]` generates its runtime
//! dispatch and its lazy Fusion implementation here, and Rust's orphan rule puts the trait's
//! impls for Burn's `CubeBackend` and `Autodiff<B, C>` here as well. Each impl is one call into
//! the layer that does the work (`fmar-backend-ext`, `fmar-autodiff`).
//!
//! ```no_run
//! use burn::tensor::{Device, Distribution, Tensor};
//!
//! let device = Device::default();
//! let lhs = Tensor::<3>::random([2, 64, 32], Distribution::Default, &device);
//! let rhs = Tensor::<3>::random([2, 32, 16], Distribution::Default, &device);
//! let bias = Tensor::<3>::random([2, 64, 16], Distribution::Default, &device);
//! let out = fmar::matmul_add_relu(lhs, rhs, bias);
//! assert_eq!(out.dims(), [2, 64, 16]);
//! ```

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::{Autodiff, Dispatch, backend_extension, tensor::FloatTensor};
use burn::tensor::{DType, Tensor, activation};
use burn_cubecl::CubeBackend;
use fmar_fusion_meta::{OP_NAME, output_shape, try_output_shape};

/// The extension trait that adds the fused operation to Burn's backends.
///
/// `#[backend_extension(Autodiff, Cube, Fusion)]` implements it for `Dispatch` (runtime
/// selection by the tensors' device) and, lazily, for `Fusion<B>`: Fusion records the operation
/// with the shape from [`fmar_fusion_meta::output_shape`] and runs the backend's forward when
/// its queue executes.
#[backend_extension(Autodiff, Cube, Fusion)]
pub trait FusedMatmulAddReluBackend: burn::backend::Backend {
    /// `relu(lhs @ rhs + bias)` on backend primitives.
    #[fusion(dtype = lhs, shape = output_shape(lhs, rhs, bias))]
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

/// One impl for every CubeCL runtime: a tensor's device says which one it runs on.
impl FusedMatmulAddReluBackend for CubeBackend {
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        fmar_backend_ext::fused_matmul_add_relu(lhs, rhs, bias)
    }
}

/// The handwritten backward pass, around whichever inner backend runs the forward.
impl<B: FusedMatmulAddReluBackend, C: CheckpointStrategy> FusedMatmulAddReluBackend
    for Autodiff<B, C>
{
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        fmar_autodiff::fused_matmul_add_relu::<B, C>(lhs, rhs, bias, B::fused_matmul_add_relu)
    }
}

/// `relu(lhs @ rhs + bias)` in one fused kernel, differentiable.
///
/// `lhs` is `[b, m, k]` and `rhs` is `[b, k, n]`, where either batch size may be 1 to broadcast;
/// `bias` has the output's shape `[b, m, n]`. All three share one device and one dtype (`F32`,
/// `F16` or `BF16`).
///
/// # Panics
///
/// With a message naming the argument and the shapes, dtypes or devices involved, when the
/// inputs break the rules above. The check runs here, before the operation is dispatched or
/// registered with Fusion.
pub fn matmul_add_relu(lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<3>) -> Tensor<3> {
    check_inputs(&lhs, &rhs, &bias);
    let output = Dispatch::fused_matmul_add_relu(
        lhs.into_dispatch(),
        rhs.into_dispatch(),
        bias.into_dispatch(),
    );
    Tensor::from_dispatch(output)
}

/// The reference: the same function composed from Burn's own operations,
/// `relu(lhs.matmul(rhs) + bias)`. Under Fusion, Burn folds the add and the ReLU into its matmul.
pub fn matmul_add_relu_reference(lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<3>) -> Tensor<3> {
    activation::relu(lhs.matmul(rhs) + bias)
}

/// The dtypes fmar computes in. Each accumulates in f32.
pub const SUPPORTED_DTYPES: [DType; 3] = fmar_backend_ext::SUPPORTED_DTYPES;

/// Checks device, dtype and shapes, panicking with a message that names the argument.
fn check_inputs<const D: usize>(lhs: &Tensor<D>, rhs: &Tensor<D>, bias: &Tensor<D>) {
    let device = lhs.device();
    for (name, other) in [("rhs", rhs), ("bias", bias)] {
        if other.device() != device {
            panic!(
                "{OP_NAME}: `{name}` is on device {:?} but `lhs` is on device {device:?}",
                other.device()
            );
        }
        if other.dtype() != lhs.dtype() {
            panic!(
                "{OP_NAME}: `{name}` has dtype {:?} but `lhs` has dtype {:?}",
                other.dtype(),
                lhs.dtype()
            );
        }
    }
    if !SUPPORTED_DTYPES.contains(&lhs.dtype()) {
        panic!(
            "{OP_NAME}: dtype {:?} is not supported (expected F32, F16 or BF16)",
            lhs.dtype()
        );
    }
    if let Err(error) = try_output_shape(&lhs.shape(), &rhs.shape(), &bias.shape()) {
        panic!("{error}");
    }
}

/// Counters that show which code path ran.
pub mod diagnostics {
    /// How many fused forwards this process has handed to fmar's kernel.
    ///
    /// Under Fusion the kernel runs when Fusion executes its queue (at the latest when a result
    /// is read back), so the count moves then, not at the call.
    pub fn kernel_launches() -> u64 {
        fmar_backend_ext::kernel_launches()
    }
}
