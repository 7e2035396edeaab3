//! UDP stream workload: paced datagram senders and sequence-checking receivers.
//!
//! # Timeline (on this end's monotonic clock, 0 = the call to [`run`])
//! ```text
//! 0 ──── warm-up ────┬──────────── duration ────────────┬── drain ──┐
//!                window start                        stop instant   quiet (or drain_limit)
//! ```
//! - **Window start** = end of warm-up; CPU is snapshotted there.
//! - **Stop instant** = window start + duration; CPU is snapshotted there. Senders send no
//!   datagram at or after it.
//! - Receivers keep reading after the stop instant for the datagrams still in flight, until
//!   nothing has arrived for the drain quiet time (`max(100 ms, 4 × the datagram gap)`, from the
//!   stop or the last arrival, whichever is later) or until `drain_limit` after the stop.
//!
//! # Windows
//!
//! Every datagram carries its send time (ns after the sender's start). A sender counts a
//! datagram in its window if that time lies in `[warm-up, warm-up + duration)`; a receiver
//! counts a distinct datagram in the window by the same rule applied to the header's send time
//! and its own `warmup`/`duration` — which must be the sender's (both come from one spec). So
//! both ends' window counts cover exactly the same datagrams, and the report layer gets the
//! window's loss as `window_datagrams_sent − window_datagrams_received`, and the total loss as
//! `datagrams_sent − datagrams_received`, whatever the offset between the two ends' starts.
//!
//! # Threads and sockets
//!
//! - One thread per sending flow, each with its own **connected** [`UdpSocket`]. Datagram
//!   `n` of a paced flow is due at `start + n × gap` (`gap = msg_size × 8 / rate`); the thread
//!   sleeps until 50 µs before the due time and spins for the rest. A late sender catches up
//!   by sending the overdue datagrams back to back, but never more than
//!   [`MAX_CATCH_UP_DATAGRAMS`] gaps' worth: if it falls further behind (a long descheduling, a
//!   send that blocked), it moves the schedule forward, drops the slots beyond the allowance,
//!   and counts a pacing reset. So at most `MAX_CATCH_UP_DATAGRAMS + 1` datagrams ever leave
//!   back to back. Unpaced flows send back to back all the time.
//! - One thread per receive socket. A receive socket serves one or more flows (it may be a
//!   single unconnected socket shared by every flow of a test); datagrams are routed to their
//!   flow by the header's flow id, and those that fit no flow are counted per socket as
//!   invalid ([`UdpRecvSocketReport`]).
//!
//! One thread per flow is simple and keeps flows independent; for hundreds of flows a pool
//! (or `sendmmsg`) would be cheaper. No lock is taken per datagram: each thread keeps its
//! running totals in its own cache-line-sized block of atomics (plain stores), which the
//! sampling thread (the caller's) reads at interval boundaries.
//!
//! # Intervals
//!
//! The sink gets an [`IntervalSample`] per interval with each flow's bytes (sender: bytes
//! sent; receiver: bytes of distinct datagrams). The datagram counts of the same intervals
//! (sent, received, send errors, late, duplicate) are in [`UdpOutput::udp_intervals`], index
//! for index, since `IntervalSample` has no room for them. Intervals tile `[0, end]`, the last
//! one covering the drain, so their counts add up to each flow's totals. A period below 1 ms
//! is taken as 1 ms.
//!
//! The caller's thread samples: it runs the timeline driver shared by every engine (the
//! crate-private `timeline` module), with this engine's counters and interval types.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rand::RngCore;
use thiserror::Error;
use wirebench_proto::measure::{CpuReport, FlowInterval, IntervalSample, Role};
use wirebench_proto::udp::{
    DatagramHeader, DatagramOutcome, FlowRecvAccounting, RecvDemux, SenderWindow, SeqClass,
    UdpFlowInterval, UdpIntervalSample, UdpRecvReport, UdpRecvSocketReport, UdpSendReport,
    HEADER_BYTES, MAX_DATAGRAM_BYTES,
};
use wirebench_sys::thread::CpuTimes;

use crate::cpu::CpuSnapshot;
use crate::timeline::{spawn_data, DataThreads, Engine, Timeline, Unopened};
use crate::util::{is_timeout, ns_since};
use crate::Sink;

/// How often blocked socket calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(20);

/// A paced sender sleeps until this long before a datagram's due time, then spins.
const SPIN_NS: u64 = 50_000;

