//! wirebench's analysis: pure functions that turn both ends' [`SideReport`]s into the
//! derived figures of a [`Summary`], repeated runs into an [`Aggregate`], a finished result
//! into its verdict ([`verdict`], [`finish`]), and sweeps, studies and comparisons into their
//! findings. These definitions are the tool's contract; the printers (wirebench-report) only
//! format what is computed here. Nothing here does I/O or draws: the daemon links this crate
//! without any plotting code.
//!
//! [`summarize`] collects what every workload shares — both ends' warnings (as [`Noted`]
//! with the end that raised them), an aborted end, the congestion control in use against the
//! one asked for, the CPU figures ([`cpu`]) — and hands the workload's own figures to
//! [`stream`], [`rr`] or [`udp`], whose module docs define them.
//!
//! # Congestion control
//!
//! For the TCP workloads, `congestion` lists the algorithms the data sockets actually ran
//! (getsockopt `TCP_CONGESTION` on each socket, at both ends), in order of first appearance.
//! When the spec asked for one, every end whose sockets run another gets a
//! [`Warning::CongestionMismatch`] naming the flows; when neither end reported any, a
//! [`Warning::CongestionUnreported`].
//!
//! # Aggregate
//!
//! Over the runs that completed and have a summary: throughput = Σ of the directions'
//! receiver rates per run (stream: `receiver_throughput_bps`; UDP: `receiver_rate_bps`);
//! request/response: transactions per second and median round trip per run; client and server
//! CPU = each end's `system_busy_pct` per run; Student-t intervals from
//! [`wirebench_stats::ci::interval`]. `target_met` is true when there is a throughput (or
//! transactions) interval and every available interval's `width_pct` is at most the target.

pub mod addresses;
pub mod compare;
pub mod cpu;
pub mod finish;
pub mod iperf3;
pub mod iperf3_end;
pub mod limits;
pub mod live;
pub mod mesh;
pub mod profile;
pub mod rr;
pub mod sanity;
pub mod stability;
pub mod stream;
pub mod study;
pub mod sweep;
pub mod tcp_series;
pub mod udp;
pub mod under_load;
pub mod verdict;

#[cfg(test)]
extern crate self as wirebench_analysis; // the shared test fixtures name this crate
#[cfg(test)]
mod tests;

use wirebench_model::result::{Aggregate, RunRecord, RunStatus, Summary, WorkloadSummary};
use wirebench_model::side::{HostRole, SideReport, SideStatus};
use wirebench_model::spec::{CommonSpec, FlowDir, TestSpec, WorkloadKind, WorkloadSpec};
use wirebench_model::warning::{Noted, Warning};
use wirebench_stats::ci::{self, ConfidenceLevel, Interval};

/// Both directions, in report order.
pub(crate) const DIRS: [FlowDir; 2] = [FlowDir::ClientToServer, FlowDir::ServerToClient];

/// The end that writes a direction's payload.
pub fn sender_of(d: FlowDir) -> HostRole {
    match d {
        FlowDir::ClientToServer => HostRole::Client,
        FlowDir::ServerToClient => HostRole::Server,
    }
}

/// The end that reads a direction's payload.
pub fn receiver_of(d: FlowDir) -> HostRole {
    match d {
        FlowDir::ClientToServer => HostRole::Server,
        FlowDir::ServerToClient => HostRole::Client,
    }
}

/// `count / (window_ns / 1e9)`, per second; 0 for an empty window.
pub(crate) fn per_s(count: u64, window_ns: u64) -> f64 {
    if window_ns == 0 {
        return 0.0;
    }
    count as f64 / (window_ns as f64 / 1e9)
}

/// `bytes × 8 / (window_ns / 1e9)` in bits per second; `None` for an empty window.
pub(crate) fn rate_bps(bytes: u64, window_ns: u64) -> Option<f64> {
    if window_ns == 0 {
        return None;
    }
    let r = bytes as f64 * 8.0 / (window_ns as f64 / 1e9);
    r.is_finite().then_some(r)
}

