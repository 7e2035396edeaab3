//! The request/response analysis (TCP RR, TCP CRR, UDP RR), figures computed by hand.

use wirebench_model::result::RrFlowRow;
use wirebench_model::rr::{RrCounts, RrFlowInterval, RrInterval};
use wirebench_model::side::{HostRole, IntervalData, Span};
use wirebench_model::spec::{
    CloseMode, CrrSpec, RrLoop, TestSpec, UdpRrSpec, WorkloadKind, WorkloadSpec,
};
use wirebench_model::warning::Warning;

use super::*;
use crate::live::{self, LiveRows};
use crate::summarize;

#[test]
fn tcp_rr_transactions_latency_and_flows() {
    let (spec, client, server) = tcp_rr_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!(r.workload, WorkloadKind::Rr);
    assert_eq!(r.close_mode, None);
    assert_eq!((r.request_size_bytes, r.response_size_bytes), (1, 1));
    assert_eq!(r.burst, 1);
    assert_eq!(r.flows, 2);
    // The client's window [1 s, 3 s].
    assert_eq!(r.window_ns, 2 * S);
    // 30 000 + 10 000 in the window, over 2 s: 20 000/s.
    assert_eq!(r.transactions, 40_000);
    assert_eq!(r.transactions_per_s, 20_000.0);
    // The latency is the client's merged histogram, passed through.
    assert_eq!(r.latency, Some(latency(40_000, 28_000, 80_000)));
    assert_eq!(r.client_window, tx(40_000));
    // 31 000 + 11 000 over the whole test, at both ends.
    assert_eq!(r.client_total, tx(42_000));
    assert_eq!(r.server_total, Some(tx(42_000)));
    assert_eq!(r.loss_pct, None);
    assert_eq!(r.open_loop, None);
    assert!(r.intervals.is_empty());
    // Per flow: 30 000 / 2 s = 15 000/s, 10 000 / 2 s = 5000/s; each flow's own latency.
    assert_eq!(
        r.per_flow,
        vec![
            RrFlowRow {
                flow: 0,
                transactions: 30_000,
                transactions_per_s: 15_000.0,
                rtt_p50_ns: Some(24_000),
                rtt_p99_ns: Some(60_000),
                lost: 0,
                errors: 0,
                flow_errors: Vec::new(),
            },
            RrFlowRow {
                flow: 1,
                transactions: 10_000,
                transactions_per_s: 5_000.0,
                rtt_p50_ns: Some(40_000),
                rtt_p99_ns: Some(90_000),
                lost: 0,
                errors: 0,
                flow_errors: Vec::new(),
            },
        ]
    );
    let sp = r.flow_transactions_per_s.unwrap();
    assert_eq!(
        (sp.n, sp.min, sp.median, sp.mean, sp.max),
        (2, 5_000.0, 10_000.0, 10_000.0, 15_000.0)
    );
    // Jain: (15 000 + 5000)² / (2 × (15 000² + 5000²)) = 4e8 / (2 × 2.5e8) = 0.8.
    assert!(close(r.jain_index.unwrap(), 0.8));
    assert_eq!(s.congestion, vec!["cubic".to_string()]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    // CPU per transaction. Client: 50 % of 2 CPUs = 1e6 µs/s over 20 000/s = 50 µs/tx; its
    // threads 1 s = 1e6 µs over 40 000 transactions = 25 µs/tx. Server: 25 % of 2 CPUs =
    // 5e5 µs/s / 20 000 = 25 µs/tx; threads 5e5 µs / 40 000 = 12.5 µs/tx.
    assert_eq!(s.cpu.len(), 2);
    let (c, v) = (&s.cpu[0], &s.cpu[1]);
    assert_eq!((c.host, v.host), (HostRole::Client, HostRole::Server));
    assert!(close(c.service_demand_us_per_tx.unwrap(), 50.0));
    assert!(close(c.threads_service_demand_us_per_tx.unwrap(), 25.0));
    assert!(close(v.service_demand_us_per_tx.unwrap(), 25.0));
    assert!(close(v.threads_service_demand_us_per_tx.unwrap(), 12.5));
    // No bytes are counted as delivered in a request/response run.
    assert_eq!(c.service_demand_us_per_kb, None);
    assert_eq!(c.threads_service_demand_us_per_kb, None);
    // 1 s of threads over the 2 s CPU window.
    assert_eq!(c.threads_util_pct_of_one_cpu, 50.0);
}

#[test]
fn unequal_zero_and_three_flow_fairness() {
    // Three flows 3000, 1000, 2000 in the 2 s window: 1500, 500, 1000 /s.
    // Jain = 3000² / (3 × (1500² + 500² + 1000²)) = 9e6 / (3 × 3.5e6) = 6/7.
    let (spec, mut client, server) = tcp_rr_two();
    let spec = with_flows(spec, 3);
    let flows = &mut rr_mut(&mut client).flows;
    flows[0].window = tx(3000);
    flows[1].window = tx(1000);
    flows.push(rr_flow(2, tx(2000), tx(2000), None));
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!(r.transactions, 6000);
    assert_eq!(r.transactions_per_s, 3000.0);
    assert!(close(r.jain_index.unwrap(), 6.0 / 7.0));
    let sp = r.flow_transactions_per_s.unwrap();
    assert_eq!((sp.min, sp.median, sp.max), (500.0, 1000.0, 1500.0));
    assert_eq!(
        (r.per_flow[2].rtt_p50_ns, r.per_flow[2].rtt_p99_ns),
        (None, None)
    );

    // No transactions at all: the rates are 0, the index undefined.
    let (spec, mut client, server) = tcp_rr_two();
    for f in &mut rr_mut(&mut client).flows {
        f.window = RrCounts::default();
    }
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!((r.transactions, r.transactions_per_s), (0, 0.0));
    assert_eq!(r.jain_index, None);
    assert_eq!(r.flow_transactions_per_s.unwrap().max, 0.0);
    // No transactions: no service demand per transaction.
    assert_eq!(s.cpu[0].service_demand_us_per_tx, None);
    assert_eq!(s.cpu[0].threads_service_demand_us_per_tx, None);
}

#[test]
fn crr_counts_errors_and_closes() {
    let mut spec = TestSpec::new(WorkloadSpec::Crr(CrrSpec {
        request_size_bytes: 100,
        response_size_bytes: 200,
        close_mode: CloseMode::Abortive,
        ..CrrSpec::default()
    }));
    spec.common.flows = 1;
    // 5000 connections completed in the 1 s window [2 s, 3 s], 1 failed after connecting and 2
    // failed to connect; 6000 over the whole test.
    let window = RrCounts {
        transactions: 5000,
        errors: 1,
        connect_errors: 2,
        ..RrCounts::default()
    };
    let total = RrCounts {
        transactions: 6000,
        errors: 1,
        connect_errors: 2,
        ..RrCounts::default()
    };
    let mut client = rr_report(
        HostRole::Client,
        (2 * S, 3 * S),
        vec![rr_flow(
            0,
            window,
            total,
            Some(latency(5000, 50_000, 90_000)),
        )],
        Some(latency(5000, 50_000, 90_000)),
        None,
    );
    rr_mut(&mut client).close_mode = Some(CloseMode::Abortive);
    // The server answered 6003 (three responses the client never read) and saw every close
    // as a reset.
    let server_total = RrCounts {
        transactions: 6003,
        closes_reset: 6003,
        ..RrCounts::default()
    };
    let server = rr_report(
        HostRole::Server,
        (2 * S, 3 * S),
        vec![rr_flow(0, RrCounts::default(), server_total, None)],
        None,
        None,
    );
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!(r.workload, WorkloadKind::Crr);
    assert_eq!(r.close_mode, Some(CloseMode::Abortive));
    assert_eq!((r.request_size_bytes, r.response_size_bytes), (100, 200));
    assert_eq!(r.burst, 1);
    // 5000 / 1 s.
    assert_eq!(r.transactions_per_s, 5000.0);
    assert_eq!(r.client_window, window);
    assert_eq!(r.client_total, total);
    assert_eq!(r.server_total, Some(server_total));
    // Row errors count connect failures too: 1 + 2.
    assert_eq!(r.per_flow[0].errors, 3);
    assert_eq!(r.loss_pct, None);
    // The in-flight check is TCP RR's only; CRR sockets report no congestion control, and
    // that is not worth a warning either.
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::RequestsInFlight { .. }
    )));
    assert!(!has(&s, &Warning::CongestionUnreported));
    assert!(s.congestion.is_empty());
}

