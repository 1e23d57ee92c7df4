//! The cluster screen: the infeasibility proof of `wc_lp.certainly_infeasible` for one newcomer
//! on many servers at once, from per-server sums kept as the servers' tenants change.
//!
//! The proof for one level `p` and path `π` (device `d`) of a server is
//! `Σ_{j,s in} h_js(p) − λ SLO'_p (3·0.999 − Σ_{j lower} ρ_js) > SLO'_p` for some `(w, λ)`
//! ([`Tenant::terms`] is `h`). Per server, level and device the sums over its tenants at or
//! above the level (`inside`, per `(w, λ)`), the mean rates of those below it on the path
//! (`lower`) and the count of tenants of the level on the device are kept. A server is refused
//! only where a level `p >= SLO_new` with an Eq. 5.7 row on path `d` (a tenant of that level on
//! `d`, or the newcomer itself) has a proof. Levels are the distinct SLOs seen so far; beyond
//! `max_levels` of them the screen turns itself off.

use std::sync::Arc;

use super::{Tenant, NWL, RATE_CAP, STAGES};
use crate::{Error, Result};

/// One server's tenants and sums; shared between forks until one of them changes it.
#[derive(Debug, Clone)]
struct Server {
    devices: usize,
    tenants: Vec<(Arc<Tenant>, usize)>,
    /// `[level][device][(w, λ)]`
    inside: Vec<f64>,
    /// `[level][device]`
    lower: Vec<f64>,
    /// `[level][device]`
    count: Vec<u32>,
}

/// Per-server sums of the screen's terms; [`ClusterScreen::infeasible`] tests a newcomer
/// everywhere. `Clone` is a cheap fork (servers are copied when one side changes them).
#[derive(Debug, Clone)]
pub struct ClusterScreen {
    max_devices: usize,
    max_levels: usize,
    tolerance: f64,
    active: bool,
    levels: Vec<f64>,
    servers: Vec<Arc<Server>>,
}

