//! Comparing two sets of results figure by figure: is B different from A, and is the
//! difference real?
//!
//! # Values
//!
//! Every run (repetition) that completed with a summary gives one value per figure it has:
//! throughput = Σ of the directions' receiver rates (stream `receiver_throughput_bps`, UDP
//! `receiver_rate_bps`); request/response: `transactions_per_s` and the client's latency
//! p50/p99; service demand: each end's system-wide `service_demand_us_per_kb` (stream, UDP)
//! or `service_demand_us_per_tx` (request/response); loss = UDP window datagrams lost over
//! sent, all directions, percent; retransmits = Σ of the stream directions' `retransmits`.
//! Interval samples (outside the warm-up) give the same throughput, transactions/s and
//! latency figures per interval (stream: the receivers' rows, summed over the directions of
//! one interval).
//!
//! # Tests
//!
//! With at least [`MIN_RUNS`] runs a side, Welch's t test on the run values (runs are
//! independent; intervals within a run are not). With fewer runs and at least
//! [`MIN_INTERVALS`] interval samples a side, the Mann–Whitney U test on the samples: this
//! treats the intervals of one run as independent, which they are not quite (a slow minute
//! makes several slow intervals), so its p-values are optimistic; more runs are the cure.
//! Otherwise the figure is not tested ([`Outcome::TooFew`]). A figure is significant when
//! its p-value is below `1 − level`; it is then better or worse by its sign and
//! [`Figure::higher_is_better`].

use wirebench_model::compare::{
    CompareSide, Comparison, Figure, FigureComparison, FigureUnit, Outcome, TestKind,
    COMPARE_SCHEMA_VERSION,
};
use wirebench_model::result::{RunResult, RunStatus, Summary, WorkloadSummary};
use wirebench_stats::ci::ConfidenceLevel;
use wirebench_stats::hypothesis::{mann_whitney, median, welch};

/// Fewest runs a side for Welch's t test.
pub const MIN_RUNS: usize = 3;
/// Fewest interval samples a side for the Mann–Whitney test.
pub const MIN_INTERVALS: usize = 5;

/// One figure's values on one side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values {
    /// One per run.
    pub runs: Vec<f64>,
    /// One per interval sample (outside the warm-up), all runs.
    pub intervals: Vec<f64>,
    /// The unit, from the first run that had the figure.
    pub unit: Option<FigureUnit>,
}

/// Every figure's values over a set of results, in [`Figure::ALL`]'s order.
pub fn values(results: &[RunResult]) -> Vec<(Figure, Values)> {
    let mut out: Vec<(Figure, Values)> = Figure::ALL
        .iter()
        .map(|&f| (f, Values::default()))
        .collect();
    let summaries = results
        .iter()
        .flat_map(|r| &r.runs)
        .filter(|run| run.status == RunStatus::Completed)
        .filter_map(|run| run.summary.as_ref());
    for s in summaries {
        for (fig, v) in &mut out {
            if let Some((x, unit)) = run_value(s, *fig) {
                if x.is_finite() {
                    v.runs.push(x);
                    v.unit.get_or_insert(unit);
                }
            }
            v.intervals.extend(interval_values(s, *fig));
        }
    }
    out
}

