//! PSLO's rules on hand-computed sequences: each test names the equation it pins.

use super::*;

fn slo(percentile: f64, iops: f64) -> TenantSlo {
    TenantSlo { latency: Some(LatencySlo { latency_s: 0.1, percentile }), throughput_iops: iops }
}

/// The paper's file copy: a throughput SLO only.
fn copy(iops: f64) -> TenantSlo {
    TenantSlo { latency: None, throughput_iops: iops }
}

fn controller(
    policy: Policy,
    tenants: Vec<TenantSlo>,
    n: u32,
    f: impl Fn(&mut Config),
) -> Controller {
    let mut cfg = Config { interval_completions: n, ..Config::new(policy, tenants) };
    f(&mut cfg);
    Controller::new(cfg, 0.0).unwrap()
}

/// One decision interval from `start` to `start + length`: tenant `k` completes `counts[k].0`
/// requests, the first `counts[k].1` of them with latency 0.2 s (> the 0.1 s SLO), the others
/// 0.05 s; completions interleaved, evenly spaced, the last exactly at `start + length` (so
/// `Th_k = count / length`). Service time 1 ms, except the deciding completion's (`spike`).
/// Returns the decisions made, in order.
fn interval(
    c: &mut Controller,
    counts: &[(u32, u32)],
    start: f64,
    length: f64,
    spike: f64,
) -> Vec<Decision> {
    let mut seq = Vec::new();
    let most = counts.iter().map(|&(n, _)| n).max().unwrap();
    for i in 0..most {
        for (k, &(n, bad)) in counts.iter().enumerate() {
            if i < n {
                seq.push((k, if i < bad { 0.2 } else { 0.05 }));
            }
        }
    }
    let total = seq.len();
    let mut out = Vec::new();
    for (i, &(k, latency)) in seq.iter().enumerate() {
        let now = if i + 1 == total {
            start + length
        } else {
            start + length * (i + 1) as f64 / total as f64
        };
        let st = if i + 1 == total { spike } else { 0.001 };
        out.extend(c.on_completion(k, latency, st, now));
    }
    assert!(matches!(out.last().map(|d| d.reason), Some(Reason::Interval(_))), "{out:?}");
    out
}

fn last_limits(d: &[Decision]) -> Vec<(Option<f64>, Option<u32>)> {
    d.last().unwrap().limits.iter().map(|l| (l.rate, l.depth)).collect()
}

#[test]
fn budget_is_eq4_worked_example() {
    // §3.4.1: at the 99.9th percentile, 1000 completions allow 1 violation; Eq. 4 sums it
    let mut c = controller(Policy::LsT, vec![slo(0.999, 150.0)], 1000, |_| {});
    let mut decisions = 0;
    for i in 1..=5000u32 {
        decisions += usize::from(c.on_completion(0, 0.01, 0.001, f64::from(i) * 0.001).is_some());
        if i % 1000 == 0 {
            assert!((c.budget(0) - f64::from(i / 1000)).abs() < 1e-9, "G = {}", c.budget(0));
        }
    }
    assert_eq!(decisions, 5);
}

#[test]
fn slack_is_eq6_and_normalised_slack_eq7() {
    let mut c = controller(Policy::LsU, vec![slo(0.9, 1.0)], 10, |f| f.raise_at = 1.0);
    // 10 completions, 1 above the SLO: G = 1, M = 1, e = 0, E = 0 (not >= U: depth stays 1)
    interval(&mut c, &[(10, 1)], 0.0, 1.0, 0.001);
    // a latency equal to the SLO is no violation
    assert_eq!(c.on_completion(0, 0.1, 0.001, 1.05), None);
    assert_eq!((c.budget(0) * 10.0).round(), 11.0);
    assert_eq!(c.state(0).violations, 1);
    let mut c = controller(Policy::LsU, vec![slo(0.9, 1.0)], 10, |f| f.raise_at = 1.0);
    interval(&mut c, &[(10, 1)], 0.0, 1.0, 0.001);
    assert!(c.slack(0).abs() < 1e-12);
    assert_eq!(c.state(0).depth, 1);
    // 10 more without: G = 2, e = 1, E = 1 / D(2) = 1 >= U: D = 2
    interval(&mut c, &[(10, 0)], 1.0, 1.0, 0.001);
    assert_eq!(c.state(0).depth, 2);
    // 10 more: G = 3, e = 2, E = e / D = 2 / 2 = 1 (Eq. 7 divides by the depth)
    interval(&mut c, &[(10, 0)], 2.0, 1.0, 0.001);
    assert!((c.slack(0) - 2.0).abs() < 1e-12);
    assert!((c.normalised_slack(0) - 2.0 / 3.0).abs() < 1e-12, "D is 3 now");
}

