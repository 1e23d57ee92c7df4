//! The gateway's configuration: a small JSON document `tailbound gate` writes from a Plan and an
//! SSD profile (`python/tailbound/enforce/storage.py`), read here with every field checked.
//!
//! ```json
//! {"listen": "127.0.0.1:10809", "backend_dir": "/srv/gate", "export_size": 67108864,
//!  "max_request_bytes": 33554432,
//!  "exports": ["A", "B"],
//!  "scheduler": {"kind": "priority", "priority": [8, 7], "buckets": [[], [[0.5, 0.01]]]},
//!  "limits": {"read_mpl": 8, "write_mpl": 8, "max_read_bytes": 1048576,
//!             "max_write_bytes": 1048576, "low_priority_mpl": 0, "low_priority_work": null},
//!  "profile": {"sizes": [4096], "read_bandwidth": [8e7], "write_bandwidth": [4e7]},
//!  "emulate_device": false, "metrics_listen": "127.0.0.1:9109"}
//! ```
//!
//! Optional `"export_class": {"A": 1}` gives an export's requests a class of their own (an index
//! of the scheduler's classes; `classify.rs`); unset, a request is in its workload's class.
//!
//! Optional `"control"` runs a controller in the gateway on its device's completions (PSLO,
//! `docs/pslo.md`): the same table and serde as a simulated device's `devices[i].control`
//! (`tailbound_core::sim::control::ControlSpec`, its tenants by workload index = position in
//! `exports`), e.g. `{"kind": "pslo", "policy": "LS+T", "interval_completions": 200,
//! "tenants": [{"workload": 0, "latency_s": 0.05, "percentile": 0.99, "throughput_iops": 250}]}`.
//! Optional `"array"` (with `emulate_device`, a file backend) makes the emulated device the
//! simulator's disk array with a knee (`tailbound_core::sim::array::ArrayModel`, the same serde
//! as `devices[i].array`; `array.rs` here).
//!
//! `exports[w]` is workload `w` of the scheduler (`tailbound_core::sched::SchedulerConfig`, the
//! simulator's own serde form); `limits` are the dispatcher's (`sched::dispatch::Limits`; `null`
//! is unlimited); `profile` prices each request in device-seconds exactly as the analysis does
//! (`SsdModel.tokens`: `size / bandwidth(op, size)`, bandwidth interpolated linearly between
//! rows, the first row below it and the last row above it).

use std::collections::BTreeMap;

use serde::Deserialize;
use tailbound_core::sched::dispatch::{Dispatcher, Limits};
use tailbound_core::sched::SchedulerConfig;
use tailbound_core::sim::array::ArrayModel;
use tailbound_core::sim::control::{ControlSpec, DeviceControl};

/// The largest request the gateway serves when the configuration does not say (32 MiB, the
/// largest request Linux's nbd driver and libnbd send by default).
pub const DEFAULT_MAX_REQUEST: u32 = 32 * 1024 * 1024;

/// The gateway's configuration (see the module documentation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `host:port` to listen on.
    pub listen: String,
    /// Directory of the backend files, one `<export>.img` per export.
    pub backend_dir: String,
    /// Size of every export in bytes (a backend file is created or extended to it).
    pub export_size: u64,
    /// Largest read or write served; larger reads get `EOVERFLOW`, larger writes close the
    /// connection (their payload cannot be skipped safely).
    #[serde(default = "default_max_request")]
    pub max_request_bytes: u32,
    /// Export names, in the scheduler's workload order.
    pub exports: Vec<String>,
    /// The dispatcher's scheduler.
    pub scheduler: SchedulerConfig,
    /// The dispatch limits.
    pub limits: LimitsConfig,
    /// The SSD profile's bandwidth table.
    pub profile: CostTable,
    /// Hold each request's dispatch slot until the emulated device (unit rate, requests served
    /// one after another for their profile cost) has served it: makes the profile the device
    /// when the real backend (a page-cached file) is much faster, for tests and demonstrations.
    #[serde(default)]
    pub emulate_device: bool,
    /// `host:port` of an upstream NBD server: each export is its export of the same name
    /// (then `backend_dir` and `export_size` are not used; the size is the upstream's).
    #[serde(default)]
    pub upstream: Option<String>,
    /// `host:port` of the Prometheus text endpoint (`GET /metrics`), if any.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Open the backend files and block devices with `O_DIRECT` (no page cache): reads of any
    /// alignment are served through an aligned bounce buffer, writes whose offset or length is
    /// not a multiple of the backend's block size get `EINVAL` (the block size is advertised as
    /// the export's minimum block size).
    #[serde(default)]
    pub direct: bool,
    /// On SIGTERM or SIGINT, how long (seconds) requests already in the gateway may take to
    /// complete and reply before the gateway exits without them.
    #[serde(default = "default_drain_timeout")]
    pub drain_timeout_s: f64,
    /// Optional class of an export's requests: export name → index of the scheduler's classes
    /// (`classify.rs`); an export not listed has no class of its own (its workload's class).
    #[serde(default)]
    pub export_class: BTreeMap<String, u32>,
    /// A controller on the device's completions (PSLO), the simulator's `devices[i].control`.
    #[serde(default)]
    pub control: Option<ControlSpec>,
    /// The emulated device's service model: the simulator's array with a knee
    /// (`devices[i].array`) instead of one request after another; needs `emulate_device` and a
    /// file backend.
    #[serde(default)]
    pub array: Option<ArrayModel>,
}

