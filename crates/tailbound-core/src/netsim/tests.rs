//! Hand cases of the network simulator: idle-network latencies computed by hand, drop-tail
//! drops and go-back-N recovery after a timeout, admission in-process, determinism, bad input.

use super::config::{AdmissionTable, CcConfig, NetConfig};
use super::engine::simulate;
use super::rpcs::RpcInput;
use crate::error::Error;

const P: f64 = 0.2e-6; // propagation per link
const BYTE: f64 = 8.0 / 100e9; // seconds per byte at 100 Gb/s
const T: f64 = 5120.0 * BYTE; // a full packet: 5080 B of payload + 40 B of header
const A: f64 = 40.0 * BYTE; // an ACK

fn net(n: u32) -> NetConfig {
    NetConfig::from_json(&format!(r#"{{"n_hosts": {n}, "weights": [4, 1]}}"#)).unwrap()
}

/// RPCs given one per row: `(issued s, source host, destination host, size bytes, class)`.
fn input(rows: &[(f64, u32, u32, u64, u8)]) -> RpcInput {
    RpcInput {
        time_s: rows.iter().map(|r| r.0).collect(),
        src: rows.iter().map(|r| r.1).collect(),
        dst: rows.iter().map(|r| r.2).collect(),
        size_bytes: rows.iter().map(|r| r.3).collect(),
        cls: rows.iter().map(|r| r.4).collect(),
    }
}

fn one(t: f64, src: u32, dst: u32, size: u64, cls: u8) -> RpcInput {
    input(&[(t, src, dst, size, cls)])
}

/// `n` hosts whose ports are QJump's, with `factors` (one throughput factor per class) and
/// `processing_delay_s`.
fn qjump(n: u32, factors: &[f64], processing_delay_s: f64) -> NetConfig {
    let mut cfg = net(n);
    cfg.scheduling = "qjump".into();
    cfg.qjump = Some(super::config::QjumpLevels {
        throughput_factors: factors.to_vec(),
        processing_delay_s,
    });
    cfg
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-15 + 1e-12 * b.abs()
}

#[test]
fn idle_rnl_of_one_packet_is_four_propagations_and_two_serialisations_each_way() {
    // Data: to the switch (P), switch port (1040 B, then P), receiving queue (1040 B);
    // ACK: the same with 40 B.
    let (out, c) = simulate(net(2), one(1e-3, 0, 1, 1000, 0), f64::INFINITY).unwrap();
    let expected = 4.0 * P + 2.0 * 1040.0 * BYTE + 2.0 * A;
    assert!(close(out.rnl_s[0], expected), "{} vs {expected}", out.rnl_s[0]);
    assert!(close(out.finish_s[0], 1e-3 + expected));
    assert_eq!((c.data_packets, c.acks, c.data_drops, c.timeouts, c.unfinished), (1, 1, 0, 0, 0));
    assert_eq!(out.size_mtus[0], 1);
    // A NIC port at the sender instead of the receiving queue: the same path length.
    let mut cfg = net(2);
    cfg.host_egress = true;
    cfg.receiver_queue = false;
    let (out2, _) = simulate(cfg, one(0.0, 0, 1, 1000, 0), f64::INFINITY).unwrap();
    assert!(close(out2.rnl_s[0], expected));
}

#[test]
fn idle_rnl_of_32_kib_pipelines_its_seven_packets() {
    // 32 768 B = 6 full packets (T each) + 2288 B (2328 B on the wire). With a window of 8 all
    // leave at once: the switch port sends them back to back from P; the receiving queue
    // finishes the sixth at 2P + 7T and the short one after it, then the ACK's 2P + 2A.
    let mut cfg = net(2);
    cfg.cc.init_cwnd = 8.0;
    let (out, c) = simulate(cfg, one(0.0, 0, 1, 32768, 1), f64::INFINITY).unwrap();
    let expected = 4.0 * P + 7.0 * T + 2328.0 * BYTE + 2.0 * A;
    assert!(close(out.rnl_s[0], expected), "{} vs {expected}", out.rnl_s[0]);
    assert_eq!((out.size_mtus[0], c.data_packets, c.acks), (7, 7, 7));
    // Two full packets with the default window of 2: both in flight, the second's ACK last.
    let (out, _) = simulate(net(2), one(0.0, 0, 1, 2 * 5080, 0), f64::INFINITY).unwrap();
    assert!(close(out.rnl_s[0], 4.0 * P + 3.0 * T + 2.0 * A));
}

#[test]
fn rnl_includes_the_wait_in_the_channel_fifo() {
    // Two one-packet RPCs issued together on one channel with a window of 1: the second is
    // sent only when the first is acknowledged, and its RNL counts that wait.
    let mut cfg = net(2);
    cfg.cc.init_cwnd = 1.0;
    let rpcs = input(&[(0.0, 0, 1, 5080, 0); 2]);
    let (out, _) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    let rtt = 4.0 * P + 2.0 * T + 2.0 * A;
    assert!(close(out.rnl_s[0], rtt));
    assert!(close(out.rnl_s[1], 2.0 * rtt), "{} vs {}", out.rnl_s[1], 2.0 * rtt);
}

#[test]
fn drop_tail_drops_then_go_back_n_retransmits_after_the_timeout() {
    // Three full packets reach a switch port together with room for two: the port starts its
    // transmission after every arrival of the instant (as the authors' separate processing
    // event), so the first two wait in the buffer and the third is dropped. Without the
    // receiving queue the path is switch port then host.
    let mut cfg = net(2);
    cfg.cc.init_cwnd = 3.0;
    cfg.buffer_bytes = 2 * 5120;
    cfg.receiver_queue = false;
    let (out, c) = simulate(cfg, one(0.0, 0, 1, 3 * 5080, 0), f64::INFINITY).unwrap();
    assert_eq!(c.data_drops, 1);
    assert_eq!(c.drops, vec![1, 0]);
    // Packets 0 and 1 are acknowledged (RTTs 4P + T + A and one T later); the timer, moved at
    // the second ACK, fires 450 µs after it; go-back-N resends packet 2 (window 3.67 halved:
    // 1 packet), acknowledged one RTT later.
    let rtt = 2.0 * P + T + 2.0 * P + A;
    let expected = rtt + T + 450e-6 + rtt;
    assert!(close(out.rnl_s[0], expected), "{} vs {expected}", out.rnl_s[0]);
    assert_eq!((c.timeouts, c.retransmitted, c.data_packets), (1, 1, 4));
}

#[test]
fn go_back_n_resends_everything_after_the_first_loss() {
    // As above with room for one packet: packets 1 and 2 are dropped. Packet 0's ACK moves the
    // timer; at its expiry go-back-N resends from packet 1 with the window halved to 1 packet,
    // then packet 2 with the window grown to 2: three round trips and the timeout.
    let mut cfg = net(2);
    cfg.cc.init_cwnd = 3.0;
    cfg.buffer_bytes = 5120;
    cfg.receiver_queue = false;
    let (out, c) = simulate(cfg, one(0.0, 0, 1, 3 * 5080, 0), f64::INFINITY).unwrap();
    let rtt = 4.0 * P + T + A;
    assert_eq!(c.drops, vec![2, 0]);
    assert!(close(out.rnl_s[0], 450e-6 + 3.0 * rtt), "{} vs {}", out.rnl_s[0], 450e-6 + 3.0 * rtt);
    assert_eq!((c.timeouts, c.retransmitted, c.data_packets, c.acks), (1, 2, 5, 3));
}

#[test]
fn admission_downgrades_in_process_and_the_run_is_deterministic() {
    // Ten hosts in all-to-one incast with a 1 ns-per-MTU target that no RPC can meet: every
    // completion at class 0 decreases p_admit by β · 7, to the floor, and RPCs are downgraded.
    let mut cfg = net(10);
    cfg.admission = Some(AdmissionTable {
        latency_target_s: vec![1e-9],
        target_percentile: None,
        increment_window_s: None,
        alpha: None,
        beta: None,
        floor: None,
        per_mtu: None,
        rules: None,
    });
    cfg.seed = 7;
    let n = 3000;
    let rows: Vec<_> = (0..n).map(|i| (f64::from(i) * 1e-6, 1 + i % 9, 0, 32768, 0)).collect();
    let rpcs = input(&rows);
    let (a, ca) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    let (b, cb) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    assert_eq!(a, b);
    assert_eq!(ca, cb);
    assert_eq!(ca.unfinished, 0);
    let down = a.downgraded.iter().filter(|&&d| d).count();
    assert!(down > n as usize / 2, "{down} downgraded of {n}");
    assert_eq!(down as u64, ca.downgrades);
    assert!(a.class_run.iter().zip(&a.downgraded).all(|(&k, &d)| (k == 1) == d));
    // p_admit never goes below the floor, and ends near it.
    assert!(a.p_admit.iter().all(|&p| (0.1 - 1e-12..=1.0).contains(&p)));
    assert!(a.p_admit[n as usize - 1] < 0.2);
    // Another seed, another run.
    cfg.seed = 8;
    let (c, _) = simulate(cfg, rpcs.clone(), f64::INFINITY).unwrap();
    assert_ne!(a.downgraded, c.downgraded);
    // Without admission nothing is downgraded.
    let (d, cd) = simulate(net(10), rpcs, f64::INFINITY).unwrap();
    assert_eq!(cd.downgrades, 0);
    assert!(d.class_run.iter().all(|&k| k == 0));
}

#[test]
fn wfq_gives_the_high_class_its_weight_at_a_congested_port() {
    // Two senders, one per class, each with a long backlog towards host 0 at the same time:
    // while both are busy the switch port serves them 4:1, so the high class's RPCs finish
    // about four times as fast.
    let (_, out) = two_class_backlog("wfq");
    // Among the first 100 RPCs finished, the high class has about 80.
    let mut order: Vec<usize> = (0..out.finish_s.len()).collect();
    order.sort_by(|&a, &b| out.finish_s[a].total_cmp(&out.finish_s[b]));
    let high = order[..100].iter().filter(|&&i| i % 2 == 0).count();
    assert!((76..=84).contains(&high), "{high} of the first 100 are high");
}

#[test]
fn bad_configuration_and_rpcs_are_refused_by_field() {
    let field = |e: Error| match e {
        Error::Field { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let e = NetConfig::from_json(r#"{"n_hosts": 3, "weights": [4, 0]}"#).unwrap_err();
    assert_eq!(field(e), "weights[1]");
    let e = NetConfig::from_json(r#"{"n_hosts": 3, "weights": [4, 1], "cc": {"max_cwnd": 0.5}}"#)
        .unwrap_err();
    assert_eq!(field(e), "cc.max_cwnd");
    let e = NetConfig::from_json(r#"{"n_hosts": 3, "weights": [4, 1], "mtu": 9000}"#).unwrap_err();
    assert!(field(e).contains("network"));
    let e = NetConfig::from_json(
        r#"{"n_hosts": 3, "weights": [8, 4, 1], "admission": {"latency_target_s": [15e-6]}}"#,
    )
    .unwrap_err();
    assert_eq!(field(e), "admission.latency_target_s");
    let e = NetConfig::from_json(
        r#"{"n_hosts": 3, "weights": [4, 1], "admission": {"latency_target_s": [15e-6], "floor": 0}}"#,
    )
    .unwrap_err();
    assert_eq!(field(e), "admission.floor");
    let cfg = net(3);
    let e = simulate(cfg.clone(), one(0.0, 1, 1, 10, 0), 1.0).unwrap_err();
    assert_eq!(field(e), "dst[0]");
    let e = simulate(cfg.clone(), one(0.0, 0, 1, 10, 2), 1.0).unwrap_err();
    assert_eq!(field(e), "cls[0]");
    let mut r = one(1.0, 0, 1, 10, 0);
    r.time_s.push(0.5);
    r.src.push(0);
    r.dst.push(2);
    r.size_bytes.push(1);
    r.cls.push(0);
    assert_eq!(field(simulate(cfg, r, 1.0).unwrap_err()), "time_s[1]");
    let _ = CcConfig::default();
}

/// Two senders, one per class, each with a backlog of 200 one-packet RPCs towards host 0 at the
/// same time, under port kind `kind`; no drops, every RPC finished.
fn two_class_backlog(kind: &str) -> (RpcInput, super::rpcs::RpcOutcome) {
    let mut cfg = net(3);
    cfg.scheduling = kind.into();
    cfg.cc.enabled = false; // a fixed window of 30: a standing queue at the port
    cfg.buffer_bytes = 1 << 30;
    let n = 400;
    let rows: Vec<_> = (0..n).map(|i| (0.0, 1 + i % 2, 0, 5080, (i % 2) as u8)).collect();
    let rpcs = input(&rows);
    let (out, c) = simulate(cfg, rpcs.clone(), f64::INFINITY).unwrap();
    assert_eq!((c.data_drops, c.unfinished), (0, 0));
    (rpcs, out)
}

#[test]
fn strict_priority_finishes_the_high_class_backlog_before_the_low_class_gets_the_port() {
    // Under SPQ the low class sends only while no high-class packet waits at the switch port:
    // the window of 30 keeps one waiting all along, so of the first 150 RPCs finished at
    // most the few low-class packets that reached the idle port first are low.
    let (_, out) = two_class_backlog("strict_priority");
    let mut order: Vec<usize> = (0..400).collect();
    order.sort_by(|&a, &b| out.finish_s[a].total_cmp(&out.finish_s[b]));
    let low = order[..150].iter().filter(|&&i| i % 2 == 1).count();
    assert!(low <= 2, "{low} of the first 150 are low");
    // The last high-class RPC finishes before the median low-class one.
    let last_high = (0..400).step_by(2).map(|i| out.finish_s[i]).fold(0.0, f64::max);
    let mut low_finish: Vec<f64> = (1..400).step_by(2).map(|i| out.finish_s[i]).collect();
    low_finish.sort_by(f64::total_cmp);
    assert!(last_high < low_finish[100]);
}

#[test]
fn pfabric_lets_a_short_rpc_overtake_a_long_one_at_the_port() {
    // Host 1 starts a 1 MB RPC to host 0 at t = 0 (window of 30: a standing queue of its
    // packets at the switch port); host 2 sends a one-packet RPC to host 0 at 20 µs. Its
    // packet has 1000 B left against the long RPC's hundreds of kB: it waits only for the
    // packet on the wire at each port. Under WFQ with both in class 0 it queues behind the
    // long RPC's ~29 packets in the port (~12 µs more).
    let rpcs = input(&[(0.0, 1, 0, 1_000_000, 0), (20e-6, 2, 0, 1000, 0)]);
    let idle = 4.0 * P + 2.0 * 1040.0 * BYTE + 2.0 * A;
    let mut cfg = net(3);
    cfg.cc.enabled = false;
    cfg.buffer_bytes = 1 << 30;
    let (wfq, _) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    cfg.scheduling = "pfabric".into();
    let (pf, c) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    assert_eq!(c.unfinished, 0);
    // At most one full packet ahead at each of the two ports.
    assert!(pf.rnl_s[1] <= idle + 2.0 * T + 1e-12, "{} vs idle {idle}", pf.rnl_s[1]);
    assert!(wfq.rnl_s[1] > idle + 20.0 * T, "{}", wfq.rnl_s[1]);
    // The long RPC pays for it by no more than the short one's packets.
    assert!(pf.rnl_s[0] <= wfq.rnl_s[0] + 2.0 * (1040.0 + 40.0) * BYTE + 1e-12);
}

#[test]
fn pfabric_drops_the_packet_with_most_remaining_and_recovers() {
    // A buffer of three packets and two RPCs of 20 packets sent at once into it by a fixed
    // window of 30: packets are dropped (the largest remaining first), go-back-N recovers,
    // every RPC finishes, and the 100 kB RPC, with less left, finishes first.
    let mut cfg = net(3);
    cfg.scheduling = "pfabric".into();
    cfg.cc.enabled = false;
    cfg.buffer_bytes = 3 * 5120;
    let rpcs = input(&[(0.0, 1, 0, 200_000, 0), (0.0, 2, 0, 100_000, 1)]);
    let (out, c) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    assert!(c.data_drops > 0 && c.timeouts > 0);
    assert_eq!(c.unfinished, 0);
    assert!(out.finish_s[1] < out.finish_s[0]);
}

#[test]
fn qjump_paces_a_host_class_to_one_packet_per_epoch() {
    // Two hosts, QJump factors 2:1; one RPC of 7 packets at class 1 (factor 1): its packets
    // leave one per epoch = 2 · (2 / 1) · 5080 B · 8 / 100 Gb/s + 1 µs, each crossing an idle
    // network, so its RNL is 6 epochs plus the idle RNL of its last (2328 B) packet. Class 0
    // (factor 2) has half the epoch's transmission part.
    let cfg = qjump(2, &[2.0, 1.0], 1e-6);
    let epochs = cfg.qjump_epochs_s();
    let mss_s = 5080.0 * BYTE;
    assert!(close(epochs[1], 4.0 * mss_s + 1e-6) && close(epochs[0], 2.0 * mss_s + 1e-6));
    let (out, c) = simulate(cfg.clone(), one(0.0, 0, 1, 32768, 1), f64::INFINITY).unwrap();
    let expected = 6.0 * epochs[1] + 4.0 * P + 2.0 * 2328.0 * BYTE + 2.0 * A;
    assert!(close(out.rnl_s[0], expected), "{} vs {expected}", out.rnl_s[0]);
    assert_eq!((c.data_packets, c.timeouts), (7, 0));
    let (out0, _) = simulate(cfg, one(0.0, 0, 1, 32768, 0), f64::INFINITY).unwrap();
    let expected0 = 6.0 * epochs[0] + 4.0 * P + 2.0 * 2328.0 * BYTE + 2.0 * A;
    assert!(close(out0.rnl_s[0], expected0), "{} vs {expected0}", out0.rnl_s[0]);
}

#[test]
fn qjump_round_robins_a_host_class_over_destinations() {
    // Host 0 sends a 2-packet RPC to host 1 and one to host 2, both class 0 at t = 0: the
    // pacer alternates destinations, so both finish within one epoch of each other, and the
    // four packets take four epochs in all.
    let cfg = qjump(3, &[1.0, 1.0], 0.0);
    let e = cfg.qjump_epochs_s()[0];
    let rpcs = input(&[(0.0, 0, 1, 10_160, 0), (0.0, 0, 2, 10_160, 0)]);
    let (out, _) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    let idle = 4.0 * P + 2.0 * 5120.0 * BYTE + 2.0 * A;
    assert!(close(out.rnl_s[0], 2.0 * e + idle), "{}", out.rnl_s[0]);
    assert!(close(out.rnl_s[1], 3.0 * e + idle), "{}", out.rnl_s[1]);
}

#[test]
fn bad_port_kinds_are_refused_by_field() {
    let field = |e: Error| match e {
        Error::Field { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let base = r#""n_hosts": 3, "weights": [4, 1]"#;
    let e = NetConfig::from_json(&format!(r#"{{{base}, "scheduling": "drr"}}"#)).unwrap_err();
    assert_eq!(field(e), "scheduling");
    let e = NetConfig::from_json(&format!(r#"{{{base}, "scheduling": "qjump"}}"#)).unwrap_err();
    assert_eq!(field(e), "qjump");
    let e = NetConfig::from_json(&format!(
        r#"{{{base}, "scheduling": "qjump", "qjump": {{"throughput_factors": [1]}}}}"#
    ))
    .unwrap_err();
    assert_eq!(field(e), "qjump.throughput_factors");
    let e = NetConfig::from_json(&format!(
        r#"{{{base}, "scheduling": "qjump", "qjump": {{"throughput_factors": [2, 0]}}}}"#
    ))
    .unwrap_err();
    assert_eq!(field(e), "qjump.throughput_factors[1]");
    let e =
        NetConfig::from_json(&format!(r#"{{{base}, "qjump": {{"throughput_factors": [2, 1]}}}}"#))
            .unwrap_err();
    assert_eq!(field(e), "qjump");
    for kind in ["wfq", "strict_priority", "pfabric"] {
        NetConfig::from_json(&format!(r#"{{{base}, "scheduling": "{kind}"}}"#)).unwrap();
    }
}

/// RPCs `(size, class)` all issued at 0 from host 0 to host 1.
fn together(rpcs: &[(u64, u8)]) -> RpcInput {
    input(&rpcs.iter().map(|&(size, cls)| (0.0, 0, 1, size, cls)).collect::<Vec<_>>())
}

#[test]
fn parallel_channels_let_an_rpc_skip_the_fifo_of_its_triple() {
    // As `rnl_includes_the_wait_in_the_channel_fifo`, with two channels per triple: the second
    // RPC takes the idle second channel and leaves at once; its packet only queues behind the
    // first one's at the ports (one T more than the idle RTT), not behind its round trip.
    let mut cfg = net(2);
    cfg.cc.init_cwnd = 1.0;
    cfg.channels_per_class = 2;
    let (out, c) = simulate(cfg, together(&[(5080, 0), (5080, 0)]), f64::INFINITY).unwrap();
    let rtt = 4.0 * P + 2.0 * T + 2.0 * A;
    assert!(close(out.rnl_s[0], rtt));
    assert!(close(out.rnl_s[1], rtt + T), "{} vs {}", out.rnl_s[1], rtt + T);
    assert_eq!((c.data_packets, c.acks, c.timeouts), (2, 2, 0));
}

#[test]
fn a_new_rpc_takes_the_least_loaded_channel_when_none_is_idle() {
    // A fixed window of one packet and two channels: RPC 0 (3 packets) takes channel 0, RPC 1
    // (1 packet) the idle channel 1, RPC 2 (1 packet) the less loaded channel 1 (1 packet
    // unacknowledged against 3) and finishes second, before RPC 0. With one channel they
    // finish in issue order.
    let rpcs = together(&[(3 * 5080, 0), (5080, 0), (5080, 0)]);
    let mut cfg = net(2);
    cfg.cc.enabled = false;
    cfg.cc.init_cwnd = 1.0;
    cfg.cc.max_cwnd = 1.0;
    let (fifo, _) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    assert!(fifo.finish_s[0] < fifo.finish_s[1] && fifo.finish_s[1] < fifo.finish_s[2]);
    cfg.channels_per_class = 2;
    let (out, c) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    assert!(out.finish_s[1] < out.finish_s[2] && out.finish_s[2] < out.finish_s[0], "{out:?}");
    assert_eq!((c.data_packets, c.unfinished), (5, 0));
}

#[test]
fn pfabric_with_a_flow_per_rpc_lets_a_short_rpc_of_the_same_pair_overtake() {
    // A 20-packet RPC then a 1-packet one, same pair and class, under pFabric's ports. With one
    // channel the short RPC's packet is numbered after the long one's 20 and waits for them;
    // with a channel per RPC it is sent at once and its small remaining size puts it first.
    let rpcs = together(&[(20 * 5080, 0), (1000, 0)]);
    let mut cfg = net(2);
    cfg.scheduling = "pfabric".into();
    cfg.cc.init_cwnd = 30.0;
    cfg.cc.loss_based = true;
    let (fifo, _) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    assert!(fifo.finish_s[1] > fifo.finish_s[0]);
    cfg.channels_per_class = 8;
    let (out, c) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    assert!(out.finish_s[1] < out.finish_s[0]);
    // Behind at most the long RPC's packet in transmission at each of the two ports.
    let idle = 4.0 * P + 2.0 * 1040.0 * BYTE + 2.0 * A;
    assert!(out.rnl_s[1] <= idle + 2.0 * T + 1e-12, "{} vs {idle}", out.rnl_s[1]);
    assert_eq!((c.data_packets, c.timeouts, c.unfinished), (21, 0, 0));
}

#[test]
fn qjump_paces_the_parallel_channels_of_a_host_class_in_turn() {
    // Two channels of the same triple, each with one packet: the pacer sends one per epoch,
    // first channel 0's, then channel 1's.
    let mut cfg = qjump(2, &[1.0, 1.0], 1e-6);
    cfg.channels_per_class = 2;
    let epoch = cfg.qjump_epochs_s()[0];
    let (out, c) = simulate(cfg, together(&[(5080, 0), (5080, 0)]), f64::INFINITY).unwrap();
    assert_eq!((c.data_packets, c.unfinished), (2, 0));
    let gap = out.finish_s[1] - out.finish_s[0];
    assert!(close(gap, epoch), "{gap} vs {epoch}");
}

#[test]
fn channels_per_class_is_refused_outside_its_range() {
    for k in [0, super::config::MAX_CHANNELS_PER_CLASS + 1] {
        let e = NetConfig::from_json(&format!(
            r#"{{"n_hosts": 3, "weights": [4, 1], "channels_per_class": {k}}}"#
        ))
        .unwrap_err();
        assert!(matches!(e, Error::Field { ref field, .. } if field == "channels_per_class"));
    }
    assert_eq!(net(3).channels_per_class, 1);
}

#[test]
fn pfabric_levels_stamp_the_artifacts_thresholds() {
    let mut cfg = net(2);
    cfg.scheduling = "pfabric".into();
    assert_eq!(cfg.pfabric_priority(70_000), 70_000);
    assert_eq!(cfg.pfabric_priority(u64::MAX), u32::MAX);
    cfg.pfabric_priority_thresholds = super::config::PFABRIC_ARTIFACT_THRESHOLDS.to_vec();
    // `remaining <= thresholds[i]` gives level i (`PFabricFlow::get_pfabric_priority`).
    for (remaining, level) in
        [(1, 0), (4096, 0), (4097, 1), (16_384, 2), (70_000, 5), (262_144, 6), (262_145, 7)]
    {
        assert_eq!(cfg.pfabric_priority(remaining), level, "{remaining}");
    }
}

#[test]
fn pfabric_levels_serve_rpcs_of_one_level_in_arrival_order() {
    // RPC 0 (16 000 B, 4 packets) then RPC 1 (9 000 B, 2 packets), each on a flow of its own.
    // By exact remaining size RPC 1's packets go first and it finishes first; with the
    // artifact's levels both are level 2 (8 KiB < size ≤ 16 KiB) and the port serves them in
    // arrival order, RPC 0 first.
    let rpcs = together(&[(16_000, 0), (9_000, 0)]);
    let mut cfg = net(2);
    cfg.scheduling = "pfabric".into();
    cfg.cc.init_cwnd = 30.0;
    cfg.cc.loss_based = true;
    cfg.channels_per_class = 8;
    let (exact, _) = simulate(cfg.clone(), rpcs.clone(), f64::INFINITY).unwrap();
    assert!(exact.finish_s[1] < exact.finish_s[0], "{exact:?}");
    cfg.pfabric_priority_thresholds = super::config::PFABRIC_ARTIFACT_THRESHOLDS.to_vec();
    let (levels, c) = simulate(cfg, rpcs, f64::INFINITY).unwrap();
    assert!(levels.finish_s[0] < levels.finish_s[1], "{levels:?}");
    assert_eq!((c.data_packets, c.unfinished), (6, 0));
}

#[test]
fn pfabric_thresholds_are_refused_by_name() {
    let base = r#""n_hosts": 3, "weights": [4, 1]"#;
    for (extra, field) in [
        (r#""pfabric_priority_thresholds": [4096]"#, "pfabric_priority_thresholds"),
        (
            r#""scheduling": "pfabric", "pfabric_priority_thresholds": [4096, 4096]"#,
            "pfabric_priority_thresholds[1]",
        ),
        (
            r#""scheduling": "pfabric", "pfabric_priority_thresholds": [0]"#,
            "pfabric_priority_thresholds[0]",
        ),
    ] {
        let e = NetConfig::from_json(&format!("{{{base}, {extra}}}")).unwrap_err();
        assert!(matches!(e, Error::Field { field: ref f, .. } if f == field), "{e:?}");
    }
    let ok = NetConfig::from_json(&format!(
        r#"{{{base}, "scheduling": "pfabric", "pfabric_priority_thresholds": [4096, 8192]}}"#
    ))
    .unwrap();
    assert_eq!(ok.pfabric_priority(5000), 1);
}
