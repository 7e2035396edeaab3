//! Heatmaps: a matrix of cells over ordered pairs, each filled by its value on a
//! sequential colour scale (viridis, readable in grey) and labelled with the value, with
//! the scale drawn as a bar at the right. Groups: `rows`, `columns`, `cells` (each cell a
//! `<g class="cell" data-row data-column>`), `scale`.

use plotters::style::RGBColor;

use super::frame::{draw_heading, MARGIN};
use super::pen::{Anchor, Pen, Rect, TextSpec};
use super::{check_size, Render};
use crate::model::HeatmapFigure;
use crate::style::{text_width_px, INK, INK_SOFT};
use crate::svg::{escape, SvgSink};
use crate::units::format_value;
use crate::{PlotError, Svg};

const LABEL_PX: f64 = 12.0;
const CELL_TEXT_PX: f64 = 11.0;
const SCALE_W: f64 = 16.0;
/// Room at the right for the scale bar and its labels.
const SCALE_AREA: f64 = 110.0;
/// Rotation of the column names (degrees, counter-clockwise).
const COLUMN_ANGLE: f64 = 40.0;
/// A cell shows its value as text when it is at least this wide.
const TEXT_MIN_CELL: f64 = 46.0;

/// Viridis at nine stops (matplotlib's), dark to light.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (0x44, 0x01, 0x54),
    (0x47, 0x2d, 0x7b),
    (0x3b, 0x52, 0x8b),
    (0x2c, 0x72, 0x8e),
    (0x21, 0x91, 0x8c),
    (0x28, 0xae, 0x80),
    (0x5e, 0xc9, 0x62),
    (0xad, 0xdc, 0x30),
    (0xfd, 0xe7, 0x25),
];

/// The colour at `t` in 0..=1 (0 dark, 1 light).
fn viridis(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

impl HeatmapFigure {
    fn validate(&self) -> Result<(), PlotError> {
        let bad = |m: String| Err(PlotError::Invalid(m));
        if self.rows.is_empty() || self.columns.is_empty() {
            return bad("a heatmap needs at least one row and one column".into());
        }
        if self.values.len() != self.rows.len()
            || self.values.iter().any(|r| r.len() != self.columns.len())
        {
            return bad(format!(
                "values must be {} rows of {} cells",
                self.rows.len(),
                self.columns.len()
            ));
        }
        if !self.missing.is_empty() && self.missing.len() != self.rows.len() {
            return bad("missing: one row of texts per row, or none".into());
        }
        if self
            .values
            .iter()
            .flatten()
            .flatten()
            .any(|v| !v.is_finite())
        {
            return bad("heatmap values must be finite".into());
        }
        Ok(())
    }

    /// The scale's ends: the smallest and largest value (a single value spans itself ±½).
    fn extent(&self) -> Option<(f64, f64)> {
        let vals = self.values.iter().flatten().flatten().copied();
        let lo = vals.clone().fold(f64::INFINITY, f64::min);
        let hi = vals.fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return None;
        }
        Some(if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, hi + 0.5)
        })
    }

    /// Position of `v` on the scale, 0 (worst, dark) to 1 (best, light).
    fn position(&self, v: f64, (lo, hi): (f64, f64)) -> f64 {
        let t = (v - lo) / (hi - lo);
        if self.lower_is_better {
            1.0 - t
        } else {
            t
        }
    }

    fn square(&self) -> bool {
        self.rows == self.columns
    }

    fn layout(&self, w: f64) -> (f64, f64, f64) {
        let row_w = self
            .rows
            .iter()
            .map(|r| text_width_px(r, LABEL_PX, false))
            .fold(0.0, f64::max);
        let left = MARGIN + row_w + 26.0;
        let cell = ((w - left - SCALE_AREA - MARGIN) / self.columns.len() as f64).clamp(8.0, 90.0);
        let col_w = self
            .columns
            .iter()
            .map(|c| text_width_px(c, LABEL_PX, false))
            .fold(0.0, f64::max);
        let col_h = col_w * COLUMN_ANGLE.to_radians().sin() + 16.0;
        (left, cell, col_h)
    }
}

