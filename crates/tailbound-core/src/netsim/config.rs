//! The network simulator's configuration (its JSON form, read by the binding), with the
//! authors' simulator's values as defaults (SymbioticLab/Aequitas, branch `artifact-eval`,
//! `py/*/conf_*.txt` and `coresim/channel.cpp`). Every bad field is refused by name
//! ([`Error::Field`]: `weights[1]`, `cc.max_cwnd`, `admission.latency_target_s[0]`).

use serde::Deserialize;

use crate::control::aequitas::{Config as AdmissionConfig, Rules};
use crate::error::{Error, Result};

/// The authors' link rate: 100 Gb/s.
pub const DEFAULT_LINK_RATE_BPS: f64 = 100e9;
/// The authors' propagation delay per link: 0.2 µs.
pub const DEFAULT_PROPAGATION_S: f64 = 0.2e-6;
/// The authors' MTU (`mtu: 5120`), header included.
pub const DEFAULT_MTU_BYTES: u32 = 5120;
/// The authors' header (`hdr_size = 40`): a data packet carries `MTU − 40` bytes of payload.
pub const DEFAULT_HEADER_BYTES: u32 = 40;
/// The authors' shared buffer per port in their 33-host runs (`queue_size: 524288`; the 3-host
/// runs use 1 MiB).
pub const DEFAULT_BUFFER_BYTES: u64 = 512 * 1024;

fn default_link_rate() -> f64 {
    DEFAULT_LINK_RATE_BPS
}
fn default_propagation() -> f64 {
    DEFAULT_PROPAGATION_S
}
fn default_mtu() -> u32 {
    DEFAULT_MTU_BYTES
}
fn default_header() -> u32 {
    DEFAULT_HEADER_BYTES
}
fn default_buffer() -> u64 {
    DEFAULT_BUFFER_BYTES
}
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}

/// The most sub-queues a `(source, destination, class)` may have (`channels_per_class`).
pub const MAX_CHANNELS_PER_CLASS: u32 = 1024;

/// The authors' pFabric priority thresholds, bytes (`PFabricFlow::priority_thresholds` of
/// `ext/pfabric_flow.cpp`, artifact-eval): 4 KiB … 256 KiB, eight levels.
pub const PFABRIC_ARTIFACT_THRESHOLDS: [u64; 7] = [4096, 8192, 16384, 32768, 65536, 131072, 262144];

/// The per-channel delay-based congestion window (Swift-like, as `coresim/channel.cpp`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CcConfig {
    /// `false`: a fixed window of `max_cwnd` packets (the authors' `disable_aequitas_cc`, run
    /// for Fig. 10); the retransmission timer still runs.
    pub enabled: bool,
    /// The window of a new channel, packets (`init_cwnd: 2`).
    pub init_cwnd: f64,
    /// The lowest window, packets (the authors' 1).
    pub min_cwnd: f64,
    /// The largest window, packets (`max_cwnd: 30`).
    pub max_cwnd: f64,
    /// The delay target, seconds (`cc_delay_target: 10` µs): an ACK whose packet's round trip
    /// took less increases the window, otherwise it may decrease.
    pub target_delay_s: f64,
    /// Additive increase, packets per window of ACKs (`ai = 1`: `cwnd += ai / ⌊cwnd⌋` an ACK).
    pub ai: f64,
    /// Multiplicative decrease factor (`beta = 0.8`): `cwnd *= 1 − β (delay − target) / delay`.
    pub beta: f64,
    /// The largest decrease at once (`max_mdf = 0.5`).
    pub max_mdf: f64,
    /// Retransmission timeout, seconds (`retx_timeout: 450` µs).
    pub rto_s: f64,
    /// After this many timeouts without a new ACK the window resets to `min_cwnd`
    /// (`retrans_reset_thresh = 5`).
    pub rto_reset_after: u32,
    /// pFabric's minimal rate control in place of the delay rule (the authors'
    /// `PFabricFlow`, TCP-like): per new ACK `+1` below the slow-start threshold, else
    /// `+ai/⌊cwnd⌋`; a timeout sets the threshold to `max(cwnd/2, 2)` and the window to
    /// `min_cwnd`. Default false.
    pub loss_based: bool,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            enabled: true,
            init_cwnd: 2.0,
            min_cwnd: 1.0,
            max_cwnd: 30.0,
            target_delay_s: 10e-6,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            rto_s: 450e-6,
            rto_reset_after: 5,
            loss_based: false,
        }
    }
}

