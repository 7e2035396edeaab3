//! Results as figures: RunResults and SweepResults converted into `wirebench-plot`'s neutral
//! figure model (the drawing is that crate's). Nothing here measures or computes a figure
//! that the result does not hold: every point is a value of the result (interval rows,
//! summary percentiles, sweep points) and every annotation one of its analyses.
//!
//! Figures of a test: the interval time series (stream: throughput per flow and per
//! direction; UDP: received throughput and loss; request/response: round-trip p50 and p99 per
//! interval) and, for request/response, the round-trip tail from the summary's percentiles.
//! Figures of a sweep: the headline figure along the swept factor, one line per variant,
//! error bars where the points ran several times, n½, saturation and confirmed dips marked;
//! for request/response also the round trip along the factor with the Hockney fit.

use std::collections::BTreeMap;

use wirebench_model::result::{
    RrSummary, RunRecord, RunResult, StreamSummary, UdpSummary, WorkloadSummary,
};
use wirebench_model::side::SideData;
use wirebench_model::spec::{FlowDir, WorkloadKind};
use wirebench_model::sweep::{
    CurveAnalysis, FactorName, PointFigure, PointRole, Setting, SweepResult,
};
use wirebench_plot::{
    Annotation, Axis, Figure, Heading, Overlay, Point, Render, Series, SeriesKind, Svg, Unit, YAxis,
};

use crate::print::sweep::settings_text;

/// Most flows drawn one by one in a time series; above it only the totals are drawn.
pub const MAX_FLOW_SERIES: usize = 16;

/// Which figure (the `--kind` of `wirebench plot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    /// Interval figures against time.
    Timeseries,
    /// The round-trip tail from the summary's percentiles.
    Tail,
    /// A sweep's headline figure along its factor.
    Curve,
    /// A request/response sweep's round trip along its factor.
    CurveLatency,
}

impl FigureKind {
    /// Every kind.
    pub const ALL: [FigureKind; 4] = [
        FigureKind::Timeseries,
        FigureKind::Tail,
        FigureKind::Curve,
        FigureKind::CurveLatency,
    ];

    /// The name `--kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            FigureKind::Timeseries => "timeseries",
            FigureKind::Tail => "tail",
            FigureKind::Curve => "curve",
            FigureKind::CurveLatency => "curve-latency",
        }
    }
}

/// One figure of a result, ready to draw.
#[derive(Debug, Clone)]
pub struct Named {
    /// Which figure.
    pub kind: FigureKind,
    /// The drawing.
    pub figure: Figure,
    /// A caption: what the points are, where they were measured.
    pub caption: String,
}

impl Named {
    /// The figure as SVG.
    pub fn svg(&self) -> Result<Svg, wirebench_plot::PlotError> {
        self.figure.render_svg()
    }
}

/// `test · server · start` for a figure's subtitle.
fn subtitle(kind: Option<WorkloadKind>, server: Option<&str>, started_utc: &str) -> String {
    let test = kind.map_or("test", WorkloadKind::as_str);
    let server = server.map_or_else(|| "no server".to_string(), wirebench_model::text::escape);
    format!("{test} · {server} · {started_utc}")
}

/// The direction's name in legends.
fn dir_name(d: FlowDir) -> &'static str {
    match d {
        FlowDir::ClientToServer => "forward",
        FlowDir::ServerToClient => "reverse",
    }
}

/// A stream test's figures: throughput per flow and per direction against time.
fn stream_figures(run: &RunRecord, s: &StreamSummary, sub: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let mut series = Vec::new();
    for side in [run.client.as_ref(), run.server.as_ref()]
        .into_iter()
        .flatten()
    {
        let Some(SideData::Stream(st)) = side.data.as_ref() else {
            continue;
        };
        let flows = crate::analyze::stream::receiver_flow_intervals(st);
        if flows.len() > MAX_FLOW_SERIES {
            continue;
        }
        for (flow, pts) in flows {
            series.push(Series::new(format!("flow {flow}"), SeriesKind::Step, &pts));
        }
    }
    for d in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let pts: Vec<(f64, f64)> = s
            .intervals
            .iter()
            .filter(|i| i.dir == d)
            .map(|i| (i.end_s, i.throughput_bps))
            .collect();
        if !pts.is_empty() {
            series.push(Series::new(
                format!("total {}", dir_name(d)),
                SeriesKind::LineWithPoints,
                &pts,
            ));
        }
    }
    if !series.is_empty() {
        out.push(Named {
                kind: FigureKind::Timeseries,
                figure: Figure {
                    heading: Heading::new("TCP stream throughput per interval", sub.to_string()),
                    x: Axis::linear("time since the end's start", Unit::Seconds),
                    y: Axis::linear("payload throughput at the receiver", Unit::BitsPerSecond),
                    series,
                    ..Figure::default()
                },
                caption: format!(
                    "Bytes read by the receiving application per interval × 8 / interval \
                     length, drawn at each interval's end; flows drawn one by one up to {MAX_FLOW_SERIES} \
                     per end."
                ),
            });
    }
    out
}

