//! End-to-end tests of the simulation on cases worked by hand.

use super::config::SimConfig;
use super::engine::{Queue, Simulation};
use super::workload::Requests;
use crate::sched::Param;

fn build(config: &str, requests: Vec<Requests>) -> Simulation {
    let c = SimConfig::from_json(config).unwrap();
    Simulation::new(&c.topology, c.workloads, requests).unwrap()
}

fn reqs(arrival: &[f64], cost: &[f64]) -> Requests {
    let n = arrival.len();
    Requests {
        arrival: arrival.to_vec(),
        op: vec![0; n],
        size: vec![0.0; n],
        offset: Vec::new(),
        cost: vec![cost.to_vec()],
        ..Default::default()
    }
}

#[test]
fn sim_store_and_forward_pipelines_packets() {
    // 3000 B in two 1500 B packets over two 1500 B/s links with 0.5 s propagation each:
    // link 0 sends [0,1] and [1,2]; packet 0 reaches link 1 at 1.5, sends [1.5,2.5]; packet 1
    // reaches it at 2.5, sends [2.5,3.5] and arrives at 4.0.
    let config = r#"{"topology": {"links": [{"bandwidth": 1500, "propagation": 0.5},
        {"bandwidth": 1500, "propagation": 0.5}]},
        "workloads": [{"route": [{"net": [0, 1]}], "issue": "open"}]}"#;
    let mut sim = build(config, vec![reqs(&[0.0], &[3000.0])]);
    sim.run(f64::INFINITY);
    assert!((sim.records().exit[0] - 4.0).abs() < 1e-12);
}

#[test]
fn sim_device_shares_its_unit_rate() {
    let config = |mpl: u32| {
        format!(
            r#"{{"topology": {{"devices": [{{"read_mpl": {mpl}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        )
    };
    let mut ps = build(&config(2), vec![reqs(&[0.0, 0.0], &[1.0, 1.0])]);
    ps.run(f64::INFINITY);
    assert_eq!(ps.records().exit, vec![2.0, 2.0]);
    let mut one = build(&config(1), vec![reqs(&[0.0, 0.0], &[1.0, 1.0])]);
    one.run(f64::INFINITY);
    assert_eq!(one.records().exit, vec![1.0, 2.0]);
    // a short request joining a long one: both at rate 1/2 until the short one leaves at 1.0,
    // then the long one alone: 0.5 + 0.5 + 1.5 = 2.5
    let mut mix = build(&config(2), vec![reqs(&[0.0, 0.5], &[2.0, 0.25])]);
    mix.run(f64::INFINITY);
    assert_eq!(mix.records().exit, vec![2.25, 1.0]);
}

#[test]
fn sim_closed_loop_issues_on_completion() {
    let config = r#"{"topology": {"devices": [{}]},
        "workloads": [{"route": [{"device": 0}], "issue": {"closed": {"outstanding": 1}}}]}"#;
    let mut sim = build(config, vec![reqs(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0])]);
    sim.run(f64::INFINITY);
    assert_eq!(sim.records().issue, vec![0.0, 1.0, 2.0]);
    assert_eq!(sim.records().exit, vec![1.0, 2.0, 3.0]);
}

#[test]
fn sim_run_until_then_control_hook() {
    // two workloads at one device, FIFO-by-priority; after 1 s workload 1 becomes more important
    let config = r#"{"topology": {"devices": [{"scheduler":
        {"kind": "priority", "priority": [1, 0]}}]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"},
                      {"route": [{"device": 0}], "issue": "open"}]}"#;
    let w0 = reqs(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0]);
    let w1 = reqs(&[0.0], &[1.0]);
    let mut sim = build(config, vec![w0, w1]);
    sim.run(0.5);
    assert_eq!(sim.now(), 0.5);
    sim.set_param(Queue::Device(0), 1, Param::Priority(5)).unwrap();
    sim.run(f64::INFINITY);
    // workload 0's first request was already in service; then workload 1 goes first
    assert_eq!(sim.records().exit, vec![1.0, 3.0, 4.0, 2.0]);
    assert!(sim.set_param(Queue::Device(0), 9, Param::Priority(1)).is_err());
    assert!(sim.set_param(Queue::Link(0), 0, Param::Priority(1)).is_err());
}

