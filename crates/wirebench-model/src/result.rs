//! The versioned [`RunResult`] document: everything one client invocation produced, as
//! printed by `--json` and written by `--output`, and the per-workload [`Summary`] the
//! analysis derives from both ends' reports.
//!
//! The JSON Schema of this document is checked in at `docs/results.schema.json` and generated
//! from these types by [`schema_json`]. Any change to these types that changes the schema must
//! bump [`SCHEMA_VERSION`] when it is not backwards compatible for readers.
//!
//! Units are part of every numeric field's name: `_bps` (bits per second of payload),
//! `_bytes`, `_ns`, `_ms`, `_us`, `_pct` (0–100), `_us_per_kb` (CPU µs per 1024 bytes),
//! `_per_s`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::ci::Interval;
use wirebench_stats::cpu::CpuBreakdown;
use wirebench_stats::latency::LatencySummary;
use wirebench_stats::summary::Spread;

use crate::error::ErrorInfo;
use crate::limits::PhysicalContext;
use crate::rr::RrCounts;
use crate::side::{HostRole, RecvWaitStats, Role, SideReport, ZeroCopyStats};
use crate::spec::{CloseMode, FlowDir, RecvPath, SendPath, TestSpec, WorkloadKind};
use crate::warning::{FallbackReason, FlowError, Noted};

pub use crate::udp_summary::{
    UdpCounts, UdpDirectionSummary, UdpFlowSummary, UdpIntervalRow, UdpLossAttribution, UdpSummary,
};

/// Version of the [`RunResult`] document layout.
pub const SCHEMA_VERSION: u32 = 3;

/// The whole result of one client invocation (all iterations).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RunResult {
    /// Layout version of this document ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Tool name and version, e.g. `"wirebench 0.1.0"`.
    pub tool: String,
    /// The user's title for this invocation (`-T`), if any.
    #[serde(default)]
    pub title: Option<String>,
    /// The command line that ran it (`wirebench stream -t 5 ...`), to reproduce it; empty
    /// when not run from a command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Wall-clock start of the invocation, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// The same instant in ISO 8601, UTC (`2026-11-24T11:38:10.123Z`).
    pub started_utc: String,
    /// How the invocation ended as a whole.
    pub status: RunStatus,
    /// The test that was run; `None` if the command failed before building one.
    pub spec: Option<TestSpec>,
    /// The server address as given or resolved.
    pub server_address: Option<String>,
    /// True when the server ran inside the client process (no `-H`).
    pub embedded_server: bool,
    /// One record per iteration, in order; empty only if the invocation failed before
    /// measuring anything.
    pub runs: Vec<RunRecord>,
    /// Confidence intervals over the runs, when more than one iteration was run.
    pub aggregate: Option<Aggregate>,
    /// Problems that concern the invocation as a whole.
    pub warnings: Vec<Noted>,
    /// Why the invocation failed, when `status` is `failed` (or it was interrupted before
    /// measuring).
    pub error: Option<ErrorInfo>,
    /// `rr --under-load N`: this result is the request/response test measured beside N
    /// stream flows; here are the idle measurement, the load and the latency the load
    /// induced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<Box<UnderLoad>>,
    /// The namespace testbed the test ran on (a study's cell), as read back from the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<Box<crate::study::Testbed>>,
    /// Stream tests, when `wirebench limits` cached this machine's limits for this boot:
    /// the throughput against this machine's copy bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<PhysicalContext>,
    /// Profiled tests (`--profile`): the sampling rate and its expected cost, from the
    /// limits `wirebench limits` cached for this boot (the client's machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_cost: Option<crate::profile::ProfileCost>,
}

/// Latency under load (flent's RRUL idea): the same request/response test measured first
/// alone (idle), then beside stream flows on the same path (loaded, the enclosing result).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct UnderLoad {
    /// Stream flows of the load, per direction.
    pub load_flows: u32,
    /// The load's direction.
    pub load_direction: crate::spec::Direction,
    /// When the request/response test started after the load, milliseconds (the load's
    /// ramp-up is excluded).
    pub lead_ms: u64,
    /// The request/response test alone, measured first.
    pub idle: RunResult,
    /// The stream test of the load, over its whole run (it starts `lead_ms` before the
    /// loaded request/response test and ends after it).
    pub load: RunResult,
    /// What the analysis derived: idle and loaded round trips, the induced latency.
    pub summary: Option<UnderLoadSummary>,
}