/// A UDP test's figures: received throughput and loss against time.
fn udp_figures(u: &UdpSummary, sub: &str) -> Vec<Named> {
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
            figure: Figure {
                heading: Heading::new("UDP throughput and loss per interval", sub.to_string()),
                x: Axis::linear("time since the end's start", Unit::Seconds),
                y: Axis::linear("payload received", Unit::BitsPerSecond),
                y2: Some(Axis::linear("lost in the interval", Unit::Percent)),
                series,
                ..Figure::default()
            },
            caption: "Receiver: payload bytes of distinct datagrams per interval, and the \
                          datagrams lost in it (sequence numbers covered − received), percent."
                .into(),
        });
    }
    out
}

/// A request/response test's figures: the round trip per interval and its tail.
fn rr_figures(s: &RrSummary, sub: &str) -> Vec<Named> {
    let mut out = Vec::new();
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
            figure: Figure {
                heading: Heading::new("Round trip per interval", sub.to_string()),
                x: Axis::linear("time since the client's start", Unit::Seconds),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: vec![
                    Series::new("p50", SeriesKind::LineWithPoints, &p50),
                    Series::new("p99", SeriesKind::LineWithPoints, &p99),
                ],
                ..Figure::default()
            },
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
            figure: Figure {
                heading: Heading::new("Round-trip tail", sub.to_string()),
                x: Axis::log10("share of round trips slower", Unit::None),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: vec![Series::new("window", SeriesKind::LineWithPoints, &pts)],
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
            },
            caption: format!(
                "The window's p50, p90, p99, p99.9 and p99.99 round trips ({} \
                     transactions, HDR histogram), min and max marked.",
                l.count
            ),
        });
    }
    out
}

/// The figures of a test result (its first run).
pub fn run_figures(r: &RunResult) -> Vec<Named> {
    let Some(run) = r.runs.first() else {
        return Vec::new();
    };
    let kind = r.spec.as_ref().map(|s| s.kind());
    let sub = subtitle(kind, r.server_address.as_deref(), &r.started_utc);
    match run.summary.as_ref().map(|s| &s.workload) {
        Some(WorkloadSummary::Stream(s)) => stream_figures(run, s, &sub),
        Some(WorkloadSummary::UdpStream(u)) => udp_figures(u, &sub),
        Some(WorkloadSummary::Rr(s)) => rr_figures(s, &sub),
        None => Vec::new(),
    }
}

/// The factor a sweep's figures run along (the analysis's choice).
fn along(s: &SweepResult) -> Option<FactorName> {
    s.analysis.first().map(|c| c.along).or_else(|| {
        s.factors
            .iter()
            .find(|f| f.values.iter().all(|v| v.number().is_some()))
            .map(|f| f.name)
    })
}

/// The x axis of a factor.
/// The x axis of a sweep factor (sizes on a log2 byte axis, rates on log10).
pub(crate) fn factor_axis(f: FactorName) -> Axis {
    let label = f.flag().trim_start_matches('-').replace('-', " ");
    match f {
        FactorName::MsgSize
        | FactorName::RequestSize
        | FactorName::ResponseSize
        | FactorName::Window => Axis::log2(label, Unit::Bytes),
        FactorName::Rate => Axis::log10(label, Unit::None),
        FactorName::UnderLoad => Axis::linear(label, Unit::None),
        _ => Axis::log2(label, Unit::None),
    }
}

/// The grid points of a sweep by variant (the other factors' values), with their x.
fn curves(s: &SweepResult, along: FactorName) -> BTreeMap<Vec<Setting>, Vec<(f64, PointFigure)>> {
    let mut m: BTreeMap<Vec<Setting>, Vec<(f64, PointFigure)>> = BTreeMap::new();
    for p in s.points.iter().filter(|p| p.role == PointRole::Grid) {
        let (Some(f), Some(x)) = (
            p.figure,
            p.settings
                .iter()
                .find(|x| x.factor == along)
                .and_then(|x| x.value.number()),
        ) else {
            continue;
        };
        let variant: Vec<Setting> = p
            .settings
            .iter()
            .filter(|x| x.factor != along)
            .cloned()
            .collect();
        m.entry(variant).or_default().push((x as f64, f));
    }
    for v in m.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    m
}

