//! Start-time fair queueing (Goyal, Vin and Cheng, SIGCOMM 1996): proportional sharing with
//! weights and a virtual time.
//!
//! An item of workload `f` with cost `c` arriving at `t` gets the start tag
//! `S = max(v(t), F_f)` and the finish tag `F_f ← S + c / φ_f`, where `F_f` is the finish tag of
//! the workload's previous item. Items are served in increasing start tag (ties in arrival order).
//! The virtual time `v` is the start tag of the item in service; when the queue runs empty (the
//! server asks and gets `Empty`, which ends a busy period) `v` becomes the largest finish tag
//! served so far, as the paper specifies.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{check_workload, unsupported, Dequeue, Item, Param, Scheduler, TagKey};
use crate::error::{Error, Result};

#[derive(Debug)]
struct Tagged {
    key: TagKey,
    finish: f64,
    item: Item,
}

impl PartialEq for Tagged {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Tagged {}
impl PartialOrd for Tagged {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tagged {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// Start-time fair queueing.
#[derive(Debug)]
pub struct Sfq {
    weight: Vec<f64>,
    last_finish: Vec<f64>,
    heap: BinaryHeap<Reverse<Tagged>>,
    virtual_time: f64,
    max_finish: f64,
    seq: u64,
}

fn check_weight(w: f64) -> Result<f64> {
    if w > 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(Error::Invalid(format!("a weight must be positive, got {w}")))
    }
}

impl Sfq {
    /// One flow per workload with weight `weight[w]`.
    pub fn new(weight: Vec<f64>) -> Result<Self> {
        let weight = weight.into_iter().map(check_weight).collect::<Result<Vec<_>>>()?;
        Ok(Self {
            last_finish: vec![0.0; weight.len()],
            weight,
            heap: BinaryHeap::new(),
            virtual_time: 0.0,
            max_finish: 0.0,
            seq: 0,
        })
    }
}

impl Scheduler for Sfq {
    fn enqueue_fields(
        &mut self,
        id: u64,
        workload: u32,
        class: u32,
        cost: f64,
        deadline: f64,
        _now: f64,
    ) {
        let item = Item { id, workload, class, cost, deadline };
        let w = item.workload as usize;
        let start = self.virtual_time.max(self.last_finish[w]);
        let finish = start + item.cost / self.weight[w];
        self.last_finish[w] = finish;
        self.heap.push(Reverse(Tagged { key: TagKey(start, self.seq), finish, item }));
        self.seq += 1;
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        match self.heap.pop() {
            Some(Reverse(t)) => {
                self.virtual_time = t.key.0;
                self.max_finish = self.max_finish.max(t.finish);
                Dequeue::Ready(t.item)
            }
            None => {
                self.virtual_time = self.max_finish;
                Dequeue::Empty
            }
        }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.weight.len())?;
        match param {
            Param::Weight(x) => self.weight[w] = check_weight(x)?,
            other => return unsupported("sfq", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sfq_backlogged_flows_share_by_weight() {
        let mut s = Sfq::new(vec![1.0, 2.0]).unwrap();
        for i in 0..3000 {
            s.enqueue(Item::new(i, (i % 2) as u32, 1.0), 0.0);
        }
        let mut served = [0usize; 2];
        for _ in 0..1500 {
            let Dequeue::Ready(item) = s.dequeue(0.0) else { panic!() };
            served[item.workload as usize] += 1;
        }
        assert_eq!(served, [500, 1000]);
    }

    #[test]
    fn sfq_new_flow_starts_at_virtual_time_not_zero() {
        let mut s = Sfq::new(vec![1.0, 1.0]).unwrap();
        for i in 0..10 {
            s.enqueue(Item::new(i, 0, 1.0), 0.0);
        }
        for _ in 0..5 {
            s.dequeue(0.0);
        }
        // workload 1 arrives late: it must not get 5 items of credit for its idle past
        s.enqueue(Item::new(100, 1, 1.0), 5.0);
        s.enqueue(Item::new(101, 1, 1.0), 5.0);
        let order: Vec<u64> = (0..4)
            .map(|_| match s.dequeue(5.0) {
                Dequeue::Ready(i) => i.id,
                _ => panic!(),
            })
            .collect();
        // v = 4 (start tag of item 4, in service): tags 100→4, 101→5, then item 5 (tag 5, earlier)
        assert_eq!(order, vec![100, 5, 101, 6]);
    }
}
