//! pClock: arrival-curve tags and EDF on finish tags (Gulati, Merchant, Varman, "pClock: an
//! arrival curve based approach for QoS guarantees in shared storage systems", SIGMETRICS 2007;
//! as the Nested QoS thesis describes it, §2.2.2 and §3.1.3; `docs/nested-qos.md`).
//!
//! Workload `w` has an arrival curve, token buckets `(ρ, σ)` (as [`BucketSet`]: `ρ` a
//! utilisation, `σ` seconds of work; usually one), and a latency `δ_w` in seconds. A request of
//! cost `x` arriving at `t` is tagged
//!
//! ```text
//! S = max(S_prev, first time ≥ t at which every bucket has x tokens),   F = S + δ_w,
//! ```
//!
//! and takes its `x` tokens at `t` whether or not it conforms, so the buckets run into debt: a
//! request over the curve is treated as if it had arrived at the first time it would conform
//! (the thesis' Figure 3.4(b)), and the requests after it are pushed behind it (Figure 3.4(c), the
//! cascade Nested QoS avoids). The request with the smallest finish tag is served first, ties in
//! arrival order; the scheduler is work conserving (a request whose start tag is in the future
//! is still served when it is the earliest finish tag: spare capacity goes to it).
//!
//! **Spare capacity** (pClock's synchronisation, which keeps a workload that used idle capacity
//! from being starved later): when a request arrives at `t` and every backlogged workload's
//! oldest start tag is after `t`, all their tags are shifted back by `min_j S_j − t` (their
//! earliest start tag becomes `t`). The shift also applies to the state that tags the next
//! request (a choice the thesis leaves open: the previous start tag moves back, and the buckets
//! are credited the shift's worth of tokens, [`BucketSet::leak`]), so a workload's later requests
//! are not pushed past those already shifted. Only arrivals synchronise, as in pClock.
//!
//! An item's own class and deadline are ignored (its tags are the curve's). A workload is served
//! in FIFO order (its tags increase), so only each workload's head is compared. The
//! synchronisation check looks at every workload's head: O(workloads) per arrival.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{check_workload, unsupported, BucketSet, Dequeue, Item, Param, Scheduler};
use super::{TagKey, Tagged};
use crate::error::{Error, Result};

/// A queued request: its start tag and its finish-tag key, both `+ offset` (see [`Pclock`]).
type Queued = (f64, TagKey, Item);

/// pClock.
#[derive(Debug)]
pub struct Pclock {
    buckets: Vec<BucketSet>,
    delta: Vec<f64>,
    /// The start tag of each workload's latest request (seconds, true time).
    last_start: Vec<f64>,
    /// Each workload's waiting requests, oldest first.
    queues: Vec<VecDeque<Queued>>,
    /// Each backlogged workload's head, by finish tag.
    heads: BinaryHeap<Reverse<Tagged>>,
    /// The sum of the shifts since the queue was last empty: a stored tag is its true value plus
    /// `offset`, so a shift of every queued tag is one addition (every queued request belongs to
    /// a backlogged workload).
    offset: f64,
    seq: u64,
    /// Number of waiting items.
    len: usize,
}

fn check_delta(d: f64) -> Result<f64> {
    if d >= 0.0 && d.is_finite() {
        Ok(d)
    } else {
        Err(Error::Invalid(format!("a latency must be >= 0 seconds, got {d}")))
    }
}

impl Pclock {
    /// Workload `w`: arrival curve `buckets[w]` (`(rate, size)` pairs; none: every request
    /// conforms) and latency `delta[w]` seconds.
    pub fn new(buckets: Vec<Vec<(f64, f64)>>, delta: Vec<f64>) -> Result<Self> {
        if buckets.len() != delta.len() {
            return Err(Error::Invalid("pclock needs as many arrival curves as latencies".into()));
        }
        let n = delta.len();
        let delta = delta.into_iter().map(check_delta).collect::<Result<Vec<_>>>()?;
        let buckets = buckets.iter().map(|b| BucketSet::new(b)).collect::<Result<Vec<_>>>()?;
        Ok(Self {
            buckets,
            delta,
            last_start: vec![f64::NEG_INFINITY; n],
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            heads: BinaryHeap::new(),
            offset: 0.0,
            seq: 0,
            len: 0,
        })
    }

