//! The server: one task per connection (handshake, then a reader and a writer), and one
//! dispatcher task that owns `tailbound_core::sched::dispatch::Dispatcher` — the simulator's
//! dispatcher — on a real clock (seconds since the gateway started).
//!
//! A read or write is parsed and checked by its connection, then sent to the dispatcher task,
//! which enqueues it with its export's workload index, its class (`classify.rs`) and its cost in
//! device-seconds and calls `dispatch(now)` after every arrival, every completion and every
//! shaper wake-up it asked for.
//! Each request the dispatcher lets in runs on tokio's blocking thread pool (positioned
//! `pread`/`pwrite` on the export's file or block device, `file.rs`) or is forwarded to the
//! upstream NBD server (`upstream.rs`); its completion goes back to the dispatcher task
//! (`complete`, which frees its slot) and its reply to the connection's writer. The dispatcher
//! task never waits on a client: replies go through the connection's own queue, and each
//! connection holds at most `INFLIGHT_BYTES` of requests in the gateway (it stops reading when
//! it has that much outstanding), so a client that stops reading stalls only itself.
//! FLUSH (`fdatasync` of the export's file) and TRIM (a no-op: the protocol leaves trimmed
//! contents unspecified) do not pass the dispatcher: the profile prices reads and writes only.
//!
//! **Hot reload** ([`Control::Reload`], SIGHUP): the configuration file is read again and
//! checked whole — parsed, [`Config::reload_compatible`], the scheduler built, new exports'
//! backends opened — before anything changes; any failure leaves the old configuration in force.
//! Then the dispatcher task swaps its limits, scheduler, cost table and export-to-workload map
//! at once (`Dispatcher::reconfigure`: requests in service keep their slots) and enqueues every
//! request not yet dispatched again, in arrival order, under the new scheduler (new buckets
//! start full). Exports keep their connections and counters by name; a new export is accepted
//! by the next handshake; a removed export's queued requests get `ESHUTDOWN`, its requests in
//! service complete, then its connections are closed.
//!
//! **Graceful shutdown** ([`Control::Shutdown`], SIGTERM/SIGINT): the listener is closed, every
//! connection stops reading requests, the requests already in the gateway are dispatched,
//! served and answered (for at most `drain_timeout_s`), each connection is closed once its
//! replies are written, and every backend is flushed (`fdatasync`, or `NBD_CMD_FLUSH` upstream).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tailbound_core::sched::dispatch::{
    Dispatched, Dispatcher, Limits, Request as DispatchRequest, TenantLimits,
};
use tailbound_core::sched::{Item, Scheduler};
use tailbound_core::sim::array::ArrayModel;
use tailbound_core::sim::control::{ControlSpec, DeviceControl};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::array::ArrayDevice;
use crate::classify::{Classifier, Seen};
use crate::config::{Config, CostTable};
use crate::conform::{self, Meter};
use crate::control::{self, TenantState};
use crate::file::FileBackend;
use crate::metrics::{self, HttpRequest, HttpResponse, Stats};
use crate::proto::{self, Action};
use crate::upstream::{Completion, Upstream, REPLY_ROOM};

/// Most bytes of requests one connection may have inside the gateway (queued, in service or
/// replying); the connection reads no further request until some finish.
pub const INFLIGHT_BYTES: usize = 64 * 1024 * 1024;
/// Most bytes of replies written to a client in one system call.
const REPLY_BATCH_BYTES: usize = 256 * 1024;
/// Most connections served at once (more wait in the listen backlog).
pub const MAX_CONNECTIONS: usize = 1024;
/// Time a client has for the whole handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Time a reload may take to open new exports' backends (upstream connections).
pub const RELOAD_OPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// Identifiers of exports, unique over the gateway's life (a reload keeps an export's).
pub(crate) static NEXT_EXPORT: AtomicU64 = AtomicU64::new(0);

/// One export: a tenant's volume.
pub struct Export {
    pub id: u64,
    pub name: String,
    pub backend: Backend,
    pub size: u64,
    /// The minimum block size advertised (1, or the block size of a direct-I/O backend).
    pub block: u32,
    pub stats: Stats,
    /// Set when a reload removed the export: its connections close.
    removed: watch::Sender<bool>,
}

/// A read or write waiting for or in the dispatcher.
struct Job {
    export: Arc<Export>,
    write: bool,
    fua: bool,
    handle: u64,
    offset: u64,
    length: u32,
    payload: Vec<u8>,
    arrived: Instant,
    reply: mpsc::UnboundedSender<Vec<u8>>,
    permit: OwnedSemaphorePermit,
}

