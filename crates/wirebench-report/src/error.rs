//! Errors of this crate.

use thiserror::Error;

/// Why a [`RunResult`](crate::schema::RunResult) document could not be read.
#[derive(Debug, Error)]
pub enum ReportError {
    /// The text is not JSON, or not a `RunResult`.
    #[error("not a wirebench RunResult: {0}")]
    Json(#[from] serde_json::Error),
    /// The document's `schema_version` is missing or not the one this build reads.
    #[error(
        "unsupported RunResult schema_version {}: this build reads version {supported}",
        found.map_or_else(|| "(missing)".to_string(), |v| v.to_string())
    )]
    UnsupportedVersion {
        /// The version found in the document, if any.
        found: Option<u64>,
        /// The version this build reads ([`SCHEMA_VERSION`](crate::schema::SCHEMA_VERSION)).
        supported: u32,
    },
}
