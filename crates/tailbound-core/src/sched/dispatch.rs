//! The dispatcher in front of a storage device: which waiting requests enter service, and when
//! (thesis §2.2.1, the storage enforcer). It owns the queue's scheduler and the dispatch limits;
//! what happens to a request in service (processor sharing, a disk's seek and rotation) is the
//! device's business: the simulator's device model (`sim::device`) or, in a gateway, the real
//! device. Time is injected, as for the schedulers.
//!
//! **Limits.** At most `read_mpl` reads and `write_mpl` writes are in service at once, and at most
//! `max_read_bytes` / `max_write_bytes` of them (one request is always allowed, so that a request
//! larger than the byte limit still runs). While a request of level `L` is in service, at most
//! `low_priority_mpl` requests and `low_priority_bytes` bytes of levels below `L` may be in
//! service (levels are the scheduler's, [`Scheduler::level`]); a request at the most important
//! level in service, or above it, is always allowed.
//!
//! **Head of line.** The dispatcher asks its scheduler only when a request of either operation
//! would be admitted by count and bytes: the scheduler's choice is final, so asking early would
//! commit to a request before a more important one arrives. A chosen request that does not fit
//! waits at the head of the line; nothing overtakes it.
//!
//! **Batches of sequential writes** ([`WriteBatching`], a disk's rule): after dispatching a
//! write, the dispatcher keeps asking its scheduler; while the next request in the scheduler's
//! own order is a write continuing the previous one (it starts `0..=gap_bytes` after the
//! previous one's end), it joins the batch (at most `max_requests` requests, within the write
//! bytes and the level rule). A batch holds one dispatch slot: the device writes its members
//! back to back, and when one finishes [`Dispatcher::complete`] names the next. The first
//! request that does not continue the batch waits at the head of the line (for room, as any
//! newly chosen request would).
//!
//! Request identifiers are the caller's; the dispatcher reads each request's operation, size and
//! offset through a closure (`Fn(u64) -> Request`), so the caller keeps its own request table.

use std::collections::VecDeque;

use super::{Dequeue, Item, Param, Scheduler};
use crate::error::{Error, Result};

/// What the dispatcher reads of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Whether it is a write (else a read).
    pub write: bool,
    /// Bytes (counted against the byte limits).
    pub size: f64,
    /// Byte offset on the device (NaN if unknown; read by write batching only).
    pub offset: f64,
}

/// A disk's batching of sequential writes (thesis §2.2.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteBatching {
    /// Most requests in a batch; 1 disables batching.
    pub max_requests: u32,
    /// Largest forward gap in bytes between a write and the end of the previous one for the
    /// write to continue it (nearly sequential).
    pub gap_bytes: f64,
}

impl WriteBatching {
    /// The gap in bytes from `end` to `offset` if a write at `offset` continues one ending at
    /// `end` (`0 <= gap <= gap_bytes`; never with an unknown offset).
    pub fn continues(&self, end: f64, offset: f64) -> Option<f64> {
        let gap = offset - end;
        (gap >= 0.0 && gap <= self.gap_bytes).then_some(gap)
    }
}

/// The dispatch rules of a device (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Most reads in service at once.
    pub read_mpl: u32,
    /// Most writes in service at once.
    pub write_mpl: u32,
    /// Most bytes of reads in service at once (one request is always allowed).
    pub max_read_bytes: f64,
    /// Most bytes of writes in service at once (one request is always allowed).
    pub max_write_bytes: f64,
    /// While a request is in service, most requests of less important levels in service.
    pub low_priority_mpl: u32,
    /// While a request is in service, most bytes of less important requests in service.
    pub low_priority_bytes: f64,
    /// Most work (seconds) in service of requests below the queue's most important level, at
    /// any time (a request of those levels is always let in when none of them is in service).
    pub low_priority_work: f64,
    /// Batching of sequential writes (a disk), if any.
    pub batching: Option<WriteBatching>,
}

