//! The same inputs on the same device give bit-identical outputs and gradients, run to run, for
//! every kernel variant the device can run.
//!
//! Every fmar variant sums each output element's `k` products in a fixed order with no atomics:
//! one unit (or one warpgroup MMA chain) a sum, and where a Hopper kernel splits `k`, each
//! slice's sum kept apart and the slices added in a fixed order. So bit-identity is expected
//! of all of them, and of the backward's products, on fmar's Hopper kernels or Burn's matmul,
//! run with the same kernels each time.
//!
//! Its own test binary: forcing a variant is process-wide.

mod common;

use burn::tensor::{Device, Tensor};
use common::{dtype, runs, tensor};
use fmar::diagnostics::{force_variant, last_launched_variant};
use fmar::kernel::Variant;
use fmar_tests::{HostTensor, Precision, Problem, Rng};

const RUNS: usize = 3;

/// The raw bytes of a tensor: compared bit for bit.
fn bytes<const D: usize>(tensor: Tensor<D>) -> Vec<u8> {
    tensor.into_data().into_bytes().to_vec()
}

/// Output, then the three gradients, as bytes, from fresh tensors holding `problem`'s values.
fn run_once(problem: &Problem, upstream: &HostTensor, precision: Precision) -> Vec<Vec<u8>> {
    let device = Device::default().autodiff();
    let lhs = tensor::<3>(&problem.lhs, &device, precision).require_grad();
    let rhs = tensor::<3>(&problem.rhs, &device, precision).require_grad();
    let bias = tensor::<1>(&problem.bias, &device, precision).require_grad();
    let output = fmar::matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
    let grads = (output.clone() * tensor::<3>(upstream, &device, precision))
        .sum()
        .backward();
    vec![
        bytes(output),
        bytes(lhs.grad(&grads).unwrap()),
        bytes(rhs.grad(&grads).unwrap()),
        bytes(bias.grad(&grads).unwrap()),
    ]
}

#[test]
fn same_inputs_give_bit_identical_results() {
    let mut ran = Vec::new();
    for precision in [Precision::F32, Precision::F16] {
        if !runs(precision) {
            continue;
        }
        // Ragged, with a broadcast lhs batch and a k long enough for rounding order to show.
        let mut rng = Rng::fresh();
        let problem = Problem::random(&[1, 67, 301], &[3, 301, 45], &[45], &mut rng, precision);
        let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);
        for variant in std::iter::once(None).chain(Variant::ALL.map(Some)) {
            force_variant(variant);
            let first = run_once(&problem, &upstream, precision);
            let launched = last_launched_variant();
            // A forced variant the device cannot run falls back to fmar's own choice; the
            // portable ones run everywhere, so a fallback from them is a failure here (which
            // variants run on which device is the kernel crate's
            // `each_variant_runs_exactly_where_expected`).
            if let Some(forced @ (Variant::Naive | Variant::Tiled)) = variant {
                assert_eq!(
                    launched,
                    Some(forced),
                    "{precision:?}: forced {forced:?} but {launched:?} ran"
                );
            }
            assert!(launched.is_some(), "{precision:?}: no variant ran");
            for attempt in 1..RUNS {
                let again = run_once(&problem, &upstream, precision);
                for (which, (a, b)) in ["output", "grad lhs", "grad rhs", "grad bias"]
                    .iter()
                    .zip(first.iter().zip(&again))
                {
                    assert!(
                        a == b,
                        "{which} differs between run 0 and run {attempt} \
                         ({precision:?}, forced {variant:?}, launched {launched:?}, seed {})",
                        rng.seed()
                    );
                }
            }
            assert_eq!(
                first[0].len(),
                problem.output.data.len() * dtype(precision).size()
            );
            ran.push(format!("{precision:?} {variant:?} -> {launched:?}"));
        }
    }
    force_variant(None);
    eprintln!("bit-identical across {RUNS} runs: {ran:#?}");
}
