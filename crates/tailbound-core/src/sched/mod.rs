//! Schedulers and the device dispatcher: pluggable queues with injected time (STYLE.md lesson 8,
//! dmclock's interface), shared by the simulator (`crate::sim`) and a storage gateway.
//!
//! - [`SchedulerConfig`] (`config.rs`): each kind's configuration, defined once (serde, tagged by
//!   `kind`), which builds the scheduler; it also reads a scenario's queue table keyed by
//!   workload name;
//! - `fifo`, `priority` (with `bucket`'s token buckets), `dwrr`, `sfq`, `edf`, `wfq`, `nested`
//!   (Nested QoS: its own classifier, `docs/nested-qos.md`), `pclock`,
//!   `wf2q` (WF2Q+): the disciplines;
//! - [`dispatch`]: a device's dispatcher (MPLs, outstanding bytes, the low-priority rule, a disk's
//!   batches of sequential writes) in front of a scheduler, apart from the device's service.
//!
//! Every queue (a link's output port or a device's dispatcher) owns one `Box<dyn Scheduler>`.
//! The queue calls [`Scheduler::enqueue`] with an [`Item`] when one arrives and
//! [`Scheduler::dequeue`] whenever it can serve; the answer is `Ready(item)`, `Future(t)`
//! (nothing is eligible before virtual time `t`, e.g. a shaper waits for tokens) or `Empty`. Time
//! is always passed in (the `now` of both calls), so the same code runs under the simulator's
//! virtual clock and a gateway's real clock.
//!
//! **An item** carries its workload (the index of the scheduler's per-workload settings) and two
//! per-request tags a policy may set: a **class** (an index into the queue's classes, for the
//! kinds that have classes; [`NO_CLASS`]: the class the queue's configuration gives the
//! workload) and an absolute **deadline** in seconds ([`NO_DEADLINE`]: none of its own). Aequitas
//! sets a class per RPC at issue time; a request may carry a deadline of its own. A kind reads a
//! tag only if it is configured to: `dwrr` (and `wfq`) serve an item in its own class when it
//! has one, `edf` uses an item's own deadline when it has one (else arrival plus the workload's
//! relative deadline); `fifo`, `priority`, `sfq`, `nested`, `pclock` and `wf2q` ignore both (Nested QoS classifies
//! each request itself, at the queue that holds its buckets, and its deadline is its class's).
//! Build items with [`Item::new`] and the `with_*` setters.
//!
//! **Speed.** The simulator enqueues an item per packet per link, so `Item` stays `Copy` and 32
//! bytes (its arrival time is the `now` of the enqueue, not a field), and a discipline implements
//! [`Scheduler::enqueue_fields`] (the item's fields as arguments, which a virtual call passes in
//! registers; `enqueue(item, now)` is its wrapper): passing the `Item` itself through the virtual
//! call cost the simulator ~6% (`benchmarks/README.md`, "Simulator").
//!
//! Units: `cost` is the item's work at this queue in seconds of exclusive service (tokens), so
//! token-bucket rates are utilisations and bucket sizes are seconds of work; `now` and
//! `deadline` are seconds on the queue's clock.

mod bucket;
mod config;
pub mod dispatch;
mod dwrr;
mod edf;
mod fifo;
mod nested;
mod pclock;
mod priority;
mod sfq;
#[cfg(test)]
mod testing;
mod wf2q;
mod wfq;

pub use bucket::{shape, BucketSet, TokenBucket};
pub use config::{SchedulerConfig, Value, WorkloadInfo, KINDS, TABLE_FIELDS};
pub use dwrr::Dwrr;
pub use edf::Edf;
pub use fifo::Fifo;
pub use nested::{check_classes, Nested, NestedClass};
pub use pclock::Pclock;
pub use priority::{LimitMode, Priority};
pub use sfq::Sfq;
pub use wf2q::Wf2q;
pub use wfq::Wfq;

use crate::error::{Error, Result};

/// [`Item::class`] when the item has no class of its own: the queue's configuration gives it
/// its workload's class.
pub const NO_CLASS: u32 = u32::MAX;

/// [`Item::deadline`] when the item has no deadline of its own (`+∞`; a deadline-reading kind
/// then derives one from its configuration).
pub const NO_DEADLINE: f64 = f64::INFINITY;

/// One unit of work waiting at a queue: a packet at a link, a request at a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    /// The simulator's identifier of the item (opaque to the scheduler).
    pub id: u64,
    /// The workload the item belongs to (index into the scheduler's per-workload settings).
    pub workload: u32,
    /// The item's own class (index into the queue's classes), or [`NO_CLASS`].
    pub class: u32,
    /// Seconds of exclusive service the item needs at this queue (its tokens).
    pub cost: f64,
    /// The item's own absolute deadline (seconds), or [`NO_DEADLINE`].
    pub deadline: f64,
}

// The simulator moves an item per packet per link: keep it small (see the module documentation).
const _: () = assert!(std::mem::size_of::<Item>() == 32);

impl Item {
    /// Item `id` of `workload` with `cost` seconds of work, without a class or a deadline of
    /// its own.
    #[inline]
    pub fn new(id: u64, workload: u32, cost: f64) -> Self {
        Self { id, workload, class: NO_CLASS, cost, deadline: NO_DEADLINE }
    }

