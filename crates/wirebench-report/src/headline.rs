//! The headline figures a report page opens with: the test's own figure (throughput per
//! direction, or transactions per second and the round trip), retransmits, the senders'
//! round trip, and the CPU at both ends; each says where it was measured and over which
//! window. Every value is a figure of the result's summary, formatted, never recomputed.

use wirebench_model::result::{
    DirectionSummary, EndCpu, RrSummary, RunResult, StreamSummary, Summary, UdpSummary,
    WorkloadSummary,
};

use wirebench_plot::html::Stat;
use wirebench_plot::units::{format_bits_per_s, format_ns};

use crate::figures::dir_name;
use crate::label;

fn stat(label: impl Into<String>, value: impl Into<String>, note: impl Into<String>) -> Stat {
    Stat {
        label: label.into(),
        value: value.into(),
        note: note.into(),
    }
}

fn window(ns: u64) -> String {
    format!("{:.3} s window", ns as f64 / 1e9)
}

fn stream_stats(s: &StreamSummary, out: &mut Vec<Stat>) {
    for d in &s.directions {
        out.push(stat(
            format!("throughput {}", dir_name(d.dir)),
            format_bits_per_s(d.receiver_throughput_bps),
            format!(
                "payload read by the receiver{}, {}",
                flows_note(d),
                window(d.receiver_window_ns)
            ),
        ));
    }
    for d in &s.directions {
        out.push(stat(
            format!("retransmits {}", dir_name(d.dir)),
            format!("{} segments", d.retransmits),
            match d.dsack_segments {
                Some(n) => format!("sender's TCP_INFO, whole test; {n} of them received twice"),
                None => "sender's TCP_INFO, whole test".to_string(),
            },
        ));
    }
    for d in &s.directions {
        let mut rtts: Vec<u32> = s
            .flows
            .iter()
            .filter(|f| f.dir == d.dir)
            .filter_map(|f| f.rtt_us)
            .collect();
        if rtts.is_empty() {
            continue;
        }
        rtts.sort_unstable();
        let median = rtts[rtts.len() / 2];
        out.push(stat(
            format!("RTT {}", dir_name(d.dir)),
            format!("{median} µs"),
            if rtts.len() == 1 {
                "sender's smoothed RTT at close (TCP_INFO)".to_string()
            } else {
                format!(
                    "median of {} flows' smoothed RTT at close (TCP_INFO)",
                    rtts.len()
                )
            },
        ));
    }
}

fn flows_note(d: &DirectionSummary) -> String {
    if d.flows == 1 {
        String::new()
    } else {
        format!("s, {} flows", d.flows)
    }
}

fn rr_stats(s: &RrSummary, out: &mut Vec<Stat>) {
    out.push(stat(
        "transactions/s",
        format!("{:.0}", s.transactions_per_s),
        format!(
            "client, {} transactions over all {} flow{}, {}",
            s.transactions,
            s.flows,
            if s.flows == 1 { "" } else { "s" },
            window(s.window_ns)
        ),
    ));
    if let Some(l) = &s.latency {
        out.push(stat(
            "round trip p50 / p99",
            format!(
                "{} / {}",
                format_ns(l.p50_ns as f64),
                format_ns(l.p99_ns as f64)
            ),
            "client clock, the window's transactions",
        ));
    }
    if let Some(loss) = s.loss_pct {
        out.push(stat(
            "lost",
            format!("{loss:.3} %"),
            "UDP requests or responses lost, client window",
        ));
    }
}

fn udp_stats(u: &UdpSummary, out: &mut Vec<Stat>) {
    for d in &u.directions {
        out.push(stat(
            format!("received {}", dir_name(d.dir)),
            format_bits_per_s(d.receiver_rate_bps),
            format!(
                "payload of the distinct datagrams received, over the sender's {}",
                window(d.sender_window_ns)
            ),
        ));
        out.push(stat(
            format!("lost {}", dir_name(d.dir)),
            format!("{:.3} %", d.counts.window_loss_pct),
            format!(
                "{} of {} datagrams sent in the window",
                d.counts.window_lost, d.counts.window_sent
            ),
        ));
    }
}

fn cpu_stat(c: &EndCpu) -> Stat {
    stat(
        format!("{} CPU", label::host(c.host)),
        format!("{:.1} % busy", c.system_busy_pct),
        format!(
            "all {} CPUs, /proc/stat over {}; busiest CPU {} {:.0} %",
            c.cpus,
            window(c.window_ns),
            c.busiest_cpu,
            c.busiest.busy_pct
        ),
    )
}

/// The headline figures of `summary`.
pub fn summary_stats(summary: &Summary) -> Vec<Stat> {
    let mut out = Vec::new();
    match &summary.workload {
        WorkloadSummary::Stream(s) => stream_stats(s, &mut out),
        WorkloadSummary::Rr(s) => rr_stats(s, &mut out),
        WorkloadSummary::UdpStream(u) => udp_stats(u, &mut out),
    }
    out.extend(summary.cpu.iter().map(cpu_stat));
    out
}

/// The headline figures of a result: those of its last run's summary (the run the printer
/// reports), none when no run completed.
pub fn run_stats(r: &RunResult) -> Vec<Stat> {
    r.runs
        .last()
        .and_then(|run| run.summary.as_ref())
        .map(summary_stats)
        .unwrap_or_default()
}
