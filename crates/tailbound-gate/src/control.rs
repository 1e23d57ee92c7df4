//! The control channel's documents (`docs/enforcement.md`, "Control channel"): the per-tenant
//! limits a client sets and reads over HTTP on the metrics address, and their Prometheus text.
//!
//! - `GET /limits`: every export's limits and gate, a JSON array in workload order:
//!   `[{"export": "A", "rate": 250.0, "depth": 2, "outstanding": 2, "held": 1}, ...]` — `rate`
//!   in requests per second and `depth` in requests (`null`: unlimited), `outstanding` the
//!   export's requests past its gate and not completed, `held` its requests waiting at its gate.
//! - `PUT /limits/<export>` with `{"rate": 250.0, "depth": 4}` (a key left out or `null`:
//!   unlimited; no other key): sets that tenant's limits at the dispatcher at once
//!   (`Dispatcher::set_tenant_limits`) — nobody else's queue, bucket, gate or pacing time
//!   changes, nothing is re-queued — and answers with the export's object as `GET /limits`
//!   shows it. `400` for a bad document (naming the field), `404` for an unknown export.
//!   A controller running in the gateway (`control` in the configuration) sets its tenants'
//!   limits again at its next decision: the channel is for tenants it does not control, or to
//!   override it until then.

use std::fmt::Write as _;

use tailbound_core::sched::dispatch::TenantLimits;

/// One export's limits and gate at the dispatcher.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantState {
    pub export: String,
    pub limits: TenantLimits,
    /// Requests past its gate and not completed.
    pub outstanding: u32,
    /// Requests waiting at its gate.
    pub held: usize,
}

/// Parse and check a `PUT /limits/<export>` body (`{"rate": R, "depth": D}`, either left out or
/// `null` for unlimited); the error names the field.
pub fn parse_limits(body: &[u8]) -> Result<TenantLimits, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("limits: not a JSON document: {e}"))?;
    let obj = v.as_object().ok_or("limits: must be a JSON object {\"rate\": .., \"depth\": ..}")?;
    if let Some(k) = obj.keys().find(|k| *k != "rate" && *k != "depth") {
        return Err(format!("limits.{k}: unknown field (rate, depth)"));
    }
    let rate = match obj.get("rate") {
        None | Some(serde_json::Value::Null) => None,
        Some(r) => Some(r.as_f64().ok_or("limits.rate: must be a number (requests/s) or null")?),
    };
    let depth = match obj.get("depth") {
        None | Some(serde_json::Value::Null) => None,
        Some(d) => Some(
            d.as_u64()
                .and_then(|d| u32::try_from(d).ok())
                .ok_or("limits.depth: must be a whole number of requests >= 1, or null")?,
        ),
    };
    let limits = TenantLimits { rate, depth };
    limits.validate().map_err(|e| format!("limits.{e}").replace("limits.field ", "limits."))?;
    Ok(limits)
}

/// One export's state as JSON.
pub fn state_json(s: &TenantState) -> serde_json::Value {
    serde_json::json!({
        "export": s.export,
        "rate": s.limits.rate,
        "depth": s.limits.depth,
        "outstanding": s.outstanding,
        "held": s.held,
    })
}

/// A limit in Prometheus text (`+Inf`: unlimited).
fn inf(v: Option<f64>) -> String {
    v.map_or("+Inf".to_string(), |x| x.to_string())
}

/// A gauge's value for one export.
type Gauge = dyn Fn(&TenantState) -> String;

/// The per-tenant gauges and the control counters in Prometheus text (`+Inf`: unlimited).
pub fn render(states: &[TenantState], decisions: u64, changes: u64) -> String {
    let mut out = String::new();
    let gauges: [(&str, &str, &Gauge); 4] = [
        ("tenant_rate", "Pacing rate of the export's requests (requests/s).", &|s| {
            inf(s.limits.rate)
        }),
        ("tenant_depth", "Most of the export's requests past its gate (requests).", &|s| {
            inf(s.limits.depth.map(f64::from))
        }),
        ("tenant_outstanding", "The export's requests past its gate, not completed.", &|s| {
            s.outstanding.to_string()
        }),
        ("tenant_held", "The export's requests waiting at its gate.", &|s| s.held.to_string()),
    ];
    for (name, help, value) in gauges {
        let _ = writeln!(out, "# HELP tailbound_gate_{name} {help}");
        let _ = writeln!(out, "# TYPE tailbound_gate_{name} gauge");
        for s in states {
            let _ = writeln!(out, "tailbound_gate_{name}{{export=\"{}\"}} {}", s.export, value(s));
        }
    }
    let _ = write!(
        out,
        "# HELP tailbound_gate_control_decisions_total Decisions of the gateway's controller.\n\
         # TYPE tailbound_gate_control_decisions_total counter\n\
         tailbound_gate_control_decisions_total {decisions}\n\
         # HELP tailbound_gate_limit_changes_total Tenant limits set through the control channel.\n\
         # TYPE tailbound_gate_limit_changes_total counter\n\
         tailbound_gate_limit_changes_total {changes}\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_bodies_are_checked_naming_the_field() {
        let l = parse_limits(br#"{"rate": 250.5, "depth": 4}"#).unwrap();
        assert_eq!(l, TenantLimits { rate: Some(250.5), depth: Some(4) });
        assert_eq!(parse_limits(b"{}").unwrap(), TenantLimits::default());
        assert_eq!(parse_limits(br#"{"rate": null}"#).unwrap(), TenantLimits::default());
        for (bad, field) in [
            (&br#"{"rate": 0}"#[..], "rate"),
            (br#"{"rate": -3}"#, "rate"),
            (br#"{"depth": 0}"#, "depth"),
            (br#"{"depth": -1}"#, "depth"),
            (br#"{"rates": 1}"#, "rates"),
            (b"not json", "limits"),
        ] {
            let e = parse_limits(bad).unwrap_err();
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn gauges_show_unlimited_as_infinity() {
        let states = [
            TenantState {
                export: "A".into(),
                limits: TenantLimits { rate: Some(250.0), depth: Some(2) },
                outstanding: 2,
                held: 5,
            },
            TenantState {
                export: "B".into(),
                limits: TenantLimits::default(),
                outstanding: 0,
                held: 0,
            },
        ];
        let text = render(&states, 7, 1);
        for line in [
            "tailbound_gate_tenant_rate{export=\"A\"} 250",
            "tailbound_gate_tenant_depth{export=\"A\"} 2",
            "tailbound_gate_tenant_held{export=\"A\"} 5",
            "tailbound_gate_tenant_rate{export=\"B\"} +Inf",
            "tailbound_gate_tenant_depth{export=\"B\"} +Inf",
            "tailbound_gate_control_decisions_total 7",
            "tailbound_gate_limit_changes_total 1",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        let j = state_json(&states[1]);
        assert!(j["rate"].is_null() && j["depth"].is_null());
    }
}
