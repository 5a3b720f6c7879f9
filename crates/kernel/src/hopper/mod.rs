//! fmar's Hopper kernel ([`Variant::Hopper`](crate::Variant::Hopper)): TMA-fed stages and
//! warpgroup MMA, with the bias and ReLU applied from the registers.
//!
//! | module | what it holds |
//! |---|---|
//! | `plan` | which layouts the TMA engine can read, and how each operand is addressed |
//! | `wgmma` | the warpgroup MMA as inline PTX, and shared-memory matrix descriptors |
//! | `kernel` | the `#[cube]` kernel: producer unit, consumer warpgroups, epilogue |
//! | `mbarrier` | the stages' barriers as shared-memory words, through inline PTX |
//! | `tma` | the TMA engine's tiled loads and stores, through inline PTX |
//! | `cluster` | split-K's hand-over of partial sums between the cubes of a cluster |
//! | `transpose` | the K-major copy of an f32 operand that TF32 MMAs cannot read as it is |
//! | `fold` | a shared weight's batches as one batch of rows, for the few-row and swapped paths |
//! | `few_rows` | f32 at up to 8 rows (32 without TF32) with an N-major `rhs`: split-K with f32 FMAs, no copy; split-K's second kernel, which adds the slices and applies the epilogue |
//! | `few_rows_tma` | `few_rows`'s partial sums fed by the TMA engine (a producer unit and a ring of stages), at up to 8 rows where both operands' strides allow it and the weight is not shared by several batches |
//! | `few_rows_cluster` | the same product in one launch at up to 8 rows, where the column blocks fill the device and the weight is at most 128 MiB: a cluster of two cubes splits `k`, the first adds the other's sums from its shared memory and finishes |
//! | `swapped` | f32 at 9 to 128 rows with an N-major `rhs`: TF32 MMAs on the transposed product, the weight as the MMA's register operand, no copy; fed by `cp.async` where the TMA engine cannot read the operands |
//! | `swapped_tma` | the same product fed by the TMA engine, a producer unit and mbarriers |
//! | `swapped_tiles` | f32 above 128 rows with an N-major `rhs`: the same transposed product over whole 256-row tiles, finished in the kernel, no copy (where the TMA engine can read both operands) |
//!
//! The same kernel also runs plain products (`out = lhs @ rhs`, [`Epilogue::Plain`]), which
//! the backward's gradient products use through [`launch_product`](crate::launch_product).
//!
//! It runs on CUDA devices of compute capability 9.0 (the kernel uses `wgmma`, which only the
//! `sm_90a` target has) through cubecl's CUDA C++ compiler, for `f16` and `bf16` operands
//! whose strides the TMA engine can follow, and for `f32` operands rounded to TF32 where cubek's
//! matmul configuration allows it (`allow_tf32`, its default, as for Burn's own f32 matmuls).
//! With an N-major `rhs`, `f32` runs on `swapped` instead at 9 to 128 rows where TF32 is
//! allowed, and on `few_rows` (exact) at up to 8 rows, or 32 where TF32 is not allowed,
//! whatever the strides.
//! Anywhere else it reports itself unavailable, and the launch runs another variant.

mod cluster;
mod few_rows;
mod few_rows_cluster;
mod few_rows_tma;
mod fold;
mod kernel;
mod mbarrier;
pub(crate) mod plan;
#[cfg(all(test, feature = "cuda"))]
mod source;
mod swapped;
mod swapped_tiles;
mod swapped_tma;
mod tma;
mod transpose;
mod wgmma;

use crate::contract::Dims;
use crate::{LaunchError, Operands, Variant};
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::zspace::Tiling;
pub(crate) use kernel::Epilogue;
use kernel::{KernelConfig, fused_matmul_add_relu_hopper, fused_matmul_add_relu_hopper_split_k};
use plan::{LhsMajor, MapLayout, RhsMajor, Schedule, line_elems};
use transpose::{copy_unavailability, k_major_copy};
use wgmma::Operand;

/// Why the Hopper kernel cannot run on `client`'s device, if it cannot.
pub(crate) fn device_unavailability(client: &Client) -> Option<&'static str> {
    let properties = client.properties();
    // cubecl-cuda names a device by the PTX target it compiles for.
    if properties.identity.fingerprint != "ptx_sm90" {
        return Some("needs a CUDA device of compute capability 9.0 (Hopper)");
    }
    if !properties
        .features
        .tma
        .contains(cubecl::ir::features::Tma::Base)
    {
        return Some("the device has no TMA engine");
    }
    // cubecl's LLVM backend advertises its own warpgroup MMA; fmar's inline PTX is written for
    // the CUDA C++ (NVRTC) backend, which advertises none.
    if !properties.features.matmul.wgmma.is_empty() {
        return Some("needs cubecl-cuda's CUDA C++ (NVRTC) compiler, not its LLVM backend");
    }
    None
}

