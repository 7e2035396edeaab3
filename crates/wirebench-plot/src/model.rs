//! The neutral figure model: plain data describing what to draw, independent of wirebench's
//! result types. Everything here is serde-serializable; rendering lives in [`crate::render`].

use serde::{Deserialize, Serialize};

/// Title block shared by every figure kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Heading {
    /// Main title, e.g. "TCP stream throughput vs message size".
    pub title: String,
    /// Smaller line under it: test, path, date ("tcp_stream · veth ns0→ns1 · 2026-11-24").
    pub subtitle: String,
}

impl Heading {
    /// A heading with a title and a subtitle.
    pub fn new(title: impl Into<String>, subtitle: impl Into<String>) -> Self {
        Heading {
            title: title.into(),
            subtitle: subtitle.into(),
        }
    }
}

/// Axis scale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Logarithmic with ticks at powers of two (message sizes, buffer sizes).
    Log2,
    /// Logarithmic with ticks at powers of ten (latencies, rates).
    Log10,
}

/// What an axis measures; decides tick formatting (binary prefixes for bytes, decimal for
/// rates, ns → µs/ms/s for times).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// A plain number without unit.
    #[default]
    None,
    /// Bytes (B, KiB, MiB, GiB).
    Bytes,
    /// Bits per second (bit/s, kbit/s, Mbit/s, Gbit/s).
    BitsPerSecond,
    /// Bytes per second (B/s, KiB/s, MiB/s, GiB/s).
    BytesPerSecond,
    /// Bytes per second with decimal prefixes (B/s, kB/s, MB/s, GB/s: 1 GB/s = 10⁹ B/s),
    /// for figures whose text gives bandwidths in GB/s.
    DecimalBytesPerSecond,
    /// Nanoseconds, shown as ns/µs/ms/s.
    Nanoseconds,
    /// Seconds, shown as s (ms/µs below one second on log axes).
    Seconds,
    /// Percent (values are already ×100).
    Percent,
    /// Events per second (k/s, M/s).
    PerSecond,
    /// Any other unit, written after the axis label as given, e.g. "segments".
    Other(String),
}

/// One axis.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// What is measured, e.g. "message size", "throughput".
    pub label: String,
    /// Unit of the values (ticks are formatted from it).
    pub unit: Unit,
    /// Scale.
    pub scale: Scale,
    /// Fixed range; `None` fits the data (and annotations).
    pub range: Option<(f64, f64)>,
    /// On an automatic linear range, extend it to zero (default true: honest throughput
    /// plots start at 0).
    pub include_zero: bool,
    /// Labelled ticks at these values with these labels instead of the automatic ones
    /// (log axes; e.g. the MTUs a study measured); empty for automatic ticks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ticks_at: Vec<(f64, String)>,
}

impl Axis {
    /// A linear axis starting at zero.
    pub fn linear(label: impl Into<String>, unit: Unit) -> Self {
        Axis {
            label: label.into(),
            unit,
            scale: Scale::Linear,
            range: None,
            include_zero: true,
            ticks_at: Vec::new(),
        }
    }

    /// The same axis, ticked only at `ticks` (value, label) where they fall in its range.
    pub fn with_ticks_at(self, ticks: Vec<(f64, String)>) -> Self {
        Axis {
            ticks_at: ticks,
            ..self
        }
    }

    /// A log-2 axis.
    pub fn log2(label: impl Into<String>, unit: Unit) -> Self {
        Axis {
            scale: Scale::Log2,
            ..Axis::linear(label, unit)
        }
    }

    /// A log-10 axis.
    pub fn log10(label: impl Into<String>, unit: Unit) -> Self {
        Axis {
            scale: Scale::Log10,
            ..Axis::linear(label, unit)
        }
    }

    /// The same axis with a fixed range.
    pub fn with_range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }

    /// The same axis without the automatic extension to zero.
    pub fn without_zero(mut self) -> Self {
        self.include_zero = false;
        self
    }
}

/// Which y axis a series or annotation belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum YAxis {
    /// The left axis.
    #[default]
    Y,
    /// The right axis ([`Figure::y2`]).
    Y2,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeriesKind {
    /// A line; line-only series get distinct dash patterns.
    Line,
    /// Markers only.
    Points,
    /// A solid line with markers (the default for measured sweeps).
    #[default]
    LineWithPoints,
    /// A step line (value holds until the next point), for counters and cwnd.
    Step,
}

