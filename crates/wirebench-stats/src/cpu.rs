//! CPU utilization from `/proc/stat` snapshots.
//!
//! `/proc/stat` counts, per CPU, the time spent in each state since boot in USER_HZ units
//! (10 ms). The kernel measures two kinds of state differently:
//!
//! - `idle` and `iowait` are *timed*: on a tickless kernel (NO_HZ, the norm) each idle
//!   stretch is clocked from its start to its end, to the nanosecond, then shown in 10 ms
//!   units.
//! - `user`, `system`, `irq`, `softirq` and `steal` are *sampled* (tick accounting, unless
//!   the kernel has IRQ time accounting and full dynticks): each timer tick gives a whole
//!   tick to whatever runs at that instant. A CPU that works in bursts shorter than a tick
//!   and idles between them is often idle when the tick fires, and its work is counted
//!   nowhere. A 1 Gbit/s paced loopback stream pinned to one CPU (2-vCPU Intel Xeon, Linux
//!   6.18, 250 Hz) ran its threads for 0.43 s in 5.03 s (the processes' own CPU time): the
//!   busy ticks summed to 0.06 s, and all of that CPU's counters to 4.62 s, not 5.03 s.
//!
//! So utilization is taken against the wall-clock window, not against the ticks counted:
//! `idle_pct` is the timed idle over the window and `busy_pct` the rest of the window (0.47
//! s in that example), and the sampled states split `busy_pct` in their own proportions.
//! `busy` is everything except `idle` and `iowait` (netperf and `mpstat` agree on that;
//! both divide by the ticks counted). `guest` time is already included in `user` by the
//! kernel and is not added again.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Raw tick counters of one CPU line of `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuTicks {
    /// Normal user mode.
    pub user: u64,
    /// Niced user mode.
    pub nice: u64,
    /// Kernel mode, excluding interrupts.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle while I/O was outstanding.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts (most of the network receive path).
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

/// A parsed `/proc/stat` snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: CpuTicks,
    /// The `cpuN` lines, as (N, ticks), in file order.
    pub per_cpu: Vec<(u32, CpuTicks)>,
}

/// Shares of one CPU (or of all CPUs together) over a window, in percent (0-100).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuBreakdown {
    /// user + nice.
    pub user_pct: f64,
    /// Kernel mode outside interrupts.
    pub system_pct: f64,
    /// Hard interrupts.
    pub irq_pct: f64,
    /// Soft interrupts.
    pub softirq_pct: f64,
    /// Stolen by the hypervisor.
    pub steal_pct: f64,
    /// idle + iowait.
    pub idle_pct: f64,
    /// 100 - idle_pct.
    pub busy_pct: f64,
    /// Busy time no tick sampled, so no state (user, system, ...) can be named for it: all
    /// of `busy_pct` when the window holds busy time but not one busy tick, else 0.
    #[serde(default)]
    pub unattributed_pct: f64,
}

/// System-wide utilization over a window, from two `/proc/stat` snapshots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemCpuUtil {
    /// CPUs that appear in both snapshots.
    pub cpus: u32,
    /// All CPUs together: `busy_pct` 100 means every CPU was busy the whole window.
    pub total: CpuBreakdown,
    /// Each CPU, as (CPU number, breakdown).
    pub per_cpu: Vec<(u32, CpuBreakdown)>,
    /// The CPU with the highest `busy_pct`.
    pub busiest_cpu: u32,
    /// Its breakdown.
    pub busiest: CpuBreakdown,
    /// Ticks counted per CPU in the window, all states (USER_HZ, 100 per second of the
    /// window on a fully busy CPU; fewer when busy bursts fell between ticks).
    pub window_ticks: u64,
}

/// One `/proc/stat` unit (USER_HZ is 100 for `/proc` on every Linux), in ns.
pub const USER_HZ_NS: u64 = 10_000_000;

/// Errors from parsing or combining `/proc/stat` snapshots.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CpuError {
    /// The text is not a `/proc/stat` file.
    #[error("malformed /proc/stat: {0}")]
    Malformed(String),
    /// The two snapshots are not comparable (no elapsed ticks, or counters went backwards).
    #[error("cpu snapshots are not comparable: {0}")]
    NotComparable(String),
}

