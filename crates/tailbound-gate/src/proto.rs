//! The server's side of the NBD wire protocol, as pure functions over bytes (no I/O), so the
//! parser is tested and fuzzed apart from the server: the fixed newstyle handshake, option
//! haggling and the checks of a transmission request against an export
//! (<https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>). The protocol's
//! constants and its header layouts (request, simple reply, option reply) are
//! `tailbound_nbd::wire`'s, shared with the upstream client and the replayer; they are
//! re-exported here under the names the server uses.

pub use tailbound_nbd::wire::{
    encode_request, option_reply, parse_request, simple_reply, Request, CLIENT_FLAGS_KNOWN,
    CLIENT_NO_ZEROES, CMD_DISC, CMD_FLAG_FUA, CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, EINVAL,
    EIO, ENOSPC, EOVERFLOW, ESHUTDOWN, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES, IHAVEOPT,
    INFO_BLOCK_SIZE, MAX_NAME_BYTES, MAX_OPTION_BYTES, NBD_MAGIC, OPT_ABORT, OPT_EXPORT_NAME,
    OPT_GO, OPT_INFO, OPT_LIST, REP_ACK, REP_ERR_INVALID, REP_ERR_UNKNOWN, REP_ERR_UNSUP, REP_INFO,
    REP_SERVER, REQUEST_BYTES, TFLAG_HAS_FLAGS, TFLAG_SEND_FLUSH, TFLAG_SEND_FUA, TFLAG_SEND_TRIM,
};

/// What every export offers.
pub const TRANSMISSION_FLAGS: u16 =
    TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_SEND_TRIM;

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The server's greeting: `NBDMAGIC`, `IHAVEOPT`, the handshake flags.
pub fn greeting() -> [u8; 18] {
    let mut out = [0u8; 18];
    out[..8].copy_from_slice(&NBD_MAGIC.to_be_bytes());
    out[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    out[16..].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    out
}

/// An option header: `(option, payload length)`, or why the connection must close.
pub fn parse_option_header(b: &[u8; 16]) -> Result<(u32, u32), String> {
    if be_u64(b, 0) != IHAVEOPT {
        return Err(format!("bad option magic {:#x}", be_u64(b, 0)));
    }
    let (option, len) = (be_u32(b, 8), be_u32(b, 12));
    if len > MAX_OPTION_BYTES {
        return Err(format!("option {option} payload of {len} bytes (most {MAX_OPTION_BYTES})"));
    }
    Ok((option, len))
}

/// The payload of `NBD_OPT_INFO`/`NBD_OPT_GO`: the export name and the information requested.
pub fn parse_info_request(data: &[u8]) -> Result<(String, Vec<u16>), &'static str> {
    if data.len() < 6 {
        return Err("payload shorter than 6 bytes");
    }
    let name_len = be_u32(data, 0) as usize;
    if name_len > MAX_NAME_BYTES || 4 + name_len + 2 > data.len() {
        return Err("export name length beyond the payload");
    }
    let name = std::str::from_utf8(&data[4..4 + name_len]).map_err(|_| "export name not UTF-8")?;
    let count = be_u16(data, 4 + name_len) as usize;
    let rest = &data[4 + name_len + 2..];
    if rest.len() != 2 * count {
        return Err("information request count does not match the payload");
    }
    let infos = rest.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    Ok((name.to_string(), infos))
}

/// `NBD_INFO_EXPORT`: size and [`TRANSMISSION_FLAGS`].
pub fn info_export(size: u64) -> Vec<u8> {
    tailbound_nbd::wire::info_export(size, TRANSMISSION_FLAGS)
}

/// `NBD_INFO_BLOCK_SIZE`: `minimum` (1, or the backend's block size with direct I/O), preferred
/// 4096 (or the minimum if larger), maximum `max_request`.
pub fn info_block_size(minimum: u32, max_request: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(14);
    out.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    out.extend_from_slice(&minimum.to_be_bytes());
    out.extend_from_slice(&minimum.max(4096).to_be_bytes());
    out.extend_from_slice(&max_request.to_be_bytes());
    out
}

