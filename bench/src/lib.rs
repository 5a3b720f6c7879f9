//! What fmar's benchmark programs (`fmar-bench`, fmar against Burn on any device;
//! `flex_choice`, the CPU fallback's design choice; `launch_path`, the cost of Burn's layers per
//! call) share: deterministic host data and the clock.

pub mod data;
pub mod timing;
