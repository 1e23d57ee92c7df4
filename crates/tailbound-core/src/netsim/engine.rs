//! The packet-level simulation: RPCs issued on channels, packets through WFQ ports of a
//! one-big-switch network, ACKs back, admission control at issue and at the last ACK.
//!
//! **Path** of a packet from host `a` to host `b` (a data packet `src → dst`, its ACK back):
//! `a`'s NIC port when `host_egress`, then the switch's port towards `b`, then `b`'s receiving
//! queue when `receiver_queue` (the authors' default path is the last two). A port serialises
//! a packet in `bytes · 8 / link_rate`; a link port (NIC, switch) adds `propagation_s` after it,
//! the receiving queue does not (it is the host's end of the switch's link); a packet sent
//! without a NIC port reaches the switch `propagation_s` after it leaves the sender. So on an
//! idle network a one-packet RPC of `w` bytes on the wire takes
//! `4·prop + 2·w·8/rate + 2·header·8/rate` from issue to its ACK.
//!
//! **Events** on `sim::kernel` (time, urgency, sequence); the channels' timers in a heap of
//! their own (one entry per channel, popped only when due: most are moved by ACKs first, see
//! `timer`), a timer at the same instant as a kernel event after it. A busy port schedules its
//! next transmission when one is through (`Serve` at completion urgency) only while packets
//! wait; a packet reaching an idle port starts at once when nothing else happens at that
//! instant, else after every arrival of the instant (wake urgency), so packets arriving
//! together compete by finish tag (as the authors' separate `QueueProcessingEvent`). RPCs are
//! issued in input order, one event scheduled at a time.
//!
//! **Channels.** `channels_per_class` channels per `(src, dst, class)` (default 1: the
//! authors' one channel, one RPC FIFO, per triple); an RPC is issued on an idle one, else on
//! the least loaded (`pick_channel`). With 1 the run is the same as without the option.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::channel::{Channel, RpcSpan};
use super::config::{NetConfig, Scheduling};
use super::port::{Port, Queue, WfqPort};
use super::priority_port::{Overflow, SrptPort, StrictPort};
use super::rpcs::{Counters, RpcInput, RpcOutcome};
use super::window::Window;
use crate::control::aequitas::{ClassState, Config as AdmissionConfig};
use crate::error::Result;
use crate::sim::kernel::{Kernel, Urgency};

#[derive(Debug, Clone, Copy)]
enum Event {
    Issue(u32),
    Serve(u32),
    Arrive {
        port: u32,
        pkt: u32,
    },
    Deliver(u32),
    /// QJump: host-class pacer `host · classes + class` may send one packet.
    Epoch(u32),
}

#[derive(Debug, Clone, Copy)]
struct Packet {
    seq: u64,
    sent_at: f64,
    chan: u32,
    bytes: u32,
    /// The RPC it belongs to (an ACK: the RPC of the packet it answers): pFabric's flow.
    rpc: u32,
    /// pFabric's priority number: its RPC's bytes not yet acknowledged when it was sent
    /// (saturated at `u32::MAX`; 0 for ACKs and for the other kinds).
    prio: u32,
    ack: bool,
    hop: u8,
}

/// QJump's pacer of one (host, class): one packet per epoch, round robin over destinations.
#[derive(Debug, Clone, Copy)]
struct Pacer {
    /// The earliest time the next packet may leave, seconds.
    next: f64,
    /// Whether an `Epoch` event of this pacer is in the kernel.
    scheduled: bool,
    /// The destination to look at first.
    rr: u32,
}

/// SplitMix64 as a generator (Steele, Lea and Flood, OOPSLA 2014): the admission draws.
#[derive(Debug, Clone)]
struct Draws(u64);

