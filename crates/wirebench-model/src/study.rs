//! A study (`wirebench study run FILE.toml`): tests measured over a grid of testbed cells
//! (MTU, offloads, link rate, impairments, congestion control, sysctls, CPU placement),
//! each cell a namespace testbed built, read back and torn down, each test in a cell a
//! sweep over its own factors.
//!
//! The output directory holds `manifest.json` ([`StudyManifest`]), `results.jsonl` (a
//! [`StudyPoint`] per line, appended as points complete), `points.csv`, and each cell's
//! sweeps under `cells/`. Every point's [`RunResult`] carries the testbed as read back from
//! the kernel ([`Testbed`]). The JSON Schema of both documents is checked in at
//! `docs/study.schema.json` ([`study_schema_json`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::RunResult;
use crate::side::Environment;
use crate::sweep::{FactorName, FactorValue, Setting};

/// Version of the [`StudyManifest`] and [`StudyPoint`] layouts.
pub const STUDY_SCHEMA_VERSION: u32 = 1;

/// A setting of the testbed a study varies or fixes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TestbedFactor {
    /// MTU of every veth end, bytes.
    Mtu,
    /// Offload switches of both endpoints (`tx-checksum=off,tso=off`).
    Offload,
    /// tbf rate limit of the client→server direction, bits/s.
    Rate,
    /// One-way delay added by the link emulator in each direction.
    Delay,
    /// Delay variation (emulator).
    Jitter,
    /// Frames dropped in each direction, percent (emulator).
    Loss,
    /// Frames reordered, percent (emulator).
    Reorder,
    /// Frames duplicated, percent (emulator).
    Duplicate,
    /// TCP congestion control of the testbed's routes and namespaces.
    Cc,
    /// A `net.*` sysctl of both endpoint namespaces (`net.ipv4.tcp_rmem=4096 131072 6291456`).
    Sysctl,
    /// Where the two ends (and the receive softirq) run: see [`Placement`].
    Placement,
}

impl TestbedFactor {
    /// Every testbed factor.
    pub const ALL: [TestbedFactor; 11] = [
        TestbedFactor::Mtu,
        TestbedFactor::Offload,
        TestbedFactor::Rate,
        TestbedFactor::Delay,
        TestbedFactor::Jitter,
        TestbedFactor::Loss,
        TestbedFactor::Reorder,
        TestbedFactor::Duplicate,
        TestbedFactor::Cc,
        TestbedFactor::Sysctl,
        TestbedFactor::Placement,
    ];

    /// The key that names it in a study file and in JSON.
    pub fn key(self) -> &'static str {
        match self {
            TestbedFactor::Mtu => "mtu",
            TestbedFactor::Offload => "offload",
            TestbedFactor::Rate => "rate",
            TestbedFactor::Delay => "delay",
            TestbedFactor::Jitter => "jitter",
            TestbedFactor::Loss => "loss",
            TestbedFactor::Reorder => "reorder",
            TestbedFactor::Duplicate => "duplicate",
            TestbedFactor::Cc => "cc",
            TestbedFactor::Sysctl => "sysctl",
            TestbedFactor::Placement => "placement",
        }
    }
}

/// CPU placement of a testbed cell's two ends (this machine has one kernel: "same CPU"
/// means both ends' threads pinned to one CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// No pinning: the scheduler places both ends.
    Unpinned,
    /// Client and server threads pinned to the same CPU (CPU 0).
    SameCpu,
    /// Client on CPU 0, server on CPU 1.
    DifferentCpus,
    /// "Uniprocessor-like": both ends on CPU 0 and the receive processing steered there
    /// too (RPS and XPS masks of both veth ends = CPU 0).
    Uniprocessor,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Placement; 4] = [
        Placement::Unpinned,
        Placement::SameCpu,
        Placement::DifferentCpus,
        Placement::Uniprocessor,
    ];

    /// Its name in a study file.
    pub fn key(self) -> &'static str {
        match self {
            Placement::Unpinned => "unpinned",
            Placement::SameCpu => "same_cpu",
            Placement::DifferentCpus => "different_cpus",
            Placement::Uniprocessor => "uniprocessor",
        }
    }
}

