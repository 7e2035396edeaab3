//! The [`Runner`]: one test spec against one target, repeated until a confidence target is
//! met, assembled into a [`RunResult`]. The command line, sweeps, studies and a mesh all run
//! tests through it; they differ only in how they print ([`Observer`]).
//!
//! A runner owns what outlives one run: the target (a remote daemon, or a daemon embedded in
//! this process on loopback, started on first use and kept for the runner's life), the
//! credentials, the repetition policy and the interrupt flag (set by the caller's signal
//! handler). For each run it checks the descriptor budget, runs the client session, and
//! derives the run's summary; between runs it computes the confidence intervals and stops
//! as soon as the target is met.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wirebench_analysis as analyze;
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{RunRecord, RunResult, RunStatus, Summary, SCHEMA_VERSION};
use wirebench_model::side::{HostRole, Role, SideReport};
use wirebench_model::spec::{FlowDir, Limits, TestSpec};
use wirebench_model::warning::{Noted, Warning};
use wirebench_proto::auth::Key;
use wirebench_proto::message::IntervalMsg;
use wirebench_proto::session::Timeouts;
use wirebench_stats::ci::ConfidenceLevel;

use crate::client::{self, ClientConfig, Outcome};
use crate::daemon::{Daemon, DaemonHandle, ServerConfig};
use crate::NetError;

/// Where the runner's tests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A daemon at this address.
    Remote(SocketAddr),
    /// A daemon embedded in this process, listening on this loopback address (port chosen
    /// by the kernel).
    Embedded(IpAddr),
    /// A third-party test: the daemon at `agent` runs the test as the client against the
    /// daemon at `server` (the address as the agent reaches it; this process asks it for a
    /// ticket there too). This process carries no data; the result has the agent's report
    /// as the client's and the target's as the server's.
    ThirdParty {
        /// The daemon that runs the client (`--from`), authenticated with the credentials.
        agent: SocketAddr,
        /// The daemon the test runs against (`-H`).
        server: SocketAddr,
    },
}

/// How often a test is repeated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repetition {
    /// Runs at least this many times.
    pub min_runs: u32,
    /// Runs at most this many times.
    pub max_runs: u32,
    /// Confidence level of the intervals.
    pub level: ConfidenceLevel,
    /// Stop once every interval is at most this wide, percent of its mean.
    pub target_width_pct: f64,
}

impl Repetition {
    /// One run, no confidence target.
    pub fn once() -> Repetition {
        Repetition {
            min_runs: 1,
            max_runs: 1,
            level: ConfidenceLevel::P99,
            target_width_pct: 5.0,
        }
    }
}

/// Everything a runner needs besides the spec.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Where the tests go.
    pub target: Target,
    /// Identity and key to authenticate with, if any.
    pub credentials: Option<(String, Key)>,
    /// Protocol deadlines.
    pub timeouts: Timeouts,
    /// Bound on each TCP connect.
    pub connect_timeout: Duration,
    /// The repetition policy.
    pub repetition: Repetition,
    /// The limits of an embedded daemon.
    pub embedded_limits: Limits,
    /// Local address of every connection (`-B`).
    pub bind: Option<IpAddr>,
    /// Source port of the first data connection (`--cport`).
    pub data_port: Option<u16>,
    /// The target is a stock iperf3 server (`--iperf3`), with these options.
    pub iperf3: Option<crate::iperf3_client::Iperf3Options>,
}

impl RunnerConfig {
    /// One run against `target` with the default deadlines.
    pub fn new(target: Target) -> RunnerConfig {
        RunnerConfig {
            target,
            credentials: None,
            timeouts: Timeouts::default(),
            connect_timeout: Duration::from_secs(5),
            repetition: Repetition::once(),
            embedded_limits: Limits::default(),
            bind: None,
            data_port: None,
            iperf3: None,
        }
    }
}

