//! Why a test ended early ([`AbortReason`]) and how an end ran its data path
//! ([`EngineKind`]). Both are data: the printers turn them into sentences.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::LimitName;

/// Why a test (or one end's part of it) ended before its stop instant. The same value travels
/// in the `abort` message, so both ends record the same reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum AbortReason {
    /// The user interrupted the client (SIGINT, SIGTERM).
    Interrupted,
    /// The daemon was shut down (SIGTERM, SIGINT, SIGHUP) while the test ran.
    ServerShutdown,
    /// A server policy limit was exceeded while the test ran.
    LimitExceeded {
        /// The limit.
        limit: LimitName,
        /// The rate observed, averaged since the start, bits per second.
        observed_bps: u64,
        /// The limit's value, bits per second.
        max_bps: u64,
    },
    /// The peer sent nothing (not even a heartbeat) for this long.
    PeerSilent {
        /// The silence that ended the test, milliseconds.
        silence_ms: u64,
    },
    /// The control connection failed or was closed.
    ControlLost {
        /// The operating system's or the protocol layer's description.
        detail: String,
    },
    /// The peer broke the protocol (an undecodable frame, an unexpected message).
    ProtocolError {
        /// What was wrong.
        detail: String,
    },
    /// A phase deadline passed (the peer's results did not arrive in time).
    Timeout {
        /// The phase whose deadline passed.
        phase: String,
    },
    /// The engine could not run the test at this end.
    EngineFailed {
        /// What failed.
        detail: String,
    },
    /// The peer asked to abort without a reason this build knows.
    Unspecified,
}

/// Where an end's data threads ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "placement", rename_all = "snake_case")]
pub enum Placement {
    /// Wherever the scheduler put them.
    Scheduler,
    /// Every thread pinned to one CPU.
    Pinned {
        /// The CPU.
        cpu: u32,
    },
    /// Thread `i` pinned to `cpus[i mod len]`.
    RoundRobin {
        /// The CPUs, in the order used.
        cpus: Vec<u32>,
    },
}

/// Which engine ran an end's data path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "engine", rename_all = "snake_case")]
pub enum EngineKind {
    /// One thread per flow (blocking sockets).
    ThreadPerFlow {
        /// Data threads started.
        threads: u32,
        /// Where they ran.
        placement: Placement,
    },
    /// A few worker threads each owning an epoll set and a share of the flows (neper's model).
    Epoll {
        /// Worker threads.
        workers: u32,
        /// Where they ran.
        placement: Placement,
    },
}
