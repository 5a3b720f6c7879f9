//! The fused operation on cubek-matmul's multi-level routines (tensor cores where the device has
//! them): fmar's own [`MatmulArgs`] load the bias as the initial accumulator (`C` in
//! `A @ B + C`, read through its broadcast strides) and apply the ReLU as the output view
//! writes, so the whole operation stays one kernel. This is how Burn's fusion rides an epilogue
//! on the same routines.

use crate::Operands;
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::std::tensor::launch::ViewArg;
use cubecl::std::tensor::layout::{Coords1d, VirtualLayout, VirtualLayoutLaunch};
use cubecl::std::tensor::{
    View, ViewMut, ViewMutExpand, ViewOperations, ViewOperationsExpand, ViewOperationsMut,
    ViewOperationsMutExpand,
};
use cubecl::{intrinsic, prelude::barrier::BarrierExpand};
use cubek_matmul::definition::{
    AvailableVectorSizes, MatmulElems, MatmulGlobalElems, MatmulProblem, MatmulSetupError,
};
use cubek_matmul::multi_level::args::{BatchedCoords, MatmulArgs};
use cubek_matmul::multi_level::components::global::memory::{
    BatchLayout, BatchLayoutLaunch, GlobalLayout, GlobalLayoutConfig, GlobalLayoutLaunch,
};
use cubek_matmul::multi_level::components::tile::TileMatmulKind;
use cubek_matmul::multi_level::definition::Blueprint;
use cubek_matmul::multi_level::routines::batch::double_buffering::{
    CyclicDoubleBufferingAlgorithm, DoubleBufferingArgs,
};
use cubek_matmul::multi_level::routines::batch::double_unit::DoubleUnitAlgorithm;
use cubek_matmul::multi_level::routines::batch::ordered_double_buffering::{
    OrderedDoubleBufferingAlgorithm, OrderedSelectionArgs,
};
use cubek_matmul::multi_level::routines::batch::simple::{SimpleAlgorithm, SimpleArgs};
use cubek_matmul::multi_level::routines::batch::simple_unit::SimpleUnitAlgorithm;
use cubek_matmul::multi_level::{BatchMatmulRoutine, launch_kernel};
use cubek_matmul::routine::BlueprintStrategy;

/// A cubek-matmul routine fmar can run its epilogue on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Routine {
    /// One stage, tensor cores through `cmma` (WMMA).
    SimpleCmma,
    /// One stage, tensor cores through `mma.sync`.
    SimpleMma,
    /// Double-buffered stages, `cmma`.
    DoubleCmma,
    /// Double-buffered stages, `mma.sync`.
    DoubleMma,
    /// One stage, several rows per plane, `cmma`.
    SimpleMultiRowsCmma,
    /// One stage, several rows per plane, `mma.sync`.
    SimpleMultiRowsMma,
    /// Double-buffered with ordered loading, `cmma`.
    OrderedDoubleCmma,
    /// Double-buffered with ordered loading, `mma.sync`.
    OrderedDoubleMma,
    /// Double-buffered with loader/computer plane specialization, `cmma`.
    SpecializedDoubleCmma,
    /// Double-buffered with loader/computer plane specialization, `mma.sync`.
    SpecializedDoubleMma,
    /// One stage, no tensor cores (unit matmul): runs everywhere, lavapipe included.
    SimpleUnit,
    /// Double-buffered, no tensor cores.
    DoubleUnit,
}

impl Routine {
    /// Every routine, tensor-core ones first.
    pub const ALL: [Routine; 12] = [
        Routine::SimpleCmma,
        Routine::SimpleMma,
        Routine::DoubleCmma,
        Routine::DoubleMma,
        Routine::SimpleMultiRowsCmma,
        Routine::SimpleMultiRowsMma,
        Routine::OrderedDoubleCmma,
        Routine::OrderedDoubleMma,
        Routine::SpecializedDoubleCmma,
        Routine::SpecializedDoubleMma,
        Routine::SimpleUnit,
        Routine::DoubleUnit,
    ];

    /// The routine's name.
    pub fn name(self) -> &'static str {
        match self {
            Routine::SimpleCmma => "simple_cmma",
            Routine::SimpleMma => "simple_mma",
            Routine::DoubleCmma => "double_cmma",
            Routine::DoubleMma => "double_mma",
            Routine::SimpleMultiRowsCmma => "simple_multi_rows_cmma",
            Routine::SimpleMultiRowsMma => "simple_multi_rows_mma",
            Routine::OrderedDoubleCmma => "ordered_double_cmma",
            Routine::OrderedDoubleMma => "ordered_double_mma",
            Routine::SpecializedDoubleCmma => "specialized_double_cmma",
            Routine::SpecializedDoubleMma => "specialized_double_mma",
            Routine::SimpleUnit => "simple_unit",
            Routine::DoubleUnit => "double_unit",
        }
    }
}

