//! The fused operation on cubek-matmul's multi-level routines (tensor cores where the device has
//! them), through fmar's own [`MatmulArgs`](cubek_matmul::multi_level::args::MatmulArgs).
//!
//! - [`args`]: the arguments and views that carry the bias and the ReLU;
//! - this module: one launch, from a [`Routine`] to cubek's blueprint and kernel.

mod args;

use crate::routine::{Routine, TileKind};
use crate::{LaunchError, Operands, Variant};
use args::{FusedArgs, FusedInputsLaunch, FusedOutputLaunch};
use cubecl::client::Client;
use cubecl::ir::features::Plane;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::std::tensor::launch::ViewArg;
use cubecl::std::tensor::layout::VirtualLayoutLaunch;
use cubek_matmul::definition::{
    AvailableVectorSizes, MatmulGlobalElems, MatmulProblem, MatmulSetupError,
};
use cubek_matmul::multi_level::components::global::memory::{
    BatchLayout, BatchLayoutLaunch, GlobalLayout, GlobalLayoutConfig, GlobalLayoutLaunch,
};
use cubek_matmul::multi_level::components::tile::TileMatmulKind;
use cubek_matmul::multi_level::definition::Blueprint;
use cubek_matmul::multi_level::routines::batch::double_buffering::{
    CyclicDoubleBufferingAlgorithm, DoubleBufferingArgs,
};
use cubek_matmul::multi_level::routines::batch::double_unit::DoubleUnitAlgorithm;
use cubek_matmul::multi_level::routines::batch::gemv_innerproduct::{
    DoubleVecMatInnerProductAlgorithm, VecMatInnerProductAlgorithm,
};
use cubek_matmul::multi_level::routines::batch::ordered_double_buffering::{
    OrderedDoubleBufferingAlgorithm, OrderedSelectionArgs,
};
use cubek_matmul::multi_level::routines::batch::simple::{SimpleAlgorithm, SimpleArgs};
use cubek_matmul::multi_level::routines::batch::simple_unit::SimpleUnitAlgorithm;
use cubek_matmul::multi_level::routines::gemm::GemmRoutine;
use cubek_matmul::multi_level::routines::gemv_unit_perpendicular::GemvUnitPerpendicularRoutine;
use cubek_matmul::multi_level::{BatchMatmulRoutine, launch_kernel};
use cubek_matmul::routine::BlueprintStrategy;

/// Launches `routine` on `ops` (checked against the contract, `k >= 1`). Fails, launching
/// nothing, when fmar refuses the routine for the dtype, or when cubek's setup finds that the
/// device lacks what it needs or the problem does not fit it.
pub(crate) fn launch(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    routine: Routine,
) -> Result<(), LaunchError> {
    let variant = Variant::Accelerated(routine);
    if let Some(reason) = routine.known_fault(dtype) {
        return Err(LaunchError::Refused { variant, reason });
    }
    // cubek's routines use plane (subgroup) operations; a device without them (wgpu over GL,
    // some browsers and older GPUs) would fail to compile the kernel, at readback.
    if !client.properties().features.plane.contains(Plane::Ops) {
        return Err(LaunchError::Unavailable {
            variant,
            reason: "the device has no plane (subgroup) operations, which cubek-matmul's \
                     routines use"
                .into(),
        });
    }
    let result = match routine {
        Routine::Simple { tile, multi_rows } => {
            let args = SimpleArgs {
                tile_matmul: tile_matmul(tile),
                multi_rows,
            };
            launch_routine::<SimpleAlgorithm>(
                client,
                ops,
                dtype,
                &BlueprintStrategy::Inferred(args),
            )
        }
        Routine::DoubleBuffering { tile, specialized } => {
            let args = DoubleBufferingArgs {
                tile_matmul: tile_matmul(tile),
                specialized,
            };
            let strategy = BlueprintStrategy::Inferred(args);
            launch_routine::<CyclicDoubleBufferingAlgorithm>(client, ops, dtype, &strategy)
        }
        Routine::OrderedDoubleBuffering { tile } => {
            // Burn's fused path's arguments: 8 rows for half precisions (4 otherwise), two
            // rows per plane, k split in two.
            let half = matches!(dtype, ElemType::Float(FloatKind::F16 | FloatKind::BF16));
            let args = OrderedSelectionArgs {
                row_count: Some(if half { 8 } else { 4 }),
                rows_per_plane: Some(2),
                partition_k: Some(2),
                tile_matmul: tile_matmul(tile),
            };
            let strategy = BlueprintStrategy::Inferred(args);
            launch_routine::<OrderedDoubleBufferingAlgorithm>(client, ops, dtype, &strategy)
        }
        Routine::SimpleUnit => {
            launch_routine::<SimpleUnitAlgorithm>(client, ops, dtype, &Default::default())
        }
        Routine::DoubleUnit => {
            launch_routine::<DoubleUnitAlgorithm>(client, ops, dtype, &Default::default())
        }
        Routine::SimpleVecMat => {
            launch_routine::<VecMatInnerProductAlgorithm>(client, ops, dtype, &Default::default())
        }
        Routine::DoubleVecMat => launch_routine::<DoubleVecMatInnerProductAlgorithm>(
            client,
            ops,
            dtype,
            &Default::default(),
        ),
        Routine::GemmNoStage => {
            launch_routine::<GemmRoutine>(client, ops, dtype, &Default::default())
        }
        Routine::GemvUnitPerpendicular => {
            launch_routine::<GemvUnitPerpendicularRoutine>(client, ops, dtype, &Default::default())
        }
    };
    result.map_err(|error| LaunchError::Unavailable {
        variant,
        reason: format!("{error:?}"),
    })
}

