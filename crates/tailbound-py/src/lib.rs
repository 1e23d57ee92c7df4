//! `tailbound._core`: the thin PyO3 binding of `tailbound-core`.
//!
//! Each submodule converts numpy arrays and errors for one area of the core and registers its
//! functions here; no algorithm lives in this crate.

use pyo3::prelude::*;

mod aequitas;
mod decompose;
mod error;
mod mmpp;
mod netsim;
mod parse;
mod rb;
mod sched;
mod sim;
mod snc;
mod wc;
mod wc_screen;

/// The compiled core of tailbound.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::register(m)?;
    rb::register(m)?;
    decompose::register(m)?;
    parse::register(m)?;
    sched::register(m)?;
    sim::register(m)?;
    snc::register(m)?;
    mmpp::register(m)?;
    aequitas::register(m)?;
    netsim::register(m)?;
    wc::register(m)?;
    wc_screen::register(m)?;
    Ok(())
}