/// The warnings of a summary, without duplicates.
#[derive(Debug, Default)]
pub(crate) struct Warnings(pub(crate) Vec<Noted>);

impl Warnings {
    /// A warning about the whole run.
    pub(crate) fn run(&mut self, w: Warning) {
        self.push(Noted::run(w));
    }

    /// A warning from `host`'s report.
    pub(crate) fn at(&mut self, host: HostRole, w: Warning) {
        self.push(Noted::at(host, w));
    }

    fn push(&mut self, n: Noted) {
        if !self.0.contains(&n) {
            self.0.push(n);
        }
    }
}

/// The reports that exist, client first.
pub(crate) fn present<'a>(
    client: &'a SideReport,
    server: Option<&'a SideReport>,
) -> Vec<(HostRole, &'a SideReport)> {
    let mut v = vec![(HostRole::Client, client)];
    if let Some(s) = server {
        v.push((HostRole::Server, s));
    }
    v
}

/// Both reports present and completed.
pub(crate) fn both_completed(client: &SideReport, server: Option<&SideReport>) -> bool {
    client.status == SideStatus::Completed
        && server.is_some_and(|s| s.status == SideStatus::Completed)
}

/// The congestion control each data socket reported, per end: `(host, flow, algorithm)`.
fn sockets_congestion(reports: &[(HostRole, &SideReport)]) -> Vec<(HostRole, u32, String)> {
    let mut out = Vec::new();
    for (host, r) in reports {
        if let Some(s) = r.stream() {
            for f in &s.flows {
                if let Some(cc) = &f.socket.congestion {
                    out.push((*host, f.flow, cc.clone()));
                }
            }
        }
        if let Some(rr) = r.rr() {
            for f in &rr.flows {
                if let Some(cc) = &f.congestion {
                    out.push((*host, f.flow, cc.clone()));
                }
            }
        }
    }
    out
}

/// The congestion control in use (distinct, first appearance first), with the mismatch and
/// unreported warnings (TCP workloads only).
fn congestion(
    spec: &TestSpec,
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Warnings,
) -> Vec<String> {
    if spec.tcp().is_none() {
        return Vec::new();
    }
    let seen = sockets_congestion(reports);
    let mut distinct: Vec<String> = Vec::new();
    for (_, _, cc) in &seen {
        if !distinct.contains(cc) {
            distinct.push(cc.clone());
        }
    }
    if let Some(want) = spec.congestion() {
        for (host, _) in reports {
            for cc in &distinct {
                let flows: Vec<u32> = seen
                    .iter()
                    .filter(|(h, _, c)| h == host && c == cc && c != want)
                    .map(|(_, f, _)| *f)
                    .collect();
                if !flows.is_empty() {
                    warnings.run(Warning::CongestionMismatch {
                        host: *host,
                        requested: want.to_string(),
                        in_use: cc.clone(),
                        flows,
                    });
                }
            }
        }
    }
    if distinct.is_empty() && spec.kind() != WorkloadKind::Crr {
        warnings.run(Warning::CongestionUnreported);
    }
    distinct
}

/// A warning for each end whose rmem_max or wmem_max is below the socket buffer asked for.
fn window_caps(spec: &TestSpec, reports: &[(HostRole, &SideReport)], warnings: &mut Warnings) {
    let Some(w) = spec.common.window_bytes.map(u64::from) else {
        return;
    };
    for (host, r) in reports {
        let (rmem, wmem) = (r.env.rmem_max_bytes, r.env.wmem_max_bytes);
        if rmem.is_some_and(|m| w > m) || wmem.is_some_and(|m| w > m) {
            warnings.run(Warning::WindowCapped {
                host: *host,
                requested_bytes: w,
                rmem_max_bytes: rmem,
                wmem_max_bytes: wmem,
            });
        }
    }
}

