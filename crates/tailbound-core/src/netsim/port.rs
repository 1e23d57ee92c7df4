//! One output port: weighted fair queueing over classes with a virtual clock per class, in
//! front of a finite shared drop-tail buffer (Aequitas, SIGCOMM 2022, §4.1; the authors'
//! `ext/wf_queue.cpp`).
//!
//! A packet of class `c` whose transmission takes `tx` seconds, accepted at `t`, gets
//!
//! ```text
//! v_finish = max(t, last[c]) + tx / (w_c / Σw),    last[c] ← v_finish,
//! ```
//!
//! and the port serves the class whose head has the smallest `v_finish` (a tie goes to the
//! higher class, the lower index, as the authors' strict `<` scan from class 0). Σw is over
//! every configured class, busy or not (`sched::wfq` makes the same choice).
//!
//! **Buffer.** The packets waiting (not the one on the wire) share `limit` bytes: a packet
//! that would take them beyond it is dropped on arrival and gets no tag (drop-tail, as
//! `WFQueue::enque`). `sched::wfq::Wfq` is not reused here: the port needs its heads per class
//! (a scan of a few FIFOs, not a heap of every packet), the authors' tie rule, and bytes.

use std::collections::VecDeque;

use super::priority_port::{SrptPort, StrictPort};

/// A WFQ port over `classes` classes with a shared drop-tail buffer.
#[derive(Debug, Clone)]
pub struct WfqPort {
    /// Per class: (finish tag, packet) in arrival order.
    queues: Vec<VecDeque<(f64, u32, u32)>>,
    last: Vec<f64>,
    bytes: u64,
    limit: u64,
    waiting: usize,
}

impl WfqPort {
    /// An empty port of `classes` classes with `limit` bytes of buffer (`u64::MAX`: unbounded).
    pub fn new(classes: usize, limit: u64) -> Self {
        WfqPort {
            queues: vec![VecDeque::new(); classes],
            last: vec![f64::NEG_INFINITY; classes],
            bytes: 0,
            limit,
            waiting: 0,
        }
    }

    /// Offer packet `pkt` of `bytes` and class `class` at `now`: its transmission takes `tx_s`,
    /// `stretch[c] = Σw / w_c`. Returns `false` when the buffer drops it.
    pub fn enqueue(
        &mut self,
        pkt: u32,
        class: usize,
        bytes: u32,
        tx_s: f64,
        stretch: &[f64],
        now: f64,
    ) -> bool {
        if self.bytes + u64::from(bytes) > self.limit {
            return false;
        }
        let finish = now.max(self.last[class]) + tx_s * stretch[class];
        self.last[class] = finish;
        self.queues[class].push_back((finish, pkt, bytes));
        self.bytes += u64::from(bytes);
        self.waiting += 1;
        true
    }

    /// Take the head with the smallest finish tag: `(packet, bytes)`.
    pub fn dequeue(&mut self) -> Option<(u32, u32)> {
        if self.waiting == 0 {
            return None;
        }
        let mut best: Option<(usize, f64)> = None;
        for (c, q) in self.queues.iter().enumerate() {
            if let Some(&(tag, _, _)) = q.front() {
                if best.is_none_or(|(_, b)| tag < b) {
                    best = Some((c, tag));
                }
            }
        }
        let (c, _) = best?;
        let (_, pkt, bytes) = self.queues[c].pop_front()?;
        self.bytes -= u64::from(bytes);
        self.waiting -= 1;
        Some((pkt, bytes))
    }

    /// Bytes of the packets waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of packets waiting.
    pub fn len(&self) -> usize {
        self.waiting
    }

    /// Whether no packet waits.
    pub fn is_empty(&self) -> bool {
        self.waiting == 0
    }
}

/// A port of any kind the network runs ([`super::config::Scheduling`]): WFQ (the default),
/// strict priority, or pFabric's SRPT (`priority_port`). One `match` a packet: WFQ runs cost
/// what they did before the other kinds existed.
#[derive(Debug, Clone)]
pub enum Queue {
    /// Virtual-clock WFQ over classes, drop-tail.
    Wfq(WfqPort),
    /// Strict priority over classes.
    Strict(StrictPort),
    /// pFabric: the smallest remaining RPC size first.
    Srpt(SrptPort),
}

/// An output port: its queue and whether it is sending.
#[derive(Debug, Clone)]
pub struct Port {
    /// The packets waiting and the order they leave in.
    pub queue: Queue,
    /// Whether a `Serve` of this port is scheduled (packets wait, or one is about to start).
    pub busy: bool,
    /// When the packet on the wire is through, seconds (the earliest the next can start).
    pub free_at: f64,
}

