//! The forward on Burn's `CubeBackend`: the fused kernel, with operands presented as views
//! (broadcast dims as stride 0, transposed or sliced inputs through their own strides, no
//! copies).

use burn::backend::Backend;
use burn::backend::cubecl::dtype_to_storage_type;
use burn::backend::ops::FloatTensorOps;
use burn::tensor::DType;
use burn::tensor::Shape;
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::client::Client;
use cubecl::prelude::TensorBinding;
use fmar_fusion_meta::{
    Error, Input, MASK_DTYPE, OP_NAME, OutputMeta, check_call, mask_shape, matmul_shape,
    trusted_output,
};
use std::sync::atomic::{AtomicU64, Ordering};

static KERNEL_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static INPUT_COPIES: AtomicU64 = AtomicU64::new(0);
static PRODUCT_LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// How many fused forwards this process has handed to the kernel crate.
///
/// Tests read it to tell fmar's kernel from the composed reference, whose result may be equal:
/// an equal result proves nothing about which path produced it.
pub fn kernel_launches() -> u64 {
    KERNEL_LAUNCHES.load(Ordering::SeqCst)
}

/// How many input tensors this process has copied before a launch. The kernel reads any
/// strided view in place, so the only copies are of storage-tiled tensors (a layout some of
/// Burn's matmuls write), which have no row-major strides to read through.
pub fn input_copies() -> u64 {
    INPUT_COPIES.load(Ordering::SeqCst)
}

/// How many plain products ([`matmul`]) this process has run on fmar's Hopper kernel, rather
/// than on Burn's matmul.
pub fn product_launches() -> u64 {
    PRODUCT_LAUNCHES.load(Ordering::SeqCst)
}

/// The most bytes the device of `client` allocates in one buffer: CubeCL's limit per allocation
/// (on CUDA a quarter of the device's memory; on wgpu the adapter's largest storage buffer).
///
/// The runtime's allocator refuses a larger buffer only when the queue runs, as an error
/// attached to the buffer; checking a call against this limit makes it a typed error before
/// anything is registered or launched.
pub fn max_buffer_bytes(client: &Client) -> u64 {
    client.properties().memory.max_page_size
}

/// `relu(lhs @ rhs + bias)` on a CubeCL device, in one kernel, or the reason it cannot run.
///
/// The checks are [`fmar_fusion_meta::check_call`]'s, with the device's own answer to whether it
/// runs the dtype, so an unsupported dtype never reaches the compiler. Nothing is launched on
/// error.
pub fn try_fused_matmul_add_relu(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
) -> Result<CubeTensor, Error> {
    let output = check(&lhs, &rhs, &bias)?;
    Ok(launch_fused(lhs, rhs, bias, output, false).0)
}

/// [`try_fused_matmul_add_relu`] for a call whose backward will run: also the output's ReLU
/// mask, one bit per element (`[B.., m, ceil(n / 32)]` `u32`, the kernel crate's layout), which
/// the backward keeps instead of the output. On a Hopper GPU the kernel's epilogue writes it;
/// elsewhere a light pass over the output packs it.
pub fn try_fused_matmul_add_relu_keeping_mask(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
) -> Result<(CubeTensor, CubeTensor), Error> {
    let output = check(&lhs, &rhs, &bias)?;
    Ok(with_mask(launch_fused(lhs, rhs, bias, output, true)))
}

