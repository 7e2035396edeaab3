//! Errors of the network layer.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;
use wirebench_model::abort::AbortReason;
use wirebench_model::error::{ErrorInfo, ErrorKind, ThirdPartyEnd};
use wirebench_model::validate::LimitName;
use wirebench_proto::frame::FrameError;
use wirebench_proto::message::{BusyScope, ErrorCode};
use wirebench_proto::session::{Phase, SessionError};

/// Everything that can go wrong on a control or data connection.
#[derive(Debug, Error)]
pub enum NetError {
    /// Could not reach the server.
    #[error("cannot connect to {addr}: {source}{}", connect_hint(source))]
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
    /// `--cport` with more data connections than ports left up to 65535.
    #[error(
        "--cport {first}: the test's {count} data connections need ports {first} to {}, \
         past the last port 65535 (use --cport {} or lower)",
        u64::from(*first) + u64::from(*count) - 1,
        65_536u64.saturating_sub(u64::from(*count))
    )]
    PortRange {
        /// The first source port asked for.
        first: u16,
        /// Data connections the test opens.
        count: u32,
    },
    /// An iperf3 server is running another test (`ACCESS_DENIED`, or it closed the connection
    /// before accepting the test).
    #[error(
        "iperf3 server {addr} is busy with another test (attempt {attempt} of {attempts}){}",
        if attempt < attempts { "" } else { "; --retry N tries N more times with a back-off" }
    )]
    Iperf3Busy {
        /// Where.
        addr: SocketAddr,
        /// This attempt (1-based).
        attempt: u32,
        /// Attempts allowed (1 + --retry).
        attempts: u32,
    },
    /// An iperf3 server refused or failed the test (`SERVER_ERROR`).
    #[error("iperf3 server {addr} refused the test: {}", iperf3_error_text(*code, *errno))]
    Iperf3Refused {
        /// Where.
        addr: SocketAddr,
        /// iperf3's error number.
        code: i32,
        /// The OS error number it sent, if any.
        errno: Option<i32>,
    },
    /// The iperf3 conversation broke (a timeout, bytes out of turn, a bad message).
    #[error("iperf3 server {addr}: {source}")]
    Iperf3 {
        /// Where.
        addr: SocketAddr,
        /// What went wrong.
        source: wirebench_iperf3::ProtoError,
    },
    /// A third-party test failed at one of its two daemons.
    #[error("third-party test: the {} daemon at {addr}: {source}", end.as_str())]
    ThirdParty {
        /// The daemon: the agent (`--from`) or the target (`-H`).
        end: ThirdPartyEnd,
        /// Its address (the target's as the agent reaches it).
        addr: SocketAddr,
        /// What went wrong there.
        source: Box<NetError>,
    },
    /// A failure the agent of a third-party test met running its client, as it reported it.
    #[error("{}", .0.message)]
    Relayed(ErrorInfo),
    /// The server did not answer the wirebench handshake: something else listens there.
    #[error(
        "{addr} is not a wirebench daemon{}: it did not answer the handshake \
             (run `wirebench serve` there, or check -H/-p)",
        what_it_is(seen)
    )]
    NotWirebench {
        /// Where.
        addr: SocketAddr,
        /// The first bytes it sent, if any.
        seen: Vec<u8>,
    },
}

/// An iperf3 `SERVER_ERROR` in words: the meaning of the codes a server sends at setup, and
/// the OS error it sent with it.
fn iperf3_error_text(code: i32, errno: Option<i32>) -> String {
    let what = match code {
        6 => "bad number of parallel streams (-P)".to_string(),
        7 => "block size (-l) out of its range".into(),
        20 => "bad UDP block size".into(),
        27 => "over the server's total rate limit (--server-bitrate-limit)".into(),
        37 => "longer than the server allows (--server-max-duration)".into(),
        106 => "the server did not receive the cookie".into(),
        114 => "the server could not read the parameters".into(),
        117 => "the server could not read the results".into(),
        142 => "authentication failed (the server requires --username and an RSA key, \
                which wirebench does not send)"
            .into(),
        202 => "the server cannot listen for the data streams".into(),
        c => format!("iperf3 error {c}"),
    };
    match errno.filter(|e| *e != 0) {
        Some(e) => format!("{what} ({})", io::Error::from_raw_os_error(e)),
        None => what,
    }
}

