//! Where one end's CPUs spent the measurement window: a sampling profile classified into
//! categories close to Trapeze's fig. 5 (copy, checksum, memory management, interrupts,
//! driver, TCP, IP and below, socket/syscall layer, scheduler, locks, wirebench's own code,
//! the profiler's own work, other, idle).
//!
//! A [`ProfileReport`] is bounded in size: [`MAX_TOP_SYMBOLS`] symbols per category, each at
//! most [`MAX_SYMBOL_BYTES`] bytes, and one [`CpuProfile`] per sampled CPU (at most
//! [`MAX_PROFILE_CPUS`]). The classification table itself lives in `wirebench-profile` and
//! is documented in `docs/PROFILE.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::side::HostRole;

/// `--profile`'s sampling frequency, Hz per CPU: each sample interrupts the CPU, and 4 kHz
/// cost 14–21 % of a CPU-bound stream on 2-vCPU VMs (docs/PROFILE.md, *Overhead*). A prime
/// rate, so that its period is no whole number of kernel ticks (`CONFIG_HZ` 100, 250, 300 or
/// 1000) nor of a round-millisecond timer: at 250 Hz on a `CONFIG_HZ=250` kernel every
/// sample fell at one phase of the tick, and two profiles of one CPU over one window
/// disagreed by up to 45 points (docs/PROFILE.md, *Rate*).
pub const DEFAULT_PROFILE_HZ: u32 = 241;
/// Top symbols kept per category.
pub const MAX_TOP_SYMBOLS: usize = 10;
/// The longest symbol string kept, bytes (longer ones are cut at a char boundary).
pub const MAX_SYMBOL_BYTES: usize = 200;
/// The most CPUs a profile covers.
pub const MAX_PROFILE_CPUS: usize = 1024;

/// A category of CPU time.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProfileCategory {
    /// Data movement: copies between user buffers and socket buffers.
    Copy,
    /// Internet checksum computation (and copy-with-checksum).
    Checksum,
    /// Page and skb allocation and freeing, slab caches, page tables, remapping, faults,
    /// memory-cgroup accounting.
    MemoryManagement,
    /// Interrupt and softirq entry and dispatch (irq entry, `__do_softirq`,
    /// `net_rx_action`, timer interrupts).
    Interrupts,
    /// Device drivers: veth, loopback, virtio-net and NIC transmit/receive.
    Driver,
    /// The transport layer: TCP (and UDP for UDP tests).
    Tcp,
    /// IP and the network core below it: `ip_*`, `__netif_receive_skb`, `dev_queue_xmit`,
    /// qdiscs, netfilter, GRO/GSO.
    IpAndBelow,
    /// The socket and system-call layer: `sock_*`, `__sys_*`, syscall entry and exit, VFS,
    /// epoll.
    SocketSyscall,
    /// The scheduler and wake-ups: `schedule`, `try_to_wake_up`, context switches.
    Scheduler,
    /// Locks and spinning: spin locks, mutexes, the socket lock.
    Locks,
    /// User-space samples of wirebench processes (the binary and the libraries it calls),
    /// except the profiler's own work.
    Wirebench,
    /// The profiler's own work: samples of its drain thread (`wb-perf-drain`, in any
    /// wirebench process: reading the sample rings, symbolizing and classifying), user and
    /// kernel. The sampling interrupt itself is in no sample (it lengthens what it
    /// interrupted): the result's expected sampling cost, from `wirebench limits`, covers it.
    Sampler,
    /// Everything else (other processes' user space, unclassified kernel code).
    Other,
    /// Busy CPU time no sample stands for: time of the window in which `/proc/stat` counts
    /// a sampled CPU busy but no sample was taken, because the sampling timer's interrupt
    /// did not reach the CPU (interrupts disabled, or a virtual CPU held by its
    /// hypervisor: `/proc/stat` counts the latter as `steal`, which the end's CPU figures
    /// carry and the human text sets beside this). Not classified: where it went is
    /// unknown (see [`ProfileReport::unsampled_busy_ns`]).
    Unsampled,
    /// The idle task's idle loop (halt, cpuidle), and the window's unsampled CPU time that
    /// `/proc/stat` counts idle, as the kernel does not sample halted CPUs (see
    /// [`ProfileReport::unsampled_idle_ns`]).
    Idle,
}

