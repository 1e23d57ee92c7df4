//! The client's NBD mode (`client --nbd`): each tenant's requests as NBD reads and writes of its
//! export, so a storage server (`tailbound-gate`, nbdkit, qemu-storage-daemon) is replayed open
//! loop as the TCP mode replays a network path.
//!
//! The handshake is fixed newstyle with `NBD_OPT_GO` (the export's size from `NBD_INFO_EXPORT`;
//! `tailbound_nbd::client::handshake`, as are the request and reply headers); then the writer
//! sends each request when the pacer says (a 28-byte request header, the
//! payload of a write: zeroes) and the reader takes the simple replies in whatever order the
//! server completes them, matching them by handle (the request's position on its connection).
//! A request's latency runs from its trace timestamp to the last byte of its reply, its issue
//! lag from the timestamp to the start of its header's write, as in the TCP mode.

use tailbound_nbd::client::{read_reply, Reply};
use tailbound_nbd::wire::{encode_request, Request, CMD_DISC, CMD_READ, CMD_WRITE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout_at, Instant};

use crate::progress::Report;
use crate::proto::{send_request, CHUNK};

pub const REQUEST_HEADER: u64 = tailbound_nbd::wire::REQUEST_BYTES as u64;
pub const REPLY_HEADER: u64 = tailbound_nbd::wire::REPLY_BYTES as u64;

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
    report: Report,
) -> (Vec<f64>, Option<String>) {
    let mut lag = vec![f64::NAN; reqs.len()];
    let zeros = vec![0u8; CHUNK];
    let mut error = None;
    while let Ok(Some(j)) = timeout_at(deadline, rx.recv()).await {
        let Some(r) = reqs.get(j) else { continue };
        lag[j] = Instant::now().saturating_duration_since(due[j]).as_secs_f64();
        report.sent(j, lag[j]);
        let command = if r.is_read { CMD_READ } else { CMD_WRITE };
        let header = encode_request(&Request {
            flags: 0,
            command,
            handle: j as u64,
            offset: r.offset,
            length: r.length,
        });
        let body = if r.is_read { 0 } else { u64::from(r.length) };
        if let Err(e) = send_request(&mut wr, &header, body, &zeros, j, deadline).await {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        let _ = timeout_at(deadline, replied).await;
        let disc = encode_request(&Request {
            flags: 0,
            command: CMD_DISC,
            handle: 0,
            offset: 0,
            length: 0,
        });
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
    report: Report,
) -> (Vec<f64>, Vec<u64>, Option<String>) {
    let mut latency = vec![f64::NAN; reqs.len()];
    let mut received = vec![0u64; reqs.len()];
    let mut answered = vec![false; reqs.len()];
    let mut sink = vec![0u8; CHUNK];
    let mut error = None;
    for _ in 0..reqs.len() {
        let one = async {
            let Reply { error: errno, handle } = read_reply(&mut rd).await?;
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
                report.answered(j, latency[j], received[j]);
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
