//! Typed measurement problems and flow errors. A [`Warning`] is a code with parameters
//! (`{"code": "cpu_bound", "params": {...}}` in JSON); the printers turn it into a sentence.
//! Nothing here is English prose, apart from the operating system's own error texts carried in
//! [`OsError::message`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::abort::AbortReason;
use crate::side::{HostRole, PathUsed, Role};
use crate::spec::{FlowDir, RecvPath, SendPath};

/// An operating-system error: its number and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OsError {
    /// `errno`, when the error came from a system call.
    pub errno: Option<i32>,
    /// The error's description (the OS's text).
    pub message: String,
}

impl From<&std::io::Error> for OsError {
    fn from(e: &std::io::Error) -> Self {
        OsError {
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for OsError {
    fn from(e: std::io::Error) -> Self {
        OsError::from(&e)
    }
}

/// The step of a flow's life at which something failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Sending payload or a datagram.
    Send,
    /// Receiving payload or a datagram.
    Receive,
    /// Writing a request.
    RequestWrite,
    /// Reading a request.
    RequestRead,
    /// Writing a response.
    ResponseWrite,
    /// Reading a response.
    ResponseRead,
    /// Opening a connection.
    Connect,
    /// Setting socket options.
    SocketOptions,
    /// Shutting the write side down.
    Shutdown,
    /// Waiting for the peer's close.
    PeerClose,
    /// Pinning the thread to a CPU.
    Pin,
    /// Starting the flow's thread.
    ThreadStart,
    /// Running the flow's thread (it ended without a result).
    Thread,
    /// Setting the socket up for, or waiting in, epoll.
    Epoll,
    /// Collecting `MSG_ZEROCOPY` completions.
    ZerocopyCompletions,
    /// Completing io_uring sends.
    UringSend,
    /// Checking the payload.
    Verify,
    /// Draining after the stop instant.
    Drain,
}

/// What went wrong at a [`Step`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Cause {
    /// A system call failed.
    Os {
        /// The error.
        error: OsError,
    },
    /// The peer closed the connection (at a message boundary, or in the middle of one).
    PeerClosed {
        /// True if the close cut a message short.
        mid_message: bool,
    },
    /// Nothing arrived within the bound.
    TimedOut {
        /// The bound, milliseconds.
        after_ms: u64,
    },
    /// Received payload differed from the expected content.
    Mismatch {
        /// Bytes that differed.
        mismatched_bytes: u64,
        /// Stream offset of the first one.
        first_offset: u64,
    },
    /// The thread ended without handing back a result (it panicked).
    Panicked,
}

/// Why a flow ended early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowError {
    /// Where.
    pub step: Step,
    /// What.
    pub cause: Cause,
}

impl FlowError {
    /// A system call at `step` failed with `e`.
    pub fn os(step: Step, e: &std::io::Error) -> FlowError {
        FlowError {
            step,
            cause: Cause::Os { error: e.into() },
        }
    }

    /// The flow's thread ended without a result.
    pub fn panicked() -> FlowError {
        FlowError {
            step: Step::Thread,
            cause: Cause::Panicked,
        }
    }
}

/// Why an end used the copy path instead of the one asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum FallbackReason {
    /// Disabled by the `WIREBENCH_DISABLE_PATHS` variable.
    DisabledByEnv,
    /// Setting the path up failed.
    SetupFailed {
        /// The error.
        error: OsError,
    },
    /// The engine that ran this end (the many-flow epoll engine) has only the copy path.
    EngineHasOnlyCopy,
}

/// A data thread of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "thread", content = "id", rename_all = "snake_case")]
pub enum DataThread {
    /// The thread of flow `id`.
    Flow(u32),
    /// Epoll worker `id`.
    Worker(u32),
    /// The open-loop request sender of flow `id`.
    OpenLoopSender(u32),
    /// UDP receive socket `id` (an index, not a flow).
    UdpReceiver(u32),
}

/// Why CPU utilization was not measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum CpuUnmeasured {
    /// /proc/stat could not be read.
    ProcStatUnreadable,
    /// The two snapshots could not be compared (CPUs went on- or offline, counters went back).
    Incomparable {
        /// What was inconsistent.
        detail: String,
    },
}

