//! The simulation: routes requests through links and devices on the event kernel.
//!
//! A request passes the stages of its workload's route in order. A network stage cuts the message
//! (`cost` bytes) into packets of at most `mtu` bytes, queues up to [`SEND_WINDOW_PACKETS`] of
//! them at the first link (the next one each time one of them leaves that link's queue, as a
//! sender's window would, so that one huge message does not hold all its packets in memory at
//! once), and forwards each packet hop by hop as it arrives (store and forward per packet); the
//! stage ends when the last packet reaches the end of the last link. A device stage queues the request at the
//! device's dispatcher and ends when the device has served it (plus its base latency).
//!
//! `run(until)` processes every event up to `until` and returns, so a control policy can read the
//! records, change scheduler parameters with `set_param` and continue (the periodic control hook).

use super::control::LimitChange;
use super::device::{Columns, Device, Next};
use super::kernel::{Kernel, Urgency};
use super::link::{Link, Start};
use super::results::Records;
use super::topology::{StageRoute, Topology};
use super::workload::{Issue, Requests, WorkloadSpec};
use crate::error::{Error, Result};
use crate::sched::dispatch::TenantLimits;
use crate::sched::{Item, Param, NO_CLASS, NO_DEADLINE};

/// Packet index bits in a packet identifier `(request << PACKET_BITS) | packet`.
const PACKET_BITS: u32 = 24;

/// Most packets of one message (one network stage of one request): `2^24 − 1`, 25 GB at the
/// default MTU of 1500 bytes. A longer message is refused by [`Simulation::new`].
pub const MAX_PACKETS_PER_MESSAGE: u64 = (1 << PACKET_BITS) - 1;

/// Most packet transmissions (packets × links crossed, over every request) of one run: 10^10,
/// about half an hour of simulation on one core. A larger run is refused by
/// [`Simulation::new`]; split the trace or raise the MTU.
pub const MAX_PACKET_HOPS_PER_RUN: f64 = 1e10;

/// Most packets of one message queued at its first link at once; the next one is queued each
/// time one leaves that link's queue. Messages up to this size (1.5 MB at an MTU of 1500
/// bytes) are queued whole, as before the window existed.
pub const SEND_WINDOW_PACKETS: u64 = 1024;

/// A queue of the system, for the control hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// The output queue of link `i`.
    Link(u32),
    /// The dispatcher of device `i`.
    Device(u32),
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Issue { request: u32 },
    LinkDone { link: u32 },
    PacketArrive { link: u32, packet: u64 },
    DeviceDone { device: u32, generation: u64 },
    DeviceExit { request: u32 },
    Wake { queue: Queue },
}

struct WorkloadState {
    spec: WorkloadSpec,
    first: usize,
    end: usize,
    next_issue: usize,
}

/// A configured simulation.
pub struct Simulation {
    kernel: Kernel<Event>,
    mtu: f64,
    links: Vec<Link>,
    devices: Vec<Device>,
    workloads: Vec<WorkloadState>,
    workload_of: Vec<u32>,
    arrival: Vec<f64>,
    op: Vec<u8>,
    size: Vec<f64>,
    offset: Vec<f64>,
    /// Whether any request has a class or a deadline of its own (else `class` and `deadline`
    /// are empty and items are built without reading them).
    tagged: bool,
    /// Each request's own class (`NO_CLASS`: none).
    class: Vec<u32>,
    /// Each request's own deadline relative to its issue (`NO_DEADLINE`: none).
    deadline: Vec<f64>,
    cost: Vec<f64>,
    stage: Vec<u8>,
    packets_left: Vec<u32>,
    packets_queued: Vec<u32>,
    records: Records,
    done: Vec<u64>,
}

