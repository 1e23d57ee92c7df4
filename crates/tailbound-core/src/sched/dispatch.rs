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
//! **Per-tenant pacing and depth** ([`TenantLimits`], set at run time with
//! [`Dispatcher::set_tenant_limits`]; PSLO's control module, `docs/pslo.md`). A tenant with a
//! limit passes a gate of its own before its requests reach the scheduler: its requests wait at
//! the gate in arrival order, and the one at the head is let through at its pacing time
//! `T_q = max(T_{q−1} + 1/R̂, arrival)` (PSLO Eq. 3, `R̂` in requests per second; the time is
//! computed when the previous request has passed, so a new rate holds from the next request on)
//! and only while fewer than `depth` of the tenant's requests are past the gate and not
//! completed. A request let through enters the scheduler at that moment, as if it arrived then
//! (one that may pass when it arrives enters at once, in arrival order with everyone else's).
//! [`Dispatcher::dispatch`] asks to be woken at the next pacing time (its `Future(t)`).
//! Counting the requests past the gate, rather than only those the device serves, keeps the
//! scheduler's choice final with any discipline (a request it chose is never held back for its
//! tenant's sake, so nobody else waits behind it); the two counts are equal whenever the
//! device's own limits let requests in as they come (the setting PSLO assumes). Only requests
//! that passed a gate are counted: set a tenant's depth before its traffic starts. A tenant
//! without limits bypasses the gate, and with no limits at all the dispatcher does exactly what
//! it did before (one branch per call).
//!
//! Request identifiers are the caller's; the dispatcher reads each request's operation, size and
//! offset through a closure (`Fn(u64) -> Request`), so the caller keeps its own request table.

use std::collections::{HashMap, VecDeque};

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
    /// Most requests of one level in service at once (`u32::MAX`: no limit). With 1 a level's
    /// requests are served one at a time in the scheduler's order (first come first served
    /// among the level's heads), while the device still shares among levels.
    pub level_mpl: u32,
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
            level_mpl: u32::MAX,
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
            && self.level_mpl >= 1
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
                "dispatch limits: MPLs (level_mpl too) and batch sizes must be >= 1, byte limits positive, \
                 low_priority_bytes, low_priority_work and gap_bytes >= 0; got {self:?}"
            )))
        }
    }

    /// Whether the level rule is in force (the levels in service must be tracked).
    fn by_level(&self) -> bool {
        self.low_priority_mpl != u32::MAX
            || self.low_priority_bytes.is_finite()
            || self.low_priority_work.is_finite()
            || self.level_mpl != u32::MAX
    }
}

/// One tenant's limits at the dispatcher (see the module documentation); `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TenantLimits {
    /// Pacing rate `R̂` in requests per second (positive, finite).
    pub rate: Option<f64>,
    /// Most requests of the tenant past its gate and not completed (at least 1).
    pub depth: Option<u32>,
}

impl TenantLimits {
    /// Check the domains (rate positive and finite, depth at least 1).
    pub fn validate(&self) -> Result<()> {
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err(Error::Field {
                    field: "rate".into(),
                    message: format!(
                        "must be a positive, finite number of requests per second, got {r}"
                    ),
                });
            }
        }
        if self.depth == Some(0) {
            return Err(Error::Field {
                field: "depth".into(),
                message: "must be at least 1".into(),
            });
        }
        Ok(())
    }

    /// Whether any limit is set.
    fn any(&self) -> bool {
        self.rate.is_some() || self.depth.is_some()
    }
}

/// Tenants a dispatcher keeps gates for (indices `0..MAX_GATES`; the gates are a vector by
/// workload, so a stray index must not allocate billions of them).
pub const MAX_GATES: usize = 1 << 16;

/// A tenant's gate: its limits, its requests waiting at the gate, its pacing state.
#[derive(Debug, Default)]
struct Gate {
    limits: TenantLimits,
    /// `(request, arrival time)` waiting at the gate, in arrival order.
    held: VecDeque<(Item, f64)>,
    /// Pacing time of the last request let through (`T_{q−1}`; −∞ before the first).
    last: f64,
    /// Requests let through and not yet completed.
    outstanding: u32,
}

impl Gate {
    fn new() -> Self {
        Self { last: f64::NEG_INFINITY, ..Self::default() }
    }

