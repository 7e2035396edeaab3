//! Request/response workloads: netperf's TCP_RR, TCP_CRR and UDP_RR.
//!
//! One entry point, [`run`], takes the [`RrConfig`] every workload shares and the flows of
//! one end ([`RrFlows`]: the variant names the workload and the role and carries the
//! parameters only they use) and returns what that end measured
//! (an [`EngineOutput`] of [`RrSide`]). The engine never opens or accepts anything tied to
//! addresses: it gets
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
//!   responses still owed to it (bounded by [`Timing::drain_limit`]), then closes in
//!   order (shutdown write, wait for the server's EOF). Those late responses count in the total,
//!   not in the window, so when both ends finish cleanly the client's total transactions
//!   equal the server's exactly. A CRR or UDP client finishes the transaction it is in
//!   (bounded by [`CrrClient::peer_timeout`] / [`UdpRrClient::timeout`]).
//! - **Servers** serve until the client is done: TCP RR until EOF; CRR until the channel of
//!   accepted connections is disconnected; CRR and UDP also end once nothing has arrived for
//!   [`SERVER_IDLE_AFTER_STOP`] after their stop instant, or for [`SERVER_IDLE_AFTER_PEER`]
//!   once the caller said the client has finished ([`Abort::peer_finished`]: its results
//!   arrived, so every request it will send has been sent and answered or given up on; after
//!   the stop instant servers wake every [`SERVER_IDLE_AFTER_PEER`] to notice, from one poll
//!   period before it on). A UDP server without busy polling counts only its answers as
//!   activity: its reads block with no timeout and the `waker` thread applies these rules
//!   (shutting its socket down for reading), where a CRR server wakes on its own. Every
//!   server waits at most
//!   `drain_limit` past its own stop instant, so the two ends' start instants may differ by
//!   less than that.
//! - **Abort**: the window ends at the abort instant (empty if aborted during the warm-up);
//!   flows notice within about 100 ms and [`EngineOutput::aborted`] is set.
//! - **Intervals** ([`Timing::interval`]; a zero period means none) tile `[0, end]`, the
//!   last one covering the drain.
//!
//! The caller's thread samples: it runs the timeline driver shared by every engine (the
//! crate-private `timeline` module), with this engine's counters and interval type.
//!
//! # Workloads
//! - **TCP RR, closed loop** ([`Pacing::Closed`], the default): per flow, write a request
//!   of `request_size_bytes`, read exactly `response_size_bytes`; with `burst` `N`, `N`
//!   requests are written up front and one new request after each response (netperf
//!   `-b`), so `N` transactions are in flight. Latency: from just before the request's write
//!   to the arrival of the last byte of its response. TCP_NODELAY is set on every socket. As
//!   with netperf, the `N` requests written before any response is read should fit the socket
//!   buffers; if they do not, both ends block writing and the flow ends with an error once the
//!   drain limit after the stop has passed.
//! - **TCP RR, open loop** ([`Pacing::Open`]): the rate is **per flow**. Request `k`
//!   (from 0) is scheduled at `start + k / rate`, where `start` is the call to [`run`]. A
//!   sender thread writes requests on schedule; a receiver thread reads responses. TCP keeps
//!   order, so the `k`-th response answers request `k`, and its latency is measured **from
//!   the scheduled send time** of request `k` (no coordinated omission: time a request spent
//!   waiting to be sent — behind a slow server, a full socket buffer or a late timer — is in
//!   its latency). At most [`OpenLoop::max_outstanding`] requests are outstanding (sent and
//!   not answered); at the cap the sender waits. The schedule is never shifted: once room
//!   frees up, the delayed requests go out back to back, each keeping its original scheduled
//!   time. Slots scheduled before the stop instant that were never sent are reported as
//!   [`OpenLoopCounts::missed_slots`]; their latency is not measured (they would have been
//!   at least as slow as the last one sent). The schedule is the crate's one pacing schedule.
//! - **TCP CRR**: per transaction: the caller's connect closure (latency starts before it, so
//!   whatever the closure does — the daemon's data hello — is included), write the request,
//!   read the response (latency ends here), close. [`CloseMode::Orderly`] (default): shutdown
//!   write, wait for the server's EOF, close — the client ends in TIME_WAIT as with netperf;
//!   [`CloseMode::Abortive`]: SO_LINGER 0 and close, which sends RST. The mode used is in
//!   [`RrSide::close_mode`]; the server counts what it saw (`closes_orderly`,
//!   `closes_reset`). The server serves the connections it receives from its channel one after
//!   the other: read request, write response, wait for the client's close. A failed connect
//!   counts `connect_errors` (the client then waits 1 ms before the next attempt), any other
//!   failed step `errors`; a counted transaction is one where every step succeeded, so
//!   `transactions + errors + connect_errors` = attempts.
//! - **UDP RR**: the client sends a request datagram on its connected socket and waits up to
//!   [`UdpRrClient::timeout`] (default [`DEFAULT_UDP_TIMEOUT`], 100 ms) for the response;
//!   a timeout counts the transaction as `lost` and the client goes on with the next one.
//!   The first 8 bytes of each request carry a sequence number (big-endian `u64`, from 0) that
//!   the server echoes in the first 8 bytes of its response, so a response to an earlier
//!   (timed-out) request is recognised and counted as `late` instead of being taken for the
//!   current one. Hence both UDP sizes must be at least [`UDP_SEQ_BYTES`] (8) bytes (the
//!   spec's validation sees to it). `lost` includes the transactions whose response later
//!   came in `late`; `lost − late` were never answered (as far as the client saw before it
//!   stopped). A datagram of the wrong size or with a sequence number never sent counts as
//!   `garbage`. The server echoes every datagram of exactly `request_size_bytes` back to its
//!   sender with `response_size_bytes`; anything else is `garbage`, not answered.
//!
//! # Busy polling
//! With [`TcpRrClient::busy_poll`] (and the other TCP RR and UDP RR ends'), every data
//! socket is made non-blocking and SO_BUSY_POLL is set (unless 0) and read back ([`RrFlowSide::busy_poll`]). A flow
//! thread's reads and writes then never sleep: a call that finds nothing returns at once and
//! the thread yields the CPU (`sched_yield`) and tries again, so a thread with a CPU of its
//! own spins and one sharing a CPU with the other end hands it over instead of waiting for a
//! wake-up. Every stop, abort and drain rule above holds unchanged (the same checks run at
//! every attempt instead of every poll period). CRR is not busy-polled (a connection per
//! transaction: its cost is the handshake, not the wake-up).
//!
//! # Threads and hot path
//! One thread per flow, plus one sender thread per flow in open-loop mode; the calling thread
//! samples intervals and takes the window edges (CPU snapshots) as in [`stream`]. Per
//! transaction a flow thread touches only its own state, a relaxed load of the shared window
//! phase (written only at the window edges) and plain stores of its running totals into its
//! own cache-line-padded counters for the sampler — no read-modify-write, and no lock unless
//! a client samples intervals: then it records each round trip in its interval histogram
//! under a mutex that only the sampler also takes, once per interval (see `sample`). An
//! open-loop flow's two threads share two padded counters (sent, received). Every blocking
//! call wakes at least every 100 ms to look at the abort flag, and every wait is bounded;
//! the CRR connect closure must bound its own.
//!
//! # Intervals and the rate policy
//! Each interval is an [`RrInterval`] (transactions and lost per flow; on a client the
//! median and 99th percentile round trip of the transactions completed in the interval, per
//! flow and all flows merged), reported live to the [`Sink`] and kept in
//! [`RrSide::intervals`] (only when [`Timing::interval`] is set).
//! Samples tile `[0, end]` exactly, so their transactions add up to each flow's total. The
//! rate policy ([`Timing::policy`]) counts `transactions × (request + response)` bytes.
//!
//! # Addresses
//! Each flow reports its data socket's local and peer address ([`RrFlowSide::local`],
//! [`RrFlowSide::peer`]), read when the flow starts; a CRR flow those of its last connection
//! that completed the request and response (read right after the response, outside the
//! client's round trip).
//!
//! # Files
//! The flows live in `tcp` (TCP RR closed and open loop), `crr` and `udp`; what they share
//! (full reads and writes, the orderly close, the tally) in `io`; the sampler in `sample`.
//!
//! [`stream`]: crate::stream
//! [`Timing::drain_limit`]: crate::Timing::drain_limit
//! [`Timing::interval`]: crate::Timing::interval
//! [`Timing::policy`]: crate::Timing::policy

