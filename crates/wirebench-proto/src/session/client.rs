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
    mode: Mode,
}

/// What a client session asks the server for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// A test, authenticated with the credentials (if any).
    Test,
    /// A test, presenting a third-party ticket instead of credentials.
    Ticketed(Token),
    /// A third-party ticket for the spec.
    TicketRequest,
    /// A third-party test: the server (the agent) runs the spec against `target`.
    ThirdParty {
        /// The target, as the agent reaches it.
        target: std::net::SocketAddr,
        /// The target's ticket.
        ticket: Token,
    },
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
            mode: Mode::Test,
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

    /// Present `ticket` (issued by this server for this spec) instead of credentials: the
    /// agent's side of a third-party test.
    pub fn with_ticket(mut self, ticket: Token) -> Self {
        self.mode = Mode::Ticketed(ticket);
        self
    }

    /// Ask for a third-party ticket for the spec instead of running it: the session ends
    /// with [`Action::TicketIssued`].
    pub fn ticket_request(mut self) -> Self {
        self.mode = Mode::TicketRequest;
        self
    }

    /// Ask the server (the agent) to run the spec as the client against `target`,
    /// presenting `ticket` there: the session ends with [`Action::Relayed`].
    pub fn third_party(mut self, target: std::net::SocketAddr, ticket: Token) -> Self {
        self.mode = Mode::ThirdParty { target, ticket };
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
            let cap = results_frame_cap(&self.spec, self.timers.elapsed(now));
            match self.mode {
                // The agent's account carries both ends' reports.
                Mode::ThirdParty { .. } => cap.saturating_mul(2).min(ABSOLUTE_MAX_FRAME_BYTES),
                _ => cap,
            }
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
                let request = self.request(&w, &nonce)?;
                // Refuse locally what the server would refuse anyway, with the same message.
                self.spec.validate(&w.limits)?;
                self.server = Some(w);
                self.phase = AwaitAccept;
                Ok(vec![Action::Send(request)])
            }
            (AwaitWelcome | AwaitAccept, Message::Busy(b)) => Err(SessionError::Busy(b)),
            (AwaitAccept, Message::Ticket(t)) if self.mode == Mode::TicketRequest => {
                let ticket = Token::from_hex(&t.ticket)
                    .map_err(|e| SessionError::BadMessage(format!("ticket.ticket: {e}")))?;
                self.phase = Done;
                Ok(vec![Action::TicketIssued(ticket), Action::Close])
            }
            (AwaitAccept, Message::Relaying(r)) if self.is_third_party() => {
                self.test_id = Some(r.test_id);
                self.phase = Running;
                self.timers.enter_running(now);
                Ok(Vec::new())
            }
            (Running, Message::Relayed(r)) if self.is_third_party() => {
                self.phase = Done;
                Ok(vec![Action::Relayed(r), Action::Close])
            }
            (AwaitAccept, Message::Accepted(a)) if self.runs_engine() => {
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
            (Running, Message::Results(r)) if !self.peer_results && self.runs_engine() => {
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

    fn is_third_party(&self) -> bool {
        matches!(self.mode, Mode::ThirdParty { .. })
    }

    /// This end runs an engine (a test of its own, with credentials or a ticket).
    fn runs_engine(&self) -> bool {
        matches!(self.mode, Mode::Test | Mode::Ticketed(_))
    }

    /// The request to send after the welcome `w`, proved when we have credentials.
    fn request(&self, w: &Welcome, nonce: &Nonce) -> Result<Message, SessionError> {
        let context = match &self.mode {
            Mode::Test | Mode::Ticketed(_) => String::new(),
            Mode::TicketRequest => auth::TICKET_CONTEXT.to_string(),
            Mode::ThirdParty { target, ticket } => {
                auth::third_party_context(&target.to_string(), &ticket.to_hex())
            }
        };
        let auth = match (&self.credentials, &self.mode) {
            // A ticket stands for the identity it was issued to.
            (_, Mode::Ticketed(_)) => None,
            (Some((id, key)), _) => {
                let bound = auth::bound_identity(&w.server_identity, &context);
                Some(auth::prove(key, nonce, id, &bound, &self.spec))
            }
            (None, _) if w.auth_required || self.is_third_party() => {
                return Err(SessionError::AuthRequired {
                    server: clip(&w.server_identity, 64),
                })
            }
            (None, _) => None,
        };
        let spec = self.spec.clone();
        Ok(match &self.mode {
            Mode::Test => Message::Test(Box::new(TestRequest {
                spec,
                auth,
                ticket: None,
            })),
            Mode::Ticketed(t) => Message::Test(Box::new(TestRequest {
                spec,
                auth: None,
                ticket: Some(t.to_hex()),
            })),
            Mode::TicketRequest => Message::TicketRequest(Box::new(TestRequest {
                spec,
                auth,
                ticket: None,
            })),
            Mode::ThirdParty { target, ticket } => {
                Message::ThirdParty(Box::new(crate::message::ThirdPartyRequest {
                    spec,
                    auth,
                    target: target.to_string(),
                    ticket: ticket.to_hex(),
                }))
            }
        })
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
