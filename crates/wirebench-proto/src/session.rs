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
//! | AwaitData (server) | `data_connect` after `admitted()` |
//! | AwaitData, AwaitReady (client) | `data_connect` after `accepted` arrived |
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
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::auth::{self, AuthError, Key, KeyTable, Nonce};
use crate::data::Token;
use crate::frame::{ABSOLUTE_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES};
use crate::measure::SideReport;
use crate::message::{
    AbortMsg, Accepted, Busy, Empty, ErrorCode, ErrorMsg, IntervalMsg, Message, TestRequest,
    Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
};
use crate::spec::{Limits, SpecError, TestSpec};

/// Longest `software` string accepted in a hello, bytes.
pub const MAX_SOFTWARE_BYTES: usize = 128;

/// Phase deadlines and liveness settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From accepting the connection (server) or creating the session (client) until the
    /// test is admitted. Absolute: not extended by frames arriving.
    pub handshake: Duration,
    /// From admission until every data connection is open and `ready` is sent/received.
    pub data_connect: Duration,
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

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(5),
            data_connect: Duration::from_secs(10),
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
        reason: String,
    },
    /// A live interval sample from the peer.
    PeerInterval(IntervalMsg),
    /// The peer's final measurements.
    PeerResults(Box<SideReport>),
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
    #[error("peer aborted the test: {0}")]
    PeerAborted(String),
    /// The test spec was refused; the error names the field.
    #[error("invalid test spec: {0}")]
    InvalidSpec(#[from] SpecError),
    /// Server: the client's proof of identity did not verify (one error for every cause).
    #[error("{0}")]
    Auth(#[from] AuthError),
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

/// The JSON tag of an [`ErrorCode`].
pub fn error_code_name(code: ErrorCode) -> &'static str {
    match code {
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
    }
}

fn busy_text(b: &Busy) -> String {
    format!(
        "server busy: {} of {} tests running; retry in {} ms",
        b.running, b.cap, b.retry_after_ms
    )
}

fn refused_text(e: &ErrorMsg) -> String {
    let code = error_code_name(e.code);
    match &e.field {
        Some(field) => format!("peer reported {code} (field {field}): {}", e.message),
        None => format!("peer reported {code}: {}", e.message),
    }
}

fn spec_error_field(e: &SpecError) -> &'static str {
    match e {
        SpecError::OutOfRange { field, .. }
        | SpecError::Invalid { field, .. }
        | SpecError::Inconsistent { field, .. } => field,
    }
}

