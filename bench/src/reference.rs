//! The independent reference: one shape's inputs, the expected output and gradients computed
//! on the CPU in f32 by Burn's Flex backend, and how far a candidate may be from them.

use crate::candidates::Candidate;
use crate::cli::Dtype;
use burn::tensor::{DType, Device, Tensor, TensorData};
use fmar_bench::data::pseudo_random;

/// What every figure was checked against, as the report states it.
pub const CHECKED_AGAINST: &str = "relu(lhs @ rhs + bias) in f32 on the CPU (Burn's Flex), from the \
    inputs upcast to f32; whole for b*m*k*n <= 2^26, else on up to 64 strided output rows; \
    gradients against the exact ones given the candidate's own ReLU mask";

/// Problems up to this many multiply-adds are compared whole with the reference.
const FULL_CHECK_MACS: usize = 1 << 26;
/// Otherwise the compared sample: batches, output rows in all, and `grad rhs` columns.
const SAMPLE_BATCHES: usize = 4;
const SAMPLE_ROWS: usize = 64;
const SAMPLE_COLUMNS: usize = 64;

impl Dtype {
    /// The largest accepted `max |actual - expected| / max |expected|`: f32 leaves room for
    /// matmuls that round their inputs to TF32.
    pub fn default_tolerance(self) -> f64 {
        match self {
            Dtype::F32 => 1e-3,
            Dtype::F16 => 1e-2,
            Dtype::Bf16 => 3e-2,
        }
    }
}

/// A step's gradients, read back.
pub struct Gradients {
    pub lhs: Vec<f32>,
    pub rhs: Vec<f32>,
    pub bias: Option<Vec<f32>>,
}

/// One shape's inputs on the host (uploaded afresh for every candidate) and the independent
/// reference for the compared part of the output.
pub struct Problem {
    pub shape: [usize; 4],
    /// In the benchmark's dtype.
    lhs: TensorData,
    rhs: TensorData,
    bias: TensorData,
    /// The same values upcast to f32 (exact).
    lhs_f32: Vec<f32>,
    rhs_f32: Vec<f32>,
    bias_f32: Vec<f32>,
    sample: Sample,
    /// `lhs @ rhs` on the sampled rows, `[batches, rows, n]`, without bias or ReLU.
    product: Vec<f32>,
}

/// The compared part of a problem: every index when it is small, else strided ones.
struct Sample {
    batches: Vec<usize>,
    rows: Vec<usize>,
    columns: Vec<usize>,
}

/// `count` indices spread evenly over `0..len`, first and last included; all of them when
/// `len <= count`.
fn strided(len: usize, count: usize) -> Vec<usize> {
    if len <= count {
        (0..len).collect()
    } else if count <= 1 {
        vec![0]
    } else {
        (0..count).map(|i| i * (len - 1) / (count - 1)).collect()
    }
}

impl Sample {
    fn new([b, m, k, n]: [usize; 4]) -> Self {
        if b * m * k * n <= FULL_CHECK_MACS {
            return Self {
                batches: (0..b).collect(),
                rows: (0..m).collect(),
                columns: (0..n).collect(),
            };
        }
        let batches = strided(b, SAMPLE_BATCHES);
        let rows = strided(m, (SAMPLE_ROWS / batches.len().max(1)).max(1));
        Self {
            batches,
            rows,
            columns: strided(n, SAMPLE_COLUMNS),
        }
    }
}

impl Problem {
    pub fn new(shape: [usize; 4], dtype: DType) -> Self {
        let [b, m, k, n] = shape;
        // Uniform in [-1, 1), rounded to the dtype once, here.
        let data = |len: usize, seed: u64, dims: Vec<usize>| {
            let values: Vec<f32> = pseudo_random(len, seed).iter().map(|v| 2.0 * v).collect();
            TensorData::new(values, dims).convert_dtype(dtype)
        };
        let lhs = data(b * m * k, 1, vec![b, m, k]);
        let rhs = data(b * k * n, 2, vec![b, k, n]);
        let bias = data(n, 3, vec![n]);
        let upcast = |data: &TensorData| {
            data.clone()
                .try_into_vec_as::<f32>()
                .expect("float data converts to f32")
        };
        let (lhs_f32, rhs_f32, bias_f32) = (upcast(&lhs), upcast(&rhs), upcast(&bias));
        let sample = Sample::new(shape);
        let lhs_rows = gather_rows(&lhs_f32, [b, m, k], &sample.batches, &sample.rows);
        let rhs_batches = gather_batches(&rhs_f32, k * n, &sample.batches);
        let (sb, sr) = (sample.batches.len(), sample.rows.len());
        let product = cpu_matmul(
            (lhs_rows, [sb, sr, k], false),
            (rhs_batches, [sb, k, n], false),
        );
        Self {
            shape,
            lhs,
            rhs,
            bias,
            lhs_f32,
            rhs_f32,
            bias_f32,
            sample,
            product,
        }
    }