impl Port {
    /// An idle port with `queue`.
    pub fn new(queue: Queue) -> Self {
        Port { queue, busy: false, free_at: f64::NEG_INFINITY }
    }
}

impl Queue {
    /// Offer a packet (see each kind's `enqueue`; `prio` and `flow` serve `Srpt` only). Packets
    /// dropped are appended to `dropped` as `(packet, class)`; returns whether `pkt` is queued.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn enqueue(
        &mut self,
        pkt: u32,
        class: usize,
        bytes: u32,
        tx_s: f64,
        stretch: &[f64],
        now: f64,
        prio: u64,
        flow: u32,
        dropped: &mut Vec<(u32, usize)>,
    ) -> bool {
        match self {
            Queue::Wfq(p) => {
                let kept = p.enqueue(pkt, class, bytes, tx_s, stretch, now);
                if !kept {
                    dropped.push((pkt, class));
                }
                kept
            }
            Queue::Strict(p) => p.enqueue(pkt, class, bytes, dropped),
            Queue::Srpt(p) => p.enqueue(pkt, class, bytes, prio, flow, dropped),
        }
    }

    /// The next packet to send: `(packet, bytes)`.
    #[inline]
    pub fn dequeue(&mut self) -> Option<(u32, u32)> {
        match self {
            Queue::Wfq(p) => p.dequeue(),
            Queue::Strict(p) => p.dequeue(),
            Queue::Srpt(p) => p.dequeue(),
        }
    }

    /// Whether no packet waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        match self {
            Queue::Wfq(p) => p.is_empty(),
            Queue::Strict(p) => p.is_empty(),
            Queue::Srpt(p) => p.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(w: &[f64]) -> Vec<f64> {
        let s: f64 = w.iter().sum();
        w.iter().map(|x| s / x).collect()
    }

    #[test]
    fn wfq_port_serves_two_classes_four_to_one_in_finish_tag_order() {
        // Weights 4:1, every packet 1 s on the wire; both classes backlogged at t = 0.
        // Class 0 tags 1.25, 2.5, 3.75, 5, 6.25 …; class 1 tags 5, 10, …: four of class 0,
        // then the tie at 5 to class 0, then class 1.
        let st = stretch(&[4.0, 1.0]);
        let mut p = WfqPort::new(2, u64::MAX);
        for i in 0..6 {
            assert!(p.enqueue(i, 0, 100, 1.0, &st, 0.0));
        }
        for i in 0..2 {
            assert!(p.enqueue(100 + i, 1, 100, 1.0, &st, 0.0));
        }
        let order: Vec<u32> = std::iter::from_fn(|| p.dequeue().map(|(k, _)| k)).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 100, 4, 5, 101]);
        assert!(p.is_empty());
    }

    #[test]
    fn wfq_port_gives_an_idle_class_its_share_at_once() {
        // Class 0 (weight 1) queued 10 packets alone at 0: tags 2, 4, …, 20. Three are served;
        // class 1 (weight 1) arriving at t = 3 gets tag 3 + 2 = 5 and overtakes class 0's head
        // (tag 8): its guaranteed half of the link does not wait for class 0's backlog.
        let st = stretch(&[1.0, 1.0]);
        let mut p = WfqPort::new(2, u64::MAX);
        for i in 0..10 {
            p.enqueue(i, 0, 1, 1.0, &st, 0.0);
        }
        for _ in 0..3 {
            p.dequeue();
        }
        p.enqueue(99, 1, 1, 1.0, &st, 3.0);
        assert_eq!(p.dequeue(), Some((99, 1)));
        assert_eq!(p.dequeue(), Some((3, 1)));
    }

    #[test]
    fn drop_tail_refuses_a_packet_beyond_the_shared_buffer() {
        let st = stretch(&[4.0, 1.0]);
        let mut p = WfqPort::new(2, 10_000);
        assert!(p.enqueue(0, 0, 5160, 1.0, &st, 0.0));
        assert!(p.enqueue(1, 1, 4840, 1.0, &st, 0.0)); // exactly full: 10 000 bytes
        assert!(!p.enqueue(2, 0, 40, 1.0, &st, 0.0)); // any class, even an ACK, is dropped
        assert_eq!((p.len(), p.bytes()), (2, 10_000));
        // A dropped packet takes no tag: class 0's next tag follows its first.
        p.dequeue();
        assert!(p.enqueue(3, 0, 40, 1.0, &st, 0.0));
        assert_eq!(p.last[0], 1.25 + 1.25);
    }
}
