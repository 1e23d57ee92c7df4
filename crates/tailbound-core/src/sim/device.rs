//! A storage device behind a dispatcher: the device's service model. Which requests enter
//! service and when is the dispatcher's (`crate::sched::dispatch`, shared with a gateway): up to
//! `read_mpl` reads and `write_mpl` writes at once, at most `max_read_bytes` / `max_write_bytes`
//! of them (the storage enforcer's limits, thesis §2.2.1 and `profile_ssd.json`), the rule for
//! less important requests and a disk's batches of sequential writes.
//!
//! **Service model: processor sharing of a unit rate.** A request's cost is its work in seconds of
//! exclusive device service (the token model's `size / bandwidth(op, size)`, or a disk model's
//! seek + rotation + transfer). The `n` dispatched requests share the device's
//! unit rate equally: each progresses at `1/n` seconds of work per second. So dispatching many
//! requests in parallel never serves more than one second of work per second — consistent with
//! tokens being seconds of *exclusive* service (the SSD profile was measured with the device's own
//! parallelism already inside its bandwidth), which keeps the network-calculus bounds, stated for
//! a work-conserving unit-rate server, valid for the device. With MPL 1 the device is a
//! non-preemptive server in its scheduler's order; with a larger MPL a newly dispatched request
//! shares the device at once, which bounds the priority inversion the thesis describes to the
//! requests already dispatched.
//!
//! `base_latency` is added after service without holding a dispatch slot or device capacity (a
//! fixed controller or software path delay).
//!
//! Processor sharing is simulated exactly with a virtual clock `V` advancing at `1/n`: a request
//! dispatched at `V₀` with work `w` leaves when `V = V₀ + w`.
//!
//! A disk (`DeviceSpec::disk`) also prices the enforcer's rule for sequential writes: a missed
//! revolution for a sequential write issued after its predecessor finished, and the members of a
//! batch (one dispatch slot) written back to back in one pass (`disk.rs`).
//!
//! An array (`DeviceSpec::array`, `array.rs`) replaces the unit rate: each of the `n` dispatched
//! requests progresses at the model's speed `s(n)` (so the virtual clock advances at `s(n)`),
//! and a request's work is multiplied at dispatch by its per-request tail factor. A device
//! without one takes exactly the processor-sharing branch it always did.
//!
//! A device may carry a controller (`DeviceSpec::control`, `control.rs`): PSLO, told of every
//! completion of a controlled tenant, sets the tenants' pacing rates and depths at the
//! dispatcher. A device without one does exactly what it did before (one branch per call).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::control::{DeviceControl, LimitChange};
use super::disk::{DiskRules, LastAccess};
use super::topology::DeviceSpec;
use crate::error::Result;
use crate::sched::dispatch::{Dispatched, Dispatcher, Limits, Request, TenantLimits};
use crate::sched::{Item, Param, TagKey};

/// One device's state: its dispatcher (`crate::sched::dispatch`) and the service model of the
/// requests in service. Request identifiers are global request indices, used to look up each
/// request's operation and size in the slices the simulator passes in.
pub struct Device {
    spec: DeviceSpec,
    dispatcher: Dispatcher,
    /// The requests the dispatcher just let in (reused buffer).
    started: Vec<Dispatched>,
    /// `(virtual finish time, id)` of the request in service in each dispatch slot.
    finishing: BinaryHeap<Reverse<TagKey>>,
    virtual_time: f64,
    last: f64,
    /// Generation of the pending completion event; events of older generations are stale.
    generation: u64,
    /// Time of the pending completion event (infinite if none).
    pending: f64,
    /// The disk's last dispatched access (disk rule only).
    last_access: Option<LastAccess>,
    /// The device's controller, if it has one.
    control: Option<Box<DeviceControl>>,
}

/// The request columns the dispatcher reads, indexed by request identifier.
#[derive(Debug, Clone, Copy)]
pub struct Columns<'a> {
    /// 0 read, 1 write.
    pub op: &'a [u8],
    /// Bytes.
    pub size: &'a [f64],
    /// Byte offset on the device (NaN if unknown; used by the disk rule only).
    pub offset: &'a [f64],
}

impl Columns<'_> {
    /// What the dispatcher reads of request `id`.
    fn request(&self, id: u64) -> Request {
        let i = id as usize;
        Request { write: self.op[i] == 1, size: self.size[i], offset: self.offset[i] }
    }
}

/// What the simulator must schedule after the device changed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Next {
    /// The next completion `(time, generation)`, if any request is in service.
    pub completion: Option<(f64, u64)>,
    /// A wake-up for the dispatcher's scheduler (a shaper waiting for tokens).
    pub wake: Option<f64>,
}

