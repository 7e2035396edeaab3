//! The request/response analysis (TCP RR, TCP CRR, UDP RR) in words and live lines.

use wirebench_model::abort::AbortReason;
use wirebench_model::result::{EndFlowError, OpenLoopSummary};
use wirebench_model::rr::{OpenLoopCounts, RrCounts, RrFlowInterval, RrInterval};
use wirebench_model::side::{HostRole, IntervalData, SideStatus, Span};
use wirebench_model::spec::{RrLoop, TestSpec, WorkloadKind};
use wirebench_model::warning::{Cause, FlowError, Step, Warning};

use super::*;
use wirebench_analysis::summarize;
use wirebench_report::print;

#[test]
fn server_totals_and_requests_in_flight() {
    // The server answered one request more than the client read: 42 001 against 42 000.
    let (spec, client, mut server) = tcp_rr_two();
    rr_mut(&mut server).flows[1].total = tx(11_001);
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(rr_of(&s).server_total, Some(tx(42_001)));
    let w = Warning::RequestsInFlight {
        server_transactions: 42_001,
        client_transactions: 42_000,
    };
    assert!(has(&s, &w), "{:?}", s.warnings);
    assert_eq!(
        sentence(w),
        "the server answered 42001 transactions, the client completed 42000: the difference \
         was in flight at the stop"
    );

    // Not on a run an end aborted: its totals stop anywhere.
    let mut aborted = server.clone();
    aborted.status = SideStatus::Aborted(AbortReason::ServerShutdown);
    let s = summarize(&spec, &client, Some(&aborted), false);
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::RequestsInFlight { .. }
    )));
    assert!(has(
        &s,
        &Warning::SideAborted {
            host: HostRole::Server,
            reason: AbortReason::ServerShutdown
        }
    ));

    // Without the server's report: no server totals, no claim.
    let s = summarize(&spec, &client, None, false);
    let r = rr_of(&s);
    assert_eq!(r.server_total, None);
    assert!(has(&s, &Warning::NoServerReport));
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::RequestsInFlight { .. }
    )));
    // The client's own figures do not depend on the server.
    assert_eq!((r.transactions, r.transactions_per_s), (40_000, 20_000.0));

    // A server report without request/response figures: its totals are 0.
    let mut empty = server.clone();
    empty.data = None;
    let s = summarize(&spec, &client, Some(&empty), false);
    assert_eq!(rr_of(&s).server_total, Some(RrCounts::default()));
}

/// TCP RR open loop at 10 000/s per flow, cap 100, over the 2 s window of [`tcp_rr_two`]:
/// flow 0 achieved `tx0` window transactions, flow 1 `tx1`.
fn open_loop_run(tx0: u64, tx1: u64) -> (TestSpec, SideReport, SideReport) {
    let (mut spec, mut client, server) = tcp_rr_two();
    rr_spec_mut(&mut spec).pacing = RrLoop::Open {
        transactions_per_s: 10_000,
        max_outstanding: 100,
    };
    let flows = &mut rr_mut(&mut client).flows;
    flows[0].window = tx(tx0);
    flows[0].open_loop = Some(OpenLoopCounts {
        slots_in_window: 20_000,
        sent_total: 30_000,
        missed_slots: 0,
        peak_outstanding: 3,
    });
    flows[1].window = tx(tx1);
    flows[1].open_loop = Some(OpenLoopCounts {
        slots_in_window: 20_000,
        sent_total: 28_000,
        missed_slots: 2_000,
        peak_outstanding: 100,
    });
    (spec, client, server)
}

