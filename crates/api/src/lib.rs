//! fmar: `relu(lhs @ rhs + bias)` as one fused CubeCL kernel for Burn, with a handwritten
//! backward pass and lazy Fusion registration, behind a `Tensor` API with no backend generic.
//!
//! The public API layer (the top of fmar's stack), and the crate users depend on. It owns the
//! extension trait [`FusedMatmulAddReluBackend`]: `#[backend_extension]` generates its runtime
//! dispatch and its lazy Fusion implementation here, and Rust's orphan rule puts the trait's
//! impls for Burn's `CubeBackend` and `Autodiff<B, C>` here as well. Each impl is one call into
//! the layer that does the work (`fmar-backend-ext`, `fmar-autodiff`).
//!
//! | call | ranks | on bad input |
//! |---|---|---|
//! | [`matmul_add_relu`] | `Tensor<3>` operands and bias (the original 3-D signature) | panics |
//! | [`try_matmul_add_relu`] | same | returns [`Error`] |
//! | [`matmul_add_relu_nd`] | any rank `D >= 2`, bias of any rank `<= D` (a `Linear` bias is `[n]`) | panics |
//! | [`try_matmul_add_relu_nd`] | same | returns [`Error`] |
//! | [`FusedLinearRelu`] | a Burn `Module`, drop-in for `Linear` + `Relu` | panics |
//!
//! [`default_device`] finds the fastest device on the machine (a CUDA GPU, then a wgpu GPU, then
//! the CPU through Burn's Flex backend, so fmar works with no GPU and no driver; a software
//! rasterizer is not taken for a GPU).
//!
//! ```
//! use burn::tensor::{Distribution, Tensor};
//!
//! let device = fmar::default_device().device; // CUDA, else wgpu, else the CPU
//! let x = Tensor::<3>::random([2, 64, 32], Distribution::Default, &device);
//! let w = Tensor::<3>::random([1, 32, 16], Distribution::Default, &device);
//! let b = Tensor::<1>::random([16], Distribution::Default, &device);
//! let out = fmar::matmul_add_relu_nd(x, w, b);
//! assert_eq!(out.dims(), [2, 64, 16]);
//! ```

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::fusion::custom::TensorSpec;
use burn::backend::ops::FloatTensorOps;
use burn::backend::{
    Autodiff, AutodiffBackend, Dispatch, Flex, backend_extension,
    tensor::{FloatTensor, IntTensor},
};
use burn::tensor::{DType, Tensor, activation};
use burn_cubecl::CubeBackend;
use fmar_backend_ext::prechecked;
use fmar_fusion_meta::{
    Input, MASK_DTYPE, check_call, mask_shape, matmul_shape, output_dtype, output_shape,
};

pub use device::{
    Adapter, DEVICE_VARIABLE, DeviceChoice, Probe, Runtime, choose, default_device, device_names,
    try_default_device,
};
pub use fmar_fusion_meta::{Error, SUPPORTED_DTYPES};
pub use module::{FusedLinearRelu, FusedLinearReluConfig, FusedMlp, FusedMlpConfig};

pub mod data_parallel;
mod device;
mod module;