/// Runs the Hopper kernel on checked, non-empty operands with `k > 0`. Under
/// [`Epilogue::Plain`] the bias operand is never read (any binding of the output's shape).
/// Under [`Epilogue::BiasReluMask`], `mask` (checked by the caller: the layout of
/// [`crate::mask`]) receives the ReLU mask from the epilogue.
pub(crate) fn launch(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: Option<TensorBinding>,
) -> Result<(), LaunchError> {
    assert_eq!(
        epilogue.writes_mask(),
        mask.is_some(),
        "the mask binding comes with the epilogue that writes it"
    );
    let unavailable = |reason: String| LaunchError::Unavailable {
        variant: Variant::Hopper,
        reason,
    };
    if let Some(reason) = device_unavailability(client) {
        return Err(unavailable(reason.into()));
    }
    // Without the mask epilogue the kernel never touches its mask argument, which then views
    // the output's buffer.
    let mask_arg = mask.unwrap_or_else(|| TensorBinding {
        handle: ops.out.handle.clone(),
        strides: [1].into(),
        shape: [1].into(),
        tiling: Tiling::default(),
    });
    // At few rows an N-major f32 weight is read as it is: its K-major copy for TF32 MMAs would
    // cost more than the product. From 9 rows, where TF32 is allowed, the product is computed
    // transposed so that the weight is the MMA's `A`, read into registers from any layout; at
    // up to 8 rows (32 where TF32 is not allowed), with f32 FMAs (exact f32), which were faster
    // there. Both are fed by the TMA engine where it can read the operands, else by loads of
    // their own, so any strides do.
    let allow_tf32 = cubek_std::config::MatmulConfig::get().allow_tf32;
    let rank = ops.rhs.strides.len();
    if dtype == ElemType::Float(FloatKind::F32) && ops.rhs.strides[rank - 1] == 1 {
        let swapped_takes = |dims: &Dims| allow_tf32 && swapped::takes(dims);
        // A weight shared by every batch is read once for all their rows, where those rows
        // stay on these paths.
        let (ops, dims) = fold::batches_as_rows(&ops, &dims)
            .filter(|(_, rows)| swapped_takes(rows) || few_rows::takes(rows))
            .unwrap_or_else(|| (ops.clone(), dims));
        if swapped_takes(&dims) {
            swapped::launch(client, ops, dtype, dims, epilogue, mask_arg);
            return Ok(());
        }
        if few_rows::takes(&dims) {
            few_rows::launch(client, ops, dtype, dims, epilogue, mask_arg);
            return Ok(());
        }
        // Above 128 rows, whole tiles of the same transposed product, where the TMA engine
        // can read both operands, save the weight's K-major copy.
        if allow_tf32
            && swapped_tiles::takes(&dims, processors(client))
            && let Some(layouts) = swapped::tma_layouts(&ops)
        {
            swapped_tiles::launch(client, ops, dtype, dims, epilogue, mask_arg, layouts);
            return Ok(());
        }
    }
    let operand = match dtype {
        ElemType::Float(FloatKind::BF16) => Operand::Bf16,
        ElemType::Float(FloatKind::F16) => Operand::F16,
        ElemType::Float(FloatKind::F32) => {
            if !allow_tf32 {
                return Err(unavailable(
                    "f32 operands with TF32 rounding disallowed (cubek's `allow_tf32` is off)"
                        .into(),
                ));
            }
            Operand::Tf32
        }
        other => {
            return Err(unavailable(format!(
                "{other:?} operands (f16, bf16, and f32 through TF32)"
            )));
        }
    };
    let mut plan = plan::plan(&ops.lhs, &ops.rhs, &ops.out, dtype.size()).map_err(unavailable)?;
    if dims.m * dims.n * dims.batch > u32::MAX as usize {
        return Err(unavailable("an output of more than 2^32 elements".into()));
    }

    // TF32 MMAs have no transpose bits: an operand that is not K-major is read from a K-major
    // copy. Every reason to decline comes before the first launch, so a decline launches
    // nothing.
    let copy_lhs = operand == Operand::Tf32 && plan.lhs_major == LhsMajor::M;
    let copy_rhs = operand == Operand::Tf32 && plan.rhs_major == RhsMajor::N;
    for (copied, layout) in [(copy_lhs, &plan.lhs), (copy_rhs, &plan.rhs)] {
        if copied && let Some(reason) = copy_unavailability(layout) {
            return Err(unavailable(reason));
        }
    }
    let (mut lhs, mut rhs) = (ops.lhs.clone(), ops.rhs.clone());
    if copy_lhs {
        (lhs, plan.lhs) = k_major_copy(client, &ops.lhs, &plan.lhs, dtype);
        plan.lhs_major = LhsMajor::K;
    }
    if copy_rhs {
        (rhs, plan.rhs) = k_major_copy(client, &ops.rhs, &plan.rhs, dtype);
        plan.rhs_major = RhsMajor::K;
    }

    let processors = processors(client);
    let Schedule { tile, splits } = Schedule::choose(
        processors,
        dims.batch,
        dims.m,
        dims.n,
        dims.k,
        dtype.size(),
        plan.lhs_major == LhsMajor::K,
    );
    let split_k = splits > 1;
    let config = KernelConfig {
        tile,
        lhs_m_major: plan.lhs_major == LhsMajor::M,
        rhs_k_major: plan.rhs_major == RhsMajor::K,
        lhs_batched: plan.lhs.batched,
        rhs_batched: plan.rhs.batched,
        operand,
        bias_row_broadcast: bias_row_broadcast(&ops.bias, &dims, epilogue),
        splits,
        epilogue,
    };
    debug_assert!(
        config.slots() >= (splits - 1) * tile.consumers(),
        "a split-K cluster's first cube holds every other cube's sums"
    );
    // One swizzle line along the contiguous dim: `k` for a K-major operand, one panel of `m`
    // or `n` for an MN-major one.
    let line = line_elems(dtype.size());
    let rhs_box = match plan.rhs_major {
        RhsMajor::N => [1, line, line],
        RhsMajor::K => [1, tile.n, line],
    };
    // A K-major stage holds `tile.lhs_rows` rows: fewer than the tile's when the problem has
    // no more.
    let lhs_box = match plan.lhs_major {
        LhsMajor::K => [1, tile.lhs_rows, line],
        LhsMajor::M => [1, line, line],
    };
    let lhs_map = tensor_map(&lhs, &plan.lhs, lhs_box, dtype);
    let rhs_map = tensor_map(&rhs, &plan.rhs, rhs_box, dtype);
    let out_map = tensor_map(&ops.out, &plan.out, [1, 64, line], dtype);

    // Persistent: one cube per multiprocessor, each walking tiles until none are left. Under
    // split-K, one cube per work item (a slice of a tile), in clusters of a tile's slices: the
    // schedule keeps them within two cubes per multiprocessor, and a cluster's first cube
    // receives the others' sums in its ring, which a next item would refill.
    let out_len = dims.batch * dims.m * dims.n;
    let items = dims.m.div_ceil(tile.m) * dims.n.div_ceil(tile.n) * dims.batch * splits;
    let cubes = if split_k {
        items
    } else {
        items.min(processors)
    };
    let cube_count = CubeCount::Static(cubes as u32, 1, 1);
    let address_type = ops
        .bias
        .required_address_type(dtype.size())
        .max(AddressType::from_len(out_len));

    // SAFETY: the contract check bounded every operand's strides by its buffer; the TMA engine
    // reads `lhs` and `rhs` through maps of their own shapes, filling past the edges with zeros,
    // and writes the output through a map of its shape, clipping past the edges; the epilogue
    // reads the bias only at in-bounds rows and columns.
    unsafe {
        let launch = if split_k {
            fused_matmul_add_relu_hopper_split_k::launch_unchecked
        } else {
            fused_matmul_add_relu_hopper::launch_unchecked
        };
        launch(
            client,
            cube_count,
            CubeDim::new_1d(config.cube_units()),
            address_type,
            tile.n / 2,
            lhs_map,
            rhs_map,
            ops.bias.into_tensor_arg(),
            out_map,
            mask_arg.into_tensor_arg(),
            dims.m as u32,
            dims.n as u32,
            dims.k as u32,
            dims.batch as u32,
            config,
            dtype,
        );
    }
    Ok(())
}

