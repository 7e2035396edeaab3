//! Drawing layer of wirebench: a neutral figure model ([`model`]), SVG rendering built on
//! plotters ([`render`]), a self-contained HTML report page ([`html`]) and a headless-Chromium
//! checker for the pages ([`browser`]).
//!
//! The figure model knows nothing of wirebench's result types: the caller converts results
//! into [`Figure`], [`BarFigure`], [`HistogramFigure`], [`PanelFigure`] or [`BoxFigure`] and
//! calls [`Render::render_svg`]. SVG output names no font file and loads nothing; every text
//! is escaped.
//!
//! ```
//! use wirebench_plot::html::{Block, Report, Section};
//! use wirebench_plot::units::format_bytes;
//! use wirebench_plot::*;
//!
//! let fig = Figure {
//!     heading: Heading::new("Throughput vs message size", "tcp_stream · veth · 2026-11-24"),
//!     x: Axis::log2("message size", Unit::Bytes),
//!     y: Axis::linear("throughput", Unit::BitsPerSecond),
//!     series: vec![Series::new(
//!         "copy",
//!         SeriesKind::LineWithPoints,
//!         &[(1024.0, 9.1e9), (8192.0, 41.0e9), (65536.0, 88.5e9)],
//!     )],
//!     annotations: vec![Annotation::VLine {
//!         x: 6348.8,
//!         label: format!("n½ = {}", format_bytes(6348.8)),
//!     }],
//!     ..Figure::default()
//! };
//! let svg = fig.render_svg()?;
//! let mut section = Section::new("Results");
//! section.push(Block::Figure { svg, caption: "5 runs each".into() });
//! let mut report = Report::new("wirebench report", "host a → host b");
//! report.sections.push(section);
//! let page = report.to_html();
//! assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
//! # Ok::<(), PlotError>(())
//! ```
//!
//! Division of labour: plotters lays out the chart and draws axes, ticks, tick labels, axis
//! titles and grid through [`svg`]'s sink over the crate's own tick planner (log-2 ticks,
//! unit-aware labels); data marks, legend, titles and annotation labels are written directly
//! with sub-pixel coordinates, each in a `<g class=…>` group (see [`render`]).

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
