//! WF2Q+: worst-case fair weighted fair queueing with the simplified system virtual time
//! (Bennett and Zhang, "Hierarchical packet fair queueing algorithms", IEEE/ACM ToN 5(5), 1997,
//! §III; the WF2Q baseline of the Nested QoS thesis, §4.2; `docs/nested-qos.md`).
//!
//! Workload `w` of weight `φ_w` is a session of guaranteed rate `φ_w / Σφ` of the queue's unit
//! rate (`cost` is seconds of exclusive service; **Σφ is over every configured workload**, busy
//! or not, as in `wfq`). Each session is FIFO; its head carries a start and a finish tag:
//!
//! ```text
//! head that arrived to an empty session:  S = max(F_prev, V),   F = S + cost · Σφ / φ_w
//! head after its predecessor left:        S = F_prev,           F = S + cost · Σφ / φ_w
//! ```
//!
//! where `F_prev` is the session's last finish tag and `V` the system virtual time
//!
//! ```text
//! V ← max(V + W, min { S of the backlogged sessions' heads }),
//! ```
//!
//! `W` being the work served since the last update. A head is **eligible** when `S ≤ V`; among
//! the eligible heads the smallest `F` is served, ties in arrival order. The `max` with the
//! smallest start tag makes some head eligible whenever one waits, so the scheduler is work
//! conserving; eligibility keeps a session from running ahead of its fluid (GPS) service.
//!
//! The queue does not see service progress, so `W` is counted when an item is handed out (its
//! whole `cost` at once) and `V` takes the `max` at every arrival and dequeue: the usual
//! discrete implementation. `V` advances only with work, not with idle time. An item's own class
//! and deadline are ignored. `set_param(Weight)` changes a weight (and Σφ) for tags computed
//! afterwards.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{check_workload, unsupported, Dequeue, Item, Param, Scheduler, TagKey, Tagged};
use crate::error::{Error, Result};

/// Tolerance of the eligibility test `S ≤ V` (seconds), so that rounding in the sums of tags
/// and of work never makes an exactly eligible head wait.
const ELIGIBLE_EPS: f64 = 1e-12;

/// WF2Q+ with a weight per workload.
#[derive(Debug)]
pub struct Wf2q {
    weight: Vec<f64>,
    /// `Σφ / φ_w` per workload: the virtual seconds one second of work takes in session `w`.
    stretch: Vec<f64>,
    /// Each session's waiting items (arrival sequence number, item), oldest first.
    queues: Vec<VecDeque<(u64, Item)>>,
    /// The finish tag of each session's latest head (0 before its first).
    finish: Vec<f64>,
    /// Heads not yet eligible, by start tag.
    waiting: BinaryHeap<Reverse<Tagged>>,
    /// Eligible heads, by finish tag.
    eligible: BinaryHeap<Reverse<Tagged>>,
    /// The start tag of each session's head (while it has one).
    start: Vec<f64>,
    /// System virtual time (seconds of work).
    v: f64,
    seq: u64,
    /// Number of waiting items.
    len: usize,
}

fn check_weight(w: f64) -> Result<f64> {
    if w > 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(Error::Invalid(format!("a weight must be positive, got {w}")))
    }
}

impl Wf2q {
    /// Session `w` of weight `weight[w]`.
    pub fn new(weight: Vec<f64>) -> Result<Self> {
        let weight = weight.into_iter().map(check_weight).collect::<Result<Vec<_>>>()?;
        let n = weight.len();
        let mut s = Self {
            weight,
            stretch: vec![1.0; n],
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            finish: vec![0.0; n],
            waiting: BinaryHeap::new(),
            eligible: BinaryHeap::new(),
            start: vec![0.0; n],
            v: 0.0,
            seq: 0,
            len: 0,
        };
        s.restretch();
        Ok(s)
    }

    fn restretch(&mut self) {
        let total: f64 = self.weight.iter().sum();
        self.stretch = self.weight.iter().map(|w| total / w).collect();
    }

    /// The system virtual time (seconds of work).
    pub fn virtual_time(&self) -> f64 {
        self.v
    }

    /// `V ← max(V, smallest backlogged start tag)`; an eligible head already has `S ≤ V`.
    fn catch_up(&mut self) {
        if self.eligible.is_empty() {
            if let Some(Reverse(Tagged(TagKey(s, _), _))) = self.waiting.peek() {
                self.v = self.v.max(*s);
            }
        }
    }

    /// Tag session `w`'s head (`start` given) and put it among the waiting heads.
    fn push_head(&mut self, w: usize, start: f64) {
        let &(seq, item) = self.queues[w].front().expect("a head");
        self.start[w] = start;
        self.finish[w] = start + item.cost * self.stretch[w];
        self.waiting.push(Reverse(Tagged(TagKey(start, seq), item)));
    }
}

