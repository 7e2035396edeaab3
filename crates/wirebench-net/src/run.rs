//! Running an engine on its own thread while the control connection stays responsive:
//! shared by the client and the daemon, each driving one end of a test.

use std::io;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wirebench_engine::rr::{self, OpenLoop, RrConfig, RrFlows, RrSink, DEFAULT_MAX_OUTSTANDING};
use wirebench_engine::stream::{self, FlowPlan, StreamConfig};
use wirebench_engine::udp::{self, UdpConfig, UdpPlan};
use wirebench_engine::Sink;
use wirebench_proto::measure::{HostRole, IntervalSample, Role, SideReport, SideStatus, UdpReport};
use wirebench_proto::rr::{RrInterval, RrReport};
use wirebench_proto::spec::{FlowDir, RrParams, TestSpec};
use wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS;

/// How long an end waits past its stop instant for the peer to finish.
const DRAIN_LIMIT: Duration = Duration::from_secs(3);

/// One live sample: bytes per flow, and transactions per flow for the request/response
/// workloads.
#[derive(Debug, Clone)]
pub(crate) struct LiveSample {
    pub(crate) sample: IntervalSample,
    pub(crate) rr: Option<RrInterval>,
}

struct ChannelSink(mpsc::Sender<LiveSample>);

impl Sink for ChannelSink {
    fn interval(&mut self, sample: &IntervalSample) {
        let _ = self.0.send(LiveSample {
            sample: sample.clone(),
            rr: None,
        });
    }
}

impl RrSink for ChannelSink {
    fn interval(&mut self, s: &RrInterval) {
        let _ = self.0.send(LiveSample {
            sample: IntervalSample {
                index: s.index,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
                in_warmup: s.in_warmup,
                flows: Vec::new(),
            },
            rr: Some(s.clone()),
        });
    }
}

/// What an end's engine runs over: the data sockets of one workload.
pub(crate) enum DataPlan {
    /// TCP stream flows.
    Stream(Vec<FlowPlan>),
    /// Request/response flows. `keep` holds UDP RR's setup TCP connections open until the
    /// end.
    Rr {
        flows: RrFlows,
        keep: Vec<TcpStream>,
    },
    /// UDP stream flows. `keep` holds the setup TCP connections open until the end.
    Udp { plan: UdpPlan, keep: Vec<TcpStream> },
}

/// A running engine on its own thread.
pub(crate) struct EngineRun {
    pub(crate) abort: Arc<AtomicBool>,
    pub(crate) intervals: mpsc::Receiver<LiveSample>,
    pub(crate) handle: Option<JoinHandle<SideReport>>,
}

/// The engine configuration of a request/response spec.
pub(crate) fn rr_config(spec: &TestSpec, rr: &RrParams, cpu: Option<usize>) -> RrConfig {
    RrConfig {
        request_size_bytes: rr.request_size_bytes as usize,
        response_size_bytes: rr.response_size_bytes as usize,
        warmup: Duration::from_millis(spec.warmup_ms),
        duration: Duration::from_millis(spec.duration_ms),
        interval: spec.interval_ms.map(Duration::from_millis),
        drain_limit: DRAIN_LIMIT,
        cpu,
        burst: rr.burst,
        open_loop: rr.transactions_per_s.map(|t| OpenLoop {
            rate_per_s: t as f64,
            max_outstanding: rr.max_outstanding.unwrap_or(DEFAULT_MAX_OUTSTANDING),
        }),
        close_mode: rr.close_mode,
        peer_timeout: Duration::from_secs(1),
        udp_timeout: Duration::from_millis(rr.udp_timeout_ms),
    }
}

fn report(host: HostRole, local: Option<IpAddr>, aborted: Option<String>) -> SideReport {
    SideReport {
        host,
        status: match aborted {
            Some(r) => SideStatus::Aborted(r),
            None => SideStatus::Completed,
        },
        flows: Vec::new(),
        intervals: Vec::new(),
        cpu: None,
        env: wirebench_engine::env::probe(local),
        warnings: Vec::new(),
        rr: None,
        udp: None,
        engine: None,
    }
}

/// Who this end is and how its engine runs.
struct End {
    host: HostRole,
    cpu: Option<usize>,
    max_rx_bps: Option<u64>,
    local: Option<IpAddr>,
}