/// Longest single sleep of a paced sender (it looks at the flags between sleeps).
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// How many gaps a paced sender may fall behind and still catch up (sending the overdue
/// datagrams back to back); slots beyond that are dropped and the schedule moves forward.
pub const MAX_CATCH_UP_DATAGRAMS: u64 = 8;

/// Shortest quiet time that ends a receiver's drain after the stop instant.
pub const MIN_DRAIN_QUIET: Duration = Duration::from_millis(100);

/// Receive buffer: the largest possible datagram fits, so nothing is truncated.
const RECV_BUF_BYTES: usize = 65_536;

/// Longest warm-up or duration the engine honours (longer ones are cut to it).
const MAX_PHASE: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Linux `ENOBUFS`: the device queue or the socket's memory is full.
const ENOBUFS: i32 = 105;
/// Linux `ENETUNREACH`.
const ENETUNREACH: i32 = 101;
/// Linux `EHOSTUNREACH`.
const EHOSTUNREACH: i32 = 113;

/// One sending flow.
#[derive(Debug)]
pub struct UdpSendFlow {
    /// Flow id (written into every datagram).
    pub flow: u32,
    /// A socket connected to the receiver (options already applied).
    pub socket: UdpSocket,
}

/// One receive socket and the flows it serves.
#[derive(Debug)]
pub struct UdpRecvSocket {
    /// Flow ids whose datagrams arrive on this socket; others count as invalid.
    pub flows: Vec<u32>,
    /// A bound socket, connected or not (options such as SO_RCVBUF already applied).
    pub socket: UdpSocket,
    /// The only source address whose datagrams are parsed; datagrams from any other source
    /// are counted as invalid (`foreign_source`). `None` accepts every source.
    pub peer: Option<SocketAddr>,
}

/// What to run at this end: flows to send and sockets to receive on. Both may be given in one
/// run (bidirectional tests), on one timeline.
#[derive(Debug, Default)]
pub struct UdpPlan {
    /// Flows this end sends.
    pub senders: Vec<UdpSendFlow>,
    /// Sockets this end receives on.
    pub receivers: Vec<UdpRecvSocket>,
}

/// Parameters of a UDP run. A receiving end must use the sender's `warmup`, `duration`,
/// `msg_size_bytes` and `rate_bps` (they define the sender window and the drain quiet time).
#[derive(Debug, Clone)]
pub struct UdpConfig {
    /// Size of every datagram (UDP payload), header included: [`HEADER_BYTES`] to
    /// [`MAX_DATAGRAM_BYTES`].
    pub msg_size_bytes: usize,
    /// Target rate of each sending flow, bits per second of UDP payload; `None`: unpaced.
    pub rate_bps: Option<u64>,
    /// Warm-up before the window opens.
    pub warmup: Duration,
    /// Measured duration.
    pub duration: Duration,
    /// Interval sampling period, if any.
    pub interval: Option<Duration>,
    /// Longest a receiver keeps reading after the stop instant.
    pub drain_limit: Duration,
    /// Depth of each flow's late/duplicate window, sequence numbers (see
    /// [`wirebench_proto::udp::SeqTracker`]; usually
    /// [`wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS`]).
    pub reorder_window_seqs: u64,
    /// Pin every data thread to this CPU.
    pub cpu: Option<usize>,
}

/// A plan or configuration the engine refuses before sending anything.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UdpError {
    /// Datagrams must hold the header.
    #[error("UDP datagram size {msg_size_bytes} bytes is below the {HEADER_BYTES}-byte header")]
    MessageTooSmall {
        /// The size asked for.
        msg_size_bytes: usize,
    },
    /// Datagrams must fit in one UDP payload.
    #[error(
        "UDP datagram size {msg_size_bytes} bytes exceeds the maximum of {MAX_DATAGRAM_BYTES}"
    )]
    MessageTooLarge {
        /// The size asked for.
        msg_size_bytes: usize,
    },
    /// A rate of zero.
    #[error("UDP target rate must be at least 1 bit/s")]
    ZeroRate,
    /// Two sending flows with one id.
    #[error("flow {0} is sent twice")]
    DuplicateSendFlow(u32),
    /// One flow id served by two receive sockets, or twice by one.
    #[error("flow {0} is received on more than one socket")]
    DuplicateRecvFlow(u32),
    /// A receive socket without flows.
    #[error("receive socket {0} serves no flow")]
    EmptyRecvSocket(usize),
    /// A sending socket that is not connected.
    #[error("the socket of sending flow {flow} is not connected: {reason}")]
    NotConnected {
        /// Flow id.
        flow: u32,
        /// `getpeername` error.
        reason: String,
    },
}

