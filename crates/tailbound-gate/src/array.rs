//! The emulated disk array with a knee (configuration `array`, with `emulate_device`): the
//! simulator's model (`tailbound_core::sim::array::ArrayModel`, `docs/simulator.md` "Arrays")
//! on a real clock, so a live test drives the device the simulator models.
//!
//! **Model** (the simulator's, unchanged): request `id`'s work is its profile cost (seconds of
//! service on one channel) times its tail factor `ArrayModel::factor(id)` (Pareto, mean 1,
//! drawn from the dispatcher's request id); with `n` requests in the device each progresses at
//! `ArrayModel::speed(n)` seconds of work per second. All progress at one speed, so a virtual
//! clock `V` (work served to each request so far, `dV/dt = speed(n)`) orders the finishes: a
//! request entering at `V₀` with work `w` finishes when `V` reaches `V₀ + w`.
//!
//! **The device thread.** One thread owns the model's state. A dispatched request enters when
//! the dispatcher task hands it over ([`ArrayDevice::enter`]); the thread sleeps
//! (`recv_timeout`, precise to tens of microseconds, unlike tokio's 1 ms timer) until the next
//! finish or the next entry, advances `V` by the elapsed time at the speed of the `n` requests it
//! had, and calls each finished request's `done`. The gateway's `done` then does the request's
//! I/O on the page-cached file (microseconds) and answers: the I/O is after the emulated service
//! instead of during it, so the file's own time adds to the emulated one.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tailbound_core::sim::array::ArrayModel;

/// What to do when a request's emulated service ends.
pub type Done = Box<dyn FnOnce() + Send>;

enum Msg {
    Enter { work: f64, done: Done },
    Model(ArrayModel),
}

/// A request in the device: finishes when the virtual clock reaches `finish`.
struct InService {
    finish: f64,
    seq: u64,
    done: Done,
}

impl PartialEq for InService {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for InService {}
impl PartialOrd for InService {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InService {
    /// Reversed: the max-heap's top is the earliest finish (then the earliest entry).
    fn cmp(&self, other: &Self) -> Ordering {
        other.finish.total_cmp(&self.finish).then(other.seq.cmp(&self.seq))
    }
}

/// The emulated array's state (pure: the thread passes the time).
struct State {
    model: ArrayModel,
    /// Virtual clock: seconds of work each request in service has received since the start.
    v: f64,
    /// When `v` was last advanced.
    last: Instant,
    in_service: BinaryHeap<InService>,
    seq: u64,
}

impl State {
    /// Advance the virtual clock to `now` at the speed of the requests in service.
    fn advance(&mut self, now: Instant) {
        let n = self.in_service.len() as u32;
        if n > 0 {
            self.v += now.saturating_duration_since(self.last).as_secs_f64() * self.model.speed(n);
        }
        self.last = now;
    }

    /// The requests whose work is done, earliest first.
    fn finished(&mut self) -> Vec<Done> {
        let mut out = Vec::new();
        while self.in_service.peek().is_some_and(|r| r.finish <= self.v + 1e-12) {
            if let Some(r) = self.in_service.pop() {
                out.push(r.done);
            }
        }
        out
    }

    /// A request of `work` seconds enters now (after [`Self::advance`]).
    fn enter(&mut self, work: f64, done: Done) {
        self.seq += 1;
        self.in_service.push(InService { finish: self.v + work, seq: self.seq, done });
    }

    /// Real time until the next finish if nothing enters (`None`: the device is idle).
    fn next_finish(&self) -> Option<Duration> {
        let r = self.in_service.peek()?;
        let speed = self.model.speed(self.in_service.len() as u32);
        Some(Duration::from_secs_f64(((r.finish - self.v) / speed).max(0.0)))
    }
}

/// The handle of the device thread (see the module documentation).
pub struct ArrayDevice {
    tx: mpsc::Sender<Msg>,
}

impl ArrayDevice {
    /// Start the device thread with `model`.
    pub fn start(model: ArrayModel) -> Result<Self, String> {
        let (tx, rx) = mpsc::channel();
        let state =
            State { model, v: 0.0, last: Instant::now(), in_service: BinaryHeap::new(), seq: 0 };
        std::thread::Builder::new()
            .name("tailbound-array".into())
            .spawn(move || run(state, rx))
            .map_err(|e| format!("array: cannot start the device thread: {e}"))?;
        Ok(Self { tx })
    }

