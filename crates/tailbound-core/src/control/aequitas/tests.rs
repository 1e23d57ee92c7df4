//! Hand-computed sequences of Algorithm 1 (`docs/aequitas.md`).

use super::rnl::{size_in_mtus, ARTIFACT_MSS_BYTES};
use super::*;

/// One class with a target of 1 s per MTU at the 50th percentile: increment window
/// `1 / (1 − 0.5) = 2 s` exactly, so the strict `>` of the window is tested on exact numbers.
fn unit_config() -> Config {
    let mut c = Config::new(vec![1.0]);
    c.target_percentile = vec![0.5];
    c
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn defaults_are_the_papers() {
    let c = Config::new(vec![15e-6, 25e-6]);
    assert_eq!((c.alpha, c.beta, c.floor), (0.01, 0.01, 0.1));
    assert_eq!(c.target_percentile, vec![0.999, 0.999]);
    assert!(c.per_mtu);
    assert_eq!(c.rules, Rules::Paper);
    assert_eq!((c.classes(), c.lowest()), (3, 2));
    // increment_window = target · 100 / (100 − 99.9) = 1000 × target: 15 ms and 25 ms.
    assert!((c.window_s(0) - 15e-3).abs() < 1e-12);
    assert!((c.window_s(1) - 25e-3).abs() < 1e-12);
    c.validate().unwrap();
}

#[test]
fn aimd_sequence_by_hand() {
    let mut a = Admission::new(unit_config(), 0.0).unwrap();
    let step = |a: &mut Admission, latency: f64, size: f64, now: f64| {
        let o = a.complete(0, 1, 0, latency, size, now).unwrap();
        (o, a.p_admit(0, 1, 0))
    };
    // A 7-MTU RPC taking 14 s: 2 s per MTU ≥ 1, a miss: p = 1 − 0.01·7.
    let (o, p) = step(&mut a, 14.0, 7.0, 1.0);
    assert_eq!(o, Outcome::Decreased);
    assert!(close(p, 0.93));
    // A second miss of 3 MTUs: 0.93 − 0.03.
    let (o, p) = step(&mut a, 6.0, 3.0, 1.5);
    assert_eq!(o, Outcome::Decreased);
    assert!(close(p, 0.90));
    // Met (0.5 s per MTU) at t = 2: 2 − 0 = 2 is not > 2, held.
    assert_eq!(step(&mut a, 1.0, 2.0, 2.0).0, Outcome::Held);
    // Met at t = 2.5: 2.5 > 2, +α; the window restarts at 2.5.
    let (o, p) = step(&mut a, 1.0, 2.0, 2.5);
    assert_eq!(o, Outcome::Increased);
    assert!(close(p, 0.91));
    // Met at 3.0 and 4.5 (2.0 after the restart, not > 2): held.
    assert_eq!(step(&mut a, 0.1, 1.0, 3.0).0, Outcome::Held);
    assert_eq!(step(&mut a, 0.1, 1.0, 4.5).0, Outcome::Held);
    // A miss in between does not restart the window under the paper's rules ...
    let (o, p) = step(&mut a, 1.0, 1.0, 4.6);
    assert_eq!(o, Outcome::Decreased); // 1 per MTU is not < 1
    assert!(close(p, 0.90));
    // ... so a met RPC at 4.75 (> 2.5 + 2) increases.
    let (o, p) = step(&mut a, 0.1, 1.0, 4.75);
    assert_eq!(o, Outcome::Increased);
    assert!(close(p, 0.91));
}

#[test]
fn increase_is_capped_at_one_and_still_restarts_the_window() {
    let mut a = Admission::new(unit_config(), 0.0).unwrap();
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 3.0).unwrap(), Outcome::Increased);
    assert_eq!(a.p_admit(0, 1, 0), 1.0);
    // The window restarted at 3: a miss at 3.5 then a met RPC at 4.5 is held.
    a.complete(0, 1, 0, 5.0, 1.0, 3.5).unwrap();
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 4.5).unwrap(), Outcome::Held);
    assert!(close(a.p_admit(0, 1, 0), 0.99));
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 5.01).unwrap(), Outcome::Increased);
    assert!(close(a.p_admit(0, 1, 0), 1.0) && a.p_admit(0, 1, 0) <= 1.0);
}

