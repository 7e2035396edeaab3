//! UDP stream measurements at one end. The receiver accounting that produces them is
//! `wirebench_proto::udp`; loss is computed by the analysis from both ends' reports:
//! `lost = sent − received` over the whole test, or over the datagrams sent inside the
//! sender's window (both ends classify a datagram into the window by the send time in its
//! header, so the two window counts cover exactly the same datagrams).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::side::{Role, Span};
use crate::warning::FlowError;

/// What the sender of one UDP flow measured.
///
/// Byte counts are UDP payload bytes (header included; not IP/UDP headers). The window is
/// `[start_ns, end_ns)` on the sender's clock; a datagram belongs to it if its header send
/// time does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpSendReport {
    /// Flow id.
    pub flow: u32,
    /// Size of every datagram, bytes (header included).
    pub datagram_bytes: u32,
    /// Requested rate of this flow, bits per second (UDP payload bits); `None`: unpaced.
    pub target_rate_bps: Option<u64>,
    /// Datagrams the kernel accepted, whole test (warm-up included).
    pub datagrams_sent: u64,
    /// Bytes the kernel accepted, whole test.
    pub bytes_sent: u64,
    /// Datagrams accepted whose send time lies in the window.
    pub window_datagrams_sent: u64,
    /// Their bytes.
    pub window_bytes_sent: u64,
    /// The window: end of warm-up to the stop instant (or the abort), sender's clock.
    pub window: Span,
    /// Sends the kernel refused with ENOBUFS or EAGAIN (the datagram never left this host);
    /// their sequence numbers were used, so the receiver sees them as gaps.
    pub send_refused: u64,
    /// Sends that failed with another transient error (ECONNREFUSED after an ICMP port
    /// unreachable, EHOSTUNREACH, ENETUNREACH); the flow carried on.
    pub send_errors: u64,
    /// How often the pacer fell more than its catch-up allowance behind schedule and moved
    /// the schedule forward, dropping the slots beyond the allowance instead of bursting.
    pub pacing_resets: u64,
    /// Why the flow ended early, if it did.
    pub error: Option<FlowError>,
    /// This end's address and port of the flow's socket (`ip:port`, getsockname).
    #[serde(default)]
    pub local: Option<String>,
    /// The receiver's address and port as this end sees it (getpeername of the connected
    /// socket).
    #[serde(default)]
    pub peer: Option<String>,
}

/// What the receiver of one UDP flow measured.
///
/// Byte counts are UDP payload bytes (header included). Only distinct datagrams (in order or
/// late) count as received. Window counts are the distinct datagrams whose header send time
/// lies in `sender_window`, i.e. exactly the datagrams the sender counts in its own window.
/// Sequence classes, jitter and `highest_seq` cover the whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpRecvReport {
    /// Flow id.
    pub flow: u32,
    /// Distinct datagrams received (in order + late), whole test.
    pub datagrams_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
    /// Distinct datagrams received that were sent inside the sender's window.
    pub window_datagrams_received: u64,
    /// Their bytes.
    pub window_bytes_received: u64,
    /// The sender's window, on the sender's clock, as this end assumed it.
    pub sender_window: Span,
    /// Arrival of the first window datagram, ns after this end's start.
    pub window_first_arrival_ns: Option<u64>,
    /// Arrival of the last window datagram, ns after this end's start.
    pub window_last_arrival_ns: Option<u64>,
    /// Datagrams above every sequence number seen before them.
    pub in_order: u64,
    /// Reordered datagrams: below the highest sequence number seen, not seen before.
    pub late: u64,
    /// Datagrams whose sequence number was seen before (not counted as received).
    pub duplicate: u64,
    /// Datagrams more than `reorder_window_seqs` below the highest sequence number: late or
    /// duplicate, no longer known which (not counted as received).
    pub too_old: u64,
    /// Highest sequence number seen.
    pub highest_seq: Option<u64>,
    /// RFC 3550 interarrival jitter at the end of the test, ns (distinct datagrams, arrival
    /// order).
    pub jitter_ns: f64,
    /// Depth of the late/duplicate detection window, sequence numbers.
    pub reorder_window_seqs: u64,
    /// Why reception ended early, if it did.
    pub error: Option<FlowError>,
    /// This end's address and port of the socket the flow arrived on (`ip:port`,
    /// getsockname).
    #[serde(default)]
    pub local: Option<String>,
    /// The sender's address and port as this end sees it: the only source the socket
    /// accepted datagrams from (the address the UDP setup learnt, else getpeername); `None`
    /// for a socket that accepted any source.
    #[serde(default)]
    pub peer: Option<String>,
}

