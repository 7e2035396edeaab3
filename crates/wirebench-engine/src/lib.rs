//! wirebench data-path engines.
//!
//! An engine moves bytes over already-connected data sockets, counts them, samples the counts
//! at interval boundaries, and measures CPU over its measurement window. Every engine has the
//! same skeleton:
//!
//! - it runs its flows on data threads ([`threads`](mod@threads)) and the caller's thread runs
//!   the one sampling timeline (`timeline`: window edges, CPU snapshots, interval tiling and
//!   the rate policy, [`RatePolicy`]);
//! - it reports each interval to a [`Sink`] of its own sample type as it happens;
//! - it paces with the one schedule of `pace` (stream bytes, UDP datagrams, open-loop
//!   requests);
//! - it stops early through an [`Abort`] handle, which carries the typed reason;
//! - it returns one [`EngineOutput`] whose `data` is the workload's model type
//!   ([`StreamSide`](wirebench_model::side::StreamSide),
//!   [`RrSide`](wirebench_model::rr::RrSide), [`UdpSide`](wirebench_model::udp::UdpSide)).
//!
//! Engines count and time; they never format output and never compute rates — that is the
//! analysis' work (`wirebench-report`).
//!
//! - [`stream`]: bulk TCP transfer, a thread per flow or (many flows) a few epoll workers; it
//!   chooses which.
//! - [`udp`]: paced UDP datagram flows and sequence-checking receivers.
//! - [`rr`]: request/response (TCP_RR, TCP_CRR, UDP_RR), closed or open loop, latencies.
//! - [`env`](mod@env): what the host and stack look like.
//! - [`cpu`]: CPU snapshots (`/proc/stat` and the engine's own threads).
//! - [`paths`]: the send and receive paths of the stream workload and the payload they carry.
//! - [`limits`]: the machine-limit probes (memory copy and checksum bandwidth, system call
//!   cost, wake-up latency) of `wirebench limits`.

pub mod abort;
mod buffers;
pub mod cpu;
pub mod env;
pub mod limits;
mod pace;
pub mod paths;
mod recvwait;
pub mod rr;
pub mod stream;
mod threads;
mod timeline;
pub mod udp;
mod util;

pub use abort::Abort;
pub use timeline::RatePolicy;

use std::time::Duration;

use wirebench_model::abort::{AbortReason, EngineKind, Placement};
use wirebench_model::side::{CpuReport, Span};
use wirebench_model::warning::Warning;

use timeline::RunEnd;

/// Where an engine reports while it runs: one interval sample of type `S` at a time, from
/// the engine's sampling thread.
pub trait Sink<S>: Send {
    /// A new interval sample is complete.
    fn interval(&mut self, sample: &S);

    /// The measurement window has opened: just after its CPU snapshot (at the end of the
    /// warm-up, or as the timeline starts without one). Called at most once per run.
    fn window_opened(&mut self) {}

    /// The measurement window is closing: just after its CPU snapshot at the stop instant,
    /// before the flows are told to stop. Called once, only after [`Sink::window_opened`].
    /// Keep it short: the flows run on until it returns.
    fn window_closed(&mut self) {}
}

/// A sink that drops everything.
pub struct NullSink;

impl<S> Sink<S> for NullSink {
    fn interval(&mut self, _sample: &S) {}
}

/// What an engine measured at this end: the workload's counts and what every engine shares.
#[derive(Debug, Clone)]
pub struct EngineOutput<D> {
    /// The workload's counts.
    pub data: D,
    /// CPU over [window start, stop instant], if it could be measured (else a warning says
    /// why).
    pub cpu: Option<CpuReport>,
    /// Measurement problems.
    pub warnings: Vec<Warning>,
    /// Set if the run was aborted, with the reason.
    pub aborted: Option<AbortReason>,
    /// This end's measurement window [end of warm-up, stop instant]; `None` if the run
    /// stopped before it opened (then no count covers a measured window).
    pub window: Option<Span>,
    /// Which engine ran and where its threads were.
    pub engine: EngineKind,
    /// Where the engine's data buffers started, bytes past a page boundary.
    pub buffer_offset: usize,
}

