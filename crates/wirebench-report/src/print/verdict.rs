//! The verdict in words: the limiter with its figures, the other evidence, the experiment
//! that would test it, and what evidence was missing.

use wirebench_model::verdict::{CeilingReading, Evidence, Limiter, Missing, Suggestion, Verdict};

use super::limits::{binary_size, gb_s};
use super::units::RateUnit;
use crate::label;

/// The limiter in words.
pub fn limiter_text(l: &Limiter) -> String {
    match l {
        Limiter::Pacing {
            target_bps,
            achieved_pct,
        } => format!(
            "the pacing asked for: {} reached {achieved_pct:.0} % of {}",
            "the receivers",
            RateUnit::AutoBits.rate(*target_bps)
        ),
        Limiter::ReceiveWindow {
            dir,
            limited_pct,
            receiver_busy_pct,
            rcvbuf_bytes,
            rcvbuf_autotuned,
            bdp_bytes,
            reader_behind,
            reader_starved,
        } => {
            let mut t = format!(
                "the receive window: the {} senders waited for the peer's window \
                 {limited_pct:.0} % of their busy time",
                label::dir(*dir)
            );
            if let Some(b) = rcvbuf_bytes {
                let how = if *rcvbuf_autotuned {
                    "where autotuning left it"
                } else {
                    "set by -w"
                };
                t.push_str(&format!(
                    " (the largest receive buffer at close: {}, {how})",
                    binary_size(u64::from(*b))
                ));
            }
            if let (true, Some(bdp)) = (*reader_behind, bdp_bytes) {
                t.push_str(&format!(
                    "; that buffer holds {}× the {} the path needed (throughput × round trip): \
                     not too small, the reader fell behind (too slow per byte, or starved of \
                     CPU)",
                    rcvbuf_bytes.map_or(0, |b| u64::from(b) / (*bdp).max(1)),
                    binary_size(*bdp)
                ));
            }
            if let Some(b) = receiver_busy_pct {
                t.push_str(&format!(
                    "; the receiver was {b:.0} % busy (its threads, or the CPU they were pinned \
                     to): a receiver that falls behind keeps the window shut whatever the buffer \
                     size"
                ));
            }
            if let Some(s) = reader_starved {
                t.push_str(&format!(
                    "; the {} was starved of CPU by other processes: its threads used {:.1} % of \
                     one CPU and waited {:.1} % of the window to run while other processes used \
                     {:.0} % of one CPU (the host was busy; the receiver was not slow)",
                    label::host(s.host),
                    s.threads_util_pct_of_one_cpu,
                    s.threads_run_delay_pct,
                    s.other_util_pct_of_one_cpu
                ));
            }
            t
        }
        Limiter::SendBuffer { dir, limited_pct } => format!(
            "the send buffer: the {} senders were limited by their socket buffer \
             {limited_pct:.0} % of their busy time",
            label::dir(*dir)
        ),
        Limiter::Cpu {
            host,
            cpu,
            busy_pct,
            softirq_pct,
            system_pct,
            user_pct,
        } => format!(
            "{} CPU {cpu} saturated: {busy_pct:.0} % busy ({softirq_pct:.0} % softirq, \
             {system_pct:.0} % system, {user_pct:.0} % user)",
            host.map_or("a shared", label::host)
        ),
        Limiter::SenderIdle { dir, idle_pct } => format!(
            "idle senders: the {} senders had nothing in flight {idle_pct:.0} % of the window \
             (waiting for the application or the peer; TCP counted no window or buffer limit)",
            label::dir(*dir)
        ),
        Limiter::Loss { dir, retransmits } => format!(
            "loss on the path: {retransmits} segments retransmitted and not received twice \
             ({}) with no window, buffer or CPU limit",
            label::dir(*dir)
        ),
        Limiter::RoundTrip {
            rtt_mean_ns,
            allowed_per_s,
            measured_per_s,
        } => format!(
            "the round trip: {measured_per_s:.0} transactions/s against {allowed_per_s:.0}/s \
             that flows × burst / {:.1} µs allow",
            rtt_mean_ns / 1000.0
        ),
        Limiter::Path {
            dir,
            throughput_bps,
            min_rtt_ns,
            srtt_ns,
        } => format!(
            "the path ({}): it carried {}, and the senders' smoothed round trip rose from \
             {} to {} (+{}): a queue formed at a bottleneck (a slower link or a shaper), \
             with no window, buffer or CPU limit at the senders",
            label::dir(*dir),
            RateUnit::AutoBits.rate(*throughput_bps),
            ms(*min_rtt_ns),
            ms(*srtt_ns),
            ms(srtt_ns.saturating_sub(*min_rtt_ns))
        ),
        Limiter::BusyHost {
            host,
            cpu,
            busy_pct,
            threads_util_pct_of_one_cpu,
            threads_run_delay_pct,
            other_util_pct_of_one_cpu,
        } => format!(
            "a host busy with other processes: CPU {cpu} {busy_pct:.0} % busy, {} threads \
             using {threads_util_pct_of_one_cpu:.1} % of one CPU and waiting \
             {threads_run_delay_pct:.1} % of the window to run, while other processes used \
             {other_util_pct_of_one_cpu:.0} % of one CPU (not CPU-bound: the test's own work \
             was light)",
            host.map_or("the test's".to_string(), |h| format!(
                "the {}'s",
                label::host(h)
            ))
        ),
        Limiter::HostSteal {
            host,
            cpu,
            busy_pct,
            steal_pct,
            threads_util_pct_of_one_cpu,
        } => format!(
            "the host beneath this virtual machine: CPU {cpu} {busy_pct:.0} % busy, of which \
             {steal_pct:.0} % of the window the hypervisor ran something else on it (steal), \
             while {} threads used {threads_util_pct_of_one_cpu:.1} % of one CPU: the test \
             got that much less than a CPU",
            host.map_or("the test's".to_string(), |h| format!(
                "the {}'s",
                label::host(h)
            ))
        ),
        Limiter::CopyBandwidth {
            copied_bytes_per_s,
            copy_bytes_per_s,
            copy_bandwidth_pct,
        } => format!(
            "this machine's memory copy bandwidth: payload × copies = {}, {copy_bandwidth_pct:.0} \
             % of the {} measured at the call size (wirebench limits)",
            gb_s(*copied_bytes_per_s),
            gb_s(*copy_bytes_per_s)
        ),
        Limiter::LoopbackCeiling {
            throughput_bps,
            ceiling_bps,
            ceiling_pct,
        } => format!(
            "this machine's loopback TCP ceiling: {}, {ceiling_pct:.0} % of the {} measured \
             (wirebench limits)",
            RateUnit::AutoBits.rate(*throughput_bps),
            RateUnit::AutoBits.rate(*ceiling_bps)
        ),
        Limiter::Undetermined => "no single limit shows in the evidence".into(),
    }
}

