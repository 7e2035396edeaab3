//! The frame every chart shares: title block, legend row(s) above the plot, axes and grid
//! drawn by plotters over [`PlanCoord`]s, and the value→pixel mapping the marks use.

use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::prelude::{ChartBuilder, IntoFont};
use plotters::style::ShapeStyle;

use super::pen::{Anchor, Pen, Rect, TextSpec};
use crate::model::{Heading, YAxis};
use crate::style::{
    self, text_width_px, Marker, AXIS, AXIS_LABEL_PX, GRID, GRID_LIGHT, INK, INK_SOFT, LEGEND_PX,
    SUBTITLE_PX, TICK_PX, TITLE_PX,
};
use crate::svg::SvgSink;
use crate::ticks::{AxisPlan, PlanCoord};
use crate::PlotError;

/// Outer margin of every figure.
pub(crate) const MARGIN: f64 = 14.0;
/// Height of the bottom label area: tick labels and the axis title.
pub(crate) const BOTTOM_AREA: f64 = 50.0;
/// Legend row height.
const LEGEND_ROW: f64 = 19.0;

/// Extra room a y label area needs besides its widest tick label: tick, gap, rotated title.
pub(crate) fn y_area_width(plan: &AxisPlan) -> f64 {
    (plan.max_label_width() + 38.0).ceil()
}

