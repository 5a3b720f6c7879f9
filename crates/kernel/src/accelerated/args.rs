//! fmar's [`MatmulArgs`] for cubek-matmul: the operands as batched views, no accumulator, and
//! an output view that computes the epilogue as it writes: `relu(acc + bias)`, the bias read
//! through its own broadcast view at the written position. This is how an epilogue rides on
//! cubek's routines without a second kernel, as Burn's fusion does.
//!
//! The bias is added on the write side rather than loaded as the accumulator (`C` in
//! `A @ B + C`): an accumulator costs a full f32 stage of shared memory, and cubek's
//! plane-specialized routines load it on every plane, load planes included, which faulted the
//! device. Burn's fused path passes no accumulator either.

use crate::epilogue::relu_vector;
use cubecl::prelude::*;
use cubecl::std::tensor::layout::{Coords1d, VirtualLayout};
use cubecl::std::tensor::{
    View, ViewMut, ViewMutExpand, ViewOperations, ViewOperationsExpand, ViewOperationsMut,
    ViewOperationsMutExpand,
};
use cubecl::{intrinsic, prelude::barrier::BarrierExpand};
use cubek_matmul::multi_level::args::{BatchedCoords, MatmulArgs};
use cubek_matmul::multi_level::components::global::memory::GlobalLayoutConfig;

/// fmar's [`MatmulArgs`]: plain tensors in, `relu(acc + bias)` on write.
#[derive(Clone)]
pub(crate) struct FusedArgs;

/// Inputs of [`FusedArgs`]: `lhs` and `rhs` as 2-D views with their batch layouts (cubek maps
/// the batch), and the bias as a view whose own layout maps the output's batch index (it is
/// read at the output's coordinates).
#[derive(CubeLaunch, CubeType, Clone)]
#[expand(derive(Clone))]
pub(crate) struct FusedInputs<Lhs: CubePrimitive, Rhs: CubePrimitive, Bias: CubePrimitive> {
    lhs_batch: VirtualLayout<Coords1d, Coords1d>,
    lhs: View<'static, Lhs, BatchedCoords>,
    rhs_batch: VirtualLayout<Coords1d, Coords1d>,
    rhs: View<'static, Rhs, BatchedCoords>,
    bias: View<'static, Bias, BatchedCoords>,
}

/// Output of [`FusedArgs`]: the output's view, whose layout maps the batch index itself.
#[derive(CubeLaunch, CubeType, Clone)]
#[expand(derive(Clone))]
pub(crate) struct FusedOutput<EO: CubePrimitive> {
    view: ViewMut<'static, EO, BatchedCoords>,
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
        _state: &Self::State<Lhs, Rhs, EO>,
    ) -> ComptimeOption<View<'_, EO, BatchedCoords>> {
        // No accumulator: the bias is added as the output is written.
        ComptimeOption::new_None()
    }

    fn batch_acc<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        _state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        batch
    }

    fn view_out<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        state: &Self::State<Lhs, Rhs, EO>,
    ) -> ViewMut<'_, EO, BatchedCoords> {
        bias_relu_on_write(state.1.view, state.0.bias)
    }

    /// The output's batch index, unmapped: the output view and the bias view each map it
    /// through their own layout, so the epilogue can read the bias at the written position.
    fn batch_out<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        _state: &Self::State<Lhs, Rhs, EO>,
        batch: usize,
    ) -> usize {
        batch
    }

    fn runtime_config<Lhs: CubePrimitive, Rhs: CubePrimitive, EO: CubePrimitive>(
        _state: &Self::State<Lhs, Rhs, EO>,
    ) {
    }
}

/// `view`, with every value `x` it writes at a position replaced by `relu(x + bias[position])`.
#[cube]
#[allow(unused_variables)]
fn bias_relu_on_write<E: CubePrimitive>(
    view: ViewMut<'static, E, BatchedCoords>,
    bias: View<'static, E, BatchedCoords>,
) -> ViewMut<'static, E, BatchedCoords> {
    intrinsic!(|scope| { ViewMutExpand::new(scope, ReluViewExpand { inner: view, bias }) })
}

/// A view whose writes apply the epilogue, `relu(x + bias)` with `relu(y) = y <= 0 ? 0 : y`
/// (NaN kept), before storing; reads and shapes are the inner view's.
#[derive(CubeType, Clone)]
#[expand(derive(Clone))]
#[allow(dead_code)] // Only its expand type is built, at kernel expansion.
struct ReluView<E: CubePrimitive> {
    inner: ViewMut<'static, E, BatchedCoords>,
    bias: View<'static, E, BatchedCoords>,
}

/// The epilogue on a vector, in f32 ([`relu_vector`]). The matmul's f32 sum reaches the output
/// view already in the storage type, so half precisions round twice (the sum, then the sum plus
/// the bias): at most one more half-precision ulp than rounding once.
#[cube]
fn bias_relu_vector<N: Size>(value: Vector<f32, N>, bias: Vector<f32, N>) -> Vector<f32, N> {
    relu_vector::<N>(value + bias)
}

impl<E: CubePrimitive> ReluViewExpand<E> {
    fn epilogue(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
        value: E::ExpandType,
    ) -> E::ExpandType {
        let bias = self.bias.__expand_read_checked_method(scope, pos);
        let widened = Vector::<f32, E::Size>::__expand_cast_from(scope, value);
        let bias = Vector::<f32, E::Size>::__expand_cast_from(scope, bias);
        let activated = bias_relu_vector::expand::<E::Size>(scope, widened, bias);
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
        let value = self.epilogue(scope, pos, value);
        self.inner.__expand_write_method(scope, pos, value)
    }

    fn __expand_write_checked_method(
        &self,
        scope: &Scope,
        pos: <BatchedCoords as CubeType>::ExpandType,
        value: E::ExpandType,
    ) {
        let value = self.epilogue(scope, pos, value);
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
