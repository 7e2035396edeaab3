//! This machine's physical limits (`wirebench limits`): memory copy and Internet-checksum
//! bandwidth per buffer size, the cost of a system call, the cross-CPU wake-up latency and
//! the loopback TCP ceiling; and the [`PhysicalContext`] a stream result gets from them.
//!
//! The document is [`LimitsResult`]; its JSON Schema is checked in at
//! `docs/limits.schema.json` ([`limits_schema_json`]). It is cached per boot (the figures of
//! one boot of one machine do not change much), so the document names the boot it was
//! measured in.
//!
//! Every figure is the [`Spread`] of repeated timed batches (the median is the figure; min
//! and max show the noise). The engine's raw batches ([`Batch`], [`MemorySamples`]) are
//! turned into figures by `wirebench-report`'s analysis.
//!
//! Definitions:
//! - **copy bandwidth = bytes copied per second**: a copy of `n` bytes counts `n` (it reads
//!   `n` bytes once and writes `n` bytes once; it is not counted as `2n` of memory traffic);
//! - **checksum bandwidth**: bytes summed per second by wirebench's user-space RFC 1071
//!   implementation (64-bit accumulation), a proxy for the kernel's `csum_partial`;
//! - **buffer size**: bytes per copy (or checksum) call; a copy's working set is twice that
//!   (source and destination).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::summary::Spread;

/// Version of the [`LimitsResult`] layout; bumped on incompatible changes.
pub const LIMITS_SCHEMA_VERSION: u32 = 1;

/// The complete document of `wirebench limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LimitsResult {
    /// [`LIMITS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"limits"`.
    pub kind: String,
    /// Tool name and version, e.g. `"wirebench 0.1.0"`.
    pub tool: String,
    /// Unix milliseconds when the measurement started.
    pub started_unix_ms: u64,
    /// The same instant in ISO 8601, UTC.
    pub started_utc: String,
    /// How long the whole measurement took, milliseconds.
    pub duration_ms: u64,
    /// The boot it was measured in (`/proc/sys/kernel/random/boot_id`); the cache is per
    /// boot. `None` when it could not be read (then nothing is cached).
    pub boot_id: Option<String>,
    /// The host name.
    pub hostname: Option<String>,
    /// The CPU model (`/proc/cpuinfo`).
    pub cpu_model: Option<String>,
    /// Online CPUs.
    pub cpus: u32,
    /// The CPUs the all-threads figures ran on, one pinned thread each (the CPUs this
    /// process may run on); the one-thread figures ran on the first of them.
    pub cpus_used: Vec<u32>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The 1-minute load average when the measurement started (`/proc/loadavg`): other
    /// work competing for the CPUs lowers the figures and widens their spreads.
    pub load_average_1m: Option<f64>,
    /// How busy the machine was with other work during the measurement (absent in documents
    /// from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LimitsLoad>,
    /// Measured with `--quick` (fewer sizes, fewer and shorter batches).
    pub quick: bool,
    /// Copy and checksum bandwidth per buffer size, ascending.
    pub memory: Vec<MemoryRow>,
    /// The cost of a trivial system call.
    pub syscall: Option<SyscallCost>,
    /// The wake-up latency between two threads.
    pub wakeup: Option<WakeupLatency>,
    /// The loopback TCP ceiling.
    pub loopback: Option<LoopbackCeiling>,
    /// How fast bytes cross from one CPU to another through memory; `None` on one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<CrossCpuTransfer>,
    /// What could not be measured, and why.
    pub notes: Vec<LimitsNote>,
    /// Memory figures that stayed implausible after they were measured again (a copy
    /// bandwidth far below the next larger buffer size's), with their likely cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implausible: Vec<Implausible>,
    /// What the CPU profiler's sampling costs here (absent in documents from before it was
    /// measured, or when perf events were not permitted: a note says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<SamplerCost>,
}

