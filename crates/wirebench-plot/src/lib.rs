//! Drawing layer of wirebench: a neutral figure model ([`model`]), SVG rendering built on
//! plotters ([`render`]), a self-contained HTML report page ([`html`]) and a headless-Chromium
//! checker for the pages ([`browser`]).
//!
//! The figure model knows nothing of wirebench's result types: the caller converts results
//! into [`Figure`], [`BarFigure`], [`HistogramFigure`], [`PanelFigure`] or [`BoxFigure`] and
//! calls [`Render::render_svg`]. SVG output names no font file and loads nothing; every text
//! is escaped.

pub mod browser;
pub mod gallery;
pub mod html;
pub mod model;
pub mod render;
pub mod style;
pub mod svg;
pub(crate) mod ticks;
pub mod units;

pub use model::*;
pub use render::Render;
pub use svg::Svg;

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The canvas is too small for the layout.
    #[error("canvas {width_px}x{height_px} px is too small for this figure")]
    TooSmall {
        /// Requested width.
        width_px: u32,
        /// Requested height.
        height_px: u32,
    },
    /// The figure's data does not fit its own shape (e.g. bar values vs categories).
    #[error("invalid figure: {0}")]
    Invalid(String),
    /// plotters reported a drawing error.
    #[error("drawing failed: {0}")]
    Drawing(String),
}
