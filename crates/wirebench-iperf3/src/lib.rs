//! The iperf3 protocol (as spoken by iperf3 3.9 to current) without I/O and without a clock:
//! time is passed in, bytes are handed in and taken out, in the style of `quinn-proto`.
//!
//! - [`wire`]: the cookie, the state bytes, the length-prefixed JSON messages (the length is
//!   checked against a hard cap *before* anything is allocated: an unbounded length prefix was
//!   the cause of CVE-2016-4303 and CVE-2023-38403 in iperf3 itself) and the `SERVER_ERROR`
//!   codes;
//! - [`params`]: the client's test parameters, read the way iperf3 reads them (booleans by
//!   presence, ≤3.13's negative numbers printed as unsigned 64-bit values), into a typed
//!   [`params::Params`];
//! - [`results`]: the results both ends exchange after the test;
//! - [`client`]: the client side of one control connection as a state machine;
//! - [`server`]: the server side of one control connection as a state machine;
//! - [`udp`]: the UDP data datagram's header and the connect/reply datagrams.
//!
//! Everything a peer sends is decoded here and nowhere else; [`fuzz_targets`] holds the
//! bodies the cargo-fuzz targets (`fuzz/`) and the proptests run.

pub mod client;
pub mod fuzz_targets;
pub mod params;
pub mod results;
pub mod server;
pub mod udp;
pub mod wire;

pub use client::{ClientConn, ClientEvent, ClientPhase, ClientTimeouts};
pub use params::{Params, Protocol};
pub use results::{Results, StreamResult};
pub use server::{ServerConn, ServerEvent, ServerPhase, Timeouts};
pub use wire::{Cookie, ProtoError, State};