/// Idle and loaded round trips of an [`UnderLoad`] test, client side, and their difference.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq)]
pub struct UnderLoadSummary {
    /// Idle round-trip median, ns.
    pub idle_rtt_p50_ns: u64,
    /// Idle round-trip 99th percentile, ns.
    pub idle_rtt_p99_ns: u64,
    /// Loaded round-trip median, ns.
    pub loaded_rtt_p50_ns: u64,
    /// Loaded round-trip 99th percentile, ns.
    pub loaded_rtt_p99_ns: u64,
    /// Induced latency at the median: loaded p50 − idle p50, ns (negative when the load
    /// made it faster, e.g. by keeping CPUs awake).
    pub induced_p50_ns: i64,
    /// Induced latency at the 99th percentile: loaded p99 − idle p99, ns.
    pub induced_p99_ns: i64,
    /// Idle transactions per second.
    pub idle_transactions_per_s: f64,
    /// Loaded transactions per second.
    pub loaded_transactions_per_s: f64,
    /// The load's payload rate at its receivers, all directions, bits per second.
    pub load_throughput_bps: f64,
    /// What the induced latency at the median says, against the medians' sampling noise
    /// (absent without latency histograms, and in results from before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub induced_reading: Option<InducedReading>,
    /// What the induced latency at the 99th percentile says, against the two runs'
    /// sampling noise at that percentile (absent without latency histograms, and in results
    /// from before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub induced_p99_reading: Option<InducedReading>,
}

/// What an under-load test's induced latency at one percentile (the median, the 99th) says.
/// `noise_ns` is the 95 % confidence half-width of the difference of the two runs' figures
/// at that percentile from their own samples (order statistics read from each run's latency
/// histogram, combined in quadrature, at least 1 % of the idle figure): the sampling noise of
/// one pair of runs, not their run-to-run variation.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "reading")]
pub enum InducedReading {
    /// The loaded figure is higher by more than the noise: round trips waited behind the
    /// load (in a queue at a bottleneck of the path, or for a CPU the load kept busy).
    Raised {
        /// The noise, ns.
        noise_ns: u64,
    },
    /// Within the noise: the load added no latency that one pair of runs can show; no
    /// queue formed at a bottleneck on the path.
    WithinNoise {
        /// The noise, ns.
        noise_ns: u64,
    },
    /// The loaded figure is lower by more than the noise: no queue formed at a bottleneck
    /// on the path (a path with no slower link, as loopback, has none), and the load kept
    /// the CPUs busy, so the round trips no longer paid for waking a CPU from idle.
    Lowered {
        /// The noise, ns.
        noise_ns: u64,
    },
}

/// How a run (or the whole invocation) ended.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ran to the end.
    Completed,
    /// Stopped by SIGINT/SIGTERM; partial figures are reported.
    Interrupted,
    /// Ended early by a failure during the test; partial figures are reported.
    Aborted,
    /// Could not run (or could not start measuring).
    Failed,
    /// Ran, but its figures fail a reconciliation no real run can fail (a receiver read more
    /// than its sender wrote, a rate above any link): not to be believed. A
    /// `Warning::Impossible` in the run's summary says which.
    Invalid,
}

/// One iteration of the test.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// 0-based iteration number (printed 1-based).
    pub index: u32,
    /// How this iteration ended.
    pub status: RunStatus,
    /// What the client measured (raw).
    pub client: Option<SideReport>,
    /// What the server measured (raw).
    pub server: Option<SideReport>,
    /// Figures derived from both reports.
    pub summary: Option<Summary>,
    /// Against a stock iperf3 server (`--iperf3`): the server's own figures from its results
    /// message, reconciled with wirebench's (`server` is then absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<crate::iperf3::Iperf3Server>,
}

