//! The NBD wire format: constants and fixed-size headers, as pure functions over bytes (no I/O).
//! All integers are big-endian. Names follow the protocol document
//! (<https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>) without the `NBD_`
//! prefix.

/// `NBDMAGIC`, the server's first eight bytes.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation (the greeting's second eight bytes) and the magic of every
/// client option.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// The magic of an option reply (`NBD_REP_MAGIC`, handshake phase).
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// The magic of a transmission request (`NBD_REQUEST_MAGIC`).
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// The magic of a simple reply (`NBD_SIMPLE_REPLY_MAGIC`), the only reply tailbound sends or
/// accepts: it never negotiates structured replies.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// The magic of a structured reply (`NBD_STRUCTURED_REPLY_MAGIC`): only sent by a server after
/// `NBD_OPT_STRUCTURED_REPLY`, which tailbound never asks for; a client seeing it reports so.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flags (server): fixed newstyle, no zeroes.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flags the gateway understands (`NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES`).
pub const CLIENT_FLAGS_KNOWN: u32 = 3;
pub const CLIENT_NO_ZEROES: u32 = 2;

/// Transmission flags.
pub const TFLAG_HAS_FLAGS: u16 = 1;
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub const TFLAG_SEND_FUA: u16 = 1 << 3;
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;

/// Option reply types (errors have the top bit set).
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_FLAG_ERROR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;

/// `NBD_INFO_*` items.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
/// Command flag: force unit access.
pub const CMD_FLAG_FUA: u16 = 1;

/// Errors of a simple reply (Linux errno values, as the protocol says).
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
/// The server is shutting down.
pub const ESHUTDOWN: u32 = 108;

/// Longest option payload read by either side (longer: the connection is closed). NBD strings
/// are at most 4096 bytes; an `NBD_OPT_INFO`/`GO` adds 6 bytes and 2 per information request,
/// and an `NBD_INFO_*` reply is a few bytes.
pub const MAX_OPTION_BYTES: u32 = 16 * 1024;
/// Longest export name (the protocol's `NBD_MAX_STRING`).
pub const MAX_NAME_BYTES: usize = 4096;
/// Length of a transmission request header (bytes).
pub const REQUEST_BYTES: usize = 28;
/// Length of a simple reply header (bytes).
pub const REPLY_BYTES: usize = 16;
/// Length of an option reply header (bytes).
pub const OPTION_REPLY_BYTES: usize = 20;

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A transmission request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub command: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

/// A request header as a client writes it: magic, flags, command, handle, offset, length.
pub fn encode_request(r: &Request) -> [u8; REQUEST_BYTES] {
    let mut out = [0u8; REQUEST_BYTES];
    out[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    out[4..6].copy_from_slice(&r.flags.to_be_bytes());
    out[6..8].copy_from_slice(&r.command.to_be_bytes());
    out[8..16].copy_from_slice(&r.handle.to_be_bytes());
    out[16..24].copy_from_slice(&r.offset.to_be_bytes());
    out[24..28].copy_from_slice(&r.length.to_be_bytes());
    out
}

/// Parse a request header; `Err` for a bad magic (the connection must close).
pub fn parse_request(b: &[u8; REQUEST_BYTES]) -> Result<Request, String> {
    let magic = be_u32(b, 0);
    if magic != REQUEST_MAGIC {
        return Err(format!("bad request magic {magic:#x}"));
    }
    Ok(Request {
        flags: be_u16(b, 4),
        command: be_u16(b, 6),
        handle: be_u64(b, 8),
        offset: be_u64(b, 16),
        length: be_u32(b, 24),
    })
}

/// A simple reply header: `error` 0 for success (then a read's data follows), else an errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub error: u32,
    pub handle: u64,
}

