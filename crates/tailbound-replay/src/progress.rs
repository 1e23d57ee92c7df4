//! `client --progress FILE`: every answered request's row, written while the replay runs, so an
//! agent can follow a running replay (docs/service.md, "Agents").
//!
//! The file starts with the header of the client's `--out` CSV and gets one row per request as
//! its response arrives (completion order, not trace order), in the `--out` CSV's columns and
//! number format. A request not answered gets no row here (the `--out` CSV, written at the end,
//! has every request). Rows are appended by one thread that flushes whenever it has no further
//! row waiting, so a reader sees a row within milliseconds of its response; a reader may find
//! the last line cut short (a flush of a full buffer) and must keep it for its next read.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::proto::Error;

/// What the connections' tasks tell the progress writer.
pub enum Event {
    /// Request `j` of connection `conn` was sent `lag_s` after its trace time.
    Sent { conn: usize, j: usize, lag_s: f64 },
    /// Request `j` of connection `conn` was answered `latency_s` after its trace time, with
    /// `received` bytes.
    Answered { conn: usize, j: usize, latency_s: f64, received: u64 },
}

/// A connection's handle on the progress writer (none without `--progress`).
#[derive(Clone)]
pub struct Report {
    conn: usize,
    tx: Option<mpsc::UnboundedSender<Event>>,
}

impl Report {
    /// Nothing reported.
    pub fn none() -> Self {
        Self { conn: 0, tx: None }
    }

    /// Request `j` sent `lag_s` late.
    pub fn sent(&self, j: usize, lag_s: f64) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Event::Sent { conn: self.conn, j, lag_s });
        }
    }

    /// Request `j` answered after `latency_s`, `received` bytes.
    pub fn answered(&self, j: usize, latency_s: f64, received: u64) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Event::Answered { conn: self.conn, j, latency_s, received });
        }
    }
}

/// One request's fixed columns: `tenant,seq,time_s,op,size,request_bytes` (its row's start).
pub type Fixed = String;

/// The progress writer: a thread appending rows to the file until every [`Report`] is gone.
pub struct Progress {
    tx: mpsc::UnboundedSender<Event>,
    thread: JoinHandle<Result<(), Error>>,
}

/// Format a number as the `--out` CSV does (empty when not finite).
pub fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.9}")
    } else {
        String::new()
    }
}

impl Progress {
    /// Create `path` (truncated) with the CSV header `header` and start the writer; `fixed[c][j]`
    /// is the start of the row of connection `c`'s request `j`.
    pub fn start(path: &str, header: &str, fixed: Vec<Vec<Fixed>>) -> Result<Self, Error> {
        let io = move |p: &str, e: std::io::Error| Error::Io(format!("cannot write {p}: {e}"));
        let mut f = BufWriter::new(File::create(path).map_err(|e| io(path, e))?);
        writeln!(f, "{header}").and_then(|()| f.flush()).map_err(|e| io(path, e))?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        let path = path.to_string();
        let thread = std::thread::spawn(move || {
            let mut lags: Vec<Vec<f64>> = fixed.iter().map(|c| vec![f64::NAN; c.len()]).collect();
            let mut one = |e: Event, f: &mut BufWriter<File>| -> std::io::Result<()> {
                match e {
                    Event::Sent { conn, j, lag_s } => {
                        if let Some(l) = lags.get_mut(conn).and_then(|c| c.get_mut(j)) {
                            *l = lag_s;
                        }
                        Ok(())
                    }
                    Event::Answered { conn, j, latency_s, received } => {
                        let Some(start) = fixed.get(conn).and_then(|c| c.get(j)) else {
                            return Ok(());
                        };
                        let lag = lags[conn][j];
                        writeln!(f, "{start},{received},{},{}", num(lag), num(latency_s))
                    }
                }
            };
            while let Some(e) = rx.blocking_recv() {
                one(e, &mut f).map_err(|e| io(&path, e))?;
                while let Ok(e) = rx.try_recv() {
                    one(e, &mut f).map_err(|e| io(&path, e))?;
                }
                f.flush().map_err(|e| io(&path, e))?;
            }
            f.flush().map_err(|e| io(&path, e))
        });
        Ok(Self { tx, thread })
    }

    /// The handle of connection `conn`.
    pub fn report(&self, conn: usize) -> Report {
        Report { conn, tx: Some(self.tx.clone()) }
    }

    /// Wait for the writer to write every row reported (every [`Report`] must be dropped).
    pub fn finish(self) -> Result<(), Error> {
        drop(self.tx);
        self.thread.join().map_err(|_| Error::Io("the progress writer panicked".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_answers_with_the_lag_sent_before() {
        let dir = std::env::temp_dir().join(format!("tb-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.csv");
        let fixed = vec![vec!["A,0,0.5,R,4096,100".to_string(), "A,2,1.5,W,512,600".to_string()]];
        let p = Progress::start(path.to_str().unwrap(), "h", fixed).unwrap();
        let r = p.report(0);
        r.sent(1, 0.001);
        r.answered(1, 0.25, 42);
        r.answered(0, f64::NAN, 0); // never sent: an empty lag
        r.answered(7, 1.0, 1); // unknown: no row
        drop(r);
        p.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "h\nA,2,1.5,W,512,600,42,0.001000000,0.250000000\nA,0,0.5,R,4096,100,0,,\n"
        );
        assert!(Report::none().tx.is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
