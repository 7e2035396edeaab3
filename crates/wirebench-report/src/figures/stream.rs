//! A stream test's time series: throughput per flow and per direction at the receivers and,
//! when the senders sampled TCP_INFO, companion panels under it with the same x axis:
//! retransmits per interval, the congestion window and the smoothed round trip.

use wirebench_model::result::{RunRecord, RunResult, StreamSummary};
use wirebench_model::side::SideData;
use wirebench_model::spec::FlowDir;
use wirebench_model::tcp_series::TcpIntervalRow;
use wirebench_plot::{
    Annotation, Axis, Figure, Heading, Panel, PanelFigure, Series, SeriesKind, Unit, YAxis,
};

use super::{dir_name, Drawing, FigureKind, Named, MAX_FLOW_SERIES};

/// The style slot of flow `flow`: the palette without black, which the totals use.
fn flow_style(flow: u32) -> usize {
    [0, 1, 2, 3, 4, 5, 7][flow as usize % 7]
}

/// The style slot of a direction's total.
fn total_style(d: FlowDir) -> usize {
    match d {
        FlowDir::ClientToServer => 6,
        FlowDir::ServerToClient => 14,
    }
}

/// Throughput per flow (receivers, up to [`MAX_FLOW_SERIES`] per end) and per direction.
fn throughput_series(run: &RunRecord, s: &StreamSummary) -> Vec<Series> {
    let mut series = Vec::new();
    for side in [run.client.as_ref(), run.server.as_ref()]
        .into_iter()
        .flatten()
    {
        let Some(SideData::Stream(st)) = side.data.as_ref() else {
            continue;
        };
        let flows = wirebench_analysis::stream::receiver_flow_intervals(st);
        if flows.len() > MAX_FLOW_SERIES {
            continue;
        }
        for (flow, pts) in flows {
            series.push(
                Series::new(format!("flow {flow}"), SeriesKind::Step, &pts)
                    .with_style(flow_style(flow)),
            );
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
            series.push(
                Series::new(
                    format!("total {}", dir_name(d)),
                    SeriesKind::LineWithPoints,
                    &pts,
                )
                .with_style(total_style(d)),
            );
        }
    }
    series
}

/// The physical limit of `r` on the throughput axis: the copy bandwidth `wirebench limits`
/// measured, over the copies each payload byte costs on this machine.
fn physical_limit(r: &RunResult) -> Option<Annotation> {
    let p = r.physical.as_ref()?;
    (p.copies_per_byte > 0.0).then(|| {
        let bps = p.copy_bytes_per_s * 8.0 / p.copies_per_byte;
        Annotation::HLine {
            y: bps,
            label: format!(
                "copy-bandwidth limit {} ({:.1} copies per byte)",
                wirebench_plot::units::format_bits_per_s(bps),
                p.copies_per_byte
            ),
            axis: YAxis::Y,
        }
    })
}

/// One companion panel: `value` of each flow's rows (when the summary has them) and of each
/// direction's row, against the sample time.
fn tcp_panel(
    rows: &[TcpIntervalRow],
    y: Axis,
    kind: SeriesKind,
    value: &dyn Fn(&TcpIntervalRow) -> f64,
) -> Panel {
    let mut series = Vec::new();
    let mut flows: Vec<u32> = rows.iter().filter_map(|r| r.flow).collect();
    flows.sort_unstable();
    flows.dedup();
    for f in flows {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.flow == Some(f))
            .map(|r| (r.end_s, value(r)))
            .collect();
        series.push(Series::new(format!("flow {f}"), kind, &pts).with_style(flow_style(f)));
    }
    for d in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.flow.is_none() && r.dir == d)
            .map(|r| (r.end_s, value(r)))
            .collect();
        if !pts.is_empty() {
            series.push(
                Series::new(
                    format!("total {}", dir_name(d)),
                    SeriesKind::LineWithPoints,
                    &pts,
                )
                .with_style(total_style(d)),
            );
        }
    }
    Panel {
        y,
        series,
        annotations: Vec::new(),
    }
}

/// A stream test's figures: throughput against time, with the senders' TCP_INFO panels
/// under it when the result has them.
pub(super) fn stream_figures(
    r: &RunResult,
    run: &RunRecord,
    s: &StreamSummary,
    sub: &str,
) -> Vec<Named> {
    let series = throughput_series(run, s);
    if series.is_empty() {
        return Vec::new();
    }
    let x = super::time_axis(
        "time since each end's start",
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.x))
            .chain(s.tcp_intervals.iter().map(|r| r.end_s)),
    );
    let y = Axis::linear("payload throughput at the receiver", Unit::BitsPerSecond);
    let limit: Vec<Annotation> = physical_limit(r).into_iter().collect();
    let limit_note = if limit.is_empty() {
        String::new()
    } else {
        format!(
            " The line is the copy bandwidth `wirebench limits` measured on this machine over \
             the copies each payload byte costs here (the result's physical context); more \
             than {}× the data's largest value, it is marked at the top edge instead and the \
             axis keeps to the data.",
            wirebench_plot::OFF_SCALE_RATIO
        )
    };
    let throughput_caption = format!(
        "Throughput: bytes read by the receiving application per interval × 8 / interval \
         length, drawn at each interval's end, on the receiving end's clock; flows drawn one \
         by one up to {MAX_FLOW_SERIES} per end.{limit_note}"
    );
    let rows = &s.tcp_intervals;
    if rows.is_empty() {
        return vec![Named {
            kind: FigureKind::Timeseries,
            figure: Drawing::Xy(Figure {
                heading: Heading::new("TCP stream throughput per interval", sub.to_string()),
                x,
                y,
                series,
                annotations: limit,
                ..Figure::default()
            }),
            caption: throughput_caption,
        }];
    }
    let panels = vec![
        Panel {
            y,
            series,
            annotations: limit,
        },
        tcp_panel(
            rows,
            Axis::linear(
                "retransmitted in the interval (sender)",
                Unit::Other("segments".into()),
            ),
            SeriesKind::LineWithPoints,
            &|r| r.retransmits as f64,
        ),
        tcp_panel(
            rows,
            Axis::linear("congestion window (sender)", Unit::Bytes),
            SeriesKind::Line,
            &|r| r.cwnd_bytes as f64,
        ),
        tcp_panel(
            rows,
            Axis::linear("smoothed round trip (sender)", Unit::Nanoseconds),
            SeriesKind::Line,
            &|r| r.srtt_ns as f64,
        ),
    ];
    vec![Named {
        kind: FigureKind::Timeseries,
        figure: Drawing::Panels(PanelFigure {
            heading: Heading::new(
                "TCP stream throughput, retransmits, cwnd and RTT per interval",
                sub.to_string(),
            ),
            x,
            panels,
        }),
        caption: format!(
            "{throughput_caption} Below, TCP_INFO of each sending flow read by the sending \
             end's sampling thread at each interval's end, on the sending end's clock: \
             segments retransmitted since the previous sample (tcpi_total_retrans), the \
             congestion window in bytes (tcpi_snd_cwnd × tcpi_snd_mss) and the smoothed round \
             trip (tcpi_rtt); a direction's total is the sum of its flows' retransmits and \
             windows and the mean of their round trips."
        ),
    }]
}
