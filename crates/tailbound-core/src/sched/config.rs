//! The configuration of a scheduler, defined once per kind.
//!
//! [`SchedulerConfig`] is the serde form (tagged by `kind`, one entry per workload index) that
//! the simulator's JSON configuration carries and that builds the scheduler directly
//! ([`SchedulerConfig::build`]). [`SchedulerConfig::from_table`] reads the same configuration
//! from a scenario's queue table, whose per-workload settings are keyed by workload *name*
//! (`priority = { A = 2, B = 1 }`), filling the defaults and naming the field at fault in its
//! errors ([`Error::Field`]). A new kind is a new variant here and its arm in `kind`, `build` and
//! `from_table` (a kind with classes also in `classes` and `table_classes`); nothing outside
//! this module lists the kinds ([`KINDS`] is checked against the serde form).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{
    check_classes, Dwrr, Edf, Fifo, LimitMode, Nested, NestedClass, Pclock, Priority, Scheduler,
    Sfq, Wf2q, Wfq,
};
use crate::error::{Error, Result};

/// The names of the scheduler kinds, as `kind` spells them.
pub const KINDS: [&str; 9] =
    ["fifo", "priority", "dwrr", "sfq", "edf", "wfq", "nested", "pclock", "wf2q"];

/// The fields a queue table may have (any kind; a field another kind reads is ignored).
pub const TABLE_FIELDS: [&str; 10] = [
    "kind",
    "mode",
    "priority",
    "buckets",
    "weight",
    "class",
    "class_weight",
    "quantum_s",
    "deadline_s",
    "nested",
];

/// The scheduler of a queue, one entry per workload index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerConfig {
    /// First come, first served.
    #[default]
    Fifo,
    /// Strict priority (larger is more important) with per-workload FIFO queues and optional
    /// token buckets `(rate as utilisation, size in seconds of work)` per workload (none listed:
    /// unlimited); `demotion` serves a workload over its limits below every level instead of
    /// holding it back.
    Priority {
        priority: Vec<i64>,
        #[serde(default)]
        buckets: Vec<Vec<(f64, f64)>>,
        #[serde(default)]
        demotion: bool,
    },
    /// Deficit weighted round robin over classes (`class[w]` of workload `w`, `weight[c]` of
    /// class `c`); `quantum` is the work in seconds a class of weight 1 may send per round.
    Dwrr { class: Vec<u32>, weight: Vec<f64>, quantum: f64 },
    /// Start-time fair queueing with a weight per workload.
    Sfq { weight: Vec<f64> },
    /// Earliest deadline first, deadline = arrival + `deadline[w]` seconds.
    Edf { deadline: Vec<f64> },
    /// Virtual-clock weighted fair queueing over classes (`class[w]` of workload `w`,
    /// `weight[c]` of class `c`; Σ over every class): Aequitas' switches.
    Wfq { class: Vec<u32>, weight: Vec<f64> },
    /// Nested QoS: per workload its nested classes `(σ seconds of work, ρ utilisation, δ
    /// seconds)`, innermost first (none: every request best effort), and one EDF over all.
    Nested { classes: Vec<Vec<NestedClass>> },
    /// pClock: per workload an arrival curve, token buckets `(rate as utilisation, size in
    /// seconds of work)` (none listed: every request conforms), and a latency `deadline[w]` in
    /// seconds; EDF on finish tags.
    Pclock {
        #[serde(default)]
        buckets: Vec<Vec<(f64, f64)>>,
        deadline: Vec<f64>,
    },
    /// WF2Q+ (worst-case fair weighted fair queueing) with a weight per workload.
    Wf2q { weight: Vec<f64> },
}

