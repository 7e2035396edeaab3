//! [`TestSpec`]: one serde type that describes a whole test, and its server-side validation.
//!
//! The client sends exactly one `TestSpec`; the server checks every field against its own
//! [`Limits`] before admitting the test. Nothing is negotiated field by field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Most interval samples (intervals × connections) one test may produce, so that the results
/// message stays under the absolute frame cap.
pub const MAX_INTERVAL_SAMPLES: u64 = 500_000;

/// Largest sum of per-connection message buffers (message size × connections) one test may
/// make an end allocate.
pub const MAX_TOTAL_MSG_BUFFER_BYTES: u64 = 512 * 1024 * 1024;

/// Slowest per-flow rate a spec may ask for, bits per second.
pub const MIN_RATE_BPS: u64 = 1_000;
/// Fastest per-flow rate a spec may ask for, bits per second (10 Tbit/s).
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;

/// Which family of test to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Bulk TCP transfer (netperf TCP_STREAM / iperf3 default).
    Stream,
    /// TCP request/response over one connection per flow (netperf TCP_RR).
    Rr,
    /// TCP connect/request/response/close, one connection per transaction (netperf TCP_CRR).
    Crr,
    /// UDP request/response, one datagram each way (netperf UDP_RR).
    UdpRr,
    /// UDP datagram stream with sequence-checked loss, reordering and jitter (iperf3 -u).
    UdpStream,
}

impl Workload {
    /// True for the request/response workloads ([`Workload::Rr`], [`Workload::Crr`],
    /// [`Workload::UdpRr`]), which carry [`TestSpec::rr`].
    pub fn is_rr(self) -> bool {
        matches!(self, Workload::Rr | Workload::Crr | Workload::UdpRr)
    }

    /// True for the UDP workloads ([`Workload::UdpRr`], [`Workload::UdpStream`]).
    pub fn is_udp(self) -> bool {
        matches!(self, Workload::UdpRr | Workload::UdpStream)
    }
}

/// Smallest UDP request/response size: the first 8 bytes carry the sequence number.
pub const MIN_UDP_RR_BYTES: u32 = 8;
/// Largest UDP payload (IPv4: 65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;
/// Smallest UDP stream datagram: the 24-byte header.
pub const MIN_UDP_DATAGRAM_BYTES: u32 = 24;
/// Most transactions a request/response flow may keep in flight (burst).
pub const MAX_BURST: u32 = 1024;
/// Most epoll worker threads a stream test may ask for at one end.
pub const MAX_THREADS: u32 = 256;
/// Highest open-loop rate of one flow, transactions per second.
pub const MAX_TRANSACTIONS_PER_S: u64 = 10_000_000;
/// Largest open-loop cap on outstanding requests per flow.
pub const MAX_OUTSTANDING: u32 = 100_000;

/// How a CRR client closes each connection.
pub use crate::rr::CloseMode;

/// Parameters of the request/response workloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrParams {
    /// Bytes per request (UDP: at least 8, the sequence number).
    pub request_size_bytes: u32,
    /// Bytes per response (UDP: at least 8).
    pub response_size_bytes: u32,
    /// TCP RR closed loop: transactions in flight per flow (netperf `-b`); 1 otherwise.
    pub burst: u32,
    /// TCP RR open loop: requests scheduled per second **per flow**; latency is measured
    /// from each request's scheduled time. `None`: closed loop.
    pub transactions_per_s: Option<u64>,
    /// Open loop: most requests outstanding per flow (the sender waits at the cap).
    pub max_outstanding: Option<u32>,
    /// CRR: how the client closes each connection.
    pub close_mode: CloseMode,
    /// UDP RR: wait for a response before the transaction counts as lost, milliseconds.
    pub udp_timeout_ms: u64,
}

impl Default for RrParams {
    /// 1-byte request and response, burst 1, closed loop, orderly close, 100 ms UDP timeout.
    fn default() -> Self {
        RrParams {
            request_size_bytes: 1,
            response_size_bytes: 1,
            burst: 1,
            transactions_per_s: None,
            max_outstanding: None,
            close_mode: CloseMode::Orderly,
            udp_timeout_ms: 100,
        }
    }
}

/// Which way data moves, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The client sends, the server receives.
    Forward,
    /// The server sends, the client receives.
    Reverse,
    /// Both at once: `flows` flows each way.
    Bidir,
}

/// Which way one flow's payload moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowDir {
    /// Client writes, server reads.
    ClientToServer,
    /// Server writes, client reads.
    ServerToClient,
}

