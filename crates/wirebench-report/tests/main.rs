//! wirebench-report's tests, one binary (each file of this directory is a module), through
//! the public API: the printers and figures with hand-built reports (the analysis they print
//! is computed by `wirebench_analysis`, whose tests check its figures).
//!
//! - [`stream`]: the TCP stream analysis's warnings in words, and its text;
//! - [`rr`]: TCP RR, TCP CRR and UDP RR in words and live lines;
//! - [`udp`]: the UDP stream analysis in words and live lines;
//! - [`limits`]: `wirebench limits` text, a stream result's physical context line, the
//!   limits schema file and the verdict's words against the limits;
//! - [`print`]: JSON, CSV, human text, live lines and the checked-in schema;
//! - [`figures`], [`tcp_series`]: the figures of a sweep and of a run;
//! - [`print_claims`], [`print_profile`], [`print_study`], [`print_sweep`], [`print_units`],
//!   [`compare_page`], [`study_page`]: those modules of the crate.
//!
//! The builders are wirebench-analysis's test fixtures, included by path so both crates'
//! tests build the same reports.

#[allow(dead_code)] // builders only the analysis tests use
#[path = "../../wirebench-analysis/src/tests/fixtures.rs"]
mod fixtures;

mod compare_page;
mod figures;
mod limits;
mod mesh;
mod print;
mod print_claims;
mod print_profile;
mod print_study;
mod print_sweep;
mod print_units;
mod rr;
mod schemas;
mod stream;
mod study_page;
mod tcp_series;
mod udp;

pub(crate) use fixtures::*;

use wirebench_model::result::Summary;
use wirebench_model::warning::{Noted, Warning};

/// The sentences of the summary's warnings, as the human printer words them.
pub(crate) fn sentences(s: &Summary) -> Vec<String> {
    s.warnings
        .iter()
        .map(wirebench_report::print::text::noted)
        .collect()
}

/// True if one of the summary's warning sentences contains `needle`.
pub(crate) fn says(s: &Summary, needle: &str) -> bool {
    sentences(s).iter().any(|t| t.contains(needle))
}

/// The sentence of one warning about the whole run.
pub(crate) fn sentence(w: Warning) -> String {
    wirebench_report::print::text::noted(&Noted::run(w))
}

/// Every line of `text` is at most [`wirebench_report::print::MAX_COLUMNS`] characters.
pub(crate) fn assert_narrow(text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= wirebench_report::print::MAX_COLUMNS,
            "line of {} columns: {line}",
            line.chars().count()
        );
    }
}
