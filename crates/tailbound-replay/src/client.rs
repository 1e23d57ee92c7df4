//! The client: every tenant's requests at their trace timestamps, open loop.
//!
//! One pacer thread walks all requests in time order and sleeps (nanosleep, 1 ns timer slack)
//! until each one's time, then hands it to its connection's writer task; the writer sends it at
//! once (TCP_NODELAY) whatever the earlier requests' responses are doing, and its issue lag is
//! the time from the trace timestamp to the start of the write. A tenant has `connections=K`
//! TCP connections (default 1) and its requests go round-robin over them; its connection's
//! reader task takes the responses in order (the server answers a connection's requests in
//! order) and a request's latency runs from its trace timestamp to the last byte of its
//! response. With one connection a tenant's responses are delivered FIFO, as the simulator's
//! per-tenant queues do; more connections avoid head-of-line blocking behind a large response.
//! Everything stops at the deadline: the last request's time plus `--drain` seconds.
//!
//! With `--nbd` every tenant is an export of an NBD server instead (`crate::nbd`): its requests
//! are NBD reads and writes at the offsets of the requests file's fifth column, `offset`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpSocket;
use tokio::sync::mpsc;
use tokio::time::{timeout_at, Instant};

use crate::nbd;
use crate::progress::{Progress, Report};
use crate::proto::{self, Error, MessageSizes, CHUNK, MAX_REQUESTS, MAX_TIME_S, RESPONSE_HEADER};

/// Requests files above this size are refused (bounded memory).
const MAX_FILE_BYTES: u64 = 1 << 30;
const MAX_SIZE_BYTES: f64 = 1_099_511_627_776.0; // 1 TiB, tailbound.limits
const MAX_CONNECTIONS: usize = 64;

struct Tenant {
    name: String,
    addr: SocketAddr,
    tos: Option<u8>,
    connections: usize,
    /// `--nbd`: the export (default: the tenant's name).
    export: Option<String>,
}

pub struct Options {
    requests: String,
    tenants: Vec<Tenant>,
    out: String,
    start_delay_s: f64,
    /// Wall-clock start (seconds since the Unix epoch): several clients started apart share it.
    start_at: Option<f64>,
    /// The trace time that maps to the start (default: the earliest request's).
    origin: Option<f64>,
    drain_s: f64,
    sizes: MessageSizes,
    nbd: bool,
    /// `--progress FILE`: every answered request's row while the replay runs (`progress.rs`).
    progress: Option<String>,
}

fn value<'a>(option: &str, v: Option<&'a String>) -> Result<&'a String, Error> {
    v.ok_or_else(|| Error::Usage(format!("{option} needs a value")))
}

fn factor(option: &str, v: Option<&String>) -> Result<f64, Error> {
    let v = value(option, v)?;
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(Error::Usage(format!("{option}: expected a number >= 0, got {v:?}"))),
    }
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, Error> {
        let mut o = Options {
            requests: String::new(),
            tenants: Vec::new(),
            out: String::new(),
            start_delay_s: 0.5,
            start_at: None,
            origin: None,
            drain_s: 5.0,
            sizes: MessageSizes::default(),
            nbd: false,
            progress: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--requests" => o.requests = value(a, it.next())?.clone(),
                "--out" => o.out = value(a, it.next())?.clone(),
                "--tenant" => o.tenants.push(parse_tenant(value(a, it.next())?)?),
                "--start-delay" => o.start_delay_s = proto::seconds(a, it.next())?,
                "--start-at" => o.start_at = Some(proto::seconds(a, it.next())?),
                "--origin" => o.origin = Some(proto::seconds(a, it.next())?),
                "--drain" => o.drain_s = proto::seconds(a, it.next())?,
                "--nbd" => o.nbd = true,
                "--progress" => o.progress = Some(value(a, it.next())?.clone()),
                "--overhead" => o.sizes.overhead = factor(a, it.next())?,
                "--small-factor" => o.sizes.small_factor = factor(a, it.next())?,
                "--large-factor" => o.sizes.large_factor = factor(a, it.next())?,
                other => return Err(Error::Usage(format!("client: unknown argument {other:?}"))),
            }
        }
        if o.requests.is_empty() || o.out.is_empty() || o.tenants.is_empty() {
            return Err(Error::Usage(
                "client: give --requests, --out and at least one --tenant".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for t in &o.tenants {
            if !seen.insert(t.name.as_str()) {
                return Err(Error::Usage(format!("--tenant {}: given twice", t.name)));
            }
        }
        Ok(o)
    }
}

/// `NAME=HOST:PORT[,tos=N][,connections=K]`.
fn parse_tenant(text: &str) -> Result<Tenant, Error> {
    let (name, rest) = text
        .split_once('=')
        .ok_or_else(|| Error::Usage(format!("--tenant: expected NAME=IP:PORT, got {text:?}")))?;
    if name.is_empty() {
        return Err(Error::Usage(format!("--tenant: empty name in {text:?}")));
    }
    let (addr, opts) = proto::address_with_options(rest);
    let addr =
        addr.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
            Error::Usage(format!("--tenant {name}: expected IP:PORT, got {addr:?}"))
        })?;
    let mut t = Tenant { name: name.to_string(), addr, tos: None, connections: 1, export: None };
    for (k, v) in opts {
        match k {
            "tos" => t.tos = Some(proto::tos(v)?),
            "export" if v.len() <= 4096 => t.export = Some(v.to_string()), // "": the default
            "connections" => {
                t.connections = match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_CONNECTIONS).contains(&n) => n,
                    _ => {
                        return Err(Error::Usage(format!(
                            "--tenant {name}: connections must be 1..{MAX_CONNECTIONS}, got {v:?}"
                        )))
                    }
                }
            }
            _ => return Err(Error::Usage(format!("--tenant {name}: unknown option {k:?}"))),
        }
    }
    Ok(t)
}

