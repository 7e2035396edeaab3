//! wirebench-proto's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-proto --test main MODULE::`.

#[allow(dead_code)] // builders only some modules use
mod testutil;

mod auth;
mod data;
mod frame;
mod props;
mod protocol_doc;
mod session;
mod session_third_party;
mod ticket;
mod udp_props;
mod udp_unit;
mod udpsetup;
