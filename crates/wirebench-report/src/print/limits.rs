//! `wirebench limits` for a person: where the figures come from (measured now or cached),
//! the bandwidth table per buffer size, the system call, wake-up and loopback figures, the
//! notes and a footer defining them; and the line a stream result gets from them.

use std::fmt::Write as _;

use wirebench_model::limits::{
    ImplausibleCause, LimitsNote, LimitsResult, MemoryFigure, MemoryRow, PhysicalContext,
};
use wirebench_stats::summary::Spread;

use super::units::{self, number, RateUnit};
use super::wrap;

/// What the definitions of the figures say, under the table.
pub const FOOTER: &str = "GB/s = 10^9 bytes per second. Copy bandwidth = bytes copied per \
    second (a copied byte is read once and written once, and counted once); buffer = bytes \
    per copy call (a copy's working set is twice that); all threads = one pinned thread per \
    CPU, each copying its own buffers, their bytes together over the slowest thread's time. \
    Checksum = wirebench's own user-space RFC 1071 Internet checksum (64-bit accumulation), a \
    proxy for the kernel's csum_partial, not the kernel's code. Each figure is the median of \
    its batches, [min–max] beside it.";

/// Where the figures printed come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// Measured by this command; `stored` says where they were cached, or why not.
    Measured {
        /// The cache file written, or why none was.
        stored: Result<String, String>,
    },
    /// Read from this boot's cache file.
    Cached {
        /// The file.
        path: String,
    },
    /// Read from a file given by the user (`wirebench report LIMITS.json`).
    File {
        /// The file.
        path: String,
    },
}

/// `n` bytes as `32 KiB`, `1 MiB`, `256 MiB` (exact multiples), else as [`units::bytes`].
pub fn binary_size(n: u64) -> String {
    for (d, unit) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if n >= d && n.is_multiple_of(d) {
            return format!("{} {unit}", n / d);
        }
    }
    units::bytes(n)
}

/// `2026-11-25T01:40:12.345Z` as `2026-11-25 01:40 UTC` (as it is if it is not that shape).
pub fn minute_utc(iso: &str) -> String {
    match (iso.get(..10), iso.get(11..16)) {
        (Some(d), Some(t)) if iso.len() >= 16 => format!("{d} {t} UTC"),
        _ => iso.to_string(),
    }
}

/// A bandwidth cell: `45.12 [44.01–46.20]` GB/s, or `-`.
fn gbs_cell(s: Option<&Spread>) -> String {
    s.map_or_else(
        || "-".to_string(),
        |s| {
            format!(
                "{} [{}–{}]",
                number(s.median / 1e9),
                number(s.min / 1e9),
                number(s.max / 1e9)
            )
        },
    )
}

