//! Requests beyond the Plan's token buckets: a meter per export that judges each read or write
//! as it reaches the dispatcher against the buckets its Plan gave it (issue 27: the API flags a
//! tenant "whose load left its characterisation").
//!
//! **Definition.** Export `w`'s buckets are the scheduler's for workload `w` (`priority` and
//! `pclock`: `(rate as utilisation, size in seconds of work)`, the Plan's storage buckets; the
//! other schedulers have none, and nothing is counted). The meter is a copy of those buckets,
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
}