/// The marks of a curve's analysis: n½ and saturation lines, confirmed dips, the Hockney fit
/// over `xs`; `tag` names the variant when there are several.
fn analysis_marks(
    c: &CurveAnalysis,
    tag: &str,
    xs: &[f64],
    annotations: &mut Vec<Annotation>,
    overlays: &mut Vec<Overlay>,
) {
    if let Some(a) = &c.throughput {
        annotations.push(Annotation::VLine {
            x: a.n_half.size_bytes(),
            label: format!("n½{tag}"),
        });
        if a.saturated {
            annotations.push(Annotation::HLine {
                y: a.saturation_bps,
                label: format!("saturation{tag}"),
                axis: YAxis::Y,
            });
        }
    }
    if let Some(d) = &c.dips {
        for x in &d.confirmed {
            annotations.push(Annotation::Marker {
                x: x.original.size_bytes as f64,
                y: x.original.throughput_bps,
                label: format!("dip {} B", x.original.size_bytes),
                axis: YAxis::Y,
            });
        }
    }
    if let Some(h) = &c.hockney {
        overlays.push(Overlay {
            name: format!(
                "Hockney fit of the median{tag}: t0 {:.1} µs",
                h.t0_ns / 1000.0
            ),
            points: xs
                .iter()
                .map(|&x| (x, h.t0_ns + h.slope_ns_per_byte * x))
                .collect(),
            axis: YAxis::Y,
            style: None,
        });
    }
}

/// The figures of a sweep.
pub fn sweep_figures(s: &SweepResult) -> Vec<Named> {
    let Some(along) = along(s) else {
        return Vec::new();
    };
    let server = s
        .points
        .iter()
        .find_map(|p| p.result.server_address.as_deref());
    let sub = subtitle(Some(s.test), server, &s.started_utc);
    let by_variant = curves(s, along);
    let name = |v: &[Setting]| {
        if v.is_empty() {
            "measured".to_string()
        } else {
            settings_text(s.test, v)
        }
    };
    let mut series = Vec::new();
    let mut lat = Vec::new();
    let mut annotations = Vec::new();
    let mut overlays = Vec::new();
    let rr = s.test.is_rr();
    for (i, (variant, pts)) in by_variant.iter().enumerate() {
        let points: Vec<Point> = pts
            .iter()
            .map(|&(x, f)| match f {
                PointFigure::Throughput {
                    throughput_bps: y,
                    stddev_bps: Some(sd),
                } => Point::with_err(x, y, y - sd, y + sd),
                PointFigure::Throughput { throughput_bps, .. }
                | PointFigure::Udp { throughput_bps, .. } => Point::new(x, throughput_bps),
                PointFigure::Transactions {
                    transactions_per_s, ..
                } => Point::new(x, transactions_per_s),
            })
            .collect();
        series.push(Series {
            name: name(variant),
            kind: SeriesKind::LineWithPoints,
            points,
            axis: YAxis::Y,
            style: Some(i),
        });
        if rr {
            for (label, pick) in [("p50", 0usize), ("p99", 1)] {
                let xy: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|&(x, f)| match f {
                        PointFigure::Transactions {
                            rtt_p50_ns,
                            rtt_p99_ns,
                            ..
                        } => Some((x, [rtt_p50_ns, rtt_p99_ns][pick]? as f64)),
                        _ => None,
                    })
                    .collect();
                lat.push(
                    Series::new(
                        format!("{} {label}", name(variant)),
                        SeriesKind::LineWithPoints,
                        &xy,
                    )
                    .with_style(2 * i + pick),
                );
            }
        }
        let Some(c) = s.analysis.iter().find(|c| &c.variant == variant) else {
            continue;
        };
        let tag = if by_variant.len() > 1 {
            format!(" ({})", name(variant))
        } else {
            String::new()
        };
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        analysis_marks(c, &tag, &xs, &mut annotations, &mut overlays);
    }
    let (title, y) = match s.test {
        t if t.is_rr() => (
            "Transactions per second",
            Axis::linear("transactions", Unit::PerSecond),
        ),
        WorkloadKind::UdpStream => (
            "UDP throughput received",
            Axis::linear("payload received", Unit::BitsPerSecond),
        ),
        _ => (
            "TCP stream throughput",
            Axis::linear("payload throughput at the receivers", Unit::BitsPerSecond),
        ),
    };
    let flag = along.flag();
    let mut out =
        vec![Named {
            kind: FigureKind::Curve,
            figure: Figure {
                heading: Heading::new(format!("{title} vs {flag}"), sub.to_string()),
                x: factor_axis(along),
                y,
                series,
                annotations,
                overlays: if rr { Vec::new() } else { overlays.clone() },
                ..Figure::default()
            },
            caption: format!(
            "Each point is one complete test (the mean of its runs, ±1 standard deviation where \
             it ran several); {} grid points, {} re-measured.",
            s.points.iter().filter(|p| p.role == PointRole::Grid).count(),
            s.points.iter().filter(|p| p.role == PointRole::Remeasure).count()
        ),
        }];
    if rr && !lat.is_empty() {
        out.push(Named {
            kind: FigureKind::CurveLatency,
            figure: Figure {
                heading: Heading::new(format!("Round trip vs {flag}"), sub),
                x: factor_axis(along),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: lat,
                overlays,
                ..Figure::default()
            },
            caption: "Client round-trip p50 and p99 of each point's window; the Hockney fit is of \
                      the median round trip."
                .into(),
        });
    }
    out
}
