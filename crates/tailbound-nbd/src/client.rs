//! The client's side of an NBD connection over any async byte stream: the fixed newstyle
//! handshake up to transmission (`NBD_OPT_GO`), and reading a simple reply's header. What a
//! client then sends — [`encode_request`](crate::wire::encode_request) headers and a write's
//! payload — and how it waits for replies is its user's business (the gateway's upstream
//! multiplexes completions, the replayer paces and times requests).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

pub use crate::wire::Reply;
use crate::wire::{
    info_request, option_request, parse_info_export, parse_option_reply, parse_reply,
    FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES, IHAVEOPT, NBD_MAGIC, OPTION_REPLY_BYTES, OPT_GO,
    REPLY_BYTES, REP_ACK, REP_FLAG_ERROR, REP_INFO,
};

/// An export as the server describes it in `NBD_INFO_EXPORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Export {
    /// Size (bytes).
    pub size: u64,
    /// Transmission flags (`NBD_FLAG_HAS_FLAGS`, `NBD_FLAG_SEND_FLUSH`, ...).
    pub flags: u16,
}

/// The fixed newstyle handshake on `stream` up to the transmission phase of `export`: read the
/// greeting, send the client flags (fixed newstyle, and no zeroes when the server offers it) and
/// `NBD_OPT_GO` with no information request, then read option replies until `NBD_REP_ACK`.
/// Errors say which step failed (a server refusing the export: its error type and message).
pub async fn handshake<S>(stream: &mut S, export: &str) -> Result<Export, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let io = |e: std::io::Error| format!("handshake: {e}");
    let mut hello = [0u8; 18];
    stream.read_exact(&mut hello).await.map_err(io)?;
    if hello[..8] != NBD_MAGIC.to_be_bytes() || hello[8..16] != IHAVEOPT.to_be_bytes() {
        return Err("not an NBD server with the newstyle handshake".into());
    }
    let server_flags = u16::from_be_bytes([hello[16], hello[17]]);
    if server_flags & FLAG_FIXED_NEWSTYLE == 0 {
        return Err("the server does not offer the fixed newstyle handshake".into());
    }
    let client_flags = u32::from(server_flags & (FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES));
    let mut msg = client_flags.to_be_bytes().to_vec();
    // no information requests: the server sends NBD_INFO_EXPORT anyway
    msg.extend_from_slice(&option_request(OPT_GO, &info_request(export, &[])));
    stream.write_all(&msg).await.map_err(io)?;
    let mut found = None;
    loop {
        let mut header = [0u8; OPTION_REPLY_BYTES];
        stream.read_exact(&mut header).await.map_err(io)?;
        let (_option, reply, length) = parse_option_reply(&header)?;
        let mut data = vec![0u8; length as usize];
        stream.read_exact(&mut data).await.map_err(io)?;
        match reply {
            REP_ACK => break,
            REP_INFO => {
                if let Some((size, flags)) = parse_info_export(&data) {
                    found = Some(Export { size, flags });
                }
            }
            r if r & REP_FLAG_ERROR != 0 => {
                let text = String::from_utf8_lossy(&data);
                return Err(format!("the server refused export {export:?} (error {r:#x}) {text}"));
            }
            r => return Err(format!("unexpected option reply {r:#x}")),
        }
    }
    found.ok_or_else(|| format!("export {export:?}: the server sent no size"))
}

