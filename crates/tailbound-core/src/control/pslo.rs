//! PSLO's controller: Xth-percentile latency and throughput SLOs together, by a per-tenant
//! arrival-rate limit and IO depth (Li, Jiang, Feng, Shi, "PSLO: Enforcing the Xth Percentile
//! Latency and Throughput SLOs for Consolidated VM Storage", EuroSys 2016; equation numbers are
//! the paper's; `docs/pslo.md` has the rules, the units and the choices the paper leaves open).
//!
//! **Completion-driven.** The caller reports every completion of a controlled tenant with
//! [`Controller::on_completion`] (`tenant`, latency and service time in seconds, `now` in seconds
//! on the caller's clock). The controller answers with a [`Decision`] — the limits every tenant
//! should have now — when something changed, and `None` otherwise:
//!
//! - **forecast module** (§3.2, Eqs. 1–2), at every completion: the tenant's normalised service
//!   time `ST = service time / mean service time of its completions in the last `window_s``
//!   (20 ms). When `ST ≥ H` for any tenant, the depth controllers of all tenants are enabled for
//!   `enable_s` (τ) from that completion; while they are disabled, the depth is unlimited.
//!   Expiry is noticed at the first completion after it (no clock of its own).
//! - **decision module** (§3.4), every `interval_completions` (N) completions of the
//!   controlled tenants together (interval `t`): per tenant with a latency SLO the violations
//!   `M_k(t)` (latency `> L_k`), the budget `G(X_k, t) = (1 − X_k) · C_k(t)` with `C_k(t)` its
//!   completions so far (Eq. 4, which is `t · (1 − X_k) · N` when the tenant completes `N` an
//!   interval), the slack `e = G − M` (Eq. 6), normalised `E = e / D_k(t)` (Eq. 7); the
//!   interval's throughput `Th_k(t)` = its completions in the interval / the interval's length
//!   (IOPS, Eq. 8 over one interval); then the rates (Eqs. 9, 13), the throughput targets
//!   (Eqs. 10–12) and the depths (Eq. 14) of the policy.
//!
//! **Units.** Throughput, throughput SLOs, targets and rate limits in requests per second
//! (IOPS, the paper's unit); latencies and times in seconds; depth in requests.
//!
//! **Policies** ([`Policy`], paper Table 1): `LS+T` (latency SLO, then the most throughput:
//! Eqs. 10–14), `TS+L` (throughput SLO, then the least latency: Eq. 9 and Eq. 14 with the target
//! held at the SLO), `L` (depth 1 always, no rate limit), `LS+U` (no rate limit, depth by
//! Eq. 14 without its throughput branch), `T` (rate by Eq. 9 only), `none` (no control). A
//! tenant without a latency SLO (the paper's file copy) is controlled as under `T` by every
//! policy but `none`.
//!
//! ```
//! use tailbound_core::control::pslo::{Config, Controller, LatencySlo, Policy, TenantSlo};
//! let slo = TenantSlo { latency: Some(LatencySlo { latency_s: 0.3, percentile: 0.999 }),
//!                       throughput_iops: 150.0 };
//! let mut c = Controller::new(Config::new(Policy::LsT, vec![slo; 2]), 0.0).unwrap();
//! let mut decisions = 0;
//! for i in 0..2000 {
//!     let now = f64::from(i) * 0.005; // 200 completions a second, 100 per tenant
//!     if c.on_completion(i as usize % 2, 0.010, 0.004, now).is_some() {
//!         decisions += 1;
//!     }
//! }
//! assert_eq!(decisions, 2); // N = 1000 completions an interval
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::sched::dispatch::TenantLimits;

