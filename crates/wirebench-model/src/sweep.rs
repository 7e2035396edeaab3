//! The result of a sweep (`wirebench sweep TEST ... FACTOR...`): the grid of factor values,
//! one complete [`RunResult`] per point, and the analysis of the curves.
//!
//! A sweep's document is [`SweepResult`]; its JSON Schema is checked in at
//! `docs/sweep.schema.json` ([`sweep_schema_json`]). Every point is the same RunResult a
//! single test with the point's flags would give (both ends' CPU, TCP_INFO, warnings), so a
//! point means exactly what the single test means.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::curve::dips::DipConfirmation;
use wirebench_stats::curve::hockney::HockneyFit;
use wirebench_stats::curve::load::LoadKnee;
use wirebench_stats::curve::throughput::ThroughputAnalysis;

use crate::result::RunResult;
use crate::spec::WorkloadKind;

/// Version of the [`SweepResult`] layout; bumped on incompatible changes.
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// A parameter a sweep varies, as named by the test flag that sets it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FactorName {
    /// Bytes per send/receive call (stream), bytes per datagram (udp), bytes per request
    /// and per response (rr: a ping-pong of equal messages): `--msg-size`.
    MsgSize,
    /// Bytes per request (rr, crr): `--request-size`.
    RequestSize,
    /// Bytes per response (rr, crr): `--response-size`.
    ResponseSize,
    /// Socket buffer size at both ends, bytes: `--window`.
    Window,
    /// Parallel flows per direction: `--flows`.
    Flows,
    /// How the sending end sends (stream): `--send-path`.
    SendPath,
    /// How the receiving end receives (stream): `--recv-path`.
    RecvPath,
    /// Offered rate: bits/s per flow (stream, udp) or transactions/s per flow (rr open
    /// loop): `--rate`.
    Rate,
    /// TCP congestion control: `--congestion`.
    Congestion,
    /// Transactions in flight per flow (rr): `--burst`.
    Burst,
    /// Stream flows per direction beside the test (rr): `--under-load`.
    UnderLoad,
    /// Busy polling at both ends (rr, rr --udp): `--busy-poll`, `off` or SO_BUSY_POLL µs.
    BusyPoll,
    /// How each receiving flow waits for data (stream): `--recv-wait`.
    RecvWait,
    /// TCP_NOTSENT_LOWAT at both ends, bytes (stream, rr, crr): `--notsent-lowat`.
    NotsentLowat,
    /// Where every data buffer starts at both ends, bytes past a page boundary:
    /// `--buffer-offset`.
    BufferOffset,
}

impl FactorName {
    /// Every factor.
    pub const ALL: [FactorName; 15] = [
        FactorName::MsgSize,
        FactorName::RequestSize,
        FactorName::ResponseSize,
        FactorName::Window,
        FactorName::Flows,
        FactorName::SendPath,
        FactorName::RecvPath,
        FactorName::Rate,
        FactorName::Congestion,
        FactorName::Burst,
        FactorName::UnderLoad,
        FactorName::BusyPoll,
        FactorName::RecvWait,
        FactorName::NotsentLowat,
        FactorName::BufferOffset,
    ];