/// The CPU profiler's cost per sample on this machine: a fixed CPU-bound work loop (integer
/// arithmetic over a 64 KiB buffer) on one pinned CPU, timed alone and with a profile
/// (`--profile`'s sampler, its drain thread on the same CPU) sampling that CPU at
/// `freq_hz`, in interleaved pairs, each run measured in the probe process' CPU time (so
/// that another process sharing the CPU does not count). The cost of a pair is the sampled
/// run's extra CPU time; per sample, that over the samples taken while the probe ran (at most
/// its CPU time × `freq_hz`: on a CPU shared with another process, the other samples fell in
/// that process' time). It covers the sampling interrupt (which no
/// sample can show) and the drain thread's work (which the profile shows as `sampler`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SamplerCost {
    /// The CPU the probe ran on.
    pub cpu: u32,
    /// The sampling frequency of the probe, Hz (high, so that the cost stands above the
    /// noise of the work loop's time).
    pub freq_hz: u32,
    /// The work loop's CPU time alone, ns (the median over the pairs).
    pub work_ns: u64,
    /// CPU time the sampler took per sample, ns, over the pairs: `(sampled − alone) /
    /// samples`, counting the samples taken while the probe ran.
    pub ns_per_sample: Spread,
    /// The work loop's slowdown at `freq_hz`, percent, over the pairs: `(sampled / alone −
    /// 1) × 100`.
    pub cost_pct: Spread,
    /// Whether every pair showed a cost (the sampled run slower than the run alone). When
    /// some pair did not, another process' work weighed more than the sampler's in it: the
    /// median is noise, and profiled results say the cost is unresolved. `false` in limits
    /// measured before this was checked.
    #[serde(default)]
    pub resolved: bool,
    /// How many times the probe ran: an unresolved probe is run again, up to
    /// [`SAMPLER_PROBE_ATTEMPTS`] times, and the last one is kept (0 in limits measured
    /// before it was retried).
    #[serde(default)]
    pub attempts: u32,
}

/// The most times `wirebench limits` runs the sampler-cost probe before it keeps an
/// unresolved one.
pub const SAMPLER_PROBE_ATTEMPTS: u32 = 3;

/// One pair of the sampler-cost probe (engine output, analysis input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SamplerCostPair {
    /// The work loop alone: the probe process' CPU time meanwhile, ns.
    pub alone_cpu_ns: u64,
    /// The same work loop with the sampler on: the probe process' CPU time meanwhile (the
    /// loop, the sampling interrupts taken while it ran, the drain thread), ns.
    pub sampled_cpu_ns: u64,
    /// Samples the sampler took (and lost) meanwhile.
    pub samples: u64,
}

/// The sampler-cost probe's raw pairs (engine output, analysis input).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SamplerCostSamples {
    /// The CPU it ran on.
    pub cpu: u32,
    /// The sampling frequency, Hz.
    pub freq_hz: u32,
    /// The pairs, in the order run.
    pub pairs: Vec<SamplerCostPair>,
    /// Which run of the probe these pairs are (1 for the first).
    pub attempt: u32,
}

/// How busy the machine was with other work while `wirebench limits` measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LimitsLoad {
    /// The 1-minute load average when the measurement ended (`/proc/loadavg`).
    pub load_average_1m_end: Option<f64>,
    /// Other work's CPU time during the measurement (all CPUs' busy time from `/proc/stat`
    /// less this process's own), percent of all CPUs together: other processes', and the
    /// time the hypervisor ran something else on these virtual CPUs (`steal_pct`).
    pub other_busy_pct: f64,
    /// Of `other_busy_pct`, the time the hypervisor took (`steal` in `/proc/stat`), percent
    /// of all CPUs together (absent in documents measured before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
    /// Other work held at least [`BUSY_OTHER_PCT`] % of the CPUs: the figures are likely low,
    /// and the document is cached marked so.
    pub busy: bool,
}

impl LimitsLoad {
    /// Other processes' share of `other_busy_pct`: what is left without the hypervisor's
    /// (`steal_pct`), percent of all CPUs together.
    pub fn other_processes_pct(&self) -> f64 {
        (self.other_busy_pct - self.steal_pct.unwrap_or(0.0)).max(0.0)
    }
}

/// Other processes' share of the CPUs from which a measurement of the limits is marked busy,
/// percent: a quarter of a 2-CPU machine is half a CPU, time the probes' pinned threads
/// share.
pub const BUSY_OTHER_PCT: f64 = 25.0;