#[test]
fn decrease_stops_at_the_floor() {
    let mut a = Admission::new(unit_config(), 0.0).unwrap();
    // 1 − 0.01 · 50 = 0.5, then 0.5 − 0.5 = 0 floored at 0.1, and it stays there.
    a.complete(0, 1, 0, 100.0, 50.0, 1.0).unwrap();
    assert!(close(a.p_admit(0, 1, 0), 0.5));
    a.complete(0, 1, 0, 100.0, 50.0, 1.1).unwrap();
    assert_eq!(a.p_admit(0, 1, 0), 0.1);
    a.complete(0, 1, 0, 2.0, 1.0, 1.2).unwrap();
    assert_eq!(a.p_admit(0, 1, 0), 0.1);
    let mut c = unit_config();
    c.floor = 0.25;
    let mut a = Admission::new(c, 0.0).unwrap();
    a.complete(0, 1, 0, 100.0, 100.0, 1.0).unwrap();
    assert_eq!(a.p_admit(0, 1, 0), 0.25);
}

#[test]
fn downgrade_decisions_for_given_draws() {
    let mut a = Admission::new(Config::new(vec![1.0, 2.0]), 0.0).unwrap(); // classes 0, 1, 2
    a.complete(3, 4, 0, 70.0, 7.0, 1.0).unwrap(); // p_admit[0] = 0.93 on (3, 4)
    assert!(close(a.p_admit(3, 4, 0), 0.93));
    let p = a.p_admit(3, 4, 0);
    let run = |a: &mut Admission, class, u| {
        let r = a.admit(3, 4, class, u).unwrap();
        (r.class_run, r.downgraded)
    };
    assert_eq!(run(&mut a, 0, 0.0), (0, false));
    assert_eq!(run(&mut a, 0, p), (0, false)); // u ≤ p_admit admits, equality included
    assert_eq!(run(&mut a, 0, 0.5), (0, false));
    assert_eq!(run(&mut a, 0, 0.94), (2, true)); // to the lowest class, not to class 1
    assert_eq!(run(&mut a, 0, 0.999_999), (2, true));
    assert_eq!(run(&mut a, 1, 0.999_999), (1, false)); // class 1's p_admit is still 1
                                                       // Other channels are untouched, in both directions.
    assert_eq!(a.admit(4, 3, 0, 0.999).unwrap().class_run, 0);
    assert_eq!(a.admit(3, 5, 0, 0.999).unwrap().class_run, 0);
    assert_eq!(a.p_admit(4, 3, 0), 1.0);
}

#[test]
fn the_lowest_class_is_never_downgraded_nor_controlled() {
    let mut a = Admission::new(unit_config(), 0.0).unwrap(); // classes 0 and 1 (lowest)
    for _ in 0..20 {
        a.complete(0, 1, 0, 100.0, 10.0, 1.0).unwrap();
    }
    assert_eq!(a.p_admit(0, 1, 0), 0.1);
    let r = a.admit(0, 1, 1, 0.999_999).unwrap();
    assert_eq!((r.class_run, r.downgraded), (1, false));
    // Completions at the lowest class change nothing, and create no channel.
    assert_eq!(a.complete(0, 1, 1, 1e9, 1.0, 2.0).unwrap(), Outcome::Uncontrolled);
    assert_eq!(a.complete(5, 6, 1, 1e9, 1.0, 2.0).unwrap(), Outcome::Uncontrolled);
    assert_eq!(a.p_admit(0, 1, 0), 0.1);
    assert_eq!(a.p_admit(0, 1, 1), 1.0);
    assert_eq!(a.channels(), 1);
}

#[test]
fn classes_of_one_channel_are_independent() {
    let mut a = Admission::new(Config::new(vec![1.0, 2.0]), 0.0).unwrap();
    // 1.5 s per MTU misses class 0's target (1) and meets class 1's (2).
    assert_eq!(a.complete(0, 1, 0, 1.5, 1.0, 1.0).unwrap(), Outcome::Decreased);
    assert_eq!(a.complete(0, 1, 1, 1.5, 1.0, 1.0).unwrap(), Outcome::Held); // window 2000 s
    assert!(close(a.p_admit(0, 1, 0), 0.99));
    assert_eq!(a.p_admit(0, 1, 1), 1.0);
}

#[test]
fn artifact_rules_meet_on_a_tie_and_restart_the_window_on_a_miss() {
    let mut c = unit_config();
    c.rules = Rules::Artifact;
    let mut art = Admission::new(c, 0.0).unwrap();
    let mut pap = Admission::new(unit_config(), 0.0).unwrap();
    // Exactly on target (1 s per MTU): a miss for the paper, met (and held) for the artifact.
    assert_eq!(pap.complete(0, 1, 0, 3.0, 3.0, 1.0).unwrap(), Outcome::Decreased);
    assert_eq!(art.complete(0, 1, 0, 3.0, 3.0, 1.0).unwrap(), Outcome::Held);
    // A miss at 3: both decrease, the artifact restarts its window at 3.
    assert_eq!(pap.complete(0, 1, 0, 9.0, 3.0, 3.0).unwrap(), Outcome::Decreased);
    assert_eq!(art.complete(0, 1, 0, 9.0, 3.0, 3.0).unwrap(), Outcome::Decreased);
    assert!(close(pap.p_admit(0, 1, 0), 0.94));
    assert!(close(art.p_admit(0, 1, 0), 0.97));
    // Met at 4: the paper's window started at 0 (4 > 2), the artifact's at 3 (1 ≤ 2).
    assert_eq!(pap.complete(0, 1, 0, 0.0, 1.0, 4.0).unwrap(), Outcome::Increased);
    assert_eq!(art.complete(0, 1, 0, 0.0, 1.0, 4.0).unwrap(), Outcome::Held);
    assert_eq!(art.complete(0, 1, 0, 0.0, 1.0, 5.5).unwrap(), Outcome::Increased);
    assert!(close(art.p_admit(0, 1, 0), 0.98));
}

