//! Earliest deadline first: an item's deadline is its own absolute deadline when it has one
//! (`Item::deadline`, set per request by a policy: Nested QoS' arrival + δ of the class), else
//! its arrival plus its workload's relative deadline (the SLO latency); the earliest deadline is
//! served first, ties in arrival order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{
    check_workload, unsupported, Dequeue, Item, Param, Scheduler, TagKey, Tagged, NO_DEADLINE,
};
use crate::error::{Error, Result};

/// Earliest deadline first.
#[derive(Debug)]
pub struct Edf {
    deadline: Vec<f64>,
    heap: BinaryHeap<Reverse<Tagged>>,
    seq: u64,
}

fn check_deadline(d: f64) -> Result<f64> {
    if d >= 0.0 && d.is_finite() {
        Ok(d)
    } else {
        Err(Error::Invalid(format!("a relative deadline must be >= 0 seconds, got {d}")))
    }
}

impl Edf {
    /// Relative deadline `deadline[w]` in seconds per workload.
    pub fn new(deadline: Vec<f64>) -> Result<Self> {
        let deadline = deadline.into_iter().map(check_deadline).collect::<Result<Vec<_>>>()?;
        Ok(Self { deadline, heap: BinaryHeap::new(), seq: 0 })
    }
}

impl Scheduler for Edf {
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
        let due = if item.deadline == NO_DEADLINE {
            now + self.deadline[item.workload as usize]
        } else {
            item.deadline
        };
        self.heap.push(Reverse(Tagged(TagKey(due, self.seq), item)));
        self.seq += 1;
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        match self.heap.pop() {
            Some(Reverse(Tagged(_, item))) => Dequeue::Ready(item),
            None => Dequeue::Empty,
        }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.deadline.len())?;
        match param {
            Param::Deadline(d) => self.deadline[w] = check_deadline(d)?,
            other => return unsupported("edf", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edf_serves_earliest_deadline() {
        let mut s = Edf::new(vec![0.010, 0.001]).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0); // due 0.010
        s.enqueue(Item::new(2, 1, 1.0), 0.005); // due 0.006
        s.enqueue(Item::new(3, 1, 1.0), 0.0095); // due 0.0105
        let order: Vec<u64> = (0..3)
            .map(|_| match s.dequeue(0.01) {
                Dequeue::Ready(i) => i.id,
                _ => panic!(),
            })
            .collect();
        assert_eq!(order, vec![2, 1, 3]);
        assert!(s.set_param(0, Param::Deadline(-1.0)).is_err());
    }

    #[test]
    fn edf_uses_an_items_own_deadline_when_set() {
        // workload 0's relative deadline is 10 ms, workload 1's 1 ms
        let mut s = Edf::new(vec![0.010, 0.001]).unwrap();
        s.enqueue(Item::new(1, 1, 1.0), 0.0); // due 0.001 (workload 1's relative deadline)
        s.enqueue(Item::new(2, 0, 1.0).with_deadline(0.0005), 0.0); // its own: due 0.0005
        s.enqueue(Item::new(3, 0, 1.0), 0.0); // due 0.010
        s.enqueue(Item::new(4, 1, 1.0).with_deadline(0.02), 0.0); // its own: due 0.02, not 0.001
        s.enqueue(Item::new(5, 0, 1.0).with_deadline(NO_DEADLINE), 0.0); // unset: due 0.010
        let order: Vec<u64> = (0..5)
            .map(|_| match s.dequeue(0.0) {
                Dequeue::Ready(i) => i.id,
                _ => panic!(),
            })
            .collect();
        assert_eq!(order, vec![2, 1, 3, 5, 4]);
    }
}