impl Draws {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A packet-level run of RPCs over a one-big-switch network ([`NetConfig`]).
#[derive(Debug)]
pub struct NetworkSim {
    cfg: NetConfig,
    admission: Option<AdmissionConfig>,
    n: u32,
    classes: u32,
    /// Channels (sub-queues) per `(src, dst, class)`: `NetConfig::channels_per_class`.
    per_class: u32,
    mss: u32,
    /// Seconds per byte on a link.
    byte_s: f64,
    /// `Σw / w_c` per class.
    stretch: Vec<f64>,
    kernel: Kernel<Event>,
    /// The channels' timer events, apart from the kernel (at most one per channel, few pops):
    /// `(time's bits, sequence, channel)`, times ≥ 0 so their bits order as the times.
    timers: BinaryHeap<Reverse<(u64, u64, u32)>>,
    timer_seq: u64,
    timer_events: u64,
    ports: Vec<Port>,
    /// Packets dropped by the port being offered one (scratch).
    dropped: Vec<(u32, usize)>,
    /// pFabric: stamp packets with their RPC's remaining bytes.
    srpt: bool,
    /// QJump: the epoch of each class, seconds (empty: no pacing, the window rules).
    epochs: Vec<f64>,
    /// QJump: `[host · classes + class]`.
    pacers: Vec<Pacer>,
    /// `[((src · n + dst) · classes + class) · per_class + j]`: sub-queue `j` of a triple.
    chans: Vec<Channel>,
    /// `[(src · n + dst) · (classes − 1) + k]`: the controller's state per channel and class.
    adm: Vec<ClassState>,
    packets: Vec<Packet>,
    free: Vec<u32>,
    draws: Draws,
    rpcs: RpcInput,
    spans: Vec<RpcSpan>,
    out: RpcOutcome,
    counters: Counters,
}

impl NetworkSim {
    /// A simulation of `rpcs` on the network `cfg` (both validated; errors name the field).
    pub fn new(cfg: NetConfig, rpcs: RpcInput) -> Result<Self> {
        cfg.validate()?;
        rpcs.validate(cfg.n_hosts, cfg.classes())?;
        let admission = cfg.admission_config()?;
        let n = cfg.n_hosts;
        let classes = cfg.classes() as u32;
        let total: f64 = cfg.weights.iter().sum();
        let stretch = cfg.weights.iter().map(|w| total / w).collect();
        let kind = cfg.scheduling()?;
        let k = classes as usize;
        let queue = |limit: u64| match kind {
            Scheduling::Wfq => Queue::Wfq(WfqPort::new(k, limit)),
            Scheduling::StrictPriority => {
                Queue::Strict(StrictPort::new(k, limit, Overflow::DropTail))
            }
            Scheduling::Qjump => Queue::Strict(StrictPort::new(k, limit, Overflow::PushOut)),
            Scheduling::Pfabric => Queue::Srpt(SrptPort::new(limit)),
        };
        let mut ports = Vec::with_capacity(3 * n as usize);
        for _ in 0..2 * n {
            ports.push(Port::new(queue(cfg.buffer_bytes)));
        }
        for _ in 0..n {
            ports.push(Port::new(queue(u64::MAX)));
        }
        let epochs = cfg.qjump_epochs_s();
        let pacers = if epochs.is_empty() {
            Vec::new()
        } else {
            vec![Pacer { next: f64::NEG_INFINITY, scheduled: false, rr: 0 }; (n * classes) as usize]
        };
        let pairs = (n * n) as usize;
        let per_class = cfg.channels_per_class;
        let chans =
            vec![Channel::new(Window::new(&cfg.cc)); pairs * classes as usize * per_class as usize];
        let adm = vec![ClassState::new(0.0); pairs * (classes as usize - 1)];
        let count = rpcs.len();
        let mut kernel = Kernel::new();
        if count > 0 {
            kernel.schedule(rpcs.time_s[0], Urgency::Issue, Event::Issue(0));
        }
        Ok(NetworkSim {
            byte_s: 8.0 / cfg.link_rate_bps,
            mss: cfg.mss_bytes(),
            draws: Draws(cfg.seed),
            cfg,
            admission,
            n,
            classes,
            per_class,
            stretch,
            kernel,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            timer_events: 0,
            ports,
            dropped: Vec::new(),
            srpt: kind == Scheduling::Pfabric,
            epochs,
            pacers,
            chans,
            adm,
            packets: Vec::new(),
            free: Vec::new(),
            spans: vec![RpcSpan { start: 0, packets: 0, last_payload: 0 }; count],
            out: RpcOutcome::new(count),
            counters: Counters { drops: vec![0; classes as usize], ..Counters::default() },
            rpcs,
        })
    }

