//! [`TestSpec`]: one serde type that describes a whole test.
//!
//! A spec is the settings every workload shares ([`CommonSpec`]) plus one [`WorkloadSpec`]
//! variant carrying only the fields that apply to that workload: a request/response test has
//! no send path, a UDP test no congestion control, a CRR test no burst. What cannot be said
//! cannot be inconsistent, so the validation ([`crate::validate`]) checks ranges and the few
//! relations that remain. The client sends exactly one spec; the server validates it against
//! its own [`Limits`] before admitting the test.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod defaults;
pub use defaults::{
    CallSizes, StreamShape, DEFAULT_NONCOPY_RECV_BYTES, DEFAULT_STREAM_MSG_BYTES,
    EPOLL_CALLS_BUDGET_BYTES,
};

/// Which family of test to run (the tag of [`WorkloadSpec`], for labels, records and CSV).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
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

impl WorkloadKind {
    /// The wire name (`"stream"`, `"udp_rr"`, ...), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Stream => "stream",
            WorkloadKind::Rr => "rr",
            WorkloadKind::Crr => "crr",
            WorkloadKind::UdpRr => "udp_rr",
            WorkloadKind::UdpStream => "udp_stream",
        }
    }

    /// True for the request/response workloads.
    pub fn is_rr(self) -> bool {
        matches!(
            self,
            WorkloadKind::Rr | WorkloadKind::Crr | WorkloadKind::UdpRr
        )
    }

    /// True for the UDP workloads.
    pub fn is_udp(self) -> bool {
        matches!(self, WorkloadKind::UdpRr | WorkloadKind::UdpStream)
    }
}

/// Which way data moves, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The client sends, the server receives.
    Forward,
    /// The server sends, the client receives.
    Reverse,
    /// Both at once: `flows` flows each way.
    Bidir,
}

impl Direction {
    /// The direction of each of the flows of a test with `flows` flows (per direction), in
    /// flow-id order: the client-to-server flows first for bidir.
    pub fn flow_dirs(self, flows: u32) -> Vec<FlowDir> {
        let n = flows as usize;
        match self {
            Direction::Forward => vec![FlowDir::ClientToServer; n],
            Direction::Reverse => vec![FlowDir::ServerToClient; n],
            Direction::Bidir => {
                let mut v = vec![FlowDir::ClientToServer; n];
                v.extend(std::iter::repeat_n(FlowDir::ServerToClient, n));
                v
            }
        }
    }
}

/// Which way one flow's payload moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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
    /// `sendfile(2)` from a file in the page cache (iperf3 `-Z`).
    Sendfile,
    /// `vmsplice(2)` the buffer into a pipe, `splice(2)` the pipe into the socket.
    Splice,
    /// `send(MSG_ZEROCOPY)` with completion notifications from the socket's error queue.
    Zerocopy,
    /// io_uring `SEND` in linked chains: the kernel copies the payload, as with `write(2)`,
    /// without a system call per message.
    Uring,
    /// io_uring `SEND_ZC` from a registered buffer: no copy at the sender where the device
    /// allows it (loopback and veth copy anyway, and the result says so).
    UringZc,
}

impl SendPath {
    /// Every send path, in documentation order.
    pub const ALL: [SendPath; 6] = [
        SendPath::Copy,
        SendPath::Sendfile,
        SendPath::Splice,
        SendPath::Zerocopy,
        SendPath::Uring,
        SendPath::UringZc,
    ];

    /// The wire name (`"copy"`, `"sendfile"`, ...).
    pub fn as_str(self) -> &'static str {
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
    /// Every receive path, in documentation order.
    pub const ALL: [RecvPath; 5] = [
        RecvPath::Copy,
        RecvPath::Discard,
        RecvPath::Splice,
        RecvPath::Zerocopy,
        RecvPath::Uring,
    ];

    /// The wire name (`"copy"`, `"discard"`, ...).
    pub fn as_str(self) -> &'static str {
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

pub use crate::recv_wait::{
    RecvWait, NAPS_BEFORE_BLOCK, NAP_MAX_CALL_BYTES, NAP_MIN_RCVBUF_BYTES, NAP_SHARED_FLOWS,
    NAP_US, SPIN_US,
};

/// How a CRR client closes each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloseMode {
    /// Shutdown write, wait for the server's EOF, close (FIN both ways; TIME_WAIT on the
    /// client).
    #[default]
    Orderly,
    /// SO_LINGER 0, close: the kernel sends RST and keeps no TIME_WAIT.
    Abortive,
}

