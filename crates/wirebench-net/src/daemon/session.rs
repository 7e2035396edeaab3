//! One control connection's session: the protocol state machine driven over the framed
//! connection, admission of its test, collecting the test's data connections, binding UDP
//! flows, running the server's engine, relaying intervals, and recording the test.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rand::RngCore;
use wirebench_engine::rr::CrrServerFlow;
use wirebench_engine::RatePolicy;
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, SideReport};
use wirebench_model::spec::TestSpec;
use wirebench_model::text::escape;
use wirebench_profile::WindowProfile;
use wirebench_proto::auth::{Nonce, NONCE_BYTES};
use wirebench_proto::data::Token;
use wirebench_proto::frame::DEFAULT_MAX_FRAME_BYTES;
use wirebench_proto::message::{BusyScope, IntervalMsg, Message, RelayOutcome};
use wirebench_proto::session::{Action, Phase, ServerAuth, ServerSession, SessionError};

use super::accept::ConnSlot;
use super::lograte::{log_refused, log_refused_as};
use super::records::{record, RecordStatus, TestRecord};
use super::relay::Relay;
use super::route::{
    finishing, join_group, open_group, Admission, DataConn, GroupJoin, PendingTest, CRR_QUEUE,
    FINISHING_GRACE,
};
use super::State;
use crate::conn::Control;
use crate::end::{EndParams, EngineRun};
use crate::workload::{setup_of, EndSockets};
use crate::{sockopt, udpsetup, NetError};

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One control session's view of its test.
struct TestState<'a> {
    admission: Option<Admission<'a>>,
    slot: ConnSlot,
    test_id: u64,
    spec: Option<TestSpec>,
    data_rx: Option<mpsc::Receiver<DataConn>>,
    /// The sockets of the setup, until the engine takes them.
    sockets: EndSockets,
    data_slots: Vec<ConnSlot>,
    engine: Option<EngineRun>,
    server_report: Option<SideReport>,
    client_report: Option<SideReport>,
    admitted_unix_ms: u64,
    /// Why this end stopped the test itself (limit, shutdown), if it did.
    local_abort: Option<AbortReason>,
    /// The control connection's peer (the only host UDP flows may be bound to).
    peer: SocketAddr,
    /// This end's profile, prepared once the data connections are in, until the engine
    /// takes it.
    profile: Option<WindowProfile>,
    /// This test's share of the daemon's profile cap, held until the session ends.
    profile_slot: Option<ProfileSlot<'a>>,
    /// A third-party test: this daemon's client run against the target.
    relay: Option<Relay>,
    /// How the third-party test ended, once it has.
    relay_outcome: Option<RelayOutcome>,
}

/// One of the daemon's `max_profiles` slots; released when dropped.
struct ProfileSlot<'a>(&'a AtomicU32);

impl Drop for ProfileSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether this peer's test may be profiled, and the slot it takes: only with
/// `--allow-profile`, for an authenticated peer (or any, with `profile_unauthenticated`),
/// within `max_profiles`. The refusal is logged with its reason.
fn profile_slot<'a>(state: &'a State, authenticated: bool) -> Option<ProfileSlot<'a>> {
    if !state.cfg.allow_profile {
        return None;
    }
    if !authenticated && !state.cfg.profile_unauthenticated {
        tracing::info!("profile refused: the peer did not authenticate");
        return None;
    }
    let cap = state.cfg.max_profiles;
    let taken = state
        .profiles
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < cap).then_some(n + 1)
        });
    match taken {
        Ok(_) => Some(ProfileSlot(&state.profiles)),
        Err(_) => {
            tracing::info!(
                max_profiles = cap,
                "profile refused: as many profiles run already"
            );
            None
        }
    }
}

