//! A stream test's call sizes when none are given, chosen in one place: [`StreamSpec::new`]
//! builds the workload once from what the sizes depend on ([`StreamShape`]: the flows,
//! their direction, pacing, paths and worker threads) and the sizes asked for
//! ([`CallSizes`]). `wirebench stream`, the load of `rr --under-load` and the loopback
//! ceiling of `wirebench limits` all build their stream specs through it.
//!
//! The rules: a message of [`DEFAULT_STREAM_MSG_BYTES`], halved (down to 1 KiB) until the
//! message buffers one end allocates fit [`MAX_TOTAL_MSG_BUFFER_BYTES`] and, on the epoll
//! engine, until one call per connection sums to at most [`EPOLL_CALLS_BUDGET_BYTES`]; the
//! receive call is the message, or for a sender that does not copy the payload at most
//! [`DEFAULT_NONCOPY_RECV_BYTES`].

use super::{
    Direction, RecvPath, RecvWait, SendPath, StreamSpec, TcpOptions, MANY_FLOW_THRESHOLD,
    MAX_THREADS, MAX_TOTAL_MSG_BUFFER_BYTES,
};

/// `wirebench stream`'s message size for few flows: 1 MiB. Larger calls cost less CPU per
/// byte (on loopback under cubic, 1 MiB moves about 1.3x what 128 KiB does), so the default
/// measures the path rather than the per-call overhead.
pub const DEFAULT_STREAM_MSG_BYTES: u32 = 1 << 20;

/// On the epoll engine (many flows), the most one default-sized call per connection may sum
/// to: 4 GiB. Its workers give each flow a turn of a few calls; past a few hundred flows,
/// calls so large that their sum runs to gigabytes starve flows and cost more than they save.
/// Measured on an Intel Xeon VM (loopback, cubic, split CPUs, 2 runs each, Gbit/s):
/// 10,000 flows: 32 KiB 34.7, 64 KiB 36.8, 128 KiB 40.6, 256 KiB 41.3, 1 MiB 36.9 (Jain
/// fairness 0.12); 1,000 flows: 128 KiB 47.1, 256 KiB 44.5, 1 MiB 50.8; 64 flows: 128 KiB
/// 47.8, 1 MiB 53.9. So 1 MiB up to 4,096 connections, 256 KiB at 10,000.
pub const EPOLL_CALLS_BUDGET_BYTES: u64 = 4 << 30;

/// The receive call size without `-l` or `--recv-size` when the sender does not copy the
/// payload (sendfile, splice, MSG_ZEROCOPY, io_uring SEND_ZC): 256 KiB. With the sender's
/// copy gone the receiver's copy is the bottleneck, and a buffer that stays in its CPU's
/// cache moves more than a 1 MiB one: on an Intel Xeon VM (loopback and veth, cubic, split
/// CPUs) sendfile went from ~62 to ~85 Gbit/s and splice from ~60 to ~97, while a copying
/// sender, which is the bottleneck itself, does best with 1 MiB receives (~66 vs ~55).
pub const DEFAULT_NONCOPY_RECV_BYTES: u32 = 256 << 10;

/// The smallest default message the halving goes down to, bytes.
const MIN_DEFAULT_MSG_BYTES: u64 = 1024;

/// What a stream test's default call sizes depend on: how many connections it has and
/// whether they run on the epoll engine (a worker per CPU) or a thread per flow, and
/// whether the sender copies the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamShape {
    /// Flows per direction (`CommonSpec::flows`).
    pub flows: u32,
    /// Data direction (bidir doubles the connections).
    pub direction: Direction,
    /// Per-flow rate, bits per second; a paced test keeps a thread per flow.
    pub rate_bps: Option<u64>,
    /// How the sending end sends.
    pub send_path: SendPath,
    /// How the receiving end receives.
    pub recv_path: RecvPath,
    /// Epoll worker threads asked for (`StreamSpec::threads`).
    pub threads: Option<u32>,
}

impl Default for StreamShape {
    /// One forward flow, unpaced, copy paths, threads chosen by the engine.
    fn default() -> Self {
        StreamShape {
            flows: 1,
            direction: Direction::Forward,
            rate_bps: None,
            send_path: SendPath::Copy,
            recv_path: RecvPath::Copy,
            threads: None,
        }
    }
}

