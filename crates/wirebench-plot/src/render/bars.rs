//! Grouped and stacked bars, vertical or horizontal.

use super::frame::{
    draw_axes, draw_heading, draw_legend, legend_height, legend_rows, y_area_width, AxesOpts,
    LegendEntry, Sample, BOTTOM_AREA, MARGIN,
};
use super::pen::{Anchor, Pen, Rect, TextSpec};
use super::{check_size, Render};
use crate::model::{BarFigure, Orientation, Scale};
use crate::style::{self, text_width_px, INK, INK_SOFT};
use crate::svg::{escape, Svg, SvgSink};
use crate::ticks::{plan, AxisPlan};
use crate::units::format_value;
use crate::PlotError;

const LABEL_PX: f64 = 11.5;

impl BarFigure {
    fn validate(&self) -> Result<(), PlotError> {
        let bad = |m: String| Err(PlotError::Invalid(m));
        if self.categories.is_empty() || self.groups.is_empty() || self.stacks.is_empty() {
            return bad("bar figure needs at least one category, group and stack".into());
        }
        if self.value_axis.scale != Scale::Linear {
            return bad("bar value axis must be linear (bars on a log axis mislead)".into());
        }
        if self.values.len() != self.categories.len() {
            return bad(format!(
                "{} value rows for {} categories",
                self.values.len(),
                self.categories.len()
            ));
        }
        for (c, row) in self.values.iter().enumerate() {
            if row.len() != self.groups.len() {
                return bad(format!(
                    "category {c}: {} groups, expected {}",
                    row.len(),
                    self.groups.len()
                ));
            }
            for (g, st) in row.iter().enumerate() {
                if st.len() != self.stacks.len() {
                    return bad(format!(
                        "category {c} group {g}: {} stack values, expected {}",
                        st.len(),
                        self.stacks.len()
                    ));
                }
            }
        }
        if !self.errors.is_empty() {
            if self.errors.len() != self.categories.len()
                || self.errors.iter().any(|r| r.len() != self.groups.len())
            {
                return bad("error bars: one (low, high) or None per category and group".into());
            }
            if self
                .errors
                .iter()
                .flatten()
                .flatten()
                .any(|(lo, hi)| !lo.is_finite() || !hi.is_finite() || lo > hi)
            {
                return bad("error bars need finite low <= high".into());
            }
        }
        Ok(())
    }

    /// The error bar of category `c`, group `g`, if any.
    fn error(&self, c: usize, g: usize) -> Option<(f64, f64)> {
        self.errors.get(c).and_then(|r| r.get(g)).copied().flatten()
    }

    /// Colour slot of stack `s` in group `g`.
    fn slot(&self, g: usize, s: usize) -> usize {
        if self.stacks.len() > 1 {
            s
        } else if self.groups.len() > 1 {
            g
        } else {
            0
        }
    }

    fn legend(&self) -> Vec<LegendEntry> {
        let names: Vec<&String> = if self.stacks.len() > 1 {
            self.stacks.iter().collect()
        } else if self.groups.len() > 1 {
            self.groups.iter().collect()
        } else {
            vec![]
        };
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| LegendEntry {
                name: n.clone(),
                sample: Sample::Swatch { slot: i },
            })
            .collect()
    }

    fn totals(&self) -> Vec<f64> {
        self.values
            .iter()
            .flat_map(|row| {
                row.iter()
                    .map(|st| st.iter().filter(|v| v.is_finite()).sum())
            })
            .collect()
    }

    /// Lines written at a bar's end: total and, for stacked groups, the group name.
    fn end_labels(&self, g: usize, total: f64) -> Vec<String> {
        let mut l = vec![];
        if self.orientation == Orientation::Horizontal
            && self.groups.len() > 1
            && self.stacks.len() > 1
        {
            l.push(self.groups[g].clone());
        }
        if self.show_totals {
            l.push(format_value(total, &self.value_axis.unit));
        }
        l
    }
}

/// Category plan with the first category at the top (horizontal bars) or left.
fn category_plan(names: &[String], title: &str, top_down: bool) -> AxisPlan {
    let mut p = AxisPlan::categories(names, title);
    if top_down {
        let n = names.len() as f64;
        for t in &mut p.ticks {
            t.0 = n - t.0;
        }
    }
    p
}

