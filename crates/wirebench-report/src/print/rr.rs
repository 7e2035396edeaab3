//! The request/response printers (TCP RR, TCP CRR, UDP RR): the test line, the human block,
//! and live interval lines.

use std::fmt::Write as _;

use wirebench_model::result::{BusyPollSummary, RrIntervalRow, RrSummary};
use wirebench_model::spec::{BusyPoll, CloseMode, RrLoop, TestSpec, WorkloadKind, WorkloadSpec};
use wirebench_model::text::escape;
use wirebench_stats::latency::LatencySummary;

use super::{text, units};
use crate::label;

/// What the request/response figures count (human footer).
pub const FOOTER: &str = "transactions/s = transactions the client completed (response \
    read in full; CRR: and connection closed) over its window [end of warm-up, stop]; \
    latency = the client's round trip per transaction (open loop: from the scheduled send \
    time); µs/tx = CPU microseconds per transaction";

/// The human name of a request/response workload.
pub(crate) fn workload_name(w: WorkloadKind) -> &'static str {
    match w {
        WorkloadKind::Crr => "TCP CRR",
        WorkloadKind::UdpRr => "UDP RR",
        _ => "TCP RR",
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// The workload part of the test line.
pub(crate) fn spec_head(s: &TestSpec) -> String {
    match &s.workload {
        WorkloadSpec::Rr(r) => {
            let mut t = format!(
                "rr, request {} bytes, response {} bytes",
                r.request_size_bytes, r.response_size_bytes
            );
            match r.pacing {
                RrLoop::Closed { burst } if burst > 1 => {
                    let _ = write!(t, ", burst {burst}");
                }
                RrLoop::Closed { .. } => {}
                RrLoop::Open {
                    transactions_per_s,
                    max_outstanding,
                } => {
                    let _ = write!(
                        t,
                        ", open loop {transactions_per_s} transactions/s per flow (at most \
                         {max_outstanding} outstanding)"
                    );
                }
            }
            if let Some(cc) = &r.tcp.congestion {
                let _ = write!(t, ", congestion control {cc} requested");
            }
            busy_head(&mut t, r.busy_poll);
            t
        }
        WorkloadSpec::Crr(r) => {
            let mut t = format!(
                "crr, request {} bytes, response {} bytes, {}",
                r.request_size_bytes,
                r.response_size_bytes,
                match r.close_mode {
                    CloseMode::Orderly => "orderly close (FIN)",
                    CloseMode::Abortive => "abortive close (RST)",
                }
            );
            if let Some(cc) = &r.tcp.congestion {
                let _ = write!(t, ", congestion control {cc} requested");
            }
            t
        }
        WorkloadSpec::UdpRr(r) => {
            let mut t = format!(
                "udp rr, request {} bytes, response {} bytes, lost after {} ms",
                r.request_size_bytes, r.response_size_bytes, r.timeout_ms
            );
            busy_head(&mut t, r.busy_poll);
            t
        }
        WorkloadSpec::Stream(_) | WorkloadSpec::UdpStream(_) => "rr".into(),
    }
}

fn busy_head(t: &mut String, b: Option<BusyPoll>) {
    match b {
        Some(BusyPoll { so_busy_poll_us: 0 }) => t.push_str(", busy-poll (spin)"),
        Some(b) => {
            let _ = write!(
                t,
                ", busy-poll (spin, SO_BUSY_POLL {} µs)",
                b.so_busy_poll_us
            );
        }
        None => {}
    }
}

/// What each end got of busy polling, one line per end.
fn busy_lines(out: &mut String, b: &BusyPollSummary) {
    out.push_str(
        "  busy-poll: the flows spun on non-blocking sockets instead of sleeping (CPU figures \
         include it)\n",
    );
    for e in &b.ends {
        let sockopt = match (&e.so_busy_poll_error, e.so_busy_poll_us) {
            (Some(err), _) => format!("SO_BUSY_POLL refused: {}", escape(&err.message)),
            (None, Some(us)) => format!("SO_BUSY_POLL {us} µs read back"),
            (None, None) if b.requested_us == 0 => "SO_BUSY_POLL not set".into(),
            (None, None) => "SO_BUSY_POLL not read back".into(),
        };
        let _ = writeln!(
            out,
            "    {}: {} of {} flow{} spinning; {sockopt}",
            label::host(e.host),
            e.flows_spinning,
            e.flows,
            text::plural(u64::from(e.flows)),
        );
    }
}

fn latency_lines(out: &mut String, l: &LatencySummary) {
    // Two lines, so that they fit in MAX_COLUMNS whatever the values (at most 100 s, 11
    // characters in µs).
    let _ = writeln!(
        out,
        "  latency µs: min {} mean {} stddev {} p50 {} p90 {}",
        us(l.min_ns as f64),
        us(l.mean_ns),
        us(l.stddev_ns),
        us(l.p50_ns as f64),
        us(l.p90_ns as f64),
    );
    let _ = writeln!(
        out,
        "              p99 {} p99.9 {} p99.99 {} max {}",
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

fn flows_block(out: &mut String, r: &RrSummary) {
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

fn workload_lines(out: &mut String, r: &RrSummary) {
    let w = &r.client_window;
    match r.workload {
        WorkloadKind::UdpRr => {
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
        WorkloadKind::Crr => {
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
        _ => {}
    }
}

/// The human block of a request/response run; the whole test's counts only when `verbose`.
pub(crate) fn block(out: &mut String, r: &RrSummary, verbose: bool) {
    let _ = writeln!(
        out,
        "{}: {} transactions in {:.3} s = {:.1} transactions/s ({} flow{})",
        workload_name(r.workload),
        r.transactions,
        r.window_ns as f64 / 1e9,
        r.transactions_per_s,
        r.flows,
        text::plural(u64::from(r.flows))
    );
    match &r.latency {
        Some(l) => latency_lines(out, l),
        None => out.push_str("  latency: not measured\n"),
    }
    if r.flows > 1 {
        flows_block(out, r);
    }
    workload_lines(out, r);
    if let Some(b) = &r.busy_poll {
        busy_lines(out, b);
    }
    for f in &r.per_flow {
        for e in &f.flow_errors {
            let _ = writeln!(
                out,
                "  flow {} at the {}: {}",
                f.flow,
                label::host(e.host),
                text::flow_error(&e.error)
            );
        }
    }
    if verbose {
        let server = r
            .server_total
            .map_or("n/a".to_string(), |s| s.transactions.to_string());
        let _ = writeln!(
            out,
            "  whole test: client completed {} transactions, server answered {server}",
            r.client_total.transactions
        );
    }
    if let Some(ol) = &r.open_loop {
        let _ = writeln!(
            out,
            "  open loop: requested {:.1}/s, achieved {:.1}/s, missed slots {}, peak \
             outstanding {}",
            ol.requested_per_s, ol.achieved_per_s, ol.missed_slots, ol.peak_outstanding
        );
    }
}

/// One live request/response interval line: the client's transactions per second, the
/// lost ones (UDP), and the median and 99th percentile round trip of the interval's
/// transactions, e.g.
/// `[  1.00-  2.00 s] client    23456.0 trans/s  lost 0  rtt p50 41.20 µs p99 88.00 µs`.
pub(crate) fn interval_line(row: &RrIntervalRow) -> String {
    let rtt =
        |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), |n| units::duration_ns(n as f64));
    format!(
        "[{:6.2}-{:6.2} s] {} {:10.1} trans/s  lost {}  rtt p50 {} p99 {}{}",
        row.start_s,
        row.end_s,
        label::host(row.host),
        row.transactions_per_s,
        row.lost,
        rtt(row.rtt_p50_ns),
        rtt(row.rtt_p99_ns),
        if row.in_warmup { " (warm-up)" } else { "" }
    )
}

/// The latency-under-load block: idle, loaded, induced, and the load.
pub(crate) fn under_load_text(u: &wirebench_model::result::UnderLoad) -> String {
    use super::units::duration_ns;
    let dir = match u.load_direction {
        wirebench_model::spec::Direction::Forward => "forward",
        wirebench_model::spec::Direction::Reverse => "reverse",
        wirebench_model::spec::Direction::Bidir => "bidirectional",
    };
    let head = format!(
        "latency under load: {} stream flow{} per direction, {dir}, started {} before the loaded \
         test",
        u.load_flows,
        if u.load_flows == 1 { "" } else { "s" },
        duration_ns(u.lead_ms as f64 * 1e6)
    );
    let Some(s) = &u.summary else {
        return format!(
            "{head}; no figures (a part did not complete: idle {}, load {})",
            super::status_name(u.idle.status),
            super::status_name(u.load.status)
        );
    };
    let signed = |ns: i64| {
        let t = duration_ns(ns.unsigned_abs() as f64);
        if ns < 0 {
            format!("-{t}")
        } else {
            format!("+{t}")
        }
    };
    format!(
        "{head}; load {} at its receivers. Round trip idle p50 {} p99 {} ({} tx/s); loaded p50 {} \
         p99 {} ({} tx/s); induced p50 {} p99 {}",
        super::units::RateUnit::AutoBits.rate(s.load_throughput_bps),
        duration_ns(s.idle_rtt_p50_ns as f64),
        duration_ns(s.idle_rtt_p99_ns as f64),
        super::units::number(s.idle_transactions_per_s),
        duration_ns(s.loaded_rtt_p50_ns as f64),
        duration_ns(s.loaded_rtt_p99_ns as f64),
        super::units::number(s.loaded_transactions_per_s),
        signed(s.induced_p50_ns),
        signed(s.induced_p99_ns),
    ) + &induced_reading_text(s.induced_reading)
        + &induced_p99_reading_text(s.induced_p99_reading)
}

/// What the induced latency at the 99th percentile says, as a sentence (empty without a
/// reading).
pub fn induced_p99_reading_text(r: Option<wirebench_model::result::InducedReading>) -> String {
    use super::units::duration_ns;
    use wirebench_model::result::InducedReading as R;
    match r {
        None => String::new(),
        Some(R::Raised { noise_ns }) => format!(
            ". At the 99th percentile the load raised the tail beyond the noise (±{}): the \
             slowest round trips waited behind it",
            duration_ns(noise_ns as f64)
        ),
        Some(R::WithinNoise { noise_ns }) => format!(
            ". Induced p99 within the noise (±{}): the load did not lengthen the tail beyond \
             what one pair of runs can show",
            duration_ns(noise_ns as f64)
        ),
        Some(R::Lowered { noise_ns }) => format!(
            ". At the 99th percentile loaded round trips were faster, beyond the noise (±{}): \
             no queue formed on the path, and with the CPUs kept busy fewer round trips paid \
             for waking one from idle",
            duration_ns(noise_ns as f64)
        ),
    }
}

/// What the induced latency at the median says, as a sentence (empty without a reading).
pub fn induced_reading_text(r: Option<wirebench_model::result::InducedReading>) -> String {
    use super::units::duration_ns;
    use wirebench_model::result::InducedReading as R;
    match r {
        None => String::new(),
        Some(R::Raised { noise_ns }) => format!(
            ". The load raised the median beyond the noise (±{}): round trips waited behind it, \
             in a queue at the path's bottleneck or for a CPU the load kept busy",
            duration_ns(noise_ns as f64)
        ),
        Some(R::WithinNoise { noise_ns }) => format!(
            ". Induced p50 within the noise (±{}): no queue formed at a bottleneck on the path",
            duration_ns(noise_ns as f64)
        ),
        Some(R::Lowered { noise_ns }) => format!(
            ". Loaded round trips were faster, beyond the noise (±{}): no queue formed at a \
             bottleneck on the path (loopback, or a path with no slower link, has none), and \
             the load kept the CPUs busy, so a round trip no longer paid for waking a CPU \
             from idle",
            duration_ns(noise_ns as f64)
        ),
    }
}