#[test]
fn depth_rule_eq14_in_its_order() {
    // TS+L (target = SLO = 10 IOPS), X = 0.75 (a quarter of a violation per completion), U = 0.5
    let mut c =
        controller(Policy::TsL, vec![slo(0.75, 10.0), slo(0.75, 10.0)], 4, |f| f.raise_at = 0.5);
    let depths = |c: &Controller| (c.state(0).depth, c.state(1).depth);
    // slow (Th = 2 < 10), E = 0.5 / 1 >= U: third branch, +1
    interval(&mut c, &[(2, 0), (2, 0)], 0.0, 1.0, 0.001);
    assert_eq!(depths(&c), (2, 2));
    interval(&mut c, &[(2, 0), (2, 0)], 1.0, 1.0, 0.001); // E = 1 / 2
    assert_eq!(depths(&c), (3, 3));
    // fast (Th = 16 > 10) with E = 1.5 / 3 >= U: the second branch comes first, -1
    interval(&mut c, &[(2, 0), (2, 0)], 2.0, 0.125, 0.001);
    assert_eq!(depths(&c), (2, 2));
    // slow; tenant 0: G = 2, M = 2, E = 0 (< U): unchanged; tenant 1: E = 2 / 2: +1
    interval(&mut c, &[(2, 2), (2, 0)], 2.125, 1.0, 0.001);
    assert_eq!(depths(&c), (2, 3));
    // tenant 0: G = 2.5, M = 3, E = -0.5 / 2 < 0: the first branch sets every depth to 1,
    // tenant 1's too (its E = 2.5 / 3 >= U would raise it)
    interval(&mut c, &[(2, 1), (2, 0)], 3.125, 1.0, 0.001);
    assert_eq!(depths(&c), (1, 1));
    assert!(c.normalised_slack(0) < 0.0);
}

#[test]
fn depth_never_exceeds_max_depth() {
    let mut c = controller(Policy::LsU, vec![slo(0.5, 1.0)], 2, |f| {
        f.raise_at = 0.1;
        f.max_depth = 2;
    });
    for i in 0..5 {
        interval(&mut c, &[(2, 0)], f64::from(i), 1.0, 0.001);
    }
    assert_eq!(c.state(0).depth, 2);
}

#[test]
fn rate_rule_eq9() {
    let mut c = controller(Policy::T, vec![slo(0.9, 100.0)], 10, |_| {});
    assert_eq!(c.state(0).rate, 100.0, "R(1) = Th^SLO");
    // Th = 10 / 0.2 = 50: R = max(100 / 50 * 100, 100) = 200
    let d = interval(&mut c, &[(10, 0)], 0.0, 0.2, 0.001);
    assert_eq!(last_limits(&d), vec![(Some(200.0), None)]);
    // Th = 10 / 0.05 = 200: R = max(100 / 200 * 200, 100) = 100
    interval(&mut c, &[(10, 0)], 0.2, 0.05, 0.001);
    assert_eq!(c.state(0).rate, 100.0);
    // Th = 250: 100 / 250 * 100 = 40, floored at the SLO
    let d = interval(&mut c, &[(10, 0)], 0.25, 0.04, 0.001);
    assert_eq!(last_limits(&d), vec![(Some(100.0), None)]);
}

