//! The UDP stream printers: the test line, the human block with the loss attributed to where
//! it happened, and live interval lines.

use std::fmt::Write as _;

use wirebench_model::result::{UdpCounts, UdpIntervalRow, UdpLossAttribution, UdpSummary};
use wirebench_model::spec::{Direction, TestSpec, WorkloadSpec};

use super::units::{self, RateUnit};
use super::{text, wrap, HumanOptions};
use crate::label;

/// What the UDP figures count (human footer).
pub const FOOTER: &str = "window = datagrams sent inside the sender's window [end of \
    warm-up, stop], as counted by the sender (sent) and the receiver (received, by the send \
    time in each header); lost = sent − received; rates: bit/s of UDP payload over the \
    sender's window, decimal (Mbit/s = 10^6 bit/s); jitter per RFC 3550; loss attribution \
    over the whole test: refused at the sender (ENOBUFS/EAGAIN), dropped at the receiving \
    sockets (SO_RXQ_OVFL), dropped by the receiving host (/proc/net/snmp Udp InErrors beyond \
    those), the rest lost in the path";

/// The workload part of the test line.
pub(crate) fn spec_head(s: &TestSpec) -> String {
    let WorkloadSpec::UdpStream(u) = &s.workload else {
        return "udp".into();
    };
    let mut t = format!(
        "udp {}, {} bytes per datagram",
        match u.direction {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
            Direction::Bidir => "bidirectional",
        },
        u.datagram_bytes
    );
    match u.rate_bps {
        Some(r) => {
            let _ = write!(t, ", {} per flow", RateUnit::AutoBits.rate(r as f64));
        }
        None => t.push_str(", unpaced"),
    }
    t
}

fn counts_line(c: &UdpCounts) -> String {
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

fn opt_count(v: Option<u64>) -> String {
    v.map_or_else(|| "not reported".into(), |x| x.to_string())
}

/// The loss attribution table of one direction, a term per line (so that every line fits in
/// [`super::MAX_COLUMNS`]).
fn loss_lines(out: &mut String, l: &UdpLossAttribution) {
    let _ = writeln!(
        out,
        "  lost over the whole test: {:>10}  = refused at the sender {}",
        l.total_lost, l.refused_at_sender
    );
    for (what, n) in [
        (
            "dropped at the receiving sockets",
            opt_count(l.dropped_at_receiving_sockets),
        ),
        (
            "dropped by the receiving host",
            opt_count(l.dropped_by_receiving_host),
        ),
        ("lost in the path", l.lost_in_path.to_string()),
    ] {
        let _ = writeln!(out, "{:40}+ {what} {n}", "");
    }
}

/// The human block of a UDP stream run.
pub(crate) fn block(out: &mut String, u: &UdpSummary, o: HumanOptions) {
    for d in &u.directions {
        let name = label::dir(d.dir);
        wrap(
            out,
            "",
            "  ",
            &format!(
                "UDP {name}: sender {}, receiver {} over {:.3} s; {} flow{}, {} bytes per \
                 datagram",
                o.rate_unit.rate(d.sender_rate_bps),
                o.rate_unit.rate(d.receiver_rate_bps),
                d.sender_window_ns as f64 / 1e9,
                d.flows,
                text::plural(u64::from(d.flows)),
                d.datagram_bytes
            ),
        );
        wrap(
            out,
            "  ",
            "    ",
            &format!("window: {}", counts_line(&d.counts)),
        );
        wrap(
            out,
            "  ",
            "    ",
            &format!(
                "whole test: sent {} received {} lost {}; jitter (max of flows) {}; invalid \
                 datagrams {}",
                d.counts.total_sent,
                d.counts.total_received,
                d.counts.total_lost,
                units::duration_ns(d.jitter_max_ns),
                d.invalid_datagrams
            ),
        );
        if o.verbose() || d.loss.total_lost > 0 {
            loss_lines(out, &d.loss);
        }
        if d.counts.pacing_resets > 0 {
            let _ = writeln!(
                out,
                "  the sender fell behind its schedule {} times (rate not met then)",
                d.counts.pacing_resets
            );
        }
        if d.flows > 1 {
            for f in u.flows.iter().filter(|f| f.dir == d.dir) {
                wrap(
                    out,
                    "  ",
                    "    ",
                    &format!(
                        "flow {:>3}: {} received; {}; jitter {}",
                        f.flow,
                        o.rate_unit.rate(f.receiver_rate_bps),
                        counts_line(&f.counts),
                        units::duration_ns(f.jitter_ns)
                    ),
                );
            }
        }
        for f in u.flows.iter().filter(|f| f.dir == d.dir) {
            for e in &f.errors {
                let _ = writeln!(
                    out,
                    "  flow {} at the {}: {}",
                    f.flow,
                    label::host(e.host),
                    text::flow_error(&e.error)
                );
            }
        }
    }
}

/// One live UDP interval line of the receiving end (always the receiver's, so without the
/// stream lines' `recv`): the received rate, the datagrams lost of the sequence numbers the
/// interval covered, the jitter at its end, and late and duplicate datagrams when there were
/// any, e.g.
/// `[  1.00-  2.00 s] server forward 7.920 Mbit/s  lost 3/993 (0.30 %)  jitter 12.30 µs`.
pub(crate) fn interval_line(r: &UdpIntervalRow, o: HumanOptions) -> String {
    let mut t = format!(
        "[{:6.2}-{:6.2} s] {} {:<7} {:>12}  lost {}/{} ({:.2} %)  jitter {}",
        r.row.start_s,
        r.row.end_s,
        label::host(r.row.host),
        label::dir(r.row.dir),
        o.rate_unit.rate(r.row.throughput_bps),
        r.lost,
        r.expected,
        r.loss_pct,
        r.jitter_max_ns
            .map_or_else(|| "n/a".to_string(), |j| units::duration_ns(j as f64)),
    );
    if r.late > 0 || r.duplicate > 0 {
        let _ = write!(t, "  late {} dup {}", r.late, r.duplicate);
    }
    if r.row.in_warmup {
        t.push_str(" (warm-up)");
    }
    t
}