impl UdpConfig {
    /// Check the parameters (not the sockets).
    pub fn validate(&self) -> Result<(), UdpError> {
        if self.msg_size_bytes < HEADER_BYTES {
            return Err(UdpError::MessageTooSmall {
                msg_size_bytes: self.msg_size_bytes,
            });
        }
        if self.msg_size_bytes > MAX_DATAGRAM_BYTES {
            return Err(UdpError::MessageTooLarge {
                msg_size_bytes: self.msg_size_bytes,
            });
        }
        if self.rate_bps == Some(0) {
            return Err(UdpError::ZeroRate);
        }
        Ok(())
    }

    /// Time between two datagrams of a paced flow, ns (rounded down; at least 1).
    pub fn gap_ns(&self) -> Option<u64> {
        let rate = u128::from(self.rate_bps?.max(1));
        let ns = (self.msg_size_bytes as u128 * 8 * 1_000_000_000) / rate;
        Some(u64::try_from(ns).unwrap_or(u64::MAX).max(1))
    }

    /// How long a receiver waits, after the stop instant and after the last arrival, before
    /// it ends its drain: `max(MIN_DRAIN_QUIET, 4 × gap)`, at most `drain_limit`.
    pub fn drain_quiet(&self) -> Duration {
        let gaps = self
            .gap_ns()
            .map(|g| Duration::from_nanos(g.saturating_mul(4)))
            .unwrap_or_default();
        MIN_DRAIN_QUIET.max(gaps).min(self.drain_limit)
    }

    /// The sender window these parameters define, ns after the sender's start.
    pub fn sender_window(&self) -> SenderWindow {
        let warmup = self.warmup.min(MAX_PHASE);
        let duration = self.duration.min(MAX_PHASE);
        SenderWindow {
            start_ns: dur_ns(warmup),
            end_ns: dur_ns(warmup + duration),
        }
    }
}

/// What a UDP run measured at this end.
#[derive(Debug, Clone)]
pub struct UdpOutput {
    /// Per sending flow, in plan order.
    pub senders: Vec<UdpSendReport>,
    /// Per receiving flow: socket by socket in plan order, each socket's flows in the order
    /// given.
    pub receivers: Vec<UdpRecvReport>,
    /// Per receive socket, in plan order: the datagrams no flow could claim.
    pub sockets: Vec<UdpRecvSocketReport>,
    /// Interval samples with bytes per flow (also delivered to the sink as they happened).
    pub intervals: Vec<IntervalSample>,
    /// The same intervals with datagram counts, index for index.
    pub udp_intervals: Vec<UdpIntervalSample>,
    /// CPU over [window start, stop instant].
    pub cpu: Option<CpuReport>,
    /// Measurement problems.
    pub warnings: Vec<String>,
    /// Set if the run was aborted, with the reason.
    pub aborted: Option<String>,
}

impl UdpOutput {
    /// The sender report of `flow`.
    pub fn sender(&self, flow: u32) -> Option<&UdpSendReport> {
        self.senders.iter().find(|r| r.flow == flow)
    }

    /// The receiver report of `flow`.
    pub fn receiver(&self, flow: u32) -> Option<&UdpRecvReport> {
        self.receivers.iter().find(|r| r.flow == flow)
    }
}

/// Running totals of one flow, written by its data thread, read by the sampling thread.
#[repr(align(64))]
#[derive(Default)]
struct Counters {
    datagrams: AtomicU64,
    bytes: AtomicU64,
    send_errors: AtomicU64,
    late: AtomicU64,
    duplicate: AtomicU64,
}

impl Counters {
    fn load(&self) -> [u64; 5] {
        [
            self.datagrams.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.send_errors.load(Ordering::Relaxed),
            self.late.load(Ordering::Relaxed),
            self.duplicate.load(Ordering::Relaxed),
        ]
    }
}

