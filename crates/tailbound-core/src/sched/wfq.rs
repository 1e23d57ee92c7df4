//! Weighted fair queueing over classes with a virtual clock per class, as the WFQ of Aequitas'
//! switches (Zhang, "VirtualClock", SIGCOMM 1990; Aequitas, SIGCOMM 2022, §4.1: class `i` of
//! weight `φ_i` is guaranteed the rate `g_i = φ_i / Σ_j φ_j` of the link).
//!
//! Class `c` of weight `w_c` is a virtual server of rate `w_c / Σw` (of the queue's unit rate:
//! `cost` is seconds of exclusive service). An item of class `c` with cost `x` arriving at `t`
//! gets the virtual finish tag
//!
//! ```text
//! F = max(t, last[c]) + x / (w_c / Σw),    last[c] ← F,
//! ```
//!
//! the time the class's virtual server would finish it; the item with the smallest finish tag is
//! served first, ties in arrival order. A class's tags increase, so a class is served in FIFO
//! order and the smallest tag is always a class's head.
//!
//! **Σw is over every class the queue is configured with**, active or not (a choice): each class
//! has a fixed share, so its finish tags do not depend on which other classes are busy — a class
//! sending within its guaranteed rate gets tags close to real time whatever the others send. The
//! scheduler stays work conserving (it serves whenever an item waits; an idle class's capacity
//! goes to the busy ones). The price of the virtual clock: a class that used idle capacity beyond
//! its share has tags ahead of real time (`last[c]` runs ahead) and yields to a class arriving
//! within its share until real time catches up.
//!
//! An item is in its own class when it has one (`Item::class`, set per request by a policy:
//! Aequitas' class per RPC), else in its workload's class (`class_of`). The table fields are
//! DWRR's (`class`, `class_weight`), without a quantum. `set_param(Weight)` changes the weight
//! of the workload's class (and Σw) for items arriving afterwards; tags already given stay.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{check_workload, unsupported, Dequeue, Item, Param, Scheduler, TagKey, Tagged};
use crate::error::{Error, Result};

/// Virtual-clock weighted fair queueing over classes.
#[derive(Debug)]
pub struct Wfq {
    class_of: Vec<u32>,
    weight: Vec<f64>,
    /// `Σw / w_c` per class: the virtual seconds one second of work takes in class `c`.
    stretch: Vec<f64>,
    /// The finish tag of each class's latest item (seconds).
    last: Vec<f64>,
    heap: BinaryHeap<Reverse<Tagged>>,
    seq: u64,
}

fn check_weight(w: f64) -> Result<f64> {
    if w > 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(Error::Invalid(format!("a weight must be positive, got {w}")))
    }
}

impl Wfq {
    /// Classes `0..weight.len()` of weight `weight[c]`; workload `w` belongs to class
    /// `class_of[w]`.
    pub fn new(class_of: Vec<u32>, weight: Vec<f64>) -> Result<Self> {
        let weight = weight.into_iter().map(check_weight).collect::<Result<Vec<_>>>()?;
        if let Some(&c) = class_of.iter().find(|&&c| c as usize >= weight.len()) {
            return Err(Error::Invalid(format!("class {c} has no weight")));
        }
        let n = weight.len();
        let mut s = Self {
            class_of,
            weight,
            stretch: vec![1.0; n],
            last: vec![0.0; n],
            heap: BinaryHeap::new(),
            seq: 0,
        };
        s.restretch();
        Ok(s)
    }

    fn restretch(&mut self) {
        let total: f64 = self.weight.iter().sum();
        self.stretch = self.weight.iter().map(|w| total / w).collect();
    }

    /// The finish tag (seconds) of the latest item of class `class` (0 before its first).
    pub fn finish_tag(&self, class: u32) -> f64 {
        self.last[class as usize]
    }
}

impl Scheduler for Wfq {
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
        let c = item.class_or(self.class_of[item.workload as usize]) as usize;
        let finish = now.max(self.last[c]) + item.cost * self.stretch[c];
        self.last[c] = finish;
        self.heap.push(Reverse(Tagged(TagKey(finish, self.seq), item)));
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

