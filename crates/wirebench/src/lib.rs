//! The `wirebench` command line: the command tree ([`cli`]), the dispatch and one module per
//! command ([`commands`]), and the modules the commands share: the test commands' arguments
//! and value parsers ([`args`]), specs from them ([`specs`]), the runner's configuration
//! ([`client`]), output files and verbosity ([`output`]), the cached limits ([`limits_cache`]), the sweep
//! and study engines ([`sweep`], [`study`]), the results history ([`history`]) and the
//! daemon's metrics ([`metrics`]). Commands import shared modules, never the reverse, and no
//! module imports back into one that imports it (checked by a unit test).
//!
//! Kept as a library so tests can reach the parsing helpers; the binary is `main.rs`.
//!
//! Exit codes (documented in README.md):
//! - 0: the test completed (a confidence target that was not met is a visible warning, not a
//!   failure);
//! - 1: the test could not run (unreachable host, refused or busy server, protocol error);
//! - 2: invalid command line or test parameters;
//! - 3: the test started but was aborted (partial results are printed);
//! - 4: the results cannot be true (e.g. a receiver read more than its sender wrote);
//! - 5: a study ran and one of its expectations does not hold;
//! - 130: interrupted by SIGINT/SIGTERM (partial results are printed).

pub mod args;
pub mod cli;
pub mod client;
pub mod commands;
pub mod forward;
pub mod history;
pub mod keyfile;
pub mod limits_cache;
pub mod mesh;
pub mod metrics;
pub mod output;
pub mod progress;
pub mod specs;
pub mod study;
pub mod sweep;
pub mod under_load;

#[cfg(test)]
mod flag_registry;
#[cfg(test)]
mod module_graph;

/// Milliseconds of `s` seconds, if `s` is a usable positive number.
pub fn secs_to_ms(s: f64) -> Option<u64> {
    (s.is_finite() && s > 0.0 && s < 1e9).then(|| (s * 1000.0).round() as u64)
}

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the test could not run.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: invalid arguments.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: aborted mid-test; partial results printed.
pub const EXIT_ABORTED: i32 = 3;
/// Exit code: the results cannot be true (a reconciliation no real run can fail failed).
pub const EXIT_INVALID: i32 = 4;
/// Exit code: interrupted by the user.
pub const EXIT_INTERRUPTED: i32 = 130;