impl SchedulerConfig {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            SchedulerConfig::Fifo => "fifo",
            SchedulerConfig::Priority { .. } => "priority",
            SchedulerConfig::Dwrr { .. } => "dwrr",
            SchedulerConfig::Sfq { .. } => "sfq",
            SchedulerConfig::Edf { .. } => "edf",
            SchedulerConfig::Wfq { .. } => "wfq",
            SchedulerConfig::Nested { .. } => "nested",
            SchedulerConfig::Pclock { .. } => "pclock",
            SchedulerConfig::Wf2q { .. } => "wf2q",
        }
    }

    /// The number of classes an item's own class indexes (`Item::class` must be below it), or 0
    /// for a kind without classes (which ignores an item's class).
    pub fn classes(&self) -> usize {
        match self {
            SchedulerConfig::Dwrr { weight, .. } | SchedulerConfig::Wfq { weight, .. } => {
                weight.len()
            }
            _ => 0,
        }
    }

    /// The serde form as JSON (what the simulator's configuration carries).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Invalid(format!("scheduler config: {e}")))
    }

    /// Build the scheduler for `n` workloads, validating the per-workload vectors.
    pub fn build(&self, n: usize) -> Result<Box<dyn Scheduler>> {
        let len = |name: &str, got: usize| -> Result<()> {
            if got != n {
                return Err(Error::Invalid(format!("{name} has {got} entries, expected {n}")));
            }
            Ok(())
        };
        Ok(match self {
            SchedulerConfig::Fifo => Box::new(Fifo::new()),
            SchedulerConfig::Priority { priority, buckets, demotion } => {
                len("priority", priority.len())?;
                let buckets =
                    if buckets.is_empty() { vec![Vec::new(); n] } else { buckets.clone() };
                len("buckets", buckets.len())?;
                let mode = if *demotion { LimitMode::Demotion } else { LimitMode::Shaping };
                Box::new(Priority::new(priority.clone(), buckets, mode)?)
            }
            SchedulerConfig::Dwrr { class, weight, quantum } => {
                len("class", class.len())?;
                Box::new(Dwrr::new(class.clone(), weight.clone(), *quantum)?)
            }
            SchedulerConfig::Sfq { weight } => {
                len("weight", weight.len())?;
                Box::new(Sfq::new(weight.clone())?)
            }
            SchedulerConfig::Edf { deadline } => {
                len("deadline", deadline.len())?;
                Box::new(Edf::new(deadline.clone())?)
            }
            SchedulerConfig::Wfq { class, weight } => {
                len("class", class.len())?;
                Box::new(Wfq::new(class.clone(), weight.clone())?)
            }
            SchedulerConfig::Nested { classes } => {
                len("classes", classes.len())?;
                Box::new(Nested::new(classes.clone())?)
            }
            SchedulerConfig::Pclock { buckets, deadline } => {
                len("deadline", deadline.len())?;
                let buckets =
                    if buckets.is_empty() { vec![Vec::new(); n] } else { buckets.clone() };
                len("buckets", buckets.len())?;
                Box::new(Pclock::new(buckets, deadline.clone())?)
            }
            SchedulerConfig::Wf2q { weight } => {
                len("weight", weight.len())?;
                Box::new(Wf2q::new(weight.clone())?)
            }
        })
    }

    /// Read a scenario's queue table (its fields but the queue's name) for `workloads`, in the
    /// order of the simulation's workload indices. Per-workload settings are tables keyed by
    /// workload name; an unnamed workload gets the default: priority 0, no buckets, weight 1,
    /// class `"default"`, the deadline of its SLO (1 s without one). DWRR and WFQ classes are
    /// named:
    /// the classes of the workloads and those `class_weight` names; their indices follow the
    /// sorted names ([`SchedulerConfig::from_table_in`] numbers them otherwise) and
    /// `class_weight` (by class name) defaults to 1.
    /// Errors are [`Error::Field`] naming the field (`priority.A`).
    pub fn from_table(table: &[(String, Value)], workloads: &[WorkloadInfo]) -> Result<Self> {
        Self::from_table_in(table, workloads, None)
    }

    /// The class names of a queue table, sorted: for a kind with classes, the workloads'
    /// classes (`"default"` for a workload the `class` table does not name) and the classes
    /// `class_weight` names; none for the other kinds. A simulation whose requests carry classes
    /// of their own numbers the classes of all its queues together (the sorted union of these
    /// names, passed to [`SchedulerConfig::from_table_in`]), so a request's class means the same
    /// class at every queue it crosses.
    pub fn table_classes(
        table: &[(String, Value)],
        workloads: &[WorkloadInfo],
    ) -> Result<Vec<String>> {
        let t = Table(table);
        let names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
        Ok(match t.get("kind") {
            Some(Value::Str(k)) if k == "dwrr" || k == "wfq" => class_names(&t, &names)?.1,
            _ => Vec::new(),
        })
    }

    /// [`SchedulerConfig::from_table`] with the class numbering given: class `i` is `classes[i]`
    /// (which must include every class of the table; see [`SchedulerConfig::table_classes`]);
    /// `None`: the table's own class names, sorted.
    pub fn from_table_in(
        table: &[(String, Value)],
        workloads: &[WorkloadInfo],
        classes: Option<&[String]>,
    ) -> Result<Self> {
        let t = Table(table);
        if let Some((key, _)) = table.iter().find(|(k, _)| !TABLE_FIELDS.contains(&k.as_str())) {
            let mut known = TABLE_FIELDS.to_vec();
            known.sort_unstable();
            return Err(field(key, format!("unknown field (expected one of {})", py_list(&known))));
        }
        let kind = match t.get("kind") {
            Some(Value::Str(k)) => k.as_str(),
            _ => "",
        };
        let names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
        Ok(match kind {
            "fifo" => SchedulerConfig::Fifo,
            "priority" => {
                let priority = t.per_workload("priority", &names, |_| Value::Int(0))?;
                let limits = bucket_table(&t, &names)?;
                let mut levels = Vec::with_capacity(names.len());
                for (n, p) in names.iter().zip(&priority) {
                    let Value::Int(p) = p else {
                        return Err(field(&format!("priority.{n}"), expected("an integer", p)));
                    };
                    levels.push(*p);
                }
                let mode = match t.get("mode") {
                    None => "shaping",
                    Some(Value::Str(m)) if m == "shaping" || m == "demotion" => m.as_str(),
                    Some(other) => {
                        let msg = format!("expected one of ['shaping', 'demotion'], got {other}");
                        return Err(field("mode", msg));
                    }
                };
                SchedulerConfig::Priority {
                    priority: levels,
                    buckets: limits,
                    demotion: mode == "demotion",
                }
            }
            "sfq" | "wf2q" => {
                let weight = t.per_workload("weight", &names, |_| Value::Float(1.0))?;
                let weight = positive("weight", &weight, true)?;
                if kind == "sfq" {
                    SchedulerConfig::Sfq { weight }
                } else {
                    SchedulerConfig::Wf2q { weight }
                }
            }
            "edf" => {
                let slo = |i: usize| Value::Float(workloads[i].slo_latency.unwrap_or(1.0));
                let deadline = t.per_workload("deadline_s", &names, slo)?;
                SchedulerConfig::Edf { deadline: positive("deadline_s", &deadline, false)? }
            }
            "dwrr" => {
                let (class, weight) = class_table(&t, &names, classes)?;
                let quantum = match t.get("quantum_s") {
                    None => 0.001,
                    Some(v) => match v.number() {
                        Some(q) if q > 0.0 => q,
                        _ => return Err(field("quantum_s", expected("a number in (0.0, inf]", v))),
                    },
                };
                SchedulerConfig::Dwrr { class, weight, quantum }
            }
            "wfq" => {
                let (class, weight) = class_table(&t, &names, classes)?;
                SchedulerConfig::Wfq { class, weight }
            }
            "pclock" => {
                let buckets = bucket_table(&t, &names)?;
                let slo = |i: usize| Value::Float(workloads[i].slo_latency.unwrap_or(1.0));
                let deadline = t.per_workload("deadline_s", &names, slo)?;
                let deadline = positive("deadline_s", &deadline, false)?;
                SchedulerConfig::Pclock { buckets, deadline }
            }
            "nested" => {
                let none = |_| Value::List(Vec::new());
                let values = t.per_workload("nested", &names, none)?;
                let classes = names
                    .iter()
                    .zip(&values)
                    .map(|(n, v)| nested_classes(&format!("nested.{n}"), v))
                    .collect::<Result<_>>()?;
                SchedulerConfig::Nested { classes }
            }
            _ => {
                let got = t.get("kind").map_or("None".to_string(), Value::to_string);
                return Err(field(
                    "kind",
                    format!("expected one of {}, got {got}", py_list(&KINDS)),
                ));
            }
        })
    }
}

