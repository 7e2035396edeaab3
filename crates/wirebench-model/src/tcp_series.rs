//! TCP_INFO over time: the rows the analysis derives from the senders' per-interval
//! TCP_INFO samples ([`crate::side::FlowTcpSample`]), part of a stream run's summary.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::side::HostRole;
use crate::spec::FlowDir;

/// TCP_INFO of one direction's sending flows at one sampling instant, read at the sending
/// end: one flow (`flow` set) or all the direction's flows at that end (`flow` is `None`:
/// windows and retransmits summed, round trips averaged and their maximum).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpIntervalRow {
    /// Interval start, seconds after the sending end's start (its own clock).
    pub start_s: f64,
    /// Interval end, seconds after the sending end's start: when TCP_INFO was read.
    pub end_s: f64,
    /// The end that read it (the sender of `dir`).
    pub host: HostRole,
    /// Direction.
    pub dir: FlowDir,
    /// The flow; `None`: every sending flow of `dir` at that end.
    pub flow: Option<u32>,
    /// Flows whose TCP_INFO the row holds.
    pub flows: u32,
    /// Congestion window, segments (summed over the flows).
    pub cwnd_segments: u64,
    /// Congestion window in bytes: `cwnd_segments × the flow's MSS`, summed over the flows.
    pub cwnd_bytes: u64,
    /// Smoothed round trip (`tcpi_rtt`), ns; the mean over the flows.
    pub srtt_ns: u64,
    /// The largest smoothed round trip among the flows, ns.
    pub srtt_max_ns: u64,
    /// Round-trip variance (`tcpi_rttvar`), ns; the mean over the flows.
    pub rttvar_ns: u64,
    /// Segments retransmitted since the previous sample (`tcpi_total_retrans` difference;
    /// the first sample counts from the connection's opening), summed over the flows.
    pub retransmits: u64,
    /// The kernel's delivery-rate estimate, bits per second, summed over the flows that
    /// report one.
    pub delivery_rate_bps: Option<u64>,
    /// True if any part of the interval lies in the warm-up.
    pub in_warmup: bool,
    /// Some flow's socket had closed before the sample: its values are those read just
    /// before the close.
    pub at_close: bool,
}