    pub fn upload(&self, device: &Device, dtype: DType) -> (Tensor<3>, Tensor<3>, Tensor<1>) {
        (
            Tensor::from_data(self.lhs.clone(), (device, dtype)),
            Tensor::from_data(self.rhs.clone(), (device, dtype)),
            Tensor::from_data(self.bias.clone(), (device, dtype)),
        )
    }

    /// How far a candidate's output `[b, m, n]` is from the reference, `relu(lhs @ rhs + bias)`
    /// (`lhs @ rhs` without the epilogue), on the sampled rows; infinitely far when any of its
    /// values is not finite.
    pub fn check_output(&self, out: &[f32], epilogue: bool) -> Deviation {
        let [b, m, _, n] = self.shape;
        if let Some(bad) = not_finite("output", out, b * m * n) {
            return bad;
        }
        let mut pairs = Vec::with_capacity(self.product.len());
        let mut expected = self.product.iter();
        for &batch in &self.sample.batches {
            for &row in &self.sample.rows {
                let start = (batch * m + row) * n;
                for (j, &actual) in out[start..start + n].iter().enumerate() {
                    let product = *expected.next().expect("one product per sampled value");
                    let value = if epilogue {
                        (product + self.bias_f32[j]).max(0.0)
                    } else {
                        product
                    };
                    pairs.push((actual, value));
                }
            }
        }
        Deviation::of("output", &pairs)
    }

    /// How far a candidate's gradients of `out.sum()` are from the exact ones given the ReLU
    /// mask of its output `out` (all ones for `burn matmul`): the worst of the three.
    pub fn check_gradients(
        &self,
        out: &[f32],
        grads: &Gradients,
        candidate: Candidate,
    ) -> Deviation {
        let [b, m, k, n] = self.shape;
        let sample = &self.sample;
        let bad = not_finite("grad lhs", &grads.lhs, b * m * k)
            .or_else(|| not_finite("grad rhs", &grads.rhs, b * k * n))
            .or_else(|| {
                let bias = grads.bias.as_deref()?;
                not_finite("grad bias", bias, n)
            });
        if let Some(bad) = bad {
            return bad;
        }
        let mask: Vec<f32> = if candidate.has_epilogue() {
            out.iter()
                .map(|&v| if v > 0.0 { 1.0 } else { 0.0 })
                .collect()
        } else {
            vec![1.0; out.len()]
        };
        let (sb, sr, sc) = (
            sample.batches.len(),
            sample.rows.len(),
            sample.columns.len(),
        );

        // grad lhs = M @ rhs^T, on the sampled rows.
        let mask_rows = gather_rows(&mask, [b, m, n], &sample.batches, &sample.rows);
        let rhs_batches = gather_batches(&self.rhs_f32, k * n, &sample.batches);
        let expected = cpu_matmul(
            (mask_rows, [sb, sr, n], false),
            (rhs_batches, [sb, k, n], true),
        );
        let actual = gather_rows(&grads.lhs, [b, m, k], &sample.batches, &sample.rows);
        let mut deviation = Deviation::of("grad lhs", &pairs(&actual, &expected));

        // grad rhs = lhs^T @ M, on the sampled columns.
        let lhs_batches = gather_batches(&self.lhs_f32, m * k, &sample.batches);
        let mask_columns = gather_columns(&mask, [b, m, n], &sample.batches, &sample.columns);
        let expected = cpu_matmul(
            (lhs_batches, [sb, m, k], true),
            (mask_columns, [sb, m, sc], false),
        );
        let actual = gather_columns(&grads.rhs, [b, k, n], &sample.batches, &sample.columns);
        deviation = deviation.worst(Deviation::of("grad rhs", &pairs(&actual, &expected)));

        // grad bias = the column sums of M, whole.
        if let Some(grad_bias) = &grads.bias {
            let mut counts = vec![0.0f64; n];
            for row in mask.chunks(n) {
                for (count, &value) in counts.iter_mut().zip(row) {
                    *count += f64::from(value);
                }
            }
            let expected: Vec<f32> = counts.iter().map(|&c| c as f32).collect();
            deviation = deviation.worst(Deviation::of("grad bias", &pairs(grad_bias, &expected)));
        }
        deviation
    }
}

