//! Running one end's engine on its own thread while the control connection stays responsive:
//! shared by the client and the daemon.
//!
//! [`EngineRun::start`] runs the end's [`EngineJob`] (its engine configuration and data
//! sockets, built by [`crate::workload`] from the spec's common part and the workload's own
//! spec) on a thread named `wb-engine`, relays its interval samples over a channel, and
//! hands back a [`SideReport`] when it finishes.

use std::net::{IpAddr, TcpStream};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wirebench_engine::rr::{self, RrConfig, RrFlows};
use wirebench_engine::stream::{self, FlowPlan, StreamConfig};
use wirebench_engine::udp::{self, UdpConfig, UdpPlan, UdpWire};
use wirebench_engine::{Abort, EngineOutput, RatePolicy, Sink};
use wirebench_model::abort::AbortReason;
use wirebench_model::profile::ProfileUnavailable;
use wirebench_model::rr::RrInterval;
use wirebench_model::side::{
    ByteInterval, HostRole, IntervalData, SideData, SideReport, SideStatus,
};
use wirebench_model::spec::TestSpec;
use wirebench_model::udp::UdpInterval;
use wirebench_model::warning::Warning;
use wirebench_profile::WindowProfile;

/// How long an end waits past its stop instant for the peer to finish.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(3);

/// Turns every engine's interval samples into [`IntervalData`] on a channel, and starts and
/// stops this end's profile (if any) at the measurement window's edges.
pub(crate) struct ChannelSink {
    tx: mpsc::Sender<IntervalData>,
    profile: Option<WindowProfile>,
}

impl ChannelSink {
    fn opened(&mut self) {
        if let Some(p) = self.profile.as_mut() {
            p.opened();
        }
    }

    fn closed(&mut self) {
        if let Some(p) = self.profile.as_mut() {
            p.closed();
        }
    }
}

impl Sink<ByteInterval> for ChannelSink {
    fn interval(&mut self, s: &ByteInterval) {
        let _ = self.tx.send(IntervalData::Stream(s.clone()));
    }
    fn window_opened(&mut self) {
        self.opened();
    }
    fn window_closed(&mut self) {
        self.closed();
    }
}

impl Sink<RrInterval> for ChannelSink {
    fn interval(&mut self, s: &RrInterval) {
        let _ = self.tx.send(IntervalData::Rr(s.clone()));
    }
    fn window_opened(&mut self) {
        self.opened();
    }
    fn window_closed(&mut self) {
        self.closed();
    }
}

impl Sink<UdpInterval> for ChannelSink {
    fn interval(&mut self, s: &UdpInterval) {
        let _ = self.tx.send(IntervalData::UdpStream(s.clone()));
    }
    fn window_opened(&mut self) {
        self.opened();
    }
    fn window_closed(&mut self) {
        self.closed();
    }
}

/// Prepares this end's profile if the spec asks for one: `allowed` is this end's policy
/// (the daemon's `--allow-profile`; always true at the client). Opening the events and
/// loading the symbols takes a while (~0.1 s), so it happens during the setup, before the
/// engine starts.
pub(crate) fn prepare_profile(
    spec: &TestSpec,
    pinned: Option<usize>,
    allowed: bool,
) -> Option<WindowProfile> {
    let hz = spec.common.profile_hz?;
    if !allowed {
        return Some(WindowProfile::Unavailable(
            ProfileUnavailable::RefusedByServer,
        ));
    }
    Some(WindowProfile::prepare(hz, pinned))
}

/// Puts a finished profile (or why there is none) into this end's report.
fn attach_profile(report: &mut SideReport, profile: WindowProfile) {
    match profile.finish() {
        Ok(p) => {
            if p.lost_samples > 0 {
                report.warnings.push(Warning::ProfileSamplesLost {
                    lost_samples: p.lost_samples,
                    samples: p.samples,
                });
            }
            report.profile = Some(p);
        }
        Err(reason) => report.warnings.push(Warning::ProfileUnavailable { reason }),
    }
}

/// Who this end is and where its engine runs.
#[derive(Debug, Clone)]
pub(crate) struct EndParams {
    /// Which end.
    pub(crate) host: HostRole,
    /// The CPU the spec pins this end's data threads to.
    pub(crate) cpu: Option<usize>,
    /// The daemon's rate policy (`None` at the client).
    pub(crate) policy: Option<RatePolicy>,
    /// The local address of the data sockets (for the environment probe).
    pub(crate) local: Option<IpAddr>,
    /// The header format of a UDP stream's datagrams (iperf3's for an iperf3 client).
    pub(crate) udp_wire: UdpWire,
}

/// A running engine on its own thread.
pub(crate) struct EngineRun {
    pub(crate) abort: Arc<Abort>,
    pub(crate) intervals: mpsc::Receiver<IntervalData>,
    handle: Option<JoinHandle<SideReport>>,
    /// When its nominal length (warm-up + duration) is over; it finishes soon after.
    nominal_end: Instant,
}