    /// Run until no event is left or the clock passes `until` seconds.
    pub fn run(&mut self, until: f64) {
        loop {
            // A timer due strictly before the kernel's next event (or alone) runs first; at the
            // same instant the kernel's events run first.
            if let Some(&Reverse((bits, _, c))) = self.timers.peek() {
                let t = f64::from_bits(bits);
                if t <= until && self.kernel.peek().is_none_or(|k| t < k) {
                    self.timers.pop();
                    self.kernel.advance_to(t);
                    self.timer_events += 1;
                    self.timer(c);
                    continue;
                }
            }
            let Some(ev) = self.kernel.step(until) else { break };
            match ev {
                Event::Issue(r) => self.issue(r),
                Event::Serve(port) => self.serve(port),
                Event::Arrive { port, pkt } => self.arrive(port, pkt),
                Event::Deliver(pkt) => self.deliver(pkt),
                Event::Epoch(i) => self.epoch(i),
            }
        }
    }

    /// The simulated time now, seconds.
    pub fn now(&self) -> f64 {
        self.kernel.now()
    }

    /// The outcomes and the counters of the run so far.
    pub fn finish(self) -> (RpcOutcome, Counters) {
        let mut counters = self.counters;
        counters.events = self.kernel.processed() + self.timer_events;
        counters.end_s = self.kernel.now();
        counters.unfinished = self.out.finish_s.iter().filter(|t| t.is_nan()).count() as u64;
        (self.out, counters)
    }

    /// `p_admit` of `(src, dst)` at class `k` now (1 for the lowest class).
    pub fn p_admit(&self, src: u32, dst: u32, k: u32) -> f64 {
        if k + 1 >= self.classes {
            return 1.0;
        }
        self.adm[self.adm_index(src, dst, k)].p_admit
    }

    /// The congestion window of the first channel of `(src, dst, class)`, packets.
    pub fn cwnd(&self, src: u32, dst: u32, class: u32) -> f64 {
        self.chans[self.chan_index(src, dst, class)].window.cwnd()
    }

    fn adm_index(&self, src: u32, dst: u32, k: u32) -> usize {
        ((src * self.n + dst) * (self.classes - 1) + k) as usize
    }

    /// The first of the `per_class` channels of `(src, dst, class)`.
    fn chan_index(&self, src: u32, dst: u32, class: u32) -> usize {
        ((src * self.n + dst) * self.classes + class) as usize * self.per_class as usize
    }

    /// `(src, dst, class)` of channel `c`.
    fn chan_parts(&self, c: u32) -> (u32, u32, u32) {
        let triple = c / self.per_class;
        let pair = triple / self.classes;
        (pair / self.n, pair % self.n, triple % self.classes)
    }

    /// The channel of `(src, dst, class)` a new RPC is issued on: the first idle one (nothing
    /// unacknowledged), else the one with the fewest unacknowledged packets (first on ties).
    fn pick_channel(&self, src: u32, dst: u32, class: u32) -> usize {
        let first = self.chan_index(src, dst, class);
        let mut best = (u64::MAX, first);
        for c in first..first + self.per_class as usize {
            let ch = &self.chans[c];
            let load = ch.end_seq - ch.last_unacked;
            if load == 0 {
                return c;
            }
            if load < best.0 {
                best = (load, c);
            }
        }
        best.1
    }