    /// The start tag (seconds) of workload `w`'s latest request (`-inf` before its first).
    pub fn start_tag(&self, workload: u32) -> f64 {
        self.last_start[workload as usize]
    }

    /// pClock's synchronisation at an arrival at `now` (module documentation).
    fn synchronise(&mut self, now: f64) {
        let min_start = self
            .queues
            .iter()
            .filter_map(|q| q.front().map(|(s, _, _)| s - self.offset))
            .fold(f64::INFINITY, f64::min);
        if min_start.is_finite() && min_start > now {
            let shift = min_start - now;
            self.offset += shift;
            for (w, q) in self.queues.iter().enumerate() {
                if !q.is_empty() {
                    self.last_start[w] -= shift;
                    self.buckets[w].leak(shift, now);
                }
            }
        }
    }
}

impl Scheduler for Pclock {
    fn enqueue_fields(
        &mut self,
        id: u64,
        workload: u32,
        class: u32,
        cost: f64,
        deadline: f64,
        now: f64,
    ) {
        let item = Item { id, workload, class, cost, deadline };
        let w = workload as usize;
        self.synchronise(now);
        let start = self.last_start[w].max(self.buckets[w].ready_at(cost, now));
        self.buckets[w].charge(cost, now);
        self.last_start[w] = start;
        let key = TagKey(start + self.delta[w] + self.offset, self.seq);
        self.seq += 1;
        if self.queues[w].is_empty() {
            self.heads.push(Reverse(Tagged(key, item)));
        }
        self.queues[w].push_back((start + self.offset, key, item));
        self.len += 1;
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        let Some(Reverse(Tagged(_, item))) = self.heads.pop() else {
            return Dequeue::Empty;
        };
        let q = &mut self.queues[item.workload as usize];
        q.pop_front();
        self.len -= 1;
        if let Some(&(_, key, next)) = q.front() {
            self.heads.push(Reverse(Tagged(key, next)));
        }
        if self.heads.is_empty() {
            self.offset = 0.0; // nothing stored: restart the offset
        }
        Dequeue::Ready(item)
    }

    fn len(&self) -> usize {
        self.len
    }