#[test]
fn udp_rr_loss() {
    let mut spec = TestSpec::new(WorkloadSpec::UdpRr(UdpRrSpec {
        request_size_bytes: 64,
        response_size_bytes: 1024,
        timeout_ms: 50,
        busy_poll: None,
    }));
    spec.common.flows = 1;
    // In the 1 s window [1 s, 2 s]: 975 answered, 25 lost (4 of them answered late), 1
    // garbage datagram.
    let window = RrCounts {
        transactions: 975,
        lost: 25,
        late: 4,
        garbage: 1,
        ..RrCounts::default()
    };
    let client = rr_report(
        HostRole::Client,
        (S, 2 * S),
        vec![rr_flow(
            0,
            window,
            window,
            Some(latency(975, 30_000, 70_000)),
        )],
        Some(latency(975, 30_000, 70_000)),
        None,
    );
    let server = rr_report(
        HostRole::Server,
        (S, 2 * S),
        vec![rr_flow(0, RrCounts::default(), tx(990), None)],
        None,
        None,
    );
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!(r.workload, WorkloadKind::UdpRr);
    assert_eq!((r.request_size_bytes, r.response_size_bytes), (64, 1024));
    assert_eq!(r.transactions_per_s, 975.0);
    // 25 / (975 + 25) = 2.5 %.
    assert!(close(r.loss_pct.unwrap(), 2.5));
    assert_eq!(r.per_flow[0].lost, 25);
    assert_eq!(r.per_flow[0].errors, 0);
    assert_eq!((r.client_window.late, r.client_window.garbage), (4, 1));
    // The server answered 990 and the client read 975: no TCP in-flight check for UDP, and
    // no congestion control to report.
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::RequestsInFlight { .. }
    )));
    assert!(s.congestion.is_empty());
    assert!(!has(&s, &Warning::CongestionUnreported));

    // Every request lost: 10 / (0 + 10) = 100 %.
    let mut all_lost = client.clone();
    rr_mut(&mut all_lost).flows[0].window = RrCounts {
        lost: 10,
        ..RrCounts::default()
    };
    let s = summarize(&spec, &all_lost, Some(&server), false);
    assert_eq!(rr_of(&s).loss_pct, Some(100.0));
    // Nothing attempted in the window: no loss figure.
    rr_mut(&mut all_lost).flows[0].window = RrCounts::default();
    let s = summarize(&spec, &all_lost, Some(&server), false);
    assert_eq!(rr_of(&s).loss_pct, None);
}

