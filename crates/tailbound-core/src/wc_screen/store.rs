//! Every server's infeasibility certificates (`tailbound.policies.certificates`), tested for a
//! newcomer on many servers at once.
//!
//! A certificate of a server's LP keeps the Farkas multipliers `y >= 0` a newcomer needs: of
//! the capacity rows per queue (`cap`: `[net_in, net_out, storage_0, ...]`) and, per `R_pπ`
//! variable, its level `p` and device, `y` of its three rate-bound rows (`rb`) and of its
//! Eq. 5.7 row (`eq57`). With a newcomer of SLO `σ` on device `δ`, the bound
//! `L(y) = constant + Σ_s min_{region_s} (c_s r + d_s b)` (`c`, `d` the sums of `y` over the
//! rows it would enter) above `margin · scale` proves the LP infeasible. Each server keeps the
//! newest `keep` certificates; a tenant joining adds its terms (`>= 0`, the proofs only get
//! stronger); a departure drops them.

use std::sync::Arc;

use super::{Tenant, Vertices, STAGES};
use crate::{Error, Result};

/// One certificate, reduced to what a newcomer needs (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Certificate {
    pub constant: f64,
    pub scale: f64,
    pub cap: Vec<f64>,
    pub level: Vec<f64>,
    pub device: Vec<usize>,
    pub rb: Vec<[f64; STAGES]>,
    pub eq57: Vec<f64>,
    /// The `(SLO, device)` of the newcomers it applies to, if not all.
    pub only: Option<(f64, usize)>,
}

impl Certificate {
    /// Checks the shapes and values against a cluster of `max_devices` devices.
    pub fn check(&self, max_devices: usize) -> Result<()> {
        let v = self.level.len();
        if self.device.len() != v || self.rb.len() != v || self.eq57.len() != v {
            return Err(Error::Invalid(format!(
                "certificate: level, device, rb and eq57 must have one entry per R variable \
                 (got {v}, {}, {}, {})",
                self.device.len(),
                self.rb.len(),
                self.eq57.len()
            )));
        }
        if self.cap.len() > 2 + max_devices {
            return Err(Error::Invalid(format!(
                "certificate: cap has {} queues, more than 2 + max_devices = {}",
                self.cap.len(),
                2 + max_devices
            )));
        }
        if let Some(k) =
            self.device.iter().chain(self.only.as_ref().map(|o| &o.1)).find(|&&k| k >= max_devices)
        {
            return Err(Error::Invalid(format!(
                "certificate: device {k} out of range (max_devices {max_devices})"
            )));
        }
        let finite = [self.constant, self.scale]
            .iter()
            .chain(&self.cap)
            .chain(&self.level)
            .chain(self.rb.iter().flatten())
            .chain(&self.eq57)
            .all(|x| x.is_finite());
        if !finite {
            return Err(Error::Invalid("certificate: every number must be finite".into()));
        }
        Ok(())
    }

    /// `L(y)` with a newcomer of SLO `slo`, region `region`, on `device` (the only-filter not
    /// applied).
    pub fn bound_with(&self, region: &Vertices, slo: f64, device: usize) -> f64 {
        let mut c = [
            self.cap.first().copied().unwrap_or(0.0),
            self.cap.get(2 + device).copied().unwrap_or(0.0),
            self.cap.get(1).copied().unwrap_or(0.0),
        ];
        let mut d_path = 0.0;
        let mut d_dev = 0.0;
        for v in 0..self.level.len() {
            let (lower, inside) = (self.level[v] > slo, self.level[v] >= slo);
            let on = self.device[v] == device;
            if lower {
                c[0] += self.rb[v][0];
                c[2] += self.rb[v][2];
                if on {
                    c[1] += self.rb[v][1];
                }
            }
            if inside {
                d_path += self.eq57[v];
                if on {
                    d_dev += self.eq57[v];
                }
            }
        }
        self.constant + region.min_sum(&c, &[d_path, d_dev, d_path])
    }

