//! A packet-level simulator of RPCs over a datacenter network with WFQ classes, the network
//! Aequitas runs on (Zhang, Kumar, Dukkipati, et al., SIGCOMM 2022, §6; its facts matched to
//! the authors' YAPS-based simulator, SymbioticLab/Aequitas branch `artifact-eval`, whose code
//! is not used here; `docs/aequitas.md`, "The network simulator").
//!
//! - `config`: the network, the congestion window and the admission control (JSON, defaults
//!   of the authors' runs: 100 Gb/s, 0.2 µs a link, MTU 5120 B with a 40 B header);
//! - `port`: an output port, virtual-clock WFQ over classes in front of a shared drop-tail
//!   buffer, and the `Port` of any kind (`config::Scheduling`);
//! - `priority_port`: the baselines' ports, strict priority (drop-tail or push-out of the
//!   lowest class) and pFabric's SRPT by remaining RPC size;
//! - `window`: a channel's Swift-like delay-based congestion window;
//! - `channel`: a `(src, dst, class)` channel: the RPC FIFO stream, go-back-N, the timer;
//! - `engine`: the events, the one-big-switch paths, admission control in-process at issue and
//!   at the last ACK (`control::aequitas::ClassState`);
//! - `rpcs`: the RPC columns in, the outcomes and counters out.
//!
//! The storage and flow simulator (`crate::sim`) is separate; only its event kernel
//! (`sim::kernel`) is shared. Deterministic: the same configuration (seed included) and RPCs
//! give the same run.

pub mod channel;
pub mod config;
pub mod engine;
pub mod port;
pub mod priority_port;
pub mod rpcs;
pub mod window;

pub use config::{
    AdmissionTable, CcConfig, NetConfig, QjumpLevels, Scheduling, PFABRIC_ARTIFACT_THRESHOLDS,
};
pub use engine::{simulate, NetworkSim};
pub use rpcs::{Counters, RpcInput, RpcOutcome};

#[cfg(test)]
mod tests;
