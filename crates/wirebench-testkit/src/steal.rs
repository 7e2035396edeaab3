//! Time the hypervisor took from this guest's CPUs (`steal` in `/proc/stat`).
//!
//! A sampler driven by a CPU's clock (perf's `cpu-clock`, an hrtimer) takes no sample while
//! the host runs something else on that vCPU: when the vCPU runs again, the timer fires
//! once and skips the periods it missed. So on a busy host a busy guest CPU yields
//! frequency × (window − stolen time) samples, not frequency × window. Tests that count
//! samples read the stolen time here, from the kernel's own accounting, and expect that.

use std::time::Duration;

/// `USER_HZ`, the unit of `/proc/stat`: 100 on every architecture this project builds for
/// (x86-64, aarch64); `sysconf(_SC_CLK_TCK)` returns it.
pub const USER_HZ: u64 = 100;

/// One reading of every CPU's stolen time, in `USER_HZ` ticks, indexed by CPU number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StealTicks(pub Vec<u64>);

impl StealTicks {
    /// Reads `/proc/stat` now (the `cpuN` lines' `steal`).
    pub fn now() -> StealTicks {
        let text = std::fs::read_to_string("/proc/stat").expect("read /proc/stat");
        StealTicks::parse(&text)
    }

    /// The per-CPU steal of a `/proc/stat` text (read by wirebench-stats' parser); a CPU
    /// without a line reads 0.
    ///
    /// # Panics
    ///
    /// If the text is not a `/proc/stat` (no aggregate `cpu` line, a malformed one).
    pub fn parse(text: &str) -> StealTicks {
        let stat = wirebench_stats::cpu::parse_proc_stat(text).expect("a /proc/stat text");
        let mut ticks = Vec::new();
        for (cpu, t) in &stat.per_cpu {
            let cpu = *cpu as usize;
            if ticks.len() <= cpu {
                ticks.resize(cpu + 1, 0);
            }
            ticks[cpu] = t.steal;
        }
        StealTicks(ticks)
    }

    /// Stolen time on `cpu` between `self` (earlier) and `later`.
    pub fn stolen_since(&self, later: &StealTicks, cpu: usize) -> Duration {
        let a = self.0.get(cpu).copied().unwrap_or(0);
        let b = later.0.get(cpu).copied().unwrap_or(0);
        Duration::from_millis(b.saturating_sub(a) * 1000 / USER_HZ)
    }
}

/// What the tick accounting can be off by on one CPU over a window read twice: the kernel
/// adds stolen time to `/proc/stat` at ticks, in whole `USER_HZ` units, so each edge of the
/// window can miss up to one unit (plus one tick of the scheduler, at most 10 ms at
/// `CONFIG_HZ` 100).
pub const STEAL_SLACK_PER_CPU: Duration = Duration::from_millis(40);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_per_cpu_steal_and_skips_the_total() {
        let text = "cpu  5 0 5 50 0 0 0 9 0 0\n\
                    cpu0 1 0 2 20 0 0 0 4 0 0\n\
                    cpu2 1 0 2 20 0 0 0 5 0 0\n\
                    intr 1 2 3\n";
        let s = StealTicks::parse(text);
        assert_eq!(s.0, vec![4, 0, 5]);
        let later = StealTicks(vec![14, 0, 5]);
        assert_eq!(s.stolen_since(&later, 0), Duration::from_millis(100));
        assert_eq!(s.stolen_since(&later, 1), Duration::ZERO);
        assert_eq!(s.stolen_since(&later, 7), Duration::ZERO);
    }
}
