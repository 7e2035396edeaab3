//! The daemon's second frontend: stock iperf3 clients on their own port
//! (`serve --iperf3`).
//!
//! The protocol is `wirebench-iperf3`'s sans-IO [`ServerConn`]; this module is its I/O shell.
//! An iperf3 test runs on the same engines as a native test: its parameters become a
//! [`wirebench_model::spec::TestSpec`] checked against the daemon's limits ([`convert`]), it
//! takes a test slot like any test (so several iperf3 clients run at once, up to
//! `--max-tests` and `--max-tests-per-peer`), the server end's engine measures it (CPU,
//! TCP_INFO, intervals) and it leaves a [`super::TestRecord`].
//!
//! # Routing
//! Every connection on the iperf3 port starts with a 37-byte cookie. A cookie that names a
//! test collecting its data streams makes the connection one of that test's streams (in
//! arrival order, which is iperf3's stream order); a cookie of a test already running gets
//! `ACCESS_DENIED`, as iperf3 answers; any other cookie starts a new control session. So a
//! second client is a second test, not "server busy".
//!
//! # How the test ends
//! The iperf3 client decides when the test is over (`TEST_END`). The server's engine runs
//! for the client's `-t` after `-O` omitted seconds; at `TEST_END` the daemon shuts the
//! reading side of every data socket down, so each receiving flow sees the end of its data
//! at once and its window ends at the last byte that arrived. `-n`/`-k` become a byte count
//! bounded by the daemon's longest duration.
//!
//! # UDP (`-u`)
//! A UDP test runs on wirebench's UDP engine with iperf3's datagram header
//! ([`wirebench_engine::udp::UdpWire::Iperf3`]); its streams are set up by iperf3's
//! connect/reply datagrams on the iperf3 port ([`udp`]). The engine's receivers end on their
//! own once nothing has arrived for their drain quiet time after the test's duration. The
//! results the client gets for a stream the daemon received: `bytes` the distinct datagrams'
//! bytes, `packets` the datagrams the client says it sent (its own results, which arrive
//! first; at least the highest sequence number seen), `errors` those of them that did not
//! arrive (duplicates do not make up for lost ones), `jitter` the RFC 3550 interarrival jitter
//! in seconds, as iperf3 defines it. For a stream the daemon sent: `bytes` sent and `packets`
//! the sequence numbers used (a send the kernel refused uses one, so the client sees it as
//! lost, which it is).

pub(crate) mod convert;
mod info;
mod udp;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use wirebench_engine::udp::UdpWire;
use wirebench_engine::RatePolicy;
use wirebench_iperf3::params::Protocol;
use wirebench_iperf3::server::{ServerConn, ServerEvent, ServerPhase, Timeouts};
use wirebench_iperf3::wire::{Cookie, ErrorCode, State as IState, COOKIE_BYTES};
use wirebench_iperf3::Params;
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, SideReport};
use wirebench_model::spec::{FlowDir, TestSpec};
use wirebench_model::text::escape;

pub use info::{ClientUdpStream, Iperf3Info};

use super::accept::ConnSlot;
use super::lograte::log_refused;
use super::records::{record, RecordStatus, TestRecord};
use super::route::Admission;
use super::session::admit;
use super::State;
use crate::conn::{is_timeout, read_exact_by};
use crate::end::{EndParams, EngineRun};
use crate::workload::{setup_of, EndSockets};
use crate::{sockopt, NetError};

/// Where a connection presenting a known cookie goes.
#[derive(Clone)]
pub(super) enum Route {
    /// The test is collecting its data streams.
    Collecting(mpsc::Sender<(TcpStream, ConnSlot)>),
    /// The test runs: a further connection with its cookie gets `ACCESS_DENIED`.
    Running,
}

/// The cookies of the iperf3 tests in progress.
pub(super) type Routes = HashMap<Cookie, Route>;

/// What collecting a test's data streams ended with.
enum Collected {
    /// Every stream is in.
    Sockets(EndSockets),
    /// The client left or gave up first.
    Ended(Outcome),
}