/// Aequitas' admission control as the simulator runs it: `control::aequitas::Config`'s fields
/// (targets for every class but the lowest).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionTable {
    /// Seconds per MTU (per RPC when `per_mtu` is false), one per class above the lowest.
    pub latency_target_s: Vec<f64>,
    #[serde(default)]
    pub target_percentile: Option<Vec<f64>>,
    #[serde(default)]
    pub increment_window_s: Option<Vec<f64>>,
    #[serde(default)]
    pub alpha: Option<f64>,
    #[serde(default)]
    pub beta: Option<f64>,
    #[serde(default)]
    pub floor: Option<f64>,
    #[serde(default)]
    pub per_mtu: Option<bool>,
    #[serde(default)]
    pub rules: Option<String>,
}

impl AdmissionTable {
    /// The controller's configuration (validated; errors name `admission.<field>`).
    pub fn to_config(&self) -> Result<AdmissionConfig> {
        let mut c = AdmissionConfig::new(self.latency_target_s.clone());
        if let Some(p) = &self.target_percentile {
            c.target_percentile = p.clone();
        }
        c.increment_window_s = self.increment_window_s.clone();
        c.alpha = self.alpha.unwrap_or(c.alpha);
        c.beta = self.beta.unwrap_or(c.beta);
        c.floor = self.floor.unwrap_or(c.floor);
        c.per_mtu = self.per_mtu.unwrap_or(c.per_mtu);
        if let Some(r) = &self.rules {
            c.rules = r.parse::<Rules>().map_err(prefix("admission"))?;
        }
        c.validate().map_err(prefix("admission"))?;
        Ok(c)
    }
}

fn prefix(table: &'static str) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::Field { field, message } => {
            Error::Field { field: format!("{table}.{field}"), message }
        }
        other => other,
    }
}

/// How the ports order packets, and whether hosts pace classes (`docs/aequitas.md`, "Port
/// kinds"; `scheduling` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduling {
    /// `"wfq"`: virtual-clock WFQ with the `weights`, drop-tail (Aequitas' network).
    #[default]
    Wfq,
    /// `"strict_priority"`: class 0 first, FIFO within a class, drop-tail (Fig. 19's SPQ).
    StrictPriority,
    /// `"pfabric"`: the packet of the smallest remaining RPC size first (its RPC's earliest),
    /// the largest dropped on overflow; ACKs first (pFabric, SIGCOMM 2013).
    Pfabric,
    /// `"qjump"`: strict priority with the lowest class pushed out on overflow at the ports,
    /// and each host sending each class's packets one per epoch of that class (QJump, NSDI
    /// 2015), no window.
    Qjump,
}

impl std::str::FromStr for Scheduling {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "wfq" => Scheduling::Wfq,
            "strict_priority" => Scheduling::StrictPriority,
            "pfabric" => Scheduling::Pfabric,
            "qjump" => Scheduling::Qjump,
            other => {
                return Err(Error::Field {
                    field: "scheduling".into(),
                    message: format!(
                        "unknown kind {other:?}: one of wfq, strict_priority, pfabric, qjump"
                    ),
                })
            }
        })
    }
}

fn default_scheduling() -> String {
    "wfq".into()
}

fn default_qjump_delay() -> f64 {
    1e-6
}