/// A request/response workload's summary of a test of `common` and `w` from both `ends`
/// (an empty one when the client has no request/response figures), with no payload
/// delivered and the transactions (per second, count), if measured.
fn rr_summary<W: rr::RrWorkload>(
    (common, w): (&CommonSpec, &W),
    (client, server): (&SideReport, Option<&SideReport>),
    warnings: &mut Warnings,
) -> (WorkloadSummary, (f64, u64), Option<(f64, u64)>) {
    match rr::summarize((common, w), client, server, warnings) {
        Some(r) => {
            let tx = Some((r.transactions_per_s, r.transactions));
            (WorkloadSummary::Rr(Box::new(r)), (0.0, 0), tx)
        }
        None => (
            WorkloadSummary::Rr(Box::new(rr::empty(common, w))),
            (0.0, 0),
            None,
        ),
    }
}

/// Figures derived from both ends' reports of one run. `server` is `None` when the server's
/// report never arrived; `same_host` says both ends share one kernel (embedded server,
/// loopback, equal boot ids).
pub fn summarize(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    same_host: bool,
) -> Summary {
    summarize_with_iperf3(spec, client, server, None, same_host)
}

/// [`summarize`] for a run whose server end may be a stock iperf3 server (`--iperf3`): its
/// figures, from the results exchange (completed by [`iperf3::complete`]), fill that end of
/// the workload summary before the CPU, sanity and verdict analyses read it
/// ([`iperf3_end`]).
pub fn summarize_with_iperf3(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    iperf3_server: Option<&wirebench_model::iperf3::Iperf3Server>,
    same_host: bool,
) -> Summary {
    let reports = present(client, server);
    let mut warnings = Warnings::default();
    if server.is_none() {
        warnings.run(Warning::NoServerReport);
    }
    for (host, r) in &reports {
        for w in &r.warnings {
            warnings.at(*host, w.clone());
        }
        if let SideStatus::Aborted(reason) = &r.status {
            warnings.run(Warning::SideAborted {
                host: *host,
                reason: reason.clone(),
            });
        }
    }
    window_caps(spec, &reports, &mut warnings);
    let common = &spec.common;
    let ends = (client, server);
    let (workload, delivered, transactions) = match &spec.workload {
        WorkloadSpec::Stream(st) => {
            let s = stream::summarize((common, st), &reports, server.is_some(), &mut warnings);
            let d = stream::delivered(&s);
            (WorkloadSummary::Stream(s), d, None)
        }
        WorkloadSpec::UdpStream(u) => {
            let u = udp::summarize((common, u), &reports, &mut warnings);
            let d = udp::delivered(&u);
            (WorkloadSummary::UdpStream(u), d, None)
        }
        WorkloadSpec::Rr(r) => rr_summary((common, r), ends, &mut warnings),
        WorkloadSpec::Crr(r) => rr_summary((common, r), ends, &mut warnings),
        WorkloadSpec::UdpRr(r) => rr_summary((common, r), ends, &mut warnings),
    };
    let mut workload = workload;
    if let Some(i3) = iperf3_server {
        iperf3_end::fill(&mut workload, i3, spec.common.warmup_ms > 0);
    }
    let delivered = match &workload {
        WorkloadSummary::Stream(s) => stream::delivered(s),
        WorkloadSummary::UdpStream(u) => udp::delivered(u),
        WorkloadSummary::Rr(_) => delivered,
    };
    for what in sanity::check(&workload, &reports) {
        warnings.run(Warning::Impossible { what });
    }
    let cpu = cpu::ends(&reports, delivered, transactions, same_host, &mut warnings);
    let congestion = congestion(spec, &reports, &mut warnings);
    let work = match transactions {
        Some((_, n)) => profile::Delivered::Transactions(n),
        None => profile::Delivered::PayloadBytes(delivered.1),
    };
    let profiles = profile::ends(&reports, work);
    let verdict = match &workload {
        WorkloadSummary::Stream(s) => verdict::stream(spec, s, &reports, &cpu, &profiles),
        WorkloadSummary::Rr(r) => verdict::rr(r, &cpu, server.is_some(), &profiles),
        WorkloadSummary::UdpStream(_) => None,
    };
    Summary {
        workload,
        cpu,
        congestion,
        same_host,
        warnings: warnings.0,
        verdict,
        profiles,
    }
}

