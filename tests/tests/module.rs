//! `FusedLinearRelu` is a drop-in for Burn's `Linear` + `relu`: same forward and gradients at
//! ranks 2 to 4, with and without a bias, in either weight layout, and the same record in both
//! directions.

mod common;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, LinearLayout};
use burn::tensor::{Device, Distribution, Tensor, activation};
use common::values;
use fmar::{FusedLinearRelu, FusedLinearReluConfig};
use fmar_tests::{Rng, Tolerance, assert_close};

/// Forward and the gradients of weight, bias and input, for `relu(linear(x))` and the module,
/// the weight stored in `layout`.
fn compare<const D: usize>(input_shape: [usize; D], bias: bool, layout: LinearLayout) {
    let device = Device::default().autodiff();
    // The seed (fresh, or `FMAR_TEST_SEED`) drives Burn's generator, which draws the weights
    // and the input below: a failure's seed reproduces its data when its test runs alone.
    let seed = Rng::fresh().seed();
    device.seed(seed);
    let (d_in, d_out) = (input_shape[D - 1], 7);
    let linear = LinearConfig::new(d_in, d_out)
        .with_bias(bias)
        .with_layout(layout)
        .init(&device);
    let fused = FusedLinearRelu::from(linear.clone());
    let x = Tensor::<D>::random(input_shape, Distribution::Uniform(-1.0, 1.0), &device);

    let run =
        |forward: &dyn Fn(Tensor<D>) -> Tensor<D>, weight: &Tensor<2>, b: Option<&Tensor<1>>| {
            let x = x.clone().detach().require_grad();
            let out = forward(x.clone());
            let grads = out.clone().sum().backward();
            let grad = |t: &Tensor<2>| values(t.grad(&grads).unwrap());
            (
                values(out),
                grad(weight),
                b.map(|b| values(b.grad(&grads).unwrap())),
                values(x.grad(&grads).unwrap()),
            )
        };
    let reference = run(
        &|x| activation::relu(linear.forward(x)),
        &linear.weight.val(),
        linear.bias.as_ref().map(|b| b.val()).as_ref(),
    );
    let ours = run(
        &|x| fused.forward(x),
        &fused.weight.val(),
        fused.bias.as_ref().map(|b| b.val()).as_ref(),
    );
    let tolerance = Tolerance::for_precision(fmar_tests::Precision::F32);
    let rows: usize = input_shape[..D - 1].iter().product();
    let scale = Tolerance::matmul_scale(d_in.max(rows), 1.0, 1.0) + 1.0;
    let what = |part: &str| {
        format!("FusedLinearRelu {part}, input {input_shape:?}, bias {bias}, layout {layout:?}")
    };
    assert_close(
        &what("forward"),
        &ours.0,
        &reference.0,
        tolerance,
        scale,
        seed,
    );
    assert_close(
        &what("grad weight"),
        &ours.1,
        &reference.1,
        tolerance,
        scale,
        seed,
    );
    if bias {
        assert_close(
            &what("grad bias"),
            ours.2.as_ref().unwrap(),
            reference.2.as_ref().unwrap(),
            tolerance,
            scale,
            seed,
        );
    }
    assert_close(
        &what("grad input"),
        &ours.3,
        &reference.3,
        tolerance,
        scale,
        seed,
    );
}

#[test]
fn forward_and_gradients_equal_relu_of_linear() {
    compare([13, 9], true, LinearLayout::Row);
    compare([3, 5, 9], true, LinearLayout::Row);
    compare([2, 3, 4, 9], true, LinearLayout::Row);
    compare([6, 9], false, LinearLayout::Row);
    // Stored `[d_output, d_input]` and read transposed: the K-major weight fmar's Hopper kernel
    // reads without a copy in TF32.
    compare([13, 9], true, LinearLayout::Col);
    compare([3, 5, 9], false, LinearLayout::Col);
}

#[test]
fn a_column_layout_stores_the_weight_output_major() {
    let device = Device::default();
    let layer = FusedLinearReluConfig::new(13, 7)
        .with_bias(false)
        .with_layout(LinearLayout::Col)
        .init(&device);
    // The module computes with `[d_input, d_output]`, as `Linear` does with this layout...
    assert_eq!(layer.weight.val().dims(), [13, 7]);
    // ...and its record holds `[d_output, d_input]`, as `Linear`'s does: a row-layout `Linear`
    // of 7 inputs and 13 outputs loads it as it is.
    let stored: Linear = LinearConfig::new(7, 13)
        .with_bias(false)
        .init(&device)
        .load_record(layer.clone().into_record());
    assert_same_parameters(&stored.weight.val(), &layer.weight.val().transpose());
    let linear: Linear = LinearConfig::new(13, 7)
        .with_bias(false)
        .with_layout(LinearLayout::Col)
        .init(&device)
        .load_record(layer.clone().into_record());
    assert_same_parameters(&linear.weight.val(), &layer.weight.val());
}

fn assert_same_parameters(a: &Tensor<2>, b: &Tensor<2>) {
    assert_eq!(a.dims(), b.dims());
    assert_eq!(values(a.clone()), values(b.clone()));
}

#[test]
fn a_linear_record_loads_into_the_fused_module_and_back() {
    let device = Device::default();
    let linear = LinearConfig::new(13, 7).init(&device);

    // In memory.
    let fused = FusedLinearReluConfig::new(13, 7)
        .init(&device)
        .load_record(linear.clone().into_record());
    assert_same_parameters(&fused.weight.val(), &linear.weight.val());
    assert_eq!(
        values(fused.bias.as_ref().unwrap().val()),
        values(linear.bias.as_ref().unwrap().val())
    );
    let back: Linear = LinearConfig::new(13, 7)
        .init(&device)
        .load_record(fused.clone().into_record());
    assert_same_parameters(&back.weight.val(), &linear.weight.val());

    // Through a file, as a saved checkpoint would be.
    let dir = std::env::temp_dir().join(format!("fmar-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("linear.bpk");
    linear
        .clone()
        .save_file(&path)
        .expect("save the Linear record");
    let from_file = FusedLinearReluConfig::new(13, 7)
        .init(&device)
        .load_file(&path);
    assert_same_parameters(&from_file.weight.val(), &linear.weight.val());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn config_matches_linear_config_and_converts() {
    let linear = LinearConfig::new(4, 5).with_bias(false);
    let fused = FusedLinearReluConfig::from(linear.clone());
    assert_eq!((fused.d_input, fused.d_output, fused.bias), (4, 5, false));
    let back = fused.to_linear();
    assert_eq!((back.d_input, back.d_output, back.bias), (4, 5, false));
    let layer = fused.init(&Device::default());
    assert!(layer.bias.is_none());
    assert_eq!(layer.weight.val().dims(), [4, 5]);
}
