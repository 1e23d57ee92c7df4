//! A controller running at a simulated device, driven by its completions: PSLO
//! (`crate::control::pslo`, `docs/pslo.md`) sets each controlled tenant's pacing rate and IO
//! depth at the device's dispatcher (`Dispatcher::set_tenant_limits`).
//!
//! **What the controller measures** (PSLO sits in the hypervisor's IO scheduler, in front of
//! the storage; footnote 3): at each completion at the device of a request of a controlled
//! workload, its **latency** is from its arrival at the device's queue (the tenant's gate
//! included) to the end of its service, and its **service time** from its dispatch to the end of
//! its service, in seconds. The device's `base_latency` (after service) and the network stages
//! are outside both: PSLO's latency is the storage path's; an end-to-end SLO is the device's
//! SLO plus the other stages' (and `base_latency`).
//!
//! **When.** The controller starts at simulated time 0 with its initial limits
//! (`Controller::limits`, rates at the throughput SLOs, depths 1 while the forecast has not
//! fired) applied before any request arrives. Every completion of a controlled tenant is reported
//! at once, in completion order (several completing together in the device's order); a
//! returned `Decision` is applied to every tenant before the device dispatches again, so the
//! new limits hold from the next dispatch on, and the dispatcher's next pacing time becomes the
//! device's wake-up.
//!
//! **Records.** Every applied set of limits is logged ([`LimitChange`]: time, workload, rate,
//! depth), the initial ones at time 0, so an experiment can plot the controller's decisions.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::control::pslo::{Config, Controller, LatencySlo, Policy, TenantSlo};
use crate::error::{Error, Result};
use crate::sched::dispatch::{Dispatcher, TenantLimits};

/// A device's controller, as the scenario configures it (`kind` names the controller).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ControlSpec {
    /// PSLO's controller.
    Pslo(PsloSpec),
}

/// PSLO's configuration at a device (`control::pslo::Config`; a parameter left out takes the
/// controller's default, `Config::new`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PsloSpec {
    /// The policy's spelling (`LS+T`, `TS+L`, `L`, `LS+U`, `T`, `none`).
    pub policy: String,
    /// The controlled tenants, in the controller's order (other workloads are not controlled).
    pub tenants: Vec<PsloTenantSpec>,
    /// `N`: completions per decision interval.
    #[serde(default)]
    pub interval_completions: Option<u32>,
    /// `H`: the forecast's threshold on the normalised service time (> 1).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// The forecast's window of mean service time, seconds.
    #[serde(default)]
    pub window_s: Option<f64>,
    /// `τ`: how long a forecast keeps the depth controllers enabled, seconds.
    #[serde(default)]
    pub enable_s: Option<f64>,
    /// `σ`: the exploration gain (Eq. 10).
    #[serde(default)]
    pub sigma: Option<f64>,
    /// `η`: the target's decay (Eq. 12).
    #[serde(default)]
    pub eta: Option<f64>,
    /// `U`: the normalised slack at which a depth grows (Eq. 14).
    #[serde(default)]
    pub raise_at: Option<f64>,
    /// The largest depth.
    #[serde(default)]
    pub max_depth: Option<u32>,
}

/// One controlled tenant: a workload and its SLOs.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PsloTenantSpec {
    /// The workload's index.
    pub workload: u32,
    /// Its latency bound `L_k`, seconds (with `percentile`; both absent: no latency SLO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// Its percentile `X_k`, a fraction in (0, 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// Its throughput SLO, requests per second.
    pub throughput_iops: f64,
}

impl ControlSpec {
    /// `json` (a `ControlSpec`) checked as the simulator checks it and with every parameter the
    /// controller defaults written out (`Config::new`), as JSON: what a Plan records of a
    /// device's controller (`python/tailbound/plan_control.py`). Errors name the field
    /// (`tenants[0].percentile`, `threshold`; a serde error names none).
    pub fn filled_json(json: &str) -> Result<String> {
        let spec: ControlSpec = serde_json::from_str(json)
            .map_err(|e| Error::Field { field: "control".into(), message: e.to_string() })?;
        let filled = match spec {
            ControlSpec::Pslo(p) => ControlSpec::Pslo(p.filled()?),
        };
        serde_json::to_string(&filled)
            .map_err(|e| Error::Field { field: "control".into(), message: e.to_string() })
    }
}

impl PsloSpec {
    /// The same configuration with every parameter given (the controller's defaults where
    /// this one leaves them out), checked by [`PsloSpec::config`].
    pub fn filled(&self) -> Result<PsloSpec> {
        let c = self.config()?;
        Ok(PsloSpec {
            policy: c.policy.name().to_string(),
            tenants: self.tenants.clone(),
            interval_completions: Some(c.interval_completions),
            threshold: Some(c.threshold),
            window_s: Some(c.window_s),
            enable_s: Some(c.enable_s),
            sigma: Some(c.sigma),
            eta: Some(c.eta),
            raise_at: Some(c.raise_at),
            max_depth: Some(c.max_depth),
        })
    }

