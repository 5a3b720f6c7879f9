//! Property tests of the shape rule: valid operands give the broadcast shape (and agree with
//! Burn's own matmul shape rule), every bias pattern that broadcasts is accepted, and each kind
//! of bad operand gives its own error, whose message names the shapes.

use burn::tensor::Shape;
use fmar_fusion_meta::{Error, broadcasts_to, output_shape, try_matmul_shape, try_output_shape};
use proptest::prelude::*;

/// A batch-dim pair that broadcasts: equal, or one side 1.
fn broadcast_pair() -> impl Strategy<Value = (usize, usize)> {
    (0usize..5, 0usize..3).prop_map(|(size, pattern)| match pattern {
        0 => (size, size),
        1 => (1, size),
        _ => (size, 1),
    })
}

/// Valid `(lhs, rhs, output)` shapes of rank 2 to 6, zero sizes included.
fn valid_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    (
        prop::collection::vec(broadcast_pair(), 0..5),
        0usize..40,
        0usize..40,
        0usize..40,
    )
        .prop_map(|(batch, m, k, n)| {
            let lhs: Vec<usize> = batch.iter().map(|p| p.0).chain([m, k]).collect();
            let rhs: Vec<usize> = batch.iter().map(|p| p.1).chain([k, n]).collect();
            let out: Vec<usize> = batch
                .iter()
                .map(|&(a, b)| if a == 1 { b } else { a })
                .chain([m, n])
                .collect();
            (lhs, rhs, out)
        })
}

/// A bias shape that broadcasts to `out`: a suffix of `out`'s dims, each kept or set to 1.
fn bias_for(out: Vec<usize>) -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    let rank = out.len();
    (0..=rank, prop::collection::vec(any::<bool>(), rank)).prop_map(move |(drop, keep)| {
        let bias = out[drop..]
            .iter()
            .zip(&keep)
            .map(|(&size, &keep)| if keep { size } else { 1 })
            .collect();
        (out.clone(), bias)
    })
}

fn shape(dims: &[usize]) -> Shape {
    Shape::from(dims.to_vec())
}

proptest! {
    #[test]
    fn every_broadcasting_bias_gives_the_matmul_output(
        ((lhs, rhs), (out, bias)) in valid_shapes()
            .prop_flat_map(|(lhs, rhs, out)| (Just((lhs, rhs)), bias_for(out)))
    ) {
        let got = output_shape(&shape(&lhs), &shape(&rhs), &shape(&bias));
        prop_assert_eq!(got, shape(&out));
    }

    #[test]
    fn matmul_rule_agrees_with_burns((lhs, rhs, _) in valid_shapes()) {
        let ours = try_matmul_shape(&shape(&lhs), &shape(&rhs)).unwrap();
        let burns = burn::tensor::calculate_matmul_output(&shape(&lhs), &shape(&rhs)).unwrap();
        prop_assert_eq!(ours, burns);
    }

    #[test]
    fn inner_dim_mismatch_is_named((lhs, mut rhs, out) in valid_shapes(), extra in 1usize..5) {
        let rank = rhs.len();
        rhs[rank - 2] += extra;
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&out)).unwrap_err();
        prop_assert!(matches!(err, Error::InnerDim { .. }), "{:?}", err);
        let message = err.to_string();
        prop_assert!(message.contains(&format!("{:?}", lhs)), "{}", message);
        prop_assert!(message.contains(&format!("{:?}", rhs)), "{}", message);
    }

    #[test]
    fn non_broadcasting_batch_is_named(
        (mut lhs, mut rhs, out) in valid_shapes(),
        a in 2usize..6,
        b in 2usize..6,
    ) {
        prop_assume!(lhs.len() > 2 && a != b);
        lhs[0] = a;
        rhs[0] = b;
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&out)).unwrap_err();
        prop_assert!(matches!(err, Error::BatchNotBroadcastable { dim: 0, .. }), "{:?}", err);
    }

    #[test]
    fn bias_that_does_not_broadcast_is_named(
        (lhs, rhs, out) in valid_shapes(),
        dim in 0usize..8,
        extra in 1usize..4,
    ) {
        // Make one bias dim differ from the output's and from 1.
        let mut bias = out.clone();
        let dim = dim % bias.len();
        bias[dim] = if out[dim] + extra == 1 { 2 } else { out[dim] + extra };
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&bias)).unwrap_err();
        prop_assert!(matches!(err, Error::BiasNotBroadcastable { .. }), "{:?}", err);
        prop_assert!(err.to_string().contains(&format!("{:?}", bias)), "{}", err);
    }

    #[test]
    fn bias_with_more_dims_than_the_output_is_rejected((lhs, rhs, out) in valid_shapes()) {
        let mut bias = out.clone();
        bias.insert(0, 1);
        prop_assert!(!broadcasts_to(&shape(&bias), &shape(&out)));
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&bias)).unwrap_err();
        prop_assert!(matches!(err, Error::BiasNotBroadcastable { .. }), "{:?}", err);
    }

    #[test]
    fn rank_mismatch_is_named((lhs, rhs, out) in valid_shapes()) {
        let mut rhs = rhs;
        rhs.insert(0, 1);
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&out)).unwrap_err();
        prop_assert!(matches!(err, Error::Rank { operand: "rhs", .. }), "{:?}", err);
    }
}