/// How many tests one admission group ([`CommonSpec::admission_group`]) may hold: the load
/// and the measured test of `rr --under-load`.
pub const ADMISSION_GROUP_TESTS: u32 = 2;

/// Settings every workload shares. Durations in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommonSpec {
    /// Parallel flows per direction (bidir opens twice this many connections).
    pub flows: u32,
    /// Measured duration after warm-up, milliseconds.
    pub duration_ms: u64,
    /// Warm-up before the measurement window opens, milliseconds (excluded from results).
    pub warmup_ms: u64,
    /// Live interval length, milliseconds; `None` for no interval samples.
    pub interval_ms: Option<u64>,
    /// SO_SNDBUF and SO_RCVBUF requested on both ends, bytes; `None` leaves the kernel's
    /// autotuning on.
    pub window_bytes: Option<u32>,
    /// CPU to pin the server's data threads to; `None` leaves placement to the scheduler.
    pub server_cpu: Option<u32>,
    /// CPU the client pins its own data threads to; carried so that the result records the
    /// whole placement (the server only checks its range).
    pub client_cpu: Option<u32>,
    /// IP type of service / traffic class byte on every data socket at both ends (the DSCP
    /// is its upper six bits); `None` leaves the kernel's default.
    pub tos: Option<u8>,
    /// `SO_MAX_PACING_RATE` of every data socket at both ends, bits per second (the kernel
    /// paces each socket to it); `None` for no cap.
    pub fq_rate_bps: Option<u64>,
    /// Set Don't Fragment (path-MTU discovery always on) on every data socket.
    pub dont_fragment: bool,
    /// Profile each end's CPUs over the measurement window at this many samples per second
    /// per CPU (`--profile`, `--profile-hz`); `None` for no profile. The server profiles
    /// only if its policy allows it (`serve --allow-profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_hz: Option<u32>,
    /// Where every data buffer starts at both ends, bytes past a page boundary
    /// (`--buffer-offset`, 0 to [`MAX_BUFFER_OFFSET_BYTES`]); `None` for the default,
    /// page-aligned (0). Each end reports the placement it used
    /// (`SideReport::buffer_offset_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_offset_bytes: Option<u32>,
    /// Tests of one client that run at once as one measurement (`rr --under-load`: the load
    /// and the measured test) share this random id: a server counts the group as one test
    /// against its per-peer cap. A group has at most [`ADMISSION_GROUP_TESTS`] tests, and
    /// their flows together stay within the server's `max_flows`. `None`: a test of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_group: Option<u64>,
}

impl Default for CommonSpec {
    /// One flow, 10 s, no warm-up, no intervals, autotuned buffers, no pinning.
    fn default() -> Self {
        CommonSpec {
            flows: 1,
            duration_ms: 10_000,
            warmup_ms: 0,
            interval_ms: None,
            window_bytes: None,
            server_cpu: None,
            client_cpu: None,
            tos: None,
            fq_rate_bps: None,
            dont_fragment: false,
            profile_hz: None,
            buffer_offset_bytes: None,
            admission_group: None,
        }
    }
}

/// TCP socket settings of the TCP workloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// TCP congestion control for every data connection (1–15 characters of `[a-z0-9_-]`);
    /// `None` uses each host's default.
    pub congestion: Option<String>,
    /// Set TCP_NODELAY on data connections.
    pub nodelay: bool,
    /// TCP_MAXSEG on data connections, bytes (set before connect at the client, on the
    /// accepted socket at the server); `None` leaves it to the path.
    pub mss_bytes: Option<u32>,
    /// `TCP_NOTSENT_LOWAT` on every data connection at both ends, bytes (`--notsent-lowat`,
    /// iperf2's `--tcp-write-prefetch`): a sending socket counts as writable only while less
    /// than this of its queue is unsent, so data the window holds back waits in the
    /// application instead of the kernel. `None` leaves each namespace's
    /// `net.ipv4.tcp_notsent_lowat` (by default no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_lowat_bytes: Option<u32>,
}

