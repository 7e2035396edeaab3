//! What one end of a test measured: the body of the `results` message and half of a
//! `RunResult`.
//!
//! Every field names its unit. Times are nanoseconds relative to that end's own start instant
//! (the moment it began its engine), on that end's monotonic clock. A [`SideReport`] carries
//! what every workload shares (status, CPU, environment, warnings, engine) and one
//! [`SideData`] variant with the workload's own counts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::cpu::SystemCpuUtil;

use crate::abort::{AbortReason, EngineKind};
use crate::profile::ProfileReport;
use crate::rr::RrSide;
use crate::spec::{FlowDir, RecvPath, RecvWait, SendPath};
use crate::udp::UdpSide;
use crate::warning::{FallbackReason, FlowError, Warning};

/// Which end of the test a report comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostRole {
    /// The end that ran the client command.
    Client,
    /// The daemon.
    Server,
}

impl HostRole {
    /// Whether this end sends on a flow carried in direction `dir`.
    pub fn sends(self, dir: FlowDir) -> bool {
        matches!(
            (self, dir),
            (HostRole::Client, FlowDir::ClientToServer)
                | (HostRole::Server, FlowDir::ServerToClient)
        )
    }

    /// This end's role on a flow carried in direction `dir`.
    pub fn role(self, dir: FlowDir) -> Role {
        if self.sends(dir) {
            Role::Sender
        } else {
            Role::Receiver
        }
    }
}

/// What a flow does at one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes payload.
    Sender,
    /// Reads payload.
    Receiver,
}

/// A span on one end's clock, ns after that end's start: `[start_ns, end_ns]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Span {
    /// Start, ns after the end's start.
    pub start_ns: u64,
    /// End, ns after the end's start.
    pub end_ns: u64,
}

impl Span {
    /// `end − start`, ns (0 if the span is reversed).
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// True if `t_ns` lies in `[start, end)`.
    pub fn contains(&self, t_ns: u64) -> bool {
        t_ns >= self.start_ns && t_ns < self.end_ns
    }
}

/// The data path an end used for a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathUsed {
    /// A sender's path.
    Send(SendPath),
    /// A receiver's path.
    Recv(RecvPath),
}

impl PathUsed {
    /// The path's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PathUsed::Send(p) => p.as_str(),
            PathUsed::Recv(p) => p.as_str(),
        }
    }
}

/// Counts and timings of one TCP stream flow at one end.
///
/// The measurement window opens at the end of warm-up. A sender's window closes at the stop
/// instant (when it stops writing); a receiver's closes when the last byte arrives (EOF), so
/// bytes in flight at the stop are counted by the receiver inside its window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSide {
    /// Flow id (0-based, as in `TestSpec::flow_dirs`).
    pub flow: u32,
    /// Which way this flow's payload moves.
    pub dir: FlowDir,
    /// What this end does on the flow.
    pub role: Role,
    /// Bytes written (sender) or read (receiver) over the whole test, warm-up included.
    pub total_bytes: u64,
    /// Bytes written or read inside the measurement window.
    pub window_bytes: u64,
    /// The measurement window.
    pub window: Span,
    /// The socket and its TCP state just before close.
    pub socket: SocketFacts,
    /// Why the flow ended early, if it did.
    pub error: Option<FlowError>,
    /// The data path this end used for the flow.
    pub path: PathUsed,
    /// Why the requested path was not used (this end fell back to copy).
    pub path_fallback: Option<FallbackReason>,
    /// Zero-copy accounting of the path used: the send fields for `MSG_ZEROCOPY` and io_uring
    /// `SEND_ZC` senders, the receive fields for `TCP_ZEROCOPY_RECEIVE` receivers; `None` for
    /// the other paths.
    pub zerocopy: Option<ZeroCopyStats>,
    /// With `verify`: payload bytes this receiver checked and bytes that differed.
    pub verify: Option<VerifyCounts>,
    /// How this receiving flow waited for data; `None` for senders, for the epoll engine's
    /// receivers (their worker waits for them: [`StreamSide::worker_waits`]) and for the
    /// `zerocopy` and `uring` receive paths, which wait their own way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_wait: Option<RecvWaitStats>,
}

