//! The comparison of two sets of results (`wirebench compare`, `history compare`,
//! `history regress`): per figure, the change from A to B with its confidence interval, the
//! test that judged it and the outcome, as data. The printers word it; the JSON document is
//! [`Comparison`] (schema in `docs/compare.schema.json`, [`compare_schema_json`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Layout version of [`Comparison`].
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// Two sets of results compared figure by figure.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Layout version ([`COMPARE_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Confidence level of the intervals, percent (95 or 99); a figure is significant when
    /// its p-value is below `1 − level`.
    pub level_pct: u32,
    /// The baseline.
    pub a: CompareSide,
    /// The candidate.
    pub b: CompareSide,
    /// One entry per figure both sides measured.
    pub figures: Vec<FigureComparison>,
}

/// One side of a comparison: what was selected.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct CompareSide {
    /// What the user named (ids, a tag, a query, files).
    pub selector: String,
    /// The results selected (history ids or file names).
    pub results: Vec<String>,
    /// Measured runs over those results (repetitions count one each).
    pub runs: u32,
    /// The workloads among them, distinct.
    pub workloads: Vec<String>,
}

/// A figure that can be compared.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Receiver throughput, all directions summed, bits per second.
    Throughput,
    /// Transactions per second (request/response).
    TransactionsPerS,
    /// Median round trip, ns.
    RttP50,
    /// 99th percentile round trip, ns.
    RttP99,
    /// The client's service demand (system-wide CPU per unit of work).
    ServiceDemandClient,
    /// The server's service demand.
    ServiceDemandServer,
    /// UDP datagrams lost in the window, percent of those sent.
    Loss,
    /// TCP segments retransmitted by the senders.
    Retransmits,
}

impl Figure {
    /// Every figure, in the order they are reported.
    pub const ALL: [Figure; 8] = [
        Figure::Throughput,
        Figure::TransactionsPerS,
        Figure::RttP50,
        Figure::RttP99,
        Figure::ServiceDemandClient,
        Figure::ServiceDemandServer,
        Figure::Loss,
        Figure::Retransmits,
    ];

    /// Whether a higher value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Figure::Throughput | Figure::TransactionsPerS)
    }

    /// The name used in the JSON document and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Throughput => "throughput",
            Figure::TransactionsPerS => "transactions_per_s",
            Figure::RttP50 => "rtt_p50",
            Figure::RttP99 => "rtt_p99",
            Figure::ServiceDemandClient => "service_demand_client",
            Figure::ServiceDemandServer => "service_demand_server",
            Figure::Loss => "loss",
            Figure::Retransmits => "retransmits",
        }
    }
}

/// A figure's unit.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FigureUnit {
    /// Bits per second.
    Bps,
    /// Per second.
    PerS,
    /// Nanoseconds.
    Ns,
    /// CPU microseconds per KB (1024 bytes).
    UsPerKb,
    /// CPU microseconds per transaction.
    UsPerTx,
    /// Percent.
    Pct,
    /// A count.
    Count,
}

/// The test that judged a figure.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Welch's t test on one value per run.
    Welch,
    /// The Mann–Whitney U test on interval samples (few runs).
    MannWhitney,
}

/// What the comparison of one figure found.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// B is significantly better.
    Better,
    /// B is significantly worse.
    Worse,
    /// No significant difference.
    NoDifference,
    /// Every value on both sides is the same (nothing to test).
    Identical,
    /// Too few values to test (fewer than 2 runs a side and fewer than 5 interval samples).
    TooFew,
}

/// One figure compared.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct FigureComparison {
    /// The figure.
    pub name: Figure,
    /// Its unit.
    pub unit: FigureUnit,
    /// Whether higher is better for it.
    pub higher_is_better: bool,
    /// Values on A's side (runs, or interval samples for Mann–Whitney).
    pub a_n: u32,
    /// Values on B's side.
    pub b_n: u32,
    /// Median of A's values, in `unit`.
    pub a_median: f64,
    /// Median of B's values, in `unit`.
    pub b_median: f64,
    /// Estimated change from A to B, percent of A; `None` when not tested.
    pub change_pct: Option<f64>,
    /// Lower end of the change's interval at `level_pct`, percent.
    pub ci_low_pct: Option<f64>,
    /// Upper end, percent.
    pub ci_high_pct: Option<f64>,
    /// The test used; `None` when not tested.
    pub test: Option<TestKind>,
    /// Two-sided p-value.
    pub p_value: Option<f64>,
    /// `p_value < 1 − level`.
    pub significant: bool,
    /// The smallest change (percent) the test would find with 80 % power here.
    pub detectable_pct: Option<f64>,
    /// The outcome.
    pub outcome: Outcome,
}

/// The JSON Schema of [`Comparison`], pretty-printed with a final newline.
pub fn compare_schema_json() -> String {
    let schema = schemars::schema_for!(Comparison);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
