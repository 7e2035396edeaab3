//! Client and server session state machines, with time passed in.
//!
//! The machines do no I/O and never read a clock. The I/O shell feeds them decoded messages
//! ([`ServerSession::handle`], [`ClientSession::handle`]) and local events (test admitted,
//! data connections ready, engine finished), calls `poll` whenever
//! [`next_wakeup`](ServerSession::next_wakeup) passes, and carries out the returned
//! [`Action`]s in order. Any `Err` is final: the session moves to [`Phase::Done`], the shell
//! sends [`SessionError::to_error_msg`] (if any) and closes the connection.
//!
//! # Server
//!
//! ```text
//!  new ─► AwaitHello ─hello→welcome─► AwaitTest ─test→RequestAdmission─► AwaitAccept
//!                                                                          │
//!            busy(): sends busy, Close ─► Done ◄──────────────────────────┤
//!                                                                          │ admitted():
//!                                                                          ▼ sends accepted
//!  Running ◄─start→StartEngine─ AwaitStart ◄─data_ready(): sends ready─ AwaitData
//!     │
//!     └─engine_done(): sends results─► AwaitResults ─bye→Close─► Done
//! ```
//!
//! # Client
//!
//! ```text
//!  new (sends hello) ─► AwaitWelcome ─welcome→sends test─► AwaitAccept ─busy─► Err(Busy)
//!                                                              │
//!                                          accepted→OpenData   ▼
//!  Running ◄─ready→sends start, StartEngine─ AwaitReady ◄─data_opened()─ AwaitData
//!     │                                      (ready is also accepted in AwaitData)
//!     └─engine_done(): sends results─► AwaitResults ─results→sends bye, Close─► Done
//!        (straight to Done, sending results and bye, if the server's results came first)
//! ```
//!
//! # Deadlines and liveness
//!
//! | Phase | Deadline |
//! |---|---|
//! | AwaitHello, AwaitTest, AwaitAccept (server); AwaitWelcome, AwaitAccept (client) | `handshake` after the session was created, absolute: frames arriving do not extend it |
//! | AwaitData (server) | `data_connect` (+ per connection) after `admitted()` |
//! | AwaitData, AwaitReady (client) | `data_connect` (+ per connection) after `accepted` arrived |
//! | AwaitStart (server) | `start` after `data_ready()` |
//! | Running | none, but see peer silence |
//! | AwaitResults | `results` after our engine finished |
//!
//! In Running and AwaitResults each end sends a `heartbeat` every `heartbeat_interval`
//! (from `poll`), and fails with [`SessionError::Timeout`] once `peer_silence` has passed
//! without any frame from the peer. Every received frame counts as a sign of life.
//!
//! Messages not listed for a phase fail with [`SessionError::Unexpected`], except `error`
//! (always accepted: [`SessionError::Refused`]) and `abort`, which stops the engine while
//! running, is ignored once our engine is done, and ends the session
//! ([`SessionError::PeerAborted`]) before the test starts.

use std::fmt;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::auth::AuthError;
use crate::data::Token;
use crate::frame::{ABSOLUTE_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES};
use wirebench_model::abort::AbortReason;
use wirebench_model::side::SideReport;
use wirebench_model::spec::TestSpec;
use wirebench_model::validate::{SpecError, SpecProblem};

use crate::message::{
    AbortMsg, Busy, BusyScope, Empty, ErrorCode, ErrorMsg, IntervalMsg, Message, Relayed,
};
use crate::ticket::TicketError;

/// Longest `software` string accepted in a hello, bytes.
pub const MAX_SOFTWARE_BYTES: usize = 128;