impl Render for HeatmapFigure {
    fn default_size(&self) -> (u32, u32) {
        let (_, cell, col_h) = self.layout(800.0);
        let h = 90.0 + col_h + cell * self.rows.len() as f64 + 50.0;
        (800, h.clamp(240.0, 2400.0) as u32)
    }

    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError> {
        check_size(width_px, height_px)?;
        self.validate()?;
        let (w, h) = (f64::from(width_px), f64::from(height_px));
        let (root, doc) = SvgSink::area((width_px, height_px));
        let pen = Pen(&doc);
        let top = draw_heading(&pen, &self.heading, w);
        let (left, cell0, col_h) = self.layout(w);
        let grid_top = top + col_h + 8.0;
        let avail_h = h - grid_top - 40.0;
        let cell = cell0.min(avail_h / self.rows.len() as f64);
        if cell < 4.0 {
            return Err(PlotError::TooSmall {
                width_px,
                height_px,
            });
        }
        let extent = self.extent();
        let label = TextSpec::new(LABEL_PX, INK);
        // Column names, rotated, ending above their column's middle.
        pen.group("columns", "");
        for (j, name) in self.columns.iter().enumerate() {
            let (x, y) = (left + (j as f64 + 0.5) * cell, grid_top - 6.0);
            doc.raw(&format!(
                "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{LABEL_PX}\" fill=\"#222222\" \
                 text-anchor=\"start\" transform=\"rotate(-{COLUMN_ANGLE} {x:.1} {y:.1})\">{}</text>",
                escape(name)
            ));
        }
        pen.end();
        pen.group("rows", "");
        for (i, name) in self.rows.iter().enumerate() {
            let y = grid_top + (i as f64 + 0.5) * cell;
            let wd = text_width_px(name, LABEL_PX, false);
            pen.text(left - 8.0 - wd, y, name, label);
        }
        pen.end();
        pen.group("cells", "");
        for (i, row) in self.values.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let r = Rect::new(
                    left + j as f64 * cell,
                    grid_top + i as f64 * cell,
                    left + (j + 1) as f64 * cell,
                    grid_top + (i + 1) as f64 * cell,
                );
                let (cx, cy) = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
                pen.group("cell", &format!("data-row=\"{i}\" data-column=\"{j}\""));
                let white = RGBColor(0xff, 0xff, 0xff);
                match (v, extent) {
                    (Some(v), Some(ext)) => {
                        let t = self.position(*v, ext);
                        pen.rect(r, Some((viridis(t), 1.0)), Some((white, 1.0)), 0.0);
                        if cell >= TEXT_MIN_CELL {
                            let ink = if t < 0.55 { white } else { INK };
                            let text = format_value(*v, &self.value.unit);
                            pen.text(
                                cx,
                                cy,
                                &text,
                                TextSpec::new(CELL_TEXT_PX, ink).anchor(Anchor::Middle),
                            );
                        }
                    }
                    _ if self.square() && i == j => {
                        pen.rect(
                            r,
                            Some((RGBColor(0xf4, 0xf4, 0xf4), 1.0)),
                            Some((white, 1.0)),
                            0.0,
                        );
                    }
                    _ => {
                        pen.rect(
                            r,
                            Some((RGBColor(0xcc, 0xcc, 0xcc), 1.0)),
                            Some((white, 1.0)),
                            0.0,
                        );
                        let why = self
                            .missing
                            .get(i)
                            .and_then(|m| m.get(j))
                            .map_or("", String::as_str);
                        if cell >= TEXT_MIN_CELL {
                            pen.text(
                                cx,
                                cy,
                                why,
                                TextSpec::new(CELL_TEXT_PX, INK).anchor(Anchor::Middle),
                            );
                        }
                    }
                }
                pen.end();
            }
        }
        pen.end();
        let grid_bottom = grid_top + self.rows.len() as f64 * cell;
        let grid_right = left + self.columns.len() as f64 * cell;
        // Axis titles: rows at the left of the names, columns above the grid's right.
        pen.group("axes", "");
        pen.text(
            MARGIN,
            grid_bottom + 18.0,
            &format!("rows: {} · columns: {}", self.row_label, self.column_label),
            TextSpec::new(LABEL_PX, INK_SOFT),
        );
        pen.end();
        if let Some((lo, hi)) = extent {
            pen.group("scale", "");
            let x0 = grid_right + 24.0;
            let bar_h = (grid_bottom - grid_top).max(60.0);
            let steps = 32;
            for k in 0..steps {
                let t0 = k as f64 / steps as f64;
                let y0 = grid_top + bar_h * t0;
                // Light (best) at the top.
                let rr = Rect::new(x0, y0, x0 + SCALE_W, y0 + bar_h / steps as f64 + 0.4);
                pen.rect(rr, Some((viridis(1.0 - t0), 1.0)), None, 0.0);
            }
            let (top_v, bottom_v) = if self.lower_is_better {
                (lo, hi)
            } else {
                (hi, lo)
            };
            let small = TextSpec::new(CELL_TEXT_PX, INK);
            pen.text(
                x0 + SCALE_W + 6.0,
                grid_top + 5.0,
                &format_value(top_v, &self.value.unit),
                small,
            );
            pen.text(
                x0 + SCALE_W + 6.0,
                grid_top + bar_h - 5.0,
                &format_value(bottom_v, &self.value.unit),
                small,
            );
            pen.text(
                x0,
                grid_top + bar_h + 14.0,
                &self.value.label,
                TextSpec::new(CELL_TEXT_PX, INK_SOFT),
            );
            pen.end();
        }
        drop(root);
        Ok(doc.finish(width_px, height_px, &self.heading.title, ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_dark_to_light() {
        let lum =
            |c: RGBColor| 0.3 * f64::from(c.0) + 0.59 * f64::from(c.1) + 0.11 * f64::from(c.2);
        let mut last = -1.0;
        for k in 0..=10 {
            let l = lum(viridis(f64::from(k) / 10.0));
            assert!(l > last, "luminance rises along the scale");
            last = l;
        }
    }
}