    /// `Deadline` sets the workload's latency `δ`, `Buckets` its arrival curve (fresh buckets),
    /// both for requests arriving afterwards.
    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.delta.len())?;
        match param {
            Param::Deadline(d) => self.delta[w] = check_delta(d)?,
            Param::Buckets(b) => self.buckets[w] = BucketSet::new(&b)?,
            other => return unsupported("pclock", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::ids;

    /// The true (start, finish) tags of workload `w`'s waiting requests.
    fn tags(s: &Pclock, w: usize) -> Vec<(f64, f64)> {
        s.queues[w].iter().map(|(st, k, _)| (st - s.offset, k.0 - s.offset)).collect()
    }

    fn close(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| (x.0 - y.0).abs() < 1e-9 && (x.1 - y.1).abs() < 1e-9)
    }

    #[test]
    fn pclock_pushes_a_start_tag_to_the_first_conforming_time() {
        // σ = 2, ρ = 1, δ = 0.5; five unit requests at 0: two conform, the next three would
        // conform at 1, 2, 3 (a token per second)
        let mut s = Pclock::new(vec![vec![(1.0, 2.0)]], vec![0.5]).unwrap();
        for id in 0..5 {
            s.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        assert_eq!(s.len(), 5);
        let expected = [(0.0, 0.5), (0.0, 0.5), (1.0, 1.5), (2.0, 2.5), (3.0, 3.5)];
        assert!(close(&tags(&s, 0), &expected), "{:?}", tags(&s, 0));
        // at 1.5 the buckets still owe 3 tokens (5 taken, 1.5 refilled, 2 held): the next would
        // conform at 4 = S_prev + 1, not at its arrival
        s.enqueue(Item::new(5, 0, 1.0), 1.5);
        assert!((s.start_tag(0) - 4.0).abs() < 1e-9);
        assert_eq!(ids(&mut s, 6), vec![0, 1, 2, 3, 4, 5]);
        assert!(s.is_empty());
        // much later the buckets are full again: S = arrival
        s.enqueue(Item::new(6, 0, 1.0), 100.0);
        assert_eq!(s.start_tag(0), 100.0);
        // no arrival curve: every request conforms
        let mut free = Pclock::new(vec![vec![]], vec![0.1]).unwrap();
        for id in 0..3 {
            free.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        assert!(close(&tags(&free, 0), &[(0.0, 0.1); 3]));
    }

    #[test]
    fn pclock_serves_the_smallest_finish_tag_across_workloads() {
        // workload 0: δ 1 s, workload 1: δ 0.2 s, no curves: EDF on arrival + δ
        let mut s = Pclock::new(vec![vec![], vec![]], vec![1.0, 0.2]).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0); // F 1
        s.enqueue(Item::new(2, 1, 1.0), 0.5); // F 0.7
        s.enqueue(Item::new(3, 1, 1.0), 0.8); // F 1.0, ties with 1: arrival order
        s.enqueue(Item::new(4, 0, 1.0), 0.1); // F 1.1
        assert_eq!(ids(&mut s, 4), vec![2, 1, 3, 4]);
        assert_eq!(s.dequeue(1.0), Dequeue::Empty);
        assert!(s.set_param(0, Param::Weight(1.0)).is_err());
        assert!(s.set_param(2, Param::Deadline(1.0)).is_err());
        assert!(s.set_param(0, Param::Deadline(-1.0)).is_err());
        s.set_param(0, Param::Deadline(0.05)).unwrap();
        s.set_param(0, Param::Buckets(vec![(1.0, 1.0)])).unwrap();
        assert!(Pclock::new(vec![vec![(0.0, 1.0)]], vec![1.0]).is_err());
        assert!(Pclock::new(vec![vec![]], vec![f64::NAN]).is_err());
        assert!(Pclock::new(vec![], vec![1.0]).is_err());
    }

    #[test]
    fn pclock_synchronises_tags_that_ran_ahead_when_another_workload_arrives() {
        // workload 0: σ = 1, ρ = 1, δ = 1; four unit requests at 0 get S = 0, 1, 2, 3
        let mut s = Pclock::new(vec![vec![(1.0, 1.0)], vec![(1.0, 1.0)]], vec![1.0, 1.0]).unwrap();
        for id in 0..4 {
            s.enqueue(Item::new(id, 0, 1.0), 0.0);
        }
        // the device serves two at once (spare capacity): workload 0's oldest start tag is now 2
        assert_eq!(ids(&mut s, 2), vec![0, 1]);
        // workload 1 arrives at 0.5: every backlogged start tag (2) is after 0.5, so workload
        // 0's tags move back 1.5: (0.5, 1.5), (1.5, 2.5); workload 1's request gets (0.5, 1.5)
        s.enqueue(Item::new(10, 1, 1.0), 0.5);
        assert!(close(&tags(&s, 0), &[(0.5, 1.5), (1.5, 2.5)]), "{:?}", tags(&s, 0));
        assert!(close(&tags(&s, 1), &[(0.5, 1.5)]));
        // workload 0's next request follows its shifted tags (credited 1.5 tokens: its debt of
        // 3.5 at 0.5 becomes 2, so it conforms at 2.5 = 1.5 + 1), not at 0.5 + 3.5 = 4
        s.enqueue(Item::new(4, 0, 1.0), 0.5);
        assert!((s.start_tag(0) - 2.5).abs() < 1e-9, "{}", s.start_tag(0));
        // served by finish tag: 1.5 (workload 0, older), 1.5 (workload 1), 2.5, 3.5
        assert_eq!(ids(&mut s, 4), vec![2, 10, 3, 4]);
        // without a backlogged start tag after the arrival nothing moves
        let mut t = Pclock::new(vec![vec![(1.0, 1.0)], vec![]], vec![1.0, 1.0]).unwrap();
        t.enqueue(Item::new(0, 0, 1.0), 0.0);
        t.enqueue(Item::new(1, 0, 1.0), 0.0); // S = 1
        t.enqueue(Item::new(2, 1, 1.0), 0.5); // oldest start tag 0 ≤ 0.5: no shift
        assert!(close(&tags(&t, 0), &[(0.0, 1.0), (1.0, 2.0)]));
    }
}