/// One data point. `err_lo`/`err_hi` are the absolute y values of the error bar's ends (e.g. a
/// confidence interval), not distances from `y`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// x value.
    pub x: f64,
    /// y value.
    pub y: f64,
    /// Lower end of the error bar (absolute y value).
    pub err_lo: Option<f64>,
    /// Upper end of the error bar (absolute y value).
    pub err_hi: Option<f64>,
}

impl Point {
    /// A point without error bar.
    pub fn new(x: f64, y: f64) -> Self {
        Point {
            x,
            y,
            err_lo: None,
            err_hi: None,
        }
    }

    /// A point with an error bar from `lo` to `hi` (absolute values).
    pub fn with_err(x: f64, y: f64, lo: f64, hi: f64) -> Self {
        Point {
            x,
            y,
            err_lo: Some(lo),
            err_hi: Some(hi),
        }
    }
}

/// A data series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Drawing kind.
    pub kind: SeriesKind,
    /// Points in drawing order; non-finite values (and non-positive ones on log axes) break
    /// the line and are not drawn.
    pub points: Vec<Point>,
    /// Which y axis.
    pub axis: YAxis,
    /// Style slot (colour, marker, dash); `None` uses the series' index. Set it to keep one
    /// flow's colour across panels.
    pub style: Option<usize>,
}

impl Series {
    /// A series of `kind` from `(x, y)` pairs, on the left axis.
    pub fn new(name: impl Into<String>, kind: SeriesKind, xy: &[(f64, f64)]) -> Self {
        Series {
            name: name.into(),
            kind,
            points: xy.iter().map(|&(x, y)| Point::new(x, y)).collect(),
            axis: YAxis::Y,
            style: None,
        }
    }

    /// The same series on the right axis.
    pub fn on_y2(mut self) -> Self {
        self.axis = YAxis::Y2;
        self
    }

    /// The same series with style slot `slot`.
    pub fn with_style(mut self, slot: usize) -> Self {
        self.style = Some(slot);
        self
    }
}

/// A model curve drawn dashed over the data (e.g. a Hockney fit).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overlay {
    /// Legend name, e.g. "Hockney fit: r∞ = 94 Gbit/s, n½ = 6.2 KiB".
    pub name: String,
    /// Curve samples `(x, y)`.
    pub points: Vec<(f64, f64)>,
    /// Which y axis.
    pub axis: YAxis,
    /// Draw in the colour of this style slot (the series it models); `None`: dark grey.
    pub style: Option<usize>,
}

/// A horizontal reference line more than this many times the data's largest value does not
/// stretch a linear axis: the axis stays fitted to the data and the line is drawn as an
/// off-scale marker at the plot's top edge (a 120 Gbit/s copy limit over 20 Gbit/s of data
/// would otherwise squeeze the data into the bottom fifth).
pub const OFF_SCALE_RATIO: f64 = 2.0;

/// Something marked on a plot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Annotation {
    /// A vertical reference line at `x`, e.g. "n½ = 6.2 KiB".
    VLine {
        /// Position.
        x: f64,
        /// Label.
        label: String,
    },
    /// A horizontal reference line at `y`, e.g. "saturation 94.1 Gbit/s", "physical limit".
    HLine {
        /// Position.
        y: f64,
        /// Label.
        label: String,
        /// Which y axis `y` is on.
        axis: YAxis,
    },
    /// A marked point with a label, e.g. a dip.
    Marker {
        /// x position.
        x: f64,
        /// y position.
        y: f64,
        /// Label.
        label: String,
        /// Which y axis `y` is on.
        axis: YAxis,
    },
    /// A shaded band over an x interval (full height).
    XBand {
        /// Start.
        from: f64,
        /// End.
        to: f64,
        /// Label.
        label: String,
    },
    /// A shaded band over a y interval (full width).
    YBand {
        /// Start.
        from: f64,
        /// End.
        to: f64,
        /// Label.
        label: String,
        /// Which y axis.
        axis: YAxis,
    },
}

