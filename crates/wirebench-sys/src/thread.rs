//! Threads and CPUs: affinity, thread ids and CPU-time accounting.

use std::io;
use std::mem::size_of;

/// Bits per word of the kernel CPU mask.
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity` on the calling
/// thread only).
///
/// # Errors
///
/// Fails (with the CPU number in the message) if `cpu` is not online or not
/// in the set of CPUs this thread is allowed to run on (cpuset / container
/// restrictions).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // The kernel accepts masks of any length (extra bits are ignored, missing
    // bits are zero), so size the mask to hold `cpu`.
    let words = cpu / WORD_BITS + 1;
    let mut mask: Vec<libc::c_ulong> = vec![0; words];
    mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    let bytes = words * size_of::<libc::c_ulong>();
    // SAFETY: `mask` is a live buffer of exactly `bytes` bytes that the
    // kernel only reads; pid 0 designates the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, bytes, mask.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("cannot pin thread to cpu {cpu} (not online or not allowed): {err}"),
        ));
    }
    Ok(())
}

/// Returns the CPUs the calling thread may currently run on
/// (`sched_getaffinity`), in ascending order.
///
/// # Errors
///
/// Returns the `sched_getaffinity` error.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    // Start with glibc's CPU_SETSIZE (1024) and grow while the kernel says
    // the buffer is smaller than its cpumask (EINVAL).
    let mut words = 1024 / WORD_BITS;
    loop {
        let mut mask: Vec<libc::c_ulong> = vec![0; words];
        let bytes = words * size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live, writable buffer of exactly `bytes` bytes;
        // pid 0 designates the calling thread.
        let rc = unsafe {
            libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) && words < (1 << 20) / WORD_BITS {
                words *= 2;
                continue;
            }
            return Err(err);
        }
        let cpus = mask
            .iter()
            .enumerate()
            .flat_map(|(i, &w)| {
                (0..WORD_BITS)
                    .filter(move |b| w & (1 << b) != 0)
                    .map(move |b| i * WORD_BITS + b)
            })
            .collect();
        return Ok(cpus);
    }
}

/// Returns the kernel thread id (`gettid`) of the calling thread.
pub fn current_thread_id() -> i32 {
    // SAFETY: gettid takes no arguments, cannot fail and has no side effects.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid as i32
}

/// CPU time consumed by a thread or process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time spent in user mode, nanoseconds.
    pub user_ns: u64,
    /// Time spent in kernel mode, nanoseconds.
    pub system_ns: u64,
    /// Time spent runnable but waiting on a run queue for a CPU, nanoseconds (the second
    /// field of `/proc/self/task/<tid>/schedstat`; it includes the time from a wake-up to
    /// running). `None` for process-wide figures and where schedstat is not readable.
    pub run_delay_ns: Option<u64>,
}

impl CpuTimes {
    /// `user_ns + system_ns` (saturating).
    pub fn total_ns(&self) -> u64 {
        self.user_ns.saturating_add(self.system_ns)
    }
}

/// Returns the kernel's clock-tick frequency (`sysconf(_SC_CLK_TCK)`),
/// 100 if unavailable.
fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// Parses `utime` (field 14) and `stime` (field 15), in clock ticks, from the
/// text of a `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat` file.
fn parse_stat_ticks(stat: &str) -> Option<(u64, u64)> {
    // Field 2 (comm) is in parentheses and may itself contain spaces and
    // parentheses, so start after the last ')'. The next field is field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let utime = fields.nth(14 - 3)?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// Converts clock ticks to nanoseconds without overflow.
fn ticks_to_ns(ticks: u64, hz: u64) -> u64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(hz.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Returns the CPU time consumed so far by thread `tid` of this process
/// (from `/proc/self/task/<tid>/stat`; clock-tick resolution, typically
/// 10 ms).
///
/// # Errors
///
/// `InvalidInput` for a non-positive `tid`, `NotFound` if no such thread of
/// this process is alive, `InvalidData` if the file cannot be parsed.
pub fn thread_cpu_times(tid: i32) -> io::Result<CpuTimes> {
    if tid <= 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid thread id {tid}"),
        ));
    }
    let path = format!("/proc/self/task/{tid}/stat");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    let (utime, stime) = parse_stat_ticks(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse utime/stime in {path}"),
        )
    })?;
    let hz = clock_ticks_per_second();
    let run_delay_ns = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|t| parse_schedstat_run_delay(&t));
    Ok(CpuTimes {
        user_ns: ticks_to_ns(utime, hz),
        system_ns: ticks_to_ns(stime, hz),
        run_delay_ns,
    })
}

/// The run-queue wait, ns: the second of the three fields of a `schedstat` file (time on
/// the CPU, time waiting on a run queue, timeslices run; Documentation/scheduler/sched-stats).
fn parse_schedstat_run_delay(text: &str) -> Option<u64> {
    let mut fields = text.split_ascii_whitespace();
    let _on_cpu: u64 = fields.next()?.parse().ok()?;
    fields.next()?.parse().ok()
}

/// Converts a `timeval` to nanoseconds (negative values clamp to 0).
fn timeval_ns(tv: &libc::timeval) -> u64 {
    let sec = u64::try_from(tv.tv_sec).unwrap_or(0);
    let usec = u64::try_from(tv.tv_usec).unwrap_or(0);
    sec.saturating_mul(1_000_000_000)
        .saturating_add(usec.saturating_mul(1_000))
}

/// Returns the CPU time consumed so far by the whole process, all threads
/// included (`getrusage(RUSAGE_SELF)`, microsecond resolution).
///
/// # Errors
///
/// Returns the `getrusage` error.
pub fn process_cpu_times() -> io::Result<CpuTimes> {
    // SAFETY: `rusage` is a plain C struct of integers; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the kernel to fill.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuTimes {
        user_ns: timeval_ns(&ru.ru_utime),
        system_ns: timeval_ns(&ru.ru_stime),
        run_delay_ns: None,
    })
}

/// Returns the number of online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`),
/// at least 1.
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a configuration value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[test]
    fn parse_stat_with_weird_comm() {
        let stat = "1234 (a) b (c) d) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    250 37 0 0 20 0 1 0 100 1000 100 18446744073709551615";
        assert_eq!(parse_stat_ticks(stat), Some((250, 37)));
        assert_eq!(parse_stat_ticks("garbage"), None);
        assert_eq!(parse_stat_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn schedstat_run_delay() {
        assert_eq!(
            parse_schedstat_run_delay("518000 285000 206987\n"),
            Some(285_000)
        );
        assert_eq!(parse_schedstat_run_delay("518000"), None);
        assert_eq!(parse_schedstat_run_delay("x 1 2"), None);
        // This thread has a schedstat of its own.
        let tid = current_thread_id();
        assert!(thread_cpu_times(tid).unwrap().run_delay_ns.is_some());
    }

    #[test]
    fn tick_conversion() {
        assert_eq!(ticks_to_ns(250, 100), 2_500_000_000);
        assert_eq!(ticks_to_ns(3, 1000), 3_000_000);
        assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn pin_to_an_allowed_cpu() {
        // Run in a dedicated thread so the test harness threads are unaffected.
        std::thread::spawn(|| {
            let allowed = current_thread_affinity().unwrap();
            assert!(!allowed.is_empty());
            // CPU 0 when allowed (the usual case); otherwise the first allowed CPU.
            let cpu = if allowed.contains(&0) { 0 } else { allowed[0] };
            pin_current_thread(cpu).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), vec![cpu]);
            if let Some(&last) = allowed.last() {
                pin_current_thread(last).unwrap();
                assert_eq!(current_thread_affinity().unwrap(), vec![last]);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pin_to_missing_cpu_errors_with_number() {
        std::thread::spawn(|| {
            for cpu in [4000usize, 100_000] {
                let err = pin_current_thread(cpu).unwrap_err();
                assert!(err.to_string().contains(&cpu.to_string()), "{err}");
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn thread_ids() {
        let me = current_thread_id();
        assert!(me > 0);
        let other = std::thread::spawn(current_thread_id).join().unwrap();
        assert!(other > 0);
        assert_ne!(me, other);
        assert!(thread_cpu_times(me).is_ok());
        assert!(thread_cpu_times(0).is_err());
        assert!(thread_cpu_times(i32::MAX).is_err());
    }

    #[test]
    fn thread_cpu_times_grow_when_busy() {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (exit_tx, exit_rx) = mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tid_tx.send(current_thread_id()).unwrap();
            go_rx.recv().unwrap();
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(200) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            done_tx.send(()).unwrap();
            exit_rx.recv().unwrap();
            x
        });
        let tid = tid_rx.recv().unwrap();
        let before = thread_cpu_times(tid).unwrap();
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        let after = thread_cpu_times(tid).unwrap();
        exit_tx.send(()).unwrap();
        worker.join().unwrap();
        assert!(after.user_ns >= before.user_ns);
        assert!(after.system_ns >= before.system_ns);
        assert!(
            after.total_ns() > before.total_ns(),
            "before {before:?} after {after:?}"
        );
    }

    #[test]
    fn process_times_monotonic() {
        let a = process_cpu_times().unwrap();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = process_cpu_times().unwrap();
        assert!(b.user_ns >= a.user_ns && b.system_ns >= a.system_ns);
        assert!(b.total_ns() > a.total_ns());
    }

    #[test]
    fn cpus_online() {
        let n = online_cpus();
        assert!(n >= 1);
        let allowed = std::thread::spawn(current_thread_affinity)
            .join()
            .unwrap()
            .unwrap();
        assert!(!allowed.is_empty());
    }
}