/// A figure of a memory row that did not fit the rest of the table after it was measured
/// again: what it was, and the likely cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Implausible {
    /// The buffer size of the row.
    pub buffer_bytes: u64,
    /// Which figure.
    pub figure: MemoryFigure,
    /// The figure, bytes per second (the median).
    pub bytes_per_s: f64,
    /// The figure it was compared with: the larger buffer size's, bytes per second.
    pub larger_buffer_bytes_per_s: f64,
    /// The likely cause.
    pub cause: ImplausibleCause,
}

/// A figure of a [`MemoryRow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryFigure {
    /// `copy_one_thread_bytes_per_s`.
    CopyOneThread,
    /// `copy_all_threads_bytes_per_s`.
    CopyAllThreads,
    /// `checksum_bytes_per_s`.
    Checksum,
}

/// Why a figure is likely implausible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImplausibleCause {
    /// Other work shared the CPUs during the measurement ([`LimitsLoad::busy`]).
    Contention,
    /// The machine was quiet: the buffers' placement in memory (cache-set or page
    /// aliasing between source and destination) is the likely cause.
    Placement,
}

/// Bandwidth figures at one buffer size; a figure is `None` when it was not measured (a
/// note says why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryRow {
    /// Bytes per copy (checksum) call.
    pub buffer_bytes: u64,
    /// One pinned thread: bytes copied per second (`copy_from_slice`, the C library's
    /// `memcpy`), over the batches; source and destination page-aligned, the fastest
    /// placement (the machine's limit).
    pub copy_one_thread_bytes_per_s: Option<Spread>,
    /// One pinned thread copying into a destination 16 bytes after the source modulo a page
    /// (where `malloc` puts a block behind its header): bytes copied per second, over the
    /// batches. Against `copy_one_thread_bytes_per_s` it is the penalty of an unlucky
    /// placement (about 20x at 32–64 KiB on AMD Zen 3). `None` in results from before it was
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_unlucky_bytes_per_s: Option<Spread>,
    /// One pinned thread on each CPU of `cpus_used`, each copying its own buffers: all
    /// threads' bytes copied per second together (a batch's bytes over the time until its
    /// slowest thread finished), over the batches.
    pub copy_all_threads_bytes_per_s: Option<Spread>,
    /// One pinned thread: bytes summed per second by the user-space RFC 1071 Internet
    /// checksum (a proxy for the kernel's `csum_partial`), over the batches.
    pub checksum_bytes_per_s: Option<Spread>,
}

/// The cost of a trivial system call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyscallCost {
    /// The call timed (`getppid`).
    pub syscall: String,
    /// Nanoseconds per call (a batch's time over its calls), over the batches.
    pub syscall_ns: Spread,
    /// Calls per batch.
    pub calls_per_batch: u64,
}

/// Wake-up latency between two threads ping-ponging through a futex, each blocking in
/// `FUTEX_WAIT` until the other wakes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WakeupLatency {
    /// How the threads wake each other (`futex`).
    pub mechanism: String,
    /// Both threads pinned to the same CPU: one-way nanoseconds (half a round trip: a
    /// batch's time over twice its round trips), over the batches.
    pub wakeup_same_cpu_ns: Spread,
    /// The threads pinned to two different CPUs: one-way nanoseconds, as above; `None` on
    /// a single CPU.
    pub wakeup_cross_cpu_ns: Option<Spread>,
    /// The CPUs used: the same-CPU test ran on the first, the cross-CPU test on both.
    pub cpus: Vec<u32>,
}

/// Bytes crossing from one CPU to another through memory, as a stream's payload does between
/// a sender and a receiver on different CPUs, with no kernel in the path: a writer thread
/// pinned to `from_cpu` copies `chunk_bytes` chunks from its own cached 1 MiB source into a
/// ring of `ring_bytes`; a reader pinned to `to_cpu` copies each out into its own buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CrossCpuTransfer {
    /// The writer's CPU.
    pub from_cpu: u32,
    /// The reader's CPU.
    pub to_cpu: u32,
    /// Bytes of the ring between them.
    pub ring_bytes: u64,
    /// Bytes per chunk.
    pub chunk_bytes: u64,
    /// Bytes the reader copied out per second (each byte counted once), over the batches.
    /// On a virtual machine the spread shows the host moving the vCPUs.
    pub bytes_per_s: Spread,
}