struct Shared {
    start: Instant,
    stop_at: Instant,
    /// Set by the sampling thread at the stop instant (or on abort).
    stop: AtomicBool,
    /// Sending flows first, then receiving flows (socket by socket).
    counters: Vec<Counters>,
    /// CPU time each data thread recorded for itself just before exiting (by thread index).
    final_cpu: Vec<Mutex<Option<CpuTimes>>>,
}

fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Send errors after which a flow carries on (the datagram is counted as a send error).
fn is_transient_send_error(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::ConnectionRefused
        || matches!(
            e.raw_os_error(),
            Some(ENOBUFS) | Some(ENETUNREACH) | Some(EHOSTUNREACH)
        )
}

/// The schedule of a paced flow: datagram `seq` is due at `base + (seq − base_seq) × gap`,
/// computed exactly (no accumulated rounding).
struct Pacer {
    bits_per_datagram: u128,
    rate_bps: u128,
    gap_ns: u64,
    base: Instant,
    base_seq: u64,
    resets: u64,
}

enum Pace {
    Send,
    Done,
}

impl Pacer {
    fn due(&self, seq: u64) -> Option<Instant> {
        let k = u128::from(seq.saturating_sub(self.base_seq));
        // k < 2^64, bits < 2^20, 10^9 < 2^30: no overflow in u128.
        let off = k * self.bits_per_datagram * 1_000_000_000 / self.rate_bps;
        self.base
            .checked_add(Duration::from_nanos(u64::try_from(off).ok()?))
    }

    /// Wait until `seq` is due. `Done` if it would be due at or after the stop instant, or
    /// the stop or abort flag was set meanwhile.
    fn wait(&mut self, seq: u64, shared: &Shared, abort: &AtomicBool) -> Pace {
        let Some(due) = self.due(seq) else {
            return Pace::Done;
        };
        if due >= shared.stop_at {
            return Pace::Done;
        }
        let now = Instant::now();
        if now >= due {
            let allowance =
                Duration::from_nanos(self.gap_ns.saturating_mul(MAX_CATCH_UP_DATAGRAMS));
            if now - due > allowance {
                // Too far behind: drop the slots beyond the allowance, so that this datagram
                // is exactly the allowance late and at most MAX_CATCH_UP_DATAGRAMS + 1 leave
                // back to back.
                self.base = now.checked_sub(allowance).unwrap_or(now);
                self.base_seq = seq;
                self.resets += 1;
            }
            return Pace::Send;
        }
        loop {
            if abort.load(Ordering::Relaxed) || shared.stop.load(Ordering::Relaxed) {
                return Pace::Done;
            }
            let now = Instant::now();
            if now >= due {
                return Pace::Send;
            }
            let left = due - now;
            if left > Duration::from_nanos(SPIN_NS) {
                thread::sleep((left - Duration::from_nanos(SPIN_NS)).min(MAX_SLEEP));
            } else {
                // Spin, not yield: a yield hands a busy CPU to another thread for a whole
                // time slice (milliseconds), far past the due time.
                std::hint::spin_loop();
            }
        }
    }
}

struct SendDone {
    datagrams: u64,
    bytes: u64,
    window_datagrams: u64,
    window_bytes: u64,
    send_errors: u64,
    pacing_resets: u64,
    end_ns: u64,
    error: Option<String>,
}

