//! The wire format, the message sizes of the network token model, limits and errors.
//!
//! A request message is a 32-byte header (`b"TBRQ"`, 4 reserved bytes, then little-endian u64s:
//! the request's total length, the response's total length, the sequence number on its
//! connection) followed by padding up to its total length; a response is a 24-byte header
//! (`b"TBRS"`, 4 reserved bytes, total length, sequence number) and padding. Lengths count the
//! header, so the bytes of a message are exactly the token model's (rounded to whole bytes).

use std::fmt;
use std::os::fd::AsRawFd;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::{timeout_at, Instant};

pub const REQUEST_MAGIC: &[u8; 4] = b"TBRQ";
pub const RESPONSE_MAGIC: &[u8; 4] = b"TBRS";
pub const REQUEST_HEADER: usize = 32;
pub const RESPONSE_HEADER: usize = 24;
/// The largest message either side sends or accepts (bytes): bounds a run's time and memory.
pub const MAX_MESSAGE: u64 = 1 << 30;
/// The most requests one client run takes (about 100 bytes of state each).
pub const MAX_REQUESTS: usize = 10_000_000;
/// Trace times are in [0, MAX_TIME_S] seconds (tailbound.limits).
pub const MAX_TIME_S: f64 = 1e10;
/// Padding is written from and read into buffers of this size.
pub const CHUNK: usize = 64 * 1024;

#[derive(Debug)]
pub enum Error {
    /// Bad command line or input file: exit status 2.
    Usage(String),
    /// The run could not start (bind, connect, write the output): exit status 2.
    Io(String),
}

impl Error {
    pub fn code(&self) -> u8 {
        2
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Io(m) => f.write_str(m),
        }
    }
}

/// Bytes on the wire of a request's two messages: `overhead + factor · size`. A read sends a
/// small request (`small_factor`) and a large response (`large_factor`), a write the reverse
/// (python/tailbound/profiles/tokens.py `MessageSizes`).
#[derive(Clone, Copy, Debug)]
pub struct MessageSizes {
    pub overhead: f64,
    pub small_factor: f64,
    pub large_factor: f64,
}

impl Default for MessageSizes {
    fn default() -> Self {
        MessageSizes { overhead: 200.0, small_factor: 0.025, large_factor: 1.1 }
    }
}

impl MessageSizes {
    /// (request bytes, response bytes) of a request, rounded to whole bytes and at least the
    /// headers; `None` if either is above [`MAX_MESSAGE`].
    pub fn of(&self, is_read: bool, size: f64) -> Option<(u64, u64)> {
        let (fq, fr) = if is_read {
            (self.small_factor, self.large_factor)
        } else {
            (self.large_factor, self.small_factor)
        };
        let q = (self.overhead + fq * size).round();
        let r = (self.overhead + fr * size).round();
        if !(q.is_finite() && r.is_finite()) || q > MAX_MESSAGE as f64 || r > MAX_MESSAGE as f64 {
            return None;
        }
        Some(((q as u64).max(REQUEST_HEADER as u64), (r as u64).max(RESPONSE_HEADER as u64)))
    }
}

/// Write request `j`: `header`, then `body` zero bytes in writes of `zeros` (a [`CHUNK`] the
/// caller allocates once), all before `deadline`; the error names the request.
pub async fn send_request<W: AsyncWrite + Unpin>(
    wr: &mut W,
    header: &[u8],
    body: u64,
    zeros: &[u8],
    j: usize,
    deadline: Instant,
) -> Result<(), String> {
    let send = async {
        wr.write_all(header).await?;
        let mut left = body;
        while left > 0 {
            let k = left.min(zeros.len() as u64) as usize;
            wr.write_all(&zeros[..k]).await?;
            left -= k as u64;
        }
        Ok::<(), std::io::Error>(())
    };
    match timeout_at(deadline, send).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("sending request {j}: {e}")),
        Err(_) => Err(format!("deadline while sending request {j}")),
    }
}

pub fn request_header(total: u64, response: u64, seq: u64) -> [u8; REQUEST_HEADER] {
    let mut h = [0u8; REQUEST_HEADER];
    h[..4].copy_from_slice(REQUEST_MAGIC);
    h[8..16].copy_from_slice(&total.to_le_bytes());
    h[16..24].copy_from_slice(&response.to_le_bytes());
    h[24..32].copy_from_slice(&seq.to_le_bytes());
    h
}

