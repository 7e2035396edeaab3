//! Tests across many hosts, without I/O and without a clock (the caller runs the tests and
//! passes time in):
//!
//! - [`topology`]: which tests a plan asks for — the ordered (client, server) pairs of a full
//!   mesh, a star, a ring or explicit pairs, and incast groups (N clients to one server at
//!   once) — each test marked as throughput or latency-only;
//! - [`tournament`]: the round-robin tournament that splits a full mesh of N hosts into
//!   2(N−1) rounds (2N for odd N) of disjoint pairs;
//! - [`schedule`]: the scheduler. A test starts only when none of its hosts is in another
//!   throughput test (perfSONAR's pScheduler rule: two throughput tests that share a host
//!   measure each other); disjoint tests run in parallel; a latency-only test may share a host
//!   with a throughput test only when the plan allows it;
//! - [`simulate`]: the scheduler run on paper, for the wall time of a mesh of any size.

pub mod schedule;
pub mod simulate;
pub mod topology;
pub mod tournament;

pub use schedule::{Overlap, Scheduler, Started};
pub use topology::{Job, JobClass, Topology, TopologyError};