mod config;
mod crr;
mod io;
mod sample;
mod tcp;
mod udp;
mod waker;

pub use config::{
    ConnectFn, CrrClient, CrrClientFlow, CrrServer, CrrServerFlow, OpenLoop, Pacing, RrConfig,
    RrFlows, TcpRrClient, TcpRrFlow, TcpRrServer, UdpRrClient, UdpRrFlow, UdpRrServer,
    DEFAULT_PEER_TIMEOUT, DEFAULT_UDP_TIMEOUT,
};

use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use wirebench_model::abort::AbortReason;
use wirebench_model::rr::{
    OpenLoopCounts, RrCounts, RrFlowInterval, RrFlowSide, RrInterval, RrRole, RrSide,
};
use wirebench_model::side::Span;
use wirebench_model::warning::{DataThread, FlowError, Step, Warning};
use wirebench_stats::latency::LatencyHistogram;
use wirebench_sys::thread::CpuTimes;

use crate::abort::Abort;
use crate::cpu::CpuSnapshot;
use crate::pace::Schedule;
use crate::threads::{account_thread, started, DataThreads};
use crate::timeline::{Engine, Timeline};
use crate::{EngineOutput, Sink};
use config::{ClientLoop, Job};
use io::{prepare_tcp, Addresses, FlowEnd, Tally};
use sample::{RrSampler, RttScratch};
use socket2::SockRef;
use waker::{EndRule, Waker};