/// Parse the text of `/proc/stat`.
///
/// Reads the aggregate `cpu` line and every `cpuN` line. Each line carries the fields
/// `user nice system idle iowait irq softirq steal [guest guest_nice]`; kernels older than
/// 2.6.11 print fewer of them, so at least the first four are required and missing trailing
/// fields count as 0. `guest`/`guest_nice` (and any further fields a future kernel may add)
/// are validated as numbers but not stored: guest time is already part of `user`/`nice`.
/// All other lines (`intr`, `ctxt`, `btime`, ...) are ignored.
///
/// # Errors
///
/// [`CpuError::Malformed`] if there is no aggregate `cpu` line, a `cpu`/`cpuN` line has
/// fewer than four fields or a field that is not an unsigned 64-bit integer, or the same
/// line appears twice. Never panics, whatever the input.
pub fn parse_proc_stat(text: &str) -> Result<ProcStat, CpuError> {
    let mut total: Option<CpuTicks> = None;
    let mut per_cpu: Vec<(u32, CpuTicks)> = Vec::new();
    let mut seen: BTreeSet<u32> = BTreeSet::new();

    for (lineno, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(key) = fields.next() else {
            continue;
        };
        let Some(suffix) = key.strip_prefix("cpu") else {
            continue;
        };
        let id = if suffix.is_empty() {
            None
        } else if suffix.bytes().all(|b| b.is_ascii_digit()) {
            let n = suffix
                .parse::<u32>()
                .map_err(|_| malformed(lineno, format!("CPU number {suffix:?} is out of range")))?;
            Some(n)
        } else {
            // Not a CPU line (`/proc/stat` has none like this today); ignore it like any
            // other unknown key.
            continue;
        };
        let ticks = parse_ticks(lineno, key, fields)?;
        match id {
            None => {
                if total.is_some() {
                    return Err(malformed(lineno, "second aggregate `cpu` line".into()));
                }
                total = Some(ticks);
            }
            Some(n) => {
                if !seen.insert(n) {
                    return Err(malformed(lineno, format!("second `cpu{n}` line")));
                }
                per_cpu.push((n, ticks));
            }
        }
    }

    let total = total.ok_or_else(|| CpuError::Malformed("no aggregate `cpu` line".into()))?;
    Ok(ProcStat { total, per_cpu })
}

fn malformed(lineno: usize, what: String) -> CpuError {
    CpuError::Malformed(format!("line {}: {what}", lineno.saturating_add(1)))
}

