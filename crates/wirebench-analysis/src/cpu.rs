//! CPU figures of each end.
//!
//! - `system_busy_pct`: the whole machine's busy share over the end's CPU window (end of
//!   warm-up → stop), percent of all CPUs together.
//! - `threads_util_pct_of_one_cpu = (threads_user_ns + threads_system_ns) / window_ns × 100`.
//! - `service_demand_us_per_kb`: netperf's definition,
//!   [`us_per_kb`](wirebench_stats::demand::us_per_kb)`(system_busy_pct, cpus, T)` with `T`
//!   the total receiver rate over all directions (what the test delivered).
//! - `threads_service_demand_us_per_kb`:
//!   [`us_per_kb_from_cpu_ns`](wirebench_stats::demand::us_per_kb_from_cpu_ns)`(threads ns,
//!   Σ receiver window bytes)`; per transaction likewise for request/response.
//! - **CPU-bound** ([`Warning::CpuBound`]): a CPU *the test used* (the end's
//!   `CpuReport::cpus_used`: its pinned CPUs or its threads' affinity mask) above 95 % busy
//!   while this end's own data threads did a share of it (at least 25 % of one CPU) — then the
//!   result measures that CPU, not the path. A CPU kept busy by another process while
//!   wirebench's threads idle is not a CPU-bound test. The warning names the CPU, its busy
//!   share and the threads' share.
//! - A note when both ends share one kernel (their system-wide figures count the same CPUs),
//!   and when /proc/stat shows less busy time than the threads' exact time (it should not:
//!   busy is the window less the kernel's timed idle, see [`wirebench_stats::cpu`]; each
//!   read truncates to 10 ms).

use wirebench_model::result::EndCpu;
use wirebench_model::side::{CpuReport, HostRole, SideReport};
use wirebench_model::warning::Warning;
use wirebench_stats::cpu::CpuBreakdown;
use wirebench_stats::demand;

use super::Warnings;

/// Busy share of a CPU the test used above which a run is reported as CPU-bound, percent.
pub const CPU_BOUND_PCT: f64 = 95.0;

/// This end's own threads must have used at least this much of one CPU, percent, for a busy
/// CPU to count as the test's bottleneck.
pub const CPU_BOUND_THREADS_PCT: f64 = 25.0;

/// [`end`] of every end that measured CPU (a warning for one that did not), and the note
/// that both ends' system-wide figures count the same CPUs when `same_host`.
pub(crate) fn ends(
    reports: &[(HostRole, &SideReport)],
    delivered: (f64, u64),
    transactions: Option<(f64, u64)>,
    same_host: bool,
    warnings: &mut Warnings,
) -> Vec<EndCpu> {
    let mut cpu = Vec::new();
    for (host, r) in reports {
        match &r.cpu {
            Some(c) => cpu.push(end(*host, c, delivered, transactions, warnings)),
            None => warnings.run(Warning::NoCpuFigures { host: *host }),
        }
    }
    if same_host {
        warnings.run(Warning::SameHost);
    }
    cpu
}

/// The busiest of the CPUs in `used` (all CPUs when `used` is empty): its number and figures.
pub fn busiest_used(c: &CpuReport) -> Option<(u32, CpuBreakdown)> {
    let sys = &c.system;
    let candidates = sys
        .per_cpu
        .iter()
        .filter(|(n, _)| c.cpus_used.is_empty() || c.cpus_used.contains(n));
    candidates
        .max_by(|a, b| a.1.busy_pct.total_cmp(&b.1.busy_pct))
        .map(|(n, b)| (*n, *b))
        .or_else(|| {
            c.cpus_used
                .is_empty()
                .then_some((sys.busiest_cpu, sys.busiest))
        })
}

/// The CPU figures of one end.
pub(crate) fn end(
    host: HostRole,
    c: &CpuReport,
    (delivered_bps, delivered_bytes): (f64, u64),
    transactions: Option<(f64, u64)>,
    warnings: &mut Warnings,
) -> EndCpu {
    let window_ns = c.window.len_ns();
    let threads_ns = c.threads_user_ns.saturating_add(c.threads_system_ns);
    let threads_util_pct_of_one_cpu = if window_ns == 0 {
        warnings.run(Warning::EmptyCpuWindow { host });
        0.0
    } else {
        threads_ns as f64 / window_ns as f64 * 100.0
    };
    let sys = &c.system;
    // The machine-wide busy time should hold the threads' own (exact) time; say so when it
    // does not (a kernel without timed idle samples idle at the tick too, and short bursts
    // of work between idle stretches then escape it).
    let system_ns = sys.total.busy_pct / 100.0 * f64::from(sys.cpus) * window_ns as f64;
    if threads_ns > 20_000_000 && (threads_ns as f64) > 1.5 * system_ns {
        warnings.run(Warning::ProcStatBelowThreads {
            host,
            system_busy_pct: sys.total.busy_pct,
        });
    }
    let used = busiest_used(c);
    if let Some((cpu, b)) = used {
        if b.busy_pct > CPU_BOUND_PCT && threads_util_pct_of_one_cpu >= CPU_BOUND_THREADS_PCT {
            warnings.run(Warning::CpuBound {
                host,
                cpu,
                busy_pct: b.busy_pct,
                threads_pct: threads_util_pct_of_one_cpu,
            });
        }
    }
    EndCpu {
        host,
        window_ns,
        cpus: sys.cpus,
        system_busy_pct: sys.total.busy_pct,
        system: sys.total,
        busiest_cpu: sys.busiest_cpu,
        busiest: sys.busiest,
        cpus_used: c.cpus_used.clone(),
        threads_user_ns: c.threads_user_ns,
        threads_system_ns: c.threads_system_ns,
        threads_util_pct_of_one_cpu,
        threads_run_delay_ns: c.threads_run_delay_ns,
        other_util_pct_of_one_cpu: c
            .other_processes_ns
            .filter(|_| window_ns > 0)
            .map(|ns| ns as f64 / window_ns as f64 * 100.0),
        other_processes: c.other_processes.clone(),
        busiest_used_cpu: used.map(|(n, _)| n),
        busiest_used: used.map(|(_, b)| b),
        service_demand_us_per_kb: demand::us_per_kb(sys.total.busy_pct, sys.cpus, delivered_bps),
        threads_service_demand_us_per_kb: demand::us_per_kb_from_cpu_ns(
            threads_ns,
            delivered_bytes,
        ),
        service_demand_us_per_tx: transactions
            .and_then(|(tps, _)| demand::us_per_transaction(sys.total.busy_pct, sys.cpus, tps)),
        threads_service_demand_us_per_tx: transactions
            .and_then(|(_, n)| demand::us_per_transaction_from_cpu_ns(threads_ns, n)),
    }
}
