//! Strict priority with per-workload FIFO queues and token-bucket rate limits (PriorityMeister,
//! thesis §2.2 and §2.2.1).
//!
//! Each workload has its own FIFO queue, a priority level (larger is more important) and zero or
//! more leaky token buckets. The scheduler serves the head of the highest-priority non-empty queue
//! whose workload is within its limits; among workloads at the same level it serves the head that
//! arrived first. What happens to a head outside its limits depends on [`LimitMode`]:
//!
//! - `Shaping`: the head waits until every bucket has room; if nothing else is eligible the answer
//!   is `Future(t)` with the earliest such time.
//! - `Demotion` (thesis §2.2.1: "workloads exceeding its rate limit are treated as the default
//!   lowest priority level"): the head is served below every configured level, in arrival order
//!   among demoted heads. Demoted requests are **not** charged to the buckets (the buckets meter
//!   what was served at the workload's priority), so the traffic a workload sends at its priority
//!   always conforms to its `(r, b)` — which is what the static-priority bound assumes.
//!
//! A workload's requests are never reordered among themselves.

use std::collections::VecDeque;

use super::{check_workload, unsupported, BucketSet, Dequeue, Item, Param, Peeked, Scheduler};
use crate::error::Result;

/// What a rate limit does to a request outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMode {
    /// The request waits for tokens.
    Shaping,
    /// The request is served at the lowest priority, below every configured level.
    Demotion,
}

#[derive(Debug)]
struct Class {
    queue: VecDeque<(Item, u64)>,
    priority: i64,
    buckets: BucketSet,
    /// When the head fits every bucket. Only this workload's own service charges its buckets,
    /// so the time stays valid until the head or the buckets change; computing it then spares
    /// every dequeue the bucket arithmetic.
    head_ready: f64,
}

impl Class {
    fn refresh(&mut self, now: f64) {
        self.head_ready = match self.queue.front() {
            Some((head, _)) => self.buckets.ready_at(head.cost, now),
            None => f64::INFINITY,
        };
    }
}

/// Strict priority with per-workload FIFO queues and optional token buckets.
#[derive(Debug)]
pub struct Priority {
    classes: Vec<Class>,
    /// Per level, most important first: the workloads with a non-empty queue (so a dequeue
    /// looks at busy workloads only, whatever the number of workloads).
    active: Vec<Vec<usize>>,
    /// Each workload's level index (0 is the most important level).
    level_of: Vec<usize>,
    mode: LimitMode,
    seq: u64,
    len: usize,
}

