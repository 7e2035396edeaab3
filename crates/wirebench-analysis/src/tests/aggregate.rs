//! Confidence intervals over the runs of an invocation.

use wirebench_model::result::{RunStatus, WorkloadSummary};
use wirebench_stats::ci::ConfidenceLevel;

use super::*;
use crate::{aggregate, summarize};

#[test]
fn aggregate_target_met() {
    let runs = runs_with(&[10.0e9, 10.01e9, 9.99e9]);
    let a = aggregate(&runs, ConfidenceLevel::P99, 5.0);
    assert_eq!(a.level_pct, 99);
    assert_eq!(a.runs, 3);
    let tp = a.throughput_bps.as_ref().unwrap();
    assert_eq!(tp.n, 3);
    assert!(close(tp.mean, 10e9));
    assert!(tp.width_pct < 5.0);
    // Identical CPU figures: zero width.
    assert_eq!(a.client_cpu_busy_pct.as_ref().unwrap().mean, 25.0);
    assert_eq!(a.server_cpu_busy_pct.as_ref().unwrap().width_pct, 0.0);
    assert!(a.target_met);
    // A stream run has no transactions and no round trips.
    assert!(a.transactions_per_s.is_none() && a.rtt_p50_ns.is_none());
}

#[test]
fn aggregate_target_not_met() {
    let runs = runs_with(&[5e9, 10e9, 15e9]);
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert!(!a.target_met);
    assert!(a.throughput_bps.unwrap().width_pct > 5.0);

    // One run: no interval, so the target cannot be met.
    let a = aggregate(&runs_with(&[10e9]), ConfidenceLevel::P95, 5.0);
    assert!(a.throughput_bps.is_none() && !a.target_met);

    // Runs that did not complete do not count.
    let mut runs = runs_with(&[10e9, 10e9, 1e9]);
    runs[2].status = RunStatus::Interrupted;
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert_eq!(a.throughput_bps.as_ref().unwrap().n, 2);
    assert!(a.target_met);
    // ... but they are runs of the invocation.
    assert_eq!(a.runs, 3);

    // A zero mean has an infinite relative width: not met, left out of the JSON.
    let a = aggregate(&runs_with(&[0.0, 0.0]), ConfidenceLevel::P95, 5.0);
    assert!(!a.target_met);
    assert!(a.throughput_bps.is_none());
    let a = aggregate(&runs_with(&[1e9, 1e9]), ConfidenceLevel::P95, f64::NAN);
    assert_eq!(a.target_width_pct, 0.0);
    // A negative target counts as 0.
    let a = aggregate(&runs_with(&[1e9, 1e9]), ConfidenceLevel::P95, -3.0);
    assert_eq!(a.target_width_pct, 0.0);
}

#[test]
fn runs_without_a_summary_do_not_count() {
    let mut runs = runs_with(&[10e9, 10e9, 10e9]);
    runs[1].summary = None;
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert_eq!(a.throughput_bps.as_ref().unwrap().n, 2);
    assert_eq!(a.client_cpu_busy_pct.as_ref().unwrap().n, 2);
}

/// Request/response runs of [`tcp_rr_two`] at `tps[i]` transactions/s, median round trip
/// `p50[i]` ns (`None`: no latency).
fn rr_runs(tps: &[f64], p50: &[Option<u64>]) -> Vec<RunRecord> {
    let (spec, client, server) = tcp_rr_two();
    tps.iter()
        .zip(p50)
        .enumerate()
        .map(|(i, (&t, &p))| {
            let mut s = summarize(&spec, &client, Some(&server), false);
            match &mut s.workload {
                WorkloadSummary::Rr(r) => {
                    r.transactions_per_s = t;
                    r.latency = p.map(|p| latency(1000, p, 2 * p));
                }
                _ => unreachable!("a request/response summary"),
            }
            record(u32::try_from(i).unwrap(), s)
        })
        .collect()
}

#[test]
fn request_response_runs_give_transactions_and_round_trips() {
    // 20 000, 20 100, 19 900 /s: mean 20 000, sample stddev 100; at 95 % t(2) = 4.303:
    // half width 4.303 × 100 / √3 = 248.43, full width 496.87 / 20 000 = 2.48 % ≤ 5 %.
    let runs = rr_runs(
        &[20_000.0, 20_100.0, 19_900.0],
        &[Some(28_000), Some(28_000), Some(28_000)],
    );
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    let t = a.transactions_per_s.as_ref().unwrap();
    assert_eq!(t.n, 3);
    assert!(close(t.mean, 20_000.0));
    assert!(close(t.stddev, 100.0));
    assert!(close(t.half_width, 4.303 * 100.0 / 3f64.sqrt()));
    assert!(close(
        t.width_pct,
        2.0 * 4.303 * 100.0 / 3f64.sqrt() / 20_000.0 * 100.0
    ));
    // Identical medians: zero width.
    let p = a.rtt_p50_ns.as_ref().unwrap();
    assert_eq!((p.mean, p.width_pct), (28_000.0, 0.0));
    // No throughput in a request/response run; the transactions interval carries the target.
    assert!(a.throughput_bps.is_none());
    assert!(a.target_met);
    // Client 50 %, server 25 % in every run.
    assert_eq!(a.client_cpu_busy_pct.as_ref().unwrap().mean, 50.0);
    assert_eq!(a.server_cpu_busy_pct.as_ref().unwrap().mean, 25.0);

    // At 99 % t(2) = 9.925: width 2 × 9.925 × 100 / √3 / 20 000 = 5.73 % > 5 %: not met.
    let a = aggregate(&runs, ConfidenceLevel::P99, 5.0);
    assert!(!a.target_met);
    assert!(close(
        a.transactions_per_s.unwrap().width_pct,
        2.0 * 9.925 * 100.0 / 3f64.sqrt() / 20_000.0 * 100.0
    ));

    // A run without latency gives no median: two samples remain.
    let runs = rr_runs(
        &[20_000.0, 20_000.0, 20_000.0],
        &[Some(28_000), None, Some(30_000)],
    );
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert_eq!(a.transactions_per_s.as_ref().unwrap().n, 3);
    let p = a.rtt_p50_ns.as_ref().unwrap();
    assert_eq!((p.n, p.mean), (2, 29_000.0));
}

#[test]
fn udp_runs_give_the_received_rate() {
    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, Some(&server), false);
    let runs = vec![record(0, s.clone()), record(1, s)];
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    // 7.8 Mbit/s received in both runs (not the 8 Mbit/s sent).
    let t = a.throughput_bps.as_ref().unwrap();
    assert_eq!((t.n, t.mean, t.width_pct), (2, 7_800_000.0, 0.0));
    assert!(a.transactions_per_s.is_none());
    assert!(a.target_met);
}
