//! iperf3 interoperability: what a stock `iperf3 -s` reported of a test wirebench ran
//! against it as an iperf3 client (`wirebench stream --iperf3`, `udp --iperf3`), from the
//! server's results message, and how its byte counts (UDP: datagrams) reconcile with
//! wirebench's own.
//!
//! The server's strings (its congestion control name) are escaped before they are stored
//! here ([`crate::text::escape`]); they reach a terminal as they are stored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::side::Role;
use crate::spec::FlowDir;

/// The iperf3 server's own figures of one run, as its results message gave them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Iperf3Server {
    /// The server's address, `HOST:PORT`.
    pub address: String,
    /// The server process's CPU time (user + system) over the test's wall time, percent
    /// of one CPU, as iperf3 measures it (its whole process, control included).
    pub cpu_util_total_pct: f64,
    /// The user part of it.
    pub cpu_util_user_pct: f64,
    /// The system part of it.
    pub cpu_util_system_pct: f64,
    /// The congestion control the server's data sockets used, as it named it (escaped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// Per stream, in stream-id order.
    pub streams: Vec<Iperf3Stream>,
    /// Each flow's bytes as both tools counted them.
    pub reconciliation: Vec<Iperf3Reconciled>,
}

/// One stream as the iperf3 server reported it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Iperf3Stream {
    /// iperf3's stream id (1, 3, 4, … in the order the streams were opened).
    pub id: u32,
    /// wirebench's flow on that stream (0-based), when the id names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    /// What the server did on it.
    pub role: Role,
    /// Bytes the server sent (a sending stream: accepted by its kernel) or received (read by
    /// the iperf3 process), after its omitted seconds.
    pub bytes: u64,
    /// TCP retransmits of a sending stream, from the server's TCP_INFO; absent when iperf3
    /// reports none (-1: a receiving stream, or not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Start of the server's count, seconds after its TEST_START (its omitted seconds).
    pub start_s: f64,
    /// End of the server's count, seconds after its TEST_START.
    pub end_s: f64,
    /// `bytes` × 8 over `end_s - start_s`: the server's own rate of the stream, bits/s of
    /// payload (0 when the span is empty).
    pub throughput_bps: f64,
    /// A UDP test's datagram figures of the stream, as the server reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<Iperf3UdpStream>,
}

/// One UDP stream's datagram figures as an iperf3 server reports them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Iperf3UdpStream {
    /// iperf3's `packets`: a sending server, the datagrams it sent (its sequence numbers
    /// used); a receiving server, the highest sequence number it saw.
    pub packets: u64,
    /// iperf3's `errors`, a receiving server only: datagrams missing below the highest
    /// sequence number it saw (each gap, less one per datagram that arrived out of order);
    /// datagrams sent after the last one it saw are not in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// A receiving server's RFC 3550 interarrival jitter at the end of the test,
    /// milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
}

/// One UDP flow's datagrams as the sender sent them and the receiver accounted for them:
/// `sent = received + lost + difference`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Iperf3UdpReconciled {
    /// Datagrams the sender sent: sequence numbers used (wirebench: accepted by its kernel,
    /// plus sends the kernel refused or that failed, which used a number; iperf3: its
    /// `packets`).
    pub sent_datagrams: u64,
    /// Distinct datagrams the receiver received (wirebench: its count; iperf3: `packets`
    /// less `errors`).
    pub received_datagrams: u64,
    /// Datagrams the receiver counted lost: missing below the highest sequence number it saw.
    pub lost_datagrams: u64,
    /// `sent - received - lost`: datagrams sent after the last one the receiver saw (lost at
    /// the end of the test, or still in flight or unread when it ended); negative only if
    /// the receiver accounted for more than was sent.
    pub difference_datagrams: i64,
}

/// One flow's bytes counted at both ends, by two tools.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Iperf3Reconciled {
    /// wirebench's flow (0-based).
    pub flow: u32,
    /// Which way its payload moved.
    pub dir: FlowDir,
    /// What wirebench did on it (the server did the other).
    pub wirebench_role: Role,
    /// The bytes wirebench counted: sent (accepted by the kernel) or received (read), over
    /// the whole flow without omitted seconds, over its window with them.
    pub wirebench_bytes: u64,
    /// The bytes the iperf3 server counted on the same stream (after its omitted seconds).
    pub iperf3_bytes: u64,
    /// `iperf3_bytes - wirebench_bytes`.
    pub difference_bytes: i64,
    /// Why they differ, or that they agree (a UDP flow: its datagrams).
    pub note: ReconcileNote,
    /// A UDP flow's datagrams, sent against received and lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<Iperf3UdpReconciled>,
}

/// Why two counts of one flow differ.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReconcileNote {
    /// Both counted the same bytes.
    Equal,
    /// The receiver counted fewer than the sender sent: bytes still queued (in flight, or in
    /// the receiver's socket buffer) when the iperf3 server closed its data sockets at
    /// TEST_END; iperf3 closes without reading them.
    UnreadAtTestEnd,
    /// With omitted seconds each end starts counting on its own clock, so the counts cover
    /// slightly different spans and agree only roughly.
    OmitBoundary,
    /// The receiver counted more than the sender sent: no real transfer does that.
    ReceiverAboveSender,
    /// The server's results have no stream for this flow.
    Missing,
    /// UDP: every datagram sent is received or counted lost by the receiver.
    DatagramsAccounted,
    /// UDP: datagrams were sent after the last one the receiver saw: lost at the end of the
    /// test, or still in flight or unread when it ended (no receiver counts those as lost).
    SentAfterLastSeen,
}
