//! Sweeps for a person and for a spreadsheet: a line per point as it completes, the
//! analysis in words, and CSV with a row per point.

use std::fmt::Write as _;

use wirebench_model::result::RunStatus;
use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::{
    CurveAnalysis, FactorName, FactorValue, PointFigure, PointRole, Setting, SweepPoint,
    SweepResult, SweepStatus, PEAK_CONFIRM_PCT,
};
use wirebench_stats::curve::load::ViolationCause;
use wirebench_stats::curve::Crossing;

use super::units::{self, RateUnit};
use super::{csv_cell, status_name};

/// A factor's value as the user would write it: sizes in K/M where exact, rates in
/// bit/s units (transactions per second for request/response), names as they are.
pub fn value_text(test: WorkloadKind, factor: FactorName, v: &FactorValue) -> String {
    match (factor, v) {
        (_, FactorValue::Name(s)) => wirebench_model::text::escape(s),
        (FactorName::Rate, FactorValue::Number(n)) if test.is_rr() => format!("{n}/s"),
        (FactorName::Rate, FactorValue::Number(n)) => RateUnit::AutoBits.rate(*n as f64),
        (FactorName::Flows | FactorName::Burst | FactorName::UnderLoad, FactorValue::Number(n)) => {
            n.to_string()
        }
        (_, FactorValue::Number(n)) => units::size(*n),
    }
}

