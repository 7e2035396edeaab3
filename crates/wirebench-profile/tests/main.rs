//! wirebench-profile's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-profile --test main MODULE::`.

mod cost;
mod doc_table;
mod ground_truth;
