//! A run against a stock iperf3 server (`--iperf3`): the server's own rates, and each flow's
//! bytes as wirebench and iperf3 counted them, with why they differ.

use wirebench_model::iperf3::{Iperf3Reconciled, Iperf3Server, ReconcileNote};
use wirebench_model::side::{Role, SideReport};

/// Fill in what is derived from the server's figures: each stream's rate over its own span,
/// and the reconciliation of each of this end's flows with the server's stream on it.
/// `omit` says whether the test had omitted seconds (`-O`, wirebench's warm-up): the counts
/// then start on each end's own clock and agree only roughly.
pub fn complete(server: &mut Iperf3Server, client: Option<&SideReport>, omit: bool) {
    for s in &mut server.streams {
        let span_s = s.end_s - s.start_s;
        s.throughput_bps = if span_s > 0.0 {
            s.bytes as f64 * 8.0 / span_s
        } else {
            0.0
        };
    }
    let Some(flows) = client.and_then(SideReport::stream).map(|s| &s.flows) else {
        server.reconciliation.clear();
        return;
    };
    server.reconciliation = flows
        .iter()
        .map(|f| {
            let wirebench_bytes = if omit { f.window_bytes } else { f.total_bytes };
            let theirs = server.streams.iter().find(|s| s.flow == Some(f.flow));
            let iperf3_bytes = theirs.map_or(0, |s| s.bytes);
            let difference_bytes = i64::try_from(iperf3_bytes)
                .unwrap_or(i64::MAX)
                .saturating_sub(i64::try_from(wirebench_bytes).unwrap_or(i64::MAX));
            let (sent, received) = match f.role {
                Role::Sender => (wirebench_bytes, iperf3_bytes),
                Role::Receiver => (iperf3_bytes, wirebench_bytes),
            };
            let note = if theirs.is_none() {
                ReconcileNote::Missing
            } else if omit {
                ReconcileNote::OmitBoundary
            } else if received > sent {
                ReconcileNote::ReceiverAboveSender
            } else if received < sent {
                ReconcileNote::UnreadAtTestEnd
            } else {
                ReconcileNote::Equal
            };
            Iperf3Reconciled {
                flow: f.flow,
                dir: f.dir,
                wirebench_role: f.role,
                wirebench_bytes,
                iperf3_bytes,
                difference_bytes,
                note,
            }
        })
        .collect();
}