    /// The controller's configuration; errors name the field (`tenants[1].percentile`).
    pub fn config(&self) -> Result<Config> {
        let policy: Policy = self.policy.parse()?;
        let mut tenants = Vec::with_capacity(self.tenants.len());
        for (i, t) in self.tenants.iter().enumerate() {
            let latency = match (t.latency_s, t.percentile) {
                (Some(latency_s), Some(percentile)) => Some(LatencySlo { latency_s, percentile }),
                (None, None) => None,
                (l, _) => {
                    let missing = if l.is_some() { "percentile" } else { "latency_s" };
                    return Err(Error::Field {
                        field: format!("tenants[{i}].{missing}"),
                        message: "a latency SLO needs both latency_s and percentile".into(),
                    });
                }
            };
            tenants.push(TenantSlo { latency, throughput_iops: t.throughput_iops });
        }
        let mut c = Config::new(policy, tenants);
        c.interval_completions = self.interval_completions.unwrap_or(c.interval_completions);
        c.threshold = self.threshold.unwrap_or(c.threshold);
        c.window_s = self.window_s.unwrap_or(c.window_s);
        c.enable_s = self.enable_s.unwrap_or(c.enable_s);
        c.sigma = self.sigma.unwrap_or(c.sigma);
        c.eta = self.eta.unwrap_or(c.eta);
        c.raise_at = self.raise_at.unwrap_or(c.raise_at);
        c.max_depth = self.max_depth.unwrap_or(c.max_depth);
        c.validate().map_err(|e| match e {
            // the controller names a latency SLO's fields `tenants[i].latency.x`
            Error::Field { field, message } => {
                Error::Field { field: field.replace(".latency.", "."), message }
            }
            other => other,
        })?;
        Ok(c)
    }
}

/// One tenant's limits as applied at `time` (seconds): `rate` in requests per second and
/// `depth` in requests, `None` unlimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitChange {
    /// Simulated time, seconds.
    pub time: f64,
    /// The workload.
    pub workload: u32,
    /// Its limits from then on.
    pub limits: TenantLimits,
}

/// Sentinel of [`DeviceControl`]'s workload-to-tenant map: not controlled.
const UNCONTROLLED: u32 = u32::MAX;

/// The controller of one device and what it needs to know of the requests in the device.
#[derive(Debug)]
pub struct DeviceControl {
    controller: Controller,
    /// The controller's tenant of each workload (`UNCONTROLLED`: none).
    tenant_of: Vec<u32>,
    /// The workload of each tenant.
    workload_of: Vec<u32>,
    /// Per request of a controlled tenant in the device: `(tenant, arrival, dispatch)` (dispatch
    /// NaN until dispatched), seconds.
    requests: HashMap<u64, (u32, f64, f64)>,
    log: Vec<LimitChange>,
}

impl DeviceControl {
    /// The controller of `spec` for a device shared by `workloads` workloads, its initial
    /// limits applied to `dispatcher` at time 0. Errors name the field under `at`
    /// (`devices[0].control`).
    pub fn new(
        spec: &ControlSpec,
        workloads: usize,
        dispatcher: &mut Dispatcher,
        at: &str,
    ) -> Result<Self> {
        let ControlSpec::Pslo(pslo) = spec;
        let named = |e: Error| match e {
            Error::Field { field, message } => {
                Error::Field { field: format!("{at}.{field}"), message }
            }
            other => other,
        };
        let config = pslo.config().map_err(named)?;
        let mut tenant_of = vec![UNCONTROLLED; workloads];
        let mut workload_of = Vec::with_capacity(pslo.tenants.len());
        for (k, t) in pslo.tenants.iter().enumerate() {
            let field = format!("{at}.tenants[{k}].workload");
            let slot = tenant_of.get_mut(t.workload as usize).ok_or_else(|| Error::Field {
                field: field.clone(),
                message: format!("no workload {} (there are {workloads})", t.workload),
            })?;
            if *slot != UNCONTROLLED {
                return Err(Error::Field {
                    field,
                    message: format!("workload {} is controlled twice", t.workload),
                });
            }
            *slot = k as u32;
            workload_of.push(t.workload);
        }
        let controller = Controller::new(config, 0.0).map_err(named)?;
        let mut control =
            Self { controller, tenant_of, workload_of, requests: HashMap::new(), log: Vec::new() };
        let initial = control.controller.limits();
        control.apply(&initial, 0.0, dispatcher)?;
        Ok(control)
    }

