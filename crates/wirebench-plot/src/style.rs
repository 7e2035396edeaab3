//! Visual constants: the Okabe–Ito palette, marker shapes and dash patterns that keep series
//! apart in grey, font sizes, and the text-width estimate used for layout.

use plotters::style::RGBColor;

/// Font stack written on every figure. Arial and Liberation Sans share the Helvetica widths
/// [`text_width_px`] assumes; the generic `sans-serif` ends the list so a browser never needs a
/// font file from anywhere.
pub const FONT_STACK: &str = "Arial, 'Liberation Sans', 'Helvetica Neue', Helvetica, sans-serif";

/// The Okabe–Ito colour-blind-safe palette, ordered for line plots on white (yellow last: it is
/// the weakest on white).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xb2), // blue
    RGBColor(0xd5, 0x5e, 0x00), // vermillion
    RGBColor(0x00, 0x9e, 0x73), // bluish green
    RGBColor(0xcc, 0x79, 0xa7), // reddish purple
    RGBColor(0xe6, 0x9f, 0x00), // orange
    RGBColor(0x56, 0xb4, 0xe9), // sky blue
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0xf0, 0xe4, 0x42), // yellow
];

/// `#rrggbb` names of [`PALETTE`], for CSS and tests.
pub const PALETTE_HEX: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

/// The colour of style slot `i` (wraps around the palette).
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Text colour of axes and labels.
pub(crate) const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Secondary text (subtitle, annotation labels).
pub(crate) const INK_SOFT: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// Major grid lines.
pub(crate) const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
/// Minor grid lines.
pub(crate) const GRID_LIGHT: RGBColor = RGBColor(0xf0, 0xf0, 0xf0);
/// Axis lines and ticks.
pub(crate) const AXIS: RGBColor = RGBColor(0x66, 0x66, 0x66);
/// Reference lines of annotations.
pub(crate) const REFERENCE: RGBColor = RGBColor(0x44, 0x44, 0x44);
/// Shaded bands.
pub(crate) const BAND: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// Title font size in pixels.
pub(crate) const TITLE_PX: f64 = 18.0;
/// Subtitle font size.
pub(crate) const SUBTITLE_PX: f64 = 12.5;
/// Axis description font size.
pub(crate) const AXIS_LABEL_PX: f64 = 14.0;
/// Tick label font size.
pub(crate) const TICK_PX: f64 = 12.0;
/// Legend font size.
pub(crate) const LEGEND_PX: f64 = 12.5;
/// Annotation label font size.
pub(crate) const ANNOTATION_PX: f64 = 12.0;

/// Marker shapes, one per style slot so series differ in grey too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle pointing up.
    TriangleUp,
    /// Filled diamond.
    Diamond,
    /// Hollow circle.
    CircleOpen,
    /// Filled triangle pointing down.
    TriangleDown,
    /// Hollow square.
    SquareOpen,
    /// Diagonal cross.
    Cross,
}

/// Marker of style slot `i`.
pub fn marker(i: usize) -> Marker {
    const M: [Marker; 8] = [
        Marker::Circle,
        Marker::Square,
        Marker::TriangleUp,
        Marker::Diamond,
        Marker::CircleOpen,
        Marker::TriangleDown,
        Marker::SquareOpen,
        Marker::Cross,
    ];
    M[i % M.len()]
}

/// SVG `stroke-dasharray` of style slot `i` for line-only series (slot 0 solid).
pub fn dash(i: usize) -> &'static str {
    const D: [&str; 6] = ["", "7 3", "2 2.5", "9 3 2 3", "4 4", "12 3 2 3 2 3"];
    D[i % D.len()]
}

/// Dash of model overlays (long dashes, clearly not measured data).
pub(crate) const OVERLAY_DASH: &str = "8 5";

/// Helvetica advance widths (1/1000 em) of ASCII 32..=126.
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // ' '../
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, // 0-9
    278, 278, 584, 584, 584, 556, 1015, // :;<=>?@
    667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, // A-M
    722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, // N-Z
    278, 278, 278, 469, 556, 333, // [\]^_`
    556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, // a-m
    556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, // n-z
    334, 260, 334, 584, // {|}~
];

/// Estimated width in pixels of `text` at `size_px` in the figure font. Uses Helvetica widths
/// with 4 % headroom (6 % more for bold) so a fallback to a slightly wider face still fits;
/// characters outside ASCII count as 0.6 em.
pub fn text_width_px(text: &str, size_px: f64, bold: bool) -> f64 {
    let units: u32 = text
        .chars()
        .map(|c| {
            let i = c as u32;
            if (32..=126).contains(&i) {
                u32::from(HELVETICA[(i - 32) as usize])
            } else {
                600
            }
        })
        .sum();
    let factor = if bold { 1.10 } else { 1.04 };
    f64::from(units) / 1000.0 * size_px * factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_table_matches_known_helvetica_widths() {
        // "0" is 556/1000 em; at 10 px with 4 % headroom → 5.78 px.
        assert!((text_width_px("0", 10.0, false) - 5.7824).abs() < 1e-9);
        assert!(text_width_px("Wm", 12.0, false) > text_width_px("il", 12.0, false) * 3.0);
        assert!(text_width_px("abc", 12.0, true) > text_width_px("abc", 12.0, false));
    }

    #[test]
    fn palette_hex_matches_rgb() {
        for (c, h) in PALETTE.iter().zip(PALETTE_HEX) {
            assert_eq!(format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2), h);
        }
    }
}