/// Anti-windup of the integral rate control (Eqs. 9 and 13): the correction
/// `R(t+1) = goal / Th(t) · R(t)` is applied to `min(R(t), RATE_HEADROOM · Th(t))`, the rate the
/// tenant effectively had. While the pacing binds (`Th ≈ R`) this is Eq. 9/13 as printed; while
/// something else holds the tenant below its rate (its depth, the device, its own offered load)
/// a larger `R` cannot raise `Th`, and as printed `R` would grow by `goal / Th` every interval
/// without bound (measured: 3.4·10⁷ IOPS after 300 s for a depth-limited tenant with a
/// 150 IOPS target), so the tenant was effectively unpaced whenever its depth was lifted; with
/// this `R(t+1) ≤ RATE_HEADROOM · goal` then. Not in the paper (`docs/pslo.md`).
pub const RATE_HEADROOM: f64 = 2.0;
/// The largest rate Eqs. 9 and 13 ever set (requests per second; a pacing gap of 1 ns, no limit on
/// any device). Their integral control multiplies the rate by `target / Th` every interval in
/// which the tenant stays below its target — forever for a closed-loop tenant the device
/// cannot serve that fast — so without a ceiling (and before [`RATE_HEADROOM`] bounded the growth) the rate overflows to infinity after a few
/// thousand intervals (minutes in a gateway), which no dispatcher accepts.
pub const MAX_RATE: f64 = 1e9;

/// A PSLO policy (paper Table 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `LS+T`: meet the latency SLOs, then raise every tenant's throughput in proportion to its
    /// throughput SLO (Eqs. 10–14).
    LsT,
    /// `TS+L`: meet the throughput SLOs, then keep the depth (so the latency) as low as they
    /// allow (Eq. 9, Eq. 14 with the target at the SLO).
    TsL,
    /// `L`: depth 1 for every tenant, always; no rate limit.
    L,
    /// `LS+U`: meet the latency SLOs with the depth alone (Eq. 14 without its throughput
    /// branch); no rate limit.
    LsU,
    /// `T`: throughput SLOs by the rate alone (Eq. 9); no depth limit.
    T,
    /// No control (the paper's "No PSLO": FCFS).
    NoControl,
}

impl Policy {
    /// Every policy, in the paper's Table 1 order.
    pub const ALL: [Policy; 6] =
        [Policy::TsL, Policy::LsT, Policy::L, Policy::LsU, Policy::T, Policy::NoControl];

    /// The policy's spelling (`LS+T`, `TS+L`, `L`, `LS+U`, `T`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            Policy::LsT => "LS+T",
            Policy::TsL => "TS+L",
            Policy::L => "L",
            Policy::LsU => "LS+U",
            Policy::T => "T",
            Policy::NoControl => "none",
        }
    }

    /// Whether tenants with a latency SLO are rate-limited.
    fn limits_rate(self) -> bool {
        matches!(self, Policy::LsT | Policy::TsL | Policy::T)
    }

    /// Whether tenants with a latency SLO get a depth by Eq. 14, enabled by the forecast module.
    fn forecast_depth(self) -> bool {
        matches!(self, Policy::LsT | Policy::TsL | Policy::LsU)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Policy::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| Error::Field {
            field: "policy".into(),
            message: format!(
                "unknown PSLO policy {s:?}; known: {}",
                Policy::ALL.map(Policy::name).join(", ")
            ),
        })
    }
}

/// A percentile latency SLO: `percentile` of the requests within `latency_s` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySlo {
    /// The latency bound `L_k`, seconds (positive).
    pub latency_s: f64,
    /// The percentile `X_k` as a fraction, in (0, 1).
    pub percentile: f64,
}

/// One tenant's SLOs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantSlo {
    /// Its percentile latency SLO, if any (`None`: controlled as under `T`).
    pub latency: Option<LatencySlo>,
    /// Its throughput SLO `Th^SLO`, requests per second (positive).
    pub throughput_iops: f64,
}

