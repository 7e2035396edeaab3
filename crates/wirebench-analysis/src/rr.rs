//! The request/response analysis (TCP RR, TCP CRR, UDP RR).
//!
//! - Transactions, latency and the window are the **client's**: a transaction counts when its
//!   response has been read in full (CRR: and its connection closed) inside the client's
//!   window; `transactions_per_s = transactions / window`. Latency is the client's HDR
//!   histogram of those transactions, merged over flows.
//! - `server_total` is what the server counted over the whole test. For TCP RR the client's
//!   and the server's totals are equal on a complete run (every request answered and read);
//!   a warning says so when they are not.
//! - UDP RR: `loss_pct = lost / (transactions + lost)` over the client's window.
//! - Open loop: `requested_per_s` is the spec's rate × flows; `achieved_per_s` the window
//!   transactions per second. A flow whose own achieved rate (its window transactions / the
//!   client window) is below 95 % of its requested rate, on a run that was not aborted, gets a
//!   [`Warning::OpenLoopBehind`] with its missed slots and peak outstanding requests.
//! - CPU: service demand per transaction (see [`super::cpu`]).
//! - Busy polling (`rr --busy-poll`): per end, the flows that spun and the SO_BUSY_POLL
//!   their sockets read back ([`BusyPollSummary`]); an end that reports none did not spin.

use wirebench_model::result::{
    BusyPollEnd, BusyPollSummary, EndFlowError, OpenLoopSummary, RrFlowRow, RrIntervalRow,
    RrSummary,
};
use wirebench_model::rr::{BusyPollFlow, RrCounts, RrInterval, RrSide};
use wirebench_model::side::{HostRole, SideReport, SideStatus};
use wirebench_model::spec::{
    BusyPoll, CommonSpec, CrrSpec, RrLoop, RrSpec, UdpRrSpec, WorkloadKind,
};
use wirebench_model::warning::Warning;
use wirebench_stats::summary::{jain_index, spread};

use super::{both_completed, per_s, Warnings};

/// An achieved open-loop rate below this share of the requested one is reported.
pub const OPEN_LOOP_BEHIND_FRACTION: f64 = 0.95;

/// The spec's request/response shape: sizes, burst, open-loop rate and cap.
pub(crate) struct Shape {
    request: u32,
    response: u32,
    burst: u32,
    open: Option<(u64, u32)>,
}

/// What the request/response analysis reads of a request/response workload's own spec
/// ([`RrSpec`], [`CrrSpec`], [`UdpRrSpec`]).
pub(crate) trait RrWorkload {
    /// The workload's tag.
    const KIND: WorkloadKind;
    /// Sizes, burst and open-loop schedule.
    fn shape(&self) -> Shape;
    /// The busy polling asked for (no default: each workload says whether it has any).
    fn busy_poll(&self) -> Option<BusyPoll>;
}

impl Shape {
    /// One transaction in flight at a time, closed loop: CRR and UDP RR.
    fn one_at_a_time(request: u32, response: u32) -> Shape {
        Shape {
            request,
            response,
            burst: 1,
            open: None,
        }
    }
}

impl RrWorkload for RrSpec {
    const KIND: WorkloadKind = WorkloadKind::Rr;
    fn shape(&self) -> Shape {
        let (burst, open) = match self.pacing {
            RrLoop::Closed { burst } => (burst, None),
            RrLoop::Open {
                transactions_per_s,
                max_outstanding,
            } => (1, Some((transactions_per_s, max_outstanding))),
        };
        Shape {
            request: self.request_size_bytes,
            response: self.response_size_bytes,
            burst,
            open,
        }
    }
    fn busy_poll(&self) -> Option<BusyPoll> {
        self.busy_poll
    }
}

impl RrWorkload for CrrSpec {
    const KIND: WorkloadKind = WorkloadKind::Crr;
    fn shape(&self) -> Shape {
        Shape::one_at_a_time(self.request_size_bytes, self.response_size_bytes)
    }
    fn busy_poll(&self) -> Option<BusyPoll> {
        None
    }
}

