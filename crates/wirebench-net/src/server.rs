//! The daemon: `wirebench serve`.
//!
//! One listening socket carries both kinds of connection; the first four bytes say which
//! (`WBC1` control, `WBD1` data). Each accepted connection gets a short-lived thread with an
//! absolute handshake deadline. Control connections run a [`ServerSession`]; data connections
//! present a per-test token and are handed to the test that issued it. Tests run side by side
//! up to `Limits::max_concurrent_tests`; past the cap a client gets an explicit `busy` answer.
//!
//! # Defences
//! Nothing a client does can make the daemon stop serving others:
//! - every wait is bounded (absolute handshake deadline, heartbeats and a silence limit while
//!   a test runs, a deadline on results), every allocation is capped by the frame decoder,
//!   and SIGPIPE is ignored;
//! - connections are capped in total ([`ServerConfig::max_connections`]) and per source
//!   address ([`ServerConfig::max_conns_per_source`], answered with a `limit_exceeded`
//!   error frame);
//! - connections still in their handshake (before a data hello matched a test, or before a
//!   control session's test was admitted) are capped too
//!   ([`ServerConfig::max_pending_handshakes`]): past the cap the *oldest* is closed, so a
//!   crowd of slow-drip connections cannot starve a legitimate client. A connection whose
//!   complete data hello is already queued is only waiting for its thread (a burst of
//!   thousands of flows) and is not evicted (when all the oldest are like that, a newcomer
//!   goes untracked, bounded by its handshake deadline); the hello is peeked, not read,
//!   until the connection has left the handshake queue, so one evicted meanwhile is never
//!   handed on;
//! - `accept` errors (EMFILE) back off instead of spinning; log lines about refused or
//!   non-protocol connections are rate-limited;
//! - with a key table, a test is admitted only after HMAC challenge-response authentication
//!   ([`wirebench_proto::auth`]);
//! - policy limits are checked at admission (the TestSpec) and while the test runs (the
//!   aggregate receive rate, the flow count of data connections, the duration).
//!
//! Every admitted test leaves exactly one [`TestRecord`] — completed, aborted or failed, with
//! whatever partial results exist — in a bounded in-memory ring and, if configured, appended
//! to a JSON-lines file.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::RngCore;
use serde::Serialize;
use wirebench_proto::auth::{KeyTable, Nonce, NONCE_BYTES};
use wirebench_proto::data::{
    classify, ConnKind, DataHello, Token, DATA_HELLO_BYTES, PREAMBLE_BYTES,
};
use wirebench_proto::frame::{self, DEFAULT_MAX_FRAME_BYTES};
use wirebench_proto::measure::{HostRole, SideReport, SideStatus};
use wirebench_proto::message::{ErrorCode, ErrorMsg, IntervalMsg, Message};
use wirebench_proto::session::{Action, Phase, ServerAuth, ServerSession, SessionError, Timeouts};
use wirebench_proto::spec::{Limits, TestSpec, Workload};

use crate::conn::{peek_exact_by, queued_bytes, read_exact_by, Control};
use crate::run::{plans_for, DataPlan, EngineRun};
use crate::{sockopt, udpsetup, NetError};
use wirebench_engine::rr::{CrrServerFlow, RrFlows, TcpRrFlow, UdpRrFlow};
use wirebench_engine::udp::{UdpPlan, UdpRecvSocket, UdpSendFlow};

/// Stack of a connection thread (the engine's data threads get the default).
const CONN_THREAD_STACK_BYTES: usize = 512 * 1024;