/// Figures derived from both ends' reports of one run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Summary {
    /// The workload's own figures.
    pub workload: WorkloadSummary,
    /// CPU of each end that reported it (client first).
    pub cpu: Vec<EndCpu>,
    /// Distinct congestion control algorithms in use on the data connections (both ends),
    /// in order of first appearance (empty for UDP).
    pub congestion: Vec<String>,
    /// Both ends ran on one kernel: their system-wide CPU figures count the same CPUs.
    pub same_host: bool,
    /// Measurement problems and notes for this run.
    pub warnings: Vec<Noted>,
    /// What limited the run (stream and request/response), with its evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::verdict::Verdict>,
    /// Each end's CPU profile by category with its cost per unit of work (client first),
    /// for the ends that took one (`--profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<crate::profile::EndProfile>,
}

impl Summary {
    /// The stream figures, if this is a stream run.
    pub fn stream(&self) -> Option<&StreamSummary> {
        match &self.workload {
            WorkloadSummary::Stream(s) => Some(s),
            _ => None,
        }
    }

    /// The request/response figures, if this is one.
    pub fn rr(&self) -> Option<&RrSummary> {
        match &self.workload {
            WorkloadSummary::Rr(r) => Some(r.as_ref()),
            _ => None,
        }
    }

    /// The UDP stream figures, if this is one.
    pub fn udp(&self) -> Option<&UdpSummary> {
        match &self.workload {
            WorkloadSummary::UdpStream(u) => Some(u),
            _ => None,
        }
    }
}

/// The workload's own summary (externally tagged in JSON: `{"stream": {...}}`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadSummary {
    /// TCP stream.
    Stream(StreamSummary),
    /// TCP RR, CRR, UDP RR.
    Rr(Box<RrSummary>),
    /// UDP stream.
    UdpStream(UdpSummary),
}

/// A TCP stream run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct StreamSummary {
    /// One entry per direction present (client→server, server→client or both).
    pub directions: Vec<DirectionSummary>,
    /// One entry per flow, both ends joined.
    pub flows: Vec<FlowSummary>,
    /// Interval rows measured at the receiving end of each direction.
    pub intervals: Vec<IntervalRow>,
    /// TCP_INFO per interval read at the sending end of each direction: per sample one row
    /// for all the direction's flows, then one per flow when the end sends on at most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp_intervals: Vec<crate::tcp_series::TcpIntervalRow>,
}

/// An error of one flow at one end.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct EndFlowError {
    /// The end.
    pub host: HostRole,
    /// The error.
    pub error: FlowError,
}

/// A path fallback at one end.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct EndFallback {
    /// The end.
    pub host: HostRole,
    /// Why it used copy.
    pub reason: FallbackReason,
}