/// A simple reply header as a server writes it (the data of a successful read follows it).
pub fn simple_reply(error: u32, handle: u64) -> [u8; REPLY_BYTES] {
    let mut out = [0u8; REPLY_BYTES];
    out[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out[4..8].copy_from_slice(&error.to_be_bytes());
    out[8..].copy_from_slice(&handle.to_be_bytes());
    out
}

/// Parse a simple reply header; `Err` for any other magic (a structured reply is named as
/// such: tailbound never negotiates them).
pub fn parse_reply(b: &[u8; REPLY_BYTES]) -> Result<Reply, String> {
    match be_u32(b, 0) {
        SIMPLE_REPLY_MAGIC => Ok(Reply { error: be_u32(b, 4), handle: be_u64(b, 8) }),
        STRUCTURED_REPLY_MAGIC => {
            Err("a structured reply, which was not negotiated (simple replies only)".into())
        }
        magic => Err(format!("bad reply magic {magic:#x}")),
    }
}

/// An option request as a client writes it: `IHAVEOPT`, the option, the payload's length, the
/// payload.
pub fn option_request(option: u32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + data.len());
    out.extend_from_slice(&IHAVEOPT.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// The payload of `NBD_OPT_INFO`/`NBD_OPT_GO` naming `export` with the information items
/// `infos` (none: the server sends `NBD_INFO_EXPORT` anyway).
pub fn info_request(export: &str, infos: &[u16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + export.len() + 2 * infos.len());
    out.extend_from_slice(&(export.len() as u32).to_be_bytes());
    out.extend_from_slice(export.as_bytes());
    out.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        out.extend_from_slice(&i.to_be_bytes());
    }
    out
}

/// An option reply as a server writes it, with its payload.
pub fn option_reply(option: u32, reply: u32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(OPTION_REPLY_BYTES + data.len());
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// An option reply header: `(option, reply type, payload length)`, or why the handshake fails
/// (a bad magic, a payload above [`MAX_OPTION_BYTES`]).
pub fn parse_option_reply(b: &[u8; OPTION_REPLY_BYTES]) -> Result<(u32, u32, u32), String> {
    let magic = be_u64(b, 0);
    if magic != OPTION_REPLY_MAGIC {
        return Err(format!("bad option reply magic {magic:#x}"));
    }
    let (option, reply, len) = (be_u32(b, 8), be_u32(b, 12), be_u32(b, 16));
    if len > MAX_OPTION_BYTES {
        return Err(format!("option reply of {len} bytes (most {MAX_OPTION_BYTES})"));
    }
    Ok((option, reply, len))
}

/// `NBD_INFO_EXPORT` as a server writes it: the export's size (bytes) and transmission flags.
pub fn info_export(size: u64, flags: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(12);
    out.extend_from_slice(&INFO_EXPORT.to_be_bytes());
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out
}

/// The size (bytes) and transmission flags of an `NBD_INFO_EXPORT` payload; `None` for another
/// information item (or a short one).
pub fn parse_info_export(data: &[u8]) -> Option<(u64, u16)> {
    (data.len() >= 12 && be_u16(data, 0) == INFO_EXPORT)
        .then(|| (be_u64(data, 2), be_u16(data, 10)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_has_the_protocol_layout_and_round_trips() {
        let r = Request { flags: 1, command: CMD_WRITE, handle: 42, offset: 4096, length: 512 };
        let b = encode_request(&r);
        let expected: [u8; 28] = [
            0x25, 0x60, 0x95, 0x13, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0x10, 0,
            0, 0, 2, 0,
        ];
        assert_eq!(b, expected);
        assert_eq!(parse_request(&b), Ok(r));
        let mut bad = b;
        bad[0] ^= 0xff;
        assert!(parse_request(&bad).unwrap_err().contains("bad request magic"));
    }

    #[test]
    fn simple_reply_round_trips_and_other_magics_are_refused() {
        let b = simple_reply(EIO, 9);
        assert_eq!(b[..8], [0x67, 0x44, 0x66, 0x98, 0, 0, 0, 5]);
        assert_eq!(parse_reply(&b), Ok(Reply { error: EIO, handle: 9 }));
        let mut structured = b;
        structured[..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
        assert!(parse_reply(&structured).unwrap_err().contains("structured reply"));
        let mut bad = b;
        bad[3] = 0;
        assert!(parse_reply(&bad).unwrap_err().contains("bad reply magic"));
    }

    #[test]
    fn option_reply_round_trips_and_checks_magic_and_length() {
        let r = option_reply(OPT_GO, REP_INFO, &info_export(1 << 30, TFLAG_HAS_FLAGS));
        assert_eq!(r.len(), OPTION_REPLY_BYTES + 12);
        let header: [u8; OPTION_REPLY_BYTES] = r[..OPTION_REPLY_BYTES].try_into().unwrap();
        assert_eq!(parse_option_reply(&header), Ok((OPT_GO, REP_INFO, 12)));
        assert_eq!(parse_info_export(&r[OPTION_REPLY_BYTES..]), Some((1 << 30, 1)));
        assert_eq!(parse_info_export(&[0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), None);
        let mut long = header;
        long[16..].copy_from_slice(&(MAX_OPTION_BYTES + 1).to_be_bytes());
        assert!(parse_option_reply(&long).unwrap_err().contains("option reply of"));
        let mut bad = header;
        bad[0] = 1;
        assert!(parse_option_reply(&bad).unwrap_err().contains("magic"));
    }

    #[test]
    fn option_request_carries_ihaveopt_and_the_info_payload() {
        let m = option_request(OPT_GO, &info_request("ab", &[INFO_BLOCK_SIZE]));
        assert_eq!(&m[..8], b"IHAVEOPT");
        assert_eq!(m[8..16], [0, 0, 0, 7, 0, 0, 0, 10]);
        assert_eq!(m[16..], [0, 0, 0, 2, b'a', b'b', 0, 1, 0, 3]);
    }

    #[test]
    fn magics_spell_the_protocol() {
        assert_eq!(&NBD_MAGIC.to_be_bytes(), b"NBDMAGIC");
        assert_eq!(&IHAVEOPT.to_be_bytes(), b"IHAVEOPT");
        assert_ne!(SIMPLE_REPLY_MAGIC, STRUCTURED_REPLY_MAGIC);
    }
}
