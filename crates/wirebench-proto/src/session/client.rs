//! The client's side of the control connection: [`ClientSession`].

use std::time::Instant;

use wirebench_model::abort::AbortReason;
use wirebench_model::side::SideReport;
use wirebench_model::spec::TestSpec;

use super::*;
use crate::auth::{self, Key, Nonce};
use crate::data::Token;
use crate::message::{Message, TestRequest, Welcome, HELLO_MAGIC, PROTOCOL_VERSION};

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

    /// The frame cap the shell should apply to incoming frames at `now`:
    /// [`DEFAULT_MAX_FRAME_BYTES`] until the test is accepted, then [`results_frame_cap`] for
    /// the time the test has run.
    pub fn frame_cap(&self, now: Instant) -> u32 {
        if self.test_id.is_some() {
            results_frame_cap(&self.spec, self.timers.elapsed(now))
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
                let wait = (self.timers.timeouts).data_connect_for(self.spec.setup_connections());
                self.timers.set_deadline(now, wait);
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

    /// The next instant `poll` has something to do; `None` when done.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.timers.next_wakeup(self.phase)
    }
}
