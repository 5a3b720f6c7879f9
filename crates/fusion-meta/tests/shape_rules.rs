//! Property tests of the shape rule: valid operands give the broadcast shape (and agree with
//! Burn's own matmul shape rule), and each kind of bad operand gives its own error.

use burn::tensor::Shape;
use fmar_fusion_meta::{ShapeError, output_shape, try_matmul_shape, try_output_shape};
use proptest::prelude::*;

/// A batch-dim pair that broadcasts: equal, or one side 1.
fn broadcast_pair() -> impl Strategy<Value = (usize, usize)> {
    (0usize..5, 0usize..3).prop_map(|(size, pattern)| match pattern {
        0 => (size, size),
        1 => (1, size),
        _ => (size, 1),
    })
}

/// Valid `(lhs, rhs, expected output)` shapes of rank 2 to 5, zero sizes included.
fn valid_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    (
        prop::collection::vec(broadcast_pair(), 0..4),
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

fn shape(dims: &[usize]) -> Shape {
    Shape::from(dims.to_vec())
}

proptest! {
    #[test]
    fn valid_operands_give_the_broadcast_output((lhs, rhs, out) in valid_shapes()) {
        let got = output_shape(&shape(&lhs), &shape(&rhs), &shape(&out));
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
        prop_assert!(matches!(err, ShapeError::InnerDim { .. }), "{:?}", err);
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
        prop_assert!(matches!(err, ShapeError::Batch { dim: 0, .. }), "{:?}", err);
    }

    #[test]
    fn bias_must_be_the_output_shape((lhs, rhs, mut out) in valid_shapes(), dim in 0usize..8) {
        let dim = dim % out.len();
        out[dim] += 1;
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&out)).unwrap_err();
        prop_assert!(matches!(err, ShapeError::Bias { .. }), "{:?}", err);
    }

    #[test]
    fn rank_mismatch_is_named((lhs, rhs, out) in valid_shapes()) {
        let mut rhs = rhs;
        rhs.insert(0, 1);
        let err = try_output_shape(&shape(&lhs), &shape(&rhs), &shape(&out)).unwrap_err();
        prop_assert!(matches!(err, ShapeError::RankMismatch { .. }), "{:?}", err);
    }
}
