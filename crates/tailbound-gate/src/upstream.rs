//! An upstream NBD server as the backend (nbdkit, qemu-storage-daemon, another gateway): one
//! connection per export (upstream export name = the export's name), opened at start with
//! `NBD_OPT_GO`, shared by every client of the export and multiplexed by handle: a writer task
//! sends requests (as many as are ready in one system call), a reader task hands each reply to
//! its request's completion. If the upstream connection fails, its outstanding and later
//! requests get `EIO`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::proto;

/// What is done with a request's reply (see [`Upstream::submit`]).
pub type Completion = Box<dyn FnOnce(Result<Vec<u8>, u32>) + Send>;

/// Bytes a read's reply buffer leaves free before its data: a simple reply's header, so the
/// gateway answers its client from the same buffer.
pub const REPLY_ROOM: usize = 16;
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

async fn read_exact(s: &mut (impl AsyncReadExt + Unpin), buf: &mut [u8]) -> Result<(), String> {
    s.read_exact(buf).await.map(|_| ()).map_err(|e| format!("upstream: {e}"))
}

impl Upstream {
    /// Connect to `address` and open `export` (fixed newstyle, `NBD_OPT_GO`).
    pub async fn connect(address: &str, export: &str) -> Result<Self, String> {
        let stream =
            TcpStream::connect(address).await.map_err(|e| format!("upstream {address}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (mut rd, mut wr) = stream.into_split();
        let mut hello = [0u8; 18];
        read_exact(&mut rd, &mut hello).await?;
        if hello[..16] != proto::greeting()[..16] {
            return Err(format!("upstream {address}: not a newstyle NBD server"));
        }
        let flags = u16::from_be_bytes([hello[16], hello[17]]);
        if flags & proto::FLAG_FIXED_NEWSTYLE == 0 {
            return Err(format!("upstream {address}: no fixed newstyle negotiation"));
        }
        let client = u32::from(flags & (proto::FLAG_FIXED_NEWSTYLE | proto::FLAG_NO_ZEROES));
        let mut data = Vec::new();
        data.extend_from_slice(&(export.len() as u32).to_be_bytes());
        data.extend_from_slice(export.as_bytes());
        data.extend_from_slice(&0u16.to_be_bytes());
        let mut msg = client.to_be_bytes().to_vec();
        msg.extend_from_slice(&proto::IHAVEOPT.to_be_bytes());
        msg.extend_from_slice(&proto::OPT_GO.to_be_bytes());
        msg.extend_from_slice(&(data.len() as u32).to_be_bytes());
        msg.extend_from_slice(&data);
        wr.write_all(&msg).await.map_err(|e| format!("upstream: {e}"))?;
        let mut size = None;
        loop {
            let mut h = [0u8; 20];
            read_exact(&mut rd, &mut h).await?;
            let reply = u32::from_be_bytes(h[12..16].try_into().expect("4 bytes"));
            let len = u32::from_be_bytes(h[16..20].try_into().expect("4 bytes"));
            if len > proto::MAX_OPTION_BYTES {
                return Err(format!("upstream {address}: option reply of {len} bytes"));
            }
            let mut body = vec![0u8; len as usize];
            read_exact(&mut rd, &mut body).await?;
            match reply {
                proto::REP_ACK => break,
                proto::REP_INFO if body.len() >= 12 && body[..2] == [0, 0] => {
                    size = Some(u64::from_be_bytes(body[2..10].try_into().expect("8 bytes")));
                }
                proto::REP_INFO => {}
                other => {
                    let why = String::from_utf8_lossy(&body);
                    return Err(format!("upstream {address} export {export:?}: {other:#x} {why}"));
                }
            }
        }
        let size = size.ok_or(format!("upstream {address}: no export size"))?;
        let pending: Arc<Mutex<HashMap<u64, (u32, Completion)>>> = Arc::default();
        let dead = Arc::new(AtomicBool::new(false));
        let (to_writer, from_senders) = mpsc::unbounded_channel();
        tokio::spawn(reader(rd, pending.clone(), dead.clone()));
        tokio::spawn(writer(wr, from_senders, pending.clone(), dead.clone()));
        Ok(Self { to_writer, pending, next: AtomicU64::new(0), dead, size })
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
        let mut h = [0u8; 16];
        if rd.read_exact(&mut h).await.is_err() {
            break;
        }
        let magic = u32::from_be_bytes(h[..4].try_into().expect("4 bytes"));
        let error = u32::from_be_bytes(h[4..8].try_into().expect("4 bytes"));
        let handle = u64::from_be_bytes(h[8..16].try_into().expect("8 bytes"));
        if magic != proto::SIMPLE_REPLY_MAGIC {
            break;
        }
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