/// How often blocked calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

/// Bytes at the start of every UDP request and response holding the sequence number.
pub const UDP_SEQ_BYTES: usize = 8;

/// A CRR or UDP server ends once nothing has arrived for this long after its stop instant.
pub const SERVER_IDLE_AFTER_STOP: Duration = Duration::from_millis(250);

/// A CRR or UDP server whose client has finished ends once nothing has arrived for this long
/// after its stop instant; also how often it wakes after the stop instant to notice.
pub const SERVER_IDLE_AFTER_PEER: Duration = Duration::from_millis(1);

/// Pause after a failed connect (CRR) or a failed UDP send before the next attempt.
const ERROR_BACKOFF: Duration = Duration::from_millis(1);

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

struct Shared {
    start: Instant,
    phase: AtomicU8,
    stop: AtomicBool,
    stop_at_ns: AtomicU64,
    counters: Vec<FlowCounters>,
    /// A client with intervals: each flow's round trips since the last sample (see
    /// `sample`); empty otherwise.
    interval_rtt: Vec<Mutex<LatencyHistogram>>,
    /// CPU time each data thread recorded for itself just before exiting (by thread slot:
    /// 2 × flow index, + 1 for an open-loop sender).
    final_cpu: Vec<Mutex<Option<CpuTimes>>>,
}

impl Shared {
    /// The stop instant, if it has passed.
    fn stop_instant(&self) -> Option<Instant> {
        if !self.stop.load(Ordering::Acquire) {
            return None;
        }
        let ns = self.stop_at_ns.load(Ordering::Relaxed);
        Some(self.start + Duration::from_nanos(ns))
    }
}

/// What one flow thread sees of the run.
struct FlowCtx<'a> {
    shared: &'a Shared,
    abort: &'a Abort,
    cfg: &'a RrConfig,
    idx: usize,
    flow: u32,
    /// Set when the flow's reads block without a timeout and the waker ends them.
    waker: Option<&'a Waker>,
}

impl FlowCtx<'_> {
    fn in_window(&self) -> bool {
        self.shared.phase.load(Ordering::Relaxed) == PHASE_WINDOW
    }
    fn aborted(&self) -> bool {
        self.abort.is_set()
    }
    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire) || self.aborted()
    }
    /// The stop instant, if it has passed.
    fn stop_at(&self) -> Option<Instant> {
        self.shared.stop_instant()
    }
    /// Past the stop instant by more than the drain limit.
    fn drain_expired(&self) -> bool {
        self.stop_at()
            .is_some_and(|t| Instant::now() > t + self.cfg.timing.drain_limit)
    }
    fn publish(&self, t: &Tally) {
        let c = &self.shared.counters[self.idx];
        c.transactions
            .store(t.total.transactions, Ordering::Relaxed);
        c.lost.store(t.total.lost, Ordering::Relaxed);
    }
    /// Count a completed client transaction of round trip `rtt` and publish the totals; with
    /// intervals, record `rtt` in the flow's interval histogram too, under its lock.
    fn client_transaction(&self, t: &mut Tally, rtt: Duration) {
        let _interval = self.shared.interval_rtt.get(self.idx).map(|m| {
            let mut h = sample::lock(m);
            h.record_duration(rtt);
            h
        });
        t.transaction(self.in_window(), Some(rtt));
        self.publish(t);
    }
    /// Server end condition after the stop instant: drain limit passed, or idle for
    /// [`SERVER_IDLE_AFTER_STOP`] (for [`SERVER_IDLE_AFTER_PEER`] once the client has
    /// finished) since the later of the stop instant and `last_activity`.
    fn server_done(&self, last_activity: Instant) -> bool {
        match self.stop_at() {
            None => false,
            Some(stop) => {
                let now = Instant::now();
                let idle = now.saturating_duration_since(stop.max(last_activity));
                let limit = if self.abort.is_peer_finished() {
                    SERVER_IDLE_AFTER_PEER
                } else {
                    SERVER_IDLE_AFTER_STOP
                };
                now > stop + self.cfg.timing.drain_limit || idle > limit
            }
        }
    }
    /// How long a server's blocking call may wait: [`POLL_TIMEOUT`], and from one
    /// [`POLL_TIMEOUT`] before the planned stop instant on [`SERVER_IDLE_AFTER_PEER`], so
    /// that the client's end is noticed promptly (two values only, so that a server that
    /// sets it as a socket option changes it once).
    fn server_poll(&self) -> Duration {
        let planned_stop = self.shared.start + self.cfg.timing.warmup + self.cfg.timing.duration;
        if self.stop_at().is_some()
            || planned_stop.saturating_duration_since(Instant::now()) <= POLL_TIMEOUT
        {
            SERVER_IDLE_AFTER_PEER
        } else {
            POLL_TIMEOUT
        }
    }
}

