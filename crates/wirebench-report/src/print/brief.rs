//! The shorter human views of a result: the CPU line per end of the default view, and the
//! one-line summary of `-q/--quiet` ([`Verbosity::Quiet`](super::Verbosity)).

use std::fmt::Write as _;

use wirebench_model::result::{EndCpu, RunResult, RunStatus, WorkloadSummary};

use super::units::{self, RateUnit};
use super::{error_text, status_name, text, wrap, HumanOptions};
use crate::label;

/// One end's CPU in a line: the whole machine's busy share, its busiest CPU and netperf's
/// service demand (system-wide CPU per KB moved, or per transaction), e.g.
/// `client CPU: 80.1 % busy of 2 CPUs (busiest CPU 0 83.7 %); service demand 0.518 µs/KB`.
pub(crate) fn cpu_line(out: &mut String, c: &EndCpu) {
    let demand = match (c.service_demand_us_per_tx, c.service_demand_us_per_kb) {
        (Some(tx), _) => format!("{tx:.3} µs/tx"),
        (None, Some(kb)) => format!("{kb:.3} µs/KB"),
        (None, None) => "n/a".to_string(),
    };
    wrap(
        out,
        "",
        "  ",
        &format!(
            "{} CPU: {:.1} % busy of {} CPUs (busiest CPU {} {:.1} %); service demand {demand} \
             system-wide",
            label::host(c.host),
            c.system.busy_pct,
            c.cpus,
            c.busiest_cpu,
            c.busiest.busy_pct,
        ),
    );
}

/// The one-line summary of a result (`-q`): per direction of a stream or UDP test, or per
/// request/response test, the headline figures of its last run that has figures, and the
/// confidence interval over the runs when there were several; an error line when the test
/// failed, a status line when it ended without figures.
pub(crate) fn quiet(r: &RunResult, o: HumanOptions) -> String {
    let mut out = String::new();
    let run = r.runs.iter().rev().find(|run| run.summary.is_some());
    let status = match run.map(|run| run.status) {
        Some(RunStatus::Completed) | None => String::new(),
        Some(s) => format!(" ({})", status_name(s)),
    };
    let over_runs = r.aggregate.as_ref().and_then(|a| {
        let i = a
            .throughput_bps
            .as_ref()
            .or(a.transactions_per_s.as_ref())?;
        let unit = if a.throughput_bps.is_some() {
            RateUnit::AutoBits.rate(i.mean)
        } else {
            format!("{:.1}/s", i.mean)
        };
        Some(format!(
            "; over {} runs: mean {unit} ± {:.1} % ({} % CI)",
            a.runs,
            if i.mean > 0.0 {
                100.0 * i.half_width / i.mean
            } else {
                0.0
            },
            i.level_pct
        ))
    });
    let tail = format!("{}{status}", over_runs.unwrap_or_default());
    match run
        .and_then(|run| run.summary.as_ref())
        .map(|s| &s.workload)
    {
        Some(WorkloadSummary::Stream(st)) => {
            let peak = st
                .directions
                .iter()
                .map(|d| d.receiver_throughput_bps)
                .fold(0.0, f64::max);
            let u = o.rate_unit.fixed(peak);
            for d in &st.directions {
                let _ = writeln!(
                    out,
                    "stream {}: receiver {} {unit}, sender {} {unit}, {} retransmit{}, {} \
                     flow{}{tail}",
                    label::dir(d.dir),
                    u.value(d.receiver_throughput_bps),
                    u.value(d.sender_throughput_bps),
                    d.retransmits,
                    text::plural(d.retransmits),
                    d.flows,
                    text::plural(u64::from(d.flows)),
                    unit = u.label(peak),
                );
            }
        }
        Some(WorkloadSummary::Rr(rr)) => {
            let lat = rr.latency.as_ref().map_or_else(
                || "latency not measured".to_string(),
                |l| {
                    format!(
                        "p50 {} p99 {}",
                        units::duration_ns(l.p50_ns as f64),
                        units::duration_ns(l.p99_ns as f64)
                    )
                },
            );
            let _ = writeln!(
                out,
                "{}: {:.1} transactions/s, {lat}, {} flow{}{tail}",
                super::rr::workload_name(rr.workload),
                rr.transactions_per_s,
                rr.flows,
                text::plural(u64::from(rr.flows)),
            );
        }
        Some(WorkloadSummary::UdpStream(u)) => {
            for d in &u.directions {
                let _ = writeln!(
                    out,
                    "udp {}: receiver {}, sender {}, lost {} of {} ({:.3} %), jitter {}{tail}",
                    label::dir(d.dir),
                    o.rate_unit.rate(d.receiver_rate_bps),
                    o.rate_unit.rate(d.sender_rate_bps),
                    d.counts.window_lost,
                    d.counts.window_sent,
                    d.counts.window_loss_pct,
                    units::duration_ns(d.jitter_max_ns),
                );
            }
        }
        None if r.error.is_none() => {
            let _ = writeln!(out, "{}: no figures", status_name(r.status));
        }
        None => {}
    }
    if let Some(e) = &r.error {
        wrap(&mut out, "error: ", "       ", &error_text(e));
    }
    out
}
