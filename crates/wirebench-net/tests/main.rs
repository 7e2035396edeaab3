//! wirebench-net's integration tests, linked as one test binary: each file of this directory is a
//! module. Run one file's tests with `cargo test -p wirebench-net --test main MODULE::`.
//!
//! - [`loopback`]: the client and the daemon over loopback, in process;
//! - [`workload_fallbacks`]: no `_ =>` fallback on `WorkloadSpec` outside wirebench-model.

mod loopback;
mod workload_fallbacks;