/// A factor of a study: a testbed setting or a test's sweep factor.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(untagged)]
pub enum StudyFactor {
    /// A testbed setting.
    Testbed(TestbedFactor),
    /// A sweep factor of the test.
    Test(FactorName),
}

/// One factor's level at a point or cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Level {
    /// The factor.
    pub factor: StudyFactor,
    /// Its value: a number (bytes, bits/s) or the text as the study file gave it.
    pub value: FactorValue,
}

/// An offload feature as `ethtool -k` reported it in the testbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OffloadState {
    /// The `ethtool -k` feature name.
    pub feature: String,
    /// `on`, `off` or `mixed`.
    pub state: String,
}

/// A qdisc of a testbed interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QdiscState {
    /// `tbf`, `noqueue`, ...
    pub kind: String,
    /// tbf rate, bits/s.
    pub rate_bps: Option<u64>,
}

/// A sysctl as read back in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SysctlValue {
    /// Dotted key.
    pub key: String,
    /// Value as the kernel prints it.
    pub value: String,
}

/// One end of a testbed as read back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestbedEnd {
    /// Network namespace.
    pub namespace: String,
    /// Interface.
    pub ifname: String,
    /// MTU, bytes.
    pub mtu_bytes: u32,
    /// The main offloads and every one the study set.
    pub offloads: Vec<OffloadState>,
    /// Qdiscs on the interface.
    pub qdiscs: Vec<QdiscState>,
    /// The namespace's `net.ipv4.tcp_congestion_control`.
    pub congestion_default: String,
    /// `congctl` of the route to the other end, if set.
    pub route_congestion: Option<String>,
    /// The sysctls the study set, as read back.
    pub sysctls: Vec<SysctlValue>,
    /// RPS mask of `rx-0`, if set.
    pub rps_cpus: Option<String>,
    /// XPS mask of `tx-0`, if set.
    pub xps_cpus: Option<String>,
}

/// The link emulator's settings as it reported them (each direction).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmulatorSettings {
    /// One-way delay, nanoseconds.
    pub delay_ns: u64,
    /// Delay variation, nanoseconds.
    pub jitter_ns: u64,
    /// Frames dropped, percent.
    pub loss_pct: f64,
    /// Frames reordered, percent.
    pub reorder_pct: f64,
    /// Frames duplicated, percent.
    pub duplicate_pct: f64,
}

/// The testbed a result was measured on, as read back from the kernel after it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Testbed {
    /// The lab's name.
    pub lab: String,
    /// The cell's testbed levels, as the study asked for them.
    pub levels: Vec<Level>,
    /// CPU placement of the two ends.
    pub placement: Placement,
    /// The client end.
    pub client: Option<TestbedEnd>,
    /// The server end.
    pub server: Option<TestbedEnd>,
    /// The emulator, when the link runs through it.
    pub emulator: Option<EmulatorSettings>,
}

