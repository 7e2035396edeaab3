//! Sweeps: each point's headline figure and count, and the analysis of the curves.
//!
//! - A point's figure ([`point_figure`]) is the mean over its runs of the single test's
//!   headline: stream, the receivers' payload bit/s summed over the directions; UDP, the
//!   received payload bit/s and the window's loss; request/response, transactions per
//!   second and the round trip (client side).
//! - A point's count ([`point_count`]) is what its length must reach to be trusted: calls
//!   read at the receivers (stream: bytes / receive size, the smallest direction), distinct
//!   datagrams received (UDP), transactions completed (request/response).
//! - A curve ([`analyze`]) is the figure along one numeric factor (the first of message
//!   size, rate, window, flows, burst that the sweep varies over at least two values) at one
//!   combination of the other factors' values. Message-size curves of stream and UDP get the
//!   throughput analysis (`wirebench-stats`' curve module) and their dip candidates are
//!   confirmed against the re-measured points; request/response size curves get the Hockney
//!   fit of the median round trip (the median, not the mean: a loaded host's scheduling
//!   tail would lift the mean and with it t0); rate curves of open-loop RR and UDP get the load knee
//!   (p99 within twice the lowest rate's, no loss; for UDP, which has no latency figure,
//!   loss alone).
//! - A curve is partial when it holds fewer points with a figure than the grid planned on it
//!   (the values of the factor along it): an interrupted sweep, or failed points.
//! - A throughput peak is confirmed ([`peak_confirmed`]) when another measurement comes
//!   within [`PEAK_CONFIRM_PCT`] % of it: the point next to it on either side, a
//!   re-measurement at its size, or its own repeated runs (sample standard deviation at most
//!   100 − that % of the mean). A single run that nothing near it corroborates may be a
//!   lucky scheduling moment; it is reported as the peak, marked unconfirmed.

use std::collections::BTreeMap;

use wirebench_model::result::{RunResult, WorkloadSummary};
use wirebench_model::spec::{WorkloadKind, WorkloadSpec};
use wirebench_model::sweep::{
    CurveAnalysis, FactorName, FactorValue, NotAnalysed, PointFigure, PointRole, Setting,
    SweepResult, PEAK_CONFIRM_PCT,
};
use wirebench_stats::curve::dips::{confirm_dips, dip_candidates};
use wirebench_stats::curve::hockney::{hockney_fit, LatencyPoint, Weighting};
use wirebench_stats::curve::load::{load_knee, LoadConfig, LoadPoint};
use wirebench_stats::curve::throughput::{analyze_throughput, ThroughputConfig};
use wirebench_stats::curve::ThroughputPoint;

/// Mean and sample standard deviation (`None` for fewer than two values).
fn mean_sd(v: &[f64]) -> Option<(f64, Option<f64>)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1).then(|| {
        let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1.0)).sqrt()
    });
    Some((mean, sd))
}

/// The workload summaries of the runs that have one.
fn summaries(r: &RunResult) -> impl Iterator<Item = &WorkloadSummary> {
    r.runs
        .iter()
        .filter_map(|run| run.summary.as_ref().map(|s| &s.workload))
}

