//! wirebench as an iperf3 client: `wirebench stream --iperf3 -H HOST` (TCP) and
//! `wirebench udp --iperf3 -H HOST` against an unmodified `iperf3 -s`.
//!
//! The protocol is `wirebench-iperf3`'s sans-IO [`ClientConn`]; this module is its I/O
//! shell. The control connection carries the cookie, the parameters (from the test's spec,
//! [`params_of`]), the state bytes and the results exchange; each data stream is a TCP
//! connection to the same port that starts with the cookie. This end's part of the transfer
//! runs on wirebench's stream engine, so it is measured as in a native test (its own
//! intervals, TCP_INFO, CPU); the server's figures come from its results message.
//!
//! # How the test ends
//! iperf3's client decides when the test is over (`TEST_END`), and the iperf3 server closes
//! its data sockets as soon as it reads it, without reading what is still queued. So this
//! end sends `TEST_END` once every flow it sends on has had its last byte acknowledged (its
//! FIN is acknowledged: the engine shuts the sending side down at its stop instant or once
//! `-n` is reached), and, when it receives, once its own stop instant has passed; at most
//! [`crate::end::DRAIN_LIMIT`] after the stop instant. The server then closes, the engine's
//! receivers read their EOF and its senders their peer's close, and the engine's report
//! gives the results this end sends.
//!
//! # UDP
//! Each stream is a UDP socket of its own set up by iperf3's connect datagram and reply
//! ([`udp`]); the data runs on wirebench's UDP engine with iperf3's datagram header
//! ([`UdpWire::Iperf3`]). UDP has no acknowledgement: a sending end sends `TEST_END`
//! [`UDP_TAIL_GRACE`] after its last datagram, a receiving end at its stop instant (the
//! server stops sending when it reads it; the engine's receivers end once nothing has
//! arrived for their quiet time).
//!
//! # Busy servers
//! An iperf3 server runs one test at a time; another client gets `ACCESS_DENIED`, or (while
//! it changes tests) a reset or a close before `PARAM_EXCHANGE`. With retries allowed, the
//! client waits (0.25 s, doubling up to 4 s) and tries again, saying so on stderr.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use wirebench_engine::udp::UdpWire;
use wirebench_iperf3::client::{ClientConn, ClientEvent, ClientPhase, ClientTimeouts};
use wirebench_iperf3::params::{
    Direction as IDirection, Params, Protocol as IProtocol, UDP_BLOCK_BYTES,
};
use wirebench_iperf3::results::Results;
use wirebench_iperf3::wire::{Cookie, ProtoError, COOKIE_CHARS};
use wirebench_model::abort::AbortReason;
use wirebench_model::iperf3::{Iperf3Server, Iperf3Stream, Iperf3UdpStream};
use wirebench_model::side::{HostRole, Role, SideReport, SideStatus};
use wirebench_model::spec::{Direction, FlowDir, SendPath, TestSpec, WorkloadSpec};
use wirebench_model::text::escape;
use wirebench_proto::message::IntervalMsg;

use crate::client::{connect_control, ClientConfig, ClientRun, Origin, Outcome};
use crate::conn::is_timeout;
use crate::end::{EndParams, EngineRun, DRAIN_LIMIT};
use crate::workload::{setup_of, EndSockets};
use crate::{sockopt, NetError};

mod udp;

/// How long each read of the control connection waits before the loop looks at the engine,
/// the senders and the interrupt flag again.
const CONTROL_STEP: Duration = Duration::from_millis(5);

/// The first wait before retrying a busy server; doubled each time up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// How long after its stop instant a UDP sender waits before `TEST_END`, for its last
/// datagrams to reach the server and be read (the server closes its sockets on `TEST_END`,
/// and datagrams past the last one it saw are counted nowhere as lost). UDP has no
/// acknowledgement to wait for; what is still missing then shows in the reconciliation.
const UDP_TAIL_GRACE: Duration = Duration::from_millis(100);

