//! What fmar's two benchmark programs (`fmar-bench`, fmar against Burn on any device, and
//! `flex_choice`, the CPU fallback's design choice) share: deterministic host data and the
//! clock.

pub mod data;
pub mod timing;