/// Phase deadlines and liveness settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From accepting the connection (server) or creating the session (client) until the
    /// test is admitted. Absolute: not extended by frames arriving.
    pub handshake: Duration,
    /// From admission until every data connection is open and `ready` is sent/received:
    /// this much, plus [`Timeouts::data_connect_per_connection`] for each data connection
    /// the test opens (see [`Timeouts::data_connect_for`]).
    pub data_connect: Duration,
    /// What each data connection adds to the `data_connect` deadline. The client opens them
    /// one after another; a host whose local ports toward the server are taken by an earlier
    /// test's TIME-WAIT sockets picks each new port in a kernel scan that grows with them
    /// (measured on veth: 10,000 connections in 1.3 s on a clean host, ~1.8 ms each for the
    /// last of them right after an earlier 10,000-flow test).
    pub data_connect_per_connection: Duration,
    /// Server: from `ready` until the client's `start`.
    pub start: Duration,
    /// How often a heartbeat is sent while running or awaiting results.
    pub heartbeat_interval: Duration,
    /// While running or awaiting results: no frame at all from the peer for this long is a
    /// timeout.
    pub peer_silence: Duration,
    /// After our engine finished: how long to wait for the peer's results (client) or for
    /// the client's results and bye (server).
    pub results: Duration,
}

impl Timeouts {
    /// The data-connection deadline of a test that opens `connections` data connections:
    /// `data_connect` + `connections` × `data_connect_per_connection` (saturating).
    pub fn data_connect_for(&self, connections: u32) -> Duration {
        self.data_connect
            .saturating_add(self.data_connect_per_connection.saturating_mul(connections))
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(5),
            data_connect: Duration::from_secs(10),
            data_connect_per_connection: Duration::from_millis(5),
            start: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(1),
            peer_silence: Duration::from_secs(5),
            results: Duration::from_secs(15),
        }
    }
}

/// Where a session stands. See the module docs for the diagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Server: waiting for the client's hello.
    AwaitHello,
    /// Client: hello sent, waiting for welcome.
    AwaitWelcome,
    /// Server: welcome sent, waiting for the test spec.
    AwaitTest,
    /// Client: test sent, waiting for accepted or busy. Server: spec valid, waiting for the
    /// shell's admission decision (`admitted` or `busy`).
    AwaitAccept,
    /// Server: accepted sent, waiting for the data connections. Client: opening them.
    AwaitData,
    /// Client: data connections open, waiting for the server's ready.
    AwaitReady,
    /// Server: ready sent, waiting for start.
    AwaitStart,
    /// The engines run.
    Running,
    /// Our engine finished and our results are sent; waiting for the peer.
    AwaitResults,
    /// The session is over (orderly or not).
    Done,
}

impl Phase {
    /// The phase name in snake_case, as used in messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            Phase::AwaitHello => "await_hello",
            Phase::AwaitWelcome => "await_welcome",
            Phase::AwaitTest => "await_test",
            Phase::AwaitAccept => "await_accept",
            Phase::AwaitData => "await_data",
            Phase::AwaitReady => "await_ready",
            Phase::AwaitStart => "await_start",
            Phase::Running => "running",
            Phase::AwaitResults => "await_results",
            Phase::Done => "done",
        }
    }

    /// Running or awaiting results: heartbeats are sent and peer silence is checked.
    fn is_live(self) -> bool {
        matches!(self, Phase::Running | Phase::AwaitResults)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the I/O shell must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this message on the control connection.
    Send(Message),
    /// Server: the spec is valid; decide admission, then call
    /// [`ServerSession::admitted`] or [`ServerSession::busy`].
    RequestAdmission(Box<TestSpec>),
    /// Client: open the data connections, each presenting this token, then call
    /// [`ClientSession::data_opened`].
    OpenData {
        /// Server-assigned test number.
        test_id: u64,
        /// Token for the data hellos.
        token: Token,
    },
    /// Start the local engine now.
    StartEngine,
    /// Stop the local engine early (it still reports through `engine_done`).
    StopEngine {
        /// Why.
        reason: AbortReason,
    },
    /// A live interval sample from the peer.
    PeerInterval(IntervalMsg),
    /// The peer's final measurements.
    PeerResults(Box<SideReport>),
    /// Client: the target daemon issued this third-party ticket (the session is over).
    TicketIssued(Token),
    /// Server (agent): an authenticated client asks for a third-party test of this spec
    /// against `target` with `ticket`, within this daemon's limits; decide admission, then
    /// call [`ServerSession::relaying`] (and [`ServerSession::relay_done`] when it ends) or
    /// [`ServerSession::busy`].
    RequestThirdParty {
        /// The test.
        spec: Box<TestSpec>,
        /// The target daemon, as this daemon reaches it.
        target: std::net::SocketAddr,
        /// The target's ticket.
        ticket: Token,
    },
    /// Client: the agent's account of the third-party test (the session is over).
    Relayed(Box<Relayed>),
    /// Close the control connection; the session is over.
    Close,
}

