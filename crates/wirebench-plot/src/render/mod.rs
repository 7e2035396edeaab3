//! Rendering of the figure model to SVG. plotters lays out and draws the axes, ticks, tick
//! labels, axis titles and grid (over our own coordinate type and SVG sink); the marks, the
//! legend, the title block and annotation labels are written by [`pen`] with sub-pixel
//! precision, each inside a `<g class="…">` so tests and style sheets can find them.
//!
//! Classes: `title`, `subtitle`, `legend`/`legend-entry`, `axes`, `series sN`,
//! `overlay oN`, `errorbar`, `annotations`, `annotation-labels`, `bar`, `box`, `panel pN`,
//! `histogram`, `tail`, `cells`/`cell`, `scale` (heatmaps).

mod bars;
mod boxes;
mod frame;
mod heat;
mod hist;
mod marks;
mod panels;
mod pen;
mod xy;

use crate::svg::Svg;
use crate::PlotError;

/// A figure that can be drawn as SVG.
pub trait Render {
    /// Width and height in pixels the figure is designed for (800 px wide).
    fn default_size(&self) -> (u32, u32);

    /// Draws the figure at `width_px` × `height_px`.
    fn render_svg_sized(&self, width_px: u32, height_px: u32) -> Result<Svg, PlotError>;

    /// Draws the figure at its default size.
    fn render_svg(&self) -> Result<Svg, PlotError> {
        let (w, h) = self.default_size();
        self.render_svg_sized(w, h)
    }
}

/// Smallest canvas the layouts work on.
pub(crate) fn check_size(width_px: u32, height_px: u32) -> Result<(), PlotError> {
    if width_px < 320 || height_px < 200 {
        return Err(PlotError::TooSmall {
            width_px,
            height_px,
        });
    }
    Ok(())
}
