//! The verdict on a run: what limited it, the evidence, what would test it, and what
//! evidence was missing. Computed by `wirebench-report`'s `analyze::verdict` from what the
//! ends measured (TCP_INFO's limited times, retransmits, per-CPU busy time, the pacing
//! asked for, the round trip); worded only by its printers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::side::HostRole;
use crate::spec::FlowDir;

/// What limited a run, as far as the evidence shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Limiter {
    /// The sender was paced (`-b`) and achieved its rate: the rate asked for is the limit.
    Pacing {
        /// Rate asked for, bits/s (all flows of the direction).
        target_bps: f64,
        /// Rate achieved at the receivers, percent of the target.
        achieved_pct: f64,
    },
    /// The senders were limited by the receiver's advertised window for this share of
    /// their busy time (TCP_INFO `tcpi_rwnd_limited` / `tcpi_busy_time`).
    ReceiveWindow {
        /// Direction.
        dir: FlowDir,
        /// Percent of the senders' busy time.
        limited_pct: f64,
        /// How busy the receiving end was, percent: its data threads' CPU time per thread
        /// that could run at once (receiving flows, at most the CPUs they could use), or,
        /// when they were pinned and used at least 30 % themselves, the busiest of their
        /// CPUs (`/proc/stat`, which counts other processes too), whichever is larger.
        /// Present when at least the verdict's threshold (60 %) and that end only
        /// received: the receiver was busy, so the window closed because it fell behind,
        /// whatever the buffer size. Absent when the receivers were mostly idle (the
        /// buffer is too small for the path) or it is not known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receiver_busy_pct: Option<f64>,
        /// The largest SO_RCVBUF of the receiving sockets at close, as the kernel reported
        /// it, bytes (absent when no receiver reported it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rcvbuf_bytes: Option<u32>,
        /// The spec left the buffers to the kernel's autotuning (no `-w`): `rcvbuf_bytes`
        /// is where autotuning stopped. It grows the buffer from what the application read
        /// per round trip, so a receiver that falls behind early can leave it small for
        /// the rest of the run.
        #[serde(default)]
        rcvbuf_autotuned: bool,
        /// The bandwidth-delay product the path needed at this rate: the receivers'
        /// throughput × the senders' median smoothed round trip, bytes (absent without the
        /// senders' round trips).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bdp_bytes: Option<u64>,
        /// The receive buffer held many times that product (`rcvbuf_bytes` ≥ 4 × `bdp_bytes`):
        /// a larger buffer cannot help; the window was full because the reader fell behind
        /// (too slow per byte, or starved of CPU: on loopback, where the round trip is
        /// microseconds, this is what a full window means).
        #[serde(default)]
        reader_behind: bool,
        /// The reader fell behind (`reader_behind`) without being busy itself
        /// (`receiver_busy_pct` absent): its threads waited on a run queue while other
        /// processes held the CPU. Present only then: the host starved the receiver.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reader_starved: Option<StarvedReader>,
    },
    /// The senders were limited by their own send buffer for this share of their busy
    /// time (`tcpi_sndbuf_limited`).
    SendBuffer {
        /// Direction.
        dir: FlowDir,
        /// Percent of the senders' busy time.
        limited_pct: f64,
    },
    /// A CPU the test used was saturated.
    Cpu {
        /// The end whose threads ran on it (`None`: both, or it cannot be told).
        host: Option<HostRole>,
        /// The CPU.
        cpu: u32,
        /// Its busy time, percent of the window.
        busy_pct: f64,
        /// Of which softirq (receive and transmit processing), percent.
        softirq_pct: f64,
        /// Of which system (kernel on behalf of a process), percent.
        system_pct: f64,
        /// Of which user, percent.
        user_pct: f64,
    },
    /// The senders had no data in flight (`tcpi_busy_time` below the window) for this share
    /// of the window: they waited for the application or the peer without TCP calling it
    /// window- or buffer-limited (small buffers on loopback do this).
    SenderIdle {
        /// Direction.
        dir: FlowDir,
        /// Percent of flows × window with nothing in flight.
        idle_pct: f64,
    },
    /// Segments were retransmitted while no window, buffer or CPU limit showed: the path
    /// dropped data and congestion control held the senders back.
    Loss {
        /// Direction.
        dir: FlowDir,
        /// Retransmitted segments the receivers did not report back as duplicates (D-SACK):
        /// those whose originals were, as far as TCP knows, lost.
        retransmits: u64,
    },
    /// Request/response in closed loop: each flow waits a round trip per transaction, so
    /// transactions/s ≈ flows × burst / round trip.
    RoundTrip {
        /// Mean round trip, nanoseconds.
        rtt_mean_ns: f64,
        /// flows × burst / mean round trip, transactions/s: what the round trip allows.
        allowed_per_s: f64,
        /// Transactions/s measured.
        measured_per_s: f64,
    },
    /// The path between the ends: the senders were held back by neither window, buffer nor
    /// CPU, and their smoothed round trip rose above its minimum (TCP_INFO): a queue formed
    /// at a bottleneck on the path (a slower link, a shaper), so the path delivered what it
    /// could carry.
    Path {
        /// Direction.
        dir: FlowDir,
        /// The rate the path delivered, payload bits per second read by the receivers: the
        /// estimate of the bottleneck's rate.
        throughput_bps: f64,
        /// The senders' smallest minimum round trip (`tcpi_min_rtt`), nanoseconds: the path
        /// without a queue.
        min_rtt_ns: u64,
        /// The senders' median smoothed round trip over the window (`tcpi_rtt` at each
        /// interval end), nanoseconds: the path with the queue.
        srtt_ns: u64,
    },
    /// The CPU the test's threads needed was held by other processes: the test's own threads
    /// used little of it, waited on its run queue, and other processes kept it busy. The
    /// host was busy, the test was not CPU-bound.
    BusyHost {
        /// The end whose threads waited (`None`: both, or it cannot be told).
        host: Option<HostRole>,
        /// The busiest CPU those threads could run on.
        cpu: u32,
        /// Its busy time, percent of the window.
        busy_pct: f64,
        /// That end's data threads' CPU time, percent of one CPU.
        threads_util_pct_of_one_cpu: f64,
        /// That end's data threads' summed run-queue wait, percent of the window.
        threads_run_delay_pct: f64,
        /// Other processes' CPU time over the window, percent of one CPU.
        other_util_pct_of_one_cpu: f64,
    },
    /// The hypervisor took the virtual CPU the test needed: the CPU was saturated, the
    /// test's threads worked or waited there, and for a large share of the window (`steal`
    /// in `/proc/stat`) the host ran something else on it while this guest had work to
    /// run. The test got that much less than a CPU.
    HostSteal {
        /// The end whose threads could run on it (`None`: both, or it cannot be told).
        host: Option<HostRole>,
        /// The CPU.
        cpu: u32,
        /// Its busy time, percent of the window (stolen time included).
        busy_pct: f64,
        /// Of which stolen by the hypervisor, percent of the window.
        steal_pct: f64,
        /// The data threads' CPU time of the end(s) that could run there, percent of one
        /// CPU (the most of them).
        threads_util_pct_of_one_cpu: f64,
    },
    /// This machine's memory copy bandwidth (`wirebench limits`): the payload times the
    /// copies made of it on this machine reached most of the bandwidth measured at the
    /// call size.
    CopyBandwidth {
        /// Payload × copies, bytes copied per second.
        copied_bytes_per_s: f64,
        /// The copy bandwidth at the call size, bytes per second.
        copy_bytes_per_s: f64,
        /// `copied_bytes_per_s / copy_bytes_per_s × 100`.
        copy_bandwidth_pct: f64,
    },
    /// This machine's loopback TCP ceiling (`wirebench limits`): both ends on this kernel
    /// and the throughput reached most of the ceiling measured there.
    LoopbackCeiling {
        /// Payload bits per second read by the receivers, all directions.
        throughput_bps: f64,
        /// The ceiling, payload bits per second.
        ceiling_bps: f64,
        /// `throughput_bps / ceiling_bps × 100`.
        ceiling_pct: f64,
    },
    /// No single limit shows in the evidence.
    Undetermined,
}

