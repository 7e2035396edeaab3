//! The one validation of a [`TestSpec`], run by the server on every spec it receives (and by
//! the client before it sends one), and the typed [`SpecError`] naming the field at fault.
//!
//! The rules, in the order they are checked:
//! - common: `flows` in 1..=`max_flows`; `duration_ms` in 100..=`max_duration_ms`;
//!   `warmup_ms` in 0..=`max_warmup_ms` and not longer than the duration; `interval_ms` in
//!   100..=duration, and intervals × connections ≤ [`MAX_INTERVAL_SAMPLES`]; `window_bytes`
//!   in 2048..=`max_window_bytes`; CPUs ≤ 4095; `profile_hz` in 1..=[`MAX_PROFILE_HZ`];
//! - message buffers: the largest per-connection buffer × the buffers an end allocates
//!   ([`TestSpec::message_buffers`]: one per connection, or on the epoll engine one per worker
//!   plus the shared payload) ≤ [`MAX_TOTAL_MSG_BUFFER_BYTES`];
//! - per workload: sizes in range (UDP: 8 or 24..=65507 bytes; TCP: 1..=`max_msg_size_bytes`),
//!   burst 1..=1024, open-loop rate and cap, UDP timeout 1..=60000 ms, worker threads
//!   1..=256, a congestion control name of 1–15 characters of `[a-z0-9_-]`, a per-flow rate in
//!   1 kbit/s..=10 Tbit/s, `verify` only with a receive path that delivers data;
//! - the rate policy, when the server has `max_rate_bps`: the test's aggregate rate (rate ×
//!   connections; request/response: open-loop rate × (request + response) bits × flows) must
//!   be known in advance and within it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::spec::*;

macro_rules! spec_fields {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal ),* $(,)?) => {
        /// A field of a [`TestSpec`], named `common.<field>` or `workload.<field>` (the field
        /// inside the workload's variant, e.g. `workload.request_size_bytes` for rr, crr and
        /// udp_rr alike).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum SpecField {
            $( $(#[$doc])* #[serde(rename = $name)] $variant, )*
        }

        impl SpecField {
            /// Every field, in declaration order.
            pub const ALL: &'static [SpecField] = &[ $( SpecField::$variant, )* ];

            /// The field's name (`"common.flows"`, ...).
            pub fn as_str(self) -> &'static str {
                match self { $( SpecField::$variant => $name, )* }
            }
        }
    };
}

spec_fields! {
    /// `common.flows`.
    Flows = "common.flows",
    /// `common.duration_ms`.
    DurationMs = "common.duration_ms",
    /// `common.warmup_ms`.
    WarmupMs = "common.warmup_ms",
    /// `common.interval_ms`.
    IntervalMs = "common.interval_ms",
    /// `common.window_bytes`.
    WindowBytes = "common.window_bytes",
    /// `common.server_cpu`.
    ServerCpu = "common.server_cpu",
    /// `common.client_cpu`.
    ClientCpu = "common.client_cpu",
    /// The stream's `send_size_bytes`.
    SendSizeBytes = "workload.send_size_bytes",
    /// The stream's `recv_size_bytes`.
    RecvSizeBytes = "workload.recv_size_bytes",
    /// A UDP stream's `datagram_bytes`.
    DatagramBytes = "workload.datagram_bytes",
    /// The per-flow `rate_bps` (stream, UDP stream), or the aggregate rate under a policy.
    RateBps = "workload.rate_bps",
    /// `workload.verify`.
    Verify = "workload.verify",
    /// `workload.threads`.
    Threads = "workload.threads",
    /// `workload.tcp.congestion`.
    Congestion = "workload.tcp.congestion",
    /// `workload.request_size_bytes`.
    RequestSizeBytes = "workload.request_size_bytes",
    /// `workload.response_size_bytes`.
    ResponseSizeBytes = "workload.response_size_bytes",
    /// `workload.pacing.burst`.
    Burst = "workload.pacing.burst",
    /// `workload.pacing.transactions_per_s`.
    TransactionsPerS = "workload.pacing.transactions_per_s",
    /// `workload.pacing.max_outstanding`.
    MaxOutstanding = "workload.pacing.max_outstanding",
    /// `workload.timeout_ms`.
    TimeoutMs = "workload.timeout_ms",
    /// `common.fq_rate_bps`.
    FqRateBps = "common.fq_rate_bps",
    /// `workload.tcp.mss_bytes`.
    MssBytes = "workload.tcp.mss_bytes",
    /// `workload.tcp.notsent_lowat_bytes`.
    NotsentLowatBytes = "workload.tcp.notsent_lowat_bytes",
    /// `workload.stop_after_bytes`.
    StopAfterBytes = "workload.stop_after_bytes",
    /// `common.profile_hz`.
    ProfileHz = "common.profile_hz",
    /// `common.buffer_offset_bytes`.
    BufferOffsetBytes = "common.buffer_offset_bytes",
    /// `workload.busy_poll.so_busy_poll_us`.
    BusyPollUs = "workload.busy_poll.so_busy_poll_us",
    /// `workload.recv_wait`.
    RecvWait = "workload.recv_wait",
}

