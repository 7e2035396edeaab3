//! Why an invocation failed, machine-readable: [`ErrorKind`] and [`ErrorInfo`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{LimitName, SpecField, SpecProblem};

/// The class of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Invalid command line or test parameters.
    Usage,
    /// The host name could not be resolved.
    Resolve,
    /// The server could not be reached.
    Connect,
    /// The peer is not a wirebench daemon (or speaks another version).
    NotWirebench,
    /// The server is running as many tests as it allows.
    Busy,
    /// The server refused the test for another reason.
    Refused,
    /// The test spec was refused (`field` names the field).
    InvalidSpec,
    /// Authentication failed.
    AuthFailed,
    /// The server requires authentication and none was given.
    AuthRequired,
    /// A server policy limit was exceeded (`limit` names it).
    LimitExceeded,
    /// A protocol deadline passed.
    Timeout,
    /// A socket option could not be set.
    SocketOption,
    /// The user interrupted the invocation before anything was measured.
    Interrupted,
    /// The peer broke the protocol.
    Protocol,
    /// The embedded server could not be started.
    EmbeddedServer,
    /// A local resource limit (file descriptors) is too low for the test.
    ResourceLimit,
    /// The output file could not be written.
    Output,
    /// Anything else.
    Internal,
}

impl ErrorKind {
    /// The wire name (`"usage"`, `"invalid_spec"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::Resolve => "resolve",
            ErrorKind::Connect => "connect",
            ErrorKind::NotWirebench => "not_wirebench",
            ErrorKind::Busy => "busy",
            ErrorKind::Refused => "refused",
            ErrorKind::InvalidSpec => "invalid_spec",
            ErrorKind::AuthFailed => "auth_failed",
            ErrorKind::AuthRequired => "auth_required",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::Timeout => "timeout",
            ErrorKind::SocketOption => "socket_option",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Protocol => "protocol",
            ErrorKind::EmbeddedServer => "embedded_server",
            ErrorKind::ResourceLimit => "resource_limit",
            ErrorKind::Output => "output",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A failure, machine-readable.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    /// Category.
    pub kind: ErrorKind,
    /// Human-readable explanation (peer text in it is escaped by the printers).
    pub message: String,
    /// The `TestSpec` field at fault, when one is.
    pub field: Option<SpecField>,
    /// The server limit at fault, when one is.
    pub limit: Option<LimitName>,
    /// What is wrong with `field`, when a spec was refused (so that a front end can say it
    /// in its own terms: the flag the user typed, the unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<SpecProblem>,
    /// In a third-party test: which daemon failed or refused (the agent that ran the client,
    /// or the target); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<ThirdPartyEnd>,
}

/// The two daemons of a third-party test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThirdPartyEnd {
    /// The daemon that runs the test as the client (`--from`).
    Agent,
    /// The daemon the test runs against (`-H`).
    Target,
}

impl ThirdPartyEnd {
    /// `"agent"` or `"target"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThirdPartyEnd::Agent => "agent",
            ThirdPartyEnd::Target => "target",
        }
    }
}

impl ErrorInfo {
    /// An error of `kind` with `message` and nothing else.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ErrorInfo {
        ErrorInfo {
            kind,
            message: message.into(),
            field: None,
            limit: None,
            problem: None,
            daemon: None,
        }
    }
}
