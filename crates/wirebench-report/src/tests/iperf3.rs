//! A `--iperf3` run's reconciliation: each flow's bytes as wirebench and the iperf3 server
//! counted them, and why they differ.

use wirebench_model::iperf3::{Iperf3Server, Iperf3Stream, ReconcileNote};
use wirebench_model::side::{HostRole, Role};
use wirebench_model::spec::FlowDir;

use super::*;
use crate::analyze::iperf3::complete;

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
