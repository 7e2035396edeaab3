//! The human block of an end's CPU profile: a stacked bar of the categories (one glyph
//! each, a legend under it), then a table of the categories with their share of the
//! window's CPU time, their cost per KB delivered or per transaction, the share of their
//! samples taken in wirebench processes (`wb%`: the rest is other processes' work on the
//! same CPUs) and their top symbols; then the busiest categories of each CPU. Symbols may
//! come from the peer: escaped.

use std::fmt::Write as _;

use wirebench_model::profile::{
    EndProfile, ProfileCategory, ProfileCost, ProfileEvent, ProfileReport, ProfileUnavailable,
};
use wirebench_model::text::escape;

use crate::label;

/// Characters of the stacked bar.
pub const BAR_WIDTH: usize = 64;

/// The glyph of each category in the bar, in [`ProfileCategory::ALL`] order.
pub const GLYPHS: [char; 15] = [
    '█', '▓', '▒', '░', '▞', '▚', '▙', '▟', '▛', '▜', '▀', '▗', '▄', '?', '·',
];

/// The category's name in the table.
pub(crate) fn category_name(c: ProfileCategory) -> &'static str {
    match c {
        ProfileCategory::Copy => "copy",
        ProfileCategory::Checksum => "checksum",
        ProfileCategory::MemoryManagement => "memory mgmt",
        ProfileCategory::Interrupts => "interrupts/softirq",
        ProfileCategory::Driver => "driver",
        ProfileCategory::Tcp => "tcp/udp",
        ProfileCategory::IpAndBelow => "ip and below",
        ProfileCategory::SocketSyscall => "socket/syscall",
        ProfileCategory::Scheduler => "scheduler",
        ProfileCategory::Locks => "locks",
        ProfileCategory::Wirebench => "wirebench",
        ProfileCategory::Sampler => "profiler itself",
        ProfileCategory::Other => "other",
        ProfileCategory::Unsampled => "unsampled busy",
        ProfileCategory::Idle => "idle",
    }
}

/// The stacked bar: each category gets its share of [`BAR_WIDTH`] cells (largest
/// remainders round up, so the cells add up to the width).
pub fn bar(pcts: &[(ProfileCategory, f64)]) -> String {
    let total: f64 = pcts.iter().map(|p| p.1.max(0.0)).sum();
    if total <= 0.0 {
        return " ".repeat(BAR_WIDTH);
    }
    let exact: Vec<f64> = pcts
        .iter()
        .map(|p| p.1.max(0.0) / total * BAR_WIDTH as f64)
        .collect();
    let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = BAR_WIDTH - cells.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for i in order {
        if left == 0 {
            break;
        }
        cells[i] += 1;
        left -= 1;
    }
    pcts.iter()
        .zip(cells)
        .map(|(p, n)| GLYPHS[p.0.index()].to_string().repeat(n))
        .collect()
}

/// A CPU list as ranges (`0-3,6`).
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

fn event_name(e: ProfileEvent) -> &'static str {
    match e {
        ProfileEvent::CpuClock => "cpu-clock",
        ProfileEvent::Cycles => "cycles",
    }
}

/// Cuts `s` to `max` characters (an ellipsis marks the cut).
fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// The half-width of a category share's 95 % confidence interval, percentage points, for
/// `samples` samples: 1.96·√(p(1−p)/n) at its widest (p = ½), i.e. 98/√n. Samples of a
/// cpu-clock timer are not independent draws, so this is the sampling error alone.
pub fn share_margin_pct(samples: u64) -> f64 {
    98.0 / (samples.max(1) as f64).sqrt()
}

/// The sampling rate and its expected cost, in words: measured by `wirebench limits` on
/// this boot, or not measured.
pub fn cost_line(c: &ProfileCost) -> String {
    match &c.expected {
        Some(e) if e.unresolved => format!(
            "sampling {} Hz per CPU: expected cost unresolved: the `wirebench limits` probe of {} \
             could not tell the sampler's cost from other work (some of its pairs ran faster \
             sampled than alone); `wirebench limits --refresh` on a quieter machine measures it",
            c.freq_hz,
            super::limits::minute_utc(&e.limits_started_utc),
        ),
        Some(e) => format!(
            "sampling {} Hz per CPU: expected cost ≈ {:.2} % of one CPU per sampled CPU ({} per \
             sample × {} Hz; `wirebench limits` probe of {}, which measured {:+.1} % at {} Hz)",
            c.freq_hz,
            e.cpu_pct,
            super::units::duration_ns(e.ns_per_sample),
            c.freq_hz,
            super::limits::minute_utc(&e.limits_started_utc),
            e.probe_cost_pct,
            e.probe_freq_hz
        ),
        None => format!(
            "sampling {} Hz per CPU: expected cost not measured: run `wirebench limits`",
            c.freq_hz
        ),
    }
}

