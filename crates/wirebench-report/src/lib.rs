//! wirebench's analysis and printers.
//!
//! - [`analyze`]: pure functions from both ends' `SideReport`s to a `Summary` (one module per
//!   workload plus CPU), from a run's repetitions to an `Aggregate`, and from a live sample to
//!   its rows. Its module documentation defines every derived figure.
//! - [`print`](mod@print): JSON, CSV, human text and live interval lines. Printers only
//!   format; [`print::text`] is the one place where typed warnings become sentences.
//! - [`label`]: short names of directions, ends and roles used in text output.
//!
//! The result document itself (`RunResult`) lives in `wirebench-model`.

pub mod analyze;
pub mod compare_page;
pub mod figures;
pub mod headline;
pub mod label;
pub mod page;
pub mod print;
pub mod study_page;

#[cfg(test)]
mod tests;