/// [`try_fused_matmul_add_relu_keeping_mask`], panicking with the error's message.
pub fn fused_matmul_add_relu_keeping_mask(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    try_fused_matmul_add_relu_keeping_mask(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// The fused forward of a call already checked ([`crate::prechecked`]), with the ReLU mask when
/// `keep_mask` is set.
pub(crate) fn launch_prechecked(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
    keep_mask: bool,
) -> (CubeTensor, Option<CubeTensor>) {
    let output = trusted_output(
        input(&lhs),
        input(&rhs),
        input(&bias),
        |dtype| CubeBackend::supports_dtype(&lhs.device, dtype),
        || Some(max_buffer_bytes(&lhs.client)),
    );
    launch_fused(lhs, rhs, bias, output, keep_mask)
}

/// Every rule of the operation for the three tensors, on their device, and a readable
/// `FMAR_KERNEL`.
fn check(lhs: &CubeTensor, rhs: &CubeTensor, bias: &CubeTensor) -> Result<OutputMeta, Error> {
    crate::diagnostics::check_kernel_variable()?;
    check_call(
        input(lhs),
        input(rhs),
        input(bias),
        |dtype| CubeBackend::supports_dtype(&lhs.device, dtype),
        Some(max_buffer_bytes(&lhs.client)),
    )
}

/// A tensor's metadata, as the rules read it.
fn input(tensor: &CubeTensor) -> Input<'_, burn_cubecl::CubeDevice> {
    Input::new(&tensor.device, tensor.dtype, tensor.meta.shape())
}

/// The output and mask of a launch that was asked for its mask.
pub(crate) fn with_mask(
    (output, mask): (CubeTensor, Option<CubeTensor>),
) -> (CubeTensor, CubeTensor) {
    (output, mask.expect("a mask is made when asked for"))
}

/// The fused launch of a checked call whose output is `output`, with the ReLU mask when
/// `keep_mask` is set.
fn launch_fused(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
    output: OutputMeta,
    keep_mask: bool,
) -> (CubeTensor, Option<CubeTensor>) {
    let OutputMeta {
        shape: out_shape,
        dtype,
    } = output;
    let output = empty_device_contiguous_dtype(
        lhs.client.clone(),
        lhs.device.clone(),
        out_shape.clone(),
        dtype,
    );
    let mask = keep_mask.then(|| {
        empty_device_contiguous_dtype(
            lhs.client.clone(),
            lhs.device.clone(),
            mask_shape(&out_shape),
            MASK_DTYPE,
        )
    });
    if out_shape.num_elements() == 0 {
        return (output, mask);
    }

    let client = output.client.clone();
    let (lhs, rhs) = matmul_views(readable(lhs), readable(rhs), &out_shape);
    let operands = fmar_kernel::Operands {
        lhs,
        rhs,
        bias: broadcast_view(readable(bias), &out_shape),
        out: output.clone().binding(),
    };
    KERNEL_LAUNCHES.fetch_add(1, Ordering::SeqCst);
    let dtype = dtype_to_storage_type(dtype);
    // The kernel crate checks its launch contract (shapes, strides, buffer bounds) on every
    // launch, whatever was checked here: that check guards its unchecked kernel launches, so it
    // is the kernel crate's safety boundary, not a repeat of the call's validation.
    let launched = match &mask {
        Some(mask) => {
            fmar_kernel::launch_keeping_mask(&client, operands, mask.clone().binding(), dtype)
        }
        None => fmar_kernel::launch(&client, operands, dtype),
    };
    if let Err(error) = launched {
        // The call's rules admit only operands the kernel contract accepts: reaching this is a
        // bug in fmar, never in a checked caller's input.
        panic!("{OP_NAME}: internal error, the kernel refused its operands: {error}");
    }
    (output, mask)
}

/// [`try_fused_matmul_add_relu`], panicking with the error's message.
pub fn fused_matmul_add_relu(lhs: CubeTensor, rhs: CubeTensor, bias: CubeTensor) -> CubeTensor {
    try_fused_matmul_add_relu(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// `lhs @ rhs` with broadcast batch dims, for the backward's gradient products: on fmar's Hopper
/// kernel where it runs (a Hopper GPU; `f16` or `bf16` operands, or `f32` rounded to TF32 as
/// Burn's own f32 matmul rounds them, whose strides the TMA engine can follow, transposed views
/// included), else on Burn's own matmul. The operands are valid
/// (the forward checked them); a product with no elements, or `k = 0`, goes to Burn's matmul,
/// as does a storage-tiled operand.
pub fn matmul(lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor {
    let out_shape = matmul_shape(lhs.meta.shape(), rhs.meta.shape());
    let rank = out_shape.num_dims();
    let k = lhs.meta.shape()[rank - 1];
    let dtype = lhs.dtype;
    let worth_trying = matches!(dtype, DType::F16 | DType::BF16 | DType::F32)
        && out_shape.num_elements() > 0
        && k > 0
        && !lhs.meta.is_tiled()
        && !rhs.meta.is_tiled()
        && fmar_kernel::hopper_unavailability(&lhs.client).is_none();
    if worth_trying {
        let output = empty_device_contiguous_dtype(
            lhs.client.clone(),
            lhs.device.clone(),
            out_shape.clone(),
            dtype,
        );
        let (lhs, rhs) = matmul_views(lhs.clone().binding(), rhs.clone().binding(), &out_shape);
        let operands = fmar_kernel::ProductOperands {
            lhs,
            rhs,
            out: output.clone().binding(),
        };
        match fmar_kernel::launch_product(&output.client, operands, dtype_to_storage_type(dtype)) {
            Ok(()) => {
                PRODUCT_LAUNCHES.fetch_add(1, Ordering::SeqCst);
                return output;
            }
            // A layout the TMA engine cannot read: Burn's matmul runs it.
            Err(error) if error.is_variant_specific() => {}
            Err(error) => {
                panic!("{OP_NAME}: internal error, the kernel refused a gradient product: {error}")
            }
        }
    }
    <CubeBackend as FloatTensorOps<CubeBackend>>::float_matmul(lhs, rhs)
}

/// The backward's first step: `grad ⊙ mask` (`mask` from
/// [`fused_matmul_add_relu_keeping_mask`]), in one pass over `grad`.
pub fn masked_gradient(grad: CubeTensor, mask: CubeTensor) -> CubeTensor {
    launch_masked_gradient(grad, mask, false).0
}

/// [`masked_gradient`], and from the same reads the gradient's sum over every dim but the last
/// (`[n]`, in `grad`'s dtype, summed in f32): the gradient of a bias shared by every row.
pub fn masked_gradient_with_column_sums(
    grad: CubeTensor,
    mask: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    let (gated, sums) = launch_masked_gradient(grad, mask, true);
    (gated, sums.expect("column sums are made when asked for"))
}

fn launch_masked_gradient(
    grad: CubeTensor,
    mask: CubeTensor,
    column_sums: bool,
) -> (CubeTensor, Option<CubeTensor>) {
    // Read through its strides, broadcast dims included; only a storage-tiled tensor (which has
    // no row-major strides) is copied.
    let grad = if grad.meta.is_tiled() {
        into_contiguous(grad)
    } else {
        grad
    };
    let mask = into_contiguous(mask);
    let shape = grad.meta.shape().clone();
    let (dtype, client, device) = (grad.dtype, grad.client.clone(), grad.device.clone());
    let n = shape[shape.num_dims() - 1];
    let gated = empty_device_contiguous_dtype(client.clone(), device.clone(), shape.clone(), dtype);
    let sums = column_sums.then(|| {
        empty_device_contiguous_dtype(client.clone(), device, Shape::from(vec![n]), dtype)
    });
    let operands = fmar_kernel::MaskedGradient {
        grad: grad.binding(),
        mask: mask.binding(),
        out: gated.clone().binding(),
        column_sums: sums.clone().map(CubeTensor::binding),
    };
    if let Err(error) =
        fmar_kernel::launch_masked_gradient(&client, operands, dtype_to_storage_type(dtype))
    {
        panic!("{OP_NAME}: internal error, the masked gradient refused its operands: {error}");
    }
    (gated, sums)
}

/// `lhs` `[B.., m, k]` and `rhs` `[B.., k, n]` as the kernel contract wants them for an output
/// of `out_shape`: each with the output's batch dims, broadcast ones read with stride 0.
fn matmul_views(
    lhs: TensorBinding,
    rhs: TensorBinding,
    out_shape: &Shape,
) -> (TensorBinding, TensorBinding) {
    let rank = out_shape.num_dims();
    let (m, n) = (out_shape[rank - 2], out_shape[rank - 1]);
    let k = lhs.shape[lhs.shape.len() - 1];
    let with_batch = |tail: [usize; 2]| -> Vec<usize> {
        out_shape[..rank - 2].iter().copied().chain(tail).collect()
    };
    (
        broadcast_view(lhs, &with_batch([m, k])),
        broadcast_view(rhs, &with_batch([k, n])),
    )
}

/// The tensor's binding, copying only a storage-tiled tensor (see [`input_copies`]).
fn readable(tensor: CubeTensor) -> TensorBinding {
    if tensor.meta.is_tiled() {
        INPUT_COPIES.fetch_add(1, Ordering::SeqCst);
        return into_contiguous(tensor).binding();
    }
    tensor.binding()
}

/// Presents `binding` with shape `target`, which it broadcasts to, by the kernel contract's
/// broadcast rule ([`fmar_kernel::broadcast_strides`]). No data moves.
fn broadcast_view(mut binding: TensorBinding, target: &[usize]) -> TensorBinding {
    binding.strides =
        fmar_kernel::broadcast_strides(&binding.shape, &binding.strides, target).into();
    binding.shape = Shape::from(target.to_vec());
    binding
}
