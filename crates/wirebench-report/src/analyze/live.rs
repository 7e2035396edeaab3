//! The figures of one live interval sample, for the lines printed while a test runs: the
//! same definitions as the summaries' interval rows, one sample at a time.

use wirebench_model::result::{IntervalRow, RrIntervalRow};
use wirebench_model::side::{HostRole, IntervalData, Role};
use wirebench_model::spec::TestSpec;

use super::{receiver_of, DIRS};

/// A UDP interval row: the received bytes of a direction and its datagram counts.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpLiveRow {
    /// Bytes and rate.
    pub row: IntervalRow,
    /// Distinct datagrams received.
    pub datagrams: u64,
    /// Late (reordered) datagrams.
    pub late: u64,
    /// Duplicates.
    pub duplicate: u64,
}

/// The rows of one live sample.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveRows {
    /// Stream: one row per direction this end receives.
    Stream(Vec<IntervalRow>),
    /// Request/response: the client's row (a server's sample gives none).
    Rr(Option<RrIntervalRow>),
    /// UDP stream: one row per direction this end receives.
    UdpStream(Vec<UdpLiveRow>),
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
            dirs.filter_map(|d| {
                let row = super::udp::interval_row(host, d, &map, u)?;
                let mine = u
                    .flows
                    .iter()
                    .filter(|f| f.role == Role::Receiver && map.get(&f.flow) == Some(&d));
                let (datagrams, late, duplicate) = mine.fold((0, 0, 0), |a, f| {
                    (a.0 + f.datagrams, a.1 + f.late, a.2 + f.duplicate)
                });
                Some(UdpLiveRow {
                    row,
                    datagrams,
                    late,
                    duplicate,
                })
            })
            .collect(),
        ),
    }
}
