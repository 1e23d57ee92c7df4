//! The server: one task per connection (handshake, then a reader and a writer), and one
//! dispatcher task that owns `tailbound_core::sched::dispatch::Dispatcher` — the simulator's
//! dispatcher — on a real clock (seconds since the gateway started).
//!
//! A read or write is parsed and checked by its connection, then sent to the dispatcher task,
//! which enqueues it with its export's workload index and its cost in device-seconds and calls
//! `dispatch(now)` after every arrival, every completion and every shaper wake-up it asked for.
//! Each request the dispatcher lets in runs on tokio's blocking thread pool (positioned
//! `pread`/`pwrite` on the export's file) or is forwarded to the upstream NBD server
//! (`upstream.rs`); its completion goes back to the dispatcher task
//! (`complete`, which frees its slot) and its reply to the connection's writer. The dispatcher
//! task never waits on a client: replies go through the connection's own queue, and each
//! connection holds at most `INFLIGHT_BYTES` of requests in the gateway (it stops reading when
//! it has that much outstanding), so a client that stops reading stalls only itself.
//! FLUSH (`fdatasync` of the export's file) and TRIM (a no-op: the protocol leaves trimmed
//! contents unspecified) do not pass the dispatcher: the profile prices reads and writes only.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tailbound_core::sched::dispatch::{Dispatched, Dispatcher, Request as DispatchRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::config::{Config, CostTable};
use crate::metrics::{self, Stats};
use crate::proto::{self, Action};
use crate::upstream::Upstream;

/// Most bytes of requests one connection may have inside the gateway (queued, in service or
/// replying); the connection reads no further request until some finish.
pub const INFLIGHT_BYTES: usize = 64 * 1024 * 1024;
/// Most connections served at once (more wait in the listen backlog).
pub const MAX_CONNECTIONS: usize = 1024;
/// Time a client has for the whole handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// One export: a tenant's volume, backed by `<backend_dir>/<name>.img`.
pub struct Export {
    pub name: String,
    pub backend: Backend,
    pub size: u64,
    pub stats: Stats,
}