/// Daemon configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Policy limits applied to every TestSpec.
    pub limits: Limits,
    /// Protocol deadlines (`handshake` is the absolute handshake deadline, `peer_silence` the
    /// idle timeout while a test runs).
    pub timeouts: Timeouts,
    /// Connections (of any kind) handled at once; more are closed on accept.
    pub max_connections: usize,
    /// Connections from one source address handled at once (control and data); more get a
    /// `limit_exceeded` error frame and are closed.
    pub max_conns_per_source: usize,
    /// Connections still in their handshake; past this the oldest is closed.
    pub max_pending_handshakes: usize,
    /// How many finished tests the daemon remembers in memory.
    pub record_capacity: usize,
    /// Append every test record to this JSON-lines file.
    pub records_path: Option<PathBuf>,
    /// Rotate the records file (to `FILE.1`) before it grows past this size.
    pub records_max_bytes: u64,
    /// Identities and keys; `None` admits unauthenticated clients.
    pub keys: Option<Arc<KeyTable>>,
    /// This server's identity (sent in the welcome, covered by the clients' MACs).
    pub server_identity: String,
}

impl ServerConfig {
    /// Defaults for a given bind address.
    pub fn new(bind: SocketAddr) -> Self {
        let limits = Limits::default();
        ServerConfig {
            bind,
            max_conns_per_source: default_conns_per_source(&limits),
            limits,
            timeouts: Timeouts::default(),
            max_connections: 1024,
            max_pending_handshakes: 256,
            record_capacity: 1000,
            records_path: None,
            records_max_bytes: 64 << 20,
            keys: None,
            server_identity: wirebench_sys::host::hostname().unwrap_or_else(|_| "wirebench".into()),
        }
    }
}

/// Room for one largest test (every data connection of a bidirectional test at
/// `max_flows`, plus its control connection) and a few more.
pub fn default_conns_per_source(limits: &Limits) -> usize {
    (limits.max_flows as usize)
        .saturating_mul(2)
        .saturating_add(16)
}

/// How an admitted test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// Both ends ran to the end and exchanged results.
    Completed,
    /// The test was stopped early (client interrupt, server limit or shutdown); partial
    /// results are kept.
    Aborted,
    /// The session failed (timeout, lost peer, protocol error).
    Failed,
}

/// What the daemon remembers about a test it served.
#[derive(Debug, Clone, Serialize)]
pub struct TestRecord {
    /// Server-assigned id.
    pub test_id: u64,
    /// Client address of the control connection.
    pub peer: SocketAddr,
    /// The identity the client authenticated as, if the daemon requires authentication.
    pub identity: Option<String>,
    /// Unix time the test was admitted, milliseconds.
    pub admitted_unix_ms: u64,
    /// Unix time the record was written, milliseconds.
    pub ended_unix_ms: u64,
    /// The spec.
    pub spec: TestSpec,
    /// How it ended.
    pub status: RecordStatus,
    /// Why it did not complete, if it did not.
    pub reason: Option<String>,
    /// What the server measured (partial if aborted).
    pub server: Option<SideReport>,
    /// What the client reported, if it got that far.
    pub client: Option<SideReport>,
}

/// A data connection handed to its test: flow id, socket, and its accounting slot.
type DataConn = (u32, TcpStream, ConnSlot);

/// Where the data connections of an admitted test go.
#[derive(Clone)]
enum PendingTest {
    /// Setup connections, collected by the test's control session.
    Setup(mpsc::Sender<DataConn>),
    /// CRR while the engine runs: one connection per transaction, straight to the flow's
    /// server thread (a bounded queue; a connection that finds it full is closed).
    Crr(Vec<mpsc::SyncSender<TcpStream>>),
}

/// Connections a CRR flow may have queued for its server thread.
const CRR_QUEUE: usize = 64;

/// Append-only JSON-lines file of test records, rotated at a size cap.
struct RecordLog {
    path: PathBuf,
    file: File,
    bytes: u64,
    max_bytes: u64,
}

