//! The iperf3 server's own figures of a `--iperf3` run, beside wirebench's, and the
//! reconciliation of each flow's bytes.

use std::fmt::Write as _;

use wirebench_model::iperf3::{Iperf3Server, ReconcileNote};
use wirebench_model::side::Role;
use wirebench_model::text::escape;

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
             flows it receives; the columns of the server's end are \"-\" there, as wirebench \
             has no report from it):",
            escape(&s.address)
        ),
    );
    for st in &s.streams {
        let flow = st
            .flow
            .map_or_else(|| "no such flow".to_string(), |f| format!("flow {f}"));
        let retr = st
            .retransmits
            .map_or_else(String::new, |r| format!(", {r} retransmits"));
        wrap(
            out,
            "  ",
            "    ",
            &format!(
                "stream {} ({flow}): server {} {} B in {:.2}-{:.2} s = {}{retr}",
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
