//! Request/response workloads: netperf's TCP_RR, TCP_CRR and UDP_RR.
//!
//! One entry point, [`run`], takes an [`RrConfig`] and the flows of one end ([`RrFlows`]: the
//! variant names the workload and the role) and returns what that end measured
//! ([`RrOutput`]). The engine never opens or accepts anything tied to addresses: it gets
//! connected TCP streams, a connect closure (CRR client), a channel of accepted streams (CRR
//! server) or UDP sockets from the caller.
//!
//! # Timeline (this end's monotonic clock, 0 = the call to [`run`]) — as in [`stream`]
//! ```text
//! 0 ──── warm-up ────┬──────────── duration ────────────┬── drain ──┐
//!                window start                        stop instant   flows finished
//! ```
//! - **Window start** = end of warm-up: the window opens and CPU is snapshotted.
//! - **Stop instant** = window start + duration: the window closes, CPU is snapshotted, then
//!   clients stop *starting* transactions.
//! - **Counting rule (both roles, every counter):** an event is counted in the window if it
//!   happens while the window is open on this end's clock; every event is counted in the
//!   total. A client transaction "happens" when its response has been read in full (for CRR:
//!   when its connection has been closed); a server transaction when its response has been
//!   written (CRR: when the client's close has been seen). Latencies are recorded for window
//!   transactions only, so `latency.count == window.transactions` on a client.
//! - **After the stop instant** a TCP RR client stops sending new requests, reads the
//!   responses still owed to it (bounded by [`RrConfig::drain_limit`]), then closes in order
//!   (shutdown write, wait for the server's EOF). Those late responses count in the total,
//!   not in the window, so when both ends finish cleanly the client's total transactions
//!   equal the server's exactly. A CRR or UDP client finishes the transaction it is in
//!   (bounded by [`RrConfig::peer_timeout`] / [`RrConfig::udp_timeout`]).
//! - **Servers** serve until the client is done: TCP RR until EOF; CRR until the channel of
//!   accepted connections is disconnected; CRR and UDP also end once nothing has arrived for
//!   [`SERVER_IDLE_AFTER_STOP`] after their stop instant. Every server waits at most
//!   `drain_limit` past its own stop instant, so the two ends' start instants may differ by
//!   less than that.
//! - **Abort**: the window ends at the abort instant (empty if aborted during the warm-up);
//!   flows notice within about 100 ms and [`RrOutput::aborted`] is set.
//! - **Intervals** ([`RrConfig::interval`]; a zero period means none) tile `[0, end]`, the
//!   last one covering the drain.
//!
//! The caller's thread samples: it runs the timeline driver shared by every engine (the
//! crate-private `timeline` module), with this engine's counters and interval type.
//!
//! # Workloads
//! - **TCP RR, closed loop** (default): per flow, write a request of
//!   `request_size_bytes`, read exactly `response_size_bytes`; with [`RrConfig::burst`] `N`,
//!   `N` requests are written up front and one new request after each response (netperf
//!   `-b`), so `N` transactions are in flight. Latency: from just before the request's write
//!   to the arrival of the last byte of its response. TCP_NODELAY is set on every socket. As
//!   with netperf, the `N` requests written before any response is read should fit the socket
//!   buffers; if they do not, both ends block writing and the flow ends with an error once the
//!   drain limit after the stop has passed.
//! - **TCP RR, open loop** ([`RrConfig::open_loop`]): the rate is **per flow**. Request `k`
//!   (from 0) is scheduled at `start + k / rate`, where `start` is the call to [`run`]. A
//!   sender thread writes requests on schedule; a receiver thread reads responses. TCP keeps
//!   order, so the `k`-th response answers request `k`, and its latency is measured **from
//!   the scheduled send time** of request `k` (no coordinated omission: time a request spent
//!   waiting to be sent — behind a slow server, a full socket buffer or a late timer — is in
//!   its latency). At most [`OpenLoop::max_outstanding`] requests are outstanding (sent and
//!   not answered); at the cap the sender waits. The schedule is never shifted: once room
//!   frees up, the delayed requests go out back to back, each keeping its original scheduled
//!   time. Slots scheduled before the stop instant that were never sent are reported as
//!   [`OpenLoopReport::missed_slots`]; their latency is not measured (they would have been
//!   at least as slow as the last one sent).
//! - **TCP CRR**: per transaction: the caller's connect closure (latency starts before it, so
//!   whatever the closure does — the daemon's data hello — is included), write the request,
//!   read the response (latency ends here), close. [`CloseMode::Orderly`] (default): shutdown
//!   write, wait for the server's EOF, close — the client ends in TIME_WAIT as with netperf;
//!   [`CloseMode::Abortive`]: SO_LINGER 0 and close, which sends RST. The mode used is in
//!   [`RrOutput::close_mode`]; the server counts what it saw (`closes_orderly`,
//!   `closes_reset`). The server serves the connections it receives from its channel one after
//!   the other: read request, write response, wait for the client's close. A failed connect
//!   counts `connect_errors` (the client then waits 1 ms before the next attempt), any other
//!   failed step `errors`; a counted transaction is one where every step succeeded, so
//!   `transactions + errors + connect_errors` = attempts.
//! - **UDP RR**: the client sends a request datagram on its connected socket and waits up to
//!   [`RrConfig::udp_timeout`] (default [`DEFAULT_UDP_TIMEOUT`], 100 ms) for the response;
//!   a timeout counts the transaction as `lost` and the client goes on with the next one.
//!   The first 8 bytes of each request carry a sequence number (big-endian `u64`, from 0) that
//!   the server echoes in the first 8 bytes of its response, so a response to an earlier
//!   (timed-out) request is recognised and counted as `late` instead of being taken for the
//!   current one. Hence both UDP sizes must be at least [`UDP_SEQ_BYTES`] (8) bytes
//!   ([`RrError::UdpSizeTooSmall`]). `lost` includes the transactions whose response later
//!   came in `late`; `lost − late` were never answered (as far as the client saw before it
//!   stopped). A datagram of the wrong size or with a sequence number never sent counts as
//!   `garbage`. The server echoes every datagram of exactly `request_size_bytes` back to its
//!   sender with `response_size_bytes`; anything else is `garbage`, not answered.
//!
//! # Threads and hot path
//! One thread per flow, plus one sender thread per flow in open-loop mode; the calling thread
//! samples intervals and takes the window edges (CPU snapshots) as in [`stream`]. Per
//! transaction a flow thread touches only its own state, a relaxed load of the shared window
//! phase (written only at the window edges) and plain stores of its running totals into its
//! own cache-line-padded counters for the sampler — no lock, no read-modify-write. An
//! open-loop flow's two threads share two padded counters (sent, received). Every blocking
//! call wakes at least every 100 ms to look at the abort flag, and every wait is bounded;
//! the CRR connect closure must bound its own.
//!
//! # Intervals
//! [`IntervalSample`](wirebench_proto::measure::IntervalSample) carries bytes, not
//! transactions, so this engine has its own [`RrInterval`] (transactions and lost per flow)
//! and reports it live through [`RrSink`] as well as in [`RrOutput::intervals`] (only when
//! [`RrConfig::interval`] is set). Samples tile `[0, end]` exactly, so their transactions
//! add up to each flow's total.
//!
//! [`stream`]: crate::stream

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use rand::RngCore;
use socket2::SockRef;
use wirebench_proto::measure::{CpuReport, TcpInfoReport};
use wirebench_stats::latency::{LatencyHistogram, LatencySummary};
use wirebench_sys::thread::CpuTimes;