/// How a sending end hands payload to the kernel (stream workload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SendPath {
    /// `write(2)` from a user buffer: the kernel copies the payload.
    #[default]
    Copy,
    /// `sendfile(2)` from a sealed memory-backed file (iperf3 `-Z`).
    Sendfile,
    /// `vmsplice(2)` the buffer into a pipe, `splice(2)` the pipe into the socket.
    Splice,
    /// `send(MSG_ZEROCOPY)` with completion notifications from the socket's error queue.
    Zerocopy,
    /// io_uring `SEND` (`IORING_OP_SEND`, `MSG_WAITALL`) in linked chains: the kernel copies
    /// the payload, as with `write(2)`, but without a system call per message.
    Uring,
    /// io_uring `SEND_ZC` (Linux 6.0+) from a registered buffer: no copy at the sender where
    /// the device allows it, a completion notification per send (loopback and veth copy
    /// anyway, and the result says so).
    UringZc,
}

impl SendPath {
    /// The wire name (`"copy"`, `"sendfile"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SendPath::Copy => "copy",
            SendPath::Sendfile => "sendfile",
            SendPath::Splice => "splice",
            SendPath::Zerocopy => "zerocopy",
            SendPath::Uring => "uring",
            SendPath::UringZc => "uring_zc",
        }
    }
}

/// How a receiving end takes payload from the kernel (stream workload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecvPath {
    /// `read(2)` into a user buffer: the kernel copies the payload.
    #[default]
    Copy,
    /// `recv(MSG_TRUNC)`: TCP drops the data without copying it (the application never sees
    /// it).
    Discard,
    /// `splice(2)` socket → pipe → `/dev/null` (the application never sees the data).
    Splice,
    /// `TCP_ZEROCOPY_RECEIVE`: payload pages are mapped, the rest copied.
    Zerocopy,
    /// io_uring receives into provided buffers.
    Uring,
}

impl RecvPath {
    /// The wire name (`"copy"`, `"discard"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RecvPath::Copy => "copy",
            RecvPath::Discard => "discard",
            RecvPath::Splice => "splice",
            RecvPath::Zerocopy => "zerocopy",
            RecvPath::Uring => "uring",
        }
    }

    /// True if the path hands the payload to the application (so it can be verified).
    pub fn delivers_data(self) -> bool {
        !matches!(self, RecvPath::Discard | RecvPath::Splice)
    }
}

/// A complete description of one test. Durations are in milliseconds, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// Test family.
    pub workload: Workload,
    /// Data direction.
    pub direction: Direction,
    /// Parallel flows per direction (bidir opens twice this many connections).
    pub flows: u32,
    /// Measured duration after warm-up, in milliseconds.
    pub duration_ms: u64,
    /// Warm-up before the measurement window opens, in milliseconds (excluded from results).
    pub warmup_ms: u64,
    /// Live interval length in milliseconds; `None` for no interval samples.
    pub interval_ms: Option<u64>,
    /// Stream: bytes per send/receive call. UDP stream: bytes per datagram (UDP payload,
    /// 24-byte header included). Not used by the request/response workloads (see `rr`).
    pub msg_size_bytes: u32,
    /// SO_SNDBUF and SO_RCVBUF requested on both ends; `None` leaves kernel autotuning on.
    pub window_bytes: Option<u32>,
    /// TCP congestion control for every data connection; `None` uses each host's default.
    pub congestion: Option<String>,
    /// Set TCP_NODELAY on data connections.
    pub nodelay: bool,
    /// Target payload rate of each flow, bits per second (10^0-based), paced by the sender;
    /// `None` sends as fast as the path allows. Stream and UDP stream only.
    pub rate_bps: Option<u64>,
    /// Request/response parameters: required by `rr`, `crr` and `udp_rr`, absent otherwise.
    #[serde(default)]
    pub rr: Option<RrParams>,
    /// CPU to pin the server's data threads to; `None` leaves placement to the scheduler.
    pub server_cpu: Option<u32>,
    /// CPU the client pins its own data threads to; carried so that the result records the
    /// whole placement (the server only checks its range).
    pub client_cpu: Option<u32>,
    /// Stream: how the sending end of every flow sends (whichever end that is); `None` is
    /// [`SendPath::Copy`]. An end that cannot use the path falls back to copy and says so in
    /// its report.
    #[serde(default)]
    pub send_path: Option<SendPath>,
    /// Stream: how the receiving end of every flow receives; `None` is [`RecvPath::Copy`].
    #[serde(default)]
    pub recv_path: Option<RecvPath>,
    /// Stream: the receiver checks every byte against the payload both ends derive from a
    /// shared constant seed, and reports the bytes verified and the mismatches.
    #[serde(default)]
    pub verify: bool,
    /// Stream: epoll worker threads at each end (neper's model: each owns an epoll set and a
    /// share of the flows). Set, every end runs the many-flow engine with this many workers
    /// (at most one per flow; copy paths, unpaced). `None` chooses: a thread per flow up to
    /// 32 flows, above that one worker per online CPU.
    #[serde(default)]
    pub threads: Option<u32>,
    /// Pin each end's data threads round-robin over the CPUs that end may run on (worker
    /// or flow `i` to the `i mod n`-th allowed CPU). `server_cpu` / `client_cpu`, when set,
    /// pin every thread of their end to one CPU instead. Stream only.
    #[serde(default)]
    pub pin_threads: bool,
}

