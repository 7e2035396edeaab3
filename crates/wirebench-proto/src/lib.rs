//! The wirebench control protocol, with no I/O.
//!
//! - [`auth`]: HMAC-SHA256 challenge-response authentication and the server's key table.
//! - [`frame`]: length-prefixed frames with a hard cap checked before any allocation.
//! - [`message`]: the control messages (JSON inside frames). Their payload types — the
//!   `TestSpec`, what each end measured, warnings and abort reasons — are the typed model of
//!   `wirebench-model`.
//! - [`data`]: the fixed preamble every connection starts with, and the data-connection hello.
//! - [`session`]: client and server session state machines; time is passed in.
//! - [`ticket`]: the target daemon's book of third-party tickets.
//! - [`udp`]: the UDP stream datagram header and the receiver's per-flow accounting.
//! - [`udpsetup`]: the messages that bind a flow's UDP socket to its test.
//!
//! The wire format is documented in `docs/PROTOCOL.md`.

pub mod auth;
pub mod data;
pub mod frame;
pub mod message;
pub mod session;
pub mod ticket;
pub mod udp;
pub mod udpsetup;

#[doc(hidden)]
pub mod fuzz_targets;