    /// Whether `workload`'s requests are reported to the controller.
    #[inline]
    fn controls(&self, workload: u32) -> bool {
        self.tenant_of.get(workload as usize).is_some_and(|&k| k != UNCONTROLLED)
    }

    /// Request `id` of `workload` arrived at the device at `now`.
    #[inline]
    pub fn arrived(&mut self, id: u64, workload: u32, now: f64) {
        if self.controls(workload) {
            self.requests.insert(id, (self.tenant_of[workload as usize], now, f64::NAN));
        }
    }

    /// Request `id` entered service at `now`.
    #[inline]
    pub fn dispatched(&mut self, id: u64, now: f64) {
        if let Some(r) = self.requests.get_mut(&id) {
            r.2 = now;
        }
    }

    /// Request `id` finished its service at `now`: report it, and apply the controller's
    /// decision (if any) to `dispatcher`.
    pub fn completed(&mut self, id: u64, now: f64, dispatcher: &mut Dispatcher) {
        let Some((k, arrival, dispatch)) = self.requests.remove(&id) else { return };
        let decision =
            self.controller.on_completion(k as usize, now - arrival, now - dispatch, now);
        if let Some(d) = decision {
            self.apply(&d.limits, now, dispatcher)
                .expect("the controller's limits are in the dispatcher's domain");
        }
    }

    /// Set every tenant's `limits` at `dispatcher` and log them.
    fn apply(
        &mut self,
        limits: &[TenantLimits],
        now: f64,
        dispatcher: &mut Dispatcher,
    ) -> Result<()> {
        for (&workload, &l) in self.workload_of.iter().zip(limits) {
            dispatcher.set_tenant_limits(workload, l.rate, l.depth)?;
            self.log.push(LimitChange { time: now, workload, limits: l });
        }
        Ok(())
    }

    /// The controller.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// Every set of limits applied so far, in order (the initial ones at time 0).
    pub fn log(&self) -> &[LimitChange] {
        &self.log
    }

    /// Take the log (leaving it empty): a long-running caller (the gateway) reads each
    /// decision once instead of keeping them all.
    pub fn take_log(&mut self) -> Vec<LimitChange> {
        std::mem::take(&mut self.log)
    }
}

#[cfg(test)]
mod tests {
    use super::ControlSpec;
    use crate::error::Error;

    #[test]
    fn filled_json_writes_every_default_and_keeps_the_tenants() {
        let spec = r#"{"kind": "pslo", "policy": "LS+T", "sigma": 0.2,
            "tenants": [{"workload": 1, "latency_s": 0.3, "percentile": 0.999,
                         "throughput_iops": 150}, {"workload": 0, "throughput_iops": 50}]}"#;
        let out: serde_json::Value =
            serde_json::from_str(&ControlSpec::filled_json(spec).unwrap()).unwrap();
        let expected: serde_json::Value = serde_json::from_str(
            r#"{"kind": "pslo", "policy": "LS+T", "interval_completions": 1000,
            "threshold": 2.0, "window_s": 0.02, "enable_s": 0.1, "sigma": 0.2, "eta": 0.95,
            "raise_at": 5.0, "max_depth": 64,
            "tenants": [{"workload": 1, "latency_s": 0.3, "percentile": 0.999,
                         "throughput_iops": 150.0}, {"workload": 0, "throughput_iops": 50.0}]}"#,
        )
        .unwrap();
        assert_eq!(out, expected);
        // written out, it reads back to the same configuration
        let back: ControlSpec = serde_json::from_str(&out.to_string()).unwrap();
        let ControlSpec::Pslo(p) = back;
        assert_eq!(p.config().unwrap().sigma, 0.2);
    }

    #[test]
    fn filled_json_names_the_field_at_fault() {
        let field = |spec: &str| match ControlSpec::filled_json(spec) {
            Err(Error::Field { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let tenant = r#""tenants": [{"workload": 0, "latency_s": 0.1, "percentile": 1.0,
            "throughput_iops": 10}]"#;
        assert_eq!(
            field(&format!(r#"{{"kind": "pslo", "policy": "L", {tenant}}}"#)),
            "tenants[0].percentile"
        );
        let ok = r#""tenants": [{"workload": 0, "throughput_iops": 10}]"#;
        assert_eq!(
            field(&format!(r#"{{"kind": "pslo", "policy": "L", "threshold": 1.0, {ok}}}"#)),
            "threshold"
        );
        assert_eq!(
            field(&format!(
                r#"{{"kind": "pslo", "policy": "L", "interval_completions": 0, {ok}}}"#
            )),
            "interval_completions"
        );
        assert_eq!(field(r#"{"kind": "pslo", "policy": "X", "tenants": []}"#), "policy");
    }
}