#[test]
fn rate_integral_stays_bounded_for_a_tenant_held_below_its_slo() {
    // a tenant held at half its SLO for ever (Th = 50 against 100): as printed, Eq. 9 doubles
    // R every interval until it overflows to infinity (which no dispatcher accepts); with the
    // anti-windup R(t+1) = SLO / Th · min(R, RATE_HEADROOM · Th) = 100 / 50 · 100 = 200 from the
    // second interval on, and never above MAX_RATE
    let mut c = controller(Policy::T, vec![slo(0.9, 100.0)], 10, |_| {});
    for i in 0..100 {
        interval(&mut c, &[(10, 0)], 0.2 * f64::from(i), 0.2, 0.001);
    }
    assert_eq!(c.state(0).rate, 200.0);
    assert!(c.state(0).rate <= MAX_RATE);
    assert!(c.limits()[0].validate().is_ok());
}

#[test]
fn exploration_eqs10_to_12_and_rate_eq13() {
    // LS+T, X = 0.5, σ = 0.1, SLO 10 IOPS each; tenant 1 completes twice as many as tenant 0
    let mut c = controller(Policy::LsT, vec![slo(0.5, 10.0), slo(0.5, 10.0)], 6, |_| {});
    // slow: Th = (2, 4) < 10, not every target reached: Th^G = max(0.95 * 10, 10) = 10;
    // Eq. 13 on the effective rate min(R, 2 Th) (anti-windup): R = max(10 / 2 * min(10, 4), 10)
    // = 20 and max(10 / 4 * min(10, 8), 10) = 20
    interval(&mut c, &[(2, 0), (4, 1)], 0.0, 1.0, 0.001);
    assert_eq!((c.state(0).target, c.state(1).target), (10.0, 10.0));
    assert_eq!((c.state(0).rate, c.state(1).rate), (20.0, 20.0));
    // fast: Th = (16, 32) >= 10 for both. e/G: tenant 0 = 2 / 2 = 1, tenant 1 = 3 / 4;
    // A = (0.1, 0.075), P = 1.075: Th^G = 10.75 for both. Eq. 13 uses this interval's target
    // (10): R = max(10 / 16 * 20, 10) = 12.5, max(10 / 32 * 20, 10) = 10
    interval(&mut c, &[(2, 0), (4, 0)], 1.0, 0.125, 0.001);
    assert!((c.state(0).target - 10.75).abs() < 1e-12 && (c.state(1).target - 10.75).abs() < 1e-12);
    assert_eq!((c.state(0).rate, c.state(1).rate), (12.5, 10.0));
    // a tenant below its target: Th^G = max(0.95 * 10.75, 10) = 10.2125
    interval(&mut c, &[(2, 0), (4, 0)], 1.125, 1.0, 0.001);
    assert!((c.state(0).target - 10.2125).abs() < 1e-12, "{}", c.state(0).target);
    // Eq. 13 with the explored target (not the SLO, Eq. 9's): max(10.75 / 2 * min(12.5, 4),
    // 10.75) and max(10.75 / 4 * min(10, 8), 10.75)
    assert_eq!((c.state(0).rate, c.state(1).rate), (21.5, 21.5));
    // and never below the SLO
    for i in 0..5 {
        interval(&mut c, &[(2, 0), (4, 0)], 2.125 + f64::from(i), 1.0, 0.001);
    }
    assert_eq!(c.state(0).target, 10.0);
}

#[test]
fn exploration_stops_when_a_budget_is_spent() {
    // tenant 1 spent its whole budget (e = 0): A = 0 for it, P = 1, no exploration
    let mut c = controller(Policy::LsT, vec![slo(0.5, 10.0), slo(0.5, 10.0)], 4, |_| {});
    interval(&mut c, &[(2, 0), (2, 1)], 0.0, 0.1, 0.001);
    assert_eq!(c.state(0).target, 10.0);
    // σ scales the step: σ = 0.2 with both budgets untouched gives P = 1.2
    let mut c = controller(Policy::LsT, vec![slo(0.5, 10.0), slo(0.5, 10.0)], 4, |f| f.sigma = 0.2);
    interval(&mut c, &[(2, 0), (2, 0)], 0.0, 0.1, 0.001);
    assert!((c.state(1).target - 12.0).abs() < 1e-12);
}

