//! Helpers shared by the disciplines' unit tests.

use super::{Dequeue, Scheduler};

/// The ids of the next `n` items `s` serves at time 0 (each must be ready).
pub(crate) fn ids(s: &mut dyn Scheduler, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| match s.dequeue(0.0) {
            Dequeue::Ready(i) => i.id,
            other => panic!("{other:?}"),
        })
        .collect()
}
