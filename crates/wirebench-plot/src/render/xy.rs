//! The x–y figure: series on one or two y axes, overlays, annotations.

use super::frame::{
    draw_axes, draw_heading, draw_legend, legend_height, legend_rows, y_area_width, AxesOpts,
    BOTTOM_AREA, MARGIN,
};
use super::marks::{
    draw_annotation_lines, draw_overlays, draw_series, legend_entries, place_labels, Obstacles,
};
use super::pen::{clip_def, fnv, Pen, Rect};
use super::{check_size, Render};
use crate::model::{Annotation, Figure, YAxis};
use crate::svg::{Svg, SvgSink};
use crate::ticks::{extent, plan};
use crate::PlotError;

/// All x values the figure must show.
fn x_values(f: &Figure) -> Vec<f64> {
    let mut v: Vec<f64> = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    v.extend(f.overlays.iter().flat_map(|o| o.points.iter().map(|p| p.0)));
    for a in &f.annotations {
        match a {
            Annotation::VLine { x, .. } | Annotation::Marker { x, .. } => v.push(*x),
            Annotation::XBand { from, to, .. } => v.extend([*from, *to]),
            _ => {}
        }
    }
    v
}

/// Whether a reference line at `y` is drawn off scale over data whose largest value on the
/// axis is `data_max` (linear axes only).
pub(crate) fn off_scale(y: f64, data_max: Option<f64>, linear: bool) -> bool {
    linear && data_max.is_some_and(|m| m > 0.0 && y > crate::model::OFF_SCALE_RATIO * m)
}

/// All y values the figure must show on `axis` (`linear`: the axis is linear, where a
/// reference line far above the data is left out, see [`crate::model::OFF_SCALE_RATIO`]).
pub(crate) fn y_values(
    series: &[crate::model::Series],
    overlays: &[crate::model::Overlay],
    anns: &[Annotation],
    axis: YAxis,
    linear: bool,
) -> Vec<f64> {
    let mut v = vec![];
    for s in series.iter().filter(|s| s.axis == axis) {
        for p in &s.points {
            v.push(p.y);
            v.extend(p.err_lo);
            v.extend(p.err_hi);
        }
    }
    for o in overlays.iter().filter(|o| o.axis == axis) {
        v.extend(o.points.iter().map(|p| p.1));
    }
    for a in anns {
        match a {
            Annotation::Marker { y, axis: ax, .. } if *ax == axis => v.push(*y),
            Annotation::YBand {
                from, to, axis: ax, ..
            } if *ax == axis => v.extend([*from, *to]),
            _ => {}
        }
    }
    let data_max = v.iter().copied().filter(|y| y.is_finite()).reduce(f64::max);
    for a in anns {
        if let Annotation::HLine { y, axis: ax, .. } = a {
            if *ax == axis && !off_scale(*y, data_max, linear) {
                v.push(*y);
            }
        }
    }
    v
}

