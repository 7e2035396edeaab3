//! The summary of a UDP stream run, part of a [`RunResult`](crate::result::RunResult):
//! per-direction datagram accounting, loss attribution, per-interval rows and per-flow
//! rows. Re-exported from [`crate::result`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::{EndFlowError, IntervalRow};
use crate::side::Role;
use crate::spec::FlowDir;

/// A UDP stream run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct UdpSummary {
    /// One entry per direction present.
    pub directions: Vec<UdpDirectionSummary>,
    /// One entry per flow, both ends joined.
    pub flows: Vec<UdpFlowSummary>,
    /// Interval rows measured at the receiving end of each direction.
    pub intervals: Vec<UdpIntervalRow>,
}

/// What the receiving end of one UDP direction got in one interval, all flows of the
/// direction. Loss per interval is defined in `UdpFlowInterval`: the sequence numbers the
/// interval covered (`expected`) minus the distinct datagrams received in it, clamped at 0
/// per flow.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct UdpIntervalRow {
    /// The bytes received and their rate (UDP payload).
    #[serde(flatten)]
    pub row: IntervalRow,
    /// Distinct datagrams received in the interval (late ones included).
    #[serde(default)]
    pub datagrams: u64,
    /// Sequence numbers the interval covered, summed over the flows.
    #[serde(default)]
    pub expected: u64,
    /// Datagrams lost in the interval, summed over the flows.
    #[serde(default)]
    pub lost: u64,
    /// `lost / expected`, percent (0 when `expected` is 0).
    #[serde(default)]
    pub loss_pct: f64,
    /// Late (reordered) datagrams received in the interval.
    #[serde(default)]
    pub late: u64,
    /// Duplicates received in the interval (not counted in `datagrams`).
    #[serde(default)]
    pub duplicate: u64,
    /// Largest RFC 3550 jitter of the direction's flows at the end of the interval, ns;
    /// `None` before any flow received a datagram.
    #[serde(default)]
    pub jitter_max_ns: Option<u64>,
}

/// The datagram accounting of one UDP flow or of a direction (the sum of its flows). Window
/// figures cover the datagrams *sent* inside the sender's window (end of warm-up → stop), as
/// counted by each end; so `window_lost = sent − received` exactly, whatever the clocks.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
pub struct UdpCounts {
    /// Datagrams the sender's kernel accepted inside the window.
    pub window_sent: u64,
    /// Distinct window datagrams the receiver got (in order + late).
    pub window_received: u64,
    /// `window_sent − window_received`; negative only if the reports disagree.
    pub window_lost: i64,
    /// `window_lost / window_sent`, percent (0 without datagrams).
    pub window_loss_pct: f64,
    /// Datagrams sent over the whole test.
    pub total_sent: u64,
    /// Distinct datagrams received over the whole test.
    pub total_received: u64,
    /// `total_sent − total_received`.
    pub total_lost: i64,
    /// Reordered datagrams received (whole test).
    pub late: u64,
    /// Duplicates received (whole test; not counted as received).
    pub duplicate: u64,
    /// Late or duplicate beyond the reorder window (whole test; not counted as received).
    pub too_old: u64,
    /// Sends the sender's kernel refused (ENOBUFS, EAGAIN), whole test; never sent, but
    /// their sequence numbers show as gaps at the receiver.
    pub send_refused: u64,
    /// Other failed sends (ICMP errors), whole test.
    pub send_errors: u64,
    /// Times the pacer fell behind and skipped ahead.
    pub pacing_resets: u64,
}

/// Where the datagrams a direction lost went, over the whole test. Every figure is a count
/// read from the kernel or from the two ends' sequence accounting; `lost_in_path` is what is
/// left: `total_lost − refused_at_sender − dropped_at_receiving_sockets −
/// dropped_by_receiving_host`, clamped at 0.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
pub struct UdpLossAttribution {
    /// Datagrams lost over the whole test (`total_sent + send_refused − total_received`:
    /// every sequence number the sender used that never arrived).
    pub total_lost: u64,
    /// Sends the sender's kernel refused (ENOBUFS, EAGAIN).
    pub refused_at_sender: u64,
    /// Datagrams the receiving sockets' buffers overflowed with (SO_RXQ_OVFL); `None` when
    /// the kernel did not report it.
    pub dropped_at_receiving_sockets: Option<u64>,
    /// Further datagrams the receiving host dropped (/proc/net/snmp `Udp: InErrors` delta
    /// beyond the socket overflows, in the receiver's network namespace); `None` when not
    /// read.
    pub dropped_by_receiving_host: Option<u64>,
    /// The rest: lost between the two hosts.
    pub lost_in_path: u64,
}

/// One direction of a UDP stream run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct UdpDirectionSummary {
    /// Which way the datagrams move.
    pub dir: FlowDir,
    /// Flows in this direction.
    pub flows: u32,
    /// Datagram size, bytes (UDP payload, header included).
    pub datagram_bytes: u32,
    /// Requested rate per flow, bits per second of UDP payload; `None`: unpaced.
    pub target_rate_per_flow_bps: Option<u64>,
    /// The counts, all flows of the direction.
    pub counts: UdpCounts,
    /// Where the lost datagrams went.
    pub loss: UdpLossAttribution,
    /// Sender window length (longest of the flows'), ns.
    pub sender_window_ns: u64,
    /// UDP payload bytes of the window datagrams sent (sender's count).
    pub sender_bytes: u64,
    /// UDP payload bytes of the distinct window datagrams received (receiver's count).
    pub receiver_bytes: u64,
    /// Window bytes sent × 8 / sender window, bits per second of UDP payload.
    pub sender_rate_bps: f64,
    /// Window bytes received × 8 / the same sender window, bits per second.
    pub receiver_rate_bps: f64,
    /// Largest RFC 3550 jitter of the direction's flows, ns.
    pub jitter_max_ns: f64,
    /// Datagrams the receiving end's sockets could not attribute to a flow (garbage: too
    /// short, bad magic, unknown flow, foreign source).
    pub invalid_datagrams: u64,
    /// The end of this direction whose figures come from a stock iperf3 server's results
    /// exchange (`--iperf3`) rather than a wirebench report: that end's role. Its figures
    /// are then iperf3's own counts over its own span (after its omitted seconds, `-O`):
    /// datagrams sent, or received and lost, bytes, rate and jitter; iperf3 counts no late
    /// or duplicate datagrams (0 here) nor the receiving host's drops (`None` in `loss`).
    /// Absent when both ends are wirebench's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3_end: Option<Role>,
}

/// One UDP flow, both ends joined.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct UdpFlowSummary {
    /// Flow id.
    pub flow: u32,
    /// Which way its datagrams move.
    pub dir: FlowDir,
    /// The counts.
    pub counts: UdpCounts,
    /// Window bytes sent × 8 / sender window, bits per second.
    pub sender_rate_bps: f64,
    /// Window bytes received × 8 / sender window, bits per second.
    pub receiver_rate_bps: f64,
    /// RFC 3550 jitter at the end of the test, ns.
    pub jitter_ns: f64,
    /// Why the flow ended early, at either end.
    pub errors: Vec<EndFlowError>,
    /// The end of this flow whose figures come from a stock iperf3 server's results
    /// exchange (`--iperf3`) rather than a wirebench report: that end's role. Its figures
    /// are then iperf3's own counts over its own span (after its omitted seconds, `-O`):
    /// datagrams, rate and jitter. Absent when both ends are wirebench's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3_end: Option<Role>,
}
