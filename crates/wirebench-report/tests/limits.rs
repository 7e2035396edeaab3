//! `wirebench limits` in words: the table, the probes, sizes and times, a stream result's
//! physical context line, the limits schema file and the verdict against the limits.

use wirebench_model::limits::{
    LimitsNote, LimitsResult, LimitsSamples, MemoryRow, MemorySamples, PhysicalContext,
    SamplerCostPair, SamplerCostSamples, LIMITS_SCHEMA_VERSION,
};
use wirebench_model::side::Environment;

use super::*;
use wirebench_analysis::limits::{limits_result, LimitsRun};
use wirebench_report::print::limits::{binary_size, human, minute_utc, physical_line, Provenance};

#[test]
fn the_document_carries_the_host_the_figures_and_the_notes() {
    let env = Environment {
        software: "wirebench 0.1.0".into(),
        hostname: Some("h".into()),
        boot_id: None,
        kernel_release: Some("6.1.0".into()),
        cpu_model: Some("Some CPU".into()),
        cpus_online: Some(2),
        ..Environment::default()
    };
    let samples = LimitsSamples {
        memory: vec![MemorySamples {
            buffer_bytes: 32 << 10,
            copy_one: vec![b(1 << 30, 100)],
            copy_all: vec![b(1 << 31, 100)],
            checksum: vec![b(1 << 29, 100)],
            copy_unlucky: vec![],
        }],
        cpus_used: vec![0, 1],
        syscall_name: "getppid".into(),
        syscall: vec![b(100_000, 10), b(100_000, 12), b(100_000, 11)],
        syscall_calls_per_batch: 100_000,
        wakeup_mechanism: "futex".into(),
        wakeup_same_cpu: vec![b(1000, 4)],
        wakeup_cross_cpu: vec![],
        wakeup_cpus: vec![0],
        transfer: vec![b(2 << 30, 100), b(1 << 30, 100), b(3 << 30, 100)],
        transfer_cpus: vec![0, 1],
        transfer_ring_chunk_bytes: (4 << 20, 64 << 10),
        notes: vec![LimitsNote::SingleCpu],
    };
    let run = LimitsRun {
        started_unix_ms: STARTED_UNIX_MS,
        duration_ms: 6_500,
        quick: true,
        load_average_1m: Some(1.5),
        load: Some(wirebench_model::limits::LimitsLoad {
            load_average_1m_end: Some(2.0),
            other_busy_pct: 40.0,
            steal_pct: Some(15.0),
            busy: true,
        }),
        implausible: Vec::new(),
        env: &env,
        sampler: Ok(SamplerCostSamples {
            attempt: 1,
            cpu: 0,
            freq_hz: 4000,
            pairs: [(100, 116), (120, 100), (100, 112)]
                .iter()
                .map(|&(alone, sampled)| SamplerCostPair {
                    alone_cpu_ns: alone * 1_000_000,
                    sampled_cpu_ns: sampled * 1_000_000,
                    samples: 400,
                })
                .collect(),
        }),
    };
    let l = limits_result(&run, &samples, Err("refused".into()));
    assert!(l
        .load
        .as_ref()
        .is_some_and(|x| x.busy && x.other_busy_pct == 40.0));
    assert_eq!(
        (l.kind.as_str(), l.schema_version),
        ("limits", LIMITS_SCHEMA_VERSION)
    );
    assert_eq!(l.started_utc, "2023-11-14T22:13:20.000Z");
    assert_eq!((l.cpus, l.quick, l.duration_ms), (2, true, 6_500));
    assert_eq!(l.load_average_1m, Some(1.5));
    assert_eq!(l.memory.len(), 1);
    let sc = l.syscall.as_ref().unwrap();
    assert_eq!(sc.syscall, "getppid");
    assert!(close(sc.syscall_ns.median, 110.0));
    let w = l.wakeup.as_ref().unwrap();
    // 1000 round trips in 4 ms: 2 µs one way.
    assert!(close(w.wakeup_same_cpu_ns.median, 2000.0));
    assert_eq!(w.wakeup_cross_cpu_ns, None);
    // 2 GiB of 3, 1 and 2 GiB per 100 ms batch: the middle one.
    let t = l.transfer.as_ref().unwrap();
    assert_eq!(
        (t.from_cpu, t.to_cpu, t.ring_bytes, t.chunk_bytes),
        (0, 1, 4 << 20, 64 << 10)
    );
    assert!(close(t.bytes_per_s.median, (2u64 << 30) as f64 / 0.1));
    assert!(close(t.bytes_per_s.min, (1u64 << 30) as f64 / 0.1));
    let printed = unwrapped(&human(&l, &Provenance::Cached { path: "p".into() }));
    // Of the other work's 40 %, the hypervisor's 15 % is named apart.
    assert_contains(
        &printed,
        &[
            "other processes used 25 % of the CPUs during the measurement, and the hypervisor \
           took 15 % (steal: it ran something else on these virtual CPUs) (load average 2.00 \
           at its end): measured on a busy machine",
        ],
    );
    {
        let mut quiet_host = l.clone();
        quiet_host.load.as_mut().unwrap().steal_pct = Some(0.5);
        let printed = unwrapped(&human(
            &quiet_host,
            &Provenance::Cached { path: "p".into() },
        ));
        assert_contains(
            &printed,
            &["other processes used 40 % of the CPUs during the measurement (load average"],
        );
        assert!(!printed.contains("hypervisor"), "{printed}");
    }
    assert_contains(
        &printed,
        &[
            "cross-CPU transfer (CPU 0 copies 64 KiB chunks into a 4 MiB ring, CPU 1 copies them \
           out), median of 3 batches: 21.47 GB/s [10.74–32.21]",
        ],
    );
    // The sampler: 16, −20 (the run alone was the slow one) and 12 ms more over 400 samples:
    // 40, −50 and 30 µs per sample; the medians 30 µs and +12 %.
    let sampler = l.sampler.as_ref().unwrap();
    assert!(close(sampler.ns_per_sample.median, 30_000.0));
    assert!(close(sampler.ns_per_sample.min, -50_000.0));
    assert!(close(sampler.cost_pct.median, 12.0));
    assert_eq!(sampler.work_ns, 100_000_000);
    // A pair below zero: the cost is unresolved, and said so.
    assert_eq!((sampler.resolved, sampler.attempts), (false, 1));
    assert_contains(
        &printed,
        &[
            "profiler sampling (CPU 0, 4000 Hz, 3 pairs of a 100.000 ms work loop alone and \
           sampled): 30.00 µs [-50.00–40.00] per sample, the loop +12.0 % slower [-16.7 to \
           +16.0]; unresolved: some pair ran faster sampled than alone",
        ],
    );
    let unresolved = wirebench_analysis::limits::profile_cost(250, Some(&l));
    assert!(unresolved.expected.as_ref().unwrap().unresolved);
    assert_eq!(
        wirebench_report::print::profile::cost_line(&unresolved),
        "sampling 250 Hz per CPU: expected cost unresolved: the `wirebench limits` probe of \
         2023-11-14 22:13 UTC could not tell the sampler's cost from other work (some of its \
         pairs ran faster sampled than alone); `wirebench limits --refresh` on a quieter \
         machine measures it"
    );
    // The same figures from a probe whose pairs all showed a cost (its third attempt).
    let mut l = l;
    {
        let s = l.sampler.as_mut().unwrap();
        (s.resolved, s.attempts) = (true, 3);
        s.ns_per_sample.min = 30_000.0;
    }
    let printed = unwrapped(&human(&l, &Provenance::Cached { path: "p".into() }));
    assert_contains(
        &printed,
        &[
            "profiler sampling (CPU 0, 4000 Hz, 3 pairs of a 100.000 ms work loop alone and \
           sampled, attempt 3): 30.00 µs [30.00–40.00] per sample, the loop +12.0 % slower \
           [-16.7 to +16.0]; at the default 241 Hz ≈ 0.72 % of each sampled CPU",
        ],
    );
    // A result profiled at 250 Hz expects 30 µs × 250 = 0.75 % of a CPU; at 4 kHz, 12 %.
    let c = wirebench_analysis::limits::profile_cost(250, Some(&l));
    let e = c.expected.as_ref().unwrap();
    assert!(close(e.cpu_pct, 0.75) && close(e.ns_per_sample, 30_000.0));
    assert_eq!(
        (e.probe_freq_hz, e.limits_started_utc.as_str()),
        (4000, "2023-11-14T22:13:20.000Z")
    );
    assert!(close(
        wirebench_analysis::limits::profile_cost(4000, Some(&l))
            .expected
            .unwrap()
            .cpu_pct,
        12.0
    ));
    assert_eq!(
        wirebench_report::print::profile::cost_line(&c),
        "sampling 250 Hz per CPU: expected cost ≈ 0.75 % of one CPU per sampled CPU (30.00 µs \
         per sample × 250 Hz; `wirebench limits` probe of 2023-11-14 22:13 UTC, which measured \
         +12.0 % at 4000 Hz)"
    );
    let none = wirebench_analysis::limits::profile_cost(250, None);
    assert_eq!(none.expected, None);
    assert_eq!(
        wirebench_report::print::profile::cost_line(&none),
        "sampling 250 Hz per CPU: expected cost not measured: run `wirebench limits`"
    );
    assert_eq!(l.loopback, None);
    assert_eq!(
        l.notes,
        vec![
            LimitsNote::SingleCpu,
            LimitsNote::ProbeFailed {
                probe: "loopback".into(),
                error: "refused".into()
            },
            LimitsNote::NoBootId
        ]
    );
    // It reads back.
    let text = serde_json::to_string(&l).unwrap();
    assert_eq!(LimitsResult::from_json(&text).unwrap(), l);
    assert!(LimitsResult::from_json(&text.replace("\"limits\"", "\"sweep\"")).is_err());
}