/// The bulk TCP transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// Data direction.
    pub direction: Direction,
    /// Bytes per send call at the sending end.
    pub send_size_bytes: u32,
    /// Bytes per receive call at the receiving end.
    pub recv_size_bytes: u32,
    /// Target payload rate of each flow, bits per second, paced by the sender; `None` sends
    /// as fast as the path allows.
    pub rate_bps: Option<u64>,
    /// How the sending end of every flow sends (whichever end that is). An end that cannot
    /// use the path falls back to copy and says so in its report.
    pub send_path: SendPath,
    /// How the receiving end of every flow receives.
    pub recv_path: RecvPath,
    /// The receiver checks every byte against the payload both ends derive from a shared
    /// constant seed.
    pub verify: bool,
    /// Epoll worker threads at each end (neper's model). Set, every end runs the many-flow
    /// engine with this many workers (at most one per flow; copy paths, unpaced). `None`
    /// chooses: a thread per flow up to 32 flows, above that one worker per online CPU.
    pub threads: Option<u32>,
    /// Pin each end's data threads round-robin over the CPUs that end may run on.
    /// `server_cpu` / `client_cpu`, when set, pin every thread of their end to one CPU
    /// instead.
    pub pin_threads: bool,
    /// TCP socket settings.
    pub tcp: TcpOptions,
    /// Stop each direction once its sending end has handed this many payload bytes to the
    /// kernel (`-n`/`-k`), split evenly over the direction's flows (the first flows take the
    /// remainder); the duration is then an upper bound. `None` runs for the duration.
    #[serde(default)]
    pub stop_after_bytes: Option<u64>,
    /// How each receiving flow waits for data; absent on the wire means `block`.
    #[serde(default, skip_serializing_if = "RecvWait::is_block")]
    pub recv_wait: RecvWait,
}

impl Default for StreamSpec {
    /// Forward, 128 KiB calls, unpaced, copy paths: a fixed spec for tests and peers. The
    /// defaults of `wirebench stream` (1 MiB calls, fewer for many flows or a sender that
    /// does not copy) are [`StreamSpec::new`]'s.
    fn default() -> Self {
        StreamSpec {
            direction: Direction::Forward,
            send_size_bytes: 128 * 1024,
            recv_size_bytes: 128 * 1024,
            rate_bps: None,
            send_path: SendPath::Copy,
            recv_path: RecvPath::Copy,
            verify: false,
            threads: None,
            pin_threads: false,
            tcp: TcpOptions::default(),
            stop_after_bytes: None,
            recv_wait: RecvWait::Block,
        }
    }
}

/// How a TCP RR flow paces its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "loop", rename_all = "snake_case", deny_unknown_fields)]
pub enum RrLoop {
    /// Closed loop: `burst` transactions in flight per flow (netperf `-b`); 1 is ping-pong.
    Closed {
        /// Transactions in flight per flow.
        burst: u32,
    },
    /// Open loop: requests leave on a fixed schedule and latency is measured from each
    /// request's scheduled time (no coordinated omission).
    Open {
        /// Requests scheduled per second, per flow.
        transactions_per_s: u64,
        /// Most requests outstanding per flow (the sender waits at the cap).
        max_outstanding: u32,
    },
}

/// Busy polling of a request/response test's data sockets at both ends (`rr --busy-poll`):
/// the sockets are non-blocking and each flow thread spins on them, yielding the CPU
/// (`sched_yield`) between attempts, instead of sleeping until data arrives, so no
/// transaction pays a wake-up. Both ends' CPU figures then include the spinning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BusyPoll {
    /// SO_BUSY_POLL on every data socket, microseconds: the kernel then also polls the
    /// device's receive queue for this long when a receive finds nothing (devices with NAPI
    /// busy polling only; loopback has none); 0 leaves it unset.
    pub so_busy_poll_us: u32,
}

/// TCP request/response (netperf TCP_RR).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrSpec {
    /// Bytes per request.
    pub request_size_bytes: u32,
    /// Bytes per response.
    pub response_size_bytes: u32,
    /// Closed or open loop.
    pub pacing: RrLoop,
    /// TCP socket settings.
    pub tcp: TcpOptions,
    /// Busy polling at both ends; `None`: the flows sleep in blocking calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll: Option<BusyPoll>,
}

impl Default for RrSpec {
    /// 1-byte request and response, closed loop, burst 1.
    fn default() -> Self {
        RrSpec {
            request_size_bytes: 1,
            response_size_bytes: 1,
            pacing: RrLoop::Closed { burst: 1 },
            tcp: TcpOptions::default(),
            busy_poll: None,
        }
    }
}