/// A figure of a study point, as expectations and tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FigureName {
    /// Payload bits per second at the receivers (stream, udp).
    ThroughputBps,
    /// Transactions per second (rr, crr, udp rr).
    TransactionsPerS,
    /// Round-trip p50, nanoseconds (rr, crr, udp rr).
    RttP50Ns,
    /// Round-trip p99, nanoseconds.
    RttP99Ns,
    /// UDP datagrams lost in the window, percent of those sent.
    LossPct,
    /// The client process's threads' CPU time, percent of one CPU.
    ClientCpuPct,
    /// The server process's threads' CPU time, percent of one CPU.
    ServerCpuPct,
    /// Busy time of all CPUs (`/proc/stat`, client end), percent.
    SystemBusyPct,
    /// The client threads' CPU per KB of payload, microseconds.
    ClientDemandUsPerKb,
    /// The server threads' CPU per KB of payload, microseconds.
    ServerDemandUsPerKb,
    /// Copy's share of the client end's profiled CPU time, percent (`--profile`).
    ClientCopyPct,
    /// Copy's share of the server end's profiled CPU time, percent.
    ServerCopyPct,
    /// Checksum's share of the client end's profiled CPU time, percent.
    ClientChecksumPct,
    /// Checksum's share of the server end's profiled CPU time, percent.
    ServerChecksumPct,
    /// Copy's share of the client end's busy profiled CPU time (idle left out), percent.
    ClientCopyBusyPct,
    /// Copy's share of the server end's busy profiled CPU time (idle left out), percent:
    /// the seed's fig. 5 breaks down the receiver's busy time.
    ServerCopyBusyPct,
    /// The share of the server end's received payload that `TCP_ZEROCOPY_RECEIVE` mapped
    /// into its address space (the rest it copied), percent: over every receiving flow of
    /// the server end that used the zerocopy receive path; none without such a flow.
    ServerMappedPct,
    /// Memory management's share of the server end's busy profiled CPU time (idle left
    /// out), percent: page and skb allocation, page tables, remapping (`--profile`).
    ServerMemoryBusyPct,
    /// Interrupts' and softirq dispatch's share of the server end's busy profiled CPU time
    /// (idle left out), percent (`--profile`).
    ServerInterruptsBusyPct,
}

impl FigureName {
    /// Every figure.
    pub const ALL: [FigureName; 19] = [
        FigureName::ThroughputBps,
        FigureName::TransactionsPerS,
        FigureName::RttP50Ns,
        FigureName::RttP99Ns,
        FigureName::LossPct,
        FigureName::ClientCpuPct,
        FigureName::ServerCpuPct,
        FigureName::SystemBusyPct,
        FigureName::ClientDemandUsPerKb,
        FigureName::ServerDemandUsPerKb,
        FigureName::ClientCopyPct,
        FigureName::ServerCopyPct,
        FigureName::ClientChecksumPct,
        FigureName::ServerChecksumPct,
        FigureName::ClientCopyBusyPct,
        FigureName::ServerCopyBusyPct,
        FigureName::ServerMappedPct,
        FigureName::ServerMemoryBusyPct,
        FigureName::ServerInterruptsBusyPct,
    ];

    /// Its name in a study file and in JSON.
    pub fn key(self) -> &'static str {
        match self {
            FigureName::ThroughputBps => "throughput_bps",
            FigureName::TransactionsPerS => "transactions_per_s",
            FigureName::RttP50Ns => "rtt_p50_ns",
            FigureName::RttP99Ns => "rtt_p99_ns",
            FigureName::LossPct => "loss_pct",
            FigureName::ClientCpuPct => "client_cpu_pct",
            FigureName::ServerCpuPct => "server_cpu_pct",
            FigureName::SystemBusyPct => "system_busy_pct",
            FigureName::ClientDemandUsPerKb => "client_demand_us_per_kb",
            FigureName::ServerDemandUsPerKb => "server_demand_us_per_kb",
            FigureName::ClientCopyPct => "client_copy_pct",
            FigureName::ServerCopyPct => "server_copy_pct",
            FigureName::ClientChecksumPct => "client_checksum_pct",
            FigureName::ServerChecksumPct => "server_checksum_pct",
            FigureName::ClientCopyBusyPct => "client_copy_busy_pct",
            FigureName::ServerCopyBusyPct => "server_copy_busy_pct",
            FigureName::ServerMappedPct => "server_mapped_pct",
            FigureName::ServerMemoryBusyPct => "server_memory_busy_pct",
            FigureName::ServerInterruptsBusyPct => "server_interrupts_busy_pct",
        }
    }
}

/// A figure's value at a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FigureValue {
    /// The figure.
    pub figure: FigureName,
    /// Its value, in the unit its name says.
    pub value: f64,
}

/// The round of a point or cell run in a study without `repeat` (and in files written
/// before rounds existed).
pub fn first_round() -> u32 {
    1
}

