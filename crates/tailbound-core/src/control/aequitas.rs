//! Aequitas' admission control: per-(source, destination, class) admit probabilities kept by
//! AIMD on the RPC network latency, downgrading an RPC that is not admitted to the lowest class
//! (Zhang, Kumar, Dukkipati, et al., "Aequitas: Admission Control for Performance-Critical RPCs
//! in Datacenters", SIGCOMM 2022, §5.2 and Algorithm 1; `docs/aequitas.md` has the rules, the
//! units and the choices the paper leaves open).
//!
//! **Classes** are numbered `0` (the highest, QoS_h) to `N − 1` (the lowest, QoS_l, the
//! scavenger class of downgraded and best-effort RPCs). Classes `0..N−1` carry a latency target;
//! the lowest carries none, is always admitted and is never controlled.
//!
//! **On issue** ([`Admission::admit`]): an RPC requesting class `k < N − 1` on the channel
//! `(src, dst)` runs at `k` when the caller's uniform draw `u ∈ [0, 1)` satisfies
//! `u ≤ p_admit[k]` (Algorithm 1, line 7), otherwise at `N − 1`, marked downgraded. Nothing is
//! dropped. The draw is injected so that a seeded caller gets the same run every time.
//!
//! **On completion** ([`Admission::complete`]) of an RPC that ran at `k < N − 1`, with its RNL
//! `latency` (seconds) and its `size` (in MTUs):
//!
//! ```text
//! met:  latency / size < latency_target[k]      (per MTU; `latency` alone when !per_mtu)
//!       if now − t_last_increase[k] > increment_window[k]:
//!           p_admit[k] ← min(p_admit[k] + α, 1);  t_last_increase[k] ← now
//! miss: p_admit[k] ← max(p_admit[k] − β · size, floor)
//! increment_window[k] = latency_target[k] · 100 / (100 − target_pctl[k])
//! ```
//!
//! (Algorithm 1, lines 2–4 and 13–20.) [`Rules::Artifact`] follows the authors' public simulator
//! instead (SymbioticLab/Aequitas, `coresim/agg_channel.cpp`): a miss also restarts the increase
//! window, and a latency equal to the target meets it.
//!
//! **Units.** Times and latencies in seconds on the caller's clock; `latency_target` in seconds
//! per MTU when `per_mtu` (the paper's normalised SLO), in seconds for the whole RPC otherwise
//! (the authors' configurations, `normalized_lat: 0`); sizes in MTUs ([`rnl::size_in_mtus`]);
//! `α` and `floor` are probabilities, `β` a probability per MTU.
//!
//! ```
//! use tailbound_core::control::aequitas::{Admission, Config, Outcome};
//! // One class with a 2 µs-per-MTU target at 99.9 (increment window 2 ms), and QoS_l.
//! let mut a = Admission::new(Config::new(vec![2e-6]), 0.0).unwrap();
//! assert_eq!(a.admit(0, 1, 0, 0.5).unwrap().class_run, 0); // p_admit = 1 admits
//! // A 7-MTU RPC that took 21 µs (3 µs per MTU) misses: p_admit = 1 − 0.01 · 7.
//! assert_eq!(a.complete(0, 1, 0, 21e-6, 7.0, 1e-3).unwrap(), Outcome::Decreased);
//! assert!((a.p_admit(0, 1, 0) - 0.93).abs() < 1e-12);
//! // A draw above it downgrades to the lowest class, 1.
//! let run = a.admit(0, 1, 0, 0.95).unwrap();
//! assert_eq!((run.class_run, run.downgraded), (1, true));
//! ```

pub mod rnl;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The paper's additive increment `α` (§6, "we use an α value of 0.01").
pub const DEFAULT_ALPHA: f64 = 0.01;
/// The paper's multiplicative decrement `β`, per MTU (§6; Appendix C also runs 0.0015).
pub const DEFAULT_BETA: f64 = 0.01;
/// The floor of `p_admit`: the paper names one but gives no value (§5.2); the authors'
/// simulator uses 0.1 (`coresim/agg_channel.cpp`).
pub const DEFAULT_FLOOR: f64 = 0.1;
/// The target percentile of the evaluation (99.9th), as a fraction.
pub const DEFAULT_PERCENTILE: f64 = 0.999;