    /// The long flag that names the factor on the command line (and sets it in a test).
    pub fn flag(self) -> &'static str {
        match self {
            FactorName::MsgSize => "--msg-size",
            FactorName::RequestSize => "--request-size",
            FactorName::ResponseSize => "--response-size",
            FactorName::Window => "--window",
            FactorName::Flows => "--flows",
            FactorName::SendPath => "--send-path",
            FactorName::RecvPath => "--recv-path",
            FactorName::Rate => "--rate",
            FactorName::Congestion => "--congestion",
            FactorName::Burst => "--burst",
            FactorName::UnderLoad => "--under-load",
            FactorName::BusyPoll => "--busy-poll",
            FactorName::RecvWait => "--recv-wait",
            FactorName::NotsentLowat => "--notsent-lowat",
            FactorName::BufferOffset => "--buffer-offset",
        }
    }

    /// True for the factors whose values are names (a path, an algorithm, a strategy, `off`)
    /// rather than numbers: never a curve's x axis.
    pub fn is_named(self) -> bool {
        matches!(
            self,
            FactorName::SendPath
                | FactorName::RecvPath
                | FactorName::Congestion
                | FactorName::BusyPoll
                | FactorName::RecvWait
        )
    }

    /// True for the factors whose values are message sizes (NetPIPE's perturbation applies).
    pub fn is_message_size(self) -> bool {
        matches!(
            self,
            FactorName::MsgSize | FactorName::RequestSize | FactorName::ResponseSize
        )
    }

    /// The tests that take the factor.
    pub fn tests(self) -> &'static [WorkloadKind] {
        use WorkloadKind::*;
        match self {
            FactorName::MsgSize => &[Stream, UdpStream, Rr, UdpRr],
            FactorName::RequestSize | FactorName::ResponseSize => &[Rr, Crr, UdpRr],
            FactorName::Window | FactorName::Flows | FactorName::BufferOffset => {
                &[Stream, Rr, Crr, UdpRr, UdpStream]
            }
            FactorName::SendPath | FactorName::RecvPath | FactorName::RecvWait => &[Stream],
            FactorName::Rate => &[Stream, UdpStream, Rr],
            FactorName::Congestion | FactorName::NotsentLowat => &[Stream, Rr, Crr],
            FactorName::Burst => &[Rr],
            FactorName::UnderLoad | FactorName::BusyPoll => &[Rr, UdpRr],
        }
    }
}

/// One factor value: a number (bytes, flows, bit/s, transactions/s) or a name (a path, a
/// congestion control).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(untagged)]
pub enum FactorValue {
    /// A count: bytes, flows, bits or transactions per second, calls in flight.
    Number(u64),
    /// A name.
    Name(String),
}

impl FactorValue {
    /// The number, if the value is one.
    pub fn number(&self) -> Option<u64> {
        match self {
            FactorValue::Number(n) => Some(*n),
            FactorValue::Name(_) => None,
        }
    }

    /// The value as the test flag takes it.
    pub fn arg(&self) -> String {
        match self {
            FactorValue::Number(n) => n.to_string(),
            FactorValue::Name(s) => s.clone(),
        }
    }
}

/// A factor and the values the sweep measures it at, in measuring order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Factor {
    /// The factor.
    pub name: FactorName,
    /// Its values.
    pub values: Vec<FactorValue>,
    /// The values as the user gave them (`1..4M`, `cubic,bbr`).
    pub given: String,
}

/// One factor's value at a point.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct Setting {
    /// The factor.
    pub factor: FactorName,
    /// Its value at the point.
    pub value: FactorValue,
}

/// Why a point was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PointRole {
    /// A point of the grid.
    Grid,
    /// A second measurement of a grid point that looked like a dip, to tell structure from
    /// noise.
    Remeasure,
}

/// The headline figure of a point, by test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PointFigure {
    /// Stream: payload bits per second read at the receivers (all directions), the mean
    /// over the point's runs.
    Throughput {
        /// Bits per second.
        throughput_bps: f64,
        /// Standard deviation over the runs, if more than one.
        stddev_bps: Option<f64>,
    },
    /// UDP stream: payload bits per second received, and the datagrams lost.
    Udp {
        /// Bits per second received.
        throughput_bps: f64,
        /// Loss in the window, percent of the datagrams sent.
        loss_pct: f64,
    },
    /// RR, CRR, UDP RR: transactions per second and the round trip, client side.
    Transactions {
        /// Completed transactions per second.
        transactions_per_s: f64,
        /// Round-trip p50, nanoseconds.
        rtt_p50_ns: Option<u64>,
        /// Round-trip p99, nanoseconds.
        rtt_p99_ns: Option<u64>,
        /// Round-trip mean, nanoseconds.
        rtt_mean_ns: Option<f64>,
    },
}

/// One measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SweepPoint {
    /// 0-based position in measuring order (grid points first, then re-measurements).
    pub index: u32,
    /// Why it was measured.
    pub role: PointRole,
    /// Every factor's value at the point, in the order of [`SweepResult::factors`].
    pub settings: Vec<Setting>,
    /// The measured window each run asked for, milliseconds (the adaptive length).
    pub duration_ms: u64,
    /// The headline figure, if the point completed.
    pub figure: Option<PointFigure>,
    /// The complete result of the point's test, as the single test gives it.
    pub result: RunResult,
}

