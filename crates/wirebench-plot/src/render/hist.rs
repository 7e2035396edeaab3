//! Latency histogram (bars over log-x bins) with a tail panel: the fraction of samples above
//! x on a log axis, where p99 and p99.9 can be read. Percentiles are marked across both.

use super::frame::draw_heading;
use super::marks::{draw_annotation_lines, draw_series, place_labels, Obstacles};
use super::panels::{draw_panel, layout, PanelSpec};
use super::pen::{clip_def, fnv, Pen, Rect};
use super::{check_size, Render};
use crate::model::{Annotation, Axis, HistogramFigure, Scale, Series, SeriesKind, Unit, YAxis};
use crate::style::{self};
use crate::svg::{escape, Svg, SvgSink};
use crate::ticks::extent;
use crate::units::format_value;
use crate::PlotError;

impl HistogramFigure {
    /// The tail curve: `(x, % of samples above x)` at every bin's upper edge, starting at
    /// 100 % at the first bin's lower edge. Empty when there are no samples.
    pub fn tail_points(&self) -> Vec<(f64, f64)> {
        let total: u64 = self.bins.iter().map(|b| b.count).sum();
        if total == 0 {
            return vec![];
        }
        let mut out = Vec::with_capacity(self.bins.len() + 1);
        if let Some(b) = self.bins.first() {
            out.push((b.lo, 100.0));
        }
        let mut below = 0u64;
        for b in &self.bins {
            below += b.count;
            out.push((b.hi, (total - below) as f64 / total as f64 * 100.0));
        }
        out
    }

    fn percentile_lines(&self, labelled: bool) -> Vec<Annotation> {
        self.percentiles
            .iter()
            .map(|p| Annotation::VLine {
                x: p.value,
                label: if labelled {
                    format!("{} {}", p.label, format_value(p.value, &self.x.unit))
                } else {
                    String::new()
                },
            })
            .collect()
    }
}

impl Render for HistogramFigure {
    fn default_size(&self) -> (u32, u32) {
        if self.tail_panel {
            (800, 600)
        } else {
            (800, 420)
        }
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        if self
            .bins
            .iter()
            .any(|b| b.hi.partial_cmp(&b.lo) != Some(std::cmp::Ordering::Greater))
        {
            return Err(PlotError::Invalid("histogram bin with hi <= lo".into()));
        }
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w) + 4.0;
        let x_log = self.x.scale != Scale::Linear;
        let xs = self
            .bins
            .iter()
            .flat_map(|b| [b.lo, b.hi])
            .chain(self.percentiles.iter().map(|p| p.value));
        let x_ext = extent(xs, x_log);
        let max_count = self.bins.iter().map(|b| b.count).max().unwrap_or(0) as f64;
        let count_axis = Axis::linear("samples per bin", Unit::None);
        let tail = self.tail_points();
        let tail_axis = Axis::log10("samples above x", Unit::Percent);
        let tail_ext = extent(tail.iter().map(|p| p.1), true);
        let mut specs = vec![PanelSpec {
            y: &count_axis,
            extent: Some((0.0, max_count.max(1.0) * 1.12)),
            weight: 3.0,
        }];
        if self.tail_panel {
            specs.push(PanelSpec {
                y: &tail_axis,
                extent: tail_ext.map(|(lo, _)| (lo, 100.0)),
                weight: 2.0,
            });
        }
        let stack = layout(&self.x, x_ext, &specs, top, (w, h))?;
        let mut defs = String::new();
        let mut clip_for = |frame: &super::frame::Frame, i: usize| {
            let id = format!(
                "wbclip{:x}h{i}",
                fnv(&format!("{:?}{:?}", self.heading, frame.plot))
            );
            defs.push_str(&clip_def(&id, frame.plot.inflate(1.0)));
            id
        };
        // Histogram panel.
        let frame = draw_panel(&root, &pen, &stack, 0)?;
        let clip = clip_for(&frame, 0);
        pen.group("histogram", &format!("clip-path=\"url(#{clip})\""));
        let mut obst = Obstacles::default();
        let base = frame.py(0.0, YAxis::Y);
        for b in &self.bins {
            if b.count == 0 || !frame.x.drawable(b.lo) {
                continue;
            }
            let r = Rect::new(
                frame.px(b.lo),
                frame.py(b.count as f64, YAxis::Y),
                frame.px(b.hi),
                base,
            );
            pen.0.raw(&format!(
                "<g><title>{}</title>",
                escape(&format!(
                    "{} – {}: {} samples",
                    format_value(b.lo, &self.x.unit),
                    format_value(b.hi, &self.x.unit),
                    b.count
                ))
            ));
            pen.rect(
                r,
                Some((style::color(0), 0.85)),
                Some((plotters::style::RGBColor(255, 255, 255), 0.5)),
                0.0,
            );
            pen.0.raw("</g>");
            obst.add_box(r);
        }
        pen.end();
        let labels = draw_annotation_lines(&pen, &frame, &self.percentile_lines(true), &clip);
        place_labels(&pen, &frame, labels, &obst, &mut vec![]);
        // Tail panel.
        if self.tail_panel {
            let frame = draw_panel(&root, &pen, &stack, 1)?;
            let clip = clip_for(&frame, 1);
            let mut obst = Obstacles::default();
            draw_annotation_lines(&pen, &frame, &self.percentile_lines(false), &clip);
            pen.group("tail", "");
            draw_series(
                &pen,
                &frame,
                &[Series::new("samples above x", SeriesKind::Line, &tail).with_style(0)],
                &clip,
                &mut obst,
            );
            pen.end();
        }
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, &defs))
    }
}
