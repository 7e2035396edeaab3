//! The sink the sampler's drain thread feeds: each sample is symbolized and classified on
//! arrival and only counts are kept (per CPU and category, and per category and own symbol),
//! so memory does not grow with the window. [`Aggregator::into_report`] turns the counts into
//! the bounded [`ProfileReport`].
//!
//! The profiler's own work is its own category ([`ProfileCategory::Sampler`]): the samples of
//! this sampler's drain thread (its thread id, told as it starts) and of the drain threads of
//! other wirebench processes on the same CPUs (the other end on the same host, found by
//! thread name, [`DRAIN_THREAD_NAME`]), whatever their frames say.

use std::collections::HashMap;

use wirebench_model::profile::{
    truncate_symbol, CategoryProfile, CpuProfile, KernelSymbols, ProfileCategory, ProfileEvent,
    ProfileReport, SymbolSamples, MAX_PROFILE_CPUS, MAX_TOP_SYMBOLS,
};
use wirebench_sys::perf::{EventKind, Frame, Recording, Sample, SampleSink, DRAIN_THREAD_NAME};

use crate::classify::{class_of, classify, classify_by, Class, FrameSym};
use crate::kallsyms::KernelSymbolTable;
use crate::usersyms::UserSymbols;

/// Distinct symbols counted per category before the rest are pooled.
const MAX_DISTINCT_SYMBOLS: usize = 20_000;
/// The name of the pool.
const POOLED: &str = "[other symbols]";
/// Categories.
const N: usize = ProfileCategory::ALL.len();

/// Kernel and user symbols for one profile.
#[derive(Debug)]
pub struct Symbols {
    /// `/proc/kallsyms`.
    pub kernel: KernelSymbolTable,
    /// Whether kernel addresses resolved.
    pub kernel_status: KernelSymbols,
    /// Wirebench binaries and other processes.
    pub user: UserSymbols,
}

impl Symbols {
    /// Loads both (a few tens of ms: do it before the window).
    pub fn load() -> Symbols {
        let (kernel, kernel_status) = KernelSymbolTable::load();
        Symbols {
            kernel,
            kernel_status,
            user: UserSymbols::load(),
        }
    }
}

/// Counts of one CPU.
#[derive(Debug, Clone, Default)]
struct CpuCounts {
    samples: [u64; N],
    period: [u64; N],
    wirebench: [u64; N],
}

/// Classifies samples as they arrive and counts them.
#[derive(Debug)]
pub struct Aggregator {
    symbols: Symbols,
    cpus: Vec<u32>,
    per_cpu: Vec<CpuCounts>,
    top: Vec<HashMap<Box<str>, u64>>,
    /// The table's verdict per kernel symbol (keyed by the name's address in the kernel
    /// symbol table, which does not move): the table is a linear scan of a few hundred rows.
    classes: HashMap<usize, Option<Class>>,
    /// Samples on a CPU not in the list (never expected).
    stray: u64,
    /// This sampler's drain thread, once it started.
    drain_tid: Option<u32>,
    /// Per thread of a wirebench process seen in the samples: whether it is a profiler's
    /// drain thread (read once from `/proc/<pid>/task/<tid>/comm`).
    drain_threads: HashMap<u32, bool>,
}

impl Aggregator {
    /// An empty aggregator for samples of `cpus` (at most [`MAX_PROFILE_CPUS`] kept).
    pub fn new(symbols: Symbols, cpus: &[u32]) -> Aggregator {
        let mut cpus: Vec<u32> = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        cpus.truncate(MAX_PROFILE_CPUS);
        Aggregator {
            symbols,
            per_cpu: vec![CpuCounts::default(); cpus.len()],
            cpus,
            top: vec![HashMap::new(); N],
            classes: HashMap::new(),
            stray: 0,
            drain_tid: None,
            drain_threads: HashMap::new(),
        }
    }

    /// This sampler's drain thread, once it started.
    pub fn drain_tid(&self) -> Option<u32> {
        self.drain_tid
    }

