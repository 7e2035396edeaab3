//! Unit tests of the analysis with hand-built reports (the analysis modules' own `tests`
//! hold the rest).
//!
//! - [`stream`]: the TCP stream analysis (the tests that read its figures; those that read
//!   its warnings' sentences are wirebench-report's);
//! - [`rr`]: TCP RR, TCP CRR and UDP RR;
//! - [`udp`]: the UDP stream analysis and its loss attribution;
//! - [`aggregate`]: confidence intervals over runs;
//! - [`iperf3`]: completing an iperf3 result's figures;
//! - [`limits`]: `wirebench limits` figures and a stream result's physical context;
//! - [`finish`]: the step every result goes through after its runs (physical context,
//!   machine limits, profiler cost).
//!
//! The shared builders are in [`fixtures`], which wirebench-report's tests include too.

#[allow(dead_code)] // builders only the printers' tests use
mod fixtures;

mod aggregate;
mod finish;
mod iperf3;
mod limits;
mod rr;
mod stream;
mod udp;

pub(crate) use fixtures::*;
