//! The wirebench control protocol, with no I/O.
//!
//! - [`auth`]: HMAC-SHA256 challenge-response authentication and the server's key table.
//! - [`frame`]: length-prefixed frames with a hard cap checked before any allocation.
//! - [`message`]: the control messages (JSON inside frames).
//! - [`spec`]: [`spec::TestSpec`], the one message that describes a whole test, and its
//!   server-side validation.
//! - [`measure`]: what each end measured ([`measure::SideReport`]).
//! - [`data`]: the fixed preamble every connection starts with, and the data-connection hello.
//! - [`session`]: client and server session state machines; time is passed in.
//! - [`rr`]: request/response counts, latency and the per-end report.
//! - [`udp`]: the UDP stream datagram header and the receiver's per-flow accounting.
//!
//! The wire format is documented in `docs/PROTOCOL.md`.

pub mod auth;
pub mod data;
pub mod frame;
pub mod measure;
pub mod message;
pub mod rr;
pub mod session;
pub mod spec;
pub mod udp;

#[doc(hidden)]
pub mod fuzz_targets;

#[cfg(test)]
mod testutil;
