//! Printers of the request/response and UDP stream summaries (human blocks, CSV rows and
//! live interval lines). Like [`crate::print`], they only format computed fields.

use std::fmt::Write as _;

use wirebench_proto::measure::HostRole;
use wirebench_proto::rr::{CloseMode, RrWorkload};
use wirebench_proto::spec::{TestSpec, Workload};
use wirebench_stats::latency::LatencySummary;

use crate::label;
use crate::schema::{RrIntervalRow, RrSummary, RunRecord, UdpCounts, UdpSummary};

/// The CSV header of request/response results (without the line break).
pub const RR_CSV_HEADER: &str = "run,status,workload,flows,transactions,transactions_per_s,\
    rtt_min_ns,rtt_mean_ns,rtt_p50_ns,rtt_p90_ns,rtt_p99_ns,rtt_p999_ns,rtt_max_ns,lost,errors,\
    client_cpu_busy_pct,server_cpu_busy_pct,client_sd_us_per_tx,server_sd_us_per_tx,\
    request_size_bytes,response_size_bytes,duration_ms";

/// The CSV header of UDP stream results (without the line break).
pub const UDP_CSV_HEADER: &str = "run,status,direction,flows,datagram_bytes,sender_rate_bps,\
    receiver_rate_bps,window_sent,window_received,window_lost,window_loss_pct,late,duplicate,\
    jitter_max_ns,invalid_datagrams,client_cpu_busy_pct,server_cpu_busy_pct,duration_ms";

/// What the request/response figures count (human footer).
pub const RR_FOOTER: &str = "transactions/s = transactions the client completed (response \
    read in full; CRR: and connection closed) over its window [end of warm-up, stop]; \
    latency = the client's round trip per transaction (open loop: from the scheduled send \
    time); µs/tx = CPU microseconds per transaction";

/// What the UDP figures count (human footer).
pub const UDP_FOOTER: &str = "window = datagrams sent inside the sender's window [end of \
    warm-up, stop], as counted by the sender (sent) and the receiver (received, by the send \
    time in each header); lost = sent − received; Mbit/s = 10^6 bit/s of UDP payload over the \
    sender's window; jitter per RFC 3550";