/// A time figure: `85 ns [84–90]`, `2.41 µs [2.06–2.88]` (the range in the median's unit).
fn ns_text(s: &Spread) -> String {
    let (div, unit) = match s.median.abs() {
        m if m >= 1e9 => (1e9, "s"),
        m if m >= 1e6 => (1e6, "ms"),
        m if m >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    let n = |x: f64| {
        if div == 1.0 {
            format!("{x:.0}")
        } else {
            number(x / div)
        }
    };
    format!("{} {unit} [{}–{}]", n(s.median), n(s.min), n(s.max))
}

/// The header: the host, and where the figures come from.
fn header(out: &mut String, l: &LimitsResult, from: &Provenance) {
    let host = format!(
        "{}: limits of {} ({}, {} CPU{}, kernel {})",
        l.tool,
        l.hostname
            .as_deref()
            .map_or("this machine".into(), wirebench_model::text::escape),
        l.cpu_model
            .as_deref()
            .map_or("CPU model unknown".into(), wirebench_model::text::escape),
        l.cpus,
        if l.cpus == 1 { "" } else { "s" },
        l.kernel
            .as_deref()
            .map_or("unknown".into(), wirebench_model::text::escape),
    );
    wrap(out, "", "  ", &host);
    let when = minute_utc(&l.started_utc);
    let secs = l.duration_ms as f64 / 1000.0;
    let quick = if l.quick { ", --quick" } else { "" };
    let line = match from {
        Provenance::Measured { stored } => {
            let cache = match stored {
                Ok(p) => format!(
                    "cached for this boot in {}",
                    wirebench_model::text::escape(p)
                ),
                Err(e) => format!("not cached: {}", wirebench_model::text::escape(e)),
            };
            format!("measured now ({when}, {secs:.1} s{quick}); {cache}")
        }
        Provenance::Cached { path } => format!(
            "cached: measured {when} in this boot ({secs:.1} s{quick}), read from {}; \
             --refresh measures again",
            wirebench_model::text::escape(path)
        ),
        Provenance::File { path } => format!(
            "measured {when} ({secs:.1} s{quick}), read from {}",
            wirebench_model::text::escape(path)
        ),
    };
    wrap(out, "", "  ", &line);
    if let Some(load) = l
        .load_average_1m
        .filter(|&x| x >= 0.5 * f64::from(l.cpus.max(1)))
    {
        wrap(
            out,
            "note: ",
            "      ",
            &format!(
                "the machine was busy when the measurement started (load average {load:.2} on \
                 {} CPU{}): other work competed for the CPUs, which lowers these figures and \
                 widens their spreads",
                l.cpus,
                if l.cpus == 1 { "" } else { "s" }
            ),
        );
    }
}

/// How busy other work kept the machine during the measurement, and the memory figures that
/// stayed implausible after they were measured again.
fn load_and_plausibility(out: &mut String, l: &LimitsResult) {
    if let Some(load) = &l.load {
        // The hypervisor's share shows once it is a whole percent of the CPUs.
        let mut t = match load.steal_pct.filter(|p| *p >= 1.0) {
            Some(steal) => format!(
                "other processes used {:.0} % of the CPUs during the measurement, and the \
                 hypervisor took {steal:.0} % (steal: it ran something else on these virtual \
                 CPUs)",
                load.other_processes_pct()
            ),
            None => format!(
                "other processes used {:.0} % of the CPUs during the measurement",
                load.other_busy_pct
            ),
        };
        if let Some(end) = load.load_average_1m_end {
            t.push_str(&format!(" (load average {end:.2} at its end)"));
        }
        if load.busy {
            t.push_str(
                ": measured on a busy machine, so these figures are likely low; a run above \
                 one of them says so, and `wirebench limits --refresh` on a quiet machine \
                 measures them again",
            );
        }
        wrap(out, "load: ", "      ", &t);
    }
    for i in &l.implausible {
        let figure = match i.figure {
            MemoryFigure::CopyOneThread => "copy (1 thread)",
            MemoryFigure::CopyAllThreads => "copy (all threads)",
            MemoryFigure::Checksum => "checksum",
        };
        let cause = match i.cause {
            ImplausibleCause::Contention => "other processes shared the CPUs",
            ImplausibleCause::Placement => {
                "the machine was quiet, so the buffers' placement in memory (source and \
                 destination aliasing in the caches) is the likely cause"
            }
        };
        wrap(
            out,
            "implausible: ",
            "      ",
            &format!(
                "{figure} at {}: {} is below half the {} of the next larger size, measured \
                 twice: {cause}",
                binary_size(i.buffer_bytes),
                gb_s(i.bytes_per_s),
                gb_s(i.larger_buffer_bytes_per_s)
            ),
        );
    }
}

/// The bandwidth table.
fn table(out: &mut String, l: &LimitsResult) {
    let all = format!(
        "copy {} thread{}",
        l.cpus_used.len(),
        if l.cpus_used.len() == 1 { "" } else { "s" }
    );
    let unlucky = l
        .memory
        .iter()
        .any(|r| r.copy_unlucky_bytes_per_s.is_some());
    let mut row = |cells: [&str; 5]| {
        let line = format!(
            "{:>9}  {:<22}  {:<22}  {:<22}  {}",
            cells[0], cells[1], cells[2], cells[3], cells[4]
        );
        let _ = writeln!(out, "{}", line.trim_end());
    };
    let head = if unlucky { "copy 16 B off a page" } else { "" };
    row(["buffer", "copy 1 thread", &all, "checksum 1 thread", head]);
    row([
        "",
        "GB/s",
        "GB/s",
        "GB/s",
        if unlucky { "GB/s (slowdown)" } else { "" },
    ]);
    for r in &l.memory {
        row([
            &binary_size(r.buffer_bytes),
            &gbs_cell(r.copy_one_thread_bytes_per_s.as_ref()),
            &gbs_cell(r.copy_all_threads_bytes_per_s.as_ref()),
            &gbs_cell(r.checksum_bytes_per_s.as_ref()),
            &unlucky_cell(r),
        ]);
    }
    if unlucky {
        let _ = writeln!(
            out,
            "(copies with page-aligned buffers: the machine's limit; the last column copies into \
             a destination 16 bytes after the source modulo 4 KiB, where malloc puts a block)"
        );
    }
}

/// The unlucky placement's median rate and its slowdown against the placed copy.
fn unlucky_cell(r: &MemoryRow) -> String {
    match (
        r.copy_unlucky_bytes_per_s.as_ref(),
        r.copy_one_thread_bytes_per_s.as_ref(),
    ) {
        // Within 10 %: no penalty worth a word (the spreads of two batches overlap there).
        (Some(u), Some(one)) if u.median > 0.0 && one.median / u.median >= 1.1 => format!(
            "{} ({}x slower)",
            number(u.median / 1e9),
            number(one.median / u.median)
        ),
        (Some(u), Some(one)) if one.median / u.median < 0.9 => {
            format!("{} (faster)", number(u.median / 1e9))
        }
        (Some(u), Some(_)) => format!("{} (same)", number(u.median / 1e9)),
        (Some(u), _) => number(u.median / 1e9),
        _ => String::new(),
    }
}

/// A note in words.
pub fn note_text(n: &LimitsNote) -> String {
    match n {
        LimitsNote::MemoryTooLarge {
            buffer_bytes,
            threads,
            needed_bytes,
            available_bytes,
        } => format!(
            "{} buffers on {threads} thread{} not measured: they need {}, more than half of \
             the {} available",
            binary_size(*buffer_bytes),
            if *threads == 1 { "" } else { "s" },
            units::bytes(*needed_bytes),
            units::bytes(*available_bytes)
        ),
        LimitsNote::PinFailed { cpu, error } => format!(
            "a thread could not be pinned to CPU {cpu} and ran unpinned: {}",
            wirebench_model::text::escape(error)
        ),
        LimitsNote::SingleCpu => "one CPU: no cross-CPU wake-up to measure".into(),
        LimitsNote::ProbeFailed { probe, error } => format!(
            "the {} probe failed: {}",
            wirebench_model::text::escape(probe),
            wirebench_model::text::escape(error)
        ),
        LimitsNote::NoBootId => {
            "the boot id could not be read, so these figures cannot be cached".into()
        }
    }
}

/// The system call, wake-up and loopback lines.
fn probes(out: &mut String, l: &LimitsResult) {
    match &l.syscall {
        Some(s) => wrap(
            out,
            "",
            "  ",
            &format!(
                "system call ({}): {} per call ({} batches of {} calls)",
                wirebench_model::text::escape(&s.syscall),
                ns_text(&s.syscall_ns),
                s.syscall_ns.n,
                s.calls_per_batch
            ),
        ),
        None => out.push_str("system call: not measured\n"),
    }
    match &l.wakeup {
        Some(w) => {
            let cpu = |i: usize| w.cpus.get(i).map_or("?".into(), |c| c.to_string());
            wrap(
                out,
                "",
                "  ",
                &format!(
                    "wake-up, {} ping-pong, one way (half a round trip), median of {} batches:",
                    wirebench_model::text::escape(&w.mechanism),
                    w.wakeup_same_cpu_ns.n
                ),
            );
            let mut rows = vec![(format!("same CPU (CPU {})", cpu(0)), &w.wakeup_same_cpu_ns)];
            if let Some(x) = &w.wakeup_cross_cpu_ns {
                rows.push((format!("across CPUs (CPUs {} and {})", cpu(0), cpu(1)), x));
            }
            let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0) + 1;
            for (label, s) in rows {
                let _ = writeln!(out, "  {:<width$} {}", format!("{label}:"), ns_text(s));
            }
        }
        None => out.push_str("wake-up: not measured\n"),
    }
    if let Some(x) = &l.transfer {
        let b = &x.bytes_per_s;
        wrap(
            out,
            "",
            "  ",
            &format!(
                "cross-CPU transfer (CPU {} copies {} chunks into a {} ring, CPU {} copies them \
                 out), median of {} batches: {} GB/s [{}–{}]",
                x.from_cpu,
                binary_size(x.chunk_bytes),
                binary_size(x.ring_bytes),
                x.to_cpu,
                b.n,
                number(b.median / 1e9),
                number(b.min / 1e9),
                number(b.max / 1e9)
            ),
        );
    }
    match &l.loopback {
        Some(lo) => wrap(
            out,
            "",
            "  ",
            &format!(
                "loopback TCP ceiling: {} received ({} flow, {} calls, {} after {} warm-up, \
                 congestion control {}, {} retransmit{})",
                RateUnit::AutoBits.rate(lo.throughput_bps),
                lo.flows,
                binary_size(u64::from(lo.msg_bytes)),
                super::secs(lo.duration_ms),
                super::secs(lo.warmup_ms),
                lo.congestion
                    .as_deref()
                    .map_or("not reported".into(), wirebench_model::text::escape),
                lo.retransmits,
                if lo.retransmits == 1 { "" } else { "s" }
            ),
        ),
        None => out.push_str("loopback TCP ceiling: not measured\n"),
    }
    let default = wirebench_analysis::limits::profile_cost(
        wirebench_model::profile::DEFAULT_PROFILE_HZ,
        Some(l),
    );
    match (&l.sampler, default.expected) {
        (Some(c), Some(e)) => wrap(
            out,
            "",
            "  ",
            &format!(
                "profiler sampling (CPU {}, {} Hz, {} pairs of a {} work loop alone and \
                 sampled{}): {} per sample, the loop {:+.1} % slower [{:+.1} to {:+.1}]; {}",
                c.cpu,
                c.freq_hz,
                c.ns_per_sample.n,
                ns_text_plain(c.work_ns as f64),
                match c.attempts {
                    0 | 1 => String::new(),
                    n => format!(", attempt {n}"),
                },
                ns_text(&c.ns_per_sample),
                c.cost_pct.median,
                c.cost_pct.min,
                c.cost_pct.max,
                if c.resolved {
                    format!(
                        "at the default {} Hz ≈ {:.2} % of each sampled CPU",
                        default.freq_hz, e.cpu_pct
                    )
                } else {
                    "unresolved: some pair ran faster sampled than alone (other work \
                     outweighed the sampler's); profiled results say so"
                        .to_string()
                }
            ),
        ),
        _ => out.push_str("profiler sampling cost: not measured\n"),
    }
}

