//! wirebench data-path engines.
//!
//! An engine moves bytes over already-connected data sockets, counts them, samples the counts
//! at interval boundaries, and measures CPU over its measurement window. It reports through a
//! [`Sink`] and returns raw figures in a [`measure::SideReport`]-shaped form; it never formats
//! output and never computes throughput — that is `wirebench-stats` and the report layer.
//!
//! - [`stream`]: bulk transfer (TCP_STREAM), one thread per flow, lock-free counters.
//! - [`many`]: bulk transfer for many flows on a few epoll worker threads (copy path, unpaced).
//! - [`udp`]: paced UDP datagram flows and sequence-checking receivers (loss, reordering,
//!   duplicates, jitter).
//! - [`rr`]: request/response (TCP_RR, TCP_CRR, UDP_RR), closed or open loop, latencies.
//! - [`env`](mod@env): what the host and stack look like (kernel, CPU, congestion control, buffers,
//!   interface MTU and offloads).
//! - [`cpu`]: CPU snapshots (`/proc/stat` and the engine's own threads).
//! - [`paths`]: the send and receive paths of the stream workload and the payload they carry.
//!
//! [`measure::SideReport`]: wirebench_proto::measure::SideReport

pub mod cpu;
pub mod env;
mod flowside;
pub mod many;
pub mod paths;
pub mod rr;
pub mod stream;
mod timeline;
pub mod udp;
mod util;

use wirebench_proto::measure::IntervalSample;

/// Where an engine reports while it runs. Called from the engine's sampling thread.
pub trait Sink: Send {
    /// A new interval sample is complete.
    fn interval(&mut self, sample: &IntervalSample);
}

/// A sink that drops everything.
pub struct NullSink;

impl Sink for NullSink {
    fn interval(&mut self, _sample: &IntervalSample) {}
}
