//! Nested QoS: a nested token-bucket classifier per workload and one EDF over every workload's
//! class queues (Wang, "Nested QoS: Providing Flexible SLAs in Shared Storage Systems", Rice
//! University thesis, §3.1.2 and §3.2.1, Algorithms 1–2; `docs/nested-qos.md`).
//!
//! A workload buys `n` nested classes `C_1 ⊆ … ⊆ C_n`, class `i` = `(σ_i, ρ_i, δ_i)` with
//! `σ_i ≤ σ_{i+1}`, `ρ_i ≤ ρ_{i+1}`, `δ_i ≤ δ_{i+1}` (innermost first): the requests within the
//! `(σ_i, ρ_i)` envelope are promised a response time of `δ_i`. Units as everywhere in `sched`:
//! `σ` in seconds of work at this queue (tokens; the thesis' `σ` requests times a request's
//! work), `ρ` a utilisation (the thesis' IOPS times a request's work), `δ` seconds. The buckets
//! are [`TokenBucket`]s (start full, refill at `ρ`, capped at `σ`, real-valued; a request larger
//! than `σ` fits a full bucket).
//!
//! **Classifier.** An arriving request of cost `x` meets the outermost bucket `B_n` first; while
//! `B_k` has `x` tokens it takes them and moves inward; the first bucket without them stops it,
//! and it joins `Q_{k+1}`, the class of the last bucket it passed:
//!
//! ```text
//! class(r) = min { k : B_k, B_{k+1}, …, B_n all had room for r },   debit B_class … B_n only.
//! ```
//!
//! So `Q_1` receives `C_1`, `Q_2` receives `C_2 − C_1`, …, and an inner bucket is never debited
//! for a request it did not pass. Its deadline is `arrival + δ_class`. This is the cascade of
//! the thesis' text (§3.2, "Request Classification"); its Algorithm 2 instead searches for the
//! boundary `tokens(k+1) ≥ 1 > tokens(k)`, relying on Eq. (6) (an inner bucket never holds more
//! tokens than an outer one), which fails for real-valued tokens (a unit test shows a state where
//! it does), so the cascade decides.
//!
//! **Outside the outermost envelope** (`B_n` has no room; a choice the thesis leaves open,
//! §3.1.3: "a higher level class, which has low priority and won't compete with the requests
//! from other well-behaved clients"): the request debits no bucket and is **best effort**, a
//! tier below every class — served only when no request of any class waits, oldest first
//! (arrival order over all workloads). It is never dropped or delayed on purpose; it cannot
//! push an enveloped request of any workload past its deadline, as an overdue finite deadline
//! in the same EDF would. A workload without classes is best effort for all its requests.
//!
//! **Scheduler.** One EDF over all class queues of all workloads: the earliest deadline first,
//! ties in arrival order. Each queue is FIFO with increasing deadlines, so the thesis compares
//! queue heads; one heap over all queued requests serves the same order.
//!
//! **An item's own tags are ignored** (a choice): its deadline is its class's, so that the
//! envelopes keep the thesis' capacity bound true (Lemma 1), and its class is the classifier's.
//! A policy that assigns per-request deadlines upstream uses `edf`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{unsupported, Dequeue, Item, Param, Scheduler, TagKey, Tagged, TokenBucket};
use crate::error::{Error, Result};

/// One class `(σ seconds of work, ρ utilisation, δ seconds)` of a workload.
pub type NestedClass = (f64, f64, f64);

/// Nested QoS: per-workload nested classifiers and one EDF.
#[derive(Debug)]
pub struct Nested {
    /// Per workload, its buckets `(ρ_i, σ_i)`, innermost first.
    buckets: Vec<Vec<TokenBucket>>,
    /// Per workload, `δ_i` per class (seconds), innermost first.
    delta: Vec<Vec<f64>>,
    edf: BinaryHeap<Reverse<Tagged>>,
    best_effort: VecDeque<Item>,
    seq: u64,
}