/// The `class` and `class_weight` fields of a queue table (module documentation): each
/// workload's class name (`"default"` unless named) and the sorted class names (the workloads'
/// and those `class_weight` names).
fn class_names(t: &Table<'_>, names: &[&str]) -> Result<(Vec<String>, Vec<String>)> {
    let default = |_| Value::Str("default".into());
    let of_workload: Vec<String> = t
        .per_workload("class", names, default)?
        .iter()
        .map(|c| match c {
            Value::Str(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let mut all = of_workload.clone();
    all.extend(class_weights(t)?.iter().map(|(k, _)| k.clone()));
    all.sort();
    all.dedup();
    Ok((of_workload, all))
}

fn class_weights<'a>(t: &'a Table<'a>) -> Result<&'a [(String, Value)]> {
    match t.get("class_weight") {
        None => Ok(&[][..]),
        Some(Value::Table(cw)) => Ok(cw.as_slice()),
        Some(_) => Err(field("class_weight", "expected a table keyed by class name")),
    }
}

/// Each workload's class index and each class's weight (`class_weight`, default 1), classes
/// numbered by `numbering` (else the table's sorted class names).
fn class_table(
    t: &Table<'_>,
    names: &[&str],
    numbering: Option<&[String]>,
) -> Result<(Vec<u32>, Vec<f64>)> {
    let (of_workload, own) = class_names(t, names)?;
    let order = numbering.unwrap_or(&own);
    if let Some(c) = own.iter().find(|c| !order.contains(c)) {
        return Err(field("class", format!("class '{c}' is not among the classes {order:?}")));
    }
    let cw = Table(class_weights(t)?);
    let weights: Vec<Value> =
        order.iter().map(|c| cw.get(c).cloned().unwrap_or(Value::Float(1.0))).collect();
    let weight = positive("class_weight", &weights, true)?;
    let class = of_workload
        .iter()
        .map(|c| order.iter().position(|o| o == c).expect("checked above") as u32)
        .collect();
    Ok((class, weight))
}

/// What [`SchedulerConfig::from_table`] needs to know of a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadInfo {
    /// The workload's name, as the queue tables key it.
    pub name: String,
    /// Its SLO's latency in seconds, if it has an SLO (EDF's default deadline).
    pub slo_latency: Option<f64>,
}

/// A value of a scenario's queue table (parsed TOML or JSON), in the document's order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Table(Vec<(String, Value)>),
    /// Anything else, by its printed form (for error messages).
    Other(String),
}

impl Value {
    /// The value as a number, if it is one (booleans are not).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(x) => Some(*x),
            _ => None,
        }
    }
}

