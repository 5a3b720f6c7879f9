//! What the tests of the Hopper variant share: operands stored as its callers store them, and
//! the decline it must report off Hopper.

use crate::contract;
use crate::kernel;
use fmar_tests::{Precision, Problem, Rng, Tolerance, assert_close};

/// `problem`'s operands on the device as the Hopper tests store them (`lhs` M-major and `rhs`
/// K-major when asked: stored transposed and read through swapped strides, else row-major),
/// expanded to the output's batch, and the output's buffer (NaN-filled).
pub fn hopper_operands(
    client: &cubecl::client::Client,
    problem: &Problem,
    precision: Precision,
    lhs_m_major: bool,
    rhs_k_major: bool,
) -> (kernel::Operands, cubecl::server::Handle) {
    use contract::{binding, broadcast_binding, upload};
    let out_shape = problem.output.shape.clone();
    let rank = out_shape.len();
    let stored = |host: &fmar_tests::HostTensor, transposed: bool| {
        if !transposed {
            return upload(client, host, precision);
        }
        let (handle, mut strides) =
            upload(client, &fmar_tests::layout::transposed(host), precision);
        let r = strides.len();
        strides.swap(r - 2, r - 1);
        (handle, strides)
    };
    let (lhs, lhs_strides) = stored(&problem.lhs, lhs_m_major);
    let (rhs, rhs_strides) = stored(&problem.rhs, rhs_k_major);
    let (bias, bias_strides) = upload(client, &problem.bias, precision);
    let out_len: usize = out_shape.iter().product();
    let out = client.create_from_slice(&precision.encode(&vec![f64::NAN; out_len]));
    let out_strides = fmar_tests::layout::contiguous_strides(&out_shape);
    let with_tail = |rows: usize, cols: usize| {
        let mut target = out_shape.clone();
        target[rank - 2] = rows;
        target[rank - 1] = cols;
        target
    };
    let (m, k, n) = (out_shape[rank - 2], problem.k(), out_shape[rank - 1]);
    let operands = kernel::Operands {
        lhs: broadcast_binding(&lhs, &problem.lhs.shape, &lhs_strides, &with_tail(m, k)),
        rhs: broadcast_binding(&rhs, &problem.rhs.shape, &rhs_strides, &with_tail(k, n)),
        bias: broadcast_binding(&bias, &problem.bias.shape, &bias_strides, &out_shape),
        out: binding(&out, &out_shape, &out_strides),
    };
    (operands, out)
}

/// Whether the Hopper kernels can run on `client`'s device.
pub fn hopper_device(client: &cubecl::client::Client) -> bool {
    kernel::hopper_unavailability(client).is_none()
}

/// Off Hopper, a Hopper kernel (or every one of them, for a launch that runs only those)
/// declines with a reason.
pub fn expect_hopper_unavailable(result: Result<(), kernel::LaunchError>) {
    match result {
        Err(kernel::LaunchError::Unavailable { variant, reason }) => {
            assert!(variant.hopper_path().is_some(), "{variant} declined");
            eprintln!("{variant} is unavailable here, as expected: {reason}");
        }
        other => panic!("the Hopper kernels must be unavailable off Hopper, got {other:?}"),
    }
}

/// Off Hopper, every Hopper path pinned on `operands` declines, naming itself.
pub fn expect_every_path_declines(
    client: &cubecl::client::Client,
    operands: &kernel::Operands,
    dtype: cubecl::ir::ElemType,
) {
    for path in kernel::HopperPath::ALL {
        let result = kernel::launch_variant(client, operands.clone(), dtype, path.into());
        match &result {
            Err(kernel::LaunchError::Unavailable { variant, .. }) => {
                assert_eq!(
                    *variant,
                    kernel::Variant::Hopper(path),
                    "the decline's variant"
                );
            }
            _ => panic!("{} must decline off Hopper, got {result:?}", path.name()),
        }
    }
}

/// A few-row f32 problem: the shapes of `lhs`, `rhs` and bias, and whether `lhs` is stored
/// M-major (`rhs` is N-major, as Burn's `Linear` weight).
pub type FewRowProblem = (&'static [usize], &'static [usize], &'static [usize], bool);

/// Runs each of `problems` through the crate's choice, which on Hopper runs one of its Hopper
/// paths whatever the strides, and checks it against the f64 reference within `tolerance`;
/// returns whether the device is a Hopper. Off Hopper the Hopper kernels must decline.
pub fn check_few_row_f32(problems: &[FewRowProblem], tolerance: Tolerance) -> bool {
    use contract::{client, download, elem_type};
    let client = client();
    let hopper_device = hopper_device(&client);
    let precision = Precision::F32;
    for &(lhs_shape, rhs_shape, bias_shape, lhs_m_major) in problems {
        let mut rng = Rng::fresh();
        let problem = Problem::random(lhs_shape, rhs_shape, bias_shape, &mut rng, precision);
        let (operands, out) = hopper_operands(&client, &problem, precision, lhs_m_major, false);
        if !hopper_device {
            expect_every_path_declines(&client, &operands, elem_type(precision));
            return false;
        }
        kernel::launch(&client, operands, elem_type(precision))
            .expect("the few-row kernels take any strides");
        let got = download(&client, out, precision);
        assert_close(
            &format!("few rows lhs {lhs_shape:?} (M-major: {lhs_m_major}) rhs {rhs_shape:?}"),
            &got,
            &problem.output.data,
            tolerance,
            problem.forward_scale(),
            rng.seed(),
        );
    }
    true
}
