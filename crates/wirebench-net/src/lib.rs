//! wirebench over real sockets: the daemon ([`daemon`]), the client ([`client`]), the
//! [`runner`] that runs a test (or repetitions of it) against a target and assembles the
//! result, the framed control connection ([`conn`]) and data-socket options ([`sockopt`]); and
//! the iperf3 client ([`iperf3_client`]) that runs a test against a stock `iperf3 -s`; and
//! third-party tests ([`third_party`]), one daemon running a test against another.
//!
//! The protocol logic lives in `wirebench-proto`'s session state machines; this crate is the
//! I/O shell around them: it reads frames with bounded waits, hands messages to the session,
//! carries out the actions the session returns, and runs the engine on its own thread
//! ([`end`](mod@end)) while the control connection keeps heartbeats and live intervals
//! flowing. How each workload turns its sockets into an engine's plan is behind one trait
//! ([`workload`](mod@workload)).

pub mod client;
pub mod conn;
pub mod daemon;
mod end;
pub mod error;
pub mod iperf3_client;
pub mod runner;
pub mod sockopt;
pub mod third_party;
pub mod udpsetup;
mod workload;

pub use error::NetError;

/// The daemon's default TCP port.
pub const DEFAULT_PORT: u16 = 5301;

/// Version string sent in hello/welcome.
pub fn software() -> String {
    format!("wirebench {}", env!("CARGO_PKG_VERSION"))
}