/// The fields after the key of one `cpu`/`cpuN` line.
fn parse_ticks<'a>(
    lineno: usize,
    key: &str,
    fields: impl Iterator<Item = &'a str>,
) -> Result<CpuTicks, CpuError> {
    // user nice system idle iowait irq softirq steal
    let mut v = [0u64; 8];
    let mut count = 0usize;
    for field in fields {
        let n = field.parse::<u64>().map_err(|_| {
            malformed(
                lineno,
                format!("`{key}` field {} is not a tick count: {field:?}", count + 1),
            )
        })?;
        if let Some(slot) = v.get_mut(count) {
            *slot = n;
        }
        count = count.saturating_add(1);
    }
    if count < 4 {
        return Err(malformed(
            lineno,
            format!("`{key}` has {count} fields, at least 4 (user nice system idle) needed"),
        ));
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Ok(CpuTicks {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

/// Tick deltas of one CPU (or a sum of CPUs) over a window. Kept in `u128` so that sums of
/// `u64` counters can never overflow or saturate. `idle` and `iowait` are only compared as a
/// sum: the kernel documents `iowait` as unreliable and it can move into `idle` between
/// reads (so `iowait` alone may go down while `idle + iowait` does not).
#[derive(Debug, Clone, Copy, Default)]
struct Delta {
    user: u128,
    nice: u128,
    system: u128,
    idle_iowait: u128,
    irq: u128,
    softirq: u128,
    steal: u128,
}

impl Delta {
    fn between(cpu: &str, before: &CpuTicks, after: &CpuTicks) -> Result<Self, CpuError> {
        let sub = |name: &str, b: u128, a: u128| {
            a.checked_sub(b).ok_or_else(|| {
                CpuError::NotComparable(format!("{cpu} {name} went backwards ({b} -> {a})"))
            })
        };
        let w = u128::from;
        Ok(Delta {
            user: sub("user", w(before.user), w(after.user))?,
            nice: sub("nice", w(before.nice), w(after.nice))?,
            system: sub("system", w(before.system), w(after.system))?,
            idle_iowait: sub(
                "idle+iowait",
                w(before.idle) + w(before.iowait),
                w(after.idle) + w(after.iowait),
            )?,
            irq: sub("irq", w(before.irq), w(after.irq))?,
            softirq: sub("softirq", w(before.softirq), w(after.softirq))?,
            steal: sub("steal", w(before.steal), w(after.steal))?,
        })
    }

    /// All ticks of the window.
    fn ticks(&self) -> u128 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle_iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .iter()
        .fold(0u128, |acc, &x| acc.saturating_add(x))
    }

    fn saturating_add(self, o: Delta) -> Delta {
        Delta {
            user: self.user.saturating_add(o.user),
            nice: self.nice.saturating_add(o.nice),
            system: self.system.saturating_add(o.system),
            idle_iowait: self.idle_iowait.saturating_add(o.idle_iowait),
            irq: self.irq.saturating_add(o.irq),
            softirq: self.softirq.saturating_add(o.softirq),
            steal: self.steal.saturating_add(o.steal),
        }
    }

    /// Ticks of the sampled (busy) states.
    fn busy_ticks(&self) -> u128 {
        self.ticks().saturating_sub(self.idle_iowait)
    }

    /// One CPU's percentages of a window of `window_ns`. Idle is the timed idle over the
    /// window, busy the rest; the sampled states split busy in their tick proportions. A
    /// CPU with no elapsed ticks, or an empty window, gets all zeros (nothing was observed).
    fn breakdown(&self, window_ns: u128) -> CpuBreakdown {
        let window_units = window_ns as f64 / USER_HZ_NS as f64;
        if self.ticks() == 0 || window_units <= 0.0 || !window_units.is_finite() {
            return CpuBreakdown::default();
        }
        let idle_pct = (self.idle_iowait as f64 * 100.0 / window_units).clamp(0.0, 100.0);
        let busy_pct = 100.0 - idle_pct;
        let busy_ticks = self.busy_ticks() as f64;
        let (share, unattributed_pct) = if busy_ticks > 0.0 {
            (busy_pct / busy_ticks, 0.0)
        } else {
            (0.0, busy_pct)
        };
        let pct = |x: u128| ((x as f64) * share).clamp(0.0, 100.0);
        CpuBreakdown {
            user_pct: pct(self.user.saturating_add(self.nice)),
            system_pct: pct(self.system),
            irq_pct: pct(self.irq),
            softirq_pct: pct(self.softirq),
            steal_pct: pct(self.steal),
            idle_pct,
            busy_pct,
            unattributed_pct,
        }
    }
}

/// The mean of `n` breakdowns (all zeros when `n` is 0).
fn mean_breakdown<'a>(parts: impl Iterator<Item = &'a CpuBreakdown>, n: u32) -> CpuBreakdown {
    let mut t = CpuBreakdown::default();
    if n == 0 {
        return t;
    }
    for b in parts {
        t.user_pct += b.user_pct;
        t.system_pct += b.system_pct;
        t.irq_pct += b.irq_pct;
        t.softirq_pct += b.softirq_pct;
        t.steal_pct += b.steal_pct;
        t.idle_pct += b.idle_pct;
        t.busy_pct += b.busy_pct;
        t.unattributed_pct += b.unattributed_pct;
    }
    let n = f64::from(n);
    let mean = |x: f64| (x / n).clamp(0.0, 100.0);
    CpuBreakdown {
        user_pct: mean(t.user_pct),
        system_pct: mean(t.system_pct),
        irq_pct: mean(t.irq_pct),
        softirq_pct: mean(t.softirq_pct),
        steal_pct: mean(t.steal_pct),
        idle_pct: mean(t.idle_pct),
        busy_pct: mean(t.busy_pct),
        unattributed_pct: mean(t.unattributed_pct),
    }
}

/// Utilization between two snapshots, `before` taken first and `window_ns` before `after`.
///
/// Only CPUs whose `cpuN` line appears in both snapshots are used (CPUs may be hot-plugged
/// in between); `per_cpu` follows the order of `after`. The `total` breakdown is the mean of
/// those CPUs' breakdowns (each split by its own ticks: one CPU's work that no tick sampled
/// stays unattributed rather than taking another CPU's proportions), so it describes exactly
/// the CPUs counted in `cpus`. For each CPU, with
/// `W` = the window in USER_HZ units (`window_ns` / 10 ms) and `B` = the busy ticks
/// (user+nice+system+irq+softirq+steal):
///
/// - `idle_pct` = 100·(idle+iowait)/W (the kernel times idle; clamped to 0–100) and
///   `busy_pct` = 100 − `idle_pct`;
/// - `user_pct` = `busy_pct`·(user+nice)/B, `system_pct` = `busy_pct`·system/B, `irq_pct`,
///   `softirq_pct`, `steal_pct` likewise (the kernel samples these once a tick);
/// - `unattributed_pct` = `busy_pct` when B is 0, else 0.
///
/// The five states, `unattributed_pct` and `idle_pct` sum to 100. A CPU with no elapsed
/// ticks (possible in a window shorter than one tick) reports all zeros. Both reads hold
/// up to 10 ms of truncation each, so a CPU's busy share is known to ±2 tick units over
/// the window (±2 % of a 1 s window). `busiest_cpu` is the CPU with the
/// highest `busy_pct` (the first one on ties); `window_ticks` is the total ticks elapsed over
/// all counted CPUs divided by `cpus`.
///
/// # Errors
///
/// [`CpuError::NotComparable`] if the window is empty, no CPU appears in both snapshots, no
/// tick elapsed, or a counter of a counted CPU went backwards (`idle` and `iowait` are
/// checked as a sum, as the kernel may move time from `iowait` to `idle`).
pub fn system_utilization(
    before: &ProcStat,
    after: &ProcStat,
    window_ns: u64,
) -> Result<SystemCpuUtil, CpuError> {
    if window_ns == 0 {
        return Err(CpuError::NotComparable("empty window".into()));
    }
    let mut per_cpu = Vec::with_capacity(after.per_cpu.len());
    let mut sum = Delta::default();
    let mut busiest: Option<(u32, CpuBreakdown)> = None;
    let mut cpus: u32 = 0;
    let mut ticked: BTreeSet<u32> = BTreeSet::new();

    let mut earlier: BTreeMap<u32, &CpuTicks> = BTreeMap::new();
    for (n, ticks) in &before.per_cpu {
        earlier.entry(*n).or_insert(ticks);
    }

    for &(n, ref a) in &after.per_cpu {
        // `remove` also skips a CPU listed twice in a hand-built `after`.
        let Some(b) = earlier.remove(&n) else {
            continue;
        };
        let delta = Delta::between(&format!("cpu{n}"), b, a)?;
        let breakdown = delta.breakdown(u128::from(window_ns));
        if delta.ticks() > 0 {
            ticked.insert(n);
        }
        sum = sum.saturating_add(delta);
        cpus = cpus.saturating_add(1);
        per_cpu.push((n, breakdown));
        let better = match busiest {
            None => true,
            Some((_, best)) => breakdown.busy_pct > best.busy_pct,
        };
        if better {
            busiest = Some((n, breakdown));
        }
    }

    let Some((busiest_cpu, busiest)) = busiest else {
        return Err(CpuError::NotComparable(
            "no CPU appears in both snapshots".into(),
        ));
    };
    let ticks = sum.ticks();
    if ticks == 0 {
        return Err(CpuError::NotComparable("no ticks elapsed".into()));
    }
    // The total is the mean of the observed CPUs' breakdowns (those with ticks): each CPU's
    // busy time is split by its own ticks, so a CPU whose work no tick sampled stays
    // unattributed instead of taking another CPU's proportions.
    let total = mean_breakdown(
        per_cpu
            .iter()
            .filter(|(n, _)| ticked.contains(n))
            .map(|(_, b)| b),
        u32::try_from(ticked.len()).unwrap_or(u32::MAX),
    );
    Ok(SystemCpuUtil {
        cpus,
        total,
        per_cpu,
        busiest_cpu,
        busiest,
        window_ticks: u64::try_from(ticks / u128::from(cpus.max(1))).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BEFORE: &str = "\
cpu  2784280 62966 1142056 26683292 12130 0 34875 0 43933 0
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
cpu1 1391000 30000 570000 13340000 6000 0 17000 0 20000 0
intr 114930548 113199788 3 0 5 263 0 4 [... 200 more] 0 0
ctxt 1990473
btime 1062191376
processes 2915
procs_running 1
procs_blocked 0
softirq 183433 0 21755 12 39 1137 231 21459 2263
";

    // Deltas: cpu0 user 30 nice 10 system 20 idle 30 iowait 0 irq 2 softirq 8 steal 0
    // (guest 12, already inside user); cpu1 user 5 nice 0 system 5 idle 80 iowait 5 irq 0
    // softirq 3 steal 2. Each CPU: 100 ticks.
    const AFTER: &str = "\
cpu  2784315 62976 1142081 26683402 12135 2 34886 2 43945 0
cpu0 1393310 32976 572076 13343322 6130 2 17883 0 23945 0
cpu1 1391005 30000 570005 13340080 6005 0 17003 2 20000 0
intr 114930999 113199788 3 0 5 263 0 4 0 0
ctxt 1990999
btime 1062191376
processes 2920
procs_running 3
procs_blocked 0
softirq 183500 0 21755 12 39 1137 231 21459 2263
";

    /// A window of 100 ticks (one second).
    const SEC: u64 = 1_000_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn assert_breakdown(got: &CpuBreakdown, want: [f64; 7]) {
        let g = [
            got.user_pct,
            got.system_pct,
            got.irq_pct,
            got.softirq_pct,
            got.steal_pct,
            got.idle_pct,
            got.busy_pct,
        ];
        for (g, w) in g.iter().zip(want) {
            assert!(close(*g, w), "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn parses_real_sample() {
        let s = parse_proc_stat(BEFORE).unwrap();
        assert_eq!(
            s.total,
            CpuTicks {
                user: 2784280,
                nice: 62966,
                system: 1142056,
                idle: 26683292,
                iowait: 12130,
                irq: 0,
                softirq: 34875,
                steal: 0,
            }
        );
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[0].0, 0);
        assert_eq!(s.per_cpu[1].0, 1);
        assert_eq!(s.per_cpu[1].1.user, 1391000);
        assert_eq!(s.per_cpu[1].1.softirq, 17000);
    }

    #[test]
    fn utilization_of_real_sample() {
        let before = parse_proc_stat(BEFORE).unwrap();
        let after = parse_proc_stat(AFTER).unwrap();
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert_eq!(u.cpus, 2);
        assert_eq!(u.window_ticks, 100);
        assert_eq!(u.per_cpu.len(), 2);
        //                     user  sys  irq softirq steal idle  busy
        assert_breakdown(&u.per_cpu[0].1, [40.0, 20.0, 2.0, 8.0, 0.0, 30.0, 70.0]);
        assert_breakdown(&u.per_cpu[1].1, [5.0, 5.0, 0.0, 3.0, 2.0, 85.0, 15.0]);
        assert_breakdown(&u.total, [22.5, 12.5, 1.0, 5.5, 1.0, 57.5, 42.5]);
        assert_eq!(u.busiest_cpu, 0);
        assert_eq!(u.busiest, u.per_cpu[0].1);
    }

    #[test]
    fn old_kernel_short_lines() {
        // 2.4 kernels: four fields only; 2.6.0: seven.
        let s = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(
            s.total,
            CpuTicks {
                user: 1,
                nice: 2,
                system: 3,
                idle: 4,
                ..CpuTicks::default()
            }
        );
        let s = parse_proc_stat("cpu 1 2 3 4 5 6 7\n").unwrap();
        assert_eq!(s.total.softirq, 7);
        assert_eq!(s.total.steal, 0);
        assert!(s.per_cpu.is_empty());
    }

    #[test]
    fn tolerates_crlf_extra_fields_and_unknown_lines() {
        let s = parse_proc_stat(
            "\r\nbogus line\ncpu  1 2 3 4 5 6 7 8 9 10 11 12\r\ncpu3 1 1 1 1\r\nintr 1 2 3\n",
        )
        .unwrap();
        assert_eq!(s.total.steal, 8);
        assert_eq!(
            s.per_cpu,
            vec![(
                3,
                CpuTicks {
                    user: 1,
                    nice: 1,
                    system: 1,
                    idle: 1,
                    ..CpuTicks::default()
                }
            )]
        );
    }

    #[test]
    fn rejects_malformed() {
        let bad = [
            "",
            "hello world",
            "intr 1 2 3\nctxt 5\n",
            "cpu0 1 2 3 4\n",                            // no aggregate line
            "cpu 1 2 3\n",                               // too few fields
            "cpu\n",                                     // no fields
            "cpu 1 2 x 4\n",                             // not a number
            "cpu 1 2 -3 4\n",                            // negative
            "cpu 1 2 3 4 5 6 7 8 9 x\n",                 // garbage guest field
            "cpu 1 2 3 18446744073709551616\n",          // u64 overflow
            "cpu 1 2 3 4\ncpu 1 2 3 4\n",                // two aggregates
            "cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu0 1 2 3 4\n", // duplicate CPU
            "cpu 1 2 3 4\ncpu99999999999 1 2 3 4\n",     // CPU number overflow
        ];
        for text in bad {
            assert!(
                matches!(parse_proc_stat(text), Err(CpuError::Malformed(_))),
                "{text:?}"
            );
        }
    }

    fn snap(cpus: &[(u32, [u64; 8])]) -> ProcStat {
        let ticks = |v: [u64; 8]| CpuTicks {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
        };
        let mut total = [0u64; 8];
        for (_, v) in cpus {
            for (t, x) in total.iter_mut().zip(v) {
                *t = t.saturating_add(*x);
            }
        }
        ProcStat {
            total: ticks(total),
            per_cpu: cpus.iter().map(|&(n, v)| (n, ticks(v))).collect(),
        }
    }

    #[test]
    fn hotplug_uses_only_common_cpus() {
        let before = snap(&[(0, [0; 8]), (1, [0; 8]), (2, [0; 8])]);
        // cpu1 went offline, cpu3 came online.
        let after = snap(&[
            (0, [50, 0, 0, 50, 0, 0, 0, 0]),
            (2, [0, 0, 0, 100, 0, 0, 0, 0]),
            (3, [100, 0, 0, 0, 0, 0, 0, 0]),
        ]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert_eq!(u.cpus, 2);
        assert_eq!(
            u.per_cpu.iter().map(|&(n, _)| n).collect::<Vec<_>>(),
            vec![0, 2]
        );
        assert!(close(u.total.busy_pct, 25.0));
        assert!(close(u.total.user_pct, 25.0));
        assert_eq!(u.busiest_cpu, 0);
        assert_eq!(u.window_ticks, 100);
    }

    #[test]
    fn busiest_is_the_highest_busy_cpu() {
        let before = snap(&[(0, [0; 8]), (1, [0; 8]), (2, [0; 8])]);
        let after = snap(&[
            (0, [10, 0, 0, 90, 0, 0, 0, 0]),
            (1, [0, 0, 0, 20, 0, 0, 80, 0]),
            (2, [0, 0, 60, 40, 0, 0, 0, 0]),
        ]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert_eq!(u.busiest_cpu, 1);
        assert!(close(u.busiest.softirq_pct, 80.0));
        assert!(close(u.busiest.busy_pct, 80.0));
    }

    #[test]
    fn iowait_moving_into_idle_is_accepted() {
        let before = snap(&[(0, [0, 0, 0, 100, 10, 0, 0, 0])]);
        let after = snap(&[(0, [50, 0, 0, 155, 5, 0, 0, 0])]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert!(close(u.total.idle_pct, 50.0));
        assert!(close(u.total.busy_pct, 50.0));
    }

    #[test]
    fn not_comparable() {
        let a = snap(&[(0, [10, 0, 0, 10, 0, 0, 0, 0])]);
        // No elapsed ticks.
        assert!(matches!(
            system_utilization(&a, &a, SEC),
            Err(CpuError::NotComparable(_))
        ));
        // Counter went backwards (swapped snapshots).
        let b = snap(&[(0, [20, 0, 0, 20, 0, 0, 0, 0])]);
        assert!(system_utilization(&a, &b, SEC).is_ok());
        assert!(matches!(
            system_utilization(&b, &a, SEC),
            Err(CpuError::NotComparable(_))
        ));
        // idle+iowait went backwards.
        let c = snap(&[(0, [30, 0, 0, 5, 0, 0, 0, 0])]);
        assert!(matches!(
            system_utilization(&a, &c, SEC),
            Err(CpuError::NotComparable(_))
        ));
        // No CPU in common, or no per-CPU lines at all.
        let d = snap(&[(1, [20, 0, 0, 20, 0, 0, 0, 0])]);
        assert!(matches!(
            system_utilization(&a, &d, SEC),
            Err(CpuError::NotComparable(_))
        ));
        let empty = ProcStat::default();
        assert!(matches!(
            system_utilization(&empty, &empty, SEC),
            Err(CpuError::NotComparable(_))
        ));
    }

    #[test]
    fn idle_cpu_without_ticks_reports_zeros() {
        let before = snap(&[(0, [0; 8]), (1, [5; 8])]);
        let after = snap(&[(0, [10, 0, 0, 10, 0, 0, 0, 0]), (1, [5; 8])]);
        let u = system_utilization(&before, &after, SEC / 5).unwrap();
        assert_eq!(u.per_cpu[1].1, CpuBreakdown::default());
        assert_eq!(u.busiest_cpu, 0);
        assert_eq!(u.window_ticks, 10);
    }

    #[test]
    fn extreme_counters_do_not_overflow() {
        let before = snap(&[(0, [0; 8])]);
        let after = snap(&[(0, [u64::MAX; 8])]);
        let u = system_utilization(&before, &after, u64::MAX).unwrap();
        let t = u.total;
        let sum = t.user_pct
            + t.system_pct
            + t.irq_pct
            + t.softirq_pct
            + t.steal_pct
            + t.unattributed_pct
            + t.idle_pct;
        assert!((sum - 100.0).abs() < 1e-9);
        assert_eq!(u.window_ticks, u64::MAX);
    }

    /// A CPU busy in bursts shorter than a tick: the kernel timed 4.56 s idle in a 5.03 s
    /// window but sampled only 6 busy ticks (2 user, 3 system, 1 softirq), and counted
    /// 4.62 s in all. Busy is the 0.47 s of the window not idle, split 2:3:1; the tick
    /// shares would have said 1.3 %.
    #[test]
    fn busy_is_the_window_less_the_timed_idle() {
        let before = snap(&[(0, [0; 8])]);
        let after = snap(&[(0, [2, 0, 3, 450, 6, 0, 1, 0])]);
        let u = system_utilization(&before, &after, 5_030_000_000).unwrap();
        let b = u.per_cpu[0].1;
        let busy = 100.0 * (503.0 - 456.0) / 503.0;
        assert!(close(b.busy_pct, busy), "{b:?}");
        assert!(close(b.idle_pct, 100.0 - busy), "{b:?}");
        assert!(close(b.user_pct, busy * 2.0 / 6.0), "{b:?}");
        assert!(close(b.system_pct, busy * 3.0 / 6.0), "{b:?}");
        assert!(close(b.softirq_pct, busy / 6.0), "{b:?}");
        assert_eq!(b.unattributed_pct, 0.0);
        assert_eq!(u.window_ticks, 462);
        assert_eq!(u.total, b);
    }

    /// Busy time without one busy tick is busy, with no state to name: unattributed.
    #[test]
    fn busy_time_no_tick_sampled_is_unattributed() {
        let before = snap(&[(0, [0; 8]), (1, [0; 8])]);
        let after = snap(&[
            (0, [0, 0, 0, 90, 0, 0, 0, 0]),
            (1, [0, 0, 0, 100, 0, 0, 0, 0]),
        ]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert_breakdown(&u.per_cpu[0].1, [0.0, 0.0, 0.0, 0.0, 0.0, 90.0, 10.0]);
        assert!(close(u.per_cpu[0].1.unattributed_pct, 10.0));
        assert_eq!(u.per_cpu[1].1.unattributed_pct, 0.0);
        assert!(close(u.total.busy_pct, 5.0));
        assert!(close(u.total.unattributed_pct, 5.0));
        assert_eq!(u.busiest_cpu, 0);
    }

    /// The total splits each CPU's busy time by that CPU's ticks: CPU 1's unsampled work is
    /// not given CPU 0's system ticks.
    #[test]
    fn the_total_is_the_mean_of_the_cpus() {
        let before = snap(&[(0, [0; 8]), (1, [0; 8])]);
        let after = snap(&[
            (0, [0, 0, 2, 98, 0, 0, 0, 0]),
            (1, [0, 0, 0, 96, 0, 0, 0, 0]),
        ]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert!(close(u.total.busy_pct, 3.0), "{:?}", u.total);
        assert!(close(u.total.system_pct, 1.0), "{:?}", u.total);
        assert!(close(u.total.unattributed_pct, 2.0), "{:?}", u.total);
        assert_eq!(u.busiest_cpu, 1);
    }

    /// Idle read as more than the window (each read truncates to 10 ms): all idle, never
    /// negative busy; an empty window is refused.
    #[test]
    fn idle_beyond_the_window_is_all_idle_and_an_empty_window_is_refused() {
        let before = snap(&[(0, [0; 8])]);
        let after = snap(&[(0, [1, 0, 0, 101, 0, 0, 0, 0])]);
        let u = system_utilization(&before, &after, SEC).unwrap();
        assert_breakdown(&u.total, [0.0, 0.0, 0.0, 0.0, 0.0, 100.0, 0.0]);
        assert!(matches!(
            system_utilization(&before, &after, 0),
            Err(CpuError::NotComparable(_))
        ));
    }

    fn ticks8() -> impl Strategy<Value = [u64; 8]> {
        prop::array::uniform8(0u64..1_000_000_000_000)
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in any::<String>()) {
            let _ = parse_proc_stat(&text);
        }

        #[test]
        fn parse_never_panics_on_cpu_like_text(
            text in "(cpu[0-9]{0,12}( [0-9a-z-]{0,21}){0,12}\r?\n|[a-z]{0,6} [0-9 ]{0,10}\n){0,8}"
        ) {
            let _ = parse_proc_stat(&text);
        }

        #[test]
        fn parse_roundtrips_generated_text(cpus in prop::collection::vec(ticks8(), 1..8)) {
            let stat = snap(&cpus.iter().enumerate().map(|(i, &v)| (i as u32, v)).collect::<Vec<_>>());
            let line = |key: String, t: &CpuTicks| {
                format!(
                    "{key} {} {} {} {} {} {} {} {} 0 0\n",
                    t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal
                )
            };
            let mut text = line("cpu ".into(), &stat.total);
            for (n, t) in &stat.per_cpu {
                text.push_str(&line(format!("cpu{n}"), t));
            }
            text.push_str("intr 1 2 3\nctxt 42\n");
            prop_assert_eq!(parse_proc_stat(&text).unwrap(), stat);
        }

        #[test]
        fn utilization_sums_to_100(
            pairs in prop::collection::vec((ticks8(), ticks8()), 1..16),
            window_ns in 1u64..u64::MAX,
        ) {
            let before: Vec<(u32, [u64; 8])> =
                pairs.iter().enumerate().map(|(i, (b, _))| (i as u32, *b)).collect();
            let after: Vec<(u32, [u64; 8])> = pairs
                .iter()
                .enumerate()
                .map(|(i, (b, d))| {
                    let mut a = *b;
                    for (x, dx) in a.iter_mut().zip(d) {
                        *x += dx;
                    }
                    (i as u32, a)
                })
                .collect();
            let elapsed: u64 = pairs.iter().flat_map(|(_, d)| d.iter()).sum();
            match system_utilization(&snap(&before), &snap(&after), window_ns) {
                Err(e) => prop_assert!(elapsed == 0, "{e}"),
                Ok(u) => {
                    prop_assert_eq!(u.cpus as usize, pairs.len());
                    let all = std::iter::once(&u.total)
                        .chain(u.per_cpu.iter().map(|(_, b)| b))
                        .chain(std::iter::once(&u.busiest));
                    for b in all {
                        let parts = [
                            b.user_pct, b.system_pct, b.irq_pct, b.softirq_pct, b.steal_pct,
                            b.unattributed_pct, b.idle_pct, b.busy_pct,
                        ];
                        for p in parts {
                            prop_assert!((0.0..=100.0).contains(&p), "{b:?}");
                        }
                        let sum = b.user_pct + b.system_pct + b.irq_pct + b.softirq_pct
                            + b.steal_pct + b.unattributed_pct + b.idle_pct;
                        let observed = sum != 0.0; // a CPU with no ticks reports zeros
                        if observed {
                            prop_assert!((sum - 100.0).abs() < 1e-6, "{b:?}");
                            prop_assert!((b.busy_pct + b.idle_pct - 100.0).abs() < 1e-6);
                        }
                    }
                    prop_assert!((u.total.busy_pct + u.total.idle_pct - 100.0).abs() < 1e-6);
                    for (_, b) in &u.per_cpu {
                        prop_assert!(b.busy_pct <= u.busiest.busy_pct);
                    }
                }
            }
        }
    }
}