use crate::cpu::CpuSnapshot;
use crate::timeline::{account_thread, started, DataThreads, Engine, Timeline, Unopened};
use crate::util::is_timeout;
pub use wirebench_proto::rr::{
    CloseMode, OpenLoopReport, RrCounts, RrFlowInterval, RrFlowSide, RrInterval, RrRole, RrWorkload,
};

/// How often blocked calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

/// Default wait for a UDP response before the transaction counts as lost.
pub const DEFAULT_UDP_TIMEOUT: Duration = Duration::from_millis(100);

/// Bytes at the start of every UDP request and response holding the sequence number.
pub const UDP_SEQ_BYTES: usize = 8;

/// Largest UDP payload over IPv4 (65535 − 20 − 8), bytes.
pub const UDP_MAX_PAYLOAD_BYTES: usize = 65_507;

/// A CRR or UDP server ends once nothing has arrived for this long after its stop instant.
pub const SERVER_IDLE_AFTER_STOP: Duration = Duration::from_millis(250);

/// Suggested cap on outstanding requests per flow in open-loop mode ([`OpenLoop`] has no
/// default; callers pick this unless the user asks otherwise).
pub const DEFAULT_MAX_OUTSTANDING: u32 = 1000;

/// Pause after a failed connect (CRR) or a failed UDP send before the next attempt.
const ERROR_BACKOFF: Duration = Duration::from_millis(1);

/// Open-loop (fixed-rate) parameters of a TCP RR client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoop {
    /// Requests scheduled per second, **per flow**.
    pub rate_per_s: f64,
    /// Most requests outstanding (sent, not yet answered) per flow; at the cap the sender
    /// waits and the schedule keeps running (see the module docs).
    pub max_outstanding: u32,
}

/// Parameters of a request/response run (the same for both ends; fields that do not apply to
/// a workload or role are ignored).
#[derive(Debug, Clone, PartialEq)]
pub struct RrConfig {
    /// Bytes per request (UDP: at least [`UDP_SEQ_BYTES`]).
    pub request_size_bytes: usize,
    /// Bytes per response (UDP: at least [`UDP_SEQ_BYTES`]).
    pub response_size_bytes: usize,
    /// Warm-up before the window opens.
    pub warmup: Duration,
    /// Measured duration.
    pub duration: Duration,
    /// Interval sampling period, if any.
    pub interval: Option<Duration>,
    /// Longest wait past this end's stop instant: a TCP RR client for the responses it is
    /// owed and the server's EOF, a server for the client to finish.
    pub drain_limit: Duration,
    /// Pin every data thread to this CPU.
    pub cpu: Option<usize>,
    /// TCP RR closed loop: transactions in flight per flow (netperf `-b`); 1 = one at a
    /// time. Must be 1 for the other workloads and in open-loop mode.
    pub burst: u32,
    /// TCP RR only: fixed-rate client instead of the closed loop.
    pub open_loop: Option<OpenLoop>,
    /// TCP CRR client: how to close each connection.
    pub close_mode: CloseMode,
    /// TCP CRR (both roles): longest one connection's transaction may wait on the peer
    /// (request, response, close) before it counts as an error.
    pub peer_timeout: Duration,
    /// UDP RR client: wait for a response before the transaction counts as lost.
    pub udp_timeout: Duration,
}

impl Default for RrConfig {
    /// 1-byte request and response, no warm-up, 10 s, no intervals, 2 s drain, burst 1,
    /// closed loop, orderly close, 1 s peer timeout, 100 ms UDP timeout.
    fn default() -> Self {
        RrConfig {
            request_size_bytes: 1,
            response_size_bytes: 1,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(10),
            interval: None,
            drain_limit: Duration::from_secs(2),
            cpu: None,
            burst: 1,
            open_loop: None,
            close_mode: CloseMode::Orderly,
            peer_timeout: Duration::from_secs(1),
            udp_timeout: DEFAULT_UDP_TIMEOUT,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RrError {
    /// A TCP request or response size of 0.
    #[error("{which} size must be at least 1 byte")]
    ZeroSize {
        /// "request" or "response".
        which: &'static str,
    },
    /// A UDP size too small to carry the sequence number.
    #[error(
        "UDP RR {which} size {size_bytes} bytes is below the minimum of {UDP_SEQ_BYTES} bytes \
         (the first 8 bytes carry the sequence number)"
    )]
    UdpSizeTooSmall {
        /// "request" or "response".
        which: &'static str,
        /// The size asked for.
        size_bytes: usize,
    },
    /// A UDP size above the largest datagram payload.
    #[error("UDP RR {which} size {size_bytes} bytes exceeds the maximum of {UDP_MAX_PAYLOAD_BYTES} bytes")]
    UdpSizeTooLarge {
        /// "request" or "response".
        which: &'static str,
        /// The size asked for.
        size_bytes: usize,
    },
    /// Burst 0.
    #[error("burst must be at least 1")]
    ZeroBurst,
    /// Burst above 1 where it does not apply.
    #[error("burst above 1 is only supported by closed-loop TCP RR, not {0}")]
    BurstUnsupported(&'static str),
    /// Open loop asked for a workload other than TCP RR.
    #[error("open-loop rate is only supported by TCP RR, not {0}")]
    OpenLoopUnsupported(RrWorkload),
    /// Open-loop rate not positive and finite.
    #[error("open-loop rate must be positive and finite, got {0}")]
    InvalidRate(f64),
    /// Open-loop cap of 0.
    #[error("open-loop max outstanding must be at least 1")]
    ZeroMaxOutstanding,
    /// A timeout of 0.
    #[error("{0} must be above zero")]
    ZeroTimeout(&'static str),
    /// No flows given.
    #[error("no flows")]
    NoFlows,
}

impl RrConfig {
    /// Check the parameters for `workload` (what [`run`] does first).
    ///
    /// # Errors
    /// The first problem found.
    pub fn validate(&self, workload: RrWorkload) -> Result<(), RrError> {
        let sizes = [
            ("request", self.request_size_bytes),
            ("response", self.response_size_bytes),
        ];
        for (which, size_bytes) in sizes {
            if workload == RrWorkload::UdpRr {
                if size_bytes < UDP_SEQ_BYTES {
                    return Err(RrError::UdpSizeTooSmall { which, size_bytes });
                }
                if size_bytes > UDP_MAX_PAYLOAD_BYTES {
                    return Err(RrError::UdpSizeTooLarge { which, size_bytes });
                }
            } else if size_bytes == 0 {
                return Err(RrError::ZeroSize { which });
            }
        }
        if self.burst == 0 {
            return Err(RrError::ZeroBurst);
        }
        if self.burst > 1 {
            if workload != RrWorkload::TcpRr {
                return Err(RrError::BurstUnsupported(match workload {
                    RrWorkload::TcpCrr => "TCP CRR",
                    _ => "UDP RR",
                }));
            }
            if self.open_loop.is_some() {
                return Err(RrError::BurstUnsupported("open-loop TCP RR"));
            }
        }
        if let Some(ol) = &self.open_loop {
            if workload != RrWorkload::TcpRr {
                return Err(RrError::OpenLoopUnsupported(workload));
            }
            if !ol.rate_per_s.is_finite() || ol.rate_per_s <= 0.0 {
                return Err(RrError::InvalidRate(ol.rate_per_s));
            }
            if ol.max_outstanding == 0 {
                return Err(RrError::ZeroMaxOutstanding);
            }
        }
        match workload {
            RrWorkload::TcpCrr if self.peer_timeout.is_zero() => {
                Err(RrError::ZeroTimeout("peer timeout"))
            }
            RrWorkload::UdpRr if self.udp_timeout.is_zero() => {
                Err(RrError::ZeroTimeout("UDP timeout"))
            }
            _ => Ok(()),
        }
    }
}

/// One connected TCP RR data connection (options other than TCP_NODELAY already applied;
/// the engine sets TCP_NODELAY and its own socket timeouts).
#[derive(Debug)]
pub struct TcpRrFlow {
    /// Flow id.
    pub flow: u32,
    /// The connected socket.
    pub stream: TcpStream,
}

/// Opens one CRR connection, ready for the request (the daemon writes its data hello inside).
/// It must bound its own waits (e.g. `TcpStream::connect_timeout`).
pub type ConnectFn = Box<dyn FnMut() -> io::Result<TcpStream> + Send>;

/// One CRR client flow.
pub struct CrrClientFlow {
    /// Flow id.
    pub flow: u32,
    /// Called once per transaction.
    pub connect: ConnectFn,
}

impl std::fmt::Debug for CrrClientFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrrClientFlow")
            .field("flow", &self.flow)
            .finish_non_exhaustive()
    }
}

/// One CRR server flow: the connections accepted for it, in order. The flow ends when every
/// sender of the channel is dropped (or, after the stop instant, when idle — see the module
/// docs).
#[derive(Debug)]
pub struct CrrServerFlow {
    /// Flow id.
    pub flow: u32,
    /// Newly accepted connections (hello already consumed).
    pub accepted: Receiver<TcpStream>,
}

/// One UDP RR flow: on a client a **connected** socket (`UdpSocket::connect` to the server),
/// on a server a bound socket that answers whoever sends to it.
#[derive(Debug)]
pub struct UdpRrFlow {
    /// Flow id.
    pub flow: u32,
    /// The socket.
    pub socket: UdpSocket,
}

/// The flows of one end; the variant selects workload and role.
#[derive(Debug)]
pub enum RrFlows {
    /// TCP RR client.
    TcpClient(Vec<TcpRrFlow>),
    /// TCP RR server.
    TcpServer(Vec<TcpRrFlow>),
    /// TCP CRR client.
    CrrClient(Vec<CrrClientFlow>),
    /// TCP CRR server.
    CrrServer(Vec<CrrServerFlow>),
    /// UDP RR client.
    UdpClient(Vec<UdpRrFlow>),
    /// UDP RR server.
    UdpServer(Vec<UdpRrFlow>),
}

impl RrFlows {
    /// The workload these flows run.
    pub fn workload(&self) -> RrWorkload {
        match self {
            RrFlows::TcpClient(_) | RrFlows::TcpServer(_) => RrWorkload::TcpRr,
            RrFlows::CrrClient(_) | RrFlows::CrrServer(_) => RrWorkload::TcpCrr,
            RrFlows::UdpClient(_) | RrFlows::UdpServer(_) => RrWorkload::UdpRr,
        }
    }

