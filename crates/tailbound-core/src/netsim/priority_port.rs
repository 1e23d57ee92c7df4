//! Output ports that serve by priority instead of WFQ: the baselines Aequitas is compared with
//! (Zhang et al., SIGCOMM 2022, §6.7 and §6.10; `docs/aequitas.md`, "Port kinds").
//!
//! - [`StrictPort`]: strict priority over classes (class 0 first; FIFO within a class). With
//!   [`Overflow::DropTail`] a packet that would exceed the shared buffer is dropped on arrival
//!   (the WFQ port's rule: Fig. 19 replaces WFQ by SPQ and changes nothing else); with
//!   [`Overflow::PushOut`] the arriving packet is queued and then the packets of the lowest
//!   class present are dropped from the tail until the buffer holds (the authors' QJump queue,
//!   `ext/qjump_queue.h`, a pFabric queue keyed by class).
//! - [`SrptPort`]: pFabric's port (Alizadeh et al., SIGCOMM 2013, §4.1; the authors'
//!   `ext/pfabric_queue.cpp`): every packet carries a priority number, the remaining bytes of
//!   its RPC when it was sent (ACKs 0, the highest); the port sends, of the flow holding the
//!   packet with the smallest number, that flow's **earliest** queued packet (no reordering
//!   inside a flow); when the buffer overflows it drops the packet with the largest number (of
//!   equal ones the latest), repeatedly until the buffer holds. Both scan the queue (pFabric's
//!   buffers are small: 512 KiB hold about 100 full packets).
//!
//! Ties in `SrptPort` go to the packet queued first, as the authors' strict `<` scan.

use std::collections::VecDeque;

/// What a strict-priority port does when a packet does not fit its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Drop the arriving packet.
    DropTail,
    /// Queue it, then drop from the tail of the lowest class present until the buffer holds.
    PushOut,
}

/// Strict priority over classes, FIFO within each, with a shared buffer of `limit` bytes.
#[derive(Debug, Clone)]
pub struct StrictPort {
    queues: Vec<VecDeque<(u32, u32)>>,
    bytes: u64,
    limit: u64,
    waiting: usize,
    overflow: Overflow,
}

impl StrictPort {
    /// An empty port of `classes` classes, `limit` bytes of buffer (`u64::MAX`: unbounded).
    pub fn new(classes: usize, limit: u64, overflow: Overflow) -> Self {
        StrictPort { queues: vec![VecDeque::new(); classes], bytes: 0, limit, waiting: 0, overflow }
    }

    /// Offer packet `pkt` of `bytes` and `class`; the packets dropped (the arriving one with
    /// drop-tail, queued ones of the lowest class with push-out) are appended to `dropped`
    /// as `(packet, class)`. Returns whether `pkt` was queued.
    pub fn enqueue(
        &mut self,
        pkt: u32,
        class: usize,
        bytes: u32,
        dropped: &mut Vec<(u32, usize)>,
    ) -> bool {
        let b = u64::from(bytes);
        if self.bytes + b > self.limit && self.overflow == Overflow::DropTail {
            dropped.push((pkt, class));
            return false;
        }
        self.queues[class].push_back((pkt, bytes));
        self.bytes += b;
        self.waiting += 1;
        let mut kept = true;
        while self.bytes > self.limit {
            let worst = self.queues.iter().rposition(|q| !q.is_empty()).expect("bytes > 0");
            let (p, pb) = self.queues[worst].pop_back().expect("non-empty");
            self.bytes -= u64::from(pb);
            self.waiting -= 1;
            dropped.push((p, worst));
            kept &= p != pkt;
        }
        kept
    }

    /// Take the head of the highest non-empty class: `(packet, bytes)`.
    pub fn dequeue(&mut self) -> Option<(u32, u32)> {
        if self.waiting == 0 {
            return None;
        }
        let q = self.queues.iter_mut().find(|q| !q.is_empty())?;
        let (pkt, bytes) = q.pop_front()?;
        self.bytes -= u64::from(bytes);
        self.waiting -= 1;
        Some((pkt, bytes))
    }

