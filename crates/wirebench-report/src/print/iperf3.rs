//! The iperf3 server's own figures of a `--iperf3` run, beside wirebench's, and the
//! reconciliation of each flow's bytes.

use std::fmt::Write as _;

use wirebench_model::iperf3::{Iperf3Server, ReconcileNote};
use wirebench_model::side::Role;
use wirebench_model::spec::FlowDir;
use wirebench_model::text::escape;
use wirebench_model::udp_summary::UdpSummary;

use super::units;
use super::{wrap, HumanOptions};
use crate::label;

/// What the other end did, for a role of wirebench's.
fn other(r: Role) -> &'static str {
    match r {
        Role::Sender => "received",
        Role::Receiver => "sent",
    }
}

fn did(r: Role) -> &'static str {
    match r {
        Role::Sender => "sent",
        Role::Receiver => "received",
    }
}

/// Why two counts differ, in words.
fn note_text(n: ReconcileNote) -> &'static str {
    match n {
        ReconcileNote::Equal => "the same bytes",
        ReconcileNote::UnreadAtTestEnd => {
            "the receiver read fewer: bytes still queued toward or in the iperf3 server's \
             socket when it closed its data sockets at TEST_END (iperf3 closes without \
             reading them)"
        }
        ReconcileNote::OmitBoundary => {
            "with omitted seconds each end starts counting on its own clock, so the counts \
             cover slightly different spans"
        }
        ReconcileNote::ReceiverAboveSender => {
            "the receiver counted more than was sent, which no real transfer does: do not \
             trust these figures"
        }
        ReconcileNote::Missing => "the server's results have no stream for this flow",
        ReconcileNote::DatagramsAccounted => {
            "every datagram sent was received or counted lost by the receiver"
        }
        ReconcileNote::SentAfterLastSeen => {
            "datagrams sent after the last one the receiver saw: lost at the end of the test, \
             or still in flight or unread when it ended (no receiver counts those as lost)"
        }
    }
}

/// The server's block of one run.
pub(crate) fn block(out: &mut String, s: &Iperf3Server, o: HumanOptions) {
    wrap(
        out,
        "",
        "  ",
        &format!(
            "iperf3 server {} (its own figures, from its results exchange; wirebench's above \
             are this end's: sender figures on the flows it sends, receiver figures on the \
             flows it receives{}):",
            escape(&s.address),
            if s.streams.iter().any(|st| st.udp.is_some()) {
                ""
            } else {
                "; the columns of the server's end are \"-\" there, as wirebench has no \
                 report from it"
            }
        ),
    );
    for st in &s.streams {
        let flow = st
            .flow
            .map_or_else(|| "no such flow".to_string(), |f| format!("flow {f}"));
        let retr = st
            .retransmits
            .map_or_else(String::new, |r| format!(", {r} retransmits"));
        let udp = st.udp.as_ref().map_or_else(String::new, |u| match st.role {
            Role::Sender => format!(", {} datagrams sent", u.packets),
            Role::Receiver => format!(
                ", highest sequence number {}, {} lost below it, jitter {:.3} ms",
                u.packets,
                u.lost.unwrap_or(0),
                u.jitter_ms.unwrap_or(0.0)
            ),
        });
        wrap(
            out,
            "  ",
            "    ",
            &format!(
                "stream {} ({flow}): server {} {} B in {:.2}-{:.2} s = {}{retr}{udp}",
                st.id,
                did(st.role),
                st.bytes,
                st.start_s,
                st.end_s,
                o.rate_unit.rate(st.throughput_bps),
            ),
        );
    }
    let cc = s
        .congestion_used
        .as_deref()
        .map_or_else(String::new, |c| format!("; congestion control {c}"));
    wrap(
        out,
        "  ",
        "    ",
        &format!(
            "server CPU: {:.1} % of one CPU (user {:.1} %, system {:.1} %), iperf3's whole \
             process over the test{cc}",
            s.cpu_util_total_pct, s.cpu_util_user_pct, s.cpu_util_system_pct
        ),
    );
    if s.reconciliation.is_empty() {
        return;
    }
    if s.reconciliation.iter().any(|r| r.udp.is_some()) {
        udp_reconciliation(out, s);
        return;
    }
    let _ = writeln!(out, "reconciliation (bytes each end counted on each flow):");
    for r in &s.reconciliation {
        let base = r.wirebench_bytes.max(1) as f64;
        wrap(
            out,
            "  ",
            "    ",
            &format!(
                "flow {} {}: wirebench {} {} B, iperf3 {} {} B; difference {:+} B ({:+.3} %, \
                 {}): {}",
                r.flow,
                label::dir(r.dir),
                did(r.wirebench_role),
                r.wirebench_bytes,
                other(r.wirebench_role),
                r.iperf3_bytes,
                r.difference_bytes,
                r.difference_bytes as f64 / base * 100.0,
                units::bytes(r.difference_bytes.unsigned_abs()),
                note_text(r.note)
            ),
        );
    }
}