impl ClusterScreen {
    /// An empty cluster of servers with at most `max_devices` devices; the screen turns off
    /// beyond `max_levels` distinct SLOs; `tolerance` is the relative slack of the proof's
    /// inequality.
    pub fn new(max_devices: usize, max_levels: usize, tolerance: f64) -> Result<Self> {
        if max_devices == 0 {
            return Err(Error::Invalid("max_devices must be >= 1".into()));
        }
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(Error::Invalid(format!(
                "tolerance must be finite and >= 0 (got {tolerance})"
            )));
        }
        Ok(Self {
            max_devices,
            max_levels,
            tolerance,
            active: true,
            levels: vec![],
            servers: vec![],
        })
    }

    /// Whether the screen still proves anything (off beyond `max_levels` distinct SLOs).
    pub fn active(&self) -> bool {
        self.active
    }

    /// The levels (distinct SLOs, s) in the order they were seen.
    pub fn levels(&self) -> &[f64] {
        &self.levels
    }

    /// Servers in the cluster.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether the cluster has no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// A new empty server with `devices` devices at the end of the cluster.
    pub fn add_server(&mut self, devices: usize) -> Result<()> {
        if devices == 0 || devices > self.max_devices {
            return Err(Error::Invalid(format!(
                "devices must be in 1..={} (got {devices})",
                self.max_devices
            )));
        }
        let (l, d) = (self.levels.len(), self.max_devices);
        self.servers.push(Arc::new(Server {
            devices,
            tenants: vec![],
            inside: vec![0.0; l * d * NWL],
            lower: vec![0.0; l * d],
            count: vec![0; l * d],
        }));
        Ok(())
    }

    fn level_index(&self, level: f64) -> Option<usize> {
        self.levels.iter().position(|&p| p == level)
    }

    /// Adds level `level` (filling every server with tenants at it); `false` when that would
    /// exceed `max_levels` (the screen turns off).
    fn add_level(&mut self, level: f64) -> bool {
        if self.levels.len() >= self.max_levels {
            self.active = false;
            return false;
        }
        self.levels.push(level);
        let (l, d) = (self.levels.len() - 1, self.max_devices);
        for i in 0..self.servers.len() {
            let s = Arc::make_mut(&mut self.servers[i]);
            s.inside.resize((l + 1) * d * NWL, 0.0);
            s.lower.resize((l + 1) * d, 0.0);
            s.count.resize((l + 1) * d, 0);
            if !s.tenants.is_empty() {
                fill(s, &self.levels, l, d);
            }
        }
        true
    }

    /// Server `i` now holds `tenants` (each with its device) on `devices` devices: recomputes
    /// its sums.
    pub fn set_server(
        &mut self,
        i: usize,
        tenants: Vec<(Arc<Tenant>, usize)>,
        devices: usize,
    ) -> Result<()> {
        if i >= self.servers.len() {
            return Err(Error::Invalid(format!(
                "server {i} out of range (the cluster has {})",
                self.servers.len()
            )));
        }
        if devices == 0 || devices > self.max_devices {
            return Err(Error::Invalid(format!(
                "devices must be in 1..={} (got {devices})",
                self.max_devices
            )));
        }
        if let Some((_, k)) = tenants.iter().find(|(_, k)| *k >= devices) {
            return Err(Error::Invalid(format!(
                "a tenant's device {k} is not a device of server {i} ({devices} devices)"
            )));
        }
        let s = Arc::make_mut(&mut self.servers[i]);
        s.tenants = tenants;
        s.devices = devices;
        if !self.active {
            return Ok(());
        }
        let slos: Vec<f64> = self.servers[i].tenants.iter().map(|(t, _)| t.slo).collect();
        for slo in slos {
            if self.level_index(slo).is_none() && !self.add_level(slo) {
                return Ok(());
            }
        }
        let d = self.max_devices;
        let s = Arc::make_mut(&mut self.servers[i]);
        for l in 0..self.levels.len() {
            fill(s, &self.levels, l, d);
        }
        Ok(())
    }

    /// For each server in `servers`: does the screen prove that `newcomer` on `device` makes
    /// that server's LP infeasible? (All `false` when the screen is off.) May add the
    /// newcomer's SLO as a level.
    pub fn infeasible(
        &mut self,
        newcomer: &Tenant,
        device: usize,
        servers: &[usize],
    ) -> Result<Vec<bool>> {
        if device >= self.max_devices {
            return Err(Error::Invalid(format!(
                "device {device} out of range (max_devices {})",
                self.max_devices
            )));
        }
        if let Some(i) = servers.iter().find(|&&i| i >= self.servers.len()) {
            return Err(Error::Invalid(format!(
                "server {i} out of range (the cluster has {})",
                self.servers.len()
            )));
        }
        let mut out = vec![false; servers.len()];
        let slo = newcomer.slo;
        if !self.active || (self.level_index(slo).is_none() && !self.add_level(slo)) {
            return Ok(out);
        }
        if servers.is_empty() {
            return Ok(out);
        }
        let own = self.level_index(slo).expect("the newcomer's level was just added");
        let d = self.max_devices;
        // the newcomer's terms per level at or above its SLO: (h0 + h2) everywhere, + h1 on its
        // device
        let mut lv = vec![];
        for (l, &p) in self.levels.iter().enumerate() {
            if p >= slo {
                let h = newcomer.terms(p);
                let mut new = vec![0.0; d * NWL];
                for k in 0..d {
                    for c in 0..NWL {
                        new[k * NWL + c] = 0.0 + (h[c] + h[2 * NWL + c]);
                    }
                }
                for c in 0..NWL {
                    new[device * NWL + c] += h[NWL + c];
                }
                lv.push((l, p * super::SLO_SCALE, new));
            }
        }
        let lambda: Vec<f64> = (0..NWL).map(|c| super::LAMBDAS[c % super::LAMBDAS.len()]).collect();
        for (o, &i) in out.iter_mut().zip(servers) {
            let s = &self.servers[i];
            *o = lv.iter().any(|(l, scaled, new)| {
                (0..d).any(|k| {
                    let row = s.count[l * d + k] > 0 || (*l == own && k == device);
                    if !row {
                        return false;
                    }
                    let avail = STAGES as f64 * RATE_CAP - s.lower[l * d + k];
                    let inside = &s.inside[(l * d + k) * NWL..][..NWL];
                    let threshold = scaled * (1.0 + self.tolerance);
                    (0..NWL).any(|c| {
                        let total = (inside[c] + new[k * NWL + c]) - (scaled * lambda[c]) * avail;
                        total > threshold
                    })
                })
            });
        }
        Ok(out)
    }
}