/// `NBD_REP_SERVER` payload for one export of `NBD_OPT_LIST`.
pub fn list_entry(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + name.len());
    out.extend_from_slice(&(name.len() as u32).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out
}

/// The reply to `NBD_OPT_EXPORT_NAME`: size, flags and (unless no-zeroes) 124 zero bytes.
pub fn export_name_reply(size: u64, no_zeroes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(134);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
    if !no_zeroes {
        out.extend_from_slice(&[0u8; 124]);
    }
    out
}

/// What the server does with a well-formed request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read `length` bytes at `offset`.
    Read,
    /// Read `length` bytes of payload from the client, then write them.
    Write,
    /// Flush the export's file.
    Flush,
    /// Discard (a no-op: a trimmed range's contents are unspecified by the protocol).
    Trim,
    /// The client disconnects.
    Disconnect,
    /// Reply with this error; for a write, first read and drop its `length` bytes.
    Error(u32),
    /// Close the connection (the stream cannot be followed: an oversize write's payload).
    Close(&'static str),
}

/// Check a request against the export's size and the largest request served.
pub fn classify(r: &Request, export_size: u64, max_request: u32) -> Action {
    let in_bounds = r.offset.checked_add(u64::from(r.length)).is_some_and(|end| end <= export_size);
    match r.command {
        CMD_READ if r.length > max_request => Action::Error(EOVERFLOW),
        CMD_READ if !in_bounds => Action::Error(EINVAL),
        CMD_READ => Action::Read,
        CMD_WRITE if r.length > max_request => Action::Close("write larger than the maximum"),
        CMD_WRITE if !in_bounds => Action::Error(ENOSPC),
        CMD_WRITE => Action::Write,
        CMD_FLUSH if r.offset != 0 || r.length != 0 => Action::Error(EINVAL),
        CMD_FLUSH => Action::Flush,
        CMD_TRIM if !in_bounds => Action::Error(EINVAL),
        CMD_TRIM => Action::Trim,
        CMD_DISC => Action::Disconnect,
        _ => Action::Error(EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_nbd::wire::{OPTION_REPLY_MAGIC, REQUEST_MAGIC, SIMPLE_REPLY_MAGIC};

    fn req(command: u16, offset: u64, length: u32) -> Request {
        Request { flags: 0, command, handle: 7, offset, length }
    }

    #[test]
    fn greeting_is_nbdmagic_ihaveopt_and_flags() {
        let g = greeting();
        assert_eq!(&g[..8], b"NBDMAGIC");
        assert_eq!(&g[8..16], b"IHAVEOPT");
        assert_eq!(&g[16..], &[0, 3]);
    }

    #[test]
    fn request_round_trips_and_bad_magic_is_refused() {
        let r = Request { flags: 1, command: CMD_WRITE, handle: 42, offset: 4096, length: 512 };
        let mut b = encode_request(&r);
        assert_eq!(parse_request(&b), Ok(r));
        b[0] ^= 0xff;
        assert!(parse_request(&b).unwrap_err().contains("bad request magic"));
    }

    #[test]
    fn classify_checks_bounds_and_sizes() {
        let (size, max) = (1 << 20, 65536);
        assert_eq!(classify(&req(CMD_READ, 0, 4096), size, max), Action::Read);
        assert_eq!(classify(&req(CMD_READ, size - 4096, 4096), size, max), Action::Read);
        assert_eq!(classify(&req(CMD_READ, size - 4095, 4096), size, max), Action::Error(EINVAL));
        assert_eq!(classify(&req(CMD_READ, 0, max + 1), size, max), Action::Error(EOVERFLOW));
        // offset + length overflowing u64 is out of bounds, not a wrap-around
        assert_eq!(classify(&req(CMD_READ, u64::MAX, 2), size, max), Action::Error(EINVAL));
        assert_eq!(classify(&req(CMD_WRITE, 0, 512), size, max), Action::Write);
        assert_eq!(classify(&req(CMD_WRITE, size, 512), size, max), Action::Error(ENOSPC));
        assert!(matches!(classify(&req(CMD_WRITE, 0, max + 1), size, max), Action::Close(_)));
        assert_eq!(classify(&req(CMD_FLUSH, 0, 0), size, max), Action::Flush);
        assert_eq!(classify(&req(CMD_FLUSH, 1, 0), size, max), Action::Error(EINVAL));
        assert_eq!(classify(&req(CMD_TRIM, 0, 4096), size, max), Action::Trim);
        assert_eq!(classify(&req(CMD_TRIM, size, 1), size, max), Action::Error(EINVAL));
        assert_eq!(classify(&req(CMD_DISC, 0, 0), size, max), Action::Disconnect);
        assert_eq!(classify(&req(99, 0, 0), size, max), Action::Error(EINVAL));
    }

    #[test]
    fn option_header_checks_magic_and_length() {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[8..12].copy_from_slice(&OPT_GO.to_be_bytes());
        b[12..].copy_from_slice(&10u32.to_be_bytes());
        assert_eq!(parse_option_header(&b), Ok((OPT_GO, 10)));
        b[12..].copy_from_slice(&(MAX_OPTION_BYTES + 1).to_be_bytes());
        assert!(parse_option_header(&b).is_err());
        b[0] = 0;
        assert!(parse_option_header(&b).unwrap_err().contains("magic"));
    }

    #[test]
    fn info_request_parses_name_and_items() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&[0, 3, 0, 0]);
        assert_eq!(parse_info_request(&d), Ok(("abc".to_string(), vec![3, 0])));
        // a count that does not match, a name length beyond the payload, a short payload
        let mut bad = d.clone();
        bad.push(0);
        assert!(parse_info_request(&bad).is_err());
        let mut long = d.clone();
        long[..4].copy_from_slice(&100u32.to_be_bytes());
        assert!(parse_info_request(&long).is_err());
        assert!(parse_info_request(&d[..5]).is_err());
        let mut huge = d.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_info_request(&huge).is_err());
    }

    #[test]
    fn replies_have_their_layouts() {
        let r = option_reply(OPT_LIST, REP_SERVER, &list_entry("A"));
        assert_eq!(r.len(), 20 + 5);
        assert_eq!(&r[..8], &OPTION_REPLY_MAGIC.to_be_bytes());
        assert_eq!(info_export(1 << 30).len(), 12);
        assert_eq!(info_block_size(1, 1 << 20).len(), 14);
        assert_eq!(export_name_reply(5, true).len(), 10);
        assert_eq!(export_name_reply(5, false).len(), 134);
        let s = simple_reply(EIO, 9);
        assert_eq!(&s[..4], &SIMPLE_REPLY_MAGIC.to_be_bytes());
        assert_eq!(&s[4..8], &EIO.to_be_bytes());
    }

    /// A small deterministic fuzzer (xorshift; no dependency): arbitrary bytes never panic the
    /// parsers, and every classified request stays within the export and the maximum.
    #[test]
    fn fuzz_parsers_never_panic_and_keep_bounds() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let mut b = [0u8; REQUEST_BYTES];
            for c in b.chunks_mut(8) {
                let v = next().to_be_bytes();
                c.copy_from_slice(&v[..c.len()]);
            }
            if next() % 2 == 0 {
                b[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
                b[6] = 0;
                b[7] = (next() % 6) as u8;
            }
            let size = next() % (1 << 24);
            let max = (next() % (1 << 20)) as u32;
            if let Ok(r) = parse_request(&b) {
                assert_eq!(encode_request(&r), b);
                if matches!(classify(&r, size, max), Action::Read | Action::Write | Action::Trim) {
                    assert!(r.offset + u64::from(r.length) <= size);
                }
                if matches!(classify(&r, size, max), Action::Read | Action::Write) {
                    assert!(r.length <= max);
                }
            }
            let len = (next() % 64) as usize;
            let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Ok((name, infos)) = parse_info_request(&data) {
                assert_eq!(4 + name.len() + 2 + 2 * infos.len(), data.len());
            }
            let mut h = [0u8; 16];
            h[..8].copy_from_slice(&next().to_be_bytes());
            h[8..].copy_from_slice(&next().to_be_bytes());
            let _ = parse_option_header(&h);
        }
    }
}
