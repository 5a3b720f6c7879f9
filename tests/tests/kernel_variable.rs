//! `FMAR_KERNEL` naming no variant is a typed error at the call, before anything runs, with the
//! names that exist; the panicking form panics with the same message; `force_variant` overrides
//! the variable. Its own test binary, with one test: the variable is read once per process.

use burn::tensor::{Device, Tensor};
use fmar::diagnostics::{KERNEL_VARIABLE, force_variant, kernel_launches};

#[test]
fn an_unknown_kernel_name_is_a_typed_error_at_the_call() {
    // The one variant of an earlier fmar, which names none now.
    #[allow(unsafe_code)]
    // SAFETY: this binary's one test sets the variable before anything in the process reads
    // the environment, on its only thread.
    unsafe {
        std::env::set_var(KERNEL_VARIABLE, "hopper");
    }
    let device = Device::default();
    let inputs = || {
        (
            Tensor::<2>::ones([3, 4], &device),
            Tensor::<2>::ones([4, 5], &device),
            Tensor::<1>::zeros([5], &device),
        )
    };
    let launches = kernel_launches();
    let (lhs, rhs, bias) = inputs();
    let error = match fmar::try_matmul_add_relu_nd(lhs, rhs, bias) {
        Err(error) => error,
        Ok(_) => panic!("an unknown FMAR_KERNEL must be refused at the call"),
    };
    let fmar::Error::UnknownKernel {
        variable,
        value,
        valid,
    } = &error
    else {
        panic!("an unknown FMAR_KERNEL must be its own error, got {error:?}");
    };
    assert_eq!((*variable, value.as_str()), (KERNEL_VARIABLE, "hopper"));
    for name in ["tiled", "hopper-tiles", "hopper-few-rows-cluster"] {
        assert!(
            valid.iter().any(|v| v == name),
            "{name} missing from {valid:?}"
        );
    }
    let message = error.to_string();
    assert!(
        message.contains("FMAR_KERNEL=\"hopper\"") && message.contains("hopper-swapped-tiles"),
        "{message}"
    );
    assert_eq!(kernel_launches(), launches, "a refused call launched");

    // The panicking form: the same message, at the call.
    let (lhs, rhs, bias) = inputs();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fmar::matmul_add_relu_nd(lhs, rhs, bias)
    }))
    .expect_err("matmul_add_relu_nd must panic on an unknown FMAR_KERNEL");
    let panic_message = panicked
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert_eq!(panic_message, message);

    // A variant pinned in the program wins over the variable, and the call runs.
    force_variant(None);
    let (lhs, rhs, bias) = inputs();
    let out = fmar::try_matmul_add_relu_nd(lhs, rhs, bias).expect("runs once pinned in code");
    let values: Vec<f32> = out.into_data().try_to_vec().expect("f32");
    assert_eq!(values, vec![4.0; 15]);
}
