//! Random inputs and the storage precisions they are rounded to.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The storage precision of a test's tensors. Inputs are rounded to it before the f64 reference
/// sees them, so the reference computes on exactly the values the device holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
}

impl Precision {
    /// All three, in the order tests report them.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F16, Precision::BF16];

    /// `x` rounded to this precision (round to nearest, ties to even), back in f64.
    pub fn round(self, x: f64) -> f64 {
        match self {
            Precision::F32 => x as f32 as f64,
            Precision::F16 => half::f16::from_f64(x).to_f64(),
            Precision::BF16 => half::bf16::from_f64(x).to_f64(),
        }
    }

    /// The unit roundoff: half the distance from 1 to the next representable number.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Precision::F32 => f64::powi(2.0, -24),
            Precision::F16 => f64::powi(2.0, -11),
            Precision::BF16 => f64::powi(2.0, -8),
        }
    }

    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F16 | Precision::BF16 => 2,
        }
    }

    /// `values` rounded to this precision, as the little-endian bytes a device buffer holds.
    pub fn encode(self, values: &[f64]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|&x| match self {
                Precision::F32 => (x as f32).to_le_bytes().to_vec(),
                Precision::F16 => half::f16::from_f64(x).to_le_bytes().to_vec(),
                Precision::BF16 => half::bf16::from_f64(x).to_le_bytes().to_vec(),
            })
            .collect()
    }

    /// The values that little-endian `bytes` of this precision hold, widened to f64: the
    /// inverse of [`encode`](Self::encode). Panics on a trailing partial element.
    pub fn decode(self, bytes: &[u8]) -> Vec<f64> {
        assert_eq!(
            bytes.len() % self.size(),
            0,
            "{} bytes are no whole number of {self:?} elements",
            bytes.len()
        );
        bytes
            .chunks_exact(self.size())
            .map(|c| match self {
                Precision::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
                Precision::F16 => half::f16::from_le_bytes(c.try_into().unwrap()).to_f64(),
                Precision::BF16 => half::bf16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            })
            .collect()
    }
}

/// A small, fast generator (SplitMix64). Tests draw fresh data on every run: the seed comes
/// from the clock unless `FMAR_TEST_SEED` is set, and every failure message prints it.
#[derive(Debug, Clone)]
pub struct Rng {
    seed: u64,
    state: u64,
}

impl Rng {
    /// A generator with a fresh seed, or the one in `FMAR_TEST_SEED`.
    pub fn fresh() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let seed = match std::env::var("FMAR_TEST_SEED") {
            Ok(seed) => seed.parse().expect("FMAR_TEST_SEED must be a u64"),
            Err(_) => {
                let nanos = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                nanos
                    ^ COUNTER
                        .fetch_add(1, Ordering::Relaxed)
                        .wrapping_mul(0x9E37_79B9)
            }
        };
        Self::seeded(seed)
    }

    /// A generator with a fixed seed.
    pub fn seeded(seed: u64) -> Self {
        Self { seed, state: seed }
    }

    /// The seed this generator started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high)`.
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        low + (high - low) * unit
    }

    /// `len` values uniform in `[low, high)`, rounded to `precision`.
    pub fn values(&mut self, len: usize, low: f64, high: f64, precision: Precision) -> Vec<f64> {
        (0..len)
            .map(|_| precision.round(self.uniform(low, high)))
            .collect()
    }
}

/// Whether a test should run `precision` on a device that does (`supported`) or does not
/// support it. An unsupported precision is skipped with a note, unless `FMAR_REQUIRE_DTYPES`
/// (a comma-separated list such as `f32,f16`) names it: CI sets it, so that a driver that
/// silently lost f16 support fails the run instead of skipping the f16 tests.
pub fn should_run(precision: Precision, supported: bool) -> bool {
    if supported {
        return true;
    }
    let name = format!("{precision:?}").to_lowercase();
    let required = std::env::var("FMAR_REQUIRE_DTYPES").unwrap_or_default();
    if required.split(',').any(|dtype| dtype.trim() == name) {
        panic!("{name} is required by FMAR_REQUIRE_DTYPES but the device does not support it");
    }
    eprintln!("skipping {name}: the device does not support it");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_gives_the_rounded_values_back() {
        let mut rng = Rng::fresh();
        for precision in Precision::ALL {
            let values = rng.values(17, -3.0, 3.0, precision);
            let mut with_specials = values.clone();
            with_specials.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY]);
            let bytes = precision.encode(&with_specials);
            assert_eq!(bytes.len(), with_specials.len() * precision.size());
            let back = precision.decode(&bytes);
            assert_eq!(
                back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                with_specials
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                "{precision:?}, seed {}",
                rng.seed()
            );
            assert!(precision.decode(&precision.encode(&[f64::NAN]))[0].is_nan());
        }
    }

    #[test]
    fn encode_rounds_to_the_precision() {
        // 1 + 2^-12 is between two f16 values and two bf16 values; f32 holds it exactly.
        let x = 1.0 + f64::powi(2.0, -12);
        assert_eq!(Precision::F32.decode(&Precision::F32.encode(&[x])), [x]);
        assert_eq!(Precision::F16.decode(&Precision::F16.encode(&[x])), [1.0]);
        assert_eq!(Precision::BF16.decode(&Precision::BF16.encode(&[x])), [1.0]);
    }
}
