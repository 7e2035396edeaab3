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
//!   `n` of a paced flow is due at `start + n × gap` (`gap = datagram_bytes × 8 / rate`, the
//!   crate's one pacing schedule); the thread sleeps until 50 µs before the due time and
//!   spins for the rest. A late sender catches up
//!   by sending the overdue datagrams back to back, but never more than
//!   [`MAX_CATCH_UP_DATAGRAMS`] gaps' worth: if it falls further behind (a long descheduling, a
//!   send that blocked), it moves the schedule forward, drops the slots beyond the allowance,
//!   and counts a pacing reset. So at most `MAX_CATCH_UP_DATAGRAMS + 1` datagrams ever leave
//!   back to back. Unpaced flows send back to back all the time. With iperf3's datagrams
//!   ([`UdpWire::Iperf3`]) the sender paces as iperf3's own does: it only sleeps (no spin) and
//!   catches up in full, so the rate is the target averaged from the start.
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
//! The sink gets a [`UdpInterval`] per interval with each flow's datagrams and bytes
//! (sender: sent, and failed or refused sends; receiver: distinct datagrams, late and
//! duplicate ones, the sequence numbers covered and lost, and the jitter at the interval's
//! end; [`UdpFlowInterval`] defines them). Intervals tile `[0, end]`, the last one covering
//! the drain, so their counts add up to each flow's totals. A period below 1 ms is taken as
//! 1 ms. The sampler is in `sample`.
//!
//! # Addresses
//!
//! Each report names its socket's addresses: a sender's local and connected peer address, a
//! receiver's local address and the peer it accepts datagrams from.
//!
//! # Send failures
//!
//! A send the kernel refuses for lack of room in the device queue or the socket's memory
//! (ENOBUFS) is counted as `send_refused`: the datagram never left this host. A send that
//! only waited for room in the send buffer (it timed out) is retried, not counted. A send that fails with an
//! ICMP-reported error (ECONNREFUSED, EHOSTUNREACH, ENETUNREACH) is counted as
//! `send_errors`. Either way the flow carries on and the datagram's sequence number is used,
//! so the receiver sees a gap. Any other send error ends the flow.
//!
//! The caller's thread samples: it runs the timeline driver shared by every engine (the
//! crate-private `timeline` module), with this engine's counters and interval types.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::buffers;
use wirebench_model::side::{Role, Span};
use wirebench_model::udp::{
    UdpFlowInterval, UdpHostDrops, UdpInterval, UdpRecvReport, UdpRecvSocketReport, UdpSendReport,
    UdpSide,
};
use wirebench_model::warning::{DataThread, FlowError, OsError, Step, Warning};
use wirebench_proto::udp::{
    DatagramHeader, DatagramOutcome, FlowRecvAccounting, RecvDemux, SeqClass,
};
use wirebench_sys::thread::CpuTimes;

use crate::abort::Abort;
use crate::cpu::CpuSnapshot;
use crate::pace::{wait_until, Schedule};
use crate::threads::{spawn_data, DataThreads};
use crate::timeline::{Engine, Timeline};
use crate::util::{is_timeout, ns_since};
use crate::{EngineOutput, Sink, Timing};

mod recv;
mod sample;
mod send;
mod wire;

pub use wire::UdpWire;

use recv::{run_receiver, RecvDone};
use sample::{Counters, Counts, UdpSampler};
use send::{run_sender, SendDone};

/// How often blocked socket calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(20);

/// A paced sender sleeps until this long before a datagram is due, then spins.
const SPIN: Duration = Duration::from_micros(50);

/// Most datagrams a late sender sends back to back to catch up with its schedule.
pub const MAX_CATCH_UP_DATAGRAMS: u64 = 8;

/// Shortest quiet time that ends a receiver's drain.
pub const MIN_DRAIN_QUIET: Duration = Duration::from_millis(100);

/// Receive buffer size (the largest datagram fits).
const RECV_BUF_BYTES: usize = 65_536;

