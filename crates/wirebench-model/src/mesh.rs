//! The result of a mesh (`wirebench mesh`): tests between many hosts, each a complete
//! [`RunResult`] with the pair it ran between and when.
//!
//! A mesh's document is [`MeshResult`]; its JSON Schema is checked in at
//! `docs/mesh.schema.json` ([`mesh_schema_json`]). A test whose host was down or refused is
//! a test like any other: its RunResult is failed and its `error` says why.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::RunResult;

/// Version of the [`MeshResult`] layout; bumped on incompatible changes.
pub const MESH_SCHEMA_VERSION: u32 = 1;

/// Whether a mesh ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MeshStatus {
    /// Still running (a document written while the mesh goes on).
    Running,
    /// Every test of every round ran (each test's own status says how it went).
    Completed,
    /// Stopped by a signal before the end; the tests so far are kept.
    Interrupted,
}

/// The whole result of one `wirebench mesh` invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeshResult {
    /// Layout version ([`MESH_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Always `"mesh"`.
    pub kind: String,
    /// The coordinating program's name and version.
    pub software: String,
    /// The command line.
    pub command: Vec<String>,
    /// The hosts, in the plan's order, as `ADDRESS:PORT` of their daemons (a DNS name that
    /// resolved to several is listed as its addresses).
    pub hosts: Vec<String>,
    /// The topology, as the plan names it (`full-mesh`, `star`, `incast`, `ring`, `pairs`).
    pub topology: String,
    /// The plan's tests, as their command lines (`stream -t 5`); a test's `test` indexes
    /// this list.
    pub test_lines: Vec<String>,
    /// When the mesh started and ended, ms since the Unix epoch (coordinator's clock).
    pub started_unix_ms: u64,
    /// See `started_unix_ms`.
    pub ended_unix_ms: u64,
    /// Whether it ran to its end.
    pub status: MeshStatus,
    /// Every test run, in the order they ended.
    pub tests: Vec<MeshTest>,
}

/// One test between two hosts of a mesh (an incast's clients are one test each, with
/// overlapping times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeshTest {
    /// The host that ran the test's client (its `ADDRESS:PORT`, as in `hosts`).
    pub client: String,
    /// The host whose daemon served it.
    pub server: String,
    /// Which of the plan's tests (index into `test_lines`).
    pub test: u32,
    /// Which repetition of the plan (0-based).
    pub repetition: u32,
    /// Which round of `--every` (0-based; 0 without it).
    pub round: u32,
    /// When the coordinator asked for the test and when its result came back, ms since the
    /// Unix epoch (coordinator's clock): the span in which the two hosts were busy with it.
    pub started_unix_ms: u64,
    /// See `started_unix_ms`.
    pub ended_unix_ms: u64,
    /// The test's result; a host that was down or refused gives a failed result whose
    /// `error` says why.
    pub result: RunResult,
}

/// The JSON Schema of [`MeshResult`], pretty-printed with a final newline.
pub fn mesh_schema_json() -> String {
    let schema = schemars::schema_for!(MeshResult);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
