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
//!
//! A disk (`DeviceSpec::disk`) also applies the enforcer's rule for sequential writes: a missed
//! revolution for a sequential write issued after its predecessor finished, and batches of
//! sequential writes written in one pass, holding one dispatch slot (`disk.rs`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::disk::LastAccess;
use super::topology::DeviceSpec;
use crate::error::Result;
use crate::sched::{Dequeue, Item, Param, Scheduler, TagKey};

/// One device's state. Request identifiers are global request indices, used to look up each
/// request's operation and size in the slices the simulator passes in.
pub struct Device {
    spec: DeviceSpec,
    scheduler: Box<dyn Scheduler>,
    staged: Option<Item>,
    /// The staged item was taken by a batch's look-ahead, not refused for lack of room: it
    /// waits until the dispatcher has room as any newly chosen request would.
    staged_waits_for_room: bool,
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
    /// The disk's last dispatched access (disk rule only).
    last_access: Option<LastAccess>,
    /// Batches of sequential writes in service: the member being written and those after it.
    batches: Vec<Batch>,
}

/// A batch of sequential writes in one dispatch slot (thesis §2.2.1): `current` is being
/// written; `rest` follow back to back, `(id, seconds of work)` each.
struct Batch {
    current: u64,
    rest: VecDeque<(u64, f64)>,
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
            scheduler: spec.scheduler.build(workloads)?,
            spec: spec.clone(),
            staged: None,
            staged_waits_for_room: false,
            in_service: [0, 0],
            bytes: [0.0, 0.0],
            finishing: BinaryHeap::new(),
            levels: Vec::new(),
            virtual_time: 0.0,
            last: 0.0,
            generation: 0,
            pending: f64::INFINITY,
            wake_at: f64::INFINITY,
            last_access: None,
            batches: Vec::new(),
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

    /// Dispatch requests while the limits allow.
    pub fn dispatch(&mut self, now: f64, cols: Columns<'_>) -> Next {
        self.advance(now);
        let mut wake = None;
        let mut changed = false;
        loop {
            let item = match self.staged.take() {
                Some(item) if self.staged_waits_for_room && !self.has_room() => {
                    self.staged = Some(item);
                    break;
                }
                Some(item) => {
                    self.staged_waits_for_room = false;
                    item
                }
                None if !self.has_room() => break,
                None => match self.scheduler.dequeue(now) {
                    Dequeue::Ready(item) => item,
                    Dequeue::Future(t) => {
                        self.wake_for(t, &mut wake);
                        break;
                    }
                    Dequeue::Empty => break,
                },
            };
            let id = item.id as usize;
            let (op, size) = (usize::from(cols.op[id]), cols.size[id]);
            let level = self.scheduler.level(item.workload);
            if !self.fits(op, size) || !self.level_allows(level, size) {
                // head-of-line: the scheduler's choice waits for room, nothing overtakes it
                self.staged = Some(item);
                break;
            }
            let cost = self.cost_at_dispatch(&item, cols, now);
            self.admit(item.id, level, op, size);
            self.finishing.push(Reverse(TagKey(self.virtual_time + cost, item.id)));
            self.note_access(item.id, cols);
            if op == 1 {
                self.extend_batch(item.id, now, cols, &mut wake);
            }
            changed = true;
        }
        Next { completion: if changed { self.reschedule(now) } else { None }, wake }
    }

    /// Ask for a wake-up at `t` unless an earlier one is pending.
    fn wake_for(&mut self, t: f64, wake: &mut Option<f64>) {
        if t < self.wake_at {
            self.wake_at = t;
            *wake = Some(t);
        }
    }

    /// Count a request as in service (its slot, bytes and level).
    fn admit(&mut self, id: u64, level: i64, op: usize, size: f64) {
        if self.spec.low_priority_mpl != u32::MAX || self.spec.low_priority_bytes.is_finite() {
            self.levels.push((id, level, size));
        }
        self.in_service[op] += 1;
        self.bytes[op] += size;
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

    /// Thesis §2.2.1: after dispatching write `head`, take the writes that continue it, in the
    /// scheduler's own order, into one batch written in one pass (at most `batch_requests`
    /// requests, within the byte and level limits). The first request that does not continue
    /// the batch waits at the head of the line.
    fn extend_batch(&mut self, head: u64, now: f64, cols: Columns<'_>, wake: &mut Option<f64>) {
        let Some(rules) = self.spec.disk.clone() else {
            return;
        };
        let mut rest = VecDeque::new();
        let mut end = cols.offset[head as usize] + cols.size[head as usize];
        while (rest.len() as u64) + 1 < u64::from(rules.batch_requests) {
            let next = match self.scheduler.dequeue(now) {
                Dequeue::Ready(next) => next,
                Dequeue::Future(t) => {
                    self.wake_for(t, wake);
                    break;
                }
                Dequeue::Empty => break,
            };
            let id = next.id as usize;
            let size = cols.size[id];
            let level = self.scheduler.level(next.workload);
            let skip = if cols.op[id] == 1 { rules.skip(end, cols.offset[id]) } else { None };
            let room =
                self.bytes[1] + size <= self.spec.max_write_bytes && self.level_allows(level, size);
            let Some(skip) = skip.filter(|_| room) else {
                self.staged = Some(next);
                self.staged_waits_for_room = true;
                break;
            };
            if self.spec.low_priority_mpl != u32::MAX || self.spec.low_priority_bytes.is_finite() {
                self.levels.push((next.id, level, size));
            }
            self.bytes[1] += size;
            rest.push_back((next.id, skip + rules.transfer(size)));
            self.note_access(next.id, cols);
            end = cols.offset[id] + size;
        }
        if !rest.is_empty() {
            self.batches.push(Batch { current: head, rest });
        }
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
        cols: Columns<'_>,
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
            if let Some(last) = self.last_access.as_mut().filter(|a| a.id == id) {
                last.finished = Some(now);
            }
            let op = usize::from(cols.op[id as usize]);
            self.bytes[op] -= cols.size[id as usize];
            done.push(id);
            if let Some((next, cost)) = self.next_in_batch(id) {
                // the batch keeps its slot: the next write follows in the same pass
                self.finishing.push(Reverse(TagKey(finish + cost, next)));
                continue;
            }
            self.in_service[op] -= 1;
        }
        if self.dispatched() == 0 {
            self.bytes = [0.0, 0.0];
        }
        let mut next = self.dispatch(now, cols);
        if next.completion.is_none() {
            next.completion = self.reschedule(now);
        }
        next
    }

    /// The member of `finished`'s batch to write next, if any (the batch ends with it).
    fn next_in_batch(&mut self, finished: u64) -> Option<(u64, f64)> {
        let at = self.batches.iter().position(|b| b.current == finished)?;
        let batch = &mut self.batches[at];
        let next = batch.rest.pop_front();
        match next {
            Some((id, _)) if !batch.rest.is_empty() => batch.current = id,
            _ => {
                self.batches.swap_remove(at);
            }
        }
        next
    }

    /// A scheduled wake-up fired: dispatch what became eligible.
    pub fn woken(&mut self, now: f64, cols: Columns<'_>) -> Next {
        self.wake_at = f64::INFINITY;
        self.dispatch(now, cols)
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
