//! Box plots per category, several series side by side.

use plotters::style::RGBColor;

use super::frame::{
    draw_axes, draw_heading, draw_legend, legend_height, legend_rows, y_area_width, AxesOpts,
    LegendEntry, Sample, BOTTOM_AREA, MARGIN,
};
use super::pen::{Anchor, Pen, Rect, TextSpec};
use super::{check_size, Render};
use crate::model::{BoxFigure, BoxStats, Scale, YAxis};
use crate::style;
use crate::svg::{escape, Svg, SvgSink};
use crate::ticks::{extent, plan, AxisPlan};
use crate::units::format_value;
use crate::PlotError;

impl Render for BoxFigure {
    fn default_size(&self) -> (u32, u32) {
        (800, 460)
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        if self.categories.is_empty() || self.series.is_empty() {
            return Err(PlotError::Invalid(
                "box figure needs categories and series".into(),
            ));
        }
        if let Some(s) = self
            .series
            .iter()
            .find(|s| s.boxes.len() != self.categories.len())
        {
            return Err(PlotError::Invalid(format!(
                "box series {:?} has {} boxes for {} categories",
                s.name,
                s.boxes.len(),
                self.categories.len()
            )));
        }
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w);
        let entries: Vec<LegendEntry> = if self.series.len() > 1 {
            self.series
                .iter()
                .enumerate()
                .map(|(i, s)| LegendEntry {
                    name: s.name.clone(),
                    sample: Sample::Swatch { slot: i },
                })
                .collect()
        } else {
            vec![]
        };
        let rows = legend_rows(&entries, w - 2.0 * MARGIN);
        let plot_top = top + legend_height(rows) + 8.0;
        let plot_bottom = h - MARGIN - BOTTOM_AREA;
        let values = self.series.iter().flat_map(|s| {
            s.boxes.iter().flatten().flat_map(|b| {
                [b.whisker_lo, b.whisker_hi]
                    .into_iter()
                    .chain(b.outliers.iter().copied())
            })
        });
        let y_log = self.y.scale != Scale::Linear;
        let yplan = plan(
            &self.y,
            extent(values, y_log),
            plot_bottom - plot_top,
            false,
        );
        let left = MARGIN + y_area_width(&yplan);
        let right = w - MARGIN - 16.0;
        draw_legend(&pen, &entries, left, top, right - left);
        let frame = draw_axes(
            &root,
            &pen,
            Rect::new(left, plot_top, right, plot_bottom),
            (
                AxisPlan::categories(&self.categories, &self.category_label),
                yplan,
                None,
            ),
            AxesOpts {
                x_grid: false,
                ..AxesOpts::standard()
            },
        )?;
        let n = self.categories.len() as f64;
        let k = self.series.len() as f64;
        let slot_w = 0.7 / k;
        for (si, s) in self.series.iter().enumerate() {
            pen.group(
                &format!("series s{si}"),
                &format!("data-name=\"{}\"", escape(&s.name)),
            );
            for (c, b) in s.boxes.iter().enumerate() {
                let Some(b) = b else { continue };
                let u0 = c as f64 + 0.15 + si as f64 * slot_w + slot_w * 0.1;
                let u1 = u0 + slot_w * 0.8;
                let xs = |u: f64| frame.plot.x0 + u / n * (frame.plot.x1 - frame.plot.x0);
                let tip = format!(
                    "{} · {}: median {}, IQR {} – {}",
                    self.categories[c],
                    s.name,
                    format_value(b.median, &self.y.unit),
                    format_value(b.q1, &self.y.unit),
                    format_value(b.q3, &self.y.unit)
                );
                draw_box(&pen, &frame, b, (xs(u0), xs(u1)), si, &tip);
                let label_all = self.categories.len() * self.series.len() <= 4;
                if let Some((lo, hi)) = &self.whisker_labels {
                    if label_all || (si == 0 && c == 0) {
                        let text = |name: &str, v: f64| {
                            format!("{name} {}", format_value(v, &self.y.unit))
                        };
                        whisker_label(&pen, &frame, xs(u1), b.whisker_lo, &text(lo, b.whisker_lo));
                        whisker_label(&pen, &frame, xs(u1), b.whisker_hi, &text(hi, b.whisker_hi));
                    }
                }
            }
            pen.end();
        }
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, ""))
    }
}

/// A whisker end's name and value, right of the box's edge `x` at the value's height.
fn whisker_label(pen: &Pen, frame: &super::frame::Frame, x: f64, v: f64, text: &str) {
    if !frame.y.drawable(v) {
        return;
    }
    pen.group("whisker-label", "");
    pen.text(
        x + 6.0,
        frame.py(v, YAxis::Y),
        text,
        TextSpec::new(style::ANNOTATION_PX, style::INK_SOFT).anchor(Anchor::Start),
    );
    pen.end();
}

fn draw_box(
    pen: &Pen,
    frame: &super::frame::Frame,
    b: &BoxStats,
    (x0, x1): (f64, f64),
    slot: usize,
    tip: &str,
) {
    let c = style::color(slot);
    let y = |v: f64| frame.py(v, YAxis::Y);
    let yp = &frame.y;
    if ![b.whisker_lo, b.q1, b.median, b.q3, b.whisker_hi]
        .iter()
        .all(|v| yp.drawable(*v))
    {
        return;
    }
    let mid = (x0 + x1) / 2.0;
    let cap = (x1 - x0) * 0.25;
    pen.0
        .raw(&format!("<g class=\"box\"><title>{}</title>", escape(tip)));
    pen.line((mid, y(b.whisker_lo)), (mid, y(b.q1)), c, 1.4, "");
    pen.line((mid, y(b.q3)), (mid, y(b.whisker_hi)), c, 1.4, "");
    pen.line(
        (mid - cap, y(b.whisker_lo)),
        (mid + cap, y(b.whisker_lo)),
        c,
        1.4,
        "",
    );
    pen.line(
        (mid - cap, y(b.whisker_hi)),
        (mid + cap, y(b.whisker_hi)),
        c,
        1.4,
        "",
    );
    pen.rect(
        Rect::new(x0, y(b.q3), x1, y(b.q1)),
        Some((c, 0.22)),
        Some((c, 1.6)),
        0.0,
    );
    pen.line((x0, y(b.median)), (x1, y(b.median)), c, 3.0, "");
    if let Some(m) = b.mean.filter(|m| yp.drawable(*m)) {
        pen.marker(
            style::Marker::Diamond,
            mid,
            y(m),
            3.5,
            RGBColor(0x22, 0x22, 0x22),
        );
    }
    for o in b.outliers.iter().filter(|o| yp.drawable(**o)) {
        pen.marker(style::Marker::CircleOpen, mid, y(*o), 2.8, c);
    }
    pen.0.raw("</g>");
}