/// The parameters message of `spec`, or why it cannot be run against an iperf3 server.
///
/// iperf3 counts whole seconds: `-O` must be whole seconds, and `-t` is sent rounded up
/// (the server uses it only for its safety timer; this end ends the test at its own `-t`).
pub fn params_of(spec: &TestSpec) -> Result<Params, String> {
    if !spec.common.warmup_ms.is_multiple_of(1000) {
        return Err(format!(
            "--iperf3 with --warmup {} s: iperf3 omits whole seconds only (-O)",
            spec.common.warmup_ms as f64 / 1000.0
        ));
    }
    let p = Params {
        omit_s: u32::try_from(spec.common.warmup_ms / 1000).unwrap_or(u32::MAX),
        time_s: u32::try_from(spec.common.duration_ms.div_ceil(1000).max(1)).unwrap_or(u32::MAX),
        parallel: spec.common.flows,
        window_bytes: spec.common.window_bytes,
        tos: spec.common.tos,
        client_version: Some(crate::software()),
        ..Params::default()
    };
    let direction = |d: Direction| match d {
        Direction::Forward => IDirection::Forward,
        Direction::Reverse => IDirection::Reverse,
        Direction::Bidir => IDirection::Bidir,
    };
    let (p, len) = match &spec.workload {
        WorkloadSpec::Stream(s) => {
            let len = match s.direction {
                Direction::Reverse => s.recv_size_bytes,
                _ => s.send_size_bytes,
            };
            let p = Params {
                direction: direction(s.direction),
                num_bytes: s.stop_after_bytes.unwrap_or(0),
                len_bytes: len,
                bandwidth_bps: s.rate_bps.unwrap_or(0),
                mss_bytes: s.tcp.mss_bytes,
                nodelay: s.tcp.nodelay,
                congestion: s.tcp.congestion.clone(),
                zerocopy: s.send_path == SendPath::Sendfile,
                ..p
            };
            (p, len)
        }
        WorkloadSpec::UdpStream(u) => {
            if spec.common.warmup_ms > 0 {
                return Err(format!(
                    "udp --iperf3 with --warmup {} s: an iperf3 server restarts its datagram \
                     counts after the omitted seconds (-O) on its own clock, so no datagram \
                     could be accounted for exactly; run without --warmup",
                    spec.common.warmup_ms as f64 / 1000.0
                ));
            }
            let p = Params {
                protocol: IProtocol::Udp,
                direction: direction(u.direction),
                len_bytes: u.datagram_bytes,
                // 0: unpaced, as iperf3's -b 0.
                bandwidth_bps: u.rate_bps.unwrap_or(0),
                ..p
            };
            if !UDP_BLOCK_BYTES.contains(&u.datagram_bytes) {
                return Err(format!(
                    "--iperf3 with -l {}: iperf3 servers take datagrams of {} to {} bytes",
                    u.datagram_bytes,
                    UDP_BLOCK_BYTES.start(),
                    UDP_BLOCK_BYTES.end()
                ));
            }
            (p, u.datagram_bytes)
        }
        WorkloadSpec::Rr(_) | WorkloadSpec::Crr(_) | WorkloadSpec::UdpRr(_) => {
            return Err("--iperf3 runs TCP stream and UDP tests only".into())
        }
    };
    if p.block_size_problem().is_some() {
        return Err(format!(
            "--iperf3 with -l {len}: iperf3 servers take blocks of at most {} bytes",
            wirebench_iperf3::params::MAX_TCP_BLOCK_BYTES
        ));
    }
    if p.parallel > wirebench_iperf3::params::MAX_PARALLEL {
        return Err(format!(
            "--iperf3 with -P {}: iperf3 runs at most {} streams per direction",
            p.parallel,
            wirebench_iperf3::params::MAX_PARALLEL
        ));
    }
    Ok(p)
}

