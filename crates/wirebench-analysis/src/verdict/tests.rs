//! The verdict's rules, one by one, on hand-built evidence.

use super::*;
use crate::tests::{flow_side, stream_report};
use wirebench_stats::cpu::CpuBreakdown;

/// The server's CPU figures: its data threads at `threads_pct` of one CPU, pinned to
/// `cpus_used` of 2, the busiest CPU `busiest` at `busiest_pct`.
fn server_cpu(threads_pct: f64, cpus_used: Vec<u32>, busiest: u32, busiest_pct: f64) -> EndCpu {
    EndCpu {
        host: HostRole::Server,
        window_ns: 1_000_000_000,
        cpus: 2,
        system_busy_pct: busiest_pct / 2.0,
        system: CpuBreakdown::default(),
        busiest_cpu: busiest,
        busiest: CpuBreakdown {
            busy_pct: busiest_pct,
            ..CpuBreakdown::default()
        },
        cpus_used,
        threads_user_ns: 0,
        threads_system_ns: 0,
        threads_util_pct_of_one_cpu: threads_pct,
        threads_run_delay_ns: None,
        other_util_pct_of_one_cpu: None,
        other_processes: Vec::new(),
        busiest_used_cpu: None,
        busiest_used: None,
        service_demand_us_per_kb: None,
        threads_service_demand_us_per_kb: None,
        service_demand_us_per_tx: None,
        threads_service_demand_us_per_tx: None,
    }
}

fn busy(server_sends: bool, cpu: EndCpu) -> Option<f64> {
    let fwd = FlowDir::ClientToServer;
    let mut flows = vec![flow_side(0, fwd, Role::Receiver, 1, 1, 0, 1)];
    if server_sends {
        flows.push(flow_side(
            1,
            FlowDir::ServerToClient,
            Role::Sender,
            1,
            1,
            0,
            1,
        ));
    }
    let client = stream_report(
        HostRole::Client,
        vec![flow_side(0, fwd, Role::Sender, 1, 1, 0, 1)],
        None,
    );
    let server = stream_report(HostRole::Server, flows, None);
    let reports = [(HostRole::Client, &client), (HostRole::Server, &server)];
    receiver_busy(&reports, &[cpu], fwd)
}

/// The server end receiving alone in the forward direction, and what `reader_starved`
/// finds with its CPU figures `cpu`.
fn starved(cpu: EndCpu) -> Option<wirebench_model::verdict::StarvedReader> {
    let fwd = FlowDir::ClientToServer;
    let client = stream_report(
        HostRole::Client,
        vec![flow_side(0, fwd, Role::Sender, 1, 1, 0, 1)],
        None,
    );
    let server = stream_report(
        HostRole::Server,
        vec![flow_side(0, fwd, Role::Receiver, 1, 1, 0, 1)],
        None,
    );
    let reports = [(HostRole::Client, &client), (HostRole::Server, &server)];
    reader_starved(&reports, &[cpu], fwd)
}

/// A light receiver that waited a tenth of the window while other processes held half a
/// CPU or more was starved; without the wait, or without the other processes, it was
/// not (it was slow, or the two ends waited for each other); a starved reader's first
/// suggestion is a quieter host.
#[test]
fn a_reader_that_waited_while_others_held_its_cpu_was_starved() {
    let mut c = server_cpu(12.0, vec![1], 1, 100.0);
    c.threads_run_delay_ns = Some(600_000_000);
    c.other_util_pct_of_one_cpu = Some(150.0);
    let s = starved(c.clone()).expect("starved");
    assert_eq!(s.host, HostRole::Server);
    assert!((s.threads_run_delay_pct - 60.0).abs() < 1e-9, "{s:?}");
    assert_eq!(
        (s.threads_util_pct_of_one_cpu, s.other_util_pct_of_one_cpu),
        (12.0, 150.0)
    );
    let mut quiet = c.clone();
    quiet.other_util_pct_of_one_cpu = Some(20.0);
    assert_eq!(starved(quiet), None, "the ends waited for each other");
    let mut ran = c.clone();
    ran.threads_run_delay_ns = Some(50_000_000);
    assert_eq!(starved(ran), None, "it hardly waited");
    let mut older = c;
    older.threads_run_delay_ns = None;
    assert_eq!(starved(older), None, "no run-queue figure (an older peer)");
    let limiter = Limiter::ReceiveWindow {
        dir: FlowDir::ClientToServer,
        limited_pct: 70.0,
        receiver_busy_pct: None,
        rcvbuf_bytes: Some(8 << 20),
        rcvbuf_autotuned: false,
        bdp_bytes: Some(100_000),
        reader_behind: true,
        reader_starved: Some(s),
    };
    let got = stream_suggestions(&limiter, AutotunedSums::default());
    assert_eq!(got[0], Suggestion::QuietHost, "{got:?}");
    assert!(!got.contains(&Suggestion::CheaperReceiver), "{got:?}");
}