/// An x–y figure: lines/points over one or two y axes, with annotations and model overlays.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Title and subtitle.
    pub heading: Heading,
    /// x axis.
    pub x: Axis,
    /// Left y axis.
    pub y: Axis,
    /// Optional right y axis for series with [`YAxis::Y2`].
    pub y2: Option<Axis>,
    /// Data series.
    pub series: Vec<Series>,
    /// Reference lines, markers, bands.
    pub annotations: Vec<Annotation>,
    /// Dashed model curves.
    pub overlays: Vec<Overlay>,
}

/// Bar orientation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Orientation {
    /// Vertical bars, categories along x.
    #[default]
    Vertical,
    /// Horizontal bars, categories down y (for long names such as a tuning ladder).
    Horizontal,
}

/// Grouped and/or stacked bars: for each category, one bar per group side by side, each bar
/// stacked from the stack components (e.g. categories = MTUs, groups = copy/zero-copy,
/// stacks = user/sys copy/sys TCP/softirq, as in Trapeze fig. 5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BarFigure {
    /// Title and subtitle.
    pub heading: Heading,
    /// Category names.
    pub categories: Vec<String>,
    /// What the categories are, e.g. "MTU".
    pub category_label: String,
    /// Bars within a category; one empty-named group for plain bars.
    pub groups: Vec<String>,
    /// Stacked components; one component for unstacked bars.
    pub stacks: Vec<String>,
    /// `values[category][group][stack]`; non-finite entries are not drawn.
    pub values: Vec<Vec<Vec<f64>>>,
    /// Value axis (its scale must be linear).
    pub value_axis: Axis,
    /// Bar orientation.
    pub orientation: Orientation,
    /// Write each bar's total at its end.
    pub show_totals: bool,
    /// Error bars on the bars' totals, `errors[category][group] = Some((low, high))` in
    /// value-axis units (e.g. min–max of repeated points); empty: none. Drawn as a line
    /// with caps across the bar's end; the value axis stretches to include them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Vec<Option<(f64, f64)>>>,
}

/// One histogram bin `[lo, hi)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// Lower edge.
    pub lo: f64,
    /// Upper edge.
    pub hi: f64,
    /// Samples in the bin.
    pub count: u64,
}

/// A marked percentile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// Label, e.g. "p99".
    pub label: String,
    /// The value (in the x unit).
    pub value: f64,
}

/// A latency histogram with a tail (complementary CDF) companion panel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramFigure {
    /// Title and subtitle.
    pub heading: Heading,
    /// Value axis, usually `Axis::log10("latency", Unit::Nanoseconds)`.
    pub x: Axis,
    /// Bins in increasing order.
    pub bins: Vec<Bin>,
    /// Percentiles to mark (p50, p99, p99.9 …), drawn across both panels.
    pub percentiles: Vec<Percentile>,
    /// Draw the companion panel: fraction of samples above x on a log axis, which makes p99
    /// and p99.9 readable where a plain CDF is flat.
    pub tail_panel: bool,
}

/// One panel of a [`PanelFigure`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// y axis of the panel.
    pub y: Axis,
    /// Series of the panel.
    pub series: Vec<Series>,
    /// Annotations of the panel (y values on this panel's axis).
    pub annotations: Vec<Annotation>,
}

/// 2–4 vertically stacked panels sharing the x axis (time series per flow: throughput,
/// retransmits, cwnd, RTT).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelFigure {
    /// Title and subtitle.
    pub heading: Heading,
    /// Shared x axis.
    pub x: Axis,
    /// Panels from top to bottom.
    pub panels: Vec<Panel>,
}

/// Five-number summary of one box, plus outliers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoxStats {
    /// Lower whisker end.
    pub whisker_lo: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Upper whisker end.
    pub whisker_hi: f64,
    /// Mean, drawn as a small cross if given.
    pub mean: Option<f64>,
    /// Samples beyond the whiskers.
    pub outliers: Vec<f64>,
}