    /// This end's role.
    pub fn role(&self) -> RrRole {
        match self {
            RrFlows::TcpClient(_) | RrFlows::CrrClient(_) | RrFlows::UdpClient(_) => RrRole::Client,
            _ => RrRole::Server,
        }
    }

    fn into_jobs(self) -> Vec<(u32, Job)> {
        match self {
            RrFlows::TcpClient(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::TcpClient(f.stream)))
                .collect(),
            RrFlows::TcpServer(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::TcpServer(f.stream)))
                .collect(),
            RrFlows::CrrClient(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::CrrClient(f.connect)))
                .collect(),
            RrFlows::CrrServer(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::CrrServer(f.accepted)))
                .collect(),
            RrFlows::UdpClient(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::UdpClient(f.socket)))
                .collect(),
            RrFlows::UdpServer(v) => v
                .into_iter()
                .map(|f| (f.flow, Job::UdpServer(f.socket)))
                .collect(),
        }
    }
}

/// Where a request/response run reports while it runs (from the calling thread).
pub trait RrSink: Send {
    /// A new interval sample is complete.
    fn interval(&mut self, sample: &RrInterval);
}

impl RrSink for crate::NullSink {
    fn interval(&mut self, _sample: &RrInterval) {}
}

/// What a request/response run measured at this end.
#[derive(Debug, Clone)]
pub struct RrOutput {
    /// The workload.
    pub workload: RrWorkload,
    /// This end's role.
    pub role: RrRole,
    /// CRR client: the close used for every connection. `None` elsewhere (a CRR server
    /// reports what it saw in `closes_orderly` / `closes_reset`).
    pub close_mode: Option<CloseMode>,
    /// Window start (end of warm-up), ns after this end's start.
    pub window_start_ns: u64,
    /// Window end (stop instant, or the abort instant), ns after this end's start.
    pub window_end_ns: u64,
    /// Per flow, in the order given.
    pub flows: Vec<RrFlowSide>,
    /// Client: all flows' window latencies merged; `None` on a server.
    pub latency: Option<LatencySummary>,
    /// Client: the merged histogram behind `latency`; `None` on a server.
    pub histogram: Option<LatencyHistogram>,
    /// Interval samples (also delivered to the sink as they happened).
    pub intervals: Vec<RrInterval>,
    /// CPU over [window start, stop instant].
    pub cpu: Option<CpuReport>,
    /// Measurement problems.
    pub warnings: Vec<String>,
    /// Set if the run was aborted, with the reason.
    pub aborted: Option<String>,
}

impl RrOutput {
    /// Sum of every flow's window counts.
    pub fn window_sum(&self) -> RrCounts {
        let mut c = RrCounts::default();
        self.flows.iter().for_each(|f| c.add(&f.window));
        c
    }

    /// Sum of every flow's total counts.
    pub fn total_sum(&self) -> RrCounts {
        let mut c = RrCounts::default();
        self.flows.iter().for_each(|f| c.add(&f.total));
        c
    }
}

// ───────────────────────────── internals ─────────────────────────────

enum Job {
    TcpClient(TcpStream),
    TcpServer(TcpStream),
    CrrClient(ConnectFn),
    CrrServer(Receiver<TcpStream>),
    UdpClient(UdpSocket),
    UdpServer(UdpSocket),
}

const PHASE_WARMUP: u8 = 0;
const PHASE_WINDOW: u8 = 1;
const PHASE_AFTER: u8 = 2;

/// Running totals of one flow, written by one thread (plain stores), read by the sampler.
#[repr(align(64))]
#[derive(Default)]
struct FlowCounters {
    transactions: AtomicU64,
    lost: AtomicU64,
}

#[repr(align(64))]
#[derive(Default)]
struct PaddedU64(AtomicU64);

struct Shared {
    start: Instant,
    phase: AtomicU8,
    stop: AtomicBool,
    stop_at_ns: AtomicU64,
    counters: Vec<FlowCounters>,
    /// CPU time each data thread recorded for itself just before exiting (by thread slot:
    /// 2 × flow index, + 1 for an open-loop sender).
    final_cpu: Vec<Mutex<Option<CpuTimes>>>,
}

/// What one flow thread sees of the run.
struct FlowCtx<'a> {
    shared: &'a Shared,
    abort: &'a AtomicBool,
    cfg: &'a RrConfig,
    idx: usize,
}