/// A busy receiver behind many autotuned buffers is told to try smaller fixed ones; one
/// flow, a fixed window or a receiver with time to spare keeps the old advice.
#[test]
fn many_autotuned_buffers_behind_a_busy_receiver_suggest_smaller_ones() {
    let rw = |busy: Option<f64>| Limiter::ReceiveWindow {
        dir: FlowDir::ClientToServer,
        limited_pct: 68.0,
        receiver_busy_pct: busy,
        rcvbuf_bytes: Some(24 << 20),
        rcvbuf_autotuned: true,
        bdp_bytes: None,
        reader_behind: false,
        reader_starved: None,
    };
    let sums = |rcvbuf_bytes, sndbuf_bytes| AutotunedSums {
        rcvbuf_bytes,
        sndbuf_bytes,
    };
    let many = Some(10_000 * (2 << 20));
    assert_eq!(
        stream_suggestions(&rw(Some(90.0)), sums(many, None)),
        vec![
            Suggestion::CheaperReceiver,
            Suggestion::SmallerWindow,
            Suggestion::Profile
        ]
    );
    // Many autotuned send buffers too (and no --notsent-lowat): hold unsent data back.
    assert_eq!(
        stream_suggestions(&rw(Some(90.0)), sums(many, many)),
        vec![
            Suggestion::CheaperReceiver,
            Suggestion::SmallerWindow,
            Suggestion::NotsentLowat,
            Suggestion::Profile
        ]
    );
    let few = Some(24 << 20);
    for (limiter, bufs) in [
        (rw(Some(90.0)), sums(few, many)),
        (rw(Some(90.0)), sums(None, None)),
        (rw(None), sums(many, many)),
    ] {
        let got = stream_suggestions(&limiter, bufs);
        assert!(!got.contains(&Suggestion::NotsentLowat), "{got:?}");
        assert!(!got.contains(&Suggestion::SmallerWindow), "{got:?}");
        assert!(got.contains(&Suggestion::LargerWindow), "{got:?}");
    }
    // `-w 8M` on loopback: a 16 MiB buffer against a 62 KB bandwidth-delay product is
    // not too small; the reader fell behind, so no larger window is suggested.
    let behind = Limiter::ReceiveWindow {
        dir: FlowDir::ClientToServer,
        limited_pct: 68.0,
        receiver_busy_pct: None,
        rcvbuf_bytes: Some(16 << 20),
        rcvbuf_autotuned: false,
        bdp_bytes: Some(62_000),
        reader_behind: true,
        reader_starved: None,
    };
    let got = stream_suggestions(&behind, sums(None, None));
    assert_eq!(got[0], Suggestion::CheaperReceiver, "{got:?}");
    assert!(!got.contains(&Suggestion::LargerWindow), "{got:?}");
}

