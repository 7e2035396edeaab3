//! The SVG sink: a plotters [`DrawingBackend`] that writes SVG elements into a shared
//! document, plus the escaping every text in a figure goes through.
//!
//! plotters' own SVG backend cannot tag elements, so tests could not tell a series from a grid
//! line; it also has no dashes and needs a font engine to measure text. This sink adds
//! groups (`<g class="series s0" stroke-dasharray="6 3">`) that the renderers open and close
//! around what plotters draws, measures text with a Helvetica width table
//! ([`crate::style::text_width_px`]) and names no font file: text is drawn with the generic
//! `sans-serif` family (after Arial/Liberation Sans, whose widths the table matches).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

use plotters::prelude::{DrawingBackend, IntoDrawingArea};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontStyle,
    FontTransform,
};

use crate::style::{text_width_px, FONT_STACK};

/// An SVG document produced by this crate's renderers: well-formed XML whose every text was
/// escaped. Only this crate makes one, so the HTML report can inline it as trusted markup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Svg(String);

impl Svg {
    /// The markup (`<svg …>…</svg>`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The markup for inlining in an HTML page: without the `xmlns` attribute (HTML parsers
    /// put `<svg>` in the SVG namespace themselves), so the page holds no URL at all.
    pub fn inline_html(&self) -> String {
        match self.0.strip_prefix(SVG_OPEN_NS) {
            Some(rest) => format!("<svg{rest}"),
            None => self.0.clone(),
        }
    }

    /// Width and height in pixels, as written on the root element.
    pub fn size_px(&self) -> Option<(u32, u32)> {
        let attr = |name: &str| -> Option<u32> {
            let head = &self.0[..self.0.find('>')?];
            let start = head.find(&format!(" {name}=\""))? + name.len() + 3;
            let len = head[start..].find('"')?;
            head[start..start + len].parse().ok()
        };
        Some((attr("width")?, attr("height")?))
    }

    /// The markup, consumed.
    pub fn into_string(self) -> String {
        self.0
    }

    pub(crate) fn from_trusted(markup: String) -> Self {
        Svg(markup)
    }
}

impl std::fmt::Display for Svg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How every document starts; [`Svg::inline_html`] drops the namespace part.
const SVG_OPEN_NS: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\"";

/// Escapes `text` for XML and HTML text and attribute values. Characters that XML 1.0 forbids
/// even as references (C0 controls but tab/newline/CR, DEL and C1 controls, U+FFFE/U+FFFF)
/// become U+FFFD, so a hostile or binary string cannot break the document.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => out.push('\u{fffd}'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The document the backend writes into; shared with the renderer through [`SvgDoc`].
#[derive(Default)]
struct DocInner {
    body: String,
    open_groups: usize,
}

/// A handle on the SVG being drawn: the renderer opens and closes groups and adds raw
/// elements through it while plotters draws through the [`SvgSink`] backend.
#[derive(Clone, Default)]
pub(crate) struct SvgDoc(Rc<RefCell<DocInner>>);

impl SvgDoc {
    /// Opens `<g class="…" extra>`; `extra` is trusted attribute markup made by this crate.
    pub(crate) fn begin_group(&self, class: &str, extra: &str) {
        let mut d = self.0.borrow_mut();
        let _ = write!(d.body, "<g class=\"{}\"", escape(class));
        if !extra.is_empty() {
            d.body.push(' ');
            d.body.push_str(extra);
        }
        d.body.push('>');
        d.open_groups += 1;
    }

    /// Closes the innermost open group.
    pub(crate) fn end_group(&self) {
        let mut d = self.0.borrow_mut();
        if d.open_groups > 0 {
            d.body.push_str("</g>");
            d.open_groups -= 1;
        }
    }

    /// Appends trusted markup made by this crate (escape any text in it first).
    pub(crate) fn raw(&self, markup: &str) {
        self.0.borrow_mut().body.push_str(markup);
    }

