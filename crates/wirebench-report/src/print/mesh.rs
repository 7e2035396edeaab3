//! A mesh in text: a line per test as it ends, and the summary (the receivers' throughput
//! per ordered pair as a matrix, the round-trip medians when rr tests ran, and the tests
//! that did not complete with their reason).

use std::fmt::Write as _;

use wirebench_analysis::mesh::{matrix, Matrix};
use wirebench_model::compare::Figure;
use wirebench_model::mesh::{MeshResult, MeshTest};
use wirebench_model::result::RunStatus;
use wirebench_model::text::escape;

use super::text::error_text;
use super::units::{duration_ns, RateUnit};

/// Host names as shown (not escaped): without the port when every host has the same one.
pub fn short_hosts(m: &MeshResult) -> Vec<String> {
    let port = |h: &str| h.rsplit_once(':').map(|(_, p)| p.to_string());
    let first = m.hosts.first().and_then(|h| port(h));
    let same = m.hosts.iter().all(|h| port(h) == first);
    m.hosts
        .iter()
        .map(|h| match h.rsplit_once(':') {
            Some((a, _)) if same => a.trim_start_matches('[').trim_end_matches(']').to_string(),
            _ => h.clone(),
        })
        .collect()
}

/// The figure of one test as a short text: throughput for stream/udp, p50 RTT for rr/crr.
pub fn test_figure(t: &MeshTest) -> String {
    let v = wirebench_analysis::compare::values(std::slice::from_ref(&t.result));
    let get = |f: Figure| {
        v.iter()
            .find(|(x, _)| *x == f)
            .and_then(|(_, vals)| vals.runs.first().copied())
    };
    if let Some(bps) = get(Figure::Throughput) {
        format!("{} (receiver)", RateUnit::AutoBits.rate(bps))
    } else if let Some(ns) = get(Figure::RttP50) {
        format!("RTT p50 {}", duration_ns(ns))
    } else {
        String::new()
    }
}

/// One test as it ended: `[3/56] 10.0.0.1 → 10.0.0.2  stream -t 5: 9.41 Gbit/s (receiver)`,
/// or its status and reason.
pub fn test_line(m: &MeshResult, t: &MeshTest, done: usize, total: usize) -> String {
    let names = short_hosts(m);
    let name = |h: &str| {
        let i = m.hosts.iter().position(|x| x == h);
        escape(i.and_then(|i| names.get(i)).map_or(h, String::as_str))
    };
    let line = m.test_lines.get(t.test as usize).map_or("", String::as_str);
    let what = match (&t.result.status, &t.result.error) {
        (RunStatus::Completed, _) => test_figure(t),
        (status, Some(e)) => format!("{}: {}", status_word(*status), error_text(e)),
        (status, None) => status_word(*status).to_string(),
    };
    format!(
        "[{done}/{total}] {} → {}  {}: {what}",
        name(&t.client),
        name(&t.server),
        escape(line)
    )
}

fn status_word(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::Aborted => "aborted",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Invalid => "invalid",
    }
}

fn matrix_text(out: &mut String, names: &[String], mx: &Matrix, cell: impl Fn(f64) -> String) {
    let names: Vec<String> = names.iter().map(|n| escape(n)).collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(1)
        .max(9);
    let first = w.max(17);
    let _ = write!(out, "{:>first$}", "client ↓ server →");
    for n in &names {
        let _ = write!(out, " {n:>w$}");
    }
    out.push('\n');
    for (i, row) in mx.cells.iter().enumerate() {
        let _ = write!(out, "{:>first$}", names[i]);
        for (j, c) in row.iter().enumerate() {
            let text = match c {
                Some((v, _)) => cell(*v),
                None if i == j => String::new(),
                None => "-".into(),
            };
            let _ = write!(out, " {text:>w$}");
        }
        out.push('\n');
    }
}

/// The summary after the mesh: matrices and the tests that did not complete.
pub fn summary(m: &MeshResult) -> String {
    let names = short_hosts(m);
    let mut out = String::new();
    let thr = matrix(m, Figure::Throughput);
    if !thr.is_empty() {
        out.push_str("\nReceiver throughput per pair (median over its tests), Gbit/s:\n");
        matrix_text(&mut out, &names, &thr, |v| RateUnit::Gbit.value(v));
    }
    let rtt = matrix(m, Figure::RttP50);
    if !rtt.is_empty() {
        out.push_str("\nRound trip p50 per pair (median over its tests), µs:\n");
        matrix_text(&mut out, &names, &rtt, |v| super::units::number(v / 1e3));
    }
    let failed: Vec<&MeshTest> = m
        .tests
        .iter()
        .filter(|t| t.result.status != RunStatus::Completed)
        .collect();
    let _ = writeln!(
        out,
        "\n{} test(s), {} completed, {} not",
        m.tests.len(),
        m.tests.len() - failed.len(),
        failed.len()
    );
    let name = |h: &str| {
        let i = m.hosts.iter().position(|x| x == h);
        escape(i.and_then(|i| names.get(i)).map_or(h, String::as_str))
    };
    for t in failed {
        let why = t.result.error.as_ref().map(error_text).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} → {}: {} {why}",
            name(&t.client),
            name(&t.server),
            status_word(t.result.status)
        );
    }
    out
}