/// A run's value of a figure and its unit.
fn run_value(s: &Summary, fig: Figure) -> Option<(f64, FigureUnit)> {
    let per_tx = matches!(s.workload, WorkloadSummary::Rr(_));
    let demand = |host: wirebench_model::side::HostRole| {
        let c = s.cpu.iter().find(|c| c.host == host)?;
        if per_tx {
            c.service_demand_us_per_tx.map(|d| (d, FigureUnit::UsPerTx))
        } else {
            c.service_demand_us_per_kb.map(|d| (d, FigureUnit::UsPerKb))
        }
    };
    use wirebench_model::side::HostRole;
    match (fig, &s.workload) {
        (Figure::Throughput, WorkloadSummary::Stream(st)) => Some((
            st.directions
                .iter()
                .map(|d| d.receiver_throughput_bps)
                .sum(),
            FigureUnit::Bps,
        )),
        (Figure::Throughput, WorkloadSummary::UdpStream(u)) => Some((
            u.directions.iter().map(|d| d.receiver_rate_bps).sum(),
            FigureUnit::Bps,
        )),
        (Figure::Retransmits, WorkloadSummary::Stream(st)) => Some((
            st.directions.iter().map(|d| d.retransmits as f64).sum(),
            FigureUnit::Count,
        )),
        (Figure::Loss, WorkloadSummary::UdpStream(u)) => {
            let sent: u64 = u.directions.iter().map(|d| d.counts.window_sent).sum();
            let lost: i64 = u.directions.iter().map(|d| d.counts.window_lost).sum();
            (sent > 0).then(|| (lost.max(0) as f64 / sent as f64 * 100.0, FigureUnit::Pct))
        }
        (Figure::TransactionsPerS, WorkloadSummary::Rr(r)) => {
            Some((r.transactions_per_s, FigureUnit::PerS))
        }
        (Figure::RttP50, WorkloadSummary::Rr(r)) => r
            .latency
            .as_ref()
            .map(|l| (l.p50_ns as f64, FigureUnit::Ns)),
        (Figure::RttP99, WorkloadSummary::Rr(r)) => r
            .latency
            .as_ref()
            .map(|l| (l.p99_ns as f64, FigureUnit::Ns)),
        (Figure::ServiceDemandClient, _) => demand(HostRole::Client),
        (Figure::ServiceDemandServer, _) => demand(HostRole::Server),
        _ => None,
    }
}