/// Run `f` on `s` once its TCP options (and busy polling, if asked) are set; a flow that
/// could not set them ends at once.
fn with_tcp(
    s: &TcpStream,
    (client, woken): (bool, bool),
    busy: Option<u32>,
    f: impl FnOnce(&TcpStream) -> FlowEnd,
) -> FlowEnd {
    let prepared = prepare_tcp(s)
        .and_then(|()| {
            if woken {
                s.set_read_timeout(None)
            } else {
                Ok(())
            }
        })
        .and_then(|()| {
            busy.map(|us| io::busy_poll(SockRef::from(s), us))
                .transpose()
        });
    match prepared {
        Ok(applied) => {
            let mut end = f(s);
            end.busy_poll = applied;
            end
        }
        Err(e) => {
            let mut end = FlowEnd::new(Tally::new(client));
            end.error = Some(FlowError::os(Step::SocketOptions, &e));
            end
        }
    }
}

fn flow_thread(ctx: &FlowCtx, job: Job, tid_tx: mpsc::Sender<(usize, i32)>) -> FlowEnd {
    let slot = 2 * ctx.idx;
    let final_cpu = &ctx.shared.final_cpu;
    let cpu = ctx.cfg.timing.pin.thread_cpu(slot);
    // Read while the socket is connected (a CRR flow reads its connections' own).
    let addresses = match &job {
        Job::TcpClient { stream: s, .. } | Job::TcpServer { stream: s, .. } => {
            Some(Addresses::of(s.local_addr(), s.peer_addr()))
        }
        Job::UdpClient { socket: s, .. } | Job::UdpServer { socket: s, .. } => {
            Some(Addresses::of(s.local_addr(), s.peer_addr()))
        }
        Job::CrrClient { .. } | Job::CrrServer { .. } => None,
    };
    let woken = ctx.waker.is_some();
    // Only an open-loop client keeps a sender of the channel beyond registration (its job's,
    // for its sender thread); `tid_tx` goes at once, since the sampler waits for all senders
    // to go.
    let (mut end, pin_err) = account_thread(final_cpu, slot, tid_tx, cpu, move || match job {
        Job::TcpClient {
            stream,
            run,
            busy_poll,
        } => with_tcp(&stream, (true, woken), busy_poll, |s| match run {
            ClientLoop::Closed { burst } => tcp::client_closed(ctx, s, burst),
            ClientLoop::Open(ol, tx) => tcp::client_open(ctx, s, &ol, tx),
        }),
        Job::TcpServer { stream, busy_poll } => {
            with_tcp(&stream, (false, woken), busy_poll, |s| tcp::server(ctx, s))
        }
        Job::CrrClient {
            mut connect,
            close_mode,
            peer_timeout,
        } => crr::client(ctx, &mut connect, close_mode, peer_timeout),
        Job::CrrServer {
            accepted,
            peer_timeout,
        } => crr::server(ctx, &accepted, peer_timeout),
        Job::UdpClient {
            socket,
            timeout,
            busy_poll,
        } => udp::client(ctx, &socket, timeout, busy_poll),
        Job::UdpServer { socket, busy_poll } => udp::server(ctx, &socket, busy_poll),
    });
    if let Some(e) = pin_err {
        end.error.get_or_insert(FlowError::os(Step::Pin, &e));
    }
    if let Some(a) = addresses {
        end.addresses = a;
    }
    if let Some(w) = ctx.waker {
        w.flow_done();
    }
    end
}