/// A read or write waiting for or in the dispatcher.
struct Job {
    export: usize,
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

enum Msg {
    Enqueue(Job),
    Done(u64),
}

struct Shared {
    exports: Vec<Export>,
    max_request: u32,
    to_dispatcher: mpsc::UnboundedSender<Msg>,
}

/// Where an export's data lives.
#[derive(Clone)]
pub enum Backend {
    /// `<backend_dir>/<name>.img`, served on the blocking pool.
    File(Arc<File>),
    /// The export of the same name on an upstream NBD server.
    Upstream(Arc<Upstream>),
}

/// Open every export: connect to the upstream server's export of the same name, or open
/// (creating or extending) its backend file.
pub async fn open_exports(cfg: &Config) -> Result<Vec<Export>, String> {
    if let Some(address) = &cfg.upstream {
        let mut out = Vec::new();
        for name in &cfg.exports {
            let up = Upstream::connect(address, name).await?;
            let size = up.size;
            let backend = Backend::Upstream(Arc::new(up));
            out.push(Export { name: name.clone(), backend, size, stats: Stats::default() });
        }
        return Ok(out);
    }
    let dir = Path::new(&cfg.backend_dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("backend_dir {}: {e}", dir.display()))?;
    cfg.exports
        .iter()
        .map(|name| {
            let path = dir.join(format!("{name}.img"));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let len = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
            if len < cfg.export_size {
                file.set_len(cfg.export_size).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(Export {
                name: name.clone(),
                backend: Backend::File(Arc::new(file)),
                size: cfg.export_size,
                stats: Stats::default(),
            })
        })
        .collect()
}

/// Serve until `shutdown` resolves; returns the exports' counters (one JSON line each).
pub async fn serve(
    cfg: Config,
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<String, String> {
    let exports = open_exports(&cfg).await?;
    let limits = cfg.limits.limits();
    let scheduler = cfg.scheduler.build(exports.len()).map_err(|e| e.to_string())?;
    let dispatcher = Dispatcher::new(limits, scheduler).map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::unbounded_channel();
    let shared =
        Arc::new(Shared { exports, max_request: cfg.max_request_bytes, to_dispatcher: tx.clone() });
    tokio::spawn(dispatch_loop(
        dispatcher,
        cfg.profile.clone(),
        cfg.emulate_device,
        shared.clone(),
        rx,
        tx,
    ));
    if let Some(l) = metrics_listener {
        let s = shared.clone();
        let body = move || metrics::render(s.exports.iter().map(|e| (e.name.as_str(), &e.stats)));
        tokio::spawn(metrics::serve(l, body));
    }
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = connections.clone().acquire_owned() => p.map_err(|e| e.to_string())?,
        };
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => break,
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
        tokio::spawn(async move {
            if let Err(e) = connection(stream, shared).await {
                eprintln!("tailbound-gate: connection closed: {e}");
            }
            drop(permit);
        });
    }
    Ok(report(&shared))
}

/// Every export's counters, one JSON line per export.
fn report(shared: &Shared) -> String {
    let mut out = String::new();
    for e in &shared.exports {
        let n = e.stats.count();
        let sum = e.stats.latency_ns.load(Ordering::Relaxed) as f64 * 1e-9;
        let line = serde_json::json!({
            "export": e.name,
            "requests": n,
            "bytes": e.stats.bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum::<u64>(),
            "mean_latency_s": if n > 0 { sum / n as f64 } else { 0.0 },
            "max_latency_s": e.stats.max_latency_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The dispatcher task (see the module documentation).
async fn dispatch_loop(
    mut dispatcher: Dispatcher,
    costs: CostTable,
    emulate: bool,
    shared: Arc<Shared>,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    tx: mpsc::UnboundedSender<Msg>,
) {
    let start = Instant::now();
    let now = || start.elapsed().as_secs_f64();
    // requests inside the dispatcher: what it reads of them, and the job until it is dispatched
    let mut table: HashMap<u64, (DispatchRequest, Option<Job>)> = HashMap::new();
    let mut next_id: u64 = 0;
    let mut wake: Option<f64> = None;
    let mut device_free = 0.0f64; // the emulated device's clock
    let mut out: Vec<Dispatched> = Vec::new();
    loop {
        let sleep = wake.map(|t| tokio::time::sleep_until((start + secs(t)).into()));
        tokio::select! {
            msg = rx.recv() => match msg {
                None => return,
                Some(Msg::Enqueue(job)) => {
                    let size = f64::from(job.length);
                    let cost = costs.cost(job.write, size);
                    let id = next_id;
                    next_id += 1;
                    let req = DispatchRequest { write: job.write, size, offset: job.offset as f64 };
                    let workload = job.export as u32;
                    table.insert(id, (req, Some(job)));
                    dispatcher.enqueue(id, workload, cost, now());
                }
                Some(Msg::Done(id)) => {
                    if let Some((req, _)) = table.remove(&id) {
                        dispatcher.complete(id, req);
                    }
                }
            },
            _ = async { match sleep { Some(s) => s.await, None => std::future::pending().await } } => {
                dispatcher.woken();
                wake = None;
            }
        }
        out.clear();
        let t = now();
        if let Some(w) = dispatcher.dispatch(t, |id| request_of(&table, id), &mut out) {
            wake = Some(wake.map_or(w, |old| old.min(w)));
        }
        for d in &out {
            let id = d.item.id;
            let Some(job) = table.get_mut(&id).and_then(|e| e.1.take()) else { continue };
            let finish = if emulate {
                device_free = device_free.max(t) + d.item.cost;
                Some(start + secs(device_free))
            } else {
                None
            };
            tokio::spawn(run_io(id, job, shared.clone(), tx.clone(), finish));
        }
    }
}

/// What the dispatcher reads of request `id` (every id it asks about is in the table; an
/// unknown one reads as an empty read rather than a panic).
fn request_of(table: &HashMap<u64, (DispatchRequest, Option<Job>)>, id: u64) -> DispatchRequest {
    table.get(&id).map_or(DispatchRequest { write: false, size: 0.0, offset: f64::NAN }, |e| e.0)
}

fn secs(t: f64) -> Duration {
    Duration::from_secs_f64(t.max(0.0))
}

/// Serve one dispatched request on the blocking pool, then free its slot and reply.
async fn run_io(
    id: u64,
    job: Job,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Msg>,
    finish: Option<Instant>,
) {
    let Job { export, write, fua, handle, offset, length, payload, arrived, reply, permit } = job;
    let io = match &shared.exports[export].backend {
        Backend::File(file) => {
            let file = file.clone();
            tokio::task::spawn_blocking(move || -> Vec<u8> {
                let reply = serve_io(&file, write, fua, handle, offset, length, &payload);
                if let Some(f) = finish {
                    // a thread's sleep is precise to tens of microseconds, tokio's timer to 1 ms
                    std::thread::sleep(f.saturating_duration_since(Instant::now()));
                }
                reply
            })
            .await
            .unwrap_or_else(|_| proto::simple_reply(proto::EIO, handle).to_vec())
        }
        Backend::Upstream(up) => {
            let (command, flags) = if write {
                (proto::CMD_WRITE, if fua { proto::CMD_FLAG_FUA } else { 0 })
            } else {
                (proto::CMD_READ, 0)
            };
            let answer = up.request(command, flags, offset, length, &payload).await;
            if let Some(f) = finish {
                tokio::time::sleep_until(f.into()).await;
            }
            match answer {
                Ok(data) => {
                    let mut buf = proto::simple_reply(0, handle).to_vec();
                    buf.extend_from_slice(&data);
                    buf
                }
                Err(errno) => proto::simple_reply(errno, handle).to_vec(),
            }
        }
    };
    let _ = tx.send(Msg::Done(id));
    shared.exports[export].stats.record(write, u64::from(length), arrived.elapsed());
    let _ = reply.send(io);
    drop(permit);
}

/// A read or write on the export's file; the reply (header, and data for a read).
fn serve_io(
    file: &File,
    write: bool,
    fua: bool,
    handle: u64,
    offset: u64,
    length: u32,
    payload: &[u8],
) -> Vec<u8> {
    if write {
        let ok = file.write_all_at(payload, offset).is_ok() && (!fua || file.sync_data().is_ok());
        proto::simple_reply(if ok { 0 } else { proto::EIO }, handle).to_vec()
    } else {
        let mut buf = vec![0u8; 16 + length as usize];
        match file.read_exact_at(&mut buf[16..], offset) {
            Ok(()) => {
                buf[..16].copy_from_slice(&proto::simple_reply(0, handle));
                buf
            }
            Err(_) => proto::simple_reply(proto::EIO, handle).to_vec(),
        }
    }
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
) -> Result<Option<usize>, String> {
    send(wr, &proto::greeting()).await?;
    let mut flags = [0u8; 4];
    read_exact(rd, &mut flags).await?;
    let flags = u32::from_be_bytes(flags);
    if flags & !proto::CLIENT_FLAGS_KNOWN != 0 {
        return Err(format!("unknown client flags {flags:#x}"));
    }
    let no_zeroes = flags & proto::CLIENT_NO_ZEROES != 0;
    let find = |name: &str| shared.exports.iter().position(|e| e.name == name);
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
                send(wr, &proto::export_name_reply(shared.exports[e].size, no_zeroes)).await?;
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
                for e in &shared.exports {
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
                        let info = proto::info_export(shared.exports[e].size);
                        send(wr, &proto::option_reply(option, proto::REP_INFO, &info)).await?;
                        let bs = proto::info_block_size(shared.max_request);
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

/// One client connection.
async fn connection(stream: TcpStream, shared: Arc<Shared>) -> Result<(), String> {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let chosen = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut rd, &mut wr, &shared))
        .await
        .map_err(|_| "handshake timed out".to_string())??;
    let Some(export) = chosen else { return Ok(()) };
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(buf) = reply_rx.recv().await {
            if wr.write_all(&buf).await.is_err() {
                return;
            }
        }
        let _ = wr.shutdown().await;
    });
    let budget = Arc::new(Semaphore::new(INFLIGHT_BYTES.max(shared.max_request as usize) / 1024));
    let size = shared.exports[export].size;
    let result = async {
        loop {
            let mut header = [0u8; proto::REQUEST_BYTES];
            if !read_opt(&mut rd, &mut header).await? {
                return Ok(());
            }
            let r = proto::parse_request(&header)?;
            match proto::classify(&r, size, shared.max_request) {
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
                        export,
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
                    shared.to_dispatcher.send(Msg::Enqueue(job)).map_err(|e| e.to_string())?;
                }
                Action::Flush => {
                    let backend = shared.exports[export].backend.clone();
                    let reply = reply_tx.clone();
                    tokio::spawn(async move {
                        let ok = match backend {
                            Backend::File(file) => {
                                tokio::task::spawn_blocking(move || file.sync_data().is_ok())
                                    .await
                                    .unwrap_or(false)
                            }
                            Backend::Upstream(up) => {
                                up.request(proto::CMD_FLUSH, 0, 0, 0, &[]).await.is_ok()
                            }
                        };
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
