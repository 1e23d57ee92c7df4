//! `tailbound-replay rpc`: Aequitas on real links, the sender's side (docs/aequitas.md, "On real
//! links"). RPCs (request/response over TCP, answered by `tailbound-replay server`) are issued
//! open loop at their times; at issue each one's class is decided by the core's controller
//! (`Admission::admit`: the requested class with probability `p_admit`, else the lowest) and it
//! is written on the connection of its (destination, class run), whose sockets carry the class's
//! DSCP (`IP_TOS`), so the network's weighted classes (`tailbound.enforce.weighted`) serve it
//! there. Its RNL runs from its issue time (the pacer's due time, so a wait behind the earlier
//! RPCs of its channel counts, as in the paper) to the last byte of its response, and is fed to
//! `Admission::complete` at once. The request carries the RPC's payload (the direction the RNL
//! measures); the response is short.
//!
//! One CSV row per RPC: `seq, time_s, dst, class, class_run, downgraded, p_admit, size_bytes,
//! size_mtus, issue_lag_s, latency_s, outcome` (`p_admit` the channel's at issue; `outcome` what
//! the completion did: `increased`, `held`, `decreased`, `uncontrolled`; latency and outcome
//! empty when unanswered).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpSocket;
use tokio::sync::mpsc;
use tokio::time::{timeout_at, Instant};

use crate::proto::{self, Error, CHUNK, RESPONSE_HEADER};
use crate::rpc_config::{read_rpcs, Controller, Decision, Rpc, RpcConfig};

pub struct Options {
    config: String,
    rpcs: String,
    out: String,
    start_delay_s: f64,
    drain_s: f64,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, Error> {
        let mut o = Options {
            config: String::new(),
            rpcs: String::new(),
            out: String::new(),
            start_delay_s: 0.5,
            drain_s: 5.0,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value =
                || it.next().cloned().ok_or_else(|| Error::Usage(format!("{a} needs a value")));
            match a.as_str() {
                "--config" => o.config = value()?,
                "--rpcs" => o.rpcs = value()?,
                "--out" => o.out = value()?,
                "--start-delay" => o.start_delay_s = proto::seconds(a, Some(&value()?))?,
                "--drain" => o.drain_s = proto::seconds(a, Some(&value()?))?,
                other => return Err(Error::Usage(format!("rpc: unknown argument {other:?}"))),
            }
        }
        if o.config.is_empty() || o.rpcs.is_empty() || o.out.is_empty() {
            return Err(Error::Usage("rpc: give --config, --rpcs and --out".into()));
        }
        Ok(o)
    }
}

/// What became of one RPC.
#[derive(Clone, Copy)]
struct Record {
    decision: Option<Decision>,
    lag_s: f64,
    latency_s: f64,
    outcome: Option<&'static str>,
}

type Records = Arc<Mutex<Vec<Record>>>;