/// How long each read of the control connection waits before the loop looks at its
/// deadlines, the engine and the shutdown flag again.
const CONTROL_STEP: Duration = Duration::from_millis(20);

/// With omitted seconds, the receivers end once nothing has arrived for this long after
/// TEST_END (loopback drains a full socket buffer in about a millisecond).
const QUIET: Duration = Duration::from_millis(30);

/// How long the test may go on past its nominal end before the client's TEST_END: iperf3's
/// own server allows 40 s.
const END_GRACE: Duration = Duration::from_secs(40);

/// Handle a connection on the iperf3 port: a data stream of a test, or a new test.
pub(super) fn handle_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    state: &Arc<State>,
    mut slot: ConnSlot,
) {
    let accepted = Instant::now();
    let deadline = accepted + state.cfg.timeouts.handshake;
    let mut raw = [0u8; COOKIE_BYTES];
    if read_exact_by(&mut stream, &mut raw, deadline).is_err() {
        log_refused(state, peer, "iperf3 connection without a complete cookie");
        return;
    }
    if let Ok(cookie) = Cookie::decode(&raw) {
        let route = state
            .iperf3_routes
            .lock()
            .ok()
            .and_then(|m| m.get(&cookie).cloned());
        match route {
            Some(Route::Collecting(tx)) => {
                if slot.end_handshake() {
                    let _ = tx.send((stream, slot));
                }
                return;
            }
            Some(Route::Running) => {
                let _ = (&stream).write_all(&[IState::AccessDenied.byte()]);
                return;
            }
            None => {}
        }
    }
    let timeouts = Timeouts {
        handshake: state.cfg.timeouts.handshake,
        reply: state.cfg.timeouts.results,
    };
    let mut s = Session {
        ctl: stream,
        conn: ServerConn::new(accepted, timeouts),
        peer,
        state,
        admission: None,
        cookie: None,
        test_id: 0,
        spec: None,
        engine: None,
        report: None,
        info: Iperf3Info::new(),
        data_slots: Vec::new(),
        stop_handles: Vec::new(),
        receiving: Vec::new(),
        test_end_at: None,
        slot,
        admitted_unix_ms: 0,
    };
    let outcome = s.run(&raw);
    s.finish(outcome);
}

/// One iperf3 control session.
struct Session<'a> {
    ctl: TcpStream,
    conn: ServerConn,
    peer: SocketAddr,
    state: &'a Arc<State>,
    admission: Option<Admission<'a>>,
    /// The test's cookie while it is registered in the routes.
    cookie: Option<Cookie>,
    test_id: u64,
    spec: Option<TestSpec>,
    engine: Option<EngineRun>,
    report: Option<SideReport>,
    info: Iperf3Info,
    data_slots: Vec<ConnSlot>,
    /// Second handles on the data sockets, to end the receivers at TEST_END.
    stop_handles: Vec<TcpStream>,
    /// Of those, the streams this end receives on: (iperf3 stream id, handle index).
    receiving: Vec<(u32, usize)>,
    /// When TEST_END arrived.
    test_end_at: Option<Instant>,
    slot: ConnSlot,
    admitted_unix_ms: u64,
}