/// TCP connect/request/response/close (netperf TCP_CRR).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrrSpec {
    /// Bytes per request.
    pub request_size_bytes: u32,
    /// Bytes per response.
    pub response_size_bytes: u32,
    /// How the client closes each connection.
    pub close_mode: CloseMode,
    /// TCP socket settings.
    pub tcp: TcpOptions,
}

impl Default for CrrSpec {
    /// 1-byte request and response, orderly close.
    fn default() -> Self {
        CrrSpec {
            request_size_bytes: 1,
            response_size_bytes: 1,
            close_mode: CloseMode::Orderly,
            tcp: TcpOptions::default(),
        }
    }
}

/// UDP request/response (netperf UDP_RR).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpRrSpec {
    /// Bytes per request (at least 8: the sequence number).
    pub request_size_bytes: u32,
    /// Bytes per response (at least 8).
    pub response_size_bytes: u32,
    /// Wait for a response before the transaction counts as lost, milliseconds.
    pub timeout_ms: u64,
    /// Busy polling at both ends; `None`: the flows sleep in blocking calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll: Option<BusyPoll>,
}

impl Default for UdpRrSpec {
    /// 8-byte request and response (the sequence number), 100 ms timeout.
    fn default() -> Self {
        UdpRrSpec {
            request_size_bytes: MIN_UDP_RR_BYTES,
            response_size_bytes: MIN_UDP_RR_BYTES,
            timeout_ms: 100,
            busy_poll: None,
        }
    }
}

/// UDP datagram stream (iperf3 -u).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpStreamSpec {
    /// Data direction.
    pub direction: Direction,
    /// Bytes per datagram (UDP payload, the 24-byte header included).
    pub datagram_bytes: u32,
    /// Rate of each flow, bits per second of UDP payload; `None`: unpaced.
    pub rate_bps: Option<u64>,
}

impl Default for UdpStreamSpec {
    /// Forward, 1400-byte datagrams at 1 Mbit/s per flow (iperf3 -u's defaults).
    fn default() -> Self {
        UdpStreamSpec {
            direction: Direction::Forward,
            datagram_bytes: 1400,
            rate_bps: Some(1_000_000),
        }
    }
}

/// The workload and the settings that apply only to it. In JSON, externally tagged:
/// `{"stream": {...}}` (so that a decoding error names the exact path of the bad field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadSpec {
    /// Bulk TCP transfer.
    Stream(StreamSpec),
    /// TCP request/response.
    Rr(RrSpec),
    /// TCP connect/request/response/close.
    Crr(CrrSpec),
    /// UDP request/response.
    UdpRr(UdpRrSpec),
    /// UDP datagram stream.
    UdpStream(UdpStreamSpec),
}

impl WorkloadSpec {
    /// The tag.
    pub fn kind(&self) -> WorkloadKind {
        match self {
            WorkloadSpec::Stream(_) => WorkloadKind::Stream,
            WorkloadSpec::Rr(_) => WorkloadKind::Rr,
            WorkloadSpec::Crr(_) => WorkloadKind::Crr,
            WorkloadSpec::UdpRr(_) => WorkloadKind::UdpRr,
            WorkloadSpec::UdpStream(_) => WorkloadKind::UdpStream,
        }
    }

    /// The busy polling a request/response workload asks for (TCP RR and UDP RR only).
    pub fn busy_poll(&self) -> Option<BusyPoll> {
        match self {
            WorkloadSpec::Rr(r) => r.busy_poll,
            WorkloadSpec::UdpRr(r) => r.busy_poll,
            _ => None,
        }
    }

    /// Request and response sizes of the request/response workloads.
    pub fn rr_sizes(&self) -> Option<(u32, u32)> {
        match self {
            WorkloadSpec::Rr(r) => Some((r.request_size_bytes, r.response_size_bytes)),
            WorkloadSpec::Crr(r) => Some((r.request_size_bytes, r.response_size_bytes)),
            WorkloadSpec::UdpRr(r) => Some((r.request_size_bytes, r.response_size_bytes)),
            _ => None,
        }
    }
}

/// A complete description of one test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// Settings every workload shares.
    pub common: CommonSpec,
    /// The workload and its own settings.
    pub workload: WorkloadSpec,
}

impl TestSpec {
    /// A spec of `workload` with the default common settings.
    pub fn new(workload: WorkloadSpec) -> Self {
        TestSpec {
            common: CommonSpec::default(),
            workload,
        }
    }