/// How long a control loop may wait for a frame while nothing else is due.
pub(crate) const CONTROL_WAIT: Duration = Duration::from_millis(50);

/// How long it may wait while a state change that sends no frame is imminent (an engine
/// past its nominal end, data connections being collected): short, so that a test's
/// set-up and wind-down do not add tens of milliseconds to every point of a sweep.
pub(crate) const SHORT_WAIT: Duration = Duration::from_millis(1);

/// A report of this end with no engine figures (the engine could not run), aborted for
/// `reason`.
pub(crate) fn empty_report(
    host: HostRole,
    local: Option<IpAddr>,
    reason: AbortReason,
) -> SideReport {
    SideReport {
        host,
        status: SideStatus::Aborted(reason),
        window: None,
        data: None,
        cpu: None,
        env: wirebench_engine::env::probe(local),
        warnings: Vec::new(),
        engine: None,
        profile: None,
        buffer_offset_bytes: None,
    }
}

/// An engine's output as this end's report.
fn report<D>(
    host: HostRole,
    local: Option<IpAddr>,
    out: EngineOutput<D>,
    data: impl FnOnce(D) -> SideData,
) -> SideReport {
    SideReport {
        host,
        status: match out.aborted {
            Some(r) => SideStatus::Aborted(r),
            None => SideStatus::Completed,
        },
        window: out.window,
        data: Some(data(out.data)),
        cpu: out.cpu,
        env: wirebench_engine::env::probe(local),
        warnings: out.warnings,
        engine: Some(out.engine),
        profile: None,
        buffer_offset_bytes: u32::try_from(out.buffer_offset).ok(),
    }
}

/// What an end's engine runs: its configuration and data sockets, built by the workload's
/// setup ([`crate::workload::WorkloadSetup::plan`]).
pub(crate) trait EngineJob: Send {
    /// Runs the engine to its end and reports it as the end `end` describes.
    fn run(self: Box<Self>, end: &EndParams, sink: &mut ChannelSink, abort: &Abort) -> SideReport;
}

/// A stream end's job.
pub(crate) struct StreamJob {
    pub(crate) cfg: StreamConfig,
    pub(crate) plans: Vec<FlowPlan>,
}

/// A request/response end's job. `keep` holds UDP RR's setup TCP connections open until the
/// end.
pub(crate) struct RrJob {
    pub(crate) cfg: RrConfig,
    pub(crate) flows: RrFlows,
    pub(crate) keep: Vec<TcpStream>,
}

/// A UDP stream end's job. `keep` holds the setup TCP connections open until the end.
pub(crate) struct UdpJob {
    pub(crate) cfg: UdpConfig,
    pub(crate) plan: UdpPlan,
    pub(crate) keep: Vec<TcpStream>,
}

impl EngineJob for StreamJob {
    fn run(self: Box<Self>, end: &EndParams, sink: &mut ChannelSink, abort: &Abort) -> SideReport {
        let StreamJob { cfg, plans } = *self;
        // Each connection's addresses, read while it is surely connected (a socket that
        // has seen both FINs may no longer name its peer).
        let addrs: Vec<(u32, Option<String>, Option<String>)> = plans
            .iter()
            .map(|p| {
                let show = |a: std::io::Result<std::net::SocketAddr>| a.ok().map(|a| a.to_string());
                (
                    p.flow,
                    show(p.stream.local_addr()),
                    show(p.stream.peer_addr()),
                )
            })
            .collect();
        let mut out = stream::run(&cfg, plans, sink, abort);
        for f in &mut out.data.flows {
            if let Some((_, l, p)) = addrs.iter().find(|a| a.0 == f.flow) {
                f.socket.local = f.socket.local.take().or_else(|| l.clone());
                f.socket.peer = f.socket.peer.take().or_else(|| p.clone());
            }
        }
        report(end.host, end.local, out, SideData::Stream)
    }
}

impl EngineJob for RrJob {
    fn run(self: Box<Self>, end: &EndParams, sink: &mut ChannelSink, abort: &Abort) -> SideReport {
        let RrJob { cfg, flows, keep } = *self;
        let out = rr::run(&cfg, flows, sink, abort);
        drop(keep);
        report(end.host, end.local, out, SideData::Rr)
    }
}

impl EngineJob for UdpJob {
    fn run(self: Box<Self>, end: &EndParams, sink: &mut ChannelSink, abort: &Abort) -> SideReport {
        let UdpJob { cfg, plan, keep } = *self;
        let res = udp::run(&cfg, plan, sink, abort);
        drop(keep);
        match res {
            Ok(out) => report(end.host, end.local, out, SideData::UdpStream),
            Err(e) => empty_report(
                end.host,
                end.local,
                AbortReason::EngineFailed {
                    detail: e.to_string(),
                },
            ),
        }
    }
}