/// `Result` with fmar's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The extension trait that adds the fused operation to Burn's backends.
///
/// `#[backend_extension(Autodiff, Cube, Flex, Fusion)]` implements it for `Dispatch` (runtime
/// selection by the tensors' device) and, lazily, for `Fusion<B>`: Fusion records the operation
/// with the shape and dtype from [`fmar_fusion_meta`] and runs the backend's forward when its
/// queue executes.
#[backend_extension(Autodiff, Cube, Flex, Fusion)]
pub trait FusedMatmulAddReluBackend: burn::backend::Backend {
    /// `relu(lhs @ rhs + bias)` on backend primitives. `bias` broadcasts to the output.
    ///
    /// The inputs must be valid: the `Tensor` functions of this crate check every rule at the
    /// call ([`try_matmul_add_relu_nd`]), and the backends trust that check rather than repeat
    /// it where the operation executes (under Fusion, when its queue runs). Called directly,
    /// inputs that give no output shape or dtype panic with [`Error`]'s message; the rules
    /// that ask the device (one device, its dtypes, its buffer limit) are checked again in
    /// debug builds only.
    #[fusion(
        dtype = output_dtype(lhs, rhs, bias),
        shape = output_shape(lhs, rhs, bias)
    )]
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self>;

    /// [`fused_matmul_add_relu`](Self::fused_matmul_add_relu) for a call whose backward will
    /// run: the output, and its ReLU mask, one bit per element (`u32` words of shape
    /// [`mask_shape`] of the output), which the backward keeps
    /// instead of the output. On `CubeBackend` the kernel's epilogue writes it on a Hopper GPU,
    /// a light pass over the output elsewhere; on other backends it is packed on the host.
    /// Its inputs must be valid, as those of
    /// [`fused_matmul_add_relu`](Self::fused_matmul_add_relu).
    #[fusion(meta = keeping_mask_meta)]
    fn fused_matmul_add_relu_keeping_mask(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, IntTensor<Self>);

    /// The backward's first step: `grad ⊙ mask` (the output gradient let through where the
    /// forward's output was positive), in one pass over `grad`.
    #[fusion(dtype = grad, shape = grad)]
    fn masked_gradient(grad: FloatTensor<Self>, mask: IntTensor<Self>) -> FloatTensor<Self>;

    /// [`masked_gradient`](Self::masked_gradient), and from the same reads its sum over every
    /// dim but the last (`[n]`, in `grad`'s dtype): the gradient of a bias shared by every row.
    #[fusion(meta = with_column_sums_meta)]
    fn masked_gradient_with_column_sums(
        grad: FloatTensor<Self>,
        mask: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// `lhs @ rhs` with broadcast batch dims: the backward's gradient products (`grad @ rhsᵀ`,
    /// `lhsᵀ @ grad`, transposes as views). On `CubeBackend` it runs on fmar's Hopper kernel
    /// where that kernel runs (a Hopper GPU; `f16`, `bf16`, and `f32` through TF32), else on
    /// the backend's own matmul, as on every other backend.
    ///
    /// Panics on invalid inputs, like the backend's own matmul.
    #[fusion(dtype = lhs, shape = matmul_shape(lhs, rhs))]
    fn gradient_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// One impl for every CubeCL runtime: a tensor's device says which one it runs on.
///
/// The forwards are the ones for a checked call: this impl is what Fusion runs when it executes
/// an operation [`try_matmul_add_relu_nd`] checked and registered.
impl FusedMatmulAddReluBackend for CubeBackend {
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        prechecked::fused_matmul_add_relu(lhs, rhs, bias)
    }

    fn fused_matmul_add_relu_keeping_mask(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        prechecked::fused_matmul_add_relu_keeping_mask(lhs, rhs, bias)
    }

    fn masked_gradient(grad: FloatTensor<Self>, mask: IntTensor<Self>) -> FloatTensor<Self> {
        fmar_backend_ext::masked_gradient(grad, mask)
    }

    fn masked_gradient_with_column_sums(
        grad: FloatTensor<Self>,
        mask: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        fmar_backend_ext::masked_gradient_with_column_sums(grad, mask)
    }

    fn gradient_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        fmar_backend_ext::matmul(lhs, rhs)
    }
}

/// The CPU fallback: Burn's pure-Rust `Flex` backend, where the function is composed from
/// Flex's own operations: its matmul is a blocked SIMD GEMM, 1.8-3.3x the GFLOP/s of a fused
/// loop on two cores (the benchmark crate's `flex_choice` measures both).
/// [`try_matmul_add_relu_nd`] has checked the call before dispatching it here.
impl FusedMatmulAddReluBackend for Flex {
    fn fused_matmul_add_relu(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        prechecked::composed_matmul_add_relu::<Flex>(lhs, rhs, bias)
    }

    fn fused_matmul_add_relu_keeping_mask(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        // Flex keeps its tensors on the host: the mask is packed there, from the output's own
        // memory.
        let output = prechecked::composed_matmul_add_relu::<Flex>(lhs, rhs, bias);
        fmar_autodiff::host_mask::pack_relu_mask::<Flex>(output)
    }