/// The headline figure of a point's result, if any run produced a summary.
pub fn point_figure(r: &RunResult) -> Option<PointFigure> {
    match summaries(r).next()? {
        WorkloadSummary::Stream(_) => {
            let bps: Vec<f64> = summaries(r)
                .filter_map(|w| match w {
                    WorkloadSummary::Stream(s) => {
                        Some(s.directions.iter().map(|d| d.receiver_throughput_bps).sum())
                    }
                    _ => None,
                })
                .collect();
            let (throughput_bps, stddev_bps) = mean_sd(&bps)?;
            Some(PointFigure::Throughput {
                throughput_bps,
                stddev_bps,
            })
        }
        WorkloadSummary::UdpStream(_) => {
            let (mut bps, mut loss) = (Vec::new(), Vec::new());
            for w in summaries(r) {
                if let WorkloadSummary::UdpStream(u) = w {
                    bps.push(u.directions.iter().map(|d| d.receiver_rate_bps).sum());
                    let sent: u64 = u.directions.iter().map(|d| d.counts.window_sent).sum();
                    let lost: i64 = u.directions.iter().map(|d| d.counts.window_lost).sum();
                    loss.push(if sent == 0 {
                        0.0
                    } else {
                        100.0 * lost.max(0) as f64 / sent as f64
                    });
                }
            }
            Some(PointFigure::Udp {
                throughput_bps: mean_sd(&bps)?.0,
                loss_pct: mean_sd(&loss)?.0,
            })
        }
        WorkloadSummary::Rr(_) => {
            let (mut tps, mut p50, mut p99, mut mean) = (vec![], vec![], vec![], vec![]);
            for w in summaries(r) {
                if let WorkloadSummary::Rr(s) = w {
                    tps.push(s.transactions_per_s);
                    if let Some(l) = &s.latency {
                        p50.push(l.p50_ns as f64);
                        p99.push(l.p99_ns as f64);
                        mean.push(l.mean_ns);
                    }
                }
            }
            let m = |v: &[f64]| mean_sd(v).map(|x| x.0);
            Some(PointFigure::Transactions {
                transactions_per_s: m(&tps)?,
                rtt_p50_ns: m(&p50).map(|x| x.round() as u64),
                rtt_p99_ns: m(&p99).map(|x| x.round() as u64),
                rtt_mean_ns: m(&mean),
            })
        }
    }
}

/// The count a point's length is judged by (see the module docs): the smallest over its
/// runs, `None` without a summary.
pub fn point_count(r: &RunResult) -> Option<u64> {
    let recv_size = match r.spec.as_ref().map(|s| &s.workload) {
        Some(WorkloadSpec::Stream(s)) => u64::from(s.recv_size_bytes.max(1)),
        Some(
            WorkloadSpec::Rr(_)
            | WorkloadSpec::Crr(_)
            | WorkloadSpec::UdpRr(_)
            | WorkloadSpec::UdpStream(_),
        )
        | None => 1,
    };
    summaries(r)
        .map(|w| match w {
            WorkloadSummary::Stream(s) => s
                .directions
                .iter()
                .map(|d| d.receiver_bytes / recv_size)
                .min()
                .unwrap_or(0),
            WorkloadSummary::UdpStream(u) => u
                .directions
                .iter()
                .map(|d| d.counts.window_received)
                .min()
                .unwrap_or(0),
            WorkloadSummary::Rr(s) => s.transactions,
        })
        .min()
}

/// The factor a curve runs along: the first of these the sweep varies.
const ALONG: [FactorName; 10] = [
    FactorName::MsgSize,
    FactorName::RequestSize,
    FactorName::ResponseSize,
    FactorName::Rate,
    FactorName::Window,
    FactorName::NotsentLowat,
    FactorName::Flows,
    FactorName::Burst,
    FactorName::UnderLoad,
    FactorName::BufferOffset,
];

/// One point on a curve: its x value and figure.
struct CurvePoint<'a> {
    x: u64,
    figure: &'a PointFigure,
}

/// The curves of a sweep, analysed (see the module docs).
pub fn analyze(sweep: &SweepResult) -> Vec<CurveAnalysis> {
    let varied = |n: FactorName| {
        sweep
            .factors
            .iter()
            .any(|f| f.name == n && f.values.len() >= 2)
    };
    let Some(along) = ALONG.into_iter().find(|&n| varied(n)) else {
        return Vec::new();
    };
    // Grid points by variant (the other factors' values), and re-measurements by settings.
    let mut curves: BTreeMap<Vec<(FactorName, FactorValue)>, Vec<CurvePoint<'_>>> = BTreeMap::new();
    let mut again: BTreeMap<Vec<(FactorName, FactorValue)>, Vec<CurvePoint<'_>>> = BTreeMap::new();
    for p in &sweep.points {
        let (Some(figure), Some(x)) = (
            p.figure.as_ref(),
            p.settings
                .iter()
                .find(|s| s.factor == along)
                .and_then(|s| s.value.number()),
        ) else {
            continue;
        };
        let variant: Vec<(FactorName, FactorValue)> = p
            .settings
            .iter()
            .filter(|s| s.factor != along)
            .map(|s| (s.factor, s.value.clone()))
            .collect();
        let into = match p.role {
            PointRole::Grid => &mut curves,
            PointRole::Remeasure => &mut again,
        };
        into.entry(variant)
            .or_default()
            .push(CurvePoint { x, figure });
    }
    let planned = sweep
        .factors
        .iter()
        .find(|f| f.name == along)
        .map_or(0, |f| f.values.len() as u32);
    curves
        .into_iter()
        .map(|(variant, mut pts)| {
            pts.sort_by_key(|p| p.x);
            let re = again.remove(&variant).unwrap_or_default();
            let variant = variant
                .into_iter()
                .map(|(factor, value)| Setting { factor, value })
                .collect();
            let mut c = analyze_curve(sweep.test, along, variant, &pts, &re);
            c.planned_points = planned;
            c.partial = c.points < planned;
            c
        })
        .collect()
}