impl RrWorkload for UdpRrSpec {
    const KIND: WorkloadKind = WorkloadKind::UdpRr;
    fn shape(&self) -> Shape {
        Shape::one_at_a_time(self.request_size_bytes, self.response_size_bytes)
    }
    fn busy_poll(&self) -> Option<BusyPoll> {
        self.busy_poll
    }
}

/// The summary of a run of `common` and `w` whose client reported no request/response
/// figures.
pub(crate) fn empty<W: RrWorkload>(common: &CommonSpec, w: &W) -> RrSummary {
    let s = w.shape();
    RrSummary {
        workload: W::KIND,
        close_mode: None,
        request_size_bytes: s.request,
        response_size_bytes: s.response,
        burst: s.burst,
        flows: common.flows,
        window_ns: 0,
        transactions: 0,
        transactions_per_s: 0.0,
        latency: None,
        latency_histogram: None,
        client_window: RrCounts::default(),
        client_total: RrCounts::default(),
        server_total: None,
        loss_pct: None,
        open_loop: None,
        per_flow: Vec::new(),
        flow_transactions_per_s: None,
        jain_index: None,
        intervals: Vec::new(),
        busy_poll: None,
    }
}

/// How each end busy-polled, when the spec asked for it (`requested`).
fn busy_poll(
    requested: Option<BusyPoll>,
    c: &RrSide,
    s: Option<&RrSide>,
) -> Option<BusyPollSummary> {
    let requested = requested?;
    let end = |host, side: &RrSide| {
        let applied: Vec<&BusyPollFlow> = side
            .flows
            .iter()
            .filter_map(|f| f.busy_poll.as_ref())
            .collect();
        BusyPollEnd {
            host,
            flows_spinning: applied.len() as u32,
            flows: side.flows.len() as u32,
            so_busy_poll_us: applied.iter().filter_map(|a| a.so_busy_poll_us).min(),
            so_busy_poll_error: applied.iter().find_map(|a| a.so_busy_poll_error.clone()),
        }
    };
    let mut ends = vec![end(HostRole::Client, c)];
    ends.extend(s.map(|s| end(HostRole::Server, s)));
    Some(BusyPollSummary {
        requested_us: requested.so_busy_poll_us,
        ends,
    })
}

/// Per-flow rows, their rates, and the flow-failure warnings.
fn flow_rows(
    c: &RrSide,
    s: Option<&RrSide>,
    window_ns: u64,
    warnings: &mut Warnings,
) -> (Vec<RrFlowRow>, Vec<f64>) {
    let mut rows = Vec::new();
    let mut rates = Vec::new();
    for f in &c.flows {
        let tps = per_s(f.window.transactions, window_ns);
        rates.push(tps);
        let server_error = s
            .and_then(|s| s.flows.iter().find(|x| x.flow == f.flow))
            .and_then(|x| x.error.clone());
        let mut flow_errors = Vec::new();
        for (host, e) in [
            (HostRole::Client, f.error.clone()),
            (HostRole::Server, server_error),
        ] {
            if let Some(error) = e {
                warnings.run(Warning::FlowFailed {
                    flow: f.flow,
                    host,
                    error: error.clone(),
                });
                flow_errors.push(EndFlowError { host, error });
            }
        }
        rows.push(RrFlowRow {
            flow: f.flow,
            transactions: f.window.transactions,
            transactions_per_s: tps,
            rtt_p50_ns: f.latency.map(|l| l.p50_ns),
            rtt_p99_ns: f.latency.map(|l| l.p99_ns),
            lost: f.window.lost,
            errors: f.window.errors.saturating_add(f.window.connect_errors),
            flow_errors,
        });
    }
    (rows, rates)
}