impl TestSpec {
    /// A forward stream test with the defaults of `wirebench stream`.
    pub fn stream_default() -> Self {
        TestSpec {
            workload: Workload::Stream,
            direction: Direction::Forward,
            flows: 1,
            duration_ms: 10_000,
            warmup_ms: 0,
            interval_ms: None,
            msg_size_bytes: 128 * 1024,
            window_bytes: None,
            congestion: None,
            nodelay: false,
            rate_bps: None,
            rr: None,
            server_cpu: None,
            client_cpu: None,
            send_path: None,
            recv_path: None,
            verify: false,
            threads: None,
            pin_threads: false,
        }
    }

    /// A request/response test of `workload` with the defaults of `wirebench rr`.
    pub fn rr_default(workload: Workload) -> Self {
        let mut s = TestSpec::stream_default();
        s.workload = workload;
        s.msg_size_bytes = 1;
        let mut rr = RrParams::default();
        if workload == Workload::UdpRr {
            rr.request_size_bytes = MIN_UDP_RR_BYTES;
            rr.response_size_bytes = MIN_UDP_RR_BYTES;
        }
        s.rr = Some(rr);
        s
    }

    /// Data connections the client opens right after admission, before the engines start:
    /// none for CRR (it opens one per transaction while the test runs), one per flow
    /// otherwise (for UDP workloads it carries the exchange of UDP ports, then stays idle).
    pub fn setup_connections(&self) -> u32 {
        match self.workload {
            Workload::Crr => 0,
            _ => self.connection_count(),
        }
    }

    /// The flows of this test, in flow-id order, with the direction each one carries.
    pub fn flow_dirs(&self) -> Vec<FlowDir> {
        let n = self.flows as usize;
        match self.direction {
            Direction::Forward => vec![FlowDir::ClientToServer; n],
            Direction::Reverse => vec![FlowDir::ServerToClient; n],
            Direction::Bidir => {
                let mut v = vec![FlowDir::ClientToServer; n];
                v.extend(std::iter::repeat_n(FlowDir::ServerToClient, n));
                v
            }
        }
    }