impl FlowCtx<'_> {
    fn in_window(&self) -> bool {
        self.shared.phase.load(Ordering::Relaxed) == PHASE_WINDOW
    }
    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }
    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire) || self.aborted()
    }
    /// The stop instant, if it has passed.
    fn stop_at(&self) -> Option<Instant> {
        if !self.shared.stop.load(Ordering::Acquire) {
            return None;
        }
        let ns = self.shared.stop_at_ns.load(Ordering::Relaxed);
        Some(self.shared.start + Duration::from_nanos(ns))
    }
    /// Past the stop instant by more than the drain limit.
    fn drain_expired(&self) -> bool {
        self.stop_at()
            .is_some_and(|t| Instant::now() > t + self.cfg.drain_limit)
    }
    fn publish(&self, t: &Tally) {
        let c = &self.shared.counters[self.idx];
        c.transactions
            .store(t.total.transactions, Ordering::Relaxed);
        c.lost.store(t.total.lost, Ordering::Relaxed);
    }
    /// Server end condition after the stop instant: drain limit passed, or idle for
    /// [`SERVER_IDLE_AFTER_STOP`] since the later of the stop instant and `last_activity`.
    fn server_done(&self, last_activity: Instant) -> bool {
        match self.stop_at() {
            None => false,
            Some(stop) => {
                let now = Instant::now();
                now > stop + self.cfg.drain_limit
                    || now.saturating_duration_since(stop.max(last_activity))
                        > SERVER_IDLE_AFTER_STOP
            }
        }
    }
}

/// Window and total counts of one flow plus its latency histogram (clients).
struct Tally {
    window: RrCounts,
    total: RrCounts,
    hist: Option<LatencyHistogram>,
}

impl Tally {
    fn new(client: bool) -> Self {
        Tally {
            window: RrCounts::default(),
            total: RrCounts::default(),
            hist: client.then(LatencyHistogram::new),
        }
    }
    fn count(&mut self, in_window: bool, f: impl Fn(&mut RrCounts)) {
        f(&mut self.total);
        if in_window {
            f(&mut self.window);
        }
    }
    fn transaction(&mut self, in_window: bool, latency: Option<Duration>) {
        self.total.transactions += 1;
        if in_window {
            self.window.transactions += 1;
            if let (Some(h), Some(l)) = (self.hist.as_mut(), latency) {
                h.record_duration(l);
            }
        }
    }
}

/// What a flow thread hands back.
struct FlowEnd {
    tally: Tally,
    error: Option<String>,
    notes: Vec<String>,
    tcp_info: Option<TcpInfoReport>,
    /// Open loop: (requests sent, peak outstanding).
    open_loop: Option<(u64, u64)>,
}

impl FlowEnd {
    fn new(tally: Tally) -> Self {
        FlowEnd {
            tally,
            error: None,
            notes: Vec::new(),
            tcp_info: None,
            open_loop: None,
        }
    }
}

/// Why a full read or write did not complete.
#[derive(Debug)]
enum Stall {
    /// EOF; `partial` if part of the message had arrived.
    Eof { partial: bool },
    /// `give_up` said so while the call was timing out; `partial` as above.
    GaveUp { partial: bool },
    /// A socket error.
    Io(io::Error),
}

impl Stall {
    fn describe(&self, what: &str) -> String {
        match self {
            Stall::Eof { partial: false } => format!("{what}: peer closed the connection"),
            Stall::Eof { partial: true } => format!("{what}: peer closed mid-message"),
            Stall::GaveUp { .. } => format!("{what}: timed out"),
            Stall::Io(e) => format!("{what}: {e}"),
        }
    }
}