/// A run's interval samples of a figure (outside the warm-up).
fn interval_values(s: &Summary, fig: Figure) -> Vec<f64> {
    interval_series(s, fig)
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// A run's interval samples of a figure (outside the warm-up) with the end of each
/// interval, seconds since the test's start: what a time series of the comparison draws.
/// Stream throughput sums the directions' receiver rows of one interval.
pub fn interval_series(s: &Summary, fig: Figure) -> Vec<(f64, f64)> {
    match (fig, &s.workload) {
        (Figure::Throughput, WorkloadSummary::Stream(st)) => {
            // Sum the directions' rows of one interval (same start).
            let mut by_start: Vec<(f64, f64, f64)> = Vec::new();
            for row in st.intervals.iter().filter(|r| !r.in_warmup) {
                match by_start.iter_mut().find(|(t, _, _)| *t == row.start_s) {
                    Some((_, _, v)) => *v += row.throughput_bps,
                    None => by_start.push((row.start_s, row.end_s, row.throughput_bps)),
                }
            }
            by_start.into_iter().map(|(_, end, v)| (end, v)).collect()
        }
        (Figure::Throughput, WorkloadSummary::UdpStream(u)) => u
            .intervals
            .iter()
            .filter(|r| !r.row.in_warmup)
            .map(|r| (r.row.end_s, r.row.throughput_bps))
            .collect(),
        (Figure::TransactionsPerS, WorkloadSummary::Rr(r)) => r
            .intervals
            .iter()
            .filter(|i| !i.in_warmup)
            .map(|i| (i.end_s, i.transactions_per_s))
            .collect(),
        (Figure::RttP50 | Figure::RttP99, WorkloadSummary::Rr(r)) => r
            .intervals
            .iter()
            .filter(|i| !i.in_warmup)
            .filter_map(|i| {
                let v = if fig == Figure::RttP50 {
                    i.rtt_p50_ns
                } else {
                    i.rtt_p99_ns
                };
                v.map(|v| (i.end_s, v as f64))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Compare one figure's values; `None` when either side has no value of it at all.
pub fn compare_values(
    fig: Figure,
    a: &Values,
    b: &Values,
    level: ConfidenceLevel,
) -> Option<FigureComparison> {
    let unit = a.unit.or(b.unit)?;
    if a.runs.is_empty() || b.runs.is_empty() {
        return None;
    }
    let lvl = f64::from(level.pct()) / 100.0;
    let (test, outcome) = if a.runs.len() >= MIN_RUNS && b.runs.len() >= MIN_RUNS {
        (TestKind::Welch, welch(&a.runs, &b.runs, lvl))
    } else if a.intervals.len() >= MIN_INTERVALS && b.intervals.len() >= MIN_INTERVALS {
        (
            TestKind::MannWhitney,
            mann_whitney(&a.intervals, &b.intervals, lvl),
        )
    } else {
        (TestKind::Welch, None)
    };
    let (xa, xb) = match test {
        TestKind::Welch => (&a.runs, &b.runs),
        TestKind::MannWhitney => (&a.intervals, &b.intervals),
    };
    let mut fc = FigureComparison {
        name: fig,
        unit,
        higher_is_better: fig.higher_is_better(),
        a_n: xa.len() as u32,
        b_n: xb.len() as u32,
        a_median: median(xa),
        b_median: median(xb),
        change_pct: None,
        ci_low_pct: None,
        ci_high_pct: None,
        test: None,
        p_value: None,
        significant: false,
        detectable_pct: None,
        outcome: Outcome::TooFew,
    };
    let Some(t) = outcome else {
        let enough = xa.len() >= 2 && xb.len() >= 2;
        if enough && xa.iter().chain(xb.iter()).all(|&x| x == xa[0]) {
            fc.outcome = Outcome::Identical;
            fc.change_pct = Some(0.0);
        }
        return Some(fc);
    };
    fc.change_pct = Some(t.change_pct);
    fc.ci_low_pct = Some(t.ci_low_pct);
    fc.ci_high_pct = Some(t.ci_high_pct);
    fc.test = Some(test);
    fc.p_value = Some(t.p_value);
    fc.detectable_pct = Some(t.detectable_pct);
    fc.significant = t.p_value < 1.0 - lvl;
    fc.outcome = match (
        fc.significant,
        (t.change_pct > 0.0) == fig.higher_is_better(),
    ) {
        (false, _) => Outcome::NoDifference,
        (true, true) => Outcome::Better,
        (true, false) => Outcome::Worse,
    };
    Some(fc)
}

/// Compare two sets of results (A the baseline, B the candidate) on every figure both have.
pub fn compare(
    a: &[RunResult],
    b: &[RunResult],
    sides: (CompareSide, CompareSide),
    level: ConfidenceLevel,
) -> Comparison {
    let (va, vb) = (values(a), values(b));
    let figures = va
        .iter()
        .zip(&vb)
        .filter_map(|((fig, x), (_, y))| compare_values(*fig, x, y, level))
        .collect();
    let (mut sa, mut sb) = sides;
    sa.runs = count_runs(&va);
    sb.runs = count_runs(&vb);
    sa.workloads = workloads(a);
    sb.workloads = workloads(b);
    Comparison {
        schema_version: COMPARE_SCHEMA_VERSION,
        level_pct: level.pct(),
        a: sa,
        b: sb,
        figures,
    }
}

/// Runs with a summary: the most values any figure has.
fn count_runs(v: &[(Figure, Values)]) -> u32 {
    v.iter().map(|(_, x)| x.runs.len()).max().unwrap_or(0) as u32
}

/// The distinct workloads of a set of results.
fn workloads(results: &[RunResult]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results {
        if let Some(s) = &r.spec {
            let w = s.kind().as_str().to_string();
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// The figures that regressed: significantly worse by more than `threshold_pct` (the
/// estimated change beyond the threshold in the worse direction).
pub fn regressions(c: &Comparison, threshold_pct: f64) -> Vec<&FigureComparison> {
    c.figures
        .iter()
        .filter(|f| f.outcome == Outcome::Worse)
        .filter(|f| f.change_pct.is_some_and(|x| x.abs() > threshold_pct))
        .collect()
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