#[test]
fn sim_shaper_at_link_paces_packets() {
    // 1 B/s link (a packet's tokens are its bytes in seconds), bucket (0.5, 1): the second 1-byte
    // message may start only when the bucket has leaked enough, at t = 2
    let config = r#"{"topology": {"links": [{"bandwidth": 1, "scheduler":
        {"kind": "priority", "priority": [0], "buckets": [[[0.5, 1.0]]]}}]},
        "workloads": [{"route": [{"net": [0]}], "issue": "open"}]}"#;
    let mut sim = build(config, vec![reqs(&[0.0, 0.0], &[1.0, 1.0])]);
    sim.run(f64::INFINITY);
    assert_eq!(sim.records().exit[0], 1.0);
    assert!((sim.records().exit[1] - 3.0).abs() < 1e-12);
}

#[test]
fn sim_is_deterministic() {
    let config = r#"{"topology": {"links": [{"bandwidth": 1000}], "devices": [{"read_mpl": 4}]},
        "workloads": [{"route": [{"net": [0]}, {"device": 0}], "issue": "open"},
                      {"route": [{"net": [0]}, {"device": 0}], "issue": "open"}]}"#;
    let make = || {
        let a: Vec<f64> = (0..200).map(|i| (i as f64 * 0.37).fract() + i as f64 * 0.01).collect();
        let mut a = a;
        a.sort_by(f64::total_cmp);
        let mk = |k: f64| Requests {
            arrival: a.clone(),
            op: vec![0; 200],
            size: vec![100.0; 200],
            offset: Vec::new(),
            cost: vec![vec![1700.0 * k; 200], vec![0.003 * k; 200]],
            ..Default::default()
        };
        build(config, vec![mk(1.0), mk(1.5)])
    };
    let (mut x, mut y) = (make(), make());
    x.run(f64::INFINITY);
    y.run(f64::INFINITY);
    assert_eq!(x.records(), y.records());
    assert!(x.records().exit.iter().all(|t| t.is_finite()));
}

#[test]
fn sim_rejects_bad_routes_and_arrays() {
    let c = SimConfig::from_json(
        r#"{"topology": {}, "workloads": [{"route": [{"device": 3}], "issue": "open"}]}"#,
    )
    .unwrap();
    assert!(Simulation::new(&c.topology, c.workloads.clone(), vec![reqs(&[0.0], &[1.0])]).is_err());
    assert!(SimConfig::from_json(r#"{"topology": {}, "workloads": [], "extra": 1}"#).is_err());
}

#[test]
fn sim_device_chooses_next_request_only_when_it_has_room() {
    // MPL 1: two low-priority requests at 0, a high-priority one at 0.5; the dispatcher must not
    // have committed to the second low one while the first was in service
    let config = r#"{"topology": {"devices": [{"scheduler":
        {"kind": "priority", "priority": [0, 1]}}]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"},
                      {"route": [{"device": 0}], "issue": "open"}]}"#;
    let mut sim = build(config, vec![reqs(&[0.0, 0.0], &[1.0, 1.0]), reqs(&[0.5], &[1.0])]);
    sim.run(f64::INFINITY);
    assert_eq!(sim.records().exit, vec![1.0, 3.0, 2.0]);
}

#[test]
fn sim_device_holds_back_low_priority_while_high_is_in_service() {
    // MPL 3, priority 1 (workload 0) over 0 (workload 1). A low request is in service from 0;
    // a high one arrives at 0.1; another low one at 0.2. Without the rule the second low
    // request joins at once and the three share the device; with low_priority_mpl = 1 it waits
    // until the high request leaves.
    let config = |rule: &str| {
        format!(
            r#"{{"topology": {{"devices": [{{"read_mpl": 3{rule},
                "scheduler": {{"kind": "priority", "priority": [1, 0]}}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}},
                          {{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        )
    };
    let requests = || vec![reqs(&[0.1], &[0.2]), reqs(&[0.0, 0.2], &[1.0, 1.0])];
    let mut free = build(&config(""), requests());
    free.run(f64::INFINITY);
    let mut held = build(&config(r#", "low_priority_mpl": 1"#), requests());
    held.run(f64::INFINITY);
    // high: shares with one low request from 0.1 (rate 1/2) until 0.2, then with two (1/3):
    // 0.05 done by 0.2, 0.15 more at 1/3 takes 0.45 -> 0.65 without the rule;
    // with it, only one low request shares: 0.2 of work at 1/2 -> 0.5
    let high = |s: &Simulation| s.records().exit[0];
    assert!((high(&free) - 0.65).abs() < 1e-9, "{}", high(&free));
    assert!((high(&held) - 0.5).abs() < 1e-9, "{}", high(&held));
}

/// A disk with one read and one write in service, 1000 B per ms, 8 ms revolutions, 10 ms to
/// reposition, batches of at most `batch` writes and strictly sequential writes.
fn disk_config(batch: u32, scheduler: &str, workloads: usize) -> String {
    let w = vec![r#"{"route": [{"device": 0}], "issue": "open"}"#; workloads].join(",");
    format!(
        r#"{{"topology": {{"devices": [{{"scheduler": {scheduler}, "disk": {{"revolution": 0.008,
        "transfer_bandwidth": 1e6, "reposition": 0.01, "batch_requests": {batch},
        "gap_bytes": 0}}}}]}}, "workloads": [{w}]}}"#
    )
}