fn write_full(mut s: &TcpStream, buf: &[u8], give_up: &dyn Fn() -> bool) -> Result<(), Stall> {
    let mut off = 0;
    while off < buf.len() {
        match s.write(&buf[off..]) {
            Ok(0) => return Err(Stall::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => off += n,
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err(Stall::GaveUp { partial: off > 0 });
                }
            }
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

fn read_full(mut s: &TcpStream, buf: &mut [u8], give_up: &dyn Fn() -> bool) -> Result<(), Stall> {
    let mut off = 0;
    while off < buf.len() {
        match s.read(&mut buf[off..]) {
            Ok(0) => return Err(Stall::Eof { partial: off > 0 }),
            Ok(n) => off += n,
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err(Stall::GaveUp { partial: off > 0 });
                }
            }
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

fn payload(len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rng().fill_bytes(&mut v);
    v
}

fn prepare_tcp(s: &TcpStream) -> io::Result<()> {
    SockRef::from(s).set_tcp_nodelay(true)?;
    s.set_read_timeout(Some(POLL_TIMEOUT))?;
    s.set_write_timeout(Some(POLL_TIMEOUT))
}

fn tcp_info_of(s: &TcpStream) -> Option<TcpInfoReport> {
    wirebench_sys::tcp::tcp_info(s)
        .ok()
        .map(|i| crate::stream::tcp_info_report(&i))
}

/// Shut our side down and wait (bounded by `limit` and abort) for the peer's EOF.
fn orderly_finish(mut s: &TcpStream, ctx: &FlowCtx, limit: Duration) -> Result<(), String> {
    s.shutdown(Shutdown::Write)
        .map_err(|e| format!("shutdown: {e}"))?;
    let deadline = Instant::now() + limit;
    let mut sink = [0u8; 256];
    loop {
        match s.read(&mut sink) {
            Ok(0) => return Ok(()),
            Ok(_) => return Err("unexpected data from the peer after the last response".into()),
            Err(e) if is_timeout(&e) => {
                if ctx.aborted() || Instant::now() > deadline {
                    return Err("peer did not close within the drain limit".into());
                }
            }
            Err(e) => return Err(format!("waiting for the peer's close: {e}")),
        }
    }
}

/// Sleep until `t`; false if the run stopped (or aborted) first. Wakes at least every 20 ms.
fn sleep_until_or_stop(t: Instant, ctx: &FlowCtx) -> bool {
    loop {
        if ctx.stopping() {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        thread::sleep((t - now).min(Duration::from_millis(20)));
    }
}

/// Sleep for `d` in slices, returning early on abort.
fn sleep_abortable(d: Duration, ctx: &FlowCtx) {
    let end = Instant::now() + d;
    while !ctx.aborted() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        thread::sleep((end - now).min(POLL_TIMEOUT));
    }
}

// ───────────── TCP RR ─────────────

fn tcp_client_closed(ctx: &FlowCtx, s: &TcpStream) -> FlowEnd {
    let req = payload(ctx.cfg.request_size_bytes);
    let mut resp = vec![0u8; ctx.cfg.response_size_bytes];
    let burst = ctx.cfg.burst.max(1) as usize;
    let mut sent_at: VecDeque<Instant> = VecDeque::with_capacity(burst);
    let mut end = FlowEnd::new(Tally::new(true));
    let give_up = || ctx.aborted() || ctx.drain_expired();
    'run: loop {
        while sent_at.len() < burst && !ctx.stopping() {
            // The round trip starts before the write: the write's own cost (on loopback it
            // may carry the whole path) is part of it.
            let t0 = Instant::now();
            if let Err(e) = write_full(s, &req, &give_up) {
                end.error = Some(e.describe("request write"));
                break 'run;
            }
            sent_at.push_back(t0);
        }
        let Some(&sent) = sent_at.front() else {
            break;
        };
        if let Err(e) = read_full(s, &mut resp, &give_up) {
            end.error = Some(e.describe("response read"));
            break;
        }
        let now = Instant::now();
        sent_at.pop_front();
        end.tally
            .transaction(ctx.in_window(), Some(now.saturating_duration_since(sent)));
        ctx.publish(&end.tally);
    }
    finish_tcp_flow(ctx, s, &mut end);
    end
}

/// After a TCP RR flow: classify an abort, close in order if clean, read TCP_INFO.
fn finish_tcp_flow(ctx: &FlowCtx, s: &TcpStream, end: &mut FlowEnd) {
    if ctx.aborted() {
        // The run is reported as aborted; a stall caused by the abort is not a flow error.
        end.error = None;
        end.tcp_info = tcp_info_of(s);
        return;
    }
    if end.error.is_none() {
        if let Err(e) = orderly_finish(s, ctx, ctx.cfg.drain_limit) {
            end.notes.push(e);
        }
    }
    end.tcp_info = tcp_info_of(s);
}

fn tcp_server(ctx: &FlowCtx, s: &TcpStream) -> FlowEnd {
    let mut req = vec![0u8; ctx.cfg.request_size_bytes];
    let resp = payload(ctx.cfg.response_size_bytes);
    let mut end = FlowEnd::new(Tally::new(false));
    let give_up = || ctx.aborted() || ctx.drain_expired();
    loop {
        match read_full(s, &mut req, &give_up) {
            Ok(()) => {}
            Err(Stall::Eof { partial: false }) => break,
            Err(Stall::GaveUp { partial: false }) if !ctx.aborted() => {
                end.error = Some(format!(
                    "client did not close within {} ms after the stop",
                    ctx.cfg.drain_limit.as_millis()
                ));
                break;
            }
            Err(e) => {
                end.error = Some(e.describe("request read"));
                break;
            }
        }
        if let Err(e) = write_full(s, &resp, &give_up) {
            end.error = Some(e.describe("response write"));
            break;
        }
        end.tally.transaction(ctx.in_window(), None);
        ctx.publish(&end.tally);
    }
    if ctx.aborted() {
        end.error = None;
    }
    end.tcp_info = tcp_info_of(s);
    end
}

/// Open-loop state shared by a flow's sender and receiver threads.
#[derive(Default)]
struct OpenState {
    sent: PaddedU64,
    received: PaddedU64,
    sender_done: AtomicBool,
    sender_failed: AtomicBool,
    receiver_done: AtomicBool,
}

/// Scheduled send time of slot `k`, ns after the start.
fn slot_ns(k: u64, rate_per_s: f64) -> u64 {
    (k as f64 * 1e9 / rate_per_s) as u64
}

/// Number of slots scheduled strictly before `t_ns`.
fn slots_before(t_ns: u64, rate_per_s: f64) -> u64 {
    (t_ns as f64 * rate_per_s / 1e9).ceil() as u64
}

fn open_sender(
    ctx: &FlowCtx,
    s: &TcpStream,
    ol: &OpenLoop,
    st: &OpenState,
) -> (u64, u64, Option<String>) {
    let req = payload(ctx.cfg.request_size_bytes);
    let cap = u64::from(ol.max_outstanding.max(1));
    let give_up =
        || ctx.aborted() || ctx.drain_expired() || st.receiver_done.load(Ordering::Acquire);
    let mut k = 0u64;
    let mut peak = 0u64;
    let mut error = None;
    'send: loop {
        let due = ctx.shared.start + Duration::from_nanos(slot_ns(k, ol.rate_per_s));
        if !sleep_until_or_stop(due, ctx) {
            break;
        }
        loop {
            let outstanding = k.saturating_sub(st.received.0.load(Ordering::Acquire));
            if outstanding < cap {
                peak = peak.max(outstanding + 1);
                break;
            }
            if ctx.stopping() || st.receiver_done.load(Ordering::Acquire) {
                break 'send;
            }
            thread::sleep(Duration::from_micros(100));
        }
        if let Err(e) = write_full(s, &req, &give_up) {
            if !ctx.aborted() && !st.receiver_done.load(Ordering::Acquire) {
                error = Some(e.describe("request write"));
            }
            st.sender_failed.store(true, Ordering::Release);
            break;
        }
        k += 1;
        st.sent.0.store(k, Ordering::Release);
    }
    st.sender_done.store(true, Ordering::Release);
    (k, peak, error)
}

fn open_receiver(ctx: &FlowCtx, s: &TcpStream, ol: &OpenLoop, st: &OpenState, end: &mut FlowEnd) {
    let mut resp = vec![0u8; ctx.cfg.response_size_bytes];
    let mut j = 0u64;
    loop {
        let all_answered =
            || st.sender_done.load(Ordering::Acquire) && st.sent.0.load(Ordering::Acquire) <= j;
        let give_up = || {
            ctx.aborted()
                || ctx.drain_expired()
                || st.sender_failed.load(Ordering::Acquire)
                || all_answered()
        };
        match read_full(s, &mut resp, &give_up) {
            Ok(()) => {}
            Err(Stall::GaveUp { partial: false })
                if all_answered() || ctx.aborted() || st.sender_failed.load(Ordering::Acquire) =>
            {
                break
            }
            Err(e) => {
                end.error = Some(e.describe("response read"));
                break;
            }
        }
        let now = Instant::now();
        let scheduled = ctx.shared.start + Duration::from_nanos(slot_ns(j, ol.rate_per_s));
        j += 1;
        st.received.0.store(j, Ordering::Release);
        end.tally.transaction(
            ctx.in_window(),
            Some(now.saturating_duration_since(scheduled)),
        );
        ctx.publish(&end.tally);
    }
    st.receiver_done.store(true, Ordering::Release);
}

fn tcp_client_open(
    ctx: &FlowCtx,
    s: &TcpStream,
    ol: &OpenLoop,
    tid_tx: mpsc::Sender<(usize, i32)>,
) -> FlowEnd {
    let st = &OpenState::default();
    let mut end = FlowEnd::new(Tally::new(true));
    thread::scope(|sc| {
        let sender_slot = 2 * ctx.idx + 1;
        let tx = tid_tx.clone();
        let spawned = thread::Builder::new()
            .name(format!("wb-rr-send-{}", ctx.idx))
            .spawn_scoped(sc, move || {
                let final_cpu = &ctx.shared.final_cpu;
                account_thread(final_cpu, sender_slot, tx, ctx.cfg.cpu, || {
                    open_sender(ctx, s, ol, st)
                })
            });
        drop(tid_tx);
        let sender = match spawned {
            Ok(h) => h,
            Err(e) => {
                end.error = Some(format!("could not start the sender thread: {e}"));
                return;
            }
        };
        open_receiver(ctx, s, ol, st, &mut end);
        match sender.join() {
            Ok(((sent, peak, err), pin_err)) => {
                end.open_loop = Some((sent, peak));
                if end.error.is_none() {
                    end.error = err;
                }
                if let Some(e) = pin_err {
                    end.notes
                        .push(format!("sender thread: could not pin to CPU: {e}"));
                }
            }
            Err(_) => end.error = Some("sender thread failed".into()),
        }
    });
    finish_tcp_flow(ctx, s, &mut end);
    end
}

// ───────────── TCP CRR ─────────────

fn crr_client(ctx: &FlowCtx, connect: &mut ConnectFn) -> FlowEnd {
    let req = payload(ctx.cfg.request_size_bytes);
    let mut resp = vec![0u8; ctx.cfg.response_size_bytes];
    let mut end = FlowEnd::new(Tally::new(true));
    let (mut last_connect_error, mut last_error) = (None, None);
    while !ctx.stopping() {
        let t0 = Instant::now();
        let s = match connect() {
            Ok(s) => s,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.connect_errors += 1);
                last_connect_error = Some(e.to_string());
                ctx.publish(&end.tally);
                sleep_abortable(ERROR_BACKOFF, ctx);
                continue;
            }
        };
        match crr_client_transaction(ctx, &s, &req, &mut resp, t0) {
            Ok(latency) => end.tally.transaction(ctx.in_window(), Some(latency)),
            Err(_) if ctx.aborted() => break,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                last_error = Some(e);
            }
        }
        ctx.publish(&end.tally);
    }
    if let Some(e) = last_connect_error {
        end.notes.push(format!(
            "{} connects failed, the last with: {e}",
            end.tally.total.connect_errors
        ));
    }
    if let Some(e) = last_error {
        end.notes.push(format!(
            "{} transactions failed, the last with: {e}",
            end.tally.total.errors
        ));
    }
    end
}