    /// Whether the sample shows a profiler's own work: this sampler's drain thread, or a
    /// thread named [`DRAIN_THREAD_NAME`] in another wirebench process.
    fn is_sampler(&mut self, sample: &Sample<'_>) -> bool {
        if sample.pid == 0 {
            return false;
        }
        if Some(sample.tid) == self.drain_tid {
            return true;
        }
        if !self.symbols.user.is_wirebench(sample.pid) {
            return false;
        }
        let (pid, tid) = (sample.pid, sample.tid);
        *self.drain_threads.entry(tid).or_insert_with(|| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end() == DRAIN_THREAD_NAME)
        })
    }

    /// The sample's frames, innermost first; the sample's own address alone when the
    /// kernel gave no call chain.
    fn frames(sample: &Sample<'_>) -> Vec<Frame> {
        let mut frames: Vec<Frame> = sample.frames().collect();
        if frames.is_empty() {
            frames.push(Frame {
                addr: sample.ip,
                kernel: sample.kernel_mode,
            });
        }
        frames
    }

    /// Classifies one sample: its category and its own symbol. A profiler's drain thread's
    /// samples are [`ProfileCategory::Sampler`], whatever their frames.
    pub fn classify_sample(&mut self, sample: &Sample<'_>) -> (ProfileCategory, String) {
        let (cat, name) = self.classify_frames(sample);
        if self.is_sampler(sample) {
            return (ProfileCategory::Sampler, name);
        }
        (cat, name)
    }

    /// The category the sample's frames give, and its own symbol.
    fn classify_frames(&mut self, sample: &Sample<'_>) -> (ProfileCategory, String) {
        let frames = Aggregator::frames(sample);
        let first = frames[0];
        if !first.kernel {
            let wirebench = self.symbols.user.is_wirebench(sample.pid);
            let cat = classify([FrameSym::User { wirebench }]);
            let name = self
                .symbols
                .user
                .symbol(sample.pid, first.addr)
                .unwrap_or_else(|| "[unknown user]".to_owned());
            return (cat, name);
        }
        let kernel = &self.symbols.kernel;
        let classes = &mut self.classes;
        let syms = frames.iter().map(|f| {
            if f.kernel {
                FrameSym::Kernel(kernel.lookup(f.addr))
            } else {
                // The walk stops at the first user frame whatever the process.
                FrameSym::User { wirebench: false }
            }
        });
        let cat = classify_by(syms, |name: &str| {
            *classes
                .entry(name.as_ptr() as usize)
                .or_insert_with(|| class_of(name))
        });
        let name = kernel.lookup(first.addr).unwrap_or("[unknown kernel]");
        (cat, name.to_owned())
    }

    fn count(&mut self, sample: &Sample<'_>, cat: ProfileCategory, symbol: &str) {
        let Ok(i) = self.cpus.binary_search(&sample.cpu) else {
            self.stray += 1;
            return;
        };
        let wirebench = self.symbols.user.is_wirebench(sample.pid);
        let c = &mut self.per_cpu[i];
        c.samples[cat.index()] += 1;
        c.period[cat.index()] += sample.period;
        c.wirebench[cat.index()] += u64::from(wirebench);
        let top = &mut self.top[cat.index()];
        if let Some(n) = top.get_mut(symbol) {
            *n += 1;
        } else if top.len() < MAX_DISTINCT_SYMBOLS {
            top.insert(symbol.into(), 1);
        } else {
            *top.entry(POOLED.into()).or_insert(0) += 1;
        }
    }

    /// Samples counted so far (all CPUs, all categories).
    pub fn samples(&self) -> u64 {
        self.per_cpu.iter().flat_map(|c| c.samples).sum()
    }

    /// Builds the report of a finished recording. `idle_pct`, per CPU, is the share of the
    /// window `/proc/stat` counts idle (read as sampling started and stopped): the
    /// unsampled time up to what it counts idle beyond the idle samples is idle, the rest is
    /// the `unsampled` category (busy, no sample). Without it all unsampled time is idle.
    pub fn into_report(
        self,
        finished: &Recording,
        idle_pct: Option<&[(u32, f64)]>,
    ) -> ProfileReport {
        let window_ns = finished.window_ns();
        let samples = self.samples();
        let cycles = finished.event == EventKind::Cycles;
        let period_total: u64 = self.per_cpu.iter().flat_map(|c| c.period).sum();
        let period = if cycles {
            period_total / samples.max(1)
        } else {
            1_000_000_000 / u64::from(finished.freq_hz.max(1))
        };
        // CPU ns per (CPU, category): the periods for cpu-clock; for cycles, the sample
        // share of the CPU's window.
        let cpu_ns_of = |c: &CpuCounts, k: usize| -> u64 {
            if cycles {
                let n: u64 = c.samples.iter().sum();
                (u128::from(window_ns) * u128::from(c.samples[k]) / u128::from(n.max(1))) as u64
            } else {
                c.period[k]
            }
        };
        let idle = ProfileCategory::Idle.index();
        let unsampled_k = ProfileCategory::Unsampled.index();
        let mut totals = [0u64; N];
        let mut per_cpu = Vec::with_capacity(self.cpus.len());
        let (mut idle_total, mut busy_total, mut over_total) = (0u64, 0u64, 0u64);
        for (cpu, c) in self.cpus.iter().zip(&self.per_cpu) {
            let mut ns: Vec<u64> = (0..N).map(|k| cpu_ns_of(c, k)).collect();
            let sampled: u64 = ns.iter().sum();
            let unsampled = window_ns.saturating_sub(sampled);
            // A CPU /proc/stat does not list keeps the old rule: unsampled is idle.
            let cpu_idle_pct =
                idle_pct.and_then(|v| v.iter().find(|(n, _)| n == cpu).map(|(_, p)| *p));
            let (unsampled_idle, unsampled_busy) =
                split_unsampled(unsampled, ns[idle], window_ns, cpu_idle_pct);
            ns[idle] += unsampled_idle;
            ns[unsampled_k] += unsampled_busy;
            idle_total += unsampled_idle;
            busy_total += unsampled_busy;
            let oversampled = move_oversampled_busy(&mut ns, idle, window_ns, cpu_idle_pct);
            over_total += oversampled;
            for k in 0..N {
                totals[k] += ns[k];
            }
            per_cpu.push(CpuProfile {
                cpu: *cpu,
                samples: c.samples.iter().sum(),
                unsampled_idle_ns: unsampled_idle,
                unsampled_busy_ns: unsampled_busy,
                oversampled_busy_ns: oversampled,
                cpu_ns: ns,
            });
        }
        let denominator: u64 = totals.iter().sum();
        let categories = ProfileCategory::ALL
            .iter()
            .map(|&cat| {
                let k = cat.index();
                CategoryProfile {
                    category: cat,
                    samples: self.per_cpu.iter().map(|c| c.samples[k]).sum(),
                    wirebench_samples: self.per_cpu.iter().map(|c| c.wirebench[k]).sum(),
                    cpu_ns: totals[k],
                    pct: pct(totals[k], denominator),
                    top_symbols: top_symbols(&self.top[k]),
                }
            })
            .collect();
        ProfileReport {
            event: match finished.event {
                EventKind::CpuClock => ProfileEvent::CpuClock,
                EventKind::Cycles => ProfileEvent::Cycles,
            },
            freq_hz: finished.freq_hz,
            period,
            cpus: self.cpus,
            window_ns,
            samples,
            lost_samples: finished.stats.lost,
            throttled: finished.stats.throttled,
            unsampled_idle_ns: idle_total,
            unsampled_busy_ns: busy_total,
            oversampled_busy_ns: over_total,
            idle_from_proc_stat: idle_pct.is_some(),
            kernel_symbols: self.symbols.kernel_status,
            categories,
            per_cpu,
        }
    }
}

