//! r-b curves (thesis §2.3.1): rbGen on a list of rates, the exact curve, pruning.
//!
//! Units: times and durations in seconds, tokens and buckets in seconds of work at the stage,
//! rates as utilisations of the stage.

pub mod exact;
pub mod hull;
pub mod prune;
pub mod rbgen;
#[cfg(test)]
mod testing;

pub use exact::{exact_rb_curve, exact_rb_curve_with, ExactCurve, Method, Tangent};
pub use prune::prune;
pub use rbgen::{rbgen, rbgen_argmax, CHUNK};