    /// Number of packets waiting.
    pub fn len(&self) -> usize {
        self.waiting
    }

    /// Whether no packet waits.
    pub fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    /// Bytes of the packets waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// One packet waiting at an [`SrptPort`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Queued {
    prio: u64,
    flow: u32,
    pkt: u32,
    bytes: u32,
    class: u8,
}

/// pFabric's port: the smallest priority number first (its flow's earliest packet), the
/// largest dropped when the buffer overflows.
#[derive(Debug, Clone)]
pub struct SrptPort {
    packets: Vec<Queued>,
    bytes: u64,
    limit: u64,
}

impl SrptPort {
    /// An empty port with `limit` bytes of buffer (`u64::MAX`: unbounded).
    pub fn new(limit: u64) -> Self {
        SrptPort { packets: Vec::new(), bytes: 0, limit }
    }

    /// Offer packet `pkt` (`bytes`, `class`, priority number `prio`, smaller first; `flow` its
    /// flow, here its RPC); the packets dropped are appended to `dropped` as `(packet,
    /// class)`. Returns whether `pkt` was queued.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &mut self,
        pkt: u32,
        class: usize,
        bytes: u32,
        prio: u64,
        flow: u32,
        dropped: &mut Vec<(u32, usize)>,
    ) -> bool {
        self.packets.push(Queued { prio, flow, pkt, bytes, class: class as u8 });
        self.bytes += u64::from(bytes);
        let mut kept = true;
        while self.bytes > self.limit {
            let mut worst = 0;
            for (i, q) in self.packets.iter().enumerate() {
                if q.prio >= self.packets[worst].prio {
                    worst = i;
                }
            }
            let q = self.packets.remove(worst);
            self.bytes -= u64::from(q.bytes);
            dropped.push((q.pkt, usize::from(q.class)));
            kept &= q.pkt != pkt;
        }
        kept
    }

    /// Take, of the flow of the packet with the smallest priority number, its earliest
    /// queued packet: `(packet, bytes)`.
    pub fn dequeue(&mut self) -> Option<(u32, u32)> {
        let first = self.packets.first()?;
        let mut best = (first.prio, first.flow);
        for q in &self.packets[1..] {
            if q.prio < best.0 {
                best = (q.prio, q.flow);
            }
        }
        let at = self.packets.iter().position(|q| q.flow == best.1).expect("the best is queued");
        let q = self.packets.remove(at);
        self.bytes -= u64::from(q.bytes);
        Some((q.pkt, q.bytes))
    }

    /// Number of packets waiting.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether no packet waits.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Bytes of the packets waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain_strict(p: &mut StrictPort) -> Vec<u32> {
        std::iter::from_fn(|| p.dequeue().map(|(k, _)| k)).collect()
    }

    #[test]
    fn strict_priority_serves_every_higher_class_packet_first_fifo_within_a_class() {
        // Arrivals interleaved l, h, m, l, h, m: SPQ sends both h, then both m, then both l,
        // each class in arrival order (WFQ 8:4:1 would let l's first packet out before the
        // second h only if its tag were smaller; SPQ never does while h waits).
        let mut p = StrictPort::new(3, u64::MAX, Overflow::DropTail);
        let mut d = Vec::new();
        for (pkt, class) in [(0, 2), (1, 0), (2, 1), (3, 2), (4, 0), (5, 1)] {
            assert!(p.enqueue(pkt, class, 100, &mut d));
        }
        assert_eq!(drain_strict(&mut p), vec![1, 4, 2, 5, 0, 3]);
        assert!(d.is_empty() && p.is_empty() && p.bytes() == 0);
    }

    #[test]
    fn strict_priority_starves_a_lower_class_while_a_higher_one_keeps_arriving() {
        let mut p = StrictPort::new(2, u64::MAX, Overflow::DropTail);
        let mut d = Vec::new();
        p.enqueue(100, 1, 100, &mut d);
        let mut order = Vec::new();
        for i in 0..5 {
            p.enqueue(i, 0, 100, &mut d);
            order.push(p.dequeue().unwrap().0);
        }
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert_eq!(p.dequeue(), Some((100, 100)));
    }

    #[test]
    fn strict_drop_tail_refuses_the_arrival_push_out_evicts_the_lowest_class() {
        let mut d = Vec::new();
        let mut tail = StrictPort::new(3, 10_000, Overflow::DropTail);
        assert!(tail.enqueue(0, 2, 5000, &mut d));
        assert!(tail.enqueue(1, 1, 5000, &mut d));
        assert!(!tail.enqueue(2, 0, 40, &mut d)); // full: even class 0 is dropped
        assert_eq!(d, vec![(2, 0)]);
        d.clear();
        let mut push = StrictPort::new(3, 10_000, Overflow::PushOut);
        assert!(push.enqueue(0, 2, 2500, &mut d));
        assert!(push.enqueue(1, 2, 2500, &mut d));
        assert!(push.enqueue(2, 1, 5000, &mut d));
        // A class-0 packet of 5000 B: the lowest class present (2) loses its tail packets
        // until the buffer holds: 1, then 0.
        assert!(push.enqueue(3, 0, 5000, &mut d));
        assert_eq!(d, vec![(1, 2), (0, 2)]);
        assert_eq!((push.len(), push.bytes()), (2, 10_000));
        // A class-2 arrival into a full buffer of higher classes is the one dropped.
        d.clear();
        assert!(!push.enqueue(4, 2, 40, &mut d));
        assert_eq!(d, vec![(4, 2)]);
        assert_eq!(drain_strict(&mut push), vec![3, 2]);
    }

    #[test]
    fn srpt_serves_the_smallest_remaining_size_and_keeps_a_flow_in_order() {
        let mut p = SrptPort::new(u64::MAX);
        let mut d = Vec::new();
        // Flow 7 (a large RPC): remaining 30 000 then 25 000 B; flow 8 (small): 3000 B;
        // an ACK (priority 0) of flow 9.
        p.enqueue(0, 2, 5120, 30_000, 7, &mut d);
        p.enqueue(1, 2, 5120, 25_000, 7, &mut d);
        p.enqueue(2, 0, 3040, 3_000, 8, &mut d);
        p.enqueue(3, 1, 40, 0, 9, &mut d);
        assert_eq!(p.dequeue(), Some((3, 40)));
        assert_eq!(p.dequeue(), Some((2, 3040)));
        // Flow 7's best packet is its second (25 000), but its earliest goes first.
        assert_eq!(p.dequeue(), Some((0, 5120)));
        assert_eq!(p.dequeue(), Some((1, 5120)));
        assert_eq!(p.dequeue(), None);
        // Equal numbers: the packet queued first.
        p.enqueue(10, 0, 100, 5, 1, &mut d);
        p.enqueue(11, 0, 100, 5, 2, &mut d);
        assert_eq!(p.dequeue(), Some((10, 100)));
        assert!(d.is_empty());
    }

    #[test]
    fn srpt_drops_the_largest_remaining_size_even_when_queued_before() {
        let mut p = SrptPort::new(10_000);
        let mut d = Vec::new();
        assert!(p.enqueue(0, 2, 5000, 90_000, 1, &mut d));
        assert!(p.enqueue(1, 2, 5000, 50_000, 2, &mut d));
        // A short RPC's packet into a full buffer evicts the packet with most left (90 000).
        assert!(p.enqueue(2, 0, 5000, 4_000, 3, &mut d));
        assert_eq!(d, vec![(0, 2)]);
        // An arrival with more left than anything queued is itself dropped; of equal numbers
        // the latest goes.
        assert!(!p.enqueue(3, 1, 40, 60_000, 4, &mut d));
        assert!(!p.enqueue(4, 1, 40, 50_000, 5, &mut d));
        assert_eq!(d, vec![(0, 2), (3, 1), (4, 1)]);
        assert_eq!((p.len(), p.bytes()), (2, 10_000));
        assert_eq!(p.dequeue(), Some((2, 5000)));
    }
}
