//! Vertically stacked panels sharing one x axis; also the layout the histogram uses.

use super::frame::{
    draw_axes, draw_heading, draw_legend, legend_height, legend_rows, AxesOpts, Frame, LegendEntry,
    BOTTOM_AREA, MARGIN,
};
use super::marks::{draw_annotation_lines, draw_series, legend_entries, place_labels, Obstacles};
use super::pen::{clip_def, fnv, Anchor, Pen, Rect, TextSpec};
use super::{check_size, Render};
use crate::model::{Annotation, Axis, PanelFigure, Scale, YAxis};
use crate::style::INK;
use crate::svg::{Svg, SvgSink};
use crate::ticks::{extent, plan, AxisPlan};
use crate::PlotError;

/// Height of the caption row above each panel (its y axis title).
const CAPTION: f64 = 24.0;
/// Gap between panels.
const GAP: f64 = 10.0;

/// One panel to lay out: its y axis, the data extent on it, and its relative height.
pub(crate) struct PanelSpec<'a> {
    pub y: &'a Axis,
    pub extent: Option<(f64, f64)>,
    pub weight: f64,
}

/// Laid-out panels: the shared x plan and, per panel, its plot rectangle and y plan.
pub(crate) struct Stack {
    pub x: AxisPlan,
    pub panels: Vec<(Rect, AxisPlan)>,
}

/// Lays out `specs` from `top` down to the bottom of a `w`×`h` canvas.
pub(crate) fn layout(
    x: &Axis,
    x_extent: Option<(f64, f64)>,
    specs: &[PanelSpec],
    top: f64,
    (w, h): (f64, f64),
) -> Result<Stack, PlotError> {
    let n = specs.len() as f64;
    let avail = h - MARGIN - BOTTOM_AREA - top - n * CAPTION - (n - 1.0) * GAP;
    let weight: f64 = specs.iter().map(|s| s.weight).sum();
    if avail < 50.0 * n || weight <= 0.0 {
        return Err(PlotError::TooSmall {
            width_px: w as u32,
            height_px: h as u32,
        });
    }
    let mut y = top;
    let mut rects = vec![];
    let mut plans = vec![];
    for s in specs {
        let ph = avail * s.weight / weight;
        let r = Rect::new(0.0, y + CAPTION, 0.0, y + CAPTION + ph);
        plans.push(plan(s.y, s.extent, ph, false));
        rects.push(r);
        y += CAPTION + ph + GAP;
    }
    // One left edge for all panels so their x axes line up; no rotated title (captions).
    let left = MARGIN
        + plans
            .iter()
            .map(|p| p.max_label_width())
            .fold(0.0, f64::max)
        + 16.0;
    let right = w - MARGIN - 16.0;
    let xplan = plan(x, x_extent, right - left, true);
    Ok(Stack {
        x: xplan,
        panels: rects
            .into_iter()
            .zip(plans)
            .map(|(r, p)| (Rect::new(left, r.y0, right, r.y1), p))
            .collect(),
    })
}

/// Draws panel `i` of `stack`: caption, axes (x labels on the last panel only).
pub(crate) fn draw_panel(
    root: &plotters::drawing::DrawingArea<SvgSink, plotters::coord::Shift>,
    pen: &Pen,
    stack: &Stack,
    i: usize,
) -> Result<Frame, PlotError> {
    let (rect, yplan) = &stack.panels[i];
    let last = i + 1 == stack.panels.len();
    let caption = yplan.title.clone();
    pen.group("panel-caption", "");
    pen.text(
        MARGIN,
        rect.y0 - CAPTION / 2.0 - 3.0,
        &caption,
        TextSpec::new(13.0, INK).bold().anchor(Anchor::Start),
    );
    pen.end();
    let mut yp = yplan.clone();
    yp.title = String::new();
    let mut xp = stack.x.clone();
    if !last {
        xp.title = String::new();
    }
    draw_axes(
        root,
        pen,
        *rect,
        (xp, yp, None),
        AxesOpts {
            x_labels: last,
            ..AxesOpts::standard()
        },
    )
}

/// Legend entries of all panels, each (name, style) once.
fn shared_legend(f: &PanelFigure) -> Vec<LegendEntry> {
    let mut seen: Vec<(String, usize)> = vec![];
    let mut out = vec![];
    for p in &f.panels {
        for (i, s) in p.series.iter().enumerate() {
            let key = (s.name.clone(), s.style.unwrap_or(i));
            if s.name.is_empty() || seen.contains(&key) {
                continue;
            }
            let mut one = s.clone();
            one.style = Some(key.1);
            seen.push(key);
            out.extend(legend_entries(&[one], &[], false));
        }
    }
    out
}

impl Render for PanelFigure {
    fn default_size(&self) -> (u32, u32) {
        (800, 150 + 170 * self.panels.len().max(1) as u32)
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        if self.panels.is_empty() || self.panels.len() > 4 {
            return Err(PlotError::Invalid(format!(
                "a panel figure has 1 to 4 panels, not {}",
                self.panels.len()
            )));
        }
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w);
        let entries = shared_legend(self);
        let rows = legend_rows(&entries, w - 2.0 * MARGIN);
        draw_legend(&pen, &entries, MARGIN, top, w - 2.0 * MARGIN);
        let top = top + legend_height(rows) + 4.0;
        let x_log = self.x.scale != Scale::Linear;
        let xs = self.panels.iter().flat_map(|p| {
            p.series
                .iter()
                .flat_map(|s| s.points.iter().map(|q| q.x))
                .chain(p.annotations.iter().flat_map(ann_x))
        });
        let x_ext = extent(xs, x_log);
        let specs: Vec<PanelSpec> = self
            .panels
            .iter()
            .map(|p| PanelSpec {
                y: &p.y,
                extent: extent(
                    super::xy::y_values(
                        &p.series,
                        &[],
                        &p.annotations,
                        YAxis::Y,
                        p.y.scale == Scale::Linear,
                    )
                    .into_iter(),
                    p.y.scale != Scale::Linear,
                ),
                weight: 1.0,
            })
            .collect();
        let stack = layout(&self.x, x_ext, &specs, top, (w, h))?;
        let mut defs = String::new();
        for (i, p) in self.panels.iter().enumerate() {
            let frame = draw_panel(&root, &pen, &stack, i)?;
            let clip = format!(
                "wbclip{:x}p{i}",
                fnv(&format!("{:?}{:?}", self.heading, frame.plot))
            );
            defs.push_str(&clip_def(&clip, frame.plot.inflate(1.0)));
            pen.group(&format!("panel p{i}"), "");
            let mut obst = Obstacles::default();
            let labels = draw_annotation_lines(&pen, &frame, &p.annotations, &clip);
            draw_series(&pen, &frame, &p.series, &clip, &mut obst);
            place_labels(&pen, &frame, labels, &obst, &mut vec![]);
            pen.end();
        }
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, &defs))
    }
}

fn ann_x(a: &Annotation) -> Vec<f64> {
    match a {
        Annotation::VLine { x, .. } | Annotation::Marker { x, .. } => vec![*x],
        Annotation::XBand { from, to, .. } => vec![*from, *to],
        _ => vec![],
    }
}