    /// The same item in class `class` ([`NO_CLASS`]: the workload's).
    #[inline]
    pub fn with_class(self, class: u32) -> Self {
        Self { class, ..self }
    }

    /// The same item with absolute deadline `deadline` seconds ([`NO_DEADLINE`]: none).
    #[inline]
    pub fn with_deadline(self, deadline: f64) -> Self {
        Self { deadline, ..self }
    }

    /// The item's class: its own, else `default` (its workload's).
    #[inline]
    pub fn class_or(&self, default: u32) -> u32 {
        if self.class == NO_CLASS {
            default
        } else {
            self.class
        }
    }
}

/// The answer of [`Scheduler::dequeue`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dequeue {
    /// Serve this item now.
    Ready(Item),
    /// Items are waiting but none is eligible before this time (ask again then).
    Future(f64),
    /// Nothing is waiting.
    Empty,
}

/// A parameter a control policy may change while the simulation runs (Cake, Aequitas, PSLO).
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Strict-priority level; larger is more important.
    Priority(i64),
    /// Share weight of a fair-queueing scheduler (positive).
    Weight(f64),
    /// Token buckets `(rate as utilisation, size in seconds of work)`; empty means unlimited.
    Buckets(Vec<(f64, f64)>),
    /// Relative deadline of an EDF scheduler in seconds (the SLO latency).
    Deadline(f64),
}

/// A queueing discipline with injected time.
pub trait Scheduler: Send + Sync {
    /// Add `item`, arriving at `now` (the queue's clock). An item's class must be one of the
    /// queue's classes (`< SchedulerConfig::classes()`) or [`NO_CLASS`]; the simulator and the
    /// gateway check that when they are configured.
    #[inline]
    fn enqueue(&mut self, item: Item, now: f64) {
        let Item { id, workload, class, cost, deadline } = item;
        self.enqueue_fields(id, workload, class, cost, deadline, now);
    }
    /// [`Scheduler::enqueue`] with the item's fields as arguments: what a discipline implements,
    /// and what a queue holding a `dyn Scheduler` calls. Through a virtual call the fields
    /// travel in registers, an `Item` through memory: the discipline's copy of it into its queue
    /// then waited for the caller's stores of its fields (a store-forwarding stall per packet,
    /// ~6% of the simulator's time; `benchmarks/README.md`, "Simulator").
    fn enqueue_fields(
        &mut self,
        id: u64,
        workload: u32,
        class: u32,
        cost: f64,
        deadline: f64,
        now: f64,
    );
    /// Choose the next item to serve at `now`.
    fn dequeue(&mut self, now: f64) -> Dequeue;
    /// Number of waiting items.
    fn len(&self) -> usize;
    /// Whether nothing is waiting.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Change one workload's parameter; schedulers reject parameters they do not have.
    fn set_param(&mut self, workload: u32, param: Param) -> Result<()>;
    /// The workload's strict-priority level (larger is more important); 0 for disciplines
    /// without levels. The device's dispatcher uses it to hold back less important requests
    /// while a more important one is in service (thesis §2.2.1).
    fn level(&self, _workload: u32) -> i64 {
        0
    }
    /// The request [`Scheduler::dequeue`] would return at `now`, and the level it would serve
    /// it at (below every level for a demoted request), without taking it: the dispatcher
    /// decides on a request's level before taking it, so a request it must hold back does not
    /// block the line. `None` when nothing is ready or when the discipline cannot tell (the
    /// dispatcher then takes the request first, as before).
    fn peek(&self, _now: f64) -> Option<Peeked> {
        None
    }
    /// The most important level any workload of this queue has (0 without levels).
    fn top_level(&self) -> i64 {
        0
    }
}

/// What [`Scheduler::peek`] sees: the next request and the level it would be served at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peeked {
    /// The request.
    pub item: Item,
    /// Its level (larger is more important; `i64::MIN` for a demoted request).
    pub level: i64,
}

/// Reject a parameter a scheduler does not have.
pub(crate) fn unsupported(scheduler: &str, param: &Param) -> Result<()> {
    Err(Error::Invalid(format!("the {scheduler} scheduler has no parameter {param:?}")))
}

/// Check a workload index against the number of workloads a scheduler was built for.
pub(crate) fn check_workload(workload: u32, n: usize) -> Result<usize> {
    let w = workload as usize;
    if w >= n {
        return Err(Error::Invalid(format!("workload {workload} out of range (0..{n})")));
    }
    Ok(w)
}

/// A heap key `(tag, sequence)` ordered by `f64::total_cmp` then sequence, smallest first when
/// wrapped in `Reverse`. The sequence number breaks ties deterministically (arrival order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TagKey(pub f64, pub u64);

impl Eq for TagKey {}

impl PartialOrd for TagKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TagKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// An item in a heap ordered by its [`TagKey`] alone (EDF's deadlines, WFQ's finish tags).
#[derive(Debug)]
pub(crate) struct Tagged(pub TagKey, pub Item);

impl PartialEq for Tagged {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Tagged {}

impl PartialOrd for Tagged {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tagged {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}