impl SampleSink for Aggregator {
    fn sample(&mut self, sample: &Sample<'_>) {
        let (cat, name) = self.classify_sample(sample);
        self.count(sample, cat, &name);
    }

    fn on_drain_thread(&mut self, tid: u32) {
        self.drain_tid = Some(tid);
    }
}

/// Splits a CPU's `unsampled` ns of a `window_ns` window into (idle, busy): idle is what
/// `/proc/stat` counts idle (`idle_pct` of the window) beyond the `sampled_idle_ns` that
/// idle samples already stand for, at most all of it; busy is the rest. Without
/// `idle_pct`, all of it is idle.
pub fn split_unsampled(
    unsampled: u64,
    sampled_idle_ns: u64,
    window_ns: u64,
    idle_pct: Option<f64>,
) -> (u64, u64) {
    let Some(p) = idle_pct else {
        return (unsampled, 0);
    };
    let idle_ns = (p.clamp(0.0, 100.0) / 100.0 * window_ns as f64) as u64;
    let idle = idle_ns.saturating_sub(sampled_idle_ns).min(unsampled);
    (idle, unsampled - idle)
}

/// Moves to idle the busy samples' time beyond what `/proc/stat` counts busy, for a CPU
/// whose idle (`ns[idle]`, unsampled idle time included) is still short of what
/// `/proc/stat` counts idle (`idle_pct` of `window_ns`): the busy categories shrink in
/// proportion by that shortfall (at most all of their time; the nanoseconds their rounding
/// down leaves move too). Returns the ns moved.
///
/// A halted CPU gives no samples on this project's KVM guests: a receiver that naps for
/// tens of microseconds thousands of times a second left its CPU about 30 % idle by
/// `/proc/stat` with not one idle sample in 7 s. The samples due while the CPU was halted
/// are taken, late, in whatever ran once it woke, so busy samples can stand for more than
/// the CPU's busy time. `idle_pct` is the kernel's timed idle over the window (see
/// `wirebench_stats::cpu`); without it nothing moves.
pub fn move_oversampled_busy(
    ns: &mut [u64],
    idle: usize,
    window_ns: u64,
    idle_pct: Option<f64>,
) -> u64 {
    let Some(p) = idle_pct else {
        return 0;
    };
    let idle_ns = (p.clamp(0.0, 100.0) / 100.0 * window_ns as f64) as u64;
    let busy: u64 = ns
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != idle)
        .map(|(_, v)| *v)
        .sum();
    let shortfall = idle_ns.saturating_sub(ns[idle]).min(busy);
    if shortfall == 0 {
        return 0;
    }
    let keep = busy - shortfall;
    let mut kept = 0u64;
    for (k, v) in ns.iter_mut().enumerate() {
        if k != idle {
            *v = (u128::from(*v) * u128::from(keep) / u128::from(busy)) as u64;
            kept += *v;
        }
    }
    // What rounding down left over is idle too: the CPU's total stays the same.
    let moved = busy - kept;
    ns[idle] += moved;
    moved
}