impl Render for Figure {
    fn default_size(&self) -> (u32, u32) {
        (800, 480)
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w);
        let entries = legend_entries(&self.series, &self.overlays, self.y2.is_some());
        let x_log = self.x.scale != crate::model::Scale::Linear;
        let ext_x = extent(x_values(self).into_iter(), x_log);
        let ext = |axis: YAxis, a: &crate::model::Axis| {
            let linear = a.scale == crate::model::Scale::Linear;
            let vals = y_values(
                &self.series,
                &self.overlays,
                &self.annotations,
                axis,
                linear,
            );
            extent(vals.into_iter(), !linear)
        };
        let ext_y = ext(YAxis::Y, &self.y);
        let ext_y2 = self.y2.as_ref().map(|a| ext(YAxis::Y2, a));
        let plot_bottom = h - MARGIN - BOTTOM_AREA;
        let mut rows = legend_rows(&entries, w - 2.0 * MARGIN);
        let (mut yplan, mut y2plan, mut left, mut right, mut plot_top);
        loop {
            plot_top = top + legend_height(rows) + 8.0;
            let ph = plot_bottom - plot_top;
            yplan = plan(&self.y, ext_y, ph, false);
            y2plan = self
                .y2
                .as_ref()
                .map(|a| plan(a, ext_y2.flatten(), ph, false));
            left = MARGIN + y_area_width(&yplan);
            right = w - MARGIN - y2plan.as_ref().map_or(16.0, y_area_width);
            let r2 = legend_rows(&entries, right - left);
            if r2 <= rows {
                break;
            }
            rows = r2;
        }
        if plot_bottom - plot_top < 60.0 {
            return Err(PlotError::TooSmall {
                width_px,
                height_px,
            });
        }
        let xplan = plan(&self.x, ext_x, right - left, true);
        draw_legend(&pen, &entries, left, top, right - left);
        let frame = draw_axes(
            &root,
            &pen,
            Rect::new(left, plot_top, right, plot_bottom),
            (xplan, yplan, y2plan),
            AxesOpts::standard(),
        )?;
        let clip = format!(
            "wbclip{:x}",
            fnv(&format!("{:?}{:?}", self.heading, frame.plot))
        );
        let defs = clip_def(&clip, frame.plot.inflate(1.0));
        let mut obst = Obstacles::default();
        let labels = draw_annotation_lines(&pen, &frame, &self.annotations, &clip);
        draw_overlays(&pen, &frame, &self.overlays, &clip, &mut obst);
        draw_series(&pen, &frame, &self.series, &clip, &mut obst);
        place_labels(&pen, &frame, labels, &obst, &mut vec![]);
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, &defs))
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::Render;

    /// The y tick labels (right-aligned, left of the plot) of an x–y figure's SVG.
    fn y_ticks(svg: &str) -> Vec<f64> {
        svg.split("<text ")
            .filter(|t| t.contains("font-size=\"12\"") && t.contains("text-anchor=\"end\""))
            .filter_map(|t| t.split('>').nth(1)?.split('<').next()?.parse().ok())
            .collect()
    }

    fn figure(limit_bps: f64) -> Figure {
        Figure {
            heading: Heading::new("throughput", ""),
            x: Axis::linear("time", Unit::Seconds),
            y: Axis::linear("throughput", Unit::BitsPerSecond),
            series: vec![Series::new(
                "total",
                SeriesKind::LineWithPoints,
                &[(1.0, 12e9), (2.0, 30e9), (3.0, 21e9)],
            )],
            annotations: vec![Annotation::HLine {
                y: limit_bps,
                label: "copy limit".into(),
                axis: YAxis::Y,
            }],
            ..Figure::default()
        }
    }

    #[test]
    fn a_reference_line_far_above_the_data_is_marked_off_scale() {
        // 120 Gbit/s over data up to 30: the axis keeps to the data (in Gbit/s).
        let svg = figure(120e9).render_svg().unwrap().into_string();
        let top = y_ticks(&svg).into_iter().fold(f64::MIN, f64::max);
        assert!((30.0..60.0).contains(&top), "top tick {top}");
        assert!(svg.contains("annotation-offscale"));
        assert!(svg.contains("↑ copy limit, above the axis"), "{svg}");
        // 50 Gbit/s, under twice the data: drawn on the axis, which grows to it.
        let svg = figure(50e9).render_svg().unwrap().into_string();
        let top = y_ticks(&svg).into_iter().fold(f64::MIN, f64::max);
        assert!(top >= 50.0, "top tick {top}");
        assert!(!svg.contains("annotation-offscale"));
        assert!(svg.contains(">copy limit<"), "{svg}");
    }

    /// The first `<polyline>`'s points and the text element holding `needle`'s (x, y), from
    /// a figure's SVG.
    fn line_and_label(svg: &str, needle: &str) -> (Vec<(f64, f64)>, (f64, f64)) {
        let attr = |el: &str, name: &str| -> f64 {
            let k = format!(" {name}=\"");
            let at = el.find(&k).unwrap() + k.len();
            el[at..].split('"').next().unwrap().parse().unwrap()
        };
        let poly = svg.split("<polyline").nth(1).unwrap();
        let pts = poly
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let line = pts
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let text = svg
            .split("<text")
            .find(|t| t.contains(needle))
            .expect("the label");
        (line, (attr(text, "x"), attr(text, "y")))
    }

    #[test]
    fn an_off_scale_label_does_not_sit_on_data_at_the_top_of_the_axis() {
        // A line just under the axis' top (35) over the whole width, through the label's
        // first places (beside the arrow, and the top rows at either edge).
        let mut f = figure(400e9);
        f.series[0] = Series::new(
            "total",
            SeriesKind::Line,
            &[(0.0, 33.6e9), (1.0, 32.5e9), (2.0, 33.6e9), (3.0, 32.5e9)],
        );
        let svg = f.render_svg().unwrap().into_string();
        assert_eq!(y_ticks(&svg).into_iter().fold(f64::MIN, f64::max), 35.0);
        let (line, (_, label_y)) = line_and_label(&svg, "above the axis");
        eprintln!("{line:?} {label_y} {:?}", y_ticks(&svg));
        let (lo, hi) = line.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
        // The label box is 17 px tall around its centre line.
        assert!(
            label_y - 9.0 > hi || label_y + 9.0 < lo,
            "label at y {label_y} crosses the line spanning y {lo}..{hi}"
        );
    }
}