pub async fn run(o: Options) -> Result<u8, Error> {
    let config = RpcConfig::load(&o.config)?;
    let rpcs = Arc::new(read_rpcs(&o.rpcs, &config)?);
    let controller = Arc::new(Mutex::new(Controller::new(&config)?));
    let records: Records = Arc::new(Mutex::new(vec![
        Record {
            decision: None,
            lag_s: f64::NAN,
            latency_s: f64::NAN,
            outcome: None
        };
        rpcs.len()
    ]));

    // one connection per (destination, class), destinations major (RpcConfig::connection)
    let mut streams = Vec::new();
    for (name, addr) in &config.destinations {
        for class in &config.classes {
            let sock = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }
                .map_err(|e| Error::Io(format!("{name}/{}: socket: {e}", class.name)))?;
            proto::set_tos(&sock, class.tos())?;
            let stream = tokio::time::timeout(Duration::from_secs(5), sock.connect(*addr))
                .await
                .map_err(|_| Error::Io(format!("{name}: connecting to {addr} timed out")))?
                .map_err(|e| Error::Io(format!("{name}: cannot connect to {addr}: {e}")))?;
            stream.set_nodelay(true).map_err(|e| Error::Io(e.to_string()))?;
            streams.push(stream);
        }
    }

    let t0 = rpcs.first().map_or(0.0, |r| r.time_s);
    let t_last = rpcs.last().map_or(0.0, |r| r.time_s);
    let start = Instant::now() + Duration::from_secs_f64(o.start_delay_s);
    let deadline = start + Duration::from_secs_f64(t_last - t0 + o.drain_s);

    let mut senders = Vec::new();
    let mut tasks = Vec::new();
    for (ci, stream) in streams.into_iter().enumerate() {
        let (tx, rx) = mpsc::unbounded_channel::<usize>();
        senders.push(tx);
        let (rd, wr) = stream.into_split();
        let ctx = Ctx {
            rpcs: rpcs.clone(),
            records: records.clone(),
            start,
            t0,
            deadline,
            response_bytes: config.response_bytes,
        };
        let (dst, class_run) = (ci / config.classes.len(), ci % config.classes.len());
        debug_assert_eq!(config.connection(dst, class_run), ci);
        let writer = tokio::spawn(write_rpcs(wr, rx, ctx.clone()));
        let reader = tokio::spawn(read_answers(rd, ctx, controller.clone(), dst, class_run));
        tasks.push((writer, reader));
    }

    // the pacer: each RPC at its time, its class decided then
    let (std_start, std_deadline) = (start.into_std(), deadline.into_std());
    let (p_rpcs, p_records, p_ctl) = (rpcs.clone(), records.clone(), controller.clone());
    let pacer = std::thread::spawn(move || {
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with an integer argument; only this thread's timer slack changes.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        for (i, r) in p_rpcs.iter().enumerate() {
            let due = std_start + Duration::from_secs_f64(r.time_s - t0);
            let now = std::time::Instant::now();
            if now >= std_deadline {
                break;
            }
            if due > now {
                std::thread::sleep(due - now);
            }
            let d = match p_ctl.lock() {
                Ok(mut c) => c.issue(r.dst, r.class),
                Err(_) => break,
            };
            if let Ok(mut recs) = p_records.lock() {
                recs[i].decision = Some(d);
            }
            let _ = senders[d.connection].send(i);
        }
        // dropping the senders ends the writers
    });

    let mut errors = Vec::new();
    for (writer, reader) in tasks {
        if let Some(e) = writer.await.map_err(|e| Error::Io(format!("writer task: {e}")))? {
            errors.push(e);
        }
        if let Some(e) = reader.await.map_err(|e| Error::Io(format!("reader task: {e}")))? {
            errors.push(e);
        }
    }
    let _ = pacer.join();
    let records = records.lock().map_err(|_| Error::Io("records lock poisoned".into()))?.clone();
    write_csv(&o.out, &config, &rpcs, &records)?;
    for e in &errors {
        eprintln!("tailbound-replay rpc: {e}");
    }
    let answered = records.iter().filter(|r| r.latency_s.is_finite()).count();
    eprintln!("tailbound-replay rpc: {answered} of {} RPCs answered", rpcs.len());
    Ok(if answered < rpcs.len() { 1 } else { 0 })
}

#[derive(Clone)]
struct Ctx {
    rpcs: Arc<Vec<Rpc>>,
    records: Records,
    start: Instant,
    t0: f64,
    deadline: Instant,
    response_bytes: u64,
}

impl Ctx {
    fn due(&self, i: usize) -> Instant {
        self.start + Duration::from_secs_f64(self.rpcs[i].time_s - self.t0)
    }
}

/// Write each RPC the pacer hands over, the global RPC number as the request's sequence number
/// (the server echoes it); returns the first error.
async fn write_rpcs(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<usize>,
    ctx: Ctx,
) -> Option<String> {
    let zeros = vec![0u8; CHUNK];
    let mut error = None;
    while let Ok(Some(i)) = timeout_at(ctx.deadline, rx.recv()).await {
        let lag = Instant::now().saturating_duration_since(ctx.due(i)).as_secs_f64();
        if let Ok(mut recs) = ctx.records.lock() {
            recs[i].lag_s = lag;
        }
        let size = ctx.rpcs[i].size_bytes;
        let header = proto::request_header(size, ctx.response_bytes, i as u64);
        let body = size - proto::REQUEST_HEADER as u64;
        if let Err(e) = proto::send_request(&mut wr, &header, body, &zeros, i, ctx.deadline).await {
            error = Some(e);
            break;
        }
    }
    let _ = wr.shutdown().await;
    error
}

