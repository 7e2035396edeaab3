//! Figures of one test: the interval time series and the latency distribution.

use wirebench_model::result::{RrSummary, RunResult, UdpSummary};
use wirebench_model::spec::FlowDir;
use wirebench_plot::{
    Annotation, Axis, Bin, BoxFigure, BoxSeries, BoxStats, Figure, Heading, HistogramFigure,
    Percentile, Series, SeriesKind, Unit, YAxis,
};

use super::{dir_name, Drawing, FigureKind, Named};

/// A UDP test's figures: received throughput and loss against time.
pub(super) fn udp_figures(u: &UdpSummary, sub: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let mut series = Vec::new();
    for d in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let rows: Vec<_> = u.intervals.iter().filter(|i| i.row.dir == d).collect();
        if rows.is_empty() {
            continue;
        }
        let bps: Vec<(f64, f64)> = rows
            .iter()
            .map(|i| (i.row.end_s, i.row.throughput_bps))
            .collect();
        let loss: Vec<(f64, f64)> = rows.iter().map(|i| (i.row.end_s, i.loss_pct)).collect();
        series.push(Series::new(
            format!("received {}", dir_name(d)),
            SeriesKind::LineWithPoints,
            &bps,
        ));
        series.push(
            Series::new(
                format!("lost {} (right axis)", dir_name(d)),
                SeriesKind::Step,
                &loss,
            )
            .on_y2(),
        );
    }
    if !series.is_empty() {
        out.push(Named {
            kind: FigureKind::Timeseries,
            figure: Drawing::Xy(Figure {
                heading: Heading::new("UDP throughput and loss per interval", sub.to_string()),
                x: super::time_axis(
                    "time since the end's start",
                    u.intervals.iter().map(|i| i.row.end_s),
                ),
                y: Axis::linear("payload received", Unit::BitsPerSecond),
                y2: Some(Axis::linear("lost in the interval", Unit::Percent)),
                series,
                ..Figure::default()
            }),
            caption: "Receiver: payload bytes of distinct datagrams per interval, and the \
                          datagrams lost in it (sequence numbers covered − received), percent."
                .into(),
        });
    }
    out
}

/// A request/response test's figures: the round trip per interval and its tail.
pub(super) fn rr_figures(r: &RunResult, s: &RrSummary, sub: &str) -> Vec<Named> {
    // An `--under-load` result's own figure comes first: it is `wirebench plot`'s default.
    let mut out: Vec<Named> = under_load_figure(r, sub).into_iter().collect();
    let p50: Vec<(f64, f64)> = s
        .intervals
        .iter()
        .filter_map(|i| Some((i.end_s, i.rtt_p50_ns? as f64)))
        .collect();
    let p99: Vec<(f64, f64)> = s
        .intervals
        .iter()
        .filter_map(|i| Some((i.end_s, i.rtt_p99_ns? as f64)))
        .collect();
    if !p50.is_empty() {
        out.push(Named {
            kind: FigureKind::Timeseries,
            figure: Drawing::Xy(Figure {
                heading: Heading::new("Round trip per interval", sub.to_string()),
                x: super::time_axis(
                    "time since the client's start",
                    s.intervals.iter().map(|i| i.end_s),
                ),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: vec![
                    Series::new("p50", SeriesKind::LineWithPoints, &p50),
                    Series::new("p99", SeriesKind::LineWithPoints, &p99),
                ],
                ..Figure::default()
            }),
            caption: "Client: percentiles of the round trips completed in each interval \
                          (all flows merged)."
                .into(),
        });
    }
    if let Some(l) = &s.latency {
        let tail = [
            (0.5, l.p50_ns),
            (0.1, l.p90_ns),
            (0.01, l.p99_ns),
            (0.001, l.p999_ns),
            (0.0001, l.p9999_ns),
        ];
        let pts: Vec<(f64, f64)> = tail.iter().map(|&(f, v)| (f, v as f64)).collect();
        out.push(Named {
            kind: FigureKind::Tail,
            figure: Drawing::Xy(Figure {
                heading: Heading::new("Round-trip tail", sub.to_string()),
                x: Axis::log10("share of round trips slower", Unit::None),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: vec![Series::new(
                    "round trips in the window",
                    SeriesKind::LineWithPoints,
                    &pts,
                )],
                annotations: vec![
                    Annotation::HLine {
                        y: l.min_ns as f64,
                        label: "min".into(),
                        axis: YAxis::Y,
                    },
                    Annotation::HLine {
                        y: l.max_ns as f64,
                        label: "max".into(),
                        axis: YAxis::Y,
                    },
                ],
                ..Figure::default()
            }),
            caption: format!(
                "The window's p50, p90, p99, p99.9 and p99.99 round trips ({} \
                     transactions, HDR histogram), min and max marked.",
                l.count
            ),
        });
    }
    out.extend(histogram_figure(s, sub));
    out
}