/// How a session ended, for the record.
enum Outcome {
    /// IPERF_DONE (or the client closed after the results).
    Completed,
    /// Stopped early by the client or this end.
    Aborted(AbortReason),
    /// Refused before admission (nothing to record).
    Refused,
    /// Failed (timeout, lost connection, protocol error).
    Failed(AbortReason),
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl<'a> Session<'a> {
    /// Write what the machine queued.
    fn flush(&mut self) -> Result<(), NetError> {
        let out = self.conn.take_output();
        if out.is_empty() {
            return Ok(());
        }
        let _ = self
            .ctl
            .set_write_timeout(Some(self.state.cfg.timeouts.handshake));
        self.ctl
            .write_all(&out)
            .map_err(NetError::io("writing to the iperf3 client"))
    }

    /// Read what the client sent within [`CONTROL_STEP`] (at most what the machine wants)
    /// and feed it. `Ok(None)` on EOF.
    fn step(&mut self) -> Result<Option<Vec<ServerEvent>>, AbortReason> {
        let now = Instant::now();
        self.conn.poll(now).map_err(|e| {
            let _ = self.flush();
            AbortReason::Timeout {
                phase: e.to_string(),
            }
        })?;
        let want = self.conn.wanted().clamp(1, 64 * 1024);
        let mut buf = vec![0u8; want];
        let _ = self.ctl.set_read_timeout(Some(CONTROL_STEP));
        match self.ctl.read(&mut buf) {
            Ok(0) => Ok(None),
            Ok(n) => {
                let ev = self.conn.handle_bytes(Instant::now(), &buf[..n]);
                let _ = self.flush();
                ev.map(Some).map_err(|e| AbortReason::ProtocolError {
                    detail: e.to_string(),
                })
            }
            Err(e) if is_timeout(&e) => Ok(Some(Vec::new())),
            Err(e) => Err(AbortReason::ControlLost {
                detail: e.to_string(),
            }),
        }
    }

    fn lost() -> AbortReason {
        AbortReason::ControlLost {
            detail: "the iperf3 client closed the control connection".into(),
        }
    }

    fn run(&mut self, cookie: &[u8; COOKIE_BYTES]) -> Outcome {
        match self.conn.handle_bytes(Instant::now(), cookie) {
            Ok(_) => {}
            Err(e) => {
                log_refused(self.state, self.peer, &format!("iperf3: {e}"));
                return Outcome::Refused;
            }
        }
        let Ok(Some(cookie)) = Cookie::decode(cookie).map(Some) else {
            return Outcome::Refused;
        };
        if self.flush().is_err() {
            return Outcome::Refused;
        }
        // The parameters, within the handshake deadline.
        let params = loop {
            match self.step() {
                Ok(Some(ev)) => {
                    if let Some(p) = ev.into_iter().find_map(|e| match e {
                        ServerEvent::Params(p) => Some(p),
                        _ => None,
                    }) {
                        break p;
                    }
                    if self.conn.phase() == ServerPhase::Closed {
                        return Outcome::Refused;
                    }
                }
                Ok(None) => {
                    log_refused(
                        self.state,
                        self.peer,
                        "iperf3 client left before its parameters",
                    );
                    return Outcome::Refused;
                }
                Err(e) => {
                    log_refused(self.state, self.peer, &format!("iperf3 parameters: {e:?}"));
                    return Outcome::Refused;
                }
            }
        };
        self.info.client_version = params.client_version.as_deref().map(escape);
        if let Err(o) = self.admit(&params, cookie) {
            return o;
        }
        match self.test(&params) {
            Ok(o) => o,
            Err(reason) => Outcome::Failed(reason),
        }
    }

    /// Check the parameters against the policy, take a test slot, register the cookie.
    fn admit(&mut self, params: &Params, cookie: Cookie) -> Result<(), Outcome> {
        let state = self.state;
        let refuse = |s: &mut Self, code: ErrorCode, why: &str| {
            s.conn.refuse(code);
            let _ = s.flush();
            log_refused(
                state,
                s.peer,
                &format!("iperf3 test refused: {}", escape(why)),
            );
            Outcome::Refused
        };
        if state.cfg.keys.is_some() {
            return Err(refuse(
                self,
                ErrorCode::AuthTest,
                "this daemon requires authentication, which iperf3 clients cannot do",
            ));
        }
        let spec = match convert::spec_of(params, &state.cfg.limits) {
            Ok(s) => s,
            Err(r) => return Err(refuse(self, r.code, &r.why)),
        };
        let peer_key = format!("ip:{}", self.peer.ip().to_canonical());
        // An iperf3 test is a group of its own (iperf3 has no under-load pairs).
        if let Err((running, cap, scope)) = admit(state, &peer_key, None) {
            self.conn.deny();
            let _ = self.flush();
            log_refused(
                state,
                self.peer,
                &format!("iperf3 test refused: busy ({running} of {cap} tests, {scope:?})"),
            );
            return Err(Outcome::Refused);
        }
        let _ = self.slot.end_handshake();
        self.admission = Some(Admission {
            state,
            // iperf3 streams are routed by cookie; a random token no data hello can name.
            token: {
                let mut raw = [0u8; 16];
                rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw);
                wirebench_proto::data::Token(raw)
            },
            peer_key,
            finishing: false,
            group: None,
        });
        self.test_id = state.next_id.fetch_add(1, Ordering::Relaxed);
        self.admitted_unix_ms = unix_ms();
        self.spec = Some(spec);
        self.cookie = Some(cookie);
        Ok(())
    }

