//! wirebench-lab's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-lab --test main MODULE::`.

mod builder;
mod emu;
mod named;