/// Why the many-flow epoll engine could not run a test that asked for worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum EpollBlocker {
    /// A rate is set (the epoll engine does not pace).
    Paced,
    /// A path other than copy was asked for.
    Paths {
        /// The send path.
        send: SendPath,
        /// The receive path.
        recv: RecvPath,
    },
}

/// A measurement problem or a note worth a reader's attention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "code", content = "params", rename_all = "snake_case")]
pub enum Warning {
    // ───── from the engines ─────
    /// The spec asked for a CPU profile and this end has none.
    ProfileUnavailable {
        /// Why.
        reason: crate::profile::ProfileUnavailable,
    },
    /// The profile's ring buffers overflowed: the kernel dropped samples (not classified).
    ProfileSamplesLost {
        /// Samples lost.
        lost_samples: u64,
        /// Samples kept.
        samples: u64,
    },
    /// The profile's rate is in step with a periodic activity: its samples fell at only
    /// `phases` distinct phases of it (1 when the sampling period is a whole number of the
    /// activity's periods), so its breakdown may be far from where the CPU's time went. The
    /// activity is the kernel's tick (`periodic_hz` = `CONFIG_HZ`) or round-millisecond timers
    /// (1000). Added by the client (which knows its own kernel's tick, and the server's only
    /// when both share it).
    ProfileInStep {
        /// The sampling rate, per CPU.
        freq_hz: u32,
        /// The rate of the activity it is in step with, Hz.
        periodic_hz: u32,
        /// Distinct phases of that activity the samples fell on.
        phases: u32,
        /// Whether that activity is the kernel's tick (else round-millisecond timers).
        tick: bool,
    },
    /// A data thread could not be started; its flow did not run.
    ThreadStartFailed {
        /// The thread.
        thread: DataThread,
        /// The error.
        error: OsError,
    },
    /// A data thread could not be pinned to its CPU; it ran where the scheduler put it.
    PinFailed {
        /// The thread.
        thread: DataThread,
        /// The error.
        error: OsError,
    },
    /// Flows that used the copy path instead of the one asked for.
    PathFallback {
        /// The flows.
        flows: Vec<u32>,
        /// The path asked for.
        requested: PathUsed,
        /// Why.
        reason: FallbackReason,
    },
    /// A receiver saw no end of data within the drain limit after the stop; its window was
    /// cut there.
    DrainTruncated {
        /// The receiving thread.
        thread: DataThread,
        /// The drain limit, milliseconds.
        drain_limit_ms: u64,
    },
    /// CPU utilization was not measured at this end.
    CpuNotMeasured {
        /// Why.
        reason: CpuUnmeasured,
    },
    /// The many-flow engine ran paced flows unpaced.
    PacingUnsupported {
        /// The rate that was asked for, bits per second.
        rate_bps: u64,
    },
    /// The worker-thread count asked for was ignored: a thread per flow ran.
    ThreadsIgnored {
        /// Workers asked for.
        threads: u32,
        /// Why the epoll engine could not run.
        blocker: EpollBlocker,
        /// Flows at this end (one thread each).
        flows: u32,
    },
    /// A flow kept going through repeated errors at one step.
    RepeatedErrors {
        /// The flow.
        flow: u32,
        /// The step.
        step: Step,
        /// How many.
        count: u64,
        /// The last error.
        last: OsError,
    },
    /// Latencies outside the histogram's range (1 ns .. 100 s) were clamped into it.
    LatencyClamped {
        /// How many.
        count: u64,
    },