impl<D> EngineOutput<D> {
    /// The output of a run whose timeline ended as `end`: the workload's `data`, the
    /// `warnings` so far, then what every engine's output shares — the CPU report (or a
    /// warning, last, saying why there is none), the abort reason, the window if it opened,
    /// the `engine` and the buffer offset of `timing`.
    pub(crate) fn new(
        data: D,
        end: RunEnd,
        mut warnings: Vec<Warning>,
        engine: EngineKind,
        timing: &Timing,
    ) -> Self {
        let cpu = end
            .cpu
            .map_err(|reason| warnings.push(Warning::CpuNotMeasured { reason }))
            .ok();
        EngineOutput {
            data,
            cpu,
            warnings,
            aborted: end.aborted,
            window: end.window_opened.then_some(Span {
                start_ns: end.window_start_ns,
                end_ns: end.stop_ns,
            }),
            engine,
            buffer_offset: timing.buffer_offset,
        }
    }
}

/// When and where an engine runs, and what bounds it: the parameters every engine config
/// shares ([`stream::StreamConfig`], [`rr::RrConfig`], [`udp::UdpConfig`] embed one).
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Warm-up before the window opens.
    pub warmup: Duration,
    /// Measured duration.
    pub duration: Duration,
    /// Interval sampling period, if any.
    pub interval: Option<Duration>,
    /// Longest wait past this end's stop instant: a receiver for the sender's EOF or last
    /// datagram, a TCP RR client for the responses it is owed and the server's EOF, a server
    /// for the client to finish.
    pub drain_limit: Duration,
    /// Where the data threads run.
    pub pin: Pinning,
    /// The server's rate policy, enforced on every byte this end moves.
    pub policy: Option<RatePolicy>,
    /// Where every data buffer of this end starts: bytes past a page boundary (below the
    /// page size; 0 is page-aligned, the default).
    pub buffer_offset: usize,
}

impl Default for Timing {
    /// No warm-up, 10 s, no intervals, 2 s drain, no pinning, no policy, page-aligned
    /// buffers.
    fn default() -> Self {
        Timing {
            warmup: Duration::ZERO,
            duration: Duration::from_secs(10),
            interval: None,
            drain_limit: Duration::from_secs(2),
            pin: Pinning::default(),
            policy: None,
            buffer_offset: 0,
        }
    }
}

/// Where an end pins its data threads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pinning {
    /// Pin every data thread to this CPU.
    pub cpu: Option<usize>,
    /// Without `cpu`: pin data thread `i` to `round_robin[i % len]`. Empty: no pinning.
    pub round_robin: Vec<usize>,
}

impl Pinning {
    /// The CPU data thread `slot` is pinned to, if any.
    pub fn thread_cpu(&self, slot: usize) -> Option<usize> {
        self.cpu.or_else(|| {
            (!self.round_robin.is_empty()).then(|| self.round_robin[slot % self.round_robin.len()])
        })
    }

    /// How `threads` data threads are placed.
    pub fn placement(&self, threads: usize) -> Placement {
        if let Some(c) = self.cpu {
            return Placement::Pinned { cpu: c as u32 };
        }
        if self.round_robin.is_empty() {
            return Placement::Scheduler;
        }
        Placement::RoundRobin {
            cpus: self
                .round_robin
                .iter()
                .take(threads.max(1))
                .map(|&c| c as u32)
                .collect(),
        }
    }

    /// The engine kind of `threads` data threads, one per flow, placed by this pinning.
    pub fn thread_per_flow(&self, threads: usize) -> EngineKind {
        EngineKind::ThreadPerFlow {
            threads: threads as u32,
            placement: self.placement(threads),
        }
    }

    /// The CPUs `threads` data threads may run on: the pinned ones, else this thread's
    /// affinity mask; ascending.
    pub fn cpus_used(&self, threads: usize) -> Vec<u32> {
        let mut v: Vec<u32> = match self.placement(threads) {
            Placement::Pinned { cpu } => vec![cpu],
            Placement::RoundRobin { cpus } => cpus,
            Placement::Scheduler => wirebench_sys::thread::current_thread_affinity()
                .unwrap_or_default()
                .into_iter()
                .map(|c| c as u32)
                .collect(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }
}