/// `--msg-size 4 K, --flows 2`.
pub fn settings_text(test: WorkloadKind, settings: &[Setting]) -> String {
    settings
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.factor.flag(),
                value_text(test, s.factor, &s.value)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figure of a point in words.
pub fn figure_text(f: &PointFigure) -> String {
    let us = |ns: u64| format!("{:.1} µs", ns as f64 / 1000.0);
    match *f {
        PointFigure::Throughput {
            throughput_bps,
            stddev_bps,
        } => {
            let mut t = RateUnit::AutoBits.rate(throughput_bps);
            if let Some(sd) = stddev_bps.filter(|_| throughput_bps > 0.0) {
                let _ = write!(t, " ±{:.1} %", 100.0 * sd / throughput_bps);
            }
            t
        }
        PointFigure::Udp {
            throughput_bps,
            loss_pct,
        } => format!(
            "{} received, {loss_pct:.3} % lost",
            RateUnit::AutoBits.rate(throughput_bps)
        ),
        PointFigure::Transactions {
            transactions_per_s,
            rtt_p50_ns,
            rtt_p99_ns,
            ..
        } => {
            let mut t = format!("{} transactions/s", units::number(transactions_per_s));
            if let (Some(a), Some(b)) = (rtt_p50_ns, rtt_p99_ns) {
                let _ = write!(t, ", RTT p50 {} p99 {}", us(a), us(b));
            }
            t
        }
    }
}

/// The line printed when point `p` (of `total`) completes.
pub fn point_line(p: &SweepPoint, total: usize) -> String {
    let what = match (&p.figure, p.result.status) {
        (Some(f), RunStatus::Completed) => figure_text(f),
        (Some(f), s) => format!("{} ({})", figure_text(f), status_name(s)),
        (None, s) => {
            let why = p
                .result
                .error
                .as_ref()
                .map(|e| wirebench_model::text::escape(&e.message))
                .unwrap_or_default();
            format!("{} {why}", status_name(s))
        }
    };
    let again = if p.role == PointRole::Remeasure {
        " (re-measured)"
    } else {
        ""
    };
    format!(
        "[{:>width$}/{total}] {}{again}: {what} ({:.1} s)",
        p.index + 1,
        settings_text(
            p.result
                .spec
                .as_ref()
                .map_or(WorkloadKind::Stream, |s| s.kind()),
            &p.settings
        ),
        p.duration_ms as f64 / 1000.0,
        width = total.to_string().len()
    )
}

/// One curve's analysis in a sentence or two.
pub fn curve_text(test: WorkloadKind, c: &CurveAnalysis) -> String {
    let mut t = String::new();
    if !c.variant.is_empty() {
        let _ = write!(t, "{}: ", settings_text(test, &c.variant));
    }
    let offered = |x: f64| value_text(test, FactorName::Rate, &FactorValue::Number(x as u64));
    let size = units::bytes_f;
    if c.partial {
        let _ = write!(
            t,
            "partial ({} of {} points measured): ",
            c.points, c.planned_points
        );
    }
    let unconfirmed = if c.peak_confirmed == Some(false) {
        format!(
            " (unconfirmed: one measurement, no neighbour or repeat within {:.0} % of it)",
            100.0 - PEAK_CONFIRM_PCT
        )
    } else {
        String::new()
    };
    if let (Some(a), true) = (&c.throughput, c.partial) {
        let _ = write!(
            t,
            "peak {} at {}{unconfirmed} over {}..{}; saturation, knee and n½ not judged on a \
             partial curve",
            RateUnit::AutoBits.rate(a.peak_bps),
            size(a.peak_size_bytes as f64),
            size(a.min_size_bytes as f64),
            size(a.max_size_bytes as f64)
        );
    } else if let Some(a) = &c.throughput {
        if a.saturated {
            let _ = write!(
                t,
                "saturates at {} from {}",
                RateUnit::AutoBits.rate(a.saturation_bps),
                size(a.knee.size_bytes())
            );
        } else {
            let _ = write!(
                t,
                "still rising at the largest size ({} at {})",
                RateUnit::AutoBits.rate(a.peak_bps),
                size(a.peak_size_bytes as f64)
            );
        }
        match a.n_half {
            Crossing::Between { size_bytes, .. } => {
                let _ = write!(t, "; n½ = {}", size(size_bytes));
            }
            Crossing::AtOrBelowSmallest { smallest_bytes } => {
                let _ = write!(t, "; n½ ≤ {}", size(smallest_bytes as f64));
            }
        }
        let _ = write!(
            t,
            "; peak {}{unconfirmed}",
            RateUnit::AutoBits.rate(a.peak_bps)
        );
        if a.latency_regime.latency_dominated {
            let _ = write!(
                t,
                "; latency-dominated up to {} ({} calls/s)",
                size(a.latency_regime.to_bytes as f64),
                units::number(a.latency_regime.calls_median_per_s)
            );
        }
    }
    if let Some(d) = &c.dips {
        let list: Vec<String> = d
            .confirmed
            .iter()
            .map(|x| {
                format!(
                    "{} B −{:.0} %",
                    x.original.size_bytes, x.remeasured.depth_pct
                )
            })
            .collect();
        let _ = write!(
            t,
            "; {} dip{} confirmed{}{}",
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            if list.is_empty() { "" } else { ": " },
            list.join(", ")
        );
        if !d.unconfirmed.is_empty() {
            let _ = write!(t, " ({} not found again)", d.unconfirmed.len());
        }
    } else if c.throughput.is_some() {
        t.push_str("; no dips");
    }
    if let Some(h) = &c.hockney {
        let _ = write!(
            t,
            "Hockney fit of the median round trip: t0 = {:.1} µs",
            h.t0_ns / 1000.0
        );
        if let Some(r) = h.r_inf_bps {
            let _ = write!(t, ", r∞ = {}", RateUnit::AutoBits.rate(r));
        }
        let _ = write!(t, " (R² {:.3})", h.r_squared);
    }
    if let Some(k) = &c.load {
        match &k.knee {
            Some(p) => {
                let _ = write!(t, "load knee at {} offered", offered(p.offered_per_s));
            }
            None => t.push_str("the lowest offered load already violates"),
        }
        if let Some(v) = &k.first_violation {
            let _ = write!(
                t,
                "; first violation at {} ({})",
                offered(v.point.offered_per_s),
                match v.cause {
                    ViolationCause::Latency => "p99 above twice the lowest rate's",
                    ViolationCause::Loss => "loss",
                    ViolationCause::LatencyAndLoss => "p99 and loss",
                }
            );
        }
    }
    for n in &c.not_analysed {
        let _ = write!(t, "; no {} analysis: {}", n.analysis, n.reason);
    }
    let analysed = c.throughput.is_some() || c.hockney.is_some() || c.load.is_some();
    if !analysed && c.not_analysed.is_empty() {
        let _ = write!(
            t,
            "{} points along {} (no model applies; the points are the curve)",
            c.points,
            c.along.flag()
        );
    }
    t
}

/// The human summary of a sweep: status, the points' table, the analysis.
pub fn summary(s: &SweepResult) -> String {
    let mut t = String::new();
    let grid = s
        .points
        .iter()
        .filter(|p| p.role == PointRole::Grid)
        .count();
    let failed = s.points.iter().filter(|p| p.figure.is_none()).count();
    let _ = writeln!(
        t,
        "sweep of {} over {}: {} grid point{}, {} re-measured, {} without a figure; {}",
        s.test.as_str(),
        s.factors
            .iter()
            .map(|f| format!("{} ({} values)", f.name.flag(), f.values.len()))
            .collect::<Vec<_>>()
            .join(" x "),
        grid,
        if grid == 1 { "" } else { "s" },
        s.points.len() - grid,
        failed,
        match s.status {
            SweepStatus::Running => "running",
            SweepStatus::Completed => "completed",
            SweepStatus::Interrupted => "interrupted (completed points kept)",
            SweepStatus::Invalid => "invalid",
        }
    );
    let planned: usize = s.factors.iter().map(|f| f.values.len()).product();
    if s.status == SweepStatus::Interrupted || s.analysis.iter().any(|c| c.partial) {
        let _ = writeln!(
            t,
            "analysis of a partial sweep ({grid} of {planned} planned grid points measured):"
        );
    }
    for c in &s.analysis {
        let _ = writeln!(t, "  {}", curve_text(s.test, c));
    }
    t
}

/// CSV: a header and a row per point (factor columns, then the figure's).
pub fn csv(s: &SweepResult) -> String {
    let mut t = String::from("index,role,status");
    for f in &s.factors {
        let _ = write!(t, ",{}", f.name.flag().trim_start_matches('-'));
    }
    t.push_str(
        ",duration_ms,throughput_bps,loss_pct,transactions_per_s,rtt_p50_ns,rtt_p99_ns,\
         rtt_mean_ns,error\n",
    );
    for p in &s.points {
        let _ = write!(
            t,
            "{},{},{}",
            p.index,
            match p.role {
                PointRole::Grid => "grid",
                PointRole::Remeasure => "remeasure",
            },
            status_name(p.result.status)
        );
        for s in &p.settings {
            let _ = write!(t, ",{}", csv_cell(&s.value.arg()));
        }
        let o = |v: Option<String>| v.unwrap_or_default();
        let (bps, loss, tps, p50, p99, mean) = match p.figure {
            Some(PointFigure::Throughput { throughput_bps, .. }) => (
                Some(throughput_bps.to_string()),
                None,
                None,
                None,
                None,
                None,
            ),
            Some(PointFigure::Udp {
                throughput_bps,
                loss_pct,
            }) => (
                Some(throughput_bps.to_string()),
                Some(loss_pct.to_string()),
                None,
                None,
                None,
                None,
            ),
            Some(PointFigure::Transactions {
                transactions_per_s,
                rtt_p50_ns,
                rtt_p99_ns,
                rtt_mean_ns,
            }) => (
                None,
                None,
                Some(transactions_per_s.to_string()),
                rtt_p50_ns.map(|v| v.to_string()),
                rtt_p99_ns.map(|v| v.to_string()),
                rtt_mean_ns.map(|v| v.to_string()),
            ),
            None => (None, None, None, None, None, None),
        };
        let err = p
            .result
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        let _ = writeln!(
            t,
            ",{},{},{},{},{},{},{},{}",
            p.duration_ms,
            o(bps),
            o(loss),
            o(tps),
            o(p50),
            o(p99),
            o(mean),
            csv_cell(&err)
        );
    }
    t
}