/// A receiving end whose light threads waited for a CPU that other processes held
/// ([`Limiter::ReceiveWindow`]'s `reader_starved`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StarvedReader {
    /// The receiving end.
    pub host: HostRole,
    /// Its data threads' CPU time, percent of one CPU.
    pub threads_util_pct_of_one_cpu: f64,
    /// Its data threads' summed run-queue wait (wake-up to running included), percent of
    /// the window.
    pub threads_run_delay_pct: f64,
    /// Other processes' CPU time on its host over the window, percent of one CPU.
    pub other_util_pct_of_one_cpu: f64,
}

/// A fact the verdict rests on (also listed when it is not the limit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// The senders' TCP_INFO limited times for a direction.
    SenderLimits {
        /// Direction.
        dir: FlowDir,
        /// Sum of the senders' `tcpi_busy_time`, microseconds.
        busy_us: u64,
        /// Percent of it limited by the receive window.
        rwnd_limited_pct: f64,
        /// Percent of it limited by the send buffer.
        sndbuf_limited_pct: f64,
    },
    /// Retransmitted segments in a direction.
    Retransmits {
        /// Direction.
        dir: FlowDir,
        /// Segments.
        retransmits: u64,
        /// Of those, the segments the receivers reported back as received twice (D-SACK):
        /// the originals had arrived (reordering, or a timer that fired early: not loss).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dsack_segments: Option<u64>,
    },
    /// The busiest of the CPUs an end's data threads could run on (the busiest of all, in
    /// results recorded before the end kept which CPUs it could use).
    BusiestCpu {
        /// The end that measured it.
        host: HostRole,
        /// The CPU.
        cpu: u32,
        /// Busy percent.
        busy_pct: f64,
        /// Softirq percent.
        softirq_pct: f64,
        /// The CPUs that end's data threads used.
        cpus_used: Vec<u32>,
        /// That end's data threads' CPU time, percent of one CPU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threads_util_pct_of_one_cpu: Option<f64>,
        /// That end's data threads' summed run-queue wait (wake-up to running included),
        /// percent of the window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threads_run_delay_pct: Option<f64>,
        /// Of its busy time, the time the hypervisor ran something else on this virtual CPU
        /// (`steal` in `/proc/stat`), percent of the window (absent in results recorded
        /// before it was kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steal_pct: Option<f64>,
    },
    /// The largest non-idle category of an end's profile (`--profile`).
    ProfileTop {
        /// The end.
        host: HostRole,
        /// The category.
        category: crate::profile::ProfileCategory,
        /// Its share of the end's sampled CPU time, percent.
        pct: f64,
    },
    /// Payload × copies against this machine's copy bandwidth at the call size (`wirebench
    /// limits`, cached for this boot; the result's `physical` context has the details).
    CopyBandwidth {
        /// Payload bytes read per second by the receivers, all directions.
        payload_bytes_per_s: f64,
        /// Copies of a payload byte made on this machine (averaged over directions).
        copies_per_byte: f64,
        /// The copy bandwidth used, bytes per second.
        copy_bytes_per_s: f64,
        /// The buffer size it was measured at (the one nearest the call size), bytes.
        buffer_bytes: u64,
        /// Threads of that bandwidth figure.
        copy_threads: u32,
        /// payload × copies / copy bandwidth × 100.
        copy_bandwidth_pct: f64,
        /// Between the verdict's thresholds: the copy bandwidth is the limit. A run above 100 %
        /// of it shows the figure was measured low: never the limit.
        limiting: bool,
        /// How the analysis read the run against the copy bandwidth (absent in older records).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reading: Option<CeilingReading>,
    },
    /// When and under what load this machine's limits (`wirebench limits`, cached for this
    /// boot) were measured: the figures the copy-bandwidth and loopback-ceiling evidence use.
    LimitsMeasured {
        /// When the measurement started, ISO 8601 UTC.
        started_utc: String,
        /// The 1-minute load average when it started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load_average_1m: Option<f64>,
        /// Other processes' CPU time during the measurement, percent of all CPUs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        other_busy_pct: Option<f64>,
        /// The measurement was taken on a busy machine: its figures are likely low.
        #[serde(default)]
        busy: bool,
    },
    /// Other processes than wirebench's kept an end's host busy over the window.
    OtherProcesses {
        /// The end that measured it.
        host: HostRole,
        /// Their CPU time, percent of one CPU (summed over the processes).
        util_pct_of_one_cpu: f64,
        /// The busiest of them, most CPU time first.
        top: Vec<crate::side::ProcessCpu>,
    },
    /// The senders' round trips: a rise of the smoothed round trip above its minimum is a
    /// queue on the path.
    RoundTrips {
        /// Direction.
        dir: FlowDir,
        /// The senders' smallest minimum round trip (`tcpi_min_rtt`), nanoseconds.
        min_rtt_ns: u64,
        /// The senders' median smoothed round trip over the window, nanoseconds.
        srtt_ns: u64,
    },
    /// The throughput against this machine's loopback TCP ceiling (`wirebench limits`),
    /// for runs whose ends share one kernel.
    LoopbackCeiling {
        /// Payload bits per second read by the receivers, all directions.
        throughput_bps: f64,
        /// The ceiling, payload bits per second.
        ceiling_bps: f64,
        /// `throughput_bps / ceiling_bps × 100`.
        ceiling_pct: f64,
        /// The congestion control the ceiling was measured with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ceiling_congestion: Option<String>,
        /// The congestion control this run's data sockets ran (the first end that said).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        congestion: Option<String>,
        /// Between the verdict's thresholds, with the same congestion control: the ceiling is
        /// the limit. A run well above the ceiling, or under another congestion control, is
        /// not comparable with it.
        limiting: bool,
        /// How the analysis read the run against the ceiling (absent in older records,
        /// whose `limiting` alone says whether it was the limit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reading: Option<CeilingReading>,
    },
    /// The pacing asked for.
    Paced {
        /// Target, bits/s (all flows).
        target_bps: f64,
        /// Achieved at the receivers, bits/s.
        achieved_bps: f64,
    },
    /// The request/response flows busy-polled (`rr --busy-poll`): their CPUs are busy by
    /// design, so a saturated CPU is not taken for the limit.
    BusyPolling {
        /// SO_BUSY_POLL asked for, microseconds (0: not set).
        so_busy_poll_us: u32,
    },
}

