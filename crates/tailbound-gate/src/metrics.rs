//! Per-export counters and latency histograms, their Prometheus text, and the gateway's HTTP
//! endpoint (`GET /metrics`, and the control channel's routes: `server.rs`, `control.rs`).
//!
//! Latency is the gateway's: from a request's arrival (its header and payload read) to its
//! completion (the backend answered, and with an emulated device its service time passed); the
//! client's own time and the reply's transmission are not in it. Only reads and writes (the
//! requests that pass the dispatcher) are counted.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Upper bounds (seconds) of the latency histogram's buckets (and `+Inf`).
pub const LE: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// One export's counters.
#[derive(Default)]
pub struct Stats {
    /// Requests completed, by operation (0 read, 1 write).
    pub requests: [AtomicU64; 2],
    /// Bytes of completed requests, by operation.
    pub bytes: [AtomicU64; 2],
    /// Sum of latencies in nanoseconds.
    pub latency_ns: AtomicU64,
    /// Largest latency in nanoseconds.
    pub max_latency_ns: AtomicU64,
    /// Requests with latency `<= LE[i]` (not cumulative; `buckets[LE.len()]` is above all).
    pub buckets: [AtomicU64; LE.len() + 1],
    /// Reads and writes that arrived beyond the Plan's token buckets (`conform.rs`), counted at
    /// arrival: requests, their bytes, and their cost in nanoseconds of device work.
    pub beyond: [AtomicU64; 3],
}