impl SessionError {
    /// The [`ErrorMsg`] to send to the peer before closing, or `None` when the peer caused
    /// the end itself (it sent `error`, `busy` or `abort`).
    pub fn to_error_msg(&self) -> Option<ErrorMsg> {
        let (code, field) = match self {
            SessionError::Timeout {
                phase: Phase::AwaitData | Phase::AwaitReady,
            } => (ErrorCode::DataConnection, None),
            SessionError::Timeout {
                phase: Phase::Running,
            } => (ErrorCode::Aborted, None),
            SessionError::Timeout { .. } => (ErrorCode::Timeout, None),
            SessionError::Unexpected { .. } => (ErrorCode::UnexpectedMessage, None),
            SessionError::BadHello(_) => (ErrorCode::UnsupportedVersion, None),
            SessionError::Auth(_) | SessionError::AuthRequired { .. } => {
                (ErrorCode::AuthFailed, None)
            }
            SessionError::BadMessage(_) => (ErrorCode::BadFrame, None),
            SessionError::InvalidSpec(e) => (
                ErrorCode::InvalidSpec,
                Some(spec_error_field(e).to_string()),
            ),
            SessionError::Refused(_) | SessionError::Busy(_) | SessionError::PeerAborted(_) => {
                return None
            }
        };
        Some(ErrorMsg {
            code,
            field,
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
    }
}

/// The frame cap both ends apply once `spec` is admitted: room for the `results` message
/// (per-flow counts, every interval sample, per-CPU figures), between
/// [`DEFAULT_MAX_FRAME_BYTES`] and [`ABSOLUTE_MAX_FRAME_BYTES`].
pub fn results_frame_cap(spec: &TestSpec) -> u32 {
    let conns = u64::from(spec.connection_count());
    let intervals = match spec.interval_ms {
        Some(i) if i > 0 => (spec.duration_ms.saturating_add(spec.warmup_ms) / i).saturating_add(2),
        _ => 0,
    };
    let bytes = (1u64 << 20)
        .saturating_add(conns * 4096)
        .saturating_add(intervals.saturating_mul(128 + conns * 96));
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
}

impl Timers {
    fn new(now: Instant, timeouts: Timeouts) -> Self {
        Timers {
            timeouts,
            deadline: after(now, timeouts.handshake),
            last_heard: now,
            next_heartbeat: None,
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

/// The daemon's side of one control connection.
#[derive(Debug, Clone)]
pub struct ServerSession {
    phase: Phase,
    timers: Timers,
    limits: Limits,
    software: String,
    auth: ServerAuth,
    identity: Option<String>,
    spec: Option<Box<TestSpec>>,
    peer_results: bool,
}

/// The server's side of authentication for one control connection.
#[derive(Debug, Clone)]
pub struct ServerAuth {
    /// This connection's fresh random challenge.
    pub nonce: Nonce,
    /// The server's identity, sent in the welcome and covered by the client's MAC.
    pub server_identity: String,
    /// Identities and keys; `None` admits unauthenticated clients.
    pub keys: Option<Arc<KeyTable>>,
}

impl Default for ServerAuth {
    /// No authentication, an all-zero nonce: for tests of the state machine only.
    fn default() -> Self {
        ServerAuth {
            nonce: Nonce([0; auth::NONCE_BYTES]),
            server_identity: "wirebench".into(),
            keys: None,
        }
    }
}

impl ServerSession {
    /// A session for a control connection accepted at `now`. `software` goes into the
    /// welcome.
    pub fn new(now: Instant, timeouts: Timeouts, limits: Limits, software: String) -> Self {
        ServerSession {
            phase: Phase::AwaitHello,
            timers: Timers::new(now, timeouts),
            limits,
            software,
            auth: ServerAuth::default(),
            identity: None,
            spec: None,
            peer_results: false,
        }
    }

    /// Set this connection's challenge and the key table (call before handling the hello).
    pub fn with_auth(mut self, auth: ServerAuth) -> Self {
        self.auth = auth;
        self
    }

    /// The identity the client proved, if it authenticated.
    pub fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The admitted (or being admitted) test spec, once received and valid.
    pub fn spec(&self) -> Option<&TestSpec> {
        self.spec.as_deref()
    }

    /// The frame cap the shell should apply to incoming frames now:
    /// [`DEFAULT_MAX_FRAME_BYTES`] until the test is admitted, then
    /// [`results_frame_cap`] of the spec.
    pub fn frame_cap(&self) -> u32 {
        match (&self.spec, self.phase) {
            (
                Some(spec),
                Phase::AwaitData
                | Phase::AwaitStart
                | Phase::Running
                | Phase::AwaitResults
                | Phase::Done,
            ) => results_frame_cap(spec),
            _ => DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// Handle one message from the client, received at `now`.
    pub fn handle(&mut self, now: Instant, msg: Message) -> Result<Vec<Action>, SessionError> {
        self.timers.heard(now);
        let result = self.transition(now, msg);
        if result.is_err() {
            self.phase = Phase::Done;
        }
        result
    }

    fn transition(&mut self, now: Instant, msg: Message) -> Result<Vec<Action>, SessionError> {
        use Phase::*;
        match (self.phase, msg) {
            (_, Message::Error(e)) => Err(SessionError::Refused(e)),
            (AwaitHello, Message::Hello(h)) => {
                if h.magic != HELLO_MAGIC {
                    return Err(SessionError::BadHello(format!(
                        "magic {} is not {HELLO_MAGIC:?}",
                        clip(&h.magic, 32)
                    )));
                }
                if h.version != PROTOCOL_VERSION {
                    return Err(SessionError::BadHello(format!(
                        "client speaks protocol version {}, this server speaks {PROTOCOL_VERSION}",
                        h.version
                    )));
                }
                if h.software.len() > MAX_SOFTWARE_BYTES {
                    return Err(SessionError::BadHello(format!(
                        "software is {} bytes, at most {MAX_SOFTWARE_BYTES} allowed",
                        h.software.len()
                    )));
                }
                self.phase = AwaitTest;
                Ok(vec![Action::Send(Message::Welcome(Welcome {
                    version: PROTOCOL_VERSION,
                    software: self.software.clone(),
                    limits: self.limits.clone(),
                    nonce: self.auth.nonce.to_hex(),
                    server_identity: self.auth.server_identity.clone(),
                    auth_required: self.auth.keys.is_some(),
                }))])
            }
            (AwaitTest, Message::Test(req)) => {
                let TestRequest { spec, auth } = *req;
                // Authenticate before looking at the spec's values.
                if let Some(keys) = &self.auth.keys {
                    let id = keys.verify(
                        auth.as_ref(),
                        &self.auth.nonce,
                        &self.auth.server_identity,
                        &spec,
                    )?;
                    self.identity = Some(id);
                }
                spec.validate(&self.limits)?;
                let spec = Box::new(spec);
                self.spec = Some(spec.clone());
                self.phase = AwaitAccept;
                Ok(vec![Action::RequestAdmission(spec)])
            }
            (AwaitStart, Message::Start(_)) => {
                self.phase = Running;
                self.timers.enter_running(now);
                Ok(vec![Action::StartEngine])
            }
            (Running | AwaitResults, Message::Heartbeat(_)) => Ok(Vec::new()),
            (Running | AwaitResults, Message::Interval(i)) => Ok(vec![Action::PeerInterval(i)]),
            (Running | AwaitResults, Message::Results(r)) if !self.peer_results => {
                self.peer_results = true;
                Ok(vec![Action::PeerResults(r)])
            }
            (Running, Message::Abort(a)) => Ok(vec![Action::StopEngine { reason: a.reason }]),
            (AwaitResults, Message::Abort(_)) => Ok(Vec::new()),
            (AwaitResults, Message::Bye(_)) => {
                self.phase = Done;
                Ok(vec![Action::Close])
            }
            (phase, Message::Abort(a)) if phase != Done => Err(SessionError::PeerAborted(a.reason)),
            (phase, m) => Err(SessionError::Unexpected {
                phase,
                got: message_kind(&m),
            }),
        }
    }

    /// The shell admitted the test: send `accepted` and wait for the data connections.
    /// Does nothing outside [`Phase::AwaitAccept`].
    pub fn admitted(&mut self, now: Instant, test_id: u64, token: Token) -> Vec<Action> {
        if self.phase != Phase::AwaitAccept {
            return Vec::new();
        }
        self.phase = Phase::AwaitData;
        self.timers
            .set_deadline(now, self.timers.timeouts.data_connect);
        vec![Action::Send(Message::Accepted(Accepted {
            test_id,
            token: token.to_hex(),
        }))]
    }

    /// The shell refused the test for lack of capacity: send `busy` and close.
    /// Does nothing outside [`Phase::AwaitAccept`].
    pub fn busy(&mut self, running: u32, cap: u32, retry_after_ms: u64) -> Vec<Action> {
        if self.phase != Phase::AwaitAccept {
            return Vec::new();
        }
        self.phase = Phase::Done;
        vec![
            Action::Send(Message::Busy(Busy {
                running,
                cap,
                retry_after_ms,
            })),
            Action::Close,
        ]
    }

    /// Every data connection arrived and is configured: send `ready`.
    /// Does nothing outside [`Phase::AwaitData`].
    pub fn data_ready(&mut self, now: Instant) -> Vec<Action> {
        if self.phase != Phase::AwaitData {
            return Vec::new();
        }
        self.phase = Phase::AwaitStart;
        self.timers.set_deadline(now, self.timers.timeouts.start);
        vec![Action::Send(Message::Ready(EMPTY))]
    }

    /// Our engine finished (normally or stopped): send our results and wait for the client's
    /// results and bye. Does nothing outside [`Phase::Running`].
    pub fn engine_done(&mut self, now: Instant, report: SideReport) -> Vec<Action> {
        if self.phase != Phase::Running {
            return Vec::new();
        }
        self.phase = Phase::AwaitResults;
        self.timers.set_deadline(now, self.timers.timeouts.results);
        vec![Action::Send(Message::Results(Box::new(report)))]
    }

    /// Abort locally (e.g. the daemon shuts down). While running: tell the client and stop
    /// the engine (results still follow). Before: tell the client and close. After our
    /// engine finished: nothing.
    pub fn abort(&mut self, reason: String) -> Vec<Action> {
        abort_actions(&mut self.phase, reason)
    }

    /// Check deadlines and liveness at `now`; may return a heartbeat to send.
    pub fn poll(&mut self, now: Instant) -> Result<Vec<Action>, SessionError> {
        let result = self.timers.poll(self.phase, now);
        if result.is_err() {
            self.phase = Phase::Done;
        }
        result
    }

    /// The next instant `poll` has something to do (deadline, silence limit or heartbeat);
    /// `None` when done.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.timers.next_wakeup(self.phase)
    }
}

/// Shared by both machines: what a local abort does in each phase.
fn abort_actions(phase: &mut Phase, reason: String) -> Vec<Action> {
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

/// The client's side of the control connection.
#[derive(Debug, Clone)]
pub struct ClientSession {
    phase: Phase,
    timers: Timers,
    spec: TestSpec,
    credentials: Option<(String, Key)>,
    server: Option<Welcome>,
    test_id: Option<u64>,
    peer_results: bool,
}

impl ClientSession {
    /// A session for a control connection opened at `now`; returns the hello to send.
    pub fn new(
        now: Instant,
        timeouts: Timeouts,
        spec: TestSpec,
        software: String,
    ) -> (Self, Vec<Action>) {
        let session = ClientSession {
            phase: Phase::AwaitWelcome,
            timers: Timers::new(now, timeouts),
            spec,
            credentials: None,
            server: None,
            test_id: None,
            peer_results: false,
        };
        let hello = Message::Hello(crate::message::Hello {
            magic: HELLO_MAGIC.to_string(),
            version: PROTOCOL_VERSION,
            software,
        });
        (session, vec![Action::Send(hello)])
    }

    /// Authenticate as `identity` with `key` (call before handling the welcome).
    pub fn with_credentials(mut self, identity: String, key: Key) -> Self {
        self.credentials = Some((identity, key));
        self
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The server's welcome (software, limits), once received.
    pub fn server(&self) -> Option<&Welcome> {
        self.server.as_ref()
    }

    /// The server-assigned test number, once accepted.
    pub fn test_id(&self) -> Option<u64> {
        self.test_id
    }

    /// The frame cap the shell should apply to incoming frames now:
    /// [`DEFAULT_MAX_FRAME_BYTES`] until the test is accepted, then [`results_frame_cap`].
    pub fn frame_cap(&self) -> u32 {
        if self.test_id.is_some() {
            results_frame_cap(&self.spec)
        } else {
            DEFAULT_MAX_FRAME_BYTES
        }
    }

    /// Handle one message from the server, received at `now`.
    pub fn handle(&mut self, now: Instant, msg: Message) -> Result<Vec<Action>, SessionError> {
        self.timers.heard(now);
        let result = self.transition(now, msg);
        if result.is_err() {
            self.phase = Phase::Done;
        }
        result
    }

    fn transition(&mut self, now: Instant, msg: Message) -> Result<Vec<Action>, SessionError> {
        use Phase::*;
        match (self.phase, msg) {
            (_, Message::Error(e)) => Err(SessionError::Refused(e)),
            (AwaitWelcome, Message::Welcome(w)) => {
                if w.version != PROTOCOL_VERSION {
                    return Err(SessionError::BadHello(format!(
                        "server speaks protocol version {}, this client speaks {PROTOCOL_VERSION}",
                        w.version
                    )));
                }
                let nonce = Nonce::from_hex(&w.nonce).ok_or_else(|| {
                    SessionError::BadHello("welcome.nonce is not 64 hex digits".into())
                })?;
                if w.server_identity.len() > MAX_SOFTWARE_BYTES {
                    return Err(SessionError::BadHello(
                        "welcome.server_identity is too long".into(),
                    ));
                }
                let auth = match &self.credentials {
                    Some((id, key)) => {
                        Some(auth::prove(key, &nonce, id, &w.server_identity, &self.spec))
                    }
                    None if w.auth_required => {
                        return Err(SessionError::AuthRequired {
                            server: clip(&w.server_identity, 64),
                        })
                    }
                    None => None,
                };
                // Refuse locally what the server would refuse anyway, with the same message.
                self.spec.validate(&w.limits)?;
                self.server = Some(w);
                self.phase = AwaitAccept;
                Ok(vec![Action::Send(Message::Test(Box::new(TestRequest {
                    spec: self.spec.clone(),
                    auth,
                })))])
            }
            (AwaitWelcome | AwaitAccept, Message::Busy(b)) => Err(SessionError::Busy(b)),
            (AwaitAccept, Message::Accepted(a)) => {
                let token = Token::from_hex(&a.token)
                    .map_err(|e| SessionError::BadMessage(format!("accepted.token: {e}")))?;
                self.test_id = Some(a.test_id);
                self.phase = AwaitData;
                self.timers
                    .set_deadline(now, self.timers.timeouts.data_connect);
                Ok(vec![Action::OpenData {
                    test_id: a.test_id,
                    token,
                }])
            }
            (AwaitData | AwaitReady, Message::Ready(_)) => {
                self.phase = Running;
                self.timers.enter_running(now);
                Ok(vec![
                    Action::Send(Message::Start(EMPTY)),
                    Action::StartEngine,
                ])
            }
            (Running | AwaitResults, Message::Heartbeat(_)) => Ok(Vec::new()),
            (Running | AwaitResults, Message::Interval(i)) => Ok(vec![Action::PeerInterval(i)]),
            (Running, Message::Results(r)) if !self.peer_results => {
                self.peer_results = true;
                Ok(vec![Action::PeerResults(r)])
            }
            (AwaitResults, Message::Results(r)) if !self.peer_results => {
                self.peer_results = true;
                self.phase = Done;
                Ok(vec![
                    Action::PeerResults(r),
                    Action::Send(Message::Bye(EMPTY)),
                    Action::Close,
                ])
            }
            (Running, Message::Abort(a)) => Ok(vec![Action::StopEngine { reason: a.reason }]),
            (AwaitResults, Message::Abort(_)) => Ok(Vec::new()),
            (phase, Message::Abort(a)) if phase != Done => Err(SessionError::PeerAborted(a.reason)),
            (phase, m) => Err(SessionError::Unexpected {
                phase,
                got: message_kind(&m),
            }),
        }
    }

    /// Every data connection is open and has sent its hello. Does nothing outside
    /// [`Phase::AwaitData`]; returns no actions (the server's `ready` moves on).
    pub fn data_opened(&mut self, _now: Instant) -> Vec<Action> {
        if self.phase == Phase::AwaitData {
            self.phase = Phase::AwaitReady;
        }
        Vec::new()
    }

    /// Our engine finished (normally or stopped): send our results; if the server's results
    /// are already here, also say bye and close. Does nothing outside [`Phase::Running`].
    pub fn engine_done(&mut self, now: Instant, report: SideReport) -> Vec<Action> {
        if self.phase != Phase::Running {
            return Vec::new();
        }
        let mut actions = vec![Action::Send(Message::Results(Box::new(report)))];
        if self.peer_results {
            self.phase = Phase::Done;
            actions.push(Action::Send(Message::Bye(EMPTY)));
            actions.push(Action::Close);
        } else {
            self.phase = Phase::AwaitResults;
            self.timers.set_deadline(now, self.timers.timeouts.results);
        }
        actions
    }

    /// Abort locally (e.g. Ctrl-C). While running: tell the server and stop the engine
    /// (results are still exchanged). Before: tell the server and close. After our engine
    /// finished: nothing.
    pub fn abort(&mut self, reason: String) -> Vec<Action> {
        abort_actions(&mut self.phase, reason)
    }

    /// Check deadlines and liveness at `now`; may return a heartbeat to send.
    pub fn poll(&mut self, now: Instant) -> Result<Vec<Action>, SessionError> {
        let result = self.timers.poll(self.phase, now);
        if result.is_err() {
            self.phase = Phase::Done;
        }
        result
    }

    /// The next instant `poll` has something to do; `None` when done.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.timers.next_wakeup(self.phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::HostRole;
    use crate::message::{Hello, IntervalMsg};
    use crate::testutil::{all_messages, full_side_report};

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    fn token() -> Token {
        Token([0x5a; 16])
    }

    fn hello() -> Message {
        Message::Hello(Hello {
            magic: HELLO_MAGIC.into(),
            version: PROTOCOL_VERSION,
            software: "test".into(),
        })
    }

    fn empty(kind: &str) -> Message {
        match kind {
            "ready" => Message::Ready(EMPTY),
            "start" => Message::Start(EMPTY),
            "heartbeat" => Message::Heartbeat(EMPTY),
            "bye" => Message::Bye(EMPTY),
            _ => unreachable!(),
        }
    }

    fn interval(host: HostRole) -> IntervalMsg {
        IntervalMsg {
            host,
            sample: full_side_report(host).intervals[0].clone(),
            rr: None,
            udp: None,
        }
    }

    fn sent(actions: &[Action]) -> Vec<&'static str> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(m) => Some(message_kind(m)),
                _ => None,
            })
            .collect()
    }

    fn server() -> (ServerSession, Instant) {
        let t0 = Instant::now();
        let s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into());
        (s, t0)
    }

    /// A server driven to `phase` at t0 + 100 ms.
    fn server_at(phase: Phase) -> (ServerSession, Instant) {
        let (mut s, t0) = server();
        let t = t0 + 100 * MS;
        let steps: &[Phase] = &[
            Phase::AwaitTest,
            Phase::AwaitAccept,
            Phase::AwaitData,
            Phase::AwaitStart,
            Phase::Running,
            Phase::AwaitResults,
            Phase::Done,
        ];
        for &p in steps {
            if s.phase() == phase {
                break;
            }
            match p {
                Phase::AwaitTest => s.handle(t, hello()).unwrap(),
                Phase::AwaitAccept => s
                    .handle(
                        t,
                        Message::Test(Box::new(TestRequest::unauthenticated(
                            TestSpec::stream_default(),
                        ))),
                    )
                    .unwrap(),
                Phase::AwaitData => s.admitted(t, 7, token()),
                Phase::AwaitStart => s.data_ready(t),
                Phase::Running => s.handle(t, empty("start")).unwrap(),
                Phase::AwaitResults => s.engine_done(t, full_side_report(HostRole::Server)),
                Phase::Done => s.handle(t, empty("bye")).unwrap(),
                _ => unreachable!(),
            };
            assert_eq!(s.phase(), p);
        }
        assert_eq!(s.phase(), phase);
        (s, t)
    }

    fn client() -> (ClientSession, Instant, Vec<Action>) {
        let t0 = Instant::now();
        let (c, a) = ClientSession::new(
            t0,
            Timeouts::default(),
            TestSpec::stream_default(),
            "cli".into(),
        );
        (c, t0, a)
    }

    fn welcome() -> Message {
        Message::Welcome(Welcome {
            version: PROTOCOL_VERSION,
            software: "srv".into(),
            limits: Limits::default(),
            nonce: "ab".repeat(32),
            server_identity: "srv".into(),
            auth_required: false,
        })
    }

    fn accepted() -> Message {
        Message::Accepted(Accepted {
            test_id: 7,
            token: token().to_hex(),
        })
    }

    /// A client driven to `phase` at t0 + 100 ms.
    fn client_at(phase: Phase) -> (ClientSession, Instant) {
        let (mut c, t0, _) = client();
        let t = t0 + 100 * MS;
        let steps: &[Phase] = &[
            Phase::AwaitAccept,
            Phase::AwaitData,
            Phase::AwaitReady,
            Phase::Running,
            Phase::AwaitResults,
            Phase::Done,
        ];
        for &p in steps {
            if c.phase() == phase {
                break;
            }
            match p {
                Phase::AwaitAccept => c.handle(t, welcome()).unwrap(),
                Phase::AwaitData => c.handle(t, accepted()).unwrap(),
                Phase::AwaitReady => c.data_opened(t),
                Phase::Running => c.handle(t, empty("ready")).unwrap(),
                Phase::AwaitResults => c.engine_done(t, full_side_report(HostRole::Client)),
                Phase::Done => c
                    .handle(
                        t,
                        Message::Results(Box::new(full_side_report(HostRole::Server))),
                    )
                    .unwrap(),
                _ => unreachable!(),
            };
            assert_eq!(c.phase(), p);
        }
        assert_eq!(c.phase(), phase);
        (c, t)
    }

    #[test]
    fn default_timeouts() {
        let t = Timeouts::default();
        assert_eq!(t.handshake, 5 * S);
        assert_eq!(t.data_connect, 10 * S);
        assert_eq!(t.start, 10 * S);
        assert_eq!(t.heartbeat_interval, S);
        assert_eq!(t.peer_silence, 5 * S);
        assert_eq!(t.results, 15 * S);
    }

    #[test]
    fn server_happy_path() {
        let (mut s, t0) = server();
        assert_eq!(s.phase(), Phase::AwaitHello);
        assert_eq!(s.frame_cap(), DEFAULT_MAX_FRAME_BYTES);
        let a = s.handle(t0, hello()).unwrap();
        match &a[..] {
            [Action::Send(Message::Welcome(w))] => {
                assert_eq!(w.version, PROTOCOL_VERSION);
                assert_eq!(w.software, "srv");
                assert_eq!(w.limits, Limits::default());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.phase(), Phase::AwaitTest);
        let spec = TestSpec::stream_default();
        let a = s
            .handle(
                t0,
                Message::Test(Box::new(TestRequest::unauthenticated(spec.clone()))),
            )
            .unwrap();
        assert_eq!(a, vec![Action::RequestAdmission(Box::new(spec.clone()))]);
        assert_eq!(s.phase(), Phase::AwaitAccept);
        assert_eq!(s.spec(), Some(&spec));
        assert_eq!(s.frame_cap(), DEFAULT_MAX_FRAME_BYTES);
        let a = s.admitted(t0, 9, token());
        assert_eq!(
            a,
            vec![Action::Send(Message::Accepted(Accepted {
                test_id: 9,
                token: token().to_hex()
            }))]
        );
        assert_eq!(s.phase(), Phase::AwaitData);
        assert_eq!(s.frame_cap(), results_frame_cap(&spec));
        assert_eq!(s.data_ready(t0), vec![Action::Send(Message::Ready(EMPTY))]);
        assert_eq!(s.phase(), Phase::AwaitStart);
        assert_eq!(
            s.handle(t0, empty("start")).unwrap(),
            vec![Action::StartEngine]
        );
        assert_eq!(s.phase(), Phase::Running);
        assert_eq!(s.handle(t0, empty("heartbeat")).unwrap(), vec![]);
        let iv = interval(HostRole::Client);
        assert_eq!(
            s.handle(t0, Message::Interval(iv.clone())).unwrap(),
            vec![Action::PeerInterval(iv.clone())]
        );
        let report = full_side_report(HostRole::Server);
        assert_eq!(
            s.engine_done(t0, report.clone()),
            vec![Action::Send(Message::Results(Box::new(report)))]
        );
        assert_eq!(s.phase(), Phase::AwaitResults);
        // The client's engine may still be running.
        assert_eq!(s.handle(t0, empty("heartbeat")).unwrap(), vec![]);
        assert_eq!(
            s.handle(t0, Message::Interval(iv.clone())).unwrap(),
            vec![Action::PeerInterval(iv)]
        );
        let peer = full_side_report(HostRole::Client);
        assert_eq!(
            s.handle(t0, Message::Results(Box::new(peer.clone())))
                .unwrap(),
            vec![Action::PeerResults(Box::new(peer))]
        );
        assert_eq!(s.handle(t0, empty("bye")).unwrap(), vec![Action::Close]);
        assert_eq!(s.phase(), Phase::Done);
        assert_eq!(s.next_wakeup(), None);
        assert_eq!(s.poll(t0 + 3600 * S), Ok(vec![]));
    }

    #[test]
    fn server_client_results_before_engine_done() {
        let (mut s, t) = server_at(Phase::Running);
        let peer = full_side_report(HostRole::Client);
        assert_eq!(
            s.handle(t, Message::Results(Box::new(peer.clone())))
                .unwrap(),
            vec![Action::PeerResults(Box::new(peer.clone()))]
        );
        assert_eq!(s.phase(), Phase::Running);
        // A second copy is a protocol error.
        let e = s.handle(t, Message::Results(Box::new(peer))).unwrap_err();
        assert_eq!(
            e,
            SessionError::Unexpected {
                phase: Phase::Running,
                got: "results"
            }
        );
        let (mut s, t) = server_at(Phase::Running);
        s.handle(
            t,
            Message::Results(Box::new(full_side_report(HostRole::Client))),
        )
        .unwrap();
        assert_eq!(
            sent(&s.engine_done(t, full_side_report(HostRole::Server))),
            ["results"]
        );
        assert_eq!(s.phase(), Phase::AwaitResults);
        assert_eq!(s.handle(t, empty("bye")).unwrap(), vec![Action::Close]);
    }

    #[test]
    fn server_busy() {
        let (mut s, t) = server_at(Phase::AwaitAccept);
        let a = s.busy(4, 4, 2000);
        assert_eq!(
            a,
            vec![
                Action::Send(Message::Busy(Busy {
                    running: 4,
                    cap: 4,
                    retry_after_ms: 2000
                })),
                Action::Close
            ]
        );
        assert_eq!(s.phase(), Phase::Done);
        assert_eq!(s.admitted(t, 1, token()), vec![]);
    }

    #[test]
    fn shell_events_in_wrong_phase_are_ignored() {
        let (mut s, t) = server_at(Phase::AwaitTest);
        assert_eq!(s.admitted(t, 1, token()), vec![]);
        assert_eq!(s.busy(1, 1, 1), vec![]);
        assert_eq!(s.data_ready(t), vec![]);
        assert_eq!(s.engine_done(t, full_side_report(HostRole::Server)), vec![]);
        assert_eq!(s.phase(), Phase::AwaitTest);
        let (mut c, t) = client_at(Phase::AwaitAccept);
        assert_eq!(c.data_opened(t), vec![]);
        assert_eq!(c.engine_done(t, full_side_report(HostRole::Client)), vec![]);
        assert_eq!(c.phase(), Phase::AwaitAccept);
    }

    #[test]
    fn server_bad_hellos() {
        let cases = [
            (
                Hello {
                    magic: "iperf3".into(),
                    version: 1,
                    software: String::new(),
                },
                "magic",
            ),
            (
                Hello {
                    magic: HELLO_MAGIC.into(),
                    version: 99,
                    software: String::new(),
                },
                "version 99",
            ),
            (
                Hello {
                    magic: HELLO_MAGIC.into(),
                    version: PROTOCOL_VERSION,
                    software: "x".repeat(MAX_SOFTWARE_BYTES + 1),
                },
                "129 bytes",
            ),
            (
                Hello {
                    magic: "é".repeat(100_000),
                    version: 1,
                    software: String::new(),
                },
                "…",
            ),
        ];
        for (h, needle) in cases {
            let (mut s, t0) = server();
            let e = s.handle(t0, Message::Hello(h)).unwrap_err();
            assert!(matches!(e, SessionError::BadHello(_)), "{e}");
            let text = e.to_string();
            assert!(text.contains(needle), "{text}");
            assert!(text.len() < 300, "{text}");
            assert_eq!(
                e.to_error_msg().unwrap().code,
                ErrorCode::UnsupportedVersion
            );
            assert_eq!(s.phase(), Phase::Done);
        }
        // Exactly 128 bytes is fine.
        let (mut s, t0) = server();
        s.handle(
            t0,
            Message::Hello(Hello {
                magic: HELLO_MAGIC.into(),
                version: PROTOCOL_VERSION,
                software: "x".repeat(MAX_SOFTWARE_BYTES),
            }),
        )
        .unwrap();
    }

    #[test]
    fn server_invalid_spec() {
        let (mut s, t) = server_at(Phase::AwaitTest);
        let mut spec = TestSpec::stream_default();
        spec.flows = 0;
        let e = s
            .handle(
                t,
                Message::Test(Box::new(TestRequest::unauthenticated(spec))),
            )
            .unwrap_err();
        assert!(matches!(e, SessionError::InvalidSpec(_)));
        assert!(e.to_string().contains("flows = 0"), "{e}");
        let m = e.to_error_msg().unwrap();
        assert_eq!(m.code, ErrorCode::InvalidSpec);
        assert_eq!(m.field.as_deref(), Some("flows"));
        assert!(
            m.message.contains("flows = 0 is out of range"),
            "{}",
            m.message
        );
        assert_eq!(s.phase(), Phase::Done);
        // The server's own limits apply.
        let t0 = Instant::now();
        let limits = Limits {
            max_flows: 2,
            ..Limits::default()
        };
        let mut s = ServerSession::new(t0, Timeouts::default(), limits, "srv".into());
        s.handle(t0, hello()).unwrap();
        let mut spec = TestSpec::stream_default();
        spec.flows = 3;
        let e = s
            .handle(
                t0,
                Message::Test(Box::new(TestRequest::unauthenticated(spec))),
            )
            .unwrap_err();
        assert_eq!(e.to_error_msg().unwrap().field.as_deref(), Some("flows"));
    }

    /// Every message the server does not accept in each phase.
    #[test]
    fn server_unexpected_messages() {
        let legal: &[(Phase, &[&str])] = &[
            (Phase::AwaitHello, &["hello", "error", "abort"]),
            (Phase::AwaitTest, &["test", "error", "abort"]),
            (Phase::AwaitAccept, &["error", "abort"]),
            (Phase::AwaitData, &["error", "abort"]),
            (Phase::AwaitStart, &["start", "error", "abort"]),
            (
                Phase::Running,
                &["heartbeat", "interval", "results", "abort", "error"],
            ),
            (
                Phase::AwaitResults,
                &["heartbeat", "interval", "results", "abort", "bye", "error"],
            ),
            (Phase::Done, &["error"]),
        ];
        for &(phase, ok) in legal {
            for msg in all_messages() {
                let kind = message_kind(&msg);
                let (mut s, t) = server_at(phase);
                let r = s.handle(t, msg);
                if ok.contains(&kind) {
                    if let Err(SessionError::Unexpected { .. }) = r {
                        panic!("{kind} should be legal in {phase}");
                    }
                } else {
                    assert_eq!(
                        r,
                        Err(SessionError::Unexpected { phase, got: kind }),
                        "{kind} in {phase}"
                    );
                    assert_eq!(s.phase(), Phase::Done);
                    let m = r.unwrap_err().to_error_msg().unwrap();
                    assert_eq!(m.code, ErrorCode::UnexpectedMessage);
                    assert!(m.message.contains(kind), "{}", m.message);
                }
            }
        }
    }

    #[test]
    fn peer_error_and_abort() {
        let err = ErrorMsg {
            code: ErrorCode::Internal,
            field: None,
            message: "disk on fire".into(),
        };
        for phase in [Phase::AwaitHello, Phase::Running, Phase::AwaitResults] {
            let (mut s, t) = server_at(phase);
            let e = s.handle(t, Message::Error(err.clone())).unwrap_err();
            assert_eq!(e, SessionError::Refused(err.clone()));
            assert_eq!(e.to_string(), "peer reported internal: disk on fire");
            assert_eq!(e.to_error_msg(), None);
        }
        let abort = || {
            Message::Abort(AbortMsg {
                reason: "ctrl-c".into(),
            })
        };
        // Before running: the session ends.
        for phase in [Phase::AwaitHello, Phase::AwaitData, Phase::AwaitStart] {
            let (mut s, t) = server_at(phase);
            let e = s.handle(t, abort()).unwrap_err();
            assert_eq!(e, SessionError::PeerAborted("ctrl-c".into()));
            assert_eq!(e.to_error_msg(), None);
        }
        // Running: stop the engine, results follow.
        let (mut s, t) = server_at(Phase::Running);
        assert_eq!(
            s.handle(t, abort()).unwrap(),
            vec![Action::StopEngine {
                reason: "ctrl-c".into()
            }]
        );
        assert_eq!(s.phase(), Phase::Running);
        // Our engine already finished: nothing to do.
        let (mut s, t) = server_at(Phase::AwaitResults);
        assert_eq!(s.handle(t, abort()).unwrap(), vec![]);
        assert_eq!(s.phase(), Phase::AwaitResults);
        // Client side, same rules.
        let (mut c, t) = client_at(Phase::Running);
        assert_eq!(
            c.handle(t, abort()).unwrap(),
            vec![Action::StopEngine {
                reason: "ctrl-c".into()
            }]
        );
        let (mut c, t) = client_at(Phase::AwaitReady);
        assert_eq!(
            c.handle(t, abort()),
            Err(SessionError::PeerAborted("ctrl-c".into()))
        );
        let (mut c, t) = client_at(Phase::AwaitResults);
        assert_eq!(c.handle(t, abort()).unwrap(), vec![]);
        let (mut c, t) = client_at(Phase::AwaitAccept);
        let e = c.handle(t, Message::Error(err.clone())).unwrap_err();
        assert_eq!(e, SessionError::Refused(err));
    }

    #[test]
    fn local_abort() {
        let (mut s, _) = server_at(Phase::Running);
        assert_eq!(
            s.abort("shutdown".into()),
            vec![
                Action::Send(Message::Abort(AbortMsg {
                    reason: "shutdown".into()
                })),
                Action::StopEngine {
                    reason: "shutdown".into()
                }
            ]
        );
        assert_eq!(s.phase(), Phase::Running);
        let (mut s, _) = server_at(Phase::AwaitData);
        let a = s.abort("shutdown".into());
        assert_eq!(sent(&a), ["abort"]);
        assert_eq!(a.last(), Some(&Action::Close));
        assert_eq!(s.phase(), Phase::Done);
        let (mut s, _) = server_at(Phase::AwaitResults);
        assert_eq!(s.abort("x".into()), vec![]);
        let (mut c, _) = client_at(Phase::Running);
        assert_eq!(sent(&c.abort("ctrl-c".into())), ["abort"]);
        let (mut c, _) = client_at(Phase::AwaitWelcome);
        assert_eq!(c.abort("ctrl-c".into()).last(), Some(&Action::Close));
        assert_eq!(c.phase(), Phase::Done);
    }

    #[test]
    fn handshake_deadline_is_absolute() {
        let (mut s, t0) = server();
        // A slow drip of frames: hello at 4.9 s, then nothing more can save it.
        s.handle(t0 + 4900 * MS, hello()).unwrap();
        assert_eq!(s.next_wakeup(), Some(t0 + 5 * S));
        assert_eq!(s.poll(t0 + 4999 * MS), Ok(vec![]));
        assert_eq!(
            s.poll(t0 + 5 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitTest
            })
        );
        assert_eq!(s.phase(), Phase::Done);
        // Test arrives in time but admission is still pending at the deadline.
        let (mut s, t0) = server();
        s.handle(t0 + S, hello()).unwrap();
        s.handle(
            t0 + 4 * S,
            Message::Test(Box::new(TestRequest::unauthenticated(
                TestSpec::stream_default(),
            ))),
        )
        .unwrap();
        assert_eq!(s.next_wakeup(), Some(t0 + 5 * S));
        let e = s.poll(t0 + 6 * S).unwrap_err();
        assert_eq!(
            e,
            SessionError::Timeout {
                phase: Phase::AwaitAccept
            }
        );
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Timeout);
        assert!(e.to_string().contains("handshake"), "{e}");
        // No hello at all.
        let (mut s, t0) = server();
        assert_eq!(
            s.poll(t0 + 5 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitHello
            })
        );
        // Client: welcome never comes; or comes but accepted does not.
        let (mut c, t0, _) = client();
        assert_eq!(c.next_wakeup(), Some(t0 + 5 * S));
        assert_eq!(
            c.poll(t0 + 5 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitWelcome
            })
        );
        let (mut c, t0, _) = client();
        c.handle(t0 + 4 * S, welcome()).unwrap();
        assert_eq!(c.poll(t0 + 4 * S), Ok(vec![]));
        assert_eq!(
            c.poll(t0 + 5 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitAccept
            })
        );
    }

