//! Errors of the network layer.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;
use wirebench_proto::frame::FrameError;
use wirebench_proto::session::SessionError;

/// Everything that can go wrong on a control or data connection.
#[derive(Debug, Error)]
pub enum NetError {
    /// Could not reach the server.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// Could not bind the daemon's listener.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// A socket call failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: &'static str,
        /// Why it failed.
        source: io::Error,
    },
    /// The peer closed the control connection.
    #[error("the peer closed the control connection")]
    PeerClosed,
    /// A frame could not be decoded.
    #[error("bad control frame: {0}")]
    Frame(#[from] FrameError),
    /// The protocol session failed (timeout, refusal, busy, unexpected message).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The user interrupted the client before the measurement started.
    #[error("interrupted before the test started")]
    Interrupted,
    /// The daemon's records file could not be opened.
    #[error("cannot open the records file {}: {source}", path.display())]
    RecordsFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A socket option the test asked for could not be applied.
    #[error("{0}")]
    SocketOption(String),
}

impl NetError {
    /// Wrap an I/O error with context.
    pub fn io(context: &'static str) -> impl FnOnce(io::Error) -> NetError {
        move |source| NetError::Io { context, source }
    }
}
