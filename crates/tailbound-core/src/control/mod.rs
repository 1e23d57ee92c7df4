//! Controllers that adjust a running system from what it completes, pure (no I/O, time
//! injected), so the simulator and the storage gateway run the same code in-process.
//!
//! - [`pslo`]: PSLO (Li, Jiang, Feng, Shi, EuroSys 2016), percentile-latency and throughput SLOs
//!   together by per-tenant rate and IO-depth control; it acts on the dispatcher's per-tenant
//!   limits (`crate::sched::dispatch::Dispatcher::set_tenant_limits`). `docs/pslo.md`.

pub mod pslo;