/// Connect to `address` (`HOST:PORT`), disable Nagle's algorithm and open `export`
/// ([`handshake`]); errors name the address.
pub async fn connect(address: &str, export: &str) -> Result<(TcpStream, Export), String> {
    let mut stream = TcpStream::connect(address).await.map_err(|e| format!("{address}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let export = handshake(&mut stream, export).await.map_err(|e| format!("{address}: {e}"))?;
    Ok((stream, export))
}

/// Read one simple reply's header (the data of a successful read follows it on the stream).
pub async fn read_reply<R: AsyncRead + Unpin>(r: &mut R) -> Result<Reply, String> {
    let mut header = [0u8; REPLY_BYTES];
    r.read_exact(&mut header).await.map_err(|e| e.to_string())?;
    parse_reply(&header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{info_export, option_reply, simple_reply, REP_ERR_UNKNOWN};
    use tokio::io::duplex;

    /// Play a server's side as a byte script: write `greeting`, expect exactly `expect` from the
    /// client, write `replies`; returns the client's result.
    async fn script(greeting: &[u8], expect: &[u8], replies: &[u8]) -> Result<Export, String> {
        let (mut client, mut server) = duplex(1 << 16);
        let (greeting, expect, replies) = (greeting.to_vec(), expect.to_vec(), replies.to_vec());
        let srv = tokio::spawn(async move {
            server.write_all(&greeting).await.unwrap();
            let mut got = vec![0u8; expect.len()];
            if server.read_exact(&mut got).await.is_ok() {
                assert_eq!(got, expect, "the client's handshake bytes");
                server.write_all(&replies).await.unwrap();
            }
            // dropping the server's end: the client reads what is buffered, then end of file
        });
        let r = handshake(&mut client, "disk").await;
        drop(client);
        srv.await.unwrap();
        r
    }

    const GREETING: &[u8; 18] = b"NBDMAGICIHAVEOPT\x00\x03";
    /// Client flags 3, then IHAVEOPT, NBD_OPT_GO (7), 10 bytes: name length 4, "disk", 0 items.
    const GO: &[u8] =
        b"\x00\x00\x00\x03IHAVEOPT\x00\x00\x00\x07\x00\x00\x00\x0a\x00\x00\x00\x04disk\x00\x00";

    #[tokio::test]
    async fn handshake_sends_go_and_reads_the_export_size() {
        let mut replies = option_reply(OPT_GO, REP_INFO, &[0, 3, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0]);
        replies.extend(option_reply(OPT_GO, REP_INFO, &info_export(1 << 20, 0x2d)));
        replies.extend(option_reply(OPT_GO, REP_ACK, &[]));
        let got = script(GREETING, GO, &replies).await;
        assert_eq!(got, Ok(Export { size: 1 << 20, flags: 0x2d }));
        // a server without NO_ZEROES: the client echoes only FIXED_NEWSTYLE
        let mut go1 = GO.to_vec();
        go1[3] = 1;
        let got = script(b"NBDMAGICIHAVEOPT\x00\x01", &go1, &replies).await;
        assert_eq!(got.map(|e| e.size), Ok(1 << 20));
    }

    #[tokio::test]
    async fn handshake_reports_refusals_and_bad_servers() {
        let refused = option_reply(OPT_GO, REP_ERR_UNKNOWN, b"no such export");
        let e = script(GREETING, GO, &refused).await.unwrap_err();
        assert!(e.contains("refused export \"disk\"") && e.contains("no such export"), "{e}");
        let e = script(GREETING, GO, &option_reply(OPT_GO, REP_ACK, &[])).await.unwrap_err();
        assert!(e.contains("no size"), "{e}");
        let e = script(b"NBDMAGICIHAVEOPT\x00\x00", b"", b"").await.unwrap_err();
        assert!(e.contains("fixed newstyle"), "{e}");
        let e = script(b"NBDMAGIC\x00\x00\x42\x02\x81\x86\x12\x53\x00\x03", b"", b"").await;
        assert!(e.unwrap_err().contains("not an NBD server"));
        let mut bad = option_reply(OPT_GO, REP_ACK, &[]);
        bad[0] = 9;
        let e = script(GREETING, GO, &bad).await.unwrap_err();
        assert!(e.contains("bad option reply magic"), "{e}");
        let e = script(GREETING, GO, &[0, 3]).await.unwrap_err();
        assert!(e.starts_with("handshake: "), "{e}");
    }

    #[tokio::test]
    async fn read_reply_reads_one_header() {
        let mut bytes = simple_reply(0, 3).to_vec();
        bytes.extend(simple_reply(5, 4));
        let mut r = &bytes[..];
        assert_eq!(read_reply(&mut r).await, Ok(Reply { error: 0, handle: 3 }));
        assert_eq!(read_reply(&mut r).await, Ok(Reply { error: 5, handle: 4 }));
        assert!(read_reply(&mut r).await.is_err());
    }
}
