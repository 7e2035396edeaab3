//! The daemon: `wirebench serve`.
//!
//! One listening socket carries both kinds of connection; the first four bytes say which
//! (`WBC1` control, `WBD1` data). Each accepted connection gets a short-lived thread with an
//! absolute handshake deadline. Control connections run a [`ServerSession`]; data connections
//! present a per-test token and are handed to the test that issued it. Tests run side by side
//! up to `Limits::max_concurrent_tests`; past the cap a client gets an explicit `busy` answer.
//! Nothing a client does can make the daemon stop serving others: every wait is bounded,
//! every allocation is capped by the frame decoder, and SIGPIPE is ignored.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::RngCore;
use wirebench_proto::data::{classify, ConnKind, DataHello, Token, DATA_HELLO_BYTES};
use wirebench_proto::frame::DEFAULT_MAX_FRAME_BYTES;
use wirebench_proto::measure::{HostRole, SideReport};
use wirebench_proto::message::{IntervalMsg, Message};
use wirebench_proto::session::{Action, Phase, ServerSession, SessionError, Timeouts};
use wirebench_proto::spec::{Limits, TestSpec};

use crate::conn::{read_exact_by, Control};
use crate::run::{plans_for, EngineRun};
use crate::{sockopt, NetError};

/// Daemon configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Policy limits applied to every TestSpec.
    pub limits: Limits,
    /// Protocol deadlines.
    pub timeouts: Timeouts,
    /// Connections (of any kind) handled at once; more are closed on accept.
    pub max_connections: usize,
    /// How many finished tests the daemon remembers.
    pub record_capacity: usize,
}

impl ServerConfig {
    /// Defaults for a given bind address.
    pub fn new(bind: SocketAddr) -> Self {
        ServerConfig {
            bind,
            limits: Limits::default(),
            timeouts: Timeouts::default(),
            max_connections: 512,
            record_capacity: 1000,
        }
    }
}

/// What the daemon remembers about a test it served.
#[derive(Debug, Clone)]
pub struct TestRecord {
    /// Server-assigned id.
    pub test_id: u64,
    /// Client address of the control connection.
    pub peer: SocketAddr,
    /// Unix time the test was admitted, milliseconds.
    pub admitted_unix_ms: u64,
    /// The spec.
    pub spec: TestSpec,
    /// `None` if it completed, else why it ended early.
    pub failure: Option<String>,
    /// What the server measured (partial if aborted).
    pub server: Option<SideReport>,
    /// What the client reported, if it got that far.
    pub client: Option<SideReport>,
}

type DataConn = (u32, TcpStream);

struct State {
    cfg: ServerConfig,
    running: AtomicU32,
    next_id: AtomicU64,
    open_connections: AtomicUsize,
    pending: Mutex<HashMap<Token, mpsc::Sender<DataConn>>>,
    records: Mutex<VecDeque<TestRecord>>,
    shutdown: AtomicBool,
}

/// A bound daemon, ready to [`Daemon::run`].
pub struct Daemon {
    listener: TcpListener,
    state: Arc<State>,
}

/// Handle to a daemon running on a background thread (the embedded loopback server).
pub struct DaemonHandle {
    addr: SocketAddr,
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

/// Counters a test or an operator can read from a running daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaemonStats {
    /// Tests running now.
    pub running_tests: u32,
    /// Connections being handled now.
    pub open_connections: usize,
    /// Tests remembered.
    pub records: usize,
}

