//! Errors of the network layer.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;
use wirebench_model::abort::AbortReason;
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::validate::LimitName;
use wirebench_proto::frame::FrameError;
use wirebench_proto::message::ErrorCode;
use wirebench_proto::session::{Phase, SessionError};

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

    /// The abort reason of this failure while a test runs.
    pub fn abort_reason(&self) -> AbortReason {
        match self {
            NetError::Session(SessionError::Timeout {
                phase: Phase::Running,
            }) => AbortReason::PeerSilent {
                silence_ms: wirebench_proto::session::Timeouts::default()
                    .peer_silence
                    .as_millis() as u64,
            },
            NetError::Session(SessionError::Timeout { phase }) => AbortReason::Timeout {
                phase: phase.to_string(),
            },
            NetError::Session(SessionError::PeerAborted(r)) => r.clone(),
            NetError::Interrupted => AbortReason::Interrupted,
            NetError::Frame(f) => AbortReason::ProtocolError {
                detail: f.to_string(),
            },
            NetError::Session(s) => AbortReason::ProtocolError {
                detail: s.to_string(),
            },
            other => AbortReason::ControlLost {
                detail: other.to_string(),
            },
        }
    }

    /// This failure as the error of a result document: its class, its text, and the spec
    /// field or server limit at fault.
    pub fn to_error_info(&self) -> ErrorInfo {
        let mut info = ErrorInfo::new(self.kind(), self.to_string());
        match self {
            NetError::Session(SessionError::Refused(m)) => {
                info.field = m.field;
                info.limit = m.limit;
            }
            NetError::Session(SessionError::InvalidSpec(e)) => {
                info.field = Some(e.field);
                if let wirebench_model::validate::SpecProblem::OutOfRange { limit, .. } = &e.problem
                {
                    info.limit = *limit;
                }
            }
            NetError::Session(SessionError::Busy(_)) => info.limit = Some(LimitName::MaxTests),
            _ => {}
        }
        info
    }

    /// The class of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            NetError::Connect { .. } => ErrorKind::Connect,
            NetError::Session(SessionError::Busy(_)) => ErrorKind::Busy,
            NetError::Session(SessionError::Refused(m)) => match m.code {
                ErrorCode::InvalidSpec => ErrorKind::InvalidSpec,
                ErrorCode::AuthFailed => ErrorKind::AuthFailed,
                ErrorCode::LimitExceeded => ErrorKind::LimitExceeded,
                ErrorCode::UnsupportedVersion => ErrorKind::NotWirebench,
                _ => ErrorKind::Refused,
            },
            NetError::Session(SessionError::AuthRequired { .. }) => ErrorKind::AuthRequired,
            // The client session checks the spec against the limits the server announced.
            NetError::Session(SessionError::InvalidSpec(_)) => ErrorKind::InvalidSpec,
            NetError::Session(SessionError::Timeout { .. }) => ErrorKind::Timeout,
            NetError::Session(SessionError::BadHello(_)) => ErrorKind::NotWirebench,
            NetError::SocketOption(_) => ErrorKind::SocketOption,
            NetError::Interrupted => ErrorKind::Interrupted,
            NetError::Bind { .. } | NetError::RecordsFile { .. } => ErrorKind::EmbeddedServer,
            _ => ErrorKind::Protocol,
        }
    }
}
