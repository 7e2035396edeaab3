//! What the record keeps of an iperf3 test beyond the native fields: the client's own figures.

/// What the record keeps of an iperf3 test beyond the native fields.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Iperf3Info {
    /// The client's version string (escaped).
    pub client_version: Option<String>,
    /// What the iperf3 client reported per stream (its results message): stream id, bytes,
    /// retransmits (-1: not a TCP sender).
    pub client_streams: Vec<(u32, u64, i64)>,
    /// The client's CPU use as iperf3 reported it, percent.
    pub client_cpu_util_total: Option<f64>,
    /// UDP: what the iperf3 client reported per stream (its results message).
    pub client_udp: Vec<ClientUdpStream>,
    /// UDP: datagrams from other hosts that reached the iperf3 port while this test's
    /// streams were being set up (dropped unanswered).
    pub udp_setup_foreign_datagrams: u64,
}

/// One UDP stream as the iperf3 client reported it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClientUdpStream {
    /// iperf3 stream id.
    pub id: u32,
    /// A stream the client sent: datagrams sent; one it received: the highest sequence
    /// number it saw.
    pub packets: i64,
    /// A stream the client received: datagrams it counted lost (iperf3's bookkeeping).
    pub lost: i64,
    /// A stream the client received: its jitter, seconds.
    pub jitter_s: f64,
}

impl Iperf3Info {
    /// Nothing known yet.
    pub(super) fn new() -> Iperf3Info {
        Iperf3Info {
            client_version: None,
            client_streams: Vec::new(),
            client_cpu_util_total: None,
            client_udp: Vec::new(),
            udp_setup_foreign_datagrams: 0,
        }
    }
}