#[test]
fn whole_rpc_targets_as_the_authors_configurations() {
    // `hardcoded_targets: 14,25` with `normalized_lat: 0`: 14 µs for the whole 32 KiB RPC
    // (7 MTUs of 5080 B payload); a miss still costs β · size = 0.07.
    let mut c = Config::new(vec![14e-6, 25e-6]);
    c.per_mtu = false;
    c.rules = Rules::Artifact;
    let size = size_in_mtus(32768.0, ARTIFACT_MSS_BYTES).unwrap();
    let mut a = Admission::new(c, 0.0).unwrap();
    assert_eq!(a.complete(0, 1, 0, 14e-6, size, 1e-3).unwrap(), Outcome::Held); // ≤ 14 µs
    assert_eq!(a.complete(0, 1, 0, 15e-6, size, 2e-3).unwrap(), Outcome::Decreased);
    assert!(close(a.p_admit(0, 1, 0), 0.93));
    // Per MTU instead, 15 µs / 7 ≈ 2.1 µs meets a 14 µs target.
    let mut a = Admission::new(Config::new(vec![14e-6, 25e-6]), 0.0).unwrap();
    assert_eq!(a.complete(0, 1, 0, 15e-6, size, 2e-3).unwrap(), Outcome::Held);
}

#[test]
fn explicit_increment_windows_replace_the_derived_ones() {
    let mut c = unit_config();
    c.increment_window_s = Some(vec![0.0]);
    let mut a = Admission::new(c, 0.0).unwrap();
    a.complete(0, 1, 0, 9.0, 3.0, 1.0).unwrap(); // 0.97
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 1.5).unwrap(), Outcome::Increased);
    // A window of 0 still needs time to pass (strict >): a second met RPC at 1.5 is held.
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 1.5).unwrap(), Outcome::Held);
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 1.6).unwrap(), Outcome::Increased);
    assert!(close(a.p_admit(0, 1, 0), 0.99));
}

#[test]
fn the_window_starts_at_the_controllers_start() {
    let mut a = Admission::new(unit_config(), 10.0).unwrap();
    a.complete(0, 1, 0, 2.0, 1.0, 10.5).unwrap(); // 0.99
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 12.0).unwrap(), Outcome::Held);
    assert_eq!(a.complete(0, 1, 0, 0.0, 1.0, 12.5).unwrap(), Outcome::Increased);
}

#[test]
fn a_long_run_is_deterministic_and_stays_in_bounds() {
    // A channel whose RPCs miss whenever more than half are admitted: p_admit hovers near 0.5,
    // never below the floor nor above 1, and the same draws give the same run.
    let run = || {
        let mut a = Admission::new(Config::new(vec![1e-6]), 0.0).unwrap();
        let mut x: u64 = 12345;
        let mut trace = Vec::new();
        for i in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let now = f64::from(i) * 1e-6;
            let r = a.admit(0, 1, 0, u).unwrap();
            if !r.downgraded {
                let latency = if a.p_admit(0, 1, 0) > 0.5 { 2e-6 } else { 0.5e-6 };
                a.complete(0, 1, 0, latency, 1.0, now).unwrap();
            }
            let p = a.p_admit(0, 1, 0);
            assert!((0.1..=1.0).contains(&p));
            trace.push(p);
        }
        trace
    };
    let (t1, t2) = (run(), run());
    assert_eq!(t1, t2);
    let tail = &t1[10_000..];
    assert!(tail.iter().all(|&p| (0.45..=0.52).contains(&p)), "{:?}", &tail[..10]);
}

