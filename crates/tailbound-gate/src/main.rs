//! `tailbound-gate`: an NBD storage gateway enforcing a Plan's storage stage with
//! `tailbound_core::sched` (docs/enforcement.md, "Storage path").
//!
//! Usage: `tailbound-gate --config CONFIG.json` (the document `tailbound gate` writes; see
//! `config.rs`), or `tailbound-gate --check CONFIG.json` to validate it and exit. Prints
//! `listening on HOST:PORT` on stdout once it accepts connections (port 0 picks a free port),
//! then `metrics on http://HOST:PORT/metrics` if the configuration has `metrics_listen`; that
//! address also serves the control channel (`GET /limits`, `PUT /limits/<export>`: one tenant's
//! pacing rate and depth, live; `control.rs`).
//! On SIGHUP it reads CONFIG.json again and applies it (hot reload, `server.rs`; a bad document
//! is refused with a line on stderr and the running configuration stays). On SIGINT or SIGTERM
//! it stops accepting, drains the requests in the gateway (at most `drain_timeout_s`), flushes
//! the backends, prints each export's counters (one JSON line each) and exits 0 — or 1 if the
//! drain timeout cut requests off; a second SIGINT/SIGTERM exits at once (status 1).
//! Exit status 2 for a bad configuration or an address it cannot listen on.

mod array;
mod classify;
mod config;
mod conform;
mod control;
mod file;
mod metrics;
mod proto;
mod server;
mod upstream;

use std::io::Write;

use tokio::signal::unix::{signal, SignalKind};

fn usage() -> ! {
    eprintln!("usage: tailbound-gate --config CONFIG.json | --check CONFIG.json");
    std::process::exit(2);
}

/// Turn signals into controls: SIGHUP reloads, SIGINT/SIGTERM shut down (the second exits).
async fn signals(tx: tokio::sync::mpsc::UnboundedSender<server::Control>) {
    let (Ok(mut hup), Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!("tailbound-gate: cannot install signal handlers");
        let _ = tx.send(server::Control::Shutdown);
        return;
    };
    let mut stopping = false;
    loop {
        let control = tokio::select! {
            _ = hup.recv() => server::Control::Reload,
            _ = term.recv() => server::Control::Shutdown,
            _ = int.recv() => server::Control::Shutdown,
        };
        if control == server::Control::Shutdown {
            if stopping {
                eprintln!("tailbound-gate: second signal, exiting without draining");
                std::process::exit(1);
            }
            stopping = true;
        }
        let _ = tx.send(control);
    }
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
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let runtime = builder.enable_all().build().unwrap_or_else(|e| fail(e.to_string()));
    let config_path = std::path::PathBuf::from(path);
    let code = runtime.block_on(async move {
        // signals are caught from the start: a SIGHUP before `listening on` is not fatal
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(signals(tx));
        let listener = match tokio::net::TcpListener::bind(&cfg.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("tailbound-gate: listen {}: {e}", cfg.listen);
                return 2;
            }
        };
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let mut metrics = None;
        if let Some(m) = &cfg.metrics_listen {
            match tokio::net::TcpListener::bind(m).await {
                Ok(l) => metrics = Some(l),
                Err(e) => {
                    eprintln!("tailbound-gate: metrics listen {m}: {e}");
                    return 2;
                }
            }
        }
        println!("listening on {addr}");
        if let Some(l) = &metrics {
            let a = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
            println!("metrics on http://{a}/metrics");
        }
        let _ = std::io::stdout().flush();
        match server::serve(cfg, config_path, listener, metrics, rx).await {
            Ok(outcome) => {
                print!("{}", outcome.report);
                let _ = std::io::stdout().flush();
                if outcome.abandoned > 0 {
                    eprintln!(
                        "tailbound-gate: drain timeout: {} requests left unanswered",
                        outcome.abandoned
                    );
                    1
                } else {
                    0
                }
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
