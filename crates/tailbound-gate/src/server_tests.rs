//! The gateway in-process: the control channel (`PUT /limits/<export>`) changes one tenant's
//! limits while another's requests wait at their gate, untouched; a PSLO controller in the
//! configuration decides on completions and its limits show on `/metrics`.

use std::time::{Duration, Instant};

use tailbound_nbd::client;
use tailbound_nbd::wire::{encode_request, Request, CMD_READ};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::{serve, Control};
use crate::config::Config;

/// A running gateway: its NBD and HTTP addresses, and the sender that shuts it down.
struct Running {
    nbd: String,
    http: String,
    control: mpsc::UnboundedSender<Control>,
    served: tokio::task::JoinHandle<Result<super::Outcome, String>>,
    dir: std::path::PathBuf,
}

impl Running {
    async fn stop(self) {
        let _ = self.control.send(Control::Shutdown);
        let outcome = self.served.await.unwrap().unwrap();
        assert_eq!(outcome.abandoned, 0);
    }
}

/// A fresh directory for a gateway's backends and configuration.
fn fresh_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tbgate-srv-{}-{}",
        std::process::id(),
        super::NEXT_EXPORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// The configuration of [`start`] with its backends in `dir` (MPL 8 unless `extra` has
/// `limits`, FIFO unless it has `scheduler`).
fn config_text(dir: &std::path::Path, extra: &str, read_s: f64) -> String {
    let mut limits = if extra.contains("\"limits\"") {
        ""
    } else {
        r#""limits": {"read_mpl": 8, "write_mpl": 8},"#
    }
    .to_string();
    if !extra.contains("\"scheduler\"") {
        limits += r#" "scheduler": {"kind": "fifo"},"#;
    }
    format!(
        r#"{{"listen": "127.0.0.1:0", "backend_dir": {dir:?}, "export_size": 1048576,
            "exports": ["A", "B"], {limits}
            "profile": {{"sizes": [4096], "read_bandwidth": [{bw}], "write_bandwidth": [{bw}]}},
            "emulate_device": true, "metrics_listen": "127.0.0.1:0" {extra}}}"#,
        dir = dir.display().to_string(),
        bw = 4096.0 / read_s,
    )
}

/// Start a gateway of `extra` fields on top of two exports A and B, FIFO, an emulated device
/// serving a 4 KiB read in `read_s` seconds, MPL 8; its configuration file is `dir/gate.json`.
async fn start(extra: &str, read_s: f64) -> Running {
    let dir = fresh_dir();
    let text = config_text(&dir, extra, read_s);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gate.json"), &text).unwrap();
    let cfg = Config::from_json(&text).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nbd = listener.local_addr().unwrap().to_string();
    let http = metrics.local_addr().unwrap().to_string();
    let (control, rx) = mpsc::unbounded_channel();
    let served = tokio::spawn(serve(cfg, dir.join("gate.json"), listener, Some(metrics), rx));
    Running { nbd, http, control, served, dir }
}

/// One HTTP request; the status code and the body.
async fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1.to_string();
    (code, body)
}

fn tenant(limits: &str, export: &str) -> serde_json::Value {
    let all: serde_json::Value = serde_json::from_str(limits).unwrap();
    all.as_array().unwrap().iter().find(|t| t["export"] == export).unwrap().clone()
}

