//! A `--iperf3` run's reconciliation: each flow's bytes as wirebench and the iperf3 server
//! counted them, and why they differ.

use wirebench_model::iperf3::{Iperf3Server, Iperf3Stream, Iperf3UdpStream, ReconcileNote};
use wirebench_model::side::{HostRole, Role};
use wirebench_model::spec::FlowDir;
use wirebench_model::udp::UdpSide;

use super::*;
use crate::iperf3::complete;

fn stream(id: u32, flow: Option<u32>, role: Role, bytes: u64) -> Iperf3Stream {
    Iperf3Stream {
        id,
        flow,
        role,
        bytes,
        retransmits: None,
        start_s: 0.0,
        end_s: 2.0,
        throughput_bps: 0.0,
        udp: None,
    }
}

fn server(streams: Vec<Iperf3Stream>) -> Iperf3Server {
    Iperf3Server {
        address: "10.0.0.2:5201".into(),
        cpu_util_total_pct: 10.0,
        cpu_util_user_pct: 1.0,
        cpu_util_system_pct: 9.0,
        congestion_used: None,
        streams,
        reconciliation: Vec::new(),
    }
}

#[test]
fn each_flow_is_reconciled_with_its_reason() {
    let (s2c, c2s) = (FlowDir::ServerToClient, FlowDir::ClientToServer);
    let client = stream_report(
        HostRole::Client,
        vec![
            flow_side(0, c2s, Role::Sender, 1000, 900, 0, 1),
            flow_side(1, c2s, Role::Sender, 1000, 900, 0, 1),
            flow_side(2, s2c, Role::Receiver, 1000, 900, 0, 1),
            flow_side(3, s2c, Role::Receiver, 500, 400, 0, 1),
        ],
        None,
    );
    let mut s = server(vec![
        stream(1, Some(0), Role::Receiver, 1000),
        stream(3, Some(1), Role::Receiver, 990),
        stream(4, Some(2), Role::Sender, 999),
    ]);
    complete(&mut s, Some(&client), false);
    let notes: Vec<_> = s.reconciliation.iter().map(|r| r.note).collect();
    assert_eq!(
        notes,
        [
            ReconcileNote::Equal,
            ReconcileNote::UnreadAtTestEnd,
            ReconcileNote::ReceiverAboveSender,
            ReconcileNote::Missing,
        ]
    );
    assert_eq!(s.reconciliation[1].difference_bytes, -10);
    assert_eq!(s.reconciliation[2].difference_bytes, -1);
    // 1000 B × 8 over 2 s.
    assert!(close(s.streams[0].throughput_bps, 4000.0));
    // With omitted seconds the window's bytes are compared, and only roughly.
    complete(&mut s, Some(&client), true);
    assert_eq!(s.reconciliation[0].wirebench_bytes, 900);
    assert_eq!(s.reconciliation[0].note, ReconcileNote::OmitBoundary);
    // No report from this end: nothing to reconcile.
    complete(&mut s, None, false);
    assert!(s.reconciliation.is_empty());
}

