//! A storage device behind a dispatcher.
//!
//! **Service model: processor sharing of a unit rate.** A request's cost is its work in seconds of
//! exclusive device service (the token model's `size / bandwidth(op, size)`, or a disk model's
//! seek + rotation + transfer). The dispatcher keeps up to `read_mpl` reads and `write_mpl` writes
//! in the device at once, and at most `max_read_bytes` / `max_write_bytes` of them (the storage
//! enforcer's limits, thesis §2.2.1 and `profile_ssd.json`; one request is always allowed so that
//! a request larger than the byte limit still runs). The `n` dispatched requests share the device's
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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::sched::{Dequeue, Item, Param, Scheduler, TagKey};
use super::topology::DeviceSpec;
use crate::error::Result;

/// One device's state. Request identifiers are global request indices, used to look up each
/// request's operation and size in the slices the simulator passes in.
pub struct Device {
    spec: DeviceSpec,
    scheduler: Box<dyn Scheduler>,
    staged: Option<Item>,
    in_service: [u32; 2],
    bytes: [f64; 2],
    finishing: BinaryHeap<Reverse<TagKey>>,
    /// `(id, level, bytes)` of every request in service (a handful: the MPL bounds it).
    levels: Vec<(u64, i64, f64)>,
    virtual_time: f64,
    last: f64,
    /// Generation of the pending completion event; events of older generations are stale.
    generation: u64,
    /// Time of the pending completion event (infinite if none).
    pending: f64,
    wake_at: f64,
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
    /// A device with its scheduler built for `workloads` workloads.
    pub fn new(spec: &DeviceSpec, workloads: usize) -> Result<Self> {
        Ok(Self {
            scheduler: spec.scheduler.spec(workloads).build(workloads)?,
            spec: spec.clone(),
            staged: None,
            in_service: [0, 0],
            bytes: [0.0, 0.0],
            finishing: BinaryHeap::new(),
            levels: Vec::new(),
            virtual_time: 0.0,
            last: 0.0,
            generation: 0,
            pending: f64::INFINITY,
            wake_at: f64::INFINITY,
        })
    }

    /// Seconds added after service.
    pub fn base_latency(&self) -> f64 {
        self.spec.base_latency
    }

    fn dispatched(&self) -> u32 {
        self.in_service[0] + self.in_service[1]
    }

    /// Bring the virtual clock to `now`.
    fn advance(&mut self, now: f64) {
        let n = self.dispatched();
        if n > 0 {
            self.virtual_time += (now - self.last) / f64::from(n);
        }
        self.last = now;
    }

    /// Queue request `id` of `workload` with `work` seconds of device work.
    pub fn enqueue(&mut self, id: u64, workload: u32, work: f64, now: f64) {
        self.scheduler.enqueue(id, workload, work, now);
    }

    /// Whether a request of either operation would be admitted by count and bytes. The
    /// dispatcher asks its scheduler only then: the scheduler's choice is final, so asking early
    /// would commit to a request before a more important one arrives.
    fn has_room(&self) -> bool {
        self.in_service[0] < self.spec.read_mpl
            && self.in_service[1] < self.spec.write_mpl
            && self.bytes[0] < self.spec.max_read_bytes
            && self.bytes[1] < self.spec.max_write_bytes
    }

    fn fits(&self, op: usize, size: f64) -> bool {
        let (mpl, max_bytes) = if op == 0 {
            (self.spec.read_mpl, self.spec.max_read_bytes)
        } else {
            (self.spec.write_mpl, self.spec.max_write_bytes)
        };
        self.in_service[op] == 0
            || (self.in_service[op] < mpl && self.bytes[op] + size <= max_bytes)
    }

    /// Thesis §2.2.1: while a request of level `L` is in service, at most `low_priority_mpl`
    /// requests and `low_priority_bytes` bytes of levels below `L` may be in service. A request
    /// at the most important level in service (or above it) is always allowed.
    fn level_allows(&self, level: i64, size: f64) -> bool {
        let Some(top) = self.levels.iter().map(|&(_, l, _)| l).max() else {
            return true;
        };
        if level >= top {
            return true;
        }
        let (count, bytes) = self
            .levels
            .iter()
            .filter(|&&(_, l, _)| l < top)
            .fold((0u32, 0.0), |(c, b), &(_, _, s)| (c + 1, b + s));
        count < self.spec.low_priority_mpl && bytes + size <= self.spec.low_priority_bytes
    }

