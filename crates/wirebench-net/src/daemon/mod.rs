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
//!
//! # Rooms
//! - [`accept`]: connection caps, the handshake cap, the first bytes of a connection;
//! - [`route`]: data connections to their tests by token; the admission guard;
//! - [`session`]: a control connection's session, its test and its engine;
//! - [`records`]: the test records, in memory and on disk;
//! - [`lograte`]: rate-limited logging of refused connections.
//!
//! The accept loop polls its listener with a timeout, so a shutdown never waits for a
//! connection to arrive (even when the listening address has gone away).

mod accept;
pub(crate) mod iperf3;
mod lograte;
mod records;
mod refusals;
mod relay;
mod route;
mod session;
mod tap;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wirebench_model::spec::Limits;
use wirebench_proto::auth::KeyTable;
use wirebench_proto::data::Token;
use wirebench_proto::session::Timeouts;

use crate::NetError;
use accept::{admit_connection, Frontend, Handshakes};
pub use iperf3::{ClientUdpStream, Iperf3Info};
use lograte::LogLimiter;
use records::{RecordLog, Ring};
pub use records::{RecordStatus, TestRecord};
pub use refusals::RefusalReason;
use refusals::Refusals;
use route::PendingTest;
pub use tap::RecordTap;

/// Microseconds since the Unix epoch, now.
fn start_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// How often the accept loop looks at the shutdown flag when no connection arrives.
pub const ACCEPT_POLL: Duration = Duration::from_millis(100);

/// Stack of a connection thread (the engine's data threads get the default).
pub(crate) const CONN_THREAD_STACK_BYTES: usize = 512 * 1024;

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
    /// Tests one peer (its authenticated identity, else its source address) may run at once;
    /// past it the peer gets a `busy` answer scoped to it.
    pub max_tests_per_peer: u32,
    /// How many finished tests the daemon remembers in memory.
    pub record_capacity: usize,
    /// How many bytes (JSON) of finished tests the daemon keeps in memory.
    pub record_memory_bytes: usize,
    /// Append every test record to this JSON-lines file.
    pub records_path: Option<PathBuf>,
    /// Rotate the records file (to `FILE.1`) before it grows past this size.
    pub records_max_bytes: u64,
    /// Identities and keys; `None` admits unauthenticated clients.
    pub keys: Option<Arc<KeyTable>>,
    /// This server's identity (sent in the welcome, covered by the clients' MACs).
    pub server_identity: String,
    /// Profile this end's CPUs when a spec asks (`serve --allow-profile`); off by default,
    /// when a spec asking for a profile gets a typed refusal in the server's report and the
    /// test runs without it.
    pub allow_profile: bool,
    /// Profile for peers that did not authenticate, too (the embedded server; a study's
    /// daemon, which only root can reach inside its namespace). Off by default: a profile
    /// shows the whole host, so only authenticated clients get one.
    pub profile_unauthenticated: bool,
    /// Profiles taken at once; a test asking for one beyond it runs unprofiled at this end.
    pub max_profiles: u32,
    /// Highest sampling frequency a client may ask for, Hz per CPU; a higher request is
    /// sampled at this frequency (the report's `freq_hz` says which).
    pub max_profile_hz: u32,
    /// Also serve stock iperf3 clients on this address (`serve --iperf3`).
    pub iperf3_bind: Option<SocketAddr>,
    /// Also hand every record (its JSON line) to these queues (`serve --db`, `--metrics`).
    pub record_taps: Vec<RecordTap>,
    /// Run third-party tests for authenticated clients: this daemon runs the test as the
    /// client against another daemon that issued the client a ticket
    /// (`serve --allow-third-party`).
    pub allow_third_party: bool,
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
            max_tests_per_peer: 1,
            record_capacity: 1000,
            record_memory_bytes: 16 << 20,
            records_path: None,
            records_max_bytes: 64 << 20,
            keys: None,
            server_identity: wirebench_sys::host::hostname().unwrap_or_else(|_| "wirebench".into()),
            allow_profile: false,
            profile_unauthenticated: false,
            max_profiles: 1,
            max_profile_hz: DEFAULT_MAX_PROFILE_HZ,
            iperf3_bind: None,
            record_taps: Vec::new(),
            allow_third_party: false,
        }
    }
}

/// `serve --max-profile-hz` by default: the client's default `--profile-hz`.
pub const DEFAULT_MAX_PROFILE_HZ: u32 = 4000;