fn pairs(actual: &[f32], expected: &[f32]) -> Vec<(f32, f32)> {
    assert_eq!(
        actual.len(),
        expected.len(),
        "compared slices differ in length"
    );
    actual
        .iter()
        .copied()
        .zip(expected.iter().copied())
        .collect()
}

/// An infinite deviation when `values` has the wrong length or a value that is not finite.
fn not_finite(what: &str, values: &[f32], len: usize) -> Option<Deviation> {
    let of = if values.len() != len {
        format!("{what} ({} values, expected {len})", values.len())
    } else {
        match values.iter().filter(|v| !v.is_finite()).count() {
            0 => return None,
            bad => format!("{what} ({bad} of {len} values not finite)"),
        }
    };
    Some(Deviation {
        of,
        rel_error: f64::INFINITY,
    })
}

/// How far a candidate's tensor is from the reference.
#[derive(Clone)]
pub struct Deviation {
    /// Which tensor.
    pub of: String,
    /// `max |actual - expected| / max |expected|` over the compared values.
    pub rel_error: f64,
}

impl Deviation {
    fn of(what: &str, pairs: &[(f32, f32)]) -> Self {
        let (mut worst, mut scale) = (0.0f64, 0.0f64);
        // Both sides are finite: `not_finite` has checked the candidate's values.
        for &(actual, expected) in pairs {
            worst = worst.max((f64::from(actual) - f64::from(expected)).abs());
            scale = scale.max(f64::from(expected).abs());
        }
        Self {
            of: what.into(),
            rel_error: worst / scale.max(f64::MIN_POSITIVE),
        }
    }

    pub fn worst(self, other: Self) -> Self {
        if other.rel_error > self.rel_error || other.rel_error.is_nan() {
            other
        } else {
            self
        }
    }
}

/// `tensor[batch, row, ..]` for every sampled batch and row, in that order.
fn gather_rows(
    tensor: &[f32],
    [_, rows, cols]: [usize; 3],
    batches: &[usize],
    sampled_rows: &[usize],
) -> Vec<f32> {
    let mut out = Vec::with_capacity(batches.len() * sampled_rows.len() * cols);
    for &batch in batches {
        for &row in sampled_rows {
            let start = (batch * rows + row) * cols;
            out.extend_from_slice(&tensor[start..start + cols]);
        }
    }
    out
}

/// `tensor[batch, .., column]` for every sampled batch and column: `[batches, rows, columns]`.
fn gather_columns(
    tensor: &[f32],
    [_, rows, cols]: [usize; 3],
    batches: &[usize],
    columns: &[usize],
) -> Vec<f32> {
    let mut out = Vec::with_capacity(batches.len() * rows * columns.len());
    for &batch in batches {
        for row in tensor[batch * rows * cols..(batch + 1) * rows * cols].chunks(cols) {
            out.extend(columns.iter().map(|&column| row[column]));
        }
    }
    out
}

/// The sampled batches of a `[b, ..]` tensor whose batches hold `batch_len` values each.
fn gather_batches(tensor: &[f32], batch_len: usize, batches: &[usize]) -> Vec<f32> {
    batches
        .iter()
        .flat_map(|&batch| &tensor[batch * batch_len..(batch + 1) * batch_len])
        .copied()
        .collect()
}

/// `a @ b` of two `[batch, rows, cols]` f32 arrays, each transposed (its last two dims swapped)
/// where its flag says, on the CPU by Burn's Flex backend: no Fusion, and nothing shared with the
/// device under test.
fn cpu_matmul(
    (a, a_dims, a_transposed): (Vec<f32>, [usize; 3], bool),
    (b, b_dims, b_transposed): (Vec<f32>, [usize; 3], bool),
) -> Vec<f32> {
    let cpu = Device::flex();
    let tensor = |values: Vec<f32>, dims: [usize; 3], transposed: bool| {
        let tensor = Tensor::<3>::from_data(TensorData::new(values, dims), (&cpu, DType::F32));
        if transposed {
            tensor.swap_dims(1, 2)
        } else {
            tensor
        }
    };
    tensor(a, a_dims, a_transposed)
        .matmul(tensor(b, b_dims, b_transposed))
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("f32 values")
}