    fn applies(&self, slo: f64, device: usize) -> bool {
        self.only.is_none_or(|o| o == (slo, device))
    }
}

/// One server's slots (round-robin) and the next slot to overwrite.
#[derive(Debug, Clone)]
struct Slots {
    certs: Vec<Option<Certificate>>,
    next: usize,
}

/// Certificates per server and slot; [`CertificateStore::refuted`] tests a newcomer on many
/// servers. `Clone` is a cheap fork (servers are copied when one side changes them).
#[derive(Debug, Clone)]
pub struct CertificateStore {
    max_devices: usize,
    keep: usize,
    margin: f64,
    servers: Vec<Arc<Slots>>,
}

impl CertificateStore {
    /// An empty store for servers of at most `max_devices` devices keeping the newest `keep`
    /// certificates each; a bound proves infeasibility above `margin` times its scale.
    pub fn new(max_devices: usize, keep: usize, margin: f64) -> Result<Self> {
        if max_devices == 0 || keep == 0 {
            return Err(Error::Invalid("max_devices and keep must be >= 1".into()));
        }
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(Error::Invalid(format!("margin must be finite and >= 0 (got {margin})")));
        }
        Ok(Self { max_devices, keep, margin, servers: vec![] })
    }

    /// Servers in the store.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether the store has no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// A new server (no certificates) at the end of the cluster.
    pub fn add_server(&mut self) {
        self.servers.push(Arc::new(Slots { certs: vec![None; self.keep], next: 0 }));
    }

    fn server(&self, i: usize) -> Result<&Arc<Slots>> {
        self.servers.get(i).ok_or_else(|| {
            Error::Invalid(format!(
                "server {i} out of range (the store has {})",
                self.servers.len()
            ))
        })
    }

    /// Keeps `certificates` of server `i` (overwriting its oldest).
    pub fn add(&mut self, i: usize, certificates: Vec<Certificate>) -> Result<()> {
        self.server(i)?;
        for c in &certificates {
            c.check(self.max_devices)?;
        }
        let s = Arc::make_mut(&mut self.servers[i]);
        for c in certificates {
            let k = s.next;
            s.next = (k + 1) % s.certs.len();
            s.certs[k] = Some(c);
        }
        Ok(())
    }

    /// Drops the certificates of server `i` (a tenant left it: its rows changed).
    pub fn clear(&mut self, i: usize) -> Result<()> {
        self.server(i)?;
        let s = Arc::make_mut(&mut self.servers[i]);
        s.certs.iter_mut().for_each(|c| *c = None);
        Ok(())
    }

    /// `tenant` now sits on server `i` on `device`: adds its terms to the server's certificates
    /// (`scale` grows by the change, certificates kept for its SLO and device now apply to all).
    pub fn joined(&mut self, i: usize, tenant: &Tenant, device: usize) -> Result<()> {
        self.check_device(device)?;
        let alive = self.server(i)?.certs.iter().any(Option::is_some);
        let Some(region) = tenant.region.as_ref() else { return Ok(()) };
        if !alive {
            return Ok(());
        }
        let s = Arc::make_mut(&mut self.servers[i]);
        for c in s.certs.iter_mut().flatten() {
            let bound = c.bound_with(region, tenant.slo, device);
            c.scale += (bound - c.constant).abs();
            c.constant = bound;
            if c.only == Some((tenant.slo, device)) {
                c.only = None;
            }
        }
        Ok(())
    }

    /// For each server in `servers`: does one of its certificates prove that its LP with
    /// `newcomer` added on `device` is infeasible?
    pub fn refuted(
        &self,
        newcomer: &Tenant,
        device: usize,
        servers: &[usize],
    ) -> Result<Vec<bool>> {
        self.check_device(device)?;
        for &i in servers {
            self.server(i)?;
        }
        let Some(region) = newcomer.region.as_ref() else { return Ok(vec![false; servers.len()]) };
        let slo = newcomer.slo;
        Ok(servers
            .iter()
            .map(|&i| {
                self.servers[i].certs.iter().flatten().any(|c| {
                    c.applies(slo, device)
                        && c.bound_with(region, slo, device) > self.margin * c.scale
                })
            })
            .collect())
    }

    /// `L(y)` of each slot of server `i` with `newcomer` on `device` (`-inf` for empty slots and,
    /// unless `every`, certificates that do not apply to it): the oracle tests' view.
    pub fn bounds(
        &self,
        newcomer: &Tenant,
        device: usize,
        i: usize,
        every: bool,
    ) -> Result<Vec<f64>> {
        self.check_device(device)?;
        let s = self.server(i)?;
        let Some(region) = newcomer.region.as_ref() else {
            return Err(Error::Invalid(
                "the newcomer's region is empty (it cannot meet its SLO)".into(),
            ));
        };
        Ok(s.certs
            .iter()
            .map(|c| match c {
                Some(c) if every || c.applies(newcomer.slo, device) => {
                    c.bound_with(region, newcomer.slo, device)
                }
                _ => f64::NEG_INFINITY,
            })
            .collect())
    }

    fn check_device(&self, device: usize) -> Result<()> {
        if device >= self.max_devices {
            return Err(Error::Invalid(format!(
                "device {device} out of range (max_devices {})",
                self.max_devices
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(slo: f64) -> Tenant {
        let r = vec![0.1, 0.5, 0.999];
        let b = vec![0.3, 0.05, 0.0];
        let v = Vertices::new([&r[..], &r, &r].concat(), [&b[..], &b, &b].concat(), "t").unwrap();
        Tenant::new(slo, v.clone(), Some(v)).unwrap()
    }

    fn cert(constant: f64, only: Option<(f64, usize)>) -> Certificate {
        Certificate {
            constant,
            scale: 1.0,
            cap: vec![1.0, 1.0, 1.0, 1.0],
            level: vec![0.1],
            device: vec![0],
            rb: vec![[0.0; 3]],
            eq57: vec![1.0],
            only,
        }
    }

    #[test]
    fn a_certificate_refutes_until_cleared_and_forks_are_independent() {
        let mut store = CertificateStore::new(2, 2, 1e-6).unwrap();
        store.add_server();
        store.add_server();
        // L = -0.2 + Σ_s min (r + b) with the newcomer's path rows: positive
        store.add(0, vec![cert(-0.2, None)]).unwrap();
        assert_eq!(store.refuted(&tenant(0.1), 0, &[0, 1]).unwrap(), vec![true, false]);
        let fork = store.clone();
        store.clear(0).unwrap();
        assert_eq!(store.refuted(&tenant(0.1), 0, &[0]).unwrap(), vec![false]);
        assert_eq!(fork.refuted(&tenant(0.1), 0, &[0]).unwrap(), vec![true]);
    }

    #[test]
    fn only_certificates_apply_to_their_newcomers_until_one_joins() {
        let mut store = CertificateStore::new(2, 8, 1e-6).unwrap();
        store.add_server();
        store.add(0, vec![cert(-0.2, Some((0.1, 1)))]).unwrap();
        assert_eq!(store.refuted(&tenant(0.1), 0, &[0]).unwrap(), vec![false]);
        assert_eq!(store.refuted(&tenant(0.1), 1, &[0]).unwrap(), vec![true]);
        store.joined(0, &tenant(0.1), 1).unwrap();
        assert_eq!(store.refuted(&tenant(0.1), 0, &[0]).unwrap(), vec![true]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut store = CertificateStore::new(2, 8, 1e-6).unwrap();
        store.add_server();
        let mut bad = cert(0.0, None);
        bad.device = vec![2];
        assert!(store.add(0, vec![bad]).is_err());
        let mut bad = cert(0.0, None);
        bad.eq57 = vec![];
        assert!(store.add(0, vec![bad]).is_err());
        assert!(store.add(1, vec![]).is_err());
        assert!(store.refuted(&tenant(0.1), 2, &[0]).is_err());
        assert!(store.refuted(&tenant(0.1), 0, &[3]).is_err());
        assert!(store.clear(5).is_err());
    }
}