impl Simulation {
    /// Build a simulation of `topology` replaying `requests[w]` for each workload `specs[w]`.
    pub fn new(
        topology: &Topology,
        specs: Vec<WorkloadSpec>,
        requests: Vec<Requests>,
    ) -> Result<Self> {
        topology.validate()?;
        if specs.len() != requests.len() {
            return Err(Error::Invalid(format!(
                "{} workload specs but {} request sets",
                specs.len(),
                requests.len()
            )));
        }
        let nw = specs.len();
        let links = topology.links.iter().map(|l| Link::new(l, nw)).collect::<Result<Vec<_>>>()?;
        let devices = topology
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| Device::new(d, nw, i))
            .collect::<Result<Vec<_>>>()?;
        let stages = specs.iter().map(|s| s.route.len()).max().unwrap_or(0).max(1);
        if stages > usize::from(u8::MAX) {
            return Err(Error::Invalid(format!("routes of {stages} stages are too long")));
        }
        let total: usize = requests.iter().map(Requests::len).sum();
        if total >= (1usize << (64 - PACKET_BITS)).min(u32::MAX as usize) {
            return Err(Error::Invalid(format!("{total} requests are too many for one run")));
        }
        let tagged = requests.iter().any(|r| !r.class.is_empty() || !r.deadline.is_empty());
        let tags = if tagged { total } else { 0 };
        let mut sim = Simulation {
            kernel: Kernel::new(),
            mtu: topology.mtu,
            links,
            devices,
            workloads: Vec::with_capacity(nw),
            workload_of: Vec::with_capacity(total),
            arrival: Vec::with_capacity(total),
            op: Vec::with_capacity(total),
            size: Vec::with_capacity(total),
            offset: Vec::with_capacity(total),
            tagged,
            class: Vec::with_capacity(tags),
            deadline: Vec::with_capacity(tags),
            cost: vec![0.0; total * stages],
            stage: vec![0; total],
            packets_left: vec![0; total],
            packets_queued: vec![0; total],
            records: Records::new(total, stages),
            done: Vec::new(),
        };
        let mut hops = 0.0;
        for (w, (spec, reqs)) in specs.into_iter().zip(requests).enumerate() {
            topology.check_route(&spec.route)?;
            reqs.validate(spec.route.len(), &w.to_string())?;
            check_classes(topology, &spec.route, &reqs.class, w)?;
            if let Issue::Closed { outstanding: 0 } = spec.issue {
                return Err(Error::Invalid(format!("workload {w}: outstanding must be >= 1")));
            }
            let first = sim.arrival.len();
            for (s, costs) in reqs.cost.iter().enumerate() {
                for (i, &c) in costs.iter().enumerate() {
                    sim.cost[(first + i) * stages + s] = c;
                }
            }
            sim.workload_of.extend(std::iter::repeat_n(w as u32, reqs.len()));
            sim.arrival.extend_from_slice(&reqs.arrival);
            sim.op.extend_from_slice(&reqs.op);
            sim.size.extend_from_slice(&reqs.size);
            if reqs.offset.is_empty() {
                sim.offset.extend(std::iter::repeat_n(f64::NAN, reqs.len()));
            } else {
                sim.offset.extend_from_slice(&reqs.offset);
            }
            if tagged && reqs.class.is_empty() {
                sim.class.extend(std::iter::repeat_n(NO_CLASS, reqs.len()));
            } else {
                sim.class.extend_from_slice(&reqs.class);
            }
            if tagged && reqs.deadline.is_empty() {
                sim.deadline.extend(std::iter::repeat_n(NO_DEADLINE, reqs.len()));
            } else {
                sim.deadline.extend_from_slice(&reqs.deadline);
            }
            let end = sim.arrival.len();
            hops += check_messages(&spec.route, &reqs.cost, topology.mtu, w)?;
            if hops > MAX_PACKET_HOPS_PER_RUN {
                return Err(Error::Invalid(format!(
                    "the run needs more than {MAX_PACKET_HOPS_PER_RUN:e} packet transmissions \
                     (packets times links crossed, by workload {w} already); split the trace or \
                     raise the MTU"
                )));
            }
            sim.workloads.push(WorkloadState { spec, first, end, next_issue: first });
        }
        for w in 0..nw {
            sim.start_workload(w);
        }
        Ok(sim)
    }

    fn start_workload(&mut self, w: usize) {
        let state = &self.workloads[w];
        if state.first == state.end {
            return;
        }
        let t0 = self.arrival[state.first];
        let initial = match state.spec.issue {
            Issue::Open => 1,
            Issue::Closed { outstanding } => outstanding as usize,
        };
        let count = initial.min(state.end - state.first);
        for r in state.first..state.first + count {
            self.kernel.schedule(t0, Urgency::Issue, Event::Issue { request: r as u32 });
        }
        self.workloads[w].next_issue = state.first + count;
    }

    /// Process every event due at or before `until` (may be `f64::INFINITY`); returns the number
    /// of events processed by this call.
    pub fn run(&mut self, until: f64) -> u64 {
        let before = self.kernel.processed();
        while let Some(event) = self.kernel.step(until) {
            self.handle(event);
        }
        if until.is_finite() {
            self.kernel.advance_to(until);
        }
        self.kernel.processed() - before
    }

    /// The simulated time.
    pub fn now(&self) -> f64 {
        self.kernel.now()
    }

    /// Events processed since the start.
    pub fn events(&self) -> u64 {
        self.kernel.processed()
    }

    /// Packets waiting in link `l`'s queue (not counting the one on the wire).
    pub fn link_queued(&self, l: u32) -> usize {
        self.links[l as usize].queued()
    }

    /// The records so far.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// Number of workloads.
    pub fn workload_count(&self) -> usize {
        self.workloads.len()
    }

    /// Index range of workload `w`'s requests in the records.
    pub fn workload_range(&self, w: usize) -> std::ops::Range<usize> {
        self.workloads[w].first..self.workloads[w].end
    }

    /// The control hook: change `workload`'s parameter at `queue`, effective now.
    pub fn set_param(&mut self, queue: Queue, workload: u32, param: Param) -> Result<()> {
        if workload as usize >= self.workloads.len() {
            return Err(Error::Invalid(format!("workload {workload} does not exist")));
        }
        match queue {
            Queue::Link(l) => self.link_mut(l)?.set_param(workload, param)?,
            Queue::Device(d) => self.device_mut(d)?.set_param(workload, param)?,
        }
        // a new parameter can make waiting items eligible sooner than a pending wake-up
        self.handle(Event::Wake { queue });
        Ok(())
    }

    /// Set `workload`'s pacing rate and depth at device `d`'s dispatcher (`None`: unlimited),
    /// effective now (`Dispatcher::set_tenant_limits`; set them before the tenant's traffic
    /// starts, as a device's controller does).
    pub fn set_tenant_limits(&mut self, d: u32, workload: u32, limits: TenantLimits) -> Result<()> {
        if workload as usize >= self.workloads.len() {
            return Err(Error::Invalid(format!("workload {workload} does not exist")));
        }
        self.device_mut(d)?.set_tenant_limits(workload, limits)?;
        self.handle(Event::Wake { queue: Queue::Device(d) });
        Ok(())
    }

    /// `workload`'s pacing rate and depth at device `d` now.
    pub fn tenant_limits(&self, d: u32, workload: u32) -> Result<TenantLimits> {
        let device = self.devices.get(d as usize).ok_or_else(|| no_device(d))?;
        Ok(device.tenant_limits(workload))
    }

    /// The limits device `d`'s controller applied so far, in order (empty without one).
    pub fn control_log(&self, d: u32) -> Result<&[LimitChange]> {
        Ok(self.devices.get(d as usize).ok_or_else(|| no_device(d))?.control_log())
    }

    fn link_mut(&mut self, l: u32) -> Result<&mut Link> {
        self.links.get_mut(l as usize).ok_or_else(|| Error::Invalid(format!("no link {l}")))
    }

    fn device_mut(&mut self, d: u32) -> Result<&mut Device> {
        self.devices.get_mut(d as usize).ok_or_else(|| no_device(d))
    }

    fn handle(&mut self, event: Event) {
        let now = self.kernel.now();
        match event {
            Event::Issue { request } => self.issue(request as usize, now),
            Event::LinkDone { link } => {
                let item = self.links[link as usize].finish();
                self.refill_window(link, item.id, now);
                let prop = self.links[link as usize].propagation;
                if prop > 0.0 {
                    let ev = Event::PacketArrive { link, packet: item.id };
                    self.kernel.schedule(now + prop, Urgency::Arrival, ev);
                } else {
                    self.packet_arrived(link, item.id, now);
                }
                self.serve_link(link, now);
            }
            Event::PacketArrive { link, packet } => self.packet_arrived(link, packet, now),
            Event::DeviceDone { device, generation } => {
                let mut done = std::mem::take(&mut self.done);
                let next = self.devices[device as usize].complete(
                    generation,
                    now,
                    Columns { op: &self.op, size: &self.size, offset: &self.offset },
                    &mut done,
                );
                self.follow_device(device, next);
                let base = self.devices[device as usize].base_latency();
                for id in done.drain(..) {
                    if base > 0.0 {
                        let ev = Event::DeviceExit { request: id as u32 };
                        self.kernel.schedule(now + base, Urgency::Completion, ev);
                    } else {
                        self.stage_done(id as usize, now);
                    }
                }
                self.done = done;
            }
            Event::DeviceExit { request } => self.stage_done(request as usize, now),
            Event::Wake { queue: Queue::Link(l) } => {
                self.links[l as usize].woken();
                self.serve_link(l, now);
            }
            Event::Wake { queue: Queue::Device(d) } => {
                let next = self.devices[d as usize]
                    .woken(now, Columns { op: &self.op, size: &self.size, offset: &self.offset });
                self.follow_device(d, next);
            }
        }
    }

    fn issue(&mut self, r: usize, now: f64) {
        self.records.issue[r] = now;
        let w = self.workload_of[r] as usize;
        if self.workloads[w].spec.issue == Issue::Open {
            let next = r + 1;
            if next < self.workloads[w].end {
                self.workloads[w].next_issue = next + 1;
                let ev = Event::Issue { request: next as u32 };
                self.kernel.schedule(self.arrival[next], Urgency::Issue, ev);
            }
        }
        self.start_stage(r, 0, now);
    }

    fn start_stage(&mut self, r: usize, s: usize, now: f64) {
        let w = self.workload_of[r] as usize;
        let route = &self.workloads[w].spec.route;
        if s == route.len() {
            return self.complete(r, now);
        }
        self.stage[r] = s as u8;
        let cost = self.cost[r * self.records.stages + s];
        match &route[s] {
            StageRoute::Net(links) => {
                let Some(&first) = links.first() else {
                    return self.stage_done(r, now);
                };
                let packets = packet_count(cost, self.mtu);
                self.packets_left[r] = packets as u32;
                let window = packets.min(SEND_WINDOW_PACKETS);
                self.packets_queued[r] = window as u32;
                let item = self.item(r);
                let link = &mut self.links[first as usize];
                for k in 0..window {
                    let bytes = packet_bytes(cost, self.mtu, k, packets);
                    link.enqueue(Item { id: ((r as u64) << PACKET_BITS) | k, ..item }, bytes, now);
                }
                self.serve_link(first, now);
            }
            &StageRoute::Device(d) => {
                let item = Item { cost, ..self.item(r) };
                self.devices[d as usize].enqueue(item, now);
                let next = self.devices[d as usize].dispatch(
                    now,
                    Columns { op: &self.op, size: &self.size, offset: &self.offset },
                );
                self.follow_device(d, next);
            }
        }
    }

    /// Request `r`'s item (id `r`, cost 0: the queue's to set) with its tags.
    #[inline]
    fn item(&self, r: usize) -> Item {
        let item = Item::new(r as u64, self.workload_of[r], 0.0);
        if !self.tagged {
            return item;
        }
        let deadline = self.records.issue[r] + self.deadline[r];
        item.with_class(self.class[r]).with_deadline(deadline)
    }

    fn serve_link(&mut self, l: u32, now: f64) {
        match self.links[l as usize].try_start(now) {
            Start::Sending { done, .. } => {
                self.kernel.schedule(done, Urgency::Completion, Event::LinkDone { link: l })
            }
            Start::WakeAt(t) => {
                self.kernel.schedule(t, Urgency::Wake, Event::Wake { queue: Queue::Link(l) })
            }
            Start::Idle => {}
        }
    }

    fn follow_device(&mut self, d: u32, next: Next) {
        if let Some((t, generation)) = next.completion {
            let ev = Event::DeviceDone { device: d, generation };
            self.kernel.schedule(t, Urgency::Completion, ev);
        }
        if let Some(t) = next.wake {
            self.kernel.schedule(t, Urgency::Wake, Event::Wake { queue: Queue::Device(d) });
        }
    }

    fn packet_arrived(&mut self, link: u32, packet: u64, now: f64) {
        let r = (packet >> PACKET_BITS) as usize;
        let k = packet & ((1 << PACKET_BITS) - 1);
        let w = self.workload_of[r] as usize;
        let s = usize::from(self.stage[r]);
        let StageRoute::Net(links) = &self.workloads[w].spec.route[s] else {
            unreachable!("a packet belongs to a network stage")
        };
        let hop = links.iter().position(|&l| l == link).expect("packet on its route");
        if let Some(&next) = links.get(hop + 1) {
            let cost = self.cost[r * self.records.stages + s];
            let packets = packet_count(cost, self.mtu);
            let bytes = packet_bytes(cost, self.mtu, k, packets);
            let item = Item { id: packet, ..self.item(r) };
            self.links[next as usize].enqueue(item, bytes, now);
            self.serve_link(next, now);
            return;
        }
        self.packets_left[r] -= 1;
        if self.packets_left[r] == 0 {
            self.stage_done(r, now);
        }
    }

    /// A packet of a message left `link`: if that is the message's first link and packets of it
    /// are still unqueued, queue the next one there (the sender's window slides by one).
    fn refill_window(&mut self, link: u32, packet: u64, now: f64) {
        let r = (packet >> PACKET_BITS) as usize;
        let w = self.workload_of[r] as usize;
        let s = usize::from(self.stage[r]);
        let StageRoute::Net(links) = &self.workloads[w].spec.route[s] else {
            return;
        };
        if links.first() != Some(&link) {
            return;
        }
        let cost = self.cost[r * self.records.stages + s];
        let packets = packet_count(cost, self.mtu);
        let k = u64::from(self.packets_queued[r]);
        if k < packets {
            self.packets_queued[r] += 1;
            let bytes = packet_bytes(cost, self.mtu, k, packets);
            let item = Item { id: ((r as u64) << PACKET_BITS) | k, ..self.item(r) };
            self.links[link as usize].enqueue(item, bytes, now);
        }
    }

    fn stage_done(&mut self, r: usize, now: f64) {
        let s = usize::from(self.stage[r]);
        self.records.exit[r * self.records.stages + s] = now;
        self.start_stage(r, s + 1, now);
    }

    fn complete(&mut self, r: usize, now: f64) {
        let w = self.workload_of[r] as usize;
        if let Issue::Closed { .. } = self.workloads[w].spec.issue {
            let next = self.workloads[w].next_issue;
            if next < self.workloads[w].end {
                self.workloads[w].next_issue = next + 1;
                self.kernel.schedule(now, Urgency::Issue, Event::Issue { request: next as u32 });
            }
        }
    }
}