/// The open-loop counts of a flow that sent `sent` requests with `peak` outstanding, over a
/// window `[window_start_ns, stop_ns]`.
fn open_loop_counts(
    ol: &OpenLoop,
    start: Instant,
    window_start_ns: u64,
    stop_ns: u64,
    sent: u64,
    peak: u64,
) -> OpenLoopCounts {
    let schedule = Schedule::per_second(start, ol.per_s);
    let before = |ns: u64| schedule.units_before(start + Duration::from_nanos(ns));
    OpenLoopCounts {
        slots_in_window: before(stop_ns).saturating_sub(before(window_start_ns)),
        sent_total: sent,
        missed_slots: before(stop_ns).saturating_sub(sent),
        peak_outstanding: peak,
    }
}

/// The report of one flow from what its thread handed back (`None`: it panicked), with its
/// window round trips merged into `merged`; `open_loop`: an open-loop client's schedule;
/// `edges` = (start, window start ns, stop ns).
fn flow_side(
    flow: u32,
    res: Option<FlowEnd>,
    open_loop: Option<OpenLoop>,
    edges: (Instant, u64, u64),
    merged: Option<&mut LatencyHistogram>,
    warnings: &mut Vec<Warning>,
) -> RrFlowSide {
    let Some(mut end) = res else {
        return RrFlowSide {
            flow,
            window: RrCounts::default(),
            total: RrCounts::default(),
            latency: None,
            open_loop: None,
            tcp_info: None,
            congestion: None,
            error: Some(FlowError::panicked()),
            local: None,
            peer: None,
            busy_poll: None,
        };
    };
    warnings.append(&mut end.warnings);
    let latency = end.tally.hist.as_ref().map(|h| {
        if let Some(m) = merged {
            m.merge(h);
        }
        h.summary()
    });
    let (start, window_start_ns, stop_ns) = edges;
    let open_loop = open_loop.zip(end.open_loop).map(|(ol, (sent, peak))| {
        open_loop_counts(&ol, start, window_start_ns, stop_ns, sent, peak)
    });
    RrFlowSide {
        flow,
        window: end.tally.window,
        total: end.tally.total,
        latency,
        open_loop,
        tcp_info: end.tcp_info,
        congestion: end.congestion,
        error: end.error,
        local: end.addresses.local,
        peer: end.addresses.peer,
        busy_poll: end.busy_poll,
    }
}