/// Which reading of the update rules to run (`docs/aequitas.md`, "Choices").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rules {
    /// Algorithm 1 as printed: met iff `latency / size < target`; a miss leaves the increase
    /// window alone.
    Paper,
    /// The authors' simulator: met iff `latency / size ≤ target`; a miss restarts the increase
    /// window (`memory_start_time ← now` on every update).
    Artifact,
}

impl Rules {
    /// Both readings.
    pub const ALL: [Rules; 2] = [Rules::Paper, Rules::Artifact];

    /// The spelling (`paper`, `artifact`).
    pub fn name(self) -> &'static str {
        match self {
            Rules::Paper => "paper",
            Rules::Artifact => "artifact",
        }
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rules {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Rules::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| Error::Field {
            field: "rules".into(),
            message: format!("unknown rules {s:?}; known: paper, artifact"),
        })
    }
}

/// The controller's parameters. Field names are those errors name.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `latency_target[k]` of each class `k` above the lowest, seconds per MTU (seconds per RPC
    /// when `!per_mtu`), positive. Its length is `N − 1`: the classes are `0..=len`.
    pub latency_target_s: Vec<f64>,
    /// `target_pctl[k]` as a fraction in (0, 1), one per class above the lowest.
    pub target_percentile: Vec<f64>,
    /// Explicit increment windows in seconds (≥ 0), one per class above the lowest; `None`
    /// derives them as `latency_target / (1 − target_pctl)` (Algorithm 1, line 4).
    pub increment_window_s: Option<Vec<f64>>,
    /// Additive increment `α`, in (0, 1].
    pub alpha: f64,
    /// Multiplicative decrement `β` per MTU of the missing RPC, positive.
    pub beta: f64,
    /// The floor of `p_admit`, in (0, 1]: at 0 a channel would admit nothing and never measure
    /// again (§5.2, starvation).
    pub floor: f64,
    /// Compare `latency / size` with the target (the paper) or the whole latency (`false`).
    pub per_mtu: bool,
    /// Which reading of the update rules to run.
    pub rules: Rules,
}

impl Config {
    /// The paper's defaults for these targets: 99.9th percentile, derived windows, `α = 0.01`,
    /// `β = 0.01` per MTU, floor 0.1, per-MTU latency, Algorithm 1's rules.
    pub fn new(latency_target_s: Vec<f64>) -> Self {
        let n = latency_target_s.len();
        Config {
            latency_target_s,
            target_percentile: vec![DEFAULT_PERCENTILE; n],
            increment_window_s: None,
            alpha: DEFAULT_ALPHA,
            beta: DEFAULT_BETA,
            floor: DEFAULT_FLOOR,
            per_mtu: true,
            rules: Rules::Paper,
        }
    }

    /// Number of classes `N`, the lowest included.
    pub fn classes(&self) -> u32 {
        self.latency_target_s.len() as u32 + 1
    }

    /// The lowest class, `N − 1`: downgraded and best-effort RPCs run there.
    pub fn lowest(&self) -> u32 {
        self.latency_target_s.len() as u32
    }

    /// The increment window of class `k < N − 1`, seconds.
    pub fn window_s(&self, k: usize) -> f64 {
        match &self.increment_window_s {
            Some(w) => w[k],
            None => self.latency_target_s[k] / (1.0 - self.target_percentile[k]),
        }
    }

