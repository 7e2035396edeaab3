//! Running an engine on its own thread while the control connection stays responsive:
//! shared by the client and the daemon, each driving one end of a test.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wirebench_engine::stream::{self, FlowPlan, StreamConfig};
use wirebench_engine::Sink;
use wirebench_proto::measure::{HostRole, IntervalSample, Role, SideReport, SideStatus};
use wirebench_proto::spec::{FlowDir, TestSpec};

struct ChannelSink(mpsc::Sender<IntervalSample>);

impl Sink for ChannelSink {
    fn interval(&mut self, sample: &IntervalSample) {
        let _ = self.0.send(sample.clone());
    }
}

/// A running engine on its own thread.
pub(crate) struct EngineRun {
    pub(crate) abort: Arc<AtomicBool>,
    pub(crate) intervals: mpsc::Receiver<IntervalSample>,
    pub(crate) handle: Option<JoinHandle<SideReport>>,
}

impl EngineRun {
    /// Start a stream engine over `plans`. `max_rx_bps` is the daemon's rate policy,
    /// enforced on what this end receives.
    pub(crate) fn start(
        host: HostRole,
        spec: &TestSpec,
        cpu: Option<usize>,
        plans: Vec<FlowPlan>,
        max_rx_bps: Option<u64>,
    ) -> io::Result<EngineRun> {
        let abort = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let cfg = StreamConfig {
            msg_size_bytes: spec.msg_size_bytes as usize,
            warmup: Duration::from_millis(spec.warmup_ms),
            duration: Duration::from_millis(spec.duration_ms),
            interval: spec.interval_ms.map(Duration::from_millis),
            drain_limit: Duration::from_secs(3),
            cpu,
            rate_bps: spec.rate_bps,
            max_rx_bps,
        };
        let local = plans.first().and_then(|p| p.stream.local_addr().ok());
        let ab = Arc::clone(&abort);
        let handle = thread::Builder::new()
            .name("wb-engine".into())
            .spawn(move || {
                let mut sink = ChannelSink(tx);
                let out = stream::run(&cfg, plans, &mut sink, &ab);
                SideReport {
                    host,
                    status: match out.aborted {
                        Some(r) => SideStatus::Aborted(r),
                        None => SideStatus::Completed,
                    },
                    flows: out.flows,
                    intervals: out.intervals,
                    cpu: out.cpu,
                    env: wirebench_engine::env::probe(local.map(|a| a.ip())),
                    warnings: out.warnings,
                }
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

/// Build engine plans for one end from its data connections.
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
            let sends = matches!(
                (host, dir),
                (HostRole::Client, FlowDir::ClientToServer)
                    | (HostRole::Server, FlowDir::ServerToClient)
            );
            Some(FlowPlan {
                flow,
                dir,
                role: if sends { Role::Sender } else { Role::Receiver },
                stream,
            })
        })
        .collect();
    plans.sort_by_key(|p| p.flow);
    plans
}