/// Totals of one direction of a TCP stream run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct DirectionSummary {
    /// Which way the payload moves.
    pub dir: FlowDir,
    /// Number of flows carrying this direction.
    pub flows: u32,
    /// Bytes read by the receivers inside their windows.
    pub receiver_bytes: u64,
    /// Union of the receivers' windows: latest window end − earliest window start, ns.
    pub receiver_window_ns: u64,
    /// `receiver_bytes × 8 / receiver_window`, bits per second (0 for an empty window).
    pub receiver_throughput_bps: f64,
    /// Bytes accepted by `send()` inside the senders' windows.
    pub sender_bytes: u64,
    /// Union of the senders' windows, ns.
    pub sender_window_ns: u64,
    /// `sender_bytes × 8 / sender_window`, bits per second (0 for an empty window).
    pub sender_throughput_bps: f64,
    /// Bytes written over the whole test (warm-up included) by the senders; `None` when
    /// the senders are a stock iperf3 server that omitted seconds (`-O`): its counts start
    /// after them.
    pub sender_total_bytes: Option<u64>,
    /// Bytes read over the whole test (warm-up included) by the receivers; `None` as for
    /// `sender_total_bytes`.
    pub receiver_total_bytes: Option<u64>,
    /// `sender_total_bytes − receiver_total_bytes`: 0 when every byte sent was read; `None`
    /// when either is.
    pub unaccounted_bytes: Option<i64>,
    /// Segments retransmitted by the senders (TCP_INFO, whole connections).
    pub retransmits: u64,
    /// Of those, the segments the receivers reported back as received twice (D-SACK,
    /// `tcpi_dsack_dups` at each sender's close): retransmissions of segments that had
    /// arrived, so reordering rather than loss; `None` when no sender's kernel reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_segments: Option<u64>,
    /// Spread of the per-flow receiver throughputs, bits per second.
    pub flow_throughput: Option<Spread>,
    /// Jain's fairness index of the per-flow receiver throughputs (1 = perfectly fair).
    pub jain_index: Option<f64>,
    /// The send paths the senders used, distinct, in flow order.
    pub send_paths: Vec<SendPath>,
    /// The receive paths the receivers used, distinct, in flow order.
    pub recv_paths: Vec<RecvPath>,
    /// Flows on which either end could not use the requested path and used copy instead.
    pub path_fallback_flows: u32,
    /// Zero-copy accounting summed over the flows (send fields from the senders, receive
    /// fields from the receivers); `None` when no flow reported any.
    pub zerocopy: Option<ZeroCopyStats>,
    /// How the receivers waited for data, summed over the flows; `None` when no receiver
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_wait: Option<RecvWaitStats>,
    /// With verification: payload bytes checked by the receivers, summed.
    pub verified_bytes: Option<u64>,
    /// With verification: bytes that differed from the expected payload, summed.
    pub verify_errors: Option<u64>,
    /// The end of this direction whose figures come from a stock iperf3 server's results
    /// exchange (`--iperf3`) rather than a wirebench report: that end's role. Its figures
    /// are then iperf3's own counts over its own span (after its omitted seconds, `-O`):
    /// bytes, window and throughput (and, as the sender, retransmits). Absent when both ends are wirebench's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3_end: Option<Role>,
}

/// One TCP stream flow, both ends joined.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct FlowSummary {
    /// Flow id.
    pub flow: u32,
    /// Which way its payload moves.
    pub dir: FlowDir,
    /// The end that sends on this flow.
    pub sender: HostRole,
    /// Bytes read by the receiver inside its window.
    pub receiver_bytes: u64,
    /// Receiver bytes × 8 over the receiver's own window, bits per second.
    pub receiver_throughput_bps: f64,
    /// Bytes accepted by `send()` inside the sender's window.
    pub sender_bytes: u64,
    /// Sender bytes × 8 over the sender's own window, bits per second.
    pub sender_throughput_bps: f64,
    /// Bytes written over the whole test by the sender; `None` when the sender is a stock
    /// iperf3 server that omitted seconds (`-O`).
    pub sender_total_bytes: Option<u64>,
    /// Bytes read over the whole test by the receiver; `None` as for `sender_total_bytes`.
    pub receiver_total_bytes: Option<u64>,
    /// Segments retransmitted by the sender (TCP_INFO `tcpi_total_retrans`).
    pub retransmits: u32,
    /// Segments the receiver reported back as received twice (D-SACK, TCP_INFO
    /// `tcpi_dsack_dups` at the sender's close).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_segments: Option<u32>,
    /// Sender's smoothed RTT at close, microseconds.
    pub rtt_us: Option<u32>,
    /// Sender's congestion window at close, segments.
    pub cwnd_segments: Option<u32>,
    /// Sender's MSS, bytes.
    pub mss_bytes: Option<u32>,
    /// Path MTU, bytes (sender's socket, else the receiver's).
    pub pmtu_bytes: Option<u32>,
    /// Effective SO_SNDBUF at the sending end, bytes.
    pub sndbuf_bytes: Option<u32>,
    /// Effective SO_RCVBUF at the receiving end, bytes.
    pub rcvbuf_bytes: Option<u32>,
    /// The sending socket's own TCP_NOTSENT_LOWAT, read back, bytes; absent when it had
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_lowat_bytes: Option<u32>,
    /// Congestion control on the sender's socket (else the receiver's).
    pub congestion: Option<String>,
    /// Why the flow ended early, at either end.
    pub errors: Vec<EndFlowError>,
    /// The send path the sender used.
    pub send_path: Option<SendPath>,
    /// The receive path the receiver used.
    pub recv_path: Option<RecvPath>,
    /// Why an end did not use the requested path (it used copy).
    pub path_fallback: Vec<EndFallback>,
    /// Zero-copy accounting, both ends joined; `None` when neither reported any.
    pub zerocopy: Option<ZeroCopyStats>,
    /// With verification: payload bytes the receiver checked.
    pub verified_bytes: Option<u64>,
    /// With verification: bytes that differed from the expected payload.
    pub verify_errors: Option<u64>,
    /// The end of this flow whose figures come from a stock iperf3 server's results
    /// exchange (`--iperf3`) rather than a wirebench report: that end's role. Its figures
    /// are then iperf3's own counts over its own span (after its omitted seconds, `-O`):
    /// bytes and throughput (and, as the sender, retransmits). Absent when both ends are wirebench's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3_end: Option<Role>,
}