    /// Service the control connection while the streams are collected: `Some` if the
    /// client left or gave up.
    fn step_collecting(&mut self) -> Result<Option<Outcome>, AbortReason> {
        Ok(match self.step()? {
            None => Some(Outcome::Aborted(Self::lost())),
            Some(ev) if ev.contains(&ServerEvent::ClientTerminate) => {
                Some(Outcome::Aborted(AbortReason::Interrupted))
            }
            Some(_) => None,
        })
    }

    /// Collect the TCP data connections, routed here by the test's cookie, and number them
    /// in the order they were accepted: iperf3 opens its streams one after another, and a
    /// stream's id and (with `--bidir`) its direction follow that order. Each connection's
    /// cookie is read on a thread of its own, so they reach this channel in any order on a
    /// busy host (in arrival order, a `--bidir` test once sent on the client's sending
    /// stream and read the one it receives on: 0 bytes received of 1.3 MB sent).
    fn collect_tcp(
        &mut self,
        want: usize,
        rx: &mpsc::Receiver<(TcpStream, ConnSlot)>,
    ) -> Result<Collected, AbortReason> {
        let mut arrived = Vec::with_capacity(want);
        while arrived.len() < want {
            while let Ok(conn) = rx.try_recv() {
                arrived.push(conn);
            }
            if arrived.len() >= want {
                break;
            }
            if let Some(o) = self.step_collecting()? {
                self.data_slots
                    .extend(arrived.into_iter().map(|(_, slot)| slot));
                return Ok(Collected::Ended(o));
            }
        }
        Ok(Collected::Sockets(self.in_accept_order(arrived)))
    }

    /// The data connections numbered in accept order; their slots kept for the test's life.
    fn in_accept_order(&mut self, mut arrived: Vec<(TcpStream, ConnSlot)>) -> EndSockets {
        arrived.sort_by_key(|(_, slot)| slot.accepted_seq);
        let mut sockets = EndSockets::default();
        for (flow, (s, slot)) in arrived.into_iter().enumerate() {
            sockets.conns.push((flow as u32, s));
            self.data_slots.push(slot);
        }
        sockets
    }

    /// Take the iperf3 UDP port for this test's stream setup ([`udp`]), one test at a time,
    /// before `CREATE_STREAMS` tells the client to send its connect datagrams (one that
    /// found no socket would be refused with an ICMP error).
    fn listen_udp(
        &mut self,
        deadline: Instant,
    ) -> Result<(MutexGuard<'a, ()>, udp::UdpCollector), Outcome> {
        let state = self.state;
        let guard = loop {
            match state.iperf3_udp_setup.try_lock() {
                Ok(g) => break g,
                Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(TryLockError::WouldBlock) if Instant::now() >= deadline => {
                    return Err(Outcome::Failed(AbortReason::Timeout {
                        phase: "waiting for another iperf3 UDP test's stream setup".into(),
                    }))
                }
                Err(TryLockError::WouldBlock) => match self.step_collecting() {
                    Ok(None) => {}
                    Ok(Some(o)) => return Err(o),
                    Err(r) => return Err(Outcome::Failed(r)),
                },
            }
        };
        let local = self
            .ctl
            .local_addr()
            .map_err(NetError::io("reading the control address"));
        match local.and_then(|l| udp::UdpCollector::new(l, self.peer.ip())) {
            Ok(c) => Ok((guard, c)),
            Err(e) => {
                self.conn.refuse(ErrorCode::StreamListen);
                let _ = self.flush();
                Err(Outcome::Failed(AbortReason::EngineFailed {
                    detail: e.to_string(),
                }))
            }
        }
    }