impl Scheduler for Wf2q {
    fn enqueue_fields(
        &mut self,
        id: u64,
        workload: u32,
        class: u32,
        cost: f64,
        deadline: f64,
        now: f64,
    ) {
        let _ = now; // virtual time advances with work, not with the clock
        let item = Item { id, workload, class, cost, deadline };
        let w = workload as usize;
        self.queues[w].push_back((self.seq, item));
        self.seq += 1;
        self.len += 1;
        if self.queues[w].len() == 1 {
            self.catch_up();
            let start = self.finish[w].max(self.v);
            self.push_head(w, start);
        }
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        self.catch_up();
        while let Some(Reverse(Tagged(TagKey(s, seq), item))) = self.waiting.peek() {
            if *s > self.v + ELIGIBLE_EPS {
                break;
            }
            let (seq, item) = (*seq, *item);
            self.waiting.pop();
            let f = self.finish[item.workload as usize];
            self.eligible.push(Reverse(Tagged(TagKey(f, seq), item)));
        }
        let Some(Reverse(Tagged(_, item))) = self.eligible.pop() else {
            return Dequeue::Empty;
        };
        let w = item.workload as usize;
        self.queues[w].pop_front();
        self.len -= 1;
        self.v += item.cost;
        if !self.queues[w].is_empty() {
            self.push_head(w, self.finish[w]);
        }
        Dequeue::Ready(item)
    }

    fn len(&self) -> usize {
        self.len
    }

    /// `Weight` changes the workload's weight (and Σφ) for tags computed afterwards.
    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.weight.len())?;
        match param {
            Param::Weight(x) => {
                self.weight[w] = check_weight(x)?;
                self.restretch();
            }
            other => return unsupported("wf2q", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::ids;

    #[test]
    fn wf2q_serves_only_eligible_heads() {
        // A weight 3, B weight 1 (Σ 4: a second of work is 4/3 virtual seconds for A, 4 for B);
        // A sends four unit requests, B one, all at 0 (A first)
        let mut s = Wf2q::new(vec![3.0, 1.0]).unwrap();
        for id in 0..4 {
            s.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        s.enqueue(Item::new(10, 1, 1.0), 0.0);
        assert_eq!(s.len(), 5);
        // heads: A1 (S 0, F 4/3), B (S 0, F 4). V = 0: both eligible, A1 has the smaller F
        assert_eq!(ids(&mut s, 1), vec![0]);
        // V = 1; A2 (S 4/3, F 8/3) is not eligible (4/3 > 1), so B goes although its F (4) is
        // larger: smallest-finish-tag WFQ would serve A2 and A3 (F 4, older) before B
        assert_eq!(s.virtual_time(), 1.0);
        assert_eq!(ids(&mut s, 1), vec![10]);
        // V = 2: A2 eligible; V = 3: A3 (S 8/3); V = 4: A4 (S 4)
        assert_eq!(ids(&mut s, 3), vec![1, 2, 3]);
        assert_eq!(s.virtual_time(), 5.0);
        assert!(s.is_empty());
        assert_eq!(s.dequeue(0.0), Dequeue::Empty);
    }

    #[test]
    fn wf2q_virtual_time_jumps_to_the_smallest_start_tag() {
        // B alone, weight 1 of Σ 4: its tags are 4 apart, V advances 1 per request, so each
        // head would wait: V = max(V + W, min S) makes it eligible at once (work conserving)
        let mut s = Wf2q::new(vec![3.0, 1.0]).unwrap();
        for id in 0..3 {
            s.enqueue(Item::new(id, 1, 1.0), 0.0);
        }
        // S 0, 4, 8; V: 0, + 1 = 1, max(1, 4) = 4, + 1 = 5, max(5, 8) = 8, + 1 = 9
        assert_eq!(ids(&mut s, 3), vec![0, 1, 2]);
        assert_eq!(s.virtual_time(), 9.0);
        // a session arriving to an empty queue starts at max(F_prev, V): A at V = 9
        s.enqueue(Item::new(3, 0, 1.0), 5.0);
        s.enqueue(Item::new(4, 1, 1.0), 5.0); // B: max(F_prev = 12, 9) = 12
        assert_eq!(s.start[0], 9.0);
        assert_eq!(s.start[1], 12.0);
        assert_eq!(ids(&mut s, 2), vec![3, 4]);
    }

    #[test]
    fn wf2q_shares_work_by_weight_under_backlog() {
        let mut s = Wf2q::new(vec![1.0, 2.0, 5.0]).unwrap();
        for i in 0..6000 {
            s.enqueue(Item::new(i, (i % 3) as u32, 0.01), 0.0);
        }
        let mut served = [0usize; 3];
        for n in 1..=800 {
            let Dequeue::Ready(item) = s.dequeue(0.0) else { panic!() };
            served[item.workload as usize] += 1;
            // worst-case fairness: never more than one request ahead of the fluid share
            for (w, share) in [1.0, 2.0, 5.0].iter().enumerate() {
                let fluid = n as f64 * share / 8.0;
                assert!(served[w] as f64 <= fluid + 1.0 + 1e-9, "{n}: {served:?}");
            }
        }
        assert_eq!(served, [100, 200, 500]);
        assert!(s.set_param(0, Param::Weight(0.0)).is_err());
        assert!(s.set_param(3, Param::Weight(1.0)).is_err());
        assert!(s.set_param(0, Param::Deadline(1.0)).is_err());
        s.set_param(0, Param::Weight(5.0)).unwrap();
        assert!(Wf2q::new(vec![f64::NAN]).is_err());
    }
}