impl ProfileCategory {
    /// Every category, in report order.
    pub const ALL: [ProfileCategory; 15] = [
        ProfileCategory::Copy,
        ProfileCategory::Checksum,
        ProfileCategory::MemoryManagement,
        ProfileCategory::Interrupts,
        ProfileCategory::Driver,
        ProfileCategory::Tcp,
        ProfileCategory::IpAndBelow,
        ProfileCategory::SocketSyscall,
        ProfileCategory::Scheduler,
        ProfileCategory::Locks,
        ProfileCategory::Wirebench,
        ProfileCategory::Sampler,
        ProfileCategory::Other,
        ProfileCategory::Unsampled,
        ProfileCategory::Idle,
    ];

    /// The categories older results lack, by the length of their per-category lists: 14
    /// entries were recorded before `sampler` existed, 13 before `unsampled` either. Their
    /// order is [`ProfileCategory::ALL`]'s without these.
    fn missing_in_layout(len: usize) -> &'static [ProfileCategory] {
        match len {
            13 => &[ProfileCategory::Sampler, ProfileCategory::Unsampled],
            14 => &[ProfileCategory::Sampler],
            _ => &[],
        }
    }

    /// The category's position in [`ProfileCategory::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The serialized (snake_case) name, used in CSV column names.
    pub fn key(self) -> &'static str {
        match self {
            ProfileCategory::Copy => "copy",
            ProfileCategory::Checksum => "checksum",
            ProfileCategory::MemoryManagement => "memory_management",
            ProfileCategory::Interrupts => "interrupts",
            ProfileCategory::Driver => "driver",
            ProfileCategory::Tcp => "tcp",
            ProfileCategory::IpAndBelow => "ip_and_below",
            ProfileCategory::SocketSyscall => "socket_syscall",
            ProfileCategory::Scheduler => "scheduler",
            ProfileCategory::Locks => "locks",
            ProfileCategory::Wirebench => "wirebench",
            ProfileCategory::Sampler => "sampler",
            ProfileCategory::Other => "other",
            ProfileCategory::Unsampled => "unsampled",
            ProfileCategory::Idle => "idle",
        }
    }
}

/// The sampling event a profile used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileEvent {
    /// The software `cpu-clock` event: each sample stands for `period` ns of CPU time.
    CpuClock,
    /// The hardware `cycles` event: each sample stands for `period` cycles.
    Cycles,
}

/// Whether kernel symbols could be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelSymbols {
    /// `/proc/kallsyms` gave addresses.
    Resolved,
    /// `/proc/kallsyms` shows zero addresses (`kernel.kptr_restrict`, no `CAP_SYSLOG`):
    /// kernel samples are classified `other`.
    AddressesHidden,
    /// `/proc/kallsyms` could not be read.
    Unreadable,
}

/// One symbol's share of a category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolSamples {
    /// The sample's own (innermost) symbol, demangled, at most [`MAX_SYMBOL_BYTES`] bytes;
    /// `[module]` for a user library, `[unknown]` when unresolved.
    pub symbol: String,
    /// Samples whose own symbol this is, in this category.
    pub samples: u64,
}

/// One category's figures over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryProfile {
    /// The category.
    pub category: ProfileCategory,
    /// Samples classified here.
    pub samples: u64,
    /// Of those, the samples taken while a wirebench process (one running this end's
    /// executable: the client, the daemon or both) was current on the CPU: its own code and
    /// its kernel work (system calls, and softirqs that ran in its context). On a shared
    /// machine, the rest is other processes' work.
    #[serde(default)]
    pub wirebench_samples: u64,
    /// CPU time classified here, ns: samples × period for `cpu-clock` (for `cycles`, the
    /// category's share of the sampled CPUs × window); `idle` includes `unsampled_idle_ns`.
    pub cpu_ns: u64,
    /// `cpu_ns` as a percentage of the window's CPU time (window × CPUs sampled).
    pub pct: f64,
    /// The most frequent own symbols, most samples first (at most [`MAX_TOP_SYMBOLS`]).
    pub top_symbols: Vec<SymbolSamples>,
}

