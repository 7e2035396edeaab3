//! The sampling timeline every engine runs on its calling thread, and the rate policy.
//!
//! # Timeline (on the engine's monotonic clock, 0 = [`Timeline::start`])
//! ```text
//! 0 ──── warm-up ────┬──────────── duration ────────────┬── drain ──┐
//!                window start                        stop instant   flows finished
//! ```
//! [`Timeline::run`] sleeps (waking at least every 20 ms for the abort flag) until the next of
//! the window start, an interval boundary, a policy check and the stop instant, and there:
//!
//! - **Policy check** (every [`RatePolicy::every`], if a policy is set): the bytes the engine
//!   has moved so far ([`Engine::moved_bytes`]: every byte sent or received at this end,
//!   payload only) against the allowance `max_bps × (elapsed + slack) / 8 + slack_bytes`.
//!   Past it the run is aborted with [`AbortReason::LimitExceeded`]. The same check serves
//!   every workload, because every engine counts its bytes.
//! - **Window start** = `start` + warm-up: [`Engine::open_window`], then a CPU snapshot, then
//!   the sink is told ([`crate::Sink::window_opened`]: a profiler starts there). With no
//!   warm-up the window is open from 0, its CPU snapshot is the one taken at 0, before the
//!   data threads started, and the sink is told as the timeline starts.
//! - **Interval boundary** (every [`Timeline::interval`], boundaries before the stop instant
//!   only): [`Engine::sample`] covering the time since the previous boundary.
//! - **Stop instant** = window start + duration, the abort instant, or (with
//!   [`Engine::ends_when_finished`]) the first check after every flow finished by itself: [`Engine::close_window`],
//!   a CPU snapshot while the data threads still run (an exited thread's CPU time can only be
//!   read from what it left behind, see [`crate::threads::account_thread`]), then
//!   the sink is told ([`crate::Sink::window_closed`], if the window opened), then
//!   [`Engine::stop`] tells the flows to stop.
//!
//! Then it waits for the flows (the `join` closure) and takes one last interval sample from
//! the previous boundary to the end, so that the intervals tile `[0, end]` and add up to the
//! flows' totals.

use std::time::{Duration, Instant};

use wirebench_model::abort::AbortReason;
use wirebench_model::side::CpuReport;
use wirebench_model::validate::LimitName;
use wirebench_model::warning::CpuUnmeasured;

use crate::abort::Abort;
use crate::cpu::{self, CpuSnapshot};
use crate::threads::DataThreads;
use crate::util::{ns_since, sleep_until};

/// What an engine does at the points of the timeline. Called on the sampling thread.
pub(crate) trait Engine {
    /// One interval sample, in the engine's own form.
    type Sample;

    /// Payload bytes this end has moved so far (sent and received), for the rate policy.
    fn moved_bytes(&self) -> u64;

    /// The window opens at `now_ns` (after a warm-up only), just before its CPU snapshot.
    fn open_window(&mut self, _now_ns: u64) {}

    /// Sample the counters as interval `index`, covering `[start_ns, end_ns]`; hand the
    /// sample to the sink and return it.
    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> Self::Sample;

    /// The window closes at `stop_ns`, just before its CPU snapshot.
    fn close_window(&mut self, _stop_ns: u64) {}

    /// True if the run ends when its flows finish by themselves (a byte count) rather than
    /// at the stop instant; the duration is then an upper bound.
    fn ends_when_finished(&self) -> bool {
        false
    }

    /// True once every flow at this end has finished by itself (checked every
    /// [`FINISHED_POLL`] when [`Engine::ends_when_finished`]).
    fn all_finished(&self) -> bool {
        false
    }

    /// The stop instant `stop_ns` has passed (its CPU snapshot is taken): tell the flows.
    fn stop(&mut self, stop_ns: u64);

    /// Tell the sink the window opened or is closing ([`crate::Sink::window_opened`],
    /// [`crate::Sink::window_closed`]).
    fn sink_window(&mut self, edge: WindowEdge);
}