/// One measured point of a study: a line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StudyPoint {
    /// Layout version ([`STUDY_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The cell's index.
    pub cell: u32,
    /// The repetition (1-based) the point was measured in: a study with `repeat = N`
    /// measures every cell's points once per round, round 1 of every cell before round 2.
    #[serde(default = "first_round")]
    pub round: u32,
    /// The test's label in the study file.
    pub test: String,
    /// Every level of the point: the cell's testbed levels, then the test's factors.
    pub levels: Vec<Level>,
    /// The test factors' settings (as in the cell's sweep).
    pub settings: Vec<Setting>,
    /// The point's figures (those its workload has).
    pub figures: Vec<FigureValue>,
    /// The complete result (its `testbed` is the cell as read back).
    pub result: RunResult,
}

/// A comparison operator of an expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CompareOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
        }
    }

    /// Parses `<`, `<=`, `>`, `>=`, `==`, `!=`.
    pub fn parse(s: &str) -> Option<CompareOp> {
        Some(match s {
            "<" => CompareOp::Lt,
            "<=" => CompareOp::Le,
            ">" => CompareOp::Gt,
            ">=" => CompareOp::Ge,
            "==" | "=" => CompareOp::Eq,
            "!=" => CompareOp::Ne,
            _ => return None,
        })
    }
}

/// A condition on a level: `mtu >= 9000`, `send_path == sendfile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Condition {
    /// The factor.
    pub factor: StudyFactor,
    /// The comparison (`<`, `>`... compare numbers; `==`, `!=` also names).
    pub op: CompareOp,
    /// The value compared with.
    pub value: FactorValue,
}

/// A hypothesis a study states about its results: `figure(numerator) / figure(denominator)
/// OP value` (or `figure(numerator) OP value` without a denominator) for every group of
/// points that share all other levels and meet the conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Expectation {
    /// The user's name for it.
    pub name: String,
    /// The test it is about (its label); `None`: every test that has the figure.
    pub test: Option<String>,
    /// The figure compared.
    pub figure: FigureName,
    /// The levels that pick the numerator's point in each group.
    pub numerator: Vec<Level>,
    /// The levels that pick the denominator's point; `None`: no ratio.
    pub denominator: Option<Vec<Level>>,
    /// Only points that meet every condition.
    pub conditions: Vec<Condition>,
    /// The comparison.
    pub op: CompareOp,
    /// The bound.
    pub value: f64,
}

/// An expectation's outcome (of the whole expectation, or of one group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The compared median meets the bound, and the bound lies outside the spread (every
    /// group's, for the whole expectation).
    Holds,
    /// The compared median misses the bound, and the bound lies outside the spread (at
    /// least one group's, for the whole expectation).
    DoesNotHold,
    /// The bound lies within the spread of the compared value (min–max over the
    /// repetitions): the repetitions disagree on the side of the bound. For the whole
    /// expectation: no group fails and at least one is inconclusive.
    Inconclusive,
    /// No group had the points to evaluate it (not measured, or failed).
    NoData,
}

/// A figure over the points measured at one set of levels (a point's repetitions, and any
/// re-measurements): the median and the range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// The median, in the figure's unit.
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// How many points.
    pub count: u32,
}

/// One group's evaluation of an expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpectationCase {
    /// The levels the group's points share (the factors not named by the selectors).
    pub group: Vec<Level>,
    /// The numerator's figure: its median over the repetitions.
    pub numerator: f64,
    /// The denominator's figure (median), if the expectation is a ratio.
    pub denominator: Option<f64>,
    /// The numerator's median, range and point count.
    pub numerator_spread: Spread,
    /// The denominator's median, range and point count.
    pub denominator_spread: Option<Spread>,
    /// The value compared: for a ratio whose two sides were measured in the same rounds
    /// (`paired_rounds`), the median of the per-round ratios; for other ratios, the ratio
    /// of the medians; without a denominator, the numerator's median.
    pub value: f64,
    /// The lowest value the rounds allow: the smallest per-round ratio when paired; else the
    /// numerator's min (over the denominator's max, for a ratio).
    pub value_min: f64,
    /// The highest value the rounds allow: the largest per-round ratio when paired; else the
    /// numerator's max (over the denominator's min, for a ratio).
    pub value_max: f64,
    /// The rounds both sides of a ratio were measured in, when at least two: each round's
    /// numerator (its points' median) over the same round's denominator is one paired ratio,
    /// as the rounds interleave the cells so that a drift of the machine moves both sides
    /// of a round alike. Absent for a single round, unpaired points, and results from before
    /// ratios were paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_rounds: Option<u32>,
    /// The group's verdict: the median judged against the bound, inconclusive when the
    /// bound lies within `value_min..=value_max`.
    pub verdict: Verdict,
}