fn workload_name(w: RrWorkload) -> &'static str {
    match w {
        RrWorkload::TcpRr => "TCP RR",
        RrWorkload::TcpCrr => "TCP CRR",
        RrWorkload::UdpRr => "UDP RR",
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// The test line of a request/response or UDP spec.
pub(crate) fn spec_line(s: &TestSpec) -> String {
    let flows = format!("{} flow{}", s.flows, if s.flows == 1 { "" } else { "s" });
    let timing = format!(
        "{:.3} s measured after {:.3} s warm-up",
        s.duration_ms as f64 / 1e3,
        s.warmup_ms as f64 / 1e3
    );
    let mut t = match (&s.rr, s.workload) {
        (Some(rr), w) => {
            let name = match w {
                Workload::Crr => "crr",
                Workload::UdpRr => "udp rr",
                _ => "rr",
            };
            let mut t = format!(
                "{name}, {flows}, {timing}, request {} bytes, response {} bytes",
                rr.request_size_bytes, rr.response_size_bytes
            );
            if rr.burst > 1 {
                let _ = write!(t, ", burst {}", rr.burst);
            }
            if let Some(r) = rr.transactions_per_s {
                let _ = write!(t, ", open loop {r} transactions/s per flow");
            }
            if w == Workload::Crr {
                t.push_str(match rr.close_mode {
                    CloseMode::Orderly => ", orderly close (FIN)",
                    CloseMode::Abortive => ", abortive close (RST)",
                });
            }
            if w == Workload::UdpRr {
                let _ = write!(t, ", lost after {} ms", rr.udp_timeout_ms);
            }
            t
        }
        (None, _) => {
            let mut t = format!(
                "udp {}, {flows} per direction, {timing}, {} bytes per datagram",
                match s.direction {
                    wirebench_proto::spec::Direction::Forward => "forward",
                    wirebench_proto::spec::Direction::Reverse => "reverse",
                    wirebench_proto::spec::Direction::Bidir => "bidirectional",
                },
                s.msg_size_bytes
            );
            match s.rate_bps {
                Some(r) => {
                    let _ = write!(t, ", {:.3} Mbit/s per flow", r as f64 / 1e6);
                }
                None => t.push_str(", unpaced"),
            }
            t
        }
    };
    if let Some(cpu) = s.client_cpu {
        let _ = write!(t, ", client data threads on CPU {cpu}");
    }
    if let Some(cpu) = s.server_cpu {
        let _ = write!(t, ", server data threads on CPU {cpu}");
    }
    t
}

fn latency_lines(out: &mut String, l: &LatencySummary) {
    let _ = writeln!(
        out,
        "  latency µs: min {} mean {} stddev {} p50 {} p90 {} p99 {} p99.9 {} p99.99 {} max {}",
        us(l.min_ns as f64),
        us(l.mean_ns),
        us(l.stddev_ns),
        us(l.p50_ns as f64),
        us(l.p90_ns as f64),
        us(l.p99_ns as f64),
        us(l.p999_ns as f64),
        us(l.p9999_ns as f64),
        us(l.max_ns as f64),
    );
    if l.clamped > 0 {
        let _ = writeln!(
            out,
            "  ({} round trips were outside the histogram's range and were clamped)",
            l.clamped
        );
    }
}

/// The human block of a request/response run.
pub(crate) fn rr_block(out: &mut String, r: &RrSummary) {
    let _ = writeln!(
        out,
        "{}: {} transactions in {:.3} s = {:.1} transactions/s ({} flow{})",
        workload_name(r.workload),
        r.transactions,
        r.window_ns as f64 / 1e9,
        r.transactions_per_s,
        r.flows,
        if r.flows == 1 { "" } else { "s" }
    );
    match &r.latency {
        Some(l) => latency_lines(out, l),
        None => out.push_str("  latency: not measured\n"),
    }
    if r.flows > 1 {
        out.push_str("  flow  transactions  trans/s      p50 µs   p99 µs   lost  errors\n");
        for f in &r.per_flow {
            let _ = writeln!(
                out,
                "  {:>4} {:>13} {:>8.1} {:>11} {:>8} {:>6} {:>7}",
                f.flow,
                f.transactions,
                f.transactions_per_s,
                f.rtt_p50_ns.map_or("n/a".into(), |v| us(v as f64)),
                f.rtt_p99_ns.map_or("n/a".into(), |v| us(v as f64)),
                f.lost,
                f.errors
            );
        }
        if let (Some(s), Some(j)) = (&r.flow_transactions_per_s, r.jain_index) {
            let _ = writeln!(
                out,
                "  per-flow transactions/s min {:.1} median {:.1} max {:.1}; Jain fairness {j:.4}",
                s.min, s.median, s.max
            );
        }
    }
    let w = &r.client_window;
    let t = &r.client_total;
    match r.workload {
        RrWorkload::UdpRr => {
            let _ = writeln!(
                out,
                "  UDP: lost {} ({:.3} %), of which answered late {}; garbage {}; errors {}",
                w.lost,
                r.loss_pct.unwrap_or(0.0),
                w.late,
                w.garbage,
                w.errors
            );
        }
        RrWorkload::TcpCrr => {
            let _ = writeln!(
                out,
                "  connections: close {}; errors {} (connect {}) in the window",
                match r.close_mode {
                    Some(CloseMode::Abortive) => "abortive (RST)",
                    _ => "orderly (FIN)",
                },
                w.errors,
                w.connect_errors
            );
            if let Some(s) = &r.server_total {
                let _ = writeln!(
                    out,
                    "  server saw {} orderly closes and {} resets",
                    s.closes_orderly, s.closes_reset
                );
            }
        }
        RrWorkload::TcpRr => {}
    }
    let server = r
        .server_total
        .map_or("n/a".to_string(), |s| s.transactions.to_string());
    let _ = writeln!(
        out,
        "  whole test: client completed {} transactions, server answered {server}",
        t.transactions
    );
    if let Some(ol) = &r.open_loop {
        let _ = writeln!(
            out,
            "  open loop: requested {:.1}/s, achieved {:.1}/s, missed slots {}, peak outstanding {}",
            ol.requested_per_s, ol.achieved_per_s, ol.missed_slots, ol.peak_outstanding
        );
    }
}

fn udp_counts_line(c: &UdpCounts) -> String {
    format!(
        "sent {} received {} lost {} ({:.3} %); late {} duplicate {} too old {}; send errors {}",
        c.window_sent,
        c.window_received,
        c.window_lost,
        c.window_loss_pct,
        c.late,
        c.duplicate,
        c.too_old,
        c.send_errors
    )
}

/// The human block of a UDP stream run.
pub(crate) fn udp_block(out: &mut String, u: &UdpSummary) {
    for d in &u.directions {
        let name = label::dir(d.dir);
        let _ = writeln!(
            out,
            "UDP {name}: sender {:.3} Mbit/s, receiver {:.3} Mbit/s over {:.3} s; {} flow{}, \
             {} bytes per datagram",
            d.sender_rate_bps / 1e6,
            d.receiver_rate_bps / 1e6,
            d.sender_window_ns as f64 / 1e9,
            d.flows,
            if d.flows == 1 { "" } else { "s" },
            d.datagram_bytes
        );
        let _ = writeln!(out, "  window: {}", udp_counts_line(&d.counts));
        let _ = writeln!(
            out,
            "  whole test: sent {} received {} lost {}; jitter (max of flows) {} µs; invalid \
             datagrams {}",
            d.counts.total_sent,
            d.counts.total_received,
            d.counts.total_lost,
            us(d.jitter_max_ns),
            d.invalid_datagrams
        );
        if d.counts.pacing_resets > 0 {
            let _ = writeln!(
                out,
                "  the sender fell behind its schedule {} times (rate not met then)",
                d.counts.pacing_resets
            );
        }
        if d.flows > 1 {
            for f in u.flows.iter().filter(|f| f.dir == d.dir) {
                let _ = writeln!(
                    out,
                    "  flow {:>3}: {:.3} Mbit/s received; {}; jitter {} µs",
                    f.flow,
                    f.receiver_rate_bps / 1e6,
                    udp_counts_line(&f.counts),
                    us(f.jitter_ns)
                );
            }
        }
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// CSV rows of one run of a request/response test (`None` if the run has no such summary).
pub(crate) fn rr_csv_row(run: &RunRecord, status: &str, spec: Option<&TestSpec>) -> Vec<String> {
    let s = run.summary.as_ref();
    let r = s.and_then(|s| s.rr.as_ref());
    let l = r.and_then(|r| r.latency);
    let cpu = |h: HostRole| s.and_then(|s| s.cpu.iter().find(|c| c.host == h));
    vec![
        run.index.to_string(),
        status.to_string(),
        r.map_or(String::new(), |r| workload_name(r.workload).to_string()),
        opt(r.map(|r| r.flows)),
        opt(r.map(|r| r.transactions)),
        opt(r.map(|r| r.transactions_per_s)),
        opt(l.map(|l| l.min_ns)),
        opt(l.map(|l| l.mean_ns)),
        opt(l.map(|l| l.p50_ns)),
        opt(l.map(|l| l.p90_ns)),
        opt(l.map(|l| l.p99_ns)),
        opt(l.map(|l| l.p999_ns)),
        opt(l.map(|l| l.max_ns)),
        opt(r.map(|r| r.client_window.lost)),
        opt(r.map(|r| r.client_window.errors + r.client_window.connect_errors)),
        opt(cpu(HostRole::Client).map(|c| c.system_busy_pct)),
        opt(cpu(HostRole::Server).map(|c| c.system_busy_pct)),
        opt(cpu(HostRole::Client).and_then(|c| c.service_demand_us_per_tx)),
        opt(cpu(HostRole::Server).and_then(|c| c.service_demand_us_per_tx)),
        opt(r.map(|r| r.request_size_bytes)),
        opt(r.map(|r| r.response_size_bytes)),
        opt(spec.map(|s| s.duration_ms)),
    ]
}

/// CSV rows of one run of a UDP stream test: one per direction (one empty row without a
/// summary).
pub(crate) fn udp_csv_rows(
    run: &RunRecord,
    status: &str,
    spec: Option<&TestSpec>,
) -> Vec<Vec<String>> {
    let s = run.summary.as_ref();
    let cpu = |h: HostRole| s.and_then(|s| s.cpu.iter().find(|c| c.host == h));
    let dur = opt(spec.map(|s| s.duration_ms));
    let Some(u) = s.and_then(|s| s.udp.as_ref()) else {
        let mut row = vec![run.index.to_string(), status.to_string()];
        row.extend(std::iter::repeat_n(String::new(), 15));
        row.push(dur);
        return vec![row];
    };
    u.directions
        .iter()
        .map(|d| {
            vec![
                run.index.to_string(),
                status.to_string(),
                label::dir(d.dir).to_string(),
                d.flows.to_string(),
                d.datagram_bytes.to_string(),
                d.sender_rate_bps.to_string(),
                d.receiver_rate_bps.to_string(),
                d.counts.window_sent.to_string(),
                d.counts.window_received.to_string(),
                d.counts.window_lost.to_string(),
                d.counts.window_loss_pct.to_string(),
                d.counts.late.to_string(),
                d.counts.duplicate.to_string(),
                d.jitter_max_ns.to_string(),
                d.invalid_datagrams.to_string(),
                opt(cpu(HostRole::Client).map(|c| c.system_busy_pct)),
                opt(cpu(HostRole::Server).map(|c| c.system_busy_pct)),
                dur.clone(),
            ]
        })
        .collect()
}

/// One live request/response interval line, e.g.
/// `[  1.00-  2.00 s] client    23456.0 trans/s  lost 0`.
pub fn rr_interval_line(row: &RrIntervalRow) -> String {
    format!(
        "[{:6.2}-{:6.2} s] {} {:10.1} trans/s  lost {}{}",
        row.start_s,
        row.end_s,
        label::host(row.host),
        row.transactions_per_s,
        row.lost,
        if row.in_warmup { " (warm-up)" } else { "" }
    )
}
