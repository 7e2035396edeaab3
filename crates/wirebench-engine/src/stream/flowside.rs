//! What the two TCP stream engines share: the thread-per-flow engine ([`super`]) and the
//! epoll engine ([`super::many`]) differ only in how their flows move bytes.
//!
//! Both keep each flow's running byte total in its own cache-line-sized [`Counter`] in a
//! [`Shared`], end each flow with a [`FlowDone`], and leave the sampling thread to
//! [`Run::finish`]: the timeline driver with the stream sampler (byte counts per interval,
//! the counters at the window start and at the stop instant), then the per-flow
//! [`FlowSide`]s, warnings and CPU report of an [`EngineOutput`].

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_model::abort::EngineKind;
use wirebench_model::side::{
    ByteInterval, FlowBytes, FlowSide, FlowTcpSample, PathUsed, RecvWaitStats, Role, SocketFacts,
    Span, StreamSide, TcpInfoReport, VerifyCounts, ZeroCopyStats,
};
use wirebench_model::spec::FlowDir;
use wirebench_model::warning::{DataThread, FallbackReason, FlowError, Step, Warning};
use wirebench_sys::thread::CpuTimes;

use super::{FlowPlan, StreamConfig};
use crate::abort::Abort;
use crate::cpu::CpuSnapshot;
use crate::threads::DataThreads;
use crate::timeline::{Engine, Timeline, WindowEdge};
use crate::{EngineOutput, Sink};

/// A flow's running byte total: written (a plain store) only by the thread that moves the
/// flow's bytes, read by the sampling thread.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Counter(pub(crate) AtomicU64);

/// What the sampling thread and the data threads of a stream run share.
pub(crate) struct Shared {
    /// 0 on the run's clock.
    pub(crate) start: Instant,
    /// Set at the stop instant (or on abort).
    pub(crate) stop: AtomicBool,
    /// The stop instant (ns), once `stop` is set.
    pub(crate) stop_at_ns: AtomicU64,
    /// Running byte total per flow (by flow index).
    pub(crate) counters: Vec<Counter>,
    /// CPU time each data thread recorded for itself just before exiting (by thread slot).
    pub(crate) final_cpu: Vec<Mutex<Option<CpuTimes>>>,
    /// Bytes each flow sends before it stops by itself (by flow index; `u64::MAX` for none,
    /// see [`super::flow_budgets`]).
    pub(crate) budget: Vec<u64>,
    /// Flows whose data phase has ended: a sender that sent its budget or failed, a receiver
    /// that read EOF or failed. Each flow counts once.
    pub(crate) finished: AtomicUsize,
    /// Per flow index: where the sampling thread reads a sending flow's TCP_INFO at each
    /// interval's end (`None` for receivers and runs without intervals).
    pub(crate) probes: Vec<Option<Mutex<Probe>>>,
}

/// Most sending flows at one end whose TCP_INFO is sampled at every interval: above it no
/// flow is (a duplicate descriptor per flow, a getsockopt per flow per interval on the
/// sampling thread and ~100 bytes per flow in every interval message would weigh on a
/// 10,000-flow run), and the result has no per-interval TCP rows.
pub const MAX_TCP_SAMPLED_FLOWS: usize = 1024;

/// The sampling thread's view of one sending flow's socket: a duplicate of its descriptor
/// while the flow's data thread holds the socket, then the values read just before the
/// close. The data thread drops the duplicate ([`Shared::flow_closed`]) before it closes
/// its socket, so the duplicate never keeps a connection open.
pub(crate) struct Probe {
    flow: u32,
    fd: Option<OwnedFd>,
    at_close: Option<FlowTcpSample>,
}

/// The sample of flow `flow` from a TCP_INFO reading.
fn tcp_sample(flow: u32, i: &wirebench_sys::tcp::TcpInfo, at_close: bool) -> FlowTcpSample {
    FlowTcpSample {
        flow,
        cwnd_segments: i.snd_cwnd_segments,
        mss_bytes: i.snd_mss_bytes,
        srtt_us: i.rtt_us,
        rttvar_us: i.rttvar_us,
        retransmits_total: i.retransmits_total,
        delivery_rate_bps: i.delivery_rate_bytes_per_s.map(|b| b.saturating_mul(8)),
        pacing_rate_bps: i.pacing_rate_bytes_per_s.map(|b| b.saturating_mul(8)),
        at_close,
    }
}

