//! The UDP stream analysis in words and live lines.

use wirebench_model::result::{EndFlowError, UdpLossAttribution};
use wirebench_model::side::{HostRole, IntervalData, Role};
use wirebench_model::spec::{Direction, FlowDir};
use wirebench_model::warning::{Cause, FlowError, Impossibility, OsError, Step, Warning};

use super::*;
use wirebench_analysis::live::{self, LiveRows};
use wirebench_analysis::summarize;
use wirebench_report::print;

#[test]
fn missing_reports_are_warned_and_count_as_lost() {
    let (spec, client, _) = udp_forward_one();
    let s = summarize(&spec, &client, None, false);
    assert!(has(&s, &Warning::NoServerReport));
    let w = Warning::UdpMissingReport {
        flow: 0,
        role: Role::Receiver,
    };
    assert!(has(&s, &w), "{:?}", s.warnings);
    assert_eq!(sentence(w), "UDP flow 0: the receiver's report is missing");
    let d = &udp_of(&s).directions[0];
    assert_eq!((d.counts.window_received, d.counts.window_lost), (0, 2000));
    assert_eq!(d.receiver_rate_bps, 0.0);
    // Sender's figures still there: 8 Mbit/s.
    assert_eq!(d.sender_rate_bps, 8e6);
    // 2500 + 10 − 0 = 2510 lost; nothing known of the receiving end.
    assert_eq!(
        d.loss,
        UdpLossAttribution {
            total_lost: 2510,
            refused_at_sender: 10,
            dropped_at_receiving_sockets: None,
            dropped_by_receiving_host: None,
            lost_in_path: 2500,
        }
    );
    assert!(udp_of(&s).intervals.is_empty());

    // A client report without the sender: the sender's report is missing; no window, no
    // rates, and the receiver's datagrams make the window loss negative.
    let (spec, mut client, server) = udp_forward_one();
    udp_mut(&mut client).senders.clear();
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(
        &s,
        &Warning::UdpMissingReport {
            flow: 0,
            role: Role::Sender
        }
    ));
    let d = &udp_of(&s).directions[0];
    assert_eq!(
        (d.sender_window_ns, d.sender_rate_bps, d.receiver_rate_bps),
        (0, 0.0, 0.0)
    );
    // The datagram size comes from the spec when no sender reported it.
    assert_eq!(
        (d.datagram_bytes, d.target_rate_per_flow_bps),
        (1000, Some(8_000_000))
    );
    assert_eq!(d.counts.window_lost, -1950);
    // 1950 received of 0 sent cannot be true.
    assert!(has(
        &s,
        &Warning::Impossible {
            what: Impossibility::ReceivedMoreThanSent {
                dir: FlowDir::ClientToServer,
                sent: 0,
                received: 1950,
            }
        }
    ));
}

#[test]
fn disagreeing_reports_pacing_and_errors_are_warned() {
    let (spec, mut client, mut server) = udp_forward_one();
    // The receiver counts 2001 window datagrams of the 2000 sent.
    udp_mut(&mut server).receivers[0].window_datagrams_received = 2001;
    udp_mut(&mut client).senders[0].pacing_resets = 3;
    let refused = FlowError {
        step: Step::Send,
        cause: Cause::Os {
            error: OsError {
                errno: Some(111),
                message: "connection refused".into(),
            },
        },
    };
    udp_mut(&mut client).senders[0].error = Some(refused.clone());
    let s = summarize(&spec, &client, Some(&server), false);
    let d = &udp_of(&s).directions[0];
    assert_eq!(d.counts.window_lost, -1);
    // −1 / 2000 = −0.05 %.
    assert!(close(d.counts.window_loss_pct, -0.05));
    let more = Warning::Impossible {
        what: Impossibility::ReceivedMoreThanSent {
            dir: FlowDir::ClientToServer,
            sent: 2000,
            received: 2001,
        },
    };
    assert!(has(&s, &more));
    assert_eq!(
        sentence(more),
        "INVALID: forward: the receivers got 2001 distinct window datagrams of 2000 sent; these \
         figures cannot be true"
    );
    let behind = Warning::PacingFellBehind {
        dir: FlowDir::ClientToServer,
        resets: 3,
    };
    assert!(has(&s, &behind));
    assert_eq!(
        sentence(behind),
        "forward: the UDP sender fell behind its schedule 3 times and skipped ahead instead of \
         bursting (the rate was not met then)"
    );
    assert_eq!(
        udp_of(&s).flows[0].errors,
        vec![EndFlowError {
            host: HostRole::Client,
            error: refused.clone(),
        }]
    );
    assert!(has(
        &s,
        &Warning::FlowFailed {
            flow: 0,
            host: HostRole::Client,
            error: refused,
        }
    ));
    assert!(says(
        &s,
        "flow 0 failed at the client: sending: connection refused"
    ));
}