/// The controller's configuration (defaults from the paper where it gives them).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The policy.
    pub policy: Policy,
    /// The tenants' SLOs, indexed as [`Controller::on_completion`]'s `tenant`.
    pub tenants: Vec<TenantSlo>,
    /// `N`: completions (of all tenants together) per decision interval; the paper's 1000.
    pub interval_completions: u32,
    /// `H`: the normalised service time at which the forecast fires (> 1); the paper's 2 for
    /// disks (1.5 for SSDs).
    pub threshold: f64,
    /// The window of the mean service time, seconds; the paper's 20 ms.
    pub window_s: f64,
    /// `τ`: how long the depth controllers stay enabled after a forecast, seconds (not given by
    /// the paper; 0.1 s, see `docs/pslo.md`).
    pub enable_s: f64,
    /// `σ`: the exploration gain of Eq. 10 (not given; 0.1, so a target grows by at most 10%
    /// an interval).
    pub sigma: f64,
    /// `η`: the target's decay when a tenant misses it (Eq. 12); the paper's 0.95.
    pub eta: f64,
    /// `U`: the normalised slack at which the depth grows (Eq. 14); the paper's 5.
    pub raise_at: f64,
    /// The largest depth Eq. 14 may reach (not in the paper, which sweeps 1–16; 64).
    pub max_depth: u32,
}

impl Config {
    /// `policy` for `tenants` with the defaults.
    pub fn new(policy: Policy, tenants: Vec<TenantSlo>) -> Self {
        Self {
            policy,
            tenants,
            interval_completions: 1000,
            threshold: 2.0,
            window_s: 0.020,
            enable_s: 0.1,
            sigma: 0.1,
            eta: 0.95,
            raise_at: 5.0,
            max_depth: 64,
        }
    }

    /// Check every field's domain; the error names the field (`tenants[2].latency.percentile`).
    pub fn validate(&self) -> Result<()> {
        let bad =
            |field: String, message: &str| Err(Error::Field { field, message: message.into() });
        if self.tenants.is_empty() {
            return bad("tenants".into(), "at least one tenant is needed");
        }
        for (i, t) in self.tenants.iter().enumerate() {
            if let Some(l) = t.latency {
                if !(l.percentile > 0.0 && l.percentile < 1.0) {
                    return bad(
                        format!("tenants[{i}].latency.percentile"),
                        &format!("must be a fraction in (0, 1), got {}", l.percentile),
                    );
                }
                if !(l.latency_s > 0.0 && l.latency_s.is_finite()) {
                    return bad(
                        format!("tenants[{i}].latency.latency_s"),
                        &format!("must be positive seconds, got {}", l.latency_s),
                    );
                }
            }
            if !(t.throughput_iops > 0.0 && t.throughput_iops.is_finite()) {
                return bad(
                    format!("tenants[{i}].throughput_iops"),
                    &format!("must be positive requests per second, got {}", t.throughput_iops),
                );
            }
        }
        let checks: [(&str, bool, &str); 8] = [
            ("interval_completions", self.interval_completions >= 1, "must be at least 1"),
            ("threshold", self.threshold > 1.0 && self.threshold.is_finite(), "H must be > 1"),
            (
                "window_s",
                self.window_s > 0.0 && self.window_s.is_finite(),
                "must be positive seconds",
            ),
            ("enable_s", self.enable_s >= 0.0 && self.enable_s.is_finite(), "must be >= 0 seconds"),
            ("sigma", self.sigma > 0.0 && self.sigma.is_finite(), "must be positive"),
            ("eta", self.eta > 0.0 && self.eta <= 1.0, "must be in (0, 1]"),
            ("raise_at", self.raise_at > 0.0 && self.raise_at.is_finite(), "U must be positive"),
            ("max_depth", self.max_depth >= 1, "must be at least 1"),
        ];
        for (field, ok, message) in checks {
            if !ok {
                return bad(field.into(), message);
            }
        }
        Ok(())
    }
}

/// Why a [`Decision`] was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The decision interval `t` (1, 2, …) ended.
    Interval(u64),
    /// A forecast enabled the depth controllers.
    DepthEnabled,
    /// The enable interval τ ran out: depths are unlimited again.
    DepthLifted,
}

/// The limits every tenant should have from now on (apply them all: [`TenantLimits::rate`] is
/// `R̂` in requests per second, [`TenantLimits::depth`] the IO depth; `None` is unlimited).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Why.
    pub reason: Reason,
    /// Per tenant, in configuration order.
    pub limits: Vec<TenantLimits>,
}

