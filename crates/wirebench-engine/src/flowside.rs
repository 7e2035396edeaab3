//! What the two TCP stream engines share: [`crate::stream`] (a thread per flow) and
//! [`crate::many`] (a few epoll workers) differ only in how their flows move bytes.
//!
//! Both keep each flow's running byte total in its own cache-line-sized [`Counter`] in a
//! [`Shared`], end each flow with a [`FlowDone`], and leave the sampling thread to
//! [`Run::finish`]: the [`crate::timeline`] driver with the stream sampler (byte counts per
//! interval, the counters at the window start and at the stop instant, the `max_rx_bps`
//! policy), then the per-flow [`FlowSide`]s, warnings and CPU report of a [`StreamOutput`].

use std::collections::BTreeMap;
use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_proto::measure::{FlowInterval, FlowSide, IntervalSample, Role, TcpInfoReport};
use wirebench_proto::spec::FlowDir;
use wirebench_sys::thread::CpuTimes;

use crate::cpu::CpuSnapshot;
use crate::paths::PathReport;
use crate::stream::{tcp_info_report, FlowPlan, StreamConfig, StreamOutput};
use crate::timeline::{DataThreads, Engine, Timeline, Unopened};
use crate::Sink;

/// Slack of the receive-rate policy: this much time at the limit, plus [`RX_SLACK_BYTES`].
const RX_SLACK: Duration = Duration::from_millis(250);
/// Fixed slack of the receive-rate policy, bytes (socket buffers drained at once).
const RX_SLACK_BYTES: u64 = 4 << 20;

/// Bytes a flow may have moved `elapsed` after its start at `rate_bps`.
pub(crate) fn paced_allowance(rate_bps: u64, elapsed: Duration) -> u64 {
    (u128::from(rate_bps) * elapsed.as_nanos() / 8_000_000_000).min(u128::from(u64::MAX)) as u64
}

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
        }
    }
}

/// A flow's result, as its data thread leaves it.
pub(crate) struct FlowDone {
    pub(crate) total_bytes: u64,
    pub(crate) last_byte_ns: Option<u64>,
    pub(crate) tcp_info: Option<TcpInfoReport>,
    pub(crate) congestion: Option<String>,
    pub(crate) pmtu_bytes: Option<u32>,
    pub(crate) sndbuf_bytes: Option<u32>,
    pub(crate) rcvbuf_bytes: Option<u32>,
    pub(crate) error: Option<String>,
    pub(crate) drain_truncated: bool,
    pub(crate) path: PathReport,
    pub(crate) verified_bytes: Option<u64>,
    pub(crate) verify_errors: Option<u64>,
}

impl FlowDone {
    /// A result with `total_bytes`, `error` and `path`, and nothing else yet.
    pub(crate) fn new(total_bytes: u64, error: Option<String>, path: PathReport) -> FlowDone {
        FlowDone {
            total_bytes,
            last_byte_ns: None,
            tcp_info: None,
            congestion: None,
            pmtu_bytes: None,
            sndbuf_bytes: None,
            rcvbuf_bytes: None,
            error,
            drain_truncated: false,
            path,
            verified_bytes: None,
            verify_errors: None,
        }
    }

    /// Pinning the flow's thread failed: that is the flow's error, unless it has its own.
    pub(crate) fn pin_failed(&mut self, e: &io::Error) {
        self.error
            .get_or_insert_with(|| format!("could not pin to CPU: {e}"));
    }
}

/// Socket buffer sizes, congestion control, path MTU and TCP_INFO of `s`, into `done`.
pub(crate) fn socket_facts<F: AsFd>(s: &F, done: &mut FlowDone) {
    let sock = SockRef::from(s);
    done.sndbuf_bytes = sock.send_buffer_size().ok().map(|v| v as u32);
    done.rcvbuf_bytes = sock.recv_buffer_size().ok().map(|v| v as u32);
    done.congestion = wirebench_sys::tcp::congestion(s).ok();
    done.pmtu_bytes = wirebench_sys::tcp::ip_mtu(s).ok();
    done.tcp_info = wirebench_sys::tcp::tcp_info(s)
        .ok()
        .map(|i| tcp_info_report(&i));
}