    #[test]
    fn phase_deadlines() {
        // Server data connections: 10 s after admission.
        let (mut s, t) = server_at(Phase::AwaitData);
        assert_eq!(s.next_wakeup(), Some(t + 10 * S));
        assert_eq!(s.poll(t + 10 * S - MS), Ok(vec![]));
        let e = s.poll(t + 10 * S).unwrap_err();
        assert_eq!(
            e,
            SessionError::Timeout {
                phase: Phase::AwaitData
            }
        );
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::DataConnection);
        // Server start: 10 s after ready.
        let (mut s, t) = server_at(Phase::AwaitStart);
        assert_eq!(s.next_wakeup(), Some(t + 10 * S));
        assert_eq!(
            s.poll(t + 10 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitStart
            })
        );
        // Server results: 15 s after our engine finished, even with heartbeats arriving.
        let (mut s, t) = server_at(Phase::AwaitResults);
        for i in 1..15 {
            s.handle(t + i * S, empty("heartbeat")).unwrap();
            let _ = s.poll(t + i * S).unwrap();
        }
        let e = s.poll(t + 15 * S).unwrap_err();
        assert_eq!(
            e,
            SessionError::Timeout {
                phase: Phase::AwaitResults
            }
        );
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Timeout);
        // Client: data_connect covers opening and waiting for ready.
        let (mut c, t) = client_at(Phase::AwaitData);
        assert_eq!(c.next_wakeup(), Some(t + 10 * S));
        c.data_opened(t + 9 * S);
        assert_eq!(c.phase(), Phase::AwaitReady);
        assert_eq!(c.next_wakeup(), Some(t + 10 * S));
        let e = c.poll(t + 10 * S).unwrap_err();
        assert_eq!(
            e,
            SessionError::Timeout {
                phase: Phase::AwaitReady
            }
        );
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::DataConnection);
        let (mut c, t) = client_at(Phase::AwaitData);
        assert_eq!(
            c.poll(t + 10 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitData
            })
        );
        // Client results: 15 s after our engine finished.
        let (mut c, t) = client_at(Phase::AwaitResults);
        for i in 1..15 {
            c.handle(t + i * S, empty("heartbeat")).unwrap();
        }
        assert_eq!(
            c.poll(t + 15 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitResults
            })
        );
    }

    #[test]
    fn heartbeats_and_peer_silence() {
        let (mut s, t) = server_at(Phase::Running);
        assert_eq!(s.next_wakeup(), Some(t + S));
        assert_eq!(s.poll(t + 999 * MS), Ok(vec![]));
        let hb = vec![Action::Send(Message::Heartbeat(EMPTY))];
        assert_eq!(s.poll(t + S), Ok(hb.clone()));
        assert_eq!(s.poll(t + S), Ok(vec![]));
        assert_eq!(s.next_wakeup(), Some(t + 2 * S));
        // A late poll sends one heartbeat, not a burst.
        s.handle(t + 3 * S, empty("heartbeat")).unwrap();
        assert_eq!(s.poll(t + 3500 * MS), Ok(hb.clone()));
        assert_eq!(s.poll(t + 3600 * MS), Ok(vec![]));
        assert_eq!(s.next_wakeup(), Some(t + 4500 * MS));
        // Any frame counts as liveness.
        s.handle(t + 7 * S, Message::Interval(interval(HostRole::Client)))
            .unwrap();
        assert_eq!(s.poll(t + 11 * S), Ok(hb.clone()));
        assert_eq!(s.next_wakeup(), Some(t + 12 * S));
        // Silent for 5 s: timeout.
        let e = s.poll(t + 12 * S).unwrap_err();
        assert_eq!(
            e,
            SessionError::Timeout {
                phase: Phase::Running
            }
        );
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::Aborted);
        assert!(e.to_string().contains("sent nothing"), "{e}");
        assert_eq!(s.phase(), Phase::Done);

        // Heartbeats continue in AwaitResults, and silence still counts there.
        let (mut s, t) = server_at(Phase::AwaitResults);
        assert_eq!(s.poll(t), Ok(vec![]));
        assert_eq!(s.poll(t + S), Ok(hb.clone()));
        assert_eq!(
            s.poll(t + 5 * S),
            Err(SessionError::Timeout {
                phase: Phase::AwaitResults
            })
        );

        // The client likewise.
        let (mut c, t) = client_at(Phase::Running);
        assert_eq!(c.next_wakeup(), Some(t + S));
        assert_eq!(c.poll(t + S), Ok(hb.clone()));
        c.handle(t + 2 * S, empty("heartbeat")).unwrap();
        assert_eq!(c.poll(t + 2 * S), Ok(hb.clone()));
        assert_eq!(c.poll(t + 6 * S), Ok(hb.clone()));
        assert_eq!(c.next_wakeup(), Some(t + 7 * S));
        assert_eq!(
            c.poll(t + 7 * S),
            Err(SessionError::Timeout {
                phase: Phase::Running
            })
        );
        let (mut c, t) = client_at(Phase::AwaitResults);
        assert_eq!(c.next_wakeup(), Some(t + S));
        assert_eq!(c.poll(t + S), Ok(hb));
    }

    #[test]
    fn no_heartbeats_before_running() {
        for phase in [Phase::AwaitHello, Phase::AwaitData, Phase::AwaitStart] {
            let (mut s, t) = server_at(phase);
            assert_eq!(s.poll(t + 2 * S), Ok(vec![]), "{phase}");
            // Heartbeats are not legal before running.
            let e = s.handle(t, empty("heartbeat")).unwrap_err();
            assert!(matches!(e, SessionError::Unexpected { .. }));
        }
    }

    #[test]
    fn huge_timeouts_do_not_overflow() {
        let t0 = Instant::now();
        let timeouts = Timeouts {
            handshake: Duration::MAX,
            data_connect: Duration::MAX,
            start: Duration::MAX,
            heartbeat_interval: Duration::MAX,
            peer_silence: Duration::MAX,
            results: Duration::MAX,
        };
        let mut s = ServerSession::new(t0, timeouts, Limits::default(), "s".into());
        assert_eq!(s.next_wakeup(), None);
        s.handle(t0, hello()).unwrap();
        s.handle(
            t0,
            Message::Test(Box::new(TestRequest::unauthenticated(
                TestSpec::stream_default(),
            ))),
        )
        .unwrap();
        s.admitted(t0, 1, token());
        s.data_ready(t0);
        s.handle(t0, empty("start")).unwrap();
        assert_eq!(s.poll(t0 + 1000 * S), Ok(vec![]));
        assert_eq!(s.next_wakeup(), None);
        // A zero heartbeat interval is treated as 1 ms, not a busy loop.
        let timeouts = Timeouts {
            heartbeat_interval: Duration::ZERO,
            ..Timeouts::default()
        };
        let (mut c, _) = ClientSession::new(t0, timeouts, TestSpec::stream_default(), "c".into());
        c.handle(t0, welcome()).unwrap();
        c.handle(t0, accepted()).unwrap();
        c.handle(t0, empty("ready")).unwrap();
        assert_eq!(c.next_wakeup(), Some(t0 + MS));
        assert_eq!(c.poll(t0 + MS).unwrap().len(), 1);
        assert_eq!(c.poll(t0 + MS), Ok(vec![]));
    }

    #[test]
    fn client_happy_path_peer_results_last() {
        let (mut c, t0, a) = client();
        assert_eq!(sent(&a), ["hello"]);
        match &a[0] {
            Action::Send(Message::Hello(h)) => {
                assert_eq!(h.magic, HELLO_MAGIC);
                assert_eq!(h.version, PROTOCOL_VERSION);
                assert_eq!(h.software, "cli");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.phase(), Phase::AwaitWelcome);
        assert_eq!(c.frame_cap(), DEFAULT_MAX_FRAME_BYTES);
        let a = c.handle(t0, welcome()).unwrap();
        assert_eq!(
            a,
            vec![Action::Send(Message::Test(Box::new(
                TestRequest::unauthenticated(TestSpec::stream_default())
            )))]
        );
        assert_eq!(c.server().unwrap().software, "srv");
        assert_eq!(c.phase(), Phase::AwaitAccept);
        let a = c.handle(t0, accepted()).unwrap();
        assert_eq!(
            a,
            vec![Action::OpenData {
                test_id: 7,
                token: token()
            }]
        );
        assert_eq!(c.test_id(), Some(7));
        assert_eq!(
            c.frame_cap(),
            results_frame_cap(&TestSpec::stream_default())
        );
        assert_eq!(c.phase(), Phase::AwaitData);
        assert_eq!(c.data_opened(t0), vec![]);
        assert_eq!(c.phase(), Phase::AwaitReady);
        let a = c.handle(t0, empty("ready")).unwrap();
        assert_eq!(
            a,
            vec![Action::Send(Message::Start(EMPTY)), Action::StartEngine]
        );
        assert_eq!(c.phase(), Phase::Running);
        let iv = interval(HostRole::Server);
        assert_eq!(
            c.handle(t0, Message::Interval(iv.clone())).unwrap(),
            vec![Action::PeerInterval(iv)]
        );
        assert_eq!(c.handle(t0, empty("heartbeat")).unwrap(), vec![]);
        let mine = full_side_report(HostRole::Client);
        assert_eq!(
            c.engine_done(t0, mine.clone()),
            vec![Action::Send(Message::Results(Box::new(mine)))]
        );
        assert_eq!(c.phase(), Phase::AwaitResults);
        let theirs = full_side_report(HostRole::Server);
        assert_eq!(
            c.handle(t0, Message::Results(Box::new(theirs.clone())))
                .unwrap(),
            vec![
                Action::PeerResults(Box::new(theirs)),
                Action::Send(Message::Bye(EMPTY)),
                Action::Close
            ]
        );
        assert_eq!(c.phase(), Phase::Done);
        assert_eq!(c.next_wakeup(), None);
    }

    #[test]
    fn client_peer_results_first() {
        let (mut c, t) = client_at(Phase::Running);
        let theirs = full_side_report(HostRole::Server);
        assert_eq!(
            c.handle(t, Message::Results(Box::new(theirs.clone())))
                .unwrap(),
            vec![Action::PeerResults(Box::new(theirs.clone()))]
        );
        assert_eq!(c.phase(), Phase::Running);
        let mine = full_side_report(HostRole::Client);
        assert_eq!(
            c.engine_done(t, mine.clone()),
            vec![
                Action::Send(Message::Results(Box::new(mine))),
                Action::Send(Message::Bye(EMPTY)),
                Action::Close
            ]
        );
        assert_eq!(c.phase(), Phase::Done);
        // A duplicate results while running is an error.
        let (mut c, t) = client_at(Phase::Running);
        c.handle(t, Message::Results(Box::new(theirs.clone())))
            .unwrap();
        assert!(matches!(
            c.handle(t, Message::Results(Box::new(theirs))),
            Err(SessionError::Unexpected { got: "results", .. })
        ));
    }

    #[test]
    fn client_ready_before_data_opened() {
        let (mut c, t) = client_at(Phase::AwaitData);
        assert_eq!(sent(&c.handle(t, empty("ready")).unwrap()), ["start"]);
        assert_eq!(c.phase(), Phase::Running);
        // A late data_opened is harmless.
        assert_eq!(c.data_opened(t), vec![]);
        assert_eq!(c.phase(), Phase::Running);
    }

    #[test]
    fn client_busy_and_bad_server() {
        let busy = Busy {
            running: 4,
            cap: 4,
            retry_after_ms: 250,
        };
        let (mut c, t) = client_at(Phase::AwaitAccept);
        let e = c.handle(t, Message::Busy(busy.clone())).unwrap_err();
        assert_eq!(e, SessionError::Busy(busy.clone()));
        assert_eq!(
            e.to_string(),
            "server busy: 4 of 4 tests running; retry in 250 ms"
        );
        assert_eq!(e.to_error_msg(), None);
        assert_eq!(c.phase(), Phase::Done);
        let (mut c, t) = client_at(Phase::AwaitWelcome);
        assert_eq!(
            c.handle(t, Message::Busy(busy.clone())),
            Err(SessionError::Busy(busy))
        );
        // Welcome with another version.
        let (mut c, t) = client_at(Phase::AwaitWelcome);
        let e = c
            .handle(
                t,
                Message::Welcome(Welcome {
                    version: PROTOCOL_VERSION + 1,
                    software: "future".into(),
                    limits: Limits::default(),
                    nonce: "ab".repeat(32),
                    server_identity: "srv".into(),
                    auth_required: false,
                }),
            )
            .unwrap_err();
        assert!(matches!(e, SessionError::BadHello(_)), "{e}");
        // Limits the spec does not fit: refused locally, naming the field.
        let (mut c, t) = client_at(Phase::AwaitWelcome);
        let e = c
            .handle(
                t,
                Message::Welcome(Welcome {
                    version: PROTOCOL_VERSION,
                    software: "small".into(),
                    limits: Limits {
                        max_duration_ms: 1000,
                        ..Limits::default()
                    },
                    nonce: "ab".repeat(32),
                    server_identity: "srv".into(),
                    auth_required: false,
                }),
            )
            .unwrap_err();
        assert_eq!(
            e.to_error_msg().unwrap().field.as_deref(),
            Some("duration_ms")
        );
        // Malformed token.
        let (mut c, t) = client_at(Phase::AwaitAccept);
        let e = c
            .handle(
                t,
                Message::Accepted(Accepted {
                    test_id: 1,
                    token: "xyz".into(),
                }),
            )
            .unwrap_err();
        assert!(matches!(e, SessionError::BadMessage(_)), "{e}");
        assert!(e.to_string().contains("accepted.token"), "{e}");
        assert_eq!(e.to_error_msg().unwrap().code, ErrorCode::BadFrame);
    }

    #[test]
    fn client_unexpected_messages() {
        let legal: &[(Phase, &[&str])] = &[
            (Phase::AwaitWelcome, &["welcome", "busy", "error", "abort"]),
            (Phase::AwaitAccept, &["accepted", "busy", "error", "abort"]),
            (Phase::AwaitData, &["ready", "error", "abort"]),
            (Phase::AwaitReady, &["ready", "error", "abort"]),
            (
                Phase::Running,
                &["heartbeat", "interval", "results", "abort", "error"],
            ),
            (
                Phase::AwaitResults,
                &["heartbeat", "interval", "results", "abort", "error"],
            ),
            (Phase::Done, &["error"]),
        ];
        for &(phase, ok) in legal {
            for msg in all_messages() {
                let kind = message_kind(&msg);
                let (mut c, t) = client_at(phase);
                let r = c.handle(t, msg);
                if ok.contains(&kind) {
                    if let Err(SessionError::Unexpected { .. }) = r {
                        panic!("{kind} should be legal in {phase}");
                    }
                } else {
                    assert_eq!(
                        r,
                        Err(SessionError::Unexpected { phase, got: kind }),
                        "{kind} in {phase}"
                    );
                }
            }
        }
    }

    #[test]
    fn client_and_server_talk_to_each_other() {
        let t0 = Instant::now();
        let mut s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "s".into());
        let (mut c, mut client_actions) = ClientSession::new(
            t0,
            Timeouts::default(),
            crate::testutil::full_spec(),
            "c".into(),
        );
        let mut server_actions = Vec::new();
        let mut log = Vec::new();
        let mut t = t0;
        while !(client_actions.is_empty() && server_actions.is_empty()) {
            t += 10 * MS;
            assert!(t < t0 + 10 * S, "{log:?}");
            // The client's shell.
            for a in std::mem::take(&mut client_actions) {
                match a {
                    Action::Send(m) => {
                        // Through the wire format.
                        let frame = crate::frame::encode(&m);
                        let m = crate::frame::decode_payload(&frame[4..]).unwrap();
                        log.push(format!("c>{}", message_kind(&m)));
                        server_actions.extend(s.handle(t, m).unwrap());
                    }
                    Action::OpenData { .. } => client_actions.extend(c.data_opened(t)),
                    Action::StartEngine => {
                        client_actions.extend(c.engine_done(t, full_side_report(HostRole::Client)))
                    }
                    Action::PeerResults(r) => assert_eq!(r.host, HostRole::Server),
                    Action::Close => log.push("c:close".into()),
                    other => panic!("client: {other:?}"),
                }
            }
            // The server's shell.
            for a in std::mem::take(&mut server_actions) {
                match a {
                    Action::Send(m) => {
                        log.push(format!("s>{}", message_kind(&m)));
                        client_actions.extend(c.handle(t, m).unwrap());
                    }
                    Action::RequestAdmission(_) => {
                        server_actions.extend(s.admitted(t, 1, token()));
                        server_actions.extend(s.data_ready(t));
                    }
                    Action::StartEngine => {
                        server_actions.extend(s.engine_done(t, full_side_report(HostRole::Server)))
                    }
                    Action::PeerResults(r) => assert_eq!(r.host, HostRole::Client),
                    Action::Close => log.push("s:close".into()),
                    other => panic!("server: {other:?}"),
                }
            }
        }
        assert_eq!(s.phase(), Phase::Done, "{log:?}");
        assert_eq!(c.phase(), Phase::Done, "{log:?}");
        assert_eq!(
            log,
            [
                "c>hello",
                "s>welcome",
                "c>test",
                "s>accepted",
                "s>ready",
                "c>start",
                "c>results",
                "s>results",
                "c>bye",
                "c:close",
                "s:close"
            ]
        );
    }

    #[test]
    fn results_frame_cap_bounds() {
        let spec = TestSpec::stream_default();
        assert_eq!(results_frame_cap(&spec), DEFAULT_MAX_FRAME_BYTES + 4096);
        let mut big = crate::testutil::full_spec();
        big.flows = 128;
        big.duration_ms = 3_600_000;
        big.interval_ms = Some(100);
        assert_eq!(results_frame_cap(&big), ABSOLUTE_MAX_FRAME_BYTES);
        let mut hostile = big.clone();
        hostile.flows = u32::MAX;
        hostile.duration_ms = u64::MAX;
        hostile.warmup_ms = u64::MAX;
        hostile.interval_ms = Some(0);
        assert_eq!(results_frame_cap(&hostile), ABSOLUTE_MAX_FRAME_BYTES);
        hostile.interval_ms = Some(1);
        assert_eq!(results_frame_cap(&hostile), ABSOLUTE_MAX_FRAME_BYTES);
    }

    #[test]
    fn names_and_texts() {
        assert_eq!(Phase::AwaitResults.to_string(), "await_results");
        for code in [
            ErrorCode::BadFrame,
            ErrorCode::UnexpectedMessage,
            ErrorCode::UnsupportedVersion,
            ErrorCode::InvalidSpec,
            ErrorCode::Timeout,
            ErrorCode::DataConnection,
            ErrorCode::Aborted,
            ErrorCode::Internal,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", error_code_name(code)));
        }
        for msg in all_messages() {
            let json = serde_json::to_value(&msg).unwrap();
            let tag = json.as_object().unwrap().keys().next().unwrap().clone();
            assert_eq!(tag, message_kind(&msg));
        }
        let e = SessionError::Refused(ErrorMsg {
            code: ErrorCode::InvalidSpec,
            field: Some("flows".into()),
            message: "flows = 0 is out of range".into(),
        });
        assert_eq!(
            e.to_string(),
            "peer reported invalid_spec (field flows): flows = 0 is out of range"
        );
        let e = SessionError::Unexpected {
            phase: Phase::AwaitTest,
            got: "start",
        };
        assert_eq!(
            e.to_string(),
            "unexpected `start` message in phase await_test"
        );
    }

    fn authed_server(nonce: u8) -> (ServerSession, Instant) {
        let keys = KeyTable::parse("alice 00112233445566778899aabbccddeeff\n").unwrap();
        let t0 = Instant::now();
        let s = ServerSession::new(t0, Timeouts::default(), Limits::default(), "srv".into())
            .with_auth(ServerAuth {
                nonce: Nonce([nonce; auth::NONCE_BYTES]),
                server_identity: "lab-1".into(),
                keys: Some(Arc::new(keys)),
            });
        (s, t0)
    }

    /// Run a client against `server` up to the `test` message; returns what the client sent.
    fn client_test_message(
        server: &mut ServerSession,
        t0: Instant,
        credentials: Option<(&str, &str)>,
    ) -> Result<Message, SessionError> {
        let (mut c, _) = ClientSession::new(
            t0,
            Timeouts::default(),
            TestSpec::stream_default(),
            "cli".into(),
        );
        if let Some((id, key)) = credentials {
            c = c.with_credentials(id.into(), Key::from_hex(key).unwrap());
        }
        let welcome = match server.handle(t0, hello()).unwrap().as_slice() {
            [Action::Send(w)] => w.clone(),
            other => panic!("{other:?}"),
        };
        match c.handle(t0, welcome)?.as_slice() {
            [Action::Send(m @ Message::Test(_))] => Ok(m.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn authenticated_handshake() {
        let (mut s, t0) = authed_server(7);
        let test = client_test_message(
            &mut s,
            t0,
            Some(("alice", "00112233445566778899aabbccddeeff")),
        )
        .unwrap();
        let a = s.handle(t0, test).unwrap();
        assert!(
            matches!(a.as_slice(), [Action::RequestAdmission(_)]),
            "{a:?}"
        );
        assert_eq!(s.identity(), Some("alice"));
    }

    #[test]
    fn authentication_failures() {
        // No credentials: the client refuses locally, naming the server.
        let (mut s, t0) = authed_server(7);
        let e = client_test_message(&mut s, t0, None).unwrap_err();
        assert!(matches!(e, SessionError::AuthRequired { .. }), "{e}");
        assert!(e.to_string().contains("lab-1"), "{e}");
        // A client that sends no proof anyway, a wrong key, or a replayed handshake.
        let (mut s, t0) = authed_server(7);
        s.handle(t0, hello()).unwrap();
        let bare = Message::Test(Box::new(TestRequest::unauthenticated(
            TestSpec::stream_default(),
        )));
        let e1 = s.handle(t0, bare).unwrap_err();
        let (mut s, t0) = authed_server(7);
        let wrong = client_test_message(
            &mut s,
            t0,
            Some(("alice", "ffffffffffffffffffffffffffffffff")),
        )
        .unwrap();
        let e2 = s.handle(t0, wrong).unwrap_err();
        let (mut s1, t0) = authed_server(7);
        let captured = client_test_message(
            &mut s1,
            t0,
            Some(("alice", "00112233445566778899aabbccddeeff")),
        )
        .unwrap();
        let (mut s2, t0) = authed_server(8);
        s2.handle(t0, hello()).unwrap();
        let e3 = s2.handle(t0, captured).unwrap_err();
        for e in [e1, e2, e3] {
            assert_eq!(e, SessionError::Auth(AuthError::Failed));
            let m = e.to_error_msg().unwrap();
            assert_eq!(m.code, ErrorCode::AuthFailed);
            assert_eq!(m.message, "authentication failed");
            assert_eq!(m.field, None);
        }
        assert_eq!(s2.phase(), Phase::Done);
    }

    #[test]
    fn welcome_nonce_must_be_hex() {
        let (mut c, t, _) = client();
        let e = c
            .handle(
                t,
                Message::Welcome(Welcome {
                    version: PROTOCOL_VERSION,
                    software: "srv".into(),
                    limits: Limits::default(),
                    nonce: "xyz".into(),
                    server_identity: "srv".into(),
                    auth_required: false,
                }),
            )
            .unwrap_err();
        assert!(matches!(e, SessionError::BadHello(_)), "{e}");
    }
}