/// fmar's [`MatmulArgs`]: plain tensors in, bias as the accumulator, ReLU on write.
#[derive(Clone)]
pub struct FusedArgs;

/// Inputs of [`FusedArgs`]: each operand as a 2-D view with its batch layout.
#[derive(CubeLaunch, CubeType, Clone)]
#[expand(derive(Clone))]
pub struct FusedInputs<Lhs: CubePrimitive, Rhs: CubePrimitive, Acc: CubePrimitive> {
    lhs_batch: VirtualLayout<Coords1d, Coords1d>,
    lhs: View<'static, Lhs, BatchedCoords>,
    rhs_batch: VirtualLayout<Coords1d, Coords1d>,
    rhs: View<'static, Rhs, BatchedCoords>,
    bias_batch: VirtualLayout<Coords1d, Coords1d>,
    bias: View<'static, Acc, BatchedCoords>,
}

/// Output of [`FusedArgs`]: the output tensor's view and batch layout.
#[derive(CubeLaunch, CubeType, Clone)]
#[expand(derive(Clone))]
pub struct FusedOutput<EO: CubePrimitive> {
    view: ViewMut<'static, EO, BatchedCoords>,
    batch: VirtualLayout<Coords1d, Coords1d>,
}

#[cube]
impl MatmulArgs for FusedArgs {
    type Input<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive> =
        FusedInputs<Lhs, Rhs, EO>;
    type Output<EO: CubePrimitive> = FusedOutput<EO>;
    type Config = ();
    type State<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive> =
        (FusedInputs<Lhs, Rhs, EO>, FusedOutput<EO>);

    fn init_state<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        input: &Self::Input<Lhs, Rhs, EO>,
        output: &mut Self::Output<EO>,
        _config: (),
        #[comptime] _lhs_layout_config: GlobalLayoutConfig,
        #[comptime] _rhs_layout_config: GlobalLayoutConfig,
        #[comptime] _out_layout_config: GlobalLayoutConfig,
    ) -> Self::State<Lhs, Rhs, EO> {
        (input.clone(), output.clone())
    }

    fn view_lhs<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
    ) -> View<'_, Lhs, BatchedCoords> {
        state.0.lhs
    }

    fn batch_lhs<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        state.0.lhs_batch.to_source_pos(batch)
    }

    fn view_rhs<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
    ) -> View<'_, Rhs, BatchedCoords> {
        state.0.rhs
    }

    fn batch_rhs<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        state.0.rhs_batch.to_source_pos(batch)
    }

    fn view_acc<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
    ) -> ComptimeOption<View<'_, EO, BatchedCoords>> {
        ComptimeOption::new_Some(state.0.bias)
    }

    fn batch_acc<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        state.0.bias_batch.to_source_pos(batch)
    }

    fn view_out<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
    ) -> ViewMut<'_, EO, BatchedCoords> {
        relu_on_write(state.1.view)
    }

    fn batch_out<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        state.1.batch.to_source_pos(batch)
    }

    fn runtime_config<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        _state: &Self::State<Lhs, Rhs, EO>,
    ) {
    }
}

/// `view`, with every value it writes passed through the ReLU first.
#[cube]
#[allow(unused_variables)]
fn relu_on_write<E: CubePrimitive>(
    view: ViewMut<'static, E, BatchedCoords>,
) -> ViewMut<'static, E, BatchedCoords> {
    intrinsic!(|scope| { ViewMutExpand::new(scope, ReluViewExpand { inner: view }) })
}

/// A view whose writes apply `relu(x) = x <= 0 ? 0 : x` (NaN kept) before storing; reads and
/// shapes are the inner view's.
#[derive(CubeType, Clone)]
#[expand(derive(Clone))]
#[allow(dead_code)] // Only its expand type is built, at kernel expansion.
struct ReluView<E: CubePrimitive> {
    inner: ViewMut<'static, E, BatchedCoords>,
}

/// The ReLU on a vector, computed in f32: casting f16/bf16/f32 values to f32 and back is exact,
/// so the result is the storage type's own ReLU.
#[cube]
fn relu_vector<N: Size>(value: Vector<f32, N>) -> Vector<f32, N> {
    let zero = Vector::<f32, N>::new(0.0);
    select_many(value.less_equal(&zero), zero, value)
}

impl<E: CubePrimitive> ReluViewExpand<E> {
    fn relu(&self, scope: &Scope, value: E::ExpandType) -> E::ExpandType {
        let widened = Vector::<f32, E::Size>::__expand_cast_from(scope, value);
        let activated = relu_vector::expand::<E::Size>(scope, widened);
        E::__expand_cast_from(scope, activated)
    }
}