pub(super) fn control_session(
    stream: TcpStream,
    peer: SocketAddr,
    state: &Arc<State>,
    slot: ConnSlot,
) {
    let t = &state.cfg.timeouts;
    let mut conn = Control::new(stream, DEFAULT_MAX_FRAME_BYTES);
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut nonce);
    let mut ticket_seed = [0u8; 16];
    rand::rng().fill_bytes(&mut ticket_seed);
    let mut sess = ServerSession::new(
        Instant::now(),
        *t,
        state.cfg.limits.clone(),
        crate::software(),
    )
    .with_auth(ServerAuth {
        nonce: Nonce(nonce),
        server_identity: state.cfg.server_identity.clone(),
        keys: state.cfg.keys.clone(),
        tickets: Some(Arc::clone(&state.tickets)),
        ticket_seed: Token(ticket_seed),
        allow_third_party: state.cfg.allow_third_party,
    });
    let mut ts = TestState {
        admission: None,
        slot,
        test_id: 0,
        spec: None,
        data_rx: None,
        sockets: EndSockets::default(),
        data_slots: Vec::new(),
        engine: None,
        server_report: None,
        client_report: None,
        admitted_unix_ms: 0,
        local_abort: None,
        peer,
        profile: None,
        profile_slot: None,
        relay: None,
        relay_outcome: None,
    };
    let result = drive(&mut conn, &mut sess, &mut ts, state);
    // A third-party test ends with its client (this returns once it has).
    let third_party_target = ts.relay.take().map(|r| r.target);
    let failure = result.as_ref().err().map(NetError::abort_reason);
    if let Err(e) = &result {
        let msg = match e {
            NetError::Session(se) => se.to_error_msg(),
            NetError::Frame(fe) => Some(fe.to_error_msg()),
            _ => None,
        };
        if let Some(em) = msg {
            let _ = conn.send(&Message::Error(em));
        }
        if matches!(e, NetError::Session(SessionError::Auth(_))) {
            log_refused_as(
                state,
                peer,
                super::RefusalReason::Authentication,
                "authentication failed",
            );
        } else if ts.admission.is_some() {
            let e = escape(&e.to_string());
            tracing::info!(%peer, test_id = ts.test_id, "session ended: {e}");
        } else {
            let e = escape(&e.to_string());
            log_refused(state, peer, &format!("session ended before admission: {e}"));
        }
    }
    if let Some(engine) = ts.engine.as_mut() {
        if ts.server_report.is_none() {
            let reason = failure.clone().unwrap_or(AbortReason::Unspecified);
            ts.server_report = engine.abort_and_wait(reason, Duration::from_secs(10));
        }
    }
    // Free the test's slot before recording it: a client that saw the test end (or reads
    // the record) may start its next test at once.
    let admitted = ts.admission.take().is_some();
    if let Some(spec) = ts.spec.take() {
        if admitted {
            // The daemon's own abort (a policy limit, its shutdown) is the cause: a control
            // connection the client closed after hearing of it is the consequence.
            let (status, reason) = match (&failure, &ts.local_abort) {
                (_, Some(r)) => (RecordStatus::Aborted, Some(r.clone())),
                (None, None) if matches!(ts.relay_outcome, Some(RelayOutcome::Failed { .. })) => {
                    let detail = match &ts.relay_outcome {
                        Some(RelayOutcome::Failed { error }) => error.message.clone(),
                        _ => String::new(),
                    };
                    (
                        RecordStatus::Failed,
                        Some(AbortReason::EngineFailed { detail }),
                    )
                }
                (Some(f), None) => (RecordStatus::Failed, Some(f.clone())),
                (None, None) => {
                    let aborted = [&ts.server_report, &ts.client_report]
                        .into_iter()
                        .flatten()
                        .find_map(|r| r.aborted().cloned());
                    match (aborted, &ts.server_report) {
                        (Some(why), _) => (RecordStatus::Aborted, Some(why)),
                        (None, None) => (RecordStatus::Aborted, Some(AbortReason::Unspecified)),
                        (None, Some(_)) => (RecordStatus::Completed, None),
                    }
                }
            };
            record(
                state,
                TestRecord {
                    test_id: ts.test_id,
                    peer,
                    identity: sess.identity().map(str::to_string),
                    admitted_unix_ms: ts.admitted_unix_ms,
                    ended_unix_ms: unix_ms(),
                    spec,
                    status,
                    reason,
                    server: ts.server_report.take(),
                    client: ts.client_report.take(),
                    iperf3: None,
                    third_party_target,
                },
            );
        }
    }
}

