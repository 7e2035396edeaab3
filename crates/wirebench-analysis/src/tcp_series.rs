//! TCP_INFO over time: the senders' per-interval TCP_INFO samples as rows of the stream
//! summary ([`TcpIntervalRow`]).
//!
//! For each direction, the rows come from the end that *sends* it: per interval sample of
//! that end, the samples of its sending flows of the direction. Per flow: `cwnd_bytes =
//! cwnd_segments × mss_bytes`, `srtt_ns = tcpi_rtt × 1000`, `rttvar_ns` likewise, and
//! `retransmits` = the flow's `tcpi_total_retrans` minus its value at the flow's previous
//! sample (0 before the first), so over a run the rows of a flow add up to its last sampled
//! total (its value at close: the engine's last sample follows every close). The row of
//! all flows (`flow: None`) sums windows, retransmits and delivery rates, averages the round
//! trips and keeps the largest; per-flow rows follow it when the end sends the direction on
//! at most [`MAX_FLOW_ROWS`] flows. Times are seconds after the sending end's start, on its
//! clock.

use std::collections::BTreeMap;

use wirebench_model::side::{ByteInterval, FlowTcpSample, HostRole, SideReport};
use wirebench_model::spec::FlowDir;
use wirebench_model::tcp_series::TcpIntervalRow;

/// Most flows given a row of their own per interval; above it only the direction's row.
pub const MAX_FLOW_ROWS: usize = 16;

/// The rows of `dir` from the reports, read at `sender` (see the module docs); `map` gives
/// each flow's direction.
pub(crate) fn rows(
    sender: HostRole,
    dir: FlowDir,
    map: &BTreeMap<u32, FlowDir>,
    reports: &[(HostRole, &SideReport)],
) -> Vec<TcpIntervalRow> {
    let Some(side) = reports
        .iter()
        .find(|(h, _)| *h == sender)
        .and_then(|(_, r)| r.stream())
    else {
        return Vec::new();
    };
    let flows: Vec<u32> = map
        .iter()
        .filter(|(_, d)| **d == dir)
        .map(|(f, _)| *f)
        .collect();
    let per_flow = flows.len() <= MAX_FLOW_ROWS;
    let mut prev: BTreeMap<u32, u32> = BTreeMap::new();
    let mut out = Vec::new();
    for s in &side.intervals {
        let samples: Vec<(&FlowTcpSample, u64)> = s
            .tcp
            .iter()
            .filter(|t| flows.contains(&t.flow))
            .map(|t| {
                let before = prev.insert(t.flow, t.retransmits_total).unwrap_or(0);
                (t, u64::from(t.retransmits_total.saturating_sub(before)))
            })
            .collect();
        if samples.is_empty() {
            continue;
        }
        out.push(row(sender, dir, s, None, &samples));
        if per_flow {
            for one in &samples {
                out.push(row(sender, dir, s, Some(one.0.flow), &[*one]));
            }
        }
    }
    out
}

/// One row of `samples` (each with its retransmits since the flow's previous sample).
fn row(
    host: HostRole,
    dir: FlowDir,
    s: &ByteInterval,
    flow: Option<u32>,
    samples: &[(&FlowTcpSample, u64)],
) -> TcpIntervalRow {
    let n = samples.len() as u64;
    let us_to_ns = |us: u32| u64::from(us) * 1000;
    let sum = |f: &dyn Fn(&FlowTcpSample) -> u64| samples.iter().map(|(t, _)| f(t)).sum::<u64>();
    let rates: Vec<u64> = samples
        .iter()
        .filter_map(|(t, _)| t.delivery_rate_bps)
        .collect();
    TcpIntervalRow {
        start_s: s.span.start_ns as f64 / 1e9,
        end_s: s.span.end_ns as f64 / 1e9,
        host,
        dir,
        flow,
        flows: n as u32,
        cwnd_segments: sum(&|t| u64::from(t.cwnd_segments)),
        cwnd_bytes: sum(&|t| u64::from(t.cwnd_segments) * u64::from(t.mss_bytes)),
        srtt_ns: sum(&|t| us_to_ns(t.srtt_us)) / n.max(1),
        srtt_max_ns: samples
            .iter()
            .map(|(t, _)| us_to_ns(t.srtt_us))
            .max()
            .unwrap_or(0),
        rttvar_ns: sum(&|t| us_to_ns(t.rttvar_us)) / n.max(1),
        retransmits: samples.iter().map(|(_, r)| r).sum(),
        delivery_rate_bps: (!rates.is_empty())
            .then(|| rates.iter().fold(0u64, |a, r| a.saturating_add(*r))),
        in_warmup: s.in_warmup,
        at_close: samples.iter().any(|(t, _)| t.at_close),
    }
}