fn default_drain_timeout() -> f64 {
    10.0
}

fn default_max_request() -> u32 {
    DEFAULT_MAX_REQUEST
}

/// `sched::dispatch::Limits` in JSON (`null`: unlimited).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub read_mpl: u32,
    pub write_mpl: u32,
    #[serde(default)]
    pub max_read_bytes: Option<f64>,
    #[serde(default)]
    pub max_write_bytes: Option<f64>,
    #[serde(default)]
    pub low_priority_mpl: Option<u32>,
    #[serde(default)]
    pub low_priority_work: Option<f64>,
    #[serde(default)]
    pub level_mpl: Option<u32>,
}

impl LimitsConfig {
    /// The dispatcher's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            read_mpl: self.read_mpl,
            write_mpl: self.write_mpl,
            max_read_bytes: self.max_read_bytes.unwrap_or(f64::INFINITY),
            max_write_bytes: self.max_write_bytes.unwrap_or(f64::INFINITY),
            low_priority_mpl: self.low_priority_mpl.unwrap_or(u32::MAX),
            low_priority_bytes: f64::INFINITY,
            low_priority_work: self.low_priority_work.unwrap_or(f64::INFINITY),
            level_mpl: self.level_mpl.unwrap_or(u32::MAX),
            batching: None,
        }
    }
}

/// An SSD profile's bandwidth table (bytes per second by request size).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostTable {
    pub sizes: Vec<f64>,
    pub read_bandwidth: Vec<f64>,
    pub write_bandwidth: Vec<f64>,
}

impl CostTable {
    /// Check the table: rows of equal length, sizes increasing, every number positive.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.sizes.len();
        if n == 0 || self.read_bandwidth.len() != n || self.write_bandwidth.len() != n {
            return Err("profile: sizes, read_bandwidth and write_bandwidth must be non-empty \
                        and of equal length"
                .into());
        }
        let all = self.sizes.iter().chain(&self.read_bandwidth).chain(&self.write_bandwidth);
        if !all.into_iter().all(|x| x.is_finite() && *x > 0.0) {
            return Err("profile: every size and bandwidth must be finite and positive".into());
        }
        if self.sizes.windows(2).any(|w| w[1] <= w[0]) {
            return Err("profile: sizes must increase".into());
        }
        Ok(())
    }

    /// A request's work in seconds of exclusive device service: `size / bandwidth(op, size)`.
    pub fn cost(&self, write: bool, size: f64) -> f64 {
        let bw = if write { &self.write_bandwidth } else { &self.read_bandwidth };
        size / interp(size, &self.sizes, bw)
    }
}

/// `numpy.interp`: linear between points, clamped to the end values outside them.
fn interp(x: f64, xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len();
    if x <= xs[0] {
        return ys[0];
    }
    if x >= xs[n - 1] {
        return ys[n - 1];
    }
    let i = xs.partition_point(|&v| v <= x); // xs[i-1] <= x < xs[i]
    let (x0, x1, y0, y1) = (xs[i - 1], xs[i], ys[i - 1], ys[i]);
    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
}

