//! The verdict against what a test forced: a tiny socket buffer (the receive window must be
//! the limit, and the same test without it must be much faster), pacing (the rate asked for
//! is the limit, and the receivers got it), a closed-loop request/response test (the round
//! trip is the limit: transactions/s = flows × burst / mean round trip, which a burst of 4
//! raises).

mod common;

use common::*;
use wirebench_model::result::RunResult;
use wirebench_model::verdict::{Limiter, Suggestion};

fn verdict(r: &RunResult) -> &wirebench_model::verdict::Verdict {
    r.runs[0]
        .summary
        .as_ref()
        .and_then(|s| s.verdict.as_ref())
        .expect("a verdict")
}

fn throughput(r: &RunResult) -> f64 {
    r.runs[0]
        .summary
        .as_ref()
        .and_then(|s| s.stream())
        .map(|s| s.directions.iter().map(|d| d.receiver_throughput_bps).sum())
        .unwrap()
}

/// A 4 KiB socket buffer: the senders wait for the receiver's window (TCP_INFO), and
/// without the small buffer the same path is at least four times faster.
#[test]
fn a_tiny_buffer_is_a_receive_window_limit() {
    let _g = serial();
    let small = wb(&["stream", "-t", "1", "-C", "cubic", "-w", "4K", "--json"]);
    assert_eq!(small.code, 0, "{}", small.stderr);
    let small = small.json();
    let v = verdict(&small);
    assert!(
        matches!(v.limiter, Limiter::ReceiveWindow { limited_pct, .. } if limited_pct >= 25.0),
        "{v:?}"
    );
    assert!(v.suggestions.contains(&Suggestion::LargerWindow));
    let big = wb(&["stream", "-t", "1", "-C", "cubic", "--json"]).json();
    let (s, b) = (throughput(&small), throughput(&big));
    assert!(b > 4.0 * s, "unconstrained {b} vs 4 KiB window {s}");
    assert!(!matches!(
        verdict(&big).limiter,
        Limiter::ReceiveWindow { .. }
    ));
}

/// Paced at 300 Mbit/s: the verdict is the pacing, and the receivers got the rate.
#[test]
fn pacing_is_named_when_the_rate_is_met() {
    let _g = serial();
    let r = wb(&["stream", "-t", "1", "-b", "300M", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = r.json();
    let v = verdict(&r);
    match v.limiter {
        Limiter::Pacing {
            target_bps,
            achieved_pct,
        } => {
            assert_eq!(target_bps, 300e6);
            assert!((95.0..=105.0).contains(&achieved_pct), "{achieved_pct}");
        }
        ref l => panic!("{l:?}"),
    }
    let got = throughput(&r);
    assert!((285e6..=315e6).contains(&got), "{got}");
}

/// Closed-loop request/response is bound by the round trip: the verdict's allowed rate is
/// flows × burst / mean RTT from the latency summary, and a burst of 4 raises the rate.
#[test]
fn closed_loop_rr_is_round_trip_bound() {
    let _g = serial();
    let one = wb(&["rr", "-t", "1", "--json"]).json();
    let s = one.runs[0].summary.as_ref().unwrap();
    let rr = s.rr().expect("rr summary");
    let mean = rr.latency.as_ref().unwrap().mean_ns;
    match verdict(&one).limiter {
        Limiter::RoundTrip {
            allowed_per_s,
            measured_per_s,
            ..
        } => {
            assert!((allowed_per_s - 1e9 / mean).abs() < 1e-6 * allowed_per_s);
            assert_eq!(measured_per_s, rr.transactions_per_s);
        }
        // A saturated CPU is also a true answer on a loaded machine.
        Limiter::Cpu { busy_pct, .. } => assert!(busy_pct >= 90.0),
        ref l => panic!("{l:?}"),
    }
    let four = wb(&["rr", "-t", "1", "--burst", "4", "--json"]).json();
    let tps4 = four.runs[0]
        .summary
        .as_ref()
        .unwrap()
        .rr()
        .unwrap()
        .transactions_per_s;
    assert!(
        tps4 > 1.3 * rr.transactions_per_s,
        "burst 4: {tps4}/s vs burst 1: {}/s",
        rr.transactions_per_s
    );
}
