//! Control messages. Each frame's payload is one [`Message`] encoded as JSON
//! (externally tagged: `{"hello": {...}}`). Unknown fields are rejected.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use wirebench_model::abort::AbortReason;
use wirebench_model::error::ErrorInfo;
use wirebench_model::side::{HostRole, IntervalData, SideReport};
use wirebench_model::spec::{Limits, TestSpec};
use wirebench_model::validate::{LimitName, SpecField};

use crate::auth::AuthProof;

/// The string every hello carries.
pub const HELLO_MAGIC: &str = "wirebench";
/// Control protocol version spoken by this build (2: authentication in welcome and test; 3:
/// the rr, crr and udp workloads; 4: the typed model — one workload variant per test,
/// typed warnings, abort reasons and error fields; 5: new fields in the interval samples
/// and reports — UDP loss and jitter and request/response round-trip percentiles per
/// interval, the addresses of the rr and udp flows — which a version 4 peer would refuse;
/// 6: CPU profiles — `common.profile_hz` in the spec, `profile` in the reports and the
/// profile warnings, which a version 5 peer would refuse; 7: TCP_INFO of each sending flow
/// per stream interval — `tcp` in the interval samples, `pacing_rate_bps` in TCP_INFO —
/// and the request/response client's latency histogram, which a version 6 peer would
/// refuse; 8: the stream receivers' wait — `stream.recv_wait` in the spec, `recv_wait` in
/// each receiving flow's report — and `rr`/`udp_rr` `busy_poll`, which reached the wire
/// during version 7 without a version of its own: a version 7 peer would refuse them; 9:
/// `large_calls` in a receiving flow's `recv_wait`, and `auto` no longer naps with calls
/// above 512 KiB — a version 8 peer would refuse the field; 10: the epoll workers' waits,
/// `worker_waits` in a stream report and `epoll_workers` in a `recv_wait`, as `auto` now
/// naps on the epoll engine too — a version 9 peer would refuse them; 11: the data threads'
/// run-queue wait, `threads_run_delay_ns` in a report's `cpu` — a version 10 peer would
/// refuse it; 12: a profile's `unsampled` category and `unsampled_busy_ns` /
/// `idle_from_proc_stat` fields — a version 11 peer would refuse them; 13:
/// `tcp.notsent_lowat_bytes` in the spec and `notsent_lowat_bytes` in a flow's socket facts
/// — a version 12 peer would refuse them, where ignoring the spec's would leave the server's
/// senders unlimited; 14: other processes' CPU time in a report's `cpu` —
/// `other_processes_ns` and `other_processes` —, `common.admission_group` and
/// `common.buffer_offset_bytes` in the spec and `buffer_offset_bytes` in a side report, which
/// a version 13 peer would refuse; 15: third-party tests — the `ticket_request`, `ticket`,
/// `third_party`, `relaying` and `relayed` messages, `test.ticket` and the error code
/// `not_permitted`, which a version 14 peer would refuse; 16: CPU busy time against the
/// window — `unattributed_pct` in each CPU breakdown and a profile's `oversampled_busy_ns`,
/// per CPU and in all, which a version 15 peer would refuse).
pub const PROTOCOL_VERSION: u16 = 16;

/// Every control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Client → server, first frame.
    Hello(Hello),
    /// Server → client, answer to hello.
    Welcome(Welcome),
    /// Client → server: the test to run, with the client's proof of identity.
    Test(Box<TestRequest>),
    /// Server → client: test admitted.
    Accepted(Accepted),
    /// Server → client: too many tests running; try again later.
    Busy(Busy),
    /// Either way: a classified error; the sender closes after it.
    Error(ErrorMsg),
    /// Server → client: every data connection arrived and is configured.
    Ready(Empty),
    /// Client → server: start the engines now.
    Start(Empty),
    /// Either way: a live interval sample.
    Interval(IntervalMsg),
    /// Either way: one end's measurements at the end of the test.
    Results(Box<SideReport>),
    /// Either way, while a test runs: I am alive.
    Heartbeat(Empty),
    /// Either way: stop the test now (partial results follow).
    Abort(AbortMsg),
    /// Either way: orderly end of the session.
    Bye(Empty),
    /// Client → target daemon: issue a ticket that lets another daemon run this spec against
    /// this one in the client's name (third-party tests).
    TicketRequest(Box<TestRequest>),
    /// Target daemon → client: the ticket; the daemon closes after it.
    Ticket(TicketMsg),
    /// Client → agent daemon: run this spec as the client against another daemon.
    ThirdParty(Box<ThirdPartyRequest>),
    /// Agent daemon → client: the third-party test is admitted; the agent now runs it.
    Relaying(Relaying),
    /// Agent daemon → client: how the third-party test ended, with both ends' reports; the
    /// agent closes after it.
    Relayed(Box<Relayed>),
}

/// A message without a body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// First client frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// Must equal [`HELLO_MAGIC`].
    pub magic: String,
    /// Protocol version the client speaks.
    pub version: u16,
    /// Client software and version, free text (at most 128 bytes).
    pub software: String,
}

/// Server answer to hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Welcome {
    /// Protocol version the server speaks.
    pub version: u16,
    /// Server software and version.
    pub software: String,
    /// The limits the server will apply to the TestSpec.
    pub limits: Limits,
    /// A fresh random challenge for this connection: 64 hex digits (see [`crate::auth`]).
    pub nonce: String,
    /// The server's identity, covered by the client's MAC.
    pub server_identity: String,
    /// The server refuses tests without a valid [`AuthProof`].
    pub auth_required: bool,
}