/// QJump's levels (Grosvenor et al., "Queues Don't Matter When You Can JUMP Them!", NSDI
/// 2015, §3): a host sends a class's packets at most one per **network epoch** of that class,
///
/// ```text
/// epoch_c = 2 · (n_hosts / f_c) · (MSS · 8 / link_rate) + processing_delay_s,
/// ```
///
/// `f_c` the class's throughput factor (the authors' `qjump_tput_factor: 32,16,1` and
/// `qjump_cumulative_pd: 1` µs, `ext/qjump_host.cpp`): a larger factor trades latency
/// guarantee for rate, `f_c = 1` is the level whose epoch bounds the worst-case queue of a
/// packet when all `n_hosts` send at once.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QjumpLevels {
    /// `f_c` per class, class 0 first (> 0).
    pub throughput_factors: Vec<f64>,
    /// The cumulative processing delay added to every epoch, seconds (the authors' 1 µs).
    #[serde(default = "default_qjump_delay")]
    pub processing_delay_s: f64,
}

/// A one-big-switch network of `n_hosts` hosts running RPCs over WFQ classes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    /// Hosts `0 … n_hosts − 1`, each with one link to the switch (≥ 2).
    pub n_hosts: u32,
    /// WFQ weight of each class, class 0 the highest (`qos_weights: 8,4,1`); ≥ 2 classes.
    pub weights: Vec<f64>,
    /// Link rate, bits per second.
    #[serde(default = "default_link_rate")]
    pub link_rate_bps: f64,
    /// Propagation delay of one link, seconds.
    #[serde(default = "default_propagation")]
    pub propagation_s: f64,
    /// Largest packet on the wire, header included, bytes.
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    /// Header of every packet (an ACK is a header alone), bytes.
    #[serde(default = "default_header")]
    pub header_bytes: u32,
    /// The shared drop-tail buffer of each switch port (and receiving host queue), bytes of
    /// packets waiting (the one in transmission excluded).
    #[serde(default = "default_buffer")]
    pub buffer_bytes: u64,
    /// Model each sender's NIC as a WFQ port of the link rate (unbounded buffer). The authors'
    /// simulator (`real_nic: 0`) does not: a host's packets go straight onto the switch.
    #[serde(default)]
    pub host_egress: bool,
    /// Pass each packet through its receiving host's queue (a WFQ port with the shared buffer,
    /// serialisation without propagation) after the switch port, as the authors' simulator
    /// does (`BigSwitchTopology::get_next_hop`: "also queue in the dst's queue").
    #[serde(default = "yes")]
    pub receiver_queue: bool,
    /// How the ports order packets: `"wfq"` (default), `"strict_priority"`, `"pfabric"` or
    /// `"qjump"` ([`Scheduling`]); `weights` serve `"wfq"` only but always count the classes.
    #[serde(default = "default_scheduling")]
    pub scheduling: String,
    /// QJump's levels, required with `scheduling: "qjump"` (one factor per class).
    #[serde(default)]
    pub qjump: Option<QjumpLevels>,
    /// Parallel channels (sub-queues) per `(source, destination, class)`, each with its own
    /// packet stream, window and timer; an RPC is issued on an idle one, else on the one with
    /// the fewest unacknowledged packets (the lowest index on ties). 1 (the default) is the
    /// authors' one channel per triple (`multiplex_constant: 1`) with its RPC FIFO; a `K`
    /// above the RPCs a triple has in progress at once gives each RPC a flow of its own, as
    /// pFabric's hosts do (one flow per RPC, Alizadeh et al., SIGCOMM 2013, §4.2).
    #[serde(default = "one")]
    pub channels_per_class: u32,
    /// pFabric with a limited number of priority levels (the authors' artifact,
    /// `pfabric_limited_priority: 1`, `ext/pfabric_flow.cpp`): a data packet is stamped with
    /// the level `i` of the first threshold `≥` its RPC's bytes not yet acknowledged (`len` if
    /// above them all), ACKs with 0; the artifact's thresholds are
    /// [`PFABRIC_ARTIFACT_THRESHOLDS`] (8 levels). Empty (the default): the exact remaining
    /// bytes. Bytes, strictly ascending, > 0; only with `scheduling: "pfabric"`.
    #[serde(default)]
    pub pfabric_priority_thresholds: Vec<u64>,
    /// The congestion window.
    #[serde(default)]
    pub cc: CcConfig,
    /// Aequitas' admission control; `None` runs every RPC at its requested class.
    #[serde(default)]
    pub admission: Option<AdmissionTable>,
    /// Seed of the admission draws.
    #[serde(default)]
    pub seed: u64,
}