fn evidence_text(e: &Evidence) -> String {
    match e {
        Evidence::SenderLimits {
            dir,
            busy_us,
            rwnd_limited_pct,
            sndbuf_limited_pct,
        } => format!(
            "{} senders busy {:.3} s: receive-window-limited {rwnd_limited_pct:.0} %, \
             send-buffer-limited {sndbuf_limited_pct:.0} % (TCP_INFO)",
            label::dir(*dir),
            *busy_us as f64 / 1e6
        ),
        Evidence::Retransmits {
            dir,
            retransmits,
            dsack_segments,
        } => match dsack_segments {
            Some(d) if *d > 0 => format!(
                "{} retransmits {retransmits}, {d} of them received twice (D-SACK: reordering or \
                 a timer that fired early, not loss)",
                label::dir(*dir)
            ),
            _ => format!("{} retransmits {retransmits}", label::dir(*dir)),
        },
        Evidence::BusiestCpu {
            host,
            cpu,
            busy_pct,
            softirq_pct,
            cpus_used,
            threads_util_pct_of_one_cpu,
            threads_run_delay_pct,
            steal_pct,
        } => {
            let used: Vec<String> = cpus_used.iter().map(u32::to_string).collect();
            // Stolen time shows once it is a whole percent of the window.
            let steal = steal_pct
                .filter(|p| *p >= 1.0)
                .map(|p| format!(", {p:.0} % taken by the hypervisor"))
                .unwrap_or_default();
            let mut t = format!(
                "{}: busiest CPU {cpu} {busy_pct:.0} % ({softirq_pct:.0} % softirq{steal}); its \
                 threads on CPU {}",
                label::host(*host),
                if used.is_empty() {
                    "?".into()
                } else {
                    used.join(",")
                }
            );
            if let Some(u) = threads_util_pct_of_one_cpu {
                t.push_str(&format!(", using {u:.1} % of one CPU"));
            }
            if let Some(d) = threads_run_delay_pct {
                t.push_str(&format!(
                    ", waiting {d:.1} % of the window to run (summed over its threads; \
                     wake-up to running included)"
                ));
            }
            t
        }
        Evidence::ProfileTop {
            host,
            category,
            pct,
        } => format!(
            "{} profile: {} is the largest share, {pct:.0} % of its sampled CPU time",
            label::host(*host),
            super::profile::category_name(*category)
        ),
        Evidence::CopyBandwidth {
            payload_bytes_per_s,
            copies_per_byte,
            copy_bytes_per_s,
            buffer_bytes,
            copy_threads,
            copy_bandwidth_pct,
            limiting,
            reading,
        } => format!(
            "payload {} × {copies_per_byte:.2} copies = {copy_bandwidth_pct:.0} % of this \
             machine's copy bandwidth ({} at {}, {copy_threads} thread{}): {}",
            gb_s(*payload_bytes_per_s),
            gb_s(*copy_bytes_per_s),
            binary_size(*buffer_bytes),
            if *copy_threads == 1 { "" } else { "s" },
            match reading {
                Some(CeilingReading::MeasuredLow) => {
                    "above it, so that figure was measured low (under load, or an unlucky \
                     buffer placement): not the limit; `wirebench limits --refresh` measures \
                     it again"
                }
                _ if *limiting => "the limit",
                _ => "not the limit",
            }
        ),
        Evidence::LimitsMeasured {
            started_utc,
            load_average_1m,
            other_busy_pct,
            busy,
        } => {
            let mut t = format!(
                "this machine's limits were measured {}",
                wirebench_model::text::escape(started_utc)
            );
            if let Some(l) = load_average_1m {
                t.push_str(&format!(" at a load average of {l:.2}"));
            }
            if let Some(o) = other_busy_pct {
                t.push_str(&format!(", other processes using {o:.0} % of the CPUs"));
            }
            if *busy {
                t.push_str(" (a busy machine: its figures are likely low)");
            }
            t
        }
        Evidence::OtherProcesses {
            host,
            util_pct_of_one_cpu,
            top,
        } => {
            let names: Vec<String> = top
                .iter()
                .map(|p| {
                    format!(
                        "{} (pid {}) {:.2} s",
                        wirebench_model::text::escape(&p.comm),
                        p.pid,
                        p.cpu_ns as f64 / 1e9
                    )
                })
                .collect();
            let mut t = format!(
                "{}: other processes used {util_pct_of_one_cpu:.0} % of one CPU",
                label::host(*host)
            );
            if !names.is_empty() {
                t.push_str(&format!(" (the busiest: {})", names.join(", ")));
            }
            t
        }
        Evidence::RoundTrips {
            dir,
            min_rtt_ns,
            srtt_ns,
        } => format!(
            "{} senders' round trip: minimum {}, smoothed {} over the window (median; TCP_INFO)",
            label::dir(*dir),
            ms(*min_rtt_ns),
            ms(*srtt_ns)
        ),
        Evidence::LoopbackCeiling {
            throughput_bps,
            ceiling_bps,
            ceiling_pct,
            ceiling_congestion,
            congestion,
            limiting,
            reading,
        } => {
            let cc = |c: &Option<String>| {
                c.as_deref()
                    .map_or("?".into(), wirebench_model::text::escape)
            };
            let why = match reading {
                Some(CeilingReading::NotComparable) => format!(
                    "not comparable: the ceiling was measured with {}, this run used {}",
                    cc(ceiling_congestion),
                    cc(congestion)
                ),
                Some(CeilingReading::MeasuredLow) => "above it, so that ceiling was measured \
                     low (under load, say): not the limit; `wirebench limits --refresh` \
                     measures it again"
                    .into(),
                Some(CeilingReading::Reached) => "the limit".into(),
                Some(CeilingReading::Below) => "not the limit".into(),
                None if *limiting => "the limit".into(),
                None => "not the limit".into(),
            };
            format!(
                "{} = {ceiling_pct:.0} % of this machine's loopback TCP ceiling ({}): {why}",
                RateUnit::AutoBits.rate(*throughput_bps),
                RateUnit::AutoBits.rate(*ceiling_bps),
            )
        }
        Evidence::Paced {
            target_bps,
            achieved_bps,
        } => format!(
            "paced to {}, received {}",
            RateUnit::AutoBits.rate(*target_bps),
            RateUnit::AutoBits.rate(*achieved_bps)
        ),
        Evidence::BusyPolling { so_busy_poll_us } => {
            let sockopt = match so_busy_poll_us {
                0 => "SO_BUSY_POLL not set".to_string(),
                us => format!("SO_BUSY_POLL {us} µs"),
            };
            format!("busy-polling ({sockopt}): the CPUs were busy by design, not the limit")
        }
    }
}

