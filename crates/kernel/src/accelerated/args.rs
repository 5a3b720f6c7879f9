//! fmar's [`MatmulArgs`] for cubek-matmul: the operands as batched views, the bias loaded as
//! the initial accumulator (`C` in `A @ B + C`, read through its broadcast strides), and an
//! output view that applies the ReLU as it writes. This is how an epilogue rides on cubek's
//! routines without a second kernel, as Burn's fusion does.

use cubecl::prelude::*;
use cubecl::std::tensor::layout::{Coords1d, VirtualLayout};
use cubecl::std::tensor::{
    View, ViewMut, ViewMutExpand, ViewOperations, ViewOperationsExpand, ViewOperationsMut,
    ViewOperationsMutExpand,
};
use cubecl::{intrinsic, prelude::barrier::BarrierExpand};
use cubek_matmul::multi_level::args::{BatchedCoords, MatmulArgs};
use cubek_matmul::multi_level::components::global::memory::GlobalLayoutConfig;

/// fmar's [`MatmulArgs`]: plain tensors in, bias as the accumulator, ReLU on write.
#[derive(Clone)]
pub(crate) struct FusedArgs;

/// Inputs of [`FusedArgs`]: each operand as a 2-D view with its batch layout.
#[derive(CubeLaunch, CubeType, Clone)]
#[expand(derive(Clone))]
pub(crate) struct FusedInputs<Lhs: CubePrimitive, Rhs: CubePrimitive, Acc: CubePrimitive> {
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
pub(crate) struct FusedOutput<EO: CubePrimitive> {
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