/// The sample of flow `flow` from the TCP_INFO its data thread read at close.
fn tcp_sample_of_report(flow: u32, r: &TcpInfoReport) -> FlowTcpSample {
    FlowTcpSample {
        flow,
        cwnd_segments: r.snd_cwnd_segments,
        mss_bytes: r.snd_mss_bytes,
        srtt_us: r.rtt_us,
        rttvar_us: r.rttvar_us,
        retransmits_total: r.retransmits_total,
        delivery_rate_bps: r.delivery_rate_bps,
        pacing_rate_bps: r.pacing_rate_bps,
        at_close: true,
    }
}

impl Shared {
    /// For `flows` flows on `threads` data threads, starting at `start`.
    pub(crate) fn new(start: Instant, flows: usize, threads: usize) -> Shared {
        Shared {
            start,
            stop: AtomicBool::new(false),
            stop_at_ns: AtomicU64::new(u64::MAX),
            counters: (0..flows).map(|_| Counter::default()).collect(),
            final_cpu: (0..threads).map(|_| Mutex::new(None)).collect(),
            budget: vec![u64::MAX; flows],
            finished: AtomicUsize::new(0),
            probes: (0..flows).map(|_| None).collect(),
        }
    }

    /// The same, with each flow's budget from `cfg` for the flows of `plans`.
    pub(crate) fn for_plans(
        start: Instant,
        cfg: &StreamConfig,
        plans: &[FlowPlan],
        threads: usize,
    ) -> Shared {
        let mut shared = Shared::new(start, plans.len(), threads);
        let flows: Vec<_> = plans.iter().map(|p| (p.flow, p.dir, p.role)).collect();
        shared.budget = super::flow_budgets(cfg.stop_after_bytes, &flows);
        let senders = plans.iter().filter(|p| p.role == Role::Sender).count();
        if cfg.timing.interval.is_some() && senders <= MAX_TCP_SAMPLED_FLOWS {
            for (slot, p) in shared.probes.iter_mut().zip(plans) {
                if p.role == Role::Sender {
                    *slot = p.stream.as_fd().try_clone_to_owned().ok().map(|fd| {
                        Mutex::new(Probe {
                            flow: p.flow,
                            fd: Some(fd),
                            at_close: None,
                        })
                    });
                }
            }
            // All or none: a direction's sums over some of its flows would mislead.
            let sampled = shared.probes.iter().flatten().count();
            if sampled != senders {
                shared.probes.iter_mut().for_each(|p| *p = None);
            }
        }
        shared
    }

    /// A flow's data phase has ended (call once per flow).
    pub(crate) fn flow_finished(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }

    /// Flow `idx`'s data thread read `facts` and is about to close its socket: the sampling
    /// thread drops its duplicate and keeps these values for the intervals that follow.
    pub(crate) fn flow_closed(&self, idx: usize, facts: &SocketFacts) {
        if let Some(Some(p)) = self.probes.get(idx) {
            let mut p = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            p.fd = None;
            p.at_close = facts
                .tcp_info
                .as_ref()
                .map(|r| tcp_sample_of_report(p.flow, r));
        }
    }

    /// TCP_INFO of every sending flow now (their values at close for the closed ones).
    fn tcp_samples(&self) -> Vec<FlowTcpSample> {
        let mut out = Vec::new();
        for p in self.probes.iter().flatten() {
            let p = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let s = match &p.fd {
                Some(fd) => wirebench_sys::tcp::tcp_info(fd)
                    .ok()
                    .map(|i| tcp_sample(p.flow, &i, false)),
                None => p.at_close.clone(),
            };
            out.extend(s);
        }
        out
    }
}

/// What a flow's path reports at its end.
#[derive(Debug, Clone)]
pub(crate) struct PathReport {
    /// The path used.
    pub(crate) path: PathUsed,
    /// Why the requested path was not used (then `path` is copy), with the path asked for.
    pub(crate) fallback: Option<(PathUsed, FallbackReason)>,
    /// Zero-copy accounting, for the paths that have it.
    pub(crate) zerocopy: Option<ZeroCopyStats>,
}