#[derive(Clone, Copy)]
struct Request {
    time_s: f64,
    is_read: bool,
    size: f64,
    offset: u64,
    request_bytes: u64,
    response_bytes: u64,
}

/// Every tenant's requests (indexed like `tenants`), each list sorted by time.
fn read_requests(
    path: &str,
    tenants: &[Tenant],
    sizes: &MessageSizes,
    nbd: bool,
) -> Result<Vec<Vec<Request>>, Error> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::Io(format!("cannot read {path}: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        return Err(Error::Usage(format!("{path}: {len} bytes, above the limit {MAX_FILE_BYTES}")));
    }
    let index: HashMap<&str, usize> =
        tenants.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let mut out: Vec<Vec<Request>> = tenants.iter().map(|_| Vec::new()).collect();
    let mut count = 0usize;
    let bad = |line: usize, msg: String| Error::Usage(format!("{path}:{line}: {msg}"));
    let mut columns = 4;
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let lineno = n + 1;
        let line = line.map_err(|e| bad(lineno, format!("cannot read: {e}")))?;
        let line = line.trim();
        if n == 0 {
            columns = match line {
                "tenant,time_s,op,size" if !nbd => 4,
                "tenant,time_s,op,size,offset" => 5,
                _ if nbd => {
                    return Err(bad(
                        1,
                        format!("expected the header 'tenant,time_s,op,size,offset', got {line:?}"),
                    ))
                }
                _ => {
                    return Err(bad(
                        1,
                        format!("expected the header 'tenant,time_s,op,size', got {line:?}"),
                    ))
                }
            };
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != columns {
            return Err(bad(lineno, format!("expected {columns} fields, got {}", fields.len())));
        }
        let Some(&tenant) = index.get(fields[0]) else {
            return Err(bad(lineno, format!("tenant {:?} has no --tenant", fields[0])));
        };
        let time_s = match fields[1].parse::<f64>() {
            Ok(t) if t.is_finite() && (0.0..=MAX_TIME_S).contains(&t) => t,
            _ => {
                return Err(bad(
                    lineno,
                    format!("time_s: expected seconds in [0, 1e10], got {:?}", fields[1]),
                ))
            }
        };
        let is_read = match fields[2] {
            "R" | "r" | "read" | "0" => true,
            "W" | "w" | "write" | "1" => false,
            other => return Err(bad(lineno, format!("op: expected R or W, got {other:?}"))),
        };
        let size = match fields[3].parse::<f64>() {
            Ok(s) if s.is_finite() && (0.0..=MAX_SIZE_BYTES).contains(&s) => s,
            _ => {
                return Err(bad(
                    lineno,
                    format!("size: expected bytes in [0, 1 TiB], got {:?}", fields[3]),
                ))
            }
        };
        let offset = match fields.get(4).map(|f| f.parse::<u64>()) {
            None => 0,
            Some(Ok(x)) if x < 1 << 62 => x,
            Some(_) => {
                return Err(bad(
                    lineno,
                    format!("offset: expected bytes in [0, 2^62), got {:?}", fields[4]),
                ))
            }
        };
        let (request_bytes, response_bytes) = if nbd {
            if !(size >= 1.0 && size <= f64::from(u32::MAX) && size.fract() == 0.0) {
                return Err(bad(
                    lineno,
                    format!("size: an NBD request is 1 to 2^32 - 1 whole bytes, got {size}"),
                ));
            }
            crate::nbd::wire_bytes(is_read, size as u64)
        } else {
            sizes.of(is_read, size).ok_or_else(|| {
                bad(lineno, format!("a message above {} bytes", proto::MAX_MESSAGE))
            })?
        };
        count += 1;
        if count > MAX_REQUESTS {
            return Err(bad(lineno, format!("more than {MAX_REQUESTS} requests")));
        }
        out[tenant].push(Request { time_s, is_read, size, offset, request_bytes, response_bytes });
    }
    for list in &mut out {
        list.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    }
    Ok(out)
}

