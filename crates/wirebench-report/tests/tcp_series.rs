//! The senders' TCP_INFO per interval: the rows of the summary (known answers from
//! hand-made samples) and the stream figure's companion panels.

use wirebench_model::side::{FlowTcpSample, Role};
use wirebench_model::spec::FlowDir;

use super::*;
use wirebench_analysis::summarize;
use wirebench_report::figures::{run_figures, Drawing, FigureKind};

fn sample(flow: u32, cwnd: u32, srtt_us: u32, retrans: u32, at_close: bool) -> FlowTcpSample {
    FlowTcpSample {
        flow,
        cwnd_segments: cwnd,
        mss_bytes: 1000,
        srtt_us,
        rttvar_us: srtt_us / 2,
        retransmits_total: retrans,
        delivery_rate_bps: Some(1_000_000),
        pacing_rate_bps: None,
        at_close,
    }
}

/// [`forward_two`] with the client (the sender) sampling TCP_INFO at three instants.
fn with_samples() -> (TestSpec, SideReport, SideReport) {
    let (spec, mut client, server) = forward_two();
    let tx = Role::Sender;
    let mut iv = vec![
        byte_interval(0, 0, S, true, &[(0, tx, 1), (1, tx, 1)]),
        byte_interval(1, S, 2 * S, false, &[(0, tx, 1), (1, tx, 1)]),
        byte_interval(2, 2 * S, 3 * S, false, &[(0, tx, 0), (1, tx, 0)]),
    ];
    iv[0].tcp = vec![sample(0, 10, 100, 2, false), sample(1, 20, 300, 0, false)];
    iv[1].tcp = vec![sample(0, 30, 200, 5, false), sample(1, 40, 400, 1, false)];
    iv[2].tcp = vec![sample(0, 30, 200, 6, true), sample(1, 40, 400, 1, true)];
    stream_mut(&mut client).intervals = iv;
    (spec, client, server)
}

#[test]
fn rows_sum_windows_and_retransmit_differences_and_average_the_round_trip() {
    let (spec, client, server) = with_samples();
    let s = summarize(&spec, &client, Some(&server), false);
    let rows = &stream_of(&s).tcp_intervals;
    // Per sample: the direction's row, then one per flow.
    assert_eq!(rows.len(), 9);
    let all: Vec<_> = rows.iter().filter(|r| r.flow.is_none()).collect();
    assert_eq!(all.len(), 3);
    assert!(all
        .iter()
        .all(|r| r.host == HostRole::Client && r.dir == FlowDir::ClientToServer && r.flows == 2));
    assert_eq!(all[0].cwnd_segments, 30);
    assert_eq!(all[0].cwnd_bytes, 30_000);
    assert_eq!(all[0].srtt_ns, 200_000);
    assert_eq!(all[0].srtt_max_ns, 300_000);
    assert_eq!(all[0].rttvar_ns, 100_000);
    assert_eq!(
        all.iter().map(|r| r.retransmits).collect::<Vec<_>>(),
        [2, 4, 1]
    );
    assert_eq!(all[1].delivery_rate_bps, Some(2_000_000));
    assert!(all[0].in_warmup && !all[1].in_warmup);
    assert!(!all[1].at_close && all[2].at_close);
    // A flow's differences add up to its last total.
    let flow0: u64 = rows
        .iter()
        .filter(|r| r.flow == Some(0))
        .map(|r| r.retransmits)
        .sum();
    assert_eq!(flow0, 6);
    assert_eq!(rows[1].end_s, 1.0);
}

#[test]
fn above_the_bound_only_the_direction_has_rows() {
    let (mut spec, mut client, server) = with_samples();
    spec.common.flows = wirebench_analysis::tcp_series::MAX_FLOW_ROWS as u32 + 1;
    let n = spec.common.flows;
    let flows: Vec<FlowSide> = (0..n)
        .map(|f| flow_side(f, FlowDir::ClientToServer, Role::Sender, 1, 1, S, 2 * S))
        .collect();
    stream_mut(&mut client).flows = flows;
    stream_mut(&mut client).intervals[0].tcp =
        (0..n).map(|f| sample(f, 10, 100, 1, false)).collect();
    let s = summarize(&spec, &client, Some(&server), false);
    let rows = &stream_of(&s).tcp_intervals;
    assert!(rows.iter().all(|r| r.flow.is_none()), "{rows:?}");
    assert_eq!(rows[0].flows, n);
    assert_eq!(rows[0].retransmits, u64::from(n));
}

#[test]
fn the_stream_figure_stacks_the_tcp_panels_under_the_throughput() {
    let (spec, client, server) = with_samples();
    let summary = summarize(&spec, &client, Some(&server), false);
    let mut run = record(0, summary);
    run.client = Some(client);
    run.server = Some(server);
    let r = result_for(spec, vec![run]);
    let figs = run_figures(&r);
    let f = figs
        .iter()
        .find(|n| n.kind == FigureKind::Timeseries)
        .expect("a time series");
    let Drawing::Panels(p) = &f.figure else {
        panic!("panels expected: {:?}", f.figure);
    };
    assert_eq!(p.panels.len(), 4);
    let labels: Vec<&str> = p.panels.iter().map(|x| x.y.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "payload throughput at the receiver",
            "retransmitted in the interval (sender)",
            "congestion window (sender)",
            "smoothed round trip (sender)"
        ]
    );
    // Each companion panel: both flows and the total, the values of the rows.
    for panel in &p.panels[1..] {
        let names: Vec<&str> = panel.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["flow 0", "flow 1", "total forward"]);
    }
    let cwnd_total: Vec<f64> = p.panels[2].series[2].points.iter().map(|q| q.y).collect();
    assert_eq!(cwnd_total, [30_000.0, 70_000.0, 70_000.0]);
    assert!(f.svg().is_ok());
}