/// How to run a test against an iperf3 server, beyond its spec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Iperf3Options {
    /// How many times to try again while the server is busy.
    pub retry: u32,
    /// A UDP test's datagrams carry 64-bit sequence numbers (iperf3's
    /// `--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
}

/// Run one test against the iperf3 server at `cfg.server`, trying again `opts.retry` times
/// while it is busy. `interrupt` is polled; `on_interval` receives this end's live samples.
pub fn run(
    cfg: &ClientConfig,
    opts: Iperf3Options,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<ClientRun, NetError> {
    let mut params = params_of(&cfg.spec).map_err(NetError::SocketOption)?;
    params.udp_counters_64bit = opts.udp_counters_64bit && params.protocol == IProtocol::Udp;
    let attempts = opts.retry.saturating_add(1);
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=attempts {
        match attempt_once(cfg, &params, interrupt, on_interval) {
            Err(Busy) if attempt < attempts => {
                tracing::warn!(
                    "{}; trying again in {:.2} s",
                    NetError::Iperf3Busy {
                        addr: cfg.server,
                        attempt,
                        attempts
                    },
                    backoff.as_secs_f64()
                );
                let until = Instant::now() + backoff;
                while Instant::now() < until {
                    if interrupt.load(Ordering::Relaxed) {
                        return Err(NetError::Interrupted);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(Busy) => {
                return Err(NetError::Iperf3Busy {
                    addr: cfg.server,
                    attempt,
                    attempts,
                })
            }
            Ok(r) => return r,
        }
    }
    unreachable!("the last attempt returns")
}

/// The server was busy (the attempt may be repeated).
struct Busy;

/// One control connection, from the cookie to `IPERF_DONE`.
fn attempt_once(
    cfg: &ClientConfig,
    params: &Params,
    interrupt: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalMsg),
) -> Result<Result<ClientRun, NetError>, Busy> {
    let ctl = match connect_control(cfg) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let _ = ctl.set_nodelay(true);
    let mut raw = [0u8; COOKIE_CHARS];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw);
    let cookie = Cookie::from_random(raw);
    let timeouts = ClientTimeouts {
        handshake: cfg.timeouts.handshake.max(Duration::from_secs(5)),
        reply: cfg.timeouts.results.max(Duration::from_secs(5)),
    };
    let mut t = Test {
        cfg,
        ctl,
        conn: ClientConn::new(Instant::now(), cookie, params, timeouts),
        cookie,
        sockets: EndSockets::default(),
        senders: Vec::new(),
        engine: None,
        report: None,
        server: None,
        interrupted: false,
        stopped_by_server: None,
        udp: (params.protocol == IProtocol::Udp).then_some(UdpWire::Iperf3 {
            counters_64bit: params.udp_counters_64bit,
        }),
        finished_at: None,
    };
    let res = t.drive(interrupt, on_interval);
    match res {
        Err(Failure::Busy) => Err(Busy),
        Err(Failure::Net(e)) => {
            let _ = t.ctl.shutdown(Shutdown::Both);
            let Some(engine) = t.engine.as_mut() else {
                return Ok(Err(e));
            };
            let reason = e.abort_reason();
            if t.report.is_none() {
                t.report = engine.abort_and_wait(reason.clone(), Duration::from_secs(10));
            }
            Ok(Ok(t.finish(Some(reason))))
        }
        Ok(()) => Ok(Ok(t.finish(None))),
    }
}

/// Why an attempt ended early.
enum Failure {
    Busy,
    Net(NetError),
}

impl From<NetError> for Failure {
    fn from(e: NetError) -> Self {
        Failure::Net(e)
    }
}

/// One test in progress.
struct Test<'a> {
    cfg: &'a ClientConfig,
    ctl: TcpStream,
    conn: ClientConn,
    cookie: Cookie,
    sockets: EndSockets,
    /// Second handles on the sockets this end sends on, to see their last byte acknowledged.
    senders: Vec<TcpStream>,
    engine: Option<EngineRun>,
    report: Option<SideReport>,
    server: Option<Results>,
    interrupted: bool,
    stopped_by_server: Option<AbortReason>,
    /// A UDP test: iperf3's datagram header.
    udp: Option<UdpWire>,
    /// When the engine's report came.
    finished_at: Option<Instant>,
}

impl Test<'_> {
    fn proto(&self, source: ProtoError) -> NetError {
        NetError::Iperf3 {
            addr: self.cfg.server,
            source,
        }
    }

    fn flush(&mut self) -> Result<(), NetError> {
        let out = self.conn.take_output();
        if out.is_empty() {
            return Ok(());
        }
        let _ = self.ctl.set_write_timeout(Some(crate::conn::WRITE_TIMEOUT));
        self.ctl
            .write_all(&out)
            .map_err(NetError::io("writing to the iperf3 server"))
    }

    /// Read what the server sent within [`CONTROL_STEP`] and feed it to the machine.
    fn step(&mut self) -> Result<Vec<ClientEvent>, Failure> {
        let phase = self.conn.phase();
        if let Err(e) = self.conn.poll(Instant::now()) {
            return Err(self.proto(e).into());
        }
        let want = self.conn.wanted().clamp(1, 64 * 1024);
        let mut buf = vec![0u8; want];
        let _ = self.ctl.set_read_timeout(Some(CONTROL_STEP));
        let events = match self.ctl.read(&mut buf) {
            Ok(0) => match self.conn.eof() {
                Ok(ev) => ev.into_iter().collect(),
                // Closed before accepting the test: iperf3 is changing tests, or busy.
                Err(_) if phase == ClientPhase::AwaitParamExchange => return Err(Failure::Busy),
                Err(e) => return Err(self.proto(e).into()),
            },
            Ok(n) => self
                .conn
                .handle_bytes(Instant::now(), &buf[..n])
                .map_err(|e| self.proto(e))?,
            Err(e) if is_timeout(&e) => Vec::new(),
            Err(e) if phase == ClientPhase::AwaitParamExchange => {
                tracing::debug!("iperf3 control connection reset before PARAM_EXCHANGE: {e}");
                return Err(Failure::Busy);
            }
            Err(e) => return Err(NetError::io("reading from the iperf3 server")(e).into()),
        };
        self.flush()?;
        Ok(events)
    }

    fn drive(
        &mut self,
        interrupt: &AtomicBool,
        on_interval: &mut dyn FnMut(&IntervalMsg),
    ) -> Result<(), Failure> {
        self.flush()?;
        loop {
            if interrupt.load(Ordering::Relaxed) && !self.interrupted {
                self.interrupted = true;
                self.conn.terminate();
                let _ = self.flush();
                match self.engine.as_mut() {
                    Some(e) => {
                        self.report =
                            e.abort_and_wait(AbortReason::Interrupted, Duration::from_secs(10));
                        return Ok(());
                    }
                    None => return Err(NetError::Interrupted.into()),
                }
            }
            self.poll_engine(on_interval);
            if self.conn.phase() == ClientPhase::Running && self.time_is_up() {
                self.conn
                    .test_end(Instant::now())
                    .map_err(|e| self.proto(e))?;
                self.flush()?;
            }
            for ev in self.step()? {
                match ev {
                    ClientEvent::CreateStreams => self.open_streams()?,
                    ClientEvent::TestStart => {}
                    ClientEvent::TestRunning => self.start_engine()?,
                    ClientEvent::ExchangeResults => {
                        self.wait_engine(on_interval);
                        let mine =
                            crate::daemon::iperf3::convert::results_of(self.report.as_ref(), None);
                        self.conn
                            .send_results(Instant::now(), &mine)
                            .map_err(|e| self.proto(e))?;
                        self.flush()?;
                    }
                    ClientEvent::ServerResults(r) => self.server = Some(*r),
                    ClientEvent::Done => {
                        let _ = self.ctl.shutdown(Shutdown::Both);
                        return Ok(());
                    }
                    ClientEvent::AccessDenied => return Err(Failure::Busy),
                    ClientEvent::ServerError { code, errno } => {
                        return Err(NetError::Iperf3Refused {
                            addr: self.cfg.server,
                            code,
                            errno,
                        }
                        .into())
                    }
                    ClientEvent::ServerTerminate => {
                        self.stopped_by_server = Some(AbortReason::ServerShutdown);
                        if let Some(e) = self.engine.as_mut() {
                            self.report = e.abort_and_wait(
                                AbortReason::ServerShutdown,
                                Duration::from_secs(10),
                            );
                        }
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Open the data streams one after another: TCP, each starting with the cookie; UDP,
    /// each with its connect datagram and the server's reply ([`udp`]).
    fn open_streams(&mut self) -> Result<(), NetError> {
        let spec = &self.cfg.spec;
        let dirs = spec.flow_dirs();
        let deadline = Instant::now() + self.cfg.timeouts.handshake.max(Duration::from_secs(5));
        for flow in 0..spec.connection_count() {
            let from = Origin {
                ip: self.cfg.bind,
                port: self
                    .cfg
                    .data_port
                    .map(|p| p.saturating_add(u16::try_from(flow).unwrap_or(u16::MAX))),
            };
            if self.udp.is_some() {
                let (s, peer) = udp::connect_stream(self.cfg, from, deadline)?;
                self.sockets.udp.push((flow, s, peer));
                continue;
            }
            let s = connect_stream(self.cfg, from, &self.cookie)?;
            if dirs.get(flow as usize) == Some(&FlowDir::ClientToServer) {
                if let Ok(c) = s.try_clone() {
                    self.senders.push(c);
                }
            }
            self.sockets.conns.push((flow, s));
        }
        Ok(())
    }

    fn start_engine(&mut self) -> Result<(), NetError> {
        let spec = &self.cfg.spec;
        let local = self.ctl.local_addr().ok().map(|a| a.ip());
        let sockets = std::mem::take(&mut self.sockets);
        let end = EndParams {
            host: HostRole::Client,
            cpu: spec.common.client_cpu.map(|c| c as usize),
            policy: None,
            local,
            udp_wire: self.udp.unwrap_or(UdpWire::Native),
        };
        let data = setup_of(spec).plan(&end, sockets)?;
        self.engine = Some(
            EngineRun::start(end, spec, data, None).map_err(NetError::io("starting the engine"))?,
        );
        Ok(())
    }

    /// Relay the engine's samples; keep its report once it has finished.
    fn poll_engine(&mut self, on_interval: &mut dyn FnMut(&IntervalMsg)) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        while let Ok(sample) = engine.intervals.try_recv() {
            on_interval(&IntervalMsg {
                host: HostRole::Client,
                sample,
            });
        }
        if self.report.is_none() {
            self.report = engine.try_finish();
            if self.report.is_some() {
                self.finished_at = Some(Instant::now());
            }
        }
    }

    /// This end is done moving data: its stop instant has passed (receiving), and every flow
    /// it sends on has its FIN acknowledged (so all its bytes are); or the engine ended; or
    /// the drain limit after the stop instant has passed.
    fn time_is_up(&self) -> bool {
        let Some(engine) = self.engine.as_ref() else {
            return false;
        };
        let now = Instant::now();
        let stop = engine.nominal_end();
        if self.udp.is_some() {
            let dirs = self.cfg.spec.flow_dirs();
            let done = self.finished_at.map_or(stop, |f| f.min(stop));
            return if dirs.contains(&FlowDir::ClientToServer) {
                now >= done + UDP_TAIL_GRACE
            } else {
                now >= done
            };
        }
        if self.report.is_some() {
            return true;
        }
        if now >= stop + DRAIN_LIMIT {
            return true;
        }
        let receives = self.cfg.spec.flow_dirs().contains(&FlowDir::ServerToClient);
        if receives && now < stop {
            return false;
        }
        self.senders
            .iter()
            .all(|s| wirebench_sys::tcp::tcp_info(s).is_ok_and(|t| !matches!(t.state, 1 | 4)))
    }

    /// Wait (bounded) for the engine's report after `TEST_END`.
    fn wait_engine(&mut self, on_interval: &mut dyn FnMut(&IntervalMsg)) {
        let until = Instant::now() + DRAIN_LIMIT + Duration::from_secs(2);
        while self.report.is_none() && self.engine.is_some() && Instant::now() < until {
            self.poll_engine(on_interval);
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.report.is_none() {
            if let Some(e) = self.engine.as_mut() {
                self.report = e.abort_and_wait(
                    AbortReason::Timeout {
                        phase: "ending the engine after TEST_END".into(),
                    },
                    Duration::from_secs(5),
                );
            }
        }
    }

    /// The run as the runner sees it: this end's report, no wirebench server report, and the
    /// iperf3 server's figures.
    fn finish(mut self, failed: Option<AbortReason>) -> ClientRun {
        if self.interrupted {
            if let Some(r) = self.report.as_mut() {
                r.status = SideStatus::Aborted(AbortReason::Interrupted);
            }
        }
        let outcome = match (self.interrupted, failed, self.stopped_by_server.take()) {
            (true, _, _) => Outcome::Interrupted,
            (false, Some(r), _) | (false, None, Some(r)) => Outcome::Aborted(r),
            (false, None, None) => Outcome::Completed,
        };
        let iperf3 = self
            .server
            .take()
            .map(|r| server_figures(self.cfg.server, &self.cfg.spec, &r));
        ClientRun {
            outcome,
            client: self.report,
            server: None,
            iperf3,
        }
    }
}

/// Connect one data stream and send the cookie on it.
fn connect_stream(
    cfg: &ClientConfig,
    from: Origin,
    cookie: &Cookie,
) -> Result<TcpStream, NetError> {
    let server = cfg.server;
    let sock = Socket::new(
        Domain::for_address(server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(NetError::io("creating a data socket"))?;
    sockopt::apply(&sock, &cfg.spec)?;
    from.bind(&sock)?;
    sock.connect_timeout(&server.into(), cfg.connect_timeout)
        .map_err(|source| NetError::Connect {
            addr: server,
            source,
        })?;
    sockopt::reassert_congestion(&sock, &cfg.spec);
    let mut s: TcpStream = sock.into();
    s.set_write_timeout(Some(cfg.connect_timeout))
        .map_err(NetError::io("configuring a data socket"))?;
    s.write_all(&cookie.encode())
        .map_err(NetError::io("sending the cookie on a data stream"))?;
    Ok(s)
}

/// The server's results as the model's figures: strings escaped, stream ids mapped to this
/// test's flows, the server's role on each.
fn server_figures(addr: SocketAddr, spec: &TestSpec, r: &Results) -> Iperf3Server {
    let dirs = spec.flow_dirs();
    let is_udp = matches!(spec.workload, WorkloadSpec::UdpStream(_));
    let flow_of = |id: u32| {
        (0..spec.connection_count())
            .find(|&f| Params::stream_id(f) == id && (f as usize) < dirs.len())
    };
    let streams = r
        .streams
        .iter()
        .map(|s| {
            let flow = flow_of(s.id);
            let role = match flow.and_then(|f| dirs.get(f as usize)) {
                Some(FlowDir::ServerToClient) => Role::Sender,
                _ => Role::Receiver,
            };
            let receiver = role == Role::Receiver;
            let udp = is_udp.then(|| Iperf3UdpStream {
                packets: u64::try_from(s.packets).unwrap_or(0),
                lost: receiver.then(|| u64::try_from(s.errors).unwrap_or(0)),
                jitter_ms: receiver.then_some(s.jitter_s * 1000.0),
            });
            Iperf3Stream {
                id: s.id,
                flow,
                role,
                bytes: s.bytes,
                retransmits: if is_udp {
                    None
                } else {
                    u64::try_from(s.retransmits).ok()
                },
                start_s: s.start_time_s,
                end_s: s.end_time_s,
                throughput_bps: 0.0,
                udp,
            }
        })
        .collect();
    Iperf3Server {
        address: addr.to_string(),
        cpu_util_total_pct: r.cpu_util_total,
        cpu_util_user_pct: r.cpu_util_user,
        cpu_util_system_pct: r.cpu_util_system,
        congestion_used: r.congestion_used.as_deref().map(escape),
        streams,
        reconciliation: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_from_a_spec() {
        let mut spec = TestSpec::stream_default();
        spec.common.duration_ms = 1500;
        spec.common.flows = 2;
        let p = params_of(&spec).unwrap();
        assert_eq!(p.time_s, 2);
        assert_eq!(p.parallel, 2);
        assert_eq!(p.direction, IDirection::Forward);
        spec.common.warmup_ms = 500;
        assert!(params_of(&spec).unwrap_err().contains("whole seconds"));
    }

    #[test]
    fn udp_params_from_a_spec() {
        let mut spec = TestSpec::stream_default();
        spec.common.flows = 3;
        spec.workload = WorkloadSpec::UdpStream(wirebench_model::spec::UdpStreamSpec {
            direction: Direction::Reverse,
            datagram_bytes: 1400,
            rate_bps: Some(50_000_000),
        });
        let p = params_of(&spec).unwrap();
        assert_eq!(p.protocol, IProtocol::Udp);
        assert_eq!(p.direction, IDirection::Reverse);
        assert_eq!(
            (p.len_bytes, p.bandwidth_bps, p.parallel),
            (1400, 50_000_000, 3)
        );
        // On the wire: "udp", "reverse", the length and the rate per stream.
        let sent = Params::decode(p.encode().as_bytes()).unwrap();
        assert_eq!(sent, p);
        if let WorkloadSpec::UdpStream(u) = &mut spec.workload {
            u.rate_bps = None;
            u.datagram_bytes = 65_508;
        }
        assert!(params_of(&spec).unwrap_err().contains("16 to 65507"));
        if let WorkloadSpec::UdpStream(u) = &mut spec.workload {
            u.datagram_bytes = 1400;
        }
        // Unpaced is iperf3's -b 0, sent as such.
        let p = params_of(&spec).unwrap();
        assert!(p.encode().contains("\"bandwidth\":0"));
    }

    #[test]
    fn stream_ids_map_to_flows_and_the_servers_role() {
        let mut spec = TestSpec::stream_default();
        spec.common.flows = 2;
        if let WorkloadSpec::Stream(s) = &mut spec.workload {
            s.direction = Direction::Bidir;
        }
        let r = Results::decode(br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":1,"congestion_used":"cubic\u001b[2J","streams":[{"id":1,"bytes":10,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0},{"id":5,"bytes":20,"retransmits":3,"jitter":0,"errors":0,"packets":0},{"id":9,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#).unwrap();
        let f = server_figures("127.0.0.1:5201".parse().unwrap(), &spec, &r);
        assert_eq!(f.streams[0].flow, Some(0));
        assert_eq!(f.streams[0].role, Role::Receiver);
        assert_eq!(f.streams[0].retransmits, None);
        assert_eq!(f.streams[1].flow, Some(3));
        assert_eq!(f.streams[1].role, Role::Sender);
        assert_eq!(f.streams[1].retransmits, Some(3));
        assert_eq!(f.streams[2].flow, None);
        assert!(!f.congestion_used.unwrap().contains('\u{1b}'));
    }
}