/// The block of one end: `p` from the summary, `r` the end's own report, `cost` the
/// result's sampling rate and expected cost.
pub(crate) fn block(
    out: &mut String,
    p: &EndProfile,
    r: &ProfileReport,
    cost: Option<&ProfileCost>,
    stolen_cpu_ns: Option<u64>,
) {
    let _ = writeln!(
        out,
        "{} profile ({} {} Hz on CPU {}, {:.3} s, {} samples{})\n  % of the CPUs' window \
         time, each share within ±{:.1} points at 95 % (sampling error)",
        label::host(p.host),
        event_name(r.event),
        r.freq_hz,
        cpu_list(&r.cpus),
        r.window_ns as f64 / 1e9,
        r.samples,
        if r.lost_samples > 0 {
            format!(", {} lost", r.lost_samples)
        } else {
            String::new()
        },
        share_margin_pct(r.samples)
    );
    if let Some(c) = cost {
        super::wrap(out, "  ", "    ", &cost_line(c));
    }
    let pcts: Vec<(ProfileCategory, f64)> =
        p.categories.iter().map(|c| (c.category, c.pct)).collect();
    let _ = writeln!(out, "  [{}]", bar(&pcts));
    let legend: Vec<String> = p
        .categories
        .iter()
        .filter(|c| c.pct >= 0.5)
        .map(|c| {
            format!(
                "{} {}",
                GLYPHS[c.category.index()],
                category_name(c.category)
            )
        })
        .collect();
    super::wrap(out, "  ", "  ", &legend.join("  "));
    let per_tx = p
        .categories
        .iter()
        .any(|c| c.cpu_ns_per_transaction.is_some());
    let _ = writeln!(
        out,
        "  {:<18} {:>6} {:>10} {:>4}  top symbols (% of the category)",
        "category",
        "%",
        if per_tx { "ns/tx" } else { "ns/KB" },
        "wb%"
    );
    for c in &p.categories {
        if c.pct < 0.05 {
            continue;
        }
        let cost = c.cpu_ns_per_transaction.or(c.cpu_ns_per_kb);
        let cost = cost.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
        let rc = r.category(c.category);
        let syms = rc
            .map(|rc| top_symbols(rc.samples, &rc.top_symbols))
            .unwrap_or_default();
        let own = rc
            .filter(|rc| rc.samples > 0)
            .map_or_else(String::new, |rc| {
                format!(
                    "{:.0}",
                    rc.wirebench_samples as f64 * 100.0 / rc.samples as f64
                )
            });
        let line = format!(
            "  {:<18} {:>6.1} {:>10} {:>4}  {}",
            category_name(c.category),
            c.pct,
            cost,
            own,
            syms
        );
        let _ = writeln!(out, "{}", fit(&line, super::MAX_COLUMNS));
    }
    if r.unsampled_idle_ns > r.window_cpu_ns() / 100 {
        let how = if r.idle_from_proc_stat {
            "/proc/stat counts it idle"
        } else {
            "inferred: /proc/stat was not read"
        };
        let _ = writeln!(
            out,
            "  idle includes {:.3} s of CPU time with no sample ({how}):\n  a halted CPU gives no \
             samples",
            r.unsampled_idle_ns as f64 / 1e9
        );
    }
    if r.unsampled_busy_ns > r.window_cpu_ns() / 100 {
        let _ = writeln!(
            out,
            "  unsampled busy: {:.3} s that /proc/stat counts busy but no sample stands for: the \
             sampling\n  timer's interrupts did not reach the CPU (interrupts off, or the \
             hypervisor held the\n  virtual CPU); the categories above undercount by that much",
            r.unsampled_busy_ns as f64 / 1e9
        );
        // The hypervisor's share, where /proc/stat counted it: a vCPU the host runs something
        // else on takes no sample (the timer fires once it runs again).
        if let Some(stolen) = stolen_cpu_ns.filter(|n| *n > r.window_cpu_ns() / 100) {
            let _ = writeln!(
                out,
                "  of the window's CPU time, /proc/stat counted {:.3} s stolen: the hypervisor \
                 ran something\n  else on these virtual CPUs (steal)",
                stolen as f64 / 1e9
            );
        }
    }
    if r.oversampled_busy_ns > r.window_cpu_ns() / 100 {
        let _ = writeln!(
            out,
            "  idle includes {:.3} s that busy samples stood for beyond what /proc/stat counts \
             busy: a CPU\n  halted for microseconds at a time gives no samples, and the ones due \
             meanwhile are taken\n  in whatever runs once it wakes; the busy categories above \
             shrank in proportion",
            r.oversampled_busy_ns as f64 / 1e9
        );
    }
    if r.per_cpu.len() > 1 {
        for c in &r.per_cpu {
            let mut cats: Vec<(ProfileCategory, u64)> = ProfileCategory::ALL
                .iter()
                .map(|&k| (k, c.category_ns(k)))
                .filter(|(k, _)| *k != ProfileCategory::Idle)
                .collect();
            cats.sort_by_key(|x| std::cmp::Reverse(x.1));
            let total: u64 = c.cpu_ns.iter().sum::<u64>().max(1);
            let busy: u64 = cats.iter().map(|x| x.1).sum();
            let top: Vec<String> = cats
                .iter()
                .take(3)
                .filter(|x| x.1 > 0)
                .map(|(k, ns)| {
                    format!(
                        "{} {:.0}",
                        category_name(*k),
                        *ns as f64 * 100.0 / total as f64
                    )
                })
                .collect();
            let line = format!(
                "  CPU {:<3} busy {:5.1} %: {}",
                c.cpu,
                busy as f64 * 100.0 / total as f64,
                top.join(", ")
            );
            let _ = writeln!(out, "{}", fit(&line, super::MAX_COLUMNS));
        }
    }
}