impl Default for Limits {
    /// One read and one write at a time, no other limit.
    fn default() -> Self {
        Self {
            read_mpl: 1,
            write_mpl: 1,
            max_read_bytes: f64::INFINITY,
            max_write_bytes: f64::INFINITY,
            low_priority_mpl: u32::MAX,
            low_priority_bytes: f64::INFINITY,
            low_priority_work: f64::INFINITY,
            batching: None,
        }
    }
}

impl Limits {
    /// Check every limit's domain.
    pub fn validate(&self) -> Result<()> {
        let bytes = [self.max_read_bytes, self.max_write_bytes];
        let ok = self.read_mpl >= 1
            && self.write_mpl >= 1
            && bytes.iter().all(|&b| b > 0.0)
            && self.low_priority_bytes >= 0.0
            && self.low_priority_work >= 0.0
            && self.batching.is_none_or(|b| {
                b.max_requests >= 1 && b.gap_bytes >= 0.0 && b.gap_bytes.is_finite()
            });
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "dispatch limits: MPLs and batch sizes must be >= 1, byte limits positive, \
                 low_priority_bytes, low_priority_work and gap_bytes >= 0; got {self:?}"
            )))
        }
    }

    /// Whether the level rule is in force (the levels in service must be tracked).
    fn by_level(&self) -> bool {
        self.low_priority_mpl != u32::MAX
            || self.low_priority_bytes.is_finite()
            || self.low_priority_work.is_finite()
    }
}

/// A request entering service, in the order the dispatcher chose them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispatched {
    /// The request as its scheduler queued it.
    pub item: Item,
    /// `false`: it starts service now in a slot of its own. `true`: it joined the batch of
    /// the request dispatched just before it and starts when that one finishes (see
    /// [`Dispatcher::complete`]).
    pub batched: bool,
}

/// A batch of sequential writes in one slot: `current` is being written, `rest` follow.
#[derive(Debug)]
struct Batch {
    current: u64,
    rest: VecDeque<u64>,
}

/// The dispatcher of one device (see the module documentation).
pub struct Dispatcher {
    limits: Limits,
    scheduler: Box<dyn Scheduler>,
    staged: Option<Item>,
    /// The staged item was taken by a batch's look-ahead, not refused for lack of room: it
    /// waits until the dispatcher has room as any newly chosen request would.
    staged_waits_for_room: bool,
    /// `(id, level)` of the staged request as the scheduler served it.
    staged_level: (u64, i64),
    in_service: [u32; 2],
    bytes: [f64; 2],
    /// `(id, level, bytes, work)` of every request in service when a level rule is in force
    /// (a handful: the MPL bounds it).
    levels: Vec<(u64, i64, f64, f64)>,
    batches: Vec<Batch>,
    wake_at: f64,
}

impl Dispatcher {
    /// A dispatcher with `limits` in front of `scheduler`.
    pub fn new(limits: Limits, scheduler: Box<dyn Scheduler>) -> Result<Self> {
        limits.validate()?;
        Ok(Self {
            limits,
            scheduler,
            staged: None,
            staged_waits_for_room: false,
            staged_level: (u64::MAX, 0),
            in_service: [0, 0],
            bytes: [0.0, 0.0],
            levels: Vec::new(),
            batches: Vec::new(),
            wake_at: f64::INFINITY,
        })
    }

    /// Queue a request arriving at `now` (its `cost` is its work in seconds, its tokens).
    #[inline]
    pub fn enqueue(&mut self, item: Item, now: f64) {
        let Item { id, workload, class, cost, deadline } = item;
        self.scheduler.enqueue_fields(id, workload, class, cost, deadline, now);
    }

    /// Requests waiting for dispatch.
    pub fn queued(&self) -> usize {
        self.scheduler.len() + usize::from(self.staged.is_some())
    }

    /// Dispatch slots in use (a batch holds one).
    pub fn slots_in_service(&self) -> u32 {
        self.in_service[0] + self.in_service[1]
    }

