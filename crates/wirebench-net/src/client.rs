//! The client side of a test: `wirebench stream -H HOST`.
//!
//! Runs a [`ClientSession`] over the control connection, opens the data connections with the
//! token the server issued, runs the engine, relays live intervals to the caller and collects
//! both ends' reports. Errors before any measurement are returned as `Err`; once the engines
//! run, a failure or an interrupt still returns the partial reports, marked as such.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use wirebench_engine::rr::ConnectFn;
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, SideReport, SideStatus};
use wirebench_model::spec::TestSpec;
use wirebench_profile::WindowProfile;
use wirebench_proto::auth::Key;
use wirebench_proto::data::{DataHello, Token, CONTROL_PREAMBLE};
use wirebench_proto::frame::DEFAULT_MAX_FRAME_BYTES;
use wirebench_proto::message::{AbortMsg, IntervalMsg, Message};
use wirebench_proto::session::{Action, ClientSession, Phase, SessionError, Timeouts};

use crate::conn::Control;
use crate::end::{EndParams, EngineRun};
use crate::workload::{setup_of, EndSockets};
use crate::{sockopt, udpsetup, NetError};

/// What the client needs to run one test.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The daemon's address.
    pub server: SocketAddr,
    /// The test.
    pub spec: TestSpec,
    /// Protocol deadlines.
    pub timeouts: Timeouts,
    /// Bound on each TCP connect.
    pub connect_timeout: Duration,
    /// Identity and key to authenticate with, if any.
    pub credentials: Option<(String, Key)>,
    /// Local address every connection and UDP socket of the test starts from (`-B`).
    pub bind: Option<IpAddr>,
    /// Source port of the first data connection; flow `i` uses this + `i` (`--cport`). Not
    /// for CRR, whose connections come and go.
    pub data_port: Option<u16>,
    /// A third-party ticket the server issued for this spec, presented instead of
    /// credentials (a daemon running a third-party test as the client).
    pub ticket: Option<Token>,
}

impl ClientConfig {
    /// Defaults for a server and a spec.
    pub fn new(server: SocketAddr, spec: TestSpec) -> Self {
        ClientConfig {
            server,
            spec,
            timeouts: Timeouts::default(),
            connect_timeout: Duration::from_secs(5),
            bind: None,
            data_port: None,
            credentials: None,
            ticket: None,
        }
    }
}

/// How a run that reached the measurement phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Both ends ran to the end.
    Completed,
    /// The user interrupted it (SIGINT/SIGTERM); figures are partial.
    Interrupted,
    /// It failed while measuring, or the server stopped it; figures are partial.
    Aborted(AbortReason),
}

/// Both ends' reports of one run.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// How it ended.
    pub outcome: Outcome,
    /// This end's measurements.
    pub client: Option<SideReport>,
    /// The server's measurements, if they arrived.
    pub server: Option<SideReport>,
    /// Against a stock iperf3 server: its figures from the results exchange.
    pub iperf3: Option<wirebench_model::iperf3::Iperf3Server>,
}

struct Run {
    engine: Option<EngineRun>,
    client: Option<SideReport>,
    server: Option<SideReport>,
    interrupted: bool,
    /// The test's token (for CRR's per-transaction connections).
    token: Option<Token>,
    /// The sockets of the setup, until the engine takes them.
    sockets: EndSockets,
    /// The server aborted the running test (limit, shutdown), with its reason.
    stopped_by_server: Option<AbortReason>,
    /// This end's profile, prepared during the setup, until the engine takes it.
    profile: Option<WindowProfile>,
}

/// Open a control connection to `cfg.server` (the preamble sent) and start a client session
/// for `cfg.spec` on it, with `cfg.credentials`: the connection, the session and its first
/// actions.
pub(crate) fn open_session(
    cfg: &ClientConfig,
) -> Result<(Control, ClientSession, Vec<Action>), NetError> {
    let mut stream = connect_control(cfg)?;
    stream
        .set_write_timeout(Some(crate::conn::WRITE_TIMEOUT))
        .map_err(NetError::io("configuring the control connection"))?;
    stream
        .write_all(&CONTROL_PREAMBLE)
        .map_err(NetError::io("sending the preamble"))?;
    let conn = Control::new(stream, DEFAULT_MAX_FRAME_BYTES);
    let (mut sess, first) = ClientSession::new(
        Instant::now(),
        cfg.timeouts,
        cfg.spec.clone(),
        crate::software(),
    );
    if let Some((id, key)) = &cfg.credentials {
        sess = sess.with_credentials(id.clone(), key.clone());
    }
    Ok((conn, sess, first))
}