/// Rule 4: a saturated CPU is the limit only when the test's own work ran or waited there.
#[test]
fn a_cpu_busy_with_another_processs_work_is_evidence_not_the_limit() {
    let limit = |c: &EndCpu| cpu_evidence(std::slice::from_ref(c), &mut Vec::new()).cpu;
    // Unpinned, next to a process spinning on CPU 1: the threads used 0.2 % of a CPU
    // and waited 0.7 % of the window.
    let mut c = server_cpu(0.2, vec![0, 1], 1, 100.0);
    c.threads_run_delay_ns = Some(7_000_000);
    let mut ev = Vec::new();
    assert_eq!(
        cpu_evidence(std::slice::from_ref(&c), &mut ev),
        CpuFinding::default()
    );
    match &ev[..] {
        [Evidence::BusiestCpu {
            cpu: 1,
            threads_util_pct_of_one_cpu: Some(u),
            threads_run_delay_pct: Some(d),
            ..
        }] => {
            assert_eq!(*u, 0.2);
            assert!((d - 0.7).abs() < 1e-9, "{d}");
        }
        e => panic!("{e:?}"),
    }
    // Waiting a tenth of the window for a CPU makes it the limit.
    c.threads_run_delay_ns = Some(100_000_000);
    assert!(matches!(
        limit(&c),
        Some(Limiter::Cpu {
            cpu: 1,
            host: Some(HostRole::Server),
            ..
        })
    ));
    // So does using a quarter of a CPU, without a run-queue figure (an older peer).
    c.threads_run_delay_ns = None;
    c.threads_util_pct_of_one_cpu = 25.0;
    assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
    // Or network softirq taking a quarter of it.
    c.threads_util_pct_of_one_cpu = 1.0;
    assert_eq!(limit(&c), None);
    c.busiest.softirq_pct = 30.0;
    assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
    // Light threads that waited a tenth of the window while other processes held one and a
    // half CPUs: the host was busy, the test not CPU-bound.
    c.busiest.softirq_pct = 0.0;
    c.threads_run_delay_ns = Some(100_000_000);
    c.other_util_pct_of_one_cpu = Some(150.0);
    let mut ev = Vec::new();
    let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
    assert_eq!(found.cpu, None);
    assert!(
        matches!(
            found.busy_host,
            Some(Limiter::BusyHost {
                cpu: 1,
                other_util_pct_of_one_cpu,
                ..
            }) if other_util_pct_of_one_cpu == 150.0
        ),
        "{found:?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, Evidence::OtherProcesses { .. })),
        "{ev:?}"
    );
    // The same wait with other processes nearly idle: the ends waited for each other.
    c.other_util_pct_of_one_cpu = Some(5.0);
    assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
    // Threads that used a quarter of the CPU are CPU-bound, whoever else was there.
    c.other_util_pct_of_one_cpu = Some(150.0);
    c.threads_util_pct_of_one_cpu = 30.0;
    assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
    // Pinned to CPU 0: the busiest CPU it could use decides, not the machine's busiest.
    let mut p = server_cpu(90.0, vec![0], 1, 100.0);
    p.busiest_used_cpu = Some(0);
    p.busiest_used = Some(CpuBreakdown {
        busy_pct: 95.0,
        ..CpuBreakdown::default()
    });
    assert!(matches!(limit(&p), Some(Limiter::Cpu { cpu: 0, .. })));
    p.busiest_used = Some(CpuBreakdown {
        busy_pct: 60.0,
        ..CpuBreakdown::default()
    });
    assert_eq!(limit(&p), None);
}

