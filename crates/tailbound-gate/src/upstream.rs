//! An upstream NBD server as the backend (nbdkit, qemu-storage-daemon, another gateway): one
//! connection per export (upstream export name = the export's name), opened at start with
//! `NBD_OPT_GO`, shared by every client of the export and multiplexed by handle: a writer task
//! sends requests (as many as are ready in one system call), a reader task hands each reply to
//! its request's completion. If the upstream connection fails, its outstanding and later
//! requests get `EIO`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tailbound_nbd::client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot};

use crate::proto;

/// What is done with a request's reply (see [`Upstream::submit`]).
pub type Completion = Box<dyn FnOnce(Result<Vec<u8>, u32>) + Send>;

/// Bytes a read's reply buffer leaves free before its data: a simple reply's header, so the
/// gateway answers its client from the same buffer.
pub const REPLY_ROOM: usize = tailbound_nbd::wire::REPLY_BYTES;
/// Most bytes of requests written upstream in one system call.
const BATCH_BYTES: usize = 256 * 1024;

/// One export's connection to the upstream server.
pub struct Upstream {
    to_writer: mpsc::UnboundedSender<(u64, Vec<u8>)>,
    pending: Arc<Mutex<HashMap<u64, (u32, Completion)>>>,
    next: AtomicU64,
    dead: Arc<AtomicBool>,
    /// The export's size as the upstream server gives it.
    pub size: u64,
}

impl Upstream {
    /// Connect to `address` and open `export` (`tailbound_nbd::client::connect`: fixed
    /// newstyle, `NBD_OPT_GO`).
    pub async fn connect(address: &str, export: &str) -> Result<Self, String> {
        let (stream, info) =
            client::connect(address, export).await.map_err(|e| format!("upstream {e}"))?;
        let (rd, wr) = stream.into_split();
        let pending: Arc<Mutex<HashMap<u64, (u32, Completion)>>> = Arc::default();
        let dead = Arc::new(AtomicBool::new(false));
        let (to_writer, from_senders) = mpsc::unbounded_channel();
        tokio::spawn(reader(rd, pending.clone(), dead.clone()));
        tokio::spawn(writer(wr, from_senders, pending.clone(), dead.clone()));
        Ok(Self { to_writer, pending, next: AtomicU64::new(0), dead, size: info.size })
    }

    /// Send one request; `done` gets the reply: for a read, a buffer of `REPLY_ROOM` bytes then
    /// the data (empty room only otherwise), or the upstream's error (`EIO` if the connection
    /// failed). `done` runs on the connection's reader task (or here, on a dead connection).
    pub fn submit(
        &self,
        command: u16,
        flags: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
        done: Completion,
    ) {
        if self.dead.load(Ordering::Relaxed) {
            return done(Err(proto::EIO));
        }
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let read_len = if command == proto::CMD_READ { length } else { 0 };
        lock(&self.pending).insert(handle, (read_len, done));
        // the reader marks the connection dead before failing the waiters it holds: a request
        // inserted after that is failed here
        if self.dead.load(Ordering::Relaxed) {
            return fail(&self.pending, handle);
        }
        let header = proto::Request { flags, command, handle, offset, length };
        let mut msg = Vec::with_capacity(proto::REQUEST_BYTES + payload.len());
        msg.extend_from_slice(&proto::encode_request(&header));
        msg.extend_from_slice(payload);
        if self.to_writer.send((handle, msg)).is_err() {
            fail(&self.pending, handle);
        }
    }

    /// [`Self::submit`], waiting for the reply (its data only).
    pub async fn request(
        &self,
        command: u16,
        flags: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
    ) -> Result<Vec<u8>, u32> {
        let (tx, rx) = oneshot::channel();
        let done: Completion = Box::new(move |r| {
            let _ = tx.send(r.map(|mut b| b.split_off(REPLY_ROOM)));
        });
        self.submit(command, flags, offset, length, payload, done);
        rx.await.unwrap_or(Err(proto::EIO))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Fail request `handle` with `EIO` if it is still pending.
fn fail(pending: &Mutex<HashMap<u64, (u32, Completion)>>, handle: u64) {
    let waiter = lock(pending).remove(&handle);
    if let Some((_, done)) = waiter {
        done(Err(proto::EIO));
    }
}

/// Write requests in arrival order, as many as are ready in one `write` (fewer system calls
/// at queue depth); on a failure mark the connection dead and fail what it could not send.
async fn writer(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<(u64, Vec<u8>)>,
    pending: Arc<Mutex<HashMap<u64, (u32, Completion)>>>,
    dead: Arc<AtomicBool>,
) {
    let mut batch = Vec::new();
    let mut handles = Vec::new();
    while let Some((handle, msg)) = rx.recv().await {
        batch.clear();
        handles.clear();
        batch.extend_from_slice(&msg);
        handles.push(handle);
        while batch.len() < BATCH_BYTES {
            let Ok((h, m)) = rx.try_recv() else { break };
            batch.extend_from_slice(&m);
            handles.push(h);
        }
        if wr.write_all(&batch).await.is_err() {
            dead.store(true, Ordering::Relaxed);
            for &h in &handles {
                fail(&pending, h);
            }
            while let Ok((h, _)) = rx.try_recv() {
                fail(&pending, h);
            }
            rx.close();
            while let Some((h, _)) = rx.recv().await {
                fail(&pending, h);
            }
            return;
        }
    }
}

/// Read replies and hand each to its waiter; on any failure, fail every waiter.
async fn reader(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    pending: Arc<Mutex<HashMap<u64, (u32, Completion)>>>,
    dead: Arc<AtomicBool>,
) {
    loop {
        let Ok(client::Reply { error, handle }) = client::read_reply(&mut rd).await else {
            break;
        };
        let waiter = lock(&pending).remove(&handle);
        let Some((read_len, done)) = waiter else {
            break;
        };
        if error != 0 {
            done(Err(error));
            continue;
        }
        let mut data = vec![0u8; REPLY_ROOM + read_len as usize];
        if rd.read_exact(&mut data[REPLY_ROOM..]).await.is_err() {
            done(Err(proto::EIO));
            break;
        }
        done(Ok(data));
    }
    dead.store(true, Ordering::Relaxed);
    let waiters: Vec<_> = lock(&pending).drain().collect();
    for (_, (_, done)) in waiters {
        done(Err(proto::EIO));
    }
}