impl RecordLog {
    fn open(path: &Path, max_bytes: u64) -> io::Result<RecordLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let bytes = file.metadata()?.len();
        Ok(RecordLog {
            path: path.to_path_buf(),
            file,
            bytes,
            max_bytes,
        })
    }

    fn append(&mut self, line: &[u8]) -> io::Result<()> {
        if self.bytes > 0 && self.bytes + line.len() as u64 > self.max_bytes {
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            std::fs::rename(&self.path, &old)?;
            self.file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            self.bytes = 0;
        }
        self.file.write_all(line)?;
        self.file.sync_data()?;
        self.bytes += line.len() as u64;
        Ok(())
    }
}

/// At most [`LogLimiter::PER_SECOND`] lines a second about refused connections; the rest are
/// counted and summarised.
struct LogLimiter {
    window: Option<Instant>,
    shown: u32,
    suppressed: u64,
}

impl LogLimiter {
    const PER_SECOND: u32 = 5;

    /// True if this line may be logged now.
    fn allow(&mut self, now: Instant) -> bool {
        let fresh = self
            .window
            .is_none_or(|w| now.saturating_duration_since(w) >= Duration::from_secs(1));
        if fresh {
            if self.suppressed > 0 {
                tracing::info!(
                    "{} similar messages about refused connections suppressed",
                    self.suppressed
                );
            }
            self.window = Some(now);
            self.shown = 0;
            self.suppressed = 0;
        }
        if self.shown < Self::PER_SECOND {
            self.shown += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}

/// Bytes of a complete data-connection handshake (preamble and hello). A handshaking
/// connection with this many bytes queued is waiting for its thread, not dripping, and is
/// not evicted.
const HANDSHAKE_READY_BYTES: usize = PREAMBLE_BYTES + DATA_HELLO_BYTES;

/// How many of the oldest handshakes an accept looks at for one to evict.
const EVICTION_SCAN: usize = 64;

/// Connections still in their handshake, oldest first, with a handle to close them.
#[derive(Default)]
struct Handshakes {
    next_id: u64,
    queue: VecDeque<(u64, TcpStream)>,
}

struct State {
    cfg: ServerConfig,
    running: AtomicU32,
    next_id: AtomicU64,
    open_connections: AtomicUsize,
    per_source: Mutex<HashMap<IpAddr, usize>>,
    handshakes: Mutex<Handshakes>,
    pending: Mutex<HashMap<Token, PendingTest>>,
    records: Mutex<VecDeque<TestRecord>>,
    record_log: Option<Mutex<RecordLog>>,
    log_limiter: Mutex<LogLimiter>,
    shutdown: AtomicBool,
    evicted: AtomicU64,
}

/// One connection's share of the daemon's counters; released when dropped.
struct ConnSlot {
    state: Arc<State>,
    ip: IpAddr,
    handshake: Option<u64>,
}

impl ConnSlot {
    /// The connection finished its handshake: it no longer counts against (or can be evicted
    /// by) the handshake cap. Returns false if it had been evicted (and shut down) already.
    fn end_handshake(&mut self) -> bool {
        let Some(id) = self.handshake.take() else {
            return true;
        };
        let Ok(mut h) = self.state.handshakes.lock() else {
            return true;
        };
        let before = h.queue.len();
        h.queue.retain(|(i, _)| *i != id);
        h.queue.len() < before
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        let _ = self.end_handshake();
        if let Ok(mut m) = self.state.per_source.lock() {
            if let Some(c) = m.get_mut(&self.ip) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    m.remove(&self.ip);
                }
            }
        }
        self.state.open_connections.fetch_sub(1, Ordering::AcqRel);
    }
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
    /// Handshaking connections closed to make room for newer ones.
    pub evicted_handshakes: u64,
}