/// A UDP run: forward, iperf3's received + lost against wirebench's sent (sequence numbers
/// used, refused sends included); reverse, wirebench's received + lost (below its highest
/// sequence number) against iperf3's sent. What is left is the datagrams sent after the
/// last one the receiver saw.
#[test]
fn udp_flows_reconcile_datagrams() {
    let mut tx = udp_sender(0, 1000, (S, 3 * S), 100, 100);
    tx.send_refused = 2;
    // Received 90 distinct datagrams, the highest number 97 (0-based 96): 7 lost below it.
    let mut rx = udp_receiver(1, 1000, 90, 90);
    rx.highest_seq = Some(96);
    let side = UdpSide {
        senders: vec![tx],
        receivers: vec![rx],
        sockets: Vec::new(),
        intervals: Vec::new(),
        host_drops: None,
    };
    let client = udp_report(HostRole::Client, side, None);
    let udp = |packets, lost: Option<u64>| {
        Some(Iperf3UdpStream {
            packets,
            lost,
            jitter_ms: lost.map(|_| 0.01),
        })
    };
    let mut s = server(vec![
        Iperf3Stream {
            udp: udp(101, Some(4)),
            ..stream(1, Some(0), Role::Receiver, 97_000)
        },
        Iperf3Stream {
            udp: udp(97, None),
            ..stream(3, Some(1), Role::Sender, 97_000)
        },
    ]);
    complete(&mut s, Some(&client), false);
    let r: Vec<_> = s
        .reconciliation
        .iter()
        .map(|r| {
            let u = r.udp.as_ref().unwrap();
            (
                u.sent_datagrams,
                u.received_datagrams,
                u.lost_datagrams,
                u.difference_datagrams,
                r.note,
            )
        })
        .collect();
    assert_eq!(
        r,
        [
            // 102 numbers used; iperf3 saw up to 101, 4 of them lost: 1 after the last seen.
            (102, 97, 4, 1, ReconcileNote::SentAfterLastSeen),
            // iperf3 sent 97; wirebench received 90 and counts 7 lost below 97.
            (97, 90, 7, 0, ReconcileNote::DatagramsAccounted),
        ]
    );
    assert_eq!(s.reconciliation[0].wirebench_bytes, 100_000);
    assert_eq!(s.reconciliation[1].wirebench_bytes, 90_000);
}

/// The summary of a `--bidir` stream run against iperf3: the server's end of each flow is
/// its own count (receiver of flow 0, sender of flow 1) over its span, marked `iperf3_end`,
/// so nothing is "unaccounted" beyond what the server left unread; with omitted seconds its
/// whole-test totals are unknown, not 0.
#[test]
fn the_servers_end_of_a_stream_summary_is_its_own_count() {
    use crate::summarize_with_iperf3;
    let (s2c, c2s) = (FlowDir::ServerToClient, FlowDir::ClientToServer);
    let spec = stream_spec(wirebench_model::spec::Direction::Bidir, 1);
    let client = stream_report(
        HostRole::Client,
        vec![
            flow_side(0, c2s, Role::Sender, 1000, 900, 0, 2 * S),
            flow_side(1, s2c, Role::Receiver, 800, 700, 0, 2 * S),
        ],
        None,
    );
    let mut s = server(vec![
        Iperf3Stream {
            retransmits: None,
            ..stream(1, Some(0), Role::Receiver, 990)
        },
        Iperf3Stream {
            retransmits: Some(7),
            ..stream(2, Some(1), Role::Sender, 800)
        },
    ]);
    complete(&mut s, Some(&client), false);
    let sum = summarize_with_iperf3(&spec, &client, None, Some(&s), false);
    let st = stream_of(&sum);
    let fwd = st.directions.iter().find(|d| d.dir == c2s).unwrap();
    assert_eq!(fwd.iperf3_end, Some(Role::Receiver));
    assert_eq!(
        (fwd.receiver_bytes, fwd.receiver_total_bytes),
        (990, Some(990))
    );
    // 990 B × 8 over the server's 2 s span.
    assert!(close(fwd.receiver_throughput_bps, 3960.0));
    assert_eq!(fwd.receiver_window_ns, 2 * S);
    assert_eq!(fwd.unaccounted_bytes, Some(10));
    let rev = st.directions.iter().find(|d| d.dir == s2c).unwrap();
    assert_eq!(rev.iperf3_end, Some(Role::Sender));
    assert_eq!((rev.sender_bytes, rev.sender_total_bytes), (800, Some(800)));
    assert_eq!((rev.retransmits, rev.unaccounted_bytes), (7, Some(0)));
    let f0 = st.flows.iter().find(|f| f.flow == 0).unwrap();
    assert_eq!(
        (f0.iperf3_end, f0.receiver_bytes),
        (Some(Role::Receiver), 990)
    );
    // This end's figures are its own.
    assert_eq!((f0.sender_bytes, f0.sender_total_bytes), (900, Some(1000)));

    // Omitted seconds: the server counted after them; its totals are unknown.
    let mut omit = spec.clone();
    omit.common.warmup_ms = 1000;
    complete(&mut s, Some(&client), true);
    let sum = summarize_with_iperf3(&omit, &client, None, Some(&s), false);
    let fwd = stream_of(&sum).directions[0].clone();
    assert_eq!(fwd.receiver_bytes, 990);
    assert_eq!(
        (fwd.receiver_total_bytes, fwd.unaccounted_bytes),
        (None, None)
    );
    // Without the server's figures the summary is what it was: that end moved nothing.
    let bare = crate::summarize(&spec, &client, None, false);
    assert_eq!(stream_of(&bare).directions[0].iperf3_end, None);
}

