//! What is measured: the candidates that compute `relu(lhs @ rhs + bias)`, and the two passes.

use burn::tensor::Tensor;
use fmar::kernel::Variant;

/// The naive kernel is skipped above this `m n k`.
const NAIVE_MAX_MNK: usize = 1 << 30;

/// What runs `relu(lhs @ rhs + bias)` (or, for `BurnMatmul`, `lhs @ rhs`).
#[derive(Clone, Copy, PartialEq)]
pub enum Candidate {
    /// fmar, with this variant forced; `None`: fmar's own choice.
    Fmar(Option<Variant>),
    /// Burn's `lhs.matmul(rhs)` alone.
    BurnMatmul,
    /// Burn's composition, fused by Fusion.
    BurnFused,
}

impl Candidate {
    /// The order of a shape's rows: fmar first, Burn's fused path last (its fault on the largest
    /// shape poisons the device for whatever follows).
    pub fn all(variants: bool) -> Vec<Candidate> {
        let mut all = vec![Candidate::Fmar(None)];
        if variants {
            all.extend(
                Variant::ALL
                    .iter()
                    .map(|&variant| Candidate::Fmar(Some(variant))),
            );
        }
        all.extend([Candidate::BurnMatmul, Candidate::BurnFused]);
        all
    }

    /// The candidate that `text`, given to `--option`, names; exits the process with status 2
    /// and the list of names when it names none.
    pub fn named(option: &str, text: &str) -> Candidate {
        let every_candidate = Candidate::all(true);
        every_candidate
            .iter()
            .copied()
            .find(|candidate| candidate.is_named(text))
            .unwrap_or_else(|| {
                let names: Vec<String> = every_candidate.iter().map(|c| c.name()).collect();
                eprintln!("--{option} {text:?} names no candidate; one of {names:?}");
                std::process::exit(2)
            })
    }

    pub fn name(self) -> String {
        match self {
            Candidate::Fmar(None) => "fmar".into(),
            Candidate::Fmar(Some(variant)) => format!("fmar {variant}"),
            Candidate::BurnMatmul => "burn matmul".into(),
            Candidate::BurnFused => "burn fused".into(),
        }
    }

    /// Whether `text` names this candidate on the command line: its name, with `-` for spaces
    /// allowed, or a bare variant name.
    fn is_named(self, text: &str) -> bool {
        let text = text.trim().replace('-', " ");
        text == self.name()
            || matches!(self, Candidate::Fmar(Some(variant)) if variant.to_string() == text)
    }

    /// Whether the output carries the bias and the ReLU.
    pub fn has_epilogue(self) -> bool {
        self != Candidate::BurnMatmul
    }

    pub fn forced(self) -> Option<Variant> {
        match self {
            Candidate::Fmar(forced) => forced,
            _ => None,
        }
    }

    /// Whether this is the naive kernel forced on a problem with `m n k` above
    /// [`NAIVE_MAX_MNK`], where it would take most of the run's time.
    pub fn is_naive_too_slow(self, [_, m, k, n]: [usize; 4]) -> bool {
        self.forced()
            .is_some_and(|variant| variant.to_string() == "naive")
            && m * k * n > NAIVE_MAX_MNK
    }

    pub fn call(
        self,
        lhs: Tensor<3>,
        rhs: Tensor<3>,
        bias: Tensor<1>,
    ) -> Result<Tensor<3>, String> {
        match self {
            Candidate::Fmar(_) => {
                fmar::try_matmul_add_relu_nd(lhs, rhs, bias).map_err(|error| error.to_string())
            }
            Candidate::BurnMatmul => Ok(lhs.matmul(rhs)),
            Candidate::BurnFused => Ok(fmar::matmul_add_relu_reference_nd(lhs, rhs, bias)),
        }
    }
}

/// The forward alone, or the forward and the backward seeded with ones (the gradients of
/// `out.sum()`).
#[derive(Clone, Copy, PartialEq, serde::Serialize)]
pub enum Pass {
    #[serde(rename = "forward")]
    Forward,
    #[serde(rename = "forward+backward")]
    ForwardBackward,
}

impl Pass {
    pub fn name(self) -> &'static str {
        match self {
            Pass::Forward => "forward",
            Pass::ForwardBackward => "forward+backward",
        }
    }

    /// `2 b m k n` for the forward, three times that for the forward + backward.
    pub fn flops([b, m, k, n]: [usize; 4], pass: Pass) -> f64 {
        let forward = 2.0 * (b * m * k * n) as f64;
        match pass {
            Pass::Forward => forward,
            Pass::ForwardBackward => 3.0 * forward,
        }
    }
}