    /// Check every field; the error names the first bad one (`latency_target_s[1]`).
    pub fn validate(&self) -> Result<()> {
        let bad = |field: String, message: String| Err(Error::Field { field, message });
        let n = self.latency_target_s.len();
        if n == 0 {
            return bad(
                "latency_target_s".into(),
                "at least one class above the lowest needs a target".into(),
            );
        }
        if n >= u32::MAX as usize - 1 {
            return bad("latency_target_s".into(), format!("{n} classes is too many"));
        }
        for (i, &t) in self.latency_target_s.iter().enumerate() {
            if !(t.is_finite() && t > 0.0) {
                return bad(format!("latency_target_s[{i}]"), format!("must be > 0 s, got {t}"));
            }
        }
        if self.target_percentile.len() != n {
            return bad(
                "target_percentile".into(),
                format!("{} values for {n} classes with a target", self.target_percentile.len()),
            );
        }
        for (i, &p) in self.target_percentile.iter().enumerate() {
            if !(p > 0.0 && p < 1.0) {
                return bad(
                    format!("target_percentile[{i}]"),
                    format!("must be in (0, 1), got {p}"),
                );
            }
        }
        if let Some(w) = &self.increment_window_s {
            if w.len() != n {
                return bad(
                    "increment_window_s".into(),
                    format!("{} values for {n} classes with a target", w.len()),
                );
            }
            for (i, &x) in w.iter().enumerate() {
                if !(x.is_finite() && x >= 0.0) {
                    return bad(
                        format!("increment_window_s[{i}]"),
                        format!("must be ≥ 0 s, got {x}"),
                    );
                }
            }
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return bad("alpha".into(), format!("must be in (0, 1], got {}", self.alpha));
        }
        if !(self.beta.is_finite() && self.beta > 0.0) {
            return bad("beta".into(), format!("must be > 0 per MTU, got {}", self.beta));
        }
        if !(self.floor > 0.0 && self.floor <= 1.0) {
            return bad("floor".into(), format!("must be in (0, 1], got {}", self.floor));
        }
        Ok(())
    }
}

/// Where an RPC runs ([`Admission::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admit {
    /// The class it runs at: the requested one, or the lowest.
    pub class_run: u32,
    /// Whether it was downgraded (reported to the application, Algorithm 1, line 11).
    pub downgraded: bool,
}

/// What a completion did to its channel's `p_admit` ([`Admission::complete`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Met, the increment window had passed: `p_admit += α` (capped at 1), window restarted.
    Increased,
    /// Met within the increment window: nothing changed.
    Held,
    /// Missed: `p_admit −= β · size` (floored).
    Decreased,
    /// Ran at the lowest class, which is not controlled.
    Uncontrolled,
}

impl Outcome {
    /// The spelling (`increased`, `held`, `decreased`, `uncontrolled`).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Increased => "increased",
            Outcome::Held => "held",
            Outcome::Decreased => "decreased",
            Outcome::Uncontrolled => "uncontrolled",
        }
    }
}

/// One channel's state at one class: `p_admit` and `t_last_increase` (Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassState {
    /// The admit probability, in `[floor, 1]`.
    pub p_admit: f64,
    /// When the increase window last restarted, seconds.
    pub t_last_increase: f64,
}

impl ClassState {
    /// `p_admit = 1`, the window starting at `start_s` (the authors' simulator starts every
    /// channel's window at time 0, its start).
    pub fn new(start_s: f64) -> Self {
        ClassState { p_admit: 1.0, t_last_increase: start_s }
    }

    /// Whether the draw `u ∈ [0, 1)` admits (`u ≤ p_admit`, Algorithm 1, line 7).
    #[inline]
    pub fn admits(&self, u: f64) -> bool {
        u <= self.p_admit
    }

    /// Apply one completion at class `k` (`< N − 1`) with `config` (validated): `latency` in
    /// seconds, `size` in MTUs, `now` in seconds.
    pub fn complete(
        &mut self,
        config: &Config,
        k: usize,
        latency: f64,
        size: f64,
        now: f64,
    ) -> Outcome {
        let measured = if config.per_mtu { latency / size } else { latency };
        let target = config.latency_target_s[k];
        let met = match config.rules {
            Rules::Paper => measured < target,
            Rules::Artifact => measured <= target,
        };
        if met {
            if now - self.t_last_increase > config.window_s(k) {
                self.p_admit = (self.p_admit + config.alpha).min(1.0);
                self.t_last_increase = now;
                Outcome::Increased
            } else {
                Outcome::Held
            }
        } else {
            self.p_admit = (self.p_admit - config.beta * size).max(config.floor);
            if config.rules == Rules::Artifact {
                self.t_last_increase = now;
            }
            Outcome::Decreased
        }
    }
}