/// Take a test slot (the server's cap, then the peer's), or say which cap is full: `(tests
/// running, cap, scope)`. A slot held by a finishing test (results exchanged), or by the
/// same peer, is waited for up to [`FINISHING_GRACE`]; a slot another peer's running test
/// holds is not.
pub(super) fn admit(
    state: &State,
    peer_key: &str,
    group: Option<(u64, u64)>,
) -> Result<Option<(u64, u64)>, (u32, u32, BusyScope)> {
    let cap = state.cfg.limits.max_concurrent_tests;
    let peer_cap = state.cfg.max_tests_per_peer.max(1);
    let deadline = Instant::now() + FINISHING_GRACE;
    loop {
        let prev = state.running.fetch_add(1, Ordering::AcqRel);
        let refusal = if state.shutdown.load(Ordering::Relaxed) {
            return {
                state.running.fetch_sub(1, Ordering::AcqRel);
                Err((prev, cap, BusyScope::Server))
            };
        } else if prev >= cap {
            Some((prev, cap, BusyScope::Server, finishing(state, None)))
        } else if let Some(join) = group
            .map(|(g, flows)| join_group(state, peer_key, g, flows))
            .filter(|j| *j != GroupJoin::Absent)
        {
            if join == GroupJoin::Joined {
                // A later test of a running group: the group already holds the peer's slot.
                return Ok(group);
            }
            // A running group without room: refused at once. Waiting for a peer slot of its
            // own would admit it only once its group (a load) had ended.
            state.running.fetch_sub(1, Ordering::AcqRel);
            return Err((1, peer_cap, BusyScope::Peer));
        } else {
            let peer_prev = match state.per_peer.lock() {
                Ok(mut m) => {
                    let c = m.entry(peer_key.to_string()).or_insert(0);
                    let prev = *c;
                    if prev < peer_cap {
                        *c += 1;
                    }
                    prev
                }
                Err(_) => peer_cap,
            };
            (peer_prev >= peer_cap).then(|| {
                (
                    peer_prev,
                    peer_cap,
                    BusyScope::Peer,
                    finishing(state, Some(peer_key)),
                )
            })
        };
        let Some((prev, cap, scope, finishing_now)) = refusal else {
            // The peer slot taken: the group's, when this test opens one.
            return Ok(group.filter(|(g, flows)| open_group(state, peer_key, *g, *flows)));
        };
        state.running.fetch_sub(1, Ordering::AcqRel);
        // The peer's own slot is waited for even when not yet marked finishing: a client
        // that starts its next test as soon as it has the results can be here before its
        // previous session has read the client's results and marked itself finishing.
        let wait = finishing_now > 0 || scope == BusyScope::Peer;
        if !wait || Instant::now() >= deadline {
            return Err((prev, cap, scope));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn drive<'a>(
    conn: &mut Control,
    sess: &mut ServerSession,
    ts: &mut TestState<'a>,
    state: &'a State,
) -> Result<(), NetError> {
    loop {
        let now = Instant::now();
        if state.shutdown.load(Ordering::Relaxed) && ts.local_abort.is_none() {
            let reason = AbortReason::ServerShutdown;
            ts.local_abort = Some(reason.clone());
            let acts = sess.abort(reason);
            if execute(conn, sess, ts, state, acts)? {
                return Ok(());
            }
        }
        // Phase-specific work that is not driven by control frames.
        if sess.phase() == Phase::AwaitData && collect_data(ts, state)? {
            if let Some(spec) = ts.spec.as_ref() {
                let pinned = spec.common.server_cpu.map(|c| c as usize);
                if spec.common.profile_hz.is_some() {
                    ts.profile_slot = profile_slot(state, sess.identity().is_some());
                }
                let mut spec = spec.clone();
                // The rate a client may ask for is capped (the report's freq_hz says it).
                spec.common.profile_hz = spec
                    .common
                    .profile_hz
                    .map(|hz| hz.min(state.cfg.max_profile_hz.max(1)));
                ts.profile = crate::end::prepare_profile(&spec, pinned, ts.profile_slot.is_some());
            }
            let acts = sess.data_ready(Instant::now());
            if execute(conn, sess, ts, state, acts)? {
                return Ok(());
            }
        }
        if let Some(engine) = ts.engine.as_mut() {
            while let Ok(sample) = engine.intervals.try_recv() {
                conn.send(&Message::Interval(IntervalMsg {
                    host: HostRole::Server,
                    sample,
                }))?;
            }
            if ts.server_report.is_none() {
                if let Some(report) = engine.try_finish() {
                    tracing::debug!(test_id = ts.test_id, "engine finished");
                    ts.server_report = Some(report.clone());
                    if ts.client_report.is_some() {
                        if let Some(a) = ts.admission.as_mut() {
                            a.mark_finishing();
                        }
                    }
                    let mut acts = Vec::new();
                    // The engine stopped on a policy limit: tell the client to stop too.
                    if let Some(why @ AbortReason::LimitExceeded { .. }) = report.aborted() {
                        if ts.local_abort.is_none() {
                            ts.local_abort = Some(why.clone());
                            acts.extend(sess.abort(why.clone()));
                        }
                    }
                    acts.extend(sess.engine_done(now, report));
                    if execute(conn, sess, ts, state, acts)? {
                        return Ok(());
                    }
                }
            }
        }
        if relay_step(conn, sess, ts, state)? {
            return Ok(());
        }
        let acts = sess.poll(now)?;
        if execute(conn, sess, ts, state, acts)? {
            return Ok(());
        }
        let step = if sess.phase() == Phase::AwaitData {
            crate::end::SHORT_WAIT
        } else {
            match ts.engine.as_ref() {
                Some(e) if ts.server_report.is_none() => e.wait_step(now),
                _ => crate::end::CONTROL_WAIT,
            }
        };
        let mut until = now + step;
        if let Some(w) = sess.next_wakeup() {
            until = until.min(w.max(now + Duration::from_millis(1)));
        }
        // Results frames of a big test may exceed the default cap; the session knows its size.
        conn.set_max_frame(sess.frame_cap(Instant::now()));
        if let Some(msg) = conn.recv(until)? {
            let acts = sess.handle(Instant::now(), msg)?;
            if execute(conn, sess, ts, state, acts)? {
                return Ok(());
            }
        }
    }
}

/// A third-party test: relay its live samples, and its account once it ended. Returns true
/// when the session is over.
fn relay_step<'a>(
    conn: &mut Control,
    sess: &mut ServerSession,
    ts: &mut TestState<'a>,
    state: &'a State,
) -> Result<bool, NetError> {
    let Some(relay) = ts.relay.as_mut() else {
        return Ok(false);
    };
    for m in relay.intervals() {
        conn.send(&Message::Interval(m))?;
    }
    let Some(relayed) = relay.try_finish() else {
        return Ok(false);
    };
    if let RelayOutcome::Failed { error } = &relayed.outcome {
        let e = escape(&error.message);
        tracing::info!(test_id = ts.test_id, "third-party test failed: {e}");
    }
    ts.client_report = relayed.client.clone();
    ts.server_report = relayed.server.clone();
    ts.relay_outcome = Some(relayed.outcome.clone());
    if let Some(a) = ts.admission.as_mut() {
        a.mark_finishing();
    }
    let acts = sess.relay_done(relayed);
    execute(conn, sess, ts, state, acts)
}

/// Admit a third-party test (this daemon's caps, for the requesting peer) and start its
/// client against `target`.
fn start_relay<'a>(
    sess: &mut ServerSession,
    ts: &mut TestState<'a>,
    state: &'a State,
    (spec, target, ticket): (TestSpec, SocketAddr, Token),
) -> Result<Vec<Action>, NetError> {
    let peer_key = peer_key(sess, ts.peer);
    if let Err((prev, cap, scope)) = admit(state, &peer_key, None) {
        state.refusals.count(super::RefusalReason::of_busy(scope));
        return Ok(sess.busy(prev, cap, 1000, scope));
    }
    let _ = ts.slot.end_handshake();
    let mut raw = [0u8; 16];
    rand::rng().fill_bytes(&mut raw);
    ts.admission = Some(Admission {
        state,
        token: Token(raw),
        peer_key,
        finishing: false,
        group: None,
    });
    ts.test_id = state.next_id.fetch_add(1, Ordering::Relaxed);
    ts.admitted_unix_ms = unix_ms();
    let identity = escape(sess.identity().unwrap_or("-"));
    tracing::info!(
        peer = %ts.peer,
        test_id = ts.test_id,
        %target,
        "third-party test for {identity}: running the client against {target}"
    );
    ts.spec = Some(spec.clone());
    ts.relay = Some(
        Relay::start(spec, target, ticket, state.cfg.timeouts)
            .map_err(NetError::io("starting the third-party client"))?,
    );
    Ok(sess.relaying(Instant::now(), ts.test_id))
}

