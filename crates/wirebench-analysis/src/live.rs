//! The figures of one live interval sample, for the lines printed while a test runs: the
//! same definitions as the summaries' interval rows, one sample at a time; and for a stream
//! test the receiver's row joined with its sender's TCP_INFO ([`LiveJoin`]), with the
//! retransmits per interval defined as in [`super::tcp_series`].

use std::collections::BTreeMap;

use wirebench_model::result::{IntervalRow, RrIntervalRow, UdpIntervalRow};
use wirebench_model::side::{HostRole, IntervalData, Role};
use wirebench_model::spec::{FlowDir, TestSpec};

use super::{receiver_of, DIRS};

/// The rows of one live sample.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveRows {
    /// Stream: one row per direction this end receives.
    Stream(Vec<IntervalRow>),
    /// Request/response: the client's row (a server's sample gives none).
    Rr(Option<RrIntervalRow>),
    /// UDP stream: one row per direction this end receives.
    UdpStream(Vec<UdpIntervalRow>),
}

/// The rows of a live sample measured at `host`.
pub fn rows(host: HostRole, spec: &TestSpec, sample: &IntervalData) -> LiveRows {
    let map = super::stream::spec_flow_map(spec);
    let dirs = DIRS.into_iter().filter(|&d| receiver_of(d) == host);
    match sample {
        IntervalData::Stream(s) => LiveRows::Stream(
            dirs.filter_map(|d| super::stream::interval_row(host, d, &map, s))
                .collect(),
        ),
        IntervalData::Rr(r) => {
            LiveRows::Rr((host == HostRole::Client).then(|| super::rr::interval_row(host, r)))
        }
        IntervalData::UdpStream(u) => LiveRows::UdpStream(
            dirs.filter_map(|d| super::udp::interval_row(host, d, &map, u))
                .collect(),
        ),
    }
}

/// The sending end's TCP_INFO over one live interval: of one flow, or summed over a
/// direction's flows at that end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveTcp {
    /// The end that read it (the direction's sender).
    pub host: HostRole,
    /// Segments retransmitted since the flow's previous sample (`tcpi_total_retrans`
    /// difference; the first sample counts from the connection's opening), summed over the
    /// flows.
    pub retransmits: u64,
    /// Congestion window when the sample was read (the interval's end): `tcpi_snd_cwnd ×
    /// tcpi_snd_mss`, bytes, summed over the flows.
    pub cwnd_bytes: u64,
}

/// One receiving flow's share of a live stream interval, with its sender's TCP_INFO.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFlow {
    /// Flow id.
    pub flow: u32,
    /// Bytes the flow's receiver read in the interval.
    pub bytes: u64,
    /// `bytes × 8 / interval`, bits per second.
    pub throughput_bps: f64,
    /// The flow's sender's TCP_INFO of the interval of the same number, if it arrived.
    pub tcp: Option<LiveTcp>,
}

/// A stream direction's live interval at its receiving end, joined with what its sending end
/// read from TCP_INFO at the end of its interval of the same number (each end numbers its
/// intervals from its own start).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveStreamRow {
    /// The receiver's row (all the direction's flows).
    pub row: IntervalRow,
    /// The sender's TCP_INFO summed over the direction's flows; `None` when its sample did not
    /// arrive in time (before the receiver's next interval or the run's end).
    pub tcp: Option<LiveTcp>,
    /// Per receiving flow, in flow order.
    pub flows: Vec<LiveFlow>,
}

/// What a live sample gives to print, once joined.
#[derive(Debug, Clone, PartialEq)]
pub enum Joined {
    /// A stream direction's interval with its sender's TCP_INFO.
    Stream(LiveStreamRow),
    /// The rows of a request/response or UDP sample, as they came.
    Other(LiveRows),
}

/// A receiver's row waiting for its sender's sample.
#[derive(Debug, Clone)]
struct Pending {
    dir: FlowDir,
    index: u32,
    row: IntervalRow,
    flows: Vec<(u32, u64, f64)>,
}

/// The senders' samples of one direction and interval: the end, and per flow (flow,
/// retransmits in the interval, cwnd bytes).
type SenderSample = (HostRole, Vec<(u32, u64, u64)>);

/// Joins a stream test's live samples: a direction's receiver counts the bytes, its sender
/// reads TCP_INFO, and their samples reach the client separately and in either order. A
/// receiver's row is held until the sender's sample of the same interval number arrives, the
/// receiver's next row of that direction arrives, or [`LiveJoin::finish`].
#[derive(Debug, Default)]
pub struct LiveJoin {
    /// Each sending flow's `tcpi_total_retrans` at its previous sample.
    retrans_total: BTreeMap<u32, u32>,
    /// Senders' samples not yet joined, by direction and interval number.
    senders: BTreeMap<(u8, u32), SenderSample>,
    /// Receivers' rows not yet printed, in arrival order.
    pending: Vec<Pending>,
}