/// Whether the peak of a throughput curve (`grid`, sorted by size) at `peak_size_bytes` is
/// corroborated (see the module docs): a neighbour on the curve or a re-measurement (`re`)
/// at its size within [`PEAK_CONFIRM_PCT`] % of it, or its own runs' spread within
/// 100 − that %. False when the peak is not on the curve.
pub fn peak_confirmed(
    grid: &[ThroughputPoint],
    re: &[ThroughputPoint],
    peak_size_bytes: u64,
) -> bool {
    let Some(i) = grid.iter().position(|p| p.size_bytes == peak_size_bytes) else {
        return false;
    };
    let peak = grid[i].throughput_bps;
    let near = |v: f64| v >= peak * PEAK_CONFIRM_PCT / 100.0;
    let neighbours = [i.checked_sub(1), Some(i + 1)]
        .into_iter()
        .flatten()
        .filter_map(|j| grid.get(j));
    let repeats = re.iter().filter(|p| p.size_bytes == peak_size_bytes);
    let spread_ok = grid[i]
        .stddev_bps
        .is_some_and(|sd| peak > 0.0 && sd <= peak * (100.0 - PEAK_CONFIRM_PCT) / 100.0);
    spread_ok || neighbours.chain(repeats).any(|p| near(p.throughput_bps))
}

