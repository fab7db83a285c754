//! Small helpers every layer may use, depending on nothing else in the crate.
mod rng;

pub use rng::{seed, Rng};
