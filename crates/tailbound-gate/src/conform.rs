//! Requests beyond the Plan's token buckets: a meter per export that judges each read or write
//! as it reaches the dispatcher against the buckets its Plan gave it (issue 27: the API flags a
//! tenant "whose load left its characterisation").
//!
//! **Definition.** Export `w`'s buckets are the scheduler's for workload `w` (`priority` and
//! `pclock`: `(rate as utilisation, size in seconds of work)`, the Plan's storage buckets;
//! `nested`: the outermost class's bucket `(ρ_n, σ_n)` alone, see below; the other schedulers
//! have none, and nothing is counted). The meter is a copy of those buckets,
//! [`BucketSet`] with the shaper's own arithmetic (`tailbound_core::sched::bucket`: a request
//! adds its cost — its device-seconds from the profile, the cost the dispatcher enqueues it
//! with — to every bucket, each leaks at its rate, a request larger than a bucket fits it once
//! empty), fed the requests' arrival times at the dispatcher in arrival order (not the times
//! the scheduler releases them). A request **conforms** when every bucket has room for its cost
//! at its arrival (`BucketSet::ready_at(cost, t) == t`, i.e. a FIFO shaper holding nothing else
//! would let it through at once); it is then charged. A request that does not conform is
//! **beyond the buckets**: counted, with its bytes and its cost, and *not* charged, so the
//! meter follows the part of the stream that conforms (a burst `k` requests over the bucket
//! counts `k`, not every request after it; the same rule as the agent's `beyond_bucket` on the
//! network stage). The count is 0 exactly when the export's arrivals conform to each of its
//! buckets, which is what its characterisation (the r-b curve its buckets were cut from)
//! promised. A reload keeps an export's meter when its buckets are unchanged and starts a new
//! one (buckets empty) otherwise, as the shaper's buckets are.
//!
//! **Nested QoS** (`tailbound_core::sched::nested`): a request is beyond the workload's buckets
//! when its outermost bucket `B_n` has no room for it: it debits no bucket and is served best
//! effort, below every class. The classifier meets `B_n` first, with the same [`TokenBucket`]
//! arithmetic (`ready_at`, `charge`: the one in `sched::bucket`) and the same `(cost, arrival)`
//! the meter is fed, and debits `B_n` exactly when the request passes it; so a meter of the one
//! bucket `(ρ_n, σ_n)` counts exactly the requests the scheduler serves best effort (while the
//! scheduler and the meter start together: a reload that rebuilds the scheduler but keeps the
//! classes keeps the meter's state, module text above). Requests inside `B_n` but outside an
//! inner class are within the characterisation the Plan admitted (their class's latency is
//! promised) and are not counted. A workload without classes has no buckets: nothing counted.
//!
//! [`TokenBucket`]: tailbound_core::sched::TokenBucket

use tailbound_core::sched::BucketSet;

/// One export's meter (module documentation).
#[derive(Debug, Clone)]
pub struct Meter {
    /// The buckets `(rate, size_s)` it was built from (to tell whether a reload changed them).
    pub pairs: Vec<(f64, f64)>,
    set: BucketSet,
}

impl Meter {
    /// A meter of the buckets `pairs` (empty: every request conforms). The pairs are the
    /// scheduler's, already checked when it was built.
    pub fn new(pairs: &[(f64, f64)]) -> Result<Self, String> {
        let set = BucketSet::new(pairs).map_err(|e| e.to_string())?;
        Ok(Self { pairs: pairs.to_vec(), set })
    }

    /// A request of `cost` seconds of work arriving at `now` (seconds, non-decreasing): whether
    /// it is beyond the buckets (then it is not charged).
    pub fn beyond(&mut self, cost: f64, now: f64) -> bool {
        if self.set.is_unlimited() {
            return false;
        }
        if self.set.ready_at(cost, now) > now {
            return true;
        }
        self.set.charge(cost, now);
        false
    }
}