/// Whether the epilogue adds one bias row to every output row (a bias broadcast along the
/// rows, or a single row), which a kernel then reads once per column rather than per element.
fn bias_row_broadcast(bias: &TensorBinding, dims: &Dims, epilogue: Epilogue) -> bool {
    let rank = bias.shape.len();
    epilogue.bias_relu() && (bias.strides[rank - 2] == 0 || dims.m == 1)
}

/// The device's multiprocessors, which the schedules spread work over.
fn processors(client: &Client) -> usize {
    client
        .properties()
        .hardware
        .num_streaming_multiprocessors
        .unwrap_or(1) as usize
}

/// A 128-byte-swizzled tensor map over `binding`'s buffer, laid out as `layout` says, that
/// copies `tile` (`[batch, rows, cols]`) at a time.
fn tensor_map(
    binding: &TensorBinding,
    layout: &MapLayout,
    tile: [usize; 3],
    dtype: ElemType,
) -> TensorMapArg<Tiled> {
    let view = TensorBinding {
        handle: binding.handle.clone(),
        strides: layout.strides.into(),
        shape: layout.shape.into(),
        tiling: Tiling::default(),
    };
    TensorMapArg::new(
        TiledArgs {
            tile_size: tile.into(),
        },
        view.into_tensor_arg(),
        dtype,
    )
    .with_swizzle(TensorMapSwizzle::B128)
}
