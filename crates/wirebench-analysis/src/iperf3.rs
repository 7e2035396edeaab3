//! A run against a stock iperf3 server (`--iperf3`): the server's own rates, and each flow's
//! bytes as wirebench and iperf3 counted them, with why they differ.

use wirebench_model::iperf3::{
    Iperf3Reconciled, Iperf3Server, Iperf3Stream, Iperf3UdpReconciled, ReconcileNote,
};
use wirebench_model::side::{Role, SideReport};
use wirebench_model::spec::FlowDir;
use wirebench_model::udp::UdpSide;

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
    if let Some(u) = client.and_then(SideReport::udp) {
        server.reconciliation = udp_reconciliation(u, &server.streams);
        return;
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
                udp: None,
            }
        })
        .collect();
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A UDP test's flows: the sender's datagrams against the receiver's received and lost, over
/// the whole test (this end's counts and iperf3's both cover every datagram of the stream).
fn udp_reconciliation(u: &UdpSide, streams: &[Iperf3Stream]) -> Vec<Iperf3Reconciled> {
    let theirs = |flow: u32| streams.iter().find(|s| s.flow == Some(flow));
    let mut out = Vec::new();
    for f in &u.senders {
        let t = theirs(f.flow);
        let sent = f
            .datagrams_sent
            .saturating_add(f.send_refused)
            .saturating_add(f.send_errors);
        let (received, lost) = t.and_then(|s| s.udp.as_ref()).map_or((0, 0), |x| {
            let lost = x.lost.unwrap_or(0);
            (x.packets.saturating_sub(lost), lost)
        });
        out.push(udp_flow(
            f.flow,
            FlowDir::ClientToServer,
            Role::Sender,
            f.bytes_sent,
            t,
            (sent, received, lost),
        ));
    }
    for f in &u.receivers {
        let t = theirs(f.flow);
        let sent = t.and_then(|s| s.udp.as_ref()).map_or(0, |x| x.packets);
        let received = f.datagrams_received;
        // The engine numbers datagrams from 0, iperf3 from 1.
        let seq_end = f.highest_seq.map_or(0, |h| h.saturating_add(1));
        let lost = seq_end.saturating_sub(received);
        out.push(udp_flow(
            f.flow,
            FlowDir::ServerToClient,
            Role::Receiver,
            f.bytes_received,
            t,
            (sent, received, lost),
        ));
    }
    out.sort_by_key(|r| r.flow);
    out
}

/// One UDP flow's line; `(sent, received, lost)` are datagrams.
fn udp_flow(
    flow: u32,
    dir: FlowDir,
    wirebench_role: Role,
    wirebench_bytes: u64,
    theirs: Option<&Iperf3Stream>,
    (sent, received, lost): (u64, u64, u64),
) -> Iperf3Reconciled {
    let iperf3_bytes = theirs.map_or(0, |s| s.bytes);
    let difference = signed(sent)
        .saturating_sub(signed(received))
        .saturating_sub(signed(lost));
    let note = match theirs {
        None => ReconcileNote::Missing,
        Some(_) if difference < 0 => ReconcileNote::ReceiverAboveSender,
        Some(_) if difference > 0 => ReconcileNote::SentAfterLastSeen,
        Some(_) => ReconcileNote::DatagramsAccounted,
    };
    Iperf3Reconciled {
        flow,
        dir,
        wirebench_role,
        wirebench_bytes,
        iperf3_bytes,
        difference_bytes: signed(iperf3_bytes).saturating_sub(signed(wirebench_bytes)),
        note,
        udp: Some(Iperf3UdpReconciled {
            sent_datagrams: sent,
            received_datagrams: received,
            lost_datagrams: lost,
            difference_datagrams: difference,
        }),
    }
}
