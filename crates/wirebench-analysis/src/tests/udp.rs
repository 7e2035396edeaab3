//! The UDP stream analysis and its loss attribution, figures computed by hand.

use wirebench_model::result::{UdpCounts, UdpLossAttribution};
use wirebench_model::side::{HostRole, IntervalData};
use wirebench_model::spec::{Direction, FlowDir};
use wirebench_model::udp::UdpSide;

use super::*;
use crate::live::{self, LiveRows};
use crate::summarize;
use crate::udp::{add, attribute_loss, counts};

/// Summed counts with `total_sent`, `send_refused` and `total_received` (the figures the
/// attribution reads).
fn totals(total_sent: u64, send_refused: u64, total_received: u64) -> UdpCounts {
    UdpCounts {
        total_sent,
        send_refused,
        total_received,
        ..UdpCounts::default()
    }
}

#[test]
fn forward_one_flow_arithmetic() {
    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, Some(&server), false);
    let u = udp_of(&s);
    assert_eq!(u.directions.len(), 1);
    let d = &u.directions[0];
    assert_eq!(d.dir, FlowDir::ClientToServer);
    assert_eq!(d.flows, 1);
    assert_eq!(d.datagram_bytes, 1000);
    assert_eq!(d.target_rate_per_flow_bps, Some(8_000_000));
    let c = &d.counts;
    // Window: 2000 sent, 1950 received: 50 lost, 50 / 2000 = 2.5 %.
    assert_eq!(
        (c.window_sent, c.window_received, c.window_lost),
        (2000, 1950, 50)
    );
    assert!(close(c.window_loss_pct, 2.5));
    // Whole test: 2500 − 2440 = 60.
    assert_eq!(
        (c.total_sent, c.total_received, c.total_lost),
        (2500, 2440, 60)
    );
    assert_eq!((c.late, c.duplicate, c.too_old), (5, 3, 1));
    assert_eq!((c.send_refused, c.send_errors, c.pacing_resets), (10, 2, 0));
    // Rates over the sender's 2 s window: 2000 × 1000 B × 8 / 2 s = 8 Mbit/s sent,
    // 1950 × 1000 × 8 / 2 = 7.8 Mbit/s received.
    assert_eq!(d.sender_window_ns, 2 * S);
    assert_eq!((d.sender_bytes, d.receiver_bytes), (2_000_000, 1_950_000));
    assert_eq!(d.sender_rate_bps, 8_000_000.0);
    assert_eq!(d.receiver_rate_bps, 7_800_000.0);
    assert_eq!(d.jitter_max_ns, 12_345.0);
    // 1 + 2 + 3 + 4 invalid datagrams at the server's socket.
    assert_eq!(d.invalid_datagrams, 10);
    // Lost over the whole test: 2500 sent + 10 refused − 2440 received = 70 sequence
    // numbers; 10 refused, 20 socket overflows, InErrors 35 − 20 overflows = 15 host drops,
    // 70 − 10 − 20 − 15 = 25 in the path.
    assert_eq!(
        d.loss,
        UdpLossAttribution {
            total_lost: 70,
            refused_at_sender: 10,
            dropped_at_receiving_sockets: Some(20),
            dropped_by_receiving_host: Some(15),
            lost_in_path: 25,
        }
    );

    assert_eq!(u.flows.len(), 1);
    let f = &u.flows[0];
    assert_eq!((f.flow, f.dir), (0, FlowDir::ClientToServer));
    assert_eq!(&f.counts, c);
    assert_eq!((f.sender_rate_bps, f.receiver_rate_bps), (8e6, 7.8e6));
    assert_eq!(f.jitter_ns, 12_345.0);
    assert!(f.errors.is_empty());

    // The receiving end's interval: 990 000 bytes in [1 s, 2 s] = 7.92 Mbit/s; 10 lost of
    // the 1000 sequence numbers it covered = 1 %.
    assert_eq!(u.intervals.len(), 1);
    let i = &u.intervals[0];
    assert_eq!(
        (i.row.host, i.row.dir, i.row.bytes),
        (HostRole::Server, FlowDir::ClientToServer, 990_000)
    );
    assert_eq!(
        (i.row.start_s, i.row.end_s, i.row.throughput_bps),
        (1.0, 2.0, 7_920_000.0)
    );
    assert_eq!(
        (i.datagrams, i.expected, i.lost, i.loss_pct),
        (990, 1000, 10, 1.0)
    );
    assert_eq!((i.late, i.duplicate, i.jitter_max_ns), (2, 1, Some(12_000)));

    // UDP has no congestion control; both ends measured CPU; nothing to warn about.
    assert!(s.congestion.is_empty());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // Service demand over what was delivered: 7.8 Mbit/s = 952.148 KB/s; client 10 % of 4
    // CPUs = 4e5 µs/s → 420.10 µs/KB; threads 0.1 s = 1e5 µs over 1 950 000 B = 1904.3 KB
    // → 52.51 µs/KB.
    let cl = &s.cpu[0];
    assert!(close(
        cl.service_demand_us_per_kb.unwrap(),
        4e5 / (7.8e6 / 8.0 / 1024.0)
    ));
    assert!(close(
        cl.threads_service_demand_us_per_kb.unwrap(),
        1e5 / (1_950_000.0 / 1024.0)
    ));
    assert_eq!(cl.service_demand_us_per_tx, None);
}