/// Bytes one end received for one direction in one interval.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// Interval start, seconds after the measuring end's start.
    pub start_s: f64,
    /// Interval end, seconds after the measuring end's start.
    pub end_s: f64,
    /// The end that measured (the receiving end of `dir`).
    pub host: HostRole,
    /// Direction.
    pub dir: FlowDir,
    /// Bytes read in the interval, all flows of `dir`.
    pub bytes: u64,
    /// `bytes × 8 / (end − start)`, bits per second.
    pub throughput_bps: f64,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
}

/// A request/response run (TCP RR, TCP CRR, UDP RR). Transactions and latency are the
/// client's, over its window (end of warm-up → stop instant).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RrSummary {
    /// The workload.
    pub workload: WorkloadKind,
    /// CRR: how the client closed each connection.
    pub close_mode: Option<CloseMode>,
    /// Request size, bytes.
    pub request_size_bytes: u32,
    /// Response size, bytes.
    pub response_size_bytes: u32,
    /// Transactions in flight per flow (closed loop; 1 otherwise).
    pub burst: u32,
    /// Flows.
    pub flows: u32,
    /// The client's window, ns.
    pub window_ns: u64,
    /// Transactions the client completed inside its window, all flows.
    pub transactions: u64,
    /// `transactions / window`, per second, all flows.
    pub transactions_per_s: f64,
    /// Round-trip latency of those transactions (client clock; open loop: from each
    /// request's scheduled send time).
    pub latency: Option<LatencySummary>,
    /// The same round trips as a histogram: log-spaced buckets (8 per doubling, edges in
    /// ns), exact counts that sum to `latency.count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<wirebench_stats::buckets::LatencyBuckets>,
    /// Client window counts summed over flows (errors, connect errors, UDP lost/late/garbage).
    pub client_window: RrCounts,
    /// Client counts over the whole test.
    pub client_total: RrCounts,
    /// Server counts over the whole test (transactions answered, CRR closes seen, garbage).
    pub server_total: Option<RrCounts>,
    /// UDP RR: `lost / (transactions + lost)` in the client's window, percent.
    pub loss_pct: Option<f64>,
    /// Open loop: requested and achieved rates, summed over flows.
    pub open_loop: Option<OpenLoopSummary>,
    /// Per flow.
    pub per_flow: Vec<RrFlowRow>,
    /// Spread of the per-flow transaction rates, per second.
    pub flow_transactions_per_s: Option<Spread>,
    /// Jain's fairness index of the per-flow transaction rates.
    pub jain_index: Option<f64>,
    /// The client's interval rows.
    pub intervals: Vec<RrIntervalRow>,
    /// Busy polling as each end applied it, when the spec asked for it (`rr --busy-poll`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll: Option<BusyPollSummary>,
}

/// Busy polling of a request/response test as both ends applied it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct BusyPollSummary {
    /// SO_BUSY_POLL the spec asked for, microseconds (0: not set; the flows spun anyway).
    pub requested_us: u32,
    /// Each end that reported, client first.
    pub ends: Vec<BusyPollEnd>,
}

