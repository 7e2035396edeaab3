//! An outside observer of a process's data threads: the kernel's per-thread schedstat
//! (`/proc/PID/task/TID/schedstat`: time on a CPU and time waiting to run, both ns, both
//! cumulative since the thread started), polled until the threads end. Tests compare the
//! figures a run reports against what this saw, with bounds from what an observer can miss
//! (the gap after its last read of each thread) rather than a tolerance band.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the observer saw of the threads whose names start with the prefix it watched.
#[derive(Debug)]
pub struct ThreadsSeen {
    /// Each thread's last on-CPU time read, summed, ns.
    pub on_cpu_ns: u64,
    /// Each thread's last run-queue wait read, summed, ns.
    pub run_delay_ns: u64,
    /// How many such threads were seen.
    pub threads: u64,
    /// The longest time between a thread's last successful read and the first read that
    /// found it gone, ns: its time in that gap is all the observer missed of it.
    pub end_gap_ns: u64,
}

/// One thread's last reading: (on-CPU ns, run delay ns, when read, when first found gone).
type Last = (u64, u64, Instant, Option<Instant>);

/// Poll the threads of `pid` named `prefix…` every 5 ms, from when the first appears until
/// every one seen has ended.
///
/// # Panics
///
/// If none appears, or some still run, within `limit`.
pub fn watch_threads(pid: u32, prefix: &str, limit: Duration) -> ThreadsSeen {
    let mut seen: HashMap<String, Last> = HashMap::new();
    let end = Instant::now() + limit;
    loop {
        let now = Instant::now();
        let mut present = Vec::new();
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                let tid = e.file_name().to_string_lossy().into_owned();
                present.push(tid.clone());
                let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
                if !comm.starts_with(prefix) {
                    continue;
                }
                let stat = std::fs::read_to_string(e.path().join("schedstat")).ok();
                let mut fields = stat
                    .iter()
                    .flat_map(|s| s.split_whitespace())
                    .map(|v| v.parse::<u64>().ok());
                if let (Some(Some(cpu)), Some(Some(wait))) = (fields.next(), fields.next()) {
                    seen.insert(tid, (cpu, wait, now, None));
                }
            }
        }
        let after = Instant::now();
        for (tid, v) in seen.iter_mut() {
            if v.3.is_none() && !present.contains(tid) {
                v.3 = Some(after);
            }
        }
        if !seen.is_empty() && seen.values().all(|v| v.3.is_some()) {
            break;
        }
        assert!(
            after < end,
            "threads {prefix}* of {pid}: {} seen, not all ended within {limit:?}",
            seen.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    ThreadsSeen {
        on_cpu_ns: seen.values().map(|v| v.0).sum(),
        run_delay_ns: seen.values().map(|v| v.1).sum(),
        threads: seen.len() as u64,
        end_gap_ns: seen
            .values()
            .map(|v| v.3.expect("ended").duration_since(v.2).as_nanos() as u64)
            .max()
            .unwrap_or(0),
    }
}