    /// Number of data connections the test opens.
    pub fn connection_count(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.flows.saturating_mul(2),
            _ => self.flows,
        }
    }

    /// Check every field against `limits`. The server calls this on every spec it receives,
    /// whatever the client checked.
    pub fn validate(&self, limits: &Limits) -> Result<(), SpecError> {
        fn range<T: PartialOrd + Copy + std::fmt::Display>(
            field: &'static str,
            v: T,
            min: T,
            max: T,
        ) -> Result<(), SpecError> {
            if v < min || v > max {
                return Err(SpecError::OutOfRange {
                    field,
                    value: v.to_string(),
                    min: min.to_string(),
                    max: max.to_string(),
                });
            }
            Ok(())
        }
        range("flows", self.flows, 1, limits.max_flows)?;
        range("duration_ms", self.duration_ms, 100, limits.max_duration_ms)?;
        range("warmup_ms", self.warmup_ms, 0, limits.max_warmup_ms)?;
        if self.warmup_ms > self.duration_ms {
            return Err(SpecError::Inconsistent {
                field: "warmup_ms",
                reason: "warm-up may not be longer than the measured duration".into(),
            });
        }
        if let Some(i) = self.interval_ms {
            range("interval_ms", i, 100, self.duration_ms.max(100))?;
            // Results carry every interval sample of every flow; keep them sendable.
            let samples = (self.duration_ms.saturating_add(self.warmup_ms) / i.max(1))
                .saturating_add(2)
                .saturating_mul(u64::from(self.connection_count()));
            if samples > MAX_INTERVAL_SAMPLES {
                return Err(SpecError::Inconsistent {
                    field: "interval_ms",
                    reason: format!(
                        "{samples} interval samples (intervals x connections) exceed \
                         {MAX_INTERVAL_SAMPLES}; use a longer interval"
                    ),
                });
            }
        }
        range(
            "msg_size_bytes",
            self.msg_size_bytes,
            1,
            limits.max_msg_size_bytes,
        )?;
        self.validate_workload(limits)?;
        // Every connection gets a message-sized buffer at each end: bound their sum.
        let per_conn = match &self.rr {
            Some(rr) => rr.request_size_bytes.max(rr.response_size_bytes),
            None => self.msg_size_bytes,
        };
        let buffers = u64::from(per_conn).saturating_mul(u64::from(self.connection_count()));
        if buffers > MAX_TOTAL_MSG_BUFFER_BYTES {
            return Err(SpecError::Inconsistent {
                field: "msg_size_bytes",
                reason: format!(
                    "{buffers} bytes of message buffers (message size x connections) exceed \
                     {MAX_TOTAL_MSG_BUFFER_BYTES}"
                ),
            });
        }
        if let Some(w) = self.window_bytes {
            range("window_bytes", w, 2048, limits.max_window_bytes)?;
        }
        if let Some(cc) = &self.congestion {
            let ok = !cc.is_empty()
                && cc.len() <= 15
                && cc.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !ok {
                return Err(SpecError::Invalid {
                    field: "congestion",
                    reason: "must be 1-15 characters of [a-z0-9_-]".into(),
                });
            }
        }
        if let Some(r) = self.rate_bps {
            range("rate_bps", r, MIN_RATE_BPS, MAX_RATE_BPS)?;
        }
        if let Some(max) = limits.max_rate_bps {
            // The policy bounds the test's aggregate: every connection's rate together. A
            // request/response test's rate is its open-loop schedule times the bits of one
            // transaction; a closed loop has no bound the server could check in advance.
            let total = match &self.rr {
                None => self
                    .rate_bps
                    .map(|r| r.saturating_mul(u64::from(self.connection_count()))),
                Some(rr) => rr.transactions_per_s.map(|t| {
                    t.saturating_mul(
                        u64::from(rr.request_size_bytes.max(rr.response_size_bytes)) * 8,
                    )
                    .saturating_mul(u64::from(self.connection_count()))
                }),
            };
            match total {
                None if self.rr.is_some() => {
                    return Err(SpecError::Invalid {
                        field: "rr.transactions_per_s",
                        reason: format!(
                            "this server allows at most {max} bit/s per test; run TCP RR \
                             open-loop (a transaction rate) so that the rate stays under it"
                        ),
                    })
                }
                None => {
                    return Err(SpecError::Invalid {
                        field: "rate_bps",
                        reason: format!(
                            "this server allows at most {max} bit/s per test; set a rate \
                             (per flow) so that rate x connections stays under it"
                        ),
                    })
                }
                Some(t) if t > max => {
                    return Err(SpecError::OutOfRange {
                        field: "rate_bps",
                        value: format!("{t} (rate x connections)"),
                        min: MIN_RATE_BPS.to_string(),
                        max: max.to_string(),
                    })
                }
                Some(_) => {}
            }
        }
        if let Some(cpu) = self.server_cpu {
            range("server_cpu", cpu, 0, 4095)?;
        }
        if let Some(cpu) = self.client_cpu {
            range("client_cpu", cpu, 0, 4095)?;
        }
        Ok(())
    }
}

