//! The TCP stream analysis's figures (ported from the string-based tests; every assertion kept, typed).

use wirebench_model::side::{HostRole, IntervalData, Role};
use wirebench_model::spec::{Direction, FlowDir};

use super::*;
use crate::live::{self, LiveRows};
use crate::summarize;

#[test]
fn forward_two_flows_arithmetic() {
    let (spec, client, server) = forward_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let st = stream_of(&s);
    assert_eq!(st.directions.len(), 1);
    let d = &st.directions[0];
    assert_eq!(d.dir, FlowDir::ClientToServer);
    assert_eq!(d.flows, 2);
    // 2 × 625 MB = 1.25 GB in the union of the windows, [1 s, 2 s]: 1.25e9 × 8 / 1 = 10 Gbit/s.
    assert_eq!(d.receiver_bytes, 1_250_000_000);
    assert_eq!(d.receiver_window_ns, S);
    assert_eq!(d.receiver_throughput_bps, 10e9);
    assert_eq!(d.sender_throughput_bps, 10e9);
    // 2 × 700 MB both ways: nothing unaccounted.
    assert_eq!(d.sender_total_bytes, Some(1_400_000_000));
    assert_eq!(d.receiver_total_bytes, Some(1_400_000_000));
    assert_eq!(d.unaccounted_bytes, Some(0));
    // 3 retransmits per sender.
    assert_eq!(d.retransmits, 6);
    assert_eq!(d.jain_index, Some(1.0));
    let sp = d.flow_throughput.unwrap();
    assert_eq!((sp.n, sp.min, sp.max), (2, 5e9, 5e9));

    assert_eq!(st.flows.len(), 2);
    for f in &st.flows {
        assert_eq!(f.sender, HostRole::Client);
        // 625e6 × 8 / 1 s.
        assert_eq!(f.receiver_throughput_bps, 5e9);
        assert_eq!(f.sender_throughput_bps, 5e9);
        assert_eq!(f.retransmits, 3);
        assert_eq!(f.rtt_us, Some(40));
        assert_eq!(f.cwnd_segments, Some(100));
        assert_eq!(f.mss_bytes, Some(1448));
        assert_eq!(f.pmtu_bytes, Some(1500));
        assert_eq!(f.sndbuf_bytes, Some(2_626_560));
        assert_eq!(f.rcvbuf_bytes, Some(131_072));
        assert_eq!(f.congestion.as_deref(), Some("cubic"));
        assert!(f.errors.is_empty());
    }
    assert_eq!(s.congestion, vec!["cubic".to_string()]);
    assert!(!s.same_host);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    // Intervals from the receiver (the server).
    assert_eq!(st.intervals.len(), 2);
    let r = &st.intervals[1];
    assert_eq!(r.host, HostRole::Server);
    assert_eq!(r.bytes, 1_250_000_000);
    assert_eq!(r.throughput_bps, 10e9);
    assert_eq!((r.start_s, r.end_s), (1.0, 2.0));
    assert!(st.intervals[0].in_warmup && !r.in_warmup);

    // Live rows: only the receiving end produces rows.
    let sample = IntervalData::Stream(server.stream().unwrap().intervals[1].clone());
    assert_eq!(
        live::rows(HostRole::Server, &spec, &sample),
        LiveRows::Stream(vec![r.clone()])
    );
    assert_eq!(
        live::rows(HostRole::Client, &spec, &sample),
        LiveRows::Stream(Vec::new())
    );

    // CPU per end.
    assert_eq!(s.cpu.len(), 2);
    let c = &s.cpu[0];
    assert_eq!(c.host, HostRole::Client);
    assert_eq!(c.window_ns, S);
    assert_eq!(c.system_busy_pct, 25.0);
    assert_eq!(c.busiest_cpu, 3);
    assert_eq!(c.busiest.busy_pct, 60.0);
    // 0.5 s of thread time over a 1 s window.
    assert_eq!(c.threads_util_pct_of_one_cpu, 50.0);
}

#[test]
fn service_demand_values() {
    // 50 % of 2 CPUs while delivering 8 Gbit/s: 1e6 µs/s / 976 562.5 KB/s = 1.024 µs/KB.
    let spec = stream_spec(Direction::Forward, 1);
    let c2s = FlowDir::ClientToServer;
    let client = stream_report(
        HostRole::Client,
        vec![flow_side(0, c2s, Role::Sender, S, S, S, 2 * S)],
        Some(cpu(2, 50.0, 50.0, S, S)),
    );
    let server = stream_report(
        HostRole::Server,
        vec![flow_side(0, c2s, Role::Receiver, S, S, S, 2 * S)],
        Some(cpu(2, 50.0, 50.0, S, S)),
    );
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(stream_of(&s).directions[0].receiver_throughput_bps, 8e9);
    assert_eq!(s.cpu.len(), 2);
    for c in &s.cpu {
        assert!(close(c.service_demand_us_per_kb.unwrap(), 1.024));
        // 1 s of thread CPU for 1e9 bytes: 1e6 µs / 976 562.5 KB.
        assert!(close(c.threads_service_demand_us_per_kb.unwrap(), 1.024));
        assert_eq!(c.threads_util_pct_of_one_cpu, 100.0);
        assert_eq!(c.threads_user_ns + c.threads_system_ns, S);
        // No transactions in a stream run.
        assert_eq!(c.service_demand_us_per_tx, None);
        assert_eq!(c.threads_service_demand_us_per_tx, None);
    }
}

/// Each receiving flow's interval rate is its bytes × 8 over the interval, at the interval's
/// end: the server of `forward_two` read 75 MB and then 625 MB per flow in two 1 s intervals.
#[test]
fn receiver_flow_intervals_are_bytes_over_the_interval() {
    let (_, client, mut server) = forward_two();
    let rates = crate::stream::receiver_flow_intervals(stream_mut(&mut server));
    assert_eq!(rates.len(), 2);
    for (flow, pts) in &rates {
        assert_eq!(pts, &vec![(1.0, 600e6), (2.0, 5e9)], "flow {flow}");
    }
    // The client sends only: no receiving flow.
    let mut c = client;
    assert!(crate::stream::receiver_flow_intervals(stream_mut(&mut c)).is_empty());
}
