//! One row: a candidate run on fresh inputs inside `catch_unwind`, its result checked against
//! the reference, and only then timed.

use crate::candidates::{Candidate, Pass};
use crate::reference::{Deviation, Gradients, Problem};
use crate::report::{Row, Status, format_tflops};
use burn::tensor::{DType, Device, Tensor};
use fmar::diagnostics::{force_variant, last_launched_variant};
use fmar_bench::timing::{Timing, first_call, median_time_in_batches};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// The testing switches: which candidate to break, and how.
pub struct Sabotage {
    pub fail: Option<Candidate>,
    pub corrupt: Option<Candidate>,
}

/// One process's settings.
pub struct Bench {
    pub device: Device,
    pub dtype: DType,
    pub tolerance: f64,
    pub peak_tflops: f64,
    pub budget: Duration,
    pub sabotage: Sabotage,
}

/// What a candidate produced before it was timed.
struct Checked {
    first_call: Duration,
    /// The worst of its compared tensors.
    deviation: Deviation,
    /// Whether fmar's kernel ran, and which variant last.
    kernel_ran: bool,
    ran: Option<String>,
}

impl Bench {
    /// One row: the candidate run on fresh inputs, checked, then timed, all inside
    /// `catch_unwind`.
    pub fn measure(&self, problem: &Problem, candidate: Candidate, pass: Pass) -> Row {
        force_variant(candidate.forced());
        let mut first: Option<Checked> = None;
        // `Ok(Ok(timing))`: checked and timed; `Ok(Err(why))`: unavailable; `Err(why)`: failed.
        let outcome = catch_unwind(AssertUnwindSafe(
            || -> Result<Result<Timing, String>, String> {
                let (lhs, rhs, bias) = problem.upload(&self.device, self.dtype);
                self.device
                    .sync()
                    .map_err(|error| format!("uploading the inputs: {error:?}"))?;
                let checked = match pass {
                    Pass::Forward => self.check_forward(problem, candidate, &lhs, &rhs, &bias)?,
                    Pass::ForwardBackward => {
                        self.check_backward(problem, candidate, &lhs, &rhs, &bias)?
                    }
                };
                let deviation = checked.deviation.clone();
                let unavailable = unavailable(candidate, &checked);
                first = Some(checked);
                if deviation.rel_error.is_nan() || deviation.rel_error > self.tolerance {
                    return Err(format!(
                        "wrong {}: rel. err {:.2e} > tolerance {:.0e}",
                        deviation.of, deviation.rel_error, self.tolerance
                    ));
                }
                if let Some(why) = unavailable {
                    return Ok(Err(why));
                }
                let time = match pass {
                    Pass::Forward => median_time_in_batches(&self.device, self.budget, || {
                        self.call(candidate, pass, lhs.clone(), rhs.clone(), bias.clone())
                            .unwrap_or_else(|error| panic!("{error}"))
                    }),
                    Pass::ForwardBackward => {
                        median_time_in_batches(&self.device, self.budget, || {
                            self.step(candidate, &lhs, &rhs, &bias)
                                .unwrap_or_else(|error| panic!("{error}"))
                        })
                    }
                };
                Ok(Ok(time))
            },
        ))
        .unwrap_or_else(|payload| Err(format!("panicked: {}", panic_message(&*payload))));
        force_variant(None);
        // Whatever the candidate left queued runs now, so that its fault surfaces here and not
        // in the next candidate.
        let _ = catch_unwind(AssertUnwindSafe(|| self.device.sync()));

        let mut row = Row {
            shape: problem.shape,
            pass,
            candidate: candidate.name(),
            status: Status::Ok,
            ms: None,
            tflops: None,
            speedup_vs_burn_fused: None,
            first_call_ms: first
                .as_ref()
                .map(|first| first.first_call.as_secs_f64() * 1e3),
            rel_error: first
                .as_ref()
                .map(|first| first.deviation.rel_error)
                .filter(|error| error.is_finite()),
            ran: first.as_ref().and_then(|first| first.ran.clone()),
            seed_ms: None,
            issue_us: None,
            calls_per_batch: None,
            message: None,
        };
        match outcome {
            Err(error) => {
                row.status = Status::Failed;
                row.message = Some(error);
            }
            Ok(Err(unavailable)) => {
                row.status = Status::Unavailable;
                row.message = Some(unavailable);
            }
            Ok(Ok(timing)) => {
                let time = timing.per_call;
                let ms = time.as_secs_f64() * 1e3;
                row.issue_us = Some(timing.issued_per_call.as_secs_f64() * 1e6);
                row.calls_per_batch = Some(timing.calls_per_batch);
                let tflops = Pass::flops(problem.shape, pass) / time.as_secs_f64() / 1e12;
                row.ms = Some(ms);
                row.tflops = Some(tflops);
                if candidate == Candidate::Fmar(None)
                    && first.as_ref().is_some_and(|f| f.kernel_ran)
                {
                    // After the timed calls: the variant autotune settled on.
                    row.ran = last_launched_variant().map(|variant| variant.to_string());
                }
                if candidate == Candidate::Fmar(None)
                    && first.as_ref().is_some_and(|f| !f.kernel_ran)
                {
                    row.message =
                        Some("no fmar kernel on this device: composed from its ops".into());
                }
                if tflops > self.peak_tflops {
                    row.status = Status::Suspect;
                    row.message = Some(format!(
                        "{} TFLOP/s is above the peak of {} TFLOP/s",
                        format_tflops(tflops),
                        self.peak_tflops
                    ));
                }
            }
        }
        row
    }