    // ───── from the analysis ─────
    /// An end reported a flow the spec does not have; it was ignored.
    UnexpectedFlow {
        /// The end.
        host: HostRole,
        /// The flow id.
        flow: u32,
    },
    /// The server's report never arrived: the figures only it measures are 0 or absent.
    NoServerReport,
    /// An end's part of the test was aborted.
    SideAborted {
        /// The end.
        host: HostRole,
        /// Why.
        reason: AbortReason,
    },
    /// A data socket runs another congestion control than the one asked for.
    CongestionMismatch {
        /// The end whose sockets disagree.
        host: HostRole,
        /// Asked for.
        requested: String,
        /// In use (getsockopt TCP_CONGESTION).
        in_use: String,
        /// The flows concerned.
        flows: Vec<u32>,
    },
    /// Neither end reported the congestion control of its data sockets.
    CongestionUnreported,
    /// An end's report has no figures for a flow; they are 0.
    MissingFlowFigures {
        /// The flow.
        flow: u32,
        /// The end that should have reported it.
        host: HostRole,
        /// Its role on the flow.
        role: Role,
    },
    /// A flow's window at one end has zero length; its throughput there is 0.
    ZeroWindow {
        /// The flow.
        flow: u32,
        /// The end.
        host: HostRole,
        /// Its role.
        role: Role,
    },
    /// A flow ended early at one end.
    FlowFailed {
        /// The flow.
        flow: u32,
        /// The end.
        host: HostRole,
        /// What happened.
        error: crate::warning::FlowError,
    },
    /// The senders' or receivers' windows of a direction are all empty; its total is 0.
    EmptyDirectionWindow {
        /// The direction.
        dir: FlowDir,
        /// Whose windows.
        role: Role,
    },
    /// Bytes sent but never read over the whole test (cut short, or a flow failed).
    UnreadBytes {
        /// The direction.
        dir: FlowDir,
        /// Bytes the senders wrote, whole test.
        sender_total_bytes: u64,
        /// Bytes the receivers read, whole test.
        receiver_total_bytes: u64,
    },
    /// `stream -n/-k`: a direction's receivers read fewer bytes than the count asked (the
    /// duration bound ended the test first, or a flow failed).
    StopCountNotReached {
        /// The direction.
        dir: FlowDir,
        /// Bytes the receivers read, whole test.
        receiver_total_bytes: u64,
        /// The count asked for, per direction.
        asked_bytes: u64,
        /// The duration bound, milliseconds.
        bound_ms: u64,
    },
    /// The receivers' rate of a direction changed during the run: its slowest full interval
    /// was at most half its fastest (the first interval after the warm-up, which holds the
    /// ramp-up, and intervals shorter than the rest are left out). The total is then an
    /// average over different states of the path or the machine.
    RateVaried {
        /// The direction.
        dir: FlowDir,
        /// Intervals compared.
        intervals: u32,
        /// Their median length, seconds.
        interval_s: f64,
        /// The slowest interval's receiver rate, bits per second.
        min_bps: f64,
        /// The median interval's receiver rate, bits per second.
        median_bps: f64,
        /// The fastest interval's receiver rate, bits per second.
        max_bps: f64,
    },
    /// A note: senders and receivers count different bytes inside their windows (bytes in
    /// flight at the window edges).
    WindowEdgeDifference {
        /// The direction.
        dir: FlowDir,
        /// Senders' window bytes.
        sender_bytes: u64,
        /// Receivers' window bytes.
        receiver_bytes: u64,
    },
    /// The socket buffer asked for (`-w`) is above what the kernel allows an unprivileged
    /// request at this end (net.core.rmem_max / wmem_max): the kernel capped it there.
    WindowCapped {
        /// The end.
        host: HostRole,
        /// Asked for, bytes.
        requested_bytes: u64,
        /// net.core.rmem_max at that end, bytes.
        rmem_max_bytes: Option<u64>,
        /// net.core.wmem_max at that end, bytes.
        wmem_max_bytes: Option<u64>,
    },
    /// No CPU figures from this end.
    NoCpuFigures {
        /// The end.
        host: HostRole,
    },
    /// Both ends ran on one kernel: their system-wide CPU figures count the same CPUs.
    SameHost,
    /// An end's CPU window is empty.
    EmptyCpuWindow {
        /// The end.
        host: HostRole,
    },
    /// /proc/stat (tick-sampled) shows less busy time than wirebench's own threads used:
    /// the system-wide figure is a lower bound.
    ProcStatBelowThreads {
        /// The end.
        host: HostRole,
        /// System-wide busy, percent of all CPUs.
        system_busy_pct: f64,
    },
    /// A CPU the test used was saturated: the result measures that CPU, not the path.
    CpuBound {
        /// The end.
        host: HostRole,
        /// The CPU.
        cpu: u32,
        /// Its busy share, percent.
        busy_pct: f64,
        /// wirebench's own data threads' share of it, percent of one CPU.
        threads_pct: f64,
    },
    /// The client reported no request/response figures.
    NoRrFigures,
    /// The server answered more transactions than the client completed.
    RequestsInFlight {
        /// Server transactions, whole test.
        server_transactions: u64,
        /// Client transactions, whole test.
        client_transactions: u64,
    },
    /// An open-loop flow did not keep its schedule.
    OpenLoopBehind {
        /// The flow.
        flow: u32,
        /// Achieved, transactions per second.
        achieved_per_s: f64,
        /// Requested, transactions per second.
        requested_per_s: f64,
        /// Slots never sent.
        missed_slots: u64,
        /// Peak outstanding requests.
        peak_outstanding: u64,
        /// The cap.
        max_outstanding: u32,
    },
    /// A UDP flow's report from one of its ends is missing.
    UdpMissingReport {
        /// The flow.
        flow: u32,
        /// The missing role.
        role: Role,
    },
    /// A UDP sender fell behind its pacing schedule and skipped ahead instead of bursting.
    PacingFellBehind {
        /// The direction.
        dir: FlowDir,
        /// How often.
        resets: u64,
    },
    /// The figures fail a reconciliation no real run can fail: the run is invalid.
    Impossible {
        /// What cannot be true.
        what: Impossibility,
    },