/// What a caller sees while a runner works. Every method has a default that ignores it.
pub trait Observer {
    /// Run `index` (0-based) of at most `max_runs` begins.
    fn run_started(&mut self, _index: u32, _max_runs: u32) {}
    /// A live interval sample from either end.
    fn interval(&mut self, _spec: &TestSpec, _msg: &IntervalMsg) {}
    /// A run ended (its record, summary included).
    fn run_finished(&mut self, _record: &RunRecord) {}
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {}

/// Runs tests against one target (see the module docs).
pub struct Runner {
    cfg: RunnerConfig,
    interrupt: Arc<AtomicBool>,
    embedded: Option<DaemonHandle>,
    /// Connections the embedded daemon was started for.
    embedded_conns: usize,
}

/// Milliseconds since the Unix epoch, now.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A result document for an invocation that failed before it could run anything.
pub fn failed_result(
    spec: Option<TestSpec>,
    server: Option<String>,
    embedded: bool,
    error: ErrorInfo,
) -> RunResult {
    let started = unix_ms();
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: crate::software(),
        title: None,
        command: Vec::new(),
        started_unix_ms: started,
        started_utc: wirebench_model::result::iso8601_utc(started),
        status: match error.kind {
            ErrorKind::Interrupted => RunStatus::Interrupted,
            _ => RunStatus::Failed,
        },
        spec,
        server_address: server,
        embedded_server: embedded,
        runs: Vec::new(),
        aggregate: None,
        warnings: Vec::new(),
        error: Some(error),
        under_load: None,
        testbed: None,
        physical: None,
        profile_cost: None,
    }
}

/// Both ends share one kernel: the embedded server, a loopback address, or equal boot ids.
fn same_host(target: Target, client: Option<&SideReport>, server: Option<&SideReport>) -> bool {
    let boot = |r: Option<&SideReport>| r.and_then(|r| r.env.boot_id.clone());
    match target {
        Target::Embedded(_) => true,
        Target::Remote(a) if a.ip().is_loopback() => true,
        // The agent reaches the target on loopback: they share the agent's kernel.
        Target::ThirdParty { server: a, .. } if a.ip().is_loopback() => true,
        Target::Remote(_) | Target::ThirdParty { .. } => {
            matches!((boot(client), boot(server)), (Some(a), Some(b)) if a == b)
        }
    }
}

/// A warning for each end's profile whose rate is in step with the kernel's tick or with
/// round-millisecond timers (see [`wirebench_profile::tick`]). The tick is this kernel's: it
/// applies to the server's end only when `same_host`.
fn step_warnings(
    tick_hz: Option<u32>,
    client: Option<&SideReport>,
    server: Option<&SideReport>,
    same_host: bool,
) -> Vec<Noted> {
    let freq = |r: Option<&SideReport>| Some(r?.profile.as_ref()?.freq_hz);
    [
        (HostRole::Client, freq(client), tick_hz),
        (
            HostRole::Server,
            freq(server),
            tick_hz.filter(|_| same_host),
        ),
    ]
    .into_iter()
    .filter_map(|(host, freq_hz, tick_hz)| {
        let freq_hz = freq_hz?;
        let (periodic_hz, phases) = wirebench_profile::tick::in_step(freq_hz, tick_hz)?;
        let tick = tick_hz == Some(periodic_hz);
        let w = Warning::ProfileInStep {
            freq_hz,
            periodic_hz,
            phases,
            tick,
        };
        Some(Noted::at(host, w))
    })
    .collect()
}

/// How a run ended: its outcome, made `Aborted` when the server's own report says its part
/// was aborted, and `Invalid` when the figures fail a check no real run can fail.
fn run_status(
    outcome: &Outcome,
    server: Option<&SideReport>,
    summary: Option<&Summary>,
) -> RunStatus {
    if summary.is_some_and(analyze::is_impossible) {
        return RunStatus::Invalid;
    }
    match outcome {
        Outcome::Completed if server.is_some_and(|s| s.aborted().is_some()) => RunStatus::Aborted,
        Outcome::Completed => RunStatus::Completed,
        Outcome::Interrupted => RunStatus::Interrupted,
        Outcome::Aborted(_) => RunStatus::Aborted,
    }
}

impl Runner {
    /// A runner for `cfg`; `interrupt` is polled while tests run (set it from a signal
    /// handler to stop the current test and keep its partial figures).
    pub fn new(cfg: RunnerConfig, interrupt: Arc<AtomicBool>) -> Runner {
        Runner {
            cfg,
            interrupt,
            embedded: None,
            embedded_conns: 0,
        }
    }

    /// True if the tests go to a daemon embedded in this process.
    pub fn is_embedded(&self) -> bool {
        matches!(self.cfg.target, Target::Embedded(_))
    }