/// The admission control of one sending side: a [`ClassState`] per `(src, dst)` channel and
/// class above the lowest, created at `p_admit = 1` on first use.
#[derive(Debug, Clone)]
pub struct Admission {
    config: Config,
    start_s: f64,
    channels: HashMap<(u32, u32), Vec<ClassState>>,
}

impl Admission {
    /// A controller with `config` (validated), whose channels' increase windows start at
    /// `start_s` seconds.
    pub fn new(config: Config, start_s: f64) -> Result<Self> {
        config.validate()?;
        if !start_s.is_finite() {
            return Err(Error::Invalid(format!("start_s must be finite, got {start_s}")));
        }
        Ok(Admission { config, start_s, channels: HashMap::new() })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Number of channels `(src, dst)` seen so far.
    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    fn check_class(&self, class: u32) -> Result<()> {
        if class >= self.config.classes() {
            return Err(Error::Invalid(format!(
                "class {class} out of range: the classes are 0..={}",
                self.config.lowest()
            )));
        }
        Ok(())
    }

    fn state(&mut self, src: u32, dst: u32) -> &mut Vec<ClassState> {
        let (n, start) = (self.config.latency_target_s.len(), self.start_s);
        self.channels.entry((src, dst)).or_insert_with(|| vec![ClassState::new(start); n])
    }

    /// Issue an RPC requesting `class` on `(src, dst)` with the uniform draw `u ∈ [0, 1)`: it
    /// runs at `class` when `u ≤ p_admit`, else at the lowest class, downgraded. The lowest
    /// class is always admitted.
    pub fn admit(&mut self, src: u32, dst: u32, class: u32, u: f64) -> Result<Admit> {
        self.check_class(class)?;
        if !(0.0..1.0).contains(&u) {
            return Err(Error::Invalid(format!("the draw u must be in [0, 1), got {u}")));
        }
        let lowest = self.config.lowest();
        if class == lowest || self.state(src, dst)[class as usize].admits(u) {
            Ok(Admit { class_run: class, downgraded: false })
        } else {
            Ok(Admit { class_run: lowest, downgraded: true })
        }
    }

    /// Report the completion at `now` (seconds) of an RPC that ran at `class_run` on
    /// `(src, dst)`: its RNL `latency` in seconds ([`rnl::rnl`]) and its `size` in MTUs.
    pub fn complete(
        &mut self,
        src: u32,
        dst: u32,
        class_run: u32,
        latency: f64,
        size: f64,
        now: f64,
    ) -> Result<Outcome> {
        self.check_class(class_run)?;
        if !(latency.is_finite() && latency >= 0.0) {
            return Err(Error::Invalid(format!("latency must be ≥ 0 s, got {latency}")));
        }
        if !(size.is_finite() && size > 0.0) {
            return Err(Error::Invalid(format!("size must be > 0 MTUs, got {size}")));
        }
        if !now.is_finite() {
            return Err(Error::Invalid(format!("now must be finite, got {now}")));
        }
        if class_run == self.config.lowest() {
            return Ok(Outcome::Uncontrolled);
        }
        let k = class_run as usize;
        let (n, start) = (self.config.latency_target_s.len(), self.start_s);
        let states =
            self.channels.entry((src, dst)).or_insert_with(|| vec![ClassState::new(start); n]);
        Ok(states[k].complete(&self.config, k, latency, size, now))
    }

    /// `p_admit` of `(src, dst)` at `class` (1 for a channel not seen yet and for the lowest
    /// class, which is always admitted).
    pub fn p_admit(&self, src: u32, dst: u32, class: u32) -> f64 {
        if class >= self.config.lowest() {
            return 1.0;
        }
        self.channels.get(&(src, dst)).map_or(1.0, |s| s[class as usize].p_admit)
    }
}

#[cfg(test)]
mod tests;