impl Daemon {
    /// Bind the listening socket.
    pub fn bind(cfg: ServerConfig) -> Result<Daemon, NetError> {
        wirebench_sys::process::ignore_sigpipe().map_err(NetError::io("ignoring SIGPIPE"))?;
        let listener = TcpListener::bind(cfg.bind).map_err(|source| NetError::Bind {
            addr: cfg.bind,
            source,
        })?;
        Ok(Daemon {
            listener,
            state: Arc::new(State {
                cfg,
                running: AtomicU32::new(0),
                next_id: AtomicU64::new(1),
                open_connections: AtomicUsize::new(0),
                pending: Mutex::new(HashMap::new()),
                records: Mutex::new(VecDeque::new()),
                shutdown: AtomicBool::new(false),
            }),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until shut down.
    pub fn run(self) {
        let state = self.state;
        let mut last_accept_error: Option<Instant> = None;
        for conn in self.listener.incoming() {
            if state.shutdown.load(Ordering::Relaxed) {
                break;
            }
            match conn {
                Ok(stream) => {
                    let open = state.open_connections.fetch_add(1, Ordering::AcqRel);
                    if open >= state.cfg.max_connections {
                        state.open_connections.fetch_sub(1, Ordering::AcqRel);
                        drop(stream);
                        continue;
                    }
                    let st = Arc::clone(&state);
                    let spawned = thread::Builder::new()
                        .name("wb-conn".into())
                        .spawn(move || {
                            handle_connection(stream, &st);
                            st.open_connections.fetch_sub(1, Ordering::AcqRel);
                        });
                    if spawned.is_err() {
                        state.open_connections.fetch_sub(1, Ordering::AcqRel);
                        thread::sleep(Duration::from_millis(50));
                    }
                }
                Err(e) => {
                    // EMFILE/ENFILE and friends: back off instead of spinning.
                    let now = Instant::now();
                    if last_accept_error.is_none_or(|t| now - t > Duration::from_secs(5)) {
                        tracing::warn!("accept failed: {e}; backing off");
                        last_accept_error = Some(now);
                    }
                    thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Run on a background thread; the handle stops it when dropped.
    pub fn spawn(self) -> io::Result<DaemonHandle> {
        let addr = self.local_addr()?;
        let state = Arc::clone(&self.state);
        let thread = thread::Builder::new()
            .name("wb-daemon".into())
            .spawn(move || self.run())?;
        Ok(DaemonHandle {
            addr,
            state,
            thread: Some(thread),
        })
    }
}

impl DaemonHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Current counters.
    pub fn stats(&self) -> DaemonStats {
        stats_of(&self.state)
    }

    /// The tests served so far, oldest first.
    pub fn records(&self) -> Vec<TestRecord> {
        self.state
            .records
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        self.state.shutdown.store(true, Ordering::Relaxed);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn stats_of(state: &State) -> DaemonStats {
    DaemonStats {
        running_tests: state.running.load(Ordering::Relaxed),
        open_connections: state.open_connections.load(Ordering::Relaxed),
        records: state.records.lock().map(|r| r.len()).unwrap_or(0),
    }
}

fn handle_connection(mut stream: TcpStream, state: &State) {
    let peer = match stream.peer_addr() {
        Ok(p) => p,
        Err(_) => return,
    };
    let deadline = Instant::now() + state.cfg.timeouts.handshake;
    let mut preamble = [0u8; 4];
    if read_exact_by(&mut stream, &mut preamble, deadline).is_err() {
        tracing::debug!(%peer, "connection closed or silent before its preamble");
        return;
    }
    match classify(&preamble) {
        Ok(ConnKind::Data) => {
            let mut body = [0u8; DATA_HELLO_BYTES];
            if read_exact_by(&mut stream, &mut body, deadline).is_err() {
                return;
            }
            let Ok(hello) = DataHello::decode_body(&body) else {
                return;
            };
            let tx = state
                .pending
                .lock()
                .ok()
                .and_then(|p| p.get(&hello.token).cloned());
            match tx {
                Some(tx) => {
                    let _ = tx.send((hello.flow, stream));
                }
                None => tracing::info!(%peer, "data connection with an unknown test token refused"),
            }
        }
        Ok(ConnKind::Control) => control_session(stream, peer, state),
        Err(e) => {
            tracing::info!(%peer, "not a wirebench connection: {e}");
        }
    }
}

/// Frees the concurrent-test slot and the token when the session ends, however it ends.
struct Admission<'a> {
    state: &'a State,
    token: Token,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.state.pending.lock() {
            p.remove(&self.token);
        }
        self.state.running.fetch_sub(1, Ordering::AcqRel);
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

struct TestState<'a> {
    admission: Option<Admission<'a>>,
    test_id: u64,
    spec: Option<TestSpec>,
    data_rx: Option<mpsc::Receiver<DataConn>>,
    conns: Vec<DataConn>,
    engine: Option<EngineRun>,
    server_report: Option<SideReport>,
    client_report: Option<SideReport>,
    admitted_unix_ms: u64,
}

fn control_session(stream: TcpStream, peer: SocketAddr, state: &State) {
    let t = &state.cfg.timeouts;
    let mut conn = Control::new(stream, DEFAULT_MAX_FRAME_BYTES);
    let mut sess = ServerSession::new(
        Instant::now(),
        *t,
        state.cfg.limits.clone(),
        crate::software(),
    );
    let mut ts = TestState {
        admission: None,
        test_id: 0,
        spec: None,
        data_rx: None,
        conns: Vec::new(),
        engine: None,
        server_report: None,
        client_report: None,
        admitted_unix_ms: 0,
    };
    let result = drive(&mut conn, &mut sess, &mut ts, state);
    let failure = match &result {
        Ok(()) => None,
        Err(e) => Some(e.to_string()),
    };
    if let Err(e) = &result {
        if let NetError::Session(se) = e {
            if let Some(em) = se.to_error_msg() {
                let _ = conn.send(&Message::Error(em));
            }
        }
        tracing::info!(%peer, test_id = ts.test_id, "session ended: {e}");
    }
    if let Some(engine) = ts.engine.as_mut() {
        if ts.server_report.is_none() {
            ts.server_report = engine.abort_and_wait(
                failure.as_deref().unwrap_or("session ended"),
                Duration::from_secs(10),
            );
        }
    }
    if let Some(spec) = ts.spec.take() {
        if ts.admission.is_some() {
            record(
                state,
                TestRecord {
                    test_id: ts.test_id,
                    peer,
                    admitted_unix_ms: ts.admitted_unix_ms,
                    spec,
                    failure,
                    server: ts.server_report.take(),
                    client: ts.client_report.take(),
                },
            );
        }
    }
    drop(ts.admission.take());
}

fn record(state: &State, rec: TestRecord) {
    tracing::info!(
        test_id = rec.test_id,
        peer = %rec.peer,
        status = rec.failure.as_deref().unwrap_or("completed"),
        "test finished"
    );
    if let Ok(mut r) = state.records.lock() {
        while r.len() >= state.cfg.record_capacity.max(1) {
            r.pop_front();
        }
        r.push_back(rec);
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
        // Phase-specific work that is not driven by control frames.
        if sess.phase() == Phase::AwaitData {
            if let Some(rx) = &ts.data_rx {
                let count = ts.spec.as_ref().map(|s| s.connection_count()).unwrap_or(0);
                while let Ok(c) = rx.try_recv() {
                    // A flow id out of range or seen before is closed (dropped) here.
                    if c.0 < count && !ts.conns.iter().any(|(f, _)| *f == c.0) {
                        ts.conns.push(c);
                    }
                }
            }
            let want = ts.spec.as_ref().map(|s| s.connection_count()).unwrap_or(0) as usize;
            if want > 0 && ts.conns.len() >= want {
                if let Some(adm) = &ts.admission {
                    if let Ok(mut p) = state.pending.lock() {
                        p.remove(&adm.token);
                    }
                }
                ts.data_rx = None;
                let spec = ts.spec.as_ref().expect("spec set when admitted");
                for (_, s) in &ts.conns {
                    sockopt::apply(s, spec)?;
                }
                let acts = sess.data_ready(now);
                if execute(conn, sess, ts, state, acts)? {
                    return Ok(());
                }
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
                    ts.server_report = Some(report.clone());
                    let acts = sess.engine_done(now, report);
                    if execute(conn, sess, ts, state, acts)? {
                        return Ok(());
                    }
                }
            }
        }
        let acts = sess.poll(now)?;
        if execute(conn, sess, ts, state, acts)? {
            return Ok(());
        }
        let mut until = now + Duration::from_millis(50);
        if let Some(w) = sess.next_wakeup() {
            until = until.min(w.max(now + Duration::from_millis(1)));
        }
        // Results frames of a big test may exceed the default cap; the session knows its size.
        conn.set_max_frame(sess.frame_cap());
        if let Some(msg) = conn.recv(until)? {
            let acts = sess.handle(Instant::now(), msg)?;
            if execute(conn, sess, ts, state, acts)? {
                return Ok(());
            }
        }
    }
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
                let cap = state.cfg.limits.max_concurrent_tests;
                let prev = state.running.fetch_add(1, Ordering::AcqRel);
                if prev >= cap {
                    state.running.fetch_sub(1, Ordering::AcqRel);
                    queue.extend(sess.busy(prev, cap, 1000));
                    continue;
                }
                let mut raw = [0u8; 16];
                rand::rng().fill_bytes(&mut raw);
                let token = Token(raw);
                let (tx, rx) = mpsc::channel();
                if let Ok(mut p) = state.pending.lock() {
                    p.insert(token, tx);
                }
                ts.admission = Some(Admission { state, token });
                ts.test_id = state.next_id.fetch_add(1, Ordering::Relaxed);
                ts.admitted_unix_ms = unix_ms();
                ts.data_rx = Some(rx);
                ts.spec = Some(*spec);
                queue.extend(sess.admitted(Instant::now(), ts.test_id, token));
            }
            Action::StartEngine => {
                let spec = ts.spec.clone().expect("spec set before start");
                let plans = plans_for(HostRole::Server, &spec, std::mem::take(&mut ts.conns));
                let cpu = spec.server_cpu.map(|c| c as usize);
                ts.engine = Some(
                    EngineRun::start(HostRole::Server, &spec, cpu, plans)
                        .map_err(NetError::io("starting the engine"))?,
                );
            }
            Action::StopEngine { reason } => {
                if let Some(e) = ts.engine.as_ref() {
                    tracing::info!(test_id = ts.test_id, "client asked to stop: {reason}");
                    e.abort.store(true, Ordering::Relaxed);
                }
            }
            Action::PeerInterval(_) => {}
            Action::PeerResults(r) => ts.client_report = Some(*r),
            Action::OpenData { .. } => {
                return Err(NetError::Session(SessionError::Unexpected {
                    phase: sess.phase(),
                    got: "open_data",
                }))
            }
            Action::Close => return Ok(true),
        }
    }
    Ok(false)
}
