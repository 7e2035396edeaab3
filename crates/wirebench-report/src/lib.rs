//! wirebench's printers, figures and pages.
//!
//! The figures they show are computed by `wirebench_analysis` (pure functions from both
//! ends' `SideReport`s to a `Summary`, from repetitions to an `Aggregate`, from a live sample
//! to its rows); its module documentation defines every derived figure.
//!
//! - [`print`](mod@print): JSON, CSV, human text and live interval lines. Printers only
//!   format; [`print::text`] is the one place where typed warnings become sentences.
//! - [`label`]: short names of directions, ends and roles used in text output.
//! - [`figures`], [`page`], [`compare_page`], [`study_page`], [`mesh_page`]: SVG figures (drawn by
//!   `wirebench_plot`) and the HTML pages that hold them.
//!
//! The result document itself (`RunResult`) lives in `wirebench-model`.

pub mod compare_page;
pub mod figures;
pub mod headline;
pub mod label;
pub mod mesh_page;
pub mod page;
pub mod print;
pub mod study_page;