impl std::fmt::Display for SpecField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server policy limit, as named on the daemon's command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitName {
    /// `serve --max-flows`.
    MaxFlows,
    /// `serve --max-duration`.
    MaxDuration,
    /// The longest warm-up.
    MaxWarmup,
    /// The largest message size.
    MaxMsgSize,
    /// The largest socket buffer.
    MaxWindow,
    /// `serve --max-rate`.
    MaxRate,
    /// `serve --max-tests`.
    MaxTests,
    /// `serve --max-connections`.
    MaxConnections,
    /// `serve --max-conns-per-source`.
    MaxConnsPerSource,
    /// The per-identity (or per-source) concurrent-test cap.
    MaxTestsPerPeer,
    /// The CPUs the server has (its highest CPU number).
    ServerCpus,
}

impl LimitName {
    /// Every limit.
    pub const ALL: [LimitName; 11] = [
        LimitName::MaxFlows,
        LimitName::MaxDuration,
        LimitName::MaxWarmup,
        LimitName::MaxMsgSize,
        LimitName::MaxWindow,
        LimitName::MaxRate,
        LimitName::MaxTests,
        LimitName::MaxConnections,
        LimitName::MaxConnsPerSource,
        LimitName::MaxTestsPerPeer,
        LimitName::ServerCpus,
    ];

    /// The daemon flag that sets the limit, when there is one.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            LimitName::MaxFlows => Some("--max-flows"),
            LimitName::MaxDuration => Some("--max-duration"),
            LimitName::MaxRate => Some("--max-rate"),
            LimitName::MaxTests => Some("--max-tests"),
            LimitName::MaxConnections => Some("--max-connections"),
            LimitName::MaxConnsPerSource => Some("--max-conns-per-source"),
            LimitName::MaxTestsPerPeer => Some("--max-tests-per-peer"),
            LimitName::MaxWarmup
            | LimitName::MaxMsgSize
            | LimitName::MaxWindow
            | LimitName::ServerCpus => None,
        }
    }
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum SpecProblem {
    /// A number outside `[min, max]`; `limit` names the server limit that set `max`, if one
    /// did.
    OutOfRange {
        /// The value received.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
        /// The server policy behind `max`, if any.
        limit: Option<LimitName>,
    },
    /// The warm-up is longer than the measured duration.
    WarmupLongerThanDuration,
    /// A byte count to stop after, with a warm-up: the count starts at the first byte, so
    /// the warm-up's bytes would count in it but in no figure.
    StopCountWithWarmup,
    /// Intervals × connections exceed [`MAX_INTERVAL_SAMPLES`].
    TooManyIntervalSamples {
        /// Samples the spec would produce.
        samples: u64,
        /// The bound.
        max: u64,
    },
    /// Message size × the buffers an end allocates ([`TestSpec::message_buffers`]) exceeds
    /// [`MAX_TOTAL_MSG_BUFFER_BYTES`].
    BuffersTooLarge {
        /// Bytes the spec would make an end allocate.
        bytes: u64,
        /// The bound.
        max: u64,
    },
    /// A congestion control name that is not 1–15 characters of `[a-z0-9_-]`.
    BadCongestionName,
    /// `verify` with a receive path that never hands the data to the application.
    VerifyNeedsData {
        /// The receive path asked for.
        recv_path: RecvPath,
    },
    /// A receive wait other than `block` or `auto` on the epoll engine (many flows, or
    /// `threads`), which waits in `epoll_wait`.
    RecvWaitNeedsThreads,
    /// A receive wait other than `block` or `auto` with a receive path that waits its own
    /// way (`zerocopy` sleeps on a low-water mark, `uring` in the ring).
    RecvWaitPath {
        /// The receive path asked for.
        recv_path: RecvPath,
    },
    /// The server limits the rate and the test has none it could check in advance (set a
    /// per-flow rate, or run TCP RR open loop).
    RateRequired {
        /// The server's limit, bits per second.
        max_bps: u64,
    },
}