fn run_sender(
    flow: u32,
    socket: &UdpSocket,
    counters: &Counters,
    cfg: &UdpConfig,
    shared: &Shared,
    abort: &AtomicBool,
) -> SendDone {
    let mut buf = vec![0u8; cfg.msg_size_bytes];
    rand::rng().fill_bytes(&mut buf);
    let window = cfg.sender_window();
    let mut pacer = cfg.rate_bps.zip(cfg.gap_ns()).map(|(rate, gap_ns)| Pacer {
        bits_per_datagram: buf.len() as u128 * 8,
        rate_bps: u128::from(rate.max(1)),
        gap_ns,
        base: shared.start,
        base_seq: 0,
        resets: 0,
    });
    let mut d = SendDone {
        datagrams: 0,
        bytes: 0,
        window_datagrams: 0,
        window_bytes: 0,
        send_errors: 0,
        pacing_resets: 0,
        end_ns: window.end_ns,
        error: None,
    };
    let mut seq: u64 = 0;
    loop {
        if abort.load(Ordering::Relaxed) || shared.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(p) = pacer.as_mut() {
            if let Pace::Done = p.wait(seq, shared, abort) {
                break;
            }
        }
        let now = Instant::now();
        if now >= shared.stop_at {
            break;
        }
        let send_ns = ns_since(shared.start, now);
        let header = DatagramHeader { flow, seq, send_ns };
        if let Err(e) = header.write(&mut buf) {
            // Unreachable: the size was validated.
            d.error = Some(e.to_string());
            break;
        }
        match socket.send(&buf) {
            Ok(n) if n == buf.len() => {
                d.datagrams += 1;
                d.bytes += n as u64;
                if window.contains(send_ns) {
                    d.window_datagrams += 1;
                    d.window_bytes += n as u64;
                }
                counters.datagrams.store(d.datagrams, Ordering::Relaxed);
                counters.bytes.store(d.bytes, Ordering::Relaxed);
            }
            Ok(_) => {
                // A UDP send is all or nothing; count anything else as a failed send.
                d.send_errors += 1;
                counters.send_errors.store(d.send_errors, Ordering::Relaxed);
            }
            // Send buffer full for a whole poll period, or a signal: retry this datagram.
            Err(e) if is_timeout(&e) => continue,
            Err(e) if is_transient_send_error(&e) => {
                d.send_errors += 1;
                counters.send_errors.store(d.send_errors, Ordering::Relaxed);
            }
            Err(e) => {
                d.error = Some(format!("send failed: {e}"));
                break;
            }
        }
        seq += 1;
    }
    if abort.load(Ordering::Relaxed) || d.error.is_some() {
        d.end_ns = d.end_ns.min(ns_since(shared.start, Instant::now()));
    }
    d.pacing_resets = pacer.map_or(0, |p| p.resets);
    d
}

struct RecvDone {
    demux: RecvDemux,
    error: Option<String>,
    drain_truncated: bool,
}

fn store_recv(c: &Counters, acc: &FlowRecvAccounting, class: SeqClass) {
    let counts = acc.counts();
    match class {
        SeqClass::InOrder | SeqClass::Late => {
            c.datagrams.store(counts.distinct(), Ordering::Relaxed);
            c.bytes.store(acc.bytes_received(), Ordering::Relaxed);
            if class == SeqClass::Late {
                c.late.store(counts.late, Ordering::Relaxed);
            }
        }
        SeqClass::Duplicate => c.duplicate.store(counts.duplicate, Ordering::Relaxed),
        SeqClass::TooOld => {}
    }
}

fn run_receiver(
    socket: &UdpSocket,
    peer: Option<SocketAddr>,
    flows: &[u32],
    counters: &[Counters],
    cfg: &UdpConfig,
    shared: &Shared,
    abort: &AtomicBool,
) -> RecvDone {
    let window = cfg.sender_window();
    let mut demux = RecvDemux::new(
        flows
            .iter()
            .map(|&f| FlowRecvAccounting::new(f, cfg.reorder_window_seqs, window))
            .collect(),
    );
    let quiet = cfg.drain_quiet();
    let mut buf = vec![0u8; RECV_BUF_BYTES];
    let mut last_arrival: Option<Instant> = None;
    let mut error = None;
    let mut drain_truncated = false;
    // Once the stop flag is seen: the drain's hard end.
    let mut drain_deadline: Option<Instant> = None;
    loop {
        if abort.load(Ordering::Relaxed) {
            break;
        }
        let now = match socket.recv_from(&mut buf) {
            Ok((_, from)) if peer.is_some_and(|p| p != from) => {
                demux.on_foreign_source();
                Instant::now()
            }
            Ok((n, _from)) => {
                let now = Instant::now();
                let dgram = buf.get(..n).unwrap_or_default();
                if let DatagramOutcome::Accepted { flow_index, class } =
                    demux.on_datagram(dgram, ns_since(shared.start, now))
                {
                    // Only the test's own datagrams keep the drain going.
                    last_arrival = Some(now);
                    if let (Some(c), Some(acc)) =
                        (counters.get(flow_index), demux.flows().get(flow_index))
                    {
                        store_recv(c, acc, class);
                    }
                }
                now
            }
            Err(e) if is_timeout(&e) => Instant::now(),
            // An ICMP error from an earlier datagram (connected sockets): not ours to stop on.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Instant::now(),
            Err(e) => {
                error = Some(format!("receive failed: {e}"));
                break;
            }
        };
        if drain_deadline.is_none() && shared.stop.load(Ordering::Relaxed) {
            drain_deadline = Some(shared.stop_at.checked_add(cfg.drain_limit).unwrap_or(now));
        }
        if let Some(deadline) = drain_deadline {
            let quiet_since = last_arrival.map_or(shared.stop_at, |t| t.max(shared.stop_at));
            if now.saturating_duration_since(quiet_since) >= quiet {
                break;
            }
            if now >= deadline {
                drain_truncated = true;
                break;
            }
        }
    }
    RecvDone {
        demux,
        error,
        drain_truncated,
    }
}