/// Requests of 1000 B: `(arrival, op, offset, token-model cost)`.
fn disk_reqs(rows: &[(f64, u8, f64, f64)]) -> Requests {
    Requests {
        arrival: rows.iter().map(|r| r.0).collect(),
        op: rows.iter().map(|r| r.1).collect(),
        size: vec![1000.0; rows.len()],
        offset: rows.iter().map(|r| r.2).collect(),
        cost: vec![rows.iter().map(|r| r.3).collect()],
        ..Default::default()
    }
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

#[test]
fn sim_disk_sequential_writes_miss_a_revolution_unless_batched() {
    // a random read (11 ms) holds the disk while four sequential writes queue behind it; the
    // first write positions (11 ms), the others transfer (1 ms)
    let rows = [
        (0.0, 0, 5e5, 0.011),
        (0.0, 1, 0.0, 0.011),
        (0.0, 1, 1000.0, 0.001),
        (0.0, 1, 2000.0, 0.001),
        (0.0, 1, 3000.0, 0.001),
    ];
    let exits = |batch: u32, rows: &[(f64, u8, f64, f64)]| {
        let mut sim = build(&disk_config(batch, r#"{"kind": "fifo"}"#, 1), vec![disk_reqs(rows)]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    // one at a time: each next write is issued when the previous ended and waits a revolution
    assert!(close(&exits(1, &rows), &[0.011, 0.022, 0.031, 0.040, 0.049]));
    // one pass
    assert!(close(&exits(4, &rows), &[0.011, 0.022, 0.023, 0.024, 0.025]));
    // batches of two: the second batch misses a revolution
    assert!(close(&exits(2, &rows), &[0.011, 0.022, 0.023, 0.032, 0.033]));
    // reads keep the token model's cost (the disk cache serves sequential reads)
    let reads: Vec<_> = rows.iter().map(|&(t, _, o, c)| (t, 0, o, c)).collect();
    assert!(close(&exits(1, &reads), &[0.011, 0.022, 0.023, 0.024, 0.025]));
    // a write arriving 3 ms after its predecessor ended waits the rest of the revolution (5 ms)
    let late = [(0.0, 1, 0.0, 0.011), (0.014, 1, 1000.0, 0.001)];
    assert!(close(&exits(1, &late), &[0.011, 0.020]));
    // the read after a batch waits for the batch: it does not share the disk with it
    let after =
        [(0.0, 0, 5e5, 0.011), (0.0, 1, 0.0, 0.011), (0.0, 1, 1000.0, 0.001), (0.0, 0, 9e5, 0.005)];
    assert!(close(&exits(4, &after), &[0.011, 0.022, 0.023, 0.028]));
    // a read in between moves the head: the next write of the stream repositions (10 ms)
    let split = [(0.0, 1, 0.0, 0.011), (0.0, 0, 5e5, 0.005), (0.0, 1, 1000.0, 0.001)];
    assert!(close(&exits(4, &split), &[0.011, 0.016, 0.027]));
}

#[test]
fn sim_disk_batch_keeps_priorities_and_its_size_limit() {
    // low-priority writes W0..W3 at 0 (W0 alone, then W1 with the revolution it missed, and
    // W2, W3 batched behind it); a high-priority read at 11.5 ms waits for the batch in service
    // only, so the batch limit bounds its wait
    let prio = r#"{"kind": "priority", "priority": [0, 1]}"#;
    let run = |batch: u32| {
        let writes = disk_reqs(&[
            (0.0, 1, 0.0, 0.011),
            (0.0, 1, 1000.0, 0.001),
            (0.0, 1, 2000.0, 0.001),
            (0.0, 1, 3000.0, 0.001),
        ]);
        let read = disk_reqs(&[(0.0115, 0, 5e5, 0.005)]);
        let mut sim = build(&disk_config(batch, prio, 2), vec![writes, read]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    // batch of 2: the read follows W2 at 21 ms; W3 then repositions (10 ms + 1 ms)
    assert!(close(&run(2), &[0.011, 0.020, 0.021, 0.037, 0.026]));
    // batch of 3: W1..W3 in one pass; the read waits until 22 ms
    assert!(close(&run(3), &[0.011, 0.020, 0.021, 0.022, 0.027]));
}

#[test]
fn sim_disk_rejects_bad_offsets_and_rules() {
    let mut r = disk_reqs(&[(0.0, 1, 0.0, 0.001)]);
    r.offset = vec![0.0, 1.0];
    let c = SimConfig::from_json(&disk_config(1, r#"{"kind": "fifo"}"#, 1)).unwrap();
    assert!(Simulation::new(&c.topology, c.workloads.clone(), vec![r]).is_err());
    let bad = disk_config(0, r#"{"kind": "fifo"}"#, 1);
    let c = SimConfig::from_json(&bad).unwrap();
    assert!(Simulation::new(&c.topology, c.workloads, vec![disk_reqs(&[])]).is_err());
}

fn try_build(config: &str, requests: Vec<Requests>) -> crate::error::Result<Simulation> {
    let c = SimConfig::from_json(config).unwrap();
    Simulation::new(&c.topology, c.workloads, requests)
}

const ONE_LINK: &str = r#"{"topology": {"links": [{"bandwidth": 1500}]},
    "workloads": [{"route": [{"net": [0]}], "issue": "open"}]}"#;

#[test]
fn sim_refuses_a_message_of_too_many_packets() {
    use super::engine::MAX_PACKETS_PER_MESSAGE;
    let bytes = 1500.0 * (MAX_PACKETS_PER_MESSAGE as f64 + 1.0);
    let err = try_build(ONE_LINK, vec![reqs(&[0.0, 1.0], &[1.0, bytes])]).err().unwrap();
    let message = err.to_string();
    assert!(message.contains("workload 0, request 1"), "{message}");
    assert!(message.contains("packets"), "{message}");
    // the largest message allowed is accepted
    let largest = 1500.0 * MAX_PACKETS_PER_MESSAGE as f64;
    assert!(try_build(ONE_LINK, vec![reqs(&[0.0], &[largest])]).is_ok());
}

#[test]
fn sim_refuses_runs_of_too_many_packet_transmissions() {
    // 1000 messages of 2^23 packets each: 8.4e9 packets over two links, above 1e10
    let config = r#"{"topology": {"links": [{"bandwidth": 1500}, {"bandwidth": 1500}]},
        "workloads": [{"route": [{"net": [0, 1]}], "issue": "open"}]}"#;
    let arrival: Vec<f64> = (0..1000).map(f64::from).collect();
    let cost = vec![1500.0 * f64::from(1 << 23); 1000];
    let err = try_build(config, vec![reqs(&arrival, &cost)]).err().unwrap();
    assert!(err.to_string().contains("packet transmissions"), "{err}");
}

#[test]
fn sim_refuses_a_tiny_or_infinite_mtu() {
    for mtu in ["1e-9", "0.5", "63.9", "1e400"] {
        let config = format!(
            r#"{{"topology": {{"mtu": {mtu}, "links": [{{"bandwidth": 1500}}]}},
            "workloads": [{{"route": [{{"net": [0]}}], "issue": "open"}}]}}"#
        );
        let Ok(c) = SimConfig::from_json(&config) else { continue }; // 1e400 is not JSON
        let err = Simulation::new(&c.topology, c.workloads, vec![reqs(&[0.0], &[1.0])]);
        assert!(err.err().unwrap().to_string().contains("mtu"), "mtu {mtu}");
    }
}

#[test]
fn sim_long_message_queues_a_window_and_keeps_its_timing() {
    use super::engine::SEND_WINDOW_PACKETS;
    // a message of 10 windows over one 1500 B/s link ends after its bytes / bandwidth seconds,
    // and a second workload's single packet issued meanwhile waits behind the window only
    let packets = 10 * SEND_WINDOW_PACKETS;
    let bytes = 1500.0 * packets as f64;
    let config = r#"{"topology": {"links": [{"bandwidth": 1500}]},
        "workloads": [{"route": [{"net": [0]}], "issue": "open"},
                      {"route": [{"net": [0]}], "issue": "open"}]}"#;
    let mut sim = build(config, vec![reqs(&[0.0], &[bytes]), reqs(&[0.5], &[1500.0])]);
    sim.run(1.0);
    // at most one window of the long message (and the short packet) waits in the queue
    while sim.now() < packets as f64 {
        assert!(sim.link_queued(0) <= SEND_WINDOW_PACKETS as usize + 1, "at {}", sim.now());
        let t = sim.now() + 10.0;
        sim.run(t);
    }
    sim.run(f64::INFINITY);
    // FIFO: the short packet went in after the first window (1024 packets), so it leaves at
    // 1025 s and the long message ends one packet later than alone
    assert_eq!(sim.records().exit[1], SEND_WINDOW_PACKETS as f64 + 1.0);
    assert_eq!(sim.records().exit[0], packets as f64 + 1.0);
}

#[test]
fn sim_requests_carry_their_own_deadline_and_class() {
    // EDF device, MPL 1, workload deadline 10 s: request 0 goes in at once; request 1 has its
    // own deadline 5 s after issue, request 2 1 s: request 2 is served before request 1
    let config = r#"{"topology": {"devices": [{"scheduler": {"kind": "edf", "deadline": [10]}}]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"}]}"#;
    let mut r = reqs(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0]);
    r.deadline = vec![f64::INFINITY, 5.0, 1.0];
    let mut sim = build(config, vec![r.clone()]);
    sim.run(f64::INFINITY);
    assert!(close(&sim.records().exit, &[1.0, 3.0, 2.0]), "{:?}", sim.records().exit);
    // without the per-request deadlines: arrival order
    r.deadline.clear();
    let mut sim = build(config, vec![r.clone()]);
    sim.run(f64::INFINITY);
    assert!(close(&sim.records().exit, &[1.0, 2.0, 3.0]));
    // a request's class must be one of the classes of every DWRR queue on its route
    let dwrr = r#"{"topology": {"devices": [{"scheduler": {"kind": "dwrr", "class": [0],
        "weight": [1, 3], "quantum": 0.5}}]},
        "workloads": [{"route": [{"device": 0}], "issue": "open"}]}"#;
    r.class = vec![crate::sched::NO_CLASS, 1, 2];
    let c = SimConfig::from_json(dwrr).unwrap();
    let e = Simulation::new(&c.topology, c.workloads, vec![r.clone()]).err().unwrap();
    assert!(e.to_string().contains("request 2 has class 2"), "{e}");
    assert!(e.to_string().contains("classes 0..2"), "{e}");
    r.class = vec![1, 1];
    let c = SimConfig::from_json(dwrr).unwrap();
    assert!(Simulation::new(&c.topology, c.workloads, vec![r.clone()]).is_err());
    r.deadline = vec![-1.0, 0.0, 0.0];
    r.class.clear();
    let c = SimConfig::from_json(dwrr).unwrap();
    let e = Simulation::new(&c.topology, c.workloads, vec![r]).err().unwrap();
    assert!(e.to_string().contains("request 0: a deadline"), "{e}");
}