/// Run a request/response test over `flows` at this end. Blocks until every flow has finished
/// (or the abort fired and the flows noticed it, within about 100 ms). Everything that goes
/// wrong while running is in the output (flow errors, warnings, `aborted`).
pub fn run(
    cfg: &RrConfig,
    flows: RrFlows,
    sink: &mut dyn Sink<RrInterval>,
    abort: &Abort,
) -> EngineOutput<RrSide> {
    let role = flows.role();
    let close_mode = flows.close_mode();
    let open_loop = flows.open_loop();
    let blocking_reads = flows.blocking_reads();
    let rule = if matches!(flows, RrFlows::UdpServer(_)) {
        EndRule::UdpServer
    } else {
        EndRule::Tcp
    };
    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let jobs = flows.into_jobs(&tid_tx);
    let waker = blocking_reads
        .then(|| {
            let fds = jobs.iter().filter_map(|(_, j)| match j {
                Job::TcpClient { stream, .. } | Job::TcpServer { stream, .. } => {
                    Some(stream.as_fd())
                }
                Job::UdpServer { socket, .. } => Some(socket.as_fd()),
                _ => None,
            });
            Waker::new(fds, rule)
        })
        .flatten();
    let waker = waker.as_ref();
    let n = jobs.len();
    let ids: Vec<u32> = jobs.iter().map(|j| j.0).collect();
    let interval = cfg.timing.interval.filter(|i| !i.is_zero());
    let start = Instant::now();
    let shared = Shared {
        start,
        phase: AtomicU8::new(if cfg.timing.warmup.is_zero() {
            PHASE_WINDOW
        } else {
            PHASE_WARMUP
        }),
        stop: AtomicBool::new(false),
        stop_at_ns: AtomicU64::new(u64::MAX),
        counters: (0..n).map(|_| FlowCounters::default()).collect(),
        interval_rtt: if role == RrRole::Client && interval.is_some() {
            (0..n)
                .map(|_| Mutex::new(LatencyHistogram::coarse()))
                .collect()
        } else {
            Vec::new()
        },
        final_cpu: (0..2 * n).map(|_| Mutex::new(None)).collect(),
    };
    // An open-loop client runs a sender thread beside each flow's.
    let threads_per_flow = if open_loop.is_some() { 2 } else { 1 };
    let mut warnings = Vec::new();
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
                        flow,
                        waker,
                    };
                    flow_thread(&ctx, job, tx)
                });
            handles.push(started(h, DataThread::Flow(flow), &mut warnings));
        }
        if let Some(w) = waker {
            let shared = &shared;
            let spawned =
                thread::Builder::new()
                    .name("wb-waker".into())
                    .spawn_scoped(scope, move || {
                        let planned_stop = start + cfg.timing.warmup + cfg.timing.duration;
                        w.watch(shared, abort, cfg.timing.drain_limit, planned_stop)
                    });
            if let Err(e) = spawned {
                // Without the waker nothing would end a blocked read: stop the flows now.
                abort.abort(AbortReason::EngineFailed {
                    detail: format!("starting the waker thread: {e}"),
                });
            }
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        let mut sampler = RrSampler {
            shared: &shared,
            ids: &ids,
            prev: vec![(0, 0); n],
            warmup_ns: u64::try_from(cfg.timing.warmup.as_nanos()).unwrap_or(u64::MAX),
            bytes_per_transaction: (cfg.request_size_bytes + cfg.response_size_bytes) as u64,
            rtt: (!shared.interval_rtt.is_empty()).then(RttScratch::new),
            sink,
        };
        let timeline = Timeline {
            start,
            warmup: cfg.timing.warmup,
            duration: cfg.timing.duration,
            interval,
            policy: cfg.timing.policy,
            // Aborted during the warm-up: the window never opened; report it empty at the stop.
            cpus_used: cfg.timing.pin.cpus_used(n * threads_per_flow),
        };
        let out = timeline.run(&mut sampler, &threads, at_start, abort, || {
            handles
                .into_iter()
                .map(|h| h.and_then(|h| h.join().ok()))
                .collect::<Vec<Option<FlowEnd>>>()
        });
        let (window_start_ns, stop_ns) = (out.end.window_start_ns, out.end.stop_ns);
        let mut merged = (role == RrRole::Client).then(LatencyHistogram::new);
        let edges = (start, window_start_ns, stop_ns);
        let out_flows: Vec<RrFlowSide> = out
            .done
            .into_iter()
            .zip(&ids)
            .map(|(res, &flow)| {
                flow_side(flow, res, open_loop, edges, merged.as_mut(), &mut warnings)
            })
            .collect();
        if let Some(m) = &merged {
            if m.clamped_count() > 0 {
                warnings.push(Warning::LatencyClamped {
                    count: m.clamped_count(),
                });
            }
        }
        let data = RrSide {
            role,
            close_mode,
            window: Span {
                start_ns: window_start_ns,
                end_ns: stop_ns,
            },
            flows: out_flows,
            latency: merged.as_ref().map(LatencyHistogram::summary),
            latency_histogram: merged
                .as_ref()
                .map(wirebench_stats::buckets::LatencyBuckets::of),
            intervals: out.intervals,
        };
        let engine = cfg.timing.pin.thread_per_flow(n * threads_per_flow);
        EngineOutput::new(data, out.end, warnings, engine, &cfg.timing)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_slot_arithmetic() {
        let ol = OpenLoop {
            per_s: 1000,
            max_outstanding: 10,
        };
        let t0 = Instant::now();
        // Window [0.5 s, 1.5 s]: slots 500..1500 are scheduled in it.
        let c = open_loop_counts(&ol, t0, 500_000_000, 1_500_000_000, 1499, 3);
        assert_eq!(c.slots_in_window, 1000);
        assert_eq!(c.missed_slots, 1);
        assert_eq!(c.sent_total, 1499);
        assert_eq!(c.peak_outstanding, 3);
        // 3 per second: slot k at k/3 s; before 1 s: slots 0, 1, 2.
        let ol = OpenLoop {
            per_s: 3,
            max_outstanding: 1,
        };
        let c = open_loop_counts(&ol, t0, 0, 1_000_000_000, 3, 1);
        assert_eq!((c.slots_in_window, c.missed_slots), (3, 0));
    }
}
