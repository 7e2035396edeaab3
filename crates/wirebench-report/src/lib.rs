//! wirebench results: the versioned [`schema::RunResult`] document, the analysis that turns
//! both ends' measurements into derived figures, and the printers.
//!
//! - [`schema`]: `RunResult` and its parts (serde + JSON Schema; `docs/results.schema.json`).
//! - [`analyze`]: pure functions from two `SideReport`s to a `Summary`, and from runs to an
//!   `Aggregate`. Its module documentation defines every derived figure.
//! - [`analyze_rr`]: the same for the request/response and UDP stream workloads.
//! - [`print`](mod@print): JSON, CSV, human tables and live interval lines. Printers only format.
//! - [`label`]: short names of directions and ends used in text output.
//! - [`error`]: the typed errors, [`ReportError`].

pub mod analyze;
pub mod analyze_rr;
pub mod error;
pub mod label;
pub mod print;
mod print_rr;
pub mod schema;

pub use error::ReportError;
pub use schema::{RunResult, SCHEMA_VERSION};

#[cfg(test)]
mod tests;