/// Python's spelling, since scenario authors read these in messages about their TOML.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "'{s}'"),
            Value::List(items) => {
                write!(f, "[")?;
                for (i, v) in items.iter().enumerate() {
                    write!(f, "{}{v}", if i > 0 { ", " } else { "" })?;
                }
                write!(f, "]")
            }
            Value::Table(items) => {
                write!(f, "{{")?;
                for (i, (k, v)) in items.iter().enumerate() {
                    write!(f, "{}'{k}': {v}", if i > 0 { ", " } else { "" })?;
                }
                write!(f, "}}")
            }
            Value::Other(s) => write!(f, "{s}"),
        }
    }
}

/// A table's fields, looked up by name.
struct Table<'a>(&'a [(String, Value)]);

impl Table<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The setting `key` of each workload: its entry in the table keyed by workload name, else
    /// `default(workload index)`.
    fn per_workload(
        &self,
        key: &str,
        names: &[&str],
        default: impl Fn(usize) -> Value,
    ) -> Result<Vec<Value>> {
        let entries = match self.get(key) {
            None => &[][..],
            Some(Value::Table(entries)) => entries.as_slice(),
            Some(other) => {
                let msg = format!("expected a table keyed by workload name, got {other}");
                return Err(field(key, msg));
            }
        };
        if let Some((k, _)) = entries.iter().find(|(k, _)| !names.contains(&k.as_str())) {
            return Err(field(&format!("{key}.{k}"), format!("no workload '{k}'")));
        }
        let table = Table(entries);
        Ok(names
            .iter()
            .enumerate()
            .map(|(i, n)| table.get(n).cloned().unwrap_or_else(|| default(i)))
            .collect())
    }
}

/// `['a', 'b']`, as Python prints a list of names.
fn py_list(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|n| format!("'{n}'")).collect();
    format!("[{}]", quoted.join(", "))
}

fn field(name: &str, message: impl Into<String>) -> Error {
    Error::Field { field: name.to_string(), message: message.into() }
}