/// The summary of a UDP run against iperf3: forward, the server's received (its highest
/// sequence number less its lost) and jitter fill the receiving end, so the loss is the
/// datagrams it never got, not every datagram sent; reverse, its sent count fills the
/// sending end, this end's received and socket drops stay.
#[test]
fn the_servers_end_of_a_udp_summary_is_its_own_count() {
    use crate::summarize_with_iperf3;
    let spec = {
        let mut s = udp_spec(wirebench_model::spec::Direction::Bidir, 1);
        s.common.warmup_ms = 0;
        s
    };
    let tx = udp_sender(0, 1000, (0, 2 * S), 100, 100);
    let mut rx = udp_receiver(1, 1000, 90, 90);
    rx.highest_seq = Some(96);
    let side = UdpSide {
        senders: vec![tx],
        receivers: vec![rx],
        sockets: Vec::new(),
        intervals: Vec::new(),
        host_drops: None,
    };
    let client = udp_report(HostRole::Client, side, None);
    let udp = |packets, lost: Option<u64>| {
        Some(Iperf3UdpStream {
            packets,
            lost,
            jitter_ms: lost.map(|_| 0.01),
        })
    };
    let mut s = server(vec![
        Iperf3Stream {
            udp: udp(99, Some(4)),
            ..stream(1, Some(0), Role::Receiver, 95_000)
        },
        Iperf3Stream {
            udp: udp(97, None),
            ..stream(3, Some(1), Role::Sender, 97_000)
        },
    ]);
    complete(&mut s, Some(&client), false);
    let sum = summarize_with_iperf3(&spec, &client, None, Some(&s), false);
    let u = udp_of(&sum);
    let fwd = u
        .directions
        .iter()
        .find(|d| d.dir == FlowDir::ClientToServer)
        .unwrap();
    assert_eq!(fwd.iperf3_end, Some(Role::Receiver));
    // 99 seen, 4 lost below: 95 received of the 100 sent; 5 lost.
    assert_eq!((fwd.counts.total_received, fwd.counts.total_lost), (95, 5));
    assert_eq!((fwd.loss.total_lost, fwd.loss.lost_in_path), (5, 5));
    assert_eq!(fwd.loss.dropped_at_receiving_sockets, None);
    assert!(close(fwd.counts.window_loss_pct, 5.0));
    assert!(close(fwd.jitter_max_ns, 10_000.0));
    assert_eq!(fwd.receiver_bytes, 95_000);
    let rev = u
        .directions
        .iter()
        .find(|d| d.dir == FlowDir::ServerToClient)
        .unwrap();
    assert_eq!(rev.iperf3_end, Some(Role::Sender));
    // iperf3 sent 97; this end received 90: 7 lost.
    assert_eq!((rev.counts.total_sent, rev.counts.total_received), (97, 90));
    assert_eq!(rev.loss.total_lost, 7);
    // 90 000 B × 8 over iperf3's 2 s span.
    assert!(close(rev.receiver_rate_bps, 360_000.0));
}