#[test]
fn sim_wfq_device_serves_by_virtual_finish_tag() {
    // A: four requests of 0.5 s, B: one of 1 s, all at time 0, one device (MPL 1) with WFQ;
    // A's first request goes in at once (nothing else is queued yet)
    let config = |wa: f64, wb: f64| {
        format!(
            r#"{{"topology": {{"devices": [{{"scheduler": {{"kind": "wfq", "class": [0, 1],
            "weight": [{wa}, {wb}]}}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}},
                          {{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        )
    };
    let run = |wa: f64, wb: f64| {
        let a = reqs(&[0.0; 4], &[0.5; 4]);
        let b = reqs(&[0.0], &[1.0]);
        let mut sim = build(&config(wa, wb), vec![a, b]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    // weights 3:1 (Σ 4): A's tags 2/3, 4/3, 2, 8/3, B's 4: B last, at 3 s
    assert!(close(&run(3.0, 1.0), &[0.5, 1.0, 1.5, 2.0, 3.0]), "{:?}", run(3.0, 1.0));
    // weights 1:3: A's tags 2, 4, 6, 8, B's 4/3: B right after A's first, A's rest after it
    assert!(close(&run(1.0, 3.0), &[0.5, 2.0, 2.5, 3.0, 1.5]), "{:?}", run(1.0, 3.0));
}

#[test]
fn sim_nested_qos_lets_a_steady_request_overtake_a_burst_outside_its_inner_class() {
    // one device (MPL 1), unit-work requests. A: classes (1, 0.1, 1.5 s), (2, 0.2, 20 s); four
    // requests at 0: A1 class 1 (due 1.5, in service at once), A2 class 2 (due 20; B_2 now
    // empty), A3 and A4 best effort. B: class (1, 0.1, 3 s); one request at 0.5, due 3.5.
    // At 1 s EDF takes B (3.5) before A2 (20), then A3, A4 (best effort, arrival order).
    let nested = r#"{"kind": "nested", "classes": [[[1, 0.1, 1.5], [2, 0.2, 20]], [[1, 0.1, 3]]]}"#;
    // EDF with A's innermost deadline for every request serves A's whole burst first
    let edf = r#"{"kind": "edf", "deadline": [1.5, 3]}"#;
    let run = |scheduler: &str| {
        let config = format!(
            r#"{{"topology": {{"devices": [{{"scheduler": {scheduler}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}},
                          {{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        );
        let mut sim = build(&config, vec![reqs(&[0.0; 4], &[1.0; 4]), reqs(&[0.5], &[1.0])]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    assert!(close(&run(nested), &[1.0, 3.0, 4.0, 5.0, 2.0]), "{:?}", run(nested));
    assert!(close(&run(edf), &[1.0, 2.0, 3.0, 4.0, 5.0]), "{:?}", run(edf));
}

#[test]
fn sim_pclock_pushes_a_burst_behind_its_curve_and_synchronises_on_an_arrival() {
    // one device (MPL 1), unit-work requests. A: curve (ρ 0.25, σ 1), δ 1 s; three requests at
    // 0: A1 conforms (S 0, in service at once), A2 and A3 conform at 4 and 8 (S pushed, F 5 and
    // 9). B: no curve, δ 2 s; one request at 0.5. On B's arrival A's oldest start tag (4) is after
    // 0.5: A's tags move back 3.5 (A2 F 1.5, A3 F 5.5); B gets F 2.5. At 1 s: A2, then B, then A3.
    let pclock = r#"{"kind": "pclock", "buckets": [[[0.25, 1]], []], "deadline": [1, 2]}"#;
    // EDF on arrival + δ serves A's burst first (A2, A3 due 1, B due 2.5)
    let edf = r#"{"kind": "edf", "deadline": [1, 2]}"#;
    let run = |scheduler: &str| {
        let config = format!(
            r#"{{"topology": {{"devices": [{{"scheduler": {scheduler}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}},
                          {{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        );
        let mut sim = build(&config, vec![reqs(&[0.0; 3], &[1.0; 3]), reqs(&[0.5], &[1.0])]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    assert!(close(&run(pclock), &[1.0, 2.0, 4.0, 3.0]), "{:?}", run(pclock));
    assert!(close(&run(edf), &[1.0, 2.0, 3.0, 4.0]), "{:?}", run(edf));
}

#[test]
fn sim_wf2q_serves_a_light_session_before_heavy_heads_that_are_not_eligible() {
    // one device (MPL 1), unit-work requests; A weight 3, B weight 1 (Σ 4). Issue order at 0:
    // A1, B1, A2, A3, A4. A1 goes into service at once (S 0, F 4/3; V = 1 after it). B1 arrives
    // to an empty system: S = max(0, V 1) = 1, F = 5. A2: S = max(F_prev 4/3, V 1) = 4/3,
    // F = 8/3 (A3, A4 queue behind it). At 1 s V = max(1, min S 1) = 1 and only B1 is eligible
    // (A2's 4/3 > 1): B1 goes although A2's finish tag is smaller; then A2, A3, A4 (V = 2, 3, 4
    // ≥ their S 4/3, 8/3, 4).
    let run = |scheduler: &str| {
        let config = format!(
            r#"{{"topology": {{"devices": [{{"scheduler": {scheduler}}}]}},
            "workloads": [{{"route": [{{"device": 0}}], "issue": "open"}},
                          {{"route": [{{"device": 0}}], "issue": "open"}}]}}"#
        );
        let mut sim = build(&config, vec![reqs(&[0.0; 4], &[1.0; 4]), reqs(&[0.0], &[1.0])]);
        sim.run(f64::INFINITY);
        sim.records().exit.clone()
    };
    let wf2q = r#"{"kind": "wf2q", "weight": [3, 1]}"#;
    assert!(close(&run(wf2q), &[1.0, 3.0, 4.0, 5.0, 2.0]), "{:?}", run(wf2q));
    // the smallest finish tag alone (wfq's virtual clock: A's tags 8/3, 4, 16/3 after A1, B's 4,
    // older than A3's) serves A2 first and B1 only at 2 s
    let wfq = r#"{"kind": "wfq", "class": [0, 1], "weight": [3, 1]}"#;
    assert!(close(&run(wfq), &[1.0, 2.0, 4.0, 5.0, 3.0]), "{:?}", run(wfq));
}

/// One device (MPL `mpl`, FIFO) with a PSLO controller `control` (JSON) and `n` workloads.
fn controlled(mpl: u32, control: &str, n: usize) -> String {
    let workloads = vec![r#"{"route": [{"device": 0}], "issue": "open"}"#; n].join(", ");
    format!(
        r#"{{"topology": {{"devices": [{{"read_mpl": {mpl}, "control": {control}}}]}},
        "workloads": [{workloads}]}}"#
    )
}

#[test]
fn sim_pslo_rate_follows_eq9_after_n_completions_and_paced_requests_wake_the_device() {
    use crate::sched::dispatch::TenantLimits;
    // policy T, one throughput-only tenant: 100 IOPS, N = 10. Ten requests 20 ms apart, then
    // ten 2 ms apart; 1 ms of work each at an MPL-1 device.
    let control = r#"{"kind": "pslo", "policy": "T", "interval_completions": 10,
        "tenants": [{"workload": 0, "throughput_iops": 100}]}"#;
    let mut arrival: Vec<f64> = (0..10).map(|i| 0.02 * f64::from(i)).collect();
    arrival.extend((0..10).map(|j| 0.2 + 0.002 * f64::from(j)));
    let mut sim = build(&controlled(1, control, 1), vec![reqs(&arrival, &[0.001; 20])]);
    let limits = |sim: &Simulation| sim.tenant_limits(0, 0).unwrap();
    // R(1) = the SLO, applied before any request (no depth under T)
    assert_eq!(limits(&sim), TenantLimits { rate: Some(100.0), depth: None });
    // interval 1: the 10 ms pacing never holds a request 20 ms apart; the 10th completes at
    // 0.181, so Th = 10 / 0.181 and Eq. 9 gives R(2) = max(100 / Th · 100, 100) = 181
    sim.run(0.1805);
    assert_eq!(limits(&sim).rate, Some(100.0));
    sim.run(0.19);
    let r2 = limits(&sim).rate.unwrap();
    assert!((r2 - 181.0).abs() < 1e-9, "{r2}");
    // interval 2: request 10 + j passes its gate at 0.2 + j / R(2) (later than its arrival
    // 0.2 + 0.002 j): nothing else happens then, so the gate's wake-up must start it
    sim.run(f64::INFINITY);
    let exit = &sim.records().exit;
    for j in 0..10 {
        let expected = 0.2 + f64::from(j) / r2 + 0.001;
        assert!((exit[10 + j as usize] - expected).abs() < 1e-12, "{j}: {}", exit[10 + j as usize]);
    }
    // the interval ran from 0.181 to the 20th completion: Th = 10 / L2 > 100, so Eq. 9 cuts the
    // rate to 100 / Th · R(2) = 10 · L2 · 181
    let l2 = exit[19] - 0.181;
    let r3 = limits(&sim).rate.unwrap();
    assert!((r3 - 10.0 * l2 * 181.0).abs() < 1e-9 && r3 < r2, "{r3}");
    // the log: the initial limits at 0, then one change per decision
    let log = sim.control_log(0).unwrap();
    let times: Vec<f64> = log.iter().map(|c| c.time).collect();
    assert_eq!(times, vec![0.0, 0.181, exit[19]]);
    assert_eq!(log[2].limits.rate, Some(r3));
}

#[test]
fn sim_pslo_l_holds_each_tenant_to_depth_one_from_the_start() {
    // policy L: depth 1 for a tenant with a latency SLO, from time 0 on, at an MPL-4 device
    // (processor sharing): its four simultaneous requests run one after the other, while an
    // uncontrolled tenant's four share the device as before.
    let control = r#"{"kind": "pslo", "policy": "L", "tenants": [
        {"workload": 0, "latency_s": 0.5, "percentile": 0.99, "throughput_iops": 1}]}"#;
    let mut sim = build(&controlled(4, control, 1), vec![reqs(&[0.0; 4], &[1.0; 4])]);
    sim.run(f64::INFINITY);
    assert_eq!(sim.records().exit, vec![1.0, 2.0, 3.0, 4.0]);
    let control = r#"{"kind": "pslo", "policy": "L", "tenants": [
        {"workload": 1, "latency_s": 0.5, "percentile": 0.99, "throughput_iops": 1}]}"#;
    let mut sim =
        build(&controlled(4, control, 2), vec![reqs(&[0.0; 4], &[1.0; 4]), reqs(&[10.0], &[1.0])]);
    sim.run(f64::INFINITY);
    assert_eq!(sim.records().exit, vec![4.0, 4.0, 4.0, 4.0, 11.0]);
}

#[test]
fn sim_pslo_lst_explores_the_target_by_eqs_10_to_13() {
    // LS+T, one tenant: 1 s at 90% (never violated), 100 IOPS, N = 10; a request every 5 ms
    // (200 IOPS offered), 1 ms of work at an MPL-1 device.
    let control = r#"{"kind": "pslo", "policy": "LS+T", "interval_completions": 10,
        "tenants": [{"workload": 0, "latency_s": 1.0, "percentile": 0.9, "throughput_iops": 100}]}"#;
    let arrival: Vec<f64> = (0..30).map(|i| 0.005 * f64::from(i)).collect();
    let mut sim = build(&controlled(1, control, 1), vec![reqs(&arrival, &[0.001; 30])]);
    sim.run(f64::INFINITY);
    let exit = sim.records().exit.clone();
    let rates: Vec<(f64, f64)> =
        sim.control_log(0).unwrap().iter().map(|c| (c.time, c.limits.rate.unwrap())).collect();
    // interval 1: paced at R(1) = 100, request q passes at 0.01 q; the 10th completes at 0.091:
    // Th = 10 / 0.091 ≥ Th^G(1) = 100, so every tenant reached its target; no violation, so
    // e = G = 0.1 · 10 and A = σ e / G = 0.1: Th^G(2) = 1.1 · 100 (Eq. 12). Eq. 13 with the
    // interval's target: R(2) = max(100 / Th · 100, 100) = 100.
    assert_eq!(rates[1].0, 0.091);
    assert!((rates[1].1 - 100.0).abs() < 1e-9, "{rates:?}");
    // interval 2: paced at 100 again, 10 completions in 0.1 s: Th = 100 < Th^G(2) = 110, so
    // R(3) = max(110 / 100 · 100, 110) = 110 (and the target decays, Eq. 12's else branch)
    assert!((rates[2].0 - exit[19]).abs() < 1e-15 && (exit[19] - 0.191).abs() < 1e-12);
    assert!((rates[2].1 - 110.0).abs() < 1e-9, "{rates:?}");
    // no forecast (equal service times): no depth ever
    assert!(sim.control_log(0).unwrap().iter().all(|c| c.limits.depth.is_none()));
}