#[test]
fn forecast_enables_depth_for_tau() {
    let mut c = controller(Policy::LsT, vec![slo(0.999, 150.0)], 1000, |_| {});
    // the first completion has no window to compare with: no forecast
    assert_eq!(c.on_completion(0, 0.01, 1.0, 0.000), None);
    // 5 ms apart, 4 ms each: the window (20 ms) holds the last 4; the 1 s one leaves it at 0.025
    for i in 1..=5 {
        assert_eq!(c.on_completion(0, 0.01, 0.004, 0.005 * f64::from(i)), None, "{i}");
    }
    // ST = 0.0079 / 0.004 < H = 2: nothing
    assert_eq!(c.on_completion(0, 0.01, 0.0079, 0.030), None);
    // ST = 0.009 / mean(0.004, 0.004, 0.004, 0.0079) = 1.86: nothing
    assert_eq!(c.on_completion(0, 0.01, 0.009, 0.035), None);
    // ST = 0.012 / mean(0.004, 0.004, 0.0079, 0.009) = 1.92; 0.0125 / 0.0062 >= 2 at 0.045
    assert_eq!(c.on_completion(0, 0.01, 0.012, 0.040), None);
    let d = c.on_completion(0, 0.01, 0.02, 0.045).expect("forecast");
    assert_eq!(d.reason, Reason::DepthEnabled);
    assert_eq!(d.limits, vec![TenantLimits { rate: Some(150.0), depth: Some(1) }]);
    // τ = 0.1 s: enabled until 0.145 (a later spike would extend it)
    assert_eq!(c.on_completion(0, 0.01, 0.004, 0.1449), None);
    let d = c.on_completion(0, 0.01, 0.004, 0.1451).expect("lifted");
    assert_eq!(d.reason, Reason::DepthLifted);
    assert_eq!(d.limits, vec![TenantLimits { rate: Some(150.0), depth: None }]);
}

#[test]
fn forecast_is_per_tenant_but_enables_every_depth() {
    let mut c = controller(Policy::LsU, vec![slo(0.999, 1.0), slo(0.999, 1.0)], 1000, |_| {});
    c.on_completion(0, 0.01, 0.001, 0.001);
    c.on_completion(1, 0.01, 0.010, 0.002);
    // tenant 0's 5 ms is 5x its own mean (1 ms), though below tenant 1's
    let d = c.on_completion(0, 0.01, 0.005, 0.003).expect("forecast");
    assert_eq!(d.limits, vec![TenantLimits { rate: None, depth: Some(1) }; 2]);
}

