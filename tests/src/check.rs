//! One check of an implementation's forward output and gradients against the reference.

use crate::reference::{HostTensor, Problem};
use crate::tolerance::{Tolerances, assert_close};

/// What an implementation produced for a [`Problem`].
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The forward output, row-major.
    pub output: Vec<f64>,
    /// The gradients of `lhs`, `rhs` and `bias` (`None` where none was produced).
    pub grads: [Option<Vec<f64>>; 3],
}

/// Checks `outcome` against `problem`'s reference: the forward within `tolerances.forward`, and
/// for each input a gradient exactly when `tracked` says so, within `tolerances.gradients` of
/// the f64 gradient for upstream gradient `upstream`.
///
/// Where the pre-activation lies within the forward tolerance of 0, its sign is not fixed at
/// this precision; the implementation's own output decides the ReLU mask there.
pub fn check_outcome(
    what: &str,
    problem: &Problem,
    tolerances: Tolerances,
    upstream: &HostTensor,
    outcome: &Outcome,
    tracked: [bool; 3],
    seed: u64,
) {
    let tolerance = tolerances.forward;
    let forward_scale = problem.forward_scale();
    assert_close(
        &format!("{what}: forward"),
        &outcome.output,
        &problem.output.data,
        tolerance,
        forward_scale,
        seed,
    );
    if tracked == [false; 3] && outcome.grads.iter().all(Option::is_none) {
        return;
    }
    let mask = problem.resolve_mask(&outcome.output, |i| {
        tolerance.bound(problem.pre_activation.data[i], forward_scale)
    });
    let expected = problem.gradients(upstream, &mask);
    let scales = problem.gradient_scales(upstream.max_abs());
    let inputs = [
        ("lhs", expected.lhs),
        ("rhs", expected.rhs),
        ("bias", expected.bias),
    ];
    for (((name, expected), got), (scale, tracked)) in inputs
        .into_iter()
        .zip(&outcome.grads)
        .zip(scales.into_iter().zip(tracked))
    {
        match (tracked, got) {
            (true, Some(got)) => assert_close(
                &format!("{what}: grad {name}"),
                got,
                &expected.data,
                tolerances.gradients,
                scale,
                seed,
            ),
            (false, None) => {}
            (tracked, got) => panic!(
                "{what}: grad {name}: tracked = {tracked} but a gradient is {}",
                if got.is_some() { "present" } else { "missing" }
            ),
        }
    }
}