/// One CPU's figures: samples and CPU ns per category, in [`ProfileCategory::ALL`] order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuProfile {
    /// The CPU.
    pub cpu: u32,
    /// Samples taken on this CPU.
    pub samples: u64,
    /// Unsampled time of this CPU in the window counted as idle, ns.
    pub unsampled_idle_ns: u64,
    /// Unsampled time of this CPU in the window that `/proc/stat` counts busy, ns (the
    /// `unsampled` category).
    #[serde(default)]
    pub unsampled_busy_ns: u64,
    /// Busy samples' time on this CPU beyond what `/proc/stat` counts busy, moved to idle,
    /// ns (see [`ProfileReport::oversampled_busy_ns`]).
    #[serde(default)]
    pub oversampled_busy_ns: u64,
    /// CPU ns per category, in [`ProfileCategory::ALL`] order (15 entries; 14, without
    /// `sampler`, and 13, without `unsampled` either, in results recorded before they
    /// existed: read it with [`CpuProfile::category_ns`]); sums to the window.
    pub cpu_ns: Vec<u64>,
}

impl CpuProfile {
    /// The CPU ns of `category`, whichever layout `cpu_ns` was recorded in (0 for a category
    /// the layout did not have).
    pub fn category_ns(&self, category: ProfileCategory) -> u64 {
        let missing = ProfileCategory::missing_in_layout(self.cpu_ns.len());
        let position = ProfileCategory::ALL
            .iter()
            .filter(|c| !missing.contains(c))
            .position(|&c| c == category);
        position
            .and_then(|i| self.cpu_ns.get(i).copied())
            .unwrap_or(0)
    }
}

/// What one end's profile found over its measurement window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileReport {
    /// The event sampled.
    pub event: ProfileEvent,
    /// Samples per second per CPU asked for.
    pub freq_hz: u32,
    /// The period of one sample: ns for `cpu_clock`, cycles for `cycles`.
    pub period: u64,
    /// The CPUs sampled, ascending.
    pub cpus: Vec<u32>,
    /// From enabling the events to disabling them, ns (the measurement window, as closely
    /// as the sampler could follow it).
    pub window_ns: u64,
    /// Samples taken (all CPUs).
    pub samples: u64,
    /// Samples the kernel dropped because a ring buffer was full (`PERF_RECORD_LOST`):
    /// not classified, not counted in `samples`.
    pub lost_samples: u64,
    /// Times the kernel throttled the event.
    pub throttled: u64,
    /// CPU time of the window no sample stands for that is counted idle, ns. The
    /// unsampled time (window × CPUs − samples × period, lost samples' time included, when
    /// positive) is split per CPU by `/proc/stat` over the same window: what it counts idle
    /// beyond the idle samples is idle (the kernel does not sample a halted CPU), the rest
    /// is [`ProfileReport::unsampled_busy_ns`]. Without `/proc/stat`
    /// ([`ProfileReport::idle_from_proc_stat`] false) all of it is counted idle (see
    /// docs/PROFILE.md).
    pub unsampled_idle_ns: u64,
    /// CPU time of the window no sample stands for that `/proc/stat` counts busy, ns: the
    /// `unsampled` category.
    #[serde(default)]
    pub unsampled_busy_ns: u64,
    /// Time the busy samples stood for beyond what `/proc/stat` counts busy over the same
    /// window, counted idle instead, ns (all CPUs): a CPU that halts for tens of
    /// microseconds at a time gives no idle samples, and the samples due while it was
    /// halted are taken late, in whatever runs once it wakes. The busy categories shrink in
    /// proportion (see docs/PROFILE.md). 0 without `/proc/stat` and in results recorded
    /// before protocol version 16.
    #[serde(default)]
    pub oversampled_busy_ns: u64,
    /// Whether `/proc/stat`, read as sampling started and stopped, split the unsampled
    /// time into idle and busy (else it was all counted idle).
    #[serde(default)]
    pub idle_from_proc_stat: bool,
    /// Whether kernel symbols were resolved.
    pub kernel_symbols: KernelSymbols,
    /// Every category, in [`ProfileCategory::ALL`] order (fewer in results recorded before
    /// `sampler` and `unsampled` existed).
    pub categories: Vec<CategoryProfile>,
    /// Per CPU, ascending.
    pub per_cpu: Vec<CpuProfile>,
}