/// One TCP connection's share of a tenant's requests.
struct Connection {
    tenant: usize,
    /// Indices into the tenant's request list, in time order.
    requests: Vec<usize>,
}

struct Outcome {
    lag_s: Vec<f64>,
    latency_s: Vec<f64>,
    received: Vec<u64>,
    error: Option<String>,
}

pub async fn replay(o: Options) -> Result<u8, Error> {
    let requests = read_requests(&o.requests, &o.tenants, &o.sizes, o.nbd)?;
    let t0 =
        requests.iter().filter_map(|r| r.first()).map(|r| r.time_s).fold(f64::INFINITY, f64::min);
    let t_last = requests.iter().filter_map(|r| r.last()).map(|r| r.time_s).fold(0.0, f64::max);
    let t0 = match o.origin {
        Some(origin) if t0.is_finite() && origin > t0 => {
            return Err(Error::Usage(format!(
                "--origin {origin}: after the first request's time {t0}"
            )))
        }
        Some(origin) => origin,
        None if t0.is_finite() => t0,
        None => 0.0,
    };

    let mut conns = Vec::new();
    let mut streams = Vec::new();
    for (ti, t) in o.tenants.iter().enumerate() {
        for k in 0..t.connections {
            let sock = if t.addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }
                .map_err(|e| Error::Io(format!("tenant {}: socket: {e}", t.name)))?;
            if let Some(tos) = t.tos {
                proto::set_tos(&sock, tos)?;
            }
            let stream = tokio::time::timeout(Duration::from_secs(5), sock.connect(t.addr))
                .await
                .map_err(|_| {
                    Error::Io(format!("tenant {}: connecting to {} timed out", t.name, t.addr))
                })?
                .map_err(|e| {
                    Error::Io(format!("tenant {}: cannot connect to {}: {e}", t.name, t.addr))
                })?;
            stream.set_nodelay(true).map_err(|e| Error::Io(e.to_string()))?;
            let mut stream = stream;
            if o.nbd {
                let export = t.export.as_deref().unwrap_or(&t.name);
                let size = tokio::time::timeout(
                    Duration::from_secs(10),
                    tailbound_nbd::client::handshake(&mut stream, export),
                )
                .await
                .map_err(|_| Error::Io(format!("tenant {}: handshake timed out", t.name)))?
                .map_err(|e| Error::Io(format!("tenant {}: {e}", t.name)))?
                .size;
                if let Some((i, r)) = requests[ti]
                    .iter()
                    .enumerate()
                    .find(|(_, r)| r.offset.saturating_add(r.size as u64) > size)
                {
                    return Err(Error::Usage(format!(
                        "tenant {}: request {i} ({} bytes at {}) ends beyond the export's {size} bytes",
                        t.name, r.size, r.offset
                    )));
                }
            }
            let mine = (0..requests[ti].len()).filter(|i| i % t.connections == k).collect();
            conns.push(Connection { tenant: ti, requests: mine });
            streams.push(stream);
        }
    }

    let start = match o.start_at {
        None => Instant::now() + Duration::from_secs_f64(o.start_delay_s),
        Some(at) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| Error::Io(format!("the clock is before 1970: {e}")))?
                .as_secs_f64();
            if at <= now {
                return Err(Error::Usage(format!(
                    "--start-at {at}: already passed ({:.3} s ago) once connected",
                    now - at
                )));
            }
            Instant::now() + Duration::from_secs_f64(at - now)
        }
    };
    let deadline = start + Duration::from_secs_f64(t_last - t0 + o.drain_s);
    let at = |time_s: f64| start + Duration::from_secs_f64(time_s - t0);

    // the pacer's schedule: (offset, connection, position in the connection's list)
    let mut schedule: Vec<(f64, usize, usize)> = Vec::new();
    for (ci, c) in conns.iter().enumerate() {
        for (j, &i) in c.requests.iter().enumerate() {
            schedule.push((requests[c.tenant][i].time_s, ci, j));
        }
    }
    schedule.sort_by(|a, b| a.0.total_cmp(&b.0));

    let progress = match &o.progress {
        None => None,
        Some(path) => {
            let fixed = conns
                .iter()
                .map(|c| {
                    let t = &o.tenants[c.tenant].name;
                    c.requests
                        .iter()
                        .map(|&i| {
                            let r = &requests[c.tenant][i];
                            let op = if r.is_read { "R" } else { "W" };
                            format!("{t},{i},{},{op},{},{}", r.time_s, r.size, r.request_bytes)
                        })
                        .collect()
                })
                .collect();
            Some(Progress::start(path, CSV_HEADER, fixed)?)
        }
    };
    let mut senders = Vec::new();
    let mut tasks = Vec::new();
    for (ci, (c, stream)) in conns.iter().zip(streams).enumerate() {
        let report = progress.as_ref().map_or_else(Report::none, |p| p.report(ci));
        let (tx, rx) = mpsc::unbounded_channel::<usize>();
        senders.push(tx);
        let reqs: Vec<Request> = c.requests.iter().map(|&i| requests[c.tenant][i]).collect();
        let due: Vec<Instant> = reqs.iter().map(|r| at(r.time_s)).collect();
        let (rd, wr) = stream.into_split();
        if o.nbd {
            let nbd_reqs: Vec<nbd::NbdRequest> = reqs
                .iter()
                .map(|r| nbd::NbdRequest {
                    is_read: r.is_read,
                    offset: r.offset,
                    length: r.size as u32,
                })
                .collect();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            let writer = tokio::spawn(nbd::write_requests(
                wr,
                rx,
                nbd_reqs.clone(),
                due.clone(),
                deadline,
                done_rx,
                report.clone(),
            ));
            let reader =
                tokio::spawn(nbd::read_replies(rd, nbd_reqs, due, deadline, done_tx, report));
            tasks.push((writer, reader));
            continue;
        }
        let writer = tokio::spawn(write_requests(
            wr,
            rx,
            reqs.clone(),
            due.clone(),
            deadline,
            report.clone(),
        ));
        let reader = tokio::spawn(read_responses(rd, reqs, due, deadline, report));
        tasks.push((writer, reader));
    }

    let std_start = start.into_std();
    let std_deadline = deadline.into_std();
    let pacer = std::thread::spawn(move || {
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with an integer argument; only this thread's timer slack changes.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        for (time_s, ci, j) in schedule {
            let due = std_start + Duration::from_secs_f64(time_s - t0);
            let now = std::time::Instant::now();
            if now >= std_deadline {
                break;
            }
            if due > now {
                std::thread::sleep(due - now);
            }
            let _ = senders[ci].send(j);
        }
        // dropping the senders ends the writers
    });

    let mut outcomes = Vec::new();
    for (writer, reader) in tasks {
        let (lag, error_w) = writer.await.map_err(|e| Error::Io(format!("writer task: {e}")))?;
        let (latency, received, error_r) =
            reader.await.map_err(|e| Error::Io(format!("reader task: {e}")))?;
        outcomes.push(Outcome {
            lag_s: lag,
            latency_s: latency,
            received,
            error: error_r.or(error_w),
        });
    }
    let _ = pacer.join();
    if let Some(p) = progress {
        p.finish()?;
    }

    write_csv(&o, &requests, &conns, &outcomes)?;
    let mut lost = 0usize;
    for (ti, t) in o.tenants.iter().enumerate() {
        let (mut done, mut total) = (0usize, 0usize);
        for (c, out) in conns.iter().zip(&outcomes) {
            if c.tenant == ti {
                total += c.requests.len();
                done += out.latency_s.iter().filter(|l| l.is_finite()).count();
                if let Some(e) = &out.error {
                    eprintln!("tailbound-replay client: tenant {}: {e}", t.name);
                }
            }
        }
        lost += total - done;
        eprintln!(
            "tailbound-replay client: tenant {}: {done} of {total} requests answered",
            t.name
        );
    }
    Ok(if lost > 0 { 1 } else { 0 })
}