fn suggestion_text(s: Suggestion) -> &'static str {
    match s {
        Suggestion::LargerWindow => "larger socket buffers (-w, or sweep --window)",
        Suggestion::SmallerWindow => {
            "smaller fixed socket buffers (-w 256K, or sweep --window): the flows' autotuned \
             buffers add up to more than any cache, so data waits in them long enough to be \
             copied cold"
        }
        Suggestion::NotsentLowat => {
            "less unsent data queued in the kernel (--notsent-lowat 16K): the senders' \
             autotuned buffers add up to more than any cache too"
        }
        Suggestion::Profile => "--profile (where the CPU time goes)",
        Suggestion::BusyPoll => "--busy-poll (how much of the round trip is wake-up cost)",
        Suggestion::Placement => "other CPU placements (-A, a study over placement)",
        Suggestion::ZeroCopy => "a zero-copy path (--send-path sendfile, --recv-path discard)",
        Suggestion::MoreFlows => "more flows (-P)",
        Suggestion::HigherRate => "a higher rate or none (-b 0)",
        Suggestion::MoreInFlight => "more transactions in flight (--burst) or flows (-P)",
        Suggestion::PathLoss => "the path's drops (interface counters, a study over loss)",
        Suggestion::QuietHost => {
            "a quieter host, or CPUs of the test's own (-A, away from the busy processes)"
        }
        Suggestion::DedicatedCpus => {
            "a virtual machine with dedicated CPUs (or a less contended host or instance type), or \
             bare metal: the hypervisor took CPU time from this one; or run again when its \
             neighbours are quiet"
        }
        Suggestion::RefreshLimits => {
            "wirebench limits --refresh (on a quiet machine): a limit this run exceeded was \
             measured low"
        }
        Suggestion::PathBottleneck => {
            "the path's bottleneck: its links' rates and shapers (tc -s qdisc), where the \
             queue forms"
        }
        Suggestion::CheaperReceiver => {
            "a receiver that costs less per byte (--recv-path discard or splice, --recv-size, \
             another CPU with -A)"
        }
    }
}