    /// Set the UDP streams up on the iperf3 port ([`udp`]).
    fn collect_udp(
        &mut self,
        mut collector: udp::UdpCollector,
        want: usize,
        spec: &TestSpec,
    ) -> Result<Collected, AbortReason> {
        let failed = |e: NetError| AbortReason::EngineFailed {
            detail: e.to_string(),
        };
        let mut sockets = EndSockets::default();
        while sockets.udp.len() < want {
            let got = collector.poll(CONTROL_STEP / 2, spec);
            self.info.udp_setup_foreign_datagrams = collector.foreign;
            match got.map_err(failed)? {
                Some((sock, peer)) => {
                    let flow = sockets.udp.len() as u32;
                    sockets.udp.push((flow, sock, peer));
                }
                None => {
                    if let Some(o) = self.step_collecting()? {
                        return Ok(Collected::Ended(o));
                    }
                }
            }
        }
        Ok(Collected::Sockets(sockets))
    }

    /// Collect the streams, run the engine, exchange the results.
    fn test(&mut self, params: &Params) -> Result<Outcome, AbortReason> {
        let spec = self.spec.clone().expect("admitted");
        let cookie = self.cookie.expect("admitted");
        let (tx, rx) = mpsc::channel();
        if let Ok(mut m) = self.state.iperf3_routes.lock() {
            m.insert(cookie, Route::Collecting(tx));
        }
        let deadline = Instant::now() + self.state.cfg.timeouts.handshake;
        let is_udp = params.protocol == Protocol::Udp;
        let udp_setup = if is_udp {
            match self.listen_udp(deadline) {
                Ok(s) => Some(s),
                Err(o) => return Ok(o),
            }
        } else {
            None
        };
        self.conn
            .create_streams(deadline)
            .map_err(|e| AbortReason::ProtocolError {
                detail: e.to_string(),
            })?;
        self.flush().map_err(|_| Self::lost())?;
        let want = spec.connection_count() as usize;
        let collected = match udp_setup {
            Some((_setup, collector)) => self.collect_udp(collector, want, &spec)?,
            None => self.collect_tcp(want, &rx)?,
        };
        let sockets = match collected {
            Collected::Sockets(s) => s,
            Collected::Ended(o) => return Ok(o),
        };
        if let Ok(mut m) = self.state.iperf3_routes.lock() {
            m.insert(cookie, Route::Running);
        }
        let dirs = spec.flow_dirs();
        for (flow, s) in &sockets.conns {
            sockopt::apply(s, &spec).map_err(|e| AbortReason::EngineFailed {
                detail: e.to_string(),
            })?;
            if let Ok(c) = s.try_clone() {
                if dirs.get(*flow as usize) == Some(&FlowDir::ClientToServer) {
                    self.receiving
                        .push((Params::stream_id(*flow), self.stop_handles.len()));
                }
                self.stop_handles.push(c);
            }
        }
        let local = sockets
            .conns
            .first()
            .and_then(|(_, s)| s.local_addr().ok())
            .or_else(|| self.ctl.local_addr().ok())
            .map(|a| a.ip());
        let end = EndParams {
            host: HostRole::Server,
            cpu: None,
            policy: self.state.cfg.limits.max_rate_bps.map(RatePolicy::new),
            local,
            udp_wire: if is_udp {
                UdpWire::Iperf3 {
                    counters_64bit: params.udp_counters_64bit,
                }
            } else {
                UdpWire::Native
            },
        };
        let data = setup_of(&spec)
            .plan(&end, sockets)
            .map_err(|e| AbortReason::EngineFailed {
                detail: e.to_string(),
            })?;
        self.engine = Some(EngineRun::start(end, &spec, data, None).map_err(|e| {
            AbortReason::EngineFailed {
                detail: e.to_string(),
            }
        })?);
        self.conn
            .test_started()
            .map_err(|e| AbortReason::ProtocolError {
                detail: e.to_string(),
            })?;
        self.flush().map_err(|_| Self::lost())?;
        let nominal = Duration::from_millis(spec.common.warmup_ms + spec.common.duration_ms);
        self.running(Instant::now() + nominal + END_GRACE, params)
    }