impl Daemon {
    /// Bind the listening socket (and open the records file, if configured).
    pub fn bind(cfg: ServerConfig) -> Result<Daemon, NetError> {
        wirebench_sys::process::ignore_sigpipe().map_err(NetError::io("ignoring SIGPIPE"))?;
        let record_log = match &cfg.records_path {
            Some(p) => Some(Mutex::new(
                RecordLog::open(p, cfg.records_max_bytes).map_err(|source| {
                    NetError::RecordsFile {
                        path: p.clone(),
                        source,
                    }
                })?,
            )),
            None => None,
        };
        let listener = listen(cfg.bind).map_err(|source| NetError::Bind {
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
                per_source: Mutex::new(HashMap::new()),
                handshakes: Mutex::new(Handshakes::default()),
                pending: Mutex::new(HashMap::new()),
                records: Mutex::new(VecDeque::new()),
                record_log,
                log_limiter: Mutex::new(LogLimiter {
                    window: None,
                    shown: 0,
                    suppressed: 0,
                }),
                shutdown: AtomicBool::new(false),
                evicted: AtomicU64::new(0),
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
                Ok(stream) => admit_connection(stream, &state),
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

/// Accept backlog: a connection flood must not overflow the queue (an overflowing queue drops
/// SYNs, and every legitimate client caught in it waits a full SYN retransmission timeout).
const LISTEN_BACKLOG: i32 = 4096;

fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(LISTEN_BACKLOG)?;
    Ok(s.into())
}

/// Count, check and hand a freshly accepted connection to its own thread.
fn admit_connection(stream: TcpStream, state: &Arc<State>) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let open = state.open_connections.fetch_add(1, Ordering::AcqRel);
    if open >= state.cfg.max_connections {
        state.open_connections.fetch_sub(1, Ordering::AcqRel);
        refuse(
            stream,
            state,
            peer,
            "max_connections",
            format!(
                "the server is handling its maximum of {} connections",
                state.cfg.max_connections
            ),
        );
        return;
    }
    let over_source = match state.per_source.lock() {
        Ok(mut m) => {
            let c = m.entry(peer.ip()).or_insert(0);
            if *c >= state.cfg.max_conns_per_source {
                true
            } else {
                *c += 1;
                false
            }
        }
        Err(_) => true,
    };
    if over_source {
        state.open_connections.fetch_sub(1, Ordering::AcqRel);
        refuse(
            stream,
            state,
            peer,
            "max_conns_per_source",
            format!(
                "{} connections from {} are open, the most this server allows per source address",
                state.cfg.max_conns_per_source,
                peer.ip()
            ),
        );
        return;
    }
    let mut slot = ConnSlot {
        state: Arc::clone(state),
        ip: peer.ip(),
        handshake: None,
    };
    // Register as handshaking; at the cap, evict the oldest handshake that is not merely
    // waiting for its thread first. One with a complete data handshake queued is a
    // legitimate client in a burst (10000 flows connect at once), not a slow drip, and is
    // left alone; if the oldest are all like that, this connection is not registered (no
    // clone of its descriptor is kept) and only its handshake deadline bounds it.
    if let Ok(mut h) = state.handshakes.lock() {
        let cap = state.cfg.max_pending_handshakes.max(1);
        if h.queue.len() >= cap {
            let victim = h
                .queue
                .iter()
                .take(EVICTION_SCAN)
                .position(|(_, s)| queued_bytes(s) < HANDSHAKE_READY_BYTES);
            if let Some((_, old)) = victim.and_then(|at| h.queue.remove(at)) {
                let _ = old.shutdown(Shutdown::Both);
                state.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        if h.queue.len() < cap {
            if let Ok(clone) = stream.try_clone() {
                let id = h.next_id;
                h.next_id += 1;
                h.queue.push_back((id, clone));
                slot.handshake = Some(id);
            }
        }
    }
    let st = Arc::clone(state);
    let spawned = thread::Builder::new()
        .name("wb-conn".into())
        .stack_size(CONN_THREAD_STACK_BYTES)
        .spawn(move || handle_connection(stream, peer, &st, slot));
    if spawned.is_err() {
        // The slot went down with the closure: counters are already released.
        thread::sleep(Duration::from_millis(50));
    }
}

/// Tell a refused peer why (one best-effort error frame, never blocking) and close.
fn refuse(stream: TcpStream, state: &State, peer: SocketAddr, limit: &str, message: String) {
    if state
        .log_limiter
        .lock()
        .map(|mut l| l.allow(Instant::now()))
        .unwrap_or(false)
    {
        tracing::warn!(%peer, limit, "connection refused: {message}");
    }
    let _ = stream.set_nonblocking(true);
    let frame = frame::encode(&Message::Error(ErrorMsg {
        code: ErrorCode::LimitExceeded,
        field: Some(limit.to_string()),
        message,
    }));
    let _ = (&stream).write(&frame);
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

    /// Stop accepting, abort the running tests (their clients get an `abort` and the
    /// results exchange still happens, so partial results are recorded on both ends) and
    /// wait up to `grace` for every connection to finish. Returns how many were still open.
    pub fn shutdown(mut self, grace: Duration) -> usize {
        self.stop_accepting();
        let until = Instant::now() + grace;
        while Instant::now() < until && self.state.open_connections.load(Ordering::Acquire) > 0 {
            thread::sleep(Duration::from_millis(20));
        }
        self.state.open_connections.load(Ordering::Acquire)
    }

    fn stop_accepting(&mut self) {
        self.state.shutdown.store(true, Ordering::Relaxed);
        // Wake the blocking accept.
        let wake = match self.addr.ip() {
            IpAddr::V4(a) if a.is_unspecified() => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), self.addr.port())
            }
            IpAddr::V6(a) if a.is_unspecified() => {
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), self.addr.port())
            }
            _ => self.addr,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        self.stop_accepting();
    }
}