#[test]
fn closed_loop_burst_is_reported() {
    let (mut spec, client, server) = tcp_rr_two();
    rr_spec_mut(&mut spec).pacing = RrLoop::Closed { burst: 8 };
    rr_spec_mut(&mut spec).request_size_bytes = 32;
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(rr_of(&s).burst, 8);
    assert_eq!(rr_of(&s).request_size_bytes, 32);
    assert_eq!(rr_of(&s).open_loop, None);
}

#[test]
fn client_interval_rows_and_live_rows() {
    let (spec, mut client, server) = tcp_rr_two();
    let sample = |index: u32, start: u64, end: u64, in_warmup: bool| RrInterval {
        index,
        span: Span {
            start_ns: start,
            end_ns: end,
        },
        in_warmup,
        flows: vec![
            RrFlowInterval {
                flow: 0,
                transactions: 5000,
                lost: 2,
                rtt_p50_ns: Some(40_000),
                rtt_p99_ns: Some(90_000),
            },
            RrFlowInterval {
                flow: 1,
                transactions: 3000,
                lost: 1,
                rtt_p50_ns: Some(60_000),
                rtt_p99_ns: Some(70_000),
            },
        ],
        // The engine's merge of the two flows' histograms (not an average of theirs).
        rtt_p50_ns: Some(45_000),
        rtt_p99_ns: Some(88_000),
    };
    rr_mut(&mut client).intervals = vec![sample(0, S / 2, S, true), sample(1, S, S + S / 2, false)];
    let s = summarize(&spec, &client, Some(&server), false);
    let rows = &rr_of(&s).intervals;
    assert_eq!(rows.len(), 2);
    let r = &rows[1];
    // 5000 + 3000 in 0.5 s: 16 000/s; 2 + 1 lost.
    assert_eq!((r.start_s, r.end_s), (1.0, 1.5));
    assert_eq!(r.host, HostRole::Client);
    assert_eq!(
        (r.transactions, r.transactions_per_s, r.lost),
        (8000, 16_000.0, 3)
    );
    // The all-flows percentiles are the merged ones the engine computed.
    assert_eq!((r.rtt_p50_ns, r.rtt_p99_ns), (Some(45_000), Some(88_000)));
    assert!(rows[0].in_warmup && !r.in_warmup);

    let live_sample = IntervalData::Rr(sample(1, S, S + S / 2, false));
    assert_eq!(
        live::rows(HostRole::Client, &spec, &live_sample),
        LiveRows::Rr(Some(r.clone()))
    );
    // A server's sample gives no row.
    assert_eq!(
        live::rows(HostRole::Server, &spec, &live_sample),
        LiveRows::Rr(None)
    );
}