/// Why a session ended abnormally.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SessionError {
    /// A phase deadline passed, or (in Running and AwaitResults) the peer was silent for
    /// `peer_silence`.
    #[error("{}", timeout_text(.phase))]
    Timeout {
        /// The phase that timed out.
        phase: Phase,
    },
    /// A well-formed message that is not allowed in the current phase.
    #[error("unexpected `{got}` message in phase {phase}")]
    Unexpected {
        /// The phase.
        phase: Phase,
        /// The message kind, as its JSON tag (see [`message_kind`]).
        got: &'static str,
    },
    /// The hello (or welcome) has the wrong magic, an unsupported version, or an oversized
    /// software string.
    #[error("bad hello: {0}")]
    BadHello(String),
    /// A message allowed in this phase whose content is invalid (e.g. a malformed token).
    #[error("bad message: {0}")]
    BadMessage(String),
    /// The peer sent an `error` message.
    #[error("{}", refused_text(.0))]
    Refused(ErrorMsg),
    /// The server is at its cap of concurrent tests.
    #[error("{}", busy_text(.0))]
    Busy(Busy),
    /// The peer aborted before the test started.
    #[error("peer aborted the test: {0:?}")]
    PeerAborted(AbortReason),
    /// The test spec was refused; the error names the field.
    #[error("invalid test spec: {0}")]
    InvalidSpec(#[from] SpecError),
    /// Server: the client's proof of identity did not verify (one error for every cause).
    #[error("{0}")]
    Auth(#[from] AuthError),
    /// The daemon's policy does not allow the request (third-party tests off, or asked
    /// without authentication).
    #[error("{0}")]
    NotPermitted(String),
    /// Server: a third-party ticket was refused or could not be issued.
    #[error("{0}")]
    Ticket(#[from] TicketError),
    /// Client: the server requires authentication and no credentials were given.
    #[error(
        "the server (identity {server}) requires authentication: pass --auth IDENTITY with \
         a key (--auth-key-file FILE or the WIREBENCH_AUTH_KEY environment variable)"
    )]
    AuthRequired {
        /// The server's identity from its welcome.
        server: String,
    },
}

fn timeout_text(phase: &Phase) -> String {
    let phase = *phase;
    match phase {
        Phase::AwaitHello | Phase::AwaitWelcome | Phase::AwaitTest | Phase::AwaitAccept => {
            format!("handshake not completed in time (stuck in phase {phase})")
        }
        Phase::AwaitData => "timed out waiting for the data connections".into(),
        Phase::AwaitReady => "timed out waiting for the server to report ready".into(),
        Phase::AwaitStart => "timed out waiting for the client's start".into(),
        Phase::Running => "the peer sent nothing for too long while the test ran".into(),
        Phase::AwaitResults => {
            "timed out waiting for the peer's results (deadline passed or the peer went silent)"
                .into()
        }
        Phase::Done => "timed out after the session ended".into(),
    }
}

fn busy_text(b: &Busy) -> String {
    match b.scope {
        BusyScope::Server => format!(
            "server busy: {} of {} tests running (`serve --max-tests`); retry in {} ms",
            b.running, b.cap, b.retry_after_ms
        ),
        BusyScope::Peer => format!(
            "server busy for this client: it already runs {} of the {} tests one peer may run \
             at once (`serve --max-tests-per-peer`); retry in {} ms",
            b.running, b.cap, b.retry_after_ms
        ),
    }
}

fn refused_text(e: &ErrorMsg) -> String {
    let code = e.code.as_str();
    match &e.field {
        Some(field) => format!("peer reported {code} (field {field}): {}", e.message),
        None => format!("peer reported {code}: {}", e.message),
    }
}

