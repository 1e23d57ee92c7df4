//! tailbound-core: the algorithms of tailbound in plain Rust, with no Python types.
//!
//! Units everywhere: time in seconds (`f64`), sizes in bytes, tokens in seconds of exclusive
//! service at a stage ("work"), rates as utilisations of a stage (work-seconds per second).
//! The Python package reaches these functions through the thin `tailbound-py` binding.

pub mod control;
pub mod decompose;
pub mod error;
pub mod mmpp;
pub mod netsim;
pub mod parse;
pub mod rb;
pub mod sched;
pub mod sim;
pub mod snc;
pub mod snc_fast;
pub mod snc_tree;
pub mod wc;
pub mod wc_screen;

pub use error::{Error, Result};