/// The same sequence under every policy: tenants 0 and 1 with latency SLOs (X = 0.5, 10 IOPS),
/// tenant 2 a file copy (10 IOPS); U = 1. Interval 1 slow (Th = 2), interval 2 fast (Th = 16),
/// no violations; each interval's last completion is a service-time spike, so the depth
/// controllers are enabled at the decisions.
#[test]
fn each_policy_on_one_sequence() {
    type Limits = Vec<(Option<f64>, Option<u32>)>;
    let run = |policy: Policy| -> (Option<Limits>, Option<Limits>, Controller) {
        let tenants = vec![slo(0.5, 10.0), slo(0.5, 10.0), copy(10.0)];
        let mut c = controller(policy, tenants, 6, |f| {
            f.raise_at = 1.0;
            f.window_s = 1.0; // the spikes are compared with the whole sequence
        });
        let pick = |d: Vec<Decision>| {
            d.into_iter()
                .rfind(|d| matches!(d.reason, Reason::Interval(_)))
                .map(|d| d.limits.iter().map(|l| (l.rate, l.depth)).collect::<Limits>())
        };
        let mut first = Vec::new();
        let mut second = Vec::new();
        for (i, &(k, _)) in [(0, 0), (1, 0), (2, 0), (0, 0), (1, 0), (2, 0)].iter().enumerate() {
            let now = (i + 1) as f64 / 6.0;
            let st = if i == 5 { 0.05 } else { 0.001 };
            first.extend(c.on_completion(k, 0.05, st, now));
        }
        for (i, &k) in [0, 1, 2, 0, 1, 2].iter().enumerate() {
            let now = 1.0 + 0.125 * (i + 1) as f64 / 6.0;
            let st = if i == 5 { 0.05 } else { 0.001 };
            second.extend(c.on_completion(k, 0.05, st, now));
        }
        (pick(first), pick(second), c)
    };
    // Th = 2 then 16: R = max(10 / 2 * min(10, 2 * 2), 10) = 20 (anti-windup), then
    // max(10 / 16 * min(20, 2 * 16), 10) = 12.5
    let (r50, r3125) = (Some(20.0), Some(12.5));
    // LS+T: Eq. 13 then Eq. 14 with the target; the target explores (P = 1.1) once reached;
    // at D = 2 with Th = 16 > 10 the depth stays (D = 1 would give about 8 < 10, `step_down`)
    let (a, b, c) = run(Policy::LsT);
    assert_eq!(a.unwrap(), vec![(r50, Some(2)), (r50, Some(2)), (r50, None)]);
    assert_eq!(b.unwrap(), vec![(r3125, Some(2)), (r3125, Some(2)), (r3125, None)]);
    assert!((c.state(0).target - 11.0).abs() < 1e-12);
    // TS+L: Eq. 9, Eq. 14 with the SLO as target; no exploration
    let (a, b, c) = run(Policy::TsL);
    assert_eq!(a.unwrap(), vec![(r50, Some(2)), (r50, Some(2)), (r50, None)]);
    assert_eq!(b.unwrap(), vec![(r3125, Some(2)), (r3125, Some(2)), (r3125, None)]);
    assert_eq!(c.state(0).target, 10.0);
    // L: depth 1, no rate (the file copy is under T)
    let (a, b, _) = run(Policy::L);
    assert_eq!(a.unwrap(), vec![(None, Some(1)), (None, Some(1)), (r50, None)]);
    assert_eq!(b.unwrap(), vec![(None, Some(1)), (None, Some(1)), (r3125, None)]);
    // LS+U: no rate, Eq. 14 without its throughput branch: E = 1 then 2 / 2 raise it twice
    let (a, b, _) = run(Policy::LsU);
    assert_eq!(a.unwrap(), vec![(None, Some(2)), (None, Some(2)), (r50, None)]);
    assert_eq!(b.unwrap(), vec![(None, Some(3)), (None, Some(3)), (r3125, None)]);
    // T: Eq. 9 only
    let (a, b, _) = run(Policy::T);
    assert_eq!(a.unwrap(), vec![(r50, None), (r50, None), (r50, None)]);
    assert_eq!(b.unwrap(), vec![(r3125, None), (r3125, None), (r3125, None)]);
    // none: no decisions
    let (a, b, c) = run(Policy::NoControl);
    assert_eq!((a, b), (None, None));
    assert_eq!(c.limits(), vec![TenantLimits::default(); 3]);
}

#[test]
fn config_refuses_bad_fields_naming_them() {
    let field = |f: &dyn Fn(&mut Config)| {
        let mut cfg = Config::new(Policy::LsT, vec![slo(0.999, 150.0), slo(0.99, 100.0)]);
        f(&mut cfg);
        match Controller::new(cfg, 0.0) {
            Err(Error::Field { field, .. }) => field,
            other => panic!("accepted: {other:?}"),
        }
    };
    for p in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        let f = field(&|c: &mut Config| c.tenants[1].latency.as_mut().unwrap().percentile = p);
        assert_eq!(f, "tenants[1].latency.percentile");
    }
    for t in [0.0, -5.0, f64::INFINITY] {
        assert_eq!(
            field(&|c: &mut Config| c.tenants[0].throughput_iops = t),
            "tenants[0].throughput_iops"
        );
    }
    assert_eq!(
        field(&|c: &mut Config| c.tenants[0].latency.as_mut().unwrap().latency_s = 0.0),
        "tenants[0].latency.latency_s"
    );
    assert_eq!(field(&|c: &mut Config| c.interval_completions = 0), "interval_completions");
    for h in [1.0, 0.5, f64::NAN] {
        assert_eq!(field(&|c: &mut Config| c.threshold = h), "threshold");
    }
    assert_eq!(field(&|c: &mut Config| c.tenants.clear()), "tenants");
    assert_eq!(field(&|c: &mut Config| c.eta = 1.5), "eta");
    assert_eq!(field(&|c: &mut Config| c.sigma = 0.0), "sigma");
    assert_eq!(field(&|c: &mut Config| c.max_depth = 0), "max_depth");
    // the defaults are valid, and so is H just above 1
    assert!(Controller::new(
        Config { threshold: 1.0001, ..Config::new(Policy::T, vec![copy(1.0)]) },
        0.0
    )
    .is_ok());
}