/// The peer a test counts against: its identity, else its source address.
fn peer_key(sess: &ServerSession, peer: SocketAddr) -> String {
    match sess.identity() {
        Some(id) => format!("id:{id}"),
        None => format!("ip:{}", peer.ip().to_canonical()),
    }
}

/// Collect the admitted test's data connections; once all have arrived, configure them
/// (socket options, UDP binding, CRR routing) and return true.
fn collect_data(ts: &mut TestState<'_>, state: &State) -> Result<bool, NetError> {
    let Some(spec) = ts.spec.clone() else {
        return Ok(false);
    };
    if let Some(rx) = &ts.data_rx {
        let count = spec.connection_count();
        while let Ok((flow, stream, slot)) = rx.try_recv() {
            // A flow id out of range or seen before is closed (dropped) here.
            if flow < count && !ts.sockets.conns.iter().any(|(f, _)| *f == flow) {
                ts.sockets.conns.push((flow, stream));
                ts.data_slots.push(slot);
            }
        }
    }
    if ts.sockets.conns.len() < spec.setup_connections() as usize {
        return Ok(false);
    }
    let setup = setup_of(&spec);
    if let Some(adm) = &ts.admission {
        if let Ok(mut p) = state.pending.lock() {
            if setup.routes_while_running() {
                // CRR keeps the token: from now on each of its connections goes straight to
                // its flow's queue.
                let mut senders = Vec::new();
                for flow in 0..spec.connection_count() {
                    let (tx, rx) = mpsc::sync_channel(CRR_QUEUE);
                    senders.push(tx);
                    ts.sockets
                        .crr_server
                        .push(CrrServerFlow { flow, accepted: rx });
                }
                p.insert(
                    adm.token,
                    PendingTest::Crr(senders, std::sync::Arc::new(spec.clone())),
                );
            } else {
                p.remove(&adm.token);
            }
        }
    }
    ts.data_rx = None;
    for (_, s) in &ts.sockets.conns {
        sockopt::apply(s, &spec)?;
    }
    if setup.binds_udp() {
        let token = ts.admission.as_ref().map(|a| a.token).expect("admitted");
        let deadline = Instant::now() + state.cfg.timeouts.handshake;
        let control_peer = ts.peer.ip();
        ts.sockets.conns.sort_by_key(|(f, _)| *f);
        let EndSockets { conns, udp, .. } = &mut ts.sockets;
        for (flow, tcp) in conns.iter_mut() {
            let (sock, peer) =
                udpsetup::server_side(tcp, token, *flow, &spec, control_peer, deadline)?;
            udp.push((*flow, sock, peer));
        }
    }
    Ok(true)
}