/// What the first bytes a peer sent say about it.
fn what_it_is(seen: &[u8]) -> String {
    // The control connection reads a 4-byte frame length first: "HTTP" is all it captures
    // of "HTTP/1.1 400 ...".
    if seen.starts_with(b"HTTP") {
        " (an HTTP server answered)".into()
    } else if seen == [9] || seen.first() == Some(&9) && seen.len() <= 4 {
        // iperf3 reads a 37-byte cookie, then sends its state byte PARAM_EXCHANGE (9).
        " (it answered like an iperf3 server, which listens on 5201 by default)".into()
    } else if seen.starts_with(b"SSH-") {
        " (an SSH server answered)".into()
    } else if seen.is_empty() {
        " (it sent nothing)".into()
    } else {
        let hex: Vec<String> = seen.iter().map(|b| format!("{b:02x}")).collect();
        format!(" (it sent {})", hex.join(" "))
    }
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
            NetError::ThirdParty { end, source, .. } => {
                let inner = source.to_error_info();
                info.field = inner.field;
                info.limit = inner.limit;
                info.problem = inner.problem;
                info.daemon = Some(*end);
            }
            NetError::Relayed(e) => {
                info.field = e.field;
                info.limit = e.limit;
                info.problem = e.problem.clone();
            }
            NetError::Session(SessionError::Refused(m)) => {
                info.field = m.field;
                info.limit = m.limit;
            }
            NetError::Session(SessionError::InvalidSpec(e)) => {
                info.field = Some(e.field);
                info.problem = Some(e.problem.clone());
                if let wirebench_model::validate::SpecProblem::OutOfRange { limit, .. } = &e.problem
                {
                    info.limit = *limit;
                }
            }
            NetError::Session(SessionError::Busy(b)) => {
                info.limit = Some(match b.scope {
                    BusyScope::Peer => LimitName::MaxTestsPerPeer,
                    BusyScope::Server => LimitName::MaxTests,
                })
            }
            _ => {}
        }
        info
    }

    /// The class of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            NetError::ThirdParty { source, .. } => source.kind(),
            NetError::Relayed(e) => e.kind,
            NetError::Connect { .. } => ErrorKind::Connect,
            NetError::Session(SessionError::Busy(_)) | NetError::Iperf3Busy { .. } => {
                ErrorKind::Busy
            }
            NetError::Iperf3Refused { .. } => ErrorKind::Refused,
            NetError::Session(SessionError::Refused(m)) => match m.code {
                ErrorCode::InvalidSpec => ErrorKind::InvalidSpec,
                ErrorCode::AuthFailed => ErrorKind::AuthFailed,
                ErrorCode::LimitExceeded => ErrorKind::LimitExceeded,
                ErrorCode::UnsupportedVersion => ErrorKind::NotWirebench,
                ErrorCode::NotPermitted => ErrorKind::Refused,
                _ => ErrorKind::Refused,
            },
            NetError::Session(SessionError::AuthRequired { .. }) => ErrorKind::AuthRequired,
            // The client session checks the spec against the limits the server announced.
            NetError::Session(SessionError::InvalidSpec(_)) => ErrorKind::InvalidSpec,
            NetError::Session(SessionError::Timeout { .. }) => ErrorKind::Timeout,
            NetError::Session(SessionError::BadHello(_)) => ErrorKind::NotWirebench,
            NetError::SocketOption(_) => ErrorKind::SocketOption,
            NetError::PortRange { .. } => ErrorKind::Usage,
            NetError::NotWirebench { .. } => ErrorKind::NotWirebench,
            NetError::Interrupted => ErrorKind::Interrupted,
            NetError::Bind { .. } | NetError::RecordsFile { .. } => ErrorKind::EmbeddedServer,
            _ => ErrorKind::Protocol,
        }
    }
}