/// Recomputes server `s`'s sums at level index `l` (tenant by tenant, in order: the same
/// additions as the former numpy `_fill`).
fn fill(s: &mut Server, levels: &[f64], l: usize, d: usize) {
    let p = levels[l];
    let inside = &mut s.inside[l * d * NWL..][..d * NWL];
    let lower = &mut s.lower[l * d..][..d];
    let count = &mut s.count[l * d..][..d];
    inside.fill(0.0);
    lower.fill(0.0);
    count.fill(0);
    for (t, dev) in &s.tenants {
        if t.slo <= p {
            let h = t.terms(p);
            for k in 0..s.devices {
                for c in 0..NWL {
                    inside[k * NWL + c] += h[c] + h[2 * NWL + c];
                }
            }
            for c in 0..NWL {
                inside[dev * NWL + c] += h[NWL + c];
            }
            count[*dev] += u32::from(t.slo == p);
        } else {
            let m = t.means();
            for x in lower.iter_mut().take(s.devices) {
                *x += m[0] + m[2];
            }
            lower[*dev] += m[1];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Vertices;
    use super::*;

    fn tenant(slo: f64, scale: f64) -> Arc<Tenant> {
        let r = vec![0.1 * scale, 0.5, 0.999];
        let b = vec![0.3 * scale, 0.05, 0.0];
        let v = Vertices::new([&r[..], &r, &r].concat(), [&b[..], &b, &b].concat(), "t").unwrap();
        Arc::new(Tenant::new(slo, v, None).unwrap())
    }

    #[test]
    fn a_crowded_server_is_refused_and_an_empty_one_is_not() {
        let mut screen = ClusterScreen::new(2, 64, 1e-7).unwrap();
        screen.add_server(2).unwrap();
        screen.add_server(2).unwrap();
        let crowd: Vec<_> = (0..12).map(|j| (tenant(0.1, 1.0), j % 2)).collect();
        screen.set_server(0, crowd, 2).unwrap();
        let got = screen.infeasible(&tenant(0.1, 1.0), 0, &[0, 1]).unwrap();
        assert_eq!(got, vec![true, false]);
        // a fork does not see the other side's changes
        let mut fork = screen.clone();
        fork.set_server(0, vec![], 2).unwrap();
        assert_eq!(fork.infeasible(&tenant(0.1, 1.0), 0, &[0]).unwrap(), vec![false]);
        assert_eq!(screen.infeasible(&tenant(0.1, 1.0), 0, &[0]).unwrap(), vec![true]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut screen = ClusterScreen::new(2, 64, 1e-7).unwrap();
        assert!(screen.add_server(3).is_err());
        screen.add_server(1).unwrap();
        assert!(screen.set_server(0, vec![(tenant(0.1, 1.0), 1)], 1).is_err());
        assert!(screen.set_server(1, vec![], 1).is_err());
        assert!(screen.infeasible(&tenant(0.1, 1.0), 2, &[0]).is_err());
        assert!(screen.infeasible(&tenant(0.1, 1.0), 0, &[1]).is_err());
    }

    #[test]
    fn the_screen_turns_off_beyond_its_levels() {
        let mut screen = ClusterScreen::new(1, 2, 1e-7).unwrap();
        screen.add_server(1).unwrap();
        let ts = vec![(tenant(0.1, 1.0), 0), (tenant(0.25, 1.0), 0), (tenant(1.0, 1.0), 0)];
        screen.set_server(0, ts, 1).unwrap();
        assert!(!screen.active());
        assert_eq!(screen.infeasible(&tenant(0.1, 1.0), 0, &[0]).unwrap(), vec![false]);
    }
}