fn run_plan(
    end: End,
    spec: &TestSpec,
    data: DataPlan,
    sink: &mut ChannelSink,
    abort: &AtomicBool,
) -> SideReport {
    let End {
        host,
        cpu,
        max_rx_bps,
        local,
    } = end;
    match data {
        DataPlan::Stream(plans) => {
            let cfg = StreamConfig {
                msg_size_bytes: spec.msg_size_bytes as usize,
                warmup: Duration::from_millis(spec.warmup_ms),
                duration: Duration::from_millis(spec.duration_ms),
                interval: spec.interval_ms.map(Duration::from_millis),
                drain_limit: DRAIN_LIMIT,
                cpu,
                pin_cpus: if spec.pin_threads && cpu.is_none() {
                    wirebench_sys::thread::current_thread_affinity().unwrap_or_default()
                } else {
                    Vec::new()
                },
                rate_bps: spec.rate_bps,
                max_rx_bps,
                send_path: spec.send_path.unwrap_or_default(),
                recv_path: spec.recv_path.unwrap_or_default(),
                verify: spec.verify,
            };
            let mut notes = Vec::new();
            let (out, engine) = match stream_engine(&cfg, spec.threads, plans.len(), &mut notes) {
                Some(threads) => {
                    let out = wirebench_engine::many::run(&cfg, threads, plans, sink, abort);
                    let label = format!(
                        "epoll, {threads} worker thread{}{}",
                        if threads == 1 { "" } else { "s" },
                        placement(&cfg, threads)
                    );
                    (out, label)
                }
                None => {
                    let label = format!("thread per flow{}", placement(&cfg, plans.len()));
                    (stream::run(&cfg, plans, sink, abort), label)
                }
            };
            let mut warnings = notes;
            warnings.extend(out.warnings);
            SideReport {
                engine: Some(engine),
                flows: out.flows,
                intervals: out.intervals,
                cpu: out.cpu,
                warnings,
                ..report(host, local, out.aborted)
            }
        }
        DataPlan::Rr { flows, keep } => {
            let params = spec.rr.clone().unwrap_or_default();
            let cfg = rr_config(spec, &params, cpu);
            let res = rr::run(&cfg, flows, sink, abort);
            drop(keep);
            match res {
                Ok(out) => SideReport {
                    cpu: out.cpu,
                    warnings: out.warnings,
                    rr: Some(RrReport {
                        workload: out.workload,
                        role: out.role,
                        close_mode: out.close_mode,
                        request_size_bytes: params.request_size_bytes,
                        response_size_bytes: params.response_size_bytes,
                        burst: params.burst,
                        window_start_ns: out.window_start_ns,
                        window_end_ns: out.window_end_ns,
                        flows: out.flows,
                        latency: out.latency,
                        intervals: out.intervals,
                    }),
                    ..report(host, local, out.aborted)
                },
                Err(e) => report(
                    host,
                    local,
                    Some(format!("the engine refused the test: {e}")),
                ),
            }
        }
        DataPlan::Udp { plan, keep } => {
            let cfg = UdpConfig {
                msg_size_bytes: spec.msg_size_bytes as usize,
                rate_bps: spec.rate_bps,
                warmup: Duration::from_millis(spec.warmup_ms),
                duration: Duration::from_millis(spec.duration_ms),
                interval: spec.interval_ms.map(Duration::from_millis),
                drain_limit: DRAIN_LIMIT,
                reorder_window_seqs: DEFAULT_REORDER_WINDOW_SEQS,
                cpu,
            };
            let res = udp::run(&cfg, plan, sink, abort);
            drop(keep);
            match res {
                Ok(out) => SideReport {
                    intervals: out.intervals,
                    cpu: out.cpu,
                    warnings: out.warnings,
                    udp: Some(UdpReport {
                        senders: out.senders,
                        receivers: out.receivers,
                        sockets: out.sockets,
                        intervals: out.udp_intervals,
                    }),
                    ..report(host, local, out.aborted)
                },
                Err(e) => report(
                    host,
                    local,
                    Some(format!("the engine refused the test: {e}")),
                ),
            }
        }
    }
}

/// Flows at one end above which an unpaced copy-path stream runs on the many-flow epoll
/// engine (a few worker threads) instead of a thread per flow.
pub(crate) const MANY_FLOW_THRESHOLD: usize = 32;