impl EngineRun {
    /// Start `job`, the engine of `spec`'s workload, at the end `end` describes.
    /// `profile`, if set, is started and stopped at the window's edges and its report (or
    /// why there is none) goes into this end's report.
    pub(crate) fn start(
        end: EndParams,
        spec: &TestSpec,
        job: Box<dyn EngineJob>,
        profile: Option<WindowProfile>,
    ) -> std::io::Result<EngineRun> {
        let abort = Arc::new(Abort::new());
        let (tx, rx) = mpsc::channel();
        let ab = Arc::clone(&abort);
        let nominal_end =
            Instant::now() + Duration::from_millis(spec.common.warmup_ms + spec.common.duration_ms);
        let handle = thread::Builder::new()
            .name("wb-engine".into())
            .spawn(move || {
                let mut sink = ChannelSink { tx, profile };
                let mut report = job.run(&end, &mut sink, &ab);
                if let Some(p) = sink.profile.take() {
                    attach_profile(&mut report, p);
                }
                report
            })?;
        Ok(EngineRun {
            abort,
            intervals: rx,
            handle: Some(handle),
            nominal_end,
        })
    }

    /// How long the control loop may wait before polling the engine again: until its
    /// nominal end, then [`SHORT_WAIT`].
    pub(crate) fn wait_step(&self, now: Instant) -> Duration {
        if now >= self.nominal_end {
            SHORT_WAIT
        } else {
            (self.nominal_end - now).clamp(SHORT_WAIT, CONTROL_WAIT)
        }
    }

    /// The engine's stop instant: its start, warm-up and duration later.
    pub(crate) fn nominal_end(&self) -> Instant {
        self.nominal_end
    }

    /// The report, if the engine has finished.
    pub(crate) fn try_finish(&mut self) -> Option<SideReport> {
        if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
            return self.handle.take().and_then(|h| h.join().ok());
        }
        None
    }

    /// Abort for `reason` and wait (bounded) for the partial report.
    pub(crate) fn abort_and_wait(
        &mut self,
        reason: AbortReason,
        limit: Duration,
    ) -> Option<SideReport> {
        self.abort.abort(reason.clone());
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Some(mut r) = self.try_finish() {
                if r.status == SideStatus::Completed {
                    r.status = SideStatus::Aborted(reason);
                }
                return Some(r);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

#[cfg(test)]
mod engine_choice_tests {
    use super::*;
    use wirebench_model::spec::{Direction, RecvPath, SendPath, StreamSpec, WorkloadSpec};

    /// The server bounds a spec's buffers by the engine the model says each end runs; the
    /// engine must choose the same one, with no more workers than the bound counted.
    #[test]
    fn the_engine_runs_what_the_buffer_bound_counted() {
        /// Flows, direction, rate, send path, receive path, threads.
        type Case = (u32, Direction, Option<u64>, SendPath, RecvPath, Option<u32>);
        let cases: &[Case] = &[
            (
                1,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                32,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                33,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                16,
                Direction::Bidir,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                17,
                Direction::Bidir,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                10_000,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                10_000,
                Direction::Reverse,
                Some(1_000_000),
                SendPath::Copy,
                RecvPath::Copy,
                None,
            ),
            (
                100,
                Direction::Forward,
                None,
                SendPath::Sendfile,
                RecvPath::Copy,
                None,
            ),
            (
                100,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Discard,
                None,
            ),
            (
                4,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                Some(2),
            ),
            (
                4,
                Direction::Forward,
                None,
                SendPath::Copy,
                RecvPath::Copy,
                Some(64),
            ),
            (
                4,
                Direction::Forward,
                None,
                SendPath::Splice,
                RecvPath::Copy,
                Some(2),
            ),
        ];
        for &(flows, direction, rate_bps, send_path, recv_path, threads) in cases {
            let mut spec = TestSpec::stream_default();
            spec.common.flows = flows;
            spec.workload = WorkloadSpec::Stream(StreamSpec {
                direction,
                rate_bps,
                send_path,
                recv_path,
                threads,
                ..StreamSpec::default()
            });
            let WorkloadSpec::Stream(s) = &spec.workload else {
                unreachable!("a stream spec")
            };
            let end = EndParams {
                host: HostRole::Client,
                cpu: None,
                policy: None,
                local: None,
                udp_wire: UdpWire::Native,
            };
            let cfg = crate::workload::stream_config(&spec.common, s, &end);
            let conns = spec.connection_count() as usize;
            let engine = wirebench_engine::stream::choose_engine(&cfg, conns).epoll_workers;
            let bound = spec.epoll_workers_bound();
            assert_eq!(
                engine.is_some(),
                bound.is_some(),
                "{flows} {direction:?} {threads:?}"
            );
            if let (Some(w), Some(b)) = (engine, bound) {
                assert!(w <= b as usize, "{w} workers, {b} counted");
            }
        }
    }
}
