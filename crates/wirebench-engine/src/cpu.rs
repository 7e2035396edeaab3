//! CPU snapshots taken at the edges of a measurement window.
//!
//! Three sources: `/proc/stat` (the whole machine, per CPU), `/proc/self/task/<tid>/stat`
//! for each of the engine's own data threads (what wirebench itself spent), and
//! `/proc/<pid>/stat` of every other process (who else kept the machine busy; processes
//! named `wirebench` — this one, a daemon or a peer on the same kernel — are left out).

use std::collections::HashMap;

use wirebench_model::side::{CpuReport, ProcessCpu, Span, TOP_OTHER_PROCESSES};
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
    /// Every other process's CPU time so far: pid → (name, clock ticks), if `/proc` could
    /// be listed.
    pub others: Option<HashMap<u32, (String, u64)>>,
}

/// `/proc` clock ticks per second (`USER_HZ`, fixed at 100 for `/proc` by Linux).
const TICK_NS: u64 = 10_000_000;

/// The name wirebench's own processes have (`/proc/PID/comm`), left out of the other
/// processes.
const OWN_COMM: &str = "wirebench";

/// Every process's CPU time so far but this one's and other wirebench processes': pid →
/// (name, user + system clock ticks). A process that exits between the listing and the read
/// is skipped.
fn other_processes() -> Option<HashMap<u32, (String, u64)>> {
    let me = std::process::id();
    let mut out = HashMap::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((comm, ticks)) = parse_pid_stat(&stat).filter(|(c, _)| c != OWN_COMM) {
            out.insert(pid, (comm, ticks));
        }
    }
    Some(out)
}

/// `/proc/PID/stat`'s name (between the first `(` and the last `)`) and utime + stime.
fn parse_pid_stat(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut f = stat.get(close + 2..)?.split_whitespace();
    // Fields 14 and 15 of the file (utime, stime) are the 12th and 13th after the name.
    let utime: u64 = f.nth(11)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((comm, utime + stime))
}

/// Other processes' CPU time between two scans: (total ns, the busiest few). A process
/// that started inside the window counts all its time; one that ended inside it is lost
/// (its time went to its parent, which may be counted when it waited for it).
fn other_delta(
    before: &HashMap<u32, (String, u64)>,
    after: &HashMap<u32, (String, u64)>,
) -> (u64, Vec<ProcessCpu>) {
    let mut all: Vec<ProcessCpu> = after
        .iter()
        .map(|(pid, (comm, t))| {
            let t0 = before.get(pid).map_or(0, |(_, t0)| *t0);
            ProcessCpu {
                pid: *pid,
                comm: comm.clone(),
                cpu_ns: t.saturating_sub(t0).saturating_mul(TICK_NS),
            }
        })
        .filter(|p| p.cpu_ns > 0)
        .collect();
    let total = all.iter().map(|p| p.cpu_ns).sum();
    all.sort_unstable_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.pid.cmp(&b.pid)));
    all.truncate(TOP_OTHER_PROCESSES);
    (total, all)
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
            others: other_processes(),
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
    // Both snapshots read /proc/stat first thing after taking their time.
    let window_ns = after.at_ns.saturating_sub(before.at_ns);
    let system = system_utilization(b, a, window_ns).map_err(|e| CpuUnmeasured::Incomparable {
        detail: e.to_string(),
    })?;
    let others = before
        .others
        .as_ref()
        .zip(after.others.as_ref())
        .map(|(b, a)| other_delta(b, a));
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
        other_processes_ns: others.as_ref().map(|o| o.0),
        other_processes: others.map(|o| o.1).unwrap_or_default(),
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

    /// A process's name may hold spaces and parentheses; its times are the 14th and 15th
    /// fields after it.
    #[test]
    fn a_process_stat_line_is_parsed_whatever_its_name() {
        let line = "42 (a b) c) R 1 2 3 4 5 6 7 8 9 10 250 30 0 0 20";
        assert_eq!(parse_pid_stat(line), Some(("a b) c".to_string(), 280)));
        assert_eq!(parse_pid_stat("42 (x) R 1"), None);
    }

    /// The busiest other processes come first; a process that started in the window counts
    /// all its time, one idle over it none.
    #[test]
    fn other_processes_are_ranked_by_their_time_in_the_window() {
        let m = |v: &[(u32, &str, u64)]| -> HashMap<u32, (String, u64)> {
            v.iter()
                .map(|(p, c, t)| (*p, (c.to_string(), *t)))
                .collect()
        };
        let before = m(&[(1, "idle", 5), (2, "hog", 100), (3, "gone", 7)]);
        let after = m(&[(1, "idle", 5), (2, "hog", 300), (4, "new", 50), (5, "b", 1)]);
        let (total, top) = other_delta(&before, &after);
        assert_eq!(total, 251 * TICK_NS);
        let names: Vec<&str> = top.iter().map(|p| p.comm.as_str()).collect();
        assert_eq!(names, ["hog", "new", "b"]);
        assert_eq!(top[0].cpu_ns, 200 * TICK_NS);
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