/// What the controller knows of one tenant (the state of the last decision and the interval
/// in progress).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantState {
    /// `C_k`: completions so far.
    pub completions: u64,
    /// `M_k`: completions with latency above the SLO's so far.
    pub violations: u64,
    /// Completions in the interval in progress.
    pub in_interval: u64,
    /// `R_k`: the rate limit, requests per second (`+∞` before the first rule applied, under
    /// `L`, `LS+U` and `none`).
    pub rate: f64,
    /// `D_k`: the depth the decision module set (applied while the depth is enabled).
    pub depth: u32,
    /// `Th^G_k`: the throughput target, requests per second.
    pub target: f64,
    /// `Th_k(t)` of the last interval, requests per second (NaN before the first).
    pub throughput: f64,
}

/// One tenant's forecast window and state.
#[derive(Debug, Clone)]
struct Tenant {
    slo: TenantSlo,
    /// `(completion time, service time)` of the completions in the last `window_s`.
    window: VecDeque<(f64, f64)>,
    window_sum: f64,
    state: TenantState,
}

/// PSLO's forecast and decision modules (see the module documentation).
#[derive(Debug, Clone)]
pub struct Controller {
    cfg: Config,
    tenants: Vec<Tenant>,
    /// Index of the interval in progress (1-based).
    interval: u64,
    /// Completions in the interval in progress.
    in_interval: u32,
    /// When the interval in progress started, seconds.
    interval_start: f64,
    /// Until when the depth controllers are enabled, seconds.
    enabled_until: f64,
    /// Whether the last decision had the depth controllers enabled.
    depth_on: bool,
}

