//! The daemon's side of a control connection: [`ServerSession`].

use std::sync::Arc;
use std::time::Instant;

use wirebench_model::abort::AbortReason;
use wirebench_model::side::SideReport;
use wirebench_model::spec::{Limits, TestSpec};

use super::*;
use crate::auth::{self, KeyTable, Nonce};
use crate::data::Token;
use crate::message::{
    Accepted, Busy, BusyScope, Message, TestRequest, Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
};

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

    /// The frame cap the shell should apply to incoming frames at `now`:
    /// [`DEFAULT_MAX_FRAME_BYTES`] until the test is admitted, then [`results_frame_cap`] of
    /// the spec for the time the test has run.
    pub fn frame_cap(&self, now: Instant) -> u32 {
        match (&self.spec, self.phase) {
            (
                Some(spec),
                Phase::AwaitData
                | Phase::AwaitStart
                | Phase::Running
                | Phase::AwaitResults
                | Phase::Done,
            ) => results_frame_cap(spec, self.timers.elapsed(now)),
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
        let connections = self.spec.as_ref().map_or(0, |s| s.setup_connections());
        let wait = self.timers.timeouts.data_connect_for(connections);
        self.timers.set_deadline(now, wait);
        vec![Action::Send(Message::Accepted(Accepted {
            test_id,
            token: token.to_hex(),
        }))]
    }

    /// The shell refused the test for lack of capacity (`scope` says whose cap): send
    /// `busy` and close. Does nothing outside [`Phase::AwaitAccept`].
    pub fn busy(
        &mut self,
        running: u32,
        cap: u32,
        retry_after_ms: u64,
        scope: BusyScope,
    ) -> Vec<Action> {
        if self.phase != Phase::AwaitAccept {
            return Vec::new();
        }
        self.phase = Phase::Done;
        vec![
            Action::Send(Message::Busy(Busy {
                running,
                cap,
                retry_after_ms,
                scope,
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
    pub fn abort(&mut self, reason: AbortReason) -> Vec<Action> {
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