    /// Dispatch requests while the limits allow; `ops[id]` and `sizes[id]` describe request `id`.
    pub fn dispatch(&mut self, now: f64, ops: &[u8], sizes: &[f64]) -> Next {
        self.advance(now);
        let mut wake = None;
        let mut changed = false;
        loop {
            let item = match self.staged.take() {
                Some(item) => item,
                None if !self.has_room() => break,
                None => match self.scheduler.dequeue(now) {
                    Dequeue::Ready(item) => item,
                    Dequeue::Future(t) => {
                        if t < self.wake_at {
                            self.wake_at = t;
                            wake = Some(t);
                        }
                        break;
                    }
                    Dequeue::Empty => break,
                },
            };
            let id = item.id as usize;
            let (op, size) = (usize::from(ops[id]), sizes[id]);
            let level = self.scheduler.level(item.workload);
            if !self.fits(op, size) || !self.level_allows(level, size) {
                // head-of-line: the scheduler's choice waits for room, nothing overtakes it
                self.staged = Some(item);
                break;
            }
            if self.spec.low_priority_mpl != u32::MAX || self.spec.low_priority_bytes.is_finite() {
                self.levels.push((item.id, level, size));
            }
            self.in_service[op] += 1;
            self.bytes[op] += size;
            self.finishing.push(Reverse(TagKey(self.virtual_time + item.cost, item.id)));
            changed = true;
        }
        Next { completion: if changed { self.reschedule(now) } else { None }, wake }
    }

    /// The completion event to schedule, if the earliest finish is now sooner than the pending
    /// event. A later finish (more requests sharing the device) keeps the pending event: it
    /// fires early, completes nothing and reschedules, which costs fewer heap operations than
    /// rescheduling on every dispatch.
    fn reschedule(&mut self, now: f64) -> Option<(f64, u64)> {
        let Reverse(TagKey(finish, _)) = *self.finishing.peek()?;
        let n = f64::from(self.dispatched());
        let at = now + ((finish - self.virtual_time) * n).max(0.0);
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
        ops: &[u8],
        sizes: &[f64],
        done: &mut Vec<u64>,
    ) -> Next {
        if generation != self.generation {
            return Next::default();
        }
        self.pending = f64::INFINITY;
        self.advance(now);
        let n = f64::from(self.dispatched());
        while let Some(&Reverse(TagKey(finish, id))) = self.finishing.peek() {
            // due, or so close that the clock cannot advance to it (rounding must not stall)
            let due = finish <= self.virtual_time + FINISH_EPS
                || now + (finish - self.virtual_time) * n <= now;
            if !due {
                break;
            }
            self.finishing.pop();
            if let Some(at) = self.levels.iter().position(|&(x, _, _)| x == id) {
                self.levels.swap_remove(at);
            }
            let op = usize::from(ops[id as usize]);
            self.in_service[op] -= 1;
            self.bytes[op] -= sizes[id as usize];
            done.push(id);
        }
        if self.dispatched() == 0 {
            self.bytes = [0.0, 0.0];
        }
        let mut next = self.dispatch(now, ops, sizes);
        if next.completion.is_none() {
            next.completion = self.reschedule(now);
        }
        next
    }

    /// A scheduled wake-up fired: dispatch what became eligible.
    pub fn woken(&mut self, now: f64, ops: &[u8], sizes: &[f64]) -> Next {
        self.wake_at = f64::INFINITY;
        self.dispatch(now, ops, sizes)
    }

    /// Change a scheduler parameter (the control hook).
    pub fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        self.wake_at = f64::INFINITY;
        self.scheduler.set_param(workload, param)
    }

    /// Requests waiting for dispatch.
    pub fn queued(&self) -> usize {
        self.scheduler.len() + usize::from(self.staged.is_some())
    }
}