#[test]
fn the_line_says_the_arithmetic() {
    let mut p = PhysicalContext {
        limits_started_unix_ms: 0,
        limits_started_utc: "2026-11-25T01:40:12.345Z".into(),
        boot_id: "b".into(),
        msg_bytes: 1 << 20,
        buffer_bytes: 1 << 20,
        copy_threads: 1,
        copy_bytes_per_s: 46.6e9,
        payload_bytes_per_s: 14.2e9,
        copies_per_byte: 2.0,
        copied_bytes_per_s: 28.4e9,
        copy_bandwidth_pct: 60.9,
    };
    assert_eq!(
        physical_line(&p),
        "payload 14.2 GB/s × 2 copies = 28.4 GB/s = 61 % of this machine's copy bandwidth at \
         1 MiB (1 thread, measured 2026-11-25 01:40 UTC)"
    );
    p.msg_bytes = 1024;
    p.buffer_bytes = 32 << 10;
    p.copy_threads = 2;
    p.copies_per_byte = 1.0;
    let t = physical_line(&p);
    assert!(t.contains("× 1 copy = "), "{t}");
    assert!(t.contains("at 32 KiB (the measured size nearest the 1 KiB messages, 2 threads,"));
    p.copies_per_byte = 0.0;
    assert!(physical_line(&p).contains("not copied on this machine"));
}

