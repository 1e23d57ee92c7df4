//! The simulated system: links and devices, and the routes requests take through them.
//!
//! Hosts, NICs and the switch of the thesis' cluster (Fig. 1.1, Fig. 4.1) reduce to links: each
//! host's NIC is an egress link (host to switch) and an ingress link (switch to host). The switch
//! is non-blocking with full bisection bandwidth, so its output port towards a host *is* that
//! host's ingress link; a message from host A to host B crosses A's egress link then B's ingress
//! link, packet by packet (store and forward at packet granularity). The Python scenario builder
//! numbers the links; the core only sees indices.

use serde::Deserialize;

use super::array::ArrayModel;
use super::control::ControlSpec;
use super::disk::DiskRules;
use crate::error::{Error, Result};
use crate::sched::SchedulerConfig;

/// A link serialising packets at `bandwidth` bytes per second, with a propagation delay.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds from the end of a packet's transmission to its arrival at the next hop.
    #[serde(default)]
    pub propagation: f64,
    /// The discipline of the link's output queue.
    #[serde(default)]
    pub scheduler: SchedulerConfig,
}

/// A storage device: processor sharing of a unit service rate among the dispatched requests
/// (or a disk array's depth-dependent model, `array`), with dispatch limits per operation (see
/// `device.rs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Most reads in service at once.
    #[serde(default = "default_mpl")]
    pub read_mpl: u32,
    /// Most writes in service at once.
    #[serde(default = "default_mpl")]
    pub write_mpl: u32,
    /// Most bytes of reads in service at once (one request is always allowed).
    #[serde(default = "unlimited")]
    pub max_read_bytes: f64,
    /// Most bytes of writes in service at once (one request is always allowed).
    #[serde(default = "unlimited")]
    pub max_write_bytes: f64,
    /// Seconds added after a request's service, outside the device's capacity.
    #[serde(default)]
    pub base_latency: f64,
    /// While a request is in service, most requests of less important levels in service at
    /// once (those already there included; thesis §2.2.1's SSD rule). Unlimited by default.
    #[serde(default = "unlimited_count")]
    pub low_priority_mpl: u32,
    /// While a request is in service, most bytes of less important requests in service.
    #[serde(default = "unlimited")]
    pub low_priority_bytes: f64,
    /// Most work (seconds) in service of requests below the most important level of the
    /// device's workloads (one is let in when none is).
    #[serde(default = "unlimited")]
    pub low_priority_work: f64,
    /// Most requests of one level in service at once (1: a level is served first come first
    /// served while the device shares among levels). Unlimited by default.
    #[serde(default = "unlimited_count")]
    pub level_mpl: u32,
    /// A disk's rule for sequential writes (thesis §2.2.1, `disk.rs`); none for SSDs and memory.
    #[serde(default)]
    pub disk: Option<DiskRules>,
    /// A disk array's service model in place of processor sharing at unit rate (`array.rs`);
    /// none by default.
    #[serde(default)]
    pub array: Option<ArrayModel>,
    /// The discipline of the dispatcher's queue.
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// A controller of the tenants' pacing and depth driven by the device's completions
    /// (`control.rs`); none by default.
    #[serde(default)]
    pub control: Option<ControlSpec>,
}

fn default_mpl() -> u32 {
    1
}

fn unlimited() -> f64 {
    f64::INFINITY
}

fn unlimited_count() -> u32 {
    u32::MAX
}

/// One stage of a route: a message over a sequence of links, or service at a device.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StageRoute {
    /// The links a message crosses, in order; the stage's cost array holds message bytes.
    Net(Vec<u32>),
    /// The device serving the request; the stage's cost array holds seconds of work.
    Device(u32),
}

/// Smallest MTU in bytes (the minimum Ethernet frame); smaller packets only cost time.
/// [`Topology::validate`] refuses a smaller `mtu`.
pub const MIN_MTU_BYTES: f64 = 64.0;

/// Links and devices of the simulated system, and the packet size of the network.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Largest packet in bytes; messages are cut into packets of this size and a last one.
    #[serde(default = "default_mtu")]
    pub mtu: f64,
    /// The links, indexed by `StageRoute::Net`.
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// The devices, indexed by `StageRoute::Device`.
    #[serde(default)]
    pub devices: Vec<DeviceSpec>,
}

fn default_mtu() -> f64 {
    1500.0
}

fn positive(name: &str, x: f64) -> Result<()> {
    if x > 0.0 && !x.is_nan() {
        Ok(())
    } else {
        Err(Error::Invalid(format!("{name} must be positive, got {x}")))
    }
}

fn non_negative(name: &str, x: f64) -> Result<()> {
    if x >= 0.0 && x.is_finite() {
        Ok(())
    } else {
        Err(Error::Invalid(format!("{name} must be finite and >= 0, got {x}")))
    }
}

impl Topology {
    /// Check every parameter's domain.
    pub fn validate(&self) -> Result<()> {
        if !(self.mtu >= MIN_MTU_BYTES && self.mtu.is_finite()) {
            return Err(Error::Invalid(format!(
                "mtu must be at least {} bytes and finite, got {}",
                MIN_MTU_BYTES, self.mtu
            )));
        }
        for (i, l) in self.links.iter().enumerate() {
            positive(&format!("links[{i}].bandwidth"), l.bandwidth)?;
            non_negative(&format!("links[{i}].propagation"), l.propagation)?;
        }
        for (i, d) in self.devices.iter().enumerate() {
            if d.read_mpl == 0 || d.write_mpl == 0 {
                return Err(Error::Invalid(format!("devices[{i}]: an MPL must be >= 1")));
            }
            positive(&format!("devices[{i}].max_read_bytes"), d.max_read_bytes)?;
            positive(&format!("devices[{i}].max_write_bytes"), d.max_write_bytes)?;
            non_negative(&format!("devices[{i}].base_latency"), d.base_latency)?;
            if let Some(rules) = &d.disk {
                rules.validate(&format!("devices[{i}]"))?;
            }
            if let Some(array) = &d.array {
                array.validate(&format!("devices[{i}]"))?;
            }
        }
        Ok(())
    }

    /// Check that a route only names existing links and devices.
    pub fn check_route(&self, route: &[StageRoute]) -> Result<()> {
        for stage in route {
            match stage {
                StageRoute::Net(links) => {
                    if let Some(l) = links.iter().find(|&&l| l as usize >= self.links.len()) {
                        return Err(Error::Invalid(format!(
                            "route names link {l}, which is absent"
                        )));
                    }
                }
                StageRoute::Device(d) if *d as usize >= self.devices.len() => {
                    return Err(Error::Invalid(format!("route names device {d}, which is absent")));
                }
                StageRoute::Device(_) => {}
            }
        }
        Ok(())
    }
}
