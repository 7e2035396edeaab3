//! The typed model of a wirebench test: what is asked, what each end measured, what the
//! analysis derived, and what went wrong — as data, with no I/O and no prose.
//!
//! - [`spec`]: [`spec::TestSpec`] = [`spec::CommonSpec`] + one [`spec::WorkloadSpec`] variant
//!   carrying only the settings that apply to it; the server's [`spec::Limits`].
//! - [`validate`]: the one validation of a spec and the typed [`validate::SpecError`].
//! - [`side`]: [`side::SideReport`], what one end measured, with one [`side::SideData`]
//!   variant per workload family; [`rr`] and [`udp`] hold the request/response and UDP parts.
//! - [`result`]: the versioned [`result::RunResult`] document and the per-workload
//!   [`result::Summary`].
//! - [`warning`], [`abort`], [`error`]: typed warnings (`code` + `params`), flow errors, abort
//!   reasons, engine kinds and error classes. The printers (`wirebench-report`) turn them
//!   into sentences; nothing else does.
//! - [`sweep`], [`study`]: sweeps (a test over a grid of factor values) and studies (sweeps
//!   over testbed cells), their documents and expectations.
//! - [`mesh`]: tests between many hosts ([`mesh::MeshResult`], `wirebench mesh`).
//! - [`compare`]: two sets of results compared figure by figure ([`compare::Comparison`]).
//! - [`limits`]: this machine's physical limits ([`limits::LimitsResult`], `wirebench
//!   limits`) and the [`limits::PhysicalContext`] a stream result gets from them.
//! - [`tcp_series`]: the senders' TCP_INFO per interval, per flow and per direction.
//! - [`profile`]: an end's CPU profile by category ([`profile::ProfileReport`]).
//! - [`iperf3`]: what a stock iperf3 server reported of a test wirebench ran against it.
//! - [`text`]: escaping text a peer sent before it reaches a log or a terminal.
//!
//! Every numeric field names its unit (`_bytes`, `_ns`, `_ms`, `_bps`, `_pct`, `_per_s`).

pub mod abort;
pub mod compare;
pub mod error;
pub mod iperf3;
pub mod limits;
pub mod mesh;
pub mod profile;
pub mod recv_wait;
pub mod result;
pub mod rr;
pub mod side;
pub mod spec;
pub mod study;
pub mod sweep;
pub mod tcp_series;
pub mod text;
pub mod udp;
pub mod udp_summary;
pub mod validate;
pub mod verdict;
pub mod warning;