/// Each workload's buckets in the scheduler configuration `s` for `n` workloads (empty lists
/// when it has none).
pub fn scheduler_buckets(
    s: &tailbound_core::sched::SchedulerConfig,
    n: usize,
) -> Vec<Vec<(f64, f64)>> {
    use tailbound_core::sched::SchedulerConfig as S;
    match s {
        S::Priority { buckets, .. } | S::Pclock { buckets, .. } if !buckets.is_empty() => {
            buckets.clone()
        }
        S::Nested { classes } => (0..n)
            .map(|w| {
                let outermost = classes.get(w).and_then(|cs| cs.last());
                outermost.map(|&(sigma, rho, _)| vec![(rho, sigma)]).unwrap_or_default()
            })
            .collect(),
        _ => vec![Vec::new(); n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counts_the_requests_a_hand_sequence_sends_beyond_its_bucket() {
        // rate 0.5 s of work per s, size 2 s of work; every request costs 1 s of work.
        let mut m = Meter::new(&[(0.5, 2.0)]).unwrap();
        let seq = [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 6.0, 6.0, 6.0];
        let beyond: Vec<bool> = seq.iter().map(|&t| m.beyond(1.0, t)).collect();
        // t=0: two fit (level 2), two more are beyond and not charged; t=2: one leaked, one
        // fits, the next is beyond; t=6: level 2 − 2 = 0, two fit, the third is beyond.
        assert_eq!(beyond, [false, false, true, true, false, true, false, false, true]);
    }

    #[test]
    fn meter_needs_room_in_every_bucket_and_lets_a_large_request_into_an_empty_one() {
        let mut m = Meter::new(&[(1.0, 1.0), (0.1, 10.0)]).unwrap();
        assert!(!m.beyond(1.0, 0.0));
        assert!(m.beyond(1.0, 0.5)); // the fast bucket still holds 0.5: no room
        assert!(!m.beyond(1.0, 1.0)); // empty again; the slow one holds 1.9 of 10
                                      // larger than the fast bucket: conforms only once it is empty
        assert!(m.beyond(3.0, 1.5));
        assert!(!m.beyond(3.0, 2.0));
        // no buckets: nothing is ever beyond
        let mut free = Meter::new(&[]).unwrap();
        assert!((0..100).all(|_| !free.beyond(10.0, 0.0)));
    }

    #[test]
    fn meter_of_a_conforming_stream_counts_nothing() {
        // paced at exactly the rate: 1 s of work every 2 s into a bucket of rate 0.5, size 0
        let mut m = Meter::new(&[(0.5, 0.0)]).unwrap();
        assert!((0..50).all(|i| !m.beyond(1.0, 2.0 * f64::from(i))));
        assert!(m.beyond(1.0, 99.0)); // 1 s early
    }

    #[test]
    fn scheduler_buckets_reads_priority_and_pclock_and_nothing_else() {
        use tailbound_core::sched::SchedulerConfig as S;
        let p = S::Priority {
            priority: vec![1, 2],
            buckets: vec![vec![], vec![(0.5, 0.01)]],
            demotion: false,
        };
        assert_eq!(scheduler_buckets(&p, 2), vec![vec![], vec![(0.5, 0.01)]]);
        let p = S::Priority { priority: vec![1, 2], buckets: vec![], demotion: false };
        assert_eq!(scheduler_buckets(&p, 2), vec![Vec::<(f64, f64)>::new(); 2]);
        assert_eq!(scheduler_buckets(&S::Fifo, 3).len(), 3);
    }

    #[test]
    fn scheduler_buckets_of_nested_is_each_workloads_outermost_class() {
        use tailbound_core::sched::SchedulerConfig as S;
        let n = S::Nested { classes: vec![vec![(0.01, 0.1, 0.005), (0.02, 0.2, 0.05)], vec![]] };
        assert_eq!(scheduler_buckets(&n, 3), vec![vec![(0.2, 0.02)], vec![], vec![]]);
    }

    #[test]
    fn nested_meter_counts_exactly_what_the_scheduler_serves_best_effort() {
        // the classifier's outermost bucket, driven as `Nested::classify` drives it: passed
        // (debited) when it has room, otherwise the request is best effort and debits nothing
        use tailbound_core::sched::TokenBucket;
        let (sigma, rho) = (0.02, 0.2);
        let mut outer = TokenBucket::new(rho, sigma).unwrap();
        let mut m = Meter::new(&[(rho, sigma)]).unwrap();
        let mut x = 0.5_f64; // a deterministic irregular sequence of arrivals and costs
        let (mut t, mut best_effort, mut beyond) = (0.0, 0, 0);
        for _ in 0..5000 {
            x = (x * 3.7 * (1.0 - x)).clamp(1e-3, 1.0 - 1e-3);
            t += 0.004 * x;
            let cost = 0.0005 + 0.002 * (1.0 - x);
            if outer.ready_at(cost, t) > t {
                best_effort += 1;
            } else {
                outer.charge(cost, t);
            }
            beyond += usize::from(m.beyond(cost, t));
        }
        assert!(best_effort > 100, "{best_effort}: the sequence should overload the class");
        assert_eq!(beyond, best_effort);
    }
}
