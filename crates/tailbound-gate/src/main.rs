//! `tailbound-gate`: an NBD storage gateway enforcing a Plan's storage stage with
//! `tailbound_core::sched` (docs/enforcement.md, "Storage path").
//!
//! Usage: `tailbound-gate --config CONFIG.json` (the document `tailbound gate` writes; see
//! `config.rs`), or `tailbound-gate --check CONFIG.json` to validate it and exit. Prints
//! `listening on HOST:PORT` on stdout once it accepts connections (port 0 picks a free port),
//! then `metrics on http://HOST:PORT/metrics` if the configuration has `metrics_listen`;
//! on SIGINT or SIGTERM it prints each export's counters (one JSON line each) and exits 0.
//! Exit status 2 for a bad configuration or an address it cannot listen on.

mod config;
mod metrics;
mod proto;
mod server;
mod upstream;

use std::io::Write;

fn usage() -> ! {
    eprintln!("usage: tailbound-gate --config CONFIG.json | --check CONFIG.json");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (check, path) = match args.as_slice() {
        [flag, path] if flag == "--config" => (false, path),
        [flag, path] if flag == "--check" => (true, path),
        _ => usage(),
    };
    let fail = |msg: String| -> ! {
        eprintln!("tailbound-gate: {path}: {msg}");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(e.to_string()));
    let cfg = config::Config::from_json(&text).unwrap_or_else(|e| fail(e));
    if check {
        println!("ok: {} exports", cfg.exports.len());
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(e.to_string()));
    let code = runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&cfg.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("tailbound-gate: listen {}: {e}", cfg.listen);
                return 2;
            }
        };
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        println!("listening on {addr}");
        let mut metrics = None;
        if let Some(m) = &cfg.metrics_listen {
            match tokio::net::TcpListener::bind(m).await {
                Ok(l) => {
                    let a = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
                    println!("metrics on http://{a}/metrics");
                    metrics = Some(l);
                }
                Err(e) => {
                    eprintln!("tailbound-gate: metrics listen {m}: {e}");
                    return 2;
                }
            }
        }
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
        };
        match server::serve(cfg, listener, metrics, shutdown).await {
            Ok(report) => {
                print!("{report}");
                let _ = std::io::stdout().flush();
                0
            }
            Err(e) => {
                eprintln!("tailbound-gate: {e}");
                2
            }
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    std::process::exit(code);
}