/// Check workload `w`'s per-request classes against every queue of its route whose kind has
/// classes: each class must be one of them (or `NO_CLASS`).
fn check_classes(topology: &Topology, route: &[StageRoute], class: &[u32], w: usize) -> Result<()> {
    let Some((i, &top)) =
        class.iter().enumerate().filter(|&(_, &c)| c != NO_CLASS).max_by_key(|&(_, &c)| c)
    else {
        return Ok(());
    };
    let queues = route.iter().flat_map(|stage| match stage {
        StageRoute::Net(links) => links
            .iter()
            .map(|&l| (format!("link {l}"), &topology.links[l as usize].scheduler))
            .collect::<Vec<_>>(),
        &StageRoute::Device(d) => {
            vec![(format!("device {d}"), &topology.devices[d as usize].scheduler)]
        }
    });
    for (queue, config) in queues {
        let n = config.classes();
        if n > 0 && top as usize >= n {
            return Err(Error::Invalid(format!(
                "workload {w}: request {i} has class {top}, but the {} scheduler of {queue} \
                 has classes 0..{n}",
                config.kind()
            )));
        }
    }
    Ok(())
}

fn no_device(d: u32) -> Error {
    Error::Invalid(format!("no device {d}"))
}

/// Packets of a message of `bytes` (at least one, also for an empty message).
fn packet_count(bytes: f64, mtu: f64) -> u64 {
    (bytes / mtu).ceil().max(1.0) as u64
}

