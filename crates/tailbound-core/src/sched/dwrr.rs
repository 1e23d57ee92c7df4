//! Deficit weighted round robin over classes (Shreedhar & Varghese's DRR with per-class quanta),
//! the practical form of weighted fair queueing used by switches (Aequitas' WFQ classes).
//!
//! An item is served in its own class when it has one (`Item::class`, set per request by a
//! policy), else in its workload's class (`class_of`). Each class has a FIFO queue and a deficit
//! counter. A round visits the active classes in turn;
//! a visit adds `quantum · weight[c]` seconds of work to the deficit and serves the head while it
//! fits. A class that empties forfeits its deficit. When a whole pass serves nothing (quanta small
//! against the heads), the rounds that would serve nothing are skipped arithmetically, so the cost
//! of a dequeue does not depend on the quantum.

use std::collections::VecDeque;

use super::{check_workload, unsupported, Dequeue, Item, Param, Scheduler};
use crate::error::{Error, Result};

/// Deficit weighted round robin.
#[derive(Debug)]
pub struct Dwrr {
    class_of: Vec<u32>,
    queues: Vec<VecDeque<Item>>,
    weight: Vec<f64>,
    deficit: Vec<f64>,
    topped: Vec<bool>,
    active: VecDeque<usize>,
    quantum: f64,
    len: usize,
}

fn check_weight(w: f64) -> Result<f64> {
    if w > 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(Error::Invalid(format!("a weight must be positive, got {w}")))
    }
}

impl Dwrr {
    /// Classes `0..weight.len()`; workload `w` belongs to class `class_of[w]`.
    pub fn new(class_of: Vec<u32>, weight: Vec<f64>, quantum: f64) -> Result<Self> {
        let weight = weight.into_iter().map(check_weight).collect::<Result<Vec<_>>>()?;
        if let Some(&c) = class_of.iter().find(|&&c| c as usize >= weight.len()) {
            return Err(Error::Invalid(format!("class {c} has no weight")));
        }
        if !(quantum > 0.0 && quantum.is_finite()) {
            return Err(Error::Invalid(format!("the quantum must be positive, got {quantum}")));
        }
        let n = weight.len();
        Ok(Self {
            class_of,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            weight,
            deficit: vec![0.0; n],
            topped: vec![false; n],
            active: VecDeque::new(),
            quantum,
            len: 0,
        })
    }

    /// Skip the rounds in which no active class could serve its head.
    fn skip_idle_rounds(&mut self) {
        let rounds = self
            .active
            .iter()
            .map(|&c| {
                let need = self.queues[c][0].cost - self.deficit[c];
                (need / (self.quantum * self.weight[c])).ceil()
            })
            .fold(f64::INFINITY, f64::min);
        if rounds > 1.0 {
            for &c in &self.active {
                self.deficit[c] += (rounds - 1.0) * self.quantum * self.weight[c];
            }
        }
    }
}