/// What an end read from a data socket before closing it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SocketFacts {
    /// This end's address and port (`ip:port`).
    pub local: Option<String>,
    /// The other end's address and port, as this end sees it.
    pub peer: Option<String>,
    /// Effective SO_SNDBUF as reported by the kernel (it doubles the request), bytes.
    pub sndbuf_bytes: Option<u32>,
    /// Effective SO_RCVBUF as reported by the kernel, bytes.
    pub rcvbuf_bytes: Option<u32>,
    /// Congestion control in use on this connection (getsockopt TCP_CONGESTION).
    pub congestion: Option<String>,
    /// Path MTU seen by this socket (IP_MTU), bytes.
    pub pmtu_bytes: Option<u32>,
    /// TCP_INFO read just before the connection was closed.
    pub tcp_info: Option<TcpInfoReport>,
    /// The socket's own TCP_NOTSENT_LOWAT, as the kernel reads it back, bytes; absent when
    /// the socket has none (the namespace's `net.ipv4.tcp_notsent_lowat` then applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_lowat_bytes: Option<u32>,
}

/// Payload verification counts of one receiving flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyCounts {
    /// Payload bytes checked against the expected content.
    pub verified_bytes: u64,
    /// Bytes that differed (the flow's error names the first mismatching offset).
    pub mismatched_bytes: u64,
}

/// Zero-copy accounting of one flow at one end (or, in a summary, both ends joined: the send
/// fields from the sender, the receive fields from the receiver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZeroCopyStats {
    /// Zero-copy sends issued (`MSG_ZEROCOPY` sends or io_uring `SEND_ZC` operations that
    /// queued data); each completes exactly once.
    pub sends: u64,
    /// Completed sends whose pages went out without a copy.
    pub sends_completed_zerocopy: u64,
    /// Completed sends the kernel copied after all (always the case over loopback).
    pub sends_completed_copied: u64,
    /// `TCP_ZEROCOPY_RECEIVE`: payload bytes mapped into the receiver.
    pub bytes_mapped: u64,
    /// `TCP_ZEROCOPY_RECEIVE`: payload bytes that could not be mapped and were copied.
    pub bytes_copied: u64,
}

impl ZeroCopyStats {
    /// Add `o` field by field (saturating: the counts may come from a peer).
    pub fn add(&mut self, o: &ZeroCopyStats) {
        self.sends = self.sends.saturating_add(o.sends);
        self.sends_completed_zerocopy = self
            .sends_completed_zerocopy
            .saturating_add(o.sends_completed_zerocopy);
        self.sends_completed_copied = self
            .sends_completed_copied
            .saturating_add(o.sends_completed_copied);
        self.bytes_mapped = self.bytes_mapped.saturating_add(o.bytes_mapped);
        self.bytes_copied = self.bytes_copied.saturating_add(o.bytes_copied);
    }
}

/// How one receiving stream flow waited for data (`stream --recv-wait`), counted by the
/// flow's thread; or how one epoll worker waited for its flows (`epoll_workers` 1: see
/// [`StreamSide::worker_waits`]); in a direction's summary, summed over its flows and the
/// workers of the end that received it. Counted over the whole test (warm-up, the
/// measurement window and the drain), not only the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecvWaitStats {
    /// The strategy asked for.
    pub asked: RecvWait,
    /// Receive calls made (an epoll worker: on all its receiving flows).
    pub recv_calls: u64,
    /// Zero-timeout checks that found nothing to read: `poll`s of the flow's socket, or
    /// an epoll worker's `epoll_wait`s that returned no event.
    pub empty_polls: u64,
    /// Naps taken (each a sleep of [`NAP_US`](crate::spec::NAP_US) µs asked of the thread's timer).
    pub naps: u64,
    /// Time spent in those naps, nanoseconds of the monotonic clock (the timer's slack
    /// included).
    pub nap_ns: u64,
    /// Waits that blocked with nothing found to read, after the naps or the spin ran out:
    /// receive calls, or an epoll worker's `epoll_wait`s. `block`, which never checks,
    /// counts none.
    pub blocking_waits: u64,
    /// Waits `auto` made blocking without checking, because the socket's receive buffer
    /// (an epoll worker: the sum of its receiving flows' buffers) was below
    /// [`NAP_MIN_RCVBUF_BYTES`](crate::spec::NAP_MIN_RCVBUF_BYTES): receive calls, or an
    /// epoll worker's `epoll_wait`s.
    pub small_buffer_calls: u64,
    /// Waits `auto` made blocking without checking, because the receive calls were larger
    /// than [`NAP_MAX_CALL_BYTES`](crate::spec::NAP_MAX_CALL_BYTES): receive calls, or an
    /// epoll worker's `epoll_wait`s.
    #[serde(default)]
    pub large_calls: u64,
    /// The epoll workers whose waits these are: 0 when each receiving flow's own thread
    /// waited on its socket.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoll_workers: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RecvWaitStats {
    /// Add `o`'s counts (`asked` stays; saturating: the counts may come from a peer).
    pub fn add(&mut self, o: &RecvWaitStats) {
        self.recv_calls = self.recv_calls.saturating_add(o.recv_calls);
        self.empty_polls = self.empty_polls.saturating_add(o.empty_polls);
        self.naps = self.naps.saturating_add(o.naps);
        self.nap_ns = self.nap_ns.saturating_add(o.nap_ns);
        self.blocking_waits = self.blocking_waits.saturating_add(o.blocking_waits);
        self.small_buffer_calls = self.small_buffer_calls.saturating_add(o.small_buffer_calls);
        self.large_calls = self.large_calls.saturating_add(o.large_calls);
        self.epoll_workers = self.epoll_workers.saturating_add(o.epoll_workers);
    }
}