/// Check that every message of a workload fits in [`MAX_PACKETS_PER_MESSAGE`] packets; returns
/// the workload's packet transmissions (packets times links crossed).
fn check_messages(route: &[StageRoute], cost: &[Vec<f64>], mtu: f64, w: usize) -> Result<f64> {
    let mut hops = 0.0;
    for (s, stage) in route.iter().enumerate() {
        let StageRoute::Net(links) = stage else { continue };
        if links.is_empty() {
            continue;
        }
        let mut packets = 0.0;
        for (i, &bytes) in cost[s].iter().enumerate() {
            let n = (bytes / mtu).ceil().max(1.0);
            if n > MAX_PACKETS_PER_MESSAGE as f64 {
                return Err(Error::Invalid(format!(
                    "workload {w}, request {i}: a message of {bytes} bytes is {n} packets of \
                     {mtu} bytes, more than the {MAX_PACKETS_PER_MESSAGE} one message may have"
                )));
            }
            packets += n;
        }
        hops += packets * links.len() as f64;
    }
    Ok(hops)
}

/// Bytes of packet `k` of a `packets`-packet message of `bytes`: full packets, then the rest.
fn packet_bytes(bytes: f64, mtu: f64, k: u64, packets: u64) -> f64 {
    if k + 1 < packets {
        mtu
    } else {
        bytes - mtu * (packets - 1) as f64
    }
}