/// How a run compares with one of this machine's limits ([`Evidence::LoopbackCeiling`],
/// [`Evidence::CopyBandwidth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CeilingReading {
    /// Within the verdict's band around the ceiling, same congestion control: the limit.
    Reached,
    /// Below the band: the ceiling is not what held this run back.
    Below,
    /// Above the limit (over 100 % of it): the figure was measured low (under load, say) and
    /// should be measured again (`wirebench limits --refresh`); never the limit.
    MeasuredLow,
    /// The ceiling was measured under another congestion control than this run's.
    NotComparable,
}

/// An experiment that would test the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Suggestion {
    /// Larger socket buffers (`-w`), or `sweep --window` to find the knee.
    LargerWindow,
    /// Smaller fixed socket buffers (`-w 256K`, or `sweep --window`): many flows whose
    /// autotuned buffers add up to more than caches hold keep data waiting long enough to
    /// leave them, so a busy receiver copies it cold.
    SmallerWindow,
    /// `--notsent-lowat 16K` (TCP_NOTSENT_LOWAT): many flows whose autotuned send buffers
    /// add up to more than caches hold queue data the window holds back in kernel memory,
    /// where it goes cold before the receiver copies it.
    NotsentLowat,
    /// `--profile`: where the saturated CPU's time goes.
    Profile,
    /// Spread the ends over CPUs (`-A`, a study over `placement`).
    Placement,
    /// A zero-copy path (`--send-path sendfile|zerocopy`, `--recv-path discard`).
    ZeroCopy,
    /// `rr --busy-poll`: spin instead of sleeping, to see how much of the round trip is
    /// wake-up cost.
    BusyPoll,
    /// More flows (`-P`).
    MoreFlows,
    /// A higher rate, or unpaced (`-b 0`).
    HigherRate,
    /// More transactions in flight (`--burst`) or flows.
    MoreInFlight,
    /// Look at the path's drops (a study with `loss`, interface counters, `ss -ti`).
    PathLoss,
    /// A receiver that costs less per byte (`--recv-path discard|splice`, `--recv-size`,
    /// another CPU with `-A`): a busy receiver that falls behind closes the window.
    CheaperReceiver,
    /// A quieter host, or CPUs of the test's own (`-A` away from the busy ones): other
    /// processes held the CPUs the test waited for.
    QuietHost,
    /// A virtual machine whose CPUs the hypervisor does not share (dedicated vCPUs, a less
    /// contended host or instance type), or a bare-metal host: the host took the test's CPU.
    DedicatedCpus,
    /// `wirebench limits --refresh`: a cached limit the run exceeded was measured low.
    RefreshLimits,
    /// Look at the path's bottleneck (its links' rates, shapers, `tc -s qdisc`): the path
    /// carried what it could.
    PathBottleneck,
}

/// Evidence the verdict could not use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    /// The senders reported no TCP_INFO busy/limited times (older kernel, or no sender
    /// report).
    SenderLimitedTimes,
    /// The server did not report (no server CPU, no server-side TCP_INFO).
    ServerReport,
    /// CPU was not measured at an end.
    Cpu,
    /// No profile (`--profile`): the verdict cannot say where a CPU's time went.
    Profile,
    /// This machine's physical limits: `wirebench limits` has not been run on this boot,
    /// so the verdict cannot say how near the copy bandwidth or the loopback ceiling the
    /// run came.
    Limits,
}

/// The verdict on one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// What limited the run.
    pub limiter: Limiter,
    /// The facts it rests on.
    pub evidence: Vec<Evidence>,
    /// Experiments that would test it.
    pub suggestions: Vec<Suggestion>,
    /// Evidence that was not available.
    pub missing: Vec<Missing>,
}