    /// The backward's seed alone: `x.backward()` from a tracked leaf `x` of the output's shape
    /// and dtype, which is Burn's autodiff filling a tensor of ones that size, timed as the
    /// forward and backward rows are. Every forward and backward figure includes this fill,
    /// while PyTorch's is seeded with a ready gradient (`out.backward(g)`), so the report
    /// carries it and the rendered tables take it out. `None` (with the reason on stderr) where
    /// it failed.
    pub fn seed_time(&self, problem: &Problem) -> Option<Timing> {
        let [b, m, _, n] = problem.shape;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let x = Tensor::<3>::zeros([b, m, n], (&self.device, self.dtype));
            median_time_in_batches(&self.device, self.budget, || {
                let leaf = x.clone().autodiff().require_grad();
                let grads = leaf.backward();
                leaf.grad(&grads).expect("the leaf's gradient")
            })
        }));
        let _ = catch_unwind(AssertUnwindSafe(|| self.device.sync()));
        outcome
            .map_err(|payload| eprintln!("timing the seed: {}", panic_message(&*payload)))
            .ok()
    }

    /// The candidate's forward, with the testing switches applied.
    fn call(
        &self,
        candidate: Candidate,
        pass: Pass,
        lhs: Tensor<3>,
        rhs: Tensor<3>,
        bias: Tensor<1>,
    ) -> Result<Tensor<3>, String> {
        if self.sabotage.fail == Some(candidate) {
            panic!("injected failure (--fail-candidate)");
        }
        let out = candidate.call(lhs, rhs, bias)?;
        if self.sabotage.corrupt != Some(candidate) {
            return Ok(out);
        }
        Ok(match pass {
            Pass::Forward => out + 1.0,
            // `2 out - out` is `out` exactly, but its gradient is twice `out`'s.
            Pass::ForwardBackward => out.clone() * 2.0 - out.detach(),
        })
    }

    /// One forward + backward from fresh leaves over the uploaded inputs, seeded with ones of the
    /// output's shape (`out.backward()`: the gradients of `out.sum()`, without the sum).
    fn step(
        &self,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Step, String> {
        let lhs = lhs.clone().autodiff().require_grad();
        let rhs = rhs.clone().autodiff().require_grad();
        let bias = bias.clone().autodiff().require_grad();
        let out = self.call(
            candidate,
            Pass::ForwardBackward,
            lhs.clone(),
            rhs.clone(),
            bias.clone(),
        )?;
        let grads = out.backward();
        let missing = |what: &str| format!("no gradient for {what}");
        Ok(Step {
            out: out.inner(),
            lhs: lhs.grad(&grads).ok_or_else(|| missing("lhs"))?,
            rhs: rhs.grad(&grads).ok_or_else(|| missing("rhs"))?,
            bias: bias.grad(&grads),
        })
    }

    fn check_forward(
        &self,
        problem: &Problem,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Checked, String> {
        let (out, first_call, kernel_ran) = first_call(&self.device, || {
            self.call(
                candidate,
                Pass::Forward,
                lhs.clone(),
                rhs.clone(),
                bias.clone(),
            )
        })?;
        let out = read_back("output", out)?;
        Ok(Checked {
            first_call,
            deviation: problem.check_output(&out, candidate.has_epilogue()),
            kernel_ran,
            ran: ran(candidate, kernel_ran),
        })
    }

    fn check_backward(
        &self,
        problem: &Problem,
        candidate: Candidate,
        lhs: &Tensor<3>,
        rhs: &Tensor<3>,
        bias: &Tensor<1>,
    ) -> Result<Checked, String> {
        let (step, first_call, kernel_ran) =
            first_call(&self.device, || self.step(candidate, lhs, rhs, bias))?;
        let out = read_back("output", step.out)?;
        let forward = problem.check_output(&out, candidate.has_epilogue());
        let grads = Gradients {
            lhs: read_back("grad lhs", step.lhs)?,
            rhs: read_back("grad rhs", step.rhs)?,
            bias: match (candidate.has_epilogue(), step.bias) {
                (true, Some(bias)) => Some(read_back("grad bias", bias)?),
                (true, None) => return Err("no gradient for bias".into()),
                (false, _) => None,
            },
        };
        let gradients = problem.check_gradients(&out, &grads, candidate);
        Ok(Checked {
            first_call,
            deviation: forward.worst(gradients),
            kernel_ran,
            ran: ran(candidate, kernel_ran),
        })
    }
}

/// What one forward + backward step keeps alive until the device is synchronised.
struct Step {
    out: Tensor<3>,
    lhs: Tensor<3>,
    rhs: Tensor<3>,
    bias: Option<Tensor<1>>,
}

/// The variant that ran, for fmar candidates whose kernel ran.
fn ran(candidate: Candidate, kernel_ran: bool) -> Option<String> {
    let fmar = matches!(candidate, Candidate::Fmar(_));
    (fmar && kernel_ran)
        .then(last_launched_variant)
        .flatten()
        .map(|variant| variant.to_string())
}

/// Why a forced variant's row is not its own, if it is not: fmar fell back to its own choice,
/// or (on the CPU) to a composition without a kernel.
fn unavailable(candidate: Candidate, checked: &Checked) -> Option<String> {
    let forced = candidate.forced()?.to_string();
    match &checked.ran {
        _ if !checked.kernel_ran => Some("fmar's kernel does not run on this device".into()),
        Some(ran) if *ran != forced => Some(format!("unavailable here; {ran} ran instead")),
        _ => None,
    }
}

fn read_back<const D: usize>(what: &str, tensor: Tensor<D>) -> Result<Vec<f32>, String> {
    tensor
        .try_into_data()
        .map_err(|error| format!("reading back {what}: {error:?}"))?
        .try_into_vec_as::<f32>()
        .map_err(|error| format!("converting {what} to f32: {error:?}"))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|message| message.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