#[test]
fn counts_of_one_flow() {
    let (_, client, server) = udp_forward_one();
    let snd = &client.udp().unwrap().senders[0];
    let rcv = &server.udp().unwrap().receivers[0];
    let c = counts(Some(snd), Some(rcv));
    assert_eq!(c.window_lost, 50);
    assert_eq!(c.total_lost, 60);
    // Without the receiver every datagram sent is lost: 2000 of 2000 = 100 %.
    let c = counts(Some(snd), None);
    assert_eq!(
        (c.window_received, c.window_lost, c.total_lost),
        (0, 2000, 2500)
    );
    assert_eq!(c.window_loss_pct, 100.0);
    assert_eq!((c.late, c.duplicate, c.send_refused), (0, 0, 10));
    // Without the sender nothing was sent: the received count makes the loss negative, and
    // no percentage is computed from 0 sent.
    let c = counts(None, Some(rcv));
    assert_eq!(
        (c.window_sent, c.window_lost, c.total_lost),
        (0, -1950, -2440)
    );
    assert_eq!(c.window_loss_pct, 0.0);
    assert_eq!((c.late, c.send_errors), (5, 0));
    assert_eq!(counts(None, None), UdpCounts::default());
}

#[test]
fn add_sums_and_recomputes_the_percentage() {
    let mut a = UdpCounts {
        window_sent: 1000,
        window_received: 990,
        window_lost: 10,
        window_loss_pct: 1.0,
        total_sent: 1200,
        total_received: 1185,
        total_lost: 15,
        late: 1,
        duplicate: 2,
        too_old: 3,
        send_refused: 4,
        send_errors: 5,
        pacing_resets: 6,
    };
    let b = UdpCounts {
        window_sent: 3000,
        window_received: 2900,
        window_lost: 100,
        window_loss_pct: 10.0 / 3.0,
        total_sent: 3100,
        total_received: 2990,
        total_lost: 110,
        late: 10,
        duplicate: 20,
        too_old: 30,
        send_refused: 40,
        send_errors: 50,
        pacing_resets: 60,
    };
    add(&mut a, &b);
    // 110 lost of 4000 sent = 2.75 % (not 1 % + 3.33 %).
    assert_eq!(
        a,
        UdpCounts {
            window_sent: 4000,
            window_received: 3890,
            window_lost: 110,
            window_loss_pct: 2.75,
            total_sent: 4300,
            total_received: 4175,
            total_lost: 125,
            late: 11,
            duplicate: 22,
            too_old: 33,
            send_refused: 44,
            send_errors: 55,
            pacing_resets: 66,
        }
    );
}