/// The loopback TCP ceiling: a short stream test against the embedded server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopbackCeiling {
    /// Payload bits per second read by the receiver (the test's
    /// `receiver_throughput_bps`).
    pub throughput_bps: f64,
    /// The congestion control the data connection ran.
    pub congestion: Option<String>,
    /// Flows.
    pub flows: u32,
    /// Bytes per send and receive call.
    pub msg_bytes: u32,
    /// Measured window asked for, milliseconds.
    pub duration_ms: u64,
    /// Warm-up before it, milliseconds.
    pub warmup_ms: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
}

/// Something `wirebench limits` could not measure (`code` + `params` in JSON; the printer
/// says it in words).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "code", content = "params", rename_all = "snake_case")]
pub enum LimitsNote {
    /// A buffer size was skipped: its buffers would need more than half the available
    /// memory.
    MemoryTooLarge {
        /// The buffer size.
        buffer_bytes: u64,
        /// The threads it would have run on.
        threads: u32,
        /// Bytes the buffers need (source and destination per thread).
        needed_bytes: u64,
        /// `MemAvailable`, bytes.
        available_bytes: u64,
    },
    /// A thread could not be pinned to its CPU.
    PinFailed {
        /// The CPU.
        cpu: u32,
        /// The error.
        error: String,
    },
    /// A single CPU: there is no cross-CPU wake-up to measure.
    SingleCpu,
    /// A probe failed.
    ProbeFailed {
        /// Which probe (`memory`, `syscall`, `wakeup`, `loopback`).
        probe: String,
        /// Why.
        error: String,
    },
    /// The boot id could not be read, so the result cannot be cached.
    NoBootId,
}

/// One timed batch of a probe: `count` units (bytes, calls, round trips) in `elapsed_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Batch {
    /// Units done.
    pub count: u64,
    /// Time they took, nanoseconds.
    pub elapsed_ns: u64,
}

/// The raw memory batches at one buffer size (engine output, analysis input).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemorySamples {
    /// Bytes per call.
    pub buffer_bytes: u64,
    /// One thread copying: bytes copied per batch.
    pub copy_one: Vec<Batch>,
    /// All threads copying: bytes copied by all threads, and the time until the slowest
    /// thread finished.
    pub copy_all: Vec<Batch>,
    /// One thread checksumming: bytes summed per batch.
    pub checksum: Vec<Batch>,
    /// One thread copying into a destination placed 16 bytes after the source modulo a page
    /// (the unlucky placement): bytes copied per batch.
    pub copy_unlucky: Vec<Batch>,
}

/// Everything the probes counted and timed (engine output, analysis input).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitsSamples {
    /// Memory batches per buffer size, ascending (sizes skipped entirely are absent).
    pub memory: Vec<MemorySamples>,
    /// The CPUs the all-threads memory batches ran on.
    pub cpus_used: Vec<u32>,
    /// The system call timed.
    pub syscall_name: String,
    /// System call batches: `count` calls.
    pub syscall: Vec<Batch>,
    /// Calls per system call batch.
    pub syscall_calls_per_batch: u64,
    /// How the ping-pong threads wake each other.
    pub wakeup_mechanism: String,
    /// Same-CPU ping-pong batches: `count` round trips.
    pub wakeup_same_cpu: Vec<Batch>,
    /// Cross-CPU ping-pong batches: `count` round trips (empty on one CPU).
    pub wakeup_cross_cpu: Vec<Batch>,
    /// The CPUs of the ping-pong: the same-CPU test ran on the first.
    pub wakeup_cpus: Vec<u32>,
    /// Cross-CPU transfer batches: `count` bytes (empty on one CPU).
    pub transfer: Vec<Batch>,
    /// The transfer's writer and reader CPUs.
    pub transfer_cpus: Vec<u32>,
    /// The transfer's ring and chunk, bytes.
    pub transfer_ring_chunk_bytes: (u64, u64),
    /// What could not be measured.
    pub notes: Vec<LimitsNote>,
}

