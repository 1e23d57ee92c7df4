//! Controllers that adjust a running system from what it completes, pure (no I/O, time
//! injected), so the simulator and the storage gateway run the same code in-process.
//!
//! - [`pslo`]: PSLO (Li, Jiang, Feng, Shi, EuroSys 2016), percentile-latency and throughput SLOs
//!   together by per-tenant rate and IO-depth control; it acts on the dispatcher's per-tenant
//!   limits (`crate::sched::dispatch::Dispatcher::set_tenant_limits`). `docs/pslo.md`.
//! - [`aequitas`]: Aequitas (Zhang et al., SIGCOMM 2022), RPC latency SLOs over WFQ classes by
//!   per-channel AIMD admit probabilities that downgrade RPCs to the lowest class; it decides an
//!   RPC's class at issue (`crate::sched::Item::class`) and the RNL metric. `docs/aequitas.md`.

pub mod aequitas;
pub mod pslo;