/// Datagrams a receive socket could not attribute to one of its flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpInvalidCounts {
    /// Shorter than the header.
    pub too_short: u64,
    /// Wrong magic.
    pub bad_magic: u64,
    /// A well-formed datagram with a flow id this socket does not serve.
    pub foreign_flow: u64,
    /// From an address other than the peer's.
    pub foreign_source: u64,
}

impl UdpInvalidCounts {
    /// Every invalid datagram.
    pub fn total(&self) -> u64 {
        self.too_short
            .saturating_add(self.bad_magic)
            .saturating_add(self.foreign_flow)
            .saturating_add(self.foreign_source)
    }
}

/// What one receive socket saw besides its flows' datagrams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpRecvSocketReport {
    /// The flows the socket served.
    pub flows: Vec<u32>,
    /// Datagrams that belonged to none of them.
    pub invalid: UdpInvalidCounts,
    /// Datagrams the kernel dropped because this socket's receive buffer was full, over the
    /// socket's life (the test's): the larger of the last SO_RXQ_OVFL count attached to a
    /// datagram and the socket's `drops` in /proc/net/udp read after the drain (which also
    /// counts drops after the last datagram read); `None` if the kernel reported neither.
    pub rcvbuf_drops: Option<u64>,
    /// Why reception on the socket ended early, if it did.
    pub error: Option<FlowError>,
}

/// One flow's counts in one interval. Sender: datagrams and bytes accepted by the kernel and
/// failed sends; receiver: distinct datagrams and their bytes, late and duplicate ones, the
/// sequence numbers the interval covered and those missing, and the jitter.
///
/// Receiver loss per interval (as RFC 3550 §6.4.1 and A.3 count it for a reception report,
/// and iperf3's per-interval Lost/Total): `expected` is how far the flow's extended highest
/// sequence number (highest seen + 1; 0 before the first datagram) advanced over the
/// interval, and `lost = max(0, expected − datagrams)`, where `datagrams` are the distinct
/// datagrams received in it (late ones included). Exactly: the receiver keeps
/// `missing = (highest + 1) − distinct datagrams received so far`, and `lost` is its
/// increase over the interval, clamped at 0. A late datagram fills a gap counted earlier and
/// lowers `missing`; the interval it arrives in reports 0 rather than a negative count. So the
/// sum of `lost` over the intervals is `(highest_seq + 1) − datagrams_received` of the
/// flow's report when no interval received more late datagrams than new gaps (always without
/// reordering across an interval boundary), and more otherwise; the sequence numbers sent
/// after the last one received are in no interval (the receiver cannot see them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpFlowInterval {
    /// Flow id.
    pub flow: u32,
    /// What this end does on the flow.
    pub role: Role,
    /// Datagrams sent (sender) or distinct datagrams received (receiver) in the interval.
    pub datagrams: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Sender: failed or refused sends in the interval; receiver: 0.
    pub send_errors: u64,
    /// Receiver: late datagrams in the interval; sender: 0.
    pub late: u64,
    /// Receiver: duplicate datagrams in the interval; sender: 0.
    pub duplicate: u64,
    /// Receiver: the advance of the extended highest sequence number (highest seen + 1) over
    /// the interval: the sequence numbers the interval covered; sender: 0.
    #[serde(default)]
    pub expected: u64,
    /// Receiver: datagrams lost in the interval, `max(0, expected − datagrams)` (see the type's
    /// documentation); sender: 0.
    #[serde(default)]
    pub lost: u64,
    /// Receiver: RFC 3550 interarrival jitter at the end of the interval (as in
    /// [`UdpRecvReport::jitter_ns`]), ns, rounded; `None` on a sender and before the flow's
    /// first datagram.
    #[serde(default)]
    pub jitter_ns: Option<u64>,
}

/// One interval of a UDP run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpInterval {
    /// 0-based index.
    pub index: u32,
    /// The interval.
    pub span: Span,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Per flow and role.
    pub flows: Vec<UdpFlowInterval>,
}

/// UDP counters of the receiving host's network namespace (/proc/net/snmp `Udp:` line),
/// differences over the test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpHostDrops {
    /// `RcvbufErrors` delta: datagrams dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// `InErrors` delta: datagrams the host could not deliver (includes `RcvbufErrors`).
    pub in_errors: u64,
}

/// What one end measured in a UDP stream test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpSide {
    /// Flows this end sent, in flow-id order.
    pub senders: Vec<UdpSendReport>,
    /// Flows this end received, in flow-id order.
    pub receivers: Vec<UdpRecvReport>,
    /// This end's receive sockets and what none of their flows could claim (garbage).
    pub sockets: Vec<UdpRecvSocketReport>,
    /// Datagram counts per interval.
    pub intervals: Vec<UdpInterval>,
    /// The host's UDP drop counters over the test (receivers only; `None` when
    /// /proc/net/snmp could not be read).
    pub host_drops: Option<UdpHostDrops>,
}