impl Priority {
    /// One queue per workload with `priority[w]` and buckets `buckets[w]` (`(rate, size)` pairs).
    pub fn new(priority: Vec<i64>, buckets: Vec<Vec<(f64, f64)>>, mode: LimitMode) -> Result<Self> {
        let classes = priority
            .into_iter()
            .zip(buckets)
            .map(|(p, b)| {
                let buckets = BucketSet::new(&b)?;
                Ok(Class { queue: VecDeque::new(), priority: p, buckets, head_ready: 0.0 })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut s =
            Self { classes, active: Vec::new(), level_of: Vec::new(), mode, seq: 0, len: 0 };
        s.regroup();
        Ok(s)
    }

    fn regroup(&mut self) {
        let mut levels: Vec<i64> = self.classes.iter().map(|c| c.priority).collect();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        levels.dedup();
        self.level_of = self
            .classes
            .iter()
            .map(|c| levels.iter().position(|&p| p == c.priority).expect("level exists"))
            .collect();
        self.active = vec![Vec::new(); levels.len()];
        for (w, class) in self.classes.iter().enumerate() {
            if !class.queue.is_empty() {
                self.active[self.level_of[w]].push(w);
            }
        }
    }

    fn pop(&mut self, w: usize, now: f64, charge: bool) -> Dequeue {
        let class = &mut self.classes[w];
        let (item, _) = class.queue.pop_front().expect("chosen queue is non-empty");
        if charge {
            class.buckets.charge(item.cost, now);
        }
        class.refresh(now);
        if class.queue.is_empty() {
            let level = &mut self.active[self.level_of[w]];
            let at = level.iter().position(|&x| x == w).expect("busy workload is active");
            level.swap_remove(at);
        }
        self.len -= 1;
        Dequeue::Ready(item)
    }
}

impl Scheduler for Priority {
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
        let w = item.workload as usize;
        let was_empty = self.classes[w].queue.is_empty();
        self.classes[w].queue.push_back((item, self.seq));
        if was_empty {
            self.active[self.level_of[w]].push(w);
            self.classes[w].refresh(now);
        }
        self.seq += 1;
        self.len += 1;
    }

    fn dequeue(&mut self, now: f64) -> Dequeue {
        match self.choose(now) {
            Choice::Ready(w, charge) => self.pop(w, now, charge),
            Choice::Future(t) => Dequeue::Future(t),
            Choice::Empty => Dequeue::Empty,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.classes.len())?;
        match param {
            Param::Priority(p) => {
                self.classes[w].priority = p;
                self.regroup();
            }
            Param::Buckets(pairs) => {
                self.classes[w].buckets = BucketSet::new(&pairs)?;
                // a fresh set starts empty, so the head fits whenever it is asked
                self.classes[w].refresh(f64::NEG_INFINITY);
            }
            other => return unsupported("priority", &other),
        }
        Ok(())
    }

    fn level(&self, workload: u32) -> i64 {
        self.classes.get(workload as usize).map_or(0, |c| c.priority)
    }

    fn peek(&self, now: f64) -> Option<Peeked> {
        match self.choose(now) {
            Choice::Ready(w, charge) => {
                let class = &self.classes[w];
                let &(item, _) = class.queue.front().expect("chosen queue is non-empty");
                Some(Peeked { item, level: if charge { class.priority } else { i64::MIN } })
            }
            _ => None,
        }
    }

    fn top_level(&self) -> i64 {
        self.classes.iter().map(|c| c.priority).max().unwrap_or(0)
    }
}

/// What the next dequeue does: serve workload `w` (charging its buckets, or demoted when
/// `false`), wait until a time, or nothing.
enum Choice {
    Ready(usize, bool),
    Future(f64),
    Empty,
}

impl Priority {
    /// The next dequeue's choice (module documentation), without changing anything.
    fn choose(&self, now: f64) -> Choice {
        if self.len == 0 {
            return Choice::Empty;
        }
        let mut next_ready = f64::INFINITY;
        let mut demoted: Option<(u64, usize)> = None;
        for level in &self.active {
            let mut best: Option<(u64, usize)> = None;
            for &w in level {
                let class = &self.classes[w];
                let &(_, seq) = class.queue.front().expect("active queues are non-empty");
                let ready = class.head_ready;
                if ready <= now {
                    if best.is_none_or(|(s, _)| seq < s) {
                        best = Some((seq, w));
                    }
                } else if self.mode == LimitMode::Demotion {
                    if demoted.is_none_or(|(s, _)| seq < s) {
                        demoted = Some((seq, w));
                    }
                } else {
                    next_ready = next_ready.min(ready);
                }
            }
            if let Some((_, w)) = best {
                return Choice::Ready(w, true);
            }
        }
        match demoted {
            Some((_, w)) => Choice::Ready(w, false),
            None => Choice::Future(next_ready),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &mut Priority, now: f64) -> Vec<u64> {
        let mut out = Vec::new();
        while let Dequeue::Ready(i) = s.dequeue(now) {
            out.push(i.id);
        }
        out
    }

    #[test]
    fn priority_serves_higher_level_first_fifo_within_level() {
        let mut s = Priority::new(vec![0, 5, 5], vec![vec![]; 3], LimitMode::Shaping).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        s.enqueue(Item::new(2, 2, 1.0), 0.0);
        s.enqueue(Item::new(3, 1, 1.0), 0.0);
        s.enqueue(Item::new(4, 2, 1.0), 0.0);
        assert_eq!(ids(&mut s, 0.0), vec![2, 3, 4, 1]);
    }

    #[test]
    fn priority_shaping_waits_for_tokens() {
        let mut s = Priority::new(vec![1], vec![vec![(0.5, 1.0)]], LimitMode::Shaping).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        s.enqueue(Item::new(2, 0, 1.0), 0.0);
        assert_eq!(ids(&mut s, 0.0), vec![1]);
        let Dequeue::Future(t) = s.dequeue(0.0) else { panic!() };
        assert!((t - 2.0).abs() < 1e-12);
        assert_eq!(ids(&mut s, t), vec![2]);
    }

    #[test]
    fn priority_demotion_serves_excess_below_everyone() {
        let buckets = vec![vec![(0.5, 1.0)], vec![]];
        let mut s = Priority::new(vec![9, 0], buckets, LimitMode::Demotion).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        s.enqueue(Item::new(2, 0, 1.0), 0.0); // outside the limit: demoted below workload 1's level 0
        s.enqueue(Item::new(3, 1, 1.0), 0.0);
        assert_eq!(ids(&mut s, 0.0), vec![1, 3, 2]);
    }

    #[test]
    fn priority_control_hook_changes_levels() {
        let mut s = Priority::new(vec![1, 0], vec![vec![]; 2], LimitMode::Shaping).unwrap();
        s.set_param(1, Param::Priority(2)).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        s.enqueue(Item::new(2, 1, 1.0), 0.0);
        assert_eq!(ids(&mut s, 0.0), vec![2, 1]);
        assert!(s.set_param(5, Param::Priority(1)).is_err());
        assert!(s.set_param(0, Param::Weight(1.0)).is_err());
    }
}
