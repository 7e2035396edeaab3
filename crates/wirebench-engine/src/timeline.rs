//! The sampling timeline every engine runs on its calling thread, and the CPU accounting of
//! its data threads.
//!
//! # Timeline (on the engine's monotonic clock, 0 = [`Timeline::start`])
//! ```text
//! 0 ──── warm-up ────┬──────────── duration ────────────┬── drain ──┐
//!                window start                        stop instant   flows finished
//! ```
//! [`Timeline::run`] sleeps (waking at least every 20 ms for the abort flag) until the next of
//! the window start, an interval boundary, a policy check and the stop instant, and there:
//!
//! - **Policy check** (every [`Timeline::check_every`], if set): [`Engine::check`]; a reason
//!   aborts the run (the abort flag is set for the flows too).
//! - **Window start** = `start` + warm-up: [`Engine::open_window`], then a CPU snapshot. With
//!   no warm-up the window is open from 0, and its CPU snapshot is the one the engine took at
//!   0, before its data threads started.
//! - **Interval boundary** (every [`Timeline::interval`], boundaries before the stop instant
//!   only): [`Engine::sample`] covering the time since the previous boundary.
//! - **Stop instant** = window start + duration, or the abort instant: [`Engine::close_window`],
//!   a CPU snapshot while the data threads still run (an exited thread's CPU time can only be
//!   read from what it left behind, see [`account_thread`]), then [`Engine::stop`] tells the
//!   flows to stop.
//!
//! Then it waits for the flows (the `join` closure) and takes one last interval sample from
//! the previous boundary to the end, so that the intervals tile `[0, end]` and add up to the
//! flows' totals. An abort noticed only then is reported as "aborted while draining".

use std::fmt::Display;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wirebench_proto::measure::CpuReport;
use wirebench_sys::thread::CpuTimes;

use crate::cpu::{self, CpuSnapshot};
use crate::util::{ns_since, sleep_until};

/// What an engine does at the points of the timeline. Called on the sampling thread.
pub(crate) trait Engine {
    /// One interval sample, in the engine's own form.
    type Sample;

    /// The policy check, every [`Timeline::check_every`]: `Some(reason)` aborts the run.
    fn check(&mut self, _now: Instant, _now_ns: u64) -> Option<String> {
        None
    }

    /// The window opens at `now_ns` (after a warm-up only), just before its CPU snapshot.
    fn open_window(&mut self, _now_ns: u64) {}

    /// Sample the counters as interval `index`, covering `[start_ns, end_ns]`; hand the
    /// sample to the sink and return it.
    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> Self::Sample;

    /// The window closes at `stop_ns`, just before its CPU snapshot.
    fn close_window(&mut self, _stop_ns: u64) {}

    /// The stop instant `stop_ns` has passed (its CPU snapshot is taken): tell the flows.
    fn stop(&mut self, stop_ns: u64);
}

/// Where the window starts when the run was aborted before it opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// At 0: the window covers the warm-up up to the abort.
    AtZero,
    /// At the abort instant: the window is empty.
    AtStop,
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
    /// Interval sampling period, if any (the engine filters out the periods it refuses).
    pub(crate) interval: Option<Duration>,
    /// How often [`Engine::check`] runs, if at all.
    pub(crate) check_every: Option<Duration>,
    /// Where the window starts if it never opened.
    pub(crate) unopened: Unopened,
}

/// What the timeline measured.
#[derive(Debug)]
pub(crate) struct Outcome<S, R> {
    /// When the window opened (ns), or where it starts if it never did ([`Unopened`]).
    pub(crate) window_start_ns: u64,
    /// The stop instant, or the abort instant (ns).
    pub(crate) stop_ns: u64,
    /// The interval samples, tiling `[0, end]` (none without an interval period).
    pub(crate) intervals: Vec<S>,
    /// Set if the run was aborted, with the reason.
    pub(crate) aborted: Option<String>,
    /// CPU over [window start, stop instant], or why it was not measured.
    pub(crate) cpu: Result<CpuReport, String>,
    /// What the flows handed back (the `join` closure's result).
    pub(crate) done: R,
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
        abort: &AtomicBool,
        join: impl FnOnce() -> R,
    ) -> Outcome<E::Sample, R> {
        let start = self.start;
        let window_start_at = start + self.warmup;
        let stop_at = window_start_at + self.duration;
        let mut intervals = Vec::new();
        let mut aborted = None;
        let mut next_interval = self.interval.map(|i| start + i);
        let mut interval_start_ns = 0u64;
        let mut cpu_before = self.warmup.is_zero().then_some(at_start);
        let mut window_start_ns = 0u64;
        let mut next_check = self.check_every.map(|p| start + p);
        loop {
            let mut next = stop_at;
            if let Some(t) = next_check {
                next = next.min(t);
            }
            if cpu_before.is_none() {
                next = next.min(window_start_at);
            }
            if let Some(t) = next_interval {
                next = next.min(t);
            }
            if !sleep_until(next, abort) {
                aborted = Some("aborted".to_string());
                break;
            }
            let now = Instant::now();
            let now_ns = ns_since(start, now);
            if let (Some(t), Some(every)) = (next_check, self.check_every) {
                if now >= t {
                    if let Some(reason) = engine.check(now, now_ns) {
                        aborted = Some(reason);
                        abort.store(true, Ordering::Relaxed);
                        break;
                    }
                    next_check = Some(t + every);
                }
            }
            if cpu_before.is_none() && now >= window_start_at {
                engine.open_window(now_ns);
                window_start_ns = now_ns;
                cpu_before = Some(threads.snapshot(now_ns));
            }
            if let Some(t) = next_interval {
                if now >= t && now < stop_at {
                    let index = intervals.len() as u32;
                    intervals.push(engine.sample(index, interval_start_ns, now_ns));
                    interval_start_ns = now_ns;
                    next_interval = self.interval.map(|i| t + i);
                }
            }
            if now >= stop_at {
                break;
            }
        }
        // The stop instant (or the abort instant). CPU is read before the flows are told to
        // stop: a data thread can finish and exit within microseconds of the stop, and an
        // exited thread's CPU time can no longer be read directly.
        let stop_ns = ns_since(start, Instant::now());
        engine.close_window(stop_ns);
        let cpu_after = threads.snapshot(stop_ns);
        engine.stop(stop_ns);
        if cpu_before.is_none() && self.unopened == Unopened::AtStop {
            window_start_ns = stop_ns;
        }
        let cpu_before = cpu_before.unwrap_or_else(|| threads.snapshot(window_start_ns));

        let done = join();
        if aborted.is_none() && abort.load(Ordering::Relaxed) {
            aborted = Some("aborted while draining".to_string());
        }
        let end_ns = ns_since(start, Instant::now());
        if self.interval.is_some() {
            let index = intervals.len() as u32;
            intervals.push(engine.sample(index, interval_start_ns, end_ns));
        }
        Outcome {
            window_start_ns,
            stop_ns,
            intervals,
            aborted,
            cpu: cpu::report(&cpu_before, &cpu_after),
            done,
        }
    }
}