/// What a user can do about a connect error the message alone does not explain.
fn connect_hint(e: &io::Error) -> &'static str {
    if e.raw_os_error() == Some(rustix::io::Errno::ADDRNOTAVAIL.raw_os_error()) {
        " (no free local port toward the server: an earlier test's connections may still \
         hold theirs in TIME-WAIT for 60 s; see ss -tan state time-wait and \
         net.ipv4.ip_local_port_range / net.ipv4.tcp_tw_reuse)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use wirebench_model::validate::{SpecError, SpecField, SpecProblem};
    use wirebench_proto::message::{Busy, ErrorMsg};

    use super::*;

    #[test]
    fn failures_are_classified_with_their_field_and_limit() {
        let refused = NetError::Session(SessionError::Refused(ErrorMsg {
            code: ErrorCode::LimitExceeded,
            field: None,
            limit: Some(LimitName::MaxConnsPerSource),
            message: "too many".into(),
        }));
        let info = refused.to_error_info();
        assert_eq!(info.kind, ErrorKind::LimitExceeded);
        assert_eq!(info.limit, Some(LimitName::MaxConnsPerSource));
        let spec = NetError::Session(SessionError::InvalidSpec(SpecError {
            field: SpecField::Flows,
            problem: SpecProblem::OutOfRange {
                value: 500,
                min: 1,
                max: 128,
                limit: Some(LimitName::MaxFlows),
            },
        }));
        let info = spec.to_error_info();
        assert_eq!(info.kind, ErrorKind::InvalidSpec);
        assert_eq!(
            (info.field, info.limit),
            (Some(SpecField::Flows), Some(LimitName::MaxFlows))
        );
        let busy = NetError::Session(SessionError::Busy(Busy {
            running: 4,
            cap: 4,
            retry_after_ms: 1000,
            scope: wirebench_proto::message::BusyScope::Server,
        }));
        assert_eq!(busy.kind(), ErrorKind::Busy);
        assert_eq!(NetError::Interrupted.kind(), ErrorKind::Interrupted);
        assert_eq!(
            NetError::Session(SessionError::BadHello("x".into())).kind(),
            ErrorKind::NotWirebench
        );
    }

    #[test]
    fn abort_reasons_while_running() {
        assert_eq!(
            NetError::Interrupted.abort_reason(),
            AbortReason::Interrupted
        );
        assert!(matches!(
            NetError::Session(SessionError::Timeout {
                phase: Phase::Running
            })
            .abort_reason(),
            AbortReason::PeerSilent { .. }
        ));
        assert!(matches!(
            NetError::PeerClosed.abort_reason(),
            AbortReason::ControlLost { .. }
        ));
        assert_eq!(
            NetError::Session(SessionError::PeerAborted(AbortReason::ServerShutdown))
                .abort_reason(),
            AbortReason::ServerShutdown
        );
    }

    /// Running out of local ports (EADDRNOTAVAIL) names the usual cause; other errors are
    /// left as the OS put them.
    #[test]
    fn a_connect_without_a_free_port_says_why() {
        let addr: SocketAddr = "10.0.0.2:5301".parse().unwrap();
        let e = |errno| NetError::Connect {
            addr,
            source: io::Error::from_raw_os_error(errno),
        };
        let no_port = e(rustix::io::Errno::ADDRNOTAVAIL.raw_os_error()).to_string();
        assert!(no_port.contains("TIME-WAIT"), "{no_port}");
        let refused = e(rustix::io::Errno::CONNREFUSED.raw_os_error()).to_string();
        assert!(!refused.contains("TIME-WAIT"), "{refused}");
    }
}