/// `name share %, ...` of the top three symbols (escaped).
fn top_symbols(samples: u64, top: &[wirebench_model::profile::SymbolSamples]) -> String {
    top.iter()
        .take(3)
        .map(|s| {
            format!(
                "{} {:.0} %",
                escape(&s.symbol),
                s.samples as f64 * 100.0 / samples.max(1) as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an end has no profile, in words.
pub fn unavailable(r: &ProfileUnavailable) -> String {
    match r {
        ProfileUnavailable::NotPermitted {
            paranoid,
            cap_perfmon,
            cap_sys_admin,
        } => format!(
            "no CPU profile: perf events not permitted (kernel.perf_event_paranoid = {}, \
             CAP_PERFMON {}, CAP_SYS_ADMIN {}; system-wide sampling needs root, CAP_PERFMON or \
             paranoid <= 0)",
            paranoid.map_or_else(|| "unreadable".to_string(), |p| p.to_string()),
            if *cap_perfmon { "held" } else { "not held" },
            if *cap_sys_admin { "held" } else { "not held" }
        ),
        ProfileUnavailable::RefusedByServer => {
            "no CPU profile at the server: its policy does not allow profiling (start it with \
             `serve --allow-profile`)"
                .into()
        }
        ProfileUnavailable::UnsupportedEvent => {
            "no CPU profile: the sampling event is not supported on this machine".into()
        }
        ProfileUnavailable::FrequencyTooHigh { max_hz } => format!(
            "no CPU profile: --profile-hz is above kernel.perf_event_max_sample_rate ({})",
            max_hz.map_or_else(|| "unreadable".to_string(), |m| format!("{m} Hz"))
        ),
        ProfileUnavailable::TooManyFiles => {
            "no CPU profile: out of file descriptors (one per sampled CPU is needed)".into()
        }
        ProfileUnavailable::NoWindow => {
            "no CPU profile: the measurement window never opened".into()
        }
        ProfileUnavailable::Failed { detail } => {
            format!("no CPU profile: the sampler failed ({})", escape(detail))
        }
    }
}