/// Room for one largest test (every data connection of a bidirectional test at
/// `max_flows`, plus its control connection) and a few more.
pub fn default_conns_per_source(limits: &Limits) -> usize {
    (limits.max_flows as usize)
        .saturating_mul(2)
        .saturating_add(16)
}

struct State {
    cfg: ServerConfig,
    running: AtomicU32,
    next_id: AtomicU64,
    open_connections: AtomicUsize,
    per_source: Mutex<HashMap<IpAddr, usize>>,
    /// Tests running per peer (identity, or source address); an admission group counts once.
    per_peer: Mutex<HashMap<String, u32>>,
    /// Admission groups running, per (peer, group id): (tests, their flows together).
    groups: Mutex<HashMap<(String, u64), (u32, u64)>>,
    /// Of the running tests, those whose results are exchanged (only bookkeeping left),
    /// per peer: a new test that finds the slots full waits for these instead of being
    /// told busy (the client starts its next test as soon as it has the results).
    finishing: Mutex<HashMap<String, u32>>,
    handshakes: Mutex<Handshakes>,
    pending: Mutex<HashMap<Token, PendingTest>>,
    records: Mutex<Ring>,
    record_log: Option<Mutex<RecordLog>>,
    log_limiter: Mutex<LogLimiter>,
    shutdown: AtomicBool,
    evicted: AtomicU64,
    /// Connections accepted so far, all listeners: each connection's place in accept order
    /// ([`accept::ConnSlot::accepted_seq`]).
    accepted: AtomicU64,
    /// Profiles being taken now (at most `cfg.max_profiles`).
    profiles: AtomicU32,
    /// The cookies of the iperf3 tests in progress.
    iperf3_routes: Mutex<iperf3::Routes>,
    /// Refusals by reason.
    refusals: Refusals,
    /// Held by the iperf3 UDP test collecting its streams on the iperf3 port (iperf3's
    /// connect datagrams name no test, so one test at a time listens for them).
    iperf3_udp_setup: Mutex<()>,
    /// Third-party tickets this daemon issued and has not seen redeemed.
    tickets: Arc<Mutex<wirebench_proto::ticket::TicketBook>>,
}

impl State {
    /// A daemon's state before its first connection: no sockets, so that the admission,
    /// routing and records logic can be tested without one.
    fn new(cfg: ServerConfig, record_log: Option<Mutex<RecordLog>>) -> State {
        let ring = Ring::new(cfg.record_capacity, cfg.record_memory_bytes);
        State {
            cfg,
            running: AtomicU32::new(0),
            // Unique across restarts: the start time in microseconds, then a counter. A
            // daemon hands out fewer ids than microseconds pass before a successor starts
            // (each takes a connection and a handshake), so even two starts within one
            // second never share an id (seconds x 10^6 did).
            next_id: AtomicU64::new(start_micros().saturating_add(1)),
            open_connections: AtomicUsize::new(0),
            per_source: Mutex::new(HashMap::new()),
            per_peer: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            finishing: Mutex::new(HashMap::new()),
            handshakes: Mutex::new(Handshakes::default()),
            pending: Mutex::new(HashMap::new()),
            records: Mutex::new(ring),
            record_log,
            log_limiter: Mutex::new(LogLimiter::new()),
            shutdown: AtomicBool::new(false),
            evicted: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            profiles: AtomicU32::new(0),
            iperf3_routes: Mutex::new(HashMap::new()),
            refusals: Refusals::default(),
            iperf3_udp_setup: Mutex::new(()),
            tickets: Arc::new(Mutex::new(wirebench_proto::ticket::TicketBook::new())),
        }
    }
}

/// A bound daemon, ready to [`Daemon::run`].
pub struct Daemon {
    listener: TcpListener,
    /// The iperf3 frontend's listener (`serve --iperf3`).
    iperf3_listener: Option<TcpListener>,
    state: Arc<State>,
}

/// Handle to a daemon running on a background thread (the embedded loopback server).
pub struct DaemonHandle {
    addr: SocketAddr,
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
    /// A second handle on the listening socket: shutting it down wakes the accept loop's
    /// poll at once instead of after up to [`ACCEPT_POLL`].
    waker: Option<TcpListener>,
}