/// Two flows in one direction: the direction's interval sums their datagrams, sequence
/// numbers and losses (each flow's loss clamped on its own, so a flow whose late datagrams
/// filled earlier gaps does not cancel another flow's loss) and takes the larger jitter; a
/// flow that has received nothing yet has no jitter.
#[test]
fn interval_rows_sum_flows_and_take_the_largest_jitter() {
    use wirebench_model::udp::{UdpFlowInterval, UdpInterval};
    let spec = udp_spec(Direction::Forward, 2);
    let flow = |flow, datagrams, expected, lost, jitter_ns| UdpFlowInterval {
        flow,
        role: Role::Receiver,
        datagrams,
        bytes: datagrams * 1000,
        send_errors: 0,
        late: 0,
        duplicate: 0,
        expected,
        lost,
        jitter_ns,
    };
    let sample = |flows| {
        IntervalData::UdpStream(UdpInterval {
            index: 0,
            span: Span {
                start_ns: 0,
                end_ns: S / 2,
            },
            in_warmup: true,
            flows,
        })
    };
    let rows = |s: &IntervalData| match live::rows(HostRole::Server, &spec, s) {
        LiveRows::UdpStream(r) => r,
        other => panic!("{other:?}"),
    };
    // Flow 0: 480 of 500 (20 lost), jitter 3 µs; flow 1: 5 late ones filling earlier gaps
    // and nothing new (the engine reports 0 lost, not −5), jitter 9 µs.
    let mut f1 = flow(1, 5, 0, 0, Some(9_000));
    f1.late = 5;
    let r = rows(&sample(vec![flow(0, 480, 500, 20, Some(3_000)), f1]));
    assert_eq!(r.len(), 1);
    let r = &r[0];
    assert_eq!((r.datagrams, r.expected, r.lost, r.late), (485, 500, 20, 5));
    assert_eq!(r.loss_pct, 4.0);
    assert_eq!(r.jitter_max_ns, Some(9_000));
    assert_eq!(r.row.throughput_bps, 485_000.0 * 8.0 * 2.0);
    assert!(r.row.in_warmup);
    // Nothing received yet: no jitter, no loss, 0 % (not NaN).
    let r = rows(&sample(vec![
        flow(0, 0, 0, 0, None),
        flow(1, 0, 0, 0, None),
    ]));
    assert_eq!(
        (r[0].expected, r[0].lost, r[0].loss_pct, r[0].jitter_max_ns),
        (0, 0, 0.0, None)
    );
    // A sender's entries of the same flows are not the receiver's figures.
    let mut tx = flow(0, 7, 0, 0, None);
    tx.role = Role::Sender;
    let r = rows(&sample(vec![tx, flow(1, 3, 4, 1, Some(1))]));
    assert_eq!((r[0].datagrams, r[0].expected, r[0].lost), (3, 4, 1));
}

#[test]
fn live_interval_line_is_printed_at_the_receiver() {
    let (spec, _, server) = udp_forward_one();
    let sample = IntervalData::UdpStream(server.udp().unwrap().intervals[0].clone());
    // 990 000 B in 1 s: 7.92 Mbit/s; 10 lost of 1000 = 1 %; jitter 12 000 ns; 2 late and
    // 1 duplicate shown because there were some.
    let lines = print::interval_lines(HostRole::Server, &spec, &sample);
    assert_eq!(
        lines,
        vec![
            "[  1.00-  2.00 s] server forward 7.920 Mbit/s  lost 10/1000 (1.00 %)  jitter \
             12.00 µs  late 2 dup 1"
                .to_string()
        ]
    );
    assert!(lines[0].chars().count() <= print::MAX_COLUMNS);
    assert!(print::interval_lines(HostRole::Client, &spec, &sample).is_empty());
    // Without reordering the line says nothing of it; a warm-up interval says so; a line at
    // 10 Gbit/s with large counts still fits.
    let mut quiet = server.udp().unwrap().intervals[0].clone();
    let f = &mut quiet.flows[0];
    (f.late, f.duplicate, f.bytes, f.datagrams) = (0, 0, 1_250_000_000, 1_041_000);
    (f.expected, f.lost, f.jitter_ns) = (1_041_667, 667, None);
    quiet.in_warmup = true;
    let line = &print::interval_lines(HostRole::Server, &spec, &IntervalData::UdpStream(quiet))[0];
    assert_eq!(
        line,
        "[  1.00-  2.00 s] server forward 10.00 Gbit/s  lost 667/1041667 (0.06 %)  jitter n/a \
         (warm-up)"
    );
    assert!(line.chars().count() <= print::MAX_COLUMNS);
}
