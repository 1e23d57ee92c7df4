//! `tailbound-replay`: an open-loop TCP traffic replayer (docs/enforcement.md, "The replayer").
//!
//! * `server --listen ADDR[,tos=N] ... --duration S [--log FILE]` answers every request message
//!   with a response message of the length its header asks for, on every connection, until the
//!   duration ends.
//! * `client --requests FILE --tenant NAME=ADDR[,tos=N][,connections=K] ... --out FILE` replays
//!   the requests at their trace timestamps, open loop, and writes every request's issue lag and
//!   latency (trace timestamp to the last byte of its response) to a CSV; with `--progress
//!   FILE` each answered request's row is also appended there as it completes (`progress.rs`).
//! * `client --nbd ...` does the same against an NBD server, each tenant's requests as reads and
//!   writes of its export (`tenant,time_s,op,size,offset` in the requests file).
//! * `rpc --config FILE --rpcs FILE --out FILE` issues RPCs with Aequitas' admission control
//!   (the core's controller) deciding each one's class and DSCP, and writes each RPC's class
//!   requested and run and its RNL (`rpc.rs`, `rpc_config.rs`).
//!
//! Errors are one line on stderr and exit status 2 (bad input) or 1 (the run lost requests).

mod client;
mod nbd;
mod progress;
mod proto;
mod rpc;
mod rpc_config;
mod server;

use std::process::ExitCode;

const USAGE: &str = "usage:
  tailbound-replay server --listen ADDR[,tos=N] [--listen ...] --duration S [--log FILE]
  tailbound-replay client --requests FILE --tenant NAME=ADDR[,tos=N][,connections=K] [...]
                          --out FILE [--progress FILE]
                          [--start-delay S | --start-at UNIX_S] [--origin S]
                          [--drain S] [--overhead B]
                          [--small-factor F] [--large-factor F]
  tailbound-replay client --nbd --requests FILE --tenant NAME=ADDR[,export=E][,connections=K]
                          [...] --out FILE [--progress FILE]
                          [--start-delay S | --start-at UNIX_S] [--origin S] [--drain S]
  tailbound-replay rpc --config FILE --rpcs FILE --out FILE [--start-delay S] [--drain S]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("server") => server::Options::parse(&args[1..]).and_then(|o| run(server::serve(o))),
        Some("client") => client::Options::parse(&args[1..]).and_then(|o| run(client::replay(o))),
        Some("rpc") => rpc::Options::parse(&args[1..]).and_then(|o| run(rpc::run(o))),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(proto::Error::Usage(format!("expected 'server', 'client' or 'rpc'\n{USAGE}"))),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("tailbound-replay: {e}");
            ExitCode::from(e.code())
        }
    }
}

fn run<F: std::future::Future<Output = Result<u8, proto::Error>>>(
    fut: F,
) -> Result<u8, proto::Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| proto::Error::Io(format!("cannot start the runtime: {e}")))?;
    rt.block_on(fut)
}
