//! Figures of a sweep: the headline figure along the swept factor, one line per variant,
//! error bars where the points ran several times, n½, saturation and confirmed dips marked;
//! for request/response also the round trip along the factor with the Hockney fit.

use std::collections::BTreeMap;

use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::{
    CurveAnalysis, FactorName, PointFigure, PointRole, Setting, SweepResult,
};
use wirebench_plot::{
    Annotation, Axis, BoxFigure, BoxSeries, Figure, Heading, Overlay, Point, Series, SeriesKind,
    Unit, YAxis,
};

use super::{subtitle, Drawing, FigureKind, Named};
use crate::print::sweep::settings_text;

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
        | FactorName::Window
        | FactorName::NotsentLowat => Axis::log2(label, Unit::Bytes),
        FactorName::Rate => Axis::log10(label, Unit::None),
        FactorName::UnderLoad => Axis::linear(label, Unit::None),
        FactorName::BufferOffset => Axis::linear(label, Unit::Bytes),
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
    let (limits, limit_note) = if rr {
        (Vec::new(), "")
    } else {
        physical_overlays(s, along, &name)
    };
    overlays.extend(limits);
    let flag = along.flag();
    let mut out =
        vec![Named {
            kind: FigureKind::Curve,
            figure: Drawing::Xy(Figure {
                heading: Heading::new(format!("{title} vs {flag}"), sub.to_string()),
                x: factor_axis(along),
                y,
                series,
                annotations,
                overlays: if rr { Vec::new() } else { overlays.clone() },
                ..Figure::default()
            }),
            caption: format!(
            "Each point is one complete test (the mean of its runs, ±1 standard deviation where \
             it ran several); {} grid points, {} re-measured.{limit_note}",
            s.points.iter().filter(|p| p.role == PointRole::Grid).count(),
            s.points.iter().filter(|p| p.role == PointRole::Remeasure).count()
        ),
        }];
    let overlays: Vec<Overlay> = if rr { overlays } else { Vec::new() };
    if rr && !lat.is_empty() {
        out.push(Named {
            kind: FigureKind::CurveLatency,
            figure: Drawing::Xy(Figure {
                heading: Heading::new(format!("Round trip vs {flag}"), sub.clone()),
                x: factor_axis(along),
                y: Axis::log10("round trip", Unit::Nanoseconds),
                series: lat,
                overlays,
                ..Figure::default()
            }),
            caption: "Client round-trip p50 and p99 of each point's window; the Hockney fit is of \
                      the median round trip."
                .into(),
        });
    }
    out.extend(latency_vs_load(s, &sub, &name));
    out
}

/// The physical limit along the curve, per variant: at each grid point whose result has a
/// physical context (the limits `wirebench limits` cached for that boot), the copy bandwidth
/// over the copies a payload byte costs on this machine, in bits per second.
fn physical_overlays(
    s: &SweepResult,
    along: FactorName,
    name: &dyn Fn(&[Setting]) -> String,
) -> (Vec<Overlay>, &'static str) {
    let mut by: BTreeMap<Vec<Setting>, Vec<(f64, f64)>> = BTreeMap::new();
    for p in s.points.iter().filter(|p| p.role == PointRole::Grid) {
        let (Some(x), Some(c)) = (
            p.settings
                .iter()
                .find(|x| x.factor == along)
                .and_then(|x| x.value.number()),
            p.result.physical.as_ref(),
        ) else {
            continue;
        };
        if c.copies_per_byte > 0.0 {
            let variant: Vec<Setting> = p
                .settings
                .iter()
                .filter(|x| x.factor != along)
                .cloned()
                .collect();
            by.entry(variant)
                .or_default()
                .push((x as f64, c.copy_bytes_per_s * 8.0 / c.copies_per_byte));
        }
    }
    let many = by.len() > 1;
    let out: Vec<Overlay> = by
        .into_iter()
        .enumerate()
        .map(|(i, (v, mut pts))| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Overlay {
                name: if many {
                    format!("copy-bandwidth limit ({})", name(&v))
                } else {
                    "copy-bandwidth limit (wirebench limits)".into()
                },
                points: pts,
                axis: YAxis::Y,
                style: many.then_some(i),
            }
        })
        .collect();
    let note = if out.is_empty() {
        ""
    } else {
        " Dashed: the physical limit of each point, the copy bandwidth `wirebench limits` \
         measured on this machine at the buffer size nearest the message size, over the copies \
         a payload byte costs here (the point's physical context)."
    };
    (out, note)
}

