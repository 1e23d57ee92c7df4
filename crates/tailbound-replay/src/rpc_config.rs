//! The Aequitas RPC client's input: its configuration (destinations, classes with their DSCP and
//! SLO, the controller's parameters), its RPCs file, and the per-RPC decisions it takes with the
//! core's controller (`tailbound_core::control::aequitas`; docs/aequitas.md, "On real links").
//!
//! The configuration is JSON (written by `tailbound.enforce.rpc_replay`):
//!
//! ```json
//! {"destinations": [{"name": "s", "addr": "198.18.0.2:7100"}],
//!  "classes": [{"name": "h", "dscp": 46, "slo_s": 0.015}, {"name": "l", "dscp": 0}],
//!  "admission": {"increment_window_s": [0.5], "alpha": 0.01, "beta": 0.01, "floor": 0.1,
//!                "per_mtu": false, "rules": "paper"},
//!  "mss_bytes": 1448, "response_bytes": 64, "seed": 1}
//! ```
//!
//! Classes go from the highest (0) to the lowest, which takes the downgraded RPCs and has no SLO;
//! every other class has one (`slo_s`, seconds per MTU when `admission.per_mtu`, else per RPC),
//! which becomes the controller's `latency_target_s`. `admission` holds the rest of the core's
//! `Config` by its field names (`target_percentile`, `increment_window_s`, `alpha`, `beta`,
//! `floor`, `per_mtu`, `rules`), each optional with the core's default. An RPC's size in MTUs is
//! `⌈size / mss_bytes⌉` (1448: the TCP payload of a 1500-byte Ethernet frame with timestamps).
//!
//! The RPCs file is CSV `time_s,dst,class,size`: issue time (seconds), destination and requested
//! class by name, and the request message's bytes (the RPC's payload, the direction the RNL
//! measures; header included, at least 32). Every answer is `response_bytes` long.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, ToSocketAddrs};

use serde::Deserialize;
use tailbound_core::control::aequitas::rnl::size_in_mtus;
use tailbound_core::control::aequitas::{Admission, Outcome};
use tailbound_core::netsim::config::AdmissionTable;

use crate::proto::{Error, MAX_MESSAGE, MAX_REQUESTS, MAX_TIME_S, REQUEST_HEADER, RESPONSE_HEADER};

/// The most destinations and classes a run takes (one connection per pair).
pub const MAX_DESTINATIONS: usize = 64;
pub const MAX_CLASSES: usize = 8;
const MAX_FILE_BYTES: u64 = 1 << 30;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDestination {
    name: String,
    addr: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    name: String,
    dscp: i64,
    #[serde(default)]
    slo_s: Option<f64>,
}

fn default_mss() -> f64 {
    1448.0
}
fn default_response() -> u64 {
    64
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    destinations: Vec<RawDestination>,
    classes: Vec<RawClass>,
    #[serde(default)]
    admission: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default = "default_mss")]
    mss_bytes: f64,
    #[serde(default = "default_response")]
    response_bytes: u64,
    #[serde(default)]
    seed: u64,
}

/// A class: its name, DSCP (its connections' TOS byte is `dscp << 2`) and SLO (none for the
/// lowest).
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub name: String,
    pub dscp: u8,
    pub slo_s: Option<f64>,
}

impl Class {
    /// The IPv4 TOS byte of the class's sockets: the DSCP in its top six bits, ECN bits clear.
    pub fn tos(&self) -> u8 {
        self.dscp << 2
    }
}

/// The client's configuration, checked.
#[derive(Debug, Clone)]
pub struct RpcConfig {
    /// Destinations `(name, address)`; a destination's index is the controller's `dst`.
    pub destinations: Vec<(String, SocketAddr)>,
    /// Classes, 0 the highest; the last is the lowest.
    pub classes: Vec<Class>,
    /// The controller's configuration (the core's, validated).
    pub admission: tailbound_core::control::aequitas::Config,
    pub mss_bytes: f64,
    pub response_bytes: u64,
    pub seed: u64,
}

