//! A trace-driven discrete-event simulator of shared storage and network (thesis ch. 2,
//! Fig. 1.1, Fig. 4.1): hosts' links, a non-blocking switch, storage devices, and the schedulers
//! the documents enforce, replaying workloads open or closed loop, deterministically.
//!
//! - `kernel`: the event heap ordered by (time, urgency, sequence number);
//! - the schedulers and the device dispatcher live in `crate::sched` (shared with a gateway);
//! - `link`, `device`: the two kinds of queue; `disk`: the disk rule for sequential writes;
//!   `array`: a disk array's service model, whose throughput and tail depend on depth;
//! - `topology`, `workload`: what is simulated; `config`: their JSON form;
//! - `control`: a device's completion-driven controller (PSLO);
//! - `engine`: the simulation itself with `run(until)` and the control hook;
//! - `results`: per-request records.

pub mod array;
pub mod config;
pub mod control;
pub mod device;
pub mod disk;
pub mod engine;
pub mod kernel;
pub mod link;
pub mod results;
pub mod topology;
pub mod workload;

pub use config::SimConfig;
pub use engine::{Queue, Simulation};
pub use results::Records;

#[cfg(test)]
mod tests;