/// What one end's data sockets got of busy polling.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct BusyPollEnd {
    /// The end.
    pub host: HostRole,
    /// Flows whose socket was non-blocking and spun on (of the end's flows).
    pub flows_spinning: u32,
    /// Flows the end reported.
    pub flows: u32,
    /// SO_BUSY_POLL read back from the sockets, microseconds: the smallest over the flows
    /// that read one back; `None` when none did.
    pub so_busy_poll_us: Option<u32>,
    /// The first error setting SO_BUSY_POLL, when a flow had one.
    pub so_busy_poll_error: Option<crate::warning::OsError>,
}

/// One request/response interval at one end, all flows.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RrIntervalRow {
    /// Interval start, seconds after the measuring end's start.
    pub start_s: f64,
    /// Interval end, seconds after the measuring end's start.
    pub end_s: f64,
    /// The end that measured.
    pub host: HostRole,
    /// Transactions completed in the interval, all flows.
    pub transactions: u64,
    /// `transactions / (end − start)`, per second.
    pub transactions_per_s: f64,
    /// UDP RR client: transactions lost in the interval.
    pub lost: u64,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Median round trip of the transactions completed in the interval, all flows merged, ns
    /// (2 significant digits; see `RrFlowInterval`); `None` when none completed.
    #[serde(default)]
    pub rtt_p50_ns: Option<u64>,
    /// 99th percentile round trip of the same transactions, ns.
    #[serde(default)]
    pub rtt_p99_ns: Option<u64>,
}

/// Open-loop rates, all flows together.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct OpenLoopSummary {
    /// Scheduled transactions per second (sum of the flows' rates).
    pub requested_per_s: f64,
    /// Completed window transactions per second.
    pub achieved_per_s: f64,
    /// Slots scheduled before the stop that were never sent.
    pub missed_slots: u64,
    /// Most requests outstanding on any flow.
    pub peak_outstanding: u64,
}

/// One request/response flow at the client.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RrFlowRow {
    /// Flow id.
    pub flow: u32,
    /// Window transactions.
    pub transactions: u64,
    /// Window transactions per second.
    pub transactions_per_s: f64,
    /// Median round trip, ns.
    pub rtt_p50_ns: Option<u64>,
    /// 99th percentile round trip, ns.
    pub rtt_p99_ns: Option<u64>,
    /// UDP: window transactions lost.
    pub lost: u64,
    /// Failed transactions (window), connect failures included.
    pub errors: u64,
    /// Why the flow ended early, at either end.
    pub flow_errors: Vec<EndFlowError>,
}

/// CPU figures of one end over its CPU window (end of warm-up to the stop instant).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct EndCpu {
    /// Which end.
    pub host: HostRole,
    /// Length of the CPU window, ns.
    pub window_ns: u64,
    /// CPUs covered by the system-wide figures.
    pub cpus: u32,
    /// Whole machine busy, percent of all CPUs together (100 = every CPU busy).
    pub system_busy_pct: f64,
    /// Whole machine breakdown, percent of all CPUs together.
    pub system: CpuBreakdown,
    /// The busiest CPU's number.
    pub busiest_cpu: u32,
    /// The busiest CPU's breakdown, percent of that CPU.
    pub busiest: CpuBreakdown,
    /// The CPUs this end's data threads could run on (empty when unknown).
    pub cpus_used: Vec<u32>,
    /// wirebench data-path threads at this end, user mode, ns.
    pub threads_user_ns: u64,
    /// wirebench data-path threads at this end, kernel mode, ns.
    pub threads_system_ns: u64,
    /// `(threads_user_ns + threads_system_ns) / window_ns × 100`: percent of one CPU.
    pub threads_util_pct_of_one_cpu: f64,
    /// wirebench data-path threads at this end, summed: time runnable but waiting on a run
    /// queue for a CPU over the window, ns (schedstat; the time from each wake-up to running
    /// included). Absent when not measured (or from a peer before protocol version 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_run_delay_ns: Option<u64>,
    /// Every other process than wirebench's: CPU time over the window, percent of one CPU
    /// (absent when not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_util_pct_of_one_cpu: Option<f64>,
    /// The busiest of those processes, most CPU time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_processes: Vec<crate::side::ProcessCpu>,
    /// The busiest of the CPUs this end's data threads could run on (every CPU when
    /// `cpus_used` is empty): its number. Absent in results recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_used_cpu: Option<u32>,
    /// That CPU's breakdown, percent of that CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_used: Option<CpuBreakdown>,
    /// netperf's service demand from system-wide busy time: CPU µs per KB (1024 bytes)
    /// delivered by the whole test.
    pub service_demand_us_per_kb: Option<f64>,
    /// Service demand of wirebench's own threads: their CPU µs per KB delivered.
    pub threads_service_demand_us_per_kb: Option<f64>,
    /// Request/response: netperf's service demand per transaction, from system-wide busy
    /// time: CPU µs per transaction (the client's window transactions).
    pub service_demand_us_per_tx: Option<f64>,
    /// Request/response: wirebench's own threads' CPU µs per transaction.
    pub threads_service_demand_us_per_tx: Option<f64>,
}