    /// When the head request may pass by its pacing (`None`: nothing waits or the depth is
    /// full, so only a completion can let it through).
    fn head_time(&self) -> Option<f64> {
        let &(_, arrival) = self.held.front()?;
        if self.limits.depth.is_some_and(|d| self.outstanding >= d) {
            return None;
        }
        Some(match self.limits.rate {
            Some(r) => (self.last + 1.0 / r).max(arrival),
            None => arrival,
        })
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
    /// Per-tenant gates by workload (empty until a tenant's limits are first set).
    gates: Vec<Gate>,
    /// Requests waiting at the gates.
    held: usize,
    /// Requests let through a gate and not completed: id → (workload, dispatched yet).
    passed: HashMap<u64, (u32, bool)>,
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
            gates: Vec::new(),
            held: 0,
            passed: HashMap::new(),
        })
    }

    /// Queue a request arriving at `now` (its `cost` is its work in seconds, its tokens). A
    /// request of a tenant with limits waits at its gate.
    #[inline]
    pub fn enqueue(&mut self, item: Item, now: f64) {
        if !self.gates.is_empty() {
            if let Some(g) = self.gates.get_mut(item.workload as usize) {
                if g.limits.any() || !g.held.is_empty() {
                    g.held.push_back((item, now));
                    if g.held.len() == 1 && g.head_time().is_some_and(|t| t <= now) {
                        self.pass(item.workload as usize, now, now); // its time has come
                    } else {
                        self.held += 1;
                    }
                    return;
                }
            }
        }
        let Item { id, workload, class, cost, deadline } = item;
        self.scheduler.enqueue_fields(id, workload, class, cost, deadline, now);
    }

    /// Requests waiting for dispatch (at the gates included).
    pub fn queued(&self) -> usize {
        self.scheduler.len() + usize::from(self.staged.is_some()) + self.held
    }

    /// Set tenant `workload`'s pacing rate `R̂` (requests per second) and depth at run time
    /// (`None`: unlimited); nobody else's requests move. Requests waiting at its gate take the
    /// new limits at once (the next pacing time is `T_{q−1} + 1/R̂` with the new `R̂`); lifting
    /// both limits lets them through at the next dispatch, in order. The pending wake-up no
    /// longer holds (call `dispatch` next). On an error (a rate ≤ 0 or not finite, a depth of 0)
    /// nothing changed.
    pub fn set_tenant_limits(
        &mut self,
        workload: u32,
        rate: Option<f64>,
        depth: Option<u32>,
    ) -> Result<()> {
        let limits = TenantLimits { rate, depth };
        limits.validate().map_err(|e| match e {
            Error::Field { field, message } => {
                Error::Field { field: format!("tenant {workload}.{field}"), message }
            }
            other => other,
        })?;
        let w = workload as usize;
        if w >= MAX_GATES {
            return Err(Error::Field {
                field: format!("tenant {workload}"),
                message: format!("out of range: at most {MAX_GATES} tenants have limits"),
            });
        }
        if w >= self.gates.len() {
            if !limits.any() {
                return Ok(()); // unlimited already
            }
            self.gates.resize_with(w + 1, Gate::new);
        }
        self.gates[w].limits = limits;
        self.wake_at = f64::INFINITY;
        Ok(())
    }

    /// Tenant `workload`'s limits (unlimited unless set).
    pub fn tenant_limits(&self, workload: u32) -> TenantLimits {
        self.gates.get(workload as usize).map_or_else(TenantLimits::default, |g| g.limits)
    }

    /// Requests of tenant `workload` let through its gate and not completed.
    pub fn tenant_outstanding(&self, workload: u32) -> u32 {
        self.gates.get(workload as usize).map_or(0, |g| g.outstanding)
    }

    /// Requests of tenant `workload` waiting at its gate (held by its pacing or its depth).
    pub fn tenant_held(&self, workload: u32) -> usize {
        self.gates.get(workload as usize).map_or(0, |g| g.held.len())
    }

    /// Let through the gates, in order of their pacing times, every request whose time has
    /// come and whose tenant has depth to spare; ask to be woken at the next pacing time.
    fn open_gates(&mut self, now: f64, wake: &mut Option<f64>) {
        loop {
            let mut first: Option<(f64, usize)> = None;
            for (w, g) in self.gates.iter().enumerate() {
                if let Some(t) = g.head_time() {
                    if first.is_none_or(|(f, _)| t < f) {
                        first = Some((t, w));
                    }
                }
            }
            let Some((t, w)) = first else { return };
            if t > now {
                self.wake_for(t, wake);
                return;
            }
            self.held -= 1;
            self.pass(w, t, now);
        }
    }

    /// Let the head request of tenant `w`'s gate through at `now`, its pacing time being `t`.
    fn pass(&mut self, w: usize, t: f64, now: f64) {
        let g = &mut self.gates[w];
        let Some((item, _)) = g.held.pop_front() else { return };
        g.last = t;
        g.outstanding += 1;
        self.passed.insert(item.id, (item.workload, false));
        let Item { id, workload, class, cost, deadline } = item;
        self.scheduler.enqueue_fields(id, workload, class, cost, deadline, now);
    }

    /// Note that a request let through a gate entered service.
    #[inline]
    fn note_dispatched(&mut self, id: u64) {
        if !self.passed.is_empty() {
            if let Some(entry) = self.passed.get_mut(&id) {
                entry.1 = true;
            }
        }
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
        if self.held > 0 {
            self.open_gates(now, &mut wake);
        }
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
            self.note_dispatched(item.id);
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
        if !self.passed.is_empty() {
            if let Some((w, _)) = self.passed.remove(&id) {
                let g = &mut self.gates[w as usize];
                g.outstanding = g.outstanding.saturating_sub(1);
            }
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

    /// A wake-up scheduled for `now` fired (call `dispatch` next). Unlike [`Self::woken`], a
    /// wake-up that is not the pending one — scheduled before a rate change or a control-hook
    /// change forgot it ([`Self::set_tenant_limits`] and [`Self::set_param`] reset the pending
    /// time) — leaves the pending one in place, so the caller does not schedule it twice. A
    /// caller with an event queue (the simulator) must use this: with `woken`, every such
    /// stale wake-up started a chain of duplicates that never merged again (one more wake-up
    /// per pacing time for each decision of a controller, so the events grew quadratically).
    pub fn woken_at(&mut self, now: f64) {
        if now >= self.wake_at {
            self.wake_at = f64::INFINITY;
        }
    }

    /// Change a scheduler parameter (the control hook); the pending wake-up no longer holds.
    pub fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        self.wake_at = f64::INFINITY;
        self.scheduler.set_param(workload, param)
    }

    /// Replace the limits and the scheduler (a gateway's hot reload). What is in service stays
    /// counted against the new limits (its slots, bytes and levels: a level keeps the number it
    /// was dispatched at) and batches go on; the old scheduler's queue, the staged request
    /// included, is dropped: the caller enqueues every request not yet dispatched again. The
    /// tenants' limits and pacing times stay; the requests waiting at their gates are dropped
    /// too (and enqueued again by the caller), and those let through but not yet dispatched no
    /// longer count against their tenant's depth. On an error (bad limits) nothing changed.
    pub fn reconfigure(&mut self, limits: Limits, scheduler: Box<dyn Scheduler>) -> Result<()> {
        limits.validate()?;
        self.limits = limits;
        self.scheduler = scheduler;
        for g in &mut self.gates {
            g.held.clear();
        }
        self.held = 0;
        let gates = &mut self.gates;
        self.passed.retain(|_, &mut (w, dispatched)| {
            if !dispatched {
                let g = &mut gates[w as usize];
                g.outstanding = g.outstanding.saturating_sub(1);
            }
            dispatched
        });
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
    /// level is the one it is served at (a demoted request is below every level). And the
    /// level's own limit: at most `level_mpl` requests of one level in service.
    fn level_allows(&self, level: i64, size: f64, work: f64) -> bool {
        let l = &self.limits;
        if l.level_mpl != u32::MAX {
            let same = self.levels.iter().filter(|&&(_, lv, _, _)| lv == level).count();
            if same >= l.level_mpl as usize {
                return false;
            }
        }
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
            self.note_dispatched(next.id);
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

    /// A dispatcher with `limits` in front of strict priority over one workload per entry of
    /// `priority` (its level, higher first), without buckets.
    fn priority(priority: &[i64], limits: Limits) -> Dispatcher {
        let buckets = vec![vec![]; priority.len()];
        let sched = Priority::new(priority.to_vec(), buckets, LimitMode::Shaping).unwrap();
        Dispatcher::new(limits, Box::new(sched)).unwrap()
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
        let limits = Limits { read_mpl: 4, low_priority_mpl: 1, ..Limits::default() };
        let mut d = priority(&[1, 0], limits);
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
        let limits = Limits { read_mpl: 4, low_priority_mpl: 0, ..Limits::default() };
        let mut d = priority(&[1, 0], limits);
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
    fn dispatch_serves_a_level_one_request_at_a_time() {
        // level_mpl 1: workloads 0 and 1 share the lower level, workload 2 is above it. Of the
        // lower level only the first arrival enters service; the second stays in its queue
        // (peeked, not taken), so a more important request arriving later still enters at once;
        // the second enters when the first completes
        let rows = [(false, 1.0, 0.0); 4];
        let limits = Limits { read_mpl: 8, level_mpl: 1, ..Limits::default() };
        let mut d = priority(&[0, 0, 1], limits);
        d.enqueue(Item::new(0, 0, 1.0), 0.0);
        d.enqueue(Item::new(1, 1, 1.0), 0.1);
        let mut out = Vec::new();
        d.dispatch(0.1, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(0, false)]);
        assert_eq!(d.queued(), 1);
        out.clear();
        d.enqueue(Item::new(2, 2, 1.0), 0.2);
        d.dispatch(0.2, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(2, false)]);
        out.clear();
        d.complete(0, table(&rows)(0));
        d.dispatch(1.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(1, false)]);
        // level_mpl 0 is refused, naming the field
        let sched = Priority::new(vec![0], vec![vec![]], LimitMode::Shaping).unwrap();
        let bad = Limits { level_mpl: 0, ..Limits::default() };
        let err = Dispatcher::new(bad, Box::new(sched)).err().unwrap().to_string();
        assert!(err.contains("level_mpl"), "{err}");
    }

    #[test]
    fn dispatch_caps_low_priority_work_in_service() {
        // workload 0 is the top level; workloads 1 and 2 below it share a budget of 2.5 s of
        // work in service: two requests of 1 s go in, the third waits; the top level does not
        // count and is never held
        let rows = [(false, 1.0, 0.0); 5];
        let limits = Limits { read_mpl: 8, low_priority_work: 2.5, ..Limits::default() };
        let mut d = priority(&[2, 1, 0], limits);
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
        let limits = Limits { read_mpl: 8, low_priority_work: 0.5, ..Limits::default() };
        let mut d = priority(&[1, 0], limits);
        d.enqueue(Item::new(4, 1, 1.0), 0.0);
        out.clear();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(4, false)]);
    }

    #[test]
    fn dispatch_does_not_choose_without_room() {
        // MPL 1: a more important request arriving while one is in service goes next
        let rows = [(false, 1.0, 0.0), (false, 1.0, 0.0), (false, 1.0, 0.0)];
        let mut d = priority(&[0, 1], Limits::default());
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

    fn wide() -> Dispatcher {
        fifo(Limits { read_mpl: 16, ..Limits::default() })
    }

    #[test]
    fn pacing_lets_requests_through_at_their_times() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = wide();
        d.set_tenant_limits(0, Some(10.0), None).unwrap();
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 0.001), 0.0);
        }
        let mut out = Vec::new();
        // T_0 = max(-inf, 0) = 0; T_1 = T_0 + 1/10 = 0.1: the dispatcher asks for a wake-up
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), Some(0.1));
        assert_eq!(ids(&out), vec![(0, false)]);
        assert_eq!(d.queued(), 2);
        assert_eq!(d.dispatch(0.05, table(&rows), &mut out), None, "already pending");
        d.woken();
        assert_eq!(d.dispatch(0.1, table(&rows), &mut out), Some(0.2));
        assert_eq!(ids(&out), vec![(0, false), (1, false)]);
        // a late arrival: T_3 = max(T_2 + 0.1, 0.5) = 0.5, not 0.3
        d.woken();
        d.dispatch(0.2, table(&rows), &mut out);
        d.enqueue(Item::new(3, 0, 0.001), 0.5);
        d.woken();
        assert_eq!(d.dispatch(0.5, table(&rows), &mut out), None);
        assert_eq!(ids(&out).last(), Some(&(3, false)));
    }

    #[test]
    fn a_stale_wake_up_does_not_duplicate_the_pending_one() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = wide();
        d.set_tenant_limits(0, Some(10.0), None).unwrap();
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 0.001), 0.0);
        }
        let mut out = Vec::new();
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), Some(0.1)); // the caller schedules
                                                                        // a new rate forgets the pending wake-up: the caller schedules 0.1 a second time
        d.set_tenant_limits(0, Some(10.0), None).unwrap();
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), Some(0.1));
        // the first wake-up at 0.1 is the pending one: 0.2 is asked for (and scheduled)
        d.woken_at(0.1);
        assert_eq!(d.dispatch(0.1, table(&rows), &mut out), Some(0.2));
        // the duplicate at 0.1 is stale: 0.2 is pending already, not asked for again (with
        // `woken` it would be, and every later pacing time would get two wake-ups)
        d.woken_at(0.1);
        assert_eq!(d.dispatch(0.1, table(&rows), &mut out), None);
        d.woken_at(0.2);
        assert_eq!(d.dispatch(0.2, table(&rows), &mut out), None, "the gate is empty");
        assert_eq!(ids(&out), vec![(0, false), (1, false), (2, false)]);
    }

    #[test]
    fn depth_holds_one_tenant_only() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = wide();
        d.set_tenant_limits(0, None, Some(1)).unwrap();
        d.enqueue(Item::new(0, 0, 0.001), 0.0);
        d.enqueue(Item::new(1, 0, 0.001), 0.0);
        d.enqueue(Item::new(2, 1, 0.001), 0.0);
        d.enqueue(Item::new(3, 1, 0.001), 0.0);
        let mut out = Vec::new();
        // no wake-up: only a completion can let request 1 through
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), None);
        assert_eq!(ids(&out), vec![(0, false), (2, false), (3, false)]);
        assert_eq!(d.tenant_outstanding(0), 1);
        d.complete(2, table(&rows)(2));
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(out.len(), 3, "another tenant's completion frees nothing of tenant 0");
        d.complete(0, table(&rows)(0));
        assert_eq!(d.tenant_outstanding(0), 0);
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out).last(), Some(&(1, false)));
        assert_eq!(d.tenant_outstanding(0), 1);
    }

    #[test]
    fn limits_change_at_run_time() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = wide();
        d.set_tenant_limits(0, Some(1.0), Some(1)).unwrap();
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 0.001), 0.0);
        }
        let mut out = Vec::new();
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), None, "depth full: no wake-up");
        d.complete(0, table(&rows)(0));
        // depth free, pacing time T_1 = 0 + 1/1 = 1.0
        assert_eq!(d.dispatch(0.2, table(&rows), &mut out), Some(1.0));
        // a faster rate holds at once: T_1 = 0 + 1/4 = 0.25 (the pending wake-up is dropped)
        d.set_tenant_limits(0, Some(4.0), Some(1)).unwrap();
        assert_eq!(d.dispatch(0.2, table(&rows), &mut out), Some(0.25));
        // lifting both limits lets everything through, in order
        d.set_tenant_limits(0, None, None).unwrap();
        assert_eq!(d.dispatch(0.2, table(&rows), &mut out), None);
        assert_eq!(ids(&out), vec![(0, false), (1, false), (2, false)]);
        assert_eq!(d.tenant_limits(0), TenantLimits::default());
        assert_eq!(d.queued(), 0);
    }

    #[test]
    fn gates_release_in_pacing_order_across_tenants() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = wide();
        d.set_tenant_limits(0, Some(2.0), None).unwrap(); // 0.5 s apart
        d.set_tenant_limits(1, Some(5.0), None).unwrap(); // 0.2 s apart
        for (id, w) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
            d.enqueue(Item::new(id, w, 0.001), 0.0);
        }
        let mut out = Vec::new();
        assert_eq!(d.dispatch(0.0, table(&rows), &mut out), Some(0.2));
        assert_eq!(ids(&out), vec![(0, false), (2, false)]);
        d.woken();
        assert_eq!(d.dispatch(0.2, table(&rows), &mut out), Some(0.5));
        d.woken();
        // both due by 0.6: released in pacing-time order (3 at 0.2 went already, 1 at 0.5)
        assert_eq!(d.dispatch(0.6, table(&rows), &mut out), None);
        assert_eq!(ids(&out), vec![(0, false), (2, false), (3, false), (1, false)]);
    }

    #[test]
    fn tenant_limits_refuse_bad_values_naming_the_field() {
        let mut d = wide();
        let e = d.set_tenant_limits(3, Some(0.0), None).unwrap_err();
        assert!(e.to_string().contains("tenant 3.rate"), "{e}");
        let e = d.set_tenant_limits(3, Some(f64::INFINITY), None).unwrap_err();
        assert!(e.to_string().contains("tenant 3.rate"), "{e}");
        let e = d.set_tenant_limits(u32::MAX, Some(1.0), None).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = d.set_tenant_limits(3, None, Some(0)).unwrap_err();
        assert!(e.to_string().contains("tenant 3.depth"), "{e}");
        assert_eq!(d.tenant_limits(3), TenantLimits::default());
    }

    #[test]
    fn reconfigure_drops_the_gates_queues_but_keeps_limits() {
        let rows = [(false, 1.0, 0.0); 4];
        let mut d = fifo(Limits { read_mpl: 1, ..Limits::default() });
        d.set_tenant_limits(0, None, Some(2)).unwrap();
        for id in 0..3 {
            d.enqueue(Item::new(id, 0, 0.001), 0.0);
        }
        let mut out = Vec::new();
        d.dispatch(0.0, table(&rows), &mut out);
        // 0 in service, 1 past the gate in the scheduler (MPL 1), 2 at the gate
        assert_eq!((ids(&out), d.tenant_outstanding(0), d.queued()), (vec![(0, false)], 2, 2));
        d.reconfigure(Limits { read_mpl: 4, ..Limits::default() }, Box::new(Fifo::new())).unwrap();
        assert_eq!((d.tenant_outstanding(0), d.queued()), (1, 0));
        assert_eq!(d.tenant_limits(0).depth, Some(2));
        d.enqueue(Item::new(1, 0, 0.001), 0.0);
        d.enqueue(Item::new(2, 0, 0.001), 0.0);
        out.clear();
        d.dispatch(0.0, table(&rows), &mut out);
        assert_eq!(ids(&out), vec![(1, false)], "depth 2 with 0 in service");
    }

    /// A caller driven only by completions and the wake-ups `dispatch` asks for (as the
    /// simulator and the gateway are) never stalls: every request of a paced, depth-limited
    /// tenant is dispatched, at or after its pacing time, never more than its depth at once,
    /// while an unlimited tenant is served as it comes.
    #[test]
    fn wake_ups_alone_drive_a_paced_tenant_to_the_end() {
        let rows = [(false, 1.0, 0.0); 100];
        let req = table(&rows);
        let mut d = fifo(Limits { read_mpl: 4, ..Limits::default() });
        d.set_tenant_limits(0, Some(100.0), Some(2)).unwrap();
        for id in 0..100u64 {
            d.enqueue(Item::new(id, u32::from(id % 2 == 1), 0.001), 0.0);
        }
        let service = 0.025; // longer than 1/R: the depth binds too
        let mut events: Vec<(f64, Option<u64>)> = vec![(0.0, None)]; // (time, completion of)
        let mut started: Vec<(u64, f64)> = Vec::new();
        let mut out = Vec::new();
        let mut in_service_0 = 0u32;
        while let Some(at) = (0..events.len()).min_by(|&a, &b| events[a].0.total_cmp(&events[b].0))
        {
            let (now, done) = events.swap_remove(at);
            match done {
                Some(id) => {
                    d.complete(id, req(id));
                    in_service_0 -= u32::from(id % 2 == 0);
                }
                None => d.woken(),
            }
            out.clear();
            if let Some(t) = d.dispatch(now, &req, &mut out) {
                assert!(t > now);
                events.push((t, None));
            }
            for x in &out {
                started.push((x.item.id, now));
                in_service_0 += u32::from(x.item.workload == 0);
                assert!(in_service_0 <= 2, "depth 2 exceeded at {now}");
                events.push((now + service, Some(x.item.id)));
            }
        }
        assert_eq!(started.len(), 100, "every request dispatched");
        let paced: Vec<f64> =
            started.iter().filter(|(id, _)| id % 2 == 0).map(|&(_, t)| t).collect();
        // all arrived at 0: T_q = q / R (Eq. 3), a lower bound on the dispatch (the request
        // then waits its turn in the scheduler: here behind the unlimited tenant's)
        assert!(paced.iter().enumerate().all(|(q, &t)| t >= q as f64 * 0.01 - 1e-12), "{paced:?}");
        // the unlimited tenant's 50 requests took the free slots from the start
        let free: Vec<f64> =
            started.iter().filter(|(id, _)| id % 2 == 1).map(|&(_, t)| t).collect();
        assert_eq!(free[0], 0.0);
        assert!(free[49] < paced[49], "the unlimited tenant is not held behind the paced one");
    }
}