    /// A forward stream test with the fixed defaults of [`StreamSpec`]'s `Default` (128 KiB
    /// calls; `wirebench stream`'s own are [`StreamSpec::new`]'s).
    pub fn stream_default() -> Self {
        TestSpec::new(WorkloadSpec::Stream(StreamSpec::default()))
    }

    /// The workload's tag.
    pub fn kind(&self) -> WorkloadKind {
        self.workload.kind()
    }

    /// The data direction: the stream workloads' own, forward for request/response (the
    /// client sends the requests).
    pub fn direction(&self) -> Direction {
        match &self.workload {
            WorkloadSpec::Stream(s) => s.direction,
            WorkloadSpec::UdpStream(u) => u.direction,
            _ => Direction::Forward,
        }
    }

    /// The TCP settings of the TCP workloads; `None` for UDP.
    pub fn tcp(&self) -> Option<&TcpOptions> {
        match &self.workload {
            WorkloadSpec::Stream(s) => Some(&s.tcp),
            WorkloadSpec::Rr(r) => Some(&r.tcp),
            WorkloadSpec::Crr(r) => Some(&r.tcp),
            _ => None,
        }
    }

    /// The congestion control asked for, if any.
    pub fn congestion(&self) -> Option<&str> {
        self.tcp().and_then(|t| t.congestion.as_deref())
    }

    /// The per-flow rate asked for, bits per second (stream and UDP stream).
    pub fn rate_bps(&self) -> Option<u64> {
        match &self.workload {
            WorkloadSpec::Stream(s) => s.rate_bps,
            WorkloadSpec::UdpStream(u) => u.rate_bps,
            _ => None,
        }
    }

    /// The byte count after which each direction stops, if the test asks for one (stream
    /// only).
    pub fn stop_after_bytes(&self) -> Option<u64> {
        match &self.workload {
            WorkloadSpec::Stream(s) => s.stop_after_bytes,
            _ => None,
        }
    }

    /// Number of data connections (flows) the test carries: twice `flows` for bidir.
    pub fn connection_count(&self) -> u32 {
        match self.direction() {
            Direction::Bidir => self.common.flows.saturating_mul(2),
            _ => self.common.flows,
        }
    }

    /// Data connections the client opens right after admission, before the engines start:
    /// none for CRR (it opens one per transaction while the test runs), one per flow
    /// otherwise (for UDP workloads it carries the exchange of UDP ports, then stays idle).
    pub fn setup_connections(&self) -> u32 {
        match self.kind() {
            WorkloadKind::Crr => 0,
            _ => self.connection_count(),
        }
    }

    /// The flows of this test, in flow-id order, with the direction each one carries.
    pub fn flow_dirs(&self) -> Vec<FlowDir> {
        self.direction().flow_dirs(self.common.flows)
    }

    /// Epoll worker threads each end runs this test's flows on, or `None` for a thread per
    /// flow: stream tests only, [`StreamShape::epoll_workers_bound`].
    pub fn epoll_workers_bound(&self) -> Option<u32> {
        match &self.workload {
            WorkloadSpec::Stream(s) => s.shape(self.common.flows).epoll_workers_bound(),
            _ => None,
        }
    }

    /// Message buffers one end allocates for this test: one per connection, or on the epoll
    /// engine ([`TestSpec::epoll_workers_bound`]) one receive buffer per worker plus the
    /// payload block its senders share.
    pub fn message_buffers(&self) -> u64 {
        match self.epoll_workers_bound() {
            Some(workers) => u64::from(workers) + 1,
            None => u64::from(self.connection_count()),
        }
    }

    /// Largest message buffer one connection makes an end allocate, bytes.
    pub fn buffer_bytes_per_connection(&self) -> u64 {
        let b = match &self.workload {
            WorkloadSpec::Stream(s) => s.send_size_bytes.max(s.recv_size_bytes),
            WorkloadSpec::UdpStream(u) => u.datagram_bytes,
            w => w.rr_sizes().map_or(1, |(a, b)| a.max(b)),
        };
        u64::from(b)
    }
}

/// The server's policy limits. Every field has a safe default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest `flows` accepted (`serve --max-flows`).
    pub max_flows: u32,
    /// Longest measured duration, milliseconds (`serve --max-duration`).
    pub max_duration_ms: u64,
    /// Longest warm-up, milliseconds.
    pub max_warmup_ms: u64,
    /// Largest message, request or response size, bytes.
    pub max_msg_size_bytes: u32,
    /// Largest socket buffer request, bytes.
    pub max_window_bytes: u32,
    /// Tests that may run at once (`serve --max-tests`).
    pub max_concurrent_tests: u32,
    /// Largest aggregate payload rate of one test, bits per second (`serve --max-rate`);
    /// `None` for no limit. When set, tests must ask for a rate, and the server aborts a test
    /// whose data moves faster than allowed.
    pub max_rate_bps: Option<u64>,
    /// The highest CPU number this server may pin to (it refuses a `server_cpu` above it);
    /// `None` when unknown.
    pub max_cpu: Option<u32>,
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
            max_cpu: None,
        }
    }
}