impl RpcConfig {
    /// Read and check `path`; errors name the file and the field (`classes[1].dscp`).
    pub fn load(path: &str) -> Result<RpcConfig, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io(format!("cannot read {path}: {e}")))?;
        RpcConfig::from_json(&text).map_err(|e| Error::Usage(format!("{path}: {e}")))
    }

    /// Parse and check the JSON text; the error is `field: message`.
    pub fn from_json(text: &str) -> Result<RpcConfig, String> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| format!("not valid: {e}"))?;
        if raw.destinations.is_empty() || raw.destinations.len() > MAX_DESTINATIONS {
            return Err(format!(
                "destinations: 1 to {MAX_DESTINATIONS}, got {}",
                raw.destinations.len()
            ));
        }
        let mut destinations = Vec::new();
        for (i, d) in raw.destinations.iter().enumerate() {
            if d.name.is_empty() || destinations.iter().any(|(n, _)| n == &d.name) {
                return Err(format!("destinations[{i}].name: empty or given twice: {:?}", d.name));
            }
            let addr =
                d.addr.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
                    format!("destinations[{i}].addr: expected IP:PORT, got {:?}", d.addr)
                })?;
            destinations.push((d.name.clone(), addr));
        }
        let n = raw.classes.len();
        if !(2..=MAX_CLASSES).contains(&n) {
            return Err(format!("classes: 2 to {MAX_CLASSES} (the last the lowest), got {n}"));
        }
        let mut classes: Vec<Class> = Vec::new();
        for (i, c) in raw.classes.iter().enumerate() {
            if c.name.is_empty() || classes.iter().any(|k| k.name == c.name) {
                return Err(format!("classes[{i}].name: empty or given twice: {:?}", c.name));
            }
            if !(0..64).contains(&c.dscp) {
                return Err(format!("classes[{i}].dscp: expected 0..63, got {}", c.dscp));
            }
            if let Some(j) = classes.iter().position(|k| i64::from(k.dscp) == c.dscp) {
                return Err(format!("classes[{i}].dscp: {} is classes[{j}]'s too", c.dscp));
            }
            match (i + 1 == n, c.slo_s) {
                (true, Some(_)) => {
                    return Err(format!(
                        "classes[{i}].slo_s: the lowest class takes downgraded RPCs and has no SLO"
                    ))
                }
                (false, None) => return Err(format!("classes[{i}].slo_s: missing")),
                (false, Some(s)) if !(s.is_finite() && s > 0.0) => {
                    return Err(format!("classes[{i}].slo_s: must be > 0 s, got {s}"))
                }
                _ => {}
            }
            classes.push(Class { name: c.name.clone(), dscp: c.dscp as u8, slo_s: c.slo_s });
        }
        let mut table = raw.admission.unwrap_or_default();
        if table.contains_key("latency_target_s") {
            return Err("admission.latency_target_s: given by the classes' slo_s".into());
        }
        let targets: Vec<f64> = classes.iter().filter_map(|c| c.slo_s).collect();
        table.insert("latency_target_s".into(), serde_json::json!(targets));
        let table: AdmissionTable = serde_json::from_value(serde_json::Value::Object(table))
            .map_err(|e| format!("admission: {e}"))?;
        let admission = table.to_config().map_err(|e| e.to_string())?;
        if !(raw.mss_bytes.is_finite() && raw.mss_bytes >= 1.0) {
            return Err(format!("mss_bytes: expected bytes ≥ 1, got {}", raw.mss_bytes));
        }
        if !(RESPONSE_HEADER as u64..=MAX_MESSAGE).contains(&raw.response_bytes) {
            return Err(format!(
                "response_bytes: expected {RESPONSE_HEADER} to {MAX_MESSAGE}, got {}",
                raw.response_bytes
            ));
        }
        Ok(RpcConfig {
            destinations,
            classes,
            admission,
            mss_bytes: raw.mss_bytes,
            response_bytes: raw.response_bytes,
            seed: raw.seed,
        })
    }

    /// The connection of `(dst, class)`: one per destination and class, destinations major.
    pub fn connection(&self, dst: usize, class: usize) -> usize {
        dst * self.classes.len() + class
    }
}

