//! CPU snapshots taken at the edges of a measurement window.
//!
//! Two sources: `/proc/stat` (the whole machine, per CPU) and `/proc/self/task/<tid>/stat`
//! for each of the engine's own data threads (what wirebench itself spent).

use wirebench_model::side::{CpuReport, Span};
use wirebench_model::warning::CpuUnmeasured;
use wirebench_stats::cpu::{parse_proc_stat, system_utilization, ProcStat};
use wirebench_sys::thread::{thread_cpu_times, CpuTimes};

/// One CPU snapshot.
#[derive(Debug, Clone)]
pub struct CpuSnapshot {
    /// ns after the engine's start.
    pub at_ns: u64,
    /// Parsed `/proc/stat`, if readable.
    pub system: Option<ProcStat>,
    /// Sum over the given threads.
    pub threads: CpuTimes,
}

impl CpuSnapshot {
    /// Take a snapshot now; `tids` are the engine's data threads. A thread that has already
    /// exited is counted with `exited(i)`, the CPU time it recorded for itself as it finished
    /// (all of which lies before this snapshot).
    pub fn take(at_ns: u64, tids: &[i32], exited: &dyn Fn(usize) -> Option<CpuTimes>) -> Self {
        let system = wirebench_sys::host::read_proc_stat()
            .ok()
            .and_then(|t| parse_proc_stat(&t).ok());
        tracing::debug!(at_ns, ?tids, "cpu snapshot");
        let mut threads = CpuTimes {
            run_delay_ns: Some(0),
            ..CpuTimes::default()
        };
        for (i, &tid) in tids.iter().enumerate() {
            match pick_times(thread_cpu_times(tid).ok(), || exited(i)) {
                Some(t) => {
                    threads.user_ns += t.user_ns;
                    threads.system_ns += t.system_ns;
                    // One thread without it makes the sum unknown.
                    threads.run_delay_ns = threads
                        .run_delay_ns
                        .zip(t.run_delay_ns)
                        .map(|(a, b)| a.saturating_add(b));
                }
                None => {
                    threads.run_delay_ns = None;
                    tracing::warn!(tid, "thread CPU time not readable");
                }
            }
        }
        CpuSnapshot {
            at_ns,
            system,
            threads,
        }
    }
}

/// A thread's times for a snapshot: read live, or what it left behind as it exited. A thread
/// that exits between the reads of its `stat` and its `schedstat` has times without its
/// run-queue wait; what it left behind (read by itself, just before) has both.
fn pick_times(
    live: Option<CpuTimes>,
    exited: impl FnOnce() -> Option<CpuTimes>,
) -> Option<CpuTimes> {
    match live {
        Some(t) if t.run_delay_ns.is_some() => Some(t),
        live => exited().or(live),
    }
}

/// Turn two snapshots into a [`CpuReport`] (`cpus_used`: the CPUs the data threads may run
/// on); why not, if `/proc/stat` was not readable or the snapshots are not comparable.
pub fn report(
    before: &CpuSnapshot,
    after: &CpuSnapshot,
    cpus_used: Vec<u32>,
) -> Result<CpuReport, CpuUnmeasured> {
    let (Some(b), Some(a)) = (&before.system, &after.system) else {
        return Err(CpuUnmeasured::ProcStatUnreadable);
    };
    let system = system_utilization(b, a).map_err(|e| CpuUnmeasured::Incomparable {
        detail: e.to_string(),
    })?;
    Ok(CpuReport {
        window: Span {
            start_ns: before.at_ns,
            end_ns: after.at_ns,
        },
        system,
        threads_user_ns: after.threads.user_ns.saturating_sub(before.threads.user_ns),
        threads_system_ns: after
            .threads
            .system_ns
            .saturating_sub(before.threads.system_ns),
        threads_run_delay_ns: after
            .threads
            .run_delay_ns
            .zip(before.threads.run_delay_ns)
            .map(|(a, b)| a.saturating_sub(b)),
        cpus_used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(run_delay_ns: Option<u64>) -> CpuTimes {
        CpuTimes {
            user_ns: 1,
            system_ns: 2,
            run_delay_ns,
        }
    }

    /// Live times with the run-queue wait win; live times without it (the thread exited
    /// between its two files) give way to what the thread left behind, if anything.
    #[test]
    fn a_thread_that_exits_mid_read_keeps_its_run_queue_wait() {
        let whole = times(Some(5));
        let partial = times(None);
        let left = CpuTimes {
            user_ns: 3,
            ..times(Some(7))
        };
        assert_eq!(pick_times(Some(whole), || Some(left)), Some(whole));
        assert_eq!(pick_times(Some(partial), || Some(left)), Some(left));
        assert_eq!(pick_times(Some(partial), || None), Some(partial));
        assert_eq!(pick_times(None, || Some(left)), Some(left));
        assert_eq!(pick_times(None, || None), None);
    }

    /// A thread of this process that is alive: its times are read, run-queue wait included
    /// where the kernel has schedstat.
    #[test]
    fn a_live_thread_is_read() {
        let tid = wirebench_sys::thread::current_thread_id();
        let s = CpuSnapshot::take(0, &[tid], &|_| None);
        let own = thread_cpu_times(tid).expect("own stat");
        assert_eq!(s.threads.run_delay_ns.is_some(), own.run_delay_ns.is_some());
        assert!(s.threads.total_ns() <= own.total_ns());
    }
}