fn tile_matmul(tile: TileKind) -> TileMatmulKind {
    match tile {
        TileKind::Cmma => TileMatmulKind::Cmma,
        TileKind::Mma => TileMatmulKind::Mma,
    }
}

fn launch_routine<A: BatchMatmulRoutine<()>>(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    strategy: &BlueprintStrategy<A>,
) -> Result<(), MatmulSetupError> {
    let elem_size = dtype.size();
    let address_type = [&ops.lhs, &ops.rhs, &ops.bias, &ops.out]
        .into_iter()
        .map(|binding| binding.required_address_type(elem_size))
        .max()
        .unwrap_or_default();
    let problem = MatmulProblem::from_shapes_and_strides(
        ops.lhs.shape.clone(),
        ops.rhs.shape.clone(),
        ops.out.shape.clone(),
        ops.lhs.strides.clone(),
        ops.rhs.strides.clone(),
        ops.out.strides.clone(),
        MatmulGlobalElems {
            lhs: dtype,
            rhs: dtype,
            out: dtype,
        },
        address_type,
        None,
        None,
    )?;
    // The bias is read as the output is written, with the output's vector size: keep only the
    // sizes that its strides allow too (a bias broadcast along columns reads one element at a
    // time).
    let vector_sizes =
        AvailableVectorSizes::from_type_sizes(client, elem_size, elem_size, elem_size)
            .filter_lhs_with_tensor(&problem.lhs_strides, &problem.lhs_shape, problem.lhs_layout)
            .filter_rhs_with_tensor(&problem.rhs_strides, &problem.rhs_shape, problem.rhs_layout)
            .filter_out_with_tensor(&problem.out_strides, &problem.out_shape)
            .filter_out_with_tensor(&ops.bias.strides, &ops.bias.shape)
            .pick_max()?;

    let device_settings = A::device_settings(client, vector_sizes);
    let expand_info = A::expand_blueprint(&problem, &device_settings, strategy)?;
    let launch_info = A::prepare(&problem, &device_settings, expand_info)?;
    let blueprint = &launch_info.blueprint;
    let sizes = launch_info.vector_sizes;

    let batch = |binding: &TensorBinding| {
        VirtualLayoutLaunch::new::<BatchLayout>(BatchLayoutLaunch::from_handle(binding, &problem))
    };
    // `lhs` and `rhs`: cubek maps the batch (`batch_lhs`, `batch_rhs`) and the view reads one
    // matrix.
    let matrix_view = |binding: TensorBinding, config: GlobalLayoutConfig, vector_size| {
        let layout = GlobalLayoutLaunch::from_handle(&binding, vector_size, config);
        ViewArg::new_tensor::<GlobalLayout>(binding.into_tensor_arg(), layout)
    };
    // The bias and the output: each view maps the output's batch index itself, so that the
    // epilogue reads the bias at the very coordinates it writes.
    let batched_view = |binding: TensorBinding, vector_size| {
        let config = blueprint.out_global_layout_config();
        let layout =
            GlobalLayoutLaunch::from_handle_batched(&binding, &problem, vector_size, config);
        ViewArg::new_tensor::<GlobalLayout>(binding.into_tensor_arg(), layout)
    };
    let (lhs_batch, rhs_batch) = (batch(&ops.lhs), batch(&ops.rhs));
    let inputs = FusedInputsLaunch::new(
        lhs_batch,
        matrix_view(ops.lhs, blueprint.lhs_global_layout_config(), sizes.lhs),
        rhs_batch,
        matrix_view(ops.rhs, blueprint.rhs_global_layout_config(), sizes.rhs),
        batched_view(ops.bias, sizes.out),
    );
    let output = FusedOutputLaunch::new(batched_view(ops.out, sizes.out));
    launch_kernel::<FusedArgs, A>(client, inputs, output, (), launch_info)
}
