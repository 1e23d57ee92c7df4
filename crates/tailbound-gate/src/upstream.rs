//! An upstream NBD server as the backend (nbdkit, qemu-storage-daemon, another gateway): one
//! connection per export (upstream export name = the export's name), opened at start with
//! `NBD_OPT_GO`, shared by every client of the export and multiplexed by handle. If the upstream
//! connection fails, its outstanding and later requests get `EIO`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::proto;

type Waiter = oneshot::Sender<Result<Vec<u8>, u32>>;

/// One export's connection to the upstream server.
pub struct Upstream {
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Arc<Mutex<HashMap<u64, (u32, Waiter)>>>,
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
        let pending: Arc<Mutex<HashMap<u64, (u32, Waiter)>>> = Arc::default();
        let dead = Arc::new(AtomicBool::new(false));
        tokio::spawn(reader(rd, pending.clone(), dead.clone()));
        Ok(Self {
            writer: tokio::sync::Mutex::new(wr),
            pending,
            next: AtomicU64::new(0),
            dead,
            size,
        })
    }

    /// Send one request and wait for its reply: the data of a read (empty otherwise), or the
    /// upstream's error (`EIO` if the connection failed).
    pub async fn request(
        &self,
        command: u16,
        flags: u16,
        offset: u64,
        length: u32,
        payload: &[u8],
    ) -> Result<Vec<u8>, u32> {
        if self.dead.load(Ordering::Relaxed) {
            return Err(proto::EIO);
        }
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let read_len = if command == proto::CMD_READ { length } else { 0 };
        self.pending.lock().expect("not poisoned").insert(handle, (read_len, tx));
        // the reader marks the connection dead before failing the waiters it holds: a request
        // inserted after that is failed here
        if self.dead.load(Ordering::Relaxed) {
            self.pending.lock().expect("not poisoned").remove(&handle);
            return Err(proto::EIO);
        }
        let header = proto::Request { flags, command, handle, offset, length };
        let mut msg = proto::encode_request(&header).to_vec();
        msg.extend_from_slice(payload);
        let sent = self.writer.lock().await.write_all(&msg).await;
        if sent.is_err() {
            self.dead.store(true, Ordering::Relaxed);
            self.pending.lock().expect("not poisoned").remove(&handle);
            return Err(proto::EIO);
        }
        rx.await.unwrap_or(Err(proto::EIO))
    }
}

/// Read replies and hand each to its waiter; on any failure, fail every waiter.
async fn reader(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    pending: Arc<Mutex<HashMap<u64, (u32, Waiter)>>>,
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
        let Some((read_len, tx)) = pending.lock().expect("not poisoned").remove(&handle) else {
            break;
        };
        if error != 0 {
            let _ = tx.send(Err(error));
            continue;
        }
        let mut data = vec![0u8; read_len as usize];
        if rd.read_exact(&mut data).await.is_err() {
            let _ = tx.send(Err(proto::EIO));
            break;
        }
        let _ = tx.send(Ok(data));
    }
    dead.store(true, Ordering::Relaxed);
    for (_, (_, tx)) in pending.lock().expect("not poisoned").drain() {
        let _ = tx.send(Err(proto::EIO));
    }
}
