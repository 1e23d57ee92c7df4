//! A request's class at the dispatcher's scheduler: the one function that decides it
//! ([`Classifier::class`]).
//!
//! Today a request takes its export's class from the configuration's optional `export_class`
//! (export name → class index of the scheduler's classes, e.g. `{"A": 1}`; `Config::from_json`
//! checks the names and the range); an export not listed, and every export when the field is
//! absent, has no class of its own ([`NO_CLASS`]): the scheduler's configuration gives it its
//! workload's class (`dwrr`'s `class[w]`), and the kinds without classes ignore it. A
//! per-request classifier replaces the body of [`Classifier::class`], which sees the request's
//! export, operation, offset, length and arrival time. Nested QoS does not need one: its
//! classifier (the innermost class whose envelope the request conforms to) is part of the
//! core's `nested` scheduler, which classifies each request on its cost and arrival as the
//! simulator's does and ignores the item's class (`docs/nested-qos.md`).

use tailbound_core::sched::NO_CLASS;

use crate::config::Config;

/// The classes of one configuration generation (rebuilt by a reload).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Classifier {
    /// Per workload (export in `Config::exports`' order): its configured class, or `NO_CLASS`.
    by_workload: Vec<u32>,
}

/// What the classifier sees of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    /// The export's workload index.
    pub workload: u32,
    /// A write (else a read).
    pub write: bool,
    /// Byte offset in the export.
    pub offset: u64,
    /// Bytes.
    pub length: u32,
    /// Arrival at the dispatcher, seconds on the gateway's clock.
    pub arrival: f64,
}

impl Classifier {
    /// The classes `cfg` configures (`export_class`, checked by `Config::from_json`).
    pub fn new(cfg: &Config) -> Self {
        let by_workload = cfg
            .exports
            .iter()
            .map(|e| cfg.export_class.get(e).copied().unwrap_or(NO_CLASS))
            .collect();
        Self { by_workload }
    }

    /// The class of a request: its export's configured class, else [`NO_CLASS`].
    pub fn class(&self, request: &Seen) -> u32 {
        self.by_workload.get(request.workload as usize).copied().unwrap_or(NO_CLASS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_core::sched::dispatch::{Dispatched, Dispatcher, Request};
    use tailbound_core::sched::Item;

    const CONFIG: &str = r#"{"listen": "127.0.0.1:0", "backend_dir": "/tmp",
        "export_size": 1048576, "exports": ["A", "B"],
        "scheduler": {"kind": "dwrr", "class": [0, 1], "weight": [1.0, 1.0], "quantum": 1.0},
        "limits": {"read_mpl": 1, "write_mpl": 1},
        "profile": {"sizes": [4096], "read_bandwidth": [1e8], "write_bandwidth": [1e8]}
        EXTRA}"#;

    fn config(extra: &str) -> Result<Config, String> {
        Config::from_json(&CONFIG.replace("EXTRA", extra))
    }

    fn seen(workload: u32) -> Seen {
        Seen { workload, write: false, offset: 0, length: 4096, arrival: 0.0 }
    }

    #[test]
    fn export_class_is_optional_and_unset_by_default() {
        let c = Classifier::new(&config("").unwrap());
        assert_eq!((c.class(&seen(0)), c.class(&seen(1))), (NO_CLASS, NO_CLASS));
        let c = Classifier::new(&config(r#", "export_class": {"B": 0}"#).unwrap());
        assert_eq!((c.class(&seen(0)), c.class(&seen(1))), (NO_CLASS, 0));
    }

    #[test]
    fn export_class_is_checked() {
        let no_export = config(r#", "export_class": {"Z": 0}"#).unwrap_err();
        assert!(no_export.contains("export_class.Z"), "{no_export}");
        let range = config(r#", "export_class": {"A": 2}"#).unwrap_err();
        assert!(range.contains("export_class.A") && range.contains("0..2"), "{range}");
        // a kind without classes ignores them: accepted
        let fifo = CONFIG
            .replace(
                r#""kind": "dwrr", "class": [0, 1], "weight": [1.0, 1.0], "quantum": 1.0"#,
                r#""kind": "fifo""#,
            )
            .replace("EXTRA", r#", "export_class": {"A": 7}"#);
        assert!(Config::from_json(&fifo).is_ok());
    }

    #[test]
    fn export_class_moves_an_exports_requests_to_that_class() {
        // A (class 0) and B (class 1) with equal weights alternate under DWRR; with B in
        // class 0 too, the one class is served in arrival order
        let order = |extra: &str| {
            let cfg = config(extra).unwrap();
            let classes = Classifier::new(&cfg);
            let scheduler = cfg.scheduler.build(cfg.exports.len()).unwrap();
            let mut d = Dispatcher::new(cfg.limits.limits(), scheduler).unwrap();
            for (id, w) in [(0u64, 0u32), (1, 0), (2, 1), (3, 1)] {
                let class = classes.class(&seen(w));
                d.enqueue(Item::new(id, w, 1.0).with_class(class), 0.0);
            }
            let req = |_| Request { write: false, size: 4096.0, offset: 0.0 };
            let mut served = Vec::new();
            let mut out: Vec<Dispatched> = Vec::new();
            for _ in 0..4 {
                out.clear();
                d.dispatch(0.0, req, &mut out);
                let id = out[0].item.id;
                served.push(id);
                d.complete(id, req(id));
            }
            served
        };
        assert_eq!(order(""), vec![0, 2, 1, 3]);
        assert_eq!(order(r#", "export_class": {"B": 0}"#), vec![0, 1, 2, 3]);
    }
}