    /// Raise RLIMIT_NOFILE for `conns` data connections and, with the server embedded, check
    /// that both ends' sockets fit in this process.
    fn descriptor_budget(&self, conns: u64) -> Result<(), ErrorInfo> {
        let want = conns.saturating_mul(4).saturating_add(1024);
        let got = match wirebench_sys::process::raise_nofile_limit(want) {
            Ok(got) => got,
            Err(e) => {
                tracing::warn!("cannot raise RLIMIT_NOFILE: {e}");
                return Ok(());
            }
        };
        let need = conns.saturating_mul(2).saturating_add(512);
        if self.is_embedded() && got < need {
            return Err(ErrorInfo::new(
                ErrorKind::ResourceLimit,
                format!(
                    "{conns} connections with the server embedded in this process need about \
                     {need} file descriptors (both ends' sockets), but RLIMIT_NOFILE is {got} and \
                     its hard limit cannot be raised here; run `wirebench serve` as its own \
                     process and pass -H, or use fewer flows"
                ),
            ));
        }
        Ok(())
    }

    /// The daemon's address, starting (or restarting, for a larger test) the embedded one.
    fn server(&mut self, conns: usize) -> Result<SocketAddr, NetError> {
        let ip = match self.cfg.target {
            Target::Remote(a) => return Ok(a),
            Target::ThirdParty { agent, .. } => return Ok(agent),
            Target::Embedded(ip) => ip,
        };
        if let Some(h) = &self.embedded {
            if conns <= self.embedded_conns {
                return Ok(h.addr());
            }
        }
        self.embedded = None;
        // The embedded server serves this process only: as many flows as the client may
        // ask for, and the descriptors they need (both ends live in this process).
        let mut scfg = ServerConfig::new(SocketAddr::new(ip, 0));
        scfg.limits = self.cfg.embedded_limits.clone();
        // The embedded daemon is this user's own process: it profiles when asked.
        scfg.allow_profile = true;
        scfg.profile_unauthenticated = true;
        scfg.max_profiles = u32::MAX;
        scfg.max_profile_hz = u32::MAX;
        scfg.max_connections = scfg.max_connections.max(conns + 64);
        scfg.max_conns_per_source = scfg.max_conns_per_source.max(conns + 64);
        let h = Daemon::bind(scfg)?
            .spawn()
            .map_err(NetError::io("starting the embedded server"))?;
        let addr = h.addr();
        self.embedded = Some(h);
        self.embedded_conns = conns;
        Ok(addr)
    }