impl Job {
    /// Answer with an error without serving it.
    fn fail(self, errno: u32, shared: &Shared) {
        let _ = self.reply.send(proto::simple_reply(errno, self.handle).to_vec());
        shared.inflight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the dispatcher task runs under; replaced whole by a reload.
struct Generation {
    limits: Limits,
    scheduler: Box<dyn Scheduler>,
    costs: CostTable,
    emulate: bool,
    /// Export id → workload index of the scheduler.
    workloads: HashMap<u64, u32>,
    /// Each request's class (`classify.rs`).
    classes: Classifier,
    /// The controller on the device's completions (PSLO), if any.
    control: Option<ControlSpec>,
    /// The emulated device's array model (with `emulate`), if any.
    array: Option<ArrayModel>,
    /// Each workload's token buckets, as the scheduler has them (`conform.rs`).
    buckets: Vec<Vec<(f64, f64)>>,
}

enum Msg {
    Enqueue(Job),
    /// Request `id` completed at that instant.
    Done(u64, Instant),
    Reload(Box<Generation>, oneshot::Sender<Result<(), String>>),
    /// The control channel: set the limits of the export with that id (its workload in the
    /// dispatcher's current generation); the answer is its state after the change.
    SetLimits(u64, TenantLimits, oneshot::Sender<Result<TenantState, String>>),
    /// Every export's limits and gate, in workload order.
    Snapshot(oneshot::Sender<Vec<TenantState>>),
}

/// What the gateway is told from outside (signals, in `main.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Read the configuration file again and apply it.
    Reload,
    /// Drain and exit.
    Shutdown,
}

/// How the server ended.
pub struct Outcome {
    /// Every export's counters, one JSON line each.
    pub report: String,
    /// Requests still in the gateway when the drain timeout expired (0: all were answered).
    pub abandoned: u64,
}

struct Shared {
    /// The exports in the scheduler's workload order.
    exports: RwLock<Vec<Arc<Export>>>,
    max_request: u32,
    to_dispatcher: mpsc::UnboundedSender<Msg>,
    /// Set on shutdown: connections stop reading requests.
    stopping: watch::Receiver<bool>,
    /// Reads and writes in the gateway (read, not yet answered).
    inflight: AtomicU64,
    reloads: AtomicU64,
    reload_failures: AtomicU64,
    /// Decisions of the controller (`control`) applied.
    decisions: AtomicU64,
    /// Limits set through the control channel.
    limit_changes: AtomicU64,
}

impl Shared {
    fn exports(&self) -> Vec<Arc<Export>> {
        self.exports.read().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }
}

/// Where an export's data lives.
#[derive(Clone)]
pub enum Backend {
    /// `<backend_dir>/<name>.img`, a file or a block device, served on the blocking pool.
    File(Arc<FileBackend>),
    /// The export of the same name on an upstream NBD server.
    Upstream(Arc<Upstream>),
}

impl Backend {
    /// Make written data stable: `fdatasync`, or `NBD_CMD_FLUSH` upstream.
    async fn flush(&self) -> bool {
        match self.clone() {
            Backend::File(f) => {
                tokio::task::spawn_blocking(move || f.flush()).await.unwrap_or(false)
            }
            Backend::Upstream(up) => up.request(proto::CMD_FLUSH, 0, 0, 0, &[]).await.is_ok(),
        }
    }
}

/// Open export `name`: the upstream server's export of the same name, or its backend file or
/// block device `<backend_dir>/<name>.img`.
pub async fn open_export(cfg: &Config, name: &str) -> Result<Export, String> {
    let (backend, size, block) = if let Some(address) = &cfg.upstream {
        let up = Upstream::connect(address, name).await?;
        let size = up.size;
        (Backend::Upstream(Arc::new(up)), size, 1)
    } else {
        let dir = Path::new(&cfg.backend_dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("backend_dir {}: {e}", dir.display()))?;
        let path = dir.join(format!("{name}.img"));
        let (size, direct) = (cfg.export_size, cfg.direct);
        let f = tokio::task::spawn_blocking(move || FileBackend::open(&path, size, direct))
            .await
            .map_err(|e| e.to_string())??;
        let (size, block) = (f.size, f.block());
        (Backend::File(Arc::new(f)), size, block)
    };
    Ok(Export {
        id: NEXT_EXPORT.fetch_add(1, Ordering::Relaxed),
        name: name.to_string(),
        backend,
        size,
        block,
        stats: Stats::default(),
        removed: watch::Sender::new(false),
    })
}

/// The dispatcher's generation for `cfg` over `exports` (in `cfg.exports`' order).
fn generation(cfg: &Config, exports: &[Arc<Export>]) -> Result<Generation, String> {
    Ok(Generation {
        limits: cfg.limits.limits(),
        scheduler: cfg.scheduler.build(exports.len()).map_err(|e| format!("scheduler: {e}"))?,
        costs: cfg.profile.clone(),
        emulate: cfg.emulate_device,
        workloads: exports.iter().enumerate().map(|(i, e)| (e.id, i as u32)).collect(),
        classes: Classifier::new(cfg),
        control: cfg.control.clone(),
        array: if cfg.emulate_device { cfg.array.clone() } else { None },
        buckets: conform::scheduler_buckets(&cfg.scheduler, exports.len()),
    })
}

/// Serve until told to shut down on `control`; a reload reads `config_path` again.
pub async fn serve(
    cfg: Config,
    config_path: PathBuf,
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    mut control: mpsc::UnboundedReceiver<Control>,
) -> Result<Outcome, String> {
    let mut exports = Vec::new();
    for name in &cfg.exports {
        exports.push(Arc::new(open_export(&cfg, name).await?));
    }
    let first = generation(&cfg, &exports)?;
    let (tx, rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        exports: RwLock::new(exports),
        max_request: cfg.max_request_bytes,
        to_dispatcher: tx.clone(),
        stopping: stop_rx,
        inflight: AtomicU64::new(0),
        reloads: AtomicU64::new(0),
        reload_failures: AtomicU64::new(0),
        decisions: AtomicU64::new(0),
        limit_changes: AtomicU64::new(0),
    });
    let dispatcher = DispatchTask::new(first, shared.clone(), tx)?;
    tokio::spawn(dispatcher.run(rx));
    if let Some(l) = metrics_listener {
        let s = shared.clone();
        tokio::spawn(metrics::serve(l, move |r| route(s.clone(), r)));
    }
    let mut cfg = cfg;
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut tasks = JoinSet::new();
    loop {
        let permit = tokio::select! {
            c = control.recv() => match c {
                Some(Control::Reload) => {
                    reload(&config_path, &mut cfg, &shared).await;
                    continue;
                }
                Some(Control::Shutdown) | None => break,
            },
            Some(_) = tasks.join_next() => continue,
            p = connections.clone().acquire_owned() => p.map_err(|e| e.to_string())?,
        };
        let (stream, _) = tokio::select! {
            c = control.recv() => match c {
                Some(Control::Reload) => {
                    reload(&config_path, &mut cfg, &shared).await;
                    continue;
                }
                Some(Control::Shutdown) | None => break,
            },
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("tailbound-gate: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        tasks.spawn(async move {
            if let Err(e) = connection(stream, shared).await {
                eprintln!("tailbound-gate: connection closed: {e}");
            }
            drop(permit);
        });
    }
    // graceful shutdown: no new connections, no new requests; drain what is in the gateway
    drop(listener);
    let _ = stop_tx.send(true);
    let drain = Duration::from_secs_f64(cfg.drain_timeout_s);
    let drained = tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} })
        .await
        .is_ok();
    let abandoned = if drained { 0 } else { shared.inflight.load(Ordering::Relaxed) };
    for e in shared.exports().iter() {
        let ok = tokio::time::timeout(Duration::from_secs(10), e.backend.flush()).await;
        if !matches!(ok, Ok(true)) {
            eprintln!("tailbound-gate: export {}: flush failed", e.name);
        }
    }
    Ok(Outcome { report: report(&shared), abandoned })
}

