//! Drawing primitives written straight into the SVG document with sub-pixel coordinates:
//! data lines, markers, bars, labels. plotters draws the axes and grid through the same
//! document ([`crate::svg::SvgSink`]).

use std::fmt::Write as _;

use plotters::style::RGBColor;

use crate::style::Marker;
use crate::svg::{escape, SvgDoc};

/// `#rrggbb` of a colour.
pub(crate) fn rgb(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A pixel rectangle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub(crate) fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Rect {
        Rect {
            x0: x0.min(x1),
            y0: y0.min(y1),
            x1: x0.max(x1),
            y1: y0.max(y1),
        }
    }

    pub(crate) fn intersects(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    pub(crate) fn contains(&self, o: &Rect) -> bool {
        o.x0 >= self.x0 && o.x1 <= self.x1 && o.y0 >= self.y0 && o.y1 <= self.y1
    }

    pub(crate) fn inflate(&self, d: f64) -> Rect {
        Rect::new(self.x0 - d, self.y0 - d, self.x1 + d, self.y1 + d)
    }

    /// Whether the segment `a`–`b` crosses or lies inside the rectangle.
    pub(crate) fn hits_segment(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        // Liang–Barsky clipping.
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let mut t0: f64 = 0.0;
        let mut t1: f64 = 1.0;
        for (p, q) in [
            (-dx, a.0 - self.x0),
            (dx, self.x1 - a.0),
            (-dy, a.1 - self.y0),
            (dy, self.y1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// Horizontal text anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
}

/// Text style for [`Pen::text`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextSpec {
    pub size: f64,
    pub color: RGBColor,
    pub anchor: Anchor,
    pub bold: bool,
}

impl TextSpec {
    pub(crate) fn new(size: f64, color: RGBColor) -> TextSpec {
        TextSpec {
            size,
            color,
            anchor: Anchor::Start,
            bold: false,
        }
    }

    pub(crate) fn anchor(mut self, a: Anchor) -> TextSpec {
        self.anchor = a;
        self
    }

    pub(crate) fn bold(mut self) -> TextSpec {
        self.bold = true;
        self
    }
}

/// Writes primitives into an [`SvgDoc`].
pub(crate) struct Pen<'a>(pub &'a SvgDoc);

fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

impl Pen<'_> {
    pub(crate) fn group(&self, class: &str, extra: &str) {
        self.0.begin_group(class, extra);
    }

    pub(crate) fn end(&self) {
        self.0.end_group();
    }

    /// An open polyline.
    pub(crate) fn polyline(&self, pts: &[(f64, f64)], color: RGBColor, width: f64, dash: &str) {
        if pts.len() < 2 {
            return;
        }
        let mut p = String::with_capacity(pts.len() * 12);
        for (i, (x, y)) in pts.iter().enumerate() {
            if i > 0 {
                p.push(' ');
            }
            let _ = write!(p, "{},{}", n(*x), n(*y));
        }
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{dash}\"")
        };
        self.0.raw(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" \
             stroke-linecap=\"butt\"{} points=\"{}\"/>",
            rgb(color),
            width,
            dash,
            p
        ));
    }

    /// A straight line.
    pub(crate) fn line(
        &self,
        a: (f64, f64),
        b: (f64, f64),
        color: RGBColor,
        width: f64,
        dash: &str,
    ) {
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{dash}\"")
        };
        self.0.raw(&format!(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            n(a.0),
            n(a.1),
            n(b.0),
            n(b.1),
            rgb(color),
            width,
            dash
        ));
    }

    /// A rectangle, filled and/or outlined.
    pub(crate) fn rect(
        &self,
        r: Rect,
        fill: Option<(RGBColor, f64)>,
        stroke: Option<(RGBColor, f64)>,
        radius: f64,
    ) {
        let fill = match fill {
            Some((c, o)) if o < 0.999 => format!("fill=\"{}\" fill-opacity=\"{o:.2}\"", rgb(c)),
            Some((c, _)) => format!("fill=\"{}\"", rgb(c)),
            None => "fill=\"none\"".to_string(),
        };
        let stroke = match stroke {
            Some((c, w)) => format!(" stroke=\"{}\" stroke-width=\"{}\"", rgb(c), w),
            None => String::new(),
        };
        let radius = if radius > 0.0 {
            format!(" rx=\"{}\"", n(radius))
        } else {
            String::new()
        };
        self.0.raw(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}{}{}/>",
            n(r.x0),
            n(r.y0),
            n(r.x1 - r.x0),
            n(r.y1 - r.y0),
            fill,
            stroke,
            radius
        ));
    }

    /// A marker of shape `m` centred at `(x, y)` with radius `r`.
    pub(crate) fn marker(&self, m: Marker, x: f64, y: f64, r: f64, color: RGBColor) {
        let c = rgb(color);
        let filled = format!("fill=\"{c}\" stroke=\"#ffffff\" stroke-width=\"0.8\"");
        let open = format!("fill=\"#ffffff\" stroke=\"{c}\" stroke-width=\"1.6\"");
        let poly = |pts: &[(f64, f64)], paint: &str| {
            let p: Vec<String> = pts
                .iter()
                .map(|(dx, dy)| format!("{},{}", n(x + dx), n(y + dy)))
                .collect();
            format!("<polygon points=\"{}\" {}/>", p.join(" "), paint)
        };
        let s = r * 0.9;
        let t = r * 1.2;
        let markup = match m {
            Marker::Circle => format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>",
                n(x),
                n(y),
                n(r),
                filled
            ),
            Marker::CircleOpen => format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>",
                n(x),
                n(y),
                n(r * 0.9),
                open
            ),
            Marker::Square => poly(&[(-s, -s), (s, -s), (s, s), (-s, s)], &filled),
            Marker::SquareOpen => poly(&[(-s, -s), (s, -s), (s, s), (-s, s)], &open),
            Marker::TriangleUp => poly(&[(0.0, -t), (t, t * 0.75), (-t, t * 0.75)], &filled),
            Marker::TriangleDown => poly(&[(0.0, t), (t, -t * 0.75), (-t, -t * 0.75)], &filled),
            Marker::Diamond => poly(&[(0.0, -t), (t, 0.0), (0.0, t), (-t, 0.0)], &filled),
            Marker::Cross => format!(
                "<path d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"{c}\" stroke-width=\"2\"/>",
                n(x - s),
                n(y - s),
                n(x + s),
                n(y + s),
                n(x - s),
                n(y + s),
                n(x + s),
                n(y - s)
            ),
        };
        self.0.raw(&markup);
    }

    /// Text with its baseline placed so that `y` is the vertical centre of the text.
    pub(crate) fn text(&self, x: f64, y: f64, s: &str, spec: TextSpec) {
        if s.is_empty() {
            return;
        }
        let anchor = match spec.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
        };
        let weight = if spec.bold {
            " font-weight=\"bold\""
        } else {
            ""
        };
        self.0.raw(&format!(
            "<text x=\"{}\" y=\"{}\" dy=\"0.35em\" font-size=\"{}\" fill=\"{}\" \
             text-anchor=\"{}\"{}>{}</text>",
            n(x),
            n(y),
            spec.size,
            rgb(spec.color),
            anchor,
            weight,
            escape(s)
        ));
    }
}

/// FNV-1a of `s`, for ids that must differ between figures inlined in one page.
pub(crate) fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `<clipPath>` definition for `r` under `id`.
pub(crate) fn clip_def(id: &str, r: Rect) -> String {
    format!(
        "<clipPath id=\"{id}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>",
        n(r.x0),
        n(r.y0),
        n(r.x1 - r.x0),
        n(r.y1 - r.y0)
    )
}