    fn masked_gradient(grad: FloatTensor<Self>, mask: IntTensor<Self>) -> FloatTensor<Self> {
        fmar_autodiff::host_mask::masked_gradient::<Flex>(grad, mask)
    }

    fn masked_gradient_with_column_sums(
        grad: FloatTensor<Self>,
        mask: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        fmar_autodiff::host_mask::masked_gradient_with_column_sums::<Flex>(grad, mask)
    }

    fn gradient_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        <Flex as FloatTensorOps<Flex>>::float_matmul(lhs, rhs)
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
        fmar_autodiff::fused_matmul_add_relu::<B, C>(
            lhs,
            rhs,
            bias,
            fmar_autodiff::InnerOps {
                forward: B::fused_matmul_add_relu,
                forward_keeping_mask: B::fused_matmul_add_relu_keeping_mask,
                masked_gradient: B::masked_gradient,
                masked_gradient_with_column_sums: B::masked_gradient_with_column_sums,
                matmul: B::gradient_matmul,
            },
        )
    }

    /// The inner backend's, on untracked tensors: fmar's backward calls the inner backend's
    /// ops directly, never these.
    fn fused_matmul_add_relu_keeping_mask(
        lhs: FloatTensor<Self>,
        rhs: FloatTensor<Self>,
        bias: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        let (output, mask) = B::fused_matmul_add_relu_keeping_mask(
            Self::inner(lhs),
            Self::inner(rhs),
            Self::inner(bias),
        );
        (Self::from_inner(output), mask)
    }

    /// The inner backend's, on untracked tensors (see above).
    fn masked_gradient(grad: FloatTensor<Self>, mask: IntTensor<Self>) -> FloatTensor<Self> {
        Self::from_inner(B::masked_gradient(Self::inner(grad), mask))
    }

    /// The inner backend's, on untracked tensors (see above).
    fn masked_gradient_with_column_sums(
        grad: FloatTensor<Self>,
        mask: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (gated, sums) = B::masked_gradient_with_column_sums(Self::inner(grad), mask);
        (Self::from_inner(gated), Self::from_inner(sums))
    }

    /// Burn's differentiable matmul: fmar's backward calls the inner backend's
    /// `gradient_matmul`, never this one.
    fn gradient_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        <Self as FloatTensorOps<Self>>::float_matmul(lhs, rhs)
    }
}

/// What Fusion records for [`FusedMatmulAddReluBackend::fused_matmul_add_relu_keeping_mask`]:
/// the output's shape and dtype, and its mask's.
fn keeping_mask_meta(
    lhs: &TensorSpec,
    rhs: &TensorSpec,
    bias: &TensorSpec,
) -> (TensorSpec, TensorSpec) {
    let shape = output_shape(&lhs.shape, &rhs.shape, &bias.shape);
    let mask = TensorSpec::new(mask_shape(&shape), MASK_DTYPE);
    let dtype = output_dtype(lhs.dtype, rhs.dtype, bias.dtype);
    (TensorSpec::new(shape, dtype), mask)
}

/// What Fusion records for
/// [`FusedMatmulAddReluBackend::masked_gradient_with_column_sums`]: the gradient's shape, and
/// `[n]`, both in its dtype.
fn with_column_sums_meta(grad: &TensorSpec, _mask: &TensorSpec) -> (TensorSpec, TensorSpec) {
    let n = grad.shape[grad.shape.num_dims() - 1];
    let sums = TensorSpec::new(burn::tensor::Shape::from(vec![n]), grad.dtype);
    (grad.clone(), sums)
}

/// `relu(lhs @ rhs + bias)` in one fused kernel, differentiable, on `Tensor<3>`s: the original
/// 3-D signature. See [`try_matmul_add_relu_nd`] for the rules.
///
/// # Panics
///
/// With [`Error`]'s message when [`try_matmul_add_relu`] would return it.
pub fn matmul_add_relu(lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<3>) -> Tensor<3> {
    matmul_add_relu_nd(lhs, rhs, bias)
}