#[test]
fn sizes_and_times_in_words() {
    assert_eq!(binary_size(32 << 10), "32 KiB");
    assert_eq!(binary_size(256 << 20), "256 MiB");
    assert_eq!(binary_size(1500), "1.465 KiB");
    assert_eq!(
        minute_utc("2026-11-25T01:40:12.345Z"),
        "2026-11-25 01:40 UTC"
    );
    assert_eq!(minute_utc("garbage"), "garbage");
}

#[test]
fn the_unlucky_placement_column_gives_the_slowdown_against_the_placed_copy() {
    let mut l = limits();
    assert!(!human(&l, &Provenance::Cached { path: "p".into() }).contains("16 B off"));
    // 128 KiB copies at 40 GB/s placed; 2 GB/s unlucky: 20x. 1 MiB at 32: 31 is the same.
    l.memory[0].copy_unlucky_bytes_per_s = Some(flat(2e9));
    l.memory[1].copy_unlucky_bytes_per_s = Some(flat(31e9));
    let text = unwrapped(&human(&l, &Provenance::Cached { path: "p".into() }));
    assert_contains(
        &text,
        &[
            "copy 16 B off a page",
            "2.000 (20.00x slower)",
            "31.00 (same)",
            "a destination 16 bytes after the source modulo 4 KiB",
        ],
    );
}