/// Tolerance in seconds of work when deciding that requests finish together.
const FINISH_EPS: f64 = 1e-12;

impl Device {
    /// Device `index` (named in errors, `devices[index].control.policy`) with its scheduler
    /// built for `workloads` workloads and its controller's initial limits set.
    pub fn new(spec: &DeviceSpec, workloads: usize, index: usize) -> Result<Self> {
        let limits = Limits {
            read_mpl: spec.read_mpl,
            write_mpl: spec.write_mpl,
            max_read_bytes: spec.max_read_bytes,
            max_write_bytes: spec.max_write_bytes,
            low_priority_mpl: spec.low_priority_mpl,
            low_priority_bytes: spec.low_priority_bytes,
            low_priority_work: spec.low_priority_work,
            level_mpl: spec.level_mpl,
            batching: spec.disk.as_ref().map(DiskRules::batching),
        };
        let mut dispatcher = Dispatcher::new(limits, spec.scheduler.build(workloads)?)?;
        let control = match &spec.control {
            Some(c) => {
                let at = format!("devices[{index}].control");
                Some(Box::new(DeviceControl::new(c, workloads, &mut dispatcher, &at)?))
            }
            None => None,
        };
        Ok(Self {
            dispatcher,
            spec: spec.clone(),
            started: Vec::new(),
            finishing: BinaryHeap::new(),
            virtual_time: 0.0,
            last: 0.0,
            generation: 0,
            pending: f64::INFINITY,
            last_access: None,
            control,
        })
    }

    /// Seconds added after service.
    pub fn base_latency(&self) -> f64 {
        self.spec.base_latency
    }

    /// Requests in service sharing the device (a batch of sequential writes counts once).
    fn dispatched(&self) -> u32 {
        self.finishing.len() as u32
    }

    /// Bring the virtual clock to `now`.
    fn advance(&mut self, now: f64) {
        let n = self.dispatched();
        if n > 0 {
            match &self.spec.array {
                None => self.virtual_time += (now - self.last) / f64::from(n),
                Some(a) => self.virtual_time += (now - self.last) * a.speed(n),
            }
        }
        self.last = now;
    }

    /// Seconds of wall-clock time for `work` seconds of virtual time with `n` requests in
    /// service (`work · n` under processor sharing, `work / s(n)` for an array).
    fn wall(&self, work: f64, n: u32) -> f64 {
        match &self.spec.array {
            None => work * f64::from(n),
            Some(a) => work / a.speed(n),
        }
    }

    /// Queue a request at `now` (`item.id` its request index, `item.cost` its seconds of work).
    #[inline]
    pub fn enqueue(&mut self, item: Item, now: f64) {
        if let Some(c) = &mut self.control {
            c.arrived(item.id, item.workload, now);
        }
        self.dispatcher.enqueue(item, now);
    }

    /// Let in the requests the dispatcher admits now and start their service.
    pub fn dispatch(&mut self, now: f64, cols: Columns<'_>) -> Next {
        self.advance(now);
        let mut started = std::mem::take(&mut self.started);
        started.clear();
        let wake = self.dispatcher.dispatch(now, |id| cols.request(id), &mut started);
        for d in &started {
            if !d.batched {
                let mut cost = self.cost_at_dispatch(&d.item, cols, now);
                if let Some(a) = &self.spec.array {
                    cost *= a.factor(d.item.id);
                }
                self.finishing.push(Reverse(TagKey(self.virtual_time + cost, d.item.id)));
            }
            self.note_access(d.item.id, cols);
            if let Some(c) = &mut self.control {
                c.dispatched(d.item.id, now);
            }
        }
        let changed = !started.is_empty();
        self.started = started;
        Next { completion: if changed { self.reschedule(now) } else { None }, wake }
    }

    /// Record request `id` as the disk's last access (disk rule only).
    fn note_access(&mut self, id: u64, cols: Columns<'_>) {
        if self.spec.disk.is_some() {
            let i = id as usize;
            let (write, end) = (cols.op[i] == 1, cols.offset[i] + cols.size[i]);
            self.last_access = Some(LastAccess { id, write, end, finished: None });
        }
    }

