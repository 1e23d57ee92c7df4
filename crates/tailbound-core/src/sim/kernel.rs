//! The deterministic event kernel (STYLE.md lesson 9, simpy's `core.py`): a heap of events
//! ordered by `(time, priority, sequence number)`, so that two runs with the same inputs pop the
//! same events in the same order, always.

use std::cmp::Ordering;

/// The order of simultaneous events: smaller runs first. Completions run before arrivals at the
/// same instant, so a server freed at `t` can take an item that arrives at `t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// A server finished something (a packet left a link, a device completed a request).
    Completion = 0,
    /// Something arrived at a queue (a packet at the next hop, a request at a device).
    Arrival = 1,
    /// A workload issues a new request.
    Issue = 2,
    /// A queue re-asks its scheduler (a shaper's tokens are due).
    Wake = 3,
}

/// Bits of the sequence number in an entry's key; the urgency sits above them.
const SEQ_BITS: u32 = 56;

/// A heap entry: `key = urgency << 56 | seq`, so one integer comparison orders both (the entry
/// stays 32 bytes with a 16-byte event, which keeps heap operations cheap).
#[derive(Debug)]
struct Entry<E> {
    time: f64,
    key: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time.total_cmp(&other.time).then(self.key.cmp(&other.key))
    }
}

/// A 4-ary min-heap: half the depth of a binary heap, and the four children of a node share a
/// cache line or two, which makes the kernel's pop (its hottest operation) cheaper.
#[derive(Debug)]
struct QuadHeap<E> {
    items: Vec<Entry<E>>,
}

impl<E> QuadHeap<E> {
    fn push(&mut self, entry: Entry<E>) {
        let mut i = self.items.len();
        self.items.push(entry);
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.items[i] >= self.items[parent] {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn peek(&self) -> Option<&Entry<E>> {
        self.items.first()
    }

    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        let n = self.items.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let end = (first + 4).min(n);
            let mut best = first;
            for c in first + 1..end {
                if self.items[c] < self.items[best] {
                    best = c;
                }
            }
            if self.items[best] >= self.items[i] {
                break;
            }
            self.items.swap(i, best);
            i = best;
        }
        Some(top)
    }
}

/// An event heap with a virtual clock.
#[derive(Debug)]
pub struct Kernel<E> {
    heap: QuadHeap<E>,
    now: f64,
    seq: u64,
    processed: u64,
}

impl<E> Default for Kernel<E> {
    fn default() -> Self {
        Self { heap: QuadHeap { items: Vec::new() }, now: 0.0, seq: 0, processed: 0 }
    }
}

impl<E> Kernel<E> {
    /// An empty kernel at time 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The virtual time of the last event popped.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Number of events popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Schedule `event` at `time` (never before now: a past time is clamped to now).
    pub fn schedule(&mut self, time: f64, urgency: Urgency, event: E) {
        let time = time.max(self.now);
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let key = ((urgency as u64) << SEQ_BITS) | self.seq;
        self.heap.push(Entry { time, key, event });
        self.seq += 1;
    }

    /// The time of the next event, if any.
    pub fn peek(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.time)
    }

    /// Pop the next event if it is due at or before `until`, advancing the clock to its time.
    pub fn step(&mut self, until: f64) -> Option<E> {
        if self.peek()? > until {
            return None;
        }
        let entry = self.heap.pop()?;
        self.now = entry.time;
        self.processed += 1;
        Some(entry.event)
    }

    /// Advance the clock to `time` when nothing is due before it (the end of a `run(until)`).
    pub fn advance_to(&mut self, time: f64) {
        if self.peek().is_none_or(|t| t >= time) && time > self.now {
            self.now = time;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_orders_by_time_urgency_then_sequence() {
        let mut k = Kernel::new();
        k.schedule(2.0, Urgency::Arrival, "late");
        k.schedule(1.0, Urgency::Wake, "wake");
        k.schedule(1.0, Urgency::Arrival, "arrival-a");
        k.schedule(1.0, Urgency::Completion, "done");
        k.schedule(1.0, Urgency::Arrival, "arrival-b");
        let mut order = Vec::new();
        while let Some(e) = k.step(f64::INFINITY) {
            order.push(e);
        }
        assert_eq!(order, vec!["done", "arrival-a", "arrival-b", "wake", "late"]);
        assert_eq!(k.now(), 2.0);
        assert_eq!(k.processed(), 5);
    }

    #[test]
    fn kernel_heap_pops_in_order_whatever_the_push_order() {
        let mut k = Kernel::new();
        let times: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
        for (i, &t) in times.iter().enumerate() {
            k.schedule(t, Urgency::Arrival, i);
        }
        let mut popped = Vec::new();
        while let Some(i) = k.step(f64::INFINITY) {
            popped.push((times[i], i));
        }
        let mut expected: Vec<(f64, usize)> = times.iter().copied().zip(0..).collect();
        expected.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        assert_eq!(popped, expected);
    }

    #[test]
    fn kernel_step_stops_at_until() {
        let mut k = Kernel::new();
        k.schedule(5.0, Urgency::Issue, 1);
        assert_eq!(k.step(4.0), None);
        k.advance_to(4.0);
        assert_eq!(k.now(), 4.0);
        assert_eq!(k.step(5.0), Some(1));
    }
}