/// Most interval samples (intervals × connections) one test may produce, so that the results
/// message stays under the absolute frame cap.
pub const MAX_INTERVAL_SAMPLES: u64 = 500_000;
/// Largest sum of message buffers (message size × [`TestSpec::message_buffers`]) one test
/// may make an end allocate, bytes.
pub const MAX_TOTAL_MSG_BUFFER_BYTES: u64 = 512 * 1024 * 1024;
/// Slowest per-flow rate a spec may ask for, bits per second.
pub const MIN_RATE_BPS: u64 = 1_000;
/// Fastest per-flow rate a spec may ask for, bits per second (10 Tbit/s).
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// Smallest UDP request/response size: the first 8 bytes carry the sequence number.
pub const MIN_UDP_RR_BYTES: u32 = 8;
/// Largest UDP payload, bytes (IPv4: 65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;
/// Smallest UDP stream datagram: the 24-byte header.
pub const MIN_UDP_DATAGRAM_BYTES: u32 = 24;
/// Most transactions a request/response flow may keep in flight (burst).
pub const MAX_BURST: u32 = 1024;
/// Longest SO_BUSY_POLL a request/response spec may ask for, microseconds (a receive that
/// finds nothing then polls the device this long; beyond a millisecond it is no longer
/// busy polling but a stall).
pub const MAX_SO_BUSY_POLL_US: u32 = 1000;
/// Default SO_BUSY_POLL of `rr --busy-poll`, microseconds (the kernel documentation's
/// suggested 50).
pub const DEFAULT_SO_BUSY_POLL_US: u32 = 50;
/// Most epoll worker threads a stream test may ask for at one end, and the most the engine
/// starts on its own.
pub const MAX_THREADS: u32 = 256;
/// Connections at one end above which an unpaced copy-path stream runs on the epoll engine
/// (one worker per online CPU) when `threads` is not set.
pub const MANY_FLOW_THRESHOLD: u32 = 32;
/// Highest open-loop rate of one flow, transactions per second.
pub const MAX_TRANSACTIONS_PER_S: u64 = 10_000_000;
/// Largest open-loop cap on outstanding requests per flow.
pub const MAX_OUTSTANDING: u32 = 100_000;
/// Default open-loop cap on outstanding requests per flow.
pub const DEFAULT_MAX_OUTSTANDING: u32 = 1000;
/// Longest UDP RR response timeout, milliseconds.
pub const MAX_UDP_TIMEOUT_MS: u64 = 60_000;
/// Shortest measured duration, milliseconds.
pub const MIN_DURATION_MS: u64 = 100;
/// Shortest interval, milliseconds.
pub const MIN_INTERVAL_MS: u64 = 100;
/// Smallest socket buffer request, bytes.
pub const MIN_WINDOW_BYTES: u32 = 2048;
/// Smallest TCP_MAXSEG Linux accepts, bytes.
pub const MIN_MSS_BYTES: u32 = 88;
/// Largest TCP_MAXSEG, bytes.
pub const MAX_MSS_BYTES: u32 = 65_495;
/// Largest `TCP_NOTSENT_LOWAT` a spec may ask for, bytes (1 GiB; the kernel takes an `int`).
pub const MAX_NOTSENT_LOWAT_BYTES: u32 = 1 << 30;
/// Largest buffer offset a spec may ask for, bytes: one below the smallest page size (4 KiB).
pub const MAX_BUFFER_OFFSET_BYTES: u32 = 4095;
/// Highest CPU number a spec may name.
pub const MAX_CPU: u32 = 4095;

/// The highest profiling frequency a spec may ask for, samples per second per CPU (the
/// kernel's `perf_event_max_sample_rate` may be lower; the end then says so).
pub const MAX_PROFILE_HZ: u32 = 20_000;
/// The largest stream byte count to stop after (`-n`): 1 EiB per direction.
pub const MAX_STOP_AFTER_BYTES: u64 = 1 << 60;