impl Render for BarFigure {
    fn default_size(&self) -> (u32, u32) {
        match self.orientation {
            Orientation::Vertical => (800, 480),
            Orientation::Horizontal => {
                let bars = (self.categories.len() * self.groups.len()) as u32;
                (800, (170 + bars * 34).clamp(260, 900))
            }
        }
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        self.validate()?;
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w);
        let entries = self.legend();
        let totals = self.totals();
        let error_ends = self.errors.iter().flatten().flatten();
        let max_total = totals
            .iter()
            .copied()
            .chain(error_ends.clone().map(|e| e.1))
            .fold(0.0, f64::max);
        let min_total = totals
            .iter()
            .copied()
            .chain(error_ends.map(|e| e.0))
            .fold(0.0, f64::min);
        let horizontal = self.orientation == Orientation::Horizontal;
        // Stacked groups in vertical bars: group names go under each bar, category names
        // under those (drawn here, not by plotters, which writes one label row).
        let under = !horizontal && self.groups.len() > 1 && self.stacks.len() > 1;
        let mut cat = category_plan(&self.categories, &self.category_label, horizontal);
        if under {
            for t in &mut cat.ticks {
                t.1 = String::new();
            }
        }
        let rows = legend_rows(&entries, w - 2.0 * MARGIN);
        let plot_top = top + legend_height(rows) + 8.0;
        let bottom = if under {
            BOTTOM_AREA + 16.0
        } else {
            BOTTOM_AREA
        };
        let plot_bottom = h - MARGIN - bottom;
        let ph = plot_bottom - plot_top;
        if ph < 60.0 {
            return Err(PlotError::TooSmall {
                width_px,
                height_px,
            });
        }
        let n_end = self.end_labels(0, max_total).len() as f64;
        let (xplan, yplan, left, right) = if horizontal {
            let left = MARGIN + y_area_width(&cat);
            let right = w - MARGIN - 16.0;
            let pw = right - left;
            let label_w = totals
                .iter()
                .map(|t| text_width_px(&format_value(*t, &self.value_axis.unit), LABEL_PX, false))
                .fold(0.0, f64::max);
            let grow = if self.show_totals {
                pw / (pw - label_w - 10.0).max(pw * 0.5)
            } else {
                1.0
            };
            let vp = plan(
                &self.value_axis,
                Some((min_total, max_total * grow)),
                pw,
                true,
            );
            (vp, cat, left, right)
        } else {
            let grow = 1.0 + n_end * (LABEL_PX * 1.3) / ph;
            let vp = plan(
                &self.value_axis,
                Some((min_total, max_total * grow)),
                ph,
                false,
            );
            let left = MARGIN + y_area_width(&vp);
            (cat, vp, left, w - MARGIN - 16.0)
        };
        draw_legend(&pen, &entries, left, top, right - left);
        let frame = draw_axes(
            &root,
            &pen,
            Rect::new(left, plot_top, right, plot_bottom),
            (xplan, yplan, None),
            AxesOpts {
                x_grid: horizontal,
                y_grid: !horizontal,
                bottom_px: bottom,
                ..AxesOpts::standard()
            },
        )?;
        draw_bars(&pen, self, &frame);
        if under {
            draw_under_labels(&pen, self, &frame);
        }
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, ""))
    }
}