#[test]
fn the_human_text_has_the_table_the_probes_and_where_it_came_from() {
    let mut l = limits();
    l.notes = vec![LimitsNote::MemoryTooLarge {
        buffer_bytes: 256 << 20,
        threads: 2,
        needed_bytes: 1 << 30,
        available_bytes: 1 << 30,
    }];
    let cached = human(
        &l,
        &Provenance::Cached {
            path: "/var/lib/wirebench/limits-b00t.json".into(),
        },
    );
    assert_narrow(&cached);
    let flat_text = unwrapped(&cached);
    assert_contains(
        &flat_text,
        &[
            "limits of h (Some CPU, 2 CPUs, kernel 6.1.0)",
            "cached: measured 2023-11-14 22:13 UTC in this boot (7.0 s)",
            "--refresh measures again",
            "copy 2 threads",
            "128 KiB  40.00 [40.00–40.00]     60.00 [60.00–60.00]     20.00 [20.00–20.00]",
            "256 MiB  8.000 [8.000–8.000]     -",
            "system call: not measured",
            "loopback TCP ceiling: not measured",
            "note: 256 MiB buffers on 2 threads not measured: they need 1.000 GiB",
            "Copy bandwidth = bytes copied per second",
            "user-space RFC 1071",
        ],
    );
    let measured = human(
        &l,
        &Provenance::Measured {
            stored: Err("cannot create /var/lib/wirebench: denied".into()),
        },
    );
    assert_contains(
        &unwrapped(&measured),
        &["measured now (2023-11-14 22:13 UTC, 7.0 s); not cached: cannot create"],
    );
    assert!(!measured.contains("busy"));
    l.load_average_1m = Some(3.2);
    let busy = unwrapped(&human(&l, &Provenance::Cached { path: "p".into() }));
    assert_contains(
        &busy,
        &["note: the machine was busy when the measurement started (load average 3.20 on 2 CPUs)"],
    );
}

/// The loopback ceiling names the limit only when the run reached it under the congestion
/// control it was measured with: a run far above it shows that the ceiling was measured low
/// (under load, say), and a run under another congestion control is not comparable with it.
#[test]
fn the_loopback_ceiling_is_the_limit_only_when_comparable() {
    use wirebench_analysis::verdict::machine_limits;
    use wirebench_model::limits::LoopbackCeiling;
    use wirebench_model::verdict::{CeilingReading, Evidence, Limiter, Verdict};
    let run = |ceiling_bps: f64, cc: &str| -> Verdict {
        let mut r = stream_result(one_flow(), 20e9);
        let s = r.runs[0].summary.as_mut().unwrap();
        s.same_host = true;
        s.congestion = vec!["cubic".into()];
        s.verdict.as_mut().expect("a verdict").limiter = Limiter::Undetermined;
        let mut l = limits();
        l.loopback = Some(LoopbackCeiling {
            throughput_bps: ceiling_bps,
            congestion: Some(cc.into()),
            flows: 1,
            msg_bytes: 1 << 20,
            duration_ms: 1000,
            warmup_ms: 250,
            retransmits: 0,
        });
        machine_limits(&mut r, Some(&l));
        r.runs[0].summary.take().unwrap().verdict.unwrap()
    };
    let ceiling = |v: &Verdict| {
        v.evidence
            .iter()
            .find_map(|e| match e {
                Evidence::LoopbackCeiling {
                    ceiling_pct,
                    limiting,
                    reading,
                    ..
                } => Some((*ceiling_pct, *limiting, *reading)),
                _ => None,
            })
            .expect("ceiling evidence")
    };
    let text = |v: &Verdict| {
        wirebench_report::print::verdict::lines(v)
            .into_iter()
            .map(|(_, l)| l)
            .collect::<Vec<_>>()
            .join(" ")
    };
    // 20 of 21 Gbit/s, the same algorithm: the limit.
    let reached = run(21e9, "cubic");
    assert!(
        matches!(reached.limiter, Limiter::LoopbackCeiling { .. }),
        "{reached:?}"
    );
    assert!(ceiling(&reached).1);
    assert_eq!(ceiling(&reached).2, Some(CeilingReading::Reached));
    // 20 of 40 Gbit/s: below it, not the limit.
    let below = run(40e9, "cubic");
    assert_eq!(below.limiter, Limiter::Undetermined);
    assert_eq!(ceiling(&below).2, Some(CeilingReading::Below));
    assert!(!ceiling(&below).1);
    assert!(
        text(&below).contains("= 50 % of this machine's loopback TCP ceiling")
            && text(&below).contains("not the limit")
            && !text(&below).contains("measured low"),
        "{}",
        text(&below)
    );
    // 20 of 10 Gbit/s: 200 %, so the ceiling is low, not the limit.
    let low = run(10e9, "cubic");
    assert_eq!(low.limiter, Limiter::Undetermined);
    let (pct, limiting, reading) = ceiling(&low);
    assert!(close(pct, 200.0) && !limiting);
    assert_eq!(reading, Some(CeilingReading::MeasuredLow));
    assert!(
        text(&low).contains("so that ceiling was measured low"),
        "{}",
        text(&low)
    );
    // 20 of 19 Gbit/s: 105 %, just above it: the run exceeded the ceiling, so the figure is
    // low, never the limit, and the verdict asks for the limits again.
    let over = run(19e9, "cubic");
    assert_eq!(over.limiter, Limiter::Undetermined);
    assert_eq!(ceiling(&over).2, Some(CeilingReading::MeasuredLow));
    assert!(
        over.suggestions
            .contains(&wirebench_model::verdict::Suggestion::RefreshLimits),
        "{over:?}"
    );
    // Measured under bbr, run under cubic: not comparable.
    let other = run(21e9, "bbr");
    assert_eq!(other.limiter, Limiter::Undetermined);
    assert!(!ceiling(&other).1);
    assert_eq!(ceiling(&other).2, Some(CeilingReading::NotComparable));
    // A record written before the reading existed: its `limiting` flag decides the words.
    let mut old = serde_json::to_value(&reached).unwrap();
    for e in old["evidence"].as_array_mut().unwrap() {
        if e["kind"] == "loopback_ceiling" {
            assert!(e.as_object_mut().unwrap().remove("reading").is_some());
        }
    }
    let old: Verdict = serde_json::from_value(old).unwrap();
    assert_eq!(ceiling(&old).2, None);
    assert!(text(&old).contains("TCP ceiling (21"), "{}", text(&old));
    assert!(text(&old).contains("): the limit"), "{}", text(&old));
    assert!(
        text(&other)
            .contains("not comparable: the ceiling was measured with bbr, this run used cubic"),
        "{}",
        text(&other)
    );
}