#[test]
fn loss_attribution_from_kernel_counts() {
    // 1000 sent + 20 refused − 900 received = 120 lost.
    let c = totals(1000, 20, 900);

    // Two sockets overflowed 30 and 10 times; InErrors 55 of which RcvbufErrors 40:
    // host drops 55 − 40 = 15; path 120 − 20 − 40 − 15 = 45.
    let r = receiving(&[Some(30), Some(10)], Some((40, 55)));
    assert_eq!(
        attribute_loss(&c, Some(&r)),
        UdpLossAttribution {
            total_lost: 120,
            refused_at_sender: 20,
            dropped_at_receiving_sockets: Some(40),
            dropped_by_receiving_host: Some(15),
            lost_in_path: 45,
        }
    );

    // One socket could not report SO_RXQ_OVFL: the socket figure is unknown, and the host
    // figure is InErrors beyond RcvbufErrors: 55 − 40 = 15; path 120 − 20 − 15 = 85.
    let r = receiving(&[Some(30), None], Some((40, 55)));
    assert_eq!(
        attribute_loss(&c, Some(&r)),
        UdpLossAttribution {
            total_lost: 120,
            refused_at_sender: 20,
            dropped_at_receiving_sockets: None,
            dropped_by_receiving_host: Some(15),
            lost_in_path: 85,
        }
    );

    // /proc/net/snmp not read: host figure unknown; path 120 − 20 − 40 = 60.
    let r = receiving(&[Some(30), Some(10)], None);
    let l = attribute_loss(&c, Some(&r));
    assert_eq!(
        (
            l.dropped_at_receiving_sockets,
            l.dropped_by_receiving_host,
            l.lost_in_path
        ),
        (Some(40), None, 60)
    );

    // No receiving report at all: only the sender's refusals are known; 120 − 20 = 100.
    let l = attribute_loss(&c, None);
    assert_eq!(
        l,
        UdpLossAttribution {
            total_lost: 120,
            refused_at_sender: 20,
            dropped_at_receiving_sockets: None,
            dropped_by_receiving_host: None,
            lost_in_path: 100,
        }
    );

    // Socket drops above InErrors (other counters wrapped, or another namespace): host 0,
    // not negative.
    let r = receiving(&[Some(50)], Some((50, 45)));
    assert_eq!(
        attribute_loss(&c, Some(&r)).dropped_by_receiving_host,
        Some(0)
    );

    // More drops counted than datagrams lost (other UDP traffic in the namespace): the path
    // share is clamped at 0: 120 − 20 − 90 − 30 < 0.
    let r = receiving(&[Some(90)], Some((90, 120)));
    let l = attribute_loss(&c, Some(&r));
    assert_eq!((l.dropped_by_receiving_host, l.lost_in_path), (Some(30), 0));

    // Nothing lost: 500 + 0 − 500.
    let l = attribute_loss(
        &totals(500, 0, 500),
        Some(&receiving(&[Some(0)], Some((0, 0)))),
    );
    assert_eq!(
        (l.total_lost, l.dropped_at_receiving_sockets, l.lost_in_path),
        (0, Some(0), 0)
    );

    // A receiver that counted more than was sent does not make the loss negative.
    assert_eq!(attribute_loss(&totals(100, 0, 120), None).total_lost, 0);
}

#[test]
fn two_flows_sum_and_take_the_largest_jitter_and_window() {
    let spec = udp_spec(Direction::Forward, 2);
    // Flow 0: 2000 of 1000 B over [1 s, 3 s]; flow 1 started late: 500 over [2 s, 3 s].
    let client = udp_report(
        HostRole::Client,
        UdpSide {
            senders: vec![
                udp_sender(0, 1000, (S, 3 * S), 2000, 2000),
                udp_sender(1, 1000, (2 * S, 3 * S), 500, 500),
            ],
            receivers: Vec::new(),
            sockets: Vec::new(),
            intervals: Vec::new(),
            host_drops: None,
        },
        None,
    );
    let mut r0 = udp_receiver(0, 1000, 1990, 1990);
    r0.jitter_ns = 5_000.0;
    let mut r1 = udp_receiver(1, 1000, 480, 480);
    r1.jitter_ns = 9_000.0;
    let mut side = receiving(&[Some(3), Some(4)], Some((7, 7)));
    side.receivers = vec![r0, r1];
    let server = udp_report(HostRole::Server, side, None);
    let s = summarize(&spec, &client, Some(&server), false);
    let u = udp_of(&s);
    let d = &u.directions[0];
    assert_eq!(d.flows, 2);
    // Sums: 2500 sent, 2470 received, 30 lost = 1.2 %.
    assert_eq!(
        (
            d.counts.window_sent,
            d.counts.window_received,
            d.counts.window_lost
        ),
        (2500, 2470, 30)
    );
    assert!(close(d.counts.window_loss_pct, 1.2));
    // The direction's window is its longest flow's, 2 s: 2.5e6 B × 8 / 2 = 10 Mbit/s sent,
    // 2.47e6 × 8 / 2 = 9.88 Mbit/s received.
    assert_eq!(d.sender_window_ns, 2 * S);
    assert_eq!(d.sender_rate_bps, 10_000_000.0);
    assert_eq!(d.receiver_rate_bps, 9_880_000.0);
    assert_eq!(d.jitter_max_ns, 9_000.0);
    // Per flow, each over its own window: flow 1 480 000 B × 8 / 1 s = 3.84 Mbit/s.
    assert_eq!(u.flows[0].sender_rate_bps, 8_000_000.0);
    assert_eq!(u.flows[1].sender_rate_bps, 4_000_000.0);
    assert_eq!(u.flows[1].receiver_rate_bps, 3_840_000.0);
    // 2500 − 2470 = 30 lost: 3 + 4 at the sockets, InErrors 7 − 7 = 0 at the host, 23 in
    // the path.
    assert_eq!(
        d.loss,
        UdpLossAttribution {
            total_lost: 30,
            refused_at_sender: 0,
            dropped_at_receiving_sockets: Some(7),
            dropped_by_receiving_host: Some(0),
            lost_in_path: 23,
        }
    );
}

