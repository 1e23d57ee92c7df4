//! First come, first served: the baseline every other discipline is compared with.

use std::collections::VecDeque;

use super::{unsupported, Dequeue, Item, Param, Scheduler};
use crate::error::Result;

/// One FIFO queue shared by all workloads.
#[derive(Debug, Default)]
pub struct Fifo {
    queue: VecDeque<Item>,
}

impl Fifo {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Scheduler for Fifo {
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
        self.queue.push_back(item);
    }

    fn dequeue(&mut self, _now: f64) -> Dequeue {
        match self.queue.pop_front() {
            Some(item) => Dequeue::Ready(item),
            None => Dequeue::Empty,
        }
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn set_param(&mut self, _workload: u32, param: Param) -> Result<()> {
        unsupported("fifo", &param)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_serves_in_arrival_order() {
        let mut s = Fifo::new();
        s.enqueue(Item::new(7, 1, 0.5), 0.0);
        s.enqueue(Item::new(3, 0, 0.1), 1.0);
        assert_eq!(s.len(), 2);
        let Dequeue::Ready(a) = s.dequeue(2.0) else { panic!() };
        let Dequeue::Ready(b) = s.dequeue(2.0) else { panic!() };
        assert_eq!((a.id, b.id), (7, 3));
        assert_eq!(s.dequeue(2.0), Dequeue::Empty);
        assert!(s.set_param(0, Param::Weight(1.0)).is_err());
    }
}