/// A flow's result, as its data thread leaves it.
pub(crate) struct FlowDone {
    pub(crate) total_bytes: u64,
    pub(crate) last_byte_ns: Option<u64>,
    pub(crate) socket: SocketFacts,
    pub(crate) error: Option<FlowError>,
    pub(crate) drain_truncated: bool,
    pub(crate) path: PathReport,
    pub(crate) verify: Option<VerifyCounts>,
    pub(crate) recv_wait: Option<RecvWaitStats>,
}

impl FlowDone {
    /// A result with `total_bytes`, `error` and `path`, and nothing else yet.
    pub(crate) fn new(total_bytes: u64, error: Option<FlowError>, path: PathReport) -> FlowDone {
        FlowDone {
            total_bytes,
            last_byte_ns: None,
            socket: SocketFacts::default(),
            error,
            drain_truncated: false,
            path,
            verify: None,
            recv_wait: None,
        }
    }

    /// Pinning the flow's thread failed: that is the flow's error, unless it has its own.
    pub(crate) fn pin_failed(&mut self, e: &io::Error) {
        self.error
            .get_or_insert_with(|| FlowError::os(Step::Pin, e));
    }
}

/// Convert the `-sys` TCP_INFO into the report.
pub fn tcp_info_report(i: &wirebench_sys::tcp::TcpInfo) -> TcpInfoReport {
    TcpInfoReport {
        retransmits_total: i.retransmits_total,
        rtt_us: i.rtt_us,
        rttvar_us: i.rttvar_us,
        min_rtt_us: i.min_rtt_us,
        snd_cwnd_segments: i.snd_cwnd_segments,
        snd_mss_bytes: i.snd_mss_bytes,
        rcv_mss_bytes: i.rcv_mss_bytes,
        pmtu_bytes: i.pmtu_bytes,
        delivery_rate_bps: i.delivery_rate_bytes_per_s.map(|b| b.saturating_mul(8)),
        pacing_rate_bps: i.pacing_rate_bytes_per_s.map(|b| b.saturating_mul(8)),
        bytes_acked: i.bytes_acked,
        bytes_received: i.bytes_received,
        busy_us: i.busy_time_us,
        rwnd_limited_us: i.rwnd_limited_us,
        sndbuf_limited_us: i.sndbuf_limited_us,
        dsack_dups: i.dsack_dups,
    }
}

/// Socket buffer sizes, congestion control, path MTU and TCP_INFO of `s`.
pub fn socket_facts<F: AsFd>(s: &F) -> SocketFacts {
    let sock = SockRef::from(s);
    let addr = |a: std::io::Result<socket2::SockAddr>| {
        a.ok().and_then(|a| a.as_socket()).map(|a| a.to_string())
    };
    SocketFacts {
        local: addr(sock.local_addr()),
        peer: addr(sock.peer_addr()),
        sndbuf_bytes: sock.send_buffer_size().ok().map(|v| v as u32),
        rcvbuf_bytes: sock.recv_buffer_size().ok().map(|v| v as u32),
        congestion: wirebench_sys::tcp::congestion(s).ok(),
        pmtu_bytes: wirebench_sys::tcp::ip_mtu(s).ok(),
        tcp_info: wirebench_sys::tcp::tcp_info(s)
            .ok()
            .map(|i| tcp_info_report(&i)),
        notsent_lowat_bytes: wirebench_sys::tcp::notsent_lowat(s).ok().flatten(),
    }
}

/// The stream engines' side of the timeline: byte counts per interval, and the counters at
/// the window start and at the stop instant.
struct Sampler<'a> {
    shared: &'a Shared,
    /// Per flow index: id and role.
    roles: Vec<(u32, Role)>,
    /// Counters at the previous interval boundary.
    prev: Vec<u64>,
    warmup_ns: u64,
    sink: &'a mut dyn Sink<ByteInterval>,
    /// Counters at the window start (zeros if the window was open from 0).
    window_start_bytes: Vec<u64>,
    /// Counters at the stop instant.
    stop_bytes: Vec<u64>,
    /// The run stops after a byte count.
    ends_when_finished: bool,
}