/// Run one test against `cfg.server`. `interrupt` is polled (e.g. set by a SIGINT handler);
/// `on_interval` receives every live interval sample from both ends.
pub fn run(
    cfg: &ClientConfig,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<ClientRun, NetError> {
    let (mut conn, mut sess, first) = open_session(cfg)?;
    if let Some(ticket) = cfg.ticket {
        sess = sess.with_ticket(ticket);
    }
    let mut run = Run {
        engine: None,
        client: None,
        server: None,
        interrupted: false,
        token: None,
        sockets: EndSockets::default(),
        stopped_by_server: None,
        profile: None,
    };
    let res = drive(
        cfg,
        &mut conn,
        &mut sess,
        &mut run,
        first,
        interrupt,
        on_interval,
    );
    // No welcome: whatever answered is not a wirebench daemon.
    let no_welcome = |e: &NetError| match e {
        NetError::Session(SessionError::Timeout { phase }) => *phase == Phase::AwaitWelcome,
        NetError::PeerClosed | NetError::Frame(_) => sess.phase() == Phase::AwaitWelcome,
        _ => false,
    };
    let res = res.map_err(|e| {
        if no_welcome(&e) {
            NetError::NotWirebench {
                addr: cfg.server,
                seen: conn.first_bytes().to_vec(),
            }
        } else {
            e
        }
    });
    match res {
        Ok(()) => Ok(ClientRun {
            outcome: match (run.interrupted, run.stopped_by_server) {
                (true, _) => Outcome::Interrupted,
                (false, Some(r)) => Outcome::Aborted(r),
                (false, None) => Outcome::Completed,
            },
            client: run.client,
            server: run.server,
            iperf3: None,
        }),
        Err(e) => {
            let Some(engine) = run.engine.as_mut() else {
                return Err(e);
            };
            let reason = e.abort_reason();
            let _ = conn.send(&Message::Abort(AbortMsg {
                reason: reason.clone(),
            }));
            if run.client.is_none() {
                run.client = engine.abort_and_wait(reason.clone(), Duration::from_secs(10));
            }
            Ok(ClientRun {
                outcome: if run.interrupted {
                    Outcome::Interrupted
                } else {
                    Outcome::Aborted(reason)
                },
                client: run.client,
                server: run.server,
                iperf3: None,
            })
        }
    }
}

/// Where a connection starts from: `-B`'s address, and a fixed port or any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    pub(crate) ip: Option<IpAddr>,
    pub(crate) port: Option<u16>,
}

impl Origin {
    /// Bind `sock` there, if anything was asked.
    pub(crate) fn bind(self, sock: &Socket) -> Result<(), NetError> {
        if self.ip.is_none() && self.port.is_none() {
            return Ok(());
        }
        let ip = self
            .ip
            .unwrap_or(if sock.domain().ok() == Some(Domain::IPV6) {
                IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
            } else {
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
            });
        let at = SocketAddr::new(ip, self.port.unwrap_or(0));
        if self.port.is_some() {
            let _ = sock.set_reuse_address(true);
        }
        sock.bind(&at.into())
            .map_err(|source| NetError::Bind { addr: at, source })
    }
}