    /// From TEST_RUNNING to IPERF_DONE.
    fn running(&mut self, give_up: Instant, params: &Params) -> Result<Outcome, AbortReason> {
        loop {
            if self.state.shutdown.load(Ordering::Relaxed) {
                let _ = self.ctl.write_all(&[IState::ServerTerminate.byte()]);
                return Ok(Outcome::Aborted(AbortReason::ServerShutdown));
            }
            if self.conn.phase() == ServerPhase::Running && Instant::now() >= give_up {
                return Err(AbortReason::Timeout {
                    phase: "waiting for the iperf3 client's TEST_END".into(),
                });
            }
            self.poll_engine()?;
            let events = match self.step()? {
                Some(ev) => ev,
                None if self.conn.phase() == ServerPhase::Done => return Ok(Outcome::Completed),
                None => return Ok(Outcome::Aborted(Self::lost())),
            };
            for ev in events {
                match ev {
                    ServerEvent::TestEnd => self.test_end_at = Some(Instant::now()),
                    ServerEvent::ClientResults(r) => {
                        // Without omitted seconds the client's bytes are all it sent.
                        let sent = (params.omit_s == 0).then(|| {
                            r.streams
                                .iter()
                                .map(|s| (s.id, s.bytes))
                                .collect::<HashMap<_, _>>()
                        });
                        self.end_receivers(sent.as_ref());
                        self.info.client_cpu_util_total = Some(r.cpu_util_total);
                        self.info.client_streams = r
                            .streams
                            .iter()
                            .map(|s| (s.id, s.bytes, s.retransmits))
                            .collect();
                        if params.protocol == Protocol::Udp {
                            self.info.client_udp = r
                                .streams
                                .iter()
                                .map(|s| ClientUdpStream {
                                    id: s.id,
                                    packets: s.packets,
                                    lost: s.errors,
                                    jitter_s: s.jitter_s,
                                })
                                .collect();
                        }
                        self.wait_engine();
                        let mut res = convert::results_of(self.report.as_ref(), Some(&r));
                        if params.get_server_output {
                            res.server_output_text =
                                Some(convert::server_output(self.test_id, &res));
                        }
                        self.conn.send_results(Instant::now(), &res).map_err(|e| {
                            AbortReason::ProtocolError {
                                detail: e.to_string(),
                            }
                        })?;
                        self.flush().map_err(|_| Self::lost())?;
                        if let Some(a) = self.admission.as_mut() {
                            a.mark_finishing();
                        }
                    }
                    ServerEvent::Done => return Ok(Outcome::Completed),
                    ServerEvent::ClientTerminate => {
                        return Ok(Outcome::Aborted(AbortReason::Interrupted))
                    }
                    ServerEvent::Cookie(_) | ServerEvent::Params(_) => {}
                }
            }
        }
    }

    /// Take the engine's report if it finished; a policy abort ends the test for the client
    /// too (`SERVER_ERROR` with iperf3's total-rate code).
    fn poll_engine(&mut self) -> Result<(), AbortReason> {
        let Some(engine) = self.engine.as_mut() else {
            return Ok(());
        };
        while engine.intervals.try_recv().is_ok() {}
        if self.report.is_none() {
            if let Some(r) = engine.try_finish() {
                if let Some(why @ AbortReason::LimitExceeded { .. }) = r.aborted() {
                    let why = why.clone();
                    self.report = Some(r);
                    self.conn.refuse(ErrorCode::TotalRate);
                    let _ = self.flush();
                    return Err(why);
                }
                self.report = Some(r);
            }
        }
        Ok(())
    }

