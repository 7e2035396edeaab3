//! wirebench-proto's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-proto --test main MODULE::`.

mod props;
mod protocol_doc;
mod udp_props;