/// Why a [`TestSpec`] was refused: the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize, JsonSchema)]
#[error("{field}: {problem}")]
pub struct SpecError {
    /// The field at fault.
    pub field: SpecField,
    /// What is wrong with it.
    pub problem: SpecProblem,
}

impl std::fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecProblem::OutOfRange {
                value,
                min,
                max,
                limit,
            } => {
                write!(f, "{value} is out of range (allowed {min}..={max}")?;
                match limit.and_then(LimitName::flag) {
                    Some(flag) => write!(f, "; the server's `serve {flag}`)"),
                    None => f.write_str(")"),
                }
            }
            SpecProblem::WarmupLongerThanDuration => {
                f.write_str("warm-up may not be longer than the measured duration")
            }
            SpecProblem::StopCountWithWarmup => f.write_str(
                "a byte count to stop after starts at the first byte; it cannot have a warm-up",
            ),
            SpecProblem::TooManyIntervalSamples { samples, max } => write!(
                f,
                "{samples} interval samples (intervals x connections) exceed {max}; use a \
                 longer interval"
            ),
            SpecProblem::BuffersTooLarge { bytes, max } => write!(
                f,
                "{bytes} bytes of message buffers (message size x one buffer per connection, \
                 or per epoll worker plus one) exceed {max}"
            ),
            SpecProblem::BadCongestionName => f.write_str("must be 1-15 characters of [a-z0-9_-]"),
            SpecProblem::VerifyNeedsData { recv_path } => write!(
                f,
                "cannot verify with receive path {}: it does not deliver data to the application",
                recv_path.as_str()
            ),
            SpecProblem::RecvWaitNeedsThreads => f.write_str(
                "the receive wait applies to a thread per flow; this test runs on the epoll \
                 engine (more than 32 connections, or --threads), which waits in epoll_wait",
            ),
            SpecProblem::RecvWaitPath { recv_path } => write!(
                f,
                "receive path {} waits its own way; the receive wait applies to copy, discard \
                 and splice",
                recv_path.as_str()
            ),
            SpecProblem::RateRequired { max_bps } => write!(
                f,
                "the server allows at most {max_bps} bit/s per test (`serve --max-rate`); set a \
                 rate so that the test's aggregate stays under it"
            ),
        }
    }
}

fn range(field: SpecField, value: u64, min: u64, max: u64) -> Result<(), SpecError> {
    limited(field, value, min, max, None)
}