/// A reader of a running daemon's counters and refusals ([`DaemonHandle::counters`]).
pub type CountersFn = Box<dyn Fn() -> (DaemonStats, Vec<(RefusalReason, u64)>) + Send + Sync>;

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
    pub fn bind(mut cfg: ServerConfig) -> Result<Daemon, NetError> {
        wirebench_sys::process::ignore_sigpipe().map_err(NetError::io("ignoring SIGPIPE"))?;
        // The CPUs a test may pin the server's threads to: those this process may run on.
        if cfg.limits.max_cpu.is_none() {
            cfg.limits.max_cpu = wirebench_sys::thread::current_thread_affinity()
                .ok()
                .and_then(|cpus| cpus.into_iter().max())
                .and_then(|c| u32::try_from(c).ok());
        }
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
        let iperf3_listener = match cfg.iperf3_bind {
            Some(addr) => Some(listen(addr).map_err(|source| NetError::Bind { addr, source })?),
            None => None,
        };
        Ok(Daemon {
            listener,
            iperf3_listener,
            state: Arc::new(State::new(cfg, record_log)),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The iperf3 frontend's address, if it listens.
    pub fn iperf3_addr(&self) -> Option<SocketAddr> {
        self.iperf3_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Serve until shut down. The listener is polled with a timeout, so the shutdown flag
    /// is seen within [`ACCEPT_POLL`] whether or not connections arrive.
    pub fn run(self) {
        let state = self.state;
        let mut last_accept_error: Option<Instant> = None;
        if let Err(e) = self.listener.set_nonblocking(true) {
            tracing::error!("cannot make the listener non-blocking: {e}");
            return;
        }
        if let Some(l) = &self.iperf3_listener {
            if let Err(e) = l.set_nonblocking(true) {
                tracing::error!("cannot make the iperf3 listener non-blocking: {e}");
                return;
            }
        }
        while !state.shutdown.load(Ordering::Relaxed) {
            if let Some(l) = &self.iperf3_listener {
                if let Ok((stream, _)) = l.accept() {
                    let _ = stream.set_nonblocking(false);
                    admit_connection(stream, &state, Frontend::Iperf3);
                }
            }
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    admit_connection(stream, &state, Frontend::Native);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut fds = vec![rustix::event::PollFd::new(
                        &self.listener,
                        rustix::event::PollFlags::IN,
                    )];
                    if let Some(l) = &self.iperf3_listener {
                        fds.push(rustix::event::PollFd::new(l, rustix::event::PollFlags::IN));
                    }
                    let timeout = rustix::event::Timespec {
                        tv_sec: 0,
                        tv_nsec: ACCEPT_POLL.as_nanos() as _,
                    };
                    let _ = rustix::event::poll(&mut fds, Some(&timeout));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The handle shut the listener down to wake this loop.
                Err(_) if state.shutdown.load(Ordering::Relaxed) => break,
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
        let waker = self.listener.try_clone().ok();
        let thread = thread::Builder::new()
            .name("wb-daemon".into())
            .spawn(move || self.run())?;
        Ok(DaemonHandle {
            addr,
            state,
            thread: Some(thread),
            waker,
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

impl DaemonHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Current counters.
    pub fn stats(&self) -> DaemonStats {
        stats_of(&self.state)
    }

    /// A reader of [`DaemonHandle::stats`] and [`DaemonHandle::refusals`] that outlives a
    /// borrow of the handle (for a metrics endpoint's thread).
    #[allow(clippy::type_complexity)]
    pub fn counters(
        &self,
    ) -> Box<dyn Fn() -> (DaemonStats, Vec<(RefusalReason, u64)>) + Send + Sync> {
        let s = Arc::clone(&self.state);
        Box::new(move || (stats_of(&s), s.refusals.snapshot()))
    }

    /// Connections and tests refused so far, per reason (reasons never seen are left out).
    pub fn refusals(&self) -> Vec<(RefusalReason, u64)> {
        self.state.refusals.snapshot()
    }

    /// The tests served so far, oldest first.
    pub fn records(&self) -> Vec<TestRecord> {
        self.state
            .records
            .lock()
            .map(|r| r.records())
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
        // The accept loop polls with a timeout: it sees the flag within ACCEPT_POLL, or at
        // once when shutting the listener down for reading wakes its poll (Linux does so
        // for a listening socket; pending, unaccepted connections are reset).
        if let Some(w) = self.waker.take() {
            let _ = socket2::SockRef::from(&w).shutdown(std::net::Shutdown::Read);
        }
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
