//! Output metadata of fmar's fused `relu(lhs @ rhs + bias)`, and the rules that decide whether
//! the inputs have any: the shape and dtype that Fusion's lazy registration announces and that
//! direct execution produces come from the same functions here, so they agree by construction.
//!
//! Layer 1 of fmar: it depends on Burn's metadata types (`Shape`, `DType`), and takes the ReLU
//! mask's layout from `fmar-kernel` (layer 0), which writes it. [`Error`] is
//! fmar's public error type (re-exported as `fmar::Error`): [`check_call`] reports through it,
//! once per call, at whichever entry point the call comes in by. What runs a call that entry
//! point already checked (Fusion's execution of the operation it registered, the backends'
//! forwards under fmar's API) takes its output from [`trusted_output`] instead.

use burn::tensor::{DType, Shape};

/// The name every message uses for the operation.
pub const OP_NAME: &str = "matmul_add_relu";

/// The dtypes the fused kernel computes in. Each accumulates in f32.
pub const SUPPORTED_DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Output columns per word of the ReLU mask a tracked forward keeps for its backward: the
/// kernel crate's, which writes the mask.
pub use fmar_kernel::MASK_WORD_BITS;

/// The dtype of the ReLU mask's words.
pub const MASK_DTYPE: DType = DType::U32;

/// The shape of the ReLU mask of an output of shape `output`: `[B.., m, ceil(n / 32)]`, bit
/// `j % 32` of word `[b.., i, j / 32]` set where `out[b.., i, j]` is not `<= 0` (positive or
/// NaN: where Burn's `relu_backward` lets the gradient through).
pub fn mask_shape(output: &Shape) -> Shape {
    Shape::from(fmar_kernel::mask_shape(output))
}

/// Why fmar refused its inputs. Each message names the operation, the argument and the shapes,
/// dtypes or devices involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- shapes -------------------------------------------------------------------------------
    /// `lhs` or `rhs` has fewer than two dims, or `rhs`'s rank differs from `lhs`'s.
    #[error(
        "{OP_NAME}: `{operand}` has shape {shape} (rank {}), but {requirement}",
        shape.num_dims()
    )]
    Rank {
        /// `"lhs"` or `"rhs"`.
        operand: &'static str,
        /// Its shape.
        shape: Shape,
        /// What the rank must be, in words.
        requirement: String,
    },

    /// `lhs`'s last dim differs from `rhs`'s second-to-last dim.
    #[error(
        "{OP_NAME}: inner dims differ: `lhs` {lhs} has k = {} but `rhs` {rhs} has k = {}",
        lhs[lhs.num_dims() - 1],
        rhs[rhs.num_dims() - 2]
    )]
    InnerDim {
        /// The shape of `lhs`.
        lhs: Shape,
        /// The shape of `rhs`.
        rhs: Shape,
    },

    /// A batch dim of `lhs` and `rhs` differs and neither is 1.
    #[error(
        "{OP_NAME}: batch dim {dim} does not broadcast: `lhs` {lhs} has {} and `rhs` {rhs} has \
         {} (sizes must match or one must be 1)",
        lhs[*dim],
        rhs[*dim]
    )]
    BatchNotBroadcastable {
        /// The shape of `lhs`.
        lhs: Shape,
        /// The shape of `rhs`.
        rhs: Shape,
        /// The first batch dim that does not broadcast.
        dim: usize,
    },

    /// `bias` does not broadcast to the output shape.
    #[error(
        "{OP_NAME}: `bias` {bias} does not broadcast to the output shape {output} (dims are \
         matched from the right; each must equal the output's or be 1, and `bias` may not have \
         more dims than the output)"
    )]
    BiasNotBroadcastable {
        /// The shape of `bias`.
        bias: Shape,
        /// The shape of `lhs @ rhs`.
        output: Shape,
    },

    // ---- dtypes -------------------------------------------------------------------------------
    /// `rhs` or `bias` has a dtype other than `lhs`'s.
    #[error(
        "{OP_NAME}: `{operand}` has dtype {dtype:?} but `lhs` has dtype {lhs:?}; all three must match"
    )]
    DtypeMismatch {
        /// `"rhs"` or `"bias"`.
        operand: &'static str,
        /// Its dtype.
        dtype: DType,
        /// The dtype of `lhs`.
        lhs: DType,
    },

    /// The dtype is not one fmar computes in, or the device cannot run it.
    #[error("{OP_NAME}: dtype {dtype:?} is not supported {reason}")]
    UnsupportedDtype {
        /// The inputs' dtype.
        dtype: DType,
        /// Why, in words (the supported set, or the device that lacks it).
        reason: String,
    },

    // ---- devices ------------------------------------------------------------------------------
    /// The output needs more bytes than the device can allocate in one buffer.
    #[error(
        "{OP_NAME}: the output {output} of dtype {dtype:?} needs {bytes} bytes, more than device \
         {device} can allocate in one buffer ({limit} bytes)"
    )]
    OutputTooLarge {
        /// The output shape.
        output: Shape,
        /// Its dtype.
        dtype: DType,
        /// The bytes it needs (saturating at `u64::MAX`).
        bytes: u64,
        /// The most the device allocates at once.
        limit: u64,
        /// The device, as Burn prints it.
        device: String,
    },

    /// The environment variable that names a device names none this build has.
    #[error(
        "{variable}={value} names no device of this build; valid names: {}",
        valid.join(", ")
    )]
    UnknownDevice {
        /// The variable read (`BURN_DEVICE`).
        variable: &'static str,
        /// Its value.
        value: String,
        /// The names this build accepts.
        valid: Vec<&'static str>,
    },

    /// The environment variable that pins fmar's kernel variant names none.
    #[error(
        "{variable}={value:?} names no fmar kernel variant; the variants are: {}",
        valid.join(", ")
    )]
    UnknownKernel {
        /// The variable read (`FMAR_KERNEL`).
        variable: &'static str,
        /// Its value.
        value: String,
        /// Every variant's name.
        valid: Vec<String>,
    },

    /// The device the environment variable names is compiled in, but none answered on this
    /// machine (no GPU, no driver).
    #[error("{variable}={value}: no such device answered on this machine (no device or driver)")]
    DeviceUnavailable {
        /// The variable read (`BURN_DEVICE`).
        variable: &'static str,
        /// Its value.
        value: String,
    },

    /// `rhs` or `bias` is on another device than `lhs`.
    #[error("{OP_NAME}: `{operand}` is on device {device} but `lhs` is on device {lhs}")]
    DeviceMismatch {
        /// `"rhs"` or `"bias"`.
        operand: &'static str,
        /// Its device, as Burn prints it.
        device: String,
        /// The device of `lhs`.
        lhs: String,
    },
}

