//! The f64 host reference: forward and gradients of `relu(lhs @ rhs + bias)` with Burn's
//! broadcasting rules, written as plain loops so that it shares no code with what it checks.

use crate::data::{Precision, Rng};

/// A dense, row-major tensor of f64 values.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// The dims, outermost first.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values, row-major.
    pub data: Vec<f64>,
}

impl HostTensor {
    /// A tensor of `shape` holding `data`.
    pub fn new(shape: Vec<usize>, data: Vec<f64>) -> Self {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "data does not fill shape {shape:?}"
        );
        Self { shape, data }
    }

    /// Random values uniform in `[-1, 1)`, rounded to `precision`.
    pub fn random(shape: &[usize], rng: &mut Rng, precision: Precision) -> Self {
        let len = shape.iter().product();
        Self::new(shape.to_vec(), rng.values(len, -1.0, 1.0, precision))
    }

    /// The largest absolute value, 0 for an empty tensor.
    pub fn max_abs(&self) -> f64 {
        self.data.iter().fold(0.0, |acc, x| acc.max(x.abs()))
    }

    /// Offset of the element that `index` (an index into a tensor of `target` shape, which this
    /// tensor broadcasts to, right-aligned) reads.
    fn broadcast_offset(&self, index: &[usize]) -> usize {
        let skip = index.len() - self.shape.len();
        let mut offset = 0;
        for (dim, &size) in self.shape.iter().enumerate() {
            let coordinate = if size == 1 { 0 } else { index[skip + dim] };
            offset = offset * size + coordinate;
        }
        offset
    }
}

/// One fused problem: the inputs and the reference's forward results.
#[derive(Debug, Clone)]
pub struct Problem {
    /// `[B.., m, k]`.
    pub lhs: HostTensor,
    /// `[B.., k, n]`.
    pub rhs: HostTensor,
    /// Any shape that broadcasts (right-aligned) to the output.
    pub bias: HostTensor,
    /// `lhs @ rhs + bias`, before the ReLU, `[B.., m, n]`.
    pub pre_activation: HostTensor,
    /// `relu(pre_activation)`.
    pub output: HostTensor,
}

/// The three input gradients, each in its input's shape.
#[derive(Debug, Clone)]
pub struct Gradients {
    /// d loss / d lhs.
    pub lhs: HostTensor,
    /// d loss / d rhs.
    pub rhs: HostTensor,
    /// d loss / d bias.
    pub bias: HostTensor,
}

/// The output shape of `lhs @ rhs`: broadcast batch dims, then `[m, n]`.
pub fn output_shape(lhs: &[usize], rhs: &[usize]) -> Vec<usize> {
    let rank = lhs.len();
    assert!(rank >= 2 && rhs.len() == rank, "ranks {lhs:?} {rhs:?}");
    assert_eq!(lhs[rank - 1], rhs[rank - 2], "inner dims {lhs:?} {rhs:?}");
    let mut out: Vec<usize> = lhs[..rank - 2]
        .iter()
        .zip(&rhs[..rank - 2])
        .map(|(&a, &b)| match (a, b) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => panic!("batch dims {lhs:?} {rhs:?} do not broadcast"),
        })
        .collect();
    out.extend([lhs[rank - 2], rhs[rank - 1]]);
    out
}

/// Every index of a tensor of `shape`, row-major.
fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    let len: usize = shape.iter().product();
    (0..len).map(move |mut flat| {
        let mut index = vec![0; shape.len()];
        for dim in (0..shape.len()).rev() {
            index[dim] = flat % shape[dim];
            flat /= shape[dim];
        }
        index
    })
}

impl Problem {
    /// Computes the reference forward for the given inputs.
    pub fn new(lhs: HostTensor, rhs: HostTensor, bias: HostTensor) -> Self {
        let out_shape = output_shape(&lhs.shape, &rhs.shape);
        let rank = out_shape.len();
        let k = lhs.shape[rank - 1];
        let mut pre = Vec::with_capacity(out_shape.iter().product());
        for index in indices(&out_shape) {
            let (i, j) = (index[rank - 2], index[rank - 1]);
            let mut sum = 0.0;
            let mut at = index.clone();
            for kk in 0..k {
                at[rank - 2] = i;
                at[rank - 1] = kk;
                let a = lhs.data[lhs.broadcast_offset(&at)];
                at[rank - 2] = kk;
                at[rank - 1] = j;
                let b = rhs.data[rhs.broadcast_offset(&at)];
                sum += a * b;
            }
            pre.push(sum + bias.data[bias.broadcast_offset(&index)]);
        }
        let output = pre.iter().map(|&x| if x < 0.0 { 0.0 } else { x }).collect();
        Self {
            pre_activation: HostTensor::new(out_shape.clone(), pre),
            output: HostTensor::new(out_shape, output),
            lhs,
            rhs,
            bias,
        }
    }

