//! Request/response measurements (netperf's TCP_RR, TCP_CRR and UDP_RR): the workload and
//! role names, the event counts and the per-end report carried in
//! [`SideReport::rr`](crate::measure::SideReport::rr). The engine that produces them is
//! `wirebench_engine::rr`; its module documentation defines every counter and window.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::latency::LatencySummary;

use crate::measure::TcpInfoReport;

/// Which request/response workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrWorkload {
    /// netperf TCP_RR: many transactions over one connection per flow.
    TcpRr,
    /// netperf TCP_CRR: one connection per transaction.
    TcpCrr,
    /// netperf UDP_RR: one datagram each way per transaction.
    UdpRr,
}

impl std::fmt::Display for RrWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RrWorkload::TcpRr => "TCP RR",
            RrWorkload::TcpCrr => "TCP CRR",
            RrWorkload::UdpRr => "UDP RR",
        })
    }
}

/// What this end does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrRole {
    /// Sends requests, measures latency.
    Client,
    /// Answers requests.
    Server,
}

/// How a CRR client closes each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloseMode {
    /// Shutdown write, wait for the server's EOF, close (FIN both ways; TIME_WAIT on the
    /// client).
    #[default]
    Orderly,
    /// SO_LINGER 0, close: the kernel sends RST and keeps no TIME_WAIT.
    Abortive,
}

/// Event counts of one flow over one span (the window or the whole test). Fields that do not
/// apply to a workload or role stay 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrCounts {
    /// Completed transactions (client: response read in full, CRR: and connection closed;
    /// server: response written, CRR: and the client's close seen).
    pub transactions: u64,
    /// Failed transactions other than connect failures (CRR: any failed step; UDP: send or
    /// receive errors such as ICMP port unreachable; TCP RR: at most the one that ended the
    /// flow).
    pub errors: u64,
    /// CRR client: the connect closure failed.
    pub connect_errors: u64,
    /// UDP client: no matching response within the timeout.
    pub lost: u64,
    /// UDP client: responses that arrived for an earlier, timed-out request.
    pub late: u64,
    /// UDP: datagrams of the wrong size (server and client) or with an unknown sequence
    /// number (client); never answered.
    pub garbage: u64,
    /// CRR server: connections the client closed with FIN (read returned EOF).
    pub closes_orderly: u64,
    /// CRR server: connections the client closed with RST (ECONNRESET).
    pub closes_reset: u64,
}

impl RrCounts {
    /// Add `o` field by field.
    pub fn add(&mut self, o: &RrCounts) {
        self.transactions += o.transactions;
        self.errors += o.errors;
        self.connect_errors += o.connect_errors;
        self.lost += o.lost;
        self.late += o.late;
        self.garbage += o.garbage;
        self.closes_orderly += o.closes_orderly;
        self.closes_reset += o.closes_reset;
    }
}

/// Achieved versus requested rate of an open-loop flow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopReport {
    /// The rate asked for, per flow, transactions per second.
    pub requested_per_s: f64,
    /// Window transactions divided by the window length, per second.
    pub achieved_per_s: f64,
    /// Slots scheduled inside the window.
    pub slots_in_window: u64,
    /// Requests sent over the whole test.
    pub sent_total: u64,
    /// Slots scheduled before the stop instant (warm-up included) that were never sent
    /// (the cap was reached or the sender fell behind); ≤ 1 when the sender kept up.
    pub missed_slots: u64,
    /// The cap on outstanding requests.
    pub max_outstanding: u32,
    /// Most requests outstanding at any send.
    pub peak_outstanding: u64,
}

/// What one flow measured at this end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrFlowSide {
    /// Flow id.
    pub flow: u32,
    /// Events inside the window ([`RrOutput::window_start_ns`], [`RrOutput::window_end_ns`]).
    pub window: RrCounts,
    /// Events over the whole run, warm-up and drain included.
    pub total: RrCounts,
    /// Client: latencies of the window transactions; `None` on a server.
    pub latency: Option<LatencySummary>,
    /// Open-loop TCP RR client only.
    pub open_loop: Option<OpenLoopReport>,
    /// TCP RR only: TCP_INFO read before the connection was closed.
    pub tcp_info: Option<TcpInfoReport>,
    /// Why the flow ended early, if it did.
    pub error: Option<String>,
}

/// One flow's counts in one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrFlowInterval {
    /// Flow id.
    pub flow: u32,
    /// Transactions completed in the interval.
    pub transactions: u64,
    /// UDP client: transactions lost in the interval.
    pub lost: u64,
}

/// One interval sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrInterval {
    /// 0-based index.
    pub index: u32,
    /// Interval start, ns after this end's start.
    pub start_ns: u64,
    /// Interval end, ns after this end's start.
    pub end_ns: u64,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Per flow, in the order given.
    pub flows: Vec<RrFlowInterval>,
}

/// What one end measured in a request/response test: the part of its
/// [`SideReport`](crate::measure::SideReport) specific to these workloads (CPU, environment
/// and warnings are in the side report itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrReport {
    /// The workload.
    pub workload: RrWorkload,
    /// This end's role.
    pub role: RrRole,
    /// CRR client: the close used for every connection; `None` elsewhere (a CRR server
    /// reports what it saw in `closes_orderly` / `closes_reset`).
    pub close_mode: Option<CloseMode>,
    /// Request size, bytes.
    pub request_size_bytes: u32,
    /// Response size, bytes.
    pub response_size_bytes: u32,
    /// TCP RR closed loop: transactions in flight per flow.
    pub burst: u32,
    /// Window start (end of warm-up), ns after this end's start.
    pub window_start_ns: u64,
    /// Window end (stop instant, or the abort instant), ns after this end's start.
    pub window_end_ns: u64,
    /// Per flow, in flow-id order.
    pub flows: Vec<RrFlowSide>,
    /// Client: every flow's window round trips merged; `None` on a server.
    pub latency: Option<LatencySummary>,
    /// Interval samples (empty unless the spec asked for intervals).
    pub intervals: Vec<RrInterval>,
}

impl RrReport {
    /// Sum of every flow's window counts.
    pub fn window_sum(&self) -> RrCounts {
        let mut c = RrCounts::default();
        self.flows.iter().for_each(|f| c.add(&f.window));
        c
    }

    /// Sum of every flow's total counts.
    pub fn total_sum(&self) -> RrCounts {
        let mut c = RrCounts::default();
        self.flows.iter().for_each(|f| c.add(&f.total));
        c
    }
}