impl Sampler<'_> {
    fn load(&self) -> Vec<u64> {
        self.shared
            .counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .collect()
    }
}

impl Engine for Sampler<'_> {
    type Sample = ByteInterval;

    fn moved_bytes(&self) -> u64 {
        self.shared
            .counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .fold(0u64, u64::saturating_add)
    }

    fn open_window(&mut self, _now_ns: u64) {
        self.window_start_bytes = self.load();
    }

    fn sink_window(&mut self, edge: WindowEdge) {
        match edge {
            WindowEdge::Opened => self.sink.window_opened(),
            WindowEdge::Closed => self.sink.window_closed(),
        }
    }

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> ByteInterval {
        let mut out = Vec::with_capacity(self.roles.len());
        for (i, &(flow, role)) in self.roles.iter().enumerate() {
            let now = self.shared.counters[i].0.load(Ordering::Relaxed);
            out.push(FlowBytes {
                flow,
                role,
                bytes: now.saturating_sub(self.prev[i]),
            });
            self.prev[i] = now;
        }
        let s = ByteInterval {
            index,
            span: Span { start_ns, end_ns },
            in_warmup: start_ns < self.warmup_ns,
            flows: out,
            tcp: self.shared.tcp_samples(),
        };
        self.sink.interval(&s);
        s
    }

    fn ends_when_finished(&self) -> bool {
        self.ends_when_finished
    }

    fn all_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Relaxed) >= self.roles.len()
    }

    fn stop(&mut self, stop_ns: u64) {
        self.stop_bytes = self.load();
        self.shared.stop_at_ns.store(stop_ns, Ordering::Relaxed);
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// A stream run, as its sampling thread sees it once the data threads are started.
pub(crate) struct Run<'a> {
    pub(crate) cfg: &'a StreamConfig,
    pub(crate) shared: &'a Shared,
    /// Per flow index: id, role, direction.
    pub(crate) meta: Vec<(u32, Role, FlowDir)>,
    /// CPU snapshot at 0, before the data threads started.
    pub(crate) at_start: CpuSnapshot,
    /// Warnings so far.
    pub(crate) warnings: Vec<Warning>,
    /// The engine that runs the flows.
    pub(crate) engine: EngineKind,
    /// Data threads (for the CPUs they may use).
    pub(crate) threads: usize,
}

/// Add `flow` to the fallback group of (`requested`, `reason`).
fn group_fallback(
    groups: &mut Vec<(PathUsed, FallbackReason, Vec<u32>)>,
    flow: u32,
    requested: PathUsed,
    reason: &FallbackReason,
) {
    match groups
        .iter_mut()
        .find(|(p, r, _)| *p == requested && r == reason)
    {
        Some((_, _, flows)) => flows.push(flow),
        None => groups.push((requested, reason.clone(), vec![flow])),
    }
}