    /// A request's work at dispatch: the token model's cost, or the disk rule's for a write
    /// (`disk.rs`: a continued write costs its gap and transfer, plus the rotation it missed if
    /// its predecessor already finished; an interrupted sequential write repositions).
    fn cost_at_dispatch(&self, item: &Item, cols: Columns<'_>, now: f64) -> f64 {
        let Some(rules) = &self.spec.disk else {
            return item.cost;
        };
        let id = item.id as usize;
        let offset = cols.offset[id];
        if cols.op[id] != 1 || !offset.is_finite() {
            return item.cost; // reads find sequential data in the disk cache
        }
        let transfer = rules.transfer(cols.size[id]);
        if let Some(last) = self.last_access.filter(|a| a.write) {
            if let Some(skip) = rules.skip(last.end, offset) {
                return match last.finished {
                    None => skip + transfer,
                    Some(t) => rules.rotation_wait(t, skip, now) + transfer,
                };
            }
        }
        // priced as sequential in its own trace, but the head is elsewhere now
        if item.cost <= transfer * (1.0 + 1e-9) {
            rules.reposition + transfer
        } else {
            item.cost
        }
    }

    /// The completion event to schedule, if the earliest finish is now sooner than the pending
    /// event. A later finish (more requests sharing the device) keeps the pending event: it
    /// fires early, completes nothing and reschedules, which costs fewer heap operations than
    /// rescheduling on every dispatch.
    fn reschedule(&mut self, now: f64) -> Option<(f64, u64)> {
        let Reverse(TagKey(finish, _)) = *self.finishing.peek()?;
        let at = now + self.wall(finish - self.virtual_time, self.dispatched()).max(0.0);
        if at < self.pending {
            self.generation += 1;
            self.pending = at;
            return Some((at, self.generation));
        }
        None
    }

    /// A completion event of `generation` fired at `now`: the finished requests go to `done`
    /// (none if the event is stale or early); then dispatch more.
    pub fn complete(
        &mut self,
        generation: u64,
        now: f64,
        cols: Columns<'_>,
        done: &mut Vec<u64>,
    ) -> Next {
        if generation != self.generation {
            return Next::default();
        }
        self.pending = f64::INFINITY;
        self.advance(now);
        let n = self.dispatched();
        while let Some(&Reverse(TagKey(finish, id))) = self.finishing.peek() {
            // due, or so close that the clock cannot advance to it (rounding must not stall)
            let due = finish <= self.virtual_time + FINISH_EPS
                || now + self.wall(finish - self.virtual_time, n) <= now;
            if !due {
                break;
            }
            self.finishing.pop();
            if let Some(last) = self.last_access.as_mut().filter(|a| a.id == id) {
                last.finished = Some(now);
            }
            done.push(id);
            let batch_next = self.dispatcher.complete(id, cols.request(id));
            if let Some(c) = &mut self.control {
                // the decision holds from the dispatch below on
                c.completed(id, now, &mut self.dispatcher);
            }
            if let Some(next) = batch_next {
                // the batch keeps its slot: the next write follows in the same pass
                let cost = self.batched_cost(id, next, cols);
                self.finishing.push(Reverse(TagKey(finish + cost, next)));
            }
        }
        let mut next = self.dispatch(now, cols);
        if next.completion.is_none() {
            next.completion = self.reschedule(now);
        }
        next
    }

    /// The work of write `next`, following `previous` in a batch in the same pass: the
    /// rotation over the gap between them and its transfer (`disk.rs`).
    fn batched_cost(&self, previous: u64, next: u64, cols: Columns<'_>) -> f64 {
        let (p, n) = (previous as usize, next as usize);
        let end = cols.offset[p] + cols.size[p];
        self.spec.disk.as_ref().map_or(0.0, |r| r.continued(end, cols.offset[n], cols.size[n]))
    }

    /// A scheduled wake-up fired: dispatch what became eligible.
    pub fn woken(&mut self, now: f64, cols: Columns<'_>) -> Next {
        self.dispatcher.woken_at(now);
        self.dispatch(now, cols)
    }

    /// Change a scheduler parameter (the control hook).
    pub fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        self.dispatcher.set_param(workload, param)
    }

    /// Set `workload`'s pacing rate (requests per second) and depth at the dispatcher (`None`:
    /// unlimited), effective at the next dispatch (`Dispatcher::set_tenant_limits`).
    pub fn set_tenant_limits(&mut self, workload: u32, limits: TenantLimits) -> Result<()> {
        self.dispatcher.set_tenant_limits(workload, limits.rate, limits.depth)
    }

    /// `workload`'s limits at the dispatcher (unlimited unless set).
    pub fn tenant_limits(&self, workload: u32) -> TenantLimits {
        self.dispatcher.tenant_limits(workload)
    }

    /// The limits the device's controller applied so far, in order (empty without one).
    pub fn control_log(&self) -> &[LimitChange] {
        self.control.as_ref().map_or(&[], |c| c.log())
    }

    /// Requests waiting for dispatch.
    pub fn queued(&self) -> usize {
        self.dispatcher.queued()
    }
}