impl StreamShape {
    /// Data connections: twice `flows` for bidir.
    pub fn connections(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.flows.saturating_mul(2),
            _ => self.flows,
        }
    }

    /// Epoll worker threads each end runs the flows on, or `None` for a thread per flow:
    /// unpaced, copy paths at both ends, and either `threads` set (clamped to the
    /// connections) or more than [`MANY_FLOW_THRESHOLD`] connections, which take one worker
    /// per online CPU; this bound counts [`MAX_THREADS`] for those, the most the engine
    /// starts.
    pub fn epoll_workers_bound(&self) -> Option<u32> {
        let copy = self.send_path == SendPath::Copy && self.recv_path == RecvPath::Copy;
        if self.rate_bps.is_some() || !copy {
            return None;
        }
        let conns = self.connections().max(1);
        match self.threads {
            Some(t) => Some(t.clamp(1, conns)),
            None if conns > MANY_FLOW_THRESHOLD => Some(MAX_THREADS.min(conns)),
            None => None,
        }
    }

    /// Message buffers one end allocates: one per connection, or on the epoll engine one
    /// receive buffer per worker plus the payload block its senders share.
    pub fn message_buffers(&self) -> u64 {
        match self.epoll_workers_bound() {
            Some(workers) => u64::from(workers) + 1,
            None => u64::from(self.connections()),
        }
    }

    /// The message size without `-l`, bytes: [`DEFAULT_STREAM_MSG_BYTES`], halved (down to
    /// 1 KiB) until size × [`StreamShape::message_buffers`] ≤ [`MAX_TOTAL_MSG_BUFFER_BYTES`]
    /// and, on the epoll engine, until size × connections ≤ [`EPOLL_CALLS_BUDGET_BYTES`].
    pub fn default_msg_bytes(&self) -> u32 {
        let buffers = self.message_buffers().max(1);
        let budget = match self.epoll_workers_bound() {
            Some(_) => EPOLL_CALLS_BUDGET_BYTES,
            None => u64::MAX,
        };
        let conns = u64::from(self.connections().max(1));
        let mut size = u64::from(DEFAULT_STREAM_MSG_BYTES);
        while size > MIN_DEFAULT_MSG_BYTES
            && (size * buffers > MAX_TOTAL_MSG_BUFFER_BYTES || size * conns > budget)
        {
            size /= 2;
        }
        // At most DEFAULT_STREAM_MSG_BYTES, a u32.
        size as u32
    }

    /// The receive call size without `-l` or `--recv-size`, bytes: the default message, or
    /// at most [`DEFAULT_NONCOPY_RECV_BYTES`] when the sender does not copy the payload
    /// (copy and io_uring `SEND` copy; sendfile, splice, MSG_ZEROCOPY and `SEND_ZC` do not).
    pub fn default_recv_bytes(&self) -> u32 {
        let msg = self.default_msg_bytes();
        match self.send_path {
            SendPath::Copy | SendPath::Uring => msg,
            SendPath::Sendfile | SendPath::Splice | SendPath::Zerocopy | SendPath::UringZc => {
                msg.min(DEFAULT_NONCOPY_RECV_BYTES)
            }
        }
    }
}

/// A stream test's call sizes as asked for, bytes; `None` takes [`StreamSpec::new`]'s
/// default. (`-l` names both calls: a caller passes it as either size not given on its own.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallSizes {
    /// Bytes per send call (`--send-size`, else `-l`).
    pub send_bytes: Option<u32>,
    /// Bytes per receive call (`--recv-size`, else `-l`).
    pub recv_bytes: Option<u32>,
}

impl StreamSpec {
    /// A stream workload of `shape` with the sizes asked for and the defaults of
    /// [`StreamShape::default_msg_bytes`] and [`StreamShape::default_recv_bytes`] for the
    /// others; no verification, no pinning, default TCP options, no byte count, blocking
    /// receives.
    pub fn new(shape: StreamShape, sizes: CallSizes) -> StreamSpec {
        StreamSpec {
            direction: shape.direction,
            send_size_bytes: sizes
                .send_bytes
                .unwrap_or_else(|| shape.default_msg_bytes()),
            recv_size_bytes: sizes
                .recv_bytes
                .unwrap_or_else(|| shape.default_recv_bytes()),
            rate_bps: shape.rate_bps,
            send_path: shape.send_path,
            recv_path: shape.recv_path,
            verify: false,
            threads: shape.threads,
            pin_threads: false,
            tcp: TcpOptions::default(),
            stop_after_bytes: None,
            recv_wait: RecvWait::Block,
        }
    }

    /// What this workload's default call sizes depend on, with `flows` flows per direction.
    pub fn shape(&self, flows: u32) -> StreamShape {
        StreamShape {
            flows,
            direction: self.direction,
            rate_bps: self.rate_bps,
            send_path: self.send_path,
            recv_path: self.recv_path,
            threads: self.threads,
        }
    }
}