/// How many intervals a sender's sample waits for its receiver's row before it is dropped.
const SENDER_KEPT: u32 = 8;

impl LiveJoin {
    /// Take a live sample measured at `host`; returns what is ready to print.
    pub fn push(&mut self, host: HostRole, spec: &TestSpec, sample: &IntervalData) -> Vec<Joined> {
        let IntervalData::Stream(s) = sample else {
            return vec![Joined::Other(rows(host, spec, sample))];
        };
        let map = super::stream::spec_flow_map(spec);
        for d in DIRS.into_iter().filter(|&d| super::sender_of(d) == host) {
            let flows: Vec<(u32, u64, u64)> = s
                .tcp
                .iter()
                .filter(|t| map.get(&t.flow) == Some(&d))
                .map(|t| {
                    let before = self
                        .retrans_total
                        .insert(t.flow, t.retransmits_total)
                        .unwrap_or(0);
                    let cwnd = u64::from(t.cwnd_segments) * u64::from(t.mss_bytes);
                    let retrans = u64::from(t.retransmits_total.saturating_sub(before));
                    (t.flow, retrans, cwnd)
                })
                .collect();
            if !flows.is_empty() {
                self.senders.insert((dir_key(d), s.index), (host, flows));
            }
            self.senders.retain(|(dir, i), _| {
                *dir != dir_key(d) || i.saturating_add(SENDER_KEPT) > s.index
            });
        }
        for d in DIRS.into_iter().filter(|&d| receiver_of(d) == host) {
            let Some(row) = super::stream::interval_row(host, d, &map, s) else {
                continue;
            };
            let flows = s
                .flows
                .iter()
                .filter(|f| f.role == Role::Receiver && map.get(&f.flow) == Some(&d))
                .map(|f| {
                    let bps = super::rate_bps(f.bytes, s.span.len_ns()).unwrap_or(0.0);
                    (f.flow, f.bytes, bps)
                })
                .collect();
            self.pending.push(Pending {
                dir: d,
                index: s.index,
                row,
                flows,
            });
        }
        self.ready(false)
    }

    /// Everything still held, without the senders' samples that did not come.
    pub fn finish(&mut self) -> Vec<Joined> {
        let out = self.ready(true);
        self.senders.clear();
        self.retrans_total.clear();
        out
    }

    /// The held rows whose sender sample is here (all of them when `all`), or that a later
    /// row of their direction has overtaken.
    fn ready(&mut self, all: bool) -> Vec<Joined> {
        let mut out = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        let newest = |d: FlowDir| pending.iter().filter(|p| p.dir == d).map(|p| p.index).max();
        let newest: Vec<(FlowDir, Option<u32>)> =
            DIRS.into_iter().map(|d| (d, newest(d))).collect();
        for p in pending {
            let key = (dir_key(p.dir), p.index);
            let overtaken = newest
                .iter()
                .any(|(d, n)| *d == p.dir && n.is_some_and(|n| n > p.index));
            if !(all || overtaken || self.senders.contains_key(&key)) {
                self.pending.push(p);
                continue;
            }
            let sender = self.senders.remove(&key);
            out.push(Joined::Stream(join(p, sender)));
        }
        out
    }
}

/// A direction as a map key.
fn dir_key(d: FlowDir) -> u8 {
    match d {
        FlowDir::ClientToServer => 0,
        FlowDir::ServerToClient => 1,
    }
}

/// A receiver's row with its sender's sample (if any).
fn join(p: Pending, sender: Option<SenderSample>) -> LiveStreamRow {
    let tcp_of = |host: HostRole, v: &mut dyn Iterator<Item = &(u32, u64, u64)>| {
        v.fold(None, |acc: Option<LiveTcp>, &(_, r, c)| {
            let a = acc.unwrap_or(LiveTcp {
                host,
                retransmits: 0,
                cwnd_bytes: 0,
            });
            Some(LiveTcp {
                host,
                retransmits: a.retransmits + r,
                cwnd_bytes: a.cwnd_bytes + c,
            })
        })
    };
    let tcp = sender.as_ref().and_then(|(h, v)| tcp_of(*h, &mut v.iter()));
    let flows = p
        .flows
        .iter()
        .map(|&(flow, bytes, throughput_bps)| LiveFlow {
            flow,
            bytes,
            throughput_bps,
            tcp: sender
                .as_ref()
                .and_then(|(h, v)| tcp_of(*h, &mut v.iter().filter(|t| t.0 == flow))),
        })
        .collect();
    LiveStreamRow {
        row: p.row,
        tcp,
        flows,
    }
}