/// Read the answers of one (destination, class) connection until it closes: each RPC's RNL
/// (issue to the answer's last byte) is recorded and fed to the controller at once.
async fn read_answers(
    mut rd: OwnedReadHalf,
    ctx: Ctx,
    controller: Arc<Mutex<Controller>>,
    dst: usize,
    class_run: usize,
) -> Option<String> {
    let mut sink = vec![0u8; CHUNK];
    loop {
        let one = async {
            let mut header = [0u8; RESPONSE_HEADER];
            match rd.read_exact(&mut header).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(e.to_string()),
            }
            let (total, seq) = proto::parse_response(&header)?;
            let i = usize::try_from(seq).ok().filter(|&i| i < ctx.rpcs.len());
            let i = i.ok_or_else(|| format!("an answer to RPC {seq}, which was not sent"))?;
            if total != ctx.response_bytes {
                return Err(format!("RPC {i}: an answer of {total} bytes"));
            }
            let mut left = total - RESPONSE_HEADER as u64;
            while left > 0 {
                let want = left.min(CHUNK as u64) as usize;
                match rd.read(&mut sink[..want]).await {
                    Ok(0) => return Err("connection closed inside an answer".to_string()),
                    Ok(k) => left -= k as u64,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(Some(i))
        };
        match timeout_at(ctx.deadline, one).await {
            Ok(Ok(Some(i))) => {
                let now = Instant::now();
                let latency = now.saturating_duration_since(ctx.due(i)).as_secs_f64();
                let now_s = now.saturating_duration_since(ctx.start).as_secs_f64();
                let size = ctx.rpcs[i].size_mtus;
                let outcome = match controller.lock() {
                    Ok(mut c) => c.complete(dst, class_run, latency, size, now_s).name(),
                    Err(_) => return Some("controller lock poisoned".into()),
                };
                if let Ok(mut recs) = ctx.records.lock() {
                    recs[i].latency_s = latency;
                    recs[i].outcome = Some(outcome);
                }
            }
            Ok(Ok(None)) => return None,
            Ok(Err(e)) => return Some(format!("destination {dst}, class {class_run}: {e}")),
            Err(_) => return Some(format!("destination {dst}, class {class_run}: deadline")),
        }
    }
}

fn write_csv(
    path: &str,
    config: &RpcConfig,
    rpcs: &[Rpc],
    records: &[Record],
) -> Result<(), Error> {
    let p = std::path::Path::new(path);
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = p.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let io = |e: std::io::Error| Error::Io(format!("cannot write {path}: {e}"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io)?);
    writeln!(
        f,
        "seq,time_s,dst,class,class_run,downgraded,p_admit,size_bytes,size_mtus,issue_lag_s,\
         latency_s,outcome"
    )
    .map_err(io)?;
    let num = |x: f64| if x.is_finite() { format!("{x:.9}") } else { String::new() };
    for (i, (r, rec)) in rpcs.iter().zip(records).enumerate() {
        let (run, down, p) = match rec.decision {
            Some(d) => {
                (config.classes[d.class_run].name.as_str(), d.downgraded as u8, num(d.p_admit))
            }
            None => ("", 0, String::new()),
        };
        writeln!(
            f,
            "{i},{},{},{},{run},{down},{p},{},{},{},{},{}",
            r.time_s,
            config.destinations[r.dst].0,
            config.classes[r.class].name,
            r.size_bytes,
            r.size_mtus,
            num(rec.lag_s),
            num(rec.latency_s),
            rec.outcome.unwrap_or("")
        )
        .map_err(io)?;
    }
    f.flush().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, p).map_err(io)
}