impl<E: CubePrimitive> ViewOperations<E, BatchedCoords> for ReluView<E> {}
impl<E: CubePrimitive> ViewOperationsMut<E, BatchedCoords> for ReluView<E> {}
impl<E: CubePrimitive> Vectorized for ReluView<E> {}

impl<E: CubePrimitive> VectorizedExpand for ReluViewExpand<E> {
    fn __expand_vector_size_method(&self, scope: &Scope) -> VectorSize {
        self.inner.__expand_vector_size_method(scope)
    }
}

impl<E: CubePrimitive> ViewOperationsExpand<E, BatchedCoords> for ReluViewExpand<E> {
    fn __expand_read_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
    ) -> E::ExpandType {
        self.inner.__expand_read_method(scope, pos)
    }

    fn __expand_read_checked_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
    ) -> E::ExpandType {
        self.inner.__expand_read_checked_method(scope, pos)
    }

    fn __expand_read_masked_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
        value: E::ExpandType,
    ) -> E::ExpandType {
        self.inner.__expand_read_masked_method(scope, pos, value)
    }

    fn __expand_read_unchecked_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
    ) -> E::ExpandType {
        self.inner.__expand_read_unchecked_method(scope, pos)
    }

    fn __expand_as_linear_slice_method(
        &self,
        _scope: &Scope,
        _pos: <BatchedCoords as CubeType>::ExpandType,
        _end: <BatchedCoords as CubeType>::ExpandType,
    ) -> &SliceExpand<E> {
        unimplemented!("fmar's output view is written value by value")
    }

    fn __expand_tensor_map_load_method(
        &self,
        _scope: &Scope,
        _barrier: &BarrierExpand,
        _shared_memory: &mut SliceExpand<E>,
        _pos: <BatchedCoords as CubeType>::ExpandType,
    ) {
        unimplemented!("fmar's output view is not a tensor map")
    }

    fn __expand_shape_method(&self, scope: &Scope) -> <BatchedCoords as CubeType>::ExpandType {
        self.inner.__expand_shape_method(scope)
    }

    fn __expand_is_in_bounds_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
    ) -> NativeExpand<bool> {
        self.inner.__expand_is_in_bounds_method(scope, pos)
    }
}

impl<E: CubePrimitive> ViewOperationsMutExpand<E, BatchedCoords> for ReluViewExpand<E> {
    fn __expand_write_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
        value: E::ExpandType,
    ) {
        let value = self.relu(scope, value);
        self.inner.__expand_write_method(scope, pos, value)
    }

    fn __expand_write_checked_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
        value: E::ExpandType,
    ) {
        let value = self.relu(scope, value);
        self.inner.__expand_write_checked_method(scope, pos, value)
    }

    fn __expand_as_linear_slice_mut_method(
        &self,
        _scope: &Scope,
        _pos: <BatchedCoords as CubeType>::ExpandType,
        _end: <BatchedCoords as CubeType>::ExpandType,
    ) -> &mut SliceExpand<E> {
        unimplemented!("fmar's output view is written value by value")
    }

    fn __expand_tensor_map_store_method(
        &self,
        _scope: &Scope,
        _shared_memory: &SliceExpand<E>,
        _pos: <BatchedCoords as CubeType>::ExpandType,
    ) -> PendingExpand<()> {
        unimplemented!("fmar's output view is not a tensor map")
    }
}

/// Combinations seen to fail at run time rather than be refused up front, so fmar refuses them
/// itself: a fault that poisons the device is no candidate to measure.
///
/// Seen on an H200 through CUDA/NVRTC (2026-11-30, `docs/runs/2026-11-30-h200-{4,5,6}`): the
/// plane-specialized double-buffered routines stop the device with "illegal instruction" (CUDA
/// error 715) in bf16 and "illegal address" (700) in bf16 and f32; the unit routines in bf16 fail
/// their launch with "too many resources requested". Every other routine ran correctly.
fn known_fault(routine: Routine, dtype: ElemType) -> Option<&'static str> {
    use cubecl::ir::FloatKind;
    let half = matches!(dtype, ElemType::Float(FloatKind::F16 | FloatKind::BF16));
    match routine {
        Routine::SpecializedDoubleCmma | Routine::SpecializedDoubleMma => {
            Some("plane-specialized routines fault the device (CUDA error 715/700 on an H200)")
        }
        Routine::SimpleUnit | Routine::DoubleUnit if half => {
            Some("unit routines in half precision fail their launch (too many resources)")
        }
        _ => None,
    }
}

