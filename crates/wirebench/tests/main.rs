//! The wirebench binary's end-to-end tests, linked as one test binary (one link of the
//! whole workspace instead of one per file): each file of this directory is a module, named
//! by the behaviour it checks. Run one file's tests with `cargo test --release -p wirebench
//! --test main MODULE::` (e.g. `faults::`).

mod common;

mod busy_poll;
mod cli;
mod count;
mod faults;
mod generated;
mod hardening;
mod hardening3;
mod history;
mod iperf3;
mod iperf3_client;
mod lab;
mod limits;
mod mesh;
mod metrics;
mod paths;
mod plot;
mod profile;
mod recv_wait;
mod rr_faults;
mod rr_udp;
mod stream;
mod study;
mod sweep;
mod tcp_series;
mod third_party;
mod truth;
mod verdict;