/// Check one workload's classes: each `σ > 0`, `ρ > 0`, `δ > 0` and finite, nested outward
/// (`σ`, `ρ`, `δ` non-decreasing). The message names the class (1-based, innermost first).
pub fn check_classes(classes: &[NestedClass]) -> std::result::Result<(), String> {
    for (i, &(sigma, rho, delta)) in classes.iter().enumerate() {
        for (name, v) in [("sigma_s", sigma), ("rho", rho), ("delta_s", delta)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!(
                    "class {}: {name} must be positive and finite, got {v}",
                    i + 1
                ));
            }
        }
        if i > 0 {
            let (s0, r0, d0) = classes[i - 1];
            for (name, inner, outer) in
                [("sigma_s", s0, sigma), ("rho", r0, rho), ("delta_s", d0, delta)]
            {
                if outer < inner {
                    return Err(format!(
                        "classes must be nested: class {} has {name} {outer} < {inner} of class {}",
                        i + 1,
                        i
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Nested {
    /// `classes[w]`: workload `w`'s classes `(σ, ρ, δ)`, innermost first (none: best effort).
    pub fn new(classes: Vec<Vec<NestedClass>>) -> Result<Self> {
        let mut buckets = Vec::with_capacity(classes.len());
        let mut delta = Vec::with_capacity(classes.len());
        for (w, cs) in classes.iter().enumerate() {
            check_classes(cs).map_err(|e| Error::Invalid(format!("workload {w}: {e}")))?;
            buckets.push(
                cs.iter().map(|&(s, r, _)| TokenBucket::new(r, s)).collect::<Result<Vec<_>>>()?,
            );
            delta.push(cs.iter().map(|c| c.2).collect());
        }
        Ok(Self { buckets, delta, edf: BinaryHeap::new(), best_effort: VecDeque::new(), seq: 0 })
    }

    /// Classify a request of `workload` with `cost` seconds of work arriving at `now`: its class
    /// (0 innermost) or the number of classes (best effort), debiting the buckets it passed.
    fn classify(&mut self, workload: usize, cost: f64, now: f64) -> usize {
        let buckets = &mut self.buckets[workload];
        let mut class = buckets.len();
        for k in (0..buckets.len()).rev() {
            if buckets[k].ready_at(cost, now) > now {
                break;
            }
            buckets[k].charge(cost, now);
            class = k;
        }
        class
    }
}

impl Scheduler for Nested {
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
        let k = self.classify(w, cost, now);
        match self.delta[w].get(k) {
            Some(delta) => {
                self.edf.push(Reverse(Tagged(TagKey(now + delta, self.seq), item)));
                self.seq += 1;
            }
            None => self.best_effort.push_back(item),
        }
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        if let Some(Reverse(Tagged(_, item))) = self.edf.pop() {
            return Dequeue::Ready(item);
        }
        match self.best_effort.pop_front() {
            Some(item) => Dequeue::Ready(item),
            None => Dequeue::Empty,
        }
    }

    fn len(&self) -> usize {
        self.edf.len() + self.best_effort.len()
    }

    /// Nested QoS has no run-time parameter (its classes are its configuration).
    fn set_param(&mut self, _workload: u32, param: Param) -> Result<()> {
        unsupported("nested", &param)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thesis' example SLA (§3.1.2) in request units (each request costs 1):
    /// (10, 100/s, 5 ms), (20, 110/s, 50 ms), (30, 120/s, 500 ms).
    fn sla() -> Vec<NestedClass> {
        vec![(10.0, 100.0, 0.005), (20.0, 110.0, 0.05), (30.0, 120.0, 0.5)]
    }

    /// Tokens left in each bucket of workload `w` at `now` (innermost first).
    fn tokens(s: &Nested, w: usize, now: f64) -> Vec<f64> {
        s.buckets[w].iter().map(|b| b.size - (b.ready_at(b.size, now) - now) * b.rate).collect()
    }

    fn served(s: &mut Nested) -> Vec<u64> {
        let mut out = Vec::new();
        while let Dequeue::Ready(item) = s.dequeue(0.0) {
            out.push(item.id);
        }
        out
    }

    #[test]
    fn nested_burst_fills_classes_inward_out_and_debits_only_passed_buckets() {
        let mut s = Nested::new(vec![sla()]).unwrap();
        // 35 requests at t = 0: B_1 (10 tokens) passes the first 10, B_2 the next 10 (B_1 is
        // empty), B_3 the next 10 (B_2 empty), and the last 5 find B_3 empty: best effort
        let classes: Vec<usize> = (0..35).map(|_| s.classify(0, 1.0, 0.0)).collect();
        let expected: Vec<usize> = [0; 10].into_iter().chain([1; 10]).chain([2; 10]).collect();
        assert_eq!(classes[..30], expected[..]);
        assert_eq!(classes[30..], [3; 5]);
        // class-1 requests took a token from all three buckets, class 2 from B_2 and B_3, class
        // 3 from B_3 alone, best effort from none: every bucket is exactly empty
        for t in tokens(&s, 0, 0.0) {
            assert!(t.abs() < 1e-9, "{t}");
        }
        // 10 ms later the buckets hold ρ·0.01 = 1, 1.1 and 1.2 tokens: one request passes all
        // three (class 1); the next finds B_3 with 0.2 tokens: best effort, debiting nothing
        assert_eq!(s.classify(0, 1.0, 0.01), 0);
        let after: Vec<f64> = tokens(&s, 0, 0.01);
        assert!((after[0] - 0.0).abs() < 1e-9 && (after[1] - 0.1).abs() < 1e-9, "{after:?}");
        assert!((after[2] - 0.2).abs() < 1e-9, "{after:?}");
        assert_eq!(s.classify(0, 1.0, 0.01), 3);
        assert_eq!(tokens(&s, 0, 0.01), after);
    }

    #[test]
    fn nested_an_inner_bucket_with_room_does_not_help_past_an_empty_outer_one() {
        // B_1 = (1, 1/s), B_2 = (1.5, 1/s), B_3 = (10, 10/s); tokens after each step by hand
        let mut s =
            Nested::new(vec![vec![(1.0, 1.0, 0.01), (1.5, 1.0, 0.1), (10.0, 10.0, 1.0)]]).unwrap();
        let close = |a: Vec<f64>, b: [f64; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        assert_eq!(s.classify(0, 1.0, 0.0), 0); // through all three: (0, 0.5, 9)
        assert!(close(tokens(&s, 0, 0.0), [0.0, 0.5, 9.0]));
        // at 0.7: (0.7, 1.2, 10); B_1 has no whole token: class 2, B_1 keeps its 0.7
        assert_eq!(s.classify(0, 1.0, 0.7), 1);
        assert!(close(tokens(&s, 0, 0.7), [0.7, 0.2, 9.0]));
        // at 1.0: (1.0, 0.5, 10): B_1 has a token but B_2 does not. The request meets B_3, then
        // B_2, which stops it: class 3, debiting B_3 alone (B_1 is never reached). The thesis'
        // Eq. (6) (an inner bucket never holds more tokens than an outer one) fails for
        // real-valued tokens, so the cascade of §3.2 decides, not a search for a bucket with room.
        assert_eq!(s.classify(0, 1.0, 1.0), 2);
        assert!(close(tokens(&s, 0, 1.0), [1.0, 0.5, 9.0]));
        // a request larger than a bucket fits it when the bucket is full (bucket.rs' rule)
        let mut big = Nested::new(vec![vec![(1.0, 1.0, 0.01), (10.0, 1.0, 0.1)]]).unwrap();
        assert_eq!(big.classify(0, 5.0, 0.0), 0);
        assert_eq!(big.classify(0, 5.0, 0.0), 1);
    }

    #[test]
    fn nested_edf_over_all_workloads_classes_then_best_effort() {
        // workload 0: the SLA above; workload 1: one class (2, 100/s, 20 ms); workload 2: none
        let mut s = Nested::new(vec![sla(), vec![(2.0, 100.0, 0.02)], vec![]]).unwrap();
        s.enqueue(Item::new(1, 2, 1.0), 0.0); // no classes: best effort
        for id in 10..45 {
            s.enqueue(Item::new(id, 0, 1.0), 0.0); // 10 class 1, 10 class 2, 10 class 3, 5 BE
        }
        s.enqueue(Item::new(50, 1, 1.0), 0.001); // class 1 of workload 1: due 0.021
        s.enqueue(Item::new(51, 1, 1.0), 0.001); // due 0.021, after 50
        s.enqueue(Item::new(52, 1, 1.0), 0.001); // outside (2, 100/s): best effort
                                                 // its own deadline is ignored: B_3 is empty, so best effort
        s.enqueue(Item::new(60, 0, 1.0).with_deadline(0.0), 0.002);
        assert_eq!(s.len(), 40);
        let order = served(&mut s);
        let mut expected: Vec<u64> = (10..20).collect(); // due 0.005
        expected.extend([50, 51]); // due 0.021
        expected.extend(20..30); // due 0.05
        expected.extend(30..40); // due 0.5
        expected.extend([1, 40, 41, 42, 43, 44, 52, 60]); // best effort, in arrival order
        assert_eq!(order, expected);
        assert_eq!(s.dequeue(1.0), Dequeue::Empty);
        assert!(s.set_param(0, Param::Deadline(1.0)).is_err());
    }

    #[test]
    fn nested_rejects_classes_not_nested_or_not_positive() {
        assert!(Nested::new(vec![sla()]).is_ok());
        let bad = |cs: Vec<NestedClass>| Nested::new(vec![cs]).unwrap_err().to_string();
        assert!(bad(vec![(20.0, 1.0, 0.1), (10.0, 1.0, 0.2)]).contains("sigma_s 10 < 20"));
        assert!(bad(vec![(1.0, 2.0, 0.1), (1.0, 1.0, 0.2)]).contains("rho"));
        assert!(bad(vec![(1.0, 1.0, 0.2), (1.0, 1.0, 0.1)]).contains("class 2 has delta_s"));
        assert!(bad(vec![(0.0, 1.0, 0.1)]).contains("class 1: sigma_s"));
        assert!(bad(vec![(1.0, f64::INFINITY, 0.1)]).contains("rho"));
        assert!(bad(vec![(1.0, 1.0, -0.1)]).contains("delta_s"));
    }
}