impl Stats {
    /// Count one completed request.
    pub fn record(&self, write: bool, bytes: u64, latency: Duration) {
        let op = usize::from(write);
        let ns = latency.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.requests[op].fetch_add(1, Ordering::Relaxed);
        self.bytes[op].fetch_add(bytes, Ordering::Relaxed);
        self.latency_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_latency_ns.fetch_max(ns, Ordering::Relaxed);
        let s = latency.as_secs_f64();
        let i = LE.iter().position(|&le| s <= le).unwrap_or(LE.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Count one request that arrived beyond its buckets: `bytes` long, costing `work_s`
    /// seconds of device work.
    pub fn record_beyond(&self, bytes: u64, work_s: f64) {
        self.beyond[0].fetch_add(1, Ordering::Relaxed);
        self.beyond[1].fetch_add(bytes, Ordering::Relaxed);
        self.beyond[2].fetch_add((work_s.max(0.0) * 1e9).round() as u64, Ordering::Relaxed);
    }

    /// Requests completed (both operations).
    pub fn count(&self) -> u64 {
        self.requests.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// The Prometheus text exposition of every export's counters.
pub fn render<'a>(exports: impl Iterator<Item = (&'a str, &'a Stats)> + Clone) -> String {
    let mut out = String::new();
    let ops = ["read", "write"];
    out.push_str("# HELP tailbound_gate_requests_total Reads and writes completed.\n");
    out.push_str("# TYPE tailbound_gate_requests_total counter\n");
    for (name, s) in exports.clone() {
        for (op, c) in ops.iter().zip(&s.requests) {
            let v = c.load(Ordering::Relaxed);
            let _ =
                writeln!(out, "tailbound_gate_requests_total{{export=\"{name}\",op=\"{op}\"}} {v}");
        }
    }
    out.push_str("# HELP tailbound_gate_bytes_total Bytes of completed reads and writes.\n");
    out.push_str("# TYPE tailbound_gate_bytes_total counter\n");
    for (name, s) in exports.clone() {
        for (op, c) in ops.iter().zip(&s.bytes) {
            let v = c.load(Ordering::Relaxed);
            let _ =
                writeln!(out, "tailbound_gate_bytes_total{{export=\"{name}\",op=\"{op}\"}} {v}");
        }
    }
    let beyond = [
        ("requests_total", "Reads and writes that arrived beyond the Plan's token buckets."),
        ("bytes_total", "Bytes of the reads and writes beyond the Plan's token buckets."),
        (
            "work_seconds_total",
            "Device work (seconds, the profile's cost) of the requests beyond the buckets.",
        ),
    ];
    for (i, (suffix, help)) in beyond.iter().enumerate() {
        let _ = writeln!(out, "# HELP tailbound_gate_beyond_buckets_{suffix} {help}");
        let _ = writeln!(out, "# TYPE tailbound_gate_beyond_buckets_{suffix} counter");
        for (name, s) in exports.clone() {
            let v = s.beyond[i].load(Ordering::Relaxed);
            if i == 2 {
                let v = v as f64 * 1e-9;
                let _ = writeln!(
                    out,
                    "tailbound_gate_beyond_buckets_{suffix}{{export=\"{name}\"}} {v}"
                );
            } else {
                let _ = writeln!(
                    out,
                    "tailbound_gate_beyond_buckets_{suffix}{{export=\"{name}\"}} {v}"
                );
            }
        }
    }
    out.push_str(
        "# HELP tailbound_gate_latency_seconds Gateway latency of reads and writes \
         (arrival to completion).\n",
    );
    out.push_str("# TYPE tailbound_gate_latency_seconds histogram\n");
    for (name, s) in exports {
        let mut cumulative = 0;
        for (i, le) in LE.iter().enumerate() {
            cumulative += s.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "tailbound_gate_latency_seconds_bucket{{export=\"{name}\",le=\"{le}\"}} {cumulative}"
            );
        }
        cumulative += s.buckets[LE.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "tailbound_gate_latency_seconds_bucket{{export=\"{name}\",le=\"+Inf\"}} {cumulative}"
        );
        let sum = s.latency_ns.load(Ordering::Relaxed) as f64 * 1e-9;
        let _ = writeln!(out, "tailbound_gate_latency_seconds_sum{{export=\"{name}\"}} {sum}");
        let _ =
            writeln!(out, "tailbound_gate_latency_seconds_count{{export=\"{name}\"}} {cumulative}");
    }
    out
}

/// The hot-reload counters in Prometheus text.
pub fn render_reloads(applied: u64, refused: u64) -> String {
    format!(
        "# HELP tailbound_gate_reloads_total Configuration reloads applied.\n\
         # TYPE tailbound_gate_reloads_total counter\n\
         tailbound_gate_reloads_total {applied}\n\
         # HELP tailbound_gate_reload_failures_total Configuration reloads refused \
         (the old configuration stayed).\n\
         # TYPE tailbound_gate_reload_failures_total counter\n\
         tailbound_gate_reload_failures_total {refused}\n"
    )
}

/// One HTTP request to the gateway's endpoint (`server.rs` routes it).
pub struct HttpRequest {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// The request target (`/metrics`, `/limits/A`).
    pub path: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

/// The answer to an [`HttpRequest`].
pub struct HttpResponse {
    /// Status line's code and reason, e.g. `200 OK`.
    pub status: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    pub body: String,
}

impl HttpResponse {
    /// A plain-text answer.
    pub fn text(status: &'static str, body: String) -> Self {
        Self { status, content_type: "text/plain; version=0.0.4", body }
    }

    /// A JSON answer.
    pub fn json(status: &'static str, body: String) -> Self {
        Self { status, content_type: "application/json", body }
    }
}

/// Most bytes of one HTTP request (head and body).
pub const HTTP_MAX_BYTES: usize = 16 * 1024;

/// Serve HTTP/1.1 on `listener` forever, answering each request with `handler`: one request per
/// connection, then the connection is closed; a client has 5 s and [`HTTP_MAX_BYTES`] for its
/// request (head, and a body of `Content-Length` bytes).
pub async fn serve<F, Fut>(listener: TcpListener, handler: F)
where
    F: Fn(HttpRequest) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = HttpResponse> + Send,
{
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let read = tokio::time::timeout(Duration::from_secs(5), read_request(&mut stream));
            let answer = match read.await {
                Err(_) => return,
                Ok(Err(why)) => HttpResponse::text("400 Bad Request", format!("{why}\n")),
                Ok(Ok(request)) => handler(request).await,
            };
            let reply = format!(
                "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                answer.status,
                answer.content_type,
                answer.body.len(),
                answer.body
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// Read one request: its head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Result<HttpRequest, String> {
    let mut buf = vec![0u8; HTTP_MAX_BYTES];
    let mut got = 0;
    let head_end = loop {
        if let Some(i) = buf[..got].windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if got == buf.len() {
            return Err("request head too large".into());
        }
        match stream.read(&mut buf[got..]).await {
            Ok(0) | Err(_) => return Err("incomplete request".into()),
            Ok(n) => got += n,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut words = head.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let path = words.next().unwrap_or("").to_string();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim().parse::<usize>().map_err(|_| "bad Content-Length".to_string()))
        .transpose()?
        .unwrap_or(0);
    if head_end + length > buf.len() {
        return Err(format!("request larger than {HTTP_MAX_BYTES} bytes"));
    }
    while got < head_end + length {
        match stream.read(&mut buf[got..head_end + length]).await {
            Ok(0) | Err(_) => return Err("incomplete body".into()),
            Ok(n) => got += n,
        }
    }
    Ok(HttpRequest { method, path, body: buf[head_end..head_end + length].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_and_counts_match() {
        let s = Stats::default();
        s.record(false, 4096, Duration::from_micros(50));
        s.record(false, 4096, Duration::from_millis(3));
        s.record(true, 512, Duration::from_secs(20));
        s.record_beyond(4096, 0.25);
        assert_eq!(s.count(), 3);
        let text = render(std::iter::once(("A", &s)));
        assert!(text.contains("tailbound_gate_requests_total{export=\"A\",op=\"read\"} 2"));
        assert!(text.contains("tailbound_gate_bytes_total{export=\"A\",op=\"write\"} 512"));
        assert!(
            text.contains("tailbound_gate_latency_seconds_bucket{export=\"A\",le=\"0.0001\"} 1")
        );
        assert!(text.contains("tailbound_gate_latency_seconds_bucket{export=\"A\",le=\"0.005\"} 2"));
        assert!(text.contains("tailbound_gate_latency_seconds_bucket{export=\"A\",le=\"10\"} 2"));
        assert!(text.contains("tailbound_gate_latency_seconds_bucket{export=\"A\",le=\"+Inf\"} 3"));
        assert!(text.contains("tailbound_gate_latency_seconds_count{export=\"A\"} 3"));
        assert!(text.contains("tailbound_gate_beyond_buckets_requests_total{export=\"A\"} 1"));
        assert!(text.contains("tailbound_gate_beyond_buckets_bytes_total{export=\"A\"} 4096"));
        assert!(
            text.contains("tailbound_gate_beyond_buckets_work_seconds_total{export=\"A\"} 0.25")
        );
    }
}