    /// Choose at `now` the requests that enter service while the limits allow, appending them to
    /// `out` in order. Returns the time to ask again if the scheduler holds requests back until
    /// then (a shaper waiting for tokens) and no earlier wake-up is pending.
    pub fn dispatch<F>(&mut self, now: f64, request: F, out: &mut Vec<Dispatched>) -> Option<f64>
    where
        F: Fn(u64) -> Request,
    {
        let mut wake = None;
        loop {
            // the level the scheduler serves a freshly taken request at (peeked), if it says
            let mut peeked: Option<(u64, i64)> = None;
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
                None => {
                    // decide on the next request's level before taking it: a request the level
                    // rules hold back stays in its queue, so a more important one arriving
                    // later is not stuck behind it (it would be, staged at the head of line)
                    if self.limits.by_level() {
                        if let Some(next) = self.scheduler.peek(now) {
                            let size = request(next.item.id).size;
                            if !self.level_allows(next.level, size, next.item.cost) {
                                break;
                            }
                            peeked = Some((next.item.id, next.level));
                        }
                    }
                    match self.scheduler.dequeue(now) {
                        Dequeue::Ready(item) => item,
                        Dequeue::Future(t) => {
                            self.wake_for(t, &mut wake);
                            break;
                        }
                        Dequeue::Empty => break,
                    }
                }
            };
            let r = request(item.id);
            let op = usize::from(r.write);
            let level = match peeked {
                Some((id, level)) if id == item.id => level,
                _ if item.id == self.staged_level.0 => self.staged_level.1,
                _ => self.scheduler.level(item.workload),
            };
            if !self.fits(op, r.size) || !self.level_allows(level, r.size, item.cost) {
                // head-of-line: the scheduler's choice waits for room, nothing overtakes it
                self.staged = Some(item);
                self.staged_level = (item.id, level);
                break;
            }
            if self.limits.by_level() {
                self.levels.push((item.id, level, r.size, item.cost));
            }
            self.in_service[op] += 1;
            self.bytes[op] += r.size;
            out.push(Dispatched { item, batched: false });
            if r.write {
                self.extend_batch(item.id, r, now, &request, out, &mut wake);
            }
        }
        wake
    }

    /// Request `id` left service. Returns the next member of its batch, which starts now in
    /// the same slot, if any.
    pub fn complete(&mut self, id: u64, request: Request) -> Option<u64> {
        if let Some(at) = self.levels.iter().position(|&(x, _, _, _)| x == id) {
            self.levels.swap_remove(at);
        }
        let op = usize::from(request.write);
        self.bytes[op] -= request.size;
        let next = self.next_in_batch(id);
        if next.is_none() {
            self.in_service[op] = self.in_service[op].saturating_sub(1);
            if self.slots_in_service() == 0 {
                self.bytes = [0.0, 0.0]; // no rounding residue when idle
            }
        }
        next
    }

    /// A wake-up asked for by [`Dispatcher::dispatch`] is due (call `dispatch` next).
    pub fn woken(&mut self) {
        self.wake_at = f64::INFINITY;
    }

    /// Change a scheduler parameter (the control hook); the pending wake-up no longer holds.
    pub fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        self.wake_at = f64::INFINITY;
        self.scheduler.set_param(workload, param)
    }

    /// Replace the limits and the scheduler (a gateway's hot reload). What is in service stays
    /// counted against the new limits (its slots, bytes and levels: a level keeps the number it
    /// was dispatched at) and batches go on; the old scheduler's queue, the staged request
    /// included, is dropped: the caller enqueues every request not yet dispatched again. On an
    /// error (bad limits) nothing changed.
    pub fn reconfigure(&mut self, limits: Limits, scheduler: Box<dyn Scheduler>) -> Result<()> {
        limits.validate()?;
        self.limits = limits;
        self.scheduler = scheduler;
        self.staged = None;
        self.staged_waits_for_room = false;
        self.staged_level = (u64::MAX, 0);
        self.wake_at = f64::INFINITY;
        Ok(())
    }

    /// Ask for a wake-up at `t` unless an earlier one is pending.
    fn wake_for(&mut self, t: f64, wake: &mut Option<f64>) {
        if t < self.wake_at {
            self.wake_at = t;
            *wake = Some(t);
        }
    }

    /// Whether a request of either operation would be admitted by count and bytes.
    fn has_room(&self) -> bool {
        let l = &self.limits;
        self.in_service[0] < l.read_mpl
            && self.in_service[1] < l.write_mpl
            && self.bytes[0] < l.max_read_bytes
            && self.bytes[1] < l.max_write_bytes
    }

    fn fits(&self, op: usize, size: f64) -> bool {
        let (mpl, max_bytes) = if op == 0 {
            (self.limits.read_mpl, self.limits.max_read_bytes)
        } else {
            (self.limits.write_mpl, self.limits.max_write_bytes)
        };
        self.in_service[op] == 0
            || (self.in_service[op] < mpl && self.bytes[op] + size <= max_bytes)
    }

    /// The level rules. Thesis §2.2.1: while a request of level `L` is in service, at most
    /// `low_priority_mpl` requests and `low_priority_bytes` bytes of levels below `L` may be in
    /// service. And the work rule: at most `low_priority_work` seconds of work of levels below
    /// the queue's most important level in service (one is let in when none is). A request's
    /// level is the one it is served at (a demoted request is below every level).
    fn level_allows(&self, level: i64, size: f64, work: f64) -> bool {
        let l = &self.limits;
        let top = self.scheduler.top_level();
        if l.low_priority_work.is_finite() && level < top {
            let below: f64 =
                self.levels.iter().filter(|&&(_, lv, _, _)| lv < top).map(|&(.., w)| w).sum();
            if below > 0.0 && below + work > l.low_priority_work {
                return false;
            }
        }
        let Some(top) = self.levels.iter().map(|&(_, lv, _, _)| lv).max() else {
            return true;
        };
        if level >= top {
            return true;
        }
        let (count, bytes) = self
            .levels
            .iter()
            .filter(|&&(_, lv, _, _)| lv < top)
            .fold((0u32, 0.0), |(c, b), &(_, _, s, _)| (c + 1, b + s));
        count < l.low_priority_mpl && bytes + size <= l.low_priority_bytes
    }

    /// After dispatching write `head`, take the writes that continue it, in the scheduler's own
    /// order, into its batch.
    fn extend_batch<F>(
        &mut self,
        head: u64,
        first: Request,
        now: f64,
        request: &F,
        out: &mut Vec<Dispatched>,
        wake: &mut Option<f64>,
    ) where
        F: Fn(u64) -> Request,
    {
        let Some(rule) = self.limits.batching else {
            return;
        };
        let mut rest = VecDeque::new();
        let mut end = first.offset + first.size;
        while (rest.len() as u64) + 1 < u64::from(rule.max_requests) {
            let next = match self.scheduler.dequeue(now) {
                Dequeue::Ready(next) => next,
                Dequeue::Future(t) => {
                    self.wake_for(t, wake);
                    break;
                }
                Dequeue::Empty => break,
            };
            let r = request(next.id);
            let level = self.scheduler.level(next.workload);
            let continues = r.write && rule.continues(end, r.offset).is_some();
            let room = self.bytes[1] + r.size <= self.limits.max_write_bytes
                && self.level_allows(level, r.size, next.cost);
            if !(continues && room) {
                self.staged = Some(next);
                self.staged_level = (next.id, level);
                self.staged_waits_for_room = true;
                break;
            }
            if self.limits.by_level() {
                self.levels.push((next.id, level, r.size, next.cost));
            }
            self.bytes[1] += r.size;
            rest.push_back(next.id);
            out.push(Dispatched { item: next, batched: true });
            end = r.offset + r.size;
        }
        if !rest.is_empty() {
            self.batches.push(Batch { current: head, rest });
        }
    }

    /// The member of `finished`'s batch to write next, if any (the batch ends with it).
    fn next_in_batch(&mut self, finished: u64) -> Option<u64> {
        let at = self.batches.iter().position(|b| b.current == finished)?;
        let batch = &mut self.batches[at];
        let next = batch.rest.pop_front();
        match next {
            Some(id) if !batch.rest.is_empty() => batch.current = id,
            _ => {
                self.batches.swap_remove(at);
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{Fifo, LimitMode, Priority};

    /// Requests by id: `(write, size, offset)`.
    fn table(rows: &[(bool, f64, f64)]) -> impl Fn(u64) -> Request + '_ {
        move |id| {
            let (write, size, offset) = rows[id as usize];
            Request { write, size, offset }
        }
    }

    fn ids(out: &[Dispatched]) -> Vec<(u64, bool)> {
        out.iter().map(|d| (d.item.id, d.batched)).collect()
    }

    fn fifo(limits: Limits) -> Dispatcher {
        Dispatcher::new(limits, Box::new(Fifo::new())).unwrap()
    }

    #[test]
    fn dispatch_keeps_mpl_per_operation() {
        let rows = [(false, 1.0, 0.0), (false, 1.0, 0.0), (true, 1.0, 0.0), (false, 1.0, 0.0)];
        let mut d = fifo(Limits { read_mpl: 2, ..Limits::default() });
        for id in 0..4 {
            d.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        let mut out = Vec::new();
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), None);
        // two reads; then no read slot is free, so the scheduler is not asked (its next choice
        // could be a read, and a choice is final)
        assert_eq!(ids(&out), vec![(0, false), (1, false)]);
        assert_eq!((d.slots_in_service(), d.queued()), (2, 2));
        out.clear();
        assert_eq!(d.complete(0, table(&rows)(0)), None);
        d.dispatch(1.0, table(&rows), &mut out);
        // the write takes its own slot beside the read; no write slot is left
        assert_eq!(ids(&out), vec![(2, false)]);
        out.clear();
        assert_eq!(d.complete(2, table(&rows)(2)), None);
        d.dispatch(2.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(3, false)]);
        assert_eq!((d.slots_in_service(), d.queued()), (2, 0));
    }

    #[test]
    fn dispatch_byte_limit_admits_one_large_request_and_holds_the_line() {
        let rows = [(false, 10.0, 0.0), (false, 1.0, 0.0), (false, 1.0, 0.0)];
        let limits = Limits { read_mpl: 8, max_read_bytes: 4.0, ..Limits::default() };
        let mut d = fifo(limits);
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        // the large request runs alone (one is always allowed); nothing joins over the limit
        assert_eq!(ids(&out), vec![(0, false)]);
        out.clear();
        d.complete(0, table(&rows)(0));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(1, false), (2, false)]);
    }

    #[test]
    fn dispatch_holds_low_priority_while_high_is_in_service() {
        // workload 0 is more important; one low request may share with it
        let rows = [(false, 1.0, 0.0), (false, 1.0, 0.0), (false, 1.0, 0.0), (false, 1.0, 0.0)];
        let sched = Priority::new(vec![1, 0], vec![vec![], vec![]], LimitMode::Shaping).unwrap();
        let limits = Limits { read_mpl: 4, low_priority_mpl: 1, ..Limits::default() };
        let mut d = Dispatcher::new(limits, Box::new(sched)).unwrap();
        d.enqueue(Item::new(0, 0, 1.0), 0.0);
        d.enqueue(Item::new(1, 1, 1.0), 0.0);
        d.enqueue(Item::new(2, 1, 1.0), 0.0);
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false), (1, false)]);
        out.clear();
        // the high request leaves: the low ones are no longer held back
        d.complete(0, table(&rows)(0));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(2, false)]);
        // a later high request is always allowed
        out.clear();
        d.enqueue(Item::new(3, 0, 1.0), 1.0);
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(3, false)]);
    }

    #[test]
    fn dispatch_held_low_request_does_not_block_a_later_high_one() {
        // thesis rule with low_priority_mpl = 0: while the high request is in service the low
        // one stays in its queue (peeked, not taken), so a second high request arriving later
        // goes in at once instead of waiting behind it
        let rows = [(false, 1.0, 0.0); 3];
        let sched = Priority::new(vec![1, 0], vec![vec![], vec![]], LimitMode::Shaping).unwrap();
        let limits = Limits { read_mpl: 4, low_priority_mpl: 0, ..Limits::default() };
        let mut d = Dispatcher::new(limits, Box::new(sched)).unwrap();
        d.enqueue(Item::new(0, 0, 1.0), 0.0);
        d.enqueue(Item::new(1, 1, 1.0), 0.0);
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false)]);
        assert_eq!(d.queued(), 1);
        out.clear();
        d.enqueue(Item::new(2, 0, 1.0), 0.5);
        d.dispatch(0.5, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(2, false)]);
        out.clear();
        d.complete(0, table(&rows)(0));
        d.complete(2, table(&rows)(2));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(1, false)]);
    }

    #[test]
    fn dispatch_caps_low_priority_work_in_service() {
        // workload 0 is the top level; workloads 1 and 2 below it share a budget of 2.5 s of
        // work in service: two requests of 1 s go in, the third waits; the top level does not
        // count and is never held
        let rows = [(false, 1.0, 0.0); 5];
        let sched = Priority::new(vec![2, 1, 0], vec![vec![]; 3], LimitMode::Shaping).unwrap();
        let limits = Limits { read_mpl: 8, low_priority_work: 2.5, ..Limits::default() };
        let mut d = Dispatcher::new(limits, Box::new(sched)).unwrap();
        d.enqueue(Item::new(0, 1, 1.0), 0.0);
        d.enqueue(Item::new(1, 2, 1.0), 0.0);
        d.enqueue(Item::new(2, 1, 1.0), 0.0);
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false), (2, false)]);
        out.clear();
        d.enqueue(Item::new(3, 0, 1.0), 0.1);
        d.dispatch(0.1, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(3, false)]);
        out.clear();
        d.complete(0, table(&rows)(0));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(1, false)]);
        // one request larger than the budget still runs when nothing below the top is in service
        let sched = Priority::new(vec![1, 0], vec![vec![]; 2], LimitMode::Shaping).unwrap();
        let limits = Limits { read_mpl: 8, low_priority_work: 0.5, ..Limits::default() };
        let mut d = Dispatcher::new(limits, Box::new(sched)).unwrap();
        d.enqueue(Item::new(4, 1, 1.0), 0.0);
        out.clear();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(4, false)]);
    }

    #[test]
    fn dispatch_does_not_choose_without_room() {
        // MPL 1: a more important request arriving while one is in service goes next
        let rows = [(false, 1.0, 0.0), (false, 1.0, 0.0), (false, 1.0, 0.0)];
        let sched = Priority::new(vec![0, 1], vec![vec![], vec![]], LimitMode::Shaping).unwrap();
        let mut d = Dispatcher::new(Limits::default(), Box::new(sched)).unwrap();
        d.enqueue(Item::new(0, 0, 1.0), 0.0);
        d.enqueue(Item::new(1, 0, 1.0), 0.0);
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        d.enqueue(Item::new(2, 1, 1.0), 0.5);
        d.dispatch(0.5, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false)]);
        out.clear();
        d.complete(0, table(&rows)(0));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(2, false)]);
    }

    #[test]
    fn dispatch_batches_sequential_writes_in_one_slot() {
        // writes at 0, 100, 200 (100 B each) continue each other; the one at 900 does not
        let rows =
            [(true, 100.0, 0.0), (true, 100.0, 100.0), (true, 100.0, 200.0), (true, 100.0, 900.0)];
        let batching = Some(WriteBatching { max_requests: 8, gap_bytes: 0.0 });
        let mut d = fifo(Limits { write_mpl: 2, batching, ..Limits::default() });
        for id in 0..4 {
            d.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        // one slot for the batch; the write at 900 takes the second slot
        assert_eq!(ids(&out), vec![(0, false), (1, true), (2, true), (3, false)]);
        assert_eq!(d.slots_in_service(), 2);
        assert_eq!(d.complete(0, table(&rows)(0)), Some(1));
        assert_eq!(d.complete(1, table(&rows)(1)), Some(2));
        assert_eq!(d.complete(2, table(&rows)(2)), None);
        assert_eq!(d.slots_in_service(), 1);
    }

    #[test]
    fn dispatch_batch_size_limit_and_wake() {
        let rows = [(true, 1.0, 0.0), (true, 1.0, 1.0), (true, 1.0, 2.0)];
        let batching = Some(WriteBatching { max_requests: 2, gap_bytes: 0.0 });
        let mut d = fifo(Limits { batching, ..Limits::default() });
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false), (1, true)]);
        assert_eq!(d.queued(), 1);
        // a shaper's wake-up is reported once
        let shaped = Priority::new(vec![0], vec![vec![(0.5, 0.0)]], LimitMode::Shaping).unwrap();
        let mut s =
            Dispatcher::new(Limits { read_mpl: 4, ..Limits::default() }, Box::new(shaped)).unwrap();
        let reads = [(false, 1.0, 0.0), (false, 1.0, 0.0)];
        s.enqueue(Item::new(0, 0, 1.0), 0.0);
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        let mut out = Vec::new();
        let wake = s.dispatch(0.0, table(&reads), &mut out);
        assert_eq!(ids(&out), vec![(0, false)]);
        assert_eq!(wake, Some(2.0));
        assert_eq!(s.dispatch(0.5, table(&reads), &mut out), None, "already pending");
        s.woken();
        assert_eq!(s.dispatch(2.0, table(&reads), &mut out), None);
        assert_eq!(ids(&out), vec![(0, false), (1, false)]);
    }

    #[test]
    fn reconfigure_keeps_what_is_in_service() {
        let rows = [(false, 4096.0, 0.0); 4];
        let req = table(&rows);
        let mut d = fifo(Limits { read_mpl: 2, ..Limits::default() });
        for id in 0..4 {
            d.enqueue(Item::new(id, 0, 0.001), 0.0);
        }
        let mut out = Vec::new();
        d.dispatch(0.0, &req, &mut out);
        assert_eq!(ids(&out), vec![(0, false), (1, false)]);
        // bad limits: refused, nothing changed
        let bad = Limits { read_mpl: 0, ..Limits::default() };
        assert!(d.reconfigure(bad, Box::new(Fifo::new())).is_err());
        assert_eq!(d.queued(), 2);
        // MPL 3 with a new (empty) queue: the caller enqueues 2 and 3 again
        d.reconfigure(Limits { read_mpl: 3, ..Limits::default() }, Box::new(Fifo::new())).unwrap();
        assert_eq!(d.queued(), 0);
        assert_eq!(d.slots_in_service(), 2);
        d.enqueue(Item::new(2, 0, 0.001), 0.0);
        d.enqueue(Item::new(3, 0, 0.001), 0.0);
        out.clear();
        d.dispatch(0.0, &req, &mut out);
        assert_eq!(ids(&out), vec![(2, false)]); // 2 in service already count
        d.complete(0, req(0));
        out.clear();
        d.dispatch(0.0, &req, &mut out);
        assert_eq!(ids(&out), vec![(3, false)]);
    }

    #[test]
    fn dispatch_rejects_bad_limits() {
        assert!(Dispatcher::new(
            Limits { read_mpl: 0, ..Limits::default() },
            Box::new(Fifo::new())
        )
        .is_err());
        let batching = Some(WriteBatching { max_requests: 0, gap_bytes: 0.0 });
        assert!(Dispatcher::new(Limits { batching, ..Limits::default() }, Box::new(Fifo::new()))
            .is_err());
    }
}
