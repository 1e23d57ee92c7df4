//! The NBD protocol (<https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>) as
//! tailbound speaks it, in one place for its two users: the storage gateway (`tailbound-gate`,
//! an NBD server whose upstream backend is an NBD client) and the replayer's NBD mode
//! (`tailbound-replay client --nbd`).
//!
//! * [`wire`]: the protocol's constants and its fixed-size headers as pure functions over bytes
//!   (a transmission request, a simple reply, an option request, an option reply), both
//!   directions, so each layout is written once;
//! * [`client`]: the client's side over any async stream — the fixed newstyle handshake with
//!   `NBD_OPT_GO` and the reading of a simple reply's header.
//!
//! The server's option haggling and its checks of a request against an export stay in the
//! gateway (`crates/tailbound-gate/src/proto.rs`); the transmission loops stay with their users
//! (the gateway multiplexes many clients' requests on one upstream connection, the replayer
//! paces and times requests).

pub mod client;
pub mod wire;