/// The `test` message: the spec and, when the client has a key, its proof of identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestRequest {
    /// The test to run.
    pub spec: TestSpec,
    /// HMAC over the welcome's nonce, both identities and the spec's digest.
    pub auth: Option<AuthProof>,
    /// Instead of `auth`, in a `test` only: a third-party ticket the server issued for this
    /// spec (32 lowercase hex digits). Left out when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
}

impl TestRequest {
    /// A request without authentication.
    pub fn unauthenticated(spec: TestSpec) -> Self {
        TestRequest {
            spec,
            auth: None,
            ticket: None,
        }
    }
}

/// A third-party ticket, issued by the target daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketMsg {
    /// 32 lowercase hex digits; single use, bound to the requesting identity and the spec.
    pub ticket: String,
    /// How long the ticket stays valid, milliseconds.
    pub expires_in_ms: u64,
}

/// The `third_party` message: run `spec` as the client against `target`, presenting
/// `ticket` there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThirdPartyRequest {
    /// The test to run.
    pub spec: TestSpec,
    /// The client's proof of identity toward the agent (as in `test`; required).
    pub auth: Option<AuthProof>,
    /// The target daemon's address as the agent reaches it (`IP:PORT`).
    pub target: String,
    /// The ticket the target issued for this spec (32 lowercase hex digits).
    pub ticket: String,
}

/// The agent admitted a third-party test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relaying {
    /// The agent's test number.
    pub test_id: u64,
}

/// How a third-party test ended, as the agent saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RelayOutcome {
    /// Both ends ran to the end.
    Completed,
    /// The client (coordinator) interrupted it; figures are partial.
    Interrupted,
    /// It failed while measuring, or the target stopped it; figures are partial.
    Aborted {
        /// Why.
        reason: AbortReason,
    },
    /// The test did not run: the target refused it, or the agent could not reach it.
    Failed {
        /// What went wrong, as the agent's client saw it.
        error: ErrorInfo,
    },
}

/// The result of a third-party test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relayed {
    /// How it ended.
    pub outcome: RelayOutcome,
    /// The agent's report (the client end).
    pub client: Option<SideReport>,
    /// The target's report (the server end).
    pub server: Option<SideReport>,
}

/// Test admitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    /// Server-assigned test number.
    pub test_id: u64,
    /// 32 lowercase hex digits: the token every data connection presents first.
    pub token: String,
}

/// Server is at its cap of concurrent tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Busy {
    /// Tests running now (in the scope).
    pub running: u32,
    /// The cap (of the scope).
    pub cap: u32,
    /// Suggested wait before retrying, milliseconds.
    pub retry_after_ms: u64,
    /// Whose cap was reached: the server's (`--max-tests`) or this peer's
    /// (`--max-tests-per-peer`).
    pub scope: BusyScope,
}

/// Whose cap a `busy` answer is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BusyScope {
    /// The server runs as many tests as it allows.
    Server,
    /// This peer (identity, or source address) runs as many tests as one peer may.
    Peer,
}

/// Classes of error carried in an [`ErrorMsg`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A frame could not be decoded (length, encoding, JSON).
    BadFrame,
    /// A well-formed message that is not allowed now.
    UnexpectedMessage,
    /// Hello magic or version not supported.
    UnsupportedVersion,
    /// The TestSpec was refused; `field` names the field.
    InvalidSpec,
    /// A phase deadline passed.
    Timeout,
    /// Data connections did not arrive or failed.
    DataConnection,
    /// The peer went silent or asked to abort.
    Aborted,
    /// Authentication failed (one identical error whatever was wrong).
    AuthFailed,
    /// A server policy limit was exceeded, at admission or while the test ran; `field`
    /// names the limit.
    LimitExceeded,
    /// Anything else on the server.
    Internal,
    /// The daemon's policy does not allow what was asked (a third-party test without
    /// `serve --allow-third-party`, or from an unauthenticated client).
    NotPermitted,
}

/// An error report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorMsg {
    /// Class.
    pub code: ErrorCode,
    /// Offending spec field, for `invalid_spec`.
    pub field: Option<SpecField>,
    /// The server limit, for `limit_exceeded` (and for `invalid_spec` when a limit set the
    /// bound).
    pub limit: Option<LimitName>,
    /// Human-readable text (the receiver escapes it before printing).
    pub message: String,
}

impl ErrorCode {
    /// The wire name (`"bad_frame"`, ...), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnexpectedMessage => "unexpected_message",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::InvalidSpec => "invalid_spec",
            ErrorCode::Timeout => "timeout",
            ErrorCode::DataConnection => "data_connection",
            ErrorCode::Aborted => "aborted",
            ErrorCode::AuthFailed => "auth_failed",
            ErrorCode::LimitExceeded => "limit_exceeded",
            ErrorCode::Internal => "internal",
            ErrorCode::NotPermitted => "not_permitted",
        }
    }
}

/// A live interval sample and which end measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntervalMsg {
    /// End that took the sample.
    pub host: HostRole,
    /// The sample, in the workload's own form.
    pub sample: IntervalData,
}

/// Abort request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbortMsg {
    /// Why.
    pub reason: AbortReason,
}