/// An expectation evaluated on a study's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpectationOutcome {
    /// The expectation.
    pub expectation: Expectation,
    /// Its verdict.
    pub verdict: Verdict,
    /// Every group evaluated.
    pub cases: Vec<ExpectationCase>,
}

/// How a study or one of its cells ended (so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StudyStatus {
    /// Not started, or under way.
    Running,
    /// Every point measured.
    Completed,
    /// Stopped by the user; completed points kept.
    Interrupted,
    /// Stopped by an error (testbed or daemon); completed points kept.
    Failed,
}

/// A test run in a cell: the cell's sweep of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellTest {
    /// The test's label.
    pub test: String,
    /// The sweep's directory, relative to the study directory.
    pub dir: String,
    /// Points measured.
    pub points: u32,
    /// How the sweep ended.
    pub status: StudyStatus,
}

/// One testbed cell of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CellRecord {
    /// Position in the plan.
    pub index: u32,
    /// The round (1-based) of this build of the cell: a study with `repeat = N` builds
    /// every cell once per round.
    #[serde(default = "first_round")]
    pub round: u32,
    /// The cell's label (explicit cells), if any.
    pub label: Option<String>,
    /// The testbed levels.
    pub levels: Vec<Level>,
    /// How the cell ended.
    pub status: StudyStatus,
    /// Time to build, configure and read back the testbed and start the daemon, ms.
    pub build_ms: Option<f64>,
    /// Time to stop the daemon and remove the testbed, ms.
    pub teardown_ms: Option<f64>,
    /// Time spent measuring (sum of the points' measured windows), ms.
    pub measured_ms: Option<f64>,
    /// Wall time of the cell from build to teardown, ms.
    pub wall_ms: Option<f64>,
    /// The testbed as read back.
    pub testbed: Option<Testbed>,
    /// The cell's tests.
    pub tests: Vec<CellTest>,
    /// Why the cell failed.
    pub error: Option<String>,
}

/// The study's manifest (`manifest.json`), rewritten as cells complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StudyManifest {
    /// Layout version ([`STUDY_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Always `"study"`.
    pub kind: String,
    /// Tool name and version.
    pub software: String,
    /// The study's title.
    pub title: String,
    /// The seed figure it mirrors, as the file says.
    pub seed: Option<String>,
    /// The study file's path as given.
    pub file: String,
    /// The study file's text.
    pub file_text: String,
    /// The command line.
    pub command: Vec<String>,
    /// How many times every cell's points are measured (rounds, interleaved across cells).
    #[serde(default = "first_round")]
    pub repeat: u32,
    /// The host (the machine both namespaces run on).
    pub host: Option<Environment>,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// Start, ISO 8601 UTC.
    pub started_utc: String,
    /// End (or last update), ms since the Unix epoch.
    pub ended_unix_ms: u64,
    /// How it ended.
    pub status: StudyStatus,
    /// Why it failed.
    pub error: Option<String>,
    /// The cells' runs: every cell once per round, round 1 of every cell first.
    pub cells: Vec<CellRecord>,
    /// The expectations, evaluated at the end.
    pub expectations: Vec<ExpectationOutcome>,
}

/// The JSON Schema of the manifest and of a results line, pretty-printed.
pub fn study_schema_json() -> String {
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    /// The two documents of a study directory.
    struct StudyDocuments {
        /// `manifest.json`.
        manifest: StudyManifest,
        /// A line of `results.jsonl`.
        point: StudyPoint,
    }
    let schema = schemars::schema_for!(StudyDocuments);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