/// (total, response, seq) of a request header, or why it is not one.
pub fn parse_request(h: &[u8; REQUEST_HEADER]) -> Result<(u64, u64, u64), String> {
    if &h[..4] != REQUEST_MAGIC {
        return Err("not a tailbound-replay request (bad magic)".into());
    }
    let total = u64_at(h, 8);
    let response = u64_at(h, 16);
    if !(REQUEST_HEADER as u64..=MAX_MESSAGE).contains(&total) {
        return Err(format!("request length {total} outside [{REQUEST_HEADER}, {MAX_MESSAGE}]"));
    }
    if !(RESPONSE_HEADER as u64..=MAX_MESSAGE).contains(&response) {
        return Err(format!(
            "response length {response} outside [{RESPONSE_HEADER}, {MAX_MESSAGE}]"
        ));
    }
    Ok((total, response, u64_at(h, 24)))
}

pub fn response_header(total: u64, seq: u64) -> [u8; RESPONSE_HEADER] {
    let mut h = [0u8; RESPONSE_HEADER];
    h[..4].copy_from_slice(RESPONSE_MAGIC);
    h[8..16].copy_from_slice(&total.to_le_bytes());
    h[16..24].copy_from_slice(&seq.to_le_bytes());
    h
}

/// (total, seq) of a response header.
pub fn parse_response(h: &[u8; RESPONSE_HEADER]) -> Result<(u64, u64), String> {
    if &h[..4] != RESPONSE_MAGIC {
        return Err("not a tailbound-replay response (bad magic)".into());
    }
    let total = u64_at(h, 8);
    if !(RESPONSE_HEADER as u64..=MAX_MESSAGE).contains(&total) {
        return Err(format!("response length {total} outside [{RESPONSE_HEADER}, {MAX_MESSAGE}]"));
    }
    Ok((total, u64_at(h, 16)))
}

fn u64_at(h: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Set the IPv4 TOS byte (DSCP << 2) of a socket.
pub fn set_tos<S: AsRawFd>(socket: &S, tos: u8) -> Result<(), Error> {
    let value: libc::c_int = tos.into();
    // SAFETY: a valid descriptor, a c_int option value of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(Error::Io(format!(
            "cannot set TOS {tos}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// A positive finite number of seconds from an option's value.
pub fn seconds(option: &str, value: Option<&String>) -> Result<f64, Error> {
    let v = value.ok_or_else(|| Error::Usage(format!("{option} needs a value")))?;
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=MAX_TIME_S).contains(&s) => Ok(s),
        _ => Err(Error::Usage(format!("{option}: expected seconds in [0, 1e10], got {v:?}"))),
    }
}

/// `ADDR[,key=value]...` split into the address and its options.
pub fn address_with_options(text: &str) -> (&str, Vec<(&str, &str)>) {
    let mut parts = text.split(',');
    let addr = parts.next().unwrap_or("");
    let opts = parts.map(|p| p.split_once('=').unwrap_or((p, ""))).collect();
    (addr, opts)
}

pub fn tos(value: &str) -> Result<u8, Error> {
    value.parse::<u8>().map_err(|_| Error::Usage(format!("tos: expected 0..255, got {value:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_token_model() {
        let m = MessageSizes::default();
        assert_eq!(m.of(true, 1000.0), Some((225, 1300)));
        assert_eq!(m.of(false, 1000.0), Some((1300, 225)));
        assert_eq!(m.of(true, 0.0), Some((200, 200)));
        assert_eq!(m.of(true, 1e12), None);
        let tiny = MessageSizes { overhead: 0.0, ..m };
        assert_eq!(tiny.of(true, 0.0), Some((32, 24)));
    }

    #[test]
    fn headers_round_trip_and_bad_ones_are_refused() {
        let h = request_header(500, 700, 9);
        assert_eq!(parse_request(&h), Ok((500, 700, 9)));
        assert_eq!(parse_response(&response_header(700, 9)), Ok((700, 9)));
        let mut bad = h;
        bad[0] = b'X';
        assert!(parse_request(&bad).is_err());
        assert!(parse_request(&request_header(10, 700, 0)).is_err());
        assert!(parse_request(&request_header(500, MAX_MESSAGE + 1, 0)).is_err());
    }
}