/// A sweep over `--under-load`: per load level, the idle and the loaded round trips of each
/// variant as boxes.
fn latency_vs_load(
    s: &SweepResult,
    sub: &str,
    name: &dyn Fn(&[Setting]) -> String,
) -> Option<Named> {
    if !s.factors.iter().any(|f| f.name == FactorName::UnderLoad) {
        return None;
    }
    let level = |p: &wirebench_model::sweep::SweepPoint| {
        p.settings
            .iter()
            .find(|x| x.factor == FactorName::UnderLoad)
            .and_then(|x| x.value.number())
    };
    let grid: Vec<_> = s
        .points
        .iter()
        .filter(|p| p.role == PointRole::Grid)
        .collect();
    let mut levels: Vec<u64> = grid.iter().filter_map(|p| level(p)).collect();
    levels.sort_unstable();
    levels.dedup();
    let mut variants: Vec<Vec<Setting>> = Vec::new();
    for p in &grid {
        let v: Vec<Setting> = p
            .settings
            .iter()
            .filter(|x| x.factor != FactorName::UnderLoad)
            .cloned()
            .collect();
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let mut series = Vec::new();
    for v in &variants {
        let tag = if variants.len() > 1 {
            format!(" ({})", name(v))
        } else {
            String::new()
        };
        let at = |n: u64| {
            grid.iter().find(|p| {
                level(p) == Some(n)
                    && p.settings
                        .iter()
                        .filter(|x| x.factor != FactorName::UnderLoad)
                        .eq(v.iter())
            })
        };
        let (mut idle, mut loaded) = (Vec::new(), Vec::new());
        for &n in &levels {
            let p = at(n);
            let ul = p.and_then(|p| p.result.under_load.as_ref());
            match (p, ul) {
                (Some(p), Some(u)) => {
                    idle.push(super::run::latency_box(&u.idle));
                    loaded.push(super::run::latency_box(&p.result));
                }
                // No load at this level: the test ran alone.
                (Some(p), None) => {
                    idle.push(super::run::latency_box(&p.result));
                    loaded.push(None);
                }
                _ => {
                    idle.push(None);
                    loaded.push(None);
                }
            }
        }
        series.push(BoxSeries {
            name: format!("idle{tag}"),
            boxes: idle,
        });
        series.push(BoxSeries {
            name: format!("loaded{tag}"),
            boxes: loaded,
        });
    }
    let any = series.iter().any(|b| b.boxes.iter().any(Option::is_some));
    any.then(|| Named {
        kind: FigureKind::LatencyVsLoad,
        figure: Drawing::Boxes(BoxFigure {
            heading: Heading::new("Round trip vs --under-load", sub.to_string()),
            categories: levels
                .iter()
                .map(|&n| format!("{n} flow{}", if n == 1 { "" } else { "s" }))
                .collect(),
            category_label: "stream flows of the load (--under-load)".into(),
            y: Axis::log10("round trip at the client", Unit::Nanoseconds),
            series,
            whisker_labels: Some(("p1".into(), "p99".into())),
        }),
        caption: format!(
            "{} Per load level: idle, the test alone measured first; loaded, the same test \
             beside that many stream flows on the same path.",
            super::run::BOX_NOTE
        ),
    })
}
