//! The figures of one live interval sample, for the lines printed while a test runs: the
//! same definitions as the summaries' interval rows, one sample at a time.

use wirebench_model::result::{IntervalRow, RrIntervalRow, UdpIntervalRow};
use wirebench_model::side::{HostRole, IntervalData};
use wirebench_model::spec::TestSpec;

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