/// True if the summary failed a check no real run can fail ([`sanity`]).
pub fn is_impossible(s: &Summary) -> bool {
    s.warnings
        .iter()
        .any(|n| matches!(n.warning, Warning::Impossible { .. }))
}

/// A confidence interval that can be written as JSON (every field finite).
fn finite(iv: Option<Interval>) -> Option<Interval> {
    iv.filter(|i| {
        [i.mean, i.stddev, i.half_width, i.low, i.high, i.width_pct]
            .iter()
            .all(|x| x.is_finite())
    })
}

/// Confidence intervals over `runs` at `level`, and whether each is at most
/// `target_width_pct` percent of its mean wide (full width, netperf's `-I` convention).
///
/// Only runs with status `Completed` and a summary count. Intervals need at least two such
/// runs. An interval with a non-finite width (mean 0) counts as not meeting the target and is
/// left out of the result, so the document stays valid JSON. A NaN or negative target is
/// treated as 0.
pub fn aggregate(runs: &[RunRecord], level: ConfidenceLevel, target_width_pct: f64) -> Aggregate {
    let target = if target_width_pct.is_nan() {
        0.0
    } else {
        target_width_pct.clamp(0.0, f64::MAX)
    };
    let (mut tp, mut tps, mut p50) = (Vec::new(), Vec::new(), Vec::new());
    let (mut client_cpu, mut server_cpu) = (Vec::new(), Vec::new());
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let Some(s) = &run.summary else { continue };
        match &s.workload {
            WorkloadSummary::Rr(rr) => {
                tps.push(rr.transactions_per_s);
                if let Some(l) = &rr.latency {
                    p50.push(l.p50_ns as f64);
                }
            }
            WorkloadSummary::UdpStream(u) => {
                tp.push(u.directions.iter().map(|d| d.receiver_rate_bps).sum())
            }
            WorkloadSummary::Stream(st) => tp.push(
                st.directions
                    .iter()
                    .map(|d| d.receiver_throughput_bps)
                    .sum(),
            ),
        }
        for c in &s.cpu {
            match c.host {
                HostRole::Client => client_cpu.push(c.system_busy_pct),
                HostRole::Server => server_cpu.push(c.system_busy_pct),
            }
        }
    }
    let throughput_bps = ci::interval(&tp, level);
    let transactions_per_s = ci::interval(&tps, level);
    let rtt_p50_ns = ci::interval(&p50, level);
    let client_cpu_busy_pct = ci::interval(&client_cpu, level);
    let server_cpu_busy_pct = ci::interval(&server_cpu, level);
    let target_met = (throughput_bps.is_some() || transactions_per_s.is_some())
        && [
            &throughput_bps,
            &transactions_per_s,
            &client_cpu_busy_pct,
            &server_cpu_busy_pct,
        ]
        .into_iter()
        .flatten()
        .all(|i| i.within(target));
    Aggregate {
        level_pct: level.pct(),
        target_width_pct: target,
        target_met,
        runs: u32::try_from(runs.len()).unwrap_or(u32::MAX),
        throughput_bps: finite(throughput_bps),
        transactions_per_s: finite(transactions_per_s),
        rtt_p50_ns: finite(rtt_p50_ns),
        client_cpu_busy_pct: finite(client_cpu_busy_pct),
        server_cpu_busy_pct: finite(server_cpu_busy_pct),
    }
}