/// Send each request when the pacer says; returns each request's issue lag (NaN: not sent).
async fn write_requests(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<usize>,
    reqs: Vec<Request>,
    due: Vec<Instant>,
    deadline: Instant,
    report: Report,
) -> (Vec<f64>, Option<String>) {
    let mut lag = vec![f64::NAN; reqs.len()];
    let zeros = vec![0u8; CHUNK];
    let mut error = None;
    while let Ok(Some(j)) = timeout_at(deadline, rx.recv()).await {
        let Some(r) = reqs.get(j) else { continue };
        lag[j] = Instant::now().saturating_duration_since(due[j]).as_secs_f64();
        report.sent(j, lag[j]);
        let header = proto::request_header(r.request_bytes, r.response_bytes, j as u64);
        let body = r.request_bytes - proto::REQUEST_HEADER as u64;
        if let Err(e) = proto::send_request(&mut wr, &header, body, &zeros, j, deadline).await {
            error = Some(e);
            break;
        }
    }
    let _ = wr.shutdown().await;
    (lag, error)
}

/// Take the responses in order; returns each request's latency (NaN: not answered) and the
/// bytes of its response.
async fn read_responses(
    mut rd: OwnedReadHalf,
    reqs: Vec<Request>,
    due: Vec<Instant>,
    deadline: Instant,
    report: Report,
) -> (Vec<f64>, Vec<u64>, Option<String>) {
    let mut latency = vec![f64::NAN; reqs.len()];
    let mut received = vec![0u64; reqs.len()];
    let mut sink = vec![0u8; CHUNK];
    for j in 0..reqs.len() {
        let one = async {
            let mut header = [0u8; RESPONSE_HEADER];
            rd.read_exact(&mut header).await.map_err(|e| e.to_string())?;
            let (total, seq) = proto::parse_response(&header)?;
            if seq != j as u64 || total != reqs[j].response_bytes {
                return Err(format!(
                    "expected response {j} of {} bytes, got {seq} of {total}",
                    reqs[j].response_bytes
                ));
            }
            let mut left = total - RESPONSE_HEADER as u64;
            while left > 0 {
                let want = left.min(CHUNK as u64) as usize;
                match rd.read(&mut sink[..want]).await {
                    Ok(0) => return Err("connection closed inside a response".to_string()),
                    Ok(k) => left -= k as u64,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(total)
        };
        match timeout_at(deadline, one).await {
            Ok(Ok(total)) => {
                latency[j] = Instant::now().saturating_duration_since(due[j]).as_secs_f64();
                received[j] = total;
                report.answered(j, latency[j], total);
            }
            Ok(Err(e)) => return (latency, received, Some(format!("response {j}: {e}"))),
            Err(_) => return (latency, received, Some(format!("deadline before response {j}"))),
        }
    }
    (latency, received, None)
}

/// The columns of the client's CSV (`--out`, and `--progress`).
const CSV_HEADER: &str =
    "tenant,seq,time_s,op,size,request_bytes,response_bytes,issue_lag_s,latency_s";

fn write_csv(
    o: &Options,
    requests: &[Vec<Request>],
    conns: &[Connection],
    outcomes: &[Outcome],
) -> Result<(), Error> {
    // per tenant request: (lag, latency, received)
    let mut rows: Vec<Vec<(f64, f64, u64)>> =
        requests.iter().map(|r| vec![(f64::NAN, f64::NAN, 0); r.len()]).collect();
    for (c, out) in conns.iter().zip(outcomes) {
        for (j, &i) in c.requests.iter().enumerate() {
            rows[c.tenant][i] = (out.lag_s[j], out.latency_s[j], out.received[j]);
        }
    }
    let path = std::path::Path::new(&o.out);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let io = |e: std::io::Error| Error::Io(format!("cannot write {}: {e}", o.out));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io)?);
    writeln!(f, "{CSV_HEADER}").map_err(io)?;
    let num = crate::progress::num;
    for (t, (reqs, row)) in o.tenants.iter().zip(requests.iter().zip(&rows)) {
        for (i, (r, &(lag, lat, got))) in reqs.iter().zip(row).enumerate() {
            writeln!(
                f,
                "{},{i},{},{},{},{},{got},{},{}",
                t.name,
                r.time_s,
                if r.is_read { "R" } else { "W" },
                r.size,
                r.request_bytes,
                num(lag),
                num(lat)
            )
            .map_err(io)?;
        }
    }
    f.flush().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenants(names: &[&str]) -> Vec<Tenant> {
        names.iter().map(|n| parse_tenant(&format!("{n}=127.0.0.1:9")).unwrap()).collect()
    }

    fn read(text: &str) -> Result<Vec<Vec<Request>>, Error> {
        read_mode(text, false)
    }

    fn read_mode(text: &str, nbd: bool) -> Result<Vec<Vec<Request>>, Error> {
        let dir =
            std::env::temp_dir().join(format!("tbreplay-{}-{}", std::process::id(), text.len()));
        std::fs::write(&dir, text).unwrap();
        let r = read_requests(
            dir.to_str().unwrap(),
            &tenants(&["A", "B"]),
            &MessageSizes::default(),
            nbd,
        );
        let _ = std::fs::remove_file(&dir);
        r
    }

    #[test]
    fn requests_are_read_sorted_with_their_message_sizes() {
        let r = read("tenant,time_s,op,size\nA,0.5,W,1000\nB,0.1,R,4096\nA,0.2,R,1000\n").unwrap();
        assert_eq!(r[0].len(), 2);
        assert_eq!(r[0][0].time_s, 0.2);
        assert_eq!((r[0][0].request_bytes, r[0][0].response_bytes), (225, 1300));
        assert_eq!((r[0][1].request_bytes, r[0][1].response_bytes), (1300, 225));
        assert_eq!(r[1][0].response_bytes, 4706);
    }

    #[test]
    fn bad_input_names_the_line() {
        for (text, want) in [
            ("tenant,time,op,size\n", ":1: expected the header"),
            ("tenant,time_s,op,size\nC,0,R,1\n", ":2: tenant \"C\""),
            ("tenant,time_s,op,size\nA,nan,R,1\n", ":2: time_s"),
            ("tenant,time_s,op,size\nA,-1,R,1\n", ":2: time_s"),
            ("tenant,time_s,op,size\nA,0,X,1\n", ":2: op"),
            ("tenant,time_s,op,size\nA,0,R,inf\n", ":2: size"),
            ("tenant,time_s,op,size\nA,0,R,1e13\n", ":2: size"),
            ("tenant,time_s,op,size\nA,0,R,1e9\n", "a message above"),
            ("tenant,time_s,op,size\n\nA,0,R\n", ":3: expected 4 fields"),
        ] {
            let e = read(text).err().expect(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn nbd_requests_carry_offsets_and_nbd_wire_bytes() {
        let r = read_mode("tenant,time_s,op,size,offset\nA,0.5,W,4096,8192\nA,0.1,R,512,0\n", true)
            .unwrap();
        assert_eq!((r[0][0].offset, r[0][0].request_bytes, r[0][0].response_bytes), (0, 28, 528));
        assert_eq!(
            (r[0][1].offset, r[0][1].request_bytes, r[0][1].response_bytes),
            (8192, 4124, 16)
        );
        for (text, want) in [
            ("tenant,time_s,op,size\n", ":1: expected the header 'tenant,time_s,op,size,offset'"),
            ("tenant,time_s,op,size,offset\nA,0,R,0,0\n", ":2: size: an NBD request"),
            ("tenant,time_s,op,size,offset\nA,0,R,1.5,0\n", ":2: size: an NBD request"),
            ("tenant,time_s,op,size,offset\nA,0,R,512,-1\n", ":2: offset"),
            ("tenant,time_s,op,size,offset\nA,0,R,512\n", ":2: expected 5 fields"),
        ] {
            let e = read_mode(text, true).err().expect(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // the TCP mode takes the offset column too (and ignores it)
        assert_eq!(read("tenant,time_s,op,size,offset\nA,0,R,512,7\n").unwrap()[0][0].offset, 7);
    }

    #[test]
    fn tenant_options_are_checked() {
        let t = parse_tenant("T=127.0.0.1:5000,tos=184,connections=3,export=v0").unwrap();
        assert_eq!((t.tos, t.connections, t.addr.port()), (Some(184), 3, 5000));
        assert_eq!(t.export.as_deref(), Some("v0"));
        for bad in [
            "T",
            "=1.2.3.4:5",
            "T=nowhere",
            "T=127.0.0.1:5,tos=300",
            "T=127.0.0.1:5,connections=0",
            "T=127.0.0.1:5,x=1",
        ] {
            assert!(parse_tenant(bad).is_err(), "{bad}");
        }
    }
}