/// Selected TCP_INFO fields of one connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpInfoReport {
    /// Segments retransmitted over the connection's life (tcpi_total_retrans).
    pub retransmits_total: u32,
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// RTT variance, microseconds.
    pub rttvar_us: u32,
    /// Minimum RTT seen, microseconds (kernel 4.6+).
    pub min_rtt_us: Option<u32>,
    /// Congestion window, segments.
    pub snd_cwnd_segments: u32,
    /// Sender MSS, bytes.
    pub snd_mss_bytes: u32,
    /// Receiver MSS estimate, bytes.
    pub rcv_mss_bytes: u32,
    /// Path MTU as TCP sees it, bytes.
    pub pmtu_bytes: u32,
    /// Most recent delivery-rate estimate, bits per second (kernel 4.9+).
    pub delivery_rate_bps: Option<u64>,
    /// Pacing rate, bits per second (`tcpi_pacing_rate` × 8); `None` when unlimited or not
    /// reported.
    #[serde(default)]
    pub pacing_rate_bps: Option<u64>,
    /// Bytes acknowledged by the peer (kernel 4.1+).
    pub bytes_acked: Option<u64>,
    /// Bytes received from the peer (kernel 4.1+).
    pub bytes_received: Option<u64>,
    /// Time the connection had data to send, microseconds (tcpi_busy_time, kernel 4.10+).
    pub busy_us: Option<u64>,
    /// Time the sender was limited by the receive window, microseconds (kernel 4.10+).
    pub rwnd_limited_us: Option<u64>,
    /// Time the sender was limited by its send buffer, microseconds (kernel 4.10+).
    pub sndbuf_limited_us: Option<u64>,
    /// Segments the receiver reported back as received twice (D-SACK, `tcpi_dsack_dups`):
    /// retransmissions of segments that had arrived (reordering, or a loss-probe or
    /// retransmit timer that fired early: not loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_dups: Option<u32>,
}

/// One stream interval sample: what this end moved between two sampling instants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ByteInterval {
    /// 0-based index.
    pub index: u32,
    /// The interval.
    pub span: Span,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Bytes moved in the interval, per flow.
    pub flows: Vec<FlowBytes>,
    /// TCP_INFO of each sending flow at this end, read by the end's sampling thread at the
    /// interval's end (never on the data path); empty at an end that sends nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp: Vec<FlowTcpSample>,
}