    /// End the receiving flows once what the client sent has arrived: the bytes its results
    /// name (plus the cookie), or, when those exclude omitted seconds, until nothing has
    /// arrived for [`QUIET`]; at most [`crate::end::DRAIN_LIMIT`] after TEST_END. The client
    /// sends TEST_END as soon as its last write returns, while up to a socket buffer of data
    /// is still on its way; iperf3's own server closes at once and loses it.
    fn end_receivers(&self, sent: Option<&HashMap<u32, u64>>) {
        let start = self.test_end_at.unwrap_or_else(Instant::now);
        let until = start + crate::end::DRAIN_LIMIT;
        let received = |i: usize| {
            self.stop_handles
                .get(i)
                .and_then(|s| wirebench_sys::tcp::tcp_info(s).ok())
                .and_then(|t| t.bytes_received)
                .unwrap_or(0)
        };
        let mut last: Vec<u64> = self.receiving.iter().map(|&(_, i)| received(i)).collect();
        let mut quiet_since = Instant::now();
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
            let now: Vec<u64> = self.receiving.iter().map(|&(_, i)| received(i)).collect();
            let done = match sent {
                Some(sent) => self.receiving.iter().zip(&now).all(|(&(id, _), &got)| {
                    let want = sent.get(&id).copied().unwrap_or(0);
                    got >= want.saturating_add(COOKIE_BYTES as u64)
                }),
                None => {
                    if now != last {
                        quiet_since = Instant::now();
                    }
                    quiet_since.elapsed() >= QUIET
                }
            };
            last = now;
            if done {
                break;
            }
        }
        for s in &self.stop_handles {
            let _ = s.shutdown(Shutdown::Read);
        }
    }

    /// Wait (bounded) for the engine's report after TEST_END.
    fn wait_engine(&mut self) {
        let until = Instant::now() + crate::end::DRAIN_LIMIT + Duration::from_secs(2);
        while self.report.is_none() && Instant::now() < until {
            if let Some(e) = self.engine.as_mut() {
                if let Some(r) = e.try_finish() {
                    self.report = Some(r);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if self.report.is_none() {
            if let Some(e) = self.engine.as_mut() {
                self.report = e.abort_and_wait(
                    AbortReason::Timeout {
                        phase: "ending the server's engine after TEST_END".into(),
                    },
                    Duration::from_secs(5),
                );
            }
        }
    }

    /// Stop what still runs, free the slot and the cookie, record the test.
    fn finish(mut self, outcome: Outcome) {
        if let Some(c) = self.cookie.take() {
            if let Ok(mut m) = self.state.iperf3_routes.lock() {
                m.remove(&c);
            }
        }
        for s in &self.stop_handles {
            let _ = s.shutdown(Shutdown::Both);
        }
        let (status, reason) = match outcome {
            Outcome::Refused => return,
            Outcome::Completed => (RecordStatus::Completed, None),
            Outcome::Aborted(r) => (RecordStatus::Aborted, Some(r)),
            Outcome::Failed(r) => (RecordStatus::Failed, Some(r)),
        };
        if let Some(e) = self.engine.as_mut() {
            if self.report.is_none() {
                let why = reason.clone().unwrap_or(AbortReason::Unspecified);
                self.report = e.abort_and_wait(why, Duration::from_secs(10));
            }
        }
        if let Some(r) = &reason {
            tracing::info!(peer = %self.peer, test_id = self.test_id, "iperf3 test ended: {r:?}");
        }
        let (status, reason) = match (status, reason, self.report.as_ref()) {
            (RecordStatus::Completed, None, None) => {
                (RecordStatus::Aborted, Some(AbortReason::Unspecified))
            }
            other => (other.0, other.1),
        };
        self.admission.take();
        self.data_slots.clear();
        let Some(spec) = self.spec.take() else {
            return;
        };
        record(
            self.state,
            TestRecord {
                test_id: self.test_id,
                peer: self.peer,
                identity: None,
                admitted_unix_ms: self.admitted_unix_ms,
                ended_unix_ms: unix_ms(),
                spec,
                status,
                reason,
                server: self.report.take(),
                client: None,
                iperf3: Some(std::mem::replace(&mut self.info, Iperf3Info::new())),
                third_party_target: None,
            },
        );
    }
}