impl EndCpu {
    /// The CPU time the hypervisor took from this end's CPUs over its window
    /// (`system.steal_pct` of window × CPUs, `/proc/stat`'s `steal`), ns.
    pub fn stolen_cpu_ns(&self) -> u64 {
        (self.system.steal_pct / 100.0 * self.window_ns as f64 * f64::from(self.cpus)) as u64
    }
}

/// Confidence intervals over the runs of an invocation.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// Confidence level, percent (95 or 99).
    pub level_pct: u32,
    /// Requested maximum full width of each interval, percent of its mean.
    pub target_width_pct: f64,
    /// Every interval is at most `target_width_pct` wide (false when there is neither a
    /// throughput nor a transactions-per-second interval).
    pub target_met: bool,
    /// Runs in the invocation.
    pub runs: u32,
    /// Total receiver throughput per run (all directions; UDP: receiver rate), bits per
    /// second.
    pub throughput_bps: Option<Interval>,
    /// Request/response: transactions per second per run.
    pub transactions_per_s: Option<Interval>,
    /// Request/response: median round trip per run, ns.
    pub rtt_p50_ns: Option<Interval>,
    /// Client system-wide CPU busy per run, percent of all CPUs.
    pub client_cpu_busy_pct: Option<Interval>,
    /// Server system-wide CPU busy per run, percent of all CPUs.
    pub server_cpu_busy_pct: Option<Interval>,
}

/// The JSON Schema of [`RunResult`], pretty-printed with a trailing newline: the content of
/// `docs/results.schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(RunResult);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// `unix_ms` (milliseconds since the Unix epoch) as ISO 8601 UTC with milliseconds:
/// `2026-11-24T11:38:10.123Z` (days to civil date after Howard Hinnant's algorithm).
pub fn iso8601_utc(unix_ms: u64) -> String {
    let (days, ms_of_day) = (unix_ms / 86_400_000, unix_ms % 86_400_000);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, rest) = (ms_of_day / 3_600_000, ms_of_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    format!(
        "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{:02}.{:03}Z",
        rest / 1000,
        rest % 1000
    )
}

/// Why a JSON document could not be read as a [`RunResult`].
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// Not JSON, or not a `RunResult`.
    #[error("not a wirebench result: {0}")]
    Json(#[from] serde_json::Error),
    /// A `schema_version` this build does not read.
    #[error("schema version {found:?} is not supported (this build reads version {supported})")]
    UnsupportedVersion {
        /// The version found (`None` if missing).
        found: Option<u64>,
        /// The version this build reads.
        supported: u32,
    },
}

impl RunResult {
    /// Parse a JSON [`RunResult`] document, checking its `schema_version` first.
    ///
    /// # Errors
    ///
    /// [`ResultError::Json`] if the text is not JSON or not a `RunResult`;
    /// [`ResultError::UnsupportedVersion`] if its `schema_version` is missing or is not
    /// [`SCHEMA_VERSION`].
    pub fn from_json(text: &str) -> Result<RunResult, ResultError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        let found = value
            .get("schema_version")
            .and_then(serde_json::Value::as_u64);
        if found != Some(u64::from(SCHEMA_VERSION)) {
            return Err(ResultError::UnsupportedVersion {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(serde_json::from_value(value)?)
    }
}