    /// Random inputs of the given shapes in `[-1, 1)`, rounded to `precision`.
    pub fn random(
        lhs: &[usize],
        rhs: &[usize],
        bias: &[usize],
        rng: &mut Rng,
        precision: Precision,
    ) -> Self {
        Self::new(
            HostTensor::random(lhs, rng, precision),
            HostTensor::random(rhs, rng, precision),
            HostTensor::random(bias, rng, precision),
        )
    }

    /// The length of the reduction behind each output (`k`).
    pub fn k(&self) -> usize {
        self.lhs.shape[self.lhs.shape.len() - 1]
    }

    /// The partial-sum scales ([`Tolerance::matmul_scale`](crate::Tolerance::matmul_scale)) of
    /// the three gradients for an upstream gradient bounded by `upstream_max`: each gradient
    /// element sums `len` products, over the output columns (or rows) and the batch copies its
    /// input was broadcast to.
    pub fn gradient_scales(&self, upstream_max: f64) -> [f64; 3] {
        let out_len = self.output.data.len();
        let k = self.k();
        let len = |numerator: usize, input: &HostTensor| numerator / input.data.len().max(1);
        [
            crate::Tolerance::matmul_scale(
                len(out_len * k, &self.lhs),
                upstream_max,
                self.rhs.max_abs(),
            ),
            crate::Tolerance::matmul_scale(
                len(out_len * k, &self.rhs),
                upstream_max,
                self.lhs.max_abs(),
            ),
            crate::Tolerance::matmul_scale(len(out_len, &self.bias), upstream_max, 1.0),
        ]
    }

    /// The scale of the forward's partial sums plus the bias.
    pub fn forward_scale(&self) -> f64 {
        crate::Tolerance::matmul_scale(self.k(), self.lhs.max_abs(), self.rhs.max_abs())
            + self.bias.max_abs()
    }

    /// Asserts that `actual` is this problem's forward output within `tolerance` at
    /// [`forward_scale`](Self::forward_scale), naming `what` and the data's `seed` when it is not.
    pub fn assert_forward(
        &self,
        what: &str,
        actual: &[f64],
        tolerance: crate::Tolerance,
        seed: u64,
    ) {
        crate::assert_close(
            what,
            actual,
            &self.output.data,
            tolerance,
            self.forward_scale(),
            seed,
        );
    }

    /// The ReLU mask an implementation's output implies, where the reference cannot decide.
    ///
    /// Where `|pre_activation|` is within `band` of 0, the sign at the storage precision is not
    /// determined, and the implementation's own output (`> 0` or not) decides; elsewhere the
    /// reference's sign does. Gradients checked with this mask are exact wherever the sign is.
    pub fn resolve_mask(
        &self,
        implementation_output: &[f64],
        band: impl Fn(usize) -> f64,
    ) -> Vec<bool> {
        self.pre_activation
            .data
            .iter()
            .zip(implementation_output)
            .enumerate()
            .map(|(index, (&pre, &out))| {
                if pre.abs() <= band(index) {
                    out > 0.0
                } else {
                    pre > 0.0
                }
            })
            .collect()
    }

    /// The gradients for an upstream gradient `grad_output` and a ReLU `mask` (see
    /// [`Problem::resolve_mask`]), each summed over the dims its input was broadcast along.
    pub fn gradients(&self, grad_output: &HostTensor, mask: &[bool]) -> Gradients {
        let out_shape = &self.output.shape;
        assert_eq!(&grad_output.shape, out_shape);
        let rank = out_shape.len();
        let k = self.k();
        let mut lhs = vec![0.0; self.lhs.data.len()];
        let mut rhs = vec![0.0; self.rhs.data.len()];
        let mut bias = vec![0.0; self.bias.data.len()];

        for (flat, index) in indices(out_shape).enumerate() {
            if !mask[flat] {
                continue;
            }
            let g = grad_output.data[flat];
            let (i, j) = (index[rank - 2], index[rank - 1]);
            bias[self.bias.broadcast_offset(&index)] += g;
            let mut at = index.clone();
            for kk in 0..k {
                // d/d lhs[.., i, kk] += g * rhs[.., kk, j]
                at[rank - 2] = kk;
                at[rank - 1] = j;
                let rhs_offset = self.rhs.broadcast_offset(&at);
                at[rank - 2] = i;
                at[rank - 1] = kk;
                let lhs_offset = self.lhs.broadcast_offset(&at);
                lhs[lhs_offset] += g * self.rhs.data[rhs_offset];
                rhs[rhs_offset] += g * self.lhs.data[lhs_offset];
            }
        }
        Gradients {
            lhs: HostTensor::new(self.lhs.shape.clone(), lhs),
            rhs: HostTensor::new(self.rhs.shape.clone(), rhs),
            bias: HostTensor::new(self.bias.shape.clone(), bias),
        }
    }
}