/// Whether a name is safe as an export name and a file name (`[A-Za-z0-9._-]`, not starting
/// with a dot, at most 255 bytes).
pub fn valid_export_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl Config {
    /// Parse and check a configuration document.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let c: Config = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        c.profile.validate()?;
        c.limits.limits().validate().map_err(|e| format!("limits: {e}"))?;
        if c.exports.is_empty() {
            return Err("exports: at least one export".into());
        }
        let mut seen = std::collections::HashSet::new();
        for (i, e) in c.exports.iter().enumerate() {
            if !valid_export_name(e) {
                return Err(format!("exports[{i}]: {e:?} is not a valid name ([A-Za-z0-9._-])"));
            }
            if !seen.insert(e) {
                return Err(format!("exports[{i}]: duplicate {e:?}"));
            }
        }
        if c.export_size == 0 || c.max_request_bytes == 0 {
            return Err("export_size and max_request_bytes must be positive".into());
        }
        c.scheduler.build(c.exports.len()).map_err(|e| format!("scheduler: {e}"))?;
        let classes = c.scheduler.classes();
        for (name, &class) in &c.export_class {
            if !c.exports.contains(name) {
                return Err(format!("export_class.{name}: no export {name:?}"));
            }
            if classes > 0 && class as usize >= classes {
                return Err(format!(
                    "export_class.{name}: class {class}, but the {} scheduler has classes 0..{classes}",
                    c.scheduler.kind()
                ));
            }
        }
        if !(c.drain_timeout_s.is_finite() && c.drain_timeout_s >= 0.0) {
            return Err("drain_timeout_s must be finite and non-negative".into());
        }
        if let Some(a) = &c.array {
            a.validate("").map_err(|e| match e {
                tailbound_core::Error::Invalid(m) => m.trim_start_matches('.').to_string(),
                other => other.to_string(),
            })?;
            if !c.emulate_device || c.upstream.is_some() {
                return Err("array: the emulated array needs emulate_device and a file backend \
                            (no upstream)"
                    .into());
            }
        }
        if let Some(spec) = &c.control {
            // the controller as the gateway will build it: every field checked, named
            let scheduler = c.scheduler.build(c.exports.len()).map_err(|e| e.to_string())?;
            let mut d = Dispatcher::new(c.limits.limits(), scheduler).map_err(|e| e.to_string())?;
            DeviceControl::new(spec, c.exports.len(), &mut d, "control")
                .map_err(|e| e.to_string())?;
        }
        Ok(c)
    }

    /// Whether `new` may replace `self` in a running gateway (hot reload): the exports, the
    /// scheduler, the limits, the profile, `emulate_device`, `array`, `control` and
    /// `drain_timeout_s` may change;
    /// the listening addresses, the backend (directory, size, upstream, direct I/O) and the
    /// largest request may not (they need a restart).
    pub fn reload_compatible(&self, new: &Config) -> Result<(), String> {
        let fixed = [
            ("listen", self.listen != new.listen),
            ("metrics_listen", self.metrics_listen != new.metrics_listen),
            ("backend_dir", self.backend_dir != new.backend_dir),
            ("export_size", self.export_size != new.export_size),
            ("upstream", self.upstream != new.upstream),
            ("direct", self.direct != new.direct),
            ("max_request_bytes", self.max_request_bytes != new.max_request_bytes),
        ];
        match fixed.iter().find(|(_, changed)| *changed) {
            Some((field, _)) => Err(format!("{field} cannot change in a reload (restart instead)")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> CostTable {
        CostTable {
            sizes: vec![512.0, 1024.0],
            read_bandwidth: vec![1e6, 2e6],
            write_bandwidth: vec![5e5, 1e6],
        }
    }

    #[test]
    fn cost_matches_the_python_token_model() {
        // SsdModel's doctest: 768 B at 1.5 MB/s, 4096 B at 2 MB/s, 512 B written at 0.5 MB/s
        let t = table();
        assert!((t.cost(false, 768.0) - 0.000512).abs() < 1e-15);
        assert!((t.cost(false, 4096.0) - 0.002048).abs() < 1e-15);
        assert!((t.cost(true, 512.0) - 0.001024).abs() < 1e-15);
        assert!((t.cost(false, 100.0) - 1e-4).abs() < 1e-15);
    }

    #[test]
    fn config_is_checked() {
        let ok = r#"{"listen": "127.0.0.1:0", "backend_dir": "/tmp", "export_size": 1048576,
            "exports": ["A", "B"],
            "scheduler": {"kind": "priority", "priority": [2, 1], "buckets": [[], [[0.5, 0.01]]]},
            "limits": {"read_mpl": 4, "write_mpl": 4, "low_priority_mpl": 0, "level_mpl": 1},
            "profile": {"sizes": [4096], "read_bandwidth": [1e8], "write_bandwidth": [1e8]}}"#;
        let c = Config::from_json(ok).unwrap();
        assert_eq!(c.max_request_bytes, DEFAULT_MAX_REQUEST);
        assert_eq!(c.limits.limits().low_priority_mpl, 0);
        assert_eq!(c.limits.limits().level_mpl, 1);
        let bad = [
            ok.replace("\"A\", \"B\"", "\"A\", \"A\""),
            ok.replace("\"A\", \"B\"", "\"../x\", \"B\""),
            ok.replace("[2, 1]", "[2]"),
            ok.replace("\"read_mpl\": 4", "\"read_mpl\": 0"),
            ok.replace("[1e8], \"write", "[-1], \"write"),
            ok.replace("\"exports\"", "\"typo\": 1, \"exports\""),
        ];
        for b in bad {
            assert!(Config::from_json(&b).is_err(), "{b}");
        }
        assert_eq!(c.drain_timeout_s, 10.0);
        assert!(Config::from_json(
            &ok.replace("\"exports\"", "\"drain_timeout_s\": -1, \"exports\"")
        )
        .is_err());
        // a reload may change the plan's part, not the addresses or the backend
        let plan2 = Config::from_json(
            &ok.replace("[2, 1]", "[1, 2]").replace("\"A\", \"B\"", "\"A\", \"C\""),
        )
        .unwrap();
        assert!(c.reload_compatible(&plan2).is_ok());
        let moved = Config::from_json(&ok.replace("127.0.0.1:0", "127.0.0.1:1")).unwrap();
        assert!(c.reload_compatible(&moved).unwrap_err().contains("listen"));
        let direct =
            Config::from_json(&ok.replace("\"exports\"", "\"direct\": true, \"exports\"")).unwrap();
        assert!(c.reload_compatible(&direct).unwrap_err().contains("direct"));
    }

    #[test]
    fn control_and_array_are_the_simulator_s_tables_checked_naming_the_field() {
        let base = r#"{"listen": "127.0.0.1:0", "backend_dir": "/tmp", "export_size": 1048576,
            "exports": ["A", "B"], "scheduler": {"kind": "fifo"},
            "limits": {"read_mpl": 64, "write_mpl": 64}, "emulate_device": true,
            "profile": {"sizes": [4096], "read_bandwidth": [1e6], "write_bandwidth": [1e6]},
            "array": {"channels": 4, "interference": 0.1, "thrash": 0.25, "tail_shape": 3},
            "control": {"kind": "pslo", "policy": "LS+T", "interval_completions": 200,
              "tenants": [{"workload": 0, "latency_s": 0.05, "percentile": 0.99,
                           "throughput_iops": 250},
                          {"workload": 1, "throughput_iops": 100}]}}"#;
        let c = Config::from_json(base).unwrap();
        assert_eq!(c.array.as_ref().map(|a| a.channels), Some(4));
        assert!(c.control.is_some());
        let cases = [
            (base.replace("0.99", "1.5"), "control.tenants[0].percentile"),
            (base.replace("\"workload\": 1", "\"workload\": 2"), "control.tenants[1].workload"),
            (base.replace("\"LS+T\"", "\"LS+X\""), "policy"),
            (
                base.replace("\"interval_completions\": 200", "\"interval_completions\": 0"),
                "control.interval_completions",
            ),
            (base.replace("250", "-1"), "control.tenants[0].throughput_iops"),
            (base.replace("\"channels\": 4", "\"channels\": 0"), "array.channels"),
            (base.replace("\"emulate_device\": true", "\"emulate_device\": false"), "array"),
            (base.replace("\"thrash\"", "\"typo\""), "typo"),
        ];
        for (bad, field) in cases {
            let e = Config::from_json(&bad).unwrap_err();
            assert!(e.contains(field), "{field}: {e}");
        }
    }

    #[test]
    fn export_names() {
        assert!(valid_export_name("tenant-1.a_b"));
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(256)] {
            assert!(!valid_export_name(bad), "{bad}");
        }
    }
}