#[test]
fn bad_configurations_name_the_field() {
    let field = |c: Config| match c.validate() {
        Err(Error::Field { field, .. }) => field,
        other => panic!("expected a field error, got {other:?}"),
    };
    assert_eq!(field(Config::new(vec![])), "latency_target_s");
    assert_eq!(field(Config::new(vec![1e-6, 0.0])), "latency_target_s[1]");
    assert_eq!(field(Config::new(vec![f64::NAN])), "latency_target_s[0]");
    let mut c = Config::new(vec![1e-6, 2e-6]);
    c.target_percentile = vec![0.999];
    assert_eq!(field(c.clone()), "target_percentile");
    c.target_percentile = vec![0.999, 1.0];
    assert_eq!(field(c), "target_percentile[1]");
    let mut c = Config::new(vec![1e-6]);
    c.increment_window_s = Some(vec![1.0, 2.0]);
    assert_eq!(field(c.clone()), "increment_window_s");
    c.increment_window_s = Some(vec![-1.0]);
    assert_eq!(field(c), "increment_window_s[0]");
    for (name, set) in [
        ("alpha", (|c: &mut Config| c.alpha = 0.0) as fn(&mut Config)),
        ("alpha", |c| c.alpha = 1.5),
        ("beta", |c| c.beta = 0.0),
        ("beta", |c| c.beta = f64::INFINITY),
        ("floor", |c| c.floor = 0.0),
        ("floor", |c| c.floor = 1.1),
    ] {
        let mut c = Config::new(vec![1e-6]);
        set(&mut c);
        assert_eq!(field(c.clone()), name);
        assert!(Admission::new(c, 0.0).is_err());
    }
    assert_eq!("artifact".parse::<Rules>().unwrap(), Rules::Artifact);
    assert!(
        matches!("swift".parse::<Rules>(), Err(Error::Field { field, .. }) if field == "rules")
    );
}

#[test]
fn bad_calls_are_refused() {
    let mut a = Admission::new(unit_config(), 0.0).unwrap();
    assert!(a.admit(0, 1, 2, 0.5).is_err()); // classes are 0 and 1
    assert!(a.admit(0, 1, 0, 1.0).is_err());
    assert!(a.admit(0, 1, 0, -0.1).is_err());
    assert!(a.admit(0, 1, 0, f64::NAN).is_err());
    assert!(a.complete(0, 1, 2, 1.0, 1.0, 1.0).is_err());
    assert!(a.complete(0, 1, 0, -1.0, 1.0, 1.0).is_err());
    assert!(a.complete(0, 1, 0, 1.0, 0.0, 1.0).is_err());
    assert!(a.complete(0, 1, 0, 1.0, 1.0, f64::NAN).is_err());
    assert!(Admission::new(unit_config(), f64::INFINITY).is_err());
    assert_eq!(a.channels(), 0);
}

#[test]
fn two_channels_converge_to_equal_admitted_rates() {
    // The fairness argument of §5.2 on a bottleneck reduced to a rule: every step (1 µs)
    // channel A issues with probability 0.2 and B with 0.5, and an admitted RPC misses when
    // more than 20 RPCs were admitted over the last 100 steps (capacity 0.2 a step). In
    // equilibrium each channel gains α once a window W and loses β per miss, so each sees about
    // α / (β W) = 1000 misses a second whatever its rate, and their admitted rates come close
    // although B offers 2.5 times A's (B, nearer its floor and quicker to find a met RPC once
    // a window has passed, keeps a little more: 0.74–0.84 of it over seeds 1, 2, 3, 7, 99).
    let mut a = Admission::new(Config::new(vec![1e-6]), 0.0).unwrap();
    let mut x: u64 = 99;
    let mut draw = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut recent = std::collections::VecDeque::new();
    let (mut in_window, steps) = (0usize, 400_000);
    let (mut admitted, mut missed) = ([0usize; 2], [0usize; 2]);
    for i in 0..steps {
        let now = f64::from(i) * 1e-6;
        let mut here = 0;
        for (ch, rate) in [(0u32, 0.2), (1u32, 0.5)] {
            if draw() >= rate {
                continue;
            }
            let r = a.admit(ch, 9, 0, draw()).unwrap();
            if r.downgraded {
                continue;
            }
            here += 1;
            let latency = if in_window + here > 20 { 2e-6 } else { 0.5e-6 };
            if i >= steps / 2 {
                admitted[ch as usize] += 1;
                missed[ch as usize] += usize::from(latency > 1e-6);
            }
            a.complete(ch, 9, 0, latency, 1.0, now).unwrap();
        }
        recent.push_back(here);
        in_window += here;
        if recent.len() > 100 {
            in_window -= recent.pop_front().unwrap();
        }
    }
    let rate = admitted.map(|n| n as f64 / (steps / 2) as f64);
    // 0.2 s measured: 200 misses a channel predicted.
    assert!(missed.iter().all(|&m| (160..=260).contains(&m)), "misses {missed:?}");
    assert!(rate[0] / rate[1] >= 0.7, "admitted rates {rate:?} (offered 0.2 and 0.5)");
    assert!(rate[0] + rate[1] <= 0.2, "admitted rates {rate:?} above the capacity");
}