/// A stream result's throughput against this machine's copy bandwidth, from the limits
/// cached for this boot (a stream test never measures limits itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhysicalContext {
    /// When the limits were measured, Unix milliseconds.
    pub limits_started_unix_ms: u64,
    /// The same as ISO 8601 UTC.
    pub limits_started_utc: String,
    /// The boot they were measured in (this test's client boot).
    pub boot_id: String,
    /// The test's message size: bytes per send call.
    pub msg_bytes: u64,
    /// The measured buffer size nearest it (on a log scale).
    pub buffer_bytes: u64,
    /// Threads of the copy bandwidth used: 1 for one flow in one direction, else the
    /// all-threads figure's thread count.
    pub copy_threads: u32,
    /// That copy bandwidth (median), bytes copied per second.
    pub copy_bytes_per_s: f64,
    /// Payload bytes read per second by the receivers, all directions (the mean over the
    /// completed runs).
    pub payload_bytes_per_s: f64,
    /// Copies of a payload byte made on this machine: 1 at a sending end that copies
    /// (`copy`, `uring`, or a zero-copy send the kernel copied after all), 1 at a receiving
    /// end that copies (`copy`, `uring`, or a zero-copy receive that mostly copied), 0 at
    /// the other ends and at ends on another machine; averaged over the directions by
    /// payload.
    pub copies_per_byte: f64,
    /// `payload_bytes_per_s × copies_per_byte`.
    pub copied_bytes_per_s: f64,
    /// `copied_bytes_per_s / copy_bytes_per_s × 100`.
    pub copy_bandwidth_pct: f64,
}

/// The JSON Schema of [`LimitsResult`], pretty-printed with a final newline: the content of
/// `docs/limits.schema.json`.
pub fn limits_schema_json() -> String {
    let schema = schemars::schema_for!(LimitsResult);
    let mut s =
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Why a JSON document could not be read as a [`LimitsResult`].
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    /// Not JSON, or not a `LimitsResult`.
    #[error("not a wirebench limits result: {0}")]
    Json(#[from] serde_json::Error),
    /// A `schema_version` (or `kind`) this build does not read.
    #[error(
        "limits schema version {found:?} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// The version found (`None` if missing or not a limits document).
        found: Option<u64>,
        /// The version this build reads.
        supported: u32,
    },
}

impl LimitsResult {
    /// Parse a JSON [`LimitsResult`], checking its `kind` and `schema_version` first.
    ///
    /// # Errors
    ///
    /// [`LimitsError::Json`] if the text is not JSON or not a `LimitsResult`;
    /// [`LimitsError::UnsupportedVersion`] if it is not a limits document of
    /// [`LIMITS_SCHEMA_VERSION`].
    pub fn from_json(text: &str) -> Result<LimitsResult, LimitsError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        let found = value
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
            .filter(|_| value.get("kind").and_then(serde_json::Value::as_str) == Some("limits"));
        if found != Some(u64::from(LIMITS_SCHEMA_VERSION)) {
            return Err(LimitsError::UnsupportedVersion {
                found,
                supported: LIMITS_SCHEMA_VERSION,
            });
        }
        Ok(serde_json::from_value(value)?)
    }

    /// The memory row whose buffer size is nearest `bytes` on a log scale (the smaller on a
    /// tie), among the rows with a copy figure.
    pub fn nearest_row(&self, bytes: u64) -> Option<&MemoryRow> {
        let target = (bytes.max(1) as f64).log2();
        self.memory
            .iter()
            .filter(|r| r.copy_one_thread_bytes_per_s.is_some())
            .min_by(|a, b| {
                let da = ((a.buffer_bytes.max(1) as f64).log2() - target).abs();
                let db = ((b.buffer_bytes.max(1) as f64).log2() - target).abs();
                da.total_cmp(&db).then(a.buffer_bytes.cmp(&b.buffer_bytes))
            })
    }
}
