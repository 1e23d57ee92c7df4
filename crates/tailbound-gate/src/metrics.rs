//! Per-export counters and latency histograms, and their Prometheus text endpoint.
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

/// Serve `GET /metrics` (any other path: 404) with `body()` on `listener`, forever. Each
/// connection gets one answer and is closed; a client has 5 s and 8 KiB for its request.
pub async fn serve<F>(listener: TcpListener, body: F)
where
    F: Fn() -> String + Send + Sync + Clone + 'static,
{
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let body = body.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut got = 0;
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while got < buf.len() {
                    match stream.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got += n,
                    }
                    if buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            })
            .await;
            if read.is_err() {
                return;
            }
            let line = String::from_utf8_lossy(&buf[..got]);
            let path = line.split_whitespace().nth(1).unwrap_or("");
            let (status, text) = if line.starts_with("GET ") && path == "/metrics" {
                ("200 OK", body())
            } else {
                ("404 Not Found", "see /metrics\n".to_string())
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
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
    }
}