fn draw_bars(pen: &Pen, f: &BarFigure, frame: &super::frame::Frame) {
    let horizontal = f.orientation == Orientation::Horizontal;
    let n = f.categories.len() as f64;
    let g_n = f.groups.len() as f64;
    let slot_w = 0.8 / g_n;
    let gap = (slot_w * 0.12).min(0.04);
    let value_px = |v: f64| {
        if horizontal {
            frame.px(v)
        } else {
            frame.py(v, crate::model::YAxis::Y)
        }
    };
    // Position along the category axis, in slot units, mapped to pixels.
    let cat_px = |u: f64| {
        if horizontal {
            frame.plot.y0 + u / n * (frame.plot.y1 - frame.plot.y0)
        } else {
            frame.plot.x0 + u / n * (frame.plot.x1 - frame.plot.x0)
        }
    };
    for (c, row) in f.values.iter().enumerate() {
        for (g, stack) in row.iter().enumerate() {
            let u0 = c as f64 + 0.1 + g as f64 * slot_w + gap / 2.0;
            let u1 = u0 + slot_w - gap;
            let (a, b) = (cat_px(u0), cat_px(u1));
            pen.group(
                "bar",
                &format!(
                    "data-category=\"{}\" data-group=\"{}\"",
                    escape(&f.categories[c]),
                    escape(&f.groups[g])
                ),
            );
            let (mut pos, mut neg) = (0.0, 0.0);
            for (s, v) in stack.iter().enumerate() {
                if !v.is_finite() || *v == 0.0 {
                    continue;
                }
                let base = if *v >= 0.0 { pos } else { neg };
                let end = base + v;
                if *v >= 0.0 {
                    pos = end;
                } else {
                    neg = end;
                }
                let (p0, p1) = (value_px(base), value_px(end));
                let r = if horizontal {
                    Rect::new(p0, a, p1, b)
                } else {
                    Rect::new(a, p0, b, p1)
                };
                let mut tip = format!("{} · ", f.categories[c]);
                if !f.groups[g].is_empty() {
                    tip.push_str(&format!("{} · ", f.groups[g]));
                }
                tip.push_str(&format!(
                    "{}: {}",
                    f.stacks[s],
                    format_value(*v, &f.value_axis.unit)
                ));
                pen.0.raw(&format!("<g><title>{}</title>", escape(&tip)));
                pen.rect(
                    r,
                    Some((style::color(f.slot(g, s)), 1.0)),
                    Some((plotters::style::RGBColor(255, 255, 255), 0.8)),
                    0.0,
                );
                pen.0.raw("</g>");
            }
            let total: f64 = stack.iter().filter(|v| v.is_finite()).sum();
            let lines = f.end_labels(g, total);
            let mid = (a + b) / 2.0;
            if let Some((lo, hi)) = f.error(c, g) {
                draw_error_bar(
                    pen,
                    horizontal,
                    mid,
                    (value_px(lo), value_px(hi)),
                    (b - a) / 4.0,
                );
                // The total's label goes past the bar's end or the error bar's, whichever
                // is further out.
                pos = pos.max(hi);
            }
            if horizontal {
                let x = value_px(pos) + 6.0;
                pen.text(
                    x,
                    mid,
                    &lines.join(" · "),
                    TextSpec::new(LABEL_PX, INK).anchor(Anchor::Start),
                );
            } else {
                let mut y = value_px(pos) - LABEL_PX * 0.8;
                for (i, l) in lines.iter().rev().enumerate() {
                    let color = if i == lines.len() - 1 && lines.len() > 1 {
                        INK_SOFT
                    } else {
                        INK
                    };
                    let fits = text_width_px(l, LABEL_PX, false) <= (b - a) + 10.0;
                    let size = if fits { LABEL_PX } else { LABEL_PX * 0.85 };
                    pen.text(mid, y, l, TextSpec::new(size, color).anchor(Anchor::Middle));
                    y -= LABEL_PX * 1.3;
                }
            }
            pen.end();
        }
    }
}

/// An error bar across a bar at `mid` (category axis, px) from `ends.0` to `ends.1` (value
/// axis, px), with caps `cap` px to either side.
fn draw_error_bar(pen: &Pen, horizontal: bool, mid: f64, ends: (f64, f64), cap: f64) {
    let at = |v: f64, across: f64| if horizontal { (v, across) } else { (across, v) };
    pen.group("error-bar", "");
    pen.line(at(ends.0, mid), at(ends.1, mid), INK, 1.2, "");
    for e in [ends.0, ends.1] {
        pen.line(at(e, mid - cap), at(e, mid + cap), INK, 1.2, "");
    }
    pen.end();
}

/// Group names under each bar and category names under those (vertical stacked groups).
fn draw_under_labels(pen: &Pen, f: &BarFigure, frame: &super::frame::Frame) {
    let n = f.categories.len() as f64;
    let g_n = f.groups.len() as f64;
    let slot_w = 0.8 / g_n;
    let xs = |u: f64| frame.plot.x0 + u / n * (frame.plot.x1 - frame.plot.x0);
    let y0 = frame.plot.y1;
    pen.group("bar-labels", "");
    for (c, name) in f.categories.iter().enumerate() {
        for (g, gname) in f.groups.iter().enumerate() {
            let mid = xs(c as f64 + 0.1 + (g as f64 + 0.5) * slot_w);
            pen.text(
                mid,
                y0 + 13.0,
                gname,
                TextSpec::new(LABEL_PX, INK_SOFT).anchor(Anchor::Middle),
            );
        }
        pen.text(
            xs(c as f64 + 0.5),
            y0 + 31.0,
            name,
            TextSpec::new(crate::style::TICK_PX + 0.5, INK)
                .anchor(Anchor::Middle)
                .bold(),
        );
    }
    pen.end();
}