/// A UDP test's reconciliation: per flow, the sender's datagrams against the receiver's.
fn udp_reconciliation(out: &mut String, s: &Iperf3Server) {
    let _ = writeln!(
        out,
        "reconciliation (datagrams, whole test: sent; received + lost at the receiver):"
    );
    for r in &s.reconciliation {
        let Some(u) = &r.udp else { continue };
        let (sender, receiver) = match r.wirebench_role {
            Role::Sender => ("wirebench", "iperf3"),
            Role::Receiver => ("iperf3", "wirebench"),
        };
        wrap(
            out,
            "  ",
            "    ",
            &format!(
                "flow {} {}: {sender} sent {}; {receiver} received {} + lost {} = {}; \
                 difference {:+}: {}",
                r.flow,
                label::dir(r.dir),
                u.sent_datagrams,
                u.received_datagrams,
                u.lost_datagrams,
                u.received_datagrams.saturating_add(u.lost_datagrams),
                u.difference_datagrams,
                note_text(r.note)
            ),
        );
    }
}

/// A UDP test against an iperf3 server: this end's own figures only, per direction (its
/// sender's, or its receiver's); the other end's are the iperf3 server's, in its block.
pub(crate) fn udp_own_end(out: &mut String, u: &UdpSummary, o: HumanOptions) {
    for d in &u.directions {
        let c = &d.counts;
        let text = match d.dir {
            FlowDir::ClientToServer => format!(
                "UDP {} (wirebench's figures as the sender): {} over {:.3} s ({} datagrams of {} \
                 bytes, {} B, sent in that window); whole test: sent {} datagrams, {} refused \
                 by this host's kernel, {} send errors",
                label::dir(d.dir),
                o.rate_unit.rate(d.sender_rate_bps),
                d.sender_window_ns as f64 / 1e9,
                c.window_sent,
                d.datagram_bytes,
                d.sender_bytes,
                c.total_sent,
                c.send_refused,
                c.send_errors,
            ),
            FlowDir::ServerToClient => format!(
                "UDP {} (wirebench's figures as the receiver, whole test): received {} \
                 datagrams ({} B), late {}, duplicate {}; jitter (max of flows) {}; dropped \
                 at this end's sockets {}, by this host {}; invalid datagrams {}",
                label::dir(d.dir),
                c.total_received,
                d.receiver_bytes,
                c.late,
                c.duplicate,
                units::duration_ns(d.jitter_max_ns),
                count_or_unknown(d.loss.dropped_at_receiving_sockets),
                count_or_unknown(d.loss.dropped_by_receiving_host),
                d.invalid_datagrams,
            ),
        };
        wrap(out, "", "  ", &text);
    }
}

fn count_or_unknown(v: Option<u64>) -> String {
    v.map_or_else(|| "not reported".into(), |n| n.to_string())
}