/// Launches `routine` on `ops`. Fails (launching nothing) when the device lacks what the
/// routine needs, or the problem does not fit it.
pub(crate) fn launch(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    routine: Routine,
) -> Result<(), MatmulSetupError> {
    use TileMatmulKind::{Cmma, Mma};
    if let Some(reason) = known_fault(routine, dtype) {
        return Err(MatmulSetupError::InvalidConfig(Box::new(
            reason.to_string(),
        )));
    }
    let rank = ops.lhs.shape.len();
    if ops.lhs.shape[rank - 1] == 0 {
        // k = 0 leaves nothing to multiply: the output is relu(bias), which the other variants
        // compute. (cubek's routines assume at least one k step.)
        return Err(MatmulSetupError::InvalidConfig(Box::new(
            "k = 0: nothing to multiply".to_string(),
        )));
    }
    let simple = |tile_matmul, multi_rows| {
        BlueprintStrategy::Inferred(SimpleArgs {
            tile_matmul,
            multi_rows,
        })
    };
    let double = |tile_matmul, specialized| {
        BlueprintStrategy::Inferred(DoubleBufferingArgs {
            tile_matmul,
            specialized,
        })
    };
    let ordered = |tile_matmul| {
        BlueprintStrategy::Inferred(OrderedSelectionArgs {
            tile_matmul,
            ..Default::default()
        })
    };
    type Simple = SimpleAlgorithm;
    type Double = CyclicDoubleBufferingAlgorithm;
    type Ordered = OrderedDoubleBufferingAlgorithm;
    match routine {
        Routine::SimpleCmma => launch_routine::<Simple>(client, ops, dtype, &simple(Cmma, false)),
        Routine::SimpleMma => launch_routine::<Simple>(client, ops, dtype, &simple(Mma, false)),
        Routine::DoubleCmma => launch_routine::<Double>(client, ops, dtype, &double(Cmma, false)),
        Routine::DoubleMma => launch_routine::<Double>(client, ops, dtype, &double(Mma, false)),
        Routine::SimpleMultiRowsCmma => {
            launch_routine::<Simple>(client, ops, dtype, &simple(Cmma, true))
        }
        Routine::SimpleMultiRowsMma => {
            launch_routine::<Simple>(client, ops, dtype, &simple(Mma, true))
        }
        Routine::OrderedDoubleCmma => launch_routine::<Ordered>(client, ops, dtype, &ordered(Cmma)),
        Routine::OrderedDoubleMma => launch_routine::<Ordered>(client, ops, dtype, &ordered(Mma)),
        Routine::SpecializedDoubleCmma => {
            launch_routine::<Double>(client, ops, dtype, &double(Cmma, true))
        }
        Routine::SpecializedDoubleMma => {
            launch_routine::<Double>(client, ops, dtype, &double(Mma, true))
        }
        Routine::SimpleUnit => launch_routine::<SimpleUnitAlgorithm>(
            client,
            ops,
            dtype,
            &BlueprintStrategy::Inferred(Default::default()),
        ),
        Routine::DoubleUnit => launch_routine::<DoubleUnitAlgorithm>(
            client,
            ops,
            dtype,
            &BlueprintStrategy::Inferred(Default::default()),
        ),
    }
}

fn launch_routine<A: BatchMatmulRoutine<()>>(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    strategy: &BlueprintStrategy<A>,
) -> Result<(), MatmulSetupError> {
    let storage = dtype;
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
            lhs: storage,
            rhs: storage,
            out: storage,
        },
        address_type,
        None,
        None,
    )?;
    // The bias is read as the accumulator, with the output's vector size: keep only the sizes
    // that its strides allow too (a bias broadcast along columns reads one element at a time).
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
    let view = |binding: TensorBinding, config: GlobalLayoutConfig, vector_size| {
        let layout = GlobalLayoutLaunch::from_handle(&binding, vector_size, config);
        ViewArg::new_tensor::<GlobalLayout>(binding.into_tensor_arg(), layout)
    };
    let (lhs_batch, rhs_batch, bias_batch, out_batch) = (
        batch(&ops.lhs),
        batch(&ops.rhs),
        batch(&ops.bias),
        batch(&ops.out),
    );
    let inputs = FusedInputsLaunch::new(
        lhs_batch,
        view(ops.lhs, blueprint.lhs_global_layout_config(), sizes.lhs),
        rhs_batch,
        view(ops.rhs, blueprint.rhs_global_layout_config(), sizes.rhs),
        bias_batch,
        view(ops.bias, blueprint.out_global_layout_config(), sizes.out),
    );
    let output = FusedOutputLaunch::new(
        view(ops.out, blueprint.out_global_layout_config(), sizes.out),
        out_batch,
    );
    let _: &MatmulElems = &launch_info.dtypes;
    launch_kernel::<FusedArgs, A>(client, inputs, output, (), launch_info)
}