/// Open the control connection, from `-B`'s address when given.
pub(crate) fn connect_control(cfg: &ClientConfig) -> Result<TcpStream, NetError> {
    let sock = Socket::new(
        Domain::for_address(cfg.server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(NetError::io("creating the control socket"))?;
    Origin {
        ip: cfg.bind,
        port: None,
    }
    .bind(&sock)?;
    sock.connect_timeout(&cfg.server.into(), cfg.connect_timeout)
        .map_err(|source| NetError::Connect {
            addr: cfg.server,
            source,
        })?;
    Ok(sock.into())
}

/// Open one data connection of the test and send its data hello.
fn connect_data(
    server: SocketAddr,
    spec: &TestSpec,
    (timeout, from): (Duration, Origin),
    token: Token,
    flow: u32,
) -> Result<TcpStream, NetError> {
    let sock = Socket::new(
        Domain::for_address(server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(NetError::io("creating a data socket"))?;
    sockopt::apply(&sock, spec)?;
    from.bind(&sock)?;
    sock.connect_timeout(&server.into(), timeout)
        .map_err(|source| NetError::Connect {
            addr: server,
            source,
        })?;
    sockopt::reassert_congestion(&sock, spec);
    let mut s: TcpStream = sock.into();
    s.set_write_timeout(Some(timeout))
        .map_err(NetError::io("configuring a data socket"))?;
    if let Err(e) = s.write_all(&DataHello { token, flow }.encode()) {
        // A connection the server refused (a connection cap) carries the reason.
        return Err(match crate::conn::data_refusal(&s) {
            Some(refused @ NetError::Session(_)) => refused,
            _ => NetError::io("sending the data-connection hello")(e),
        });
    }
    Ok(s)
}

/// Open the setup connections (for UDP workloads binding each flow's UDP socket over its
/// connection; for CRR making each flow's connect closure).
fn open_data(cfg: &ClientConfig, run: &mut Run, token: Token) -> Result<(), NetError> {
    run.token = Some(token);
    let spec = &cfg.spec;
    let began = Instant::now();
    if let Some(first) = cfg.data_port {
        let count = spec.setup_connections();
        if count > 0 && u64::from(first) + u64::from(count) - 1 > u64::from(u16::MAX) {
            return Err(NetError::PortRange { first, count });
        }
    }
    for flow in 0..spec.setup_connections() {
        let from = Origin {
            ip: cfg.bind,
            port: cfg
                .data_port
                .map(|p| p.saturating_add(u16::try_from(flow).unwrap_or(u16::MAX))),
        };
        let s = connect_data(cfg.server, spec, (cfg.connect_timeout, from), token, flow)?;
        run.sockets.conns.push((flow, s));
    }
    let took = began.elapsed();
    if took > SLOW_SETUP {
        tracing::warn!(
            "opening {} data connections took {:.1} s; a common cause: the kernel's choice \
             of a local port slows down while many ports toward the server are still in \
             TIME-WAIT from an earlier test (see ss -tan state time-wait)",
            spec.setup_connections(),
            took.as_secs_f64()
        );
    }
    let setup = setup_of(spec);
    if setup.binds_udp() {
        let deadline = Instant::now() + cfg.timeouts.handshake.max(Duration::from_secs(2));
        for (flow, tcp) in run.sockets.conns.iter_mut() {
            let (sock, server) = udpsetup::client_side(tcp, token, *flow, spec, deadline)?;
            run.sockets.udp.push((*flow, sock, server));
        }
    }
    if setup.routes_while_running() {
        for flow in 0..spec.connection_count() {
            let (server, spec, timeout) = (cfg.server, spec.clone(), cfg.connect_timeout);
            let from = Origin {
                ip: cfg.bind,
                port: None,
            };
            let connect: ConnectFn = Box::new(move || {
                connect_data(server, &spec, (timeout, from), token, flow)
                    .map_err(|e| io::Error::other(e.to_string()))
            });
            run.sockets.crr_client.push((flow, connect));
        }
    }
    Ok(())
}

/// Opening the data connections slower than this gets a warning naming the usual cause.
const SLOW_SETUP: Duration = Duration::from_secs(5);

/// How long a failed data connection waits for the server's reason on the control
/// connection.
const SERVER_REASON_WAIT: Duration = Duration::from_secs(1);

/// A data connection failed before the test started with `symptom`. When the server gave
/// up first (its data-connection deadline passed, or it stopped the test), it closed the data
/// connections after sending an `error` frame on the control connection: that frame, when it
/// arrives within [`SERVER_REASON_WAIT`], is the error to report, not the closed connection
/// it caused. A refusal the data connection itself carried is kept as it is.
fn server_reason(conn: &mut Control, symptom: NetError) -> NetError {
    if matches!(symptom, NetError::Session(_)) {
        return symptom;
    }
    let until = Instant::now() + SERVER_REASON_WAIT;
    loop {
        match conn.recv(until) {
            Ok(Some(Message::Error(e))) => return NetError::Session(SessionError::Refused(e)),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return symptom,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn drive(
    cfg: &ClientConfig,
    conn: &mut Control,
    sess: &mut ClientSession,
    run: &mut Run,
    first: Vec<Action>,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<(), NetError> {
    if execute(cfg, conn, sess, run, first, on_interval)? {
        return Ok(());
    }
    loop {
        let now = Instant::now();
        if interrupt.load(Ordering::Relaxed) && !run.interrupted {
            run.interrupted = true;
            match run.engine.as_ref() {
                Some(engine) => {
                    engine.abort.abort(AbortReason::Interrupted);
                    conn.send(&Message::Abort(AbortMsg {
                        reason: AbortReason::Interrupted,
                    }))?;
                }
                None => return Err(NetError::Interrupted),
            }
        }
        if let Some(engine) = run.engine.as_mut() {
            while let Ok(sample) = engine.intervals.try_recv() {
                on_interval(&IntervalMsg {
                    host: HostRole::Client,
                    sample,
                });
            }
            if run.client.is_none() {
                if let Some(mut report) = engine.try_finish() {
                    if run.interrupted {
                        report.status = SideStatus::Aborted(AbortReason::Interrupted);
                    }
                    run.client = Some(report.clone());
                    tracing::debug!("client: engine finished, sending results");
                    let acts = sess.engine_done(now, report);
                    if execute(cfg, conn, sess, run, acts, on_interval)? {
                        return Ok(());
                    }
                }
            }
        }
        // A data connection the server refused (a connection cap) says why on itself.
        if matches!(sess.phase(), Phase::AwaitData | Phase::AwaitReady) {
            if let Some(e) = run
                .sockets
                .conns
                .iter()
                .find_map(|(_, s)| crate::conn::data_refusal(s))
            {
                return Err(server_reason(conn, e));
            }
        }
        let acts = sess.poll(now)?;
        if execute(cfg, conn, sess, run, acts, on_interval)? {
            return Ok(());
        }
        if sess.phase() == Phase::Done {
            return Ok(());
        }
        let step = match run.engine.as_ref() {
            Some(e) if run.client.is_none() => e.wait_step(now),
            _ => crate::end::CONTROL_WAIT,
        };
        let mut until = now + step;
        if let Some(w) = sess.next_wakeup() {
            until = until.min(w.max(now + Duration::from_millis(1)));
        }
        // Results frames of a big test may exceed the default cap; the session knows its size.
        conn.set_max_frame(sess.frame_cap(Instant::now()));
        if let Some(msg) = conn.recv(until)? {
            let acts = sess.handle(Instant::now(), msg)?;
            if execute(cfg, conn, sess, run, acts, on_interval)? {
                return Ok(());
            }
        }
    }
}

fn execute(
    cfg: &ClientConfig,
    conn: &mut Control,
    sess: &mut ClientSession,
    run: &mut Run,
    actions: Vec<Action>,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<bool, NetError> {
    let mut queue: std::collections::VecDeque<Action> = actions.into();
    while let Some(a) = queue.pop_front() {
        match a {
            Action::Send(m) => conn.send(&m)?,
            Action::OpenData { token, .. } => {
                tracing::debug!("client: admitted, opening the data connections");
                let pinned = cfg.spec.common.client_cpu.map(|c| c as usize);
                run.profile = crate::end::prepare_profile(&cfg.spec, pinned, true);
                if let Err(e) = open_data(cfg, run, token) {
                    return Err(server_reason(conn, e));
                }
                queue.extend(sess.data_opened(Instant::now()));
            }
            Action::StartEngine => {
                tracing::debug!("client: starting the engine");
                let local = run
                    .sockets
                    .conns
                    .first()
                    .and_then(|(_, s)| s.local_addr().ok())
                    .map(|a| a.ip())
                    .or_else(|| conn.stream().local_addr().ok().map(|a| a.ip()));
                let sockets = std::mem::take(&mut run.sockets);
                let end = EndParams {
                    host: HostRole::Client,
                    cpu: cfg.spec.common.client_cpu.map(|c| c as usize),
                    policy: None,
                    local,
                    udp_wire: wirebench_engine::udp::UdpWire::Native,
                };
                let data = setup_of(&cfg.spec).plan(&end, sockets)?;
                run.engine = Some(
                    EngineRun::start(end, &cfg.spec, data, run.profile.take())
                        .map_err(NetError::io("starting the engine"))?,
                );
            }
            Action::StopEngine { reason } => {
                // Only the server's `abort` produces this on the client.
                if let Some(e) = run.engine.as_ref() {
                    e.abort.abort(reason.clone());
                }
                run.stopped_by_server.get_or_insert(reason);
            }
            Action::PeerInterval(m) => on_interval(&m),
            Action::PeerResults(r) => {
                tracing::debug!("client: the server's results arrived");
                run.server = Some(*r);
            }
            Action::RequestAdmission(_)
            | Action::RequestThirdParty { .. }
            | Action::TicketIssued(_)
            | Action::Relayed(_) => {}
            Action::Close => return Ok(true),
        }
    }
    Ok(false)
}
