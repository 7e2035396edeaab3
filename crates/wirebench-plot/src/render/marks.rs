//! Data marks on a [`Frame`]: series (lines, steps, markers, error bars), model overlays, and
//! annotations whose labels are placed where they collide least with data and each other.

use plotters::style::RGBColor;

use super::frame::{Frame, LegendEntry, Sample};
use super::pen::{Anchor, Pen, Rect, TextSpec};
use crate::model::{Annotation, Overlay, Scale, Series, SeriesKind, YAxis};
use crate::style::{self, text_width_px, ANNOTATION_PX, BAND, INK, OVERLAY_DASH, REFERENCE};

/// Style slot of series `i`.
pub(crate) fn slot(s: &Series, i: usize) -> usize {
    s.style.unwrap_or(i)
}

/// Legend entries for `series` then `overlays`.
pub(crate) fn legend_entries(
    series: &[Series],
    overlays: &[Overlay],
    two_axes: bool,
) -> Vec<LegendEntry> {
    let mut out: Vec<LegendEntry> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.name.is_empty())
        .map(|(i, s)| {
            let k = slot(s, i);
            let sample = match s.kind {
                SeriesKind::Line | SeriesKind::Step => Sample::Line {
                    slot: k,
                    dash: style::dash(k),
                    width: 2.0,
                    marker: None,
                },
                SeriesKind::Points => Sample::Line {
                    slot: k,
                    dash: "",
                    width: 0.0,
                    marker: Some(style::marker(k)),
                },
                SeriesKind::LineWithPoints => Sample::Line {
                    slot: k,
                    dash: "",
                    width: 2.0,
                    marker: Some(style::marker(k)),
                },
            };
            let name = if s.axis == YAxis::Y2 && two_axes {
                format!("{} (right axis)", s.name)
            } else {
                s.name.clone()
            };
            LegendEntry { name, sample }
        })
        .collect();
    out.extend(
        overlays
            .iter()
            .filter(|o| !o.name.is_empty())
            .map(|o| LegendEntry {
                name: o.name.clone(),
                sample: Sample::Overlay {
                    color: overlay_color(o),
                },
            }),
    );
    out
}

fn overlay_color(o: &Overlay) -> RGBColor {
    o.style.map(style::color).unwrap_or(REFERENCE)
}