/// One CRR transaction on a fresh connection; returns connect-to-response latency.
fn crr_client_transaction(
    ctx: &FlowCtx,
    s: &TcpStream,
    req: &[u8],
    resp: &mut [u8],
    t0: Instant,
) -> Result<Duration, String> {
    prepare_tcp(s).map_err(|e| format!("socket options: {e}"))?;
    let deadline = Instant::now() + ctx.cfg.peer_timeout;
    let give_up = || ctx.aborted() || Instant::now() > deadline;
    write_full(s, req, &give_up).map_err(|e| e.describe("request write"))?;
    read_full(s, resp, &give_up).map_err(|e| e.describe("response read"))?;
    let latency = t0.elapsed();
    match ctx.cfg.close_mode {
        CloseMode::Orderly => {
            let left = deadline.saturating_duration_since(Instant::now());
            orderly_finish(s, ctx, left)?;
        }
        CloseMode::Abortive => {
            SockRef::from(s)
                .set_linger(Some(Duration::ZERO))
                .map_err(|e| format!("SO_LINGER 0: {e}"))?;
        }
    }
    Ok(latency)
}

fn crr_server(ctx: &FlowCtx, rx: &Receiver<TcpStream>) -> FlowEnd {
    let mut req = vec![0u8; ctx.cfg.request_size_bytes];
    let resp = payload(ctx.cfg.response_size_bytes);
    let mut end = FlowEnd::new(Tally::new(false));
    let mut last_activity = Instant::now();
    let mut last_error = None;
    while !ctx.aborted() && !ctx.server_done(last_activity) {
        let s = match rx.recv_timeout(POLL_TIMEOUT) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match crr_serve(ctx, &s, &mut req, &resp) {
            Ok(reset) => {
                let w = ctx.in_window();
                end.tally.transaction(w, None);
                end.tally.count(w, |c| {
                    if reset {
                        c.closes_reset += 1
                    } else {
                        c.closes_orderly += 1
                    }
                });
            }
            Err(_) if ctx.aborted() => break,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                last_error = Some(e);
            }
        }
        ctx.publish(&end.tally);
        drop(s);
        last_activity = Instant::now();
    }
    if let Some(e) = last_error {
        end.notes.push(format!(
            "{} connections failed, the last with: {e}",
            end.tally.total.errors
        ));
    }
    end
}

/// Serve one CRR connection; `Ok(true)` if the client closed with RST, `Ok(false)` with FIN.
fn crr_serve(ctx: &FlowCtx, s: &TcpStream, req: &mut [u8], resp: &[u8]) -> Result<bool, String> {
    prepare_tcp(s).map_err(|e| format!("socket options: {e}"))?;
    let deadline = Instant::now() + ctx.cfg.peer_timeout;
    let give_up = || ctx.aborted() || Instant::now() > deadline;
    read_full(s, req, &give_up).map_err(|e| e.describe("request read"))?;
    write_full(s, resp, &give_up).map_err(|e| e.describe("response write"))?;
    let mut byte = [0u8; 1];
    loop {
        match (&*s).read(&mut byte) {
            Ok(0) => return Ok(false),
            Ok(_) => return Err("unexpected data after the request".into()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(true),
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err("client did not close".into());
                }
            }
            Err(e) => return Err(format!("waiting for the client's close: {e}")),
        }
    }
}

// ───────────── UDP RR ─────────────

enum UdpOutcome {
    Answered(Duration),
    Lost,
    Failed,
    Aborted,
}

fn udp_client(ctx: &FlowCtx, s: &UdpSocket) -> FlowEnd {
    let mut end = FlowEnd::new(Tally::new(true));
    if let Err(e) = s.peer_addr() {
        end.error = Some(format!("UDP client socket is not connected: {e}"));
        return end;
    }
    let mut req = payload(ctx.cfg.request_size_bytes);
    let resp_len = ctx.cfg.response_size_bytes;
    // One spare byte so that an oversized datagram shows up as longer than expected.
    let mut buf = vec![0u8; resp_len + 1];
    let timeout = ctx.cfg.udp_timeout;
    let base_to = timeout.min(POLL_TIMEOUT);
    if let Err(e) = s
        .set_read_timeout(Some(base_to))
        .and_then(|()| s.set_write_timeout(Some(POLL_TIMEOUT)))
    {
        end.error = Some(format!("socket timeout: {e}"));
        return end;
    }
    let mut cur_to = base_to;
    let mut last_error = None;
    let mut seq = 0u64;
    while !ctx.stopping() {
        req[..UDP_SEQ_BYTES].copy_from_slice(&seq.to_be_bytes());
        if cur_to != base_to && s.set_read_timeout(Some(base_to)).is_ok() {
            cur_to = base_to;
        }
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        let outcome = match s.send(&req) {
            Err(e) => {
                last_error = Some(format!("send: {e}"));
                UdpOutcome::Failed
            }
            Ok(_) => loop {
                match s.recv(&mut buf) {
                    Ok(n) => {
                        let now = Instant::now();
                        let got = (n == resp_len).then(|| {
                            let mut b = [0u8; UDP_SEQ_BYTES];
                            b.copy_from_slice(&buf[..UDP_SEQ_BYTES]);
                            u64::from_be_bytes(b)
                        });
                        match got {
                            Some(r) if r == seq && now <= deadline => {
                                break UdpOutcome::Answered(now - t0)
                            }
                            Some(r) if r <= seq => {
                                end.tally.count(ctx.in_window(), |c| c.late += 1);
                                if r == seq {
                                    // Matching, but after the deadline: lost, then late.
                                    break UdpOutcome::Lost;
                                }
                            }
                            _ => end.tally.count(ctx.in_window(), |c| c.garbage += 1),
                        }
                        if now >= deadline {
                            break UdpOutcome::Lost;
                        }
                    }
                    Err(e) if is_timeout(&e) => {
                        if ctx.aborted() {
                            break UdpOutcome::Aborted;
                        }
                        let now = Instant::now();
                        if now >= deadline {
                            break UdpOutcome::Lost;
                        }
                        let left = (deadline - now).max(Duration::from_micros(1));
                        if left < cur_to && s.set_read_timeout(Some(left)).is_ok() {
                            cur_to = left;
                        }
                    }
                    Err(e) => {
                        last_error = Some(format!("receive: {e}"));
                        break UdpOutcome::Failed;
                    }
                }
            },
        };
        let w = ctx.in_window();
        match outcome {
            UdpOutcome::Answered(l) => end.tally.transaction(w, Some(l)),
            UdpOutcome::Lost => end.tally.count(w, |c| c.lost += 1),
            UdpOutcome::Failed => {
                end.tally.count(w, |c| c.errors += 1);
                // Do not spin on an immediate error (e.g. ICMP port unreachable).
                sleep_abortable(deadline.saturating_duration_since(Instant::now()), ctx);
            }
            UdpOutcome::Aborted => break,
        }
        ctx.publish(&end.tally);
        seq += 1;
    }
    if let Some(e) = last_error {
        end.notes.push(format!(
            "{} transactions failed, the last with: {e}",
            end.tally.total.errors
        ));
    }
    end
}

