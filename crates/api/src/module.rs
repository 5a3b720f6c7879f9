//! [`FusedLinearRelu`]: `relu(linear(x))` as one fused operation, a drop-in for Burn's
//! `Linear` followed by `Relu`, with the same config and the same record.

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::{Initializer, Linear, LinearConfig, LinearLayout};
use burn::tensor::{Device, Tensor};

/// Configuration of a [`FusedLinearRelu`]: the fields of Burn's `LinearConfig`, with the same
/// defaults, so a `LinearConfig` converts into one ([`From`]) and back.
#[derive(Config, Debug)]
pub struct FusedLinearReluConfig {
    /// The size of the input features.
    pub d_input: usize,
    /// The size of the output features.
    pub d_output: usize,
    /// Whether a bias is added before the ReLU.
    #[config(default = true)]
    pub bias: bool,
    /// How the parameters are initialized (Burn's `Linear` default).
    #[config(
        default = "Initializer::KaimingUniform{gain: 1.0 / 3.0f64.sqrt(), fan_out_only: false}"
    )]
    pub initializer: Initializer,
    /// The layout the weight is stored in (Burn's `LinearLayout`). In f32 on a Hopper GPU,
    /// `LinearLayout::Col` (the weight stored `[d_output, d_input]`) is what the tensor-core
    /// kernel reads as it is; a `Row` weight is read as it is up to 128 rows of input, and
    /// copied to the other layout in each call above that.
    #[config(default = "LinearLayout::Row")]
    pub layout: LinearLayout,
}

impl FusedLinearReluConfig {
    /// The equivalent Burn `LinearConfig`.
    pub fn to_linear(&self) -> LinearConfig {
        LinearConfig::new(self.d_input, self.d_output)
            .with_bias(self.bias)
            .with_initializer(self.initializer.clone())
            .with_layout(self.layout)
    }

    /// A new [`FusedLinearRelu`], initialized as Burn's `Linear` would be.
    pub fn init(&self, device: &Device) -> FusedLinearRelu {
        self.to_linear().init(device).into()
    }
}

impl From<LinearConfig> for FusedLinearReluConfig {
    fn from(config: LinearConfig) -> Self {
        Self::new(config.d_input, config.d_output)
            .with_bias(config.bias)
            .with_initializer(config.initializer)
            .with_layout(config.layout)
    }
}

/// `relu(x @ weight + bias)` in one fused kernel: Burn's `Linear` then `Relu`, in one module.
///
/// Its fields are `Linear`'s (`weight` `[d_input, d_output]`, optional `bias` `[d_output]`), so a
/// record saved from a `Linear` loads into a `FusedLinearRelu` and back, and [`From`] converts
/// between the two modules.
///
/// ```
/// use burn::tensor::{Distribution, Tensor};
/// use fmar::{FusedLinearRelu, FusedLinearReluConfig};
///
/// let device = fmar::default_device().device;
/// let layer: FusedLinearRelu = FusedLinearReluConfig::new(32, 16).init(&device);
/// let x = Tensor::<3>::random([8, 10, 32], Distribution::Default, &device);
/// let y = layer.forward(x); // relu(linear(x)), one kernel
/// assert_eq!(y.dims(), [8, 10, 16]);
/// ```
#[derive(Module, Debug)]
pub struct FusedLinearRelu {
    /// `[d_input, d_output]`, as in Burn's `Linear`.
    pub weight: Param<Tensor<2>>,
    /// `[d_output]`, as in Burn's `Linear`.
    pub bias: Option<Param<Tensor<1>>>,
}

impl FusedLinearRelu {
    /// `relu(input @ weight + bias)` for an input `[..., d_input]` of any rank `D >= 2`; the
    /// output is `[..., d_output]`. Differentiable.
    ///
    /// # Panics
    ///
    /// When the input's last dim is not `d_input`, or its dtype or device differs from the
    /// parameters', with [`Error`](crate::Error)'s message.
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        let weight = self.weight.val().unsqueeze::<D>();
        match &self.bias {
            Some(bias) => crate::matmul_add_relu_nd(input, weight, bias.val()),
            None => {
                // fmar always adds a bias; a one-element zero broadcasts for free.
                let zero = Tensor::<1>::zeros([1], (&input.device(), input.dtype()));
                crate::matmul_add_relu_nd(input, weight, zero)
            }
        }
    }
}

impl From<Linear> for FusedLinearRelu {
    fn from(linear: Linear) -> Self {
        Self {
            weight: linear.weight,
            bias: linear.bias,
        }
    }
}

impl From<FusedLinearRelu> for Linear {
    fn from(layer: FusedLinearRelu) -> Self {
        Linear {
            weight: layer.weight,
            bias: layer.bias,
        }
    }
}

/// Configuration of a [`FusedMlp`]: `hidden_layers` fused `Linear` + ReLU layers of width
/// `d_hidden`, then a plain `Linear` head to `d_output`, every layer initialized as Burn's
/// `Linear` would be.
#[derive(Config, Debug)]
pub struct FusedMlpConfig {
    /// The size of the input features.
    pub d_input: usize,
    /// The size of every hidden layer's output.
    pub d_hidden: usize,
    /// The size of the head's output.
    pub d_output: usize,
    /// How many fused hidden layers (at least one).
    #[config(default = 2)]
    pub hidden_layers: usize,
}

impl FusedMlpConfig {
    /// A new [`FusedMlp`].
    ///
    /// # Panics
    ///
    /// When `hidden_layers` is 0.
    pub fn init(&self, device: &Device) -> FusedMlp {
        assert!(
            self.hidden_layers > 0,
            "FusedMlpConfig: `hidden_layers` must be at least 1, got 0"
        );
        FusedMlp {
            hidden: (0..self.hidden_layers)
                .map(|layer| {
                    let d_input = if layer == 0 {
                        self.d_input
                    } else {
                        self.d_hidden
                    };
                    FusedLinearReluConfig::new(d_input, self.d_hidden).init(device)
                })
                .collect(),
            head: LinearConfig::new(self.d_hidden, self.d_output).init(device),
        }
    }
}

/// A multilayer perceptron of [`FusedLinearRelu`] layers and a plain `Linear` head: the shape
/// of model fmar speeds up, ready to train.
///
/// ```
/// use burn::tensor::{Distribution, Tensor};
/// use fmar::{FusedMlp, FusedMlpConfig};
///
/// let device = fmar::default_device().device;
/// let mlp: FusedMlp = FusedMlpConfig::new(32, 64, 10).init(&device);
/// let x = Tensor::<2>::random([8, 32], Distribution::Default, &device);
/// assert_eq!(mlp.forward(x).dims(), [8, 10]);
/// ```
#[derive(Module, Debug)]
pub struct FusedMlp {
    /// The fused hidden layers, first to last.
    pub hidden: Vec<FusedLinearRelu>,
    /// The plain linear output layer.
    pub head: Linear,
}

impl FusedMlp {
    /// The head's output for an input `[..., d_input]` of any rank `D >= 2`. Differentiable.
    ///
    /// # Panics
    ///
    /// As [`FusedLinearRelu::forward`] does.
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        let hidden = self
            .hidden
            .iter()
            .fold(input, |activation, layer| layer.forward(activation));
        self.head.forward(hidden)
    }
}