    /// Wraps the body into a complete `<svg>` element.
    pub(crate) fn finish(&self, width_px: u32, height_px: u32, title: &str, defs: &str) -> Svg {
        let mut d = self.0.borrow_mut();
        while d.open_groups > 0 {
            d.body.push_str("</g>");
            d.open_groups -= 1;
        }
        let mut out = String::with_capacity(d.body.len() + 512);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"wb-figure\" width=\"{w}\" \
             height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" font-family=\"{font}\" \
             aria-label=\"{t}\"><title>{t}</title>",
            w = width_px,
            h = height_px,
            font = FONT_STACK,
            t = escape(title)
        );
        if !defs.is_empty() {
            let _ = write!(out, "<defs>{defs}</defs>");
        }
        let _ = write!(
            out,
            "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{width_px}\" \
             height=\"{height_px}\" fill=\"#ffffff\"/>"
        );
        out.push_str(&d.body);
        out.push_str("</svg>");
        Svg::from_trusted(out)
    }
}

/// The plotters backend writing into an [`SvgDoc`].
pub(crate) struct SvgSink {
    doc: SvgDoc,
    size: (u32, u32),
}

impl SvgSink {
    /// A sink of `size` pixels and the document handle it writes into.
    pub(crate) fn new(size: (u32, u32)) -> (Self, SvgDoc) {
        let doc = SvgDoc::default();
        (
            SvgSink {
                doc: doc.clone(),
                size,
            },
            doc,
        )
    }

    /// The root drawing area over a new sink, and the document handle.
    pub(crate) fn area(
        size: (u32, u32),
    ) -> (
        plotters::drawing::DrawingArea<SvgSink, plotters::coord::Shift>,
        SvgDoc,
    ) {
        let (sink, doc) = SvgSink::new(size);
        (sink.into_drawing_area(), doc)
    }

    fn push(&self, s: &str) {
        self.doc.raw(s);
    }
}

/// `#rrggbb` for a backend colour.
pub(crate) fn hex(c: BackendColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.rgb.0, c.rgb.1, c.rgb.2)
}

/// ` opacity="…"` when the colour is not opaque.
fn opacity_attr(name: &str, c: BackendColor) -> String {
    if c.alpha >= 0.999 {
        String::new()
    } else {
        format!(" {name}=\"{:.3}\"", c.alpha.clamp(0.0, 1.0))
    }
}

/// The error type of the sink: writing to a `String` cannot fail, so it is never produced.
#[derive(Debug, thiserror::Error)]
#[error("SVG sink error")]
pub(crate) struct SinkError;

type SinkResult = Result<(), DrawingErrorKind<SinkError>>;

impl DrawingBackend for SvgSink {
    type ErrorType = SinkError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> SinkResult {
        Ok(())
    }