/// The shape of `relu(lhs @ rhs + bias)`, or why there is none.
///
/// - `lhs` is `[B.., m, k]` and `rhs` is `[B.., k, n]`, of one rank `>= 2`. Their batch dims
///   broadcast pairwise (equal, or one of them 1; a 1 meeting a 0 gives 0).
/// - The output is `[B.., m, n]` with the broadcast batch dims.
/// - `bias` broadcasts to the output, matched from the right as in NumPy and Burn: it has at
///   most the output's rank, and each of its dims equals the output's or is 1. `[n]`, `[1, n]`,
///   `[m, 1]`, `[b, 1, n]` and the full shape all qualify.
///
/// Zero sizes are legal: `k = 0` gives `relu(bias)`, `m = 0` or `n = 0` an empty output.
pub fn try_output_shape(lhs: &Shape, rhs: &Shape, bias: &Shape) -> Result<Shape, Error> {
    let output = try_matmul_shape(lhs, rhs)?;
    if !broadcasts_to(bias, &output) {
        return Err(Error::BiasNotBroadcastable {
            bias: bias.clone(),
            output,
        });
    }
    Ok(output)
}

/// [`try_output_shape`], panicking with the error's message.
///
/// This is the function the Fusion annotation calls when it registers the operation. The public
/// API validates first, so from there it never panics.
pub fn output_shape(lhs: &Shape, rhs: &Shape, bias: &Shape) -> Shape {
    try_output_shape(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// [`try_matmul_shape`], panicking with the error's message: the Fusion annotation of the
/// backward's gradient products calls it on shapes the forward already checked.
pub fn matmul_shape(lhs: &Shape, rhs: &Shape) -> Shape {
    try_matmul_shape(lhs, rhs).unwrap_or_else(|error| panic!("{error}"))
}

/// The shape of `lhs @ rhs` with broadcast batch dims, or why there is none.
pub fn try_matmul_shape(lhs: &Shape, rhs: &Shape) -> Result<Shape, Error> {
    let rank = lhs.num_dims();
    if rank < 2 {
        return Err(Error::Rank {
            operand: "lhs",
            shape: lhs.clone(),
            requirement: "it must have at least 2 dims".into(),
        });
    }
    if rhs.num_dims() != rank {
        return Err(Error::Rank {
            operand: "rhs",
            shape: rhs.clone(),
            requirement: format!("it must have the rank of `lhs` {lhs}, {rank}"),
        });
    }
    if lhs[rank - 1] != rhs[rank - 2] {
        return Err(Error::InnerDim {
            lhs: lhs.clone(),
            rhs: rhs.clone(),
        });
    }
    let mut dims = Vec::with_capacity(rank);
    for dim in 0..rank - 2 {
        let size =
            broadcast_dim(lhs[dim], rhs[dim]).ok_or_else(|| Error::BatchNotBroadcastable {
                lhs: lhs.clone(),
                rhs: rhs.clone(),
                dim,
            })?;
        dims.push(size);
    }
    dims.extend([lhs[rank - 2], rhs[rank - 1]]);
    Ok(Shape::from(dims))
}

/// Whether `shape` broadcasts to `target`, matched from the right.
pub fn broadcasts_to(shape: &Shape, target: &Shape) -> bool {
    let skip = match target.num_dims().checked_sub(shape.num_dims()) {
        Some(skip) => skip,
        None => return false,
    };
    (0..shape.num_dims()).all(|dim| shape[dim] == 1 || shape[dim] == target[skip + dim])
}

/// The size two broadcast dims take, `None` when they do not broadcast. A 1 stretches to the
/// other size, 0 included (a 0 meeting a 1 gives 0, not 1).
pub fn broadcast_dim(a: usize, b: usize) -> Option<usize> {
    match (a, b) {
        (a, b) if a == b => Some(a),
        (1, b) => Some(b),
        (a, 1) => Some(a),
        _ => None,
    }
}

/// The output dtype: `lhs`'s, once `rhs` and `bias` match it and fmar computes in it. (Whether a
/// given device can run it is the caller's question: see [`Error::UnsupportedDtype`].)
pub fn try_output_dtype(lhs: DType, rhs: DType, bias: DType) -> Result<DType, Error> {
    for (operand, dtype) in [("rhs", rhs), ("bias", bias)] {
        if dtype != lhs {
            return Err(Error::DtypeMismatch {
                operand,
                dtype,
                lhs,
            });
        }
    }
    if !SUPPORTED_DTYPES.contains(&lhs) {
        return Err(Error::UnsupportedDtype {
            dtype: lhs,
            reason: "(fmar computes in F32, F16 and BF16)".into(),
        });
    }
    Ok(lhs)
}

/// [`try_output_dtype`], panicking with the error's message. The Fusion annotation calls it.
pub fn output_dtype(lhs: DType, rhs: DType, bias: DType) -> DType {
    try_output_dtype(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// Whether `rhs` and `bias` are on `lhs`'s device: the first that is not is named in the error.
pub fn try_same_device<D: PartialEq + std::fmt::Debug>(
    lhs: &D,
    rhs: &D,
    bias: &D,
) -> Result<(), Error> {
    for (operand, other) in [("rhs", rhs), ("bias", bias)] {
        if other != lhs {
            return Err(Error::DeviceMismatch {
                operand,
                device: format!("{other:?}"),
                lhs: format!("{lhs:?}"),
            });
        }
    }
    Ok(())
}

/// Whether an output of `output` elements of `dtype` fits in one allocation of at most `limit`
/// bytes on `device` (named in the error). Checked at the call, so that a request larger than
/// the device can hold is a typed error rather than an allocation failure inside the runtime.
pub fn check_output_fits(
    output: &Shape,
    dtype: DType,
    limit: u64,
    device: &dyn std::fmt::Debug,
) -> Result<(), Error> {
    let bytes = output.iter().fold(dtype.size() as u64, |bytes, &dim| {
        bytes.saturating_mul(dim as u64)
    });
    if bytes > limit {
        return Err(Error::OutputTooLarge {
            output: output.clone(),
            dtype,
            bytes,
            limit,
            device: format!("{device:?}"),
        });
    }
    Ok(())
}

/// One input of a call, as [`check_call`] sees it: metadata only, nothing is read.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a, D> {
    /// The tensor's device.
    pub device: &'a D,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: &'a Shape,
}

impl<'a, D> Input<'a, D> {
    /// The input of a tensor on `device`, of `dtype` and `shape`.
    pub fn new(device: &'a D, dtype: DType, shape: &'a Shape) -> Self {
        Self {
            device,
            dtype,
            shape,
        }
    }
}

/// The output a valid call produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputMeta {
    /// Its shape, [`try_output_shape`]'s.
    pub shape: Shape,
    /// Its dtype, [`try_output_dtype`]'s.
    pub dtype: DType,
}

/// Every rule of the operation, in one order, for every entry point that checks a call (the
/// public API, and the backend forwards that users may call directly): the devices match, the
/// dtypes match and are supported by fmar and by the device (`device_supports`), the shapes give
/// an output, and that output fits in one buffer of at most `max_buffer_bytes` (when the device
/// states a limit). The first rule broken is the error.
pub fn check_call<D: PartialEq + std::fmt::Debug>(
    lhs: Input<'_, D>,
    rhs: Input<'_, D>,
    bias: Input<'_, D>,
    device_supports: impl FnOnce(DType) -> bool,
    max_buffer_bytes: Option<u64>,
) -> Result<OutputMeta, Error> {
    try_same_device(lhs.device, rhs.device, bias.device)?;
    let dtype = try_output_dtype(lhs.dtype, rhs.dtype, bias.dtype)?;
    if !device_supports(dtype) {
        return Err(Error::UnsupportedDtype {
            dtype,
            reason: format!("on device {:?}", lhs.device),
        });
    }
    let shape = try_output_shape(lhs.shape, rhs.shape, bias.shape)?;
    if let Some(limit) = max_buffer_bytes {
        check_output_fits(&shape, dtype, limit, lhs.device)?;
    }
    Ok(OutputMeta { shape, dtype })
}

/// The output of a call whose inputs [`check_call`] already accepted, where the call came in:
/// the shape and dtype by the rules the Fusion annotation registers the output with
/// ([`output_shape`], [`output_dtype`]), with nothing asked of the device, so that a call is
/// checked once, not again where it executes.
///
/// Debug builds assert the trust: they run [`check_call`] again (looking the buffer limit up
/// with `max_buffer_bytes`, which release builds never call) and panic with the error's
/// message. Release builds panic only where the inputs give no output shape or dtype at all.
pub fn trusted_output<D: PartialEq + std::fmt::Debug>(
    lhs: Input<'_, D>,
    rhs: Input<'_, D>,
    bias: Input<'_, D>,
    device_supports: impl FnOnce(DType) -> bool,
    max_buffer_bytes: impl FnOnce() -> Option<u64>,
) -> OutputMeta {
    if cfg!(debug_assertions) {
        return check_call(lhs, rhs, bias, device_supports, max_buffer_bytes())
            .unwrap_or_else(|error| panic!("{error}"));
    }
    // In `check_call`'s order: dtypes before shapes.
    let dtype = output_dtype(lhs.dtype, rhs.dtype, bias.dtype);
    OutputMeta {
        shape: output_shape(lhs.shape, rhs.shape, bias.shape),
        dtype,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dims: &[usize]) -> Shape {
        Shape::from(dims.to_vec())
    }

    #[test]
    fn output_size_is_checked_against_the_limit_without_overflow() {
        let limit = 1 << 20;
        assert!(check_output_fits(&shape(&[512, 512]), DType::F32, limit, &"dev").is_ok());
        let error = check_output_fits(&shape(&[512, 513]), DType::F32, limit, &"dev").unwrap_err();
        assert!(
            matches!(error, Error::OutputTooLarge { bytes, .. } if bytes == 512 * 513 * 4),
            "{error}"
        );
        // A product past u64 saturates instead of wrapping to something small.
        let huge = shape(&[1 << 40, 1 << 40, 1 << 40]);
        let error = check_output_fits(&huge, DType::F16, limit, &"dev").unwrap_err();
        assert!(matches!(
            error,
            Error::OutputTooLarge {
                bytes: u64::MAX,
                ..
            }
        ));
        assert!(check_output_fits(&shape(&[0, 1 << 40]), DType::F32, 0, &"dev").is_ok());
    }

    #[test]
    fn seed_example_shape() {
        let out = output_shape(
            &shape(&[1, 32, 32]),
            &shape(&[32, 32, 32]),
            &shape(&[32, 32, 32]),
        );
        assert_eq!(out, shape(&[32, 32, 32]));
    }

    #[test]
    fn linear_bias_broadcasts() {
        let out = shape(&[4, 8, 16]);
        for bias in [
            &[16][..],
            &[1, 16],
            &[1, 1, 16],
            &[4, 1, 16],
            &[1, 8, 16],
            &[8, 1],
            &[1],
        ] {
            assert!(broadcasts_to(&shape(bias), &out), "{bias:?}");
        }
        for bias in [&[15][..], &[2, 1, 16], &[1, 4, 8, 16], &[8]] {
            assert!(!broadcasts_to(&shape(bias), &out), "{bias:?}");
        }
    }

    #[test]
    fn zero_broadcasts_against_one() {
        assert_eq!(broadcast_dim(0, 1), Some(0));
        assert_eq!(broadcast_dim(1, 0), Some(0));
        assert_eq!(broadcast_dim(0, 2), None);
    }

    #[test]
    #[should_panic(expected = "inner dims differ: `lhs` [2, 3, 4] has k = 4 but `rhs` [2, 5, 6]")]
    fn panic_message_names_operands_and_shapes() {
        output_shape(&shape(&[2, 3, 4]), &shape(&[2, 5, 6]), &shape(&[6]));
    }

    #[test]
    fn rank_one_is_rejected_before_indexing() {
        let err = try_output_shape(&shape(&[4]), &shape(&[4, 2]), &shape(&[2])).unwrap_err();
        assert!(matches!(err, Error::Rank { operand: "lhs", .. }), "{err}");
    }

    #[test]
    fn check_call_applies_the_rules_in_order() {
        let (lhs, rhs, bias) = (shape(&[2, 3, 4]), shape(&[2, 4, 5]), shape(&[5]));
        let bad_rhs = shape(&[2, 6, 5]);
        // `rhs` varies; `lhs` and `bias` are F16 on device "a".
        let call = |device: &str, dtype, rhs: &Shape, supports: fn(DType) -> bool, limit| {
            check_call(
                Input::new(&"a", DType::F16, &lhs),
                Input::new(&device, dtype, rhs),
                Input::new(&"a", DType::F16, &bias),
                supports,
                limit,
            )
        };
        let all = |_| true;
        assert_eq!(
            call("a", DType::F16, &rhs, all, Some(1 << 20)),
            Ok(OutputMeta {
                shape: shape(&[2, 3, 5]),
                dtype: DType::F16
            })
        );
        // Devices before dtypes, dtypes before device support, support before shapes, shapes
        // before the output's size.
        let err = call("b", DType::F32, &bad_rhs, all, Some(0));
        assert!(matches!(err, Err(Error::DeviceMismatch { .. })), "{err:?}");
        let err = call("a", DType::F32, &bad_rhs, all, Some(0));
        assert!(matches!(err, Err(Error::DtypeMismatch { .. })), "{err:?}");
        let err = call("a", DType::F16, &bad_rhs, |d| d == DType::F32, Some(0));
        assert!(
            matches!(err, Err(Error::UnsupportedDtype { .. })),
            "{err:?}"
        );
        let err = call("a", DType::F16, &bad_rhs, all, Some(0));
        assert!(matches!(err, Err(Error::InnerDim { .. })), "{err:?}");
        let err = call("a", DType::F16, &rhs, all, Some(59));
        assert!(
            matches!(err, Err(Error::OutputTooLarge { bytes: 60, .. })),
            "{err:?}"
        );
        assert!(call("a", DType::F16, &rhs, all, None).is_ok());
    }

    #[test]
    fn trusted_output_is_the_checked_output() {
        let (lhs, rhs, bias) = (shape(&[4, 1, 3]), shape(&[1, 3, 5]), shape(&[1, 5]));
        let input = |shape| Input::new(&"a", DType::BF16, shape);
        assert_eq!(
            trusted_output(input(&lhs), input(&rhs), input(&bias), |_| true, || None),
            check_call(input(&lhs), input(&rhs), input(&bias), |_| true, None).unwrap()
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(
        expected = "matmul_add_relu: `rhs` is on device \"b\" but `lhs` is on device \"a\""
    )]
    fn debug_builds_check_what_they_trust() {
        let (lhs, rhs, bias) = (shape(&[2, 3]), shape(&[3, 4]), shape(&[4]));
        trusted_output(
            Input::new(&"a", DType::F32, &lhs),
            Input::new(&"b", DType::F32, &rhs),
            Input::new(&"a", DType::F32, &bias),
            |_| true,
            || None,
        );
    }

    #[test]
    fn dtype_rules() {
        assert_eq!(
            try_output_dtype(DType::F16, DType::F16, DType::F16),
            Ok(DType::F16)
        );
        let err = try_output_dtype(DType::F32, DType::F32, DType::BF16).unwrap_err();
        assert_eq!(
            err.to_string(),
            "matmul_add_relu: `bias` has dtype BF16 but `lhs` has dtype F32; all three must match"
        );
        let err = try_output_dtype(DType::F64, DType::F64, DType::F64).unwrap_err();
        assert!(matches!(err, Error::UnsupportedDtype { .. }), "{err}");
    }
}