#[test]
fn policies_spelled_exactly() {
    for p in Policy::ALL {
        assert_eq!(p.name().parse::<Policy>().unwrap(), p);
        assert_eq!(p.to_string(), p.name());
    }
    let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["TS+L", "LS+T", "L", "LS+U", "T", "none"]);
    let e = "ls+t".parse::<Policy>().unwrap_err().to_string();
    assert!(e.contains("policy") && e.contains("LS+T, L, LS+U"), "{e}");
}

#[test]
fn fanout_percentile_reproduces_section_2_1() {
    // 99.9%^100 > 90%; 100, 25 and 15 VMs at 90% compliance: 99.9th, 99.6th, 99.3th
    assert!(0.999f64.powi(100) > 0.9);
    let r = |n| (fanout_percentile(0.9, n) * 1000.0).round() / 10.0;
    assert_eq!((r(100), r(25), r(15)), (99.9, 99.6, 99.3));
}

#[test]
fn rate_anti_windup_bounds_a_tenant_held_back_by_something_else() {
    // T, SLO 100 IOPS; the tenant achieves 10 IOPS every interval (its depth or the device
    // holds it, not its rate). As printed, Eq. 9 multiplies R by 100 / 10 every interval
    // (1000, 10^4, 10^5, ...); on the effective rate min(R, 2 Th) = 20 it is
    // max(100 / 10 * 20, 100) = 200 = RATE_HEADROOM * SLO, every interval
    let mut c = controller(Policy::T, vec![slo(0.9, 100.0)], 10, |_| {});
    for i in 0..4 {
        interval(&mut c, &[(10, 0)], f64::from(i), 1.0, 0.001);
        assert_eq!(c.state(0).rate, 200.0, "interval {i}");
    }
    // the pacing binds again (Th = R = 200): Eq. 9 as printed, max(100 / 200 * 200, 100) = 100
    interval(&mut c, &[(10, 0)], 4.0, 0.05, 0.001);
    assert_eq!(c.state(0).rate, 100.0);
}

#[test]
fn depth_steps_down_only_to_a_depth_meeting_the_target() {
    // TS+L (target = SLO = 10 IOPS), X = 0.75, U = 0.5, as in depth_rule_eq14_in_its_order
    let mut c = controller(Policy::TsL, vec![slo(0.75, 10.0)], 2, |f| f.raise_at = 0.5);
    // slow (Th = 2): +1, then at D = 2 (E = 1 / 2 >= U) +1 again: D = 3
    interval(&mut c, &[(2, 0)], 0.0, 1.0, 0.001);
    interval(&mut c, &[(2, 0)], 1.0, 1.0, 0.001);
    assert_eq!(c.state(0).depth, 3);
    // Th = 2 / 0.125 = 16 > 10 at D = 3: 16 * 2/3 = 10.7 >= 10, down to 2
    interval(&mut c, &[(2, 0)], 2.0, 0.125, 0.001);
    assert_eq!(c.state(0).depth, 2);
    // Th = 16 > 10 at D = 2: 16 * 1/2 = 8 < 10, D = 1 would miss the target: stays 2 (the
    // printed rule's max(D - 1, 1) = 1 would alternate between 1 and 2)
    interval(&mut c, &[(2, 0)], 2.125, 0.125, 0.001);
    assert_eq!(c.state(0).depth, 2);
    // Th = 2 / 0.08 = 25 at D = 2: 25 * 1/2 = 12.5 >= 10, down to 1
    interval(&mut c, &[(2, 0)], 2.25, 0.08, 0.001);
    assert_eq!(c.state(0).depth, 1);
}