/// Throughput points of a curve (stream and UDP figures).
fn throughput_points(pts: &[CurvePoint<'_>]) -> Vec<ThroughputPoint> {
    pts.iter()
        .filter_map(|p| match *p.figure {
            PointFigure::Throughput {
                throughput_bps,
                stddev_bps,
            } => Some(ThroughputPoint {
                stddev_bps,
                ..ThroughputPoint::new(p.x, throughput_bps)
            }),
            PointFigure::Udp { throughput_bps, .. } => {
                Some(ThroughputPoint::new(p.x, throughput_bps))
            }
            PointFigure::Transactions { .. } => None,
        })
        .collect()
}

fn analyze_curve(
    test: WorkloadKind,
    along: FactorName,
    variant: Vec<Setting>,
    pts: &[CurvePoint<'_>],
    re: &[CurvePoint<'_>],
) -> CurveAnalysis {
    let mut out = CurveAnalysis {
        along,
        variant,
        points: pts.len() as u32,
        planned_points: 0,
        partial: false,
        peak_confirmed: None,
        throughput: None,
        dips: None,
        hockney: None,
        load: None,
        not_analysed: Vec::new(),
    };
    let failed = |analysis: &str, e: &dyn std::fmt::Display| NotAnalysed {
        analysis: analysis.to_string(),
        reason: e.to_string(),
    };
    let mut not = Vec::new();
    let throughput_curve = along == FactorName::MsgSize
        && matches!(test, WorkloadKind::Stream | WorkloadKind::UdpStream);
    if throughput_curve {
        let tp = throughput_points(pts);
        match analyze_throughput(&tp, &ThroughputConfig::default()) {
            Ok(a) => {
                let remeasured = throughput_points(re);
                out.peak_confirmed = Some(peak_confirmed(&tp, &remeasured, a.peak_size_bytes));
                match dip_candidates(&tp, a.dips.threshold_pct) {
                    Ok(c) if !c.dips.is_empty() => out.dips = Some(confirm_dips(&c, &remeasured)),
                    Ok(_) => {}
                    Err(e) => not.push(failed("dips", &e)),
                }
                out.throughput = Some(a);
            }
            Err(e) => not.push(failed("throughput", &e)),
        }
    }
    if along.is_message_size() && !throughput_curve {
        let lat: Vec<LatencyPoint> = pts
            .iter()
            .filter_map(|p| match *p.figure {
                PointFigure::Transactions {
                    rtt_p50_ns: Some(m),
                    ..
                } => Some(LatencyPoint {
                    size_bytes: p.x,
                    latency_ns: m as f64,
                }),
                _ => None,
            })
            .collect();
        match hockney_fit(&lat, Weighting::Relative) {
            Ok(h) => out.hockney = Some(h),
            Err(e) => not.push(failed("hockney", &e)),
        }
    }
    if along == FactorName::Rate {
        let load: Vec<LoadPoint> = pts
            .iter()
            .filter_map(|p| match *p.figure {
                PointFigure::Transactions {
                    transactions_per_s: _,
                    rtt_p99_ns: Some(p99),
                    ..
                } => Some(LoadPoint {
                    offered_per_s: p.x as f64,
                    p99_ns: p99 as f64,
                    loss_fraction: 0.0,
                }),
                PointFigure::Udp { loss_pct, .. } => Some(LoadPoint {
                    offered_per_s: p.x as f64,
                    p99_ns: 0.0,
                    loss_fraction: (loss_pct / 100.0).clamp(0.0, 1.0),
                }),
                _ => None,
            })
            .collect();
        match load_knee(&load, &LoadConfig::default()) {
            Ok(k) => out.load = Some(k),
            Err(e) => not.push(failed("load", &e)),
        }
    }
    out.not_analysed = not;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{stream_point, sweep};
    use wirebench_model::sweep::{SweepPoint, SweepStatus};

    /// A Hockney-shaped stream curve with one deep dip that the re-measurement confirms,
    /// and one that it does not.
    #[test]
    fn a_size_curve_saturates_and_its_dips_are_confirmed_or_not() {
        let sizes: Vec<u64> = (0..16).map(|k| 1u64 << k).collect();
        let t = |n: u64| 8.0 * n as f64 / (20e-6 + n as f64 * 8.0 / 10e9);
        let mut pts: Vec<SweepPoint> = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let mut bps = t(n);
            if n == 4096 || n == 16384 {
                bps *= 0.4;
            }
            pts.push(stream_point(i as u32, n, bps, PointRole::Grid));
        }
        // Re-measured: 4096 is a dip again, 16384 is not.
        pts.push(stream_point(16, 4096, t(4096) * 0.4, PointRole::Remeasure));
        pts.push(stream_point(17, 16384, t(16384), PointRole::Remeasure));
        let a = analyze(&sweep(pts, WorkloadKind::Stream));
        assert_eq!(a.len(), 1);
        let th = a[0].throughput.as_ref().expect("throughput analysis");
        assert_eq!(th.points, 16);
        let dips = a[0].dips.as_ref().expect("dips");
        let confirmed: Vec<u64> = dips
            .confirmed
            .iter()
            .map(|d| d.original.size_bytes)
            .collect();
        let unconfirmed: Vec<u64> = dips
            .unconfirmed
            .iter()
            .map(|d| d.original.size_bytes)
            .collect();
        assert_eq!(confirmed, vec![4096]);
        assert_eq!(unconfirmed, vec![16384]);
    }

    #[test]
    fn an_rr_size_curve_gets_its_hockney_fit() {
        let mut pts = Vec::new();
        for (i, n) in [1u64, 1024, 4096, 16384, 65536].into_iter().enumerate() {
            // 2 ms + n / (100 MB/s).
            let mean = 2e6 + n as f64 * 10.0;
            let mut p = stream_point(i as u32, n, 0.0, PointRole::Grid);
            p.settings[0].factor = FactorName::RequestSize;
            p.figure = Some(PointFigure::Transactions {
                transactions_per_s: 1e9 / mean,
                rtt_p50_ns: Some(mean as u64),
                rtt_p99_ns: Some(mean as u64),
                // A scheduling tail lifts the mean; the fit is of the median.
                rtt_mean_ns: Some(mean * 1.5),
            });
            pts.push(p);
        }
        let mut s = sweep(pts, WorkloadKind::Rr);
        s.factors[0].name = FactorName::RequestSize;
        let a = analyze(&s);
        let h = a[0].hockney.as_ref().expect("fit");
        assert!((h.t0_ns - 2e6).abs() < 1.0, "{}", h.t0_ns);
        assert!((h.slope_ns_per_byte - 10.0).abs() < 1e-6);
    }

    #[test]
    fn figures_are_means_over_the_runs() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[2.0]), Some((2.0, None)));
        let (m, sd) = mean_sd(&[1.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        assert!((sd.unwrap() - 2f64.sqrt()).abs() < 1e-12);
    }

    /// The peak rule on synthetic points: a lone spike is unconfirmed; a neighbour within
    /// 5 %, a re-measurement within 5 % or its own repeated runs within 5 % confirm it.
    #[test]
    fn a_peak_needs_a_neighbour_or_a_repeat() {
        let tp = |pts: &[(u64, f64)]| -> Vec<ThroughputPoint> {
            pts.iter()
                .map(|&(n, b)| ThroughputPoint::new(n, b))
                .collect()
        };
        let spike = tp(&[(1024, 5e9), (2048, 9e9), (4096, 6e9)]);
        assert!(!peak_confirmed(&spike, &[], 2048));
        // A re-measurement at the peak's size that falls back does not confirm it either.
        assert!(!peak_confirmed(&spike, &tp(&[(2048, 6e9)]), 2048));
        assert!(peak_confirmed(&spike, &tp(&[(2048, 8.6e9)]), 2048));
        // A neighbour at 96 % confirms; at 94 % it does not.
        assert!(peak_confirmed(
            &tp(&[(1024, 5e9), (2048, 9e9), (4096, 8.64e9)]),
            &[],
            2048
        ));
        assert!(!peak_confirmed(
            &tp(&[(1024, 5e9), (2048, 9e9), (4096, 8.46e9)]),
            &[],
            2048
        ));
        // The peak at the end of the curve has one neighbour.
        assert!(peak_confirmed(
            &tp(&[(1024, 8.8e9), (2048, 9e9)]),
            &[],
            2048
        ));
        // Repeated runs with a small spread confirm; a wide spread does not.
        let mut runs = spike.clone();
        runs[1].stddev_bps = Some(0.2e9);
        assert!(peak_confirmed(&runs, &[], 2048));
        runs[1].stddev_bps = Some(2e9);
        assert!(!peak_confirmed(&runs, &[], 2048));
        // A one-point curve has nothing to confirm its peak.
        assert!(!peak_confirmed(&tp(&[(2048, 9e9)]), &[], 2048));
    }

    /// An interrupted sweep's curve with fewer points than its factor planned is partial,
    /// and its lone peak is marked unconfirmed.
    #[test]
    fn a_curve_missing_planned_points_is_partial() {
        let sizes = [1u64, 2, 4, 8, 16, 32, 64, 128];
        let pts: Vec<SweepPoint> = [1.0e9, 2.0e9, 3.0e9, 3.7e9, 3.0e9]
            .iter()
            .enumerate()
            .map(|(i, &b)| stream_point(i as u32, sizes[i], b, PointRole::Grid))
            .collect();
        let mut s = sweep(pts, WorkloadKind::Stream);
        s.factors[0].values = sizes.iter().map(|&n| FactorValue::Number(n)).collect();
        s.status = SweepStatus::Interrupted;
        let a = analyze(&s);
        assert_eq!(
            (a[0].points, a[0].planned_points, a[0].partial),
            (5, 8, true)
        );
        assert_eq!(a[0].peak_confirmed, Some(false));
        s.factors[0].values.truncate(5);
        let a = analyze(&s);
        assert!(!a[0].partial);
    }
}