/// Pixel polylines of `pts`, broken where a point cannot be drawn.
fn runs(
    frame: &Frame,
    pts: impl Iterator<Item = (f64, f64)>,
    axis: YAxis,
    step: bool,
) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![];
    let mut cur: Vec<(f64, f64)> = vec![];
    for (x, y) in pts {
        match frame.at(x, y, axis) {
            Some(p) => {
                if step {
                    if let Some(&(_, py)) = cur.last() {
                        cur.push((p.0, py));
                    }
                }
                cur.push(p);
            }
            None => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What the label placer must avoid: data segments and marker boxes, in pixels.
#[derive(Default)]
pub(crate) struct Obstacles {
    segments: Vec<((f64, f64), (f64, f64))>,
    boxes: Vec<Rect>,
}

impl Obstacles {
    fn add_run(&mut self, run: &[(f64, f64)]) {
        for w in run.windows(2) {
            self.segments.push((w[0], w[1]));
        }
        if run.len() == 1 {
            self.boxes
                .push(Rect::new(run[0].0, run[0].1, run[0].0, run[0].1).inflate(3.0));
        }
    }

    /// Adds a box to avoid (bars, markers).
    pub(crate) fn add_box(&mut self, r: Rect) {
        self.boxes.push(r);
    }

    fn hits(&self, r: &Rect) -> usize {
        self.segments
            .iter()
            .filter(|(a, b)| r.hits_segment(*a, *b))
            .count()
            + self.boxes.iter().filter(|b| b.intersects(r)).count()
    }
}

/// Draws the series (clipped to the plot) and records them as obstacles.
pub(crate) fn draw_series(
    pen: &Pen,
    frame: &Frame,
    series: &[Series],
    clip: &str,
    obst: &mut Obstacles,
) {
    for (i, s) in series.iter().enumerate() {
        let k = slot(s, i);
        let color = style::color(k);
        let (line, markers) = match s.kind {
            SeriesKind::Line | SeriesKind::Step => (true, false),
            SeriesKind::Points => (false, true),
            SeriesKind::LineWithPoints => (true, true),
        };
        let dash = if markers { "" } else { style::dash(k) };
        let runs = runs(
            frame,
            s.points.iter().map(|p| (p.x, p.y)),
            s.axis,
            s.kind == SeriesKind::Step,
        );
        pen.group(
            &format!("series s{i}"),
            &format!(
                "clip-path=\"url(#{clip})\" data-name=\"{}\"",
                crate::svg::escape(&s.name)
            ),
        );
        if line {
            for r in &runs {
                pen.polyline(r, color, 2.0, dash);
            }
        }
        for r in &runs {
            obst.add_run(r);
        }
        // Error bars under the markers.
        for p in &s.points {
            let (Some(lo), Some(hi)) = (p.err_lo, p.err_hi) else {
                continue;
            };
            let (Some(a), Some(b)) = (frame.at(p.x, lo, s.axis), frame.at(p.x, hi, s.axis)) else {
                continue;
            };
            pen.group("errorbar", "");
            pen.line(a, b, color, 1.3, "");
            pen.line((a.0 - 4.0, a.1), (a.0 + 4.0, a.1), color, 1.3, "");
            pen.line((b.0 - 4.0, b.1), (b.0 + 4.0, b.1), color, 1.3, "");
            pen.end();
            obst.add_box(Rect::new(a.0 - 4.0, a.1, b.0 + 4.0, b.1));
        }
        if markers {
            let n = s.points.len();
            let r = if n > 40 { 2.8 } else { 3.8 };
            for p in &s.points {
                if let Some((x, y)) = frame.at(p.x, p.y, s.axis) {
                    pen.marker(style::marker(k), x, y, r, color);
                    obst.add_box(Rect::new(x, y, x, y).inflate(r + 1.0));
                }
            }
        }
        pen.end();
    }
}

/// Draws model overlays (dashed, clipped).
pub(crate) fn draw_overlays(
    pen: &Pen,
    frame: &Frame,
    overlays: &[Overlay],
    clip: &str,
    obst: &mut Obstacles,
) {
    for (i, o) in overlays.iter().enumerate() {
        pen.group(
            &format!("overlay o{i}"),
            &format!(
                "clip-path=\"url(#{clip})\" data-name=\"{}\"",
                crate::svg::escape(&o.name)
            ),
        );
        for r in runs(frame, o.points.iter().copied(), o.axis, false) {
            pen.polyline(&r, overlay_color(o), 1.8, OVERLAY_DASH);
            obst.add_run(&r);
        }
        pen.end();
    }
}

/// A label waiting for a place.
struct Pending {
    text: String,
    /// Candidate centres, best first, with the anchor point a leader line goes to.
    candidates: Vec<(f64, f64)>,
    leader_to: Option<(f64, f64)>,
}

/// Draws bands and reference lines (under the data) and returns their labels to place
/// after the data is drawn.
pub(crate) fn draw_annotation_lines(
    pen: &Pen,
    frame: &Frame,
    anns: &[Annotation],
    clip: &str,
) -> Vec<PendingLabel> {
    let p = frame.plot;
    let mut out = vec![];
    pen.group("annotations", &format!("clip-path=\"url(#{clip})\""));
    for a in anns {
        match a {
            Annotation::XBand { from, to, label } => {
                if !(frame.x.drawable(*from) && frame.x.drawable(*to)) {
                    continue;
                }
                let (x0, x1) = (frame.px(*from), frame.px(*to));
                pen.rect(Rect::new(x0, p.y0, x1, p.y1), Some((BAND, 0.16)), None, 0.0);
                let cx = (x0 + x1) / 2.0;
                out.push(PendingLabel::at_column(label, cx, p, None));
            }
            Annotation::YBand {
                from,
                to,
                label,
                axis,
            } => {
                let yp = frame.yplan(*axis);
                if !(yp.drawable(*from) && yp.drawable(*to)) {
                    continue;
                }
                let (y0, y1) = (frame.py(*from, *axis), frame.py(*to, *axis));
                pen.rect(Rect::new(p.x0, y0, p.x1, y1), Some((BAND, 0.16)), None, 0.0);
                out.push(PendingLabel::at_row(label, (y0 + y1) / 2.0, p));
            }
            Annotation::VLine { x, label } => {
                if !frame.x.drawable(*x) {
                    continue;
                }
                let px = frame.px(*x);
                pen.line((px, p.y0), (px, p.y1), REFERENCE, 1.2, "5 4");
                out.push(PendingLabel::at_column(label, px, p, Some(6.0)));
            }
            Annotation::HLine { y, label, axis } => {
                let plan = frame.yplan(*axis);
                if plan.scale == Scale::Linear && *y > plan.hi {
                    // Left off the axis (see `OFF_SCALE_RATIO`): an arrow at the top
                    // edge and the label saying so.
                    pen.group("annotation-offscale", "");
                    let ax = p.x1 - 8.0;
                    pen.line((ax, p.y0 + 16.0), (ax, p.y0 + 2.0), REFERENCE, 1.4, "");
                    pen.line((ax - 4.0, p.y0 + 7.0), (ax, p.y0 + 2.0), REFERENCE, 1.4, "");
                    pen.line((ax + 4.0, p.y0 + 7.0), (ax, p.y0 + 2.0), REFERENCE, 1.4, "");
                    pen.end();
                    let text = format!("↑ {label}, above the axis");
                    let w = label_w(&text);
                    // Beside the arrow first, then rows further down at the right and
                    // left edges (to the plot's middle): the placer takes the first row
                    // that crosses no data, as data near the axis' top is common here.
                    let mut candidates = vec![];
                    let mut y = p.y0 + 11.0;
                    while y < p.y0 + (p.y1 - p.y0) * 0.6 {
                        candidates.push((p.x1 - 18.0 - w / 2.0, y));
                        candidates.push((p.x0 + 6.0 + w / 2.0, y));
                        y += 17.0;
                    }
                    out.push(PendingLabel(Pending {
                        text,
                        candidates,
                        leader_to: None,
                    }));
                    continue;
                }
                if !plan.drawable(*y) {
                    continue;
                }
                let py = frame.py(*y, *axis);
                pen.line((p.x0, py), (p.x1, py), REFERENCE, 1.2, "5 4");
                out.push(PendingLabel::beside_row(label, py, p));
            }
            Annotation::Marker { x, y, label, axis } => {
                let Some((mx, my)) = frame.at(*x, *y, *axis) else {
                    continue;
                };
                pen.group("annotation-marker", "");
                pen.raw_circle(mx, my, 7.0, REFERENCE);
                pen.end();
                out.push(PendingLabel::near_point(label, mx, my));
            }
        }
    }
    pen.end();
    out
}

/// A label to be placed (public to the renderers of this module tree only).
pub(crate) struct PendingLabel(Pending);

impl PendingLabel {
    /// Beside a vertical line or band centre at `x`: rows from the top, right then left.
    fn at_column(text: &str, x: f64, p: Rect, side: Option<f64>) -> PendingLabel {
        let w = label_w(text);
        let off = side.unwrap_or(0.0);
        let mut c = vec![];
        let mut y = p.y0 + 11.0;
        while y < p.y1 - 10.0 {
            if side.is_some() {
                c.push((x + off + w / 2.0, y));
                c.push((x - off - w / 2.0, y));
            } else {
                c.push((x, y));
            }
            y += 17.0;
        }
        PendingLabel(Pending {
            text: text.to_string(),
            candidates: c,
            leader_to: None,
        })
    }

    /// Inside a horizontal band centred at `y`.
    fn at_row(text: &str, y: f64, p: Rect) -> PendingLabel {
        let w = label_w(text);
        let mut c = vec![(p.x1 - 6.0 - w / 2.0, y), (p.x0 + 6.0 + w / 2.0, y)];
        let mut x = p.x1 - 6.0 - w / 2.0;
        while x > p.x0 + w / 2.0 {
            c.push((x, y));
            x -= 40.0;
        }
        PendingLabel(Pending {
            text: text.to_string(),
            candidates: c,
            leader_to: None,
        })
    }

    /// Just above or below a horizontal line at `y`, right end first.
    fn beside_row(text: &str, y: f64, p: Rect) -> PendingLabel {
        let w = label_w(text);
        let mut c = vec![];
        let mut x = p.x1 - 6.0 - w / 2.0;
        while x > p.x0 + w / 2.0 {
            c.push((x, y - 10.0));
            c.push((x, y + 10.0));
            x -= 30.0;
        }
        PendingLabel(Pending {
            text: text.to_string(),
            candidates: c,
            leader_to: None,
        })
    }

    /// Around a marked point, with a leader line when placed away from it.
    fn near_point(text: &str, x: f64, y: f64) -> PendingLabel {
        let w = label_w(text);
        let mut c = vec![];
        for d in [14.0, 30.0, 50.0, 75.0] {
            c.push((x + 8.0 + w / 2.0, y - d));
            c.push((x - 8.0 - w / 2.0, y - d));
            c.push((x + 8.0 + w / 2.0, y + d));
            c.push((x - 8.0 - w / 2.0, y + d));
            c.push((x, y - d - 4.0));
            c.push((x, y + d + 4.0));
        }
        PendingLabel(Pending {
            text: text.to_string(),
            candidates: c,
            leader_to: Some((x, y)),
        })
    }
}

fn label_w(text: &str) -> f64 {
    text_width_px(text, ANNOTATION_PX, false) + 8.0
}

fn label_box(text: &str, c: (f64, f64)) -> Rect {
    let w = label_w(text);
    Rect::new(c.0 - w / 2.0, c.1 - 8.5, c.0 + w / 2.0, c.1 + 8.5)
}

/// Places and draws the labels: each takes the candidate inside the plot that overlaps no
/// earlier label and crosses the fewest data marks (ties: the earlier candidate).
pub(crate) fn place_labels(
    pen: &Pen,
    frame: &Frame,
    labels: Vec<PendingLabel>,
    obst: &Obstacles,
    taken: &mut Vec<Rect>,
) {
    let plot = frame.plot;
    pen.group("annotation-labels", "");
    for PendingLabel(l) in labels {
        if l.text.is_empty() {
            continue;
        }
        let mut best: Option<(usize, (f64, f64))> = None;
        for (rank, &c) in l.candidates.iter().enumerate() {
            let b = label_box(&l.text, c);
            let inside = plot.inflate(1.0).contains(&b);
            let clash = taken.iter().any(|t| t.intersects(&b.inflate(1.0)));
            let score = if !inside { 1_000_000 } else { 0 }
                + if clash { 100_000 } else { 0 }
                + obst.hits(&b) * 1000
                + rank;
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, c));
            }
        }
        let Some((_, c)) = best else { continue };
        let b = label_box(&l.text, c);
        if let Some(to) = l.leader_to {
            let from = nearest_edge(&b, to);
            if (from.0 - to.0).hypot(from.1 - to.1) > 9.0 {
                pen.line(from, to, REFERENCE, 0.8, "");
            }
        }
        pen.rect(b, Some((RGBColor(255, 255, 255), 0.85)), None, 2.0);
        pen.text(
            c.0,
            c.1,
            &l.text,
            TextSpec::new(ANNOTATION_PX, INK).anchor(Anchor::Middle),
        );
        taken.push(b);
    }
    pen.end();
}

fn nearest_edge(b: &Rect, p: (f64, f64)) -> (f64, f64) {
    (p.0.clamp(b.x0, b.x1), p.1.clamp(b.y0, b.y1))
}

impl Pen<'_> {
    /// An unfilled ring (annotation marker).
    pub(crate) fn raw_circle(&self, x: f64, y: f64, r: f64, color: RGBColor) {
        self.0.raw(&format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
            super::pen::rgb(color)
        ));
    }
}