/// A single time: `98.2 ms`.
fn ns_text_plain(ns: f64) -> String {
    super::units::duration_ns(ns)
}

/// The limits as text: header, where they come from, the table, the other figures, the
/// notes and the footer. Lines are at most [`super::MAX_COLUMNS`] characters.
pub fn human(l: &LimitsResult, from: &Provenance) -> String {
    let mut out = String::new();
    header(&mut out, l, from);
    load_and_plausibility(&mut out, l);
    out.push('\n');
    table(&mut out, l);
    out.push('\n');
    probes(&mut out, l);
    if !l.notes.is_empty() {
        out.push('\n');
    }
    for n in &l.notes {
        wrap(&mut out, "note: ", "      ", &note_text(n));
    }
    out.push('\n');
    wrap(&mut out, "", "", FOOTER);
    out
}

/// `x` bytes per second as `14.2 GB/s` (3 significant digits, 10^9 bytes).
pub(crate) fn gb_s(x: f64) -> String {
    let g = x / 1e9;
    if g >= 100.0 {
        format!("{g:.0} GB/s")
    } else if g >= 10.0 {
        format!("{g:.1} GB/s")
    } else {
        format!("{g:.2} GB/s")
    }
}

/// The line a stream result gets from the cached limits: "payload 14.2 GB/s × 2 copies =
/// 28.4 GB/s = 61 % of this machine's copy bandwidth at 1 MiB (1 thread, measured
/// 2026-11-25 01:40 UTC)".
pub fn physical_line(p: &PhysicalContext) -> String {
    let at = format!("at {}", binary_size(p.buffer_bytes));
    let mut about = Vec::new();
    if p.buffer_bytes != p.msg_bytes {
        about.push(format!(
            "the measured size nearest the {} messages",
            binary_size(p.msg_bytes)
        ));
    }
    about.push(format!(
        "{} thread{}",
        p.copy_threads,
        if p.copy_threads == 1 { "" } else { "s" }
    ));
    about.push(format!("measured {}", minute_utc(&p.limits_started_utc)));
    let about = about.join(", ");
    if p.copies_per_byte <= 0.0 {
        return format!(
            "payload {}, not copied on this machine: its copy bandwidth ({} {at}; {about}) does \
             not bound this test",
            gb_s(p.payload_bytes_per_s),
            gb_s(p.copy_bytes_per_s)
        );
    }
    let copies = if (p.copies_per_byte - p.copies_per_byte.round()).abs() < 1e-9 {
        let c = p.copies_per_byte.round() as u64;
        format!("{c} cop{}", if c == 1 { "y" } else { "ies" })
    } else {
        format!("{:.2} copies", p.copies_per_byte)
    };
    format!(
        "payload {} × {copies} = {} = {:.0} % of this machine's copy bandwidth {at} ({about})",
        gb_s(p.payload_bytes_per_s),
        gb_s(p.copied_bytes_per_s),
        p.copy_bandwidth_pct
    )
}