    /// `Weight` changes the weight of the workload's class (for items arriving afterwards).
    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.class_of.len())?;
        match param {
            Param::Weight(x) => {
                self.weight[self.class_of[w] as usize] = check_weight(x)?;
                self.restretch();
            }
            other => return unsupported("wfq", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::ids;

    #[test]
    fn wfq_finish_tags_on_a_hand_sequence() {
        // class 0 weight 3, class 1 weight 1: Σw = 4, so a second of work takes 4/3 virtual
        // seconds in class 0 and 4 in class 1 (rates 3/4 and 1/4 of the queue)
        let mut s = Wfq::new(vec![0, 1], vec![3.0, 1.0]).unwrap();
        // (id, workload, cost, arrival, expected finish tag of its class, worked by hand)
        let sequence = [
            (1, 0, 0.3, 0.0, 0.0 + 0.3 * 4.0 / 3.0), // 0.4
            (2, 1, 0.1, 0.0, 0.0 + 0.1 * 4.0),       // 0.4, tie with 1: arrival order
            (3, 0, 0.3, 0.1, 0.4 + 0.3 * 4.0 / 3.0), // max(0.1, 0.4) + 0.4 = 0.8
            (4, 1, 0.1, 0.2, 0.4 + 0.1 * 4.0),       // max(0.2, 0.4) + 0.4 = 0.8, after 3
            (5, 0, 0.6, 0.3, 0.8 + 0.6 * 4.0 / 3.0), // max(0.3, 0.8) + 0.8 = 1.6
            (6, 1, 0.05, 1.0, 1.0 + 0.05 * 4.0),     // max(1.0, 0.8) + 0.2 = 1.2: idle, restarts
        ];
        for (id, w, cost, arrival, tag) in sequence {
            s.enqueue(Item::new(id, w, cost), arrival);
            assert!((s.finish_tag(w) - tag).abs() < 1e-12, "item {id}: {}", s.finish_tag(w));
        }
        assert_eq!(s.len(), 6);
        // served by finish tag: 0.4 0.4 0.8 0.8 1.2 1.6
        assert_eq!(ids(&mut s, 6), vec![1, 2, 3, 4, 6, 5]);
        assert_eq!(s.dequeue(2.0), Dequeue::Empty);
    }

    #[test]
    fn wfq_shares_work_3_to_1_under_backlog() {
        let mut s = Wfq::new(vec![0, 1], vec![3.0, 1.0]).unwrap();
        for i in 0..8000 {
            s.enqueue(Item::new(i, (i % 2) as u32, 0.01), 0.0);
        }
        let mut served = [0usize; 2];
        for _ in 0..4000 {
            let Dequeue::Ready(item) = s.dequeue(0.0) else { panic!() };
            served[item.workload as usize] += 1;
        }
        assert!(served[0].abs_diff(3000) <= 1 && served[1].abs_diff(1000) <= 1, "{served:?}");
        // each class in FIFO order
        let mut last = [None::<u64>; 2];
        while let Dequeue::Ready(item) = s.dequeue(0.0) {
            let w = item.workload as usize;
            assert!(last[w].is_none_or(|l| l < item.id));
            last[w] = Some(item.id);
        }
    }

    #[test]
    fn wfq_share_is_fixed_whoever_else_is_active() {
        // class 1 (weight 1 of 4) alone still gets tags at a quarter of the rate: its tags do not
        // depend on whether class 0 sends
        let mut s = Wfq::new(vec![0, 1], vec![3.0, 1.0]).unwrap();
        s.enqueue(Item::new(1, 1, 1.0), 0.0);
        s.enqueue(Item::new(2, 1, 1.0), 0.0);
        assert_eq!(s.finish_tag(1), 8.0);
        assert_eq!(ids(&mut s, 1), vec![1]);
        // a class-0 item arriving later with a smaller tag overtakes the queued class-1 item
        s.enqueue(Item::new(3, 0, 1.5), 1.0); // 1 + 1.5 · 4/3 = 3 < 8
        assert_eq!(ids(&mut s, 2), vec![3, 2]);
    }

    #[test]
    fn wfq_serves_an_item_in_its_own_class_and_changes_weights() {
        // both workloads in class 0 (weight 1), class 1 weight 3: Σw = 4
        let mut s = Wfq::new(vec![0, 0], vec![1.0, 3.0]).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0); // class 0: tag 4
        s.enqueue(Item::new(2, 1, 1.0).with_class(1), 0.0); // its own class 1: tag 4/3
        s.enqueue(Item::new(3, 1, 1.0), 0.0); // its workload's class 0: tag 8
        assert!((s.finish_tag(1) - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.finish_tag(0), 8.0);
        assert_eq!(ids(&mut s, 3), vec![2, 1, 3]);
        // workload 1's class is 0: weight 3 there makes Σw = 6 and class 0's stretch 2
        s.set_param(1, Param::Weight(3.0)).unwrap();
        s.enqueue(Item::new(4, 0, 1.0), 10.0);
        assert_eq!(s.finish_tag(0), 12.0);
        assert!(s.set_param(0, Param::Weight(0.0)).is_err());
        assert!(s.set_param(2, Param::Weight(1.0)).is_err());
        assert!(s.set_param(0, Param::Priority(1)).is_err());
    }

    #[test]
    fn wfq_rejects_bad_configuration() {
        assert!(Wfq::new(vec![1], vec![1.0]).is_err());
        assert!(Wfq::new(vec![0], vec![-1.0]).is_err());
        assert!(Wfq::new(vec![0], vec![f64::INFINITY]).is_err());
    }
}