/// Send `n` 4 KiB reads on a new connection to `export` at once; the instants their replies
/// arrived, in order.
async fn reads(nbd: String, export: &'static str, n: u64) -> Vec<Instant> {
    let (stream, _) = client::connect(&nbd, export).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    for h in 0..n {
        let r = Request { flags: 0, command: CMD_READ, handle: h, offset: h * 4096, length: 4096 };
        wr.write_all(&encode_request(&r)).await.unwrap();
    }
    let mut at = Vec::new();
    let mut data = vec![0u8; 4096];
    for _ in 0..n {
        let reply = client::read_reply(&mut rd).await.unwrap();
        assert_eq!(reply.error, 0);
        rd.read_exact(&mut data).await.unwrap();
        at.push(Instant::now());
    }
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_channel_changes_one_tenant_and_leaves_the_others_gate_alone() {
    let g = start("", 0.0005).await;
    // B paced at 4 requests/s: its first read passes, the other five wait at its gate
    let (code, body) = http(&g.http, "PUT", "/limits/B", r#"{"rate": 4}"#).await;
    assert_eq!(code, 200, "{body}");
    let b = tokio::spawn(reads(g.nbd.clone(), "B", 6));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, before) = http(&g.http, "GET", "/limits", "").await;
    assert_eq!(tenant(&before, "B")["held"], 5, "{before}");
    // A: depth 1 and a rate, live; B's gate, limits and pacing do not move
    let (code, body) = http(&g.http, "PUT", "/limits/A", r#"{"rate": 1000, "depth": 1}"#).await;
    assert_eq!(code, 200, "{body}");
    let a: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((a["rate"].as_f64(), a["depth"].as_u64()), (Some(1000.0), Some(1)));
    let (_, after) = http(&g.http, "GET", "/limits", "").await;
    assert_eq!(tenant(&after, "B"), tenant(&before, "B"), "{before} -> {after}");
    // A's reads flow at its new limits while B's still wait
    let a_done = reads(g.nbd.clone(), "A", 20).await;
    assert_eq!(a_done.len(), 20);
    let (_, during) = http(&g.http, "GET", "/limits", "").await;
    assert!(tenant(&during, "B")["held"].as_u64().unwrap() >= 4, "{during}");
    // B keeps its pacing: one read every 250 ms (a reload would have let them all through)
    let b_done = b.await.unwrap();
    for w in b_done.windows(2) {
        let gap = w[1].duration_since(w[0]).as_secs_f64();
        assert!(gap > 0.2, "B's reads {gap} s apart");
    }
    // lifting B's limits: gauges back to unlimited, one change counted per PUT
    let (code, _) = http(&g.http, "PUT", "/limits/B", "{}").await;
    assert_eq!(code, 200);
    let (_, metrics) = http(&g.http, "GET", "/metrics", "").await;
    for line in [
        "tailbound_gate_tenant_rate{export=\"B\"} +Inf",
        "tailbound_gate_tenant_rate{export=\"A\"} 1000",
        "tailbound_gate_tenant_depth{export=\"A\"} 1",
        "tailbound_gate_limit_changes_total 3",
        "tailbound_gate_control_decisions_total 0",
        "tailbound_gate_requests_total{export=\"B\",op=\"read\"} 6",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    // bad input: named field, unknown export, unknown route
    let (code, body) = http(&g.http, "PUT", "/limits/A", r#"{"depth": 0}"#).await;
    assert_eq!(code, 400);
    assert!(body.contains("depth"), "{body}");
    let (code, _) = http(&g.http, "PUT", "/limits/Z", "{}").await;
    assert_eq!(code, 404);
    let (code, _) = http(&g.http, "DELETE", "/limits/A", "").await;
    assert_eq!(code, 404);
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pslo_controller_decides_on_completions_and_sets_the_limits() {
    // LS+T for A (latency 50 ms at the 99th percentile, 100 IOPS), a decision every 20
    // completions; B is not controlled
    let control = r#", "control": {"kind": "pslo", "policy": "LS+T", "interval_completions": 20,
        "tenants": [{"workload": 0, "latency_s": 0.05, "percentile": 0.99,
                     "throughput_iops": 100}]}"#;
    let g = start(control, 0.0002).await;
    // the initial limits are in force before any request: rate at the throughput SLO
    let (_, limits) = http(&g.http, "GET", "/limits", "").await;
    assert_eq!(tenant(&limits, "A")["rate"].as_f64(), Some(100.0), "{limits}");
    assert!(tenant(&limits, "B")["rate"].is_null());
    // 100 reads at once: paced at 100/s, so they take about a second, 5 decisions
    let t0 = Instant::now();
    let a = reads(g.nbd.clone(), "A", 100).await;
    let took = a.last().unwrap().duration_since(t0).as_secs_f64();
    assert!(took > 0.5, "A's reads were not paced: {took} s");
    let b = reads(g.nbd.clone(), "B", 50).await;
    assert_eq!(b.len(), 50);
    let (_, metrics) = http(&g.http, "GET", "/metrics", "").await;
    let decisions: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("tailbound_gate_control_decisions_total "))
        .unwrap()
        .parse()
        .unwrap();
    // one per interval of 20 completions, and the forecast's enabling and lifting of depths
    assert!((5..=100).contains(&decisions), "{decisions} decisions\n{metrics}");
    assert!(metrics.contains("tailbound_gate_tenant_rate{export=\"B\"} +Inf"), "{metrics}");
    assert!(!metrics.contains("tailbound_gate_tenant_rate{export=\"A\"} +Inf"), "{metrics}");
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_moves_the_controller_to_its_new_tenants() {
    let tenant_spec = |w: u32, iops: f64| {
        format!(
            r#", "control": {{"kind": "pslo", "policy": "T",
                "tenants": [{{"workload": {w}, "throughput_iops": {iops}}}]}}"#
        )
    };
    let g = start(&tenant_spec(0, 100.0), 0.0002).await;
    let (_, limits) = http(&g.http, "GET", "/limits", "").await;
    assert_eq!(tenant(&limits, "A")["rate"].as_f64(), Some(100.0), "{limits}");
    // the same control: the controller (and A's rate) stays
    std::fs::write(g.dir.join("gate.json"), config_text(&g.dir, &tenant_spec(0, 100.0), 0.0002))
        .unwrap();
    g.control.send(Control::Reload).unwrap();
    // B controlled instead: A unlimited again, B at its SLO
    std::fs::write(g.dir.join("gate.json"), config_text(&g.dir, &tenant_spec(1, 50.0), 0.0002))
        .unwrap();
    g.control.send(Control::Reload).unwrap();
    let mut after = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = http(&g.http, "GET", "/limits", "").await.1;
        if tenant(&after, "B")["rate"].as_f64() == Some(50.0) {
            break;
        }
    }
    assert!(tenant(&after, "A")["rate"].is_null(), "{after}");
    assert_eq!(tenant(&after, "B")["rate"].as_f64(), Some(50.0), "{after}");
    // B's reads are paced by the new controller: 10 reads at 50/s take about 0.18 s
    let t0 = Instant::now();
    reads(g.nbd.clone(), "B", 10).await;
    assert!(t0.elapsed().as_secs_f64() > 0.15, "{:?}", t0.elapsed());
    g.stop().await;
}

#[test]
fn the_fifo_device_starts_a_request_at_the_completion_that_let_it_in() {
    // hand-computed, costs 2 ms: the first request arrives at 1.000 s and finishes at 1.002;
    // the dispatcher task answers that completion 0.3 ms late (at 1.0023), and the next
    // request, queued since 1.0005, starts at 1.002 all the same: finish 1.004 (1.0043 was the
    // emulation's own reaction, paid on every request of a level served one at a time)
    let mut d = super::FifoDevice::default();
    assert!((d.serve(1.0, 1.0, 0.002) - 1.002).abs() < 1e-12);
    assert!((d.serve(1.002, 1.0005, 0.002) - 1.004).abs() < 1e-12);
    // a request that arrived after the completion starts when it arrived, not before
    assert!((d.serve(1.004, 1.0047, 0.002) - 1.0067).abs() < 1e-12);
    // dispatched while the device is busy: after the request ahead of it
    assert!((d.serve(1.005, 1.005, 0.001) - 1.0077).abs() < 1e-12);
    // an arrival after an idle spell: at its arrival
    assert!((d.serve(2.0, 2.0, 0.001) - 2.001).abs() < 1e-12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_per_level_keeps_the_emulated_device_busy() {
    // level_mpl 1 (FIFO: one level): 100 reads of 1 ms each sent at once are served one at a
    // time, each dispatched when the previous one's completion reaches the dispatcher task. The
    // emulated device serves them back to back as the simulator does (100 ms); when it idled
    // after every completion for the dispatcher task's reaction (0.1 ms here) it took 112-114 ms
    let n = 100;
    let cost = 0.001;
    let g = start(r#", "limits": {"read_mpl": 8, "write_mpl": 8, "level_mpl": 1}"#, cost).await;
    let t0 = Instant::now();
    let done = reads(g.nbd.clone(), "A", n).await;
    let took = done.last().unwrap().duration_since(t0).as_secs_f64();
    let ideal = n as f64 * cost;
    assert!(took >= ideal, "{took} s: faster than the device");
    assert!(took < ideal * 1.03 + 0.001, "{took} s for {ideal} s of work: the device idled");
    g.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_gateway_counts_the_requests_beyond_the_outermost_class() {
    // Nested QoS, 4 KiB reads of 1 ms of work: A's outermost class holds 10 reads (σ = 10 ms of
    // work) refilled at 10 % of the device, B's 50 reads. 60 reads of A at once: the first 10
    // pass, the other 50 are best effort (up to one more for what leaks while they arrive,
    // 0.1 of a read per ms); B's 20 at once all fit.
    let scheduler = r#", "scheduler": {"kind": "nested",
        "classes": [[[0.005, 0.05, 0.02], [0.01, 0.1, 0.05]], [[0.05, 0.5, 0.05]]]}"#;
    let g = start(scheduler, 0.001).await;
    let (a, b) = tokio::join!(reads(g.nbd.clone(), "A", 60), reads(g.nbd.clone(), "B", 20));
    assert_eq!((a.len(), b.len()), (60, 20));
    let (code, text) = http(&g.http, "GET", "/metrics", "").await;
    assert_eq!(code, 200);
    let count = |export: &str| -> u64 {
        let key = format!("tailbound_gate_beyond_buckets_requests_total{{export=\"{export}\"}} ");
        let line = text.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("{text}"));
        line[key.len()..].trim().parse().unwrap()
    };
    let (over, within) = (count("A"), count("B"));
    assert!((45..=50).contains(&over), "A: {over} beyond its outermost class");
    assert_eq!(within, 0, "B stayed inside its outermost class");
    let bytes =
        format!("tailbound_gate_beyond_buckets_bytes_total{{export=\"A\"}} {}", over * 4096);
    assert!(text.contains(&bytes), "{text}");
    g.stop().await;
}