#[test]
fn bidir_attributes_each_direction_to_its_receiving_end() {
    let spec = udp_spec(Direction::Bidir, 1);
    // Flow 0 client → server: 1000 sent, 900 received by the server.
    // Flow 1 server → client: 2000 sent (5 refused), 1980 received by the client.
    let mut s1 = udp_sender(1, 500, (S, 3 * S), 2000, 2000);
    s1.send_refused = 5;
    let mut client_side = receiving(&[Some(6)], Some((6, 8)));
    client_side.senders = vec![udp_sender(0, 1000, (S, 3 * S), 1000, 1000)];
    client_side.receivers = vec![udp_receiver(1, 500, 1980, 1980)];
    client_side.receivers[0].jitter_ns = 700.0;
    let mut server_side = receiving(&[Some(60)], Some((60, 75)));
    server_side.senders = vec![s1];
    server_side.receivers = vec![udp_receiver(0, 1000, 900, 900)];
    server_side.sockets[0].invalid.foreign_source = 2;
    let client = udp_report(HostRole::Client, client_side, None);
    let server = udp_report(HostRole::Server, server_side, None);
    let s = summarize(&spec, &client, Some(&server), false);
    let u = udp_of(&s);
    let dirs: Vec<FlowDir> = u.directions.iter().map(|d| d.dir).collect();
    assert_eq!(dirs, vec![FlowDir::ClientToServer, FlowDir::ServerToClient]);
    let (fwd, rev) = (&u.directions[0], &u.directions[1]);
    // Forward, received by the server: 100 lost = 60 socket + (75 − 60) host + 25 path.
    assert_eq!(fwd.datagram_bytes, 1000);
    assert_eq!(fwd.counts.window_lost, 100);
    assert_eq!(
        fwd.loss,
        UdpLossAttribution {
            total_lost: 100,
            refused_at_sender: 0,
            dropped_at_receiving_sockets: Some(60),
            dropped_by_receiving_host: Some(15),
            lost_in_path: 25,
        }
    );
    assert_eq!(fwd.invalid_datagrams, 2);
    assert_eq!(fwd.jitter_max_ns, 0.0);
    // Reverse, received by the client: 2000 + 5 − 1980 = 25 = 5 refused + 6 socket +
    // (8 − 6) host + 12 path.
    assert_eq!(rev.datagram_bytes, 500);
    assert_eq!(rev.counts.window_lost, 20);
    assert_eq!(
        rev.loss,
        UdpLossAttribution {
            total_lost: 25,
            refused_at_sender: 5,
            dropped_at_receiving_sockets: Some(6),
            dropped_by_receiving_host: Some(2),
            lost_in_path: 12,
        }
    );
    assert_eq!(rev.invalid_datagrams, 0);
    assert_eq!(rev.jitter_max_ns, 700.0);
    // 1980 × 500 B × 8 / 2 s = 3.96 Mbit/s.
    assert_eq!(rev.receiver_rate_bps, 3_960_000.0);
    assert_eq!(
        u.flows.iter().map(|f| (f.flow, f.dir)).collect::<Vec<_>>(),
        vec![(0, FlowDir::ClientToServer), (1, FlowDir::ServerToClient)]
    );
}

#[test]
fn live_rows_of_the_receiving_end() {
    let (spec, _, server) = udp_forward_one();
    let sample = IntervalData::UdpStream(server.udp().unwrap().intervals[0].clone());
    let LiveRows::UdpStream(rows) = live::rows(HostRole::Server, &spec, &sample) else {
        panic!("UDP rows")
    };
    // 990 datagrams, 990 000 bytes in 1 s: 7.92 Mbit/s; 2 late, 1 duplicate; 10 lost of
    // 1000. The live row is the summary's row.
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!((r.datagrams, r.late, r.duplicate), (990, 2, 1));
    assert_eq!(
        (r.expected, r.lost, r.jitter_max_ns),
        (1000, 10, Some(12_000))
    );
    assert_eq!(
        (r.row.host, r.row.dir, r.row.bytes),
        (HostRole::Server, FlowDir::ClientToServer, 990_000)
    );
    assert_eq!(r.row.throughput_bps, 7_920_000.0);
    let client = udp_forward_one().1;
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(&udp_of(&s).intervals[0], r);
    // The client receives nothing in a forward test.
    assert_eq!(
        live::rows(HostRole::Client, &spec, &sample),
        LiveRows::UdpStream(Vec::new())
    );
}
