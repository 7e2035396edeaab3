//! Third-party tests, the coordinator's side: run a test between two daemons without
//! carrying any of its data.
//!
//! 1. The coordinator asks the **target** daemon (`-H`) for a ticket for the spec
//!    (`ticket_request`, authenticated with its credentials). The target checks the spec
//!    against its limits now and answers with a single-use ticket bound to the coordinator's
//!    identity and the spec, valid for 30 s.
//! 2. The coordinator asks the **agent** daemon (`--from`) to run the spec as the client
//!    against the target (`third_party`, authenticated, with the target's address and the
//!    ticket). The agent checks that it allows third-party tests, the spec against its
//!    limits and its caps for this identity, then runs a normal client session against the
//!    target, presenting the ticket; the target admits it once, as the coordinator's
//!    identity, within its own limits.
//! 3. The agent relays the live intervals and finally both ends' reports (`relayed`).
//!
//! Every failure names the daemon it came from ([`NetError::ThirdParty`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wirebench_model::abort::AbortReason;
use wirebench_model::error::ThirdPartyEnd;
use wirebench_proto::data::Token;
use wirebench_proto::message::{IntervalMsg, RelayOutcome, Relayed};
use wirebench_proto::session::{Action, ClientSession, Phase};

use crate::client::{ClientConfig, ClientRun, Outcome};
use crate::conn::Control;
use crate::NetError;

/// Run `cfg.spec` from the agent daemon at `cfg.server` against the daemon at `target` (the
/// address as the agent reaches it; the coordinator must reach it there too, for the
/// ticket). `interrupt` stops the test (its partial figures still come back);
/// `on_interval` receives the live samples of both ends the agent relays.
pub fn run(
    cfg: &ClientConfig,
    target: SocketAddr,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<ClientRun, NetError> {
    let at = |end: ThirdPartyEnd, addr: SocketAddr| {
        move |e: NetError| NetError::ThirdParty {
            end,
            addr,
            source: Box::new(e),
        }
    };
    let mut tcfg = cfg.clone();
    tcfg.server = target;
    let ticket = request_ticket(&tcfg, interrupt).map_err(at(ThirdPartyEnd::Target, target))?;
    let relayed = relay(cfg, target, ticket, interrupt, on_interval)
        .map_err(at(ThirdPartyEnd::Agent, cfg.server))?;
    let outcome = match relayed.outcome {
        RelayOutcome::Completed => Outcome::Completed,
        RelayOutcome::Interrupted => Outcome::Interrupted,
        RelayOutcome::Aborted { reason } => Outcome::Aborted(reason),
        RelayOutcome::Failed { error } => {
            return Err(at(ThirdPartyEnd::Target, target)(NetError::Relayed(error)))
        }
    };
    Ok(ClientRun {
        outcome,
        client: relayed.client,
        server: relayed.server,
        iperf3: None,
    })
}

/// Ask the daemon at `cfg.server` for a ticket for `cfg.spec`.
fn request_ticket(cfg: &ClientConfig, interrupt: &AtomicBool) -> Result<Token, NetError> {
    let (mut conn, sess, first) = crate::client::open_session(cfg)?;
    let mut sess = sess.ticket_request();
    let mut ticket = None;
    let mut on_action = |a: Action| {
        if let Action::TicketIssued(t) = a {
            ticket = Some(t);
        }
    };
    converse(cfg, &mut conn, &mut sess, first, interrupt, &mut on_action)?;
    ticket.ok_or(NetError::PeerClosed)
}

/// Ask the agent at `cfg.server` to run the test against `target` with `ticket`.
fn relay(
    cfg: &ClientConfig,
    target: SocketAddr,
    ticket: Token,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<Relayed, NetError> {
    let (mut conn, sess, first) = crate::client::open_session(cfg)?;
    let mut sess = sess.third_party(target, ticket);
    let mut relayed = None;
    let mut on_action = |a: Action| match a {
        Action::PeerInterval(m) => on_interval(&m),
        Action::Relayed(r) => relayed = Some(*r),
        _ => {}
    };
    converse(cfg, &mut conn, &mut sess, first, interrupt, &mut on_action)?;
    relayed.ok_or(NetError::PeerClosed)
}

/// Drive a session that runs no engine until it is done: send what it says, hand every
/// other action to `on_action`. An interrupt before the test runs ends it; while the agent
/// runs it, the agent is told to stop and the session goes on to its account.
fn converse(
    cfg: &ClientConfig,
    conn: &mut Control,
    sess: &mut ClientSession,
    first: Vec<Action>,
    interrupt: &AtomicBool,
    on_action: &mut dyn FnMut(Action),
) -> Result<(), NetError> {
    let mut pending: std::collections::VecDeque<Action> = first.into();
    let mut interrupted = false;
    loop {
        while let Some(a) = pending.pop_front() {
            match a {
                Action::Send(m) => conn.send(&m)?,
                Action::Close => return Ok(()),
                other => on_action(other),
            }
        }
        if sess.phase() == Phase::Done {
            return Ok(());
        }
        if interrupt.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            if sess.phase() != Phase::Running {
                let _ = conn.send(&wirebench_proto::message::Message::Abort(
                    wirebench_proto::message::AbortMsg {
                        reason: AbortReason::Interrupted,
                    },
                ));
                return Err(NetError::Interrupted);
            }
            pending.extend(sess.abort(AbortReason::Interrupted));
            continue;
        }
        let now = Instant::now();
        pending.extend(sess.poll(now)?);
        let mut until = now + crate::end::CONTROL_WAIT;
        if let Some(w) = sess.next_wakeup() {
            until = until.min(w.max(now + Duration::from_millis(1)));
        }
        conn.set_max_frame(sess.frame_cap(Instant::now()));
        match conn.recv(until) {
            Ok(Some(msg)) => pending.extend(sess.handle(Instant::now(), msg)?),
            Ok(None) => {}
            Err(e) if sess.phase() == Phase::AwaitWelcome => {
                return Err(match e {
                    NetError::PeerClosed | NetError::Frame(_) => NetError::NotWirebench {
                        addr: cfg.server,
                        seen: conn.first_bytes().to_vec(),
                    },
                    e => e,
                })
            }
            Err(e) => return Err(e),
        }
    }
}