/// [`matmul_add_relu`], returning an [`Error`] instead of panicking.
pub fn try_matmul_add_relu(lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<3>) -> Result<Tensor<3>> {
    try_matmul_add_relu_nd(lhs, rhs, bias)
}

/// `relu(lhs @ rhs + bias)` in one fused kernel, differentiable, at any rank.
///
/// # Panics
///
/// With [`Error`]'s message when [`try_matmul_add_relu_nd`] would return it.
pub fn matmul_add_relu_nd<const D: usize, const B: usize>(
    lhs: Tensor<D>,
    rhs: Tensor<D>,
    bias: Tensor<B>,
) -> Tensor<D> {
    try_matmul_add_relu_nd(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// `relu(lhs @ rhs + bias)` in one fused kernel, differentiable, at any rank, or why not.
///
/// - `lhs` is `[B.., m, k]` and `rhs` is `[B.., k, n]`, `D >= 2`. Batch dims broadcast as in
///   `Tensor::matmul` (each pair equal, or one of them 1).
/// - `bias` broadcasts to the output `[B.., m, n]` from the right: `[n]` (a `Linear` bias),
///   `[1, n]`, `[m, 1]`, `[b, 1, n]`, the full shape, ... It is never expanded in memory, and
///   its gradient comes back in its own shape.
/// - All three share one device and one dtype, `F32`, `F16` or `BF16`, which the device must
///   support ([`Device::supports_dtype`](burn::tensor::Device::supports_dtype)). Half precisions
///   accumulate in f32.
/// - Any strides: transposed and sliced views are read in place, without a copy.
/// - Zero sizes are legal: `k = 0` gives `relu(bias)`; `m = 0` or `n = 0` an empty output.
///   (Under Fusion, Burn 0.23.0-pre.1 can drop elementwise work fused after elementwise work on
///   an empty tensor; the backward of an empty output flushes the device's pending work so that
///   the loss's work on it stays apart from what follows; empty tensors elsewhere in a graph
///   remain exposed to it.)
///
/// Every check runs here, before the operation is dispatched or registered with Fusion, so no
/// error first appears when the result is read. NaN and infinities follow IEEE arithmetic as in
/// the reference (ARCHITECTURE.md, "The operation's rules", has the details).
///
/// ```
/// use burn::tensor::Tensor;
///
/// let device = fmar::default_device().device;
/// let x = Tensor::<2>::ones([4, 3], &device);
/// let w = Tensor::<2>::ones([5, 2], &device); // k = 5, but x has k = 3
/// let b = Tensor::<1>::zeros([2], &device);
/// match fmar::try_matmul_add_relu_nd(x, w, b) {
///     Err(fmar::Error::InnerDim { lhs, rhs }) => println!("refused: {lhs} @ {rhs}"),
///     other => panic!("expected an inner-dim error, got {other:?}"),
/// }
/// ```
pub fn try_matmul_add_relu_nd<const D: usize, const B: usize>(
    lhs: Tensor<D>,
    rhs: Tensor<D>,
    bias: Tensor<B>,
) -> Result<Tensor<D>> {
    check_inputs(&lhs, &rhs, &bias)?;
    let output = Dispatch::fused_matmul_add_relu(
        lhs.into_dispatch(),
        rhs.into_dispatch(),
        bias.into_dispatch(),
    );
    Ok(Tensor::from_dispatch(output))
}

/// The reference: the same function composed from Burn's own operations,
/// `relu(lhs.matmul(rhs) + bias)`. Under Fusion, Burn folds the add and the ReLU into its matmul.
pub fn matmul_add_relu_reference(lhs: Tensor<3>, rhs: Tensor<3>, bias: Tensor<3>) -> Tensor<3> {
    matmul_add_relu_reference_nd(lhs, rhs, bias)
}

/// [`matmul_add_relu_reference`] at any rank; `bias` broadcasts from the right.
pub fn matmul_add_relu_reference_nd<const D: usize, const B: usize>(
    lhs: Tensor<D>,
    rhs: Tensor<D>,
    bias: Tensor<B>,
) -> Tensor<D> {
    activation::relu(lhs.matmul(rhs) + bias.unsqueeze::<D>())
}

/// Every rule of [`try_matmul_add_relu_nd`], checked on metadata only (nothing is read back).
/// The one check of the call: the backends that run it trust it.
fn check_inputs<const D: usize, const B: usize>(
    lhs: &Tensor<D>,
    rhs: &Tensor<D>,
    bias: &Tensor<B>,
) -> Result<()> {
    let (devices, shapes) = (
        [lhs.device(), rhs.device(), bias.device()],
        [lhs.shape(), rhs.shape(), bias.shape()],
    );
    let dtypes: [DType; 3] = [lhs.dtype(), rhs.dtype(), bias.dtype()];
    let [lhs, rhs, bias] = std::array::from_fn(|i| Input::new(&devices[i], dtypes[i], &shapes[i]));
    let device = &devices[0];
    fmar_backend_ext::diagnostics::check_kernel_variable()?;
    check_call(
        lhs,
        rhs,
        bias,
        |dtype| device.supports_dtype(dtype),
        max_allocation(device),
    )?;
    Ok(())
}

/// The most bytes `device` allocates in one buffer, where its runtime says (on a CubeCL device,
/// [`fmar_backend_ext::max_buffer_bytes`]). Burn's Flex allocates on the host and states no
/// limit.
fn max_allocation(device: &burn::tensor::Device) -> Option<u64> {
    match device.as_dispatch().clone().inner() {
        burn::backend::DispatchDevice::Cube(device) => {
            Some(fmar_backend_ext::max_buffer_bytes(&device.client()))
        }
        #[allow(unreachable_patterns)]
        _ => device.memory_capacity(),
    }
}

/// The kernel variants: fmar's portable kernels, its Hopper kernels ([`kernel::HopperPath`]) and
/// cubek's routines with fmar's epilogue ([`kernel::Routine`]). Which one runs is fmar's own
/// choice (by measurement with the `autotune` feature, cached per dtype, size and layout; by a
/// heuristic without it); [`diagnostics`] pins one and says which ran.
#[doc(inline)]
pub use fmar_backend_ext::kernel;

/// What fmar did, and control over which kernel does it: for experiments, benchmarks and tests.
///
/// - [`force_variant`](diagnostics::force_variant), or the `FMAR_KERNEL` environment variable
///   ([`KERNEL_VARIABLE`](diagnostics::KERNEL_VARIABLE)) naming a [`kernel::Variant::name`],
///   pins a variant for every later launch of the process; a pinned variant that cannot run a
///   problem on the device falls back to fmar's own choice. A `FMAR_KERNEL` that names no
///   variant is [`Error::UnknownKernel`] at every call, before anything runs.
/// - [`last_launched_variant`](diagnostics::last_launched_variant) says which variant ran last,
///   and [`hopper_unavailability`](diagnostics::hopper_unavailability) why no Hopper kernel can
///   run on a device, if none can.
/// - The counters say which code path ran: a result equal to the reference proves nothing
///   about which path made it.
pub mod diagnostics {
    pub use fmar_backend_ext::diagnostics::{
        KERNEL_VARIABLE, UnknownVariant, force_variant, forced_variant, hopper_unavailability,
        last_launched_variant,
    };

    /// How many fused forwards this process has handed to fmar's kernel.
    ///
    /// Under Fusion the kernel runs when Fusion executes its queue (at the latest when a result
    /// is read back), so the count moves then, not at the call.
    pub fn kernel_launches() -> u64 {
        fmar_backend_ext::diagnostics::kernel_launches()
    }

    /// How many of the backward's gradient products ran on fmar's Hopper kernels (the others
    /// ran on the backend's own matmul).
    pub fn gradient_product_launches() -> u64 {
        fmar_backend_ext::diagnostics::product_launches()
    }

    /// How many inputs fmar copied before a launch. Strided views (transposes, slices,
    /// broadcasts) are read in place; only storage-tiled tensors are copied.
    pub fn input_copies() -> u64 {
        fmar_backend_ext::diagnostics::input_copies()
    }
}