    // ───── from the runner ─────
    /// A run ended (interrupted, aborted) during its warm-up, before the measurement window
    /// opened at either end: it has no figures, and its summary is empty.
    EndedBeforeWindow {
        /// The run, 1-based.
        run: u32,
    },
    /// A run of the invocation was aborted.
    RunAborted {
        /// The run, 1-based.
        run: u32,
        /// Why.
        reason: AbortReason,
    },
}

/// A reconciliation that no real run can fail; one of them makes a run
/// [`RunStatus::Invalid`](crate::result::RunStatus::Invalid).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum Impossibility {
    /// TCP receivers read more bytes than their senders wrote over the whole test.
    ReadMoreThanWritten {
        /// The direction.
        dir: FlowDir,
        /// Bytes the senders wrote, whole test.
        sender_total_bytes: u64,
        /// Bytes the receivers read, whole test.
        receiver_total_bytes: u64,
    },
    /// UDP receivers got more distinct window datagrams than their senders sent.
    ReceivedMoreThanSent {
        /// The direction.
        dir: FlowDir,
        /// Window datagrams sent.
        sent: u64,
        /// Distinct window datagrams received.
        received: u64,
    },
    /// An end counted more bytes in a flow's window than over the whole test.
    WindowAboveTotal {
        /// The end.
        host: HostRole,
        /// The flow.
        flow: u32,
        /// Bytes in the window.
        window_bytes: u64,
        /// Bytes over the whole test.
        total_bytes: u64,
    },
    /// A direction's rate is above any link a host can drive.
    RateAboveCeiling {
        /// The direction.
        dir: FlowDir,
        /// The rate, bits per second.
        rate_bps: f64,
        /// The ceiling, bits per second.
        ceiling_bps: f64,
    },
    /// The client completed more transactions than the server answered.
    MoreTransactionsThanAnswered {
        /// Client transactions, whole test.
        client_transactions: u64,
        /// Server transactions, whole test.
        server_transactions: u64,
    },
    /// A transaction rate above any round trip a host can make.
    TransactionRateAboveCeiling {
        /// Transactions per second.
        transactions_per_s: f64,
        /// The ceiling, transactions per second.
        ceiling_per_s: f64,
    },
}

/// A warning in a summary or a result, with the end it concerns when it came from one end's
/// report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Noted {
    /// The end whose report raised it; `None` for warnings about the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostRole>,
    /// The warning.
    #[serde(flatten)]
    pub warning: Warning,
}

impl Noted {
    /// A warning about the whole run.
    pub fn run(warning: Warning) -> Noted {
        Noted {
            host: None,
            warning,
        }
    }

    /// A warning from `host`'s report.
    pub fn at(host: HostRole, warning: Warning) -> Noted {
        Noted {
            host: Some(host),
            warning,
        }
    }
}
