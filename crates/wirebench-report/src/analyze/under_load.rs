//! Latency under load: the idle and loaded round trips of a request/response test, client
//! side, and the latency the load induced (loaded − idle, at the median and at the 99th
//! percentile). Each round trip is the first completed run's window latency (the single
//! test's own figure); the load's throughput is the receivers' payload rate summed over its
//! directions.

use wirebench_model::result::{RrSummary, RunResult, RunStatus, UnderLoadSummary, WorkloadSummary};

/// The request/response summary of the first completed run of `r`.
fn rr(r: &RunResult) -> Option<&RrSummary> {
    r.runs
        .iter()
        .find_map(|run| match run.summary.as_ref().map(|s| &s.workload) {
            Some(WorkloadSummary::Rr(s)) if run.status == RunStatus::Completed => Some(s.as_ref()),
            _ => None,
        })
}

/// The load's receivers' payload rate, all directions, first run (bit/s).
fn load_bps(r: &RunResult) -> Option<f64> {
    r.runs
        .iter()
        .find_map(|run| match run.summary.as_ref().map(|s| &s.workload) {
            Some(WorkloadSummary::Stream(s)) => {
                Some(s.directions.iter().map(|d| d.receiver_throughput_bps).sum())
            }
            _ => None,
        })
}

/// The summary of an under-load test; `None` unless both request/response runs have
/// latencies and the load has a stream summary.
pub fn summary(idle: &RunResult, loaded: &RunResult, load: &RunResult) -> Option<UnderLoadSummary> {
    let (i, l) = (rr(idle)?, rr(loaded)?);
    let (il, ll) = (i.latency.as_ref()?, l.latency.as_ref()?);
    let diff = |a: u64, b: u64| {
        i64::try_from(a).unwrap_or(i64::MAX) - i64::try_from(b).unwrap_or(i64::MAX)
    };
    Some(UnderLoadSummary {
        idle_rtt_p50_ns: il.p50_ns,
        idle_rtt_p99_ns: il.p99_ns,
        loaded_rtt_p50_ns: ll.p50_ns,
        loaded_rtt_p99_ns: ll.p99_ns,
        induced_p50_ns: diff(ll.p50_ns, il.p50_ns),
        induced_p99_ns: diff(ll.p99_ns, il.p99_ns),
        idle_transactions_per_s: i.transactions_per_s,
        loaded_transactions_per_s: l.transactions_per_s,
        load_throughput_bps: load_bps(load)?,
    })
}