/// TCP_INFO of one sending flow, read once at the end of an interval by the end's sampling
/// thread (a `getsockopt` on the flow's socket, beside the data thread). The kernel's own
/// units: segments, bytes, microseconds; the analysis converts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowTcpSample {
    /// Flow id.
    pub flow: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub cwnd_segments: u32,
    /// Sender MSS, bytes (`tcpi_snd_mss`); `cwnd_segments × mss_bytes` is the window in
    /// bytes.
    pub mss_bytes: u32,
    /// Smoothed round-trip time, microseconds (`tcpi_rtt`).
    pub srtt_us: u32,
    /// Round-trip time variance, microseconds (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Segments retransmitted since the connection opened (`tcpi_total_retrans`).
    pub retransmits_total: u32,
    /// The kernel's delivery-rate estimate, bits per second (`tcpi_delivery_rate` × 8).
    pub delivery_rate_bps: Option<u64>,
    /// The socket's pacing rate, bits per second (`tcpi_pacing_rate` × 8); `None` when the
    /// kernel reports none (unlimited).
    pub pacing_rate_bps: Option<u64>,
    /// The flow's socket had closed before this sample: these are the values its data
    /// thread read just before closing it.
    #[serde(default)]
    pub at_close: bool,
}

/// One flow's bytes in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowBytes {
    /// Flow id.
    pub flow: u32,
    /// Sender: bytes written; receiver: bytes read.
    pub role: Role,
    /// Bytes in the interval.
    pub bytes: u64,
}

/// CPU time over this end's CPU window (end of warm-up to the stop instant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuReport {
    /// The CPU window.
    pub window: Span,
    /// Whole machine, from `/proc/stat`.
    pub system: SystemCpuUtil,
    /// wirebench's own data-path threads at this end, user mode, ns.
    pub threads_user_ns: u64,
    /// wirebench's own data-path threads at this end, kernel mode, ns.
    pub threads_system_ns: u64,
    /// wirebench's own data-path threads at this end, summed: time runnable but waiting on
    /// a run queue for a CPU, ns (`/proc/self/task/<tid>/schedstat`; it includes the time
    /// from each wake-up to running). Absent when a thread's was not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_run_delay_ns: Option<u64>,
    /// The CPUs this end's data threads were allowed to run on (pinned or the affinity
    /// mask), in ascending order; empty when unknown.
    pub cpus_used: Vec<u32>,
    /// Every process but wirebench's own (`/proc/PID/stat` at both edges of the window,
    /// processes named `wirebench` left out): their CPU time over the window, summed, ns.
    /// Absent when not measured (or from a peer before protocol version 14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_processes_ns: Option<u64>,
    /// The busiest of those processes, most CPU time first (at most
    /// [`TOP_OTHER_PROCESSES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_processes: Vec<ProcessCpu>,
}

/// How many of the busiest other processes a [`CpuReport`] names.
pub const TOP_OTHER_PROCESSES: usize = 3;

/// One process's CPU time over a window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessCpu {
    /// Process id.
    pub pid: u32,
    /// Its name (`/proc/PID/comm`; escape it before printing: any process can choose it).
    pub comm: String,
    /// User + system time over the window, ns (clock ticks of 10 ms).
    pub cpu_ns: u64,
}

/// The host and stack a measurement was taken on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// wirebench version string.
    pub software: String,
    /// The host name (`uname -n`).
    pub hostname: Option<String>,
    /// This boot's id (/proc/sys/kernel/random/boot_id): two ends with the same id share one
    /// kernel, whatever their network namespaces.
    pub boot_id: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// Online CPUs.
    pub cpus_online: Option<u32>,
    /// net.ipv4.tcp_congestion_control (the default for new sockets in this namespace).
    pub default_congestion: Option<String>,
    /// net.ipv4.tcp_available_congestion_control.
    pub available_congestion: Vec<String>,
    /// net.ipv4.tcp_rmem: min, default, max bytes.
    pub tcp_rmem_bytes: Option<[u64; 3]>,
    /// net.ipv4.tcp_wmem: min, default, max bytes.
    pub tcp_wmem_bytes: Option<[u64; 3]>,
    /// net.core.rmem_max, bytes.
    pub rmem_max_bytes: Option<u64>,
    /// net.core.wmem_max, bytes.
    pub wmem_max_bytes: Option<u64>,
    /// The interface carrying the data connections, where known.
    pub interface: Option<InterfaceEnv>,
}

/// A network interface's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterfaceEnv {
    /// Interface name.
    pub name: String,
    /// MTU, bytes.
    pub mtu_bytes: Option<u32>,
    /// Receive checksum offload.
    pub rx_checksum: Option<bool>,
    /// Transmit checksum offload.
    pub tx_checksum: Option<bool>,
    /// Scatter-gather.
    pub scatter_gather: Option<bool>,
    /// TCP segmentation offload.
    pub tso: Option<bool>,
    /// Generic segmentation offload.
    pub gso: Option<bool>,
    /// Generic receive offload.
    pub gro: Option<bool>,
}