/// The sanity checks on request/response: a server claiming to have answered fewer
/// transactions than the client completed makes the run impossible; a server report with
/// no request/response counts at all (its engine never ran) proves nothing either way.
#[test]
fn more_transactions_than_answered_is_impossible_only_with_server_counts() {
    use wirebench_model::warning::Impossibility;
    let (spec, client, mut server) = tcp_rr_two();
    // The server says it answered 1 000 and 11 000: 12 000 against the client's 42 000.
    rr_mut(&mut server).flows[0].total = tx(1_000);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(
        &s,
        &Warning::Impossible {
            what: Impossibility::MoreTransactionsThanAnswered {
                client_transactions: 42_000,
                server_transactions: 12_000,
            }
        }
    ));
    assert!(crate::is_impossible(&s));

    let (spec, client, mut server) = tcp_rr_two();
    server.data = None;
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(!crate::is_impossible(&s), "{:?}", s.warnings);
}

/// Round trips `lo_us..=hi_us` µs, one each, as a result's latency histogram.
fn uniform_buckets(lo_us: u64, hi_us: u64) -> wirebench_stats::buckets::LatencyBuckets {
    let mut h = wirebench_stats::latency::LatencyHistogram::new();
    for us in lo_us..=hi_us {
        h.record(us * 1000);
    }
    wirebench_stats::buckets::LatencyBuckets::of(&h)
}

#[test]
fn induced_latency_is_read_against_the_medians_noise() {
    use crate::under_load::{induced_reading, median_half_width_ns};
    use wirebench_model::result::InducedReading as R;
    // 10,000 values 1 µs apart (1 µs .. 10 ms): the median's 95 % bounds are the ranks
    // n/2 ± 1.96·√n/2 = 5000 ± 98, i.e. values 98 µs either side; the histogram's log
    // interpolation within a 9 % bucket keeps it within 10 %.
    let hw = median_half_width_ns(&uniform_buckets(1, 10_000)).unwrap();
    assert!((hw - 98_000.0).abs() < 0.1 * 98_000.0, "{hw}");
    assert_eq!(
        median_half_width_ns(&wirebench_stats::buckets::LatencyBuckets::of(
            &wirebench_stats::latency::LatencyHistogram::new()
        )),
        None
    );
    // The loopback case of issue 32: idle p50 30 µs, loaded 6.288 µs lower, each median
    // ±0.3 µs: beyond the noise of √(0.3² + 0.3²) = 0.42 µs, so lowered.
    assert_eq!(
        induced_reading(-6288, 300.0, 300.0, 30_000),
        R::Lowered { noise_ns: 425 }
    );
    assert_eq!(
        induced_reading(400, 300.0, 300.0, 30_000),
        R::WithinNoise { noise_ns: 425 }
    );
    assert_eq!(
        induced_reading(-400, 300.0, 300.0, 30_000),
        R::WithinNoise { noise_ns: 425 }
    );
    assert_eq!(
        induced_reading(5_000_000, 300.0, 300.0, 30_000),
        R::Raised { noise_ns: 425 }
    );
    // Tight medians: the noise is at least 1 % of the idle median (3 significant digits).
    assert_eq!(
        induced_reading(-250, 1.0, 1.0, 30_000),
        R::WithinNoise { noise_ns: 300 }
    );
    assert_eq!(
        induced_reading(-301, 1.0, 1.0, 30_000),
        R::Lowered { noise_ns: 300 }
    );
}

#[test]
fn the_99th_percentiles_noise_comes_from_its_own_order_statistics() {
    use crate::under_load::quantile_half_width_ns;
    // 10,000 values 1 µs apart: the 99th percentile's 95 % bounds are the ranks
    // n·0.99 ± 1.96·√(n·0.99·0.01) = 9900 ± 19.5, i.e. values 19.5 µs either side (within
    // the histogram's 10 %), a fifth of the median's 98 µs: the tail is sparser in count
    // but, for a uniform spread, as dense in value.
    let h = uniform_buckets(1, 10_000);
    let hw = quantile_half_width_ns(&h, 0.99).unwrap();
    assert!((hw - 19_500.0).abs() < 0.1 * 19_500.0 + 1_000.0, "{hw}");
    // 100 values: the upper bound (rank 99 + 1.95) is past the largest sample, so it is
    // clamped to it; the half-width spans the top few samples (at most (100 - 97) / 2 µs
    // plus the histogram's width), never NaN or negative.
    let few = uniform_buckets(1, 100);
    let hw = quantile_half_width_ns(&few, 0.99).unwrap();
    assert!(hw.is_finite() && hw > 0.0 && hw < 5_000.0, "{hw}");
    // The median through the general function is the median's.
    assert_eq!(
        quantile_half_width_ns(&h, 0.5),
        crate::under_load::median_half_width_ns(&h)
    );
}
