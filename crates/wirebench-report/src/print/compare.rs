//! A comparison in words: one line per figure with both medians, the change with its
//! interval, and a plain verdict ("B is 7.2 % lower (95 % CI 4.1–10.3 % lower),
//! significant: worse").

use std::fmt::Write;

use wirebench_model::compare::{
    Comparison, Figure, FigureComparison, FigureUnit, Outcome, TestKind,
};

use super::units::{duration_ns, number, RateUnit};
use wirebench_analysis::compare::regressions;

/// A figure's label for people.
pub fn label(f: Figure) -> &'static str {
    match f {
        Figure::Throughput => "throughput",
        Figure::TransactionsPerS => "transactions/s",
        Figure::RttP50 => "latency p50",
        Figure::RttP99 => "latency p99",
        Figure::ServiceDemandClient => "service demand (client)",
        Figure::ServiceDemandServer => "service demand (server)",
        Figure::Loss => "loss",
        Figure::Retransmits => "retransmits",
    }
}

/// A value in its unit.
pub fn value(x: f64, unit: FigureUnit) -> String {
    match unit {
        FigureUnit::Bps => RateUnit::AutoBits.rate(x),
        FigureUnit::PerS => format!("{}/s", number(x)),
        FigureUnit::Ns => duration_ns(x),
        FigureUnit::UsPerKb => format!("{} µs/KB", number(x)),
        FigureUnit::UsPerTx => format!("{} µs/tx", number(x)),
        FigureUnit::Pct => format!("{} %", number(x)),
        FigureUnit::Count => number(x),
    }
}

/// The verdict of one figure in words.
pub fn verdict(f: &FigureComparison, level_pct: u32) -> String {
    let dir = |x: f64| if x >= 0.0 { "higher" } else { "lower" };
    let test = match f.test {
        Some(TestKind::Welch) => format!("Welch's t, {} vs {} runs", f.a_n, f.b_n),
        Some(TestKind::MannWhitney) => {
            format!("Mann-Whitney, {} vs {} interval samples", f.a_n, f.b_n)
        }
        None => String::new(),
    };
    match (f.outcome, f.change_pct, f.ci_low_pct, f.ci_high_pct) {
        (Outcome::Better | Outcome::Worse, Some(c), Some(lo), Some(hi)) => format!(
            "B is {:.1} % {} ({level_pct} % CI {:+.1} to {:+.1} %), significant: {} (p = {}, {test})",
            c.abs(),
            dir(c),
            lo,
            hi,
            if f.outcome == Outcome::Better { "better" } else { "worse" },
            p_text(f.p_value),
        ),
        (Outcome::NoDifference, Some(c), Some(lo), Some(hi)) => format!(
            "no significant difference ({:+.1} %, {level_pct} % CI {:+.1} to {:+.1} %; p = {}, \
             {test}; n too small to detect < {:.1} %)",
            c,
            lo,
            hi,
            p_text(f.p_value),
            f.detectable_pct.unwrap_or(f64::NAN),
        ),
        (Outcome::Identical, ..) => "identical on both sides (nothing to test)".into(),
        _ => format!(
            "not tested: {} vs {} values (a test needs at least 3 runs or 5 interval samples a side)",
            f.a_n, f.b_n
        ),
    }
}

fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.0001 => "< 0.0001".into(),
        Some(p) => format!("{p:.4}"),
        None => "n/a".into(),
    }
}

/// The whole comparison for people.
pub fn comparison(c: &Comparison) -> String {
    let mut s = String::new();
    let side = |name: &str, d: &wirebench_model::compare::CompareSide| {
        format!(
            "{name}: {} ({} result{}, {} run{}{})\n",
            d.selector,
            d.results.len(),
            if d.results.len() == 1 { "" } else { "s" },
            d.runs,
            if d.runs == 1 { "" } else { "s" },
            if d.workloads.is_empty() {
                String::new()
            } else {
                format!(", {}", d.workloads.join(", "))
            }
        )
    };
    s.push_str(&side("A", &c.a));
    s.push_str(&side("B", &c.b));
    if c.a.workloads != c.b.workloads {
        s.push_str(
            "note: A and B ran different workloads; only the figures both have are compared\n",
        );
    }
    if c.figures.is_empty() {
        s.push_str("no figure measured on both sides\n");
    }
    for f in &c.figures {
        let _ = writeln!(
            s,
            "{:<24} A {:>14}  B {:>14}  {}",
            label(f.name),
            value(f.a_median, f.unit),
            value(f.b_median, f.unit),
            verdict(f, c.level_pct)
        );
    }
    s
}

/// `history regress`'s evidence and conclusion.
pub fn regress(c: &Comparison, threshold_pct: f64) -> String {
    let mut s = comparison(c);
    let bad = regressions(c, threshold_pct);
    if bad.is_empty() {
        let _ = writeln!(
            s,
            "no regression: no figure is significantly worse by more than {threshold_pct} %"
        );
    } else {
        let names: Vec<&str> = bad.iter().map(|f| label(f.name)).collect();
        let _ = writeln!(
            s,
            "REGRESSION: {} significantly worse by more than {threshold_pct} %",
            names.join(", ")
        );
    }
    s
}