/// The CPU time each data thread of a run left behind as it exited, by thread slot.
pub(crate) type FinalCpu = [Mutex<Option<CpuTimes>>];

/// Run `f` as data thread `slot`: pin it to `cpu` (if set), register its thread id on
/// `tid_tx` (then drop the sender: [`DataThreads::collect`] waits for every sender to go),
/// and leave its CPU time in `final_cpu[slot]` as it finishes, since its `/proc` entry goes
/// with it. Returns `f`'s result and, if pinning failed, why.
pub(crate) fn account_thread<R>(
    final_cpu: &FinalCpu,
    slot: usize,
    tid_tx: mpsc::Sender<(usize, i32)>,
    cpu: Option<usize>,
    f: impl FnOnce() -> R,
) -> (R, Option<io::Error>) {
    let pin_err = cpu.and_then(|c| wirebench_sys::thread::pin_current_thread(c).err());
    let tid = wirebench_sys::thread::current_thread_id();
    let _ = tid_tx.send((slot, tid));
    drop(tid_tx);
    let r = f();
    if let Ok(t) = wirebench_sys::thread::thread_cpu_times(tid) {
        if let Some(Ok(mut s)) = final_cpu.get(slot).map(|m| m.lock()) {
            *s = Some(t);
        }
    }
    (r, pin_err)
}

/// Start data thread `slot`, named `name`, in `scope`: it runs `f` under [`account_thread`]
/// and hands back `f`'s result and, if pinning failed, why.
pub(crate) fn spawn_data<'scope, R, F>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: String,
    final_cpu: &'scope FinalCpu,
    slot: usize,
    tid_tx: mpsc::Sender<(usize, i32)>,
    cpu: Option<usize>,
    f: F,
) -> io::Result<thread::ScopedJoinHandle<'scope, (R, Option<io::Error>)>>
where
    F: FnOnce() -> R + Send + 'scope,
    R: Send + 'scope,
{
    thread::Builder::new()
        .name(name)
        .spawn_scoped(scope, move || {
            account_thread(final_cpu, slot, tid_tx, cpu, f)
        })
}

/// The handle of a started thread; if it could not be started, `None` and the warning
/// "`who`: could not start its thread: …".
pub(crate) fn started<H>(
    h: io::Result<H>,
    who: impl Display,
    warnings: &mut Vec<String>,
) -> Option<H> {
    h.map_err(|e| warnings.push(format!("{who}: could not start its thread: {e}")))
        .ok()
}

/// A run's data threads, for its CPU snapshots: their thread ids and what they left behind.
pub(crate) struct DataThreads<'a> {
    /// Thread slot of each entry of `tids`.
    slots: Vec<usize>,
    /// Thread ids, ordered by slot.
    tids: Vec<i32>,
    final_cpu: &'a FinalCpu,
}

impl<'a> DataThreads<'a> {
    /// The threads registered on `rx` by [`account_thread`]. Drops `tx`, the caller's own
    /// sender, then waits until every data thread has registered (dropped its sender).
    pub(crate) fn collect(
        tx: mpsc::Sender<(usize, i32)>,
        rx: &mpsc::Receiver<(usize, i32)>,
        final_cpu: &'a FinalCpu,
    ) -> Self {
        drop(tx);
        let mut tids: Vec<(usize, i32)> = rx.iter().collect();
        tids.sort_unstable();
        let (slots, tids) = tids.into_iter().unzip();
        DataThreads {
            slots,
            tids,
            final_cpu,
        }
    }

    /// A CPU snapshot now, labelled `at_ns`.
    pub(crate) fn snapshot(&self, at_ns: u64) -> CpuSnapshot {
        CpuSnapshot::take(at_ns, &self.tids, &|i| {
            let slot = *self.slots.get(i)?;
            *self.final_cpu.get(slot)?.lock().ok()?
        })
    }
}