/// Rule 4, a virtual CPU: a saturated CPU the test needed, of which the hypervisor took a
/// quarter or more, is the host's limit; less steal leaves rule 4 as it was, and the
/// evidence carries the steal either way. The breakdowns come from two
/// `/proc/stat` readings, as a run takes them.
#[test]
fn a_saturated_cpu_the_hypervisor_took_is_the_hosts_limit() {
    use wirebench_stats::cpu::{parse_proc_stat, system_utilization};
    // One second (100 ticks per CPU): CPU 1 busy all of it, `steal_ticks` of it stolen,
    // the rest system time; CPU 0 idle.
    let breakdown = |steal_ticks: u64| {
        let before = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n\
                      cpu1 0 0 0 0 0 0 0 0 0 0\n";
        let after = format!(
            "cpu  0 0 {sys} 100 0 0 0 {steal_ticks} 0 0\ncpu0 0 0 0 100 0 0 0 0 0 0\n\
             cpu1 0 0 {sys} 0 0 0 0 {steal_ticks} 0 0\n",
            sys = 100 - steal_ticks
        );
        let u = system_utilization(
            &parse_proc_stat(before).unwrap(),
            &parse_proc_stat(&after).unwrap(),
            1_000_000_000,
        )
        .unwrap();
        (u.busiest_cpu, u.busiest)
    };
    let end = |steal_ticks: u64, threads_pct: f64| {
        let (n, b) = breakdown(steal_ticks);
        let mut c = server_cpu(threads_pct, vec![0, 1], n, b.busy_pct);
        c.busiest = b;
        c
    };
    // Half the window stolen, the test's threads at half a CPU: the host's limit, not
    // the test's CPU.
    let c = end(50, 50.0);
    assert_eq!(c.busiest_cpu, 1);
    let mut ev = Vec::new();
    let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
    match &found.cpu {
        Some(Limiter::HostSteal {
            host: Some(HostRole::Server),
            cpu: 1,
            busy_pct,
            steal_pct,
            threads_util_pct_of_one_cpu,
        }) => {
            assert!((busy_pct - 100.0).abs() < 1e-9, "{busy_pct}");
            assert!((steal_pct - 50.0).abs() < 1e-9, "{steal_pct}");
            assert_eq!(*threads_util_pct_of_one_cpu, 50.0);
        }
        f => panic!("{f:?}"),
    }
    assert_eq!(found.busy_host, None);
    assert!(
        matches!(ev[..], [Evidence::BusiestCpu { steal_pct: Some(p), .. }] if (p - 50.0).abs() < 1e-9),
        "{ev:?}"
    );
    // Light threads that waited while other processes ran: the host's steal in the busy
    // host's place (named after the path), once the hypervisor took a quarter of the CPU.
    let mut c = end(25, 1.0);
    c.threads_run_delay_ns = Some(300_000_000);
    c.other_util_pct_of_one_cpu = Some(70.0);
    let found = cpu_evidence(std::slice::from_ref(&c), &mut Vec::new());
    assert_eq!(found.cpu, None);
    assert!(
        matches!(found.busy_host, Some(Limiter::HostSteal { cpu: 1, .. })),
        "{found:?}"
    );
    // Light threads that waited with other processes quiet (the ends waited for each
    // other): the host's steal in the CPU's place.
    c.other_util_pct_of_one_cpu = Some(5.0);
    let found = cpu_evidence(std::slice::from_ref(&c), &mut Vec::new());
    assert!(
        matches!(found.cpu, Some(Limiter::HostSteal { cpu: 1, .. })),
        "{found:?}"
    );
    // A CPU the test neither worked nor waited on limits nothing, stolen or not: a shaped
    // path beside busy CPUs is still the path's.
    c.threads_run_delay_ns = Some(1_000_000);
    let mut ev = Vec::new();
    assert_eq!(
        cpu_evidence(std::slice::from_ref(&c), &mut ev),
        CpuFinding::default()
    );
    assert!(
        matches!(ev[..], [Evidence::BusiestCpu { steal_pct: Some(p), .. }] if (p - 25.0).abs() < 1e-9),
        "{ev:?}"
    );
    // Below a quarter: rule 4 as before (the test's work kept the CPU busy), the steal
    // kept as evidence.
    let c = end(20, 80.0);
    let mut ev = Vec::new();
    let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
    assert!(
        matches!(found.cpu, Some(Limiter::Cpu { cpu: 1, .. })),
        "{found:?}"
    );
    assert!(
        matches!(ev[..], [Evidence::BusiestCpu { steal_pct: Some(p), .. }] if (p - 20.0).abs() < 1e-9),
        "{ev:?}"
    );
    // Steal on a CPU that was not saturated limits nothing.
    let mut c = end(50, 30.0);
    c.busiest.busy_pct = 80.0;
    assert_eq!(
        cpu_evidence(std::slice::from_ref(&c), &mut Vec::new()),
        CpuFinding::default()
    );
    // What is suggested: CPUs the host does not share, nothing about the test itself.
    let steal = Limiter::HostSteal {
        host: None,
        cpu: 1,
        busy_pct: 100.0,
        steal_pct: 50.0,
        threads_util_pct_of_one_cpu: 50.0,
    };
    assert_eq!(
        stream_suggestions(&steal, AutotunedSums::default()),
        vec![Suggestion::DedicatedCpus]
    );
}

#[test]
fn the_receivers_business_is_its_threads_or_the_cpu_it_was_pinned_to() {
    // Unpinned: its threads' time, whatever the busiest CPU.
    assert_eq!(
        busy(false, server_cpu(87.0, vec![0, 1], 0, 100.0)),
        Some(87.0)
    );
    // Pinned to CPU 1, working, and CPU 1 full (something else shared it).
    assert_eq!(
        busy(false, server_cpu(50.0, vec![1], 1, 100.0)),
        Some(100.0)
    );
    // Pinned but idle (a tiny window): the full CPU is someone else's business.
    assert_eq!(busy(false, server_cpu(10.0, vec![1], 1, 100.0)), Some(10.0));
    // The busiest CPU is not the receiver's.
    assert_eq!(busy(false, server_cpu(50.0, vec![1], 0, 100.0)), Some(50.0));
    // An end that also sent: its threads' time is not the receiver's alone.
    assert_eq!(busy(true, server_cpu(87.0, vec![1], 1, 100.0)), None);
}