/// Which flow a counter block belongs to.
#[derive(Clone, Copy)]
struct CounterMeta {
    flow: u32,
    role: Role,
}

/// The UDP side of the timeline: byte and datagram counts per interval.
struct UdpSampler<'a> {
    shared: &'a Shared,
    /// Which flow each counter block belongs to.
    meta: &'a [CounterMeta],
    /// Counters at the previous interval boundary.
    prev: Vec<[u64; 5]>,
    warmup_ns: u64,
    sink: &'a mut dyn Sink,
}

impl Engine for UdpSampler<'_> {
    /// The sink's bytes-only sample and the datagram counts of the same interval.
    type Sample = (IntervalSample, UdpIntervalSample);

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> Self::Sample {
        let n = self.meta.len();
        let mut bytes = Vec::with_capacity(n);
        let mut udp = Vec::with_capacity(n);
        for ((m, c), p) in self
            .meta
            .iter()
            .zip(&self.shared.counters)
            .zip(self.prev.iter_mut())
        {
            let now = c.load();
            let [datagrams, b, send_errors, late, duplicate] =
                [0, 1, 2, 3, 4].map(|i| now[i].saturating_sub(p[i]));
            *p = now;
            bytes.push(FlowInterval {
                flow: m.flow,
                role: m.role,
                bytes: b,
            });
            udp.push(UdpFlowInterval {
                flow: m.flow,
                role: m.role,
                datagrams,
                bytes: b,
                send_errors,
                late,
                duplicate,
            });
        }
        let in_warmup = start_ns < self.warmup_ns;
        let s = IntervalSample {
            index,
            start_ns,
            end_ns,
            in_warmup,
            flows: bytes,
        };
        self.sink.interval(&s);
        let u = UdpIntervalSample {
            index,
            start_ns,
            end_ns,
            in_warmup,
            flows: udp,
        };
        (s, u)
    }

    fn stop(&mut self, _stop_ns: u64) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn check_plan(cfg: &UdpConfig, plan: &UdpPlan) -> Result<(), UdpError> {
    cfg.validate()?;
    let mut sent: Vec<u32> = plan.senders.iter().map(|s| s.flow).collect();
    sent.sort_unstable();
    if let Some(w) = sent.windows(2).find(|w| w[0] == w[1]) {
        return Err(UdpError::DuplicateSendFlow(w[0]));
    }
    let mut received: Vec<u32> = Vec::new();
    for (i, r) in plan.receivers.iter().enumerate() {
        if r.flows.is_empty() {
            return Err(UdpError::EmptyRecvSocket(i));
        }
        received.extend_from_slice(&r.flows);
    }
    received.sort_unstable();
    if let Some(w) = received.windows(2).find(|w| w[0] == w[1]) {
        return Err(UdpError::DuplicateRecvFlow(w[0]));
    }
    for s in &plan.senders {
        if let Err(e) = s.socket.peer_addr() {
            return Err(UdpError::NotConnected {
                flow: s.flow,
                reason: e.to_string(),
            });
        }
    }
    Ok(())
}

enum Done {
    Send(SendDone),
    Recv(RecvDone),
}

/// What a data thread returns: its figures and, if pinning failed, why.
type ThreadResult = (Done, Option<io::Error>);