fn udp_server(ctx: &FlowCtx, s: &UdpSocket) -> FlowEnd {
    let mut end = FlowEnd::new(Tally::new(false));
    if let Err(e) = s
        .set_read_timeout(Some(POLL_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(POLL_TIMEOUT)))
    {
        end.error = Some(format!("socket timeout: {e}"));
        return end;
    }
    let req_len = ctx.cfg.request_size_bytes;
    let mut buf = vec![0u8; req_len + 1];
    let mut resp = payload(ctx.cfg.response_size_bytes);
    let mut last_activity = Instant::now();
    let mut last_error = None;
    while !ctx.aborted() && !ctx.server_done(last_activity) {
        match s.recv_from(&mut buf) {
            Ok((n, peer)) => {
                last_activity = Instant::now();
                if n != req_len {
                    end.tally.count(ctx.in_window(), |c| c.garbage += 1);
                } else {
                    resp[..UDP_SEQ_BYTES].copy_from_slice(&buf[..UDP_SEQ_BYTES]);
                    match s.send_to(&resp, peer) {
                        Ok(_) => end.tally.transaction(ctx.in_window(), None),
                        Err(e) => {
                            end.tally.count(ctx.in_window(), |c| c.errors += 1);
                            last_error = Some(format!("send: {e}"));
                        }
                    }
                }
                ctx.publish(&end.tally);
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                last_error = Some(format!("receive: {e}"));
                ctx.publish(&end.tally);
                sleep_abortable(ERROR_BACKOFF, ctx);
            }
        }
    }
    if let Some(e) = last_error {
        end.notes
            .push(format!("{} errors, the last: {e}", end.tally.total.errors));
    }
    end
}

// ───────────── orchestration ─────────────

fn flow_thread(ctx: &FlowCtx, job: Job, tid_tx: mpsc::Sender<(usize, i32)>) -> FlowEnd {
    let open_loop = ctx.cfg.open_loop;
    let slot = 2 * ctx.idx;
    // Only an open-loop client needs the channel beyond registration (for its sender thread);
    // everyone else must drop it at once, since the sampler waits for all senders to go.
    let (keep_tx, reg_tx) = match (&job, open_loop) {
        (Job::TcpClient(_), Some(_)) => (Some(tid_tx.clone()), tid_tx),
        _ => (None, tid_tx),
    };
    let final_cpu = &ctx.shared.final_cpu;
    let (mut end, pin_err) =
        account_thread(final_cpu, slot, reg_tx, ctx.cfg.cpu, move || match job {
            Job::TcpClient(s) => {
                if let Err(e) = prepare_tcp(&s) {
                    let mut end = FlowEnd::new(Tally::new(true));
                    end.error = Some(format!("socket options: {e}"));
                    return end;
                }
                match (open_loop, keep_tx) {
                    (Some(ol), Some(tx)) => tcp_client_open(ctx, &s, &ol, tx),
                    _ => tcp_client_closed(ctx, &s),
                }
            }
            Job::TcpServer(s) => {
                if let Err(e) = prepare_tcp(&s) {
                    let mut end = FlowEnd::new(Tally::new(false));
                    end.error = Some(format!("socket options: {e}"));
                    return end;
                }
                tcp_server(ctx, &s)
            }
            Job::CrrClient(mut connect) => crr_client(ctx, &mut connect),
            Job::CrrServer(rx) => crr_server(ctx, &rx),
            Job::UdpClient(s) => udp_client(ctx, &s),
            Job::UdpServer(s) => udp_server(ctx, &s),
        });
    if let Some(e) = pin_err {
        end.error
            .get_or_insert(format!("could not pin to CPU: {e}"));
    }
    end
}

/// The request/response side of the timeline: transaction and loss counts per interval,
/// and the phase the flows count their events in.
struct RrSampler<'a> {
    shared: &'a Shared,
    /// Flow id per flow index.
    ids: &'a [u32],
    /// (transactions, lost) at the previous interval boundary.
    prev: Vec<(u64, u64)>,
    warmup_ns: u64,
    sink: &'a mut dyn RrSink,
}

impl Engine for RrSampler<'_> {
    type Sample = RrInterval;

    fn open_window(&mut self, _now_ns: u64) {
        self.shared.phase.store(PHASE_WINDOW, Ordering::Relaxed);
    }

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> RrInterval {
        let mut out = Vec::with_capacity(self.ids.len());
        for (i, &flow) in self.ids.iter().enumerate() {
            let c = &self.shared.counters[i];
            let now = (
                c.transactions.load(Ordering::Relaxed),
                c.lost.load(Ordering::Relaxed),
            );
            out.push(RrFlowInterval {
                flow,
                transactions: now.0.saturating_sub(self.prev[i].0),
                lost: now.1.saturating_sub(self.prev[i].1),
            });
            self.prev[i] = now;
        }
        let s = RrInterval {
            index,
            start_ns,
            end_ns,
            in_warmup: start_ns < self.warmup_ns,
            flows: out,
        };
        self.sink.interval(&s);
        s
    }

    /// The window closes before the CPU snapshot, the clients stop after it.
    fn close_window(&mut self, _stop_ns: u64) {
        self.shared.phase.store(PHASE_AFTER, Ordering::Relaxed);
    }

    fn stop(&mut self, stop_ns: u64) {
        self.shared.stop_at_ns.store(stop_ns, Ordering::Relaxed);
        self.shared.stop.store(true, Ordering::Release);
    }
}

