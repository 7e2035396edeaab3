//! wirebench-plot's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-plot --test main MODULE::`.

mod browser_check;
mod html_report;
mod svg_structure;