/// "flow 3" or "flows 0, 1, 2".
fn flow_list(flows: &[u32]) -> String {
    match flows {
        [one] => format!("flow {one}"),
        _ => {
            let ids: Vec<String> = flows.iter().map(u32::to_string).collect();
            format!("flows {}", ids.join(", "))
        }
    }
}

/// The stream engines' side of the timeline: byte counts per interval, the counters at the
/// window start and at the stop instant, and the `max_rx_bps` policy.
struct Sampler<'a> {
    shared: &'a Shared,
    /// Per flow index: id and role.
    roles: Vec<(u32, Role)>,
    /// Counters at the previous interval boundary.
    prev: Vec<u64>,
    warmup_ns: u64,
    sink: &'a mut dyn Sink,
    /// Flow indexes of the receiving flows.
    receivers: Vec<usize>,
    max_rx_bps: Option<u64>,
    /// Counters at the window start (zeros if the window was open from 0).
    window_start_bytes: Vec<u64>,
    /// Counters at the stop instant.
    stop_bytes: Vec<u64>,
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
    type Sample = IntervalSample;

    fn check(&mut self, now: Instant, now_ns: u64) -> Option<String> {
        let max = self.max_rx_bps?;
        let got: u64 = self
            .receivers
            .iter()
            .map(|&i| self.shared.counters[i].0.load(Ordering::Relaxed))
            .sum();
        let allowed =
            paced_allowance(max, now - self.shared.start + RX_SLACK).saturating_add(RX_SLACK_BYTES);
        (got > allowed).then(|| {
            format!(
                "limit exceeded: data arrived at {} bit/s on average, above the server's \
                 max_rate_bps of {max}",
                u128::from(got) * 8_000_000_000 / now_ns.max(1) as u128
            )
        })
    }

    fn open_window(&mut self, _now_ns: u64) {
        self.window_start_bytes = self.load();
    }

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> IntervalSample {
        let mut out = Vec::with_capacity(self.roles.len());
        for (i, &(flow, role)) in self.roles.iter().enumerate() {
            let now = self.shared.counters[i].0.load(Ordering::Relaxed);
            out.push(FlowInterval {
                flow,
                role,
                bytes: now.saturating_sub(self.prev[i]),
            });
            self.prev[i] = now;
        }
        let s = IntervalSample {
            index,
            start_ns,
            end_ns,
            in_warmup: start_ns < self.warmup_ns,
            flows: out,
        };
        self.sink.interval(&s);
        s
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
    /// How often the `max_rx_bps` policy is checked.
    pub(crate) check_every: Duration,
    pub(crate) shared: &'a Shared,
    /// Per flow index: id, role, direction.
    pub(crate) meta: Vec<(u32, Role, FlowDir)>,
    /// CPU snapshot at 0, before the data threads started.
    pub(crate) at_start: CpuSnapshot,
    /// Warnings so far.
    pub(crate) warnings: Vec<String>,
}

