//! Request/response measurements at one end (netperf's TCP_RR, TCP_CRR and UDP_RR). The engine
//! that produces them is `wirebench_engine::rr`; its module documentation defines every
//! counter and window.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::buckets::LatencyBuckets;
use wirebench_stats::latency::LatencySummary;

use crate::side::{Span, TcpInfoReport};
use crate::spec::CloseMode;
use crate::warning::{FlowError, OsError};

/// What this end does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrRole {
    /// Sends requests, measures latency.
    Client,
    /// Answers requests.
    Server,
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
    /// CRR client: the connect failed.
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

/// What an open-loop flow's sender did (counts only; rates are the analysis' work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopCounts {
    /// Slots scheduled inside the window.
    pub slots_in_window: u64,
    /// Requests sent over the whole test.
    pub sent_total: u64,
    /// Slots scheduled before the stop instant (warm-up included) that were never sent (the
    /// cap was reached or the sender fell behind); ≤ 1 when the sender kept up.
    pub missed_slots: u64,
    /// Most requests outstanding at any send.
    pub peak_outstanding: u64,
}

/// What one flow measured at this end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrFlowSide {
    /// Flow id.
    pub flow: u32,
    /// Events inside the window.
    pub window: RrCounts,
    /// Events over the whole run, warm-up and drain included.
    pub total: RrCounts,
    /// Client: latencies of the window transactions; `None` on a server.
    pub latency: Option<LatencySummary>,
    /// Open-loop TCP RR client only.
    pub open_loop: Option<OpenLoopCounts>,
    /// TCP RR: TCP_INFO read before the connection was closed.
    pub tcp_info: Option<TcpInfoReport>,
    /// TCP RR and CRR: the congestion control on the flow's (last) socket.
    pub congestion: Option<String>,
    /// Why the flow ended early, if it did.
    pub error: Option<FlowError>,
    /// This end's address and port of the flow's data socket (`ip:port`, getsockname, read
    /// when the flow starts). CRR (a connection per transaction): of the last connection
    /// whose response the client read in full, or that the server answered (read just after
    /// the response, so a connection the client reset at once may leave the one before);
    /// `None` if there was none.
    #[serde(default)]
    pub local: Option<String>,
    /// The other end's address and port as this end sees it (getpeername). CRR: as `local`.
    #[serde(default)]
    pub peer: Option<String>,
    /// How the flow's data socket was busy-polled, when the spec asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll: Option<BusyPollFlow>,
}

/// What busy polling one flow's data socket got (`rr --busy-poll`): the socket was
/// non-blocking and the flow thread spun on it; SO_BUSY_POLL as the kernel reads it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BusyPollFlow {
    /// SO_BUSY_POLL read back from the socket after setting it, microseconds; `None` when
    /// it was not asked for (0) or could not be set.
    pub so_busy_poll_us: Option<u32>,
    /// Why SO_BUSY_POLL could not be set or read back (e.g. EPERM without CAP_NET_ADMIN).
    pub so_busy_poll_error: Option<OsError>,
}

/// One flow's counts in one interval.
///
/// Client round trips: every transaction the client completed in the interval (warm-up and
/// drain included, unlike the window's [`RrFlowSide::latency`]), measured as the window's
/// are (open loop: from the scheduled send time; CRR: from before the connect), kept in a
/// histogram with 2 significant digits that is emptied at each sample, so a percentile `p`
/// of a round trip `v` satisfies `v ≤ p ≤ v · 1.01`. The round trip and the transaction
/// count are taken together, so `rtt_p50_ns` is `Some` exactly when `transactions > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrFlowInterval {
    /// Flow id.
    pub flow: u32,
    /// Transactions completed in the interval.
    pub transactions: u64,
    /// UDP client: transactions lost in the interval.
    pub lost: u64,
    /// Client: median round trip of the transactions completed in the interval, ns
    /// (nearest rank); `None` on a server or when none completed.
    #[serde(default)]
    pub rtt_p50_ns: Option<u64>,
    /// Client: 99th percentile round trip of the same transactions, ns.
    #[serde(default)]
    pub rtt_p99_ns: Option<u64>,
}

/// One request/response interval sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrInterval {
    /// 0-based index.
    pub index: u32,
    /// The interval.
    pub span: Span,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Per flow, in the order given.
    pub flows: Vec<RrFlowInterval>,
    /// Client: median round trip of every flow's transactions completed in the interval
    /// (the flows' interval histograms merged; see [`RrFlowInterval`]), ns; `None` on a
    /// server or when none completed.
    #[serde(default)]
    pub rtt_p50_ns: Option<u64>,
    /// Client: 99th percentile of the same round trips, ns.
    #[serde(default)]
    pub rtt_p99_ns: Option<u64>,
}

/// What one end measured in a request/response test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrSide {
    /// This end's role.
    pub role: RrRole,
    /// CRR client: the close used for every connection; `None` elsewhere (a CRR server
    /// reports what it saw in `closes_orderly` / `closes_reset`).
    pub close_mode: Option<CloseMode>,
    /// The window: end of warm-up to the stop instant (or the abort instant).
    pub window: Span,
    /// Per flow, in flow-id order.
    pub flows: Vec<RrFlowSide>,
    /// Client: every flow's window round trips merged; `None` on a server.
    pub latency: Option<LatencySummary>,
    /// Client: the same round trips as a histogram of log-spaced buckets (exact counts,
    /// summing to `latency.count`); `None` on a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<LatencyBuckets>,
    /// Interval samples (empty unless the spec asked for intervals).
    pub intervals: Vec<RrInterval>,
}

impl RrSide {
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
