//! Pure measurement math for wirebench. No I/O, no clocks: every function takes numbers
//! (or the text of a `/proc` file) and returns numbers.
//!
//! - [`cpu`]: parse `/proc/stat`, turn two snapshots into utilization per CPU and in total.
//! - [`demand`]: service demand (CPU microseconds per KB, per transaction), netperf's definition.
//! - [`buckets`]: a latency histogram regrouped into log-spaced buckets for results and figures.
//! - [`ci`]: Student-t confidence intervals for repeated runs.
//! - [`hypothesis`]: two-sample tests (Welch's t, Mann–Whitney U) and intervals for the
//!   relative change between two sets of results.
//! - [`latency`]: latency histograms (HdrHistogram, ns) and percentile summaries.
//! - [`summary`]: min/median/max and Jain's fairness index.
//! - [`sweep`]: the points of a message-size or load sweep (geometric, explicit, NetPIPE
//!   perturbation).
//! - [`curve`]: analyses of sweep curves: throughput vs size (saturation, knee, n½,
//!   latency-dominated regime, dips and their confirmation), the Hockney latency fit, the
//!   knee of latency under offered load.

pub mod buckets;
pub mod ci;
pub mod cpu;
pub mod curve;
pub mod demand;
pub mod hypothesis;
pub mod latency;
pub mod summary;
pub mod sweep;