/// `part` as a percentage of `whole` (0 for an empty whole).
fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The most frequent symbols, most first (ties by name), bounded and truncated.
fn top_symbols(counts: &HashMap<Box<str>, u64>) -> Vec<SymbolSamples> {
    let mut v: Vec<(&str, u64)> = counts.iter().map(|(k, &n)| (&**k, n)).collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.into_iter()
        .take(MAX_TOP_SYMBOLS)
        .map(|(s, n)| SymbolSamples {
            symbol: truncate_symbol(s),
            samples: n,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{move_oversampled_busy, split_unsampled};

    const S: u64 = 1_000_000_000;

    #[test]
    fn unsampled_time_is_idle_only_as_far_as_proc_stat_counts_idle() {
        // No /proc/stat: all of it idle, as before.
        assert_eq!(split_unsampled(400_000_000, 0, S, None), (400_000_000, 0));
        // A halted CPU, 40 % idle and unsampled: all idle.
        assert_eq!(
            split_unsampled(400_000_000, 0, S, Some(40.0)),
            (400_000_000, 0)
        );
        // 10 % idle but 40 % unsampled: 30 % was busy with no sample.
        assert_eq!(
            split_unsampled(400_000_000, 0, S, Some(10.0)),
            (100_000_000, 300_000_000)
        );
        // Idle samples already stand for part of the idle time.
        assert_eq!(
            split_unsampled(200_000_000, 50_000_000, S, Some(10.0)),
            (50_000_000, 150_000_000)
        );
        // More idle than unsampled time: the unsampled time, no more.
        assert_eq!(split_unsampled(10, 0, S, Some(90.0)), (10, 0));
        // Out-of-range shares are clamped; nothing unsampled, nothing to split.
        assert_eq!(split_unsampled(0, 0, S, Some(150.0)), (0, 0));
        assert_eq!(split_unsampled(100, 0, S, Some(-5.0)), (0, 100));
    }

    #[test]
    fn busy_samples_beyond_what_proc_stat_counts_busy_are_idle() {
        const S: u64 = 1_000_000_000;
        // Categories: [busy a, busy b, idle]. 70 % sampled busy (a 0.5 s, b 0.2 s), 30 %
        // idle; /proc/stat counts 40 % idle: 0.1 s of busy samples move, a and b shrink
        // by a seventh each, and the total stays the window.
        let mut ns = vec![500_000_000, 200_000_000, 300_000_000];
        let moved = move_oversampled_busy(&mut ns, 2, S, Some(40.0));
        // 100 ms, and the nanosecond rounding down left.
        assert_eq!(moved, 100_000_001);
        assert_eq!(ns, vec![428_571_428, 171_428_571, 400_000_001]);
        assert_eq!(ns.iter().sum::<u64>(), S);
        // Idle already at or above /proc/stat's idle: nothing moves.
        let mut ns = vec![500_000_000, 100_000_000, 400_000_000];
        assert_eq!(move_oversampled_busy(&mut ns, 2, S, Some(40.0)), 0);
        assert_eq!(ns, vec![500_000_000, 100_000_000, 400_000_000]);
        // Without /proc/stat: nothing moves.
        let mut ns = vec![900_000_000, 0, 100_000_000];
        assert_eq!(move_oversampled_busy(&mut ns, 2, S, None), 0);
        // At most all the busy time moves (a CPU /proc/stat counts all idle).
        let mut ns = vec![600_000_000, 0, 0];
        assert_eq!(
            move_oversampled_busy(&mut ns, 2, 600_000_000, Some(100.0)),
            600_000_000
        );
        assert_eq!(ns, vec![0, 0, 600_000_000]);
    }
}