/// One RPC of the RPCs file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rpc {
    pub time_s: f64,
    pub dst: usize,
    pub class: usize,
    /// The request message's bytes (header included).
    pub size_bytes: u64,
    /// Its size in MTUs, `⌈size / mss⌉`.
    pub size_mtus: f64,
}

/// Read the RPCs file (sorted by time on return); errors name the line and column.
pub fn read_rpcs(path: &str, config: &RpcConfig) -> Result<Vec<Rpc>, Error> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::Io(format!("cannot read {path}: {e}")))?;
    if file.metadata().map(|m| m.len()).unwrap_or(0) > MAX_FILE_BYTES {
        return Err(Error::Usage(format!("{path}: above the limit of {MAX_FILE_BYTES} bytes")));
    }
    parse_rpcs(BufReader::new(file), config).map_err(|e| Error::Usage(format!("{path}:{e}")))
}

/// [`read_rpcs`] on any reader; the error is `line: column: message`.
pub fn parse_rpcs<R: BufRead>(reader: R, config: &RpcConfig) -> Result<Vec<Rpc>, String> {
    let dsts: HashMap<&str, usize> =
        config.destinations.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
    let classes: HashMap<&str, usize> =
        config.classes.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
    let mut out = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let lineno = n + 1;
        let line = line.map_err(|e| format!("{lineno}: cannot read: {e}"))?;
        let line = line.trim();
        if n == 0 {
            if line != "time_s,dst,class,size" {
                return Err(format!(
                    "1: expected the header 'time_s,dst,class,size', got {line:?}"
                ));
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 4 {
            return Err(format!("{lineno}: expected 4 fields, got {}", f.len()));
        }
        let time_s = match f[0].parse::<f64>() {
            Ok(t) if t.is_finite() && (0.0..=MAX_TIME_S).contains(&t) => t,
            _ => {
                return Err(format!(
                    "{lineno}: time_s: expected seconds in [0, 1e10], got {:?}",
                    f[0]
                ))
            }
        };
        let dst = *dsts
            .get(f[1])
            .ok_or_else(|| format!("{lineno}: dst: {:?} is not a destination", f[1]))?;
        let class = *classes
            .get(f[2])
            .ok_or_else(|| format!("{lineno}: class: {:?} is not a class", f[2]))?;
        let size_bytes = match f[3].parse::<u64>() {
            Ok(s) if (REQUEST_HEADER as u64..=MAX_MESSAGE).contains(&s) => s,
            _ => {
                return Err(format!(
                    "{lineno}: size: expected whole bytes in [{REQUEST_HEADER}, {MAX_MESSAGE}], got {:?}",
                    f[3]
                ))
            }
        };
        let size_mtus = size_in_mtus(size_bytes as f64, config.mss_bytes)
            .map_err(|e| format!("{lineno}: size: {e}"))?;
        out.push(Rpc { time_s, dst, class, size_bytes, size_mtus });
        if out.len() > MAX_REQUESTS {
            return Err(format!("{lineno}: more than {MAX_REQUESTS} RPCs"));
        }
    }
    out.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    Ok(out)
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): the admission draws, seeded by the
/// configuration so a run's decisions depend on its RNLs only.
#[derive(Debug, Clone)]
pub struct Draws(u64);

impl Draws {
    pub fn new(seed: u64) -> Self {
        Draws(seed)
    }

    /// A uniform draw in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Where an RPC runs: its class, whether it was downgraded, its channel's `p_admit` at issue,
/// and the connection (destination and class) that carries it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub class_run: usize,
    pub downgraded: bool,
    pub p_admit: f64,
    pub connection: usize,
}

/// The sender's side of Aequitas: the core's [`Admission`] with this host as source 0 and the
/// destinations' indices as `dst`, and the draws.
pub struct Controller {
    admission: Admission,
    draws: Draws,
    classes: usize,
}

impl Controller {
    pub fn new(config: &RpcConfig) -> Result<Controller, Error> {
        let admission = Admission::new(config.admission.clone(), 0.0)
            .map_err(|e| Error::Usage(format!("admission: {e}")))?;
        Ok(Controller { admission, draws: Draws::new(config.seed), classes: config.classes.len() })
    }

    /// Decide the class of an RPC to `dst` requesting `class` (`Admission::admit` with the next
    /// draw; the lowest class is always admitted and takes no draw).
    pub fn issue(&mut self, dst: usize, class: usize) -> Decision {
        let lowest = self.classes - 1;
        let p_admit = self.admission.p_admit(0, dst as u32, class as u32);
        let u = if class == lowest { 0.0 } else { self.draws.uniform() };
        let a = self
            .admission
            .admit(0, dst as u32, class as u32, u)
            .expect("class and draw in range: checked when read");
        let class_run = a.class_run as usize;
        Decision {
            class_run,
            downgraded: a.downgraded,
            p_admit,
            connection: dst * self.classes + class_run, // RpcConfig::connection
        }
    }

    /// Feed a completion: the RPC ran at `class_run` to `dst`, its RNL `latency_s`, `size_mtus`,
    /// `now_s` seconds since the run's start.
    pub fn complete(
        &mut self,
        dst: usize,
        class_run: usize,
        latency_s: f64,
        size_mtus: f64,
        now_s: f64,
    ) -> Outcome {
        self.admission
            .complete(0, dst as u32, class_run as u32, latency_s.max(0.0), size_mtus, now_s)
            .expect("class, size and times in range")
    }

    #[cfg(test)]
    pub fn p_admit(&self, dst: usize, class: usize) -> f64 {
        self.admission.p_admit(0, dst as u32, class as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"destinations": [{"name": "s", "addr": "127.0.0.1:7100"},
                                           {"name": "t", "addr": "127.0.0.1:7101"}],
        "classes": [{"name": "h", "dscp": 46, "slo_s": 0.01},
                    {"name": "m", "dscp": 26, "slo_s": 0.02},
                    {"name": "l", "dscp": 0}],
        "admission": {"increment_window_s": [0.5, 1.0], "per_mtu": false, "beta": 0.1},
        "seed": 7}"#;

    #[test]
    fn a_config_gives_the_cores_controller_and_the_classes_tos() {
        let c = RpcConfig::from_json(GOOD).unwrap();
        assert_eq!(c.admission.latency_target_s, vec![0.01, 0.02]);
        assert_eq!(c.admission.increment_window_s, Some(vec![0.5, 1.0]));
        assert!(!c.admission.per_mtu);
        assert_eq!((c.admission.beta, c.admission.alpha, c.admission.floor), (0.1, 0.01, 0.1));
        // EF (46) is TOS 0xb8, AF31 (26) 0x68, CS0 0
        let tos: Vec<u8> = c.classes.iter().map(Class::tos).collect();
        assert_eq!(tos, vec![0xb8, 0x68, 0]);
        assert_eq!((c.mss_bytes, c.response_bytes), (1448.0, 64));
        assert_eq!((c.connection(0, 2), c.connection(1, 0)), (2, 3));
    }

    #[test]
    fn bad_configs_name_the_field() {
        let with = |from: &str, to: &str| GOOD.replacen(from, to, 1);
        for (text, want) in [
            (with("\"dscp\": 46", "\"dscp\": 64"), "classes[0].dscp"),
            (with("\"dscp\": 26", "\"dscp\": 46"), "classes[1].dscp: 46 is classes[0]'s"),
            (with("\"slo_s\": 0.02", "\"slo_s\": 0"), "classes[1].slo_s: must be > 0"),
            (with(", \"slo_s\": 0.02", ""), "classes[1].slo_s: missing"),
            (with("\"dscp\": 0}", "\"dscp\": 0, \"slo_s\": 1}"), "classes[2].slo_s: the lowest"),
            (with("\"name\": \"m\"", "\"name\": \"h\""), "classes[1].name"),
            (with("[0.5, 1.0]", "[0.5]"), "admission.increment_window_s"),
            (with("\"beta\": 0.1", "\"beta\": -1"), "admission.beta"),
            (with("\"beta\": 0.1", "\"latency_target_s\": [1, 1]"), "admission.latency_target_s"),
            (with("\"beta\": 0.1", "\"gamma\": 1"), "admission: unknown field `gamma`"),
            (with("127.0.0.1:7101", "nowhere"), "destinations[1].addr"),
            (with("\"name\": \"t\"", "\"name\": \"s\""), "destinations[1].name"),
            (with("\"seed\": 7", "\"mss_bytes\": 0"), "mss_bytes"),
            (with("\"seed\": 7", "\"response_bytes\": 3"), "response_bytes"),
            (with("\"seed\": 7", "\"speed\": 7"), "unknown field `speed`"),
        ] {
            let e = RpcConfig::from_json(&text).err().unwrap_or_else(|| panic!("{text}"));
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn rpcs_are_read_sorted_with_their_sizes_in_mtus() {
        let c = RpcConfig::from_json(GOOD).unwrap();
        let text = "time_s,dst,class,size\n0.5,t,l,1448\n0.1,s,h,1449\n";
        let r = parse_rpcs(text.as_bytes(), &c).unwrap();
        assert_eq!(r[0], Rpc { time_s: 0.1, dst: 0, class: 0, size_bytes: 1449, size_mtus: 2.0 });
        assert_eq!(r[1], Rpc { time_s: 0.5, dst: 1, class: 2, size_bytes: 1448, size_mtus: 1.0 });
        for (text, want) in [
            ("time,dst,class,size\n", "1: expected the header"),
            ("time_s,dst,class,size\n0,x,h,100\n", "2: dst"),
            ("time_s,dst,class,size\n0,s,q,100\n", "2: class"),
            ("time_s,dst,class,size\n-1,s,h,100\n", "2: time_s"),
            ("time_s,dst,class,size\n0,s,h,31\n", "2: size"),
            ("time_s,dst,class,size\n\n0,s,h\n", "3: expected 4 fields"),
        ] {
            let e = parse_rpcs(text.as_bytes(), &c).err().unwrap_or_else(|| panic!("{text}"));
            assert!(e.starts_with(want), "{want}: {e}");
        }
    }

    #[test]
    fn misses_downgrade_to_the_lowest_class_on_its_connection() {
        let c = RpcConfig::from_json(GOOD).unwrap();
        let mut ctl = Controller::new(&c).unwrap();
        // p_admit = 1 admits whatever the draw: h to t runs at h on connection (t, h) = 3
        let d = ctl.issue(1, 0);
        assert_eq!(d, Decision { class_run: 0, downgraded: false, p_admit: 1.0, connection: 3 });
        // a 20 ms RNL misses the 10 ms SLO: p_admit −= β · size = 0.1 · 4 (per RPC, not per MTU)
        assert_eq!(ctl.complete(1, 0, 0.02, 4.0, 0.1), Outcome::Decreased);
        assert!((ctl.p_admit(1, 0) - 0.6).abs() < 1e-12);
        assert_eq!(ctl.p_admit(0, 0), 1.0); // the other destination's channel is untouched
                                            // the draws below p_admit run at h, the others at l on connection (t, l) = 5
        let mut draws = Draws::new(7);
        let _ = draws.uniform(); // the first issue's draw
        for _ in 0..200 {
            let u = draws.uniform();
            let d = ctl.issue(1, 0);
            if u <= 0.6 {
                assert_eq!((d.class_run, d.downgraded, d.connection), (0, false, 3));
            } else {
                assert_eq!((d.class_run, d.downgraded, d.connection), (2, true, 5));
            }
            assert!((d.p_admit - 0.6).abs() < 1e-12);
        }
        // the lowest class is never controlled nor downgraded; a met SLO after the window
        // increases by α
        assert_eq!(ctl.complete(1, 2, 9.0, 1.0, 0.2), Outcome::Uncontrolled);
        assert_eq!(ctl.issue(0, 2).connection, 2);
        assert_eq!(ctl.complete(1, 0, 0.005, 4.0, 0.3), Outcome::Held);
        assert_eq!(ctl.complete(1, 0, 0.005, 4.0, 0.7), Outcome::Increased);
        assert!((ctl.p_admit(1, 0) - 0.61).abs() < 1e-12);
        // m's SLO is its own: 15 ms meets 20 ms
        assert_eq!(ctl.complete(1, 1, 0.015, 1.0, 1.5), Outcome::Increased);
    }
}
