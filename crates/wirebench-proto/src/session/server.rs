//! The daemon's side of a control connection: [`ServerSession`].

use std::sync::{Arc, Mutex};
use std::time::Instant;

use wirebench_model::abort::AbortReason;
use wirebench_model::side::SideReport;
use wirebench_model::spec::{Limits, TestSpec};

use super::*;
use crate::auth::{self, AuthProof, KeyTable, Nonce};
use crate::data::Token;
use crate::message::{
    Accepted, Busy, BusyScope, Message, Relayed, Relaying, TestRequest, ThirdPartyRequest,
    TicketMsg, Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
};
use crate::ticket::{TicketBook, TicketError};

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
    /// A third-party test: this daemon runs the client; the peer only watches.
    relay: bool,
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
    /// The daemon's third-party tickets (shared by its connections); `None`: this daemon
    /// neither issues nor accepts tickets.
    pub tickets: Option<Arc<Mutex<TicketBook>>>,
    /// Fresh random bytes of this connection: the ticket it issues, if it is asked for one.
    pub ticket_seed: Token,
    /// Run third-party tests for authenticated clients (`serve --allow-third-party`).
    pub allow_third_party: bool,
}

impl Default for ServerAuth {
    /// No authentication, an all-zero nonce: for tests of the state machine only.
    fn default() -> Self {
        ServerAuth {
            nonce: Nonce([0; auth::NONCE_BYTES]),
            server_identity: "wirebench".into(),
            keys: None,
            tickets: None,
            ticket_seed: Token([0; crate::data::TOKEN_BYTES]),
            allow_third_party: false,
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
            relay: false,
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
            (AwaitTest, Message::Test(req)) => self.on_test(now, *req),
            (AwaitTest, Message::TicketRequest(req)) => self.on_ticket_request(now, *req),
            (AwaitTest, Message::ThirdParty(req)) => self.on_third_party(*req),
            (Running, m @ (Message::Interval(_) | Message::Results(_))) if self.relay => {
                Err(SessionError::Unexpected {
                    phase: Running,
                    got: message_kind(&m),
                })
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

    /// Authenticate the client's proof of `spec` (bound to `context`, see
    /// [`auth::bound_identity`]), when the daemon has keys.
    fn authenticate(
        &mut self,
        proof: Option<&AuthProof>,
        spec: &TestSpec,
        context: &str,
    ) -> Result<(), SessionError> {
        if let Some(keys) = &self.auth.keys {
            let bound = auth::bound_identity(&self.auth.server_identity, context);
            let id = keys.verify(proof, &self.auth.nonce, &bound, spec)?;
            self.identity = Some(id);
        }
        Ok(())
    }

    fn on_test(&mut self, now: Instant, req: TestRequest) -> Result<Vec<Action>, SessionError> {
        let TestRequest { spec, auth, ticket } = req;
        match ticket {
            // A third-party ticket stands for the identity it was issued to.
            Some(ticket) => {
                if auth.is_some() {
                    return Err(SessionError::BadMessage(
                        "a test carries a proof or a ticket, not both".into(),
                    ));
                }
                let ticket = Token::from_hex(&ticket)
                    .map_err(|e| SessionError::BadMessage(format!("test.ticket: {e}")))?;
                let Some(book) = &self.auth.tickets else {
                    return Err(SessionError::Ticket(TicketError::Unknown));
                };
                let mut book = book.lock().unwrap_or_else(|p| p.into_inner());
                self.identity = book.redeem(now, &ticket, &spec)?;
            }
            // Authenticate before looking at the spec's values.
            None => self.authenticate(auth.as_ref(), &spec, "")?,
        }
        spec.validate(&self.limits)?;
        let spec = Box::new(spec);
        self.spec = Some(spec.clone());
        self.phase = Phase::AwaitAccept;
        Ok(vec![Action::RequestAdmission(spec)])
    }

    fn on_ticket_request(
        &mut self,
        now: Instant,
        req: TestRequest,
    ) -> Result<Vec<Action>, SessionError> {
        let TestRequest { spec, auth, ticket } = req;
        if ticket.is_some() {
            return Err(SessionError::BadMessage(
                "a ticket request carries no ticket".into(),
            ));
        }
        self.authenticate(auth.as_ref(), &spec, auth::TICKET_CONTEXT)?;
        spec.validate(&self.limits)?;
        let Some(book) = &self.auth.tickets else {
            return Err(SessionError::NotPermitted(
                "this daemon issues no third-party tickets".into(),
            ));
        };
        let ticket = self.auth.ticket_seed;
        let lifetime = book.lock().unwrap_or_else(|p| p.into_inner()).issue(
            now,
            ticket,
            self.identity.clone(),
            &spec,
        )?;
        self.phase = Phase::Done;
        Ok(vec![
            Action::Send(Message::Ticket(TicketMsg {
                ticket: ticket.to_hex(),
                expires_in_ms: u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX),
            })),
            Action::Close,
        ])
    }

    fn on_third_party(&mut self, req: ThirdPartyRequest) -> Result<Vec<Action>, SessionError> {
        let ThirdPartyRequest {
            spec,
            auth,
            target,
            ticket,
        } = req;
        if self.auth.keys.is_none() {
            return Err(SessionError::NotPermitted(
                "third-party tests need an authenticated client, and this daemon has no key \
                 file (serve --auth-keys)"
                    .into(),
            ));
        }
        let context = auth::third_party_context(&target, &ticket);
        self.authenticate(auth.as_ref(), &spec, &context)?;
        if !self.auth.allow_third_party {
            return Err(SessionError::NotPermitted(
                "third-party tests are off on this daemon (serve --allow-third-party)".into(),
            ));
        }
        spec.validate(&self.limits)?;
        let target: std::net::SocketAddr = target.parse().map_err(|_| {
            SessionError::BadMessage(format!(
                "third_party.target {} is not IP:PORT",
                clip(&target, 64)
            ))
        })?;
        let ticket = Token::from_hex(&ticket)
            .map_err(|e| SessionError::BadMessage(format!("third_party.ticket: {e}")))?;
        let spec = Box::new(spec);
        self.spec = Some(spec.clone());
        self.relay = true;
        self.phase = Phase::AwaitAccept;
        Ok(vec![Action::RequestThirdParty {
            spec,
            target,
            ticket,
        }])
    }

    /// A third-party test was admitted (this daemon runs its client): tell the client and
    /// enter [`Phase::Running`] (heartbeats both ways, the client may `abort`). Does nothing
    /// outside [`Phase::AwaitAccept`] of a third-party request.
    pub fn relaying(&mut self, now: Instant, test_id: u64) -> Vec<Action> {
        if self.phase != Phase::AwaitAccept || !self.relay {
            return Vec::new();
        }
        self.phase = Phase::Running;
        self.timers.enter_running(now);
        vec![Action::Send(Message::Relaying(Relaying { test_id }))]
    }

    /// The third-party test ended: send its account and close. Does nothing outside
    /// [`Phase::Running`] of a third-party test.
    pub fn relay_done(&mut self, relayed: Relayed) -> Vec<Action> {
        if self.phase != Phase::Running || !self.relay {
            return Vec::new();
        }
        self.phase = Phase::Done;
        vec![
            Action::Send(Message::Relayed(Box::new(relayed))),
            Action::Close,
        ]
    }

    /// True for a third-party test (this daemon runs the client).
    pub fn is_relay(&self) -> bool {
        self.relay
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