/// How a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Under way (or the process ended without finishing it): `--resume` continues.
    Running,
    /// Every point was measured (some may have failed; see each point's status).
    Completed,
    /// Interrupted: the completed points are kept; `--resume` continues.
    Interrupted,
    /// The sweep could not run (bad input); no point was measured.
    Invalid,
}

/// The complete document of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SweepResult {
    /// [`SWEEP_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"sweep"`.
    pub kind: String,
    /// The client software (`wirebench 0.1.0`).
    pub software: String,
    /// The test every point runs.
    pub test: WorkloadKind,
    /// The command line that reproduces the sweep.
    pub command: Vec<String>,
    /// The factors, in grid order (the last one varies fastest).
    pub factors: Vec<Factor>,
    /// Unix milliseconds when the sweep started.
    pub started_unix_ms: u64,
    /// The same as ISO 8601 UTC.
    pub started_utc: String,
    /// Unix milliseconds when it ended.
    pub ended_unix_ms: u64,
    /// How it ended.
    pub status: SweepStatus,
    /// Why it could not run, for [`SweepStatus::Invalid`].
    pub error: Option<String>,
    /// The points, in measuring order.
    pub points: Vec<SweepPoint>,
    /// The analysis of each curve.
    pub analysis: Vec<CurveAnalysis>,
}

/// How close (in % of the peak) a neighbouring point or a repeat must come to confirm a
/// curve's throughput peak ([`CurveAnalysis::peak_confirmed`]).
pub const PEAK_CONFIRM_PCT: f64 = 95.0;

/// The analysis of one curve: the figure along one numeric factor, the other factors held
/// at one combination of values (the curve's variant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CurveAnalysis {
    /// The factor along the curve (the x axis).
    pub along: FactorName,
    /// The other factors' values, which identify the curve.
    pub variant: Vec<Setting>,
    /// Completed grid points on the curve.
    pub points: u32,
    /// Grid points the sweep planned on the curve (the values of the factor along it); 0 in
    /// documents written before this field.
    #[serde(default)]
    pub planned_points: u32,
    /// The curve lacks planned points (an interrupted sweep, or points without a figure):
    /// its analysis describes only the sizes measured, and the human summary withholds the
    /// saturation, knee and n½, which a missing end of the curve would change.
    #[serde(default)]
    pub partial: bool,
    /// Whether another measurement corroborates the throughput peak (`None`: no throughput
    /// analysis, or a document written before this field). The peak is confirmed when a
    /// point next to it on the curve, or a re-measurement at its size, reached at least
    /// [`PEAK_CONFIRM_PCT`] % of it, or when the peak point's own runs (two or more) vary by
    /// at most 100 − [`PEAK_CONFIRM_PCT`] % (sample standard deviation over the mean); a
    /// peak measured once that no neighbour comes near is unconfirmed.
    #[serde(default)]
    pub peak_confirmed: Option<bool>,
    /// Throughput vs message size (stream and UDP `--msg-size`): peak, saturation, knee,
    /// n½, the latency-dominated regime and the dip candidates.
    pub throughput: Option<ThroughputAnalysis>,
    /// The dip candidates after their re-measurement.
    pub dips: Option<DipConfirmation>,
    /// Latency vs message size (rr/crr/udp rr sizes): the Hockney fit `t(n) = t0 + n/r_inf`
    /// of the median round trip (robust to a loaded host's scheduling tail).
    pub hockney: Option<HockneyFit>,
    /// Latency and loss vs offered load (`--rate` on UDP or open-loop RR): the highest
    /// offered rate whose p99 stays within 2× the lowest rate's p99 with no loss.
    pub load: Option<LoadKnee>,
    /// Analyses that could not run on this curve, and why (e.g. too few points).
    pub not_analysed: Vec<NotAnalysed>,
}

/// An analysis that could not run on a curve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NotAnalysed {
    /// Which: `throughput`, `hockney` or `load`.
    pub analysis: String,
    /// Why, as the analysis said it.
    pub reason: String,
}

/// The JSON Schema of [`SweepResult`], pretty-printed with a final newline.
pub fn sweep_schema_json() -> String {
    let schema = schemars::schema_for!(SweepResult);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
