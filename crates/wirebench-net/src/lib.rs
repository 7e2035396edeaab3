//! wirebench over real sockets: the daemon ([`server`]), the client ([`client`]), the framed
//! control connection ([`conn`]) and data-socket options ([`sockopt`]).
//!
//! The protocol logic lives in `wirebench-proto`'s session state machines; this crate is the
//! I/O shell around them: it reads frames with bounded waits, hands messages to the session,
//! carries out the actions the session returns, and runs the engine on its own thread while
//! the control connection keeps heartbeats and live intervals flowing.

pub mod client;
pub mod conn;
pub mod error;
mod run;
pub mod server;
pub mod sockopt;
pub mod udpsetup;

pub use error::NetError;

/// The daemon's default TCP port.
pub const DEFAULT_PORT: u16 = 5301;

/// Version string sent in hello/welcome.
pub fn software() -> String {
    format!("wirebench {}", env!("CARGO_PKG_VERSION"))
}
