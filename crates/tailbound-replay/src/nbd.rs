//! The client's NBD mode (`client --nbd`): each tenant's requests as NBD reads and writes of its
//! export, so a storage server (`tailbound-gate`, nbdkit, qemu-storage-daemon) is replayed open
//! loop as the TCP mode replays a network path.
//!
//! The handshake is fixed newstyle with `NBD_OPT_GO` (the export's size from `NBD_INFO_EXPORT`);
//! then the writer sends each request when the pacer says (a 28-byte request header, the
//! payload of a write: zeroes) and the reader takes the simple replies in whatever order the
//! server completes them, matching them by handle (the request's position on its connection).
//! A request's latency runs from its trace timestamp to the last byte of its reply, its issue
//! lag from the timestamp to the start of its header's write, as in the TCP mode.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout_at, Instant};

use crate::proto::{send_request, CHUNK};

pub const REQUEST_HEADER: u64 = 28;
pub const REPLY_HEADER: u64 = 16;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const REPLY_MAGIC: u32 = 0x6744_6698;
const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const OPT_GO: u32 = 7;
const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const INFO_EXPORT: u16 = 0;
const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
/// An option reply's payload above this is refused (the protocol's own limit is far lower in
/// practice: INFO replies are a few bytes).
const MAX_OPTION_REPLY: u32 = 1 << 20;

/// One request as the NBD mode sends it.
#[derive(Clone, Copy)]
pub struct NbdRequest {
    pub is_read: bool,
    pub offset: u64,
    pub length: u32,
}

/// Bytes on the wire of a request's two messages: the header and a write's payload, the reply
/// header and a read's data.
pub fn wire_bytes(is_read: bool, length: u64) -> (u64, u64) {
    if is_read {
        (REQUEST_HEADER, REPLY_HEADER + length)
    } else {
        (REQUEST_HEADER + length, REPLY_HEADER)
    }
}

async fn read_u16<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b).await?;
    Ok(u16::from_be_bytes(b))
}

async fn read_u32<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).await?;
    Ok(u32::from_be_bytes(b))
}

async fn read_u64<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b).await?;
    Ok(u64::from_be_bytes(b))
}

/// The fixed newstyle handshake up to transmission on `export`; returns the export's size.
pub async fn handshake(stream: &mut TcpStream, export: &str) -> Result<u64, String> {
    let io = |e: std::io::Error| format!("handshake: {e}");
    let mut hello = [0u8; 16];
    stream.read_exact(&mut hello).await.map_err(io)?;
    if &hello != b"NBDMAGICIHAVEOPT" {
        return Err("not an NBD server with the newstyle handshake".into());
    }
    let server_flags = read_u16(stream).await.map_err(io)?;
    if server_flags & FLAG_FIXED_NEWSTYLE == 0 {
        return Err("the server does not offer the fixed newstyle handshake".into());
    }
    let client_flags = u32::from(server_flags & (FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES));
    let name = export.as_bytes();
    let mut msg = Vec::with_capacity(32 + name.len());
    msg.extend_from_slice(&client_flags.to_be_bytes());
    msg.extend_from_slice(b"IHAVEOPT");
    msg.extend_from_slice(&OPT_GO.to_be_bytes());
    msg.extend_from_slice(&(4 + name.len() as u32 + 2).to_be_bytes());
    msg.extend_from_slice(&(name.len() as u32).to_be_bytes());
    msg.extend_from_slice(name);
    msg.extend_from_slice(&0u16.to_be_bytes()); // no information requests: the server sends EXPORT
    stream.write_all(&msg).await.map_err(io)?;
    let mut size = None;
    loop {
        if read_u64(stream).await.map_err(io)? != OPTION_REPLY_MAGIC {
            return Err("bad option reply magic".into());
        }
        let _option = read_u32(stream).await.map_err(io)?;
        let reply = read_u32(stream).await.map_err(io)?;
        let length = read_u32(stream).await.map_err(io)?;
        if length > MAX_OPTION_REPLY {
            return Err(format!("option reply of {length} bytes"));
        }
        let mut data = vec![0u8; length as usize];
        stream.read_exact(&mut data).await.map_err(io)?;
        match reply {
            REP_ACK => break,
            REP_INFO if data.len() >= 12 && data[..2] == INFO_EXPORT.to_be_bytes() => {
                size = Some(u64::from_be_bytes(data[2..10].try_into().expect("8 bytes")));
            }
            REP_INFO => {}
            r if r & 0x8000_0000 != 0 => {
                let text = String::from_utf8_lossy(&data);
                return Err(format!("the server refused export {export:?} (error {r:#x}) {text}"));
            }
            r => return Err(format!("unexpected option reply {r:#x}")),
        }
    }
    size.ok_or_else(|| format!("export {export:?}: the server sent no size"))
}