/// Run a request/response test over `flows` at this end. Blocks until every flow has finished
/// (or the abort flag is set and the flows noticed it, within about 100 ms).
///
/// # Errors
/// Only for parameters that cannot run ([`RrConfig::validate`]) or an empty flow list;
/// everything that goes wrong while running is in the output (flow errors, warnings,
/// `aborted`).
pub fn run(
    cfg: &RrConfig,
    flows: RrFlows,
    sink: &mut dyn RrSink,
    abort: &AtomicBool,
) -> Result<RrOutput, RrError> {
    let workload = flows.workload();
    let role = flows.role();
    cfg.validate(workload)?;
    let jobs = flows.into_jobs();
    if jobs.is_empty() {
        return Err(RrError::NoFlows);
    }
    let n = jobs.len();
    let ids: Vec<u32> = jobs.iter().map(|j| j.0).collect();
    let start = Instant::now();
    let warmup_ns = u64::try_from(cfg.warmup.as_nanos()).unwrap_or(u64::MAX);
    let shared = Shared {
        start,
        phase: AtomicU8::new(if cfg.warmup.is_zero() {
            PHASE_WINDOW
        } else {
            PHASE_WARMUP
        }),
        stop: AtomicBool::new(false),
        stop_at_ns: AtomicU64::new(u64::MAX),
        counters: (0..n).map(|_| FlowCounters::default()).collect(),
        final_cpu: (0..2 * n).map(|_| Mutex::new(None)).collect(),
    };
    let mut warnings = Vec::new();
    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let at_start = CpuSnapshot::take(0, &[], &|_| None);

    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (idx, (flow, job)) in jobs.into_iter().enumerate() {
            let tx = tid_tx.clone();
            let shared = &shared;
            let h = thread::Builder::new()
                .name(format!("wb-rr-{flow}"))
                .spawn_scoped(scope, move || {
                    let ctx = FlowCtx {
                        shared,
                        abort,
                        cfg,
                        idx,
                    };
                    flow_thread(&ctx, job, tx)
                });
            handles.push(started(h, format_args!("flow {flow}"), &mut warnings));
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        let mut sampler = RrSampler {
            shared: &shared,
            ids: &ids,
            prev: vec![(0, 0); n],
            warmup_ns,
            sink,
        };
        let timeline = Timeline {
            start,
            warmup: cfg.warmup,
            duration: cfg.duration,
            interval: cfg.interval.filter(|i| !i.is_zero()),
            check_every: None,
            // Aborted during the warm-up: the window never opened; report it empty at the stop.
            unopened: Unopened::AtStop,
        };
        let out = timeline.run(&mut sampler, &threads, at_start, abort, || {
            handles
                .into_iter()
                .map(|h| h.and_then(|h| h.join().ok()))
                .collect::<Vec<Option<FlowEnd>>>()
        });
        let (window_start_ns, stop_ns) = (out.window_start_ns, out.stop_ns);
        let (results, intervals, aborted) = (out.done, out.intervals, out.aborted);

        let window_s = (stop_ns.saturating_sub(window_start_ns)) as f64 / 1e9;
        let mut merged = (role == RrRole::Client).then(LatencyHistogram::new);
        let mut out_flows = Vec::with_capacity(n);
        for (i, res) in results.into_iter().enumerate() {
            let flow = ids[i];
            let Some(mut end) = res else {
                out_flows.push(RrFlowSide {
                    flow,
                    window: RrCounts::default(),
                    total: RrCounts::default(),
                    latency: None,
                    open_loop: None,
                    tcp_info: None,
                    error: Some("flow thread failed".into()),
                });
                continue;
            };
            for note in end.notes.drain(..) {
                warnings.push(format!("flow {flow}: {note}"));
            }
            let latency = end.tally.hist.as_ref().map(|h| {
                if let Some(m) = merged.as_mut() {
                    m.merge(h);
                }
                h.summary()
            });
            let open_loop = match (cfg.open_loop, end.open_loop) {
                (Some(ol), Some((sent, peak))) => {
                    let r = ol.rate_per_s;
                    let report = OpenLoopReport {
                        requested_per_s: r,
                        achieved_per_s: if window_s > 0.0 {
                            end.tally.window.transactions as f64 / window_s
                        } else {
                            0.0
                        },
                        slots_in_window: slots_before(stop_ns, r)
                            .saturating_sub(slots_before(window_start_ns, r)),
                        sent_total: sent,
                        missed_slots: slots_before(stop_ns, r).saturating_sub(sent),
                        max_outstanding: ol.max_outstanding,
                        peak_outstanding: peak,
                    };
                    if aborted.is_none() && report.achieved_per_s < 0.95 * r {
                        warnings.push(format!(
                            "flow {flow}: open loop achieved {:.1} of {r:.1} transactions/s \
                             requested; {} slots missed, peak {} of {} outstanding",
                            report.achieved_per_s,
                            report.missed_slots,
                            report.peak_outstanding,
                            report.max_outstanding
                        ));
                    }
                    Some(report)
                }
                _ => None,
            };
            out_flows.push(RrFlowSide {
                flow,
                window: end.tally.window,
                total: end.tally.total,
                latency,
                open_loop,
                tcp_info: end.tcp_info,
                error: end.error,
            });
        }
        if let Some(m) = &merged {
            if m.clamped_count() > 0 {
                warnings.push(format!(
                    "{} latencies outside 1 ns .. 100 s were clamped into that range",
                    m.clamped_count()
                ));
            }
        }
        let cpu = out.cpu.map_err(|e| warnings.push(e)).ok();
        Ok(RrOutput {
            workload,
            role,
            close_mode: (workload == RrWorkload::TcpCrr && role == RrRole::Client)
                .then_some(cfg.close_mode),
            window_start_ns,
            window_end_ns: stop_ns,
            flows: out_flows,
            latency: merged.as_ref().map(LatencyHistogram::summary),
            histogram: merged,
            intervals,
            cpu,
            warnings,
            aborted,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ok = RrConfig::default();
        assert_eq!(ok.validate(RrWorkload::TcpRr), Ok(()));
        assert_eq!(ok.validate(RrWorkload::TcpCrr), Ok(()));
        assert_eq!(
            ok.validate(RrWorkload::UdpRr),
            Err(RrError::UdpSizeTooSmall {
                which: "request",
                size_bytes: 1
            })
        );
        let udp = RrConfig {
            request_size_bytes: 8,
            response_size_bytes: 7,
            ..RrConfig::default()
        };
        assert!(matches!(
            udp.validate(RrWorkload::UdpRr),
            Err(RrError::UdpSizeTooSmall {
                which: "response",
                ..
            })
        ));
        let big = RrConfig {
            request_size_bytes: 70_000,
            response_size_bytes: 8,
            ..RrConfig::default()
        };
        assert!(matches!(
            big.validate(RrWorkload::UdpRr),
            Err(RrError::UdpSizeTooLarge { .. })
        ));
        let zero = RrConfig {
            response_size_bytes: 0,
            ..RrConfig::default()
        };
        assert_eq!(
            zero.validate(RrWorkload::TcpRr),
            Err(RrError::ZeroSize { which: "response" })
        );
        let burst = RrConfig {
            burst: 4,
            ..RrConfig::default()
        };
        assert_eq!(burst.validate(RrWorkload::TcpRr), Ok(()));
        assert!(burst.validate(RrWorkload::TcpCrr).is_err());
        let ol = RrConfig {
            open_loop: Some(OpenLoop {
                rate_per_s: 100.0,
                max_outstanding: 10,
            }),
            ..RrConfig::default()
        };
        assert_eq!(ol.validate(RrWorkload::TcpRr), Ok(()));
        assert_eq!(
            ol.validate(RrWorkload::TcpCrr),
            Err(RrError::OpenLoopUnsupported(RrWorkload::TcpCrr))
        );
        let bad_rate = RrConfig {
            open_loop: Some(OpenLoop {
                rate_per_s: f64::NAN,
                max_outstanding: 10,
            }),
            ..RrConfig::default()
        };
        assert!(matches!(
            bad_rate.validate(RrWorkload::TcpRr),
            Err(RrError::InvalidRate(_))
        ));
        let both = RrConfig {
            burst: 2,
            ..ol.clone()
        };
        assert!(both.validate(RrWorkload::TcpRr).is_err());
    }

    #[test]
    fn slot_arithmetic() {
        // 1000/s: slots at 0, 1 ms, 2 ms, ...
        assert_eq!(slot_ns(0, 1000.0), 0);
        assert_eq!(slot_ns(3, 1000.0), 3_000_000);
        assert_eq!(slots_before(0, 1000.0), 0);
        assert_eq!(slots_before(1, 1000.0), 1);
        assert_eq!(slots_before(3_000_000, 1000.0), 3);
        assert_eq!(slots_before(3_000_001, 1000.0), 4);
    }
}