impl NetConfig {
    /// Read from JSON (unknown fields refused by name) and validate.
    pub fn from_json(text: &str) -> Result<Self> {
        let c: NetConfig = serde_json::from_str(text)
            .map_err(|e| Error::Field { field: "network".into(), message: e.to_string() })?;
        c.validate()?;
        Ok(c)
    }

    /// Number of classes (of weights).
    pub fn classes(&self) -> usize {
        self.weights.len()
    }

    /// Payload of a full packet, bytes.
    pub fn mss_bytes(&self) -> u32 {
        self.mtu_bytes - self.header_bytes
    }

    /// The port kind (`scheduling` parsed; the error names the field).
    pub fn scheduling(&self) -> Result<Scheduling> {
        self.scheduling.parse()
    }

    /// pFabric's priority number of a data packet whose RPC has `remaining` bytes not yet
    /// acknowledged: the bytes themselves (saturated at `u32::MAX`), or with
    /// `pfabric_priority_thresholds` the level of the first threshold `≥ remaining`.
    pub fn pfabric_priority(&self, remaining: u64) -> u32 {
        let t = &self.pfabric_priority_thresholds;
        if t.is_empty() {
            remaining.min(u64::from(u32::MAX)) as u32
        } else {
            t.partition_point(|&b| b < remaining) as u32
        }
    }

