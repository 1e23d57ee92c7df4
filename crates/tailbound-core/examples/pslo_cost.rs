//! The cost of PSLO's controller per completion (`control::pslo`), measured with a plain
//! `std::time::Instant` loop; target under 100 ns (issue 26). Five tenants (four with a latency
//! SLO, one throughput-only, as in the paper's Fig. 5), completions interleaved every 1.4 ms of
//! virtual time, service times with a 2% spike so the forecast fires now and then, a decision
//! every 1000 completions (the paper's N).
//!
//! `cargo run --release -p tailbound-core --example pslo_cost` (`benchmarks/README.md`).

use std::hint::black_box;
use std::time::Instant;

use tailbound_core::control::pslo::{Config, Controller, LatencySlo, Policy, TenantSlo};

fn main() {
    let slo = TenantSlo {
        latency: Some(LatencySlo { latency_s: 0.3, percentile: 0.999 }),
        throughput_iops: 150.0,
    };
    let copy = TenantSlo { latency: None, throughput_iops: 150.0 };
    let n: u64 = 10_000_000;
    // a deterministic sequence of (latency, service time), precomputed so the loop times the
    // controller alone
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let samples: Vec<(f64, f64)> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let st = if u < 0.02 { 0.04 } else { 0.004 + 0.004 * u };
            (st * 10.0 * u + st, st)
        })
        .collect();
    println!("policy  ns/completion  decisions");
    for policy in [Policy::LsT, Policy::TsL, Policy::LsU, Policy::T, Policy::L] {
        let mut best = f64::INFINITY;
        let mut decisions = 0u64;
        for _round in 0..3 {
            let cfg = Config::new(policy, vec![slo, slo, slo, slo, copy]);
            let mut c = Controller::new(cfg, 0.0).unwrap();
            decisions = 0;
            let start = Instant::now();
            for i in 0..n {
                let (latency, st) = samples[(i & 4095) as usize];
                let now = i as f64 * 0.0014;
                if let Some(d) = c.on_completion((i % 5) as usize, latency, st, now) {
                    decisions += 1;
                    black_box(&d);
                }
            }
            best = best.min(start.elapsed().as_secs_f64() / n as f64 * 1e9);
        }
        println!("{:<7} {best:>13.1}  {decisions}", policy.name());
    }
}
