//! What one end of a test measured: the body of the `results` message and half of a
//! `RunResult`. Every field names its unit; times are nanoseconds relative to that end's own
//! start instant (the moment it began its engine), measured on that end's monotonic clock.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wirebench_stats::cpu::SystemCpuUtil;

use crate::spec::FlowDir;

/// Which end of the test a report comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostRole {
    /// The end that ran `wirebench stream`.
    Client,
    /// The daemon.
    Server,
}

/// What a flow does at one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes payload.
    Sender,
    /// Reads payload.
    Receiver,
}

/// Counts and timings of one flow at one end.
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
    /// Window start, ns after this end's start.
    pub window_start_ns: u64,
    /// Window end, ns after this end's start.
    pub window_end_ns: u64,
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
    /// Why the flow ended early, if it did.
    pub error: Option<String>,
    /// The data path this end actually used for the flow (`SendPath`/`RecvPath` wire name,
    /// e.g. `"zerocopy"`); `None` from an end that does not report it.
    #[serde(default)]
    pub path: Option<String>,
    /// Why the requested path was not used (this end fell back to `"copy"`).
    #[serde(default)]
    pub path_fallback: Option<String>,
    /// Zero-copy accounting of the path used: the send fields for `MSG_ZEROCOPY` and io_uring
    /// `SEND_ZC` senders, the receive fields for `TCP_ZEROCOPY_RECEIVE` receivers; `None` for
    /// the other paths.
    #[serde(default)]
    pub zerocopy: Option<ZeroCopyStats>,
    /// With `verify`: payload bytes this receiver checked against the expected content.
    #[serde(default)]
    pub verified_bytes: Option<u64>,
    /// With `verify`: bytes that differed from the expected content (the flow's `error`
    /// names the first mismatching stream offset).
    #[serde(default)]
    pub verify_errors: Option<u64>,
}

/// Zero-copy accounting of one flow at one end (or, in a summary, both ends joined: the send
/// fields from the sender, the receive fields from the receiver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZeroCopyStats {
    /// Zero-copy sends issued (`MSG_ZEROCOPY` sends or io_uring `SEND_ZC` operations that
    /// queued data); each completes exactly once.
    #[serde(default)]
    pub sends: u64,
    /// Completed sends whose pages went out without a copy.
    #[serde(default)]
    pub sends_completed_zerocopy: u64,
    /// Completed sends the kernel copied after all (always the case over loopback).
    #[serde(default)]
    pub sends_completed_copied: u64,
    /// `TCP_ZEROCOPY_RECEIVE`: payload bytes mapped into the receiver.
    #[serde(default)]
    pub bytes_mapped: u64,
    /// `TCP_ZEROCOPY_RECEIVE`: payload bytes that could not be mapped and were copied.
    #[serde(default)]
    pub bytes_copied: u64,
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
    /// Bytes acknowledged by the peer (kernel 4.1+).
    pub bytes_acked: Option<u64>,
    /// Bytes received from the peer (kernel 4.1+).
    pub bytes_received: Option<u64>,
    /// Time the sender was limited by the receive window, microseconds (kernel 4.10+).
    pub rwnd_limited_us: Option<u64>,
    /// Time the sender was limited by its send buffer, microseconds (kernel 4.10+).
    pub sndbuf_limited_us: Option<u64>,
}

/// One interval sample: what this end moved between two sampling instants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntervalSample {
    /// 0-based index.
    pub index: u32,
    /// Interval start, ns after this end's start.
    pub start_ns: u64,
    /// Interval end, ns after this end's start.
    pub end_ns: u64,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Bytes moved in the interval, per flow.
    pub flows: Vec<FlowInterval>,
}

/// One flow's bytes in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowInterval {
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
    /// Window start, ns after this end's start.
    pub window_start_ns: u64,
    /// Window end, ns after this end's start.
    pub window_end_ns: u64,
    /// Whole machine, from `/proc/stat`.
    pub system: SystemCpuUtil,
    /// wirebench's own data-path threads at this end, user mode, ns.
    pub threads_user_ns: u64,
    /// wirebench's own data-path threads at this end, kernel mode, ns.
    pub threads_system_ns: u64,
}

/// The host and stack a measurement was taken on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// wirebench version string.
    pub software: String,
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
    Aborted(String),
}

/// Everything one end measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SideReport {
    /// Which end.
    pub host: HostRole,
    /// How this end's part ended.
    pub status: SideStatus,
    /// Per-flow counts, in flow-id order.
    pub flows: Vec<FlowSide>,
    /// Interval samples (empty unless the spec asked for intervals).
    pub intervals: Vec<IntervalSample>,
    /// CPU over the window, if it could be measured.
    pub cpu: Option<CpuReport>,
    /// Host and stack settings.
    pub env: Environment,
    /// Measurement problems worth a reader's attention.
    pub warnings: Vec<String>,
    /// Request/response workloads: counts and latency (`flows` and `intervals` are empty).
    #[serde(default)]
    pub rr: Option<crate::rr::RrReport>,
    /// UDP stream: per-flow datagram accounting (`flows` is empty; `intervals` carry bytes).
    #[serde(default)]
    pub udp: Option<UdpReport>,
    /// Which engine ran this end's data path, e.g. `"thread per flow"` or
    /// `"epoll, 2 worker threads"`.
    #[serde(default)]
    pub engine: Option<String>,
}

/// What one end measured in a UDP stream test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpReport {
    /// Flows this end sent, in flow-id order.
    pub senders: Vec<crate::udp::UdpSendReport>,
    /// Flows this end received, in flow-id order.
    pub receivers: Vec<crate::udp::UdpRecvReport>,
    /// This end's receive sockets and what none of their flows could claim (garbage).
    pub sockets: Vec<crate::udp::UdpRecvSocketReport>,
    /// Datagram counts per interval (index for index with the side report's `intervals`).
    pub intervals: Vec<crate::udp::UdpIntervalSample>,
}