/// The open-loop summary, with a warning per flow that did not keep its schedule.
fn open_loop(
    c: &RrSide,
    open: Option<(u64, u32)>,
    window_ns: u64,
    aborted: bool,
    warnings: &mut Warnings,
) -> Option<OpenLoopSummary> {
    let (per_flow_rate, max_outstanding) = open?;
    let ols: Vec<_> = c
        .flows
        .iter()
        .filter_map(|f| Some((f, f.open_loop?)))
        .collect();
    if ols.is_empty() {
        return None;
    }
    let requested = per_flow_rate as f64;
    for (f, ol) in &ols {
        let achieved = per_s(f.window.transactions, window_ns);
        if !aborted && achieved < OPEN_LOOP_BEHIND_FRACTION * requested {
            warnings.run(Warning::OpenLoopBehind {
                flow: f.flow,
                achieved_per_s: achieved,
                requested_per_s: requested,
                missed_slots: ol.missed_slots,
                peak_outstanding: ol.peak_outstanding,
                max_outstanding,
            });
        }
    }
    Some(OpenLoopSummary {
        requested_per_s: requested * ols.len() as f64,
        achieved_per_s: per_s(c.window_sum().transactions, window_ns),
        missed_slots: ols.iter().map(|(_, o)| o.missed_slots).sum(),
        peak_outstanding: ols
            .iter()
            .map(|(_, o)| o.peak_outstanding)
            .max()
            .unwrap_or(0),
    })
}

/// The request/response summary of a test of `common` and `w`, from the client's report
/// (and the server's, if any). Returns `None` (with a warning) when the client has no
/// request/response figures.
pub(crate) fn summarize<W: RrWorkload>(
    (common, w): (&CommonSpec, &W),
    client: &SideReport,
    server: Option<&SideReport>,
    warnings: &mut Warnings,
) -> Option<RrSummary> {
    let Some(c) = client.rr() else {
        warnings.run(Warning::NoRrFigures);
        return None;
    };
    let s = server.and_then(SideReport::rr);
    let window_ns = c.window.len_ns();
    let client_window = c.window_sum();
    let client_total = c.total_sum();
    let server_total = s.map(RrSide::total_sum);
    if let (Some(st), true) = (server_total, both_completed(client, server)) {
        if W::KIND == WorkloadKind::Rr && st.transactions != client_total.transactions {
            warnings.run(Warning::RequestsInFlight {
                server_transactions: st.transactions,
                client_transactions: client_total.transactions,
            });
        }
    }
    let (per_flow, rates) = flow_rows(c, s, window_ns, warnings);
    let attempts = client_window
        .transactions
        .saturating_add(client_window.lost);
    let loss_pct = (W::KIND == WorkloadKind::UdpRr && attempts > 0)
        .then(|| client_window.lost as f64 / attempts as f64 * 100.0);
    let sh = w.shape();
    let aborted = client.status != SideStatus::Completed;
    Some(RrSummary {
        workload: W::KIND,
        close_mode: c.close_mode,
        request_size_bytes: sh.request,
        response_size_bytes: sh.response,
        burst: sh.burst,
        flows: common.flows,
        window_ns,
        transactions: client_window.transactions,
        transactions_per_s: per_s(client_window.transactions, window_ns),
        latency: c.latency,
        latency_histogram: c.latency_histogram.clone(),
        client_window,
        client_total,
        server_total: server_total.or_else(|| server.is_some().then(RrCounts::default)),
        loss_pct,
        open_loop: open_loop(c, sh.open, window_ns, aborted, warnings),
        per_flow,
        flow_transactions_per_s: spread(&rates),
        jain_index: jain_index(&rates),
        intervals: c
            .intervals
            .iter()
            .map(|i| interval_row(HostRole::Client, i))
            .collect(),
        busy_poll: busy_poll(w.busy_poll(), c, s),
    })
}

/// The row of one request/response interval sample measured at `host`, all flows; the
/// round-trip percentiles are the engine's, from the flows' interval histograms merged
/// (percentiles of flows cannot be combined afterwards).
pub fn interval_row(host: HostRole, s: &RrInterval) -> RrIntervalRow {
    let transactions: u64 = s.flows.iter().map(|f| f.transactions).sum();
    RrIntervalRow {
        start_s: s.span.start_ns as f64 / 1e9,
        end_s: s.span.end_ns as f64 / 1e9,
        host,
        transactions,
        transactions_per_s: per_s(transactions, s.span.len_ns()),
        lost: s.flows.iter().map(|f| f.lost).sum(),
        in_warmup: s.in_warmup,
        rtt_p50_ns: s.rtt_p50_ns,
        rtt_p99_ns: s.rtt_p99_ns,
    }
}