impl<'a> Run<'a> {
    /// A run of `plans` on `threads` data threads (none started yet: this takes the CPU
    /// snapshot at 0).
    pub(crate) fn new(
        cfg: &'a StreamConfig,
        shared: &'a Shared,
        plans: &[FlowPlan],
        engine: EngineKind,
        threads: usize,
    ) -> Run<'a> {
        Run {
            cfg,
            shared,
            meta: plans.iter().map(|p| (p.flow, p.role, p.dir)).collect(),
            at_start: CpuSnapshot::take(0, &[], &|_| None),
            warnings: Vec::new(),
            engine,
            threads,
        }
    }

    /// Run the timeline on the calling thread, wait for the flows with `join` (a result per
    /// flow index; `None` for a flow whose thread failed) and put the output together.
    pub(crate) fn finish(
        self,
        threads: &DataThreads<'_>,
        sink: &mut dyn Sink<ByteInterval>,
        abort: &Abort,
        join: impl FnOnce() -> Vec<Option<FlowDone>>,
    ) -> EngineOutput<StreamSide> {
        let Run {
            cfg,
            shared,
            meta,
            at_start,
            mut warnings,
            engine,
            threads: nthreads,
        } = self;
        let n = meta.len();
        let mut sampler = Sampler {
            shared,
            roles: meta.iter().map(|m| (m.0, m.1)).collect(),
            prev: vec![0; n],
            warmup_ns: cfg.timing.warmup.as_nanos() as u64,
            sink,
            window_start_bytes: vec![0; n],
            stop_bytes: vec![0; n],
            ends_when_finished: cfg.stop_after_bytes.is_some(),
        };
        let timeline = Timeline {
            start: shared.start,
            warmup: cfg.timing.warmup,
            duration: cfg.timing.duration,
            interval: cfg.timing.interval,
            policy: cfg.timing.policy,
            cpus_used: cfg.timing.pin.cpus_used(nthreads),
        };
        let out = timeline.run(&mut sampler, threads, at_start, abort, join);
        let (window_start_ns, stop_ns) = (out.end.window_start_ns, out.end.stop_ns);

        let mut flows = Vec::with_capacity(n);
        let mut fallbacks = Vec::new();
        for (i, (flow, role, dir)) in meta.into_iter().enumerate() {
            let done = out.done[i].as_ref();
            let start_bytes = sampler.window_start_bytes[i];
            let total = done
                .map(|d| d.total_bytes)
                .unwrap_or_else(|| shared.counters[i].0.load(Ordering::Relaxed));
            let (window_bytes, window_end_ns) = match role {
                // Stopped before the window opened: nothing was measured.
                _ if !out.end.window_opened => (0, stop_ns),
                // A sender that sent its whole budget: its window ends with its last send.
                Role::Sender => {
                    let end = done
                        .and_then(|d| d.last_byte_ns)
                        .map_or(stop_ns, |t| t.min(stop_ns));
                    (sampler.stop_bytes[i].saturating_sub(start_bytes), end)
                }
                Role::Receiver => {
                    let last = done.and_then(|d| d.last_byte_ns).unwrap_or(window_start_ns);
                    (total.saturating_sub(start_bytes), last.max(window_start_ns))
                }
            };
            if let Some((requested, reason)) = done.and_then(|d| d.path.fallback.as_ref()) {
                group_fallback(&mut fallbacks, flow, *requested, reason);
            }
            if done.is_some_and(|d| d.drain_truncated) {
                warnings.push(Warning::DrainTruncated {
                    thread: DataThread::Flow(flow),
                    drain_limit_ms: cfg.timing.drain_limit.as_millis() as u64,
                });
            }
            let requested = match role {
                Role::Sender => PathUsed::Send(cfg.send_path),
                Role::Receiver => PathUsed::Recv(cfg.recv_path),
            };
            flows.push(FlowSide {
                flow,
                dir,
                role,
                total_bytes: total,
                window_bytes,
                window: Span {
                    start_ns: window_start_ns,
                    end_ns: window_end_ns,
                },
                socket: done.map(|d| d.socket.clone()).unwrap_or_default(),
                error: match done {
                    Some(d) => d.error.clone(),
                    None => Some(FlowError::panicked()),
                },
                path: done.map_or(requested, |d| d.path.path),
                path_fallback: done.and_then(|d| d.path.fallback.clone().map(|f| f.1)),
                zerocopy: done.and_then(|d| d.path.zerocopy.clone()),
                verify: done.and_then(|d| d.verify),
                recv_wait: done.and_then(|d| d.recv_wait.clone()),
            });
        }
        for (requested, reason, flows) in fallbacks {
            warnings.push(Warning::PathFallback {
                flows,
                requested,
                reason,
            });
        }
        let data = StreamSide {
            flows,
            intervals: out.intervals,
            worker_waits: Vec::new(),
        };
        EngineOutput::new(data, out.end, warnings, engine, &cfg.timing)
    }
}

/// How long receivers wait for EOF after the stop instant, as a `Duration` helper for the
/// engines' deadline arithmetic.
pub(crate) fn drain_end_ns(stop_ns: u64, drain_limit: Duration) -> u64 {
    stop_ns.saturating_add(u64::try_from(drain_limit.as_nanos()).unwrap_or(u64::MAX))
}