fn stats_of(state: &State) -> DaemonStats {
    DaemonStats {
        running_tests: state.running.load(Ordering::Relaxed),
        open_connections: state.open_connections.load(Ordering::Relaxed),
        records: state.records.lock().map(|r| r.len()).unwrap_or(0),
        evicted_handshakes: state.evicted.load(Ordering::Relaxed),
    }
}

fn log_refused(state: &State, peer: SocketAddr, what: &str) {
    if state
        .log_limiter
        .lock()
        .map(|mut l| l.allow(Instant::now()))
        .unwrap_or(false)
    {
        tracing::info!(%peer, "{what}");
    }
}

fn handle_connection(mut stream: TcpStream, peer: SocketAddr, state: &Arc<State>, slot: ConnSlot) {
    let deadline = Instant::now() + state.cfg.timeouts.handshake;
    // The handshake is peeked, not read, until the connection leaves the handshake queue:
    // while its bytes sit in the kernel queue, eviction sees a complete handshake waiting
    // for this thread and leaves the connection alone (see `HANDSHAKE_READY_BYTES`).
    let mut preamble = [0u8; PREAMBLE_BYTES];
    if peek_exact_by(&stream, &mut preamble, deadline).is_err() {
        log_refused(
            state,
            peer,
            "connection closed, silent or evicted before its preamble",
        );
        return;
    }
    match classify(&preamble) {
        Ok(ConnKind::Data) => {
            let mut both = [0u8; HANDSHAKE_READY_BYTES];
            if peek_exact_by(&stream, &mut both, deadline).is_err() {
                log_refused(state, peer, "data connection without a complete hello");
                return;
            }
            // Leave the handshake queue before consuming the hello; a connection evicted in
            // the meantime was shut down and is dropped here, never handed to a test.
            let mut slot = slot;
            if !slot.end_handshake() {
                log_refused(
                    state,
                    peer,
                    "data connection evicted before its hello was read",
                );
                return;
            }
            if read_exact_by(&mut stream, &mut both, deadline).is_err() {
                log_refused(state, peer, "data connection without a complete hello");
                return;
            }
            let Ok(hello) = DataHello::decode_body(&both[PREAMBLE_BYTES..]) else {
                log_refused(state, peer, "data connection with a malformed hello");
                return;
            };
            let tx = state
                .pending
                .lock()
                .ok()
                .and_then(|p| p.get(&hello.token).cloned());
            match tx {
                Some(PendingTest::Setup(tx)) => {
                    let _ = tx.send((hello.flow, stream, slot));
                }
                Some(PendingTest::Crr(flows)) => {
                    // The connection's slot is released here: the queue bounds how many a
                    // test may hold, and the engine closes each one after its transaction.
                    match flows.get(hello.flow as usize) {
                        Some(tx) => {
                            if tx.try_send(stream).is_err() {
                                log_refused(state, peer, "CRR connection dropped: flow queue full");
                            }
                        }
                        None => log_refused(state, peer, "CRR connection for an unknown flow"),
                    }
                }
                None => log_refused(
                    state,
                    peer,
                    "data connection with an unknown or stale test token refused",
                ),
            }
        }
        Ok(ConnKind::Control) => {
            // Consume the preamble peeked above.
            if read_exact_by(&mut stream, &mut preamble, deadline).is_err() {
                log_refused(state, peer, "control connection closed before its preamble");
                return;
            }
            control_session(stream, peer, state, slot)
        }
        Err(e) => log_refused(state, peer, &format!("not a wirebench connection: {e}")),
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
    slot: ConnSlot,
    test_id: u64,
    spec: Option<TestSpec>,
    data_rx: Option<mpsc::Receiver<DataConn>>,
    conns: Vec<(u32, TcpStream)>,
    data_slots: Vec<ConnSlot>,
    /// UDP workloads: each flow's UDP socket and its peer, after the setup exchange.
    udp: Vec<(u32, std::net::UdpSocket, SocketAddr)>,
    /// CRR: each flow's queue of connections, until the engine takes them.
    crr: Vec<CrrServerFlow>,
    engine: Option<EngineRun>,
    server_report: Option<SideReport>,
    client_report: Option<SideReport>,
    admitted_unix_ms: u64,
    /// Why this end stopped the test itself (limit, shutdown), if it did.
    local_abort: Option<String>,
}

fn control_session(stream: TcpStream, peer: SocketAddr, state: &Arc<State>, slot: ConnSlot) {
    let t = &state.cfg.timeouts;
    let mut conn = Control::new(stream, DEFAULT_MAX_FRAME_BYTES);
    let mut nonce = [0u8; NONCE_BYTES];
    rand::rng().fill_bytes(&mut nonce);
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
    });
    let mut ts = TestState {
        admission: None,
        slot,
        test_id: 0,
        spec: None,
        data_rx: None,
        conns: Vec::new(),
        data_slots: Vec::new(),
        udp: Vec::new(),
        crr: Vec::new(),
        engine: None,
        server_report: None,
        client_report: None,
        admitted_unix_ms: 0,
        local_abort: None,
    };
    let result = drive(&mut conn, &mut sess, &mut ts, state);
    let failure = match &result {
        Ok(()) => None,
        Err(e) => Some(e.to_string()),
    };
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
            log_refused(state, peer, "authentication failed");
        } else if ts.admission.is_some() {
            tracing::info!(%peer, test_id = ts.test_id, "session ended: {e}");
        } else {
            log_refused(state, peer, &format!("session ended before admission: {e}"));
        }
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
            let (status, reason) = match (&failure, &ts.local_abort) {
                (Some(f), _) => (RecordStatus::Failed, Some(f.clone())),
                (None, Some(r)) => (RecordStatus::Aborted, Some(r.clone())),
                (None, None) => {
                    let aborted = [&ts.server_report, &ts.client_report]
                        .into_iter()
                        .flatten()
                        .find_map(|r| match &r.status {
                            SideStatus::Aborted(why) => Some(why.clone()),
                            _ => None,
                        });
                    match (aborted, &ts.server_report) {
                        (Some(why), _) => (RecordStatus::Aborted, Some(why)),
                        (None, None) => (
                            RecordStatus::Aborted,
                            Some("the session ended before the engines ran".into()),
                        ),
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
        status = ?rec.status,
        reason = rec.reason.as_deref().unwrap_or(""),
        "test finished"
    );
    if let Some(log) = &state.record_log {
        match serde_json::to_vec(&rec) {
            Ok(mut line) => {
                line.push(b'\n');
                if let Ok(mut l) = log.lock() {
                    if let Err(e) = l.append(&line) {
                        tracing::error!(path = %l.path.display(), "cannot append a test record: {e}");
                    }
                }
            }
            Err(e) => tracing::error!("cannot encode a test record: {e}"),
        }
    }
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
        if state.shutdown.load(Ordering::Relaxed) && ts.local_abort.is_none() {
            let reason = "the server is shutting down".to_string();
            ts.local_abort = Some(reason.clone());
            let acts = sess.abort(reason);
            if execute(conn, sess, ts, state, acts)? {
                return Ok(());
            }
        }
        // Phase-specific work that is not driven by control frames.
        if sess.phase() == Phase::AwaitData {
            if let Some(rx) = &ts.data_rx {
                let count = ts.spec.as_ref().map(|s| s.connection_count()).unwrap_or(0);
                while let Ok((flow, stream, slot)) = rx.try_recv() {
                    // A flow id out of range or seen before is closed (dropped) here.
                    if flow < count && !ts.conns.iter().any(|(f, _)| *f == flow) {
                        ts.conns.push((flow, stream));
                        ts.data_slots.push(slot);
                    }
                }
            }
            let want = ts.spec.as_ref().map(|s| s.setup_connections() as usize);
            if want.is_some_and(|want| ts.conns.len() >= want) {
                let spec = ts.spec.clone().expect("spec set when admitted");
                if let Some(adm) = &ts.admission {
                    if let Ok(mut p) = state.pending.lock() {
                        if spec.workload == Workload::Crr {
                            // CRR keeps the token: from now on each of its connections goes
                            // straight to its flow's queue.
                            let mut senders = Vec::new();
                            for flow in 0..spec.connection_count() {
                                let (tx, rx) = mpsc::sync_channel(CRR_QUEUE);
                                senders.push(tx);
                                ts.crr.push(CrrServerFlow { flow, accepted: rx });
                            }
                            p.insert(adm.token, PendingTest::Crr(senders));
                        } else {
                            p.remove(&adm.token);
                        }
                    }
                }
                ts.data_rx = None;
                for (_, s) in &ts.conns {
                    sockopt::apply(s, &spec)?;
                }
                if matches!(spec.workload, Workload::UdpStream | Workload::UdpRr) {
                    let token = ts.admission.as_ref().map(|a| a.token).expect("admitted");
                    let deadline = Instant::now() + state.cfg.timeouts.handshake;
                    ts.conns.sort_by_key(|(f, _)| *f);
                    for (flow, tcp) in ts.conns.iter_mut() {
                        let (sock, peer) =
                            udpsetup::server_side(tcp, token, *flow, &spec, deadline)?;
                        ts.udp.push((*flow, sock, peer));
                    }
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
                    sample: sample.sample,
                    rr: sample.rr,
                    udp: None,
                }))?;
            }
            if ts.server_report.is_none() {
                if let Some(report) = engine.try_finish() {
                    ts.server_report = Some(report.clone());
                    let mut acts = Vec::new();
                    // The engine stopped on a policy limit: tell the client to stop too.
                    if let SideStatus::Aborted(why) = &report.status {
                        if why.starts_with("limit exceeded") && ts.local_abort.is_none() {
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

/// The server's data plan for the admitted test, from its setup connections (CRR: from the
/// connections that arrive while it runs).
fn server_plan(spec: &TestSpec, ts: &mut TestState<'_>) -> Result<DataPlan, NetError> {
    let conns = std::mem::take(&mut ts.conns);
    Ok(match spec.workload {
        Workload::Stream => DataPlan::Stream(plans_for(HostRole::Server, spec, conns)),
        Workload::Rr => {
            let mut flows: Vec<TcpRrFlow> = conns
                .into_iter()
                .map(|(flow, stream)| TcpRrFlow { flow, stream })
                .collect();
            flows.sort_by_key(|f| f.flow);
            DataPlan::Rr {
                flows: RrFlows::TcpServer(flows),
                keep: Vec::new(),
            }
        }
        Workload::Crr => DataPlan::Rr {
            flows: RrFlows::CrrServer(std::mem::take(&mut ts.crr)),
            keep: Vec::new(),
        },
        Workload::UdpRr => {
            let mut flows = Vec::new();
            for (flow, socket, peer) in std::mem::take(&mut ts.udp) {
                // Answer the client only: never reflect datagrams to anybody else.
                socket
                    .connect(peer)
                    .map_err(NetError::io("connecting a UDP data socket"))?;
                flows.push(UdpRrFlow { flow, socket });
            }
            DataPlan::Rr {
                flows: RrFlows::UdpServer(flows),
                keep: conns.into_iter().map(|(_, s)| s).collect(),
            }
        }
        Workload::UdpStream => {
            let plan = udp_plan(HostRole::Server, spec, std::mem::take(&mut ts.udp))?;
            DataPlan::Udp {
                plan,
                keep: conns.into_iter().map(|(_, s)| s).collect(),
            }
        }
    })
}

/// A UDP stream plan for one end: flows this end sends get their socket connected to the
/// peer; flows it receives keep an unconnected socket that only the peer's datagrams count on.
pub(crate) fn udp_plan(
    host: HostRole,
    spec: &TestSpec,
    socks: Vec<(u32, std::net::UdpSocket, SocketAddr)>,
) -> Result<UdpPlan, NetError> {
    let dirs = spec.flow_dirs();
    let mut plan = UdpPlan::default();
    for (flow, socket, peer) in socks {
        let Some(&dir) = dirs.get(flow as usize) else {
            continue;
        };
        if crate::run::sends(host, dir) {
            socket
                .connect(peer)
                .map_err(NetError::io("connecting a UDP data socket"))?;
            plan.senders.push(UdpSendFlow { flow, socket });
        } else {
            plan.receivers.push(UdpRecvSocket {
                flows: vec![flow],
                socket,
                peer: Some(peer),
            });
        }
    }
    Ok(plan)
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
                if prev >= cap || state.shutdown.load(Ordering::Relaxed) {
                    state.running.fetch_sub(1, Ordering::AcqRel);
                    queue.extend(sess.busy(prev, cap, 1000));
                    continue;
                }
                let _ = ts.slot.end_handshake();
                let mut raw = [0u8; 16];
                rand::rng().fill_bytes(&mut raw);
                let token = Token(raw);
                let (tx, rx) = mpsc::channel();
                if let Ok(mut p) = state.pending.lock() {
                    p.insert(token, PendingTest::Setup(tx));
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
                let local = ts
                    .conns
                    .first()
                    .and_then(|(_, s)| s.local_addr().ok())
                    // CRR has no setup connection: its connections arrive where this one did.
                    .or_else(|| conn.stream().local_addr().ok())
                    .map(|a| a.ip());
                let data = server_plan(&spec, ts)?;
                let cpu = spec.server_cpu.map(|c| c as usize);
                ts.engine = Some(
                    EngineRun::start(
                        HostRole::Server,
                        &spec,
                        cpu,
                        data,
                        state.cfg.limits.max_rate_bps,
                        local,
                    )
                    .map_err(NetError::io("starting the engine"))?,
                );
            }
            Action::StopEngine { reason } => {
                if let Some(e) = ts.engine.as_ref() {
                    tracing::info!(test_id = ts.test_id, "stopping the engine: {reason}");
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