impl TestSpec {
    /// The checks that depend on the workload.
    fn validate_workload(&self, limits: &Limits) -> Result<(), SpecError> {
        let inconsistent = |field: &'static str, reason: &str| SpecError::Inconsistent {
            field,
            reason: reason.to_string(),
        };
        let range = |field: &'static str, v: u64, min: u64, max: u64| {
            if v < min || v > max {
                Err(SpecError::OutOfRange {
                    field,
                    value: v.to_string(),
                    min: min.to_string(),
                    max: max.to_string(),
                })
            } else {
                Ok(())
            }
        };
        if self.workload != Workload::Stream {
            if self.send_path.is_some() {
                return Err(inconsistent(
                    "send_path",
                    "send paths apply to the stream workload only",
                ));
            }
            if self.recv_path.is_some() {
                return Err(inconsistent(
                    "recv_path",
                    "receive paths apply to the stream workload only",
                ));
            }
            if self.verify {
                return Err(inconsistent(
                    "verify",
                    "payload verification applies to the stream workload only",
                ));
            }
            if self.threads.is_some() {
                return Err(inconsistent(
                    "threads",
                    "worker threads apply to the stream workload only",
                ));
            }
            if self.pin_threads {
                return Err(inconsistent(
                    "pin_threads",
                    "round-robin pinning applies to the stream workload only",
                ));
            }
        }
        if let Some(t) = self.threads {
            range("threads", u64::from(t), 1, u64::from(MAX_THREADS))?;
        }
        if self.verify && !self.recv_path.unwrap_or_default().delivers_data() {
            return Err(inconsistent(
                "verify",
                "cannot verify with recv_path discard or splice: those paths do not deliver \
                 data to the application",
            ));
        }
        if !self.workload.is_rr() {
            if self.rr.is_some() {
                return Err(inconsistent(
                    "rr",
                    "request/response parameters apply only to rr, crr and udp_rr",
                ));
            }
            if self.workload == Workload::UdpStream {
                range(
                    "msg_size_bytes",
                    u64::from(self.msg_size_bytes),
                    u64::from(MIN_UDP_DATAGRAM_BYTES),
                    u64::from(MAX_UDP_PAYLOAD_BYTES),
                )?;
            }
            return Ok(());
        }
        let Some(rr) = &self.rr else {
            return Err(SpecError::Invalid {
                field: "rr",
                reason: "rr, crr and udp_rr need request/response parameters".into(),
            });
        };
        if self.direction != Direction::Forward {
            return Err(inconsistent(
                "direction",
                "request/response tests run forward only (the client sends the requests)",
            ));
        }
        if self.rate_bps.is_some() {
            return Err(inconsistent(
                "rate_bps",
                "request/response tests take a transaction rate (rr.transactions_per_s)",
            ));
        }
        let (min, max) = match self.workload {
            Workload::UdpRr => (MIN_UDP_RR_BYTES, MAX_UDP_PAYLOAD_BYTES),
            _ => (1, limits.max_msg_size_bytes),
        };
        let (min, max) = (u64::from(min), u64::from(max));
        range(
            "rr.request_size_bytes",
            u64::from(rr.request_size_bytes),
            min,
            max,
        )?;
        range(
            "rr.response_size_bytes",
            u64::from(rr.response_size_bytes),
            min,
            max,
        )?;
        let tcp_rr = self.workload == Workload::Rr;
        range(
            "rr.burst",
            u64::from(rr.burst),
            1,
            if tcp_rr { u64::from(MAX_BURST) } else { 1 },
        )?;
        if let Some(t) = rr.transactions_per_s {
            if !tcp_rr {
                return Err(inconsistent(
                    "rr.transactions_per_s",
                    "the open loop (a transaction rate) is supported by TCP RR only",
                ));
            }
            if rr.burst > 1 {
                return Err(inconsistent(
                    "rr.burst",
                    "burst applies to the closed loop; the open loop keeps its own schedule",
                ));
            }
            range("rr.transactions_per_s", t, 1, MAX_TRANSACTIONS_PER_S)?;
        }
        if let Some(m) = rr.max_outstanding {
            if rr.transactions_per_s.is_none() {
                return Err(inconsistent(
                    "rr.max_outstanding",
                    "max outstanding applies to the open loop only",
                ));
            }
            range(
                "rr.max_outstanding",
                u64::from(m),
                1,
                u64::from(MAX_OUTSTANDING),
            )?;
        }
        if rr.close_mode != CloseMode::Orderly && self.workload != Workload::Crr {
            return Err(inconsistent(
                "rr.close_mode",
                "the close mode applies to crr only",
            ));
        }
        range("rr.udp_timeout_ms", rr.udp_timeout_ms, 1, 60_000)
    }
}

/// The server's policy limits. Every field has a safe default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Largest `flows` accepted.
    pub max_flows: u32,
    /// Longest measured duration, milliseconds.
    pub max_duration_ms: u64,
    /// Longest warm-up, milliseconds.
    pub max_warmup_ms: u64,
    /// Largest message size, bytes.
    pub max_msg_size_bytes: u32,
    /// Largest socket buffer request, bytes.
    pub max_window_bytes: u32,
    /// Tests that may run at once.
    pub max_concurrent_tests: u32,
    /// Largest aggregate payload rate of one test (rate x connections), bits per second;
    /// `None` for no limit. When set, tests must ask for a rate, and the server aborts a test
    /// whose data arrives faster than allowed.
    #[serde(default)]
    pub max_rate_bps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_flows: 128,
            max_duration_ms: 3_600_000,
            max_warmup_ms: 600_000,
            max_msg_size_bytes: 16 * 1024 * 1024,
            max_window_bytes: 256 * 1024 * 1024,
            max_concurrent_tests: 4,
            max_rate_bps: None,
        }
    }
}

