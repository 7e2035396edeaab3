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

mod limits;
mod run;
mod stream;
mod sweep;

use wirebench_model::result::{RunResult, WorkloadSummary};
use wirebench_model::spec::{FlowDir, WorkloadKind};
use wirebench_plot::{
    Axis, BarFigure, BoxFigure, Figure, HistogramFigure, PanelFigure, Render, Svg, Unit,
};

pub use limits::limits_figures;
pub(crate) use sweep::factor_axis;
pub use sweep::sweep_figures;

/// Most flows drawn one by one in a time series; above it only the totals are drawn.
pub const MAX_FLOW_SERIES: usize = 16;

/// Which figure (the `--kind` of `wirebench plot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    /// Interval figures against time (a stream test's with TCP_INFO companion panels).
    Timeseries,
    /// The round-trip tail from the summary's percentiles.
    Tail,
    /// The round-trip histogram with its tail (complementary CDF) panel.
    Histogram,
    /// Idle and loaded round trips of `rr --under-load` as boxes.
    UnderLoad,
    /// A sweep's headline figure along its factor.
    Curve,
    /// A request/response sweep's round trip along its factor.
    CurveLatency,
    /// A sweep over `--under-load`: idle and loaded round trips per load level, as boxes.
    LatencyVsLoad,
    /// `wirebench limits`: copy and checksum bandwidth against the buffer size.
    Limits,
}

impl FigureKind {
    /// Every kind.
    pub const ALL: [FigureKind; 8] = [
        FigureKind::Timeseries,
        FigureKind::Tail,
        FigureKind::Histogram,
        FigureKind::UnderLoad,
        FigureKind::Curve,
        FigureKind::CurveLatency,
        FigureKind::LatencyVsLoad,
        FigureKind::Limits,
    ];

    /// The name `--kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            FigureKind::Timeseries => "timeseries",
            FigureKind::Tail => "tail",
            FigureKind::Histogram => "histogram",
            FigureKind::UnderLoad => "under-load",
            FigureKind::Curve => "curve",
            FigureKind::CurveLatency => "curve-latency",
            FigureKind::LatencyVsLoad => "latency-vs-load",
            FigureKind::Limits => "limits",
        }
    }
}

/// A figure of any of `wirebench-plot`'s kinds.
#[derive(Debug, Clone)]
pub enum Drawing {
    /// Lines and points over one or two y axes.
    Xy(Figure),
    /// Panels stacked over one x axis.
    Panels(PanelFigure),
    /// A histogram with its tail panel.
    Histogram(HistogramFigure),
    /// Box plots per category.
    Boxes(BoxFigure),
    /// Grouped or stacked bars.
    Bars(BarFigure),
}

impl Drawing {
    /// The figure as SVG.
    pub fn svg(&self) -> Result<Svg, wirebench_plot::PlotError> {
        match self {
            Drawing::Xy(f) => f.render_svg(),
            Drawing::Panels(f) => f.render_svg(),
            Drawing::Histogram(f) => f.render_svg(),
            Drawing::Boxes(f) => f.render_svg(),
            Drawing::Bars(f) => f.render_svg(),
        }
    }
}

/// One figure of a result, ready to draw.
#[derive(Debug, Clone)]
pub struct Named {
    /// Which figure.
    pub kind: FigureKind,
    /// The drawing.
    pub figure: Drawing,
    /// A caption: what the points are, where they were measured.
    pub caption: String,
}

impl Named {
    /// The figure as SVG.
    pub fn svg(&self) -> Result<Svg, wirebench_plot::PlotError> {
        self.figure.svg()
    }

    /// The x–y figure, if this is one.
    pub fn xy(&self) -> Option<&Figure> {
        match &self.figure {
            Drawing::Xy(f) => Some(f),
            _ => None,
        }
    }
}

/// `test · server · start` for a figure's subtitle.
fn subtitle(kind: Option<WorkloadKind>, server: Option<&str>, started_utc: &str) -> String {
    let test = kind.map_or("test", WorkloadKind::as_str);
    let server = server.map_or_else(|| "no server".to_string(), wirebench_model::text::escape);
    format!("{test} · {server} · {started_utc}")
}

/// A time axis from 0 to the last of `ends` (the end of the test's last interval), so the
/// axis stops where the test did instead of at the next round tick.
fn time_axis(label: &str, ends: impl Iterator<Item = f64>) -> Axis {
    let axis = Axis::linear(label, Unit::Seconds);
    match ends.filter(|e| e.is_finite()).reduce(f64::max) {
        Some(end) if end > 0.0 => axis.with_range(0.0, end),
        _ => axis,
    }
}

/// The direction's name in legends.
pub(crate) fn dir_name(d: FlowDir) -> &'static str {
    match d {
        FlowDir::ClientToServer => "forward",
        FlowDir::ServerToClient => "reverse",
    }
}

/// The figures of a test result (its first run).
pub fn run_figures(r: &RunResult) -> Vec<Named> {
    let Some(run) = r.runs.first() else {
        return Vec::new();
    };
    let kind = r.spec.as_ref().map(|s| s.kind());
    let sub = subtitle(kind, r.server_address.as_deref(), &r.started_utc);
    match run.summary.as_ref().map(|s| &s.workload) {
        Some(WorkloadSummary::Stream(s)) => stream::stream_figures(r, run, s, &sub),
        Some(WorkloadSummary::UdpStream(u)) => run::udp_figures(u, &sub),
        Some(WorkloadSummary::Rr(s)) => run::rr_figures(r, s, &sub),
        None => Vec::new(),
    }
}