/// Greedy word wrap of `text` to `width` pixels.
pub(crate) fn wrap(text: &str, size: f64, bold: bool, width: f64) -> Vec<String> {
    let mut lines = vec![];
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if !cur.is_empty() && text_width_px(&cand, size, bold) > width {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Draws title and subtitle at the top; returns the y just below them.
pub(crate) fn draw_heading(pen: &Pen, h: &Heading, width: f64) -> f64 {
    let mut y = MARGIN;
    let avail = width - 2.0 * MARGIN;
    pen.group("title", "");
    for line in wrap(&h.title, TITLE_PX, true, avail) {
        pen.text(
            MARGIN,
            y + TITLE_PX * 0.6,
            &line,
            TextSpec::new(TITLE_PX, INK).bold(),
        );
        y += TITLE_PX * 1.25;
    }
    pen.end();
    if !h.subtitle.is_empty() {
        pen.group("subtitle", "");
        for line in wrap(&h.subtitle, SUBTITLE_PX, false, avail) {
            pen.text(
                MARGIN,
                y + SUBTITLE_PX * 0.6,
                &line,
                TextSpec::new(SUBTITLE_PX, INK_SOFT),
            );
            y += SUBTITLE_PX * 1.3;
        }
        pen.end();
    }
    y + 4.0
}

/// What a legend entry shows next to its name.
#[derive(Clone, Debug)]
pub(crate) enum Sample {
    /// A line sample (dash, width) with an optional marker.
    Line {
        slot: usize,
        dash: &'static str,
        width: f64,
        marker: Option<Marker>,
    },
    /// A model overlay (long dashes).
    Overlay { color: plotters::style::RGBColor },
    /// A filled swatch (bars, boxes).
    Swatch { slot: usize },
}

/// One legend entry.
#[derive(Clone, Debug)]
pub(crate) struct LegendEntry {
    pub name: String,
    pub sample: Sample,
}

const SAMPLE_W: f64 = 26.0;

fn entry_width(e: &LegendEntry) -> f64 {
    SAMPLE_W + 6.0 + text_width_px(&e.name, LEGEND_PX, false) + 18.0
}

/// Number of legend rows the entries need in `width` pixels.
pub(crate) fn legend_rows(entries: &[LegendEntry], width: f64) -> usize {
    if entries.is_empty() {
        return 0;
    }
    let mut rows = 1;
    let mut x = 0.0;
    for e in entries {
        let w = entry_width(e);
        if x > 0.0 && x + w > width {
            rows += 1;
            x = 0.0;
        }
        x += w;
    }
    rows
}

/// Height of a legend of `rows` rows (0 when empty).
pub(crate) fn legend_height(rows: usize) -> f64 {
    if rows == 0 {
        0.0
    } else {
        rows as f64 * LEGEND_ROW + 4.0
    }
}

/// Draws the legend from `(x0, y0)` wrapping at `width`.
pub(crate) fn draw_legend(pen: &Pen, entries: &[LegendEntry], x0: f64, y0: f64, width: f64) {
    if entries.is_empty() {
        return;
    }
    pen.group("legend", "");
    let mut x = 0.0;
    let mut y = y0 + LEGEND_ROW / 2.0;
    for e in entries {
        let w = entry_width(e);
        if x > 0.0 && x + w > width {
            x = 0.0;
            y += LEGEND_ROW;
        }
        let sx = x0 + x;
        pen.group("legend-entry", "");
        match &e.sample {
            Sample::Line {
                slot,
                dash,
                width,
                marker,
            } => {
                let c = style::color(*slot);
                pen.line((sx, y), (sx + SAMPLE_W, y), c, *width, dash);
                if let Some(m) = marker {
                    pen.marker(*m, sx + SAMPLE_W / 2.0, y, 4.0, c);
                }
            }
            Sample::Overlay { color } => {
                pen.line(
                    (sx, y),
                    (sx + SAMPLE_W, y),
                    *color,
                    1.8,
                    style::OVERLAY_DASH,
                );
            }
            Sample::Swatch { slot } => {
                pen.rect(
                    Rect::new(sx + 7.0, y - 6.0, sx + 19.0, y + 6.0),
                    Some((style::color(*slot), 1.0)),
                    None,
                    1.5,
                );
            }
        }
        pen.text(
            sx + SAMPLE_W + 6.0,
            y,
            &e.name,
            TextSpec::new(LEGEND_PX, INK).anchor(Anchor::Start),
        );
        pen.end();
        x += w;
    }
    pen.end();
}

/// Value→pixel mapping of one plot area.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    /// Plot area in pixels (inclusive edges).
    pub plot: Rect,
    /// x axis.
    pub x: AxisPlan,
    /// Left y axis.
    pub y: AxisPlan,
    /// Right y axis.
    pub y2: Option<AxisPlan>,
}

impl Frame {
    /// The y plan for `axis` (the left one when there is no right axis).
    pub(crate) fn yplan(&self, axis: YAxis) -> &AxisPlan {
        match (axis, &self.y2) {
            (YAxis::Y2, Some(p)) => p,
            _ => &self.y,
        }
    }

    /// Pixel x of value `v`.
    pub(crate) fn px(&self, v: f64) -> f64 {
        self.plot.x0 + self.x.frac(v) * (self.plot.x1 - self.plot.x0)
    }

    /// Pixel y of value `v` on `axis`.
    pub(crate) fn py(&self, v: f64, axis: YAxis) -> f64 {
        self.plot.y1 - self.yplan(axis).frac(v) * (self.plot.y1 - self.plot.y0)
    }

    /// Pixel position of `(x, y)`, if both are drawable on their axes.
    pub(crate) fn at(&self, x: f64, y: f64, axis: YAxis) -> Option<(f64, f64)> {
        if self.x.drawable(x) && self.yplan(axis).drawable(y) {
            Some((self.px(x), self.py(y, axis)))
        } else {
            None
        }
    }
}

/// Axes options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxesOpts {
    /// Draw x tick labels and title (false for upper panels).
    pub x_labels: bool,
    /// Vertical grid lines.
    pub x_grid: bool,
    /// Horizontal grid lines.
    pub y_grid: bool,
    /// Height of the bottom label area (tick labels and x title) when `x_labels`.
    pub bottom_px: f64,
}

impl AxesOpts {
    /// Full grid, x labels, standard bottom area.
    pub(crate) fn standard() -> AxesOpts {
        AxesOpts {
            x_labels: true,
            x_grid: true,
            y_grid: true,
            bottom_px: BOTTOM_AREA,
        }
    }
}

fn draw_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Drawing(e.to_string())
}