#[test]
fn open_loop_summary_and_behind_warning() {
    // Flow 0: 20 000 / 2 s = 10 000/s, on schedule. Flow 1: 18 000 / 2 s = 9000/s, 90 % of
    // its 10 000/s: behind (below 95 %).
    let (spec, client, server) = open_loop_run(20_000, 18_000);
    let s = summarize(&spec, &client, Some(&server), false);
    let r = rr_of(&s);
    assert_eq!(r.burst, 1);
    // Requested 2 × 10 000/s; achieved 38 000 / 2 s; missed 0 + 2000; peak max(3, 100).
    assert_eq!(
        r.open_loop,
        Some(OpenLoopSummary {
            requested_per_s: 20_000.0,
            achieved_per_s: 19_000.0,
            missed_slots: 2_000,
            peak_outstanding: 100,
        })
    );
    let behind = Warning::OpenLoopBehind {
        flow: 1,
        achieved_per_s: 9_000.0,
        requested_per_s: 10_000.0,
        missed_slots: 2_000,
        peak_outstanding: 100,
        max_outstanding: 100,
    };
    assert!(has(&s, &behind), "{:?}", s.warnings);
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::OpenLoopBehind { flow: 0, .. }
    )));
    assert_eq!(
        sentence(behind),
        "flow 1: open loop behind schedule: 9000.0/s achieved of 10000.0/s requested, 2000 \
         slots never sent, peak outstanding 100 (cap 100)"
    );

    // Exactly 95 %: 19 000 / 2 s = 9500/s is not behind; one transaction fewer is.
    let (spec, client, server) = open_loop_run(20_000, 19_000);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::OpenLoopBehind { .. }
    )));
    let (spec, client, server) = open_loop_run(20_000, 18_999);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has_where(&s, |w| matches!(
        w,
        Warning::OpenLoopBehind { flow: 1, achieved_per_s, .. } if *achieved_per_s == 9_499.5
    )));

    // An aborted client is behind by construction: no warning, the summary still there.
    let (spec, mut client, server) = open_loop_run(20_000, 18_000);
    client.status = SideStatus::Aborted(AbortReason::Interrupted);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::OpenLoopBehind { .. }
    )));
    assert_eq!(
        rr_of(&s).open_loop.as_ref().unwrap().achieved_per_s,
        19_000.0
    );
}

#[test]
fn flow_errors_of_both_ends() {
    let (spec, mut client, mut server) = tcp_rr_two();
    let cut = FlowError {
        step: Step::ResponseRead,
        cause: Cause::PeerClosed { mid_message: true },
    };
    let timed_out = FlowError {
        step: Step::RequestRead,
        cause: Cause::TimedOut { after_ms: 5000 },
    };
    rr_mut(&mut client).flows[1].error = Some(cut.clone());
    rr_mut(&mut client).flows[1].window.errors = 1;
    rr_mut(&mut server).flows[1].error = Some(timed_out.clone());
    let s = summarize(&spec, &client, Some(&server), false);
    let row = &rr_of(&s).per_flow[1];
    assert_eq!(row.errors, 1);
    assert_eq!(
        row.flow_errors,
        vec![
            EndFlowError {
                host: HostRole::Client,
                error: cut.clone(),
            },
            EndFlowError {
                host: HostRole::Server,
                error: timed_out.clone(),
            },
        ]
    );
    assert!(rr_of(&s).per_flow[0].flow_errors.is_empty());
    for (host, error) in [(HostRole::Client, cut), (HostRole::Server, timed_out)] {
        assert!(has(
            &s,
            &Warning::FlowFailed {
                flow: 1,
                host,
                error
            }
        ));
    }
    assert!(says(
        &s,
        "flow 1 failed at the client: reading a response: the peer closed mid-message"
    ));
    assert!(says(
        &s,
        "flow 1 failed at the server: reading a request: nothing arrived within 5000 ms"
    ));
}

#[test]
fn no_client_figures_gives_an_empty_summary() {
    let (spec, mut client, server) = tcp_rr_two();
    client.data = None;
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(&s, &Warning::NoRrFigures));
    assert_eq!(
        sentence(Warning::NoRrFigures),
        "the client reported no request/response figures"
    );
    let r = rr_of(&s);
    assert_eq!(r.workload, WorkloadKind::Rr);
    assert_eq!((r.flows, r.burst, r.request_size_bytes), (2, 1, 1));
    assert_eq!(
        (r.window_ns, r.transactions, r.transactions_per_s),
        (0, 0, 0.0)
    );
    assert_eq!((r.latency, r.server_total), (None, None));
    assert!(r.per_flow.is_empty() && r.intervals.is_empty());
    // Without transactions, no service demand per transaction.
    assert!(s.cpu.iter().all(|c| c.service_demand_us_per_tx.is_none()));
}