fn expected(what: &str, got: &Value) -> String {
    format!("expected {what}, got {got}")
}

/// A token bucket `[rate, size_s]`: rate > 0, size >= 0 (0 paces at the rate).
fn bucket(v: &Value) -> Option<(f64, f64)> {
    let Value::List(pair) = v else { return None };
    let [rate, size] = pair.as_slice() else { return None };
    let (rate, size) = (rate.number()?, size.number()?);
    (rate > 0.0 && size >= 0.0).then_some((rate, size))
}

/// Each workload's token buckets (the `buckets` table, none by default), errors naming
/// `buckets.<workload>`.
fn bucket_table(t: &Table<'_>, names: &[&str]) -> Result<Vec<Vec<(f64, f64)>>> {
    let buckets = t.per_workload("buckets", names, |_| Value::List(Vec::new()))?;
    names
        .iter()
        .zip(&buckets)
        .map(|(n, b)| {
            let pairs = match b {
                Value::List(items) => items.iter().map(bucket).collect::<Option<Vec<_>>>(),
                _ => None,
            };
            pairs.ok_or_else(|| {
                field(&format!("buckets.{n}"), expected("a list of [rate, size_s]", b))
            })
        })
        .collect()
}

/// A workload's Nested QoS classes `[[sigma_s, rho, delta_s], ...]`, innermost first, checked
/// positive, finite and nested (errors name `key`, e.g. `nested.A`).
fn nested_classes(key: &str, v: &Value) -> Result<Vec<NestedClass>> {
    let what = "a list of [sigma_s, rho, delta_s], innermost class first";
    let triple = |c: &Value| {
        let Value::List(xs) = c else { return None };
        let [s, r, d] = xs.as_slice() else { return None };
        Some((s.number()?, r.number()?, d.number()?))
    };
    let classes = match v {
        Value::List(items) => items.iter().map(triple).collect::<Option<Vec<_>>>(),
        _ => None,
    };
    let Some(classes) = classes else { return Err(field(key, expected(what, v))) };
    check_classes(&classes).map_err(|e| field(key, e))?;
    Ok(classes)
}