impl Scheduler for Dwrr {
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
        let c = item.class_or(self.class_of[item.workload as usize]) as usize;
        if self.queues[c].is_empty() {
            self.active.push_back(c);
        }
        self.queues[c].push_back(item);
        self.len += 1;
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        let mut misses = 0;
        while let Some(&c) = self.active.front() {
            if !self.topped[c] {
                self.deficit[c] += self.quantum * self.weight[c];
                self.topped[c] = true;
            }
            let cost = self.queues[c][0].cost;
            if cost <= self.deficit[c] {
                self.deficit[c] -= cost;
                let item = self.queues[c].pop_front().expect("active class is non-empty");
                if self.queues[c].is_empty() {
                    self.deficit[c] = 0.0;
                    self.topped[c] = false;
                    self.active.pop_front();
                }
                self.len -= 1;
                return Dequeue::Ready(item);
            }
            self.topped[c] = false;
            self.active.rotate_left(1);
            misses += 1;
            if misses == self.active.len() {
                self.skip_idle_rounds();
                misses = 0;
            }
        }
        Dequeue::Empty
    }

    fn len(&self) -> usize {
        self.len
    }

    /// `Weight` changes the weight of the workload's class.
    fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        let w = check_workload(workload, self.class_of.len())?;
        match param {
            Param::Weight(x) => self.weight[self.class_of[w] as usize] = check_weight(x)?,
            other => return unsupported("dwrr", &other),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwrr_shares_work_in_proportion_to_weights() {
        // two always-backlogged classes with weights 3:1 and equal unit costs
        let mut s = Dwrr::new(vec![0, 1], vec![3.0, 1.0], 0.001).unwrap();
        for i in 0..4000 {
            s.enqueue(Item::new(i, (i % 2) as u32, 0.01), 0.0);
        }
        let mut served = [0usize; 2];
        for _ in 0..2000 {
            let Dequeue::Ready(item) = s.dequeue(0.0) else { panic!() };
            served[item.workload as usize] += 1;
        }
        let ratio = served[0] as f64 / served[1] as f64;
        assert!((ratio - 3.0).abs() < 0.05, "ratio {ratio}");
    }

    #[test]
    fn dwrr_serves_an_item_in_its_own_class() {
        // one workload in class 0; its items alternate between class 0 (3/4 of the work) and
        // class 1 (1/4): backlogged, the classes share 3:1 whoever sent them, and class 1's
        // items keep their order
        let mut s = Dwrr::new(vec![0, 0], vec![3.0, 1.0], 0.001).unwrap();
        for i in 0..4000 {
            let class = if i % 2 == 0 { 0 } else { 1 };
            s.enqueue(Item::new(i, 0, 0.01).with_class(class), 0.0);
        }
        let mut served = [0usize; 2];
        let mut last_odd = None;
        for _ in 0..2000 {
            let Dequeue::Ready(item) = s.dequeue(0.0) else { panic!() };
            served[(item.id % 2) as usize] += 1;
            if item.id % 2 == 1 {
                assert!(last_odd.is_none_or(|l| l < item.id));
                last_odd = Some(item.id);
            }
        }
        let ratio = served[0] as f64 / served[1] as f64;
        assert!((ratio - 3.0).abs() < 0.05, "ratio {ratio}");
        // by workload (no item classes) everything would be one class: FIFO, 1:1
        let mut fifo = Dwrr::new(vec![0, 0], vec![3.0, 1.0], 0.001).unwrap();
        for i in 0..4000 {
            fifo.enqueue(Item::new(i, 0, 0.01), 0.0);
        }
        let ids: Vec<u64> = (0..4)
            .map(|_| match fifo.dequeue(0.0) {
                Dequeue::Ready(i) => i.id,
                _ => panic!(),
            })
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        // workload 0 in class 0, workload 1 in class 1; item 2 of workload 1 asks for class 0:
        // class 0 serves 1 then (next round) 2, between them class 1 serves 3
        let mut s = Dwrr::new(vec![0, 1], vec![1.0, 1.0], 1.0).unwrap();
        s.enqueue(Item::new(1, 0, 1.0), 0.0);
        s.enqueue(Item::new(2, 1, 1.0).with_class(0), 0.0);
        s.enqueue(Item::new(3, 1, 1.0), 0.0);
        let ids: Vec<u64> = (0..3)
            .map(|_| match s.dequeue(0.0) {
                Dequeue::Ready(i) => i.id,
                _ => panic!(),
            })
            .collect();
        assert_eq!(ids, vec![1, 3, 2], "by workload it would be 1, 2, 3");
    }

    #[test]
    fn dwrr_rejects_bad_configuration() {
        assert!(Dwrr::new(vec![1], vec![1.0], 1.0).is_err());
        assert!(Dwrr::new(vec![0], vec![0.0], 1.0).is_err());
        assert!(Dwrr::new(vec![0], vec![1.0], 0.0).is_err());
    }
}
