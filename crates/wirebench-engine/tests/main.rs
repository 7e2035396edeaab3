//! wirebench-engine's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-engine --test main MODULE::`.

mod many;
mod rr;
mod udp;