impl<'a> Run<'a> {
    /// A run of `plans` (none started yet: this takes the CPU snapshot at 0), with the policy
    /// checked every `check_every`.
    pub(crate) fn new(
        cfg: &'a StreamConfig,
        check_every: Duration,
        shared: &'a Shared,
        plans: &[FlowPlan],
    ) -> Run<'a> {
        Run {
            cfg,
            check_every,
            shared,
            meta: plans.iter().map(|p| (p.flow, p.role, p.dir)).collect(),
            at_start: CpuSnapshot::take(0, &[], &|_| None),
            warnings: Vec::new(),
        }
    }

    /// Run the timeline on the calling thread, wait for the flows with `join` (a result per
    /// flow index; `None` for a flow whose thread failed) and put the output together.
    pub(crate) fn finish(
        self,
        threads: &DataThreads<'_>,
        sink: &mut dyn Sink,
        abort: &AtomicBool,
        join: impl FnOnce() -> Vec<Option<FlowDone>>,
    ) -> StreamOutput {
        let Run {
            cfg,
            check_every,
            shared,
            meta,
            at_start,
            mut warnings,
        } = self;
        let n = meta.len();
        let mut sampler = Sampler {
            shared,
            roles: meta.iter().map(|m| (m.0, m.1)).collect(),
            prev: vec![0; n],
            warmup_ns: cfg.warmup.as_nanos() as u64,
            sink,
            receivers: (0..n).filter(|&i| meta[i].1 == Role::Receiver).collect(),
            max_rx_bps: cfg.max_rx_bps,
            window_start_bytes: vec![0; n],
            stop_bytes: vec![0; n],
        };
        let timeline = Timeline {
            start: shared.start,
            warmup: cfg.warmup,
            duration: cfg.duration,
            interval: cfg.interval,
            check_every: cfg.max_rx_bps.map(|_| check_every),
            unopened: Unopened::AtZero,
        };
        let out = timeline.run(&mut sampler, threads, at_start, abort, join);
        let (window_start_ns, stop_ns) = (out.window_start_ns, out.stop_ns);

        let mut flows = Vec::with_capacity(n);
        let mut fallbacks: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, (flow, role, dir)) in meta.into_iter().enumerate() {
            let done = out.done[i].as_ref();
            let start_bytes = sampler.window_start_bytes[i];
            let total = done
                .map(|d| d.total_bytes)
                .unwrap_or_else(|| shared.counters[i].0.load(Ordering::Relaxed));
            let (window_bytes, window_end_ns) = match role {
                Role::Sender => (sampler.stop_bytes[i].saturating_sub(start_bytes), stop_ns),
                Role::Receiver => {
                    let last = done.and_then(|d| d.last_byte_ns).unwrap_or(window_start_ns);
                    (total.saturating_sub(start_bytes), last.max(window_start_ns))
                }
            };
            if let Some(reason) = done.and_then(|d| d.path.fallback.as_deref()) {
                fallbacks.entry(reason.to_string()).or_default().push(flow);
            }
            if done.is_some_and(|d| d.drain_truncated) {
                warnings.push(format!(
                    "flow {flow}: no EOF within {} ms after the stop; its receive window was cut there",
                    cfg.drain_limit.as_millis()
                ));
            }
            flows.push(FlowSide {
                flow,
                dir,
                role,
                total_bytes: total,
                window_bytes,
                window_start_ns,
                window_end_ns,
                sndbuf_bytes: done.and_then(|d| d.sndbuf_bytes),
                rcvbuf_bytes: done.and_then(|d| d.rcvbuf_bytes),
                congestion: done.and_then(|d| d.congestion.clone()),
                pmtu_bytes: done.and_then(|d| d.pmtu_bytes),
                tcp_info: done.and_then(|d| d.tcp_info.clone()),
                error: match done {
                    Some(d) => d.error.clone(),
                    None => Some("flow thread failed".into()),
                },
                path: done.map(|d| d.path.path.to_string()),
                path_fallback: done.and_then(|d| d.path.fallback.clone()),
                zerocopy: done.and_then(|d| d.path.zerocopy.clone()),
                verified_bytes: done.and_then(|d| d.verified_bytes),
                verify_errors: done.and_then(|d| d.verify_errors),
            });
        }
        for (reason, flows) in fallbacks {
            warnings.push(format!("{}: {reason}", flow_list(&flows)));
        }
        let cpu = out.cpu.map_err(|e| warnings.push(e)).ok();
        StreamOutput {
            flows,
            intervals: out.intervals,
            cpu,
            warnings,
            aborted: out.aborted,
        }
    }
}