fn limited(
    field: SpecField,
    value: u64,
    min: u64,
    max: u64,
    limit: Option<LimitName>,
) -> Result<(), SpecError> {
    if value < min || value > max {
        return Err(SpecError {
            field,
            problem: SpecProblem::OutOfRange {
                value,
                min,
                max,
                limit,
            },
        });
    }
    Ok(())
}

fn err(field: SpecField, problem: SpecProblem) -> Result<(), SpecError> {
    Err(SpecError { field, problem })
}

/// True for a congestion control name the kernel could know: 1–15 characters of
/// `[a-z0-9_-]`.
pub fn valid_congestion_name(cc: &str) -> bool {
    !cc.is_empty()
        && cc.len() <= 15
        && cc
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

impl TestSpec {
    /// Check every field against `limits` (see the module docs for the rules).
    ///
    /// # Errors
    ///
    /// The first rule broken, with the field it concerns.
    pub fn validate(&self, limits: &Limits) -> Result<(), SpecError> {
        self.validate_common(limits)?;
        let buffers = (self.buffer_bytes_per_connection()).saturating_mul(self.message_buffers());
        if buffers > MAX_TOTAL_MSG_BUFFER_BYTES {
            let field = match &self.workload {
                WorkloadSpec::Stream(s) if s.recv_size_bytes > s.send_size_bytes => {
                    SpecField::RecvSizeBytes
                }
                WorkloadSpec::Stream(_) => SpecField::SendSizeBytes,
                WorkloadSpec::UdpStream(_) => SpecField::DatagramBytes,
                _ => SpecField::RequestSizeBytes,
            };
            return err(
                field,
                SpecProblem::BuffersTooLarge {
                    bytes: buffers,
                    max: MAX_TOTAL_MSG_BUFFER_BYTES,
                },
            );
        }
        match &self.workload {
            WorkloadSpec::Stream(s) => {
                validate_stream(s, limits)?;
                if s.recv_wait.needs_a_waiting_thread() {
                    if self.epoll_workers_bound().is_some() {
                        return err(SpecField::RecvWait, SpecProblem::RecvWaitNeedsThreads);
                    }
                    if matches!(s.recv_path, RecvPath::Zerocopy | RecvPath::Uring) {
                        let recv_path = s.recv_path;
                        return err(SpecField::RecvWait, SpecProblem::RecvWaitPath { recv_path });
                    }
                }
                if let Some(n) = s.stop_after_bytes {
                    let flows = self.common.flows.into();
                    range(SpecField::StopAfterBytes, n, flows, MAX_STOP_AFTER_BYTES)?;
                    if self.common.warmup_ms > 0 {
                        return err(SpecField::StopAfterBytes, SpecProblem::StopCountWithWarmup);
                    }
                }
            }
            WorkloadSpec::Rr(r) => {
                tcp_sizes(r.request_size_bytes, r.response_size_bytes, limits)?;
                validate_tcp(&r.tcp)?;
                validate_busy_poll(r.busy_poll)?;
                match r.pacing {
                    RrLoop::Closed { burst } => {
                        range(SpecField::Burst, burst.into(), 1, MAX_BURST.into())?
                    }
                    RrLoop::Open {
                        transactions_per_s,
                        max_outstanding,
                    } => {
                        range(
                            SpecField::TransactionsPerS,
                            transactions_per_s,
                            1,
                            MAX_TRANSACTIONS_PER_S,
                        )?;
                        range(
                            SpecField::MaxOutstanding,
                            max_outstanding.into(),
                            1,
                            MAX_OUTSTANDING.into(),
                        )?;
                    }
                }
            }
            WorkloadSpec::Crr(c) => {
                tcp_sizes(c.request_size_bytes, c.response_size_bytes, limits)?;
                validate_tcp(&c.tcp)?;
            }
            WorkloadSpec::UdpRr(u) => {
                let (min, max) = (MIN_UDP_RR_BYTES.into(), MAX_UDP_PAYLOAD_BYTES.into());
                range(
                    SpecField::RequestSizeBytes,
                    u.request_size_bytes.into(),
                    min,
                    max,
                )?;
                range(
                    SpecField::ResponseSizeBytes,
                    u.response_size_bytes.into(),
                    min,
                    max,
                )?;
                range(SpecField::TimeoutMs, u.timeout_ms, 1, MAX_UDP_TIMEOUT_MS)?;
                validate_busy_poll(u.busy_poll)?;
            }
            WorkloadSpec::UdpStream(u) => {
                range(
                    SpecField::DatagramBytes,
                    u.datagram_bytes.into(),
                    MIN_UDP_DATAGRAM_BYTES.into(),
                    MAX_UDP_PAYLOAD_BYTES.into(),
                )?;
                if let Some(r) = u.rate_bps {
                    range(SpecField::RateBps, r, MIN_RATE_BPS, MAX_RATE_BPS)?;
                }
            }
        }
        self.validate_rate_policy(limits)
    }

    fn validate_common(&self, limits: &Limits) -> Result<(), SpecError> {
        let c = &self.common;
        limited(
            SpecField::Flows,
            c.flows.into(),
            1,
            limits.max_flows.into(),
            Some(LimitName::MaxFlows),
        )?;
        limited(
            SpecField::DurationMs,
            c.duration_ms,
            MIN_DURATION_MS,
            limits.max_duration_ms,
            Some(LimitName::MaxDuration),
        )?;
        limited(
            SpecField::WarmupMs,
            c.warmup_ms,
            0,
            limits.max_warmup_ms,
            Some(LimitName::MaxWarmup),
        )?;
        if c.warmup_ms > c.duration_ms {
            return err(SpecField::WarmupMs, SpecProblem::WarmupLongerThanDuration);
        }
        if let Some(i) = c.interval_ms {
            range(
                SpecField::IntervalMs,
                i,
                MIN_INTERVAL_MS,
                c.duration_ms.max(MIN_INTERVAL_MS),
            )?;
            // Results carry every interval sample of every flow; keep them sendable.
            let samples = (c.duration_ms.saturating_add(c.warmup_ms) / i.max(1))
                .saturating_add(2)
                .saturating_mul(u64::from(self.connection_count()));
            if samples > MAX_INTERVAL_SAMPLES {
                return err(
                    SpecField::IntervalMs,
                    SpecProblem::TooManyIntervalSamples {
                        samples,
                        max: MAX_INTERVAL_SAMPLES,
                    },
                );
            }
        }
        if let Some(w) = c.window_bytes {
            limited(
                SpecField::WindowBytes,
                w.into(),
                MIN_WINDOW_BYTES.into(),
                limits.max_window_bytes.into(),
                Some(LimitName::MaxWindow),
            )?;
        }
        if let Some(cpu) = c.server_cpu {
            match limits.max_cpu {
                Some(m) => limited(
                    SpecField::ServerCpu,
                    cpu.into(),
                    0,
                    m.min(MAX_CPU).into(),
                    Some(LimitName::ServerCpus),
                )?,
                None => range(SpecField::ServerCpu, cpu.into(), 0, MAX_CPU.into())?,
            }
        }
        if let Some(r) = c.fq_rate_bps {
            range(SpecField::FqRateBps, r, MIN_RATE_BPS, MAX_RATE_BPS)?;
        }
        if let Some(m) = self.tcp().and_then(|t| t.mss_bytes) {
            range(
                SpecField::MssBytes,
                m.into(),
                MIN_MSS_BYTES.into(),
                MAX_MSS_BYTES.into(),
            )?;
        }
        if let Some(l) = self.tcp().and_then(|t| t.notsent_lowat_bytes) {
            range(
                SpecField::NotsentLowatBytes,
                l.into(),
                1,
                MAX_NOTSENT_LOWAT_BYTES.into(),
            )?;
        }
        if let Some(o) = c.buffer_offset_bytes {
            range(
                SpecField::BufferOffsetBytes,
                o.into(),
                0,
                MAX_BUFFER_OFFSET_BYTES.into(),
            )?;
        }
        if let Some(cpu) = c.client_cpu {
            range(SpecField::ClientCpu, cpu.into(), 0, MAX_CPU.into())?;
        }
        if let Some(hz) = c.profile_hz {
            range(SpecField::ProfileHz, hz.into(), 1, MAX_PROFILE_HZ.into())?;
        }
        Ok(())
    }

    /// The test's aggregate rate, bits per second, when it is known in advance: a paced
    /// stream's rate × connections, an open-loop RR's transaction rate × (request + response)
    /// bits × flows. `None` for unpaced streams and closed loops.
    pub fn aggregate_rate_bps(&self) -> Option<u64> {
        let conns = u64::from(self.connection_count());
        match &self.workload {
            WorkloadSpec::Rr(RrSpec {
                request_size_bytes,
                response_size_bytes,
                pacing: RrLoop::Open {
                    transactions_per_s, ..
                },
                ..
            }) => Some(
                transactions_per_s
                    .saturating_mul(
                        (u64::from(*request_size_bytes) + u64::from(*response_size_bytes)) * 8,
                    )
                    .saturating_mul(conns),
            ),
            _ => self.rate_bps().map(|r| r.saturating_mul(conns)),
        }
    }

    fn validate_rate_policy(&self, limits: &Limits) -> Result<(), SpecError> {
        let Some(max) = limits.max_rate_bps else {
            return Ok(());
        };
        let field = match self.kind() {
            WorkloadKind::Rr => SpecField::TransactionsPerS,
            _ => SpecField::RateBps,
        };
        match self.aggregate_rate_bps() {
            None => err(field, SpecProblem::RateRequired { max_bps: max }),
            Some(total) => limited(field, total, 0, max, Some(LimitName::MaxRate)),
        }
    }
}

fn validate_tcp(t: &TcpOptions) -> Result<(), SpecError> {
    match &t.congestion {
        Some(cc) if !valid_congestion_name(cc) => {
            err(SpecField::Congestion, SpecProblem::BadCongestionName)
        }
        _ => Ok(()),
    }
}

fn validate_busy_poll(b: Option<BusyPoll>) -> Result<(), SpecError> {
    match b {
        Some(b) => range(
            SpecField::BusyPollUs,
            b.so_busy_poll_us.into(),
            0,
            MAX_SO_BUSY_POLL_US.into(),
        ),
        None => Ok(()),
    }
}

fn tcp_sizes(request: u32, response: u32, limits: &Limits) -> Result<(), SpecError> {
    let max = limits.max_msg_size_bytes.into();
    let lim = Some(LimitName::MaxMsgSize);
    limited(SpecField::RequestSizeBytes, request.into(), 1, max, lim)?;
    limited(SpecField::ResponseSizeBytes, response.into(), 1, max, lim)
}

fn validate_stream(s: &StreamSpec, limits: &Limits) -> Result<(), SpecError> {
    let max = limits.max_msg_size_bytes.into();
    let lim = Some(LimitName::MaxMsgSize);
    limited(
        SpecField::SendSizeBytes,
        s.send_size_bytes.into(),
        1,
        max,
        lim,
    )?;
    limited(
        SpecField::RecvSizeBytes,
        s.recv_size_bytes.into(),
        1,
        max,
        lim,
    )?;
    if let Some(r) = s.rate_bps {
        range(SpecField::RateBps, r, MIN_RATE_BPS, MAX_RATE_BPS)?;
    }
    if let Some(t) = s.threads {
        range(SpecField::Threads, t.into(), 1, MAX_THREADS.into())?;
    }
    if s.verify && !s.recv_path.delivers_data() {
        return err(
            SpecField::Verify,
            SpecProblem::VerifyNeedsData {
                recv_path: s.recv_path,
            },
        );
    }
    validate_tcp(&s.tcp)
}