    fn alloc(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.packets[i as usize] = p;
                i
            }
            None => {
                self.packets.push(p);
                (self.packets.len() - 1) as u32
            }
        }
    }

    /// The port at hop `hop` of a packet from `a` to `b`, if any (else it is delivered).
    fn port_at(&self, a: u32, b: u32, hop: u8) -> Option<u32> {
        let mut h = hop;
        if self.cfg.host_egress {
            if h == 0 {
                return Some(2 * self.n + a);
            }
            h -= 1;
        }
        match h {
            0 => Some(b),
            1 if self.cfg.receiver_queue => Some(self.n + b),
            _ => None,
        }
    }

    fn is_link(&self, port: u32) -> bool {
        port < self.n || port >= 2 * self.n
    }

    fn endpoints(&self, p: &Packet) -> (u32, u32) {
        let (src, dst, _) = self.chan_parts(p.chan);
        if p.ack {
            (dst, src)
        } else {
            (src, dst)
        }
    }

    fn inject(&mut self, pkt: u32) {
        let (a, b) = self.endpoints(&self.packets[pkt as usize]);
        let port = self.port_at(a, b, 0).expect("every path has the switch port");
        let delay = if self.cfg.host_egress { 0.0 } else { self.cfg.propagation_s };
        let t = self.kernel.now() + delay;
        self.kernel.schedule(t, Urgency::Arrival, Event::Arrive { port, pkt });
    }

    fn issue(&mut self, r: u32) {
        let i = r as usize;
        if i + 1 < self.rpcs.len() {
            let t = self.rpcs.time_s[i + 1];
            self.kernel.schedule(t, Urgency::Issue, Event::Issue(r + 1));
        }
        let (src, dst, k) = (self.rpcs.src[i], self.rpcs.dst[i], u32::from(self.rpcs.cls[i]));
        let lowest = self.classes - 1;
        let mut class_run = k;
        if self.admission.is_some() && k < lowest {
            let u = self.draws.uniform();
            let state = self.adm[self.adm_index(src, dst, k)];
            self.out.p_admit[i] = state.p_admit;
            if !state.admits(u) {
                class_run = lowest;
                self.out.downgraded[i] = true;
                self.counters.downgrades += 1;
            }
        }
        self.out.class_run[i] = class_run as u8;
        let c = self.pick_channel(src, dst, class_run);
        let ch = &mut self.chans[c];
        let span = RpcSpan::new(ch.end_seq, self.rpcs.size_bytes[i], self.mss);
        ch.end_seq = span.end();
        ch.rpcs.push_back(r);
        self.spans[i] = span;
        self.out.size_mtus[i] = span.packets;
        self.send(c as u32);
    }

    /// Send what channel `c`'s window and stream allow (with QJump's pacing: wake the pacer of
    /// its host and class instead).
    fn send(&mut self, c: u32) {
        if !self.epochs.is_empty() {
            let ch = &self.chans[c as usize];
            if ch.next_seq < ch.end_seq {
                let (src, _, class) = self.chan_parts(c);
                self.wake_pacer(src * self.classes + class);
            }
            return;
        }
        while self.chans[c as usize].can_send() {
            self.send_one(c);
        }
    }

    /// QJump: make sure pacer `i` sends its next packet when its epoch allows.
    fn wake_pacer(&mut self, i: u32) {
        let now = self.kernel.now();
        let p = &mut self.pacers[i as usize];
        if !p.scheduled {
            p.scheduled = true;
            let t = p.next.max(now);
            self.kernel.schedule(t, Urgency::Wake, Event::Epoch(i));
        }
    }

    /// QJump: pacer `i = host · classes + class` sends one packet of the next channel (round
    /// robin over destinations, and over a destination's `per_class` channels) that has one to
    /// send, whatever its window, then waits an epoch.
    fn epoch(&mut self, i: u32) {
        let now = self.kernel.now();
        let (host, class) = (i / self.classes, i % self.classes);
        self.pacers[i as usize].scheduled = false;
        let start = self.pacers[i as usize].rr;
        let slots = self.n * self.per_class;
        for step in 0..slots {
            let slot = (start + step) % slots;
            let (dst, j) = (slot / self.per_class, slot % self.per_class);
            let c = (self.chan_index(host, dst, class) + j as usize) as u32;
            let ch = &self.chans[c as usize];
            if ch.next_seq < ch.end_seq {
                self.send_one(c);
                let p = &mut self.pacers[i as usize];
                p.rr = (slot + 1) % slots;
                p.next = now + self.epochs[class as usize];
                p.scheduled = true;
                let t = p.next;
                self.kernel.schedule(t, Urgency::Wake, Event::Epoch(i));
                return;
            }
        }
    }

    /// Send channel `c`'s next packet.
    #[inline]
    fn send_one(&mut self, c: u32) {
        let now = self.kernel.now();
        {
            let ch = &mut self.chans[c as usize];
            let seq = ch.next_seq;
            ch.next_seq += 1;
            if seq < ch.high_seq {
                self.counters.retransmitted += 1;
            } else {
                ch.high_seq = seq + 1;
            }
            // The channel's RPCs hold consecutive sequence ranges in order: a binary search,
            // not a scan (a window of thousands of RPCs would make sending quadratic).
            let at = ch.rpcs.partition_point(|&r| self.spans[r as usize].end() <= seq);
            let rpc = *ch
                .rpcs
                .get(at)
                .expect("an unacknowledged packet belongs to an RPC of the channel");
            let span = self.spans[rpc as usize];
            let bytes = span.payload(seq, self.mss) + self.cfg.header_bytes;
            let prio = if self.srpt {
                // pFabric: the RPC's bytes not yet acknowledged (its remaining flow size), or
                // their level among the configured thresholds.
                let acked = ch.last_unacked.max(span.start) - span.start;
                let size = self.rpcs.size_bytes[rpc as usize];
                self.cfg.pfabric_priority(size.saturating_sub(acked * u64::from(self.mss)))
            } else {
                0
            };
            let armed = ch.timer_armed();
            self.counters.data_packets += 1;
            let pkt = self.alloc(Packet {
                seq,
                sent_at: now,
                chan: c,
                bytes,
                rpc,
                prio,
                ack: false,
                hop: 0,
            });
            self.inject(pkt);
            if !armed {
                self.arm(c);
            }
        }
    }

    fn schedule_timer(&mut self, t: f64, c: u32) {
        self.timers.push(Reverse((t.to_bits(), self.timer_seq, c)));
        self.timer_seq += 1;
    }

    /// (Re)arm channel `c`'s timer to expire `rto_s` from now.
    fn arm(&mut self, c: u32) {
        let t = self.kernel.now() + self.cfg.cc.rto_s;
        let ch = &mut self.chans[c as usize];
        ch.timer_deadline = t;
        if !ch.timer_pending {
            ch.timer_pending = true;
            self.schedule_timer(t, c);
        }
    }

    fn arrive(&mut self, port: u32, pkt: u32) {
        let now = self.kernel.now();
        let p = self.packets[pkt as usize];
        let class = ((p.chan / self.per_class) % self.classes) as usize;
        let tx = f64::from(p.bytes) * self.byte_s;
        let q = &mut self.ports[port as usize].queue;
        let prio = u64::from(p.prio);
        let kept =
            q.enqueue(pkt, class, p.bytes, tx, &self.stretch, now, prio, p.rpc, &mut self.dropped);
        if !self.dropped.is_empty() {
            for i in 0..self.dropped.len() {
                let (d, cls) = self.dropped[i];
                self.counters.drops[cls] += 1;
                if self.packets[d as usize].ack {
                    self.counters.ack_drops += 1;
                } else {
                    self.counters.data_drops += 1;
                }
                self.free.push(d);
            }
            self.dropped.clear();
        }
        if !kept {
            return;
        }
        let q = &mut self.ports[port as usize];
        if q.busy {
            return;
        }
        q.busy = true;
        if now < q.free_at {
            // The last packet is still on the wire: start when it is through.
            let t = q.free_at;
            self.kernel.schedule(t, Urgency::Completion, Event::Serve(port));
        } else if self.kernel.peek().is_none_or(|t| t > now) {
            // Nothing else happens at this instant: start now.
            self.serve(port);
        } else {
            // Start after every other arrival of this instant, so that they compete by tag.
            self.kernel.schedule(now, Urgency::Wake, Event::Serve(port));
        }
    }

    fn serve(&mut self, port: u32) {
        let now = self.kernel.now();
        let q = &mut self.ports[port as usize];
        let Some((pkt, bytes)) = q.queue.dequeue() else {
            q.busy = false;
            return;
        };
        let tx = f64::from(bytes) * self.byte_s;
        q.free_at = now + tx;
        if q.queue.is_empty() {
            // Nothing waits: the next arrival schedules the port (no event to find it idle).
            q.busy = false;
        } else {
            self.kernel.schedule(now + tx, Urgency::Completion, Event::Serve(port));
        }
        let delay = if self.is_link(port) { tx + self.cfg.propagation_s } else { tx };
        let p = &mut self.packets[pkt as usize];
        p.hop += 1;
        let p = *p;
        let (a, b) = self.endpoints(&p);
        let ev = match self.port_at(a, b, p.hop) {
            Some(next) => Event::Arrive { port: next, pkt },
            None => Event::Deliver(pkt),
        };
        self.kernel.schedule(now + delay, Urgency::Arrival, ev);
    }

    fn deliver(&mut self, pkt: u32) {
        let p = self.packets[pkt as usize];
        self.free.push(pkt);
        if p.ack {
            self.on_ack(p.chan, p.seq, p.sent_at);
            return;
        }
        let ack_no = self.chans[p.chan as usize].receive(p.seq);
        self.counters.acks += 1;
        let bytes = self.cfg.header_bytes;
        let ack = self.alloc(Packet {
            seq: ack_no,
            sent_at: p.sent_at,
            chan: p.chan,
            bytes,
            rpc: p.rpc,
            prio: 0,
            ack: true,
            hop: 0,
        });
        self.inject(ack);
    }

    fn on_ack(&mut self, c: u32, ack_no: u64, sent_at: f64) {
        let now = self.kernel.now();
        let ch = &mut self.chans[c as usize];
        if ch.next_seq < ack_no {
            ch.next_seq = ack_no;
        }
        if ack_no <= ch.last_unacked {
            return;
        }
        ch.last_unacked = ack_no;
        ch.window.on_ack(now - sent_at, now, &self.cfg.cc);
        self.send(c);
        let ch = &mut self.chans[c as usize];
        ch.timer_deadline = f64::INFINITY;
        if ch.last_unacked < ch.end_seq {
            self.arm(c);
        }
        while let Some(&r) = self.chans[c as usize].rpcs.front() {
            if self.spans[r as usize].end() > ack_no {
                break;
            }
            self.chans[c as usize].rpcs.pop_front();
            self.complete(r, now);
        }
    }

    fn complete(&mut self, r: u32, now: f64) {
        let i = r as usize;
        let rnl = now - self.rpcs.time_s[i];
        self.out.finish_s[i] = now;
        self.out.rnl_s[i] = rnl;
        let k = u32::from(self.out.class_run[i]);
        if let Some(cfg) = &self.admission {
            if k + 1 < self.classes {
                let size = f64::from(self.spans[i].packets);
                let idx = self.adm_index(self.rpcs.src[i], self.rpcs.dst[i], k);
                self.adm[idx].complete(cfg, k as usize, rnl, size, now);
            }
        }
    }

    fn timer(&mut self, c: u32) {
        let now = self.kernel.now();
        let ch = &mut self.chans[c as usize];
        ch.timer_pending = false;
        if !ch.timer_armed() {
            return;
        }
        if now < ch.timer_deadline {
            // Moved by ACKs since this event was scheduled: wait for the new deadline.
            ch.timer_pending = true;
            let t = ch.timer_deadline;
            self.schedule_timer(t, c);
            return;
        }
        ch.timer_deadline = f64::INFINITY;
        self.counters.timeouts += 1;
        ch.window.on_timeout(now, &self.cfg.cc);
        ch.next_seq = ch.last_unacked;
        self.send(c);
        let ch = &self.chans[c as usize];
        if !ch.timer_armed() && ch.last_unacked < ch.end_seq {
            self.arm(c);
        }
    }
}

/// Run `rpcs` on `cfg` to the end (or to `until` seconds): the per-RPC outcomes and counters.
pub fn simulate(cfg: NetConfig, rpcs: RpcInput, until: f64) -> Result<(RpcOutcome, Counters)> {
    let mut sim = NetworkSim::new(cfg, rpcs)?;
    sim.run(until);
    Ok(sim.finish())
}