impl SessionError {
    /// The [`ErrorMsg`] to send to the peer before closing, or `None` when the peer caused
    /// the end itself (it sent `error`, `busy` or `abort`).
    pub fn to_error_msg(&self) -> Option<ErrorMsg> {
        let code = match self {
            SessionError::Timeout {
                phase: Phase::AwaitData | Phase::AwaitReady,
            } => ErrorCode::DataConnection,
            SessionError::Timeout {
                phase: Phase::Running,
            } => ErrorCode::Aborted,
            SessionError::Timeout { .. } => ErrorCode::Timeout,
            SessionError::Unexpected { .. } => ErrorCode::UnexpectedMessage,
            SessionError::BadHello(_) => ErrorCode::UnsupportedVersion,
            SessionError::Auth(_) | SessionError::AuthRequired { .. } => ErrorCode::AuthFailed,
            SessionError::BadMessage(_) => ErrorCode::BadFrame,
            SessionError::InvalidSpec(_) => ErrorCode::InvalidSpec,
            SessionError::NotPermitted(_) => ErrorCode::NotPermitted,
            SessionError::Ticket(TicketError::Full) => ErrorCode::LimitExceeded,
            SessionError::Ticket(_) => ErrorCode::AuthFailed,
            SessionError::Refused(_) | SessionError::Busy(_) | SessionError::PeerAborted(_) => {
                return None
            }
        };
        let (field, limit) = match self {
            SessionError::InvalidSpec(e) => (
                Some(e.field),
                match &e.problem {
                    SpecProblem::OutOfRange { limit, .. } => *limit,
                    _ => None,
                },
            ),
            _ => (None, None),
        };
        Some(ErrorMsg {
            code,
            field,
            limit,
            message: self.to_string(),
        })
    }
}

/// The JSON tag of a message (`"hello"`, `"test"`, ...).
pub fn message_kind(msg: &Message) -> &'static str {
    match msg {
        Message::Hello(_) => "hello",
        Message::Welcome(_) => "welcome",
        Message::Test(_) => "test",
        Message::Accepted(_) => "accepted",
        Message::Busy(_) => "busy",
        Message::Error(_) => "error",
        Message::Ready(_) => "ready",
        Message::Start(_) => "start",
        Message::Interval(_) => "interval",
        Message::Results(_) => "results",
        Message::Heartbeat(_) => "heartbeat",
        Message::Abort(_) => "abort",
        Message::Bye(_) => "bye",
        Message::TicketRequest(_) => "ticket_request",
        Message::Ticket(_) => "ticket",
        Message::ThirdParty(_) => "third_party",
        Message::Relaying(_) => "relaying",
        Message::Relayed(_) => "relayed",
    }
}

/// Slack on the time a peer's engine has run when bounding its `results`: the two ends
/// start a little apart, and a receiver drains for a while after its stop instant.
pub const RESULTS_ELAPSED_SLACK: Duration = Duration::from_secs(5);

/// Room for one flow's TCP_INFO sample in an interval (`FlowTcpSample` as JSON: 241 bytes
/// with every field at its widest, and a separator).
pub const TCP_SAMPLE_BYTES: u64 = 256;

/// The frame cap both ends apply once `spec` is admitted: room for the `results` message
/// (per-flow counts, the interval samples, per-CPU figures), between
/// [`DEFAULT_MAX_FRAME_BYTES`] and [`ABSOLUTE_MAX_FRAME_BYTES`]. The interval samples are
/// counted for the time the test has actually run (`elapsed`, plus
/// [`RESULTS_ELAPSED_SLACK`]), never more than its declared warm-up and duration: a peer
/// that aborts early cannot claim the allowance of the whole declared test.
pub fn results_frame_cap(spec: &TestSpec, elapsed: Duration) -> u32 {
    let conns = u64::from(spec.connection_count());
    let c = &spec.common;
    let ran_ms = u64::try_from((elapsed + RESULTS_ELAPSED_SLACK).as_millis()).unwrap_or(u64::MAX);
    let intervals = match c.interval_ms {
        Some(i) if i > 0 => {
            (c.duration_ms.saturating_add(c.warmup_ms).min(ran_ms) / i).saturating_add(2)
        }
        _ => 0,
    };
    let bytes = (1u64 << 20)
        .saturating_add(conns * 4096)
        .saturating_add(intervals.saturating_mul(128 + conns * (96 + TCP_SAMPLE_BYTES)));
    let cap = bytes.clamp(
        u64::from(DEFAULT_MAX_FRAME_BYTES),
        u64::from(ABSOLUTE_MAX_FRAME_BYTES),
    );
    u32::try_from(cap).unwrap_or(ABSOLUTE_MAX_FRAME_BYTES)
}

