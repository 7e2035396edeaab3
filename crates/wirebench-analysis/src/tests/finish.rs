//! [`crate::finish`]: what a result gains after its runs, whoever ran it.

use wirebench_model::verdict::{Evidence, Missing};

use super::*;
use crate::finish::{finish, needs_limits};
use crate::limits::{physical_context, profile_cost};
use crate::verdict::machine_limits;

/// The copy-bandwidth evidence of the first run's verdict: (copies per byte, copy bandwidth
/// of the limits, share of it used, %).
fn copy_evidence(r: &RunResult) -> Option<(f64, f64, f64)> {
    let v = r.runs[0].summary.as_ref()?.verdict.as_ref()?;
    v.evidence.iter().find_map(|e| match e {
        Evidence::CopyBandwidth {
            copies_per_byte,
            copy_bytes_per_s,
            copy_bandwidth_pct,
            ..
        } => Some((*copies_per_byte, *copy_bytes_per_s, *copy_bandwidth_pct)),
        _ => None,
    })
}

/// A loopback copy stream of 16 Gbit/s against cached limits: 2 GB/s of payload copied twice
/// on this machine = 4 GB/s, against 40 GB/s (one thread, 128 KiB): 10 %. `finish` gives
/// the result that physical context, and the verdict weighs it; the same as the single
/// test's steps did before they were one function (context first, then the verdict).
#[test]
fn a_stream_result_gets_its_physical_context_and_the_limits_in_its_verdict() {
    let l = limits();
    let before = stream_result(one_flow(), 16e9);
    assert!(needs_limits(&before));
    assert_eq!(copy_evidence(&before), None);
    let mut r = before.clone();
    finish(&mut r, Some(&l));
    let p = r.physical.as_ref().expect("a physical context");
    assert!(close(p.copies_per_byte, 2.0) && close(p.copy_bandwidth_pct, 10.0));
    let (copies, copy_bps, pct) = copy_evidence(&r).expect("copy-bandwidth evidence");
    assert!(close(copies, 2.0) && close(copy_bps, 40e9) && close(pct, 10.0));
    let v = r.runs[0]
        .summary
        .as_ref()
        .unwrap()
        .verdict
        .as_ref()
        .unwrap();
    assert!(!v.missing.contains(&Missing::Limits));
    assert!(v
        .evidence
        .iter()
        .any(|e| matches!(e, Evidence::LimitsMeasured { .. })));
    assert_eq!(r.profile_cost, None);
    // The steps test_cmd took by hand before `finish` existed.
    let mut by_hand = before;
    by_hand.physical = physical_context(&by_hand, &l);
    machine_limits(&mut by_hand, Some(&l));
    assert_eq!(r, by_hand);
}

/// Without cached limits a stream result gets no physical context, and its verdict lists
/// the limits missing.
#[test]
fn without_limits_the_verdict_says_they_are_missing() {
    let mut r = stream_result(one_flow(), 16e9);
    finish(&mut r, None);
    assert_eq!(r.physical, None);
    assert_eq!(copy_evidence(&r), None);
    let v = r.runs[0]
        .summary
        .as_ref()
        .unwrap()
        .verdict
        .as_ref()
        .unwrap();
    assert!(v.missing.contains(&Missing::Limits), "{v:?}");
}

/// A profiled result of any workload states its sampling rate and expected cost; a
/// request/response result is otherwise left as it was, and so is a result without a spec.
#[test]
fn profiled_results_get_their_cost_and_other_workloads_nothing_else() {
    let l = limits();
    let (spec, client, server) = tcp_rr_two();
    let summary = summarize(&spec, &client, Some(&server), false);
    let rr = result_for(spec, vec![record(0, summary)]);
    assert!(!needs_limits(&rr));
    let mut r = rr.clone();
    finish(&mut r, Some(&l));
    assert_eq!(r, rr);
    let mut profiled = rr.clone();
    profiled.spec.as_mut().unwrap().common.profile_hz = Some(99);
    assert!(needs_limits(&profiled));
    let mut r = profiled.clone();
    finish(&mut r, Some(&l));
    assert_eq!(r.profile_cost, Some(profile_cost(99, Some(&l))));
    assert_eq!(r.profile_cost.as_ref().map(|c| c.freq_hz), Some(99));
    r.profile_cost = None;
    assert_eq!(r, profiled);
    let mut no_spec = rr.clone();
    no_spec.spec = None;
    assert!(!needs_limits(&no_spec));
    let mut r = no_spec.clone();
    finish(&mut r, Some(&l));
    assert_eq!(r, no_spec);
}
