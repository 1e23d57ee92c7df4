//! The server: on every listening address, each connection's requests are answered in order,
//! each with a response of the length its header asks for. Stops after `--duration` seconds
//! or at SIGTERM/SIGINT.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use crate::proto::{self, Error, CHUNK, REQUEST_HEADER};

pub struct Options {
    listen: Vec<(SocketAddr, Option<u8>)>,
    duration_s: f64,
    log: Option<String>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, Error> {
        let mut o = Options { listen: Vec::new(), duration_s: f64::NAN, log: None };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--listen" => {
                    let v = it.next().ok_or_else(|| Error::Usage("--listen needs ADDR".into()))?;
                    let (addr, opts) = proto::address_with_options(v);
                    let addr: SocketAddr = addr.parse().map_err(|_| {
                        Error::Usage(format!("--listen: expected IP:PORT, got {addr:?}"))
                    })?;
                    let mut tos = None;
                    for (k, val) in opts {
                        match k {
                            "tos" => tos = Some(proto::tos(val)?),
                            _ => {
                                return Err(Error::Usage(format!("--listen: unknown option {k:?}")))
                            }
                        }
                    }
                    o.listen.push((addr, tos));
                }
                "--duration" => o.duration_s = proto::seconds("--duration", it.next())?,
                "--log" => {
                    o.log = Some(
                        it.next().ok_or_else(|| Error::Usage("--log needs a file".into()))?.clone(),
                    )
                }
                other => return Err(Error::Usage(format!("server: unknown argument {other:?}"))),
            }
        }
        if o.listen.is_empty() {
            return Err(Error::Usage("server: give at least one --listen".into()));
        }
        if o.duration_s.is_nan() {
            return Err(Error::Usage("server: give --duration (seconds until it stops)".into()));
        }
        Ok(o)
    }
}

/// One line per answered request: local port, connection number, sequence number, request
/// bytes received, response bytes sent.
type Log = Arc<Mutex<Option<std::io::BufWriter<std::fs::File>>>>;

pub async fn serve(o: Options) -> Result<u8, Error> {
    let log: Log = Arc::new(Mutex::new(match &o.log {
        Some(path) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(path)
                    .map_err(|e| Error::Io(format!("cannot write {path}: {e}")))?,
            );
            writeln!(f, "port,connection,seq,request_bytes,response_bytes")
                .map_err(|e| Error::Io(format!("{path}: {e}")))?;
            Some(f)
        }
        None => None,
    }));
    let mut listeners = Vec::new();
    let mut bound = Vec::new();
    for (addr, tos) in &o.listen {
        let l = TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Io(format!("cannot listen on {addr}: {e}")))?;
        bound.push(l.local_addr().map_err(|e| Error::Io(e.to_string()))?.to_string());
        listeners.push((l, *tos));
    }
    // the caller waits for this line before starting clients; it names the ports bound
    println!("ready {}", bound.join(" "));
    let _ = std::io::stdout().flush();
    let mut tasks = tokio::task::JoinSet::new();
    for (listener, tos) in listeners {
        let log = log.clone();
        tasks.spawn(accept(listener, tos, log));
    }
    // until the duration ends, or SIGTERM / SIGINT (the log is flushed either way)
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| Error::Io(format!("cannot catch SIGTERM: {e}")))?;
    let mut int = signal(SignalKind::interrupt())
        .map_err(|e| Error::Io(format!("cannot catch SIGINT: {e}")))?;
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs_f64(o.duration_s)) => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = async { while tasks.join_next().await.is_some() {} } => {}
    }
    tasks.abort_all();
    if let Some(f) = log.lock().map_err(|_| Error::Io("log lock poisoned".into()))?.as_mut() {
        f.flush().map_err(|e| Error::Io(format!("cannot write the log: {e}")))?;
    }
    Ok(0)
}

async fn accept(listener: TcpListener, tos: Option<u8>, log: Log) {
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut connections = tokio::task::JoinSet::new();
    let mut n = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // out of descriptors or the like: wait instead of spinning
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                if let Some(t) = tos {
                    if let Err(e) = proto::set_tos(&stream, t) {
                        eprintln!("tailbound-replay server: {e}");
                    }
                }
                connections.spawn(answer(stream, port, n, log.clone()));
                n += 1;
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Answer one connection's requests until it closes or sends something that is not a request.
async fn answer(stream: TcpStream, port: u16, connection: u64, log: Log) {
    let (mut rd, mut wr) = stream.into_split();
    let mut header = [0u8; REQUEST_HEADER];
    let zeros = vec![0u8; CHUNK];
    let mut sink = vec![0u8; CHUNK];
    loop {
        if rd.read_exact(&mut header).await.is_err() {
            return; // closed (or reset): done
        }
        let (total, response, seq) = match proto::parse_request(&header) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("tailbound-replay server: port {port}: {e}; closing the connection");
                return;
            }
        };
        let mut left = total - REQUEST_HEADER as u64;
        while left > 0 {
            let want = left.min(CHUNK as u64) as usize;
            match rd.read(&mut sink[..want]).await {
                Ok(0) | Err(_) => return,
                Ok(k) => left -= k as u64,
            }
        }
        if wr.write_all(&proto::response_header(response, seq)).await.is_err() {
            return;
        }
        let mut left = response - proto::RESPONSE_HEADER as u64;
        while left > 0 {
            let k = left.min(CHUNK as u64) as usize;
            if wr.write_all(&zeros[..k]).await.is_err() {
                return;
            }
            left -= k as u64;
        }
        if let Ok(mut guard) = log.lock() {
            if let Some(f) = guard.as_mut() {
                let _ = writeln!(f, "{port},{connection},{seq},{total},{response}");
            }
        }
    }
}