#[test]
fn sim_pslo_forecast_enables_the_depth_for_tau_then_lifts_it() {
    // LS+T, one tenant, N large (no interval ends): a request every 2 ms, 1 ms of work, except
    // request 10 (arriving at 0.020) with 5 ms at an MPL-1 device. Its service time is 5 times
    // the window's mean (≥ H = 2): at its completion, 0.025, the depth controllers are enabled
    // (D(1) = 1) until 0.025 + τ = 0.0755; the first completion after that (request 38 at
    // 0.077) lifts them.
    let control = r#"{"kind": "pslo", "policy": "LS+T", "enable_s": 0.0505, "tenants": [
        {"workload": 0, "latency_s": 1.0, "percentile": 0.99, "throughput_iops": 1000}]}"#;
    let arrival: Vec<f64> = (0..60).map(|i| 0.002 * f64::from(i)).collect();
    let mut work = vec![0.001; 60];
    work[10] = 0.005;
    let mut sim = build(&controlled(1, control, 1), vec![reqs(&arrival, &work)]);
    sim.run(f64::INFINITY);
    let log: Vec<(f64, Option<u32>)> =
        sim.control_log(0).unwrap().iter().map(|c| (c.time, c.limits.depth)).collect();
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[0], (0.0, None));
    assert!((log[1].0 - 0.025).abs() < 1e-12 && log[1].1 == Some(1), "{log:?}");
    assert!((log[2].0 - 0.077).abs() < 1e-12 && log[2].1.is_none(), "{log:?}");
}