/// A measurement window's edge, as the sink is told of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowEdge {
    /// The window opened.
    Opened,
    /// The window is closing.
    Closed,
}

/// A server's rate policy (`serve --max-rate`), enforced while the test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatePolicy {
    /// The largest aggregate payload rate of the test, bits per second.
    pub max_bps: u64,
    /// How often it is checked.
    pub every: Duration,
    /// Time at the limit allowed on top of the elapsed time (bursts, timer slack).
    pub slack: Duration,
    /// Bytes allowed on top (socket buffers drained at once).
    pub slack_bytes: u64,
}

impl RatePolicy {
    /// A policy of `max_bps` with the default check period (100 ms) and slack (250 ms at the
    /// limit plus 4 MiB).
    pub fn new(max_bps: u64) -> RatePolicy {
        RatePolicy {
            max_bps,
            every: Duration::from_millis(100),
            slack: Duration::from_millis(250),
            slack_bytes: 4 << 20,
        }
    }

    /// Bytes allowed `elapsed` after the start.
    pub fn allowance_bytes(&self, elapsed: Duration) -> u64 {
        let ns = (elapsed + self.slack).as_nanos();
        let b = u128::from(self.max_bps) * ns / 8_000_000_000;
        u64::try_from(b)
            .unwrap_or(u64::MAX)
            .saturating_add(self.slack_bytes)
    }
}

/// The timeline of a run.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    /// 0 on the engine's clock.
    pub(crate) start: Instant,
    /// Warm-up before the window opens.
    pub(crate) warmup: Duration,
    /// The window's length.
    pub(crate) duration: Duration,
    /// Interval sampling period, if any.
    pub(crate) interval: Option<Duration>,
    /// The rate policy, if any.
    pub(crate) policy: Option<RatePolicy>,
    /// The CPUs the data threads may run on (for the CPU report).
    pub(crate) cpus_used: Vec<u32>,
}

/// How often the timeline looks for flows that finished by themselves.
const FINISHED_POLL: Duration = Duration::from_millis(1);

/// What the timeline measured.
#[derive(Debug)]
pub(crate) struct Outcome<S, R> {
    /// How the run's window went, for the engine's output ([`crate::EngineOutput::new`]).
    pub(crate) end: RunEnd,
    /// The interval samples, tiling `[0, end]` (none without an interval period).
    pub(crate) intervals: Vec<S>,
    /// What the flows handed back (the `join` closure's result).
    pub(crate) done: R,
}

/// How a run's measurement window went: its edges, the abort reason and the CPU over it —
/// what every engine's output carries besides its workload's figures.
#[derive(Debug)]
pub(crate) struct RunEnd {
    /// When the window opened (ns); the stop instant if it never did (an empty window).
    pub(crate) window_start_ns: u64,
    /// False if the run stopped (abort, interrupt) before the window opened: no figure
    /// covers a measured window.
    pub(crate) window_opened: bool,
    /// The stop instant, or the abort instant (ns).
    pub(crate) stop_ns: u64,
    /// Set if the run was aborted, with the reason.
    pub(crate) aborted: Option<AbortReason>,
    /// CPU over [window start, stop instant], or why it was not measured.
    pub(crate) cpu: Result<CpuReport, CpuUnmeasured>,
}

/// The policy's verdict on `moved` bytes at `now`.
fn over_limit(
    policy: &RatePolicy,
    start: Instant,
    now: Instant,
    moved: u64,
) -> Option<AbortReason> {
    let elapsed = now.saturating_duration_since(start);
    (moved > policy.allowance_bytes(elapsed)).then(|| AbortReason::LimitExceeded {
        limit: LimitName::MaxRate,
        observed_bps: u64::try_from(u128::from(moved) * 8_000_000_000 / elapsed.as_nanos().max(1))
            .unwrap_or(u64::MAX),
        max_bps: policy.max_bps,
    })
}