/// Run a UDP test over `plan`. Refuses a bad configuration or plan before touching a socket;
/// otherwise blocks until every data thread has finished (senders at the stop instant,
/// receivers after their drain) or the abort flag is set and they noticed it (within about
/// 20 ms; the caller's sampling loop within the same).
pub fn run(
    cfg: &UdpConfig,
    plan: UdpPlan,
    sink: &mut dyn Sink,
    abort: &AtomicBool,
) -> Result<UdpOutput, UdpError> {
    check_plan(cfg, &plan)?;
    let warmup = cfg.warmup.min(MAX_PHASE);
    let duration = cfg.duration.min(MAX_PHASE);
    let warmup_ns = dur_ns(warmup);
    let n_send = plan.senders.len();
    let n_threads = n_send + plan.receivers.len();
    let mut meta: Vec<CounterMeta> = plan
        .senders
        .iter()
        .map(|s| CounterMeta {
            flow: s.flow,
            role: Role::Sender,
        })
        .collect();
    for r in &plan.receivers {
        meta.extend(r.flows.iter().map(|&flow| CounterMeta {
            flow,
            role: Role::Receiver,
        }));
    }
    let start = Instant::now();
    let window_start_at = start + warmup;
    let stop_at = window_start_at + duration;
    let shared = Shared {
        start,
        stop_at,
        stop: AtomicBool::new(false),
        counters: meta.iter().map(|_| Counters::default()).collect(),
        final_cpu: (0..n_threads).map(|_| Mutex::new(None)).collect(),
    };
    let mut warnings = Vec::new();
    let recv_flows: Vec<Vec<u32>> = plan.receivers.iter().map(|r| r.flows.clone()).collect();

    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let at_start = CpuSnapshot::take(0, &[], &|_| None);
    let out = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n_threads);
        let mut counter_base = n_send;
        for (idx, s) in plan.senders.iter().enumerate() {
            let _ = s.socket.set_write_timeout(Some(POLL_TIMEOUT));
            let (counters, shared) = (&shared.counters[idx], &shared);
            let h = spawn_data(
                scope,
                format!("wb-udp-tx-{}", s.flow),
                &shared.final_cpu,
                idx,
                tid_tx.clone(),
                cfg.cpu,
                move || Done::Send(run_sender(s.flow, &s.socket, counters, cfg, shared, abort)),
            );
            handles.push(h);
        }
        for (i, r) in plan.receivers.iter().enumerate() {
            let _ = r.socket.set_read_timeout(Some(POLL_TIMEOUT));
            let counters = &shared.counters[counter_base..counter_base + r.flows.len()];
            counter_base += r.flows.len();
            let shared = &shared;
            let h = spawn_data(
                scope,
                format!("wb-udp-rx-{i}"),
                &shared.final_cpu,
                n_send + i,
                tid_tx.clone(),
                cfg.cpu,
                move || {
                    Done::Recv(run_receiver(
                        &r.socket, r.peer, &r.flows, counters, cfg, shared, abort,
                    ))
                },
            );
            handles.push(h);
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        let mut sampler = UdpSampler {
            shared: &shared,
            meta: &meta,
            prev: vec![[0u64; 5]; meta.len()],
            warmup_ns,
            sink,
        };
        let timeline = Timeline {
            start,
            warmup,
            duration,
            interval: cfg.interval.map(|i| i.max(Duration::from_millis(1))),
            check_every: None,
            unopened: Unopened::AtZero,
        };
        let out = timeline.run(&mut sampler, &threads, at_start, abort, || {
            handles
                .into_iter()
                .enumerate()
                .map(|(idx, h)| match h {
                    Ok(h) => h.join().ok(),
                    Err(e) => {
                        warnings.push(format!("data thread {idx}: could not start: {e}"));
                        None
                    }
                })
                .collect::<Vec<Option<ThreadResult>>>()
        });
        let (results, aborted) = (out.done, out.aborted);
        let (intervals, udp_intervals) = out.intervals.into_iter().unzip();

        let window = cfg.sender_window();
        let mut senders = Vec::with_capacity(n_send);
        let mut receivers = Vec::new();
        let mut sockets = Vec::with_capacity(recv_flows.len());
        let mut results = results.into_iter();
        for (idx, (s, res)) in plan.senders.iter().zip(results.by_ref()).enumerate() {
            let (done, pin_err) = match res {
                Some((Done::Send(d), pin_err)) => (Some(d), pin_err),
                _ => (None, None),
            };
            if let Some(e) = pin_err {
                warnings.push(format!("sending flow {}: {e}", s.flow));
            }
            let c = shared.counters[idx].load();
            senders.push(match done {
                Some(d) => UdpSendReport {
                    flow: s.flow,
                    datagram_bytes: cfg.msg_size_bytes as u32,
                    target_rate_bps: cfg.rate_bps,
                    datagrams_sent: d.datagrams,
                    bytes_sent: d.bytes,
                    window_datagrams_sent: d.window_datagrams,
                    window_bytes_sent: d.window_bytes,
                    window_start_ns: window.start_ns,
                    window_end_ns: d.end_ns,
                    send_errors: d.send_errors,
                    pacing_resets: d.pacing_resets,
                    error: d.error,
                },
                None => UdpSendReport {
                    flow: s.flow,
                    datagram_bytes: cfg.msg_size_bytes as u32,
                    target_rate_bps: cfg.rate_bps,
                    datagrams_sent: c[0],
                    bytes_sent: c[1],
                    window_datagrams_sent: 0,
                    window_bytes_sent: 0,
                    window_start_ns: window.start_ns,
                    window_end_ns: window.start_ns,
                    send_errors: c[2],
                    pacing_resets: 0,
                    error: Some("flow thread failed".into()),
                },
            });
        }
        for (i, (flows, res)) in recv_flows.iter().zip(results).enumerate() {
            let (done, pin_err) = match res {
                Some((Done::Recv(d), pin_err)) => (Some(d), pin_err),
                _ => (None, None),
            };
            if let Some(e) = pin_err {
                warnings.push(format!("receive socket {i}: {e}"));
            }
            match done {
                Some(d) => {
                    if d.drain_truncated {
                        warnings.push(format!(
                            "receive socket {i}: datagrams still arriving {} ms after the stop; \
                             reception was cut there",
                            cfg.drain_limit.as_millis()
                        ));
                    }
                    for mut r in d.demux.reports() {
                        r.error.clone_from(&d.error);
                        receivers.push(r);
                    }
                    sockets.push(UdpRecvSocketReport {
                        flows: flows.clone(),
                        invalid: d.demux.invalid(),
                        error: d.error,
                    });
                }
                None => {
                    let empty = RecvDemux::new(
                        flows
                            .iter()
                            .map(|&f| FlowRecvAccounting::new(f, cfg.reorder_window_seqs, window))
                            .collect(),
                    );
                    for mut r in empty.reports() {
                        r.error = Some("receive thread failed".into());
                        receivers.push(r);
                    }
                    sockets.push(UdpRecvSocketReport {
                        flows: flows.clone(),
                        invalid: empty.invalid(),
                        error: Some("receive thread failed".into()),
                    });
                }
            }
        }
        let cpu = out.cpu.map_err(|e| warnings.push(e)).ok();
        UdpOutput {
            senders,
            receivers,
            sockets,
            intervals,
            udp_intervals,
            cpu,
            warnings,
            aborted,
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer(msg_bytes: u128, rate_bps: u128) -> Pacer {
        Pacer {
            bits_per_datagram: msg_bytes * 8,
            rate_bps,
            gap_ns: 0,
            base: Instant::now(),
            base_seq: 0,
            resets: 0,
        }
    }

    #[test]
    fn schedule_does_not_drift() {
        // 1200 bytes at 7 Mbit/s: a gap of 1_371_428.57 ns; rounding each gap would drift by
        // 0.57 ns per datagram.
        let p = pacer(1200, 7_000_000);
        for n in [0u64, 1, 7, 1_000_000, 123_456_789] {
            let want = u128::from(n) * 9600 * 1_000_000_000 / 7_000_000;
            let got = p.due(n).unwrap() - p.base;
            assert_eq!(got.as_nanos(), want, "datagram {n}");
        }
        // Far beyond any Instant: no panic, no schedule.
        let p = pacer(65_507, 1);
        assert!(p.due(u64::MAX).is_none());
    }

    #[test]
    fn config_validation() {
        let mut c = UdpConfig {
            msg_size_bytes: HEADER_BYTES,
            rate_bps: None,
            warmup: Duration::ZERO,
            duration: Duration::MAX,
            interval: None,
            drain_limit: Duration::from_secs(1),
            reorder_window_seqs: 64,
            cpu: None,
        };
        assert_eq!(c.validate(), Ok(()));
        // Absurd durations are cut, not overflowed.
        assert_eq!(c.sender_window().end_ns, dur_ns(MAX_PHASE));
        c.msg_size_bytes = MAX_DATAGRAM_BYTES + 1;
        assert!(matches!(
            c.validate(),
            Err(UdpError::MessageTooLarge { .. })
        ));
        c.msg_size_bytes = MAX_DATAGRAM_BYTES;
        c.rate_bps = Some(1);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.gap_ns(), Some(65_507 * 8 * 1_000_000_000));
    }
}