#[test]
fn sim_pslo_refuses_bad_configurations_naming_the_field() {
    let tenant = r#"{"workload": 0, "latency_s": 0.1, "percentile": 0.99, "throughput_iops": 10}"#;
    let cases = [
        (r#""policy": "LS+X""#.to_string(), tenant.to_string(), "devices[0].control.policy"),
        (
            r#""policy": "LS+T""#.into(),
            tenant.replace("0.99", "1.0"),
            "devices[0].control.tenants[0].percentile",
        ),
        (
            r#""policy": "LS+T""#.into(),
            tenant.replace("\"workload\": 0", "\"workload\": 3"),
            "devices[0].control.tenants[0].workload",
        ),
        (
            r#""policy": "T", "interval_completions": 0"#.into(),
            tenant.into(),
            "devices[0].control.interval_completions",
        ),
        (
            r#""policy": "T", "threshold": 1.0"#.into(),
            tenant.into(),
            "devices[0].control.threshold",
        ),
    ];
    for (head, tenant, expected) in cases {
        let control = format!(r#"{{"kind": "pslo", {head}, "tenants": [{tenant}]}}"#);
        match try_build(&controlled(1, &control, 1), vec![reqs(&[0.0], &[1.0])]) {
            Err(crate::Error::Field { field, .. }) => assert_eq!(field, expected),
            Err(e) => panic!("{expected}: {e}"),
            Ok(_) => panic!("{expected}: accepted"),
        }
    }
}