impl BoxStats {
    /// Tukey's box from raw samples: quartiles by linear interpolation between order
    /// statistics, whiskers at the most extreme samples within 1.5 IQR of the box, the rest
    /// outliers. Non-finite samples are ignored; `None` if no finite sample remains.
    pub fn from_samples(samples: &[f64]) -> Option<BoxStats> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|s| s.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (v.len() - 1) as f64;
            let i = pos.floor() as usize;
            let frac = pos - i as f64;
            if i + 1 < v.len() {
                v[i] + (v[i + 1] - v[i]) * frac
            } else {
                v[i]
            }
        };
        let (q1, median, q3) = (q(0.25), q(0.5), q(0.75));
        let iqr = q3 - q1;
        let (lo_fence, hi_fence) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside: Vec<f64> = v
            .iter()
            .copied()
            .filter(|s| *s >= lo_fence && *s <= hi_fence)
            .collect();
        let whisker_lo = inside.first().copied().unwrap_or(q1);
        let whisker_hi = inside.last().copied().unwrap_or(q3);
        let outliers = v
            .iter()
            .copied()
            .filter(|s| *s < lo_fence || *s > hi_fence)
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        Some(BoxStats {
            whisker_lo,
            q1,
            median,
            q3,
            whisker_hi,
            mean: Some(mean),
            outliers,
        })
    }
}

/// One series of boxes, one per category (`None` where it has no data).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoxSeries {
    /// Legend name.
    pub name: String,
    /// One entry per category of the figure.
    pub boxes: Vec<Option<BoxStats>>,
}

/// Box plots per category, e.g. latency vs offered load, one series per configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoxFigure {
    /// Title and subtitle.
    pub heading: Heading,
    /// Category names along x.
    pub categories: Vec<String>,
    /// What the categories are, e.g. "offered load".
    pub category_label: String,
    /// Value axis (linear or log).
    pub y: Axis,
    /// Box series side by side within each category.
    pub series: Vec<BoxSeries>,
    /// What the whisker ends are, low and high (e.g. "p1", "p99"): written with their values
    /// beside the whisker caps (of every box when there are at most four, else of the first).
    #[serde(default)]
    pub whisker_labels: Option<(String, String)>,
}

/// A matrix over ordered pairs: one cell per (row, column), coloured by its value on one
/// sequential scale and labelled with it, e.g. a mesh's throughput per client (rows) and
/// server (columns). Cells without a value are grey and say why ([`HeatmapFigure::missing`]);
/// when rows and columns are the same list, the diagonal (a host with itself) is blank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeatmapFigure {
    /// Title and subtitle.
    pub heading: Heading,
    /// Row names, top to bottom.
    pub rows: Vec<String>,
    /// Column names, left to right.
    pub columns: Vec<String>,
    /// What the rows are, e.g. "client".
    pub row_label: String,
    /// What the columns are, e.g. "server".
    pub column_label: String,
    /// What the values measure and their unit (the scale's title and each cell's text).
    pub value: Axis,
    /// `values[row][column]`; `None` where there is no value.
    pub values: Vec<Vec<Option<f64>>>,
    /// Per cell without a value, what it says (e.g. "down"); empty, or one row per row.
    pub missing: Vec<Vec<String>>,
    /// Whether low values are the good ones (latency): the scale then runs the other way,
    /// so the best cells are always the lightest.
    pub lower_is_better: bool,
}

#[cfg(test)]
mod tests {
    use super::BoxStats;

    #[test]
    fn figures_round_trip_through_json() {
        // serde_json may move a float by one ulp; the drawing (0.1 px precision) must not change.
        use crate::Render;
        let f = crate::gallery::sweep();
        let back: super::Figure =
            serde_json::from_str(&serde_json::to_string(&f).expect("ser")).expect("de");
        assert_eq!(back.render_svg().ok(), f.render_svg().ok());
        let p = crate::gallery::panels();
        let back: super::PanelFigure =
            serde_json::from_str(&serde_json::to_string(&p).expect("ser")).expect("de");
        assert_eq!(back.render_svg().ok(), p.render_svg().ok());
        assert!(p.render_svg().is_ok());
    }

    #[test]
    fn tukey_box_of_known_samples() {
        // 1..=9 and an outlier 100: quartiles of 10 samples by interpolation.
        let mut s: Vec<f64> = (1..=9).map(f64::from).collect();
        s.push(100.0);
        let b = BoxStats::from_samples(&s).expect("finite samples");
        assert!((b.q1 - 3.25).abs() < 1e-12);
        assert!((b.median - 5.5).abs() < 1e-12);
        assert!((b.q3 - 7.75).abs() < 1e-12);
        assert_eq!(b.whisker_lo, 1.0);
        assert_eq!(b.whisker_hi, 9.0);
        assert_eq!(b.outliers, vec![100.0]);
        assert!(BoxStats::from_samples(&[f64::NAN]).is_none());
    }
}