    /// Run `spec` as the repetition policy says and assemble the result.
    pub fn run(&mut self, spec: &TestSpec, obs: &mut dyn Observer) -> RunResult {
        let embedded = self.is_embedded();
        if matches!(self.cfg.target, Target::ThirdParty { .. }) && self.cfg.iperf3.is_some() {
            let e = ErrorInfo::new(
                ErrorKind::Usage,
                "a third-party test runs between two wirebench daemons, not against iperf3",
            );
            return failed_result(Some(spec.clone()), None, embedded, e);
        }
        if let Err(e) = self.descriptor_budget(u64::from(spec.connection_count())) {
            return failed_result(Some(spec.clone()), None, embedded, e);
        }
        let server = match self.server(spec.connection_count() as usize) {
            Ok(a) => a,
            Err(e) => {
                let mut info = e.to_error_info();
                if embedded {
                    info.kind = ErrorKind::EmbeddedServer;
                }
                return failed_result(Some(spec.clone()), None, embedded, info);
            }
        };
        let mut ccfg = ClientConfig::new(server, spec.clone());
        ccfg.timeouts = self.cfg.timeouts;
        ccfg.connect_timeout = self.cfg.connect_timeout;
        ccfg.credentials = self.cfg.credentials.clone();
        ccfg.bind = self.cfg.bind;
        ccfg.data_port = self.cfg.data_port;
        let rep = self.cfg.repetition;
        // A third-party result names the target, like a direct one.
        let shown = match self.cfg.target {
            Target::ThirdParty { server: target, .. } => target,
            _ => server,
        };
        let mut result = failed_result(
            Some(spec.clone()),
            Some(shown.to_string()),
            embedded,
            ErrorInfo::new(ErrorKind::Internal, String::new()),
        );
        result.status = RunStatus::Completed;
        result.error = None;
        for index in 0..rep.max_runs.max(1) {
            obs.run_started(index, rep.max_runs.max(1));
            tracing::debug!(run = index, "runner: connecting");
            let mut on_interval = |m: &IntervalMsg| obs.interval(spec, m);
            let outcome = match (self.cfg.target, self.cfg.iperf3) {
                (Target::ThirdParty { server, .. }, _) => {
                    crate::third_party::run(&ccfg, server, &self.interrupt, &mut on_interval)
                }
                (_, Some(opts)) => {
                    crate::iperf3_client::run(&ccfg, opts, &self.interrupt, &mut on_interval)
                }
                (_, None) => client::run(&ccfg, &self.interrupt, &mut on_interval),
            };
            match outcome {
                Ok(run) => {
                    tracing::debug!(run = index, "runner: run ended, analysing");
                    let same = same_host(self.cfg.target, run.client.as_ref(), run.server.as_ref());
                    // A run that stopped before either end's window opened measured
                    // nothing: no summary (its warm-up bytes are not a result).
                    let never_opened = run.outcome != Outcome::Completed
                        && [&run.client, &run.server]
                            .into_iter()
                            .flatten()
                            .all(|r| r.window.is_none());
                    if never_opened {
                        result
                            .warnings
                            .push(Noted::run(Warning::EndedBeforeWindow { run: index + 1 }));
                    }
                    // The iperf3 server's figures first: they fill its end of the summary.
                    let iperf3 = run.iperf3.map(|mut s| {
                        let omit = spec.common.warmup_ms > 0;
                        analyze::iperf3::complete(&mut s, run.client.as_ref(), omit);
                        s
                    });
                    let mut summary = run.client.as_ref().filter(|_| !never_opened).map(|c| {
                        analyze::summarize_with_iperf3(
                            spec,
                            c,
                            run.server.as_ref(),
                            iperf3.as_ref(),
                            same,
                        )
                    });
                    if let Some(sum) = summary.as_mut() {
                        let tick_hz = wirebench_profile::tick::kernel_tick_hz();
                        sum.warnings.extend(step_warnings(
                            tick_hz,
                            run.client.as_ref(),
                            run.server.as_ref(),
                            same,
                        ));
                    }
                    if iperf3.is_some() {
                        // The server's own figures are the iperf3 section, not a missing
                        // report (nor, UDP, a missing sender's or receiver's report).
                        if let Some(sum) = summary.as_mut() {
                            let dirs = spec.flow_dirs();
                            sum.warnings.retain(|n| match &n.warning {
                                Warning::NoServerReport => false,
                                Warning::UdpMissingReport { flow, role } => {
                                    let servers = match dirs.get(*flow as usize) {
                                        Some(FlowDir::ClientToServer) => Role::Receiver,
                                        _ => Role::Sender,
                                    };
                                    *role != servers
                                }
                                _ => true,
                            });
                        }
                    }
                    let status = run_status(&run.outcome, run.server.as_ref(), summary.as_ref());
                    if let Outcome::Aborted(reason) = &run.outcome {
                        result.warnings.push(Noted::run(Warning::RunAborted {
                            run: index + 1,
                            reason: reason.clone(),
                        }));
                    }
                    let record = RunRecord {
                        index,
                        status,
                        client: run.client,
                        server: run.server,
                        summary,
                        iperf3,
                    };
                    obs.run_finished(&record);
                    result.runs.push(record);
                    if status != RunStatus::Completed {
                        result.status = status;
                        break;
                    }
                }
                Err(e) => {
                    let info = e.to_error_info();
                    result.status = match info.kind {
                        ErrorKind::Interrupted => RunStatus::Interrupted,
                        _ => RunStatus::Failed,
                    };
                    result.error = Some(info);
                    break;
                }
            }
            if self.interrupt.load(Ordering::Relaxed) {
                result.status = RunStatus::Interrupted;
                break;
            }
            if rep.max_runs > 1 && result.runs.len() as u32 >= rep.min_runs.max(2) {
                let agg = analyze::aggregate(&result.runs, rep.level, rep.target_width_pct);
                let met = agg.target_met;
                result.aggregate = Some(agg);
                if met {
                    break;
                }
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::abort::AbortReason;
    use wirebench_model::side::{HostRole, SideStatus};
    use wirebench_model::warning::Impossibility;

    #[test]
    fn same_host_rules() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let far: SocketAddr = "10.0.0.2:5301".parse().unwrap();
        assert!(same_host(Target::Embedded(lo), None, None));
        assert!(same_host(
            Target::Remote(SocketAddr::new(lo, 1)),
            None,
            None
        ));
        assert!(!same_host(Target::Remote(far), None, None));
    }

    #[test]
    fn failed_result_is_a_valid_document() {
        let r = failed_result(
            None,
            None,
            false,
            ErrorInfo::new(ErrorKind::Usage, "bad -t"),
        );
        assert_eq!(r.status, RunStatus::Failed);
        assert!(r.started_utc.ends_with('Z'), "{}", r.started_utc);
        let i = failed_result(
            None,
            None,
            false,
            ErrorInfo::new(ErrorKind::Interrupted, ""),
        );
        assert_eq!(i.status, RunStatus::Interrupted);
    }

    /// One forward stream flow's report at `host`: `total` bytes over the test, `window` in
    /// a 1 s window.
    fn stream_report(host: HostRole, total: u64, window: u64) -> SideReport {
        use wirebench_model::side::*;
        use wirebench_model::spec::{FlowDir, RecvPath, SendPath};
        let role = host.role(FlowDir::ClientToServer);
        SideReport {
            host,
            status: SideStatus::Completed,
            window: Some(Span {
                start_ns: 0,
                end_ns: 1_000_000_000,
            }),
            data: Some(SideData::Stream(StreamSide {
                flows: vec![FlowSide {
                    flow: 0,
                    dir: FlowDir::ClientToServer,
                    role,
                    total_bytes: total,
                    window_bytes: window,
                    window: Span {
                        start_ns: 0,
                        end_ns: 1_000_000_000,
                    },
                    socket: SocketFacts::default(),
                    error: None,
                    path: match role {
                        Role::Sender => PathUsed::Send(SendPath::Copy),
                        Role::Receiver => PathUsed::Recv(RecvPath::Copy),
                    },
                    path_fallback: None,
                    zerocopy: None,
                    verify: None,
                    recv_wait: None,
                }],
                intervals: Vec::new(),
                worker_waits: Vec::new(),
            })),
            cpu: None,
            env: Environment::default(),
            warnings: Vec::new(),
            engine: None,
            profile: None,
            buffer_offset_bytes: None,
        }
    }

    #[test]
    fn a_run_is_what_both_ends_and_the_checks_say() {
        let spec = TestSpec::stream_default();
        let client = stream_report(HostRole::Client, 1000, 800);
        let server = stream_report(HostRole::Server, 1000, 800);
        let sum = analyze::summarize(&spec, &client, Some(&server), true);
        let ok = run_status(&Outcome::Completed, Some(&server), Some(&sum));
        assert_eq!(ok, RunStatus::Completed);

        // The server says its part was aborted: the run was, whatever the client saw.
        let mut aborted = server.clone();
        aborted.status = SideStatus::Aborted(AbortReason::ServerShutdown);
        let sum = analyze::summarize(&spec, &client, Some(&aborted), true);
        assert_eq!(
            run_status(&Outcome::Completed, Some(&aborted), Some(&sum)),
            RunStatus::Aborted
        );

        // A server claiming 2^64 − 1 bytes read: more than the client wrote, and a rate no
        // host reaches. The run is invalid, not a headline.
        let liar = stream_report(HostRole::Server, u64::MAX, u64::MAX);
        let sum = analyze::summarize(&spec, &client, Some(&liar), true);
        assert!(analyze::is_impossible(&sum), "{:?}", sum.warnings);
        assert_eq!(
            run_status(&Outcome::Completed, Some(&liar), Some(&sum)),
            RunStatus::Invalid
        );
        let whats: Vec<_> = sum
            .warnings
            .iter()
            .filter_map(|n| match &n.warning {
                Warning::Impossible { what } => Some(what.clone()),
                _ => None,
            })
            .collect();
        assert!(whats.iter().any(|w| matches!(
            w,
            Impossibility::ReadMoreThanWritten {
                receiver_total_bytes: u64::MAX,
                sender_total_bytes: 1000,
                ..
            }
        )));
        assert!(whats
            .iter()
            .any(|w| matches!(w, Impossibility::RateAboveCeiling { .. })));
    }
}