#[test]
fn live_interval_line_is_printed_at_the_client() {
    let (spec, _, _) = tcp_rr_two();
    let flow = |flow, transactions, p50: Option<u64>| RrFlowInterval {
        flow,
        transactions,
        lost: 0,
        rtt_p50_ns: p50,
        rtt_p99_ns: p50.map(|p| 2 * p),
    };
    let interval = |flows, rtt_p50_ns, rtt_p99_ns, in_warmup| {
        IntervalData::Rr(RrInterval {
            index: 1,
            span: Span {
                start_ns: S,
                end_ns: 2 * S,
            },
            in_warmup,
            flows,
            rtt_p50_ns,
            rtt_p99_ns,
        })
    };
    // 23 456 in 1 s; round trips: median 41.2 µs, 99th percentile 1.25 ms.
    let sample = interval(
        vec![flow(0, 15_000, Some(40_000)), flow(1, 8_456, Some(43_000))],
        Some(41_200),
        Some(1_250_000),
        false,
    );
    assert_eq!(
        print::interval_lines(HostRole::Client, &spec, &sample),
        vec![
            "[  1.00-  2.00 s] client    23456.0 trans/s  lost 0  rtt p50 41.20 µs p99 1.250 ms"
                .to_string()
        ]
    );
    assert!(print::interval_lines(HostRole::Server, &spec, &sample).is_empty());
    // No transaction completed: no round trip to show.
    let idle = interval(vec![flow(0, 0, None), flow(1, 0, None)], None, None, true);
    assert_eq!(
        print::interval_lines(HostRole::Client, &spec, &idle),
        vec![
            "[  1.00-  2.00 s] client        0.0 trans/s  lost 0  rtt p50 n/a p99 n/a (warm-up)"
                .to_string()
        ]
    );
}

#[test]
fn the_induced_readings_say_why_in_words() {
    use print::rr::induced_reading_text;
    use wirebench_model::result::InducedReading as R;
    assert_eq!(induced_reading_text(None), "");
    let lowered = induced_reading_text(Some(R::Lowered { noise_ns: 425 }));
    assert!(
        lowered.contains("faster, beyond the noise (±425 ns)")
            && lowered.contains("no queue formed at a bottleneck on the path")
            && lowered.contains("waking a CPU from idle"),
        "{lowered}"
    );
    let within = induced_reading_text(Some(R::WithinNoise { noise_ns: 1500 }));
    assert!(
        within.contains("within the noise (±1.500 µs)") && within.contains("no queue formed"),
        "{within}"
    );
    let raised = induced_reading_text(Some(R::Raised { noise_ns: 425 }));
    assert!(raised.contains("raised the median") && !raised.contains("no queue"));
    // The 99th percentile's own sentences name the tail, not the median.
    use print::rr::induced_p99_reading_text;
    assert_eq!(induced_p99_reading_text(None), "");
    let raised = induced_p99_reading_text(Some(R::Raised { noise_ns: 20_000 }));
    assert!(
        raised.contains("99th percentile") && raised.contains("±20.00 µs"),
        "{raised}"
    );
    let within = induced_p99_reading_text(Some(R::WithinNoise { noise_ns: 1500 }));
    assert!(
        within.contains("Induced p99 within the noise (±1.500 µs)") && !within.contains("median"),
        "{within}"
    );
    let lowered = induced_p99_reading_text(Some(R::Lowered { noise_ns: 425 }));
    assert!(
        lowered.contains("faster") && lowered.contains("99th"),
        "{lowered}"
    );
}