impl Timeline {
    /// Run the timeline on the calling thread (see the module docs). `at_start` is the CPU
    /// snapshot taken at 0, before the data threads started; `join` waits for the flows
    /// after the stop and returns what they handed back.
    pub(crate) fn run<E: Engine, R>(
        &self,
        engine: &mut E,
        threads: &DataThreads<'_>,
        at_start: CpuSnapshot,
        abort: &Abort,
        join: impl FnOnce() -> R,
    ) -> Outcome<E::Sample, R> {
        let start = self.start;
        let window_start_at = start + self.warmup;
        let stop_at = window_start_at + self.duration;
        let mut intervals = Vec::new();
        let mut next_interval = self.interval.map(|i| start + i);
        let mut interval_start_ns = 0u64;
        let mut cpu_before = self.warmup.is_zero().then_some(at_start);
        let mut window_start_ns = 0u64;
        let mut next_check = self.policy.map(|p| start + p.every);
        let end_when_finished = engine.ends_when_finished();
        if cpu_before.is_some() {
            engine.sink_window(WindowEdge::Opened);
        }
        loop {
            let mut next = stop_at;
            for t in [next_check, next_interval].into_iter().flatten() {
                next = next.min(t);
            }
            if cpu_before.is_none() {
                next = next.min(window_start_at);
            }
            if end_when_finished {
                next = next.min(Instant::now() + FINISHED_POLL);
            }
            if !sleep_until(next, abort) {
                break;
            }
            let now = Instant::now();
            let now_ns = ns_since(start, now);
            if let (Some(t), Some(p)) = (next_check, self.policy.as_ref()) {
                if now >= t {
                    if let Some(reason) = over_limit(p, start, now, engine.moved_bytes()) {
                        abort.abort(reason);
                        break;
                    }
                    next_check = Some(t + p.every);
                }
            }
            if cpu_before.is_none() && now >= window_start_at {
                engine.open_window(now_ns);
                window_start_ns = now_ns;
                cpu_before = Some(threads.snapshot(now_ns));
                engine.sink_window(WindowEdge::Opened);
            }
            if let Some(t) = next_interval {
                if now >= t && now < stop_at {
                    let index = intervals.len() as u32;
                    intervals.push(engine.sample(index, interval_start_ns, now_ns));
                    interval_start_ns = now_ns;
                    next_interval = self.interval.map(|i| t + i);
                }
            }
            if now >= stop_at || (end_when_finished && engine.all_finished()) {
                break;
            }
        }
        // The stop instant (or the abort instant). CPU is read before the flows are told to
        // stop: a data thread can finish and exit within microseconds of the stop, and an
        // exited thread's CPU time can no longer be read directly.
        let stop_ns = ns_since(start, Instant::now());
        engine.close_window(stop_ns);
        let cpu_after = threads.snapshot(stop_ns);
        let window_opened = cpu_before.is_some();
        if window_opened {
            engine.sink_window(WindowEdge::Closed);
        }
        engine.stop(stop_ns);
        if !window_opened {
            window_start_ns = stop_ns;
        }
        let cpu_before = cpu_before.unwrap_or_else(|| threads.snapshot(window_start_ns));

        let done = join();
        let end_ns = ns_since(start, Instant::now());
        if self.interval.is_some() {
            let index = intervals.len() as u32;
            intervals.push(engine.sample(index, interval_start_ns, end_ns));
        }
        Outcome {
            end: RunEnd {
                window_start_ns,
                window_opened,
                stop_ns,
                aborted: abort.reason(),
                cpu: cpu::report(&cpu_before, &cpu_after, self.cpus_used.clone()),
            },
            intervals,
            done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowance_and_verdict() {
        let p = RatePolicy::new(8_000_000); // 1 MB/s
        assert_eq!(p.allowance_bytes(Duration::ZERO), 250_000 + (4 << 20));
        assert_eq!(
            p.allowance_bytes(Duration::from_secs(1)),
            1_250_000 + (4 << 20)
        );
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(over_limit(&p, t0, t1, 1_250_000 + (4 << 20)), None);
        match over_limit(&p, t0, t1, 10_000_000) {
            Some(AbortReason::LimitExceeded {
                limit: LimitName::MaxRate,
                observed_bps: 80_000_000,
                max_bps: 8_000_000,
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