/// Apply the configuration file again (see the module documentation); a failure is logged and
/// changes nothing.
async fn reload(path: &Path, cfg: &mut Config, shared: &Shared) {
    match tokio::time::timeout(RELOAD_OPEN_TIMEOUT, try_reload(path, cfg, shared)).await {
        Ok(Ok((new, msg))) => {
            *cfg = new;
            shared.reloads.fetch_add(1, Ordering::Relaxed);
            eprintln!("tailbound-gate: reloaded {}: {msg}", path.display());
        }
        Ok(Err(e)) => {
            shared.reload_failures.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "tailbound-gate: reload refused, the old configuration stays: {}: {e}",
                path.display()
            );
        }
        Err(_) => {
            shared.reload_failures.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "tailbound-gate: reload refused, the old configuration stays: {}: opening the \
                 new exports timed out",
                path.display()
            );
        }
    }
}

async fn try_reload(
    path: &Path,
    cfg: &Config,
    shared: &Shared,
) -> Result<(Config, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let new = Config::from_json(&text)?;
    cfg.reload_compatible(&new)?;
    let old = shared.exports();
    let mut next = Vec::new();
    let mut added = Vec::new();
    for name in &new.exports {
        match old.iter().find(|e| &e.name == name) {
            Some(e) => next.push(e.clone()),
            None => {
                next.push(Arc::new(open_export(&new, name).await?));
                added.push(name.as_str());
            }
        }
    }
    let generation = generation(&new, &next)?;
    let (tx, rx) = oneshot::channel();
    shared
        .to_dispatcher
        .send(Msg::Reload(Box::new(generation), tx))
        .map_err(|_| "the dispatcher has stopped".to_string())?;
    rx.await.map_err(|_| "the dispatcher has stopped".to_string())??;
    // the dispatcher knows the new exports before a handshake can find them
    match shared.exports.write() {
        Ok(mut e) => *e = next.clone(),
        Err(p) => *p.into_inner() = next.clone(),
    }
    let mut removed = Vec::new();
    for e in &old {
        if !next.iter().any(|n| n.id == e.id) {
            e.removed.send_replace(true);
            removed.push(e.name.as_str());
        }
    }
    let msg = format!("{} exports, added {added:?}, removed {removed:?}", next.len());
    Ok((new, msg))
}