/// The copy bandwidth the issue saw: 1.7 and 2.0 GB/s at 32 and 64 KiB against 36 and 38 at
/// 128 and 256 KiB. A smaller buffer sits in a nearer cache, so both small rows are
/// implausible against the larger sizes; the larger rows and a 1 MiB row at a third of them
/// (beyond the caches) are not.
#[test]
fn a_copy_bandwidth_far_below_a_larger_buffers_is_implausible() {
    use wirebench_analysis::limits::implausible_figures;
    use wirebench_model::limits::MemoryFigure;
    let row = |kib: u64, gb: f64| MemoryRow {
        buffer_bytes: kib << 10,
        copy_one_thread_bytes_per_s: Some(flat(gb * 1e9)),
        copy_all_threads_bytes_per_s: None,
        checksum_bytes_per_s: None,
        copy_unlucky_bytes_per_s: None,
    };
    let rows = [
        row(32, 1.7),
        row(64, 2.0),
        row(128, 36.0),
        row(256, 38.0),
        row(1024, 12.0),
    ];
    let got: Vec<(u64, MemoryFigure)> = implausible_figures(&rows)
        .into_iter()
        .map(|(b, f, ..)| (b, f))
        .collect();
    assert_eq!(
        got,
        vec![
            (32 << 10, MemoryFigure::CopyOneThread),
            (64 << 10, MemoryFigure::CopyOneThread)
        ]
    );
}

/// On a CPU shared with another process, the sampler's cost per sample counts only the
/// samples taken while the probe ran: 110 ms of the probe's CPU time at 4 kHz is at most 440
/// samples, whatever else the profile took in the other process' time (those interrupts were
/// charged to that process). Fewer samples than that (a quiet CPU, lost samples) count as
/// taken.
#[test]
fn the_sampler_cost_counts_only_the_samples_taken_while_the_probe_ran() {
    let with = |samples: u64| SamplerCostSamples {
        attempt: 1,
        cpu: 0,
        freq_hz: 4000,
        pairs: vec![
            SamplerCostPair {
                alone_cpu_ns: 100_000_000,
                sampled_cpu_ns: 110_000_000,
                samples,
            };
            3
        ],
    };
    let shared = wirebench_analysis::limits::sampler_cost(&with(880)).unwrap();
    assert!(close(shared.ns_per_sample.median, 10_000_000.0 / 440.0));
    assert!(close(shared.cost_pct.median, 10.0));
    let fewer = wirebench_analysis::limits::sampler_cost(&with(400)).unwrap();
    assert!(close(fewer.ns_per_sample.median, 25_000.0));
}