/// `at + d`, or `None` (never) if that overflows.
fn after(at: Instant, d: Duration) -> Option<Instant> {
    at.checked_add(d)
}

/// Shorten `s` to at most `max` bytes for an error message.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return format!("{s:?}");
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}…", &s[..end])
}

const EMPTY: Empty = Empty {};

/// Deadline, liveness and heartbeat bookkeeping shared by both machines.
#[derive(Debug, Clone)]
struct Timers {
    timeouts: Timeouts,
    /// Deadline of the current phase; `None` while running or when it would overflow.
    deadline: Option<Instant>,
    /// When the last frame from the peer arrived.
    last_heard: Instant,
    /// When the next heartbeat is due (set on entering Running).
    next_heartbeat: Option<Instant>,
    /// When the engines started.
    running_since: Option<Instant>,
}

impl Timers {
    fn new(now: Instant, timeouts: Timeouts) -> Self {
        Timers {
            timeouts,
            deadline: after(now, timeouts.handshake),
            last_heard: now,
            next_heartbeat: None,
            running_since: None,
        }
    }

    fn heard(&mut self, now: Instant) {
        self.last_heard = self.last_heard.max(now);
    }

    fn set_deadline(&mut self, now: Instant, d: Duration) {
        self.deadline = after(now, d);
    }

    fn heartbeat_interval(&self) -> Duration {
        self.timeouts
            .heartbeat_interval
            .max(Duration::from_millis(1))
    }

    fn enter_running(&mut self, now: Instant) {
        self.deadline = None;
        self.next_heartbeat = after(now, self.heartbeat_interval());
        self.running_since = Some(now);
    }

    /// How long the test has run at `now` (zero before it started).
    fn elapsed(&self, now: Instant) -> Duration {
        self.running_since
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }

    fn silence_deadline(&self) -> Option<Instant> {
        after(self.last_heard, self.timeouts.peer_silence)
    }

    fn poll(&mut self, phase: Phase, now: Instant) -> Result<Vec<Action>, SessionError> {
        if phase == Phase::Done {
            return Ok(Vec::new());
        }
        if self.deadline.is_some_and(|d| now >= d) {
            return Err(SessionError::Timeout { phase });
        }
        if !phase.is_live() {
            return Ok(Vec::new());
        }
        if self.silence_deadline().is_some_and(|d| now >= d) {
            return Err(SessionError::Timeout { phase });
        }
        match self.next_heartbeat {
            Some(due) if now >= due => {
                let interval = self.heartbeat_interval();
                // Keep the schedule, but never send a burst after a late poll.
                self.next_heartbeat = match after(due, interval) {
                    Some(next) if next > now => Some(next),
                    _ => after(now, interval),
                };
                Ok(vec![Action::Send(Message::Heartbeat(EMPTY))])
            }
            _ => Ok(Vec::new()),
        }
    }

    fn next_wakeup(&self, phase: Phase) -> Option<Instant> {
        if phase == Phase::Done {
            return None;
        }
        let mut times = vec![self.deadline];
        if phase.is_live() {
            times.push(self.silence_deadline());
            times.push(self.next_heartbeat);
        }
        times.into_iter().flatten().min()
    }
}

/// Shared by both machines: what a local abort does in each phase.
pub(crate) fn abort_actions(phase: &mut Phase, reason: AbortReason) -> Vec<Action> {
    match *phase {
        Phase::Running => vec![
            Action::Send(Message::Abort(AbortMsg {
                reason: reason.clone(),
            })),
            Action::StopEngine { reason },
        ],
        Phase::AwaitResults | Phase::Done => Vec::new(),
        _ => {
            *phase = Phase::Done;
            vec![
                Action::Send(Message::Abort(AbortMsg { reason })),
                Action::Close,
            ]
        }
    }
}

mod client;
mod server;

pub use client::ClientSession;
pub use server::{ServerAuth, ServerSession};
