//! A link: an output queue with a scheduler in front of a wire that serialises one packet at a
//! time at the link's bandwidth (non-preemptive at packet boundaries, so priorities interleave
//! messages packet by packet). A packet leaves the wire `bytes / bandwidth` seconds after it
//! starts and reaches the next hop `propagation` seconds later.

use super::topology::LinkSpec;
use crate::error::Result;
use crate::sched::{Dequeue, Item, Param, Scheduler};

/// What the queue asks the simulator to do after being offered the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Start {
    /// A packet went on the wire; it leaves it at `done`.
    Sending { item: Item, done: f64 },
    /// Ask again at this time (a shaper is waiting for tokens).
    WakeAt(f64),
    /// Nothing to do.
    Idle,
}

/// One link's state.
pub struct Link {
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds of propagation after a packet leaves the wire.
    pub propagation: f64,
    scheduler: Box<dyn Scheduler>,
    sending: Option<Item>,
    wake_at: f64,
}

impl Link {
    /// A link with its scheduler built for `workloads` workloads.
    pub fn new(spec: &LinkSpec, workloads: usize) -> Result<Self> {
        Ok(Self {
            bandwidth: spec.bandwidth,
            propagation: spec.propagation,
            scheduler: spec.scheduler.build(workloads)?,
            sending: None,
            wake_at: f64::INFINITY,
        })
    }

    /// Queue a packet of `bytes` at `now` (`packet` carries its id, workload and tags; its cost
    /// is set here: its tokens are its transmission time in seconds).
    #[inline]
    pub fn enqueue(&mut self, packet: Item, bytes: f64, now: f64) {
        let Item { id, workload, class, deadline, .. } = packet;
        self.scheduler.enqueue_fields(id, workload, class, bytes / self.bandwidth, deadline, now);
    }

    /// Put the next packet on the wire if the wire is free.
    pub fn try_start(&mut self, now: f64) -> Start {
        if self.sending.is_some() {
            return Start::Idle;
        }
        match self.scheduler.dequeue(now) {
            Dequeue::Ready(item) => {
                self.sending = Some(item);
                Start::Sending { item, done: now + item.cost }
            }
            Dequeue::Future(t) if t < self.wake_at => {
                self.wake_at = t;
                Start::WakeAt(t)
            }
            Dequeue::Future(_) | Dequeue::Empty => Start::Idle,
        }
    }

    /// The packet on the wire has left it; returns it.
    pub fn finish(&mut self) -> Item {
        self.sending.take().expect("a link finished a packet it was not sending")
    }

    /// A scheduled wake-up fired.
    pub fn woken(&mut self) {
        self.wake_at = f64::INFINITY;
    }

    /// Change a scheduler parameter (the control hook).
    pub fn set_param(&mut self, workload: u32, param: Param) -> Result<()> {
        self.wake_at = f64::INFINITY;
        self.scheduler.set_param(workload, param)
    }

    /// Packets waiting (not counting the one on the wire).
    pub fn queued(&self) -> usize {
        self.scheduler.len()
    }
}