/// How an end's part of a test ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum SideStatus {
    /// Ran to the end.
    Completed,
    /// Ended early; the partial figures are still reported.
    Aborted(AbortReason),
}

/// The stream workload's counts at one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamSide {
    /// Per-flow counts, in flow-id order.
    pub flows: Vec<FlowSide>,
    /// Interval samples (empty unless the spec asked for intervals).
    pub intervals: Vec<ByteInterval>,
    /// How each epoll worker with receiving flows waited for them (`epoll_workers` 1 in
    /// each); empty for the thread-per-flow engine, whose flows report their own
    /// [`FlowSide::recv_wait`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_waits: Vec<RecvWaitStats>,
}

/// One end's workload counts (externally tagged in JSON: `{"stream": {...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SideData {
    /// TCP stream.
    Stream(StreamSide),
    /// TCP RR, CRR or UDP RR.
    Rr(RrSide),
    /// UDP stream.
    UdpStream(UdpSide),
}

/// Everything one end measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SideReport {
    /// Which end.
    pub host: HostRole,
    /// How this end's part ended.
    pub status: SideStatus,
    /// This end's measurement window [end of warm-up, stop instant], on its clock; `None`
    /// if the test ended before the window opened (interrupted or aborted during warm-up, or
    /// the engine never ran): then no figure of this end covers a measured window.
    pub window: Option<Span>,
    /// The workload's counts; `None` if this end's engine never ran.
    pub data: Option<SideData>,
    /// CPU over the window, if it could be measured.
    pub cpu: Option<CpuReport>,
    /// Host and stack settings.
    pub env: Environment,
    /// Measurement problems worth a reader's attention.
    pub warnings: Vec<Warning>,
    /// Which engine ran this end's data path and where its threads were.
    pub engine: Option<EngineKind>,
    /// Where this end's CPUs spent the window, when the spec asked for a profile and this
    /// end could take it (else a [`Warning::ProfileUnavailable`] says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileReport>,
    /// Where this end's data buffers started, bytes past a page boundary (0: page-aligned),
    /// as its engine placed them (`--buffer-offset`). `None` where no engine ran, and in
    /// results written before buffers were placed (when the allocator decided: typically 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_offset_bytes: Option<u32>,
}

impl SideReport {
    /// The stream counts, if this is a stream report.
    pub fn stream(&self) -> Option<&StreamSide> {
        match &self.data {
            Some(SideData::Stream(s)) => Some(s),
            _ => None,
        }
    }

    /// The request/response counts, if this is one.
    pub fn rr(&self) -> Option<&RrSide> {
        match &self.data {
            Some(SideData::Rr(r)) => Some(r),
            _ => None,
        }
    }

    /// The UDP stream counts, if this is one.
    pub fn udp(&self) -> Option<&UdpSide> {
        match &self.data {
            Some(SideData::UdpStream(u)) => Some(u),
            _ => None,
        }
    }

    /// The abort reason, if this end's part was aborted.
    pub fn aborted(&self) -> Option<&AbortReason> {
        match &self.status {
            SideStatus::Aborted(r) => Some(r),
            SideStatus::Completed => None,
        }
    }
}

/// A live interval sample of either end, any workload: the body of the `interval` message
/// (externally tagged in JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalData {
    /// Bytes per flow (TCP stream).
    Stream(ByteInterval),
    /// Transactions per flow (request/response).
    Rr(crate::rr::RrInterval),
    /// Datagrams and bytes per flow (UDP stream).
    UdpStream(crate::udp::UdpInterval),
}

impl IntervalData {
    /// The interval's index.
    pub fn index(&self) -> u32 {
        match self {
            IntervalData::Stream(s) => s.index,
            IntervalData::Rr(r) => r.index,
            IntervalData::UdpStream(u) => u.index,
        }
    }

    /// Number of per-flow entries (what the sample costs to carry).
    pub fn flow_entries(&self) -> usize {
        match self {
            IntervalData::Stream(s) => s.flows.len(),
            IntervalData::Rr(r) => r.flows.len(),
            IntervalData::UdpStream(u) => u.flows.len(),
        }
    }
}