impl ProfileReport {
    /// The figures of `category`.
    pub fn category(&self, category: ProfileCategory) -> Option<&CategoryProfile> {
        self.categories.iter().find(|c| c.category == category)
    }

    /// The window's CPU time: window × CPUs sampled, ns.
    pub fn window_cpu_ns(&self) -> u64 {
        self.window_ns.saturating_mul(self.cpus.len() as u64)
    }
}

/// One category's share and cost per unit of work at one end (computed by
/// `wirebench-report`'s analysis from the end's [`ProfileReport`] and the run's figures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryCost {
    /// The category.
    pub category: ProfileCategory,
    /// Its share of the window's CPU time, %.
    pub pct: f64,
    /// Its CPU time, ns.
    pub cpu_ns: u64,
    /// CPU ns per KB (1024 bytes) the test delivered (Σ receiver window bytes, the
    /// service demand's denominator); `None` for request/response or without payload.
    pub cpu_ns_per_kb: Option<f64>,
    /// CPU ns per transaction (the client's window transactions), request/response only.
    pub cpu_ns_per_transaction: Option<f64>,
}

/// One end's profile in a run's summary: every category's cost, in
/// [`ProfileCategory::ALL`] order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndProfile {
    /// Which end.
    pub host: HostRole,
    /// Every category (fewer in results recorded before `sampler` and `unsampled`
    /// existed).
    pub categories: Vec<CategoryCost>,
}

/// A profiled result's sampling rate and its expected cost (from this machine's limits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileCost {
    /// Samples per second per CPU asked for (`--profile-hz`).
    pub freq_hz: u32,
    /// The expected cost, when `wirebench limits` measured the sampler on this boot; `None`:
    /// not measured (run `wirebench limits`).
    pub expected: Option<ExpectedProfileCost>,
}

/// The expected cost of sampling at a result's rate: the limits' cost per sample × the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedProfileCost {
    /// CPU time per sample, ns (the median of the limits' probe).
    pub ns_per_sample: f64,
    /// `ns_per_sample × freq_hz / 1e9 × 100`: percent of one CPU, per sampled CPU, that the
    /// sampling takes from the work on it.
    pub cpu_pct: f64,
    /// When the limits were measured, ISO 8601 UTC.
    pub limits_started_utc: String,
    /// The probe's own sampling frequency, Hz.
    pub probe_freq_hz: u32,
    /// The work loop's slowdown at the probe's frequency, percent (the median).
    pub probe_cost_pct: f64,
    /// The probe did not resolve the cost (some pair showed none: another process' work
    /// outweighed the sampler's), so `ns_per_sample` and `cpu_pct` are noise, not a figure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unresolved: bool,
}

/// Why an end has no profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum ProfileUnavailable {
    /// perf events not permitted: system-wide sampling needs root, `CAP_PERFMON` (or
    /// `CAP_SYS_ADMIN`) or `kernel.perf_event_paranoid` <= 0.
    NotPermitted {
        /// `kernel.perf_event_paranoid`, if readable.
        paranoid: Option<i32>,
        /// Whether the process held `CAP_PERFMON`.
        cap_perfmon: bool,
        /// Whether the process held `CAP_SYS_ADMIN`.
        cap_sys_admin: bool,
    },
    /// The server's policy does not allow profiling (`serve` without `--allow-profile`).
    RefusedByServer,
    /// The event is not supported on this machine.
    UnsupportedEvent,
    /// The frequency is above `kernel.perf_event_max_sample_rate`.
    FrequencyTooHigh {
        /// The limit, Hz, if readable.
        max_hz: Option<u32>,
    },
    /// Out of file descriptors (one per sampled CPU is needed).
    TooManyFiles,
    /// The measurement window never opened (no figures to profile).
    NoWindow,
    /// Any other failure of the sampler (mapping the ring, enabling the events, a CPU not
    /// online), with the system's words.
    Failed {
        /// What failed.
        detail: String,
    },
}

/// Cuts `s` to at most [`MAX_SYMBOL_BYTES`] bytes at a char boundary.
pub fn truncate_symbol(s: &str) -> String {
    if s.len() <= MAX_SYMBOL_BYTES {
        return s.to_owned();
    }
    let mut end = MAX_SYMBOL_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}