fn missing_text(m: Missing) -> &'static str {
    match m {
        Missing::SenderLimitedTimes => "the senders' TCP_INFO limited times",
        Missing::ServerReport => "the server's report",
        Missing::Cpu => "an end's CPU",
        Missing::Profile => "a profile",
        Missing::Limits => "this machine's limits (wirebench limits has not been run on this boot)",
    }
}

/// `ns` as milliseconds, or microseconds below one.
fn ms(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.0} µs", ns as f64 / 1e3)
    }
}

/// The verdict as lines: `verdict: ...`, `evidence: ...`, `to test it: ...`, `missing: ...`.
pub fn lines(v: &Verdict) -> Vec<(&'static str, String)> {
    let mut out = vec![("verdict: limited by ", limiter_text(&v.limiter))];
    if !v.evidence.is_empty() {
        let e: Vec<String> = v.evidence.iter().map(evidence_text).collect();
        out.push(("evidence: ", e.join("; ")));
    }
    if !v.suggestions.is_empty() {
        let s: Vec<&str> = v.suggestions.iter().map(|s| suggestion_text(*s)).collect();
        out.push(("to test it: ", s.join("; ")));
    }
    if !v.missing.is_empty() {
        let m: Vec<&str> = v.missing.iter().map(|m| missing_text(*m)).collect();
        out.push(("not available: ", m.join(", ")));
    }
    out
}