/// Send each request when the pacer says; returns each request's issue lag (NaN: not sent).
/// The connection stays open until the reader has every reply (`replied`; a server may drop
/// the requests in flight when the client's side closes), then `NBD_CMD_DISC` ends it.
pub async fn write_requests(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<usize>,
    reqs: Vec<NbdRequest>,
    due: Vec<Instant>,
    deadline: Instant,
    replied: oneshot::Receiver<()>,
) -> (Vec<f64>, Option<String>) {
    let mut lag = vec![f64::NAN; reqs.len()];
    let zeros = vec![0u8; CHUNK];
    let mut error = None;
    while let Ok(Some(j)) = timeout_at(deadline, rx.recv()).await {
        let Some(r) = reqs.get(j) else { continue };
        lag[j] = Instant::now().saturating_duration_since(due[j]).as_secs_f64();
        let mut header = [0u8; REQUEST_HEADER as usize];
        header[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        let cmd = if r.is_read { CMD_READ } else { CMD_WRITE };
        header[6..8].copy_from_slice(&cmd.to_be_bytes());
        header[8..16].copy_from_slice(&(j as u64).to_be_bytes());
        header[16..24].copy_from_slice(&r.offset.to_be_bytes());
        header[24..28].copy_from_slice(&r.length.to_be_bytes());
        let body = if r.is_read { 0 } else { u64::from(r.length) };
        if let Err(e) = send_request(&mut wr, &header, body, &zeros, j, deadline).await {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        let _ = timeout_at(deadline, replied).await;
        let mut disc = [0u8; REQUEST_HEADER as usize];
        disc[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        disc[6..8].copy_from_slice(&CMD_DISC.to_be_bytes());
        let _ = timeout_at(deadline, wr.write_all(&disc)).await;
    }
    let _ = wr.shutdown().await;
    (lag, error)
}

/// Take the replies in completion order; returns each request's latency (NaN: not answered),
/// the bytes of its reply, and the first error (a reply with an error counts as not answered).
pub async fn read_replies(
    mut rd: OwnedReadHalf,
    reqs: Vec<NbdRequest>,
    due: Vec<Instant>,
    deadline: Instant,
    replied: oneshot::Sender<()>,
) -> (Vec<f64>, Vec<u64>, Option<String>) {
    let mut latency = vec![f64::NAN; reqs.len()];
    let mut received = vec![0u64; reqs.len()];
    let mut answered = vec![false; reqs.len()];
    let mut sink = vec![0u8; CHUNK];
    let mut error = None;
    for _ in 0..reqs.len() {
        let one = async {
            let mut h = [0u8; REPLY_HEADER as usize];
            rd.read_exact(&mut h).await.map_err(|e| e.to_string())?;
            let magic = u32::from_be_bytes(h[..4].try_into().expect("4 bytes"));
            let errno = u32::from_be_bytes(h[4..8].try_into().expect("4 bytes"));
            let handle = u64::from_be_bytes(h[8..16].try_into().expect("8 bytes"));
            if magic != REPLY_MAGIC {
                return Err(format!("bad reply magic {magic:#x}"));
            }
            let j = usize::try_from(handle).ok().filter(|&j| j < reqs.len() && !answered[j]);
            let Some(j) = j else {
                return Err(format!("reply to an unknown handle {handle}"));
            };
            answered[j] = true;
            let mut left = if reqs[j].is_read && errno == 0 { reqs[j].length as usize } else { 0 };
            while left > 0 {
                let want = left.min(CHUNK);
                match rd.read(&mut sink[..want]).await {
                    Ok(0) => return Err("connection closed inside a reply".to_string()),
                    Ok(k) => left -= k,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok((j, errno))
        };
        match timeout_at(deadline, one).await {
            Ok(Ok((j, 0))) => {
                latency[j] = Instant::now().saturating_duration_since(due[j]).as_secs_f64();
                received[j] = wire_bytes(reqs[j].is_read, u64::from(reqs[j].length)).1;
            }
            Ok(Ok((j, errno))) => {
                error.get_or_insert(format!("request {j}: the server answered error {errno}"));
            }
            Ok(Err(e)) => return (latency, received, Some(e)),
            Err(_) => {
                let missing = answered.iter().filter(|a| !**a).count();
                return (latency, received, Some(format!("deadline with {missing} unanswered")));
            }
        }
    }
    let _ = replied.send(());
    (latency, received, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_count_headers_and_payloads() {
        assert_eq!(wire_bytes(true, 4096), (28, 16 + 4096));
        assert_eq!(wire_bytes(false, 4096), (28 + 4096, 16));
    }
}