    /// Request `id` of profile cost `cost` (seconds) enters the device now; `done` runs when
    /// its service ends (on the device thread: it must not block).
    pub fn enter(&self, model: &ArrayModel, id: u64, cost: f64, done: Done) {
        let _ = self.tx.send(Msg::Enter { work: cost * model.factor(id), done });
    }

    /// Change the model (a reload); the requests in service go on under it.
    pub fn set_model(&self, model: ArrayModel) {
        let _ = self.tx.send(Msg::Model(model));
    }
}

fn run(mut state: State, rx: mpsc::Receiver<Msg>) {
    loop {
        let msg = match state.next_finish() {
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(d) => rx.recv_timeout(d),
        };
        state.advance(Instant::now());
        for done in state.finished() {
            done();
        }
        match msg {
            Ok(Msg::Enter { work, done }) => state.enter(work, done),
            Ok(Msg::Model(m)) => state.model = m,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // the gateway is gone: finish what is in service at once
                while let Some(r) = state.in_service.pop() {
                    (r.done)();
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn model() -> ArrayModel {
        ArrayModel { channels: 2, interference: 0.0, thrash: 1.0, tail_shape: None, seed: 0 }
    }

    #[test]
    fn virtual_clock_runs_at_the_speed_of_the_requests_in_service() {
        // hand-computed: K = 2, α = 1: s(1) = s(2) = 1, s(3) = (2/3)/2 = 1/3
        let t0 = Instant::now();
        let mut s =
            State { model: model(), v: 0.0, last: t0, in_service: BinaryHeap::new(), seq: 0 };
        let order = Arc::new(Mutex::new(Vec::new()));
        let mark = |k: u32| -> Done {
            let o = order.clone();
            Box::new(move || o.lock().unwrap().push(k))
        };
        for (k, w) in [(0, 1.0), (1, 2.0), (2, 3.0)] {
            s.enter(w, mark(k));
        }
        // three in service: speed 1/3, the first finishes after 3 s
        assert!((s.next_finish().unwrap().as_secs_f64() - 3.0).abs() < 1e-9);
        s.advance(t0 + Duration::from_secs(3));
        assert!((s.v - 1.0).abs() < 1e-9);
        for d in s.finished() {
            d();
        }
        // two left at speed 1: the second (work 2) after 1 s more, the third 1 s after it
        assert!((s.next_finish().unwrap().as_secs_f64() - 1.0).abs() < 1e-9);
        s.advance(t0 + Duration::from_secs(4));
        for d in s.finished() {
            d();
        }
        assert!((s.next_finish().unwrap().as_secs_f64() - 1.0).abs() < 1e-9);
        s.advance(t0 + Duration::from_secs(5));
        for d in s.finished() {
            d();
        }
        assert!(s.next_finish().is_none());
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn the_device_thread_serves_at_the_model_s_throughput() {
        // K = 2, no interference: two 20 ms requests together take 20 ms, four take 2·(4/2)·
        // (1 + 2)·... : s(4) = (2/4)/(1 + 1·2) = 1/6, so four 20 ms requests take 120 ms
        let m = model();
        let dev = ArrayDevice::start(m.clone()).unwrap();
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for id in 0..4 {
            let tx = tx.clone();
            dev.enter(&m, id, 0.020, Box::new(move || tx.send(Instant::now()).unwrap()));
        }
        let ends: Vec<Instant> = (0..4).map(|_| rx.recv().unwrap()).collect();
        let took = ends.iter().max().unwrap().duration_since(t0).as_secs_f64();
        assert!(took >= 0.119, "{took}");
        assert!(took < 0.120 + 0.05, "{took}"); // a loaded machine may wake the thread late
    }
}