    /// QJump's epoch per class, seconds (empty unless `scheduling` is `"qjump"`).
    pub fn qjump_epochs_s(&self) -> Vec<f64> {
        match (&self.qjump, self.scheduling()) {
            (Some(q), Ok(Scheduling::Qjump)) => {
                let packet_s = f64::from(self.mss_bytes()) * 8.0 / self.link_rate_bps;
                q.throughput_factors
                    .iter()
                    .map(|f| 2.0 * f64::from(self.n_hosts) / f * packet_s + q.processing_delay_s)
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The controller's configuration, if admission runs.
    pub fn admission_config(&self) -> Result<Option<AdmissionConfig>> {
        self.admission.as_ref().map(AdmissionTable::to_config).transpose()
    }

    /// Check every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, message: String| Err(Error::Field { field: field.into(), message });
        if self.n_hosts < 2 {
            return bad("n_hosts", format!("need at least 2 hosts, got {}", self.n_hosts));
        }
        if self.weights.len() < 2 || self.weights.len() > 255 {
            return bad("weights", format!("need 2 to 255 classes, got {}", self.weights.len()));
        }
        for (i, &w) in self.weights.iter().enumerate() {
            if !(w.is_finite() && w > 0.0) {
                return bad(&format!("weights[{i}]"), format!("must be > 0, got {w}"));
            }
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.link_rate_bps) {
            return bad("link_rate_bps", format!("must be > 0, got {}", self.link_rate_bps));
        }
        if !(self.propagation_s.is_finite() && self.propagation_s >= 0.0) {
            return bad("propagation_s", format!("must be ≥ 0 s, got {}", self.propagation_s));
        }
        if self.header_bytes == 0 || self.mtu_bytes <= self.header_bytes {
            return bad(
                "mtu_bytes",
                format!(
                    "must exceed header_bytes ({}) and header_bytes be > 0, got {}",
                    self.header_bytes, self.mtu_bytes
                ),
            );
        }
        if self.buffer_bytes < u64::from(self.mtu_bytes) {
            return bad(
                "buffer_bytes",
                format!(
                    "must hold one packet of {} bytes, got {}",
                    self.mtu_bytes, self.buffer_bytes
                ),
            );
        }
        if self.channels_per_class == 0 || self.channels_per_class > MAX_CHANNELS_PER_CLASS {
            return bad(
                "channels_per_class",
                format!(
                    "must be in [1, {MAX_CHANNELS_PER_CLASS}], got {}",
                    self.channels_per_class
                ),
            );
        }
        let t = &self.pfabric_priority_thresholds;
        if !t.is_empty() && self.scheduling()? != Scheduling::Pfabric {
            return bad(
                "pfabric_priority_thresholds",
                format!("set with scheduling {:?} (pFabric's only)", self.scheduling),
            );
        }
        if t.len() > 255 {
            return bad(
                "pfabric_priority_thresholds",
                format!("at most 255 thresholds, got {}", t.len()),
            );
        }
        for (i, &b) in t.iter().enumerate() {
            if b == 0 || (i > 0 && b <= t[i - 1]) {
                return bad(
                    &format!("pfabric_priority_thresholds[{i}]"),
                    format!("must be > 0 and above the one before, got {b}"),
                );
            }
        }
        let cc = &self.cc;
        if !(cc.min_cwnd >= 1.0 && cc.min_cwnd.is_finite()) {
            return bad("cc.min_cwnd", format!("must be ≥ 1 packet, got {}", cc.min_cwnd));
        }
        if !(cc.max_cwnd >= cc.min_cwnd && cc.max_cwnd.is_finite()) {
            return bad("cc.max_cwnd", format!("must be ≥ cc.min_cwnd, got {}", cc.max_cwnd));
        }
        if !(cc.init_cwnd >= cc.min_cwnd && cc.init_cwnd <= cc.max_cwnd) {
            return bad(
                "cc.init_cwnd",
                format!("must be within [cc.min_cwnd, cc.max_cwnd], got {}", cc.init_cwnd),
            );
        }
        if !positive(cc.target_delay_s) {
            return bad("cc.target_delay_s", format!("must be > 0 s, got {}", cc.target_delay_s));
        }
        if !(cc.ai.is_finite() && cc.ai >= 0.0) {
            return bad("cc.ai", format!("must be ≥ 0, got {}", cc.ai));
        }
        if !(cc.beta.is_finite() && cc.beta >= 0.0) {
            return bad("cc.beta", format!("must be ≥ 0, got {}", cc.beta));
        }
        if !(cc.max_mdf >= 0.0 && cc.max_mdf < 1.0) {
            return bad("cc.max_mdf", format!("must be in [0, 1), got {}", cc.max_mdf));
        }
        if !positive(cc.rto_s) {
            return bad("cc.rto_s", format!("must be > 0 s, got {}", cc.rto_s));
        }
        if cc.rto_reset_after == 0 {
            return bad("cc.rto_reset_after", "must be ≥ 1".into());
        }
        let kind = self.scheduling()?;
        match (kind, &self.qjump) {
            (Scheduling::Qjump, None) => {
                return bad("qjump", "scheduling \"qjump\" needs qjump.throughput_factors".into())
            }
            (Scheduling::Qjump, Some(q)) => {
                if q.throughput_factors.len() != self.weights.len() {
                    return bad(
                        "qjump.throughput_factors",
                        format!(
                            "{} factors for {} classes: one per class",
                            q.throughput_factors.len(),
                            self.weights.len()
                        ),
                    );
                }
                for (i, &f) in q.throughput_factors.iter().enumerate() {
                    if !positive(f) {
                        return bad(
                            &format!("qjump.throughput_factors[{i}]"),
                            format!("must be > 0, got {f}"),
                        );
                    }
                }
                if !(q.processing_delay_s.is_finite() && q.processing_delay_s >= 0.0) {
                    return bad(
                        "qjump.processing_delay_s",
                        format!("must be ≥ 0 s, got {}", q.processing_delay_s),
                    );
                }
            }
            (_, Some(_)) => {
                return bad("qjump", format!("set with scheduling {:?}", self.scheduling))
            }
            (_, None) => {}
        }
        if let Some(a) = self.admission_config()? {
            if a.classes() as usize != self.weights.len() {
                return bad(
                    "admission.latency_target_s",
                    format!(
                        "{} targets for {} classes: one per class above the lowest",
                        a.latency_target_s.len(),
                        self.weights.len()
                    ),
                );
            }
        }
        Ok(())
    }
}