/// Why a [`TestSpec`] was refused. Each variant names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// A numeric field outside the server's limits.
    #[error("{field} = {value} is out of range (allowed {min}..={max})")]
    OutOfRange {
        /// Field name as in the wire format.
        field: &'static str,
        /// Value received.
        value: String,
        /// Smallest allowed value.
        min: String,
        /// Largest allowed value.
        max: String,
    },
    /// A field whose value is malformed.
    #[error("{field} is invalid: {reason}")]
    Invalid {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Fields that contradict each other.
    #[error("{field} is inconsistent: {reason}")]
    Inconsistent {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        TestSpec::stream_default()
            .validate(&Limits::default())
            .unwrap();
    }

    #[test]
    fn out_of_range_names_field() {
        let mut s = TestSpec::stream_default();
        s.flows = 0;
        let e = s.validate(&Limits::default()).unwrap_err();
        assert!(e.to_string().starts_with("flows = 0"), "{e}");
        s.flows = 1_000_000_000;
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.warmup_ms = s.duration_ms + 1;
        assert!(matches!(
            s.validate(&Limits::default()),
            Err(SpecError::Inconsistent {
                field: "warmup_ms",
                ..
            })
        ));
        let mut s = TestSpec::stream_default();
        s.interval_ms = Some(0);
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.msg_size_bytes = 0;
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.congestion = Some("../../etc".into());
        assert!(s.validate(&Limits::default()).is_err());
        // 16 MiB messages on 128 flows each way would be 4 GiB of buffers.
        let mut s = TestSpec::stream_default();
        s.direction = Direction::Bidir;
        s.flows = 128;
        s.msg_size_bytes = 16 << 20;
        assert!(matches!(
            s.validate(&Limits::default()),
            Err(SpecError::Inconsistent {
                field: "msg_size_bytes",
                ..
            })
        ));
    }

    #[test]
    fn paths_are_stream_only_and_verify_needs_data() {
        let l = Limits::default();
        let mut s = TestSpec::stream_default();
        s.send_path = Some(SendPath::Zerocopy);
        s.recv_path = Some(RecvPath::Uring);
        s.verify = true;
        s.validate(&l).unwrap();
        for p in [RecvPath::Discard, RecvPath::Splice] {
            s.recv_path = Some(p);
            assert!(matches!(
                s.validate(&l),
                Err(SpecError::Inconsistent {
                    field: "verify",
                    ..
                })
            ));
        }
        s.verify = false;
        s.validate(&l).unwrap();
        let mut r = TestSpec::rr_default(Workload::Rr);
        r.send_path = Some(SendPath::Sendfile);
        assert!(matches!(
            r.validate(&l),
            Err(SpecError::Inconsistent {
                field: "send_path",
                ..
            })
        ));
        let mut u = TestSpec::stream_default();
        u.workload = Workload::UdpStream;
        u.msg_size_bytes = 1400;
        u.recv_path = Some(RecvPath::Copy);
        assert!(u.validate(&l).is_err());
        u.recv_path = None;
        u.verify = true;
        assert!(u.validate(&l).is_err());
        // Old documents without the fields still parse.
        let mut v = serde_json::to_value(TestSpec::stream_default()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("send_path");
        o.remove("recv_path");
        o.remove("verify");
        let back: TestSpec = serde_json::from_value(v).unwrap();
        assert_eq!(back, TestSpec::stream_default());
        assert_eq!(
            serde_json::to_string(&SendPath::Sendfile).unwrap(),
            "\"sendfile\""
        );
    }

    #[test]
    fn bidir_has_both_directions() {
        let mut s = TestSpec::stream_default();
        s.direction = Direction::Bidir;
        s.flows = 2;
        assert_eq!(
            s.flow_dirs(),
            vec![
                FlowDir::ClientToServer,
                FlowDir::ClientToServer,
                FlowDir::ServerToClient,
                FlowDir::ServerToClient
            ]
        );
        assert_eq!(s.connection_count(), 4);
    }
}