/// Every export's counters, one JSON line per export.
fn report(shared: &Shared) -> String {
    let mut out = String::new();
    for e in shared.exports().iter() {
        let n = e.stats.count();
        let sum = e.stats.latency_ns.load(Ordering::Relaxed) as f64 * 1e-9;
        let line = serde_json::json!({
            "export": e.name,
            "backend": match &e.backend {
                Backend::File(f) if f.is_device => "device",
                Backend::File(_) => "file",
                Backend::Upstream(_) => "upstream",
            },
            "size": e.size,
            "block": e.block,
            "requests": n,
            "bytes": e.stats.bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum::<u64>(),
            "mean_latency_s": if n > 0 { sum / n as f64 } else { 0.0 },
            "max_latency_s": e.stats.max_latency_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            "beyond_buckets": e.stats.beyond[0].load(Ordering::Relaxed),
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// One request in the dispatcher: what it reads of it, and the job until it is dispatched.
struct Entry {
    req: DispatchRequest,
    job: Option<Job>,
    /// With the one-at-a-time emulated device: when it finishes serving the request (seconds
    /// since the start; set at dispatch).
    finish: f64,
}

/// The clock of the one-at-a-time emulated device (`emulate_device` without `array`): it serves
/// the dispatched requests one after another, each for its profile cost, in dispatch order.
#[derive(Debug, Default)]
struct FifoDevice {
    /// When it finishes the last request dispatched to it (seconds since the gateway started).
    free: f64,
}

impl FifoDevice {
    /// A request of `cost` seconds let in by an event at `event` (a completion's emulated
    /// finish, or the time of the dispatch) that arrived at `arrived`: it starts when the device
    /// is free, the event has happened and it has arrived, and finishes `cost` later (returned).
    fn serve(&mut self, event: f64, arrived: f64, cost: f64) -> f64 {
        self.free = self.free.max(event).max(arrived) + cost;
        self.free
    }
}

/// The dispatcher task (see the module documentation): the dispatcher, the requests it holds,
/// the generation's settings, the emulated device and the controller.
struct DispatchTask {
    dispatcher: Dispatcher,
    /// Export id → its meter of requests beyond its buckets (`conform.rs`).
    meters: HashMap<u64, Meter>,
    costs: CostTable,
    emulate: bool,
    workloads: HashMap<u64, u32>,
    classes: Classifier,
    array: Option<ArrayModel>,
    /// The emulated array's thread (started when a generation first has an array).
    array_device: Option<ArrayDevice>,
    control_spec: Option<ControlSpec>,
    control: Option<DeviceControl>,
    table: HashMap<u64, Entry>,
    next_id: u64,
    start: Instant,
    /// The controller's clock (seconds since `start`), never going back: completions are
    /// reported from several threads.
    control_now: f64,
    device: FifoDevice,
    /// When the completion the next `dispatch` answers happened on the emulated device's clock
    /// (seconds since `start`: the request's emulated finish); `None`: now (an arrival, a
    /// wake-up, a reload, a limit change).
    event: Option<f64>,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Msg>,
    runtime: tokio::runtime::Handle,
}

impl DispatchTask {
    fn new(
        g: Generation,
        shared: Arc<Shared>,
        tx: mpsc::UnboundedSender<Msg>,
    ) -> Result<Self, String> {
        let dispatcher = Dispatcher::new(g.limits, g.scheduler).map_err(|e| e.to_string())?;
        let mut task = Self {
            meters: HashMap::new(),
            dispatcher,
            costs: g.costs,
            emulate: g.emulate,
            workloads: g.workloads,
            classes: g.classes,
            array: None,
            array_device: None,
            control_spec: None,
            control: None,
            table: HashMap::new(),
            next_id: 0,
            start: Instant::now(),
            control_now: 0.0,
            device: FifoDevice::default(),
            event: None,
            shared,
            tx,
            runtime: tokio::runtime::Handle::current(),
        };
        let [meters, array, control] = task.install(&g.buckets, g.array, g.control);
        array?;
        control?;
        meters?;
        Ok(task)
    }

    /// Run a generation's meters (`buckets`), emulated array and controller from now on (its
    /// limits, scheduler, costs, export map and classes already taken, by `new` or `reload`);
    /// the outcome of each, in that order. All three are tried whatever the others' outcome.
    fn install(
        &mut self,
        buckets: &[Vec<(f64, f64)>],
        array: Option<ArrayModel>,
        control: Option<ControlSpec>,
    ) -> [Result<(), String>; 3] {
        [self.set_meters(buckets), self.set_array(array), self.set_control(control)]
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Meter every export by its workload's `buckets`: an export whose buckets did not change
    /// keeps its meter (its state), the others start afresh (`conform.rs`).
    fn set_meters(&mut self, buckets: &[Vec<(f64, f64)>]) -> Result<(), String> {
        let mut meters = HashMap::new();
        for (&export, &w) in &self.workloads {
            let pairs = buckets.get(w as usize).map_or(&[][..], Vec::as_slice);
            let meter = match self.meters.remove(&export) {
                Some(m) if m.pairs == pairs => m,
                _ => Meter::new(pairs).map_err(|e| format!("buckets of workload {w}: {e}"))?,
            };
            meters.insert(export, meter);
        }
        self.meters = meters;
        Ok(())
    }

    /// Use `array` as the emulated device from now on (starting its thread if needed).
    fn set_array(&mut self, array: Option<ArrayModel>) -> Result<(), String> {
        if let Some(m) = &array {
            match &self.array_device {
                Some(d) => d.set_model(m.clone()),
                None => self.array_device = Some(ArrayDevice::start(m.clone())?),
            }
        }
        self.array = array;
        Ok(())
    }

    /// Run the controller of `spec` from now on. The same controller as before goes on (its
    /// state kept) when the spec and the export-to-workload map did not change; otherwise the
    /// old one's tenants lose their limits and a new one starts with its initial limits.
    fn set_control(&mut self, spec: Option<ControlSpec>) -> Result<(), String> {
        if spec.is_some() && spec == self.control_spec && self.control.is_some() {
            return Ok(());
        }
        let workloads = self.workloads.len();
        let mut fresh = match &spec {
            Some(s) => Some(
                DeviceControl::new(s, workloads, &mut self.dispatcher, "control")
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        // the old controller's tenants not controlled by the new one: unlimited again
        if let Some(old) = &self.control_spec {
            let kept: Vec<u32> = match &spec {
                Some(ControlSpec::Pslo(p)) => p.tenants.iter().map(|t| t.workload).collect(),
                None => Vec::new(),
            };
            let ControlSpec::Pslo(p) = old;
            for t in &p.tenants {
                if !kept.contains(&t.workload) && (t.workload as usize) < workloads {
                    let _ = self.dispatcher.set_tenant_limits(t.workload, None, None);
                }
            }
        }
        if let Some(c) = &mut fresh {
            c.take_log(); // the initial limits: not a decision
        }
        self.control = fresh;
        self.control_spec = spec;
        Ok(())
    }

    /// The state of every export the dispatcher knows, in workload order.
    fn snapshot(&self) -> Vec<TenantState> {
        let mut states: Vec<(u32, TenantState)> = self
            .shared
            .exports()
            .iter()
            .filter_map(|e| {
                let &w = self.workloads.get(&e.id)?;
                Some((w, self.state(w, &e.name)))
            })
            .collect();
        states.sort_by_key(|(w, _)| *w);
        states.into_iter().map(|(_, s)| s).collect()
    }

    fn state(&self, w: u32, name: &str) -> TenantState {
        TenantState {
            export: name.to_string(),
            limits: self.dispatcher.tenant_limits(w),
            outstanding: self.dispatcher.tenant_outstanding(w),
            held: self.dispatcher.tenant_held(w),
        }
    }

    /// The control channel: set export `export`'s limits; nothing else changes.
    fn set_limits(&mut self, export: u64, l: TenantLimits) -> Result<TenantState, String> {
        let &w = self.workloads.get(&export).ok_or("the export was removed")?;
        self.dispatcher.set_tenant_limits(w, l.rate, l.depth).map_err(|e| e.to_string())?;
        self.shared.limit_changes.fetch_add(1, Ordering::Relaxed);
        let name = self.shared.exports().iter().find(|e| e.id == export).map(|e| e.name.clone());
        Ok(self.state(w, &name.unwrap_or_default()))
    }

    fn enqueue(&mut self, job: Job) {
        let Some(&workload) = self.workloads.get(&job.export.id) else {
            job.fail(proto::ESHUTDOWN, &self.shared); // its export was just removed
            return;
        };
        let size = f64::from(job.length);
        let cost = self.costs.cost(job.write, size);
        let id = self.next_id;
        self.next_id += 1;
        let req = DispatchRequest { write: job.write, size, offset: job.offset as f64 };
        let t = self.now();
        if self.meters.get_mut(&job.export.id).is_some_and(|m| m.beyond(cost, t)) {
            job.export.stats.record_beyond(u64::from(job.length), cost);
        }
        let item = request_item(id, workload, &job, cost, t, &self.classes);
        self.table.insert(id, Entry { req, job: Some(job), finish: f64::NAN });
        if let Some(c) = &mut self.control {
            c.arrived(id, workload, t);
        }
        self.dispatcher.enqueue(item, t);
    }

    fn done(&mut self, id: u64, at: Instant) {
        let Some(e) = self.table.remove(&id) else { return };
        self.dispatcher.complete(id, e.req);
        if e.finish.is_finite() {
            self.event = Some(self.event.map_or(e.finish, |t| t.min(e.finish)));
        }
        if let Some(c) = &mut self.control {
            let t = at.saturating_duration_since(self.start).as_secs_f64().max(self.control_now);
            self.control_now = t;
            c.completed(id, t, &mut self.dispatcher);
            if !c.take_log().is_empty() {
                self.shared.decisions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn reload(&mut self, g: Generation) -> Result<(), String> {
        self.dispatcher.reconfigure(g.limits, g.scheduler).map_err(|e| format!("limits: {e}"))?;
        if g.workloads != self.workloads {
            self.control = None; // its tenants' indices changed: a new controller
        }
        (self.costs, self.emulate, self.workloads, self.classes) =
            (g.costs, g.emulate, g.workloads, g.classes);
        let [meters, array, control] = self.install(&g.buckets, g.array, g.control);
        for (what, r) in [("", meters), ("", array), ("control: ", control)] {
            if let Err(e) = r {
                eprintln!("tailbound-gate: reload: {what}{e}");
            }
        }
        // every request not yet dispatched, again, in arrival order
        let mut waiting: Vec<u64> =
            self.table.iter().filter(|(_, e)| e.job.is_some()).map(|(&id, _)| id).collect();
        waiting.sort_unstable();
        let t = self.now();
        for id in waiting {
            let Some(entry) = self.table.get(&id) else { continue };
            let Some(job) = &entry.job else { continue };
            match self.workloads.get(&job.export.id) {
                Some(&w) => {
                    let cost = self.costs.cost(job.write, f64::from(job.length));
                    let item = request_item(id, w, job, cost, t, &self.classes);
                    self.dispatcher.enqueue(item, t);
                }
                None => {
                    if let Some(job) = self.table.remove(&id).and_then(|e| e.job) {
                        job.fail(proto::ESHUTDOWN, &self.shared);
                    }
                }
            }
        }
        Ok(())
    }

    /// Start every request the dispatcher lets in at `t`; the next wake-up it asks for.
    ///
    /// The one-at-a-time emulated device starts a request at the time of the completion that
    /// let it in (`self.event`, its emulated finish; never before the request arrived), not when
    /// this task got round to it: the simulator dispatches at the completion itself, and a real device's next
    /// request is not held up by this emulation's own reaction (the finishing thread waking,
    /// the message to this task: 0.1-0.5 ms on a loaded machine). Without this the device idled
    /// that long after every completion that found nothing else in service, which one request
    /// per level in service (`level_mpl = 1`) made the common case: a level's backlog was served
    /// a request at a time with a gap after each (test_gate_e2e_short: C44's live p50 16-19 ms
    /// against the simulator's 10-11 ms).
    fn dispatch(&mut self, out: &mut Vec<Dispatched>) -> Option<f64> {
        out.clear();
        let t = self.now();
        let start_at = self.event.take().map_or(t, |e| e.min(t));
        let table = &self.table;
        let wake = self.dispatcher.dispatch(t, |id| request_of(table, id), out);
        for d in out.iter() {
            let id = d.item.id;
            let Some(job) = self.table.get_mut(&id).and_then(|e| e.job.take()) else { continue };
            if let Some(c) = &mut self.control {
                c.dispatched(id, t);
            }
            let (shared, tx) = (self.shared.clone(), self.tx.clone());
            if self.emulate {
                if let (Some(model), Some(device), Backend::File(_)) =
                    (&self.array, &self.array_device, &job.export.backend)
                {
                    let rt = self.runtime.clone();
                    let io = move || {
                        rt.spawn_blocking(move || serve_file(id, job, &shared, &tx, None));
                    };
                    device.enter(model, id, d.item.cost, Box::new(io));
                    continue;
                }
            }
            let finish = if self.emulate {
                let arrived = job.arrived.saturating_duration_since(self.start).as_secs_f64();
                let f = self.device.serve(start_at, arrived, d.item.cost);
                if let Some(e) = self.table.get_mut(&id) {
                    e.finish = f;
                }
                Some(self.start + secs(f))
            } else {
                None
            };
            match (&job.export.backend, finish) {
                // straight to the upstream connection's writer: no task of its own
                (Backend::Upstream(up), None) => {
                    let up = up.clone();
                    submit_upstream(id, job, &up, shared, tx);
                }
                (Backend::Upstream(_), Some(_)) => {
                    tokio::spawn(run_upstream(id, job, shared, tx, finish));
                }
                // a page-cached read, served here: no thread woken for it
                (Backend::File(f), None) if !job.write => {
                    match f.read_cached(job.handle, job.offset, job.length) {
                        Some(answer) => {
                            let Job { export, write, length, arrived, reply, permit, .. } = job;
                            finished(
                                id, &export, write, length, arrived, answer, &reply, &shared, &tx,
                            );
                            drop(permit);
                        }
                        None => {
                            tokio::task::spawn_blocking(move || {
                                serve_file(id, job, &shared, &tx, None)
                            });
                        }
                    }
                }
                // straight to the blocking pool: no task of its own
                (Backend::File(_), _) => {
                    tokio::task::spawn_blocking(move || serve_file(id, job, &shared, &tx, finish));
                }
            }
        }
        wake
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        let mut wake: Option<f64> = None;
        let mut out: Vec<Dispatched> = Vec::new();
        loop {
            let sleep = wake.map(|t| tokio::time::sleep_until((self.start + secs(t)).into()));
            tokio::select! {
                msg = rx.recv() => match msg {
                    None => return,
                    Some(Msg::Enqueue(job)) => self.enqueue(job),
                    Some(Msg::Done(id, at)) => self.done(id, at),
                    Some(Msg::Reload(g, answer)) => {
                        let r = self.reload(*g);
                        if r.is_ok() {
                            wake = None;
                        }
                        let _ = answer.send(r);
                    }
                    Some(Msg::SetLimits(export, l, answer)) => {
                        let _ = answer.send(self.set_limits(export, l));
                    }
                    Some(Msg::Snapshot(answer)) => {
                        let _ = answer.send(self.snapshot());
                        continue; // nothing changed
                    }
                },
                _ = async { match sleep { Some(s) => s.await, None => std::future::pending().await } } => {
                    self.dispatcher.woken();
                    wake = None;
                }
            }
            if let Some(w) = self.dispatch(&mut out) {
                wake = Some(wake.map_or(w, |old| old.min(w)));
            }
        }
    }
}

/// The HTTP endpoint's routes: `GET /metrics`, and the control channel (`control.rs`).
async fn route(shared: Arc<Shared>, r: HttpRequest) -> HttpResponse {
    let snapshot = || async {
        let (tx, rx) = oneshot::channel();
        shared.to_dispatcher.send(Msg::Snapshot(tx)).ok()?;
        rx.await.ok()
    };
    let stopped =
        || HttpResponse::text("503 Service Unavailable", "the dispatcher stopped\n".into());
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/metrics") => {
            let exports = shared.exports();
            let mut text = metrics::render(exports.iter().map(|e| (e.name.as_str(), &e.stats)));
            text.push_str(&metrics::render_reloads(
                shared.reloads.load(Ordering::Relaxed),
                shared.reload_failures.load(Ordering::Relaxed),
            ));
            let Some(states) = snapshot().await else { return stopped() };
            text.push_str(&control::render(
                &states,
                shared.decisions.load(Ordering::Relaxed),
                shared.limit_changes.load(Ordering::Relaxed),
            ));
            HttpResponse::text("200 OK", text)
        }
        ("GET", "/limits") => {
            let Some(states) = snapshot().await else { return stopped() };
            let all: Vec<_> = states.iter().map(control::state_json).collect();
            HttpResponse::json("200 OK", serde_json::Value::from(all).to_string() + "\n")
        }
        ("PUT" | "POST", path) if path.starts_with("/limits/") => {
            let name = &path["/limits/".len()..];
            let Some(export) = shared.exports().into_iter().find(|e| e.name == name) else {
                return HttpResponse::text("404 Not Found", format!("no export {name:?}\n"));
            };
            let limits = match control::parse_limits(&r.body) {
                Ok(l) => l,
                Err(e) => return HttpResponse::text("400 Bad Request", format!("{e}\n")),
            };
            let (tx, rx) = oneshot::channel();
            if shared.to_dispatcher.send(Msg::SetLimits(export.id, limits, tx)).is_err() {
                return stopped();
            }
            match rx.await {
                Ok(Ok(state)) => {
                    HttpResponse::json("200 OK", control::state_json(&state).to_string() + "\n")
                }
                Ok(Err(e)) => HttpResponse::text("400 Bad Request", format!("{e}\n")),
                Err(_) => stopped(),
            }
        }
        _ => HttpResponse::text(
            "404 Not Found",
            "see GET /metrics, GET /limits, PUT /limits/<export>\n".into(),
        ),
    }
}

/// What the dispatcher reads of request `id` (every id it asks about is in the table; an
/// unknown one reads as an empty read rather than a panic).
/// The scheduler's item of request `id` of `workload` (cost in device-seconds) arriving at
/// `now`, with its class from the classifier (`classify.rs`).
fn request_item(id: u64, workload: u32, job: &Job, cost: f64, now: f64, c: &Classifier) -> Item {
    let seen =
        Seen { workload, write: job.write, offset: job.offset, length: job.length, arrival: now };
    Item::new(id, workload, cost).with_class(c.class(&seen))
}

fn request_of(table: &HashMap<u64, Entry>, id: u64) -> DispatchRequest {
    table.get(&id).map_or(DispatchRequest { write: false, size: 0.0, offset: f64::NAN }, |e| e.req)
}

fn secs(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}

/// A request left service: free its slot, count it, reply.
#[allow(clippy::too_many_arguments)]
fn finished(
    id: u64,
    export: &Export,
    write: bool,
    length: u32,
    arrived: Instant,
    answer: Vec<u8>,
    reply: &mpsc::UnboundedSender<Vec<u8>>,
    shared: &Shared,
    tx: &mpsc::UnboundedSender<Msg>,
) {
    let _ = tx.send(Msg::Done(id, Instant::now()));
    export.stats.record(write, u64::from(length), arrived.elapsed());
    let _ = reply.send(answer);
    shared.inflight.fetch_sub(1, Ordering::Relaxed);
}

/// Send a dispatched request upstream; its reply (on the upstream reader task) finishes it.
fn submit_upstream(
    id: u64,
    job: Job,
    up: &Upstream,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Msg>,
) {
    let Job { export, write, fua, handle, offset, length, payload, arrived, reply, permit } = job;
    let (command, flags) = if write {
        (proto::CMD_WRITE, if fua { proto::CMD_FLAG_FUA } else { 0 })
    } else {
        (proto::CMD_READ, 0)
    };
    let done: Completion = Box::new(move |answer| {
        let buf = match answer {
            Ok(mut buf) if buf.len() >= REPLY_ROOM => {
                buf[..REPLY_ROOM].copy_from_slice(&proto::simple_reply(0, handle));
                buf
            }
            Ok(_) => proto::simple_reply(proto::EIO, handle).to_vec(),
            Err(errno) => proto::simple_reply(errno, handle).to_vec(),
        };
        finished(id, &export, write, length, arrived, buf, &reply, &shared, &tx);
        drop(permit);
    });
    up.submit(command, flags, offset, length, &payload, done);
}

/// Serve one dispatched request of a file backend on this (blocking) thread — positioned
/// I/O, then with an emulated device a sleep until `finish` (a thread's sleep is precise to tens
/// of microseconds, tokio's timer to 1 ms) — then free its slot and reply. Called on tokio's
/// blocking pool straight from the dispatcher task (no async task in between: one wake-up fewer
/// per request). A panic in the I/O answers `EIO`.
fn serve_file(
    id: u64,
    job: Job,
    shared: &Shared,
    tx: &mpsc::UnboundedSender<Msg>,
    finish: Option<Instant>,
) {
    let Job { export, write, fua, handle, offset, length, payload, arrived, reply, permit } = job;
    let Backend::File(file) = &export.backend else {
        unreachable!("serve_file is only called for file backends")
    };
    let io = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if write {
            let ok = file.write(offset, &payload, fua);
            proto::simple_reply(if ok { 0 } else { proto::EIO }, handle).to_vec()
        } else {
            file.read(handle, offset, length)
        }
    }))
    .unwrap_or_else(|_| proto::simple_reply(proto::EIO, handle).to_vec());
    if let Some(f) = finish {
        std::thread::sleep(f.saturating_duration_since(Instant::now()));
    }
    finished(id, &export, write, length, arrived, io, &reply, shared, tx);
    drop(permit);
}

/// Forward one dispatched request upstream and hold its reply until the emulated device's
/// `finish`, then free its slot and reply.
async fn run_upstream(
    id: u64,
    job: Job,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Msg>,
    finish: Option<Instant>,
) {
    let Job { export, write, fua, handle, offset, length, payload, arrived, reply, permit } = job;
    let Backend::Upstream(up) = &export.backend else {
        unreachable!("run_upstream is only called for upstream backends")
    };
    let (command, flags) = if write {
        (proto::CMD_WRITE, if fua { proto::CMD_FLAG_FUA } else { 0 })
    } else {
        (proto::CMD_READ, 0)
    };
    let answer = up.request(command, flags, offset, length, &payload).await;
    if let Some(f) = finish {
        tokio::time::sleep_until(f.into()).await;
    }
    let io = match answer {
        Ok(data) => {
            let mut buf = proto::simple_reply(0, handle).to_vec();
            buf.extend_from_slice(&data);
            buf
        }
        Err(errno) => proto::simple_reply(errno, handle).to_vec(),
    };
    finished(id, &export, write, length, arrived, io, &reply, &shared, &tx);
    drop(permit);
}

/// Read exactly `n` bytes; `Ok(None)` at a clean end of stream before the first byte.
async fn read_opt<R: AsyncReadExt + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<bool, String> {
    let mut got = 0;
    while got < buf.len() {
        let n = r.read(&mut buf[got..]).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return if got == 0 { Ok(false) } else { Err("end of stream inside a message".into()) };
        }
        got += n;
    }
    Ok(true)
}

async fn read_exact<R: AsyncReadExt + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<(), String> {
    if read_opt(r, buf).await? {
        Ok(())
    } else {
        Err("end of stream".into())
    }
}

async fn send(w: &mut OwnedWriteHalf, data: &[u8]) -> Result<(), String> {
    w.write_all(data).await.map_err(|e| e.to_string())
}

/// The handshake: the export chosen, or `None` when the client ended it (abort, or left).
async fn handshake(
    rd: &mut tokio::net::tcp::OwnedReadHalf,
    wr: &mut OwnedWriteHalf,
    shared: &Shared,
) -> Result<Option<Arc<Export>>, String> {
    send(wr, &proto::greeting()).await?;
    let mut flags = [0u8; 4];
    read_exact(rd, &mut flags).await?;
    let flags = u32::from_be_bytes(flags);
    if flags & !proto::CLIENT_FLAGS_KNOWN != 0 {
        return Err(format!("unknown client flags {flags:#x}"));
    }
    let no_zeroes = flags & proto::CLIENT_NO_ZEROES != 0;
    let find = |name: &str| shared.exports().into_iter().find(|e| e.name == name);
    loop {
        let mut header = [0u8; 16];
        if !read_opt(rd, &mut header).await? {
            return Ok(None);
        }
        let (option, len) = proto::parse_option_header(&header)?;
        let mut data = vec![0u8; len as usize];
        read_exact(rd, &mut data).await?;
        match option {
            proto::OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                let Some(e) = find(&name) else {
                    return Err(format!("NBD_OPT_EXPORT_NAME: no export {name:?}"));
                };
                send(wr, &proto::export_name_reply(e.size, no_zeroes)).await?;
                return Ok(Some(e));
            }
            proto::OPT_ABORT => {
                send(wr, &proto::option_reply(option, proto::REP_ACK, &[])).await?;
                return Ok(None);
            }
            proto::OPT_LIST if len != 0 => {
                let msg = b"NBD_OPT_LIST takes no data";
                send(wr, &proto::option_reply(option, proto::REP_ERR_INVALID, msg)).await?;
            }
            proto::OPT_LIST => {
                for e in shared.exports() {
                    let entry = proto::list_entry(&e.name);
                    send(wr, &proto::option_reply(option, proto::REP_SERVER, &entry)).await?;
                }
                send(wr, &proto::option_reply(option, proto::REP_ACK, &[])).await?;
            }
            proto::OPT_INFO | proto::OPT_GO => match proto::parse_info_request(&data) {
                Err(msg) => {
                    let reply = proto::option_reply(option, proto::REP_ERR_INVALID, msg.as_bytes());
                    send(wr, &reply).await?;
                }
                Ok((name, _)) => match find(&name) {
                    None => {
                        let msg = format!("no export {name:?}");
                        let reply =
                            proto::option_reply(option, proto::REP_ERR_UNKNOWN, msg.as_bytes());
                        send(wr, &reply).await?;
                    }
                    Some(e) => {
                        let info = proto::info_export(e.size);
                        send(wr, &proto::option_reply(option, proto::REP_INFO, &info)).await?;
                        let bs = proto::info_block_size(e.block, shared.max_request);
                        send(wr, &proto::option_reply(option, proto::REP_INFO, &bs)).await?;
                        send(wr, &proto::option_reply(option, proto::REP_ACK, &[])).await?;
                        if option == proto::OPT_GO {
                            return Ok(Some(e));
                        }
                    }
                },
            },
            _ => {
                let msg = b"option not supported by tailbound-gate";
                send(wr, &proto::option_reply(option, proto::REP_ERR_UNSUP, msg)).await?;
            }
        }
    }
}

/// Wait until `rx` holds `true` (forever if its sender is gone).
async fn until_set(mut rx: watch::Receiver<bool>) {
    if rx.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One client connection.
async fn connection(stream: TcpStream, shared: Arc<Shared>) -> Result<(), String> {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let chosen = tokio::select! {
        h = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut rd, &mut wr, &shared)) => {
            h.map_err(|_| "handshake timed out".to_string())??
        }
        _ = until_set(shared.stopping.clone()) => return Ok(()),
    };
    let Some(export) = chosen else { return Ok(()) };
    // shutdown, or a reload removing the export: read no further request
    let closing = {
        let (stopping, removed) = (shared.stopping.clone(), export.removed.subscribe());
        async move {
            tokio::select! {
                _ = until_set(stopping) => {}
                _ = until_set(removed) => {}
            }
        }
    };
    tokio::pin!(closing);
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        // the replies ready, in one system call (fewer at queue depth)
        let mut batch = Vec::new();
        while let Some(buf) = reply_rx.recv().await {
            let out = if let Ok(next) = reply_rx.try_recv() {
                batch.clear();
                batch.extend_from_slice(&buf);
                batch.extend_from_slice(&next);
                while batch.len() < REPLY_BATCH_BYTES {
                    let Ok(more) = reply_rx.try_recv() else { break };
                    batch.extend_from_slice(&more);
                }
                &batch
            } else {
                &buf
            };
            if wr.write_all(out).await.is_err() {
                return;
            }
        }
        let _ = wr.shutdown().await;
    });
    let budget = Arc::new(Semaphore::new(INFLIGHT_BYTES.max(shared.max_request as usize) / 1024));
    let size = export.size;
    let result = async {
        loop {
            let mut header = [0u8; proto::REQUEST_BYTES];
            let more = tokio::select! {
                more = read_opt(&mut rd, &mut header) => more?,
                _ = &mut closing => false,
            };
            if !more {
                return Ok(());
            }
            let r = proto::parse_request(&header)?;
            let mut action = proto::classify(&r, size, shared.max_request);
            if let (Action::Write, Backend::File(f)) = (&action, &export.backend) {
                if !f.write_aligned(r.offset, r.length) {
                    action = Action::Error(proto::EINVAL); // direct I/O: whole blocks only
                }
            }
            match action {
                Action::Read | Action::Write => {
                    let write = r.command == proto::CMD_WRITE;
                    let units = (r.length as usize).div_ceil(1024).max(1) as u32;
                    let permit = budget
                        .clone()
                        .acquire_many_owned(units)
                        .await
                        .map_err(|e| e.to_string())?;
                    let mut payload = Vec::new();
                    if write {
                        payload = vec![0u8; r.length as usize];
                        read_exact(&mut rd, &mut payload).await?;
                    }
                    let job = Job {
                        export: export.clone(),
                        write,
                        fua: r.flags & proto::CMD_FLAG_FUA != 0,
                        handle: r.handle,
                        offset: r.offset,
                        length: r.length,
                        payload,
                        arrived: Instant::now(),
                        reply: reply_tx.clone(),
                        permit,
                    };
                    shared.inflight.fetch_add(1, Ordering::Relaxed);
                    if let Err(mpsc::error::SendError(Msg::Enqueue(job))) =
                        shared.to_dispatcher.send(Msg::Enqueue(job))
                    {
                        job.fail(proto::EIO, &shared);
                        return Err("the dispatcher has stopped".into());
                    }
                }
                Action::Flush => {
                    let backend = export.backend.clone();
                    let reply = reply_tx.clone();
                    tokio::spawn(async move {
                        let ok = backend.flush().await;
                        let err = if ok { 0 } else { proto::EIO };
                        let _ = reply.send(proto::simple_reply(err, r.handle).to_vec());
                    });
                }
                Action::Trim => {
                    let _ = reply_tx.send(proto::simple_reply(0, r.handle).to_vec());
                }
                Action::Disconnect => return Ok(()),
                Action::Error(errno) => {
                    if r.command == proto::CMD_WRITE {
                        // drop the payload to stay in step with the stream (length <= maximum)
                        let mut left = r.length as usize;
                        let mut sink = vec![0u8; left.min(64 * 1024)];
                        while left > 0 {
                            let n = left.min(sink.len());
                            read_exact(&mut rd, &mut sink[..n]).await?;
                            left -= n;
                        }
                    }
                    let _ = reply_tx.send(proto::simple_reply(errno, r.handle).to_vec());
                }
                Action::Close(why) => return Err(why.to_string()),
            }
        }
    }
    .await;
    drop(reply_tx);
    // replies of requests still in the gateway are written before the connection closes
    let _ = writer.await;
    result
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