/// Numbers > 0 (`strict`) or >= 0.
fn positive(key: &str, values: &[Value], strict: bool) -> Result<Vec<f64>> {
    values
        .iter()
        .map(|v| match v.number() {
            Some(x) if x > 0.0 || (!strict && x >= 0.0) => Ok(x),
            _ => Err(field(key, expected("positive numbers", v))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workloads(names: &[&str]) -> Vec<WorkloadInfo> {
        names.iter().map(|n| WorkloadInfo { name: n.to_string(), slo_latency: None }).collect()
    }

    fn table(items: &[(&str, Value)]) -> Vec<(String, Value)> {
        items.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn kind(k: &str) -> (&str, Value) {
        ("kind", Value::Str(k.into()))
    }

    fn field_of(e: Error) -> String {
        match e {
            Error::Field { field, .. } => field,
            other => panic!("not a field error: {other}"),
        }
    }

    #[test]
    fn every_kind_is_named_once_and_round_trips() {
        let samples = [
            SchedulerConfig::Fifo,
            SchedulerConfig::Priority { priority: vec![1], buckets: vec![], demotion: false },
            SchedulerConfig::Dwrr { class: vec![0], weight: vec![1.0], quantum: 0.001 },
            SchedulerConfig::Sfq { weight: vec![1.0] },
            SchedulerConfig::Edf { deadline: vec![0.1] },
            SchedulerConfig::Wfq { class: vec![0], weight: vec![1.0] },
            SchedulerConfig::Nested {
                classes: vec![vec![(0.01, 0.1, 0.005), (0.02, 0.11, 0.05), (0.03, 0.12, 0.5)]],
            },
            SchedulerConfig::Pclock { buckets: vec![vec![(0.5, 0.01)]], deadline: vec![0.05] },
            SchedulerConfig::Wf2q { weight: vec![2.0] },
        ];
        assert_eq!(samples.clone().map(|c| c.kind()), KINDS);
        for c in samples {
            let json = serde_json::to_string(&c).unwrap();
            assert!(json.contains(&format!(r#""kind":"{}""#, c.kind())), "{json}");
            assert_eq!(serde_json::from_str::<SchedulerConfig>(&json).unwrap(), c);
            assert!(c.build(1).is_ok());
            // the table form knows the kind too
            let t = table(&[kind(c.kind())]);
            let from = SchedulerConfig::from_table(&t, &workloads(&["A"])).unwrap();
            assert_eq!(from.kind(), c.kind());
        }
        assert!(serde_json::from_str::<SchedulerConfig>(r#"{"kind": "lottery"}"#).is_err());
    }

    #[test]
    fn table_fills_defaults_in_workload_order() {
        let ws = vec![
            WorkloadInfo { name: "A".into(), slo_latency: Some(0.01) },
            WorkloadInfo { name: "B".into(), slo_latency: None },
        ];
        let t = table(&[
            kind("priority"),
            ("mode", Value::Str("demotion".into())),
            ("priority", Value::Table(vec![("B".into(), Value::Int(2))])),
            (
                "buckets",
                Value::Table(vec![(
                    "A".into(),
                    Value::List(vec![Value::List(vec![Value::Float(0.5), Value::Int(0)])]),
                )]),
            ),
        ]);
        assert_eq!(
            SchedulerConfig::from_table(&t, &ws).unwrap(),
            SchedulerConfig::Priority {
                priority: vec![0, 2],
                buckets: vec![vec![(0.5, 0.0)], vec![]],
                demotion: true
            }
        );
        let edf = SchedulerConfig::from_table(&table(&[kind("edf")]), &ws).unwrap();
        assert_eq!(edf, SchedulerConfig::Edf { deadline: vec![0.01, 1.0] });
        let dwrr = table(&[
            kind("dwrr"),
            ("class", Value::Table(vec![("A".into(), Value::Str("x".into()))])),
            ("class_weight", Value::Table(vec![("x".into(), Value::Int(3))])),
        ]);
        assert_eq!(
            SchedulerConfig::from_table(&dwrr, &ws).unwrap(),
            SchedulerConfig::Dwrr { class: vec![1, 0], weight: vec![1.0, 3.0], quantum: 0.001 }
        );
        // wfq reads dwrr's fields (no quantum); a class only class_weight names is a class too,
        // and a given numbering orders the classes
        let wfq = table(&[
            kind("wfq"),
            ("class", Value::Table(vec![("A".into(), Value::Str("x".into()))])),
            (
                "class_weight",
                Value::Table(vec![("x".into(), Value::Int(3)), ("y".into(), Value::Int(2))]),
            ),
        ]);
        assert_eq!(
            SchedulerConfig::from_table(&wfq, &ws).unwrap(),
            SchedulerConfig::Wfq { class: vec![1, 0], weight: vec![1.0, 3.0, 2.0] }
        );
        assert_eq!(SchedulerConfig::table_classes(&wfq, &ws).unwrap(), ["default", "x", "y"]);
        let order: Vec<String> = ["y", "x", "default", "z"].map(String::from).to_vec();
        assert_eq!(
            SchedulerConfig::from_table_in(&wfq, &ws, Some(&order)).unwrap(),
            SchedulerConfig::Wfq { class: vec![1, 2], weight: vec![2.0, 3.0, 1.0, 1.0] }
        );
        assert_eq!(SchedulerConfig::from_table(&wfq, &ws).unwrap().classes(), 3);
    }

    #[test]
    fn table_errors_name_the_field() {
        let ws = workloads(&["A", "B"]);
        let bad = |items: &[(&str, Value)]| {
            field_of(SchedulerConfig::from_table(&table(items), &ws).unwrap_err())
        };
        assert_eq!(bad(&[kind("lottery")]), "kind");
        assert_eq!(bad(&[kind("fifo"), ("colour", Value::Int(1))]), "colour");
        let p = |v: Value| ("priority", Value::Table(vec![("A".into(), v)]));
        assert_eq!(bad(&[kind("priority"), p(Value::Float(1.5))]), "priority.A");
        assert_eq!(bad(&[kind("priority"), p(Value::Bool(true))]), "priority.A");
        let z = ("priority", Value::Table(vec![("Z".into(), Value::Int(1))]));
        assert_eq!(bad(&[kind("priority"), z]), "priority.Z");
        let b = ("buckets", Value::Table(vec![("B".into(), Value::List(vec![Value::Int(1)]))]));
        assert_eq!(bad(&[kind("priority"), b]), "buckets.B");
        let w = ("weight", Value::Table(vec![("A".into(), Value::Int(0))]));
        assert_eq!(bad(&[kind("sfq"), w]), "weight");
        assert_eq!(bad(&[kind("sfq"), ("weight", Value::Int(1))]), "weight");
        assert_eq!(bad(&[kind("dwrr"), ("quantum_s", Value::Int(0))]), "quantum_s");
        assert_eq!(bad(&[kind("dwrr"), ("class_weight", Value::Int(0))]), "class_weight");
        let zero = ("class_weight", Value::Table(vec![("default".into(), Value::Int(0))]));
        assert_eq!(bad(&[kind("wfq"), zero]), "class_weight");
        let z = ("class", Value::Table(vec![("Z".into(), Value::Str("x".into()))]));
        assert_eq!(bad(&[kind("wfq"), z]), "class.Z");
    }

    #[test]
    fn table_messages_read_like_the_scenario() {
        let ws = workloads(&["A"]);
        let e = SchedulerConfig::from_table(&table(&[kind("lottery")]), &ws).unwrap_err();
        assert_eq!(
            e.to_string(),
            "field kind: expected one of ['fifo', 'priority', 'dwrr', 'sfq', 'edf', 'wfq', 'nested', \
             'pclock', 'wf2q'], got 'lottery'"
        );
        let b = Value::Table(vec![("A".into(), Value::List(vec![Value::Float(0.5)]))]);
        let e = SchedulerConfig::from_table(&table(&[kind("priority"), ("buckets", b)]), &ws);
        assert_eq!(
            e.unwrap_err().to_string(),
            "field buckets.A: expected a list of [rate, size_s], got [0.5]"
        );
    }

    fn class_list(classes: &[[f64; 3]]) -> Value {
        Value::List(
            classes
                .iter()
                .map(|c| Value::List(c.iter().map(|&x| Value::Float(x)).collect()))
                .collect(),
        )
    }

    #[test]
    fn table_nested_classes_per_workload_and_best_effort_default() {
        let ws = workloads(&["A", "B"]);
        let sla = [[0.01, 0.1, 0.005], [0.02, 0.11, 0.05], [0.03, 0.12, 0.5]];
        let t = table(&[
            kind("nested"),
            ("nested", Value::Table(vec![("A".into(), class_list(&sla))])),
        ]);
        let c = SchedulerConfig::from_table(&t, &ws).unwrap();
        assert_eq!(
            c,
            SchedulerConfig::Nested {
                classes: vec![sla.iter().map(|&[s, r, d]| (s, r, d)).collect(), vec![]]
            }
        );
        assert_eq!(c.classes(), 0); // it classifies itself: an item's own class is not read
        assert!(c.build(2).is_ok());
        assert!(c.build(3).is_err());
        // integers are numbers too
        let ints =
            Value::List(vec![Value::List(vec![Value::Int(1), Value::Int(1), Value::Int(1)])]);
        let t = table(&[kind("nested"), ("nested", Value::Table(vec![("B".into(), ints)]))]);
        assert!(SchedulerConfig::from_table(&t, &ws).is_ok());
    }

    #[test]
    fn table_nested_errors_name_the_workloads_field() {
        let ws = workloads(&["A", "B"]);
        let err = |v: Value| {
            let t = table(&[kind("nested"), ("nested", Value::Table(vec![("B".into(), v)]))]);
            SchedulerConfig::from_table(&t, &ws).unwrap_err()
        };
        let msg = |v: Value| err(v).to_string();
        // not nested: σ, ρ or δ decreasing outward
        assert_eq!(
            msg(class_list(&[[0.02, 0.1, 0.005], [0.01, 0.2, 0.05]])),
            "field nested.B: classes must be nested: class 2 has sigma_s 0.01 < 0.02 of class 1"
        );
        assert!(msg(class_list(&[[0.01, 0.2, 0.005], [0.02, 0.1, 0.05]])).contains("rho 0.1 < 0.2"));
        assert!(msg(class_list(&[[0.01, 0.1, 0.05], [0.02, 0.2, 0.005]])).contains("delta_s"));
        // not positive
        assert!(msg(class_list(&[[0.0, 0.1, 0.005]])).contains("class 1: sigma_s must be positive"));
        assert!(msg(class_list(&[[0.01, -1.0, 0.005]])).contains("rho must be positive"));
        // malformed
        let two = Value::List(vec![Value::List(vec![Value::Float(0.1), Value::Float(0.1)])]);
        assert_eq!(
            msg(two),
            "field nested.B: expected a list of [sigma_s, rho, delta_s], innermost class first, \
             got [[0.1, 0.1]]"
        );
        assert_eq!(field_of(err(Value::Float(1.0))), "nested.B");
        let t =
            table(&[kind("nested"), ("nested", Value::Table(vec![("Z".into(), class_list(&[]))]))]);
        assert_eq!(field_of(SchedulerConfig::from_table(&t, &ws).unwrap_err()), "nested.Z");
        let t = table(&[kind("nested"), ("nested", Value::Int(1))]);
        assert_eq!(field_of(SchedulerConfig::from_table(&t, &ws).unwrap_err()), "nested");
        // the serde form is checked when built
        let c = SchedulerConfig::Nested { classes: vec![vec![(0.02, 0.1, 0.1), (0.01, 0.1, 0.1)]] };
        assert!(c.build(1).is_err());
    }

    #[test]
    fn table_pclock_reads_buckets_and_deadlines() {
        let ws = vec![
            WorkloadInfo { name: "A".into(), slo_latency: Some(0.01) },
            WorkloadInfo { name: "B".into(), slo_latency: None },
        ];
        let pair = |r: f64, b: f64| Value::List(vec![Value::Float(r), Value::Float(b)]);
        let t = table(&[
            kind("pclock"),
            ("buckets", Value::Table(vec![("A".into(), Value::List(vec![pair(0.5, 0.02)]))])),
            ("deadline_s", Value::Table(vec![("B".into(), Value::Float(0.2))])),
        ]);
        let c = SchedulerConfig::from_table(&t, &ws).unwrap();
        // B has no curve (every request conforms); A's deadline is its SLO's latency
        assert_eq!(
            c,
            SchedulerConfig::Pclock {
                buckets: vec![vec![(0.5, 0.02)], vec![]],
                deadline: vec![0.01, 0.2]
            }
        );
        assert_eq!(c.classes(), 0);
        assert!(c.build(2).is_ok() && c.build(1).is_err());
        let bad = |items: &[(&str, Value)]| {
            field_of(SchedulerConfig::from_table(&table(items), &ws).unwrap_err())
        };
        let b = ("buckets", Value::Table(vec![("B".into(), Value::List(vec![pair(0.0, 1.0)]))]));
        assert_eq!(bad(&[kind("pclock"), b]), "buckets.B");
        let d = ("deadline_s", Value::Table(vec![("A".into(), Value::Float(-1.0))]));
        assert_eq!(bad(&[kind("pclock"), d]), "deadline_s");
        // the serde form: buckets may be left out
        let json = r#"{"kind": "pclock", "deadline": [0.1]}"#;
        let c: SchedulerConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c, SchedulerConfig::Pclock { buckets: vec![], deadline: vec![0.1] });
        assert!(c.build(1).is_ok());
    }

    #[test]
    fn table_wf2q_reads_weights_as_sfq_does() {
        let ws = workloads(&["A", "B"]);
        let w = ("weight", Value::Table(vec![("B".into(), Value::Int(3))]));
        let c = SchedulerConfig::from_table(&table(&[kind("wf2q"), w]), &ws).unwrap();
        assert_eq!(c, SchedulerConfig::Wf2q { weight: vec![1.0, 3.0] });
        assert!(c.build(2).is_ok() && c.build(3).is_err());
        let zero = ("weight", Value::Table(vec![("A".into(), Value::Float(0.0))]));
        let e = SchedulerConfig::from_table(&table(&[kind("wf2q"), zero]), &ws).unwrap_err();
        assert_eq!(field_of(e), "weight");
        assert!(SchedulerConfig::Wf2q { weight: vec![-1.0] }.build(1).is_err());
    }

    #[test]
    fn build_checks_lengths() {
        let c = SchedulerConfig::Sfq { weight: vec![1.0] };
        assert!(c.build(2).is_err());
        let c =
            SchedulerConfig::Priority { priority: vec![0, 1], buckets: vec![], demotion: false };
        assert!(c.build(2).is_ok());
    }
}