/// The client's round-trip histogram (log buckets) with its tail panel, p50, p99 and p99.9
/// marked.
fn histogram_figure(s: &RrSummary, sub: &str) -> Option<Named> {
    let (h, l) = (s.latency_histogram.as_ref()?, s.latency.as_ref()?);
    if h.buckets.is_empty() {
        return None;
    }
    let bins = h
        .buckets
        .iter()
        .map(|b| Bin {
            lo: b.lo_ns as f64,
            hi: b.hi_ns as f64,
            count: b.count,
        })
        .collect();
    let pct = |label: &str, v: u64| Percentile {
        label: label.into(),
        value: v as f64,
    };
    Some(Named {
        kind: FigureKind::Histogram,
        figure: Drawing::Histogram(HistogramFigure {
            heading: Heading::new("Round-trip histogram", sub.to_string()),
            x: Axis::log10("round trip at the client", Unit::Nanoseconds),
            bins,
            percentiles: vec![
                pct("p50", l.p50_ns),
                pct("p99", l.p99_ns),
                pct("p99.9", l.p999_ns),
            ],
            tail_panel: true,
        }),
        caption: format!(
            "Client: the {} round trips completed in its window (all flows), counted in \
             log-spaced buckets ({} per doubling of the round trip); below, the share of round \
             trips slower than x (log axis, so p99 and p99.9 are readable). p50, p99 and p99.9 \
             are the result's own percentiles (HDR histogram, 3 significant digits).",
            h.total(),
            h.buckets_per_octave
        ),
    })
}

/// The box of a request/response result's round trips.
pub(super) fn latency_box(r: &RunResult) -> Option<BoxStats> {
    let b = wirebench_analysis::under_load::latency_box(r)?;
    Some(BoxStats {
        whisker_lo: b.p1_ns,
        q1: b.p25_ns,
        median: b.p50_ns,
        q3: b.p75_ns,
        whisker_hi: b.p99_ns,
        mean: b.mean_ns.is_finite().then_some(b.mean_ns),
        outliers: Vec::new(),
    })
}

/// The caption's sentence on what a latency box shows.
pub(super) const BOX_NOTE: &str = "Each box: the client's round trips in its window, \
     25th to 75th percentile, the median as the bar, whiskers at the 1st and 99th \
     percentile, the exact mean as a cross; percentiles read from the result's latency \
     histogram (within its bucket width, 9 %).";

/// `rr --under-load`: the idle and the loaded round trips side by side.
fn under_load_figure(r: &RunResult, sub: &str) -> Option<Named> {
    let u = r.under_load.as_ref()?;
    let (idle, loaded) = (latency_box(&u.idle)?, latency_box(r)?);
    Some(Named {
        kind: FigureKind::UnderLoad,
        figure: Drawing::Boxes(BoxFigure {
            heading: Heading::new("Round trip idle and under load", sub.to_string()),
            categories: vec![
                "idle".into(),
                format!(
                    "beside {} stream flow{}",
                    u.load_flows,
                    if u.load_flows == 1 { "" } else { "s" }
                ),
            ],
            category_label: "load".into(),
            y: Axis::log10("round trip at the client", Unit::Nanoseconds),
            series: vec![BoxSeries {
                name: "round trip".into(),
                boxes: vec![Some(idle), Some(loaded)],
            }],
            whisker_labels: Some(("p1".into(), "p99".into())),
        }),
        caption: format!(
            "{BOX_NOTE} Idle: the test alone, measured first; loaded: the same test {} ms \
             after {} stream flows per direction started on the same path.",
            u.lead_ms, u.load_flows
        ),
    })
}