impl Controller {
    /// A controller for `cfg` starting at `now` (seconds): rates at the throughput SLOs
    /// (`R_k(1) = Th^G_k(1) = Th_k^SLO`), depths 1 (`D_k(1) = 1`), depth control disabled.
    pub fn new(cfg: Config, now: f64) -> Result<Self> {
        cfg.validate()?;
        let tenants = cfg
            .tenants
            .iter()
            .map(|&slo| {
                let limited = cfg.policy.limits_rate() || slo.latency.is_none();
                let rate = if limited && cfg.policy != Policy::NoControl {
                    slo.throughput_iops
                } else {
                    f64::INFINITY
                };
                Tenant {
                    slo,
                    window: VecDeque::new(),
                    window_sum: 0.0,
                    state: TenantState {
                        completions: 0,
                        violations: 0,
                        in_interval: 0,
                        rate,
                        depth: 1,
                        target: slo.throughput_iops,
                        throughput: f64::NAN,
                    },
                }
            })
            .collect();
        Ok(Self {
            cfg,
            tenants,
            interval: 1,
            in_interval: 0,
            interval_start: now,
            enabled_until: f64::NEG_INFINITY,
            depth_on: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Tenant `k`'s state.
    pub fn state(&self, k: usize) -> TenantState {
        self.tenants[k].state
    }

    /// `G(X_k, t)`: tenant `k`'s violation budget so far, `(1 − X_k) · C_k` (Eq. 4; 0 without a
    /// latency SLO).
    pub fn budget(&self, k: usize) -> f64 {
        let t = &self.tenants[k];
        // C − X·C rather than (1 − X)·C: exact for the usual percentiles (0.9 · 20 = 18 and
        // 0.999 · 1000 = 999 round exactly, 1 − 0.9 does not), so E meets U when it should
        let c = t.state.completions as f64;
        t.slo.latency.map_or(0.0, |l| c - l.percentile * c)
    }

    /// `e(k, t) = G − M`: tenant `k`'s slack (Eq. 6).
    pub fn slack(&self, k: usize) -> f64 {
        self.budget(k) - self.tenants[k].state.violations as f64
    }

    /// `E(k, t) = e / D_k(t)`: tenant `k`'s normalised slack (Eq. 7).
    pub fn normalised_slack(&self, k: usize) -> f64 {
        self.slack(k) / f64::from(self.tenants[k].state.depth)
    }

    /// The limits every tenant has now (what the last [`Decision`] said).
    pub fn limits(&self) -> Vec<TenantLimits> {
        (0..self.tenants.len()).map(|k| self.limits_of(k)).collect()
    }

    fn limits_of(&self, k: usize) -> TenantLimits {
        let policy = self.cfg.policy;
        let t = &self.tenants[k];
        if policy == Policy::NoControl {
            return TenantLimits::default();
        }
        let rate = t.state.rate.is_finite().then_some(t.state.rate);
        if t.slo.latency.is_none() {
            return TenantLimits { rate, depth: None }; // as under T
        }
        let depth = match policy {
            Policy::L => Some(1),
            p if p.forecast_depth() && self.depth_on => Some(t.state.depth),
            _ => None,
        };
        TenantLimits { rate: if policy.limits_rate() { rate } else { None }, depth }
    }

    /// Tenant `k` completed a request at `now` (seconds) with `latency` (arrival to completion)
    /// and `service_time` (dispatch to completion), seconds. Returns the new limits when the
    /// decision interval ended or the depth controllers were enabled or lifted.
    ///
    /// # Panics
    /// If `k` is not a configured tenant.
    #[inline]
    pub fn on_completion(
        &mut self,
        k: usize,
        latency: f64,
        service_time: f64,
        now: f64,
    ) -> Option<Decision> {
        let cfg = &self.cfg;
        let t = &mut self.tenants[k];
        // forecast module (Eqs. 1-2): ST against the mean of the window before this completion
        let horizon = now - cfg.window_s;
        while let Some(&(at, st)) = t.window.front() {
            if at > horizon {
                break;
            }
            t.window.pop_front();
            t.window_sum -= st;
        }
        if t.window.is_empty() {
            t.window_sum = 0.0; // no rounding residue
        } else if service_time * t.window.len() as f64 >= cfg.threshold * t.window_sum {
            self.enabled_until = now + cfg.enable_s;
        }
        t.window.push_back((now, service_time));
        t.window_sum += service_time;
        // decision module's statistics
        t.state.completions += 1;
        t.state.in_interval += 1;
        if t.slo.latency.is_some_and(|l| latency > l.latency_s) {
            t.state.violations += 1;
        }
        self.in_interval += 1;
        if self.in_interval >= cfg.interval_completions {
            self.depth_on = now < self.enabled_until;
            let t = self.interval;
            self.decide(now);
            return (self.cfg.policy != Policy::NoControl)
                .then(|| Decision { reason: Reason::Interval(t), limits: self.limits() });
        }
        let on = now < self.enabled_until;
        if on != self.depth_on {
            self.depth_on = on;
            if self.cfg.policy.forecast_depth() {
                let reason = if on { Reason::DepthEnabled } else { Reason::DepthLifted };
                return Some(Decision { reason, limits: self.limits() });
            }
        }
        None
    }

    /// End interval `t` at `now`: Eqs. 9-14 of the policy, then start interval `t + 1`.
    fn decide(&mut self, now: f64) {
        let cfg = &self.cfg;
        let policy = cfg.policy;
        let length = now - self.interval_start;
        let n = self.tenants.len();
        // Th_k(t), E(k, t), e/G per tenant
        let mut any_negative = false;
        let mut min_a = f64::INFINITY;
        let mut all_reached = true;
        let mut explored = false;
        for k in 0..n {
            let t = &self.tenants[k];
            if t.slo.latency.is_none() {
                continue;
            }
            let (budget, slack) = (self.budget(k), self.slack(k));
            any_negative |= slack / f64::from(t.state.depth) < 0.0;
            // Eq. 10 (no budget yet: no room to explore)
            let a = if budget > 0.0 { (cfg.sigma * slack / budget).max(0.0) } else { 0.0 };
            min_a = min_a.min(a);
            let th = t.state.in_interval as f64 / length;
            all_reached &= th >= t.state.target;
            explored = true;
        }
        let p = if explored { min_a + 1.0 } else { 1.0 }; // Eq. 11
        let normalised: Vec<f64> = (0..n).map(|k| self.normalised_slack(k)).collect();
        for (k, t) in self.tenants.iter_mut().enumerate() {
            let s = &mut t.state;
            let th = s.in_interval as f64 / length;
            s.throughput = th;
            let slo = t.slo.throughput_iops;
            let has_latency = t.slo.latency.is_some();
            if policy != Policy::NoControl && s.in_interval > 0 {
                // the rate the tenant effectively had: its limit, or a little above what it
                // achieved when something else held it back (anti-windup, see RATE_HEADROOM)
                let effective = s.rate.min(RATE_HEADROOM * th);
                if has_latency && policy == Policy::LsT {
                    // Eq. 13 with this interval's target
                    s.rate = (s.target / th * effective).max(s.target).min(MAX_RATE);
                } else if !has_latency || policy.limits_rate() {
                    // Eq. 9
                    s.rate = (slo / th * effective).max(slo).min(MAX_RATE);
                }
            }
            if has_latency && policy.forecast_depth() {
                // Eq. 14, in its order; TS+L holds the target at the SLO, LS+U has no
                // throughput branch
                let target = match policy {
                    Policy::LsT => s.target,
                    Policy::TsL => slo,
                    _ => f64::INFINITY,
                };
                s.depth = if any_negative {
                    1
                } else if th > target {
                    // the second branch, stepping down only to a depth expected to still
                    // meet the target (see `step_down`)
                    step_down(s.depth, th, target)
                } else if normalised[k] >= cfg.raise_at {
                    (s.depth + 1).min(cfg.max_depth)
                } else {
                    s.depth
                };
            }
            if has_latency && policy == Policy::LsT {
                // Eq. 12
                s.target = if all_reached { p * s.target } else { (cfg.eta * s.target).max(slo) };
            }
            s.in_interval = 0;
        }
        self.interval += 1;
        self.in_interval = 0;
        self.interval_start = now;
    }
}

/// Eq. 14's second branch (`Th_k(t) > Th^G_k(t)`: "the level of IO concurrency is higher
/// than necessary") for a tenant at depth `depth` with throughput `th` and target `target`:
/// `depth − 1` when the smaller depth is expected to still meet the target, taking the
/// throughput as proportional to the depth (`th · (D − 1) / D ≥ target`, as below the knee of
/// a striped array), else `depth` unchanged (at least 1).
///
/// *Deviation from the printed rule* (`max(D − 1, 1)` whenever `Th > Th^G`): when the depth
/// `D` meets the target and `D − 1` does not, the printed rule alternates between them (`D`
/// exceeds the target, so the next interval is at `D − 1`, which misses it, so the third
/// branch raises it again), and the tenant averages `(X(D − 1) + X(D)) / 2`, below its target
/// whenever `X(D − 1)` is far below it — measured in `pslo_fig5` (a VM at 131 IOPS against
/// a 150 IOPS SLO; `docs/results-pslo.md`). With this step the lowest depth meeting the target
/// is a fixed point, which is what the rule is for (TS+L's "lowest depth meeting the throughput
/// SLO").
///
/// ```
/// use tailbound_core::control::pslo::step_down;
/// assert_eq!(step_down(3, 16.0, 10.0), 2); // 16 · 2/3 ≥ 10
/// assert_eq!(step_down(2, 16.0, 10.0), 2); // 16 · 1/2 < 10: depth 1 would miss it
/// assert_eq!(step_down(1, 16.0, 10.0), 1);
/// ```
pub fn step_down(depth: u32, th: f64, target: f64) -> u32 {
    if depth > 1 && th * f64::from(depth - 1) >= target * f64::from(depth) {
        depth - 1
    } else {
        depth.max(1)
    }
}

/// The percentile each of `n` tenants must meet for a request fanned out to all of them to meet
/// its latency SLO with probability `compliance`: `X = C^(1/n)` (PSLO §2.1, `X^n ≥ C`).
pub fn fanout_percentile(compliance: f64, n: u32) -> f64 {
    compliance.powf(1.0 / f64::from(n))
}

#[cfg(test)]
mod tests;