/// Draws axes, ticks, tick labels, axis titles and grid for a plot occupying `target`
/// (pixels) on `root`, and returns the frame with the plot area plotters actually used.
pub(crate) fn draw_axes(
    root: &DrawingArea<SvgSink, Shift>,
    pen: &Pen,
    target: Rect,
    plans: (AxisPlan, AxisPlan, Option<AxisPlan>),
    opts: AxesOpts,
) -> Result<Frame, PlotError> {
    let (w, h) = root.dim_in_pixel();
    let (x, y, y2) = plans;
    let top = target.y0.round() as i32;
    let bottom_label = if opts.x_labels {
        opts.bottom_px.round() as u32
    } else {
        0
    };
    let area_h = (target.y1.round() as i32 - top + bottom_label as i32 + 1).max(10);
    let left = MARGIN as i32;
    let x1 = target.x1.round() as i32;
    // With a right axis the area reaches the right margin and the axis gets the rest;
    // without, the area ends at the plot's right edge.
    let area_w = if y2.is_some() {
        (w as i32 - 2 * left).max(10)
    } else {
        (x1 - left + 1).max(10)
    };
    let area = root
        .clone()
        .shrink((left, top), (area_w as u32, area_h as u32));
    let left_area = (target.x0.round() as i32 - left).max(0) as u32;
    let right_area = (left + area_w - x1 - 1).max(0) as u32;
    let _ = h;
    pen.group("axes", "");
    let mut builder = ChartBuilder::on(&area);
    builder
        .x_label_area_size(bottom_label)
        .y_label_area_size(left_area);
    if y2.is_some() {
        builder.right_y_label_area_size(right_area);
    }
    let chart = builder
        .build_cartesian_2d(PlanCoord(x.clone()), PlanCoord(y.clone()))
        .map_err(draw_err)?;
    let tick_font = ("sans-serif", TICK_PX).into_font().color(&INK);
    let desc_font = ("sans-serif", AXIS_LABEL_PX).into_font().color(&INK);
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let plot = Rect::new(
        f64::from(xr.start),
        f64::from(yr.start),
        f64::from(xr.end - 1),
        f64::from(yr.end - 1),
    );
    let titles = (x.title.as_str(), y.title.as_str());
    match &y2 {
        None => {
            let mut chart = chart;
            primary_mesh(&mut chart, opts, titles, &tick_font, &desc_font)?;
        }
        Some(p2) => {
            // The secondary coordinate must exist before the primary mesh is drawn: it takes
            // the right label area away from the primary axis.
            let mut dual = chart.set_secondary_coord(PlanCoord(x.clone()), PlanCoord(p2.clone()));
            primary_mesh(&mut dual, opts, titles, &tick_font, &desc_font)?;
            dual.configure_secondary_axes()
                .axis_style(ShapeStyle::from(&AXIS).stroke_width(1))
                .label_style(tick_font)
                .axis_desc_style(desc_font)
                .y_labels(64)
                .y_desc(p2.title.clone())
                .draw()
                .map_err(draw_err)?;
        }
    }
    pen.end();
    Ok(Frame { plot, x, y, y2 })
}

type PlanChart<'a> = plotters::chart::ChartContext<
    'a,
    SvgSink,
    plotters::coord::cartesian::Cartesian2d<PlanCoord, PlanCoord>,
>;

fn primary_mesh(
    chart: &mut PlanChart<'_>,
    opts: AxesOpts,
    (x_title, y_title): (&str, &str),
    tick_font: &plotters::style::TextStyle,
    desc_font: &plotters::style::TextStyle,
) -> Result<(), PlotError> {
    let mut mesh = chart.configure_mesh();
    mesh.bold_line_style(ShapeStyle::from(&GRID).stroke_width(1))
        .light_line_style(ShapeStyle::from(&GRID_LIGHT).stroke_width(1))
        .axis_style(ShapeStyle::from(&AXIS).stroke_width(1))
        .set_all_tick_mark_size(5)
        .label_style(tick_font.clone())
        .axis_desc_style(desc_font.clone())
        .x_labels(64)
        .y_labels(64)
        .max_light_lines(64)
        .y_desc(y_title);
    if opts.x_labels {
        mesh.x_desc(x_title);
    }
    if !opts.x_grid {
        mesh.disable_x_mesh();
    }
    if !opts.y_grid {
        mesh.disable_y_mesh();
    }
    mesh.draw().map_err(draw_err)
}
