//! [`Problem`]: one launch as every variant and the selection see it, the operands that passed
//! the contract check together with what is asked of them (the epilogue, the mask) and the
//! settings that decide which kernels may run (TF32 rounding, the device's size).

use crate::Operands;
use crate::common::processors;
use crate::contract::Dims;
use crate::epilogue::Epilogue;
use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::TensorBinding;
use cubecl::zspace::Tiling;

/// One checked launch with a non-empty output.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    /// The operands, laid out as the launch contract says.
    pub ops: Operands,
    /// Their sizes.
    pub dims: Dims,
    /// Their one dtype.
    pub dtype: ElemType,
    /// What is done to the sums before they are stored.
    pub epilogue: Epilogue,
    /// Under [`Epilogue::BiasReluMask`], where the ReLU mask goes (its layout checked).
    pub mask: Option<TensorBinding>,
    /// Whether f32 operands may be rounded to TF32 for tensor-core MMAs (cubek's `allow_tf32`,
    /// its default, as for Burn's own f32 matmuls).
    pub allow_tf32: bool,
    /// The device's multiprocessors, which the schedules spread work over.
    pub processors: usize,
}

impl Problem {
    /// `ops` (checked, of sizes `dims`) on `client`'s device, finished as `epilogue` says, with
    /// the mask's binding exactly when the epilogue writes the mask.
    pub fn new(
        client: &Client,
        ops: Operands,
        dims: Dims,
        dtype: ElemType,
        epilogue: Epilogue,
        mask: Option<TensorBinding>,
    ) -> Self {
        assert_eq!(
            epilogue.writes_mask(),
            mask.is_some(),
            "the mask binding comes with the epilogue that writes it"
        );
        Self {
            ops,
            dims,
            dtype,
            epilogue,
            mask,
            allow_tf32: cubek_std::config::MatmulConfig::get().allow_tf32,
            processors: processors(client),
        }
    }

    /// Whether the operands are f32.
    pub fn is_f32(&self) -> bool {
        self.dtype == ElemType::Float(FloatKind::F32)
    }

    /// Whether `rhs` is N-major (stride 1 along `n`): Burn's `Linear` weight `[d_in, d_out]`.
    pub fn weight_n_major(&self) -> bool {
        let strides = &self.ops.rhs.strides;
        strides[strides.len() - 1] == 1
    }

    /// Why the problem is not an f32 product with an N-major weight, which the few-row and
    /// transposed products alone take, if it is not.
    pub fn f32_weight_unavailability(&self) -> Option<String> {
        if !self.is_f32() {
            Some(format!("{:?} operands (f32 only)", self.dtype))
        } else if !self.weight_n_major() {
            Some(format!(
                "`rhs` strides {:?}: not N-major (stride 1 along `n`)",
                self.ops.rhs.strides
            ))
        } else {
            None
        }
    }

    /// The same problem without the mask: the fused forward alone.
    pub fn without_mask(&self) -> Self {
        Self {
            epilogue: Epilogue::BiasRelu,
            mask: None,
            ..self.clone()
        }
    }

    /// The mask's binding, or, where the epilogue writes none, a one-element view of the
    /// output's buffer that the kernels never touch.
    pub fn mask_argument(&self) -> TensorBinding {
        self.mask.clone().unwrap_or_else(|| TensorBinding {
            handle: self.ops.out.handle.clone(),
            strides: [1].into(),
            shape: [1].into(),
            tiling: Tiling::default(),
        })
    }
}