/// Longest warm-up or duration taken into account (keeps the instant arithmetic in range).
const MAX_PHASE: Duration = Duration::from_secs(10 * 365 * 86_400);

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
/// `datagram_bytes` and `rate_bps` (they define the sender window and the drain quiet time);
/// both come from one validated spec.
#[derive(Debug, Clone)]
pub struct UdpConfig {
    /// Warm-up, duration, intervals, drain, pinning, policy and buffer placement.
    pub timing: Timing,
    /// Size of every datagram (UDP payload), header included.
    pub datagram_bytes: usize,
    /// Target rate of each sending flow, bits per second of UDP payload; `None`: unpaced.
    pub rate_bps: Option<u64>,
    /// Depth of each flow's late/duplicate window, sequence numbers (see
    /// [`wirebench_proto::udp::SeqTracker`]; usually
    /// [`wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS`]).
    pub reorder_window_seqs: u64,
    /// The datagrams' header format (both ends use one).
    pub wire: UdpWire,
}

/// A plan the engine refuses before sending anything (the caller built it wrong).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UdpPlanError {
    /// Two sending flows with one id.
    #[error("flow {0} is sent twice")]
    DuplicateSendFlow(u32),
    /// One flow id served by two receive sockets, or twice by one.
    #[error("flow {0} is received on more than one socket")]
    DuplicateRecvFlow(u32),
    /// A receive socket without flows.
    #[error("receive socket {0} serves no flow")]
    EmptyRecvSocket(usize),
    /// A socket receiving iperf3's datagrams (which carry no flow id) serving more or fewer
    /// than one flow.
    #[error("receive socket {0} must serve exactly one flow with iperf3's datagram format")]
    SharedIperf3Socket(usize),
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
    /// The pacing schedule of a sending flow started at `start`, if paced.
    fn schedule(&self, start: Instant) -> Option<Schedule> {
        self.rate_bps
            .map(|r| Schedule::bits(start, r.max(1), self.datagram_bytes as u64 * 8))
    }

    /// Time between two datagrams of a paced flow, ns (rounded down; at least 1); `None` when
    /// unpaced.
    pub fn gap_ns(&self) -> Option<u64> {
        self.schedule(Instant::now()).map(|s| s.gap_ns())
    }

    /// How long a receiver waits, after the stop instant and after the last arrival, before
    /// it ends its drain: `max(MIN_DRAIN_QUIET, 4 × gap)`, at most `drain_limit`.
    pub fn drain_quiet(&self) -> Duration {
        let gaps = self
            .schedule(Instant::now())
            .map(|s| Duration::from_nanos(s.gap_ns().saturating_mul(4)))
            .unwrap_or_default();
        MIN_DRAIN_QUIET.max(gaps).min(self.timing.drain_limit)
    }

    /// The window a receiver counts datagrams into by their send time: the sender window, or
    /// everything with iperf3's format (whose send times are on the sender's own clock).
    fn receiver_window(&self) -> Span {
        match self.wire {
            UdpWire::Native => self.sender_window(),
            UdpWire::Iperf3 { .. } => Span {
                start_ns: 0,
                end_ns: u64::MAX,
            },
        }
    }

    /// The sender window these parameters define, ns after the sender's start.
    pub fn sender_window(&self) -> Span {
        let warmup = self.timing.warmup.min(MAX_PHASE);
        let duration = self.timing.duration.min(MAX_PHASE);
        Span {
            start_ns: dur_ns(warmup),
            end_ns: dur_ns(warmup + duration),
        }
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

fn check_plan(plan: &UdpPlan, wire: UdpWire) -> Result<(), UdpPlanError> {
    let mut sent: Vec<u32> = plan.senders.iter().map(|s| s.flow).collect();
    sent.sort_unstable();
    if let Some(w) = sent.windows(2).find(|w| w[0] == w[1]) {
        return Err(UdpPlanError::DuplicateSendFlow(w[0]));
    }
    let mut received: Vec<u32> = Vec::new();
    for (i, r) in plan.receivers.iter().enumerate() {
        if r.flows.is_empty() {
            return Err(UdpPlanError::EmptyRecvSocket(i));
        }
        if wire != UdpWire::Native && r.flows.len() != 1 {
            return Err(UdpPlanError::SharedIperf3Socket(i));
        }
        received.extend_from_slice(&r.flows);
    }
    received.sort_unstable();
    if let Some(w) = received.windows(2).find(|w| w[0] == w[1]) {
        return Err(UdpPlanError::DuplicateRecvFlow(w[0]));
    }
    for s in &plan.senders {
        if let Err(e) = s.socket.peer_addr() {
            return Err(UdpPlanError::NotConnected {
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

/// The report of a sending flow whose thread did not hand back a result.
fn lost_sender(flow: u32, cfg: &UdpConfig, c: &Counts, window: Span) -> UdpSendReport {
    UdpSendReport {
        flow,
        datagram_bytes: cfg.datagram_bytes as u32,
        target_rate_bps: cfg.rate_bps,
        datagrams_sent: c.datagrams,
        bytes_sent: c.bytes,
        window_datagrams_sent: 0,
        window_bytes_sent: 0,
        window: Span {
            start_ns: window.start_ns,
            end_ns: window.start_ns,
        },
        send_refused: 0,
        send_errors: c.send_errors,
        pacing_resets: 0,
        error: Some(FlowError::panicked()),
        local: None,
        peer: None,
    }
}

/// A socket address as reported (`ip:port`), if the call succeeded.
fn addr(a: io::Result<SocketAddr>) -> Option<String> {
    a.ok().map(|a| a.to_string())
}

/// The senders' reports from their threads' results (a thread that handed back nothing
/// gets a report from its live counters and a `panicked` error).
fn collect_senders(
    cfg: &UdpConfig,
    plan: &UdpPlan,
    shared: &Shared,
    results: impl Iterator<Item = Option<ThreadResult>>,
    warnings: &mut Vec<Warning>,
) -> Vec<UdpSendReport> {
    let window = cfg.sender_window();
    let mut senders = Vec::with_capacity(plan.senders.len());
    for (idx, (s, res)) in plan.senders.iter().zip(results).enumerate() {
        let (done, pin_err) = match res {
            Some((Done::Send(d), pin_err)) => (Some(d), pin_err),
            _ => (None, None),
        };
        if let Some(e) = pin_err {
            warnings.push(Warning::PinFailed {
                thread: DataThread::Flow(s.flow),
                error: OsError::from(&e),
            });
        }
        let mut report = match done {
            Some(d) => UdpSendReport {
                flow: s.flow,
                datagram_bytes: cfg.datagram_bytes as u32,
                target_rate_bps: cfg.rate_bps,
                datagrams_sent: d.datagrams,
                bytes_sent: d.bytes,
                window_datagrams_sent: d.window_datagrams,
                window_bytes_sent: d.window_bytes,
                window: Span {
                    start_ns: window.start_ns,
                    end_ns: d.end_ns,
                },
                send_refused: d.send_refused,
                send_errors: d.send_errors,
                pacing_resets: d.pacing_resets,
                error: d.error,
                local: None,
                peer: None,
            },
            None => lost_sender(s.flow, cfg, &shared.counters[idx].load(), window),
        };
        report.local = addr(s.socket.local_addr());
        report.peer = addr(s.socket.peer_addr());
        senders.push(report);
    }
    senders
}

/// The receivers' reports and their sockets' from their threads' results.
fn collect_receivers(
    cfg: &UdpConfig,
    plan: &UdpPlan,
    results: impl Iterator<Item = Option<ThreadResult>>,
    warnings: &mut Vec<Warning>,
) -> (Vec<UdpRecvReport>, Vec<UdpRecvSocketReport>) {
    let window = cfg.receiver_window();
    let mut receivers = Vec::new();
    let mut sockets = Vec::with_capacity(plan.receivers.len());
    for (i, (r, res)) in plan.receivers.iter().zip(results).enumerate() {
        let flows = &r.flows;
        let local = addr(r.socket.local_addr());
        let peer = r
            .peer
            .map(|p| p.to_string())
            .or_else(|| addr(r.socket.peer_addr()));
        let thread = DataThread::UdpReceiver(i as u32);
        let (done, pin_err) = match res {
            Some((Done::Recv(d), pin_err)) => (Some(d), pin_err),
            _ => (None, None),
        };
        if let Some(e) = pin_err {
            warnings.push(Warning::PinFailed {
                thread,
                error: OsError::from(&e),
            });
        }
        let (demux, rcvbuf_drops, error) = match done {
            Some(d) => {
                if d.drain_truncated {
                    warnings.push(Warning::DrainTruncated {
                        thread,
                        drain_limit_ms: cfg.timing.drain_limit.as_millis() as u64,
                    });
                }
                (d.demux, d.rcvbuf_drops, d.error)
            }
            None => (
                RecvDemux::new(
                    flows
                        .iter()
                        .map(|&f| FlowRecvAccounting::new(f, cfg.reorder_window_seqs, window))
                        .collect(),
                ),
                None,
                Some(FlowError::panicked()),
            ),
        };
        receivers.extend(demux.reports().into_iter().map(|mut r: UdpRecvReport| {
            r.error.clone_from(&error);
            r.local.clone_from(&local);
            r.peer.clone_from(&peer);
            r
        }));
        sockets.push(UdpRecvSocketReport {
            flows: flows.clone(),
            invalid: demux.invalid(),
            rcvbuf_drops,
            error,
        });
    }
    (receivers, sockets)
}

/// Run a UDP test over `plan`. Refuses a plan with duplicate flows or unconnected senders
/// before touching a socket; otherwise blocks until every data thread has finished (senders
/// at the stop instant, receivers after their drain) or the abort fired and they noticed it
/// (within about 20 ms; the caller's sampling loop within the same).
///
/// # Errors
///
/// [`UdpPlanError`] for a plan the caller built wrong.
pub fn run(
    cfg: &UdpConfig,
    plan: UdpPlan,
    sink: &mut dyn Sink<UdpInterval>,
    abort: &Abort,
) -> Result<EngineOutput<UdpSide>, UdpPlanError> {
    check_plan(&plan, cfg.wire)?;
    let warmup = cfg.timing.warmup.min(MAX_PHASE);
    let duration = cfg.timing.duration.min(MAX_PHASE);
    let n_send = plan.senders.len();
    let n_threads = n_send + plan.receivers.len();
    let mut meta: Vec<(u32, Role)> = plan
        .senders
        .iter()
        .map(|s| (s.flow, Role::Sender))
        .collect();
    for r in &plan.receivers {
        meta.extend(r.flows.iter().map(|&flow| (flow, Role::Receiver)));
    }
    let start = Instant::now();
    let stop_at = start + warmup + duration;
    let shared = Shared {
        start,
        stop_at,
        stop: AtomicBool::new(false),
        counters: meta.iter().map(|_| Counters::default()).collect(),
        final_cpu: (0..n_threads).map(|_| Mutex::new(None)).collect(),
    };
    let mut warnings = Vec::new();

    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let at_start = CpuSnapshot::take(0, &[], &|_| None);
    // The namespace's UDP drop counters, when this end receives (their delta is the host's).
    let snmp_start = (!plan.receivers.is_empty())
        .then(wirebench_sys::udp::udp_snmp)
        .and_then(Result::ok);
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
                cfg.timing.pin.thread_cpu(idx),
                move || Done::Send(run_sender(s.flow, &s.socket, counters, cfg, shared, abort)),
            );
            handles.push((DataThread::Flow(s.flow), h));
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
                cfg.timing.pin.thread_cpu(n_send + i),
                move || {
                    Done::Recv(run_receiver(
                        &r.socket, r.peer, &r.flows, counters, cfg, shared, abort,
                    ))
                },
            );
            handles.push((DataThread::UdpReceiver(i as u32), h));
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        let mut sampler = UdpSampler {
            shared: &shared,
            meta: &meta,
            prev: vec![Counts::default(); meta.len()],
            warmup_ns: dur_ns(warmup),
            sink,
        };
        let timeline = Timeline {
            start,
            warmup,
            duration,
            interval: cfg.timing.interval.map(|i| i.max(Duration::from_millis(1))),
            policy: cfg.timing.policy,
            cpus_used: cfg.timing.pin.cpus_used(n_threads),
        };
        let out = timeline.run(&mut sampler, &threads, at_start, abort, || {
            handles
                .into_iter()
                .map(|(thread, h)| match h {
                    Ok(h) => h.join().ok(),
                    Err(e) => {
                        warnings.push(Warning::ThreadStartFailed {
                            thread,
                            error: OsError::from(&e),
                        });
                        None
                    }
                })
                .collect::<Vec<Option<ThreadResult>>>()
        });
        let mut results = out.done.into_iter();
        let senders = collect_senders(cfg, &plan, &shared, results.by_ref(), &mut warnings);
        let (receivers, sockets) = collect_receivers(cfg, &plan, results, &mut warnings);
        let data = UdpSide {
            senders,
            receivers,
            sockets,
            intervals: out.intervals,
            host_drops: snmp_start.and_then(|a| {
                let b = wirebench_sys::udp::udp_snmp().ok()?;
                Some(UdpHostDrops {
                    rcvbuf_errors: b.rcvbuf_errors.saturating_sub(a.rcvbuf_errors),
                    in_errors: b.in_errors.saturating_sub(a.in_errors),
                })
            }),
        };
        let engine = cfg.timing.pin.thread_per_flow(n_threads);
        EngineOutput::new(data, out.end, warnings, engine, &cfg.timing)
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::send::{classify_send_error, SendFailure};
    use super::*;

    fn config(datagram_bytes: usize, rate_bps: Option<u64>) -> UdpConfig {
        UdpConfig {
            datagram_bytes,
            rate_bps,
            timing: Timing {
                duration: Duration::MAX,
                drain_limit: Duration::from_secs(1),
                ..Timing::default()
            },
            reorder_window_seqs: 64,
            wire: UdpWire::Native,
        }
    }

    #[test]
    fn schedule_does_not_drift() {
        // 1200 bytes at 7 Mbit/s: a gap of 1_371_428.57 ns; rounding each gap would drift by
        // 0.57 ns per datagram.
        let t0 = Instant::now();
        let s = config(1200, Some(7_000_000)).schedule(t0).unwrap();
        for n in [0u64, 1, 7, 1_000_000, 123_456_789] {
            let want = u128::from(n) * 9600 * 1_000_000_000 / 7_000_000;
            let got = s.due(n).unwrap() - t0;
            assert_eq!(got.as_nanos(), want, "datagram {n}");
        }
        // Far beyond any Instant: no panic, no schedule.
        let s = config(65_507, Some(1)).schedule(t0).unwrap();
        assert!(s.due(u64::MAX).is_none());
    }

    #[test]
    fn windows_and_drain() {
        let c = config(24, None);
        // Absurd durations are cut, not overflowed.
        assert_eq!(c.sender_window().end_ns, dur_ns(MAX_PHASE));
        assert_eq!(c.drain_quiet(), MIN_DRAIN_QUIET);
        // 1400 B at 100 kbit/s: 112 ms between datagrams; quiet 4 gaps, capped by the limit.
        let c = config(1400, Some(100_000));
        assert_eq!(
            c.drain_quiet(),
            Duration::from_secs(1).min(Duration::from_millis(448))
        );
    }

    #[test]
    fn send_errors_are_classified() {
        let e = |n| io::Error::from_raw_os_error(n);
        assert!(matches!(
            classify_send_error(&e(libc::ENOBUFS)),
            SendFailure::Refused
        ));
        assert!(matches!(
            classify_send_error(&e(libc::EAGAIN)),
            SendFailure::Refused
        ));
        assert!(matches!(
            classify_send_error(&e(libc::ECONNREFUSED)),
            SendFailure::Transient
        ));
        assert!(matches!(
            classify_send_error(&e(libc::EBADF)),
            SendFailure::Fatal
        ));
    }
}