    fn present(&mut self) -> SinkResult {
        Ok(())
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> SinkResult {
        if color.alpha > 0.0 {
            self.push(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"1\" height=\"1\" fill=\"{}\"{}/>",
                point.0,
                point.1,
                hex(color),
                opacity_attr("fill-opacity", color)
            ));
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 {
            return Ok(());
        }
        let w = style.stroke_width();
        // Axis-parallel odd-width lines sit on pixel centres so they stay crisp.
        let off = if w % 2 == 1 { 0.5 } else { 0.0 };
        let (dx, dy) = if from.0 == to.0 {
            (off, 0.0)
        } else if from.1 == to.1 {
            (0.0, off)
        } else {
            (0.0, 0.0)
        };
        self.push(&format!(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            f64::from(from.0) + dx,
            f64::from(from.1) + dy,
            f64::from(to.0) + dx,
            f64::from(to.1) + dy,
            hex(c),
            w,
            opacity_attr("stroke-opacity", c)
        ));
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 {
            return Ok(());
        }
        let (x0, x1) = (ul.0.min(br.0), ul.0.max(br.0));
        let (y0, y1) = (ul.1.min(br.1), ul.1.max(br.1));
        if fill {
            self.push(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>",
                x0,
                y0,
                x1 - x0,
                y1 - y0,
                hex(c),
                opacity_attr("fill-opacity", c)
            ));
        } else {
            self.push(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" \
                 stroke-width=\"{}\"{}/>",
                f64::from(x0) + 0.5,
                f64::from(y0) + 0.5,
                x1 - x0,
                y1 - y0,
                hex(c),
                style.stroke_width(),
                opacity_attr("stroke-opacity", c)
            ));
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 {
            return Ok(());
        }
        let pts: Vec<BackendCoord> = path.into_iter().collect();
        if pts.len() == 2 {
            return self.draw_line(pts[0], pts[1], style);
        }
        let mut points = String::with_capacity(pts.len() * 10);
        for (i, p) in pts.iter().enumerate() {
            if i > 0 {
                points.push(' ');
            }
            let _ = write!(points, "{},{}", p.0, p.1);
        }
        self.push(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" \
             stroke-linecap=\"round\"{} points=\"{}\"/>",
            hex(c),
            style.stroke_width(),
            opacity_attr("stroke-opacity", c),
            points
        ));
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 {
            return Ok(());
        }
        let paint = if fill {
            format!("fill=\"{}\"{}", hex(c), opacity_attr("fill-opacity", c))
        } else {
            format!(
                "fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"{}\"{}",
                hex(c),
                style.stroke_width(),
                opacity_attr("stroke-opacity", c)
            )
        };
        self.push(&format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>",
            center.0, center.1, radius, paint
        ));
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 {
            return Ok(());
        }
        let mut points = String::new();
        for (i, p) in vert.into_iter().enumerate() {
            if i > 0 {
                points.push(' ');
            }
            let _ = write!(points, "{},{}", p.0, p.1);
        }
        self.push(&format!(
            "<polygon points=\"{}\" fill=\"{}\"{}/>",
            points,
            hex(c),
            opacity_attr("fill-opacity", c)
        ));
        Ok(())
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> SinkResult {
        let c = style.color();
        if c.alpha <= 0.0 || text.is_empty() {
            return Ok(());
        }
        let anchor = match style.anchor().h_pos {
            HPos::Left => "start",
            HPos::Center => "middle",
            HPos::Right => "end",
        };
        // Baseline offsets for a Helvetica-like face: cap height ≈ 0.72 em, descender ≈ 0.21 em.
        let dy = match style.anchor().v_pos {
            VPos::Top => "0.8em",
            VPos::Center => "0.35em",
            VPos::Bottom => "-0.25em",
        };
        let rotate = match style.transform() {
            FontTransform::None => String::new(),
            FontTransform::Rotate90 => format!(" transform=\"rotate(90 {} {})\"", pos.0, pos.1),
            FontTransform::Rotate180 => format!(" transform=\"rotate(180 {} {})\"", pos.0, pos.1),
            FontTransform::Rotate270 => format!(" transform=\"rotate(270 {} {})\"", pos.0, pos.1),
        };
        let weight = match style.style() {
            FontStyle::Bold => " font-weight=\"bold\"",
            FontStyle::Italic | FontStyle::Oblique => " font-style=\"italic\"",
            FontStyle::Normal => "",
        };
        self.push(&format!(
            "<text x=\"{}\" y=\"{}\" dy=\"{}\" font-size=\"{}\" fill=\"{}\"{} \
             text-anchor=\"{}\"{}{}>{}</text>",
            pos.0,
            pos.1,
            dy,
            style.size(),
            hex(c),
            opacity_attr("fill-opacity", c),
            anchor,
            weight,
            rotate,
            escape(text)
        ));
        Ok(())
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<SinkError>> {
        let bold = matches!(style.style(), FontStyle::Bold);
        let w = text_width_px(text, style.size(), bold).ceil() as u32;
        let h = (style.size() * 1.15).ceil() as u32;
        Ok((w, h))
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn size_is_read_back() {
        let doc = super::SvgDoc::default();
        let svg = doc.finish(640, 360, "t", "");
        assert_eq!(svg.size_px(), Some((640, 360)));
        assert!(svg.inline_html().starts_with("<svg class="));
    }

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            escape("<script>&\"'\u{1}\u{7f}\u{85}x\ty"),
            "&lt;script&gt;&amp;&quot;&#39;\u{fffd}\u{fffd}\u{fffd}x\ty"
        );
    }
}
