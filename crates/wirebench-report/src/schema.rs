//! The versioned [`RunResult`] document: everything one `wirebench stream` invocation
//! produced, as printed by `--json` and written by `--output`.
//!
//! The JSON Schema of this document is checked in at `docs/results.schema.json` and generated
//! from these types by [`schema_json`]. Any change to these types that changes the schema must
//! bump [`SCHEMA_VERSION`] when it is not backwards compatible for readers.
//!
//! Units are part of every numeric field's name: `_bps` (bits per second of TCP payload),
//! `_bytes`, `_ns`, `_ms`, `_us`, `_pct` (0–100), `_us_per_kb` (CPU µs per 1024 bytes).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_proto::measure::{HostRole, SideReport};
use wirebench_proto::spec::{FlowDir, TestSpec};
use wirebench_stats::ci::Interval;
use wirebench_stats::cpu::CpuBreakdown;
use wirebench_stats::summary::Spread;

use crate::error::ReportError;

/// Version of the [`RunResult`] document layout.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole result of one `wirebench stream` invocation (all iterations).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RunResult {
    /// Layout version of this document ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Tool name and version, e.g. `"wirebench 0.1.0"`.
    pub tool: String,
    /// Wall-clock start of the invocation, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
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
    pub warnings: Vec<String>,
    /// Why the invocation failed, when `status` is `failed` (or it was interrupted before
    /// measuring).
    pub error: Option<ErrorInfo>,
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
}

/// A failure, machine-readable.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    /// Category: e.g. `"connect"`, `"refused"`, `"busy"`, `"invalid_spec"`, `"timeout"`,
    /// `"usage"`.
    pub kind: String,
    /// Human-readable explanation.
    pub message: String,
    /// The `TestSpec` field at fault, when one is.
    pub field: Option<String>,
}

/// One iteration of the test.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// 0-based iteration number.
    pub index: u32,
    /// How this iteration ended.
    pub status: RunStatus,
    /// What the client measured (raw).
    pub client: Option<SideReport>,
    /// What the server measured (raw).
    pub server: Option<SideReport>,
    /// Figures derived from both reports (see [`crate::analyze`]).
    pub summary: Option<Summary>,
}

/// Figures derived from both ends' reports of one run. Definitions: [`crate::analyze`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Summary {
    /// One entry per direction present (client→server, server→client or both).
    pub directions: Vec<DirectionSummary>,
    /// One entry per flow, both ends joined.
    pub flows: Vec<FlowSummary>,
    /// Interval rows measured at the receiving end of each direction.
    pub intervals: Vec<IntervalRow>,
    /// CPU of each end that reported it (client first).
    pub cpu: Vec<EndCpu>,
    /// Distinct congestion control algorithms in use on the data connections (both ends),
    /// in order of first appearance.
    pub congestion: Vec<String>,
    /// Both ends ran on one machine: their system-wide CPU figures count the same CPUs.
    pub same_host: bool,
    /// Measurement problems and notes for this run.
    pub warnings: Vec<String>,
}

/// Totals of one direction.
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
    /// Bytes written over the whole test (warm-up included) by the senders.
    pub sender_total_bytes: u64,
    /// Bytes read over the whole test (warm-up included) by the receivers.
    pub receiver_total_bytes: u64,
    /// `sender_total_bytes − receiver_total_bytes`: 0 when every byte sent was read.
    pub unaccounted_bytes: i64,
    /// Segments retransmitted by the senders (TCP_INFO, whole connections).
    pub retransmits: u64,
    /// Spread of the per-flow receiver throughputs, bits per second.
    pub flow_throughput: Option<Spread>,
    /// Jain's fairness index of the per-flow receiver throughputs (1 = perfectly fair).
    pub jain_index: Option<f64>,
}

/// One flow, both ends joined.
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
    /// Bytes written over the whole test by the sender.
    pub sender_total_bytes: u64,
    /// Bytes read over the whole test by the receiver.
    pub receiver_total_bytes: u64,
    /// Segments retransmitted by the sender (TCP_INFO `tcpi_total_retrans`).
    pub retransmits: u32,
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
    /// Congestion control on the sender's socket (else the receiver's).
    pub congestion: Option<String>,
    /// Why the flow ended early, at either end.
    pub error: Option<String>,
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
    /// wirebench data-path threads at this end, user mode, ns.
    pub threads_user_ns: u64,
    /// wirebench data-path threads at this end, kernel mode, ns.
    pub threads_system_ns: u64,
    /// `(threads_user_ns + threads_system_ns) / window_ns × 100`: percent of one CPU.
    pub threads_util_pct_of_one_cpu: f64,
    /// netperf's service demand from system-wide busy time: CPU µs per KB (1024 bytes)
    /// delivered by the whole test.
    pub service_demand_us_per_kb: Option<f64>,
    /// Service demand of wirebench's own threads: their CPU µs per KB delivered.
    pub threads_service_demand_us_per_kb: Option<f64>,
}

/// Confidence intervals over the runs of an invocation.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// Confidence level, percent (95 or 99).
    pub level_pct: u32,
    /// Requested maximum full width of each interval, percent of its mean.
    pub target_width_pct: f64,
    /// Every interval is at most `target_width_pct` wide (false without a throughput
    /// interval).
    pub target_met: bool,
    /// Runs in the invocation.
    pub runs: u32,
    /// Total receiver throughput per run (all directions), bits per second.
    pub throughput_bps: Option<Interval>,
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

impl RunResult {
    /// Parse a JSON [`RunResult`] document, checking its `schema_version` first.
    ///
    /// # Errors
    ///
    /// [`ReportError::Json`] if the text is not JSON or not a `RunResult`;
    /// [`ReportError::UnsupportedVersion`] if its `schema_version` is missing or is not
    /// [`SCHEMA_VERSION`].
    pub fn from_json(text: &str) -> Result<RunResult, ReportError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        let found = value
            .get("schema_version")
            .and_then(serde_json::Value::as_u64);
        if found != Some(u64::from(SCHEMA_VERSION)) {
            return Err(ReportError::UnsupportedVersion {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(serde_json::from_value(value)?)
    }
}