/// Carry out session actions. Returns true when the session is over.
fn execute<'a>(
    conn: &mut Control,
    sess: &mut ServerSession,
    ts: &mut TestState<'a>,
    state: &'a State,
    actions: Vec<Action>,
) -> Result<bool, NetError> {
    let mut queue: VecDeque<Action> = actions.into();
    while let Some(a) = queue.pop_front() {
        match a {
            Action::Send(m) => conn.send(&m)?,
            Action::RequestAdmission(spec) => {
                // One peer may not hold every slot: identity, else source address.
                let peer_key = peer_key(sess, ts.peer);
                let group = spec
                    .common
                    .admission_group
                    .map(|g| (g, u64::from(spec.common.flows)));
                let group = match admit(state, &peer_key, group) {
                    Ok(g) => g,
                    Err((prev, cap, scope)) => {
                        state.refusals.count(super::RefusalReason::of_busy(scope));
                        queue.extend(sess.busy(prev, cap, 1000, scope));
                        continue;
                    }
                };
                let _ = ts.slot.end_handshake();
                let mut raw = [0u8; 16];
                rand::rng().fill_bytes(&mut raw);
                let token = Token(raw);
                let (tx, rx) = mpsc::channel();
                if let Ok(mut p) = state.pending.lock() {
                    p.insert(token, PendingTest::Setup(tx));
                }
                ts.admission = Some(Admission {
                    state,
                    token,
                    peer_key,
                    finishing: false,
                    group,
                });
                ts.test_id = state.next_id.fetch_add(1, Ordering::Relaxed);
                ts.admitted_unix_ms = unix_ms();
                ts.data_rx = Some(rx);
                ts.spec = Some(*spec);
                queue.extend(sess.admitted(Instant::now(), ts.test_id, token));
            }
            Action::StartEngine => {
                let spec = ts.spec.clone().expect("spec set before start");
                let local = ts
                    .sockets
                    .conns
                    .first()
                    .and_then(|(_, s)| s.local_addr().ok())
                    // CRR has no setup connection: its connections arrive where this one did.
                    .or_else(|| conn.stream().local_addr().ok())
                    .map(|a| a.ip());
                let sockets = std::mem::take(&mut ts.sockets);
                let end = EndParams {
                    host: HostRole::Server,
                    cpu: spec.common.server_cpu.map(|c| c as usize),
                    policy: state.cfg.limits.max_rate_bps.map(RatePolicy::new),
                    local,
                    udp_wire: wirebench_engine::udp::UdpWire::Native,
                };
                let data = setup_of(&spec).plan(&end, sockets)?;
                ts.engine = Some(
                    EngineRun::start(end, &spec, data, ts.profile.take())
                        .map_err(NetError::io("starting the engine"))?,
                );
            }
            Action::RequestThirdParty {
                spec,
                target,
                ticket,
            } => {
                let acts = start_relay(sess, ts, state, (*spec, target, ticket))?;
                queue.extend(acts);
            }
            Action::StopEngine { reason } => {
                if let Some(r) = ts.relay.as_ref() {
                    tracing::info!(
                        test_id = ts.test_id,
                        ?reason,
                        "stopping the third-party test"
                    );
                    r.stop();
                }
                if let Some(e) = ts.engine.as_ref() {
                    tracing::info!(test_id = ts.test_id, ?reason, "stopping the engine");
                    e.abort.abort(reason);
                }
            }
            Action::PeerInterval(_) => {}
            Action::PeerResults(r) => {
                tracing::debug!(test_id = ts.test_id, "the client's results arrived");
                ts.client_report = Some(*r);
                // The client sends nothing more: servers that end on idleness may end now.
                if let Some(e) = ts.engine.as_ref() {
                    e.abort.peer_finished();
                }
                if ts.server_report.is_some() {
                    if let Some(a) = ts.admission.as_mut() {
                        a.mark_finishing();
                    }
                }
            }
            Action::OpenData { .. } | Action::TicketIssued(_) | Action::Relayed(_) => {
                return Err(NetError::Session(SessionError::Unexpected {
                    phase: sess.phase(),
                    got: "client_action",
                }))
            }
            Action::Close => return Ok(true),
        }
    }
    Ok(false)
}