/// The engine of a stream run with `flows` flows at this end: `Some(workers)` for
/// [`wirebench_engine::many`], `None` for a thread per flow ([`stream::run`]).
///
/// The many-flow engine has neither pacing nor the paths other than copy, so it runs only
/// when every flow copies and no rate is set: with the `threads` the spec asks for (at most
/// one per flow), or without one above [`MANY_FLOW_THRESHOLD`] flows with one worker per
/// online CPU. A `threads` request it cannot honour leaves a note saying why.
fn stream_engine(
    cfg: &StreamConfig,
    threads: Option<u32>,
    flows: usize,
    notes: &mut Vec<String>,
) -> Option<usize> {
    use wirebench_proto::spec::{RecvPath, SendPath};
    let blocker = if cfg.rate_bps.is_some() {
        Some("a rate is set (the epoll engine does not pace)".to_string())
    } else if cfg.send_path != SendPath::Copy || cfg.recv_path != RecvPath::Copy {
        Some(format!(
            "send path {} / receive path {} (the epoll engine has only the copy paths)",
            cfg.send_path.name(),
            cfg.recv_path.name()
        ))
    } else {
        None
    };
    let flows = flows.max(1);
    match (threads, blocker) {
        (Some(t), Some(why)) => {
            notes.push(format!(
                "threads {t} ignored: {why}; ran a thread per flow ({flows} here)"
            ));
            None
        }
        (Some(t), None) => Some((t as usize).clamp(1, flows)),
        (None, Some(_)) => None,
        (None, None) if flows > MANY_FLOW_THRESHOLD => Some(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .min(flows),
        ),
        (None, None) => None,
    }
}

/// How a run's `threads` data threads are placed, for the engine label: "" (scheduler),
/// ", pinned to CPU 3" or ", pinned round-robin to CPUs 0,1".
fn placement(cfg: &StreamConfig, threads: usize) -> String {
    if let Some(c) = cfg.cpu {
        return format!(", pinned to CPU {c}");
    }
    if cfg.pin_cpus.is_empty() {
        return String::new();
    }
    let used: Vec<String> = cfg
        .pin_cpus
        .iter()
        .take(threads.max(1))
        .map(|c| c.to_string())
        .collect();
    format!(", pinned round-robin to CPUs {}", used.join(","))
}

impl EngineRun {
    /// Start the engine of `spec`'s workload over `data`. `max_rx_bps` is the daemon's rate
    /// policy, enforced on what this end receives (TCP stream only). `local` is the address
    /// of this end's data sockets (for the environment probe).
    pub(crate) fn start(
        host: HostRole,
        spec: &TestSpec,
        cpu: Option<usize>,
        data: DataPlan,
        max_rx_bps: Option<u64>,
        local: Option<IpAddr>,
    ) -> io::Result<EngineRun> {
        let abort = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let ab = Arc::clone(&abort);
        let spec = spec.clone();
        let handle = thread::Builder::new()
            .name("wb-engine".into())
            .spawn(move || {
                let mut sink = ChannelSink(tx);
                let end = End {
                    host,
                    cpu,
                    max_rx_bps,
                    local,
                };
                run_plan(end, &spec, data, &mut sink, &ab)
            })?;
        Ok(EngineRun {
            abort,
            intervals: rx,
            handle: Some(handle),
        })
    }

    /// The report, if the engine has finished.
    pub(crate) fn try_finish(&mut self) -> Option<SideReport> {
        if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
            return self.handle.take().and_then(|h| h.join().ok());
        }
        None
    }

    /// Abort and wait (bounded) for the partial report.
    pub(crate) fn abort_and_wait(&mut self, reason: &str, limit: Duration) -> Option<SideReport> {
        self.abort.store(true, Ordering::Relaxed);
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(mut r) = self.try_finish() {
                if r.status == SideStatus::Completed {
                    r.status = SideStatus::Aborted(reason.to_string());
                }
                return Some(r);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

/// Whether `host` sends on a flow carried in direction `dir`.
pub(crate) fn sends(host: HostRole, dir: FlowDir) -> bool {
    matches!(
        (host, dir),
        (HostRole::Client, FlowDir::ClientToServer) | (HostRole::Server, FlowDir::ServerToClient)
    )
}

/// Build stream plans for one end from its data connections.
pub(crate) fn plans_for(
    host: HostRole,
    spec: &TestSpec,
    conns: Vec<(u32, TcpStream)>,
) -> Vec<FlowPlan> {
    let dirs = spec.flow_dirs();
    let mut plans: Vec<FlowPlan> = conns
        .into_iter()
        .filter_map(|(flow, stream)| {
            let dir = *dirs.get(flow as usize)?;
            Some(FlowPlan {
                flow,
                dir,
                role: if sends(host, dir) {
                    Role::Sender
                } else {
                    Role::Receiver
                },
                stream,
            })
        })
        .collect();
    plans.sort_by_key(|p| p.flow);
    plans
}
